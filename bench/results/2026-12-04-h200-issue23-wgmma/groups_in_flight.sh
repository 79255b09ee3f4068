#!/bin/bash
# WGMMA_GROUPS_IN_FLIGHT 1 (committed) against 0 (wait_group 0, one more k-tile of copies in flight).
D=/tmp/deno
cd "$(dirname "$0")/../.."
run() { $D run --cached-only -A cli.ts run $1 --target sm90 --size M=8192,N=8192,K=8192 --check ref --iters 20 2>&1 | grep -E "DISAGREES|time:|error" | cut -c1-120; }
for round in 1 2; do
  for g in 1 0; do
    sed -i "s/export const WGMMA_GROUPS_IN_FLIGHT = [0-9];/export const WGMMA_GROUPS_IN_FLIGHT = $g;/" passes/wgmma.ts
    echo "== round $round G=$g f16 default"; run .device/wg/bench_f16.gemm
    if [ $round = 1 ]; then echo "== G=$g 128x128x64 s3"; run .device/wg/v2.gemm; fi
  done
done
