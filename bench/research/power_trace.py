"""How does one kernel's speed move over a long run of launches? (bench/NOTES.md 26.)

For each kernel and size: a rest of REST seconds, then LAUNCHES launches of our kernel, each
between its own pair of CUDA events, then the same for cuBLAS (PyTorch) on the same inputs;
twice. Prints the median TFLOPS of each bin of BIN consecutive launches (the trace over time),
and the median over the first 20 launches (what one timed series of the benchmark sees) and
over all. `nvidia-smi` samples the SM clock, power, temperature and the clock-event reasons every
100 ms beside it (written to OUT/smi.csv when OUT is set).

usage: python3 bench/research/power_trace.py GEN_DIR KERNEL[,KERNEL...] MxNxK [LAUNCHES] [REST] [BIN]
"""
import os, sys, time, statistics, subprocess
import torch

GEN, names, size = sys.argv[1], sys.argv[2].split(","), tuple(int(x) for x in sys.argv[3].split("x"))
LAUNCHES = int(sys.argv[4]) if len(sys.argv) > 4 else 300
REST = float(sys.argv[5]) if len(sys.argv) > 5 else 5.0
BIN = int(sys.argv[6]) if len(sys.argv) > 6 else 20
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True
out = os.environ.get("OUT")
smi = None
if out:
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active",
         "--format=csv", "-lms", "100"], stdout=open(f"{out}/smi.csv", "w"), stderr=subprocess.DEVNULL)

def trace(f, n):
    """Per-launch times (ms) of n launches, each between its own events."""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for i, (a, b) in enumerate(ev):
        a.record(); f(i); b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]

M, N, K = size
flops = 2 * M * N * K
for name in names:
    ours, grid, (As, Bs, D) = q.launcher(name, M, N, K)
    blas = lambda i: torch.matmul(As[i % 2], Bs[i % 2].T)
    ours(0); blas(0); torch.cuda.synchronize()
    for rnd in range(2):
        for who, f in (("ours", ours), ("cuBLAS", blas)):
            time.sleep(REST)
            t0 = time.time()
            ts = trace(f, LAUNCHES)
            tf = [flops / t / 1e9 for t in ts]
            bins = [statistics.median(tf[i:i + BIN]) for i in range(0, len(tf), BIN)]
            print(f"{name} {M}x{N}x{K} round {rnd} {who:6s} t0 {t0 % 1000:.2f}: first20 "
                  f"{statistics.median(tf[:20]):.1f} all {statistics.median(tf):.1f} | bins of {BIN}: "
                  + " ".join(f"{x:.0f}" for x in bins), flush=True)
    del As, Bs, D
if smi:
    smi.terminate()
