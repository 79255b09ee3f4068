#!/bin/bash
# Rasterization swizzle for f16, and 8-bit tiles, at 8192^3 and 4096^3 on sm90.
D=/tmp/deno
cd "$(dirname "$0")/../.."
run() { $D run --cached-only -A cli.ts run $1 --target sm90 --size M=$2,N=$2,K=$2 --check ref --iters 20 2>&1 | grep -E "DISAGREES|time:|error" | sed 's/ of 20 launches.*)://' | cut -c1-100; }
for f in .device/wg/bench_f16.gemm .device/wg/v3/f16_sw4.gemm .device/wg/v3/f16_sw16.gemm; do echo "== $f 8192"; run $f 8192; done
for f in .device/wg/v3/s8_*.gemm; do for s in 8192 4096; do echo "== $f $s"; run $f $s; done; done
