# Sourced by the research scripts (sm90_*.sh, pdl_ab.sh, deep_ab.sh): the
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

# llm_tree TREE DIR TYPES MS: the llm table on sm90 with --pdl from TREE (".", or another commit's
# files carried in .devcarry, their node_modules linked to this one's) into DIR, its log in
# DIR.log; prints the exit, the seconds and the rows.
llm_tree() {
  local tree=$1 dir=$2 types=$3 ms=$4 t0=$SECONDS
  mkdir -p "$dir"
  [ -e "$tree/node_modules" ] || ln -s "$PWD/node_modules" "$tree/node_modules"
  (cd "$tree" && deno run --cached-only -A bench/main.ts --no-sim --no-compile --gpu --shapes llm \
    --target sm90 --types "$types" --m "$ms" --pdl --out "$dir") >"$dir.log" 2>&1
  echo "llm $tree: exit $? ($((SECONDS - t0)) s)"
  grep -E '^(f16|bf16|s8) ' "$dir.log" | cut -c1-300
}
