"""Is a kernel's speed bimodal from one timed series to the next, and is cuBLAS's?
(bench/NOTES.md 25.) For each size: SERIES series of 20 launches (after 5 warm-up and a
1 s rest), alternating our kernel's series with cuBLAS's, on two input sets; prints each
series' median TFLOPS.

usage: python3 bench/research/mode_probe.py GEN_DIR KERNEL MxNxK[,MxNxK...] [SERIES]
"""
import sys, time, statistics
import torch

GEN, name, sizes = sys.argv[1], sys.argv[2], [tuple(int(x) for x in s.split("x")) for s in sys.argv[3].split(",")]
SERIES = int(sys.argv[4]) if len(sys.argv) > 4 else 6
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True
def series(f, n=20):
    for i in range(5): f(i)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for i, (a, b) in enumerate(ev):
        a.record(); f(i); b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)

for (M, N, K) in sizes:
    ours, grid, (As, Bs, D) = q.launcher(name, M, N, K)
    blas = lambda i: torch.matmul(As[i % 2], Bs[i % 2].T)
    flops = 2 * M * N * K
    o, c = [], []
    for s in range(SERIES):
        time.sleep(1.0)
        o.append(flops / series(ours) / 1e9)
        time.sleep(1.0)
        c.append(flops / series(blas) / 1e9)
    print(f"{name} {M}x{N}x{K} grid {grid}: ours " + " ".join(f"{x:.1f}" for x in o)
          + " | cuBLAS " + " ".join(f"{x:.1f}" for x in c), flush=True)
    del As, Bs, D
