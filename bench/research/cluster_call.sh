#!/usr/bin/env bash
# Issue 23, thread-block clusters of 2 with TMA multicast (bench/NOTES.md 75), in one device
# call: the cluster GPU tests (tests/gpu/wgmma_test.ts --filter cluster), then the sm90
# benchmark (two states, cuBLAS in the same run) at the default schedule and with `cluster 2`,
# alternating, so that each variant's ratio to cuBLAS comes from its own run. Everything is
# packed into OUT/all.tgz (the device returns only a few files). Deno on PATH. Not part of the
# benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/cluster_call.sh OUT   (TYPES, SHAPES: the bench's --types, --shapes)
set -u
OUT="${1:?usage: cluster_call.sh OUT}"
TYPES="${TYPES:-f16,bf16,tf32,s8}"
SHAPES="${SHAPES:-8192}"
W=/tmp/cluster_call
mkdir -p "$W" "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv >"$W/smi.txt" 2>&1
if [ "${GPU_TEST:-1}" = 1 ]; then
  t0=$SECONDS
  deno test --cached-only -A tests/gpu/wgmma_test.ts --filter cluster >"$W/gpu-cluster-test.txt" 2>&1
  echo "gpu cluster tests: exit $? ($((SECONDS - t0)) s)"
  grep -E "^cluster|passed|failed|FAILED" "$W/gpu-cluster-test.txt" | sed 's/\x1b\[[0-9;]*m//g' | tail -12
fi
bench() { # LABEL [--schedule LINES]
  local label=$1
  shift
  local t0=$SECONDS
  deno task bench --no-sim --no-compile --gpu --target sm90 --types "$TYPES" --shapes "$SHAPES" \
    --out "$W/$label" "$@" >"$W/$label.log" 2>&1
  echo "bench $label: exit $? ($((SECONDS - t0)) s)"
  grep -E "^(f16|bf16|tf32|s8) |schedule lines|target" "$W/$label.log" | sed 's/\x1b\[[0-9;]*m//g'
}
mkdir -p "$W/default" "$W/cluster2"
bench default
bench cluster2 --schedule "cluster 2"
tar -czf "$OUT/all.tgz" -C "$W" .
