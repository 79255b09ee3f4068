#!/usr/bin/env bash
# The rows bench/NOTES.md 67 left open (one process a row by `gemm run`; a GPU, Deno on PATH).
# Not part of the benchmark or of CI. Written 2026-12-04.
#
# 1. sm90 wgmma tiles against sm80's skinny default (`--tune`) where the first sweep did not
#    reach: M = 256 at (14336, 4096) one block a tile against persistent, M = 256 at
#    (4096, 14336), M = 64 at the three (N, K), M = 100 (a partial 128-row tile), bf16.
# 2. 5000³ f16 (sm90, one block a tile) with each L2 promotion of the tensor maps (the launcher's
#    TMAP_L2_PROMOTION_256B patched in this copy of the tree; restored after).
# 3. The kernels cuBLAS runs at 5000³ and 5120³ (torch.profiler), to see what it does about
#    K's 10,000-byte row pitch.
#
# Usage: bash bench/research/sm90_skinny.sh OUT
set -u
OUT="${1:?usage: sm90_skinny.sh OUT}"
mkdir -p "$OUT"
V="$OUT/variants"
bash bench/research/gen_variants.sh "$V" bench/research/variants_sm90_skinny.txt
. bench/research/_gemm_run_rows.sh
card_state
SMALL=(--iters 50 --warmup 10 --input-sets 4)
row() { # SIZES VARIANT...: sm80 --tune, then each f16 variant
  local s=$1
  shift
  one sm80-tune bench/kernels/f16.gemm "$s" --tune "${SMALL[@]}"
  for v in "$@"; do one "$v" "$V/var_f16_$v.gemm" "$s" "${SMALL[@]}"; done
}
row M=256,N=14336,K=4096 w128t w128p
row M=256,N=4096,K=14336 w128k2 w128k4 w64x256k4
row M=100,N=14336,K=4096 w128t w128p
for s in M=64,N=4096,K=4096 M=64,N=14336,K=4096 M=64,N=4096,K=14336; do
  row "$s" w64x128t w64x128k2 w64x128k4 w64x256k2 w64x256k4
done
one bf16-sm80-tune bench/kernels/bf16.gemm M=128,N=14336,K=4096 --tune "${SMALL[@]}"
one bf16-w128t "$V/var_bf16_w128t.gemm" M=128,N=14336,K=4096 "${SMALL[@]}"
BIG=(--check none --iters 30 --warmup 5)
cp ir/tensor_map.ts "$OUT/tensor_map.ts.orig"
for p in 0 1 2 3; do
  sed -i "s/^export const TMAP_L2_PROMOTION_256B = [0-9];/export const TMAP_L2_PROMOTION_256B = $p;/" ir/tensor_map.ts
  one "tiles256-l2promo$p" "$V/var_f16_tiles256.gemm" M=5000,N=5000,K=5000 "${BIG[@]}"
done
cp "$OUT/tensor_map.ts.orig" ir/tensor_map.ts
python3 - <<'PY' 2>&1 | tee "$OUT/cublas_kernels.txt"
import torch
from torch.profiler import profile, ProfilerActivity
for n in (5000, 5120, 8192):
    a = torch.randn(n, n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, n, dtype=torch.float16, device="cuda").t()  # B column-major, as ours
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", 0) / max(e.count, 1)
        if us > 0:
            print(n, e.key[:200], f"avg {us:.1f} us", f"{2 * n**3 / us / 1e6:.0f} TFLOP/s")
PY
