#!/usr/bin/env bash
# Follow-ups of bench/NOTES.md 68 (one process a row by `gemm run`; a GPU, Deno on PATH). Not
# part of the benchmark or of CI. Written 2026-12-04.
#
# 1. The tensor maps' L2 promotion (ir/tensor_map.ts TMAP_L2_PROMOTION_256B, patched in this
#    copy of the tree and restored after): 128 bytes (2) against 256 (3) for the default sm90
#    f16 kernel at 8192³ (rows on 256-byte lines), 5120³, and 5000³ (rows 16 bytes off), where
#    one block a tile ran 522 against 439 TFLOP/s (NOTES 68).
# 2. The main benchmark's skinny rows on sm90 (M = 128, K = 8192): the skinny rule's 128x128
#    split 2 against sm80's skinny tiles.
#
# Usage: bash bench/research/sm90_l2promo.sh OUT
set -u
OUT="${1:?usage: sm90_l2promo.sh OUT}"
mkdir -p "$OUT"
. bench/research/_gemm_run_rows.sh
card_state
promo() { sed -i "s/^export const TMAP_L2_PROMOTION_256B = [0-9];/export const TMAP_L2_PROMOTION_256B = $1;/" ir/tensor_map.ts; }
cp ir/tensor_map.ts "$OUT/tensor_map.ts.orig"
BIG=(--target sm90 --check none --iters 30 --warmup 5)
for round in 1 2; do
  for p in 3 2; do
    promo $p
    one "f16-promo$p-r$round" bench/kernels/f16.gemm M=8192,N=8192,K=8192 "${BIG[@]}"
  done
done
for s in M=5120,N=5120,K=5120 M=5000,N=5000,K=5000; do
  for p in 3 2 0; do
    promo $p
    one "f16-promo$p" bench/kernels/f16.gemm "$s" "${BIG[@]}"
  done
done
promo 2
one "bf16-promo2" bench/kernels/bf16.gemm M=8192,N=8192,K=8192 "${BIG[@]}"
one "f16-promo2-check" bench/kernels/f16.gemm M=5000,N=5000,K=5000 --target sm90 --iters 0
cp "$OUT/tensor_map.ts.orig" ir/tensor_map.ts
SMALL=(--iters 50 --warmup 10 --input-sets 4 --tune)
for s in M=128,N=8192,K=8192 M=128,N=4096,K=8192; do
  one sm80-tune bench/kernels/f16.gemm "$s" "${SMALL[@]}"
  one sm90-tune bench/kernels/f16.gemm "$s" --target sm90 "${SMALL[@]}"
done
