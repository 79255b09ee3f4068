#!/usr/bin/env bash
# Issue 22/23: the next calls of bench/NOTES.md 79 and 80, written before any ran
# (2026-12-06). Steps:
#   tests: the GPU tests not yet run: tests/gpu/skinny_test.ts --filter sm90 (s8 at M = 100 on
#          64x64x128 clusters) and tests/gpu/wgmma_test.ts's ping-pong cases;
#   pp:    f16 at 8192³, 1024x4096x4096 and 1024x14336x4096, the defaults against
#          `scheduler pingpong` (64x256; on clusters of 2 by default at these sizes), ping-pong
#          on 64x128 tiles with 7 stages, and ping-pong without clusters, each a bench run with
#          cuBLAS in it (two states);
#   m128:  M = 128, N = K = 4096, the default against 128x32 persistent tiles (llm protocol);
#   llm:   the llm table (sm90, --pdl) of LLM_TYPES (default f16,bf16) at every M.
# Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not part of the
# benchmark or of CI.
#
# Usage: bash bench/research/next_call.sh OUT   (STEPS: any of "tests pp m128 llm")
set -u
. bench/research/_gemm_run_rows.sh
call_start next_call "${1:?usage: next_call.sh OUT}" "tests pp m128"
if has tests; then
  gpu_tests tests/gpu/skinny_test.ts tests/gpu/wgmma_test.ts --filter "/sm90|pingpong/"
fi
if has pp; then
  S=8192,1024x4096x4096,1024x14336x4096
  bench_sm90 "$W" pp-default f16 "$S"
  pack
  bench_sm90 "$W" pp-64x256 f16 "$S" --schedule "scheduler pingpong"
  pack
  bench_sm90 "$W" pp-64x128 f16 "$S" --schedule "threadblock 64x128x64; stages 7; scheduler pingpong"
  pack
  bench_sm90 "$W" pp-c1 f16 "$S" --schedule "scheduler pingpong; cluster 1"
  pack
fi
if has m128; then
  llm_rows "$W" m128 f16 128 4096x4096
  llm_rows "$W" m128-128x32p f16 128 4096x4096 "threadblock 128x32x64; stages 10; scheduler persistent"
  pack
fi
if has llm; then
  llm_rows "$W" llm "${LLM_TYPES:-f16,bf16}" 1,16,64,128,256,1024 4096x4096,4096x14336,14336x4096
  pack
fi
pack
