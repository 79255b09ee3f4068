#!/usr/bin/env bash
# Sparse GEMM at 8192^3 with the packet metadata tile (bench/NOTES.md 58): schedules per
# type timed by `gemm run --check none` (correctness: tests/gpu/sparse_test.ts), the
# dense default of the same type between them. DENO: the deno to run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
DENO=${DENO:-deno}
. bench/research/sparse/_lib.sh
for t in "f16 f16" "bf16 bf16" "f32 f32" "s8 s32"; do
  set -- $t; a=$1; d=$2
  gen ${a}_dense "$a" "$d" 0
  gen ${a}_sparse "$a" "$d" 1
  run ${a}_dense tune; run ${a}_sparse tune
  if [ "$a" = s8 ]; then
    gen ${a}_256x128x256s2 "$a" "$d" 1 'threadblock 256x128x256' 'warp 64x64x256' 'stages 2'
    gen ${a}_128x256x128s3 "$a" "$d" 1 'threadblock 128x256x128' 'warp 64x64x128' 'stages 3'
    run ${a}_256x128x256s2; run ${a}_128x256x128s3
  elif [ "$a" = f32 ]; then
    gen ${a}_256x128x64s2 "$a" "$d" 1 'threadblock 256x128x64' 'warp 64x64x64' 'stages 2'
    gen ${a}_256x128x32s3 "$a" "$d" 1 'threadblock 256x128x32' 'warp 64x64x32' 'stages 3'
    run ${a}_256x128x64s2; run ${a}_256x128x32s3
  else
    for s in "256x128x128 64x64x128 2" "256x128x64 64x64x64 3" "128x256x64 64x64x64 3" \
             "128x128x128 64x64x128 3" "192x128x128 64x64x128 2"; do
      set -- $s
      [ "$a" = bf16 ] && [ "$1" != 256x128x128 ] && continue
      n=${a}_$1s$3
      gen "$n" "$a" "$d" 1 "threadblock $1" "warp $2" "stages $3"
      run "$n"
    done
  fi
  run ${a}_dense tune
done
