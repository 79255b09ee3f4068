"""Checks programmatic dependent launch (pdl=True) in gemmc's generated Python modules without
a GPU (tests/aot_python_pdl_test.ts runs it).

check_fakes.py's fake torch, CuPy and cuda-python stand in; its FakeDriver's cuLaunchKernelEx
validates the CUlaunchConfig and its CUlaunchAttribute as cuda-python's types hold them
(launch_ex_problem) and records the launch with its attributes. Every launch made with pdl=True
must go through cuLaunchKernelEx with exactly the grid, block, shared memory, stream and
parameters of the same call with pdl=False (through cuLaunchKernel) and the one attribute
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, allowed; where the backend cannot
(CuPy; cuda-python bindings without cuLaunchKernelEx) the call raises RuntimeError naming it,
nothing launched or allocated.

    python3 check_pdl.py DIR
        # DIR holds plain.py (kernels hgemm, skinny_splitk, s8k) and grouped.py (experts, gs),
        # and, with GEMMC_LIBCUDA set (the fake libcuda, for tensor maps), sm90.py (hgemm with
        # tensor maps, experts); prints RECORDS (the PDL launches as JSON) and the count
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_fakes as cf  # noqa: E402
from check_fakes import FakeArray, FakeStream, FakeTensor, check  # noqa: E402

RECORDS = []
PDL = [(6, 1)]  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, allowed


def without_maps(params):
    """A launch's parameters but its tensor maps (encoded afresh at every launch)."""
    return dict((n, v) for n, v in params.items() if not isinstance(v, dict))


def pair(driver, kind, kernel, sizes, call, **kw):
    """call(pdl=False) then call(pdl=True): the first through cuLaunchKernel, the second
    through cuLaunchKernelEx with the attribute and the first's grid, block, shared memory,
    stream and parameters. Records the second for the test; returns both launches."""
    n = len(driver.launches)
    call(pdl=False, **kw)
    call(pdl=True, **kw)
    check(len(driver.launches) == n + 2, f"{kind}: two launches")
    plain, ex = driver.launches[-2], driver.launches[-1]
    check(plain["via"] == "cuLaunchKernel" and "attrs" not in plain, f"{kind}: plain {plain}")
    check(ex["via"] == "cuLaunchKernelEx" and ex["attrs"] == PDL, f"{kind}: pdl {ex}")
    for f in ("entry", "grid", "block", "smem", "stream"):
        check(plain[f] == ex[f], f"{kind}: {f} {plain[f]} with pdl {ex[f]}")
    check(without_maps(plain["params"]) == without_maps(ex["params"]),
          f"{kind}: params {plain['params']} with pdl {ex['params']}")
    RECORDS.append({"kind": kind, "kernel": kernel, "sizes": sizes, "via": ex["via"],
                    "attrs": ex["attrs"], "grid": list(ex["grid"]), "block": list(ex["block"]),
                    "smem": ex["smem"], "stream": list(ex["stream"])})
    return plain, ex


def raises(made, fn, expected, what, *args, **kwargs):
    """fn(...) raises RuntimeError with exactly the expected message; nothing launched, nothing
    allocated (made: the fake libraries' lists of allocations)."""
    drivers = [cf.sys.modules["cuda.bindings.driver"], cf.sys.modules["cupy"].cuda.driver]
    launches = [len(d.launches) for d in drivers]
    allocated = [len(m) for m in made]
    try:
        fn(*args, **kwargs)
    except RuntimeError as e:
        check(str(e) == expected, f"{what}: {str(e)!r} != {expected!r}")
    else:
        check(False, f"{what}: no RuntimeError")
    check([len(d.launches) for d in drivers] == launches, f"{what}: nothing launched")
    check([len(m) for m in made] == allocated, f"{what}: nothing allocated")


def check_fake(driver):
    """The fake's cuLaunchKernelEx refuses every configuration but the one it must accept."""
    d = driver

    def config(**change):
        a = d.CUlaunchAttribute()
        a.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        a.value.programmaticStreamSerializationAllowed = change.pop("value", 1)
        for n in ("cooperative", "priority"):
            if n in change:
                setattr(a.value, n, change.pop(n))
        if "id" in change:
            a.id = change.pop("id")
        c = d.CUlaunchConfig()
        c.gridDimX, c.gridDimY, c.gridDimZ = 2, 1, 1
        c.blockDimX, c.blockDimY, c.blockDimZ = 128, 1, 1
        c.sharedMemBytes = 0
        c.hStream = d.CUstream(0)
        c.attrs = [a]
        c.numAttrs = 1
        for n, v in change.items():
            setattr(c, n, v)
        return c

    ids = d.CUlaunchAttributeID
    bad = [config(value=2), config(id=ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE), config(numAttrs=2),
           config(numAttrs=0), config(cooperative=1), config(priority=3), config(hStream=0),
           config(gridDimY=0), config(blockDimZ=None), config(attrs=[object()])]
    for i, c in enumerate(bad):
        n = len(d.ex_refused)
        r = d.cuLaunchKernelEx(c, ("function", "x"), 0, 0)
        check(r == (1,) and len(d.ex_refused) == n + 1, f"the fake refuses bad config {i}")
    r = d.cuLaunchKernelEx(config(), ("function", "x"), 0, 1)
    check(r == (1,), "the fake refuses extra")
    try:
        d.CUlaunchConfig().gridDim = 1
        check(False, "the fake's CUlaunchConfig has only cuda.h's fields")
    except AttributeError:
        check(True, "")
    d.ex_refused.clear()


def check_plain(mod, torch, driver):
    """Ordinary kernels: hgemm (scalars, C), split-K (the workspace), s8; refusals."""
    f16, f32 = torch.float16, torch.float32
    M, N, K = 300, 520, 264
    A, B, C = FakeTensor((M, K), f16), FakeTensor((N, K), f16).t(), FakeTensor((M, N), f32)
    D = FakeTensor((M, N), f32)
    sizes = {"M": M, "N": N, "K": K}
    s = FakeStream(0x5157)
    pair(driver, "hgemm", "hgemm", sizes,
         lambda **kw: mod.hgemm(A, B, C, out=D, stream=s, alpha=0.5, beta=2.0, **kw))
    check(driver.launches[-1]["stream"] == ("stream", 0x5157), "hgemm: the stream given")
    _, ex = pair(driver, "hgemm, current stream", "hgemm", sizes,
                 lambda **kw: mod.hgemm(A, B, C, out=D, **kw))
    check(ex["stream"] == ("stream", 0xC0FFEE), "pdl: torch's current stream")
    made = len(torch.made)
    out = mod.hgemm(A, B, C, pdl=True)
    check(len(torch.made) == made + 1 and driver.launches[-1]["params"]["D"] == out.data_ptr()
          and driver.launches[-1]["via"] == "cuLaunchKernelEx", "pdl: out allocated, launched")
    mod.hgemm(A, B, C, out=D)
    check(driver.launches[-1]["via"] == "cuLaunchKernel", "the default: cuLaunchKernel")
    try:
        mod.hgemm(A, B, C, D, None, True)
        check(False, "pdl is keyword-only")
    except TypeError:
        check(True, "")
    # The contract is still checked: nothing launched.
    cf.refused(mod, driver, mod.hgemm, 'Scalar "alpha" is Infinity: a finite f32 is needed',
               A, B, C, alpha=float("inf"), pdl=True)

    bf = torch.bfloat16
    Ms, Ns, Ks = 64, 200, 1024
    As, Bs = FakeTensor((Ms, Ks), bf), FakeTensor((Ns, Ks), bf).t()
    bias, Ds = FakeTensor((Ns,), f32), FakeTensor((Ms, Ns), bf)
    mod.skinny_splitk(As, Bs, bias, out=Ds)  # gemmc's own workspace, made once
    _, ex = pair(driver, "split-K", "skinny_splitk", {"M": Ms, "N": Ns, "K": Ks},
                 lambda **kw: mod.skinny_splitk(As, Bs, bias, out=Ds, **kw))
    check(ex["grid"][2] == 4 and ex["params"]["workspace"] != 0, f"split-K with pdl {ex}")

    # Bindings without cuLaunchKernelEx: refused by name, before anything else.
    driver.launch_ex = False
    raises([torch.made], mod.hgemm,
           'Cannot launch kernel "hgemm" with pdl: the cuda-python bindings '
           "cuda.bindings.driver lack cuLaunchKernelEx (CUDA 11.8 and later)",
           "old bindings", A, B, C, pdl=True)
    raises([torch.made], mod.hgemm,
           'Cannot launch kernel "hgemm" with pdl: the cuda-python bindings '
           "cuda.bindings.driver lack cuLaunchKernelEx (CUDA 11.8 and later)",
           "old bindings, a bad launch", A, B, C, alpha=float("nan"), pdl=True)
    mod.hgemm(A, B, C, out=D)
    check(driver.launches[-1]["via"] == "cuLaunchKernel", "old bindings: pdl=False launches")
    driver.launch_ex = True

    # CuPy: its driver wrappers have no cuLaunchKernelEx; cuda-python launches CuPy arrays.
    cupy = cf.sys.modules["cupy"]
    Ac, Bc = FakeArray((40, 64), "int8"), FakeArray((24, 64), "int8").swapaxes(0, 1)
    mod.set_backend("cupy")
    raises([torch.made, cupy.made], mod.s8k,
           'Cannot launch kernel "s8k" with pdl: the cupy backend lacks cuLaunchKernelEx '
           '(cupy.cuda.driver has none; set_backend("cuda-python") launches CuPy arrays with '
           "pdl)", "cupy backend", Ac, Bc, pdl=True)
    n = len(cupy.cuda.driver.launches)
    mod.s8k(Ac, Bc)
    check(len(cupy.cuda.driver.launches) == n + 1, "cupy backend: pdl=False launches")
    mod.set_backend("cuda-python")
    Dc = FakeArray((40, 24), "int32")
    _, ex = pair(driver, "s8k, CuPy arrays", "s8k", {"M": 40, "N": 24, "K": 64},
                 lambda **kw: mod.s8k(Ac, Bc, out=Dc, **kw))
    check(ex["stream"] == ("stream", 0xC0C0), "CuPy arrays: CuPy's current stream")
    mod.set_backend("auto")


def check_grouped(mod, torch, driver, prefix=""):
    """Grouped kernels: grouped(), one problem, moe(), scalars; the CuPy backend refuses."""
    bf = torch.bfloat16
    K = 64
    X0, W0, Y0 = FakeTensor((100, K), bf), FakeTensor((200, K), bf).t(), FakeTensor((100, 200), bf)
    X1, W1, Y1 = FakeTensor((7, K), bf), FakeTensor((72, K), bf).t(), FakeTensor((7, 72), bf)
    probs = [{"X": X0, "W": W0, "Y": Y0}, {"X": X1, "W": W1, "Y": Y1}]
    sizes = [{"M": 100, "K": K, "N": 200}, {"M": 7, "K": K, "N": 72}]
    copies = len(driver.copies)
    _, ex = pair(driver, prefix + "grouped", "experts", sizes,
                 lambda **kw: mod.experts.grouped(probs, **kw))
    check(len(driver.copies) == copies + 2, "grouped: each launch's table copied first")
    check(ex["params"]["group_count"] == 2, f"grouped params {ex['params']}")
    pair(driver, prefix + "one problem", "experts", sizes[1:],
         lambda **kw: mod.experts(X1, W1, out=Y1, **kw))
    T, N, E = 50, 96, 4
    a, w, d = FakeTensor((T, K), bf), FakeTensor((E, N, K), bf), FakeTensor((T, N), bf)
    offs = [10, 10, 35, 50]
    moe = [{"M": m, "K": K, "N": N} for m in (10, 0, 25, 15)]
    pair(driver, prefix + "moe", "experts", moe,
         lambda **kw: mod.experts.moe(a, w.transpose(1, 2), d, offs, **kw))
    cupy = cf.sys.modules["cupy"]
    mod.set_backend("cupy")
    Xc, Wc = FakeArray((30, K), "uint16"), FakeArray((64, K), "uint16").swapaxes(0, 1)
    expected = ('Cannot launch kernel "experts" with pdl: the cupy backend lacks '
                'cuLaunchKernelEx (cupy.cuda.driver has none; set_backend("cuda-python") '
                "launches CuPy arrays with pdl)")
    raises([torch.made, cupy.made], mod.experts.grouped, expected,
           prefix + "cupy grouped", [{"X": Xc, "W": Wc}], pdl=True)
    raises([torch.made, cupy.made], mod.experts, expected, prefix + "cupy one problem",
           Xc, Wc, pdl=True)
    raises([torch.made, cupy.made], mod.experts.moe, expected, prefix + "cupy moe",
           Xc, FakeArray((2, 64, K), "uint16").swapaxes(1, 2), None, [10, 30], pdl=True)
    mod.set_backend("auto")


def check_gs(mod, torch, driver):
    """The grouped kernel with strides, C and scalars (one named count)."""
    f16, f32 = torch.float16, torch.float32
    M, N, K = 130, 264, 72
    A = FakeTensor((M, K), f16)
    B = FakeTensor((N, K), f16).t()
    Cm, D = FakeTensor((M, N), f32), FakeTensor((M, N), f32)
    _, ex = pair(driver, "gs", "gs", [{"M": M, "K": K, "N": N, "lda": K, "ldc": N}],
                 lambda **kw: mod.gs.grouped([{"A": A, "B": B, "C": Cm, "D": D}], count=2.5,
                                             **kw))
    check(ex["params"]["count"] == 2.5, f"gs: the scalar count with pdl {ex['params']}")


def check_sm90(mod, torch, driver):
    """sm90: tensor maps encoded at each launch (fake libcuda), then cuLaunchKernelEx."""
    f16, f32 = torch.float16, torch.float32
    M, N, K = 200, 264, 136
    A, B, C = FakeTensor((M, K), f16), FakeTensor((N, K), f16).t(), FakeTensor((M, N), f32)
    D = FakeTensor((M, N), f32)
    _, ex = pair(driver, "sm90 hgemm", "hgemm", {"M": M, "N": N, "K": K},
                 lambda **kw: mod.hgemm(A, B, C, out=D, **kw))
    maps = [v for v in ex["params"].values() if isinstance(v, dict)]
    check(len(maps) == 2 and all(m["at"] % 64 == 0 for m in maps), f"sm90: two maps {maps}")
    check_grouped(mod, torch, driver, "sm90 ")


def main(directory):
    torch, driver = cf.install_fakes()
    check_fake(driver)
    mods = {}
    for stem in ("plain", "grouped") + (("sm90",) if os.environ.get("GEMMC_LIBCUDA") else ()):
        mods[stem] = cf.load(f"{directory}/{stem}.py", f"gemmc_pdl_{stem}")

    def use(stem):  # the fake decodes a launch by the entry's parameters (entries repeat)
        driver.kernels.update({k["entry"]: k for k in mods[stem]._KERNELS.values()})
        return mods[stem]

    check_plain(use("plain"), torch, driver)
    check_grouped(use("grouped"), torch, driver)
    check_gs(use("grouped"), torch, driver)
    if "sm90" in mods:
        check_sm90(use("sm90"), torch, driver)
    check(driver.ex_refused == [], f"no configuration refused: {driver.ex_refused}")
    print("RECORDS " + json.dumps(RECORDS))
    print(f"{cf.PASSED[0]} checks passed, {len(cf.FAILED)} failed")
    return 1 if cf.FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
