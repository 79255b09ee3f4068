"""Launches our kernel and cuBLAS (PyTorch) on one problem a few times each, for Nsight Compute
(bench/NOTES.md 30): `ncu --clock-control none -k regex:. --launch-skip 4 --launch-count 4 ...
python3 bench/profile_pair.py GEN_DIR KERNEL MxNxK`. The first launches of each warm up (module
load, cuBLAS's heuristics); then ours and cuBLAS's alternate.

usage: python3 bench/profile_pair.py GEN_DIR KERNEL MxNxK
"""
import sys
import torch

GEN, name, size = sys.argv[1], sys.argv[2], tuple(int(x) for x in sys.argv[3].split("x"))
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True
M, N, K = size
man, fn = q.load(name)
ps = {p["name"]: p for p in man["params"]}
dt = q.DT["f32" if ps["A"]["dtype"] == "f32" else ps["A"]["dtype"]]
A, B = q.rand((M, K), dt), q.rand((N, K), dt)
D = torch.empty((M, N), dtype=q.DT[ps["D"]["dtype"]], device="cuda")
sz = {"M": M, "N": N, "K": K}
grid, block, smem = q.grid_for(man["gridPlan"], sz), tuple(man["block"]), man["dynamicSmemBytes"]
args = q.kernel_args(man, {"A": A, "B": B, "D": D}, sz)
for i in range(4):
    fn(grid, block, args, shared_mem=smem)
    torch.matmul(A, B.T)
torch.cuda.synchronize()
print(name, grid, "done")
