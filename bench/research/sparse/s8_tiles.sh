#!/usr/bin/env bash
# s8 2:4-sparse tiles against the dense default, 8192^3 (bench/NOTES.md 59): the sparse
# default (256x128x128, 4 stages, when it was chosen unmeasured) against the measured
# 256x128x256 (2 stages) and the old default 128x256x128. `gemm run --check none`, 40
# launches after 10, each in its own process, runtime K. DENO: the deno to run.
set -uo pipefail
cd "$(dirname "$0")/../../.."
DENO=${DENO:-deno}
. bench/research/sparse/_lib.sh
gen s8_dense s8 s32 0
gen s8_sp_default s8 s32 1
gen s8_sp_256x128x256 s8 s32 1 'threadblock 256x128x256'
gen s8_sp_128x256x128 s8 s32 1 'threadblock 128x256x128'
for n in s8_dense s8_sp_default s8_sp_256x128x256 s8_sp_128x256x128 s8_dense s8_sp_default; do
  run "$n" tune
done
