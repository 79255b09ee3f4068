#!/usr/bin/env bash
# Issue 22/23, where clusters of 2 pay beyond 8192³ (bench/NOTES.md 76), in one device call:
# 1. skinny rows (`gemm run`, back to back, 4 input sets): the --tune default against the same
#    deep wgmma tiles made persistent and on clusters of 2 (variants_sm90_cluster.txt), where two
#    tile rows share each column of B;
# 2. the sm90 benchmark (two states, cuBLAS in the same run) at mid sizes, where one block a tile
#    is the default today, at the default schedule and with `cluster 2` (which makes the kernel
#    persistent), alternating. Everything lands in OUT/all.tgz. Deno on PATH. Not part of the
#    benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/cluster_sweep.sh OUT
#   RUNS: the bench runs, each TYPES:SHAPES (default "f16:2048,3072,4096 tf32,s8:odd");
#   ROWS=0: no skinny rows.
set -u
. bench/research/_gemm_run_rows.sh
call_start cluster_sweep "${1:?usage: cluster_sweep.sh OUT}" ""
RUNS="${RUNS:-f16:2048,3072,4096 tf32,s8:odd}"
if [ "${ROWS:-1}" = 1 ]; then
  V=/tmp/cluster_sweep_variants
  bash bench/research/gen_variants.sh "$V" bench/research/variants_sm90_cluster.txt >"$W/gen.txt" 2>&1
  card_state >/dev/null
  tune_row "$V" M=128,N=4096,K=4096 w64x64s13p w64x64s13c2
  tune_row "$V" M=256,N=4096,K=4096 w128x64s8c2
  tune_row "$V" M=256,N=14336,K=4096 w128x128s5c2
  tune_row "$V" M=128,N=4096,K=14336 w64x64s13c2
  tune_row "$V" M=256,N=4096,K=14336 w128x64s8c2
  pack
fi
bench_cluster_ab "$W" "$RUNS" pack
pack
