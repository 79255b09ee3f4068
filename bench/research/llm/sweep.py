"""Skinny-shape sweep (issue 22): every kernel that gen.ts wrote, at every shape of
shapes.txt, timed back to back (a CUDA graph of 20 launches rotating 4 input sets,
so that L2 holds none of B), against cuBLAS through PyTorch timed the same way,
and the floor (bytes at the copy bandwidth measured here, FLOPs at PEAK TFLOPS).

usage: python3 bench/research/llm/sweep.py GEN [MAX_M]
  Variants are timed at shapes with M <= MAX_M (default 256); the default
  kernels at every shape. Prints one line per (shape, kernel) and, per shape,
  the best kernel.
"""
import os, sys, statistics, time
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
GEN = sys.argv[1]
MAX_M = int(sys.argv[2]) if len(sys.argv) > 2 else 256
import gpu_quick as q  # noqa: E402  (reads GEN from argv[1])
import cupy as cp  # noqa: E402
import torch  # noqa: E402

PEAK = float(os.environ.get("PEAK", "634"))
LAUNCHES = 20
SETS = 4

def graph_ms(launch_on):
    """Per-launch ms of LAUNCHES launches captured in one CUDA graph (CuPy), replayed."""
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        for i in range(SETS):
            launch_on(i)
        s.synchronize()
        s.begin_capture()
        for i in range(LAUNCHES):
            launch_on(i)
        g = s.end_capture()
        for _ in range(3):
            g.launch(s)
        s.synchronize()
        ts = []
        for _ in range(7):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(s); g.launch(s); b.record(s); b.synchronize()
            ts.append(cp.cuda.get_elapsed_time(a, b) / LAUNCHES)
    return statistics.median(ts)

def torch_graph_ms(f):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(SETS):
            f(i)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(LAUNCHES):
            f(i)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(7):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) / LAUNCHES)
    return statistics.median(ts)

def copy_bw():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); y.copy_(x); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    del x, y
    return 2 * (1 << 30) / (statistics.median(ts) * 1e-3)

LOADED = {}

def load(name):
    """q.load once per kernel (each load JIT-compiles the PTX)."""
    if name not in LOADED:
        LOADED[name] = q.load(name)
    return LOADED[name]

def main():
    bw = copy_bw()
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s (read + write); PEAK {PEAK} TFLOPS", flush=True)
    names = sorted(f[:-5] for f in os.listdir(GEN) if f.endswith(".json"))
    for line in open(f"{GEN}/shapes.txt"):
        typ, M, N, K = line.split()
        M, N, K = int(M), int(N), int(K)
        dt = q.DT[typ]
        As = [q.rand((M, K), dt) for _ in range(SETS)]
        Bs = [q.rand((N, K), dt) for _ in range(SETS)]
        el = dt.itemsize
        out_el = 4 if typ == "s8" else el
        bytes_ = (M * K + N * K) * el + M * N * out_el
        floor_ms = max(bytes_ / bw, 2 * M * N * K / (PEAK * 1e12)) * 1e3
        if typ == "s8":
            cub = lambda i: torch._int_mm(As[i % SETS], Bs[i % SETS].T)
        else:
            cub = lambda i: torch.matmul(As[i % SETS], Bs[i % SETS].T)
        try:
            tc = torch_graph_ms(cub)
        except Exception as e:  # _int_mm refuses some M
            print(f"cublas {typ} {M}x{N}x{K}: {e}".splitlines()[0])
            tc = float("nan")
        # The same bytes moved by a device-to-device copy (half read, half written), in a
        # graph like the kernels: what a kernel this short can reach.
        half = bytes_ // 2
        xs = [torch.empty(half, dtype=torch.uint8, device="cuda") for _ in range(SETS)]
        ys = [torch.empty(half, dtype=torch.uint8, device="cuda") for _ in range(SETS)]
        tcopy = torch_graph_ms(lambda i: ys[i % SETS].copy_(xs[i % SETS]))
        del xs, ys
        print(f"== {typ} M={M} N={N} K={K}: floor {floor_ms * 1e3:.1f} us; cuBLAS {tc * 1e3:.1f} us "
              f"({floor_ms / tc:.2f} of floor); a copy of the same bytes {tcopy * 1e3:.1f} us "
              f"({floor_ms / tcopy:.2f} of floor)", flush=True)
        ref = As[0].double() @ Bs[0].double().T
        best = None
        for name in names:
            if name.startswith("def_") and name != f"def_{typ}_{M}x{N}x{K}":
                continue
            if name.startswith("var_") and (not name.startswith(f"var_{typ}_") or M > MAX_M):
                continue
            man, fn = load(name)
            sz = {"M": M, "N": N, "K": K}
            D = torch.full((M, N), float("nan"), dtype=q.DT[typ if typ != "s8" else "s32"], device="cuda") \
                if typ != "s8" else torch.full((M, N), -0x5A5A5A5A, dtype=torch.int32, device="cuda")
            grid = q.grid_for(man["gridPlan"], sz)
            block = tuple(man["block"])
            smem = man["dynamicSmemBytes"]
            args = [q.kernel_args(man, {"A": As[i], "B": Bs[i], "D": D}, sz) for i in range(SETS)]
            fn(grid, block, args[0], shared_mem=smem)
            torch.cuda.synchronize()
            got = D.double()
            if typ == "s8":
                ok = bool((got == ref).all().item())
                verdict = "exact" if ok else "FAIL"
            else:
                rel = ((got - ref).norm() / ref.norm()).item()
                ok = rel < 1e-2 and not torch.isnan(got).any().item()
                verdict = f"rel {rel:.1e}" if ok else f"FAIL rel {rel:.1e}"
            t = graph_ms(lambda i: fn(grid, block, args[i % SETS], shared_mem=smem))
            tag = name.split("_", 2)[2]
            print(f"  {tag:24s} grid {str(grid):16s} {t * 1e3:7.1f} us  {floor_ms / t:.2f} of floor  "
                  f"{tc / t:.2f}x cuBLAS  {verdict}", flush=True)
            if ok and (best is None or t < best[1]):
                best = (tag, t)
        if best is not None:
            print(f"  BEST {best[0]} {best[1] * 1e3:.1f} us ({floor_ms / best[1]:.2f} of floor, "
                  f"{tc / best[1]:.2f}x cuBLAS)", flush=True)
        del As, Bs, ref
        torch.cuda.empty_cache()

if __name__ == "__main__":
    main()
