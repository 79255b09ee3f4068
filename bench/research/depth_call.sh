#!/usr/bin/env bash
# Issue 23: does a fourth stage pay at f16's 128x256 tile? (bench/NOTES.md 81). The persistent
# kernel's staged epilogue reserves 128 x 576 bytes, which leaves room for 3 stages of 48 KB. A D
# declared `align 2` keeps the epilogue direct (no staging region), so the same tile then runs
# with 3 or 4 stages and nothing else changed. Steps:
#   depth: f16 at 8192³, 1024x14336x4096 and 5000³: the default (staged, 3 stages), then D align 2
#          with `stages 3` and with `stages 4`, each a bench run with cuBLAS in it (two states);
#   s8:    the llm rows of s8 (M = 16, 128) at the defaults (s8 M = 65-128's 64x64x128 rule);
#   m128:  f16 M = 128, N = K = 4096, the default against 128x32 persistent tiles.
# bench/kernels/f16.gemm is rewritten in the device's copy of the tree only, and restored.
# Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not part of the
# benchmark or of CI.
#
# Usage: bash bench/research/depth_call.sh OUT   (STEPS: any of "depth s8 m128")
set -u
. bench/research/_gemm_run_rows.sh
call_start depth_call "${1:?usage: depth_call.sh OUT}" "depth s8 m128"
if has depth; then
  S=8192,1024x14336x4096,5000
  bench_sm90 "$W" staged-s3 f16 "$S"
  pack
  cp bench/kernels/f16.gemm "$W/f16.gemm.orig"
  sed -i 's/^  D: f16\[M, N\] row$/  D: f16[M, N] row align 2/' bench/kernels/f16.gemm
  grep -q "align 2" bench/kernels/f16.gemm || echo "depth: the rewrite of f16.gemm failed"
  bench_sm90 "$W" direct-s3 f16 "$S" --schedule "stages 3"
  pack
  bench_sm90 "$W" direct-s4 f16 "$S" --schedule "stages 4"
  pack
  cp "$W/f16.gemm.orig" bench/kernels/f16.gemm
fi
if has s8; then
  llm_rows "$W" s8 s8 16,128 4096x4096,4096x14336,14336x4096
  pack
fi
if has m128; then
  llm_rows "$W" m128 f16 128 4096x4096
  llm_rows "$W" m128-128x32p f16 128 4096x4096 "threadblock 128x32x64; stages 10; scheduler persistent"
  pack
fi
pack
