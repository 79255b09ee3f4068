#!/usr/bin/env bash
# Sparse GEMM at 8192^3 with the packet metadata tile (bench/NOTES.md 58): schedules per
# type timed by `gemm run --check none` (correctness: tests/gpu/sparse_test.ts), the
# dense default of the same type between them. DENO: the deno to run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
DENO=${DENO:-deno}
S=M=8192,N=8192,K=8192
T=${TMPDIR:-/tmp}
gen() { # name dtype out sparse? schedule-lines...
  local name=$1 a=$2 d=$3 sp=""; [ "$4" = 1 ] && sp=" sparse"; shift 4
  { printf 'kernel %s {\n  A: %s[M, K] row%s\n  B: %s[K, N] col\n  D: %s[M, N]\n' "$name" "$a" "$sp" "$a" "$d"
    printf '  D[m, n] = A[m, k] * B[k, n]\n'
    if [ $# -gt 0 ]; then printf '  schedule {\n'; for l in "$@"; do printf '    %s\n' "$l"; done; printf '  }\n'; fi
    printf '}\n'; } >"$T/$name.gemm"
}
run() { # name [--tune]
  printf '%-22s ' "$1"
  "$DENO" run --cached-only -A cli.ts run "$T/$1.gemm" --size $S --check none --iters 40 --warmup 10 \
    ${2:+--tune --sms 132} 2>&1 | grep -E "time:|launch:|rror" | sed -E 's/ of 40 launches.*\): / /; s/launch: grid [^,]*, //' | tr '\n' ' '
  echo
}
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
