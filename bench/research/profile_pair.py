"""Launches our kernel and cuBLAS (PyTorch) on one problem a few times each, for Nsight Compute
(bench/NOTES.md 30): `ncu --clock-control none -k regex:. --launch-skip 4 --launch-count 4 ...
python3 bench/research/profile_pair.py GEN_DIR KERNEL MxNxK`. The first launches of each warm up (module
load, cuBLAS's heuristics); then ours and cuBLAS's alternate.

usage: python3 bench/research/profile_pair.py GEN_DIR KERNEL MxNxK
"""
import sys
import torch

GEN, name, size = sys.argv[1], sys.argv[2], tuple(int(x) for x in sys.argv[3].split("x"))
sys.argv = [sys.argv[0], GEN]
import gpu_quick as q  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True
M, N, K = size
ours, grid, (A, B, D) = q.launcher(name, M, N, K, sets=1)
A, B = A[0], B[0]
for i in range(4):
    ours(i)
    torch.matmul(A, B.T)
torch.cuda.synchronize()
print(name, grid, "done")
