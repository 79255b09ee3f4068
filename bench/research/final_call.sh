#!/usr/bin/env bash
# Issue 22/23: the session's last call (bench/NOTES.md 82), on whichever card comes. Steps:
#   main: the sm90 benchmark of f16, bf16, tf32 and s8 at 8192³ and 1024x4096x4096 at the
#         defaults (1024x4096 now on 128x256: passes/tile.ts WGMMA_WAVE_FILL), cuBLAS in the run;
#   llm:  the llm table of f16 (sm90, --pdl) at every M and (N, K).
# Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not part of the
# benchmark or of CI.
#
# Usage: bash bench/research/final_call.sh OUT   (STEPS: any of "main llm")
set -u
. bench/research/_gemm_run_rows.sh
call_start final_call "${1:?usage: final_call.sh OUT}" "main llm"
if has main; then
  bench_sm90 "$W" main f16,bf16,tf32,s8 8192,1024x4096x4096
  pack
fi
if has llm; then
  llm_rows "$W" llm f16 1,16,64,128,256,1024 4096x4096,14336x4096,4096x14336
  pack
fi
pack
