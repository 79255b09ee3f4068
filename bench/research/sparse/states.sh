#!/usr/bin/env bash
# Burst and sustained `gemm run` of the dense default and the packet sparse kernel at
# 256x128x128 (bench/NOTES.md 58), f16 and bf16, 8192^3. DENO: the deno to run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
DENO=${DENO:-deno}
T=${TMPDIR:-/tmp}
for a in f16 bf16; do
  for sp in 0 1; do
    n=${a}_$sp; s=""; sched=""
    [ $sp = 1 ] && s=" sparse" && sched='  schedule {\n    threadblock 256x128x128\n  }\n'
    printf "kernel $n {\n  A: $a[M, K] row$s\n  B: $a[K, N] col\n  D: $a[M, N]\n  D[m, n] = A[m, k] * B[k, n]\n$sched}\n" >"$T/$n.gemm"
  done
  for state in "burst 3 20" "sustained 400 40"; do
    set -- $state
    for sp in 0 1; do
      printf '%-5s %-9s sparse=%s ' "$a" "$1" "$sp"
      "$DENO" run --cached-only -A cli.ts run "$T/${a}_$sp.gemm" --size M=8192,N=8192,K=8192 --tune --sms 132 \
        --check none --warmup "$2" --iters "$3" 2>&1 | grep -E "time:|rror" | sed -E 's/ of [0-9]+ launches.*\): / /'
    done
  done
done
