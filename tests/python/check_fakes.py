"""Checks gemmc's generated Python modules without a GPU (tests/aot_python_test.ts runs it).

A fake ``torch`` (tensors with shapes, strides, devices and made-up addresses)
and a fake ``cuda.bindings.driver`` (which decodes every launch's void**
parameter array with ctypes), both in fakes.py, go into sys.modules before a generated module is
imported; the checks then call the module's kernels and compare the
validation messages and the launches' grid, block, shared memory, stream and
parameters with what they must be.

    python3 check_fakes.py fakes DIR
        # DIR holds hgemm.py, s8_gemm.py, splitk.py, s4_gemm.py, b1_and.py and the strided
        # hgemm_strided.py, batched_strided.py, s4_strided.py, and sparse.py (kernels spmm
        # and sps4 with a structured-sparse A; tests/aot_python_test.ts)
    python3 check_fakes.py grouped DIR
        # DIR holds grouped.py (kernels experts and gs); prints the grouped launches as JSON
        # (RECORDS ...) for tests/aot_python_test.ts to compare with groupTable
    python3 check_fakes.py parity MODULE.py KERNEL CASES.json
        # prints, as JSON, the module's contract violations for each case
"""

import json
import sys
from fakes import (  # noqa: F401 (check_pdl.py and check_tmap.py take them from here)
    FakeDtype,
    fresh_address,
    FakeTensor,
    FakeHostTensor,
    FakeStream,
    FakeArray,
    install_fakes,
    load,
)


# ---------------------------------------------------------------- the checks

FAILED = []
PASSED = [0]


def check(cond, what):
    if cond:
        PASSED[0] += 1
    else:
        FAILED.append(what)
        print("FAIL:", what)


def refused(mod, driver, fn, expected, *args, **kwargs):
    """fn(*args, **kwargs) raises GemmcLaunchError with the expected message line; no launch."""
    before = len(driver.launches)
    try:
        fn(*args, **kwargs)
    except mod.GemmcLaunchError as e:
        check(isinstance(e, ValueError), "GemmcLaunchError is a ValueError")
        check(expected in e.problems, f"expected {expected!r} among {e.problems!r}")
        check(len(driver.launches) == before, f"nothing launched for {expected!r}")
        return
    FAILED.append(f"not refused: {expected!r}")
    print("FAIL: not refused:", expected)


def check_hgemm(mod, torch, driver):
    f16, f32 = torch.float16, torch.float32
    M, N, K = 300, 520, 264
    A = FakeTensor((M, K), f16)
    B = FakeTensor((N, K), f16).t()
    C = FakeTensor((M, N), f32)
    D = mod.hgemm(A, B, C, alpha=2.5, beta=-0.75)
    check(D.shape == (M, N) and D.dtype is f32 and D.stride() == (N, 1), "out allocated")
    L = driver.launches[-1]
    check(L["entry"] == "hgemm", "entry")
    # hgemm.gemm: threadblock 128x256, swizzle 8: 3 tiles of M x 8, ceil(3 tiles of N / 8).
    check(L["grid"] == (24, 1, 1), f"grid {L['grid']}")
    check(L["block"] == (256, 1, 1) and L["smem"] == 73728, f"block/smem {L}")
    check(L["stream"] == ("stream", 0xC0FFEE), "default stream: torch's current stream")
    want = {"A": A.data_ptr(), "B": B.data_ptr(), "C": C.data_ptr(), "D": D.data_ptr(),
            "M": M, "K": K, "N": N, "alpha": 2.5, "beta": -0.75}
    check(L["params"] == want, f"params {L['params']} != {want}")
    attrs = [c for c in driver.calls if c[0] == "cuFuncSetAttribute"]
    check(len(attrs) == 1 and attrs[0][2:] == (8, 73728), f"smem limit raised once: {attrs}")
    D2 = FakeTensor((M, N), f32)
    out = mod.hgemm(A, B, C, out=D2, stream=FakeStream(0x5157))
    L = driver.launches[-1]
    check(out is D2 and L["params"]["D"] == D2.data_ptr(), "out= used")
    check(L["stream"] == ("stream", 0x5157) and L["params"]["alpha"] == 1.0, "stream=, default")
    mod.hgemm(A, B, C, out=C)
    check(driver.launches[-1]["params"]["D"] == C.data_ptr(), "in place: out is C")
    loads = [c for c in driver.calls if c[0] == "cuModuleLoadData"]
    check(len(loads) == 1, "module loaded once")

    def refuse(expected, *args, **kw):
        refused(mod, driver, mod.hgemm, expected, *args, **kw)

    refuse('Tensor "A" has dtype torch.float32; gemmc f16 needs torch.float16',
           FakeTensor((M, K), f32), B, C)
    refuse('Tensor "B" has strides [520, 1] for shape [264, 520]: declared col, it must be the '
           'transpose of a contiguous one in its last two dimensions (strides [1, 264])',
           A, FakeTensor((K, N), f16), C)
    refuse('Tensor "B" has shape [264]; it is declared [K, N]', A, FakeTensor((K,), f16), C)
    refuse('Tensor "B" gives K=272 but tensor "A" gives K=264',
           A, FakeTensor((N, 272), f16).t(), C)
    refuse('Tensor "A" declares align 8 but its leading dimension K=260 is not a multiple of 8',
           FakeTensor((M, 260), f16), FakeTensor((N, 260), f16).t(), C)
    odd = FakeTensor((M, K), f16, address=A.data_ptr() + 2)
    refuse(f'Tensor "A" at 0x{odd.data_ptr():x} is not aligned to 16 bytes (align 8 of f16)',
           odd, B, C)
    refuse('Tensor "A" is on cpu: a CUDA tensor is needed', FakeTensor((M, K), f16, "cpu"), B, C)
    refuse('Tensor "C" is on cuda:1 but tensor "A" is on cuda:0',
           A, B, FakeTensor((M, N), f32, "cuda:1"))
    refuse('Tensor "A" is a list: a PyTorch CUDA tensor or a CuPy array is needed', [1.0], B, C)
    refuse('Tensor "C" gives M=7 but tensor "A" gives M=300', A, B, FakeTensor((7, N), f32))
    refuse('Scalar "alpha" is Infinity: a finite f32 is needed', A, B, C, alpha=float("inf"))
    refuse('Scalar "beta" is 1e+39: a finite f32 is needed', A, B, C, beta=1e39)
    refuse('Scalar "alpha" is NaN: a finite f32 is needed', A, B, C, alpha=float("nan"))
    refuse('Kernel "hgemm" has no scalar "gamma": its scalars are alpha, beta', A, B, C, gamma=1)
    refuse('No tensor given for "C"', A, B, None)
    shifted = FakeTensor((M, N), f32, address=C.data_ptr() + 16)
    refuse('Output "D" overlaps input "C" (C may only be D itself, at the same address)',
           A, B, C, out=shifted)
    onA = FakeTensor((M, N), f32, address=A.data_ptr())
    refuse('Output "D" overlaps input "A"', A, B, C, out=onA)
    refuse('Kernel "hgemm": the sizes give an empty grid [0, 1, 1]: every output dimension '
           'must be at least 1', FakeTensor((0, K), f16), B, FakeTensor((0, N), f32))
    refuse('Tensor "D" has dtype torch.float16; gemmc f32 needs torch.float32',
           A, B, C, out=FakeTensor((M, N), f16))


def check_s8(mod, torch, driver):
    M, N, K = 77, 44, 128
    A = FakeTensor((M, K), torch.int8)
    B = FakeTensor((N, K), torch.int8).t()
    D = mod.s8_gemm(A, B)
    L = driver.launches[-1]
    check(D.dtype is torch.int32 and D.shape == (M, N), "s8: s32 out allocated")
    check(L["params"] == {"A": A.data_ptr(), "B": B.data_ptr(), "D": D.data_ptr(), "M": M,
                          "K": K, "N": N}, f"s8 params {L['params']}")
    check(all(g >= 1 for g in L["grid"]), "s8 grid")
    refused(mod, driver, mod.s8_gemm,
            'Tensor "A" has dtype torch.uint8; gemmc s8 needs torch.int8',
            FakeTensor((M, K), torch.uint8), B)
    refused(mod, driver, mod.s8_gemm,
            'Tensor "A" declares align 16 but its leading dimension K=120 is not a multiple of 16',
            FakeTensor((M, 120), torch.int8), FakeTensor((N, 120), torch.int8).t())


def check_splitk(mod, torch, driver):
    M, N, K = 64, 200, 1024
    bf = torch.bfloat16
    A = FakeTensor((M, K), bf)
    B = FakeTensor((N, K), bf).t()
    bias = FakeTensor((N,), torch.float32)
    made = len(torch.made)
    D = mod.skinny_splitk(A, B, bias)
    zeroed = [t for z, t in torch.made[made:] if z]
    check(len(zeroed) == 1, "split-K: one zeroed workspace allocated")
    check(torch.current.synchronized >= 1, "split-K: stream synchronized after zeroing")
    w = driver.launches[-1]["params"]["workspace"]
    check(w == zeroed[0].data_ptr(), "split-K: the workspace passed")
    check(driver.launches[-1]["grid"][2] == 4, "split-K: 4 splits on z")
    mod.skinny_splitk(A, B, bias, out=D)
    check(driver.launches[-1]["params"]["workspace"] == w, "split-K: the workspace is kept")
    check(len([1 for z, _ in torch.made[made:] if z]) == 1, "split-K: no second workspace")
    mine = FakeTensor((1 << 20,), torch.uint8)
    mod.skinny_splitk(A, B, bias, workspace=mine)
    check(driver.launches[-1]["params"]["workspace"] == mine.data_ptr(), "split-K: workspace=")
    k = mod._KERNELS["skinny_splitk"]
    need = mod._workspace_bytes(k, {"M": M, "N": N, "K": K})
    small = FakeTensor((need - 1,), torch.uint8)
    refused(mod, driver, mod.skinny_splitk,
            f"The split-K workspace holds {need - 1} bytes; the sizes need {need}",
            A, B, bias, workspace=small)
    odd = FakeTensor((need,), torch.uint8, address=mine.data_ptr() + 8)
    refused(mod, driver, mod.skinny_splitk,
            f"The split-K workspace at 0x{odd.data_ptr():x} is not aligned to 16 bytes",
            A, B, bias, workspace=odd)
    refused(mod, driver, mod.skinny_splitk,
            f"The split-K workspace has strides [2] for shape [{need}]: it must be contiguous",
            A, B, bias, workspace=FakeTensor((need,), torch.uint8, strides=(2,)))
    refused(mod, driver, mod.skinny_splitk,
            "The stream is 'fast': a torch or CuPy stream or a CUstream handle is needed",
            A, B, bias, stream="fast")
    refused(mod, driver, mod.skinny_splitk,
            'The split-K workspace overlaps tensor "bias"',
            A, B, bias, workspace=FakeTensor((need,), torch.uint8, address=bias.data_ptr()))


def check_cupy(mod, torch, driver):
    """CuPy arrays through the CuPy backend: sizes, strides in bytes, the launch, out."""
    cupy = sys.modules["cupy"]
    mod.set_backend("cupy")
    check(mod.backend_name() == "cupy", "set_backend(cupy)")
    M, N, K = 40, 24, 64
    A = FakeArray((M, K), "int8")
    B = FakeArray((N, K), "int8").swapaxes(0, 1)
    D = mod.s8_gemm(A, B)
    launches = cupy.cuda.driver.launches
    check(len(launches) == 1, "cupy backend launched")
    L = launches[-1]
    check(isinstance(D, FakeArray) and D.dtype.name == "int32" and D.shape == (M, N),
          "cupy out allocated")
    check(L["params"] == {"A": A.data.ptr, "B": B.data.ptr, "D": D.data.ptr, "M": M, "K": K,
                          "N": N}, f"cupy params {L['params']}")
    check(L["stream"] == 0xC0C0, "cupy: current stream")
    refused(mod, cupy.cuda.driver, mod.s8_gemm,
            'Tensor "B" has strides [24, 1] for shape [64, 24]: declared col, it must be the '
            'transpose of a contiguous one in its last two dimensions (strides [1, 64])',
            A, FakeArray((K, N), "int8"))
    refused(mod, cupy.cuda.driver, mod.s8_gemm,
            'Tensor "B" is a torch tensor but tensor "A" is a cupy one',
            A, FakeTensor((N, K), torch.int8).t())
    mod.set_backend("auto")


def check_packed(mod, torch, driver):
    """s4 and b1: packed uint8 tensors; K is the packed extent times 8 / bits."""
    M, N, K = 40, 24, 256
    for stem, fn, per in [("s4_gemm", mod["s4"].s4_gemm, 2), ("b1_and", mod["b1"].b1_and, 8)]:
        A = FakeTensor((M, K // per), torch.uint8)
        B = FakeTensor((N, K // per), torch.int8).t()
        D = fn(A, B)
        L = driver.launches[-1]
        check(L["entry"] == stem and L["params"]["K"] == K and L["params"]["M"] == M
              and L["params"]["N"] == N, f"{stem}: K unpacked from the packed extent {L}")
        check(D.dtype is torch.int32, f"{stem}: s32 out")
        refused(mod[stem[:2]], driver, fn,
                f'Tensor "A" has dtype torch.float16; gemmc {stem[:2]} needs torch.uint8 or '
                'torch.int8', FakeTensor((M, K // per), torch.float16), B)


def check_strided(mods, torch, driver):
    """Kernels declared with strides (hand-built manifests): views, their stride values."""
    f16, f32 = torch.float16, torch.float32
    mod = mods["hgemm"]
    driver.kernels.update(mod._KERNELS)
    M, N, K = 300, 520, 264
    A = FakeTensor((M, K), f16, strides=(K + 64, 1), address=fresh_address(2 * M * (K + 64)))
    B = FakeTensor((K, N), f16, strides=(1, K + 16), address=fresh_address(2 * N * (K + 16)))
    C = FakeTensor((M, N), f32, strides=(N + 8, 1), address=fresh_address(4 * M * (N + 8)))
    D = mod.hgemm(A, B, C, alpha=0.5)
    check(D.shape == (M, N) and D.stride() == (N + 8, 1), f"strided out allocated {D.stride()}")
    L = driver.launches[-1]
    want = {"A": A.data_ptr(), "B": B.data_ptr(), "C": C.data_ptr(), "D": D.data_ptr(),
            "M": M, "K": K, "N": N, "lda": K + 64, "ldb": K + 16, "ldc": N + 8, "alpha": 0.5,
            "beta": 0.0}
    check(L["params"] == want, f"strided params {L['params']} != {want}")
    dense = FakeHostTensor((M, K), f16)
    mod.hgemm(dense, B, C, out=D)
    check(driver.launches[-1]["params"]["lda"] == K, "a dense view gives the dense stride")
    mod.hgemm(A, B, C, out=C)
    check(driver.launches[-1]["params"]["D"] == C.data_ptr(), "strided in place: out is C")

    def refuse(expected, *args, **kw):
        refused(mod, driver, mod.hgemm, expected, *args, **kw)

    refuse('Tensor "A" has strides [1, 300] for shape [300, 264]: declared row strides(lda), '
           'its dimension 1 must be contiguous (stride 1)',
           FakeTensor((M, K), f16, strides=(1, M)), B, C)
    refuse('Tensor "D" gives matrix stride ldc=536 but tensor "C" gives ldc=528',
           A, B, C, out=FakeTensor((M, N), f32, strides=(N + 16, 1)))
    refuse('Tensor "A" declares align 8 but its matrix stride lda=268 is not a multiple of 8',
           FakeTensor((M, K), f16, strides=(K + 4, 1)), B, C)
    refuse('Tensor "A" has matrix stride lda=256, less than its contiguous extent K=264',
           FakeTensor((M, K), f16, strides=(K - 8, 1)), B, C)
    # D in columns N.. of C's rows (both ldc = 2N): their extents overlap.
    wide = FakeTensor((M, N), f32, strides=(2 * N, 1), address=fresh_address(8 * M * N))
    beside = FakeTensor((M, N), f32, strides=(2 * N, 1), address=wide.data_ptr() + 4 * N)
    refuse('Output "D" overlaps input "C" (C may only be D itself, at the same address)',
           A, B, wide, out=beside)

    mod = mods["batched"]
    driver.kernels.update(mod._KERNELS)
    Lb, M, N, K = 3, 64, 40, 48
    A = FakeTensor((Lb, M, K), f16, strides=(M * K + 512, K + 8, 1),
                   address=fresh_address(2 * Lb * (M * K + 512)))
    W = FakeTensor((N, K), f16)
    B = FakeTensor((Lb, K, N), f16, strides=(0, 1, K), address=W.data_ptr())  # W.t() expanded
    D = mod.batched_hgemm(A, B)
    L = driver.launches[-1]
    check(D.stride() == (M * N, N, 1), f"batched: dense out {D.stride()}")
    check((L["params"]["sa"], L["params"]["lda"], L["params"]["ldb"], L["params"]["sd"])
          == (M * K + 512, K + 8, K, M * N), f"batched stride params {L['params']}")
    Dp = FakeTensor((Lb, M, N), f16, strides=(M * N + 64, N, 1),
                    address=fresh_address(2 * Lb * (M * N + 64)))
    mod.batched_hgemm(A, B, out=Dp)
    check(driver.launches[-1]["params"]["sd"] == M * N + 64, "batched: out's batch stride")
    refused(mod, driver, mod.batched_hgemm,
            f'Tensor "B" has batch stride {K * N} where it is declared 0',
            A, FakeTensor((Lb, K, N), f16, strides=(K * N, 1, K)))
    refused(mod, driver, mod.batched_hgemm,
            f'Tensor "D" has batch stride sd=0; an output\'s must be at least {M * N} '
            '(rows x matrix stride)',
            A, B, out=FakeTensor((Lb, M, N), f16, strides=(0, N, 1)))
    refused(mod, driver, mod.batched_hgemm,
            f'Tensor "D" has matrix stride {N + 8} where it is declared N={N}',
            A, B, out=FakeTensor((Lb, M, N), f16, strides=(M * (N + 8), N + 8, 1)))

    mod = mods["s4"]
    driver.kernels.update(mod._KERNELS)
    M, N, K = 40, 24, 256
    A = FakeTensor((M, K // 2), torch.uint8, strides=(K // 2 + 16, 1))
    B = FakeTensor((N, K // 2), torch.int8).t()
    mod.s4_gemm(A, B)
    L = driver.launches[-1]["params"]
    check(L["K"] == K and L["lda"] == K + 32, f"s4: the packed stride in elements {L}")
    cupy = sys.modules["cupy"]
    mods["hgemm"].set_backend("cupy")
    M, N, K = 40, 24, 64
    mod = mods["hgemm"]
    driver.kernels.update(mod._KERNELS)
    A = FakeArray((M, K), "float16", strides=(2 * (K + 8), 2))
    B = FakeArray((N, K), "float16").swapaxes(0, 1)
    C = FakeArray((M, N), "float32", strides=(4 * (N + 8), 4))
    D = mod.hgemm(A, B, C)
    L = cupy.cuda.driver.launches[-1]["params"]
    check(D.strides == (4 * (N + 8), 4), f"cupy: strided out {D.strides}")
    check((L["lda"], L["ldb"], L["ldc"]) == (K + 8, K, N + 8), f"cupy stride params {L}")
    mods["hgemm"].set_backend("auto")


def fakes(directory):
    torch, driver = install_fakes()
    for stem, fn in [("hgemm", check_hgemm), ("s8_gemm", check_s8), ("splitk", check_splitk)]:
        mod = load(f"{directory}/{stem}.py", "gemmc_" + stem)
        driver.kernels.update(mod._KERNELS)
        if stem == "s8_gemm":
            mod_s8 = mod
        fn(mod, torch, driver)
    check_cupy(mod_s8, torch, driver)
    packed = {}
    for key, stem in [("s4", "s4_gemm"), ("b1", "b1_and")]:
        packed[key] = load(f"{directory}/{stem}.py", "gemmc_" + stem)
        driver.kernels.update(packed[key]._KERNELS)
    check_packed(packed, torch, driver)
    strided = {}
    for key, stem in [("hgemm", "hgemm_strided"), ("batched", "batched_strided"),
                      ("s4", "s4_strided")]:
        strided[key] = load(f"{directory}/{stem}.py", "gemmc_" + stem)
    check_strided(strided, torch, driver)
    try:
        mod.set_backend("nope")
        check(False, "set_backend refuses an unknown name")
    except ValueError as e:
        check("Unknown backend" in str(e), "set_backend message")
    sparse = load(f"{directory}/sparse.py", "gemmc_sparse")
    driver.kernels.update(sparse._KERNELS)
    check_sparse(sparse, torch, driver)
    print(f"{PASSED[0]} checks passed, {len(FAILED)} failed")
    return 1 if FAILED else 0


def check_sparse(mod, torch, driver):
    """A structured-sparse A: kept values and metadata (spmm f16, sps4 batched s4)."""
    f16, i32 = torch.float16, torch.int32
    M, N, K = 70, 40, 224
    W = -(-K // 32)
    A = FakeTensor((M, K // 2), f16)
    meta = FakeTensor((M, W), i32)
    B = FakeTensor((N, K), f16).t()
    D = mod.spmm(A, meta, B, alpha=1.5)
    L = driver.launches[-1]
    check(D.shape == (M, N) and D.dtype is torch.float32, f"sparse: out {D.shape}")
    want = {"A": A.data_ptr(), "A_meta": meta.data_ptr(), "B": B.data_ptr(), "D": D.data_ptr(),
            "M": M, "K": K, "N": N, "alpha": 1.5}
    check(L["params"] == want, f"sparse params {L['params']} != {want}")
    check(list(mod._KERNELS["spmm"]["params"][i][1] for i in range(4)) == ["A", "A_meta", "B", "D"],
          "sparse: ABI order A, A_meta, B, D")
    mod.spmm(A=A, A_meta=meta, B=B, out=D)
    check(driver.launches[-1]["params"]["A_meta"] == meta.data_ptr(), "sparse: keywords")
    # torch.uint32 where torch has it.
    torch.uint32 = FakeDtype("uint32", 4)
    try:
        mod.spmm(A, FakeTensor((M, W), torch.uint32), B, out=D)
        check(True, "sparse: uint32 metadata")
    except mod.GemmcLaunchError as e:
        check(False, f"sparse: uint32 metadata refused: {e}")
    del torch.uint32

    def refuse(fn, expected, *args, **kw):
        refused(mod, driver, fn, expected, *args, **kw)

    refuse(mod.spmm, 'Tensor "A_meta" has dtype torch.float16; the sparse metadata (32-bit words) '
           'of gemmc f16 needs torch.int32', A, FakeTensor((M, W), f16), B)
    short = FakeTensor((M, W - 1), i32)
    refuse(mod.spmm, f'Tensor "A_meta" has shape [{M}, {W - 1}]: the metadata of the sparse A '
           f'needs [{M}, {W}] ([M, ceil(K / 32)] 32-bit words)', A, short, B)
    refuse(mod.spmm, f'Buffer of tensor "A_meta" holds {4 * M * (W - 1)} bytes; the sizes need '
           f'{4 * M * W}', A, short, B)
    refuse(mod.spmm, f'Tensor "A_meta" has shape [{W}]: the metadata of the sparse A needs '
           f'[{M}, {W}] ([M, ceil(K / 32)] 32-bit words)', A, FakeTensor((W,), i32), B)
    refuse(mod.spmm, 'Tensor "A" declares align 8 but its leading dimension (the kept values, '
           'K=200 / 2 = 100) is not a multiple of 8', FakeTensor((M, 100), f16),
           FakeTensor((M, 7), i32), FakeTensor((N, 200), f16).t())
    refuse(mod.spmm, 'Tensor "B" gives K=232 but tensor "A" gives K=224', A, meta,
           FakeTensor((N, 232), f16).t())
    refuse(mod.spmm, 'Output "D" overlaps input "A_meta"', A, meta, B,
           out=FakeTensor((M, N), torch.float32, address=meta.data_ptr()))

    # s4, batched: the kept values packed two a byte, [L, M, K/4] uint8; 64 of K a word.
    Lb, M, N, K = 3, 40, 24, 384
    A4 = FakeTensor((Lb, M, K // 4), torch.uint8)
    meta4 = FakeTensor((Lb, M, K // 64), i32)
    B4 = FakeTensor((Lb, N, K // 2), torch.int8).transpose(1, 2)
    D4 = mod.sps4(A4, meta4, B4)
    L = driver.launches[-1]["params"]
    check((L["L"], L["M"], L["K"], L["N"]) == (Lb, M, K, N),
          f"s4 sparse: K from the packed values {L}")
    check(L["A_meta"] == meta4.data_ptr() and D4.shape == (Lb, M, N), "s4 sparse: meta, out")
    refuse(mod.sps4, 'Tensor "A" declares align 32 but its leading dimension (the kept values, '
           'K=400 / 2 = 200) is not a multiple of 32', FakeTensor((Lb, M, 100), torch.uint8),
           FakeTensor((Lb, M, 7), i32), FakeTensor((Lb, N, 200), torch.int8).transpose(1, 2))
    refuse(mod.sps4, f'Tensor "A_meta" has shape [{Lb}, {M}, 5]: the metadata of the sparse A '
           f'needs [{Lb}, {M}, 6] ([L, M, ceil(K / 64)] 32-bit words)', A4,
           FakeTensor((Lb, M, 5), i32), B4)
    refuse(mod.sps4, f'Buffer of tensor "A_meta" holds {4 * Lb * M * 5} bytes; the sizes need '
           f'{4 * Lb * M * 6}', A4, FakeTensor((Lb, M, 5), i32), B4)
    refuse(mod.sps4, 'Tensor "A_meta" has dtype torch.uint8; the sparse metadata (32-bit words) '
           'of gemmc s4 needs torch.int32', A4, FakeTensor((Lb, M, 6), torch.uint8), B4)

    # CuPy: uint32 metadata (numpy compress_sparse's, through cupy.asarray), through CuPy.
    cupy = sys.modules["cupy"]
    mod.set_backend("cupy")
    M, N, K = 70, 40, 224
    Ac, Bc = FakeArray((M, K // 2), "float16"), FakeArray((N, K), "float16").swapaxes(0, 1)
    mc = FakeArray((M, K // 32), "uint32")
    Dc = mod.spmm(Ac, mc, Bc)
    L = cupy.cuda.driver.launches[-1]["params"]
    check((L["A_meta"], L["K"], L["D"]) == (mc.data.ptr, K, Dc.data.ptr), f"cupy sparse {L}")
    refused(mod, cupy.cuda.driver, mod.spmm, 'Tensor "A_meta" has dtype cupy.float16; the sparse '
            'metadata (32-bit words) of gemmc f16 needs cupy.int32 or cupy.uint32',
            Ac, FakeArray((M, K // 32), "float16"), Bc)
    mod.set_backend("auto")

    # compress_sparse's torch path (a fake torch tensor holding a numpy array): its results go in
    # as they are.
    try:
        import numpy as np
    except ImportError:
        print("check_sparse: no numpy; compress_sparse's results not checked (skipped)")
        return
    rng = np.random.default_rng(5)
    M, N, K = 70, 40, 224
    dense = FakeHostTensor((M, K), f16)
    dense.array = rng.standard_normal((M, K)).astype(np.float16)
    values, m = mod.compress_sparse(dense, "f16", prune=True)
    check(values.dtype is f16 and m.dtype is i32 and values.shape == (M, K // 2)
          and m.shape == (M, K // 32) and values.is_cuda, f"compress_sparse f16: {values.shape}")
    mod.spmm(A=values, A_meta=m, B=B)
    L = driver.launches[-1]["params"]
    check((L["A"], L["A_meta"], L["K"]) == (values.data_ptr(), m.data_ptr(), K),
          f"compress_sparse's f16 results launched {L}")
    Lb, M, N, K = 3, 40, 24, 448
    d4 = FakeHostTensor((Lb, M, K), torch.int8)
    d4.array = rng.integers(-8, 8, (Lb, M, K)).astype(np.int8)
    values, m = mod.compress_sparse(d4, "s4", prune=True)
    check(values.dtype is torch.uint8 and values.shape == (Lb, M, K // 4)
          and m.dtype is i32 and m.shape == (Lb, M, -(-K // 64)), f"compress_sparse s4: {m.shape}")
    mod.sps4(values, m, FakeTensor((Lb, N, K // 2), torch.int8).transpose(1, 2))
    L = driver.launches[-1]["params"]
    check((L["A"], L["A_meta"], L["K"]) == (values.data_ptr(), m.data_ptr(), K),
          f"compress_sparse's s4 results launched {L}")


# ---------------------------------------------------------------- grouped kernels

RECORDS = []


def record(kind, launch, copy, problems, occupancy):
    """One grouped launch for tests/aot_python_test.ts to compare with groupTable."""
    RECORDS.append({"kind": kind, "entry": launch["entry"], "grid": list(launch["grid"]),
                    "block": list(launch["block"]), "smem": launch["smem"],
                    "params": launch["params"], "dst": copy[0], "table": copy[1].hex(),
                    "problems": problems, "occupancy": occupancy})


def dense_problem(X, W, Y):
    M, K = X.shape
    N = W.shape[1]
    return {"sizes": {"M": M, "K": K, "N": N},
            "addresses": {"X": X.data_ptr(), "W": W.data_ptr(), "Y": Y.data_ptr()}}


def check_grouped(mod, torch, driver):
    bf = torch.bfloat16
    K = 64
    X0, W0, Y0 = FakeTensor((100, K), bf), FakeTensor((200, K), bf).t(), FakeTensor((100, 200), bf)
    X1 = FakeTensor((0, K), bf, address=0)
    W1, Y1 = FakeTensor((200, K), bf).t(), FakeTensor((0, 200), bf, address=0)
    X2, W2 = FakeTensor((7, K), bf), FakeTensor((72, K), bf).t()
    X3, W3, Y3 = FakeTensor((40000, K), bf), FakeTensor((2048, K), bf).t(), FakeTensor((40000, 2048), bf)
    made = len(torch.made)
    outs = mod.experts.grouped([{"X": X0, "W": W0, "Y": Y0}, {"X": X1, "W": W1, "Y": Y1},
                                {"X": X2, "W": W2}, {"X": X3, "W": W3, "Y": Y3}])
    check(len(outs) == 4 and outs[0] is Y0 and outs[1] is Y1 and outs[3] is Y3, "grouped outs")
    check(outs[2].shape == (7, 72) and outs[2].dtype is bf, f"grouped: Y allocated {outs[2].shape}")
    L, C = driver.launches[-1], driver.copies[-1]
    check(C[2] == ("stream", 0xC0FFEE) and L["stream"] == ("stream", 0xC0FFEE), "current stream")
    table_buffers = [t for _, t in torch.made[made:] if t.dtype is torch.uint8]
    check(len(table_buffers) == 1 and C[0] == table_buffers[0].data_ptr(), "table buffer")
    record("grouped", L, C, [dense_problem(X0, W0, Y0), dense_problem(X1, W1, Y1),
                             dense_problem(X2, W2, outs[2]), dense_problem(X3, W3, Y3)], 3)
    driver.occupancy = 5  # found once: the grid stays at 132 x 3
    mod.experts.grouped([{"X": X3, "W": W3, "Y": Y3}])
    L, C = driver.launches[-1], driver.copies[-1]
    check(C[0] == table_buffers[0].data_ptr(), "the table buffer is kept for the stream")
    record("again", L, C, [dense_problem(X3, W3, Y3)], 3)
    occ = [c for c in driver.calls if c[0] == "cuOccupancyMaxActiveBlocksPerMultiprocessor"]
    k = mod._KERNELS["experts"]
    check(len(occ) == 1 and occ[0][2:] == (k["block"][0], k["dynamicSmemBytes"]),
          f"occupancy found once {occ}")
    Y = mod.experts(X2, W2, stream=FakeStream(0x5157))
    L, C = driver.launches[-1], driver.copies[-1]
    check(C[2] == ("stream", 0x5157) and C[0] != table_buffers[0].data_ptr(),
          "another stream: another table buffer")
    record("one", L, C, [dense_problem(X2, W2, Y)], 3)
    check(mod.experts.grouped([]) == [], "no problem: nothing launched")

    def refuse(expected, fn, *args, **kw):
        refused(mod, driver, fn, expected, *args, **kw)

    odd = FakeTensor((100, K), bf, address=X0.data_ptr() + 2)
    refuse(f'Problem 1: Tensor "X" at 0x{odd.data_ptr():x} is not aligned to 16 bytes '
           '(align 8 of bf16)', mod.experts.grouped,
           [{"X": X0, "W": W0, "Y": Y0}, {"X": odd, "W": W0}])
    refuse('Problem 2: No tensor given for "W"', mod.experts.grouped,
           [{"X": X0, "W": W0}, {"X": X2, "W": W2}, {"X": X2}])
    refuse('Problem 0: Tensor "W" gives K=72 but tensor "X" gives K=64', mod.experts.grouped,
           [{"X": X0, "W": FakeTensor((200, 72), bf).t()}])
    refuse('Problem 1: Kernel "experts" has no tensor "Z": its tensors are X, W, Y',
           mod.experts.grouped, [{"X": X0, "W": W0}, {"X": X0, "W": W0, "Z": X0}])
    refuse('Problem 0: Output "Y" overlaps input "X"', mod.experts.grouped,
           [{"X": X0, "W": W0, "Y": FakeTensor((100, 200), bf, address=X0.data_ptr())}])
    refuse('Problem 0: Tensor "X" has a null address', mod.experts.grouped,
           [{"X": FakeTensor((5, K), bf, address=0), "W": W0}])
    refuse("Problem 1: is a list: a dict of tensors by name (X, W, Y) is needed",
           mod.experts.grouped, [{"X": X0, "W": W0}, [X0, W0]])

    # The mixture-of-experts form: T tokens sorted by expert, weights [E, N, K].
    T, N, E = 50, 96, 4
    a, w, d = FakeTensor((T, K), bf), FakeTensor((E, N, K), bf), FakeTensor((T, N), bf)
    b = w.transpose(1, 2)
    offs = [10, 10, 35, 50]

    def moe_problems(offs, d):
        out, start = [], 0
        for g, end in enumerate(offs):
            out.append({"sizes": {"M": end - start, "K": K, "N": N},
                        "addresses": {"X": a.data_ptr() + 2 * K * start,
                                      "W": w.data_ptr() + 2 * N * K * g,
                                      "Y": d.data_ptr() + 2 * N * start}})
            start = end
        return out

    check(mod.experts.moe(a, b, d, offs) is d, "moe returns d")
    record("moe", driver.launches[-1], driver.copies[-1], moe_problems(offs, d), 3)
    offs_t = FakeTensor((E,), torch.int32)
    offs_t.values = [0, 20, 20, 41]
    d2 = mod.experts.moe(a, b, None, offs_t)
    check(d2.shape == (T, N) and d2.dtype is bf, "moe: d allocated")
    record("moe tensor offs", driver.launches[-1], driver.copies[-1],
           moe_problems(offs_t.values, d2), 3)
    refuse("Problem 2: offs[2]=5 is less than the previous end row 10 (offs are cumulative end "
           "rows)", mod.experts.moe, a, b, d, [10, 10, 5, 50])
    refuse('Problem 3: offs[3]=51 is beyond the 50 rows of tensor "X"', mod.experts.moe,
           a, b, d, [10, 10, 35, 51])
    refuse('offs has 3 entries but tensor "W" holds 4 experts', mod.experts.moe,
           a, b, d, [10, 20, 50])
    refuse('Tensor "W" has shape [64, 96]; moe() needs [experts, K, N]', mod.experts.moe,
           a, FakeTensor((N, K), bf).t(), d, offs)
    refuse('Output "Y" overlaps input "W"', mod.experts.moe, a, b,
           FakeTensor((T, N), bf, address=w.data_ptr() + 4096), offs)
    refuse('Tensor "X" has dtype torch.float16; gemmc bf16 needs torch.bfloat16',
           mod.experts.moe, FakeTensor((T, K), torch.float16), b, d, offs)

    # Strides, C and scalars (one named "count"): views of wider buffers.
    f16, f32 = torch.float16, torch.float32
    probs, recs = [], []
    for M, N2, K2 in [(130, 264, 72), (0, 40, 16), (33, 8, 8)]:
        A = FakeTensor((M, K2), f16, strides=(K2 + 8, 1),
                       address=fresh_address(2 * max(M, 1) * (K2 + 8)))
        B = FakeTensor((N2, K2), f16).t()
        Cm = FakeTensor((M, N2), f32, strides=(N2 + 8, 1),
                        address=fresh_address(4 * max(M, 1) * (N2 + 8)))
        D = FakeTensor((M, N2), f32, strides=(N2 + 8, 1),
                       address=fresh_address(4 * max(M, 1) * (N2 + 8)))
        probs.append({"A": A, "B": B, "C": Cm, "D": D})
        recs.append({"sizes": {"M": M, "K": K2, "N": N2, "lda": K2 + 8, "ldc": N2 + 8},
                     "addresses": {"A": A.data_ptr(), "B": B.data_ptr(), "C": Cm.data_ptr(),
                                   "D": D.data_ptr()}})
    # An empty problem's views: dense strides where a dimension is 0 give the dense value.
    recs[1]["sizes"]["lda"], recs[1]["sizes"]["ldc"] = 16, 40
    mod.gs.grouped(probs, count=2.5, beta=-0.5)
    L = driver.launches[-1]
    check(L["params"]["count"] == 2.5 and L["params"]["beta"] == -0.5
          and L["params"]["group_count"] == 3, f"gs scalars {L['params']}")
    record("strided", L, driver.copies[-1], recs, 3)
    refuse('Scalar "count" is Infinity: a finite f32 is needed', mod.gs.grouped, probs,
           count=float("inf"))
    refuse('Problem 0: Tensor "D" gives matrix stride ldc=280 but tensor "C" gives ldc=272',
           mod.gs.grouped, [dict(probs[0], D=FakeTensor((130, 264), f32, strides=(280, 1)))])

    # CuPy arrays through the CuPy backend (occupancy 2).
    cupy = sys.modules["cupy"]
    mod.set_backend("cupy")
    Xc, Wc = FakeArray((300, K), "uint16"), FakeArray((512, K), "uint16").swapaxes(0, 1)
    outs = mod.experts.grouped([{"X": Xc, "W": Wc}, {"X": Xc, "W": Wc}])
    L, C = cupy.cuda.driver.launches[-1], cupy.cuda.runtime.copies[-1]
    check(C[3] == 1 and C[2] == 0xC0C0 and L["stream"] == 0xC0C0, "cupy: copy and launch")
    record("cupy", L, C, [{"sizes": {"M": 300, "K": K, "N": 512},
                           "addresses": {"X": Xc.data.ptr, "W": Wc.data.ptr,
                                         "Y": o.data.ptr}} for o in outs], 2)
    mod.set_backend("auto")


def grouped(directory):
    torch, driver = install_fakes()
    mod = load(f"{directory}/grouped.py", "gemmc_grouped")
    driver.kernels.update(mod._KERNELS)
    check_grouped(mod, torch, driver)
    print("RECORDS " + json.dumps(RECORDS))
    print(f"{PASSED[0]} checks passed, {len(FAILED)} failed")
    return 1 if FAILED else 0


def parity(path, kernel, cases_path):
    install_fakes()
    mod = load(path, "gemmc_parity")
    k = mod._KERNELS[kernel]
    with open(cases_path) as f:
        cases = json.load(f)
    out = []
    for c in cases:
        tensors = {n: (a, b) for n, (a, b) in c["tensors"].items()}
        ws = tuple(c["workspace"]) if c.get("workspace") is not None else None
        out.append(mod._violations(k, c["sizes"], tensors, c["scalars"], ws))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "fakes":
        sys.exit(fakes(sys.argv[2]))
    if sys.argv[1] == "grouped":
        sys.exit(grouped(sys.argv[2]))
    sys.exit(parity(sys.argv[2], sys.argv[3], sys.argv[4]))
