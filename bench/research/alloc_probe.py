"""Is a kernel's speed a property of where its operands lie? (bench/NOTES.md 14)

For each of several trials: fresh operand buffers (two input sets, as the
Deno benchmark uses at 8192^3), then three series of 20 event-timed launches
with a rest before each, alternating the sets. Prints per trial the buffers'
addresses and, per series, the median time of the launches on set 0 and on
set 1. If the two medians differ within a series, or trials differ while
series within a trial agree, the speed depends on the addresses, not on the
card's state.

usage: python3 bench/research/alloc_probe.py GEN_DIR KERNEL[,KERNEL...] [MxNxK] [TRIALS]
"""
import sys, time, statistics
import numpy as np
import torch

GEN, names = sys.argv[1], sys.argv[2].split(",")
M, N, K = (int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "8192x8192x8192").split("x"))
TRIALS = int(sys.argv[4]) if len(sys.argv) > 4 else 6
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402  (reads GEN from argv)

def series(fn, grid, block, smem, argsets, n=20):
    for i in range(4):
        fn(grid, block, argsets[i % 2], shared_mem=smem)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for i, (a, b) in enumerate(ev):
        a.record(); fn(grid, block, argsets[i % 2], shared_mem=smem); b.record()
    torch.cuda.synchronize()
    ts = [a.elapsed_time(b) for a, b in ev]
    return statistics.median(ts[0::2]), statistics.median(ts[1::2])

for name in names:
    man, fn = q.load(name)
    ps = {p["name"]: p for p in man["params"]}
    ta = ps["A"]["dtype"]
    dt = q.DT["f32" if ta == "f32" else ta]
    sz = {"M": M, "N": N, "K": K}
    grid, block, smem = q.grid_for(man["gridPlan"], sz), tuple(man["block"]), man["dynamicSmemBytes"]
    flops = 2 * M * N * K
    keep = []
    for t in range(TRIALS):
        # Hold a varying amount of memory so that the next buffers land elsewhere.
        keep.append(torch.empty(int(np.random.randint(1, 64)) << 20, dtype=torch.uint8, device="cuda"))
        As = [q.rand((M, K), dt) for _ in range(2)]
        Bs = [q.rand((N, K), dt) for _ in range(2)]
        D = torch.empty((M, N), dtype=q.DT[ps["D"]["dtype"]], device="cuda")
        argsets = [q.kernel_args(man, {"A": As[i], "B": Bs[i], "D": D}, sz) for i in range(2)]
        addrs = " ".join(f"{x.data_ptr():#x}" for x in (As[0], Bs[0], As[1], Bs[1], D))
        res = []
        for s in range(3):
            time.sleep(1.0)
            t0, t1 = series(fn, grid, block, smem, argsets)
            res.append(f"{flops / t0 / 1e9:6.1f}/{flops / t1 / 1e9:6.1f}")
        print(f"{name} trial {t}: set0/set1 TFLOPS per series: {'  '.join(res)}   A0 B0 A1 B1 D: {addrs}", flush=True)
        del As, Bs, D
