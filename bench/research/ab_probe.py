"""Two kernels under the same power state: alternate launches (bench/NOTES.md 16).

On a power-capped card a kernel's speed moves with the card's state (entry
14: 224-257 TFLOPS for one tf32 kernel within a minute), more than the
difference between two schedules. Here kernel X and kernel Y run
alternately (X Y X Y ...), each launch timed with its own events, on the same
problem and rotating two input sets, so that both see the same clock and
power; the ratio of their median times is the comparison. Each pair is
measured in several rounds with a rest before each.

usage: python3 bench/research/ab_probe.py GEN_DIR MxNxK X:Y[,X:Y...] [ROUNDS]
"""
import sys, statistics

GEN, size, pairs = sys.argv[1], sys.argv[2], [p.split(":") for p in sys.argv[3].split(",")]
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
M, N, K = (int(x) for x in size.split("x"))
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

flops = 2 * M * N * K
for x, y in pairs:
    lx, _, (As, Bs, D) = q.launcher(x, M, N, K)
    ly, _, _ = q.launcher(y, M, N, K, inputs=(As, Bs))
    print(f"check {x}: {lx.check()}; {y}: {ly.check()}", flush=True)
    ratios = []
    for r in range(ROUNDS):
        tx, ty = q.alternate(lx, ly)
        ratios.append(tx / ty)
        print(f"{x} vs {y} round {r}: {flops / tx / 1e9:.1f} vs {flops / ty / 1e9:.1f} TFLOPS, Y/X speed {tx / ty:.3f}", flush=True)
    print(f"== {y} / {x} at {size}: speed ratio median {statistics.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f})", flush=True)
    del As, Bs, D
