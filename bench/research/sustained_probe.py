"""Schedules compared in the card's sustained state (bench/NOTES.md 26, 27).

bench/research/ab_probe.py alternates two kernels launch by launch, so both run at one clock: it measures
cycles, not energy. Under the H200's 700 W cap the clock itself depends on the energy per MMA of
the kernel that runs, so a schedule that moves fewer bytes per MMA can gain clock that the A/B probe
cannot see. Here each kernel runs alone: LOAD_S seconds of launches, then 20 timed launches (median);
the kernels take turns, ROUNDS times. Also cuBLAS (PyTorch) on the same inputs, and each kernel's
relative error against a float32 product of the same inputs (a result counts only if it agrees).

usage: python3 bench/research/sustained_probe.py GEN_DIR KERNEL[,KERNEL...] MxNxK [ROUNDS] [LOAD_S]
"""
import sys, statistics
import torch

GEN, names, size = sys.argv[1], sys.argv[2].split(","), tuple(int(x) for x in sys.argv[3].split("x"))
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
LOAD_S = float(sys.argv[5]) if len(sys.argv) > 5 else 1.5
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

M, N, K = size
flops = 2 * M * N * K
kernels = {}
inputs = {}
for name in names:
    man = q.manifest(name)
    dt = q.input_dtype(man)
    if dt not in inputs:
        inputs[dt] = q.inputs_for(man, M, N, K)
    launch, grid, (As, Bs, D) = q.launcher(name, M, N, K, inputs=inputs[dt])
    launch(0)
    torch.cuda.synchronize()
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = torch.matmul(As[0].float(), Bs[0].float().T)
    err = (torch.linalg.norm(D.float() - ref) / torch.linalg.norm(ref)).item()
    print(f"{name}: grid {grid}, rel. error {err:.2e}", flush=True)
    assert err < 5e-3, f"{name} disagrees with the reference"
    kernels[name] = launch
    del ref
torch.backends.cuda.matmul.allow_tf32 = True
for dt, (As, Bs) in inputs.items():
    if not dt.is_floating_point:  # torch.matmul has no int8 GEMM: ours only
        continue
    kernels[f"cuBLAS-{str(dt).replace('torch.', '')}"] = (
        lambda As, Bs: lambda i: torch.matmul(As[i % 2], Bs[i % 2].T))(As, Bs)

def sustained(f):
    return flops / q.sustained_ms(f, LOAD_S) / 1e9

got = {n: [] for n in kernels}
for r in range(ROUNDS):
    for n, f in kernels.items():
        got[n].append(sustained(f))
    print(f"round {r}: " + "  ".join(f"{n} {got[n][-1]:.1f}" for n in kernels), flush=True)
print(f"{M}x{N}x{K}, sustained ({LOAD_S} s of load, then 20 timed), median of {ROUNDS} rounds:")
for n in kernels:
    print(f"  {n:40s} {statistics.median(got[n]):8.1f}  ({' '.join(f'{x:.1f}' for x in got[n])})")
