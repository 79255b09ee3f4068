#!/usr/bin/env bash
# Issue 22/23, NOTES 78's next call: the GPU tests of every sm90 kernel after setmaxnreg 24 / 240
# (wgmma, skinny, pdl), the llm table (sm90, --pdl) of LLM_TYPES (default f16) at every M, and tf32
# at 8192³ from this tree and from the tree carried in .devcarry/base (STEPS: any of "tests llm
# tf32ab"). Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not part of the
# benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/verify_call.sh OUT
#   (base: git archive COMMIT | tar -x -C .devcarry/base; carry .devcarry)
set -u
. bench/research/_gemm_run_rows.sh
call_start verify_call "${1:?usage: verify_call.sh OUT}" "tests llm tf32ab"
if has tests; then
  gpu_tests tests/gpu/wgmma_test.ts tests/gpu/skinny_test.ts tests/gpu/pdl_test.ts
fi
if has llm; then
  llm_tree . "$W/llm" "${LLM_TYPES:-f16}" "${LLM_M:-1,16,64,128,256,1024}"
  pack
fi
if has tf32ab; then
  bench_sm90 "$W" tf32-new tf32 8192
  pack
  [ -e .devcarry/base/node_modules ] || ln -s "$PWD/node_modules" .devcarry/base/node_modules
  (cd .devcarry/base && bench_sm90 "$W" tf32-base tf32 8192)
  pack
fi
pack
