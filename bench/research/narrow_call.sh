#!/usr/bin/env bash
# Issue 22: sm90's 64x32 skinny tile at M = 33-64 (NOTES 79) at the new defaults, and more
# narrow tiles at M = 128 and 256, in the llm table's protocol (f16 unless named, sm90, --pdl):
# the GPU tests of the skinny sm90 tiles; M = 64 at every (N, K), f16 and bf16; M = 128 and 256
# at N = K = 4096, the default and variants, each its own run. Everything lands in
# OUT/all.tgz, packed after each step. Deno on PATH. Not part of the benchmark or of CI.
# Written 2026-12-06.
#
# Usage: bash bench/research/narrow_call.sh OUT   (STEPS: any of "tests m64 m128 m256 table exp s8")
set -u
. bench/research/_gemm_run_rows.sh
call_start narrow_call "${1:?usage: narrow_call.sh OUT}" "tests m64 m128 m256"
llm() {
  llm_rows "$W" "$@"
  pack
}
if has tests; then
  gpu_tests tests/gpu/skinny_test.ts --filter sm90
fi
ALL=4096x4096,4096x14336,14336x4096
if has m64; then
  llm m64 f16,bf16 64 "$ALL"
fi
P="scheduler persistent"
if has m128; then
  llm m128 f16 128 4096x4096
  llm m128-64x32p f16 128 4096x4096 "threadblock 64x32x64; stages 18; $P"
  llm m128-128x32p f16 128 4096x4096 "threadblock 128x32x64; stages 10; $P"
fi
if has m256; then
  llm m256 f16 256 4096x4096
  llm m256-64x128c2 f16 256 4096x4096 "threadblock 64x128x64; stages 8; cluster 2"
  llm m256-64x64c2 f16 256 4096x4096 "threadblock 64x64x64; stages 13; cluster 2"
  llm m256-128x32p f16 256 4096x4096 "threadblock 128x32x64; stages 10; $P"
fi
# "table" and "exp" (not in the default STEPS): the bf16 table at every M and the s8 rows at the
# final defaults; then 128x32 at M = 128 again and 128x128 split 2 at M = 256 (N = K = 4096).
if has exp; then
  llm exp-m128 f16 128 4096x4096
  llm exp-m128-128x32p f16 128 4096x4096 "threadblock 128x32x64; stages 10; $P"
  llm exp-m256 f16 256 4096x4096
  llm exp-m256-128x128s2 f16 256 4096x4096 "threadblock 128x128x64; stages 7; split_k 2"
fi
if has table; then
  llm table-s8 s8 16,128 "$ALL"
  llm table-bf16 bf16 1,16,64,128,256,1024 "$ALL"
fi
# "s8" (not in the default STEPS): s8 at M = 128, every (N, K), the defaults (sm80's skinny tiles)
# against 64x64x128 wgmma tiles on clusters of 2 with 14 stages (f16's M = 65-128 rule).
if has s8; then
  llm s8-m128 s8 128 "$ALL"
  llm s8-m128-64x64c2 s8 128 "$ALL" "threadblock 64x64x128; stages 14; cluster 2"
fi
pack
