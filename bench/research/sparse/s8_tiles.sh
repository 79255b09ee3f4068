#!/usr/bin/env bash
# s8 2:4-sparse tiles against the dense default, 8192^3 (bench/NOTES.md 59): the sparse
# default (256x128x128, 4 stages; unmeasured when chosen) against the measured 256x128x256
# (2 stages) and the old default 128x256x128. `gemm run --check none`, 40 launches after 10,
# back to back in one process each. DENO: the deno to run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
DENO=${DENO:-deno}
T=${TMPDIR:-/tmp}
gen() { # name sparse-word tile-or-empty
  local sched=""
  [ -n "$3" ] && sched="  schedule {\n    threadblock $3\n  }\n"
  printf "kernel $1 {\n  A: s8[M, K] row$2\n  B: s8[K, N] col\n  D: s32[M, N]\n  D[m, n] = A[m, k] * B[k, n]\n$sched}\n" >"$T/$1.gemm"
}
gen s8_dense "" ""
gen s8_sp_default " sparse" ""
gen s8_sp_256x128x256 " sparse" 256x128x256
gen s8_sp_128x256x128 " sparse" 128x256x128
for n in s8_dense s8_sp_default s8_sp_256x128x256 s8_sp_128x256x128 s8_dense s8_sp_default; do
  printf '%-20s ' "$n"
  "$DENO" run --cached-only -A cli.ts run "$T/$n.gemm" --size M=8192,N=8192,K=8192 --tune --sms 132 \
    --check none --warmup 10 --iters 40 2>&1 | grep -E "time:|tile|rror" | tr '\n' ' '
  echo
done
