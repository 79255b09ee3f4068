#!/usr/bin/env bash
# Issue 22/23: the next call, written before it ran (2026-12-06, after bench/NOTES.md 83; the
# earlier plan of this name ran as calls 1-2 of NOTES 81). Steps:
#   tests: tests/gpu/wgmma_test.ts --filter 224 (the 128x224 case with a column bias, staged rows
#          of 28 vectors) and tests/gpu/skinny_test.ts --filter sm90;
#   fill:  WGMMA_WAVE_FILL's unmeasured grids: f16 at 768x4096x4096 (96 blocks of 128x256) and
#          896x4096x4096 (112), the default (128x128) against `threadblock 128x256x64`;
#   bf16:  bf16 at 5000³ and 1024x14336x4096, the default (128x224, inferred from f16) against
#          `threadblock 128x256x64`;
#   llm:   the llm table of LLM_TYPES (default f16,bf16) at every M, the rule rows among them.
# Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not part of the
# benchmark or of CI.
#
# Usage: bash bench/research/next_call.sh OUT   (STEPS: any of "tests fill bf16 llm")
set -u
. bench/research/_gemm_run_rows.sh
call_start next_call "${1:?usage: next_call.sh OUT}" "tests fill bf16 llm"
if has tests; then
  gpu_tests tests/gpu/wgmma_test.ts tests/gpu/skinny_test.ts --filter "/224|sm90/"
fi
W256="threadblock 128x256x64"
if has fill; then
  bench_ab "$W" fill-default fill-128x256 f16 768x4096x4096,896x4096x4096 "$W256" pack
fi
if has bf16; then
  bench_ab "$W" bf16-default bf16-128x256 bf16 5000,1024x14336x4096 "$W256" pack
fi
if has llm; then
  llm_rows "$W" llm "${LLM_TYPES:-f16,bf16}" 1,16,64,128,256,1024 4096x4096,14336x4096,4096x14336
  pack
fi
pack
