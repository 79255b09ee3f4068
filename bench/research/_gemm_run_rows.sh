# Sourced by the sm90 research scripts (sm90_sweep.sh, sm90_skinny.sh, sm90_l2promo.sh): the
# card's state, and one `gemm run` a row into $OUT/full.txt with a summary line in
# $OUT/summary.txt. Needs OUT set and Deno on PATH (run with --cached-only on the device).

# The card before the first row, into $OUT/smi.txt.
card_state() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv |
    tee "$OUT/smi.txt"
}

# one LABEL FILE SIZES [gemm run options...]: one summary line (median, rate, check, grid).
one() {
  local label=$1 f=$2 s=$3
  shift 3
  local t
  t=$({ deno run --cached-only -A cli.ts run "$f" --size "$s" "$@" 2>&1; } | tee -a "$OUT/full.txt" |
    grep -Eio 'median [0-9.]+ ms|[0-9.]+ (TFLOP/s|TOPS)|agrees|disagrees|FAIL[A-Z]*|mismatch|grid [0-9x]+' |
    tr '\n' ' ')
  echo "$label $s $* :: $t" | tee -a "$OUT/summary.txt"
}
