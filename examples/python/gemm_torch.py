"""Runs gemmc's generated Python modules on PyTorch CUDA tensors and checks them.

Generates nothing itself: DIR holds the modules that `gemm compile --emit py`
wrote (see README.md here):

    hgemm.py    from examples/hgemm.gemm     f16 x f16 -> f32, alpha/beta, C
    s8_gemm.py  from examples/s8_gemm.gemm   s8 x s8 -> s32 (checked exactly)
    splitk.py   from examples/splitk.gemm    bf16, split_k 4, bias, bf16 out
    strided.py  from examples/strided.gemm   views of wider buffers, a batch stride 0
    grouped.py  from examples/python/grouped.gemm   a grouped kernel (DESIGN 6.2): MoE experts
                (optional: skipped, visibly, when DIR has no grouped.py)

Each kernel runs on random tensors, at a size that is a multiple of its tile
and at one that is not, and is compared with a float64 PyTorch reference:
the maximum error and PASS or FAIL per run; exit status 1 if any failed.

    python3 gemm_torch.py DIR [--backend auto|cuda-python|cupy]
"""

import argparse
import importlib.util
import os
import sys

import torch

RESULTS = []


def load(directory, stem, backend):
    path = os.path.join(directory, stem + ".py")
    spec = importlib.util.spec_from_file_location("gemmc_" + stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.set_backend(backend)
    return mod


def report(name, ok, err, unit=""):
    RESULTS.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}  {name:44s} max error {err:.3g}{unit}")


def float_check(name, got, ref, bound):
    """|got - ref| <= bound elementwise (ref and bound in float64); poisoned NaNs fail."""
    err = (got.double() - ref).abs()
    ok = bool(torch.isfinite(got).all()) and bool((err <= bound).all())
    report(name, ok, float(err.nan_to_num(float("inf")).max()))


def poisoned(shape, dtype, device):
    """A row-major output full of NaN (or of a sentinel for integers)."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.full(shape, -0x5A5A5A5A, dtype=dtype, device=device)


def run_hgemm(mod, dev, gen):
    for M, N, K in [(256, 512, 256), (300, 520, 264)]:
        A = torch.randn(M, K, generator=gen, device=dev).half()
        B = torch.randn(N, K, generator=gen, device=dev).half().t()  # declared col: K x N
        C = torch.randn(M, N, generator=gen, device=dev)
        alpha, beta = 1.5, -0.75
        ref = alpha * (A.double() @ B.double()) + beta * C.double()
        # f32 accumulation of exact f16 products: at most K roundings of 2^-24 each.
        bound = K * 2.0**-23 * (abs(alpha) * (A.double().abs() @ B.double().abs())
                                + abs(beta) * C.double().abs()) + 1e-6
        D = poisoned((M, N), torch.float32, dev)
        mod.hgemm(A, B, C, out=D, alpha=alpha, beta=beta)
        torch.cuda.synchronize()
        float_check(f"hgemm {M}x{N}x{K} out=", D, ref, bound)
        stream = torch.cuda.Stream(device=dev)
        stream.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(stream):
            D2 = mod.hgemm(A, B, C, alpha=alpha, beta=beta)  # out allocated, current stream
        stream.synchronize()
        float_check(f"hgemm {M}x{N}x{K} allocated, side stream", D2, ref, bound)
    try:
        A = torch.randn(64, 60, device=dev).half()
        mod.hgemm(A, torch.randn(64, 60, device=dev).half().t(), torch.randn(64, 64, device=dev))
        report("hgemm refuses K=60 (align 8)", False, 0.0)
    except mod.GemmcLaunchError as e:
        print(f"      GemmcLaunchError: {e}")
        report("hgemm refuses K=60 (align 8)", "K=60" in str(e), 0.0)


def run_s8(mod, dev, gen):
    for M, N, K in [(128, 128, 256), (300, 520, 272)]:
        A = torch.randint(-128, 128, (M, K), generator=gen, device=dev, dtype=torch.int8)
        B = torch.randint(-128, 128, (N, K), generator=gen, device=dev, dtype=torch.int8).t()
        ref = (A.double() @ B.double()).long()  # exact: |sum| < 2^53, no s32 saturation here
        D = poisoned((M, N), torch.int32, dev)
        mod.s8_gemm(A, B, out=D)
        torch.cuda.synchronize()
        err = float((D.long() - ref).abs().max())
        report(f"s8_gemm {M}x{N}x{K} (exact)", err == 0, err)
    try:
        import cupy
    except ImportError:
        print("      (CuPy arrays: skipped, no cupy)")
        return
    M, N, K = 96, 80, 128
    A = torch.randint(-128, 128, (M, K), generator=gen, device=dev, dtype=torch.int8)
    B = torch.randint(-128, 128, (N, K), generator=gen, device=dev, dtype=torch.int8).t()
    torch.cuda.synchronize()
    D = mod.s8_gemm(cupy.from_dlpack(A), cupy.from_dlpack(B))
    cupy.cuda.get_current_stream().synchronize()
    err = float((torch.from_dlpack(D).long() - (A.double() @ B.double()).long()).abs().max())
    report(f"s8_gemm {M}x{N}x{K} on CuPy arrays (exact)", err == 0, err)


def run_splitk(mod, dev, gen):
    for M, N, K in [(64, 256, 4096), (50, 200, 1000)]:
        A = (torch.randn(M, K, generator=gen, device=dev) * 0.5).bfloat16()
        B = (torch.randn(N, K, generator=gen, device=dev) * 0.5).bfloat16().t()
        bias = torch.randn(N, generator=gen, device=dev)
        ref = A.double() @ B.double() + bias.double()
        # f32 partial sums (K roundings) then one rounding to bf16 (2^-8 relative, 2^-133 min).
        bound = (K * 2.0**-23 * (A.double().abs() @ B.double().abs() + bias.double().abs())
                 * (1 + 2.0**-7) + ref.abs() * 2.0**-8 + 1e-30)
        for run in (1, 2):  # the second reuses the kept workspace: it must come back zeroed
            D = poisoned((M, N), torch.bfloat16, dev)
            mod.skinny_splitk(A, B, bias, out=D)
            torch.cuda.synchronize()
            float_check(f"skinny_splitk {M}x{N}x{K} run {run}", D, ref, bound)


def run_strided(mod, dev, gen):
    """Strided views (issue 20): sub-blocks of wider buffers, a batch broadcast by stride 0."""
    for M, N, K in [(200, 136, 264), (64, 512, 128)]:
        A = torch.randn(M, K + 40, generator=gen, device=dev).half()[:, :K]  # lda = K + 40
        B = torch.randn(N, K, generator=gen, device=dev).half().t()
        Dbase = poisoned((M, N + 24), torch.float32, dev)  # ldd = N + 24
        D = Dbase[:, :N]
        alpha = 0.5
        mod.strided_hgemm(A, B, out=D, alpha=alpha)
        torch.cuda.synchronize()
        ref = alpha * (A.double() @ B.double())
        bound = K * 2.0**-23 * abs(alpha) * (A.double().abs() @ B.double().abs()) + 1e-30
        float_check(f"strided_hgemm {M}x{N}x{K} lda={K + 40} ldd={N + 24}", D, ref, bound)
        report("strided_hgemm: D's padding untouched", bool(Dbase[:, N:].isnan().all()), 0)
    L, M, N, K = 3, 72, 96, 128
    X = torch.randn(L, M, K + 8, generator=gen, device=dev).bfloat16()[:, :, :K]
    W1 = torch.randn(N, K + 16, generator=gen, device=dev).bfloat16()[:, :K].t()  # K x N col
    W = W1.unsqueeze(0).expand(L, K, N)  # batch stride 0
    bias = torch.randn(N, generator=gen, device=dev).unsqueeze(0).expand(L, N)
    Y = poisoned((L, M, N), torch.bfloat16, dev)
    mod.broadcast_weight(X, W, bias, out=Y)
    torch.cuda.synchronize()
    ref = X.double() @ W.double() + bias.double().unsqueeze(1)
    bound = (K * 2.0**-23 * (X.double().abs() @ W.double().abs() + bias.double().abs().unsqueeze(1))
             * (1 + 2.0**-7) + ref.abs() * 2.0**-8 + 1e-30)
    float_check(f"broadcast_weight {L}x{M}x{N}x{K} (W, bias stride 0)", Y, ref, bound)


def bf16_bound(X, W, ref):
    """f32 accumulation (K roundings, on both sides of a float32 reference) and one bf16 rounding."""
    K = X.shape[1]
    return (2 * K * 2.0**-23 * (X.double().abs() @ W.double().abs()) * (1 + 2.0**-7)
            + ref.double().abs() * 2.0**-8 + 1e-30)


def run_grouped(mod, dev, gen):
    """Grouped launches: the MoE form against torch.mm per expert (float32), and a problem list."""
    E, K, N = 8, 264, 392
    counts = [37, 0, 130, 5, 0, 200, 64, 1]  # experts without tokens among them
    T = sum(counts) + 11  # 11 rows past the last offset: left alone
    offs, end = [], 0
    for c in counts:
        end += c
        offs.append(end)
    X = (torch.randn(T, K, generator=gen, device=dev) * 0.5).bfloat16()
    Wt = (torch.randn(E, N, K, generator=gen, device=dev) * 0.5).bfloat16()  # weights [E, N, K]
    for how, o in (("list", offs), ("GPU tensor", torch.tensor(offs, device=dev,
                                                                  dtype=torch.int32))):
        Y = poisoned((T, N), torch.bfloat16, dev)
        mod.experts.moe(X, Wt.transpose(1, 2), Y, o)
        torch.cuda.synchronize()
        start = 0
        for g, e in enumerate(offs):
            if e > start:
                ref = torch.mm(X[start:e].float(), Wt[g].float().t())
                float_check(f"experts.moe expert {g} ({e - start} rows, offs a {how})", Y[start:e],
                            ref.double(), bf16_bound(X[start:e], Wt[g].t(), ref))
            start = e
        report(f"experts.moe: rows past offs[-1] untouched (offs a {how})",
               bool(Y[offs[-1]:].isnan().all()), 0)
    grouped_mm = getattr(torch, "_grouped_mm", None)
    if grouped_mm is None:
        print("      (torch._grouped_mm: skipped, not in this PyTorch)")
    else:
        try:
            T2 = offs[-1]
            ref = grouped_mm(X[:T2], Wt.transpose(-2, -1),
                             offs=torch.tensor(offs, device=dev, dtype=torch.int32))
            Y = mod.experts.moe(X[:T2], Wt.transpose(1, 2), None, offs)
            torch.cuda.synchronize()
            wmax = Wt.float().abs().amax(0).t()  # [K, N]: |W_g| <= wmax for every expert g
            float_check("experts.moe against torch._grouped_mm", Y, ref.double(),
                        2 * bf16_bound(X[:T2], wmax, ref))
        except (RuntimeError, TypeError, ValueError, NotImplementedError) as e:
            print(f"      (torch._grouped_mm: skipped, {str(e).splitlines()[0]})")
    problems, refs = [], []
    for M, N2, K2 in [(300, 520, 264), (0, 64, 64), (7, 8, 8), (129, 264, 136)]:
        A = torch.randn(M, K2, generator=gen, device=dev).bfloat16()
        B = torch.randn(N2, K2, generator=gen, device=dev).bfloat16().t()
        problems.append({"X": A, "W": B})
        ref = torch.mm(A.float(), B.float())
        refs.append((f"{M}x{N2}x{K2}", ref, bf16_bound(A, B, ref)))
    outs = mod.experts.grouped(problems)
    torch.cuda.synchronize()
    for (what, ref, bound), Y in zip(refs, outs):
        if ref.numel() == 0:  # M = 0: an empty output, allocated
            report(f"experts.grouped problem {what} (empty)", tuple(Y.shape) == tuple(ref.shape),
                   0.0)
        else:
            float_check(f"experts.grouped problem {what}", Y, ref.double(), bound)
    try:
        mod.experts.grouped([problems[0], {"X": problems[0]["X"][:, :260], "W": problems[0]["W"]}])
        report("experts.grouped refuses a misaligned problem", False, 0.0)
    except mod.GemmcLaunchError as e:
        print(f"      GemmcLaunchError: {e}")
        report("experts.grouped names the problem", str(e).startswith("Problem 1: "), 0.0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir", help="the directory of the generated modules")
    p.add_argument("--backend", default="auto", choices=["auto", "cuda-python", "cupy"])
    p.add_argument("--seed", type=int, default=1234)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing run")
        return 1
    dev = torch.device("cuda", 0)
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    mods = {s: load(a.dir, s, a.backend) for s in ("hgemm", "s8_gemm", "splitk", "strided")}
    print(f"backend {mods['hgemm'].backend_name()}, {torch.cuda.get_device_name(dev)}, "
          f"torch {torch.__version__}")
    run_hgemm(mods["hgemm"], dev, gen)
    run_s8(mods["s8_gemm"], dev, gen)
    run_splitk(mods["splitk"], dev, gen)
    run_strided(mods["strided"], dev, gen)
    if os.path.exists(os.path.join(a.dir, "grouped.py")):
        run_grouped(load(a.dir, "grouped", a.backend), dev, gen)
    else:
        print("      (grouped: skipped, no grouped.py in the directory)")
    failed = RESULTS.count(False)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
