#!/usr/bin/env bash
# sm90 questions left open by bench/NOTES.md 65 and 66, by `gemm run` (one process a row; a
# GPU, Deno on PATH). Not part of the benchmark or of CI. Written 2026-12-04, not yet run.
#
# 1. 5000³ f16 on sm90, one block a tile, ran 439-448 TFLOP/s where the 8192³ rate (756) less
#    the last wave and the edge tiles predicts ~620: the same 800 tiles at 5120³ and 4992³
#    (rows on 128-byte lines) against 5000³ (rows 16 bytes off every other line), then K and
#    M/N alone at 5000, then other tiles and rasterisations at 5000³.
# 2. Skinny rows (issue 22: M = 128, 256 at >= 0.75 of the floor): wgmma tiles with split-K
#    against the sm80 skinny default (`--tune`), the three (N, K) of the llm benchmark.
#
# Usage: bash bench/research/sm90_sweep.sh OUT   (OUT: a folder for full.txt and summary.txt)
set -u
OUT="${1:?usage: sm90_sweep.sh OUT}"
mkdir -p "$OUT"
V="$OUT/variants"
# The variants of bench/research/variants_sm90.txt, written (and compiled) by gen_variants.sh.
bash bench/research/gen_variants.sh "$V" bench/research/variants_sm90.txt
. bench/research/_gemm_run_rows.sh
card_state
BIG=(--check none --iters 30 --warmup 5)
for s in M=5000,N=5000,K=5000 M=5120,N=5120,K=5120 M=4992,N=4992,K=4992 \
  M=5000,N=5000,K=5120 M=5120,N=5120,K=5000; do
  one tiles256 "$V/var_f16_tiles256.gemm" "$s" "${BIG[@]}"
done
for v in t128x128 t128x192 t192x256 t256sw4 t256sw2 t256sw1 p128x128; do
  one "$v" "$V/var_f16_$v.gemm" M=5000,N=5000,K=5000 "${BIG[@]}"
done
one sm80-tune bench/kernels/f16.gemm M=5000,N=5000,K=5000 --tune "${BIG[@]}"
one tiles256-check "$V/var_f16_tiles256.gemm" M=5000,N=5000,K=5000 --iters 0
SMALL=(--iters 50 --warmup 10 --input-sets 4)
for s in M=128,N=4096,K=4096 M=128,N=14336,K=4096 M=128,N=4096,K=14336 \
  M=256,N=4096,K=4096 M=256,N=14336,K=4096 M=256,N=4096,K=14336 M=64,N=4096,K=4096; do
  one sm80-tune bench/kernels/f16.gemm "$s" --tune "${SMALL[@]}"
  for v in s128x128k1 s128x128k2 s128x128k4 s128x64k1 s128x64k2 s64x128k2 s64x128k4 \
    s128x256k4 s128x256k8 s64x256k4 s192x128k2; do
    one "$v" "$V/var_f16_$v.gemm" "$s" "${SMALL[@]}"
  done
done
