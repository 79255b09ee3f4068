#!/bin/bash
# Device-side diagnostics for one call (bench/NOTES.md entries 8-9): samples
# the SM clock, power and throttle reasons with nvidia-smi while it times
# every kernel in GEN (real kernels and their ablations from bench/research/ablate.ts;
# VARIANTS and ROUNDS as bench/research/gpu_quick.py reads them), then profiles each
# kernel named in NCU_KERNELS with Nsight Compute (stall reasons per SASS
# line, effective SM clock). Writes under $OUT.
# usage: bash bench/research/diag.sh GEN_DIR   (GEN from gen_quick.sh + ablate.ts)
set -uo pipefail
G=${1:-.gen}
OUT=${OUT:-/tmp/diag}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,enforced.power.limit --format=csv | tee "$OUT/env.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 50 > "$OUT/smi.csv" &
SMI=$!
VARIANTS=${VARIANTS:-1} python3 bench/research/gpu_quick.py "$G" ${SIZES:-8192x8192x8192} 2>&1 | while IFS= read -r l; do echo "$(date +%H:%M:%S.%3N) $l"; done | tee "$OUT/ablate.txt"
kill $SMI
for k in ${NCU_KERNELS//,/ }; do
  PROFILE=$k timeout 200 ncu --clock-control none -k regex:'bench_|var_' --section WarpStateStats --section SourceCounters \
    --metrics sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
    -o "/tmp/$k" python3 bench/research/gpu_quick.py "$G" 8192x8192x8192 > "/tmp/$k.log" 2>&1 || tail -5 "/tmp/$k.log"
  ncu -i "/tmp/$k.ncu-rep" --page details --print-details all > "$OUT/ncu_$k.txt" 2>&1
  ncu -i "/tmp/$k.ncu-rep" --page source --csv --print-source sass > "$OUT/src_$k.csv" 2>&1 || echo "source page failed"
  grep -E "per_second|duration" "$OUT/ncu_$k.txt"
  python3 bench/research/stalls.py "$OUT/src_$k.csv" 12
done
echo done
