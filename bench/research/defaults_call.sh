#!/usr/bin/env bash
# Issue 22/23, the defaults of bench/NOTES.md 76 in one device call: the GPU tests of the skinny
# sm90 tiles and of the clusters; the llm table (f16, sm90, --pdl) at M = 128 and 256; the 64x64
# tile of M = 128, K = 14336 without its cluster (what the cluster adds); the main benchmark at
# the new defaults (f16, bf16 at 4096³, 5000³, 8192³; tf32, s8 at 5000³ and 8192³). Everything
# lands in OUT/all.tgz. Deno on PATH. Not part of the benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/defaults_call.sh OUT   (STEPS: any of "tests llm rows ab main"; the
#   llm step's types and rows: LLM_TYPES, default f16, LLM_M, default 128,256)
# "ab" (not in the default STEPS): M = 128, N = K = 4096, the --tune default (64x64 on clusters)
# and the same tile one block a tile, alternated three times; then 64-row tiles on clusters at
# M = 256.
set -u
. bench/research/_gemm_run_rows.sh
call_start defaults_call "${1:?usage: defaults_call.sh OUT}" "tests llm rows main"
if has tests; then
  t0=$SECONDS
  deno test --cached-only -A tests/gpu/skinny_test.ts --filter sm90 >"$W/gpu-skinny-test.txt" 2>&1
  echo "gpu skinny sm90 tests: exit $? ($((SECONDS - t0)) s)"
  deno test --cached-only -A tests/gpu/wgmma_test.ts --filter cluster >"$W/gpu-cluster-test.txt" 2>&1
  echo "gpu cluster tests: exit $? ($((SECONDS - t0)) s)"
  grep -hE "passed|failed|FAILED" "$W"/gpu-*-test.txt | sed 's/\x1b\[[0-9;]*m//g' | tail -8
  pack
fi
if has llm; then
  llm_rows "$W" llm "${LLM_TYPES:-f16}" "${LLM_M:-128,256}" 4096x4096,4096x14336,14336x4096
  pack
fi
V=/tmp/defaults_call_variants
if has rows || has ab || has ab2; then
  bash bench/research/gen_variants.sh "$V" bench/research/variants_sm90_cluster.txt >"$W/gen.txt" 2>&1
fi
if has rows; then
  tune_row "$V" M=128,N=4096,K=14336 w64x64s14t
  tune_row "$V" M=128,N=4096,K=4096 w64x64s14t
  pack
fi
if has ab; then
  for _ in 1 2 3; do tune_row "$V" M=128,N=4096,K=4096 w64x64s14t; done
  for s in M=256,N=4096,K=4096 M=256,N=4096,K=14336; do tune_row "$V" "$s" w64x128s8c2 w64x64s13c2; done
  pack
fi
# "ab2" (not in the default STEPS): after a throwaway row that warms the card, the --tune default
# against 64x128 tiles on clusters at M = 256, and against the unclustered 64x64 tile at M = 128,
# K = 14336, alternated twice.
if has ab2; then
  one warm bench/kernels/f16.gemm M=256,N=4096,K=14336 --target sm90 --tune --iters 3000 --warmup 10
  for _ in 1 2; do
    for s in M=256,N=4096,K=4096 M=256,N=4096,K=14336; do tune_row "$V" "$s" w64x128s8c2; done
    tune_row "$V" M=128,N=4096,K=14336 w64x64s14t
  done
  pack
fi
bench() { # LABEL TYPES SHAPES
  bench_sm90 "$W" "$@"
  pack
}
if has main; then
  bench main-16 f16,bf16 4096,odd,8192
  bench main-32 tf32,s8 odd,8192
fi
pack
