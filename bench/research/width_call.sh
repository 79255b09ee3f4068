#!/usr/bin/env bash
# Issue 22/23: wave-aware widths for sm90's 128-row wgmma tiles (bench/NOTES.md 82). The default
# 128x256 makes 6.06 waves at 5000³ and 3.39 at 1024x14336x4096 on 132 SMs; 128x224 makes 6.97
# and 3.88. f16 at 8192³, 5000³, 1024x14336x4096 and 1024x4096x4096: the default, then
# `threadblock 128x224x64`, `128x192x64` and `128x256x64`, each a bench run with cuBLAS in it (two
# states). Everything lands in OUT/all.tgz, packed after each run. Deno on PATH. Not part of the
# benchmark or of CI.
#
# Usage: bash bench/research/width_call.sh OUT
set -u
. bench/research/_gemm_run_rows.sh
call_start width_call "${1:?usage: width_call.sh OUT}" "width"
S=${SHAPES:-8192,5000,1024x14336x4096,1024x4096x4096}
bench_sm90 "$W" default f16 "$S"
pack
for t in ${WIDTHS:-128x224x64 128x192x64 128x256x64}; do
  bench_sm90 "$W" "tb$t" f16 "$S" --schedule "threadblock $t"
  pack
done
