"""Where the energy goes under the H200's 700 W cap (bench/NOTES.md 43).

For a kernel and its ablations (bench/research/ablate.ts: `copy`, only the global->shared pipeline;
`math`, only ldmatrix + mma from shared memory), each alone: a 1 s rest, then a burst (10 timed
launches, median) and the SM clock beside 10 more; then the sustained state (LOAD_S seconds of
launches, 20 timed, median) and the clock beside 10 more. The clock is read by bench/clock_probe.ts's
PTX (written to GEN_DIR/clock_probe.ptx), sleeping on a stream of its own. A kernel whose clock
drops as far as the real one's in the sustained state draws as much power at a given clock: the
side it keeps is where the joules go. The ablations compute wrong results on purpose (no check).

usage: python3 bench/research/power_ablation.py GEN_DIR MxNxK NAME[,NAME...] [LOAD_S]
"""
import sys, time
import numpy as np
import cupy as cp
import torch

GEN, size, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
LOAD_S = float(sys.argv[4]) if len(sys.argv) > 4 else 1.5
M, N, K = (int(x) for x in size.split("x"))
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

probe_fn = cp.RawModule(path=f"{GEN}/clock_probe.ptx").get_function("clock_probe")
probe_out = cp.zeros(2, dtype=cp.uint64)
probe_stream = cp.cuda.Stream(non_blocking=True)

def clock_during(f, ms):
    """MHz of the SM clock while 10 launches of f (about ms each) run."""
    probe_fn((1,), (32,), (probe_out, np.uint64(int(0.8 * 10 * ms * 1e6))), stream=probe_stream)
    for i in range(10):
        f(i)
    cp.cuda.Device().synchronize()
    ns, cyc = (int(x) for x in probe_out.get())
    return cyc / ns * 1e3 if ns > 0 else float("nan")

flops = 2 * M * N * K
inputs = {}  # by operand type: a kernel and its ablations share their inputs
for name in names:
    dt = q.input_dtype(q.manifest(name))
    launch, grid, (As, Bs, D) = q.launcher(name, M, N, K, inputs=inputs.get(dt))
    inputs[dt] = (As, Bs)
    launch(0); torch.cuda.synchronize()
    time.sleep(1.0)
    burst = q.timed_ms(launch, 10)
    burst_mhz = clock_during(launch, burst)
    sus = q.sustained_ms(launch, LOAD_S)
    sus_mhz = clock_during(launch, sus)
    print(f"{name:44s} burst {burst:7.3f} ms at {burst_mhz:5.0f} MHz ({burst * burst_mhz / 1e3:6.2f} Mcycles, "
          f"{flops / burst / 1e9:6.1f} TFLOPS-eq) | sustained {sus:7.3f} ms at {sus_mhz:5.0f} MHz "
          f"({sus * sus_mhz / 1e3:6.2f} Mcycles, {flops / sus / 1e9:6.1f} TFLOPS-eq)", flush=True)
    time.sleep(1.0)
