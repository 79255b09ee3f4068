"""Checks the tensor maps of gemmc's generated Python modules without a GPU.

tests/aot_python_tmap_test.ts runs it with GEMMC_LIBCUDA pointing at the fake libcuda
(tests/gpu/testdata/fake_libcuda.c), whose cuTensorMapEncodeTiled validates as the driver does
and records its arguments in the map; the fake torch and cuda-python of check_fakes.py stand in
for the rest.

    python3 check_tmap.py DIR
        # DIR holds tmap.py (kernels tma, loose, refused, real, clustered and clusteredn,
        # tests/_tensor_map_manifests.ts);
        # prints RECORDS and the JSON of each case: the launch's parameters (a map: its bytes
        # in hex and its address) and grid, or the error's lines
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_fakes as cf  # noqa: E402


def case(mod, driver, fn, *args, **kwargs):
    """One call: the last launch's parameters, or the error (type and lines); launches made."""
    before = len(driver.launches)
    try:
        fn(*args, **kwargs)
    except mod.GemmcLaunchError as e:
        return {"error": "GemmcLaunchError", "lines": e.problems,
                "launched": len(driver.launches) - before}
    except RuntimeError as e:
        return {"error": "RuntimeError", "lines": [str(e)], "launched": len(driver.launches) - before}
    last = driver.launches[-1]
    return {"params": last["params"], "grid": list(last["grid"]),
            "launched": len(driver.launches) - before}


def main(directory):
    torch, driver = cf.install_fakes()
    mod = cf.load(f"{directory}/tmap.py", "gemmc_tmap")
    driver.kernels.update({k["entry"]: k for k in mod._KERNELS.values()})
    M, K, N = 200, 136, 264

    def operands(k=K, shift=0):
        a = cf.FakeTensor((M, k), torch.float16)
        if shift:
            a = cf.FakeTensor((M, k), torch.float16, address=a.data_ptr() + shift)
        b = cf.FakeTensor((N, k), torch.float16).t()
        c = cf.FakeTensor((M, N), torch.float32)
        return a, b, c

    out = {}
    a, b, c = operands()
    out["ok"] = case(mod, driver, mod.tma, a, b, c)
    out["ok"]["A"], out["ok"]["B"] = a.data_ptr(), b.data_ptr()
    out["zeroK"] = case(mod, driver, mod.tma, *operands(k=0))
    a, b, c = operands(shift=4)
    out["misaligned"] = case(mod, driver, mod.loose, a, b, c)
    out["misaligned"]["A"] = a.data_ptr()
    out["refused"] = case(mod, driver, mod.refused, *operands())
    a, b, _ = operands()
    out["real"] = case(mod, driver, mod.real, a, b)
    out["real"]["A"], out["real"]["B"] = a.data_ptr(), b.data_ptr()
    # Clusters of 2 at M = 300: 3 tiles along M, 2 cluster units.
    a = cf.FakeTensor((300, K), torch.float16)
    b = cf.FakeTensor((N, K), torch.float16).t()
    out["clustered"] = case(mod, driver, mod.clustered, a, b)
    out["clustered"]["A"], out["clustered"]["B"] = a.data_ptr(), b.data_ptr()
    # Along N (cluster 1x2), same operands: 2 tiles a row, one unit each.
    out["clusteredn"] = case(mod, driver, mod.clusteredn, a, b)
    out["clusteredn"]["A"], out["clusteredn"]["B"] = a.data_ptr(), b.data_ptr()
    out["doc"] = mod.tma.__doc__
    print("RECORDS " + json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
