#!/usr/bin/env bash
# Issue 22/23: clusters of 2 along N (`cluster 1x2`, A multicast) against the defaults in the
# llm table's protocol (bench/llm.ts --schedule, --nk), f16, sm90, --pdl: M = 64, 128 and 256 at
# N = K = 4096 (and M = 64, 256 at K = 14336), each variant its own run; first the GPU tests of
# the 1x2 kernels. Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not
# part of the benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/cluster_n_call.sh OUT   (STEPS: any of "tests rows long")
set -u
. bench/research/_gemm_run_rows.sh
call_start cluster_n_call "${1:?usage: cluster_n_call.sh OUT}" "tests rows long"
# llm LABEL MS NK [SCHEDULE]: f16's llm rows (_gemm_run_rows.sh llm_rows), then packed.
llm() {
  llm_rows "$W" "$1" f16 "${@:2}"
  pack
}
if has tests; then
  gpu_tests tests/gpu/wgmma_test.ts --filter "cluster 1x2"
fi
if has rows; then
  llm default 64,128,256 4096x4096
  llm m64-64x32c1x2 64 4096x4096 "threadblock 64x32x64; stages 18; cluster 1x2"
  llm m64-64x32p 64 4096x4096 "threadblock 64x32x64; stages 18; scheduler persistent"
  llm m128-64x64c1x2 128 4096x4096 "threadblock 64x64x64; stages 13; cluster 1x2"
  llm m128-128x32c1x2 128 4096x4096 "threadblock 128x32x64; stages 10; cluster 1x2"
  llm m256-128x64c1x2 256 4096x4096 "threadblock 128x64x64; stages 8; cluster 1x2"
  llm m256-64x128c2 256 4096x4096 "threadblock 64x128x64; stages 8; cluster 2"
fi
if has long; then
  llm default-long 64,256 4096x14336
  llm m64-64x32c1x2-long 64 4096x14336 "threadblock 64x32x64; stages 18; cluster 1x2"
  llm m256-128x64c1x2-long 256 4096x14336 "threadblock 128x64x64; stages 8; cluster 1x2"
fi
pack
