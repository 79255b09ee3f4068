#!/usr/bin/env bash
# Issue 23, thread-block clusters of 2 with TMA multicast (bench/NOTES.md 75), in one device
# call: the cluster GPU tests (tests/gpu/wgmma_test.ts --filter cluster), then the sm90
# benchmark (two states, cuBLAS in the same run) at the default schedule and with `cluster 2`,
# alternating, so that each variant's ratio to cuBLAS comes from its own run. Everything is
# packed into OUT/all.tgz (the device returns only a few files). Deno on PATH. Not part of the
# benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/cluster_call.sh OUT
#   RUNS: the bench runs, each TYPES:SHAPES (the bench's --types and --shapes; default
#   "f16,bf16:8192,odd tf32,s8:8192"); GPU_TEST=0: no tests.
set -u
. bench/research/_gemm_run_rows.sh
call_start cluster_call "${1:?usage: cluster_call.sh OUT}" ""
RUNS="${RUNS:-f16,bf16:8192,odd tf32,s8:8192}"
if [ "${GPU_TEST:-1}" = 1 ]; then
  t0=$SECONDS
  deno test --cached-only -A tests/gpu/wgmma_test.ts --filter cluster >"$W/gpu-cluster-test.txt" 2>&1
  echo "gpu cluster tests: exit $? ($((SECONDS - t0)) s)"
  grep -E "^cluster|passed|failed|FAILED" "$W/gpu-cluster-test.txt" | sed 's/\x1b\[[0-9;]*m//g' | tail -12
  pack # after each step: a call cut short keeps what it did
fi
bench_cluster_ab "$W" "$RUNS" pack
