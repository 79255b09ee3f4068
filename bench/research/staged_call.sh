#!/usr/bin/env bash
# Issue 22/23: staged epilogues for rows of vectors that do not divide 32 lanes (bench/NOTES.md
# 83; StagingPlan.readLanes). Steps:
#   wide:  f16 at 5000³ and 1024x14336x4096 on sm90, the default (128x256) against `threadblock
#          128x224x64`, now staged (it was direct in NOTES 82's call), each a bench run with cuBLAS;
#   sm80:  the defaults that changed from direct to staged on sm80 (A column-major f16 -> f16 with
#          relu: 256x160 tiles of 64x80 warps, rows of 10 vectors read by 16 lanes) at 8192³ and
#          5000³, `gemm run --tune`, from this tree and from the base tree in .devcarry/base.
# Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not part of the
# benchmark or of CI.
#
# Usage: bash bench/research/staged_call.sh OUT   (STEPS: any of "wide sm80")
set -u
. bench/research/_gemm_run_rows.sh
call_start staged_call "${1:?usage: staged_call.sh OUT}" "wide sm80"
if has wide; then
  bench_sm90 "$W" default f16 5000,1024x14336x4096
  pack
  bench_sm90 "$W" tb128x224 f16 5000,1024x14336x4096 --schedule "threadblock 128x224x64"
  pack
fi
if has sm80; then
  printf 'kernel p {\n  A: f16[M, K] col\n  B: f16[K, N] col\n  D: f16[M, N] row\n  D[m, n] = f16(relu(A[m, k] * B[k, n]))\n}\n' >"$W/colA.gemm"
  B=.devcarry/base
  [ -e "$B/node_modules" ] || ln -s "$PWD/node_modules" "$B/node_modules"
  for s in M=8192,N=8192,K=8192 M=5000,N=5000,K=5000; do
    one new "$W/colA.gemm" "$s" --target sm80 --tune --iters 20 --input-sets 2
    (cd "$B" && one base "$W/colA.gemm" "$s" --target sm80 --tune --iters 20 --input-sets 2)
    one new "$W/colA.gemm" "$s" --target sm80 --tune --iters 20 --input-sets 2
  done
  pack
fi
pack
