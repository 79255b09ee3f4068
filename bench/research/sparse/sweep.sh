#!/usr/bin/env bash
# Sparse f16 GEMM at 8192^3 on the GPU: a few schedules timed by `gemm run`, then
# ncu's warp-state and throughput sections for the default sparse and dense kernels
# (bench/NOTES.md 55). DENO: the deno to run; OUT: where logs go.
set -uo pipefail
cd "$(dirname "$0")/../../.."
DENO=${DENO:-deno}
OUT=${OUT:-out/sparse}
mkdir -p "$OUT"
S=M=8192,N=8192,K=8192
gen() { # name sparse? schedule-lines
  local sp=""; [ "$2" = 1 ] && sp=" sparse"
  printf 'kernel %s {\n  A: f16[M, K] row%s\n  B: f16[K, N] col\n  D: f16[M, N]\n  D[m, n] = A[m, k] * B[k, n]\n%s}\n' "$1" "$sp" "$3" >"$OUT/$1.gemm"
}
sched() { printf '  schedule {\n'; for l in "$@"; do printf '    %s\n' "$l"; done; printf '  }\n'; }
gen dense 0 ""
gen sparse 1 ""
gen s128x256 1 "$(sched 'threadblock 128x256x64' 'warp 64x64x64' 'stages 3')"
gen s128x128 1 "$(sched 'threadblock 128x128x64' 'warp 64x64x64' 'stages 4')"
gen s256x128 1 "$(sched 'threadblock 256x128x64' 'warp 64x64x64' 'stages 3')"
gen s128x256k16 1 "$(sched 'threadblock 128x256x32' 'warp 64x64x32' 'mma 16x8x16' 'stages 4')"
for k in dense sparse s128x256 s128x128 s256x128 s128x256k16; do
  echo "== $k"
  tune=""; case $k in dense|sparse) tune="--tune --sms 132" ;; esac
  "$DENO" run --cached-only -A cli.ts run "$OUT/$k.gemm" --size $S $tune --iters 30 --warmup 5 2>&1 | tail -4
done
for k in sparse dense; do
  ncu --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section Occupancy \
    "$DENO" run --cached-only -A cli.ts run "$OUT/$k.gemm" --size $S --tune --sms 132 --iters 1 --warmup 0 \
    >"$OUT/ncu-$k.txt" 2>&1
  grep -E 'Throughput|Stall|stall|Warp Cycles|Issued|Occupancy|Bank|Pipe|Registers|Shared Memory' "$OUT/ncu-$k.txt" | head -60
done
