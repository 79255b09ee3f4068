"""SIMT f32 kernels (math f32) against cuBLAS's f32 GEMM (no tensor cores), same run.

For each kernel: check it against a float64 product of the same inputs (D poisoned first), then
time it and cuBLAS (torch.matmul on the same operand views, so the same layouts, TF32 off)
launch by launch alternately, 20 launches a round after a 1 s rest, so that both see the same
clock; median TFLOPS per round.

usage: python3 bench/research/simt_probe.py GEN_DIR MxNxK NAME[,NAME...] [ROUNDS]
"""
import sys, statistics
import torch

GEN, size, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
M, N, K = (int(x) for x in size.split("x"))
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False  # cuBLAS in true f32, as math f32
flops = 2 * M * N * K
for name in names:
    launch, _, (As, Bs, D) = q.launcher(name, M, N, K)
    print(f"check {name}: {launch.check()}", flush=True)
    Dc = torch.empty((M, N), dtype=torch.float32, device="cuda")
    cublas = lambda i: torch.matmul(As[i % len(As)], Bs[i % len(Bs)].T, out=Dc)
    ok = (cublas(0), torch.cuda.synchronize(), (Dc.double() - As[0].double() @ Bs[0].double().T).norm().item())[2]
    print(f"  cuBLAS f32 check: abs Frobenius error {ok:.2e}", flush=True)
    rows = []
    for r in range(ROUNDS):
        t = q.alternate(launch, cublas)
        rows.append((flops / t[0] / 1e9, flops / t[1] / 1e9))
        print(f"  round {r}: ours {rows[-1][0]:.1f} TFLOPS, cuBLAS f32 {rows[-1][1]:.1f}, ratio {t[1] / t[0]:.3f}", flush=True)
    o = statistics.median(x for x, _ in rows)
    c = statistics.median(y for _, y in rows)
    print(f"== {name} at {size}: ours {o:.1f} TFLOPS, cuBLAS f32 {c:.1f}, ratio {o / c:.3f}", flush=True)
    del As, Bs, D, Dc
