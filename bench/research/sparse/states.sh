#!/usr/bin/env bash
# Burst and sustained `gemm run` of the dense default and the packet sparse kernel at
# 256x128x128 (bench/NOTES.md 58), f16 and bf16, 8192^3. DENO: the deno to run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
DENO=${DENO:-deno}
. bench/research/sparse/_lib.sh
for a in f16 bf16; do
  gen ${a}_0 "$a" "$a" 0
  gen ${a}_1 "$a" "$a" 1 'threadblock 256x128x128'
  for state in "burst 3 20" "sustained 400 40"; do
    set -- $state
    for sp in 0 1; do
      printf '%-5s %-9s sparse=%s ' "$a" "$1" "$sp"
      "$DENO" run --cached-only -A cli.ts run "$T/${a}_$sp.gemm" --size $S --tune --sms 132 \
        --check none --warmup "$2" --iters "$3" 2>&1 | grep -E "time:|rror" | sed -E 's/ of [0-9]+ launches.*\): / /'
    done
  done
done
