#!/usr/bin/env bash
# Skinny rows with deep pipelines on sm90's 227 KB of shared memory (issue 22, bench/NOTES.md 73):
# Nsight showed our skinny kernels at N = K = 4096 bound by the bytes each SM keeps in flight
# (3-4 stages sized for sm80's 163 KB), where cuBLAS keeps 8-16 stages. Each row: the --tune
# default, then the variants of variants_sm90_deep.txt for that shape (`gemm run`, back to back,
# 4 input sets). Not part of the benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/sm90_deep.sh OUT   (Deno on PATH, a GPU)
set -u
OUT="${1:?usage: sm90_deep.sh OUT}"
mkdir -p "$OUT"
V=/tmp/sm90_deep_variants
bash bench/research/gen_variants.sh "$V" bench/research/variants_sm90_deep.txt >"$OUT/gen.txt" 2>&1
. bench/research/_gemm_run_rows.sh
card_state
row() { tune_row "$V" "$@"; } # SIZES VARIANT...
# ROWS=2: 64-row wgmma tiles with deep pipelines at M <= 64 (the second call of NOTES 73).
if [ "${ROWS:-1}" = 2 ]; then
  row M=16,N=4096,K=4096 w64x32s18
  row M=1,N=4096,K=4096 w64x32s18
  row M=64,N=4096,K=4096 w64x64k2s14
  row M=16,N=4096,K=14336 w64x32s18
  row M=16,N=14336,K=4096 w64x128s9
  row M=64,N=14336,K=4096 w64x128s9
  echo done
  exit 0
fi
# The tune rows are this tree's rule: with passes/skinny.ts's deep pipelines once they landed.
row M=16,N=4096,K=4096 a16x32s5 a16x32s7 a16x32s9
row M=128,N=4096,K=4096 a64x64s7 w64x64s13 w128x64k2s9
row M=256,N=4096,K=4096 w128x64s4 w128x64s9
row M=256,N=4096,K=14336 w128x128k2s7
row M=128,N=14336,K=4096 w128x128s7
# sm80's 163 KB: its --tune default against the most stages that fit.
one sm80-tune bench/kernels/f16.gemm M=16,N=4096,K=4096 --target sm80 --tune "${SMALL[@]}"
one b16x32s6 "$V/var_f16_b16x32s6.gemm" M=16,N=4096,K=4096 "${SMALL[@]}"
one sm80-tune bench/kernels/f16.gemm M=128,N=4096,K=4096 --target sm80 --tune "${SMALL[@]}"
one b64x64s5 "$V/var_f16_b64x64s5.gemm" M=128,N=4096,K=4096 "${SMALL[@]}"
echo done
