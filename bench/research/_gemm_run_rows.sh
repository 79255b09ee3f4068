# Sourced by the research scripts (sm90_*.sh, pdl_ab.sh, deep_ab.sh, cluster_*.sh and the
# *_call.sh scripts): a call's set-up, the card's state, one `gemm run` a row into
# $ROWS_DIR/full.txt with a summary line in $ROWS_DIR/summary.txt (ROWS_DIR defaults to OUT),
# the llm rows and the sm90 benchmark. Needs
# Deno on PATH (run with --cached-only on the device).

# call_start NAME OUT STEPS: a call script's set-up (the *_call.sh scripts, cluster_sweep.sh):
# a fresh work folder W=/tmp/NAME whose files `pack` puts into OUT/all.tgz, STEPS (the
# environment's, else the given), `has STEP`, ROWS_DIR=W and the card's state.
# call_start NAME OUT DEFAULT_STEPS: the work folder /tmp/NAME, $OUT, $STEPS (DEFAULT_STEPS unless
# set), the card's state. With CARD=H200 (any name nvidia-smi prints), a call that got another
# card exits 3 before any work, so that a question about one card costs no more device time on the
# other (the device tool may give an H100 where an H200 was asked for). With OTHER_STEPS set as
# well, such a call runs OTHER_STEPS instead (questions the card it got can answer), so that the
# start is not spent for nothing.
call_start() {
  STEPS="${STEPS:-$3}"
  if [ -n "${CARD:-}" ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "$CARD"; then
    local got
    got=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)
    if [ -z "${OTHER_STEPS:-}" ]; then
      echo "call_start: CARD=$CARD, got $got; nothing run"
      exit 3
    fi
    echo "call_start: CARD=$CARD, got $got; running OTHER_STEPS ($OTHER_STEPS) instead of $STEPS"
    STEPS=$OTHER_STEPS
  fi
  W=/tmp/$1
  OUT=$2
  rm -rf "$W" && mkdir -p "$W" "$OUT"
  ROWS_DIR=$W
  # A call cut off by `timeout` (TERM) still packs what its steps wrote so far (NOTES 95's call 9
  # lost a whole GPU test run this way).
  trap 'pack; exit 124' TERM
  card_state
}
pack() { tar -czf "$OUT/all.tgz" -C "$W" .; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

# gpu_tests ARGS...: `deno test -A ARGS` into $W/gpu-test.txt, then packed; prints the exit, the
# seconds and the counts.
gpu_tests() {
  local t0=$SECONDS
  deno test --cached-only -A "$@" >"$W/gpu-test.txt" 2>&1
  echo "gpu tests: exit $? ($((SECONDS - t0)) s)"
  sed 's/\x1b\[[0-9;]*m//g' "$W/gpu-test.txt" | grep -E "passed|failed|FAILED" | tail -6
  pack
}

# trace_run FILE LABEL ARGS...: bench/timeline.ts ARGS into FILE.json (summaries and the last
# round's block records) and FILE.txt, cut off after $TRACE_TIMEOUT s (default 120); prints the
# exit and the summary lines, then packs.
trace_run() {
  local f=$1 label=$2
  shift 2
  timeout "${TRACE_TIMEOUT:-120}" deno run --cached-only -A bench/timeline.ts "$@" \
    --out "$f.json" >"$f.txt" 2>&1
  echo "$label: exit $?"
  grep -v '^#' "$f.txt" | sed 's/^/  /'
  pack
}

# The card before the first row, into $OUT/smi.txt.
card_state() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv |
    tee "${ROWS_DIR:-$OUT}/smi.txt"
}

# one LABEL FILE SIZES [gemm run options...]: one summary line (median, rate, check, grid).
one() {
  local label=$1 f=$2 s=$3
  shift 3
  local t
  t=$({ deno run --cached-only -A cli.ts run "$f" --size "$s" "$@" 2>&1; } |
    tee -a "${ROWS_DIR:-$OUT}/full.txt" |
    grep -Eio 'median [0-9.]+ ms|[0-9.]+ (TFLOP/s|TOPS)|agrees|disagrees|FAIL[A-Z]*|mismatch|grid [0-9x]+' |
    tr '\n' ' ')
  echo "$label $s $* :: $t" | tee -a "${ROWS_DIR:-$OUT}/summary.txt"
}

# Back to back, 4 input sets: the options of every `one` row of the variant scripts.
SMALL=(--iters 50 --warmup 10 --input-sets 4)

# tune_row DIR SIZES VARIANT...: f16's --tune default on sm90, then each variant of DIR
# (var_f16_VARIANT.gemm, written by gen_variants.sh), at SIZES.
tune_row() {
  local dir=$1 s=$2
  shift 2
  one sm90-tune bench/kernels/f16.gemm "$s" --target sm90 --tune "${SMALL[@]}"
  for v in "$@"; do one "$v" "$dir/var_f16_$v.gemm" "$s" "${SMALL[@]}"; done
}

# base_tree DIR: another tree of this project (an older commit's, carried to the device) made
# runnable from here: this checkout's node_modules beside it.
base_tree() { [ -e "$1/node_modules" ] || ln -s "$PWD/node_modules" "$1/node_modules"; }

# llm_tree TREE DIR TYPES MS: the llm table on sm90 with --pdl from TREE (".", or another commit's
# files carried in .devcarry, their node_modules linked to this one's) into DIR, its log in
# DIR.log; prints the exit, the seconds and the rows.
llm_tree() {
  local tree=$1 dir=$2 types=$3 ms=$4 t0=$SECONDS
  mkdir -p "$dir"
  base_tree "$tree"
  (cd "$tree" && deno run --cached-only -A bench/main.ts --no-sim --no-compile --gpu --shapes llm \
    --target sm90 --types "$types" --m "$ms" --pdl --out "$dir") >"$dir.log" 2>&1
  echo "llm $tree: exit $? ($((SECONDS - t0)) s)"
  grep -E '^(f16|bf16|s8) ' "$dir.log" | cut -c1-300
}

# llm_rows DIR LABEL TYPES MS NK [SCHEDULE]: the llm table's rows (sm90, --pdl, or LLM_PDL's
# flag: --pdl-early) of TYPES at MS x NK (bench/llm.ts --nk), at the defaults or with SCHEDULE's
# lines (--schedule), into DIR/LABEL, its log in DIR/LABEL.log; prints the exit, the seconds and
# the rows, then packs (llm_run).
llm_rows() {
  local dir=$1 label=$2 types=$3 ms=$4 nk=$5
  local sched=()
  [ $# -ge 6 ] && sched=(--schedule "$6")
  llm_run "$dir" "$label" --types "$types" --m "$ms" --nk "$nk" "${LLM_PDL:---pdl}" "${sched[@]}"
}

# llm_run DIR LABEL OPTIONS...: the llm table (sm90) with bench/llm.ts OPTIONS (--types, --m,
# --nk or --sizes, --pdl, --copy, ...) into DIR/LABEL, its log in DIR/LABEL.log; prints the exit,
# the seconds and the rows, then packs.
llm_run() {
  local dir=$1 label=$2 t0=$SECONDS
  shift 2
  mkdir -p "$dir/$label"
  deno run --cached-only -A bench/main.ts --no-sim --no-compile --gpu --shapes llm --target sm90 \
    "$@" --out "$dir/$label" >"$dir/$label.log" 2>&1
  echo "llm $label: exit $? ($((SECONDS - t0)) s)"
  grep -E '^(f16|bf16|s8) ' "$dir/$label.log" | cut -c1-400
  pack
}

# llm_variants DIR PREFIX TYPE:M:SCHEDULE...: one llm row a variant (N x K: LLM_NK, default
# 4096x4096), TYPE at M
# with SCHEDULE's lines, into DIR/PREFIX1, DIR/PREFIX2, ..., each packed (llm_rows).
llm_variants() {
  local dir=$1 prefix=$2 n=0 v r
  shift 2
  for v in "$@"; do
    n=$((n + 1))
    r=${v#*:}
    llm_rows "$dir" "$prefix$n" "${v%%:*}" "${r%%:*}" "${LLM_NK:-4096x4096}" "${r#*:}"
  done
}

# llm_bracketed DIR PREFIX TYPE M SCHEDULE...: TYPE's llm row at M (LLM_NK) at the default,
# then with each SCHEDULE's lines, then at the default again (the variants between two baselines of
# the same call), into DIR/PREFIX-default, DIR/PREFIX-v1, ..., DIR/PREFIX-default-again, packed after
# each (llm_rows).
llm_bracketed() {
  local dir=$1 prefix=$2 type=$3 m=$4 v
  shift 4
  llm_rows "$dir" "$prefix-default" "$type" "$m" "${LLM_NK:-4096x4096}"
  local variants=()
  for v in "$@"; do variants+=("$type:$m:$v"); done
  llm_variants "$dir" "$prefix-v" "${variants[@]}"
  llm_rows "$dir" "$prefix-default-again" "$type" "$m" "${LLM_NK:-4096x4096}"
}

# bench_sm90 DIR LABEL TYPES SHAPES [bench options...]: the sm90 benchmark (two states, cuBLAS in
# the same run; BENCH_TARGET for another target) into DIR/LABEL, its log in DIR/LABEL.log;
# prints the exit, the seconds and the rows.
bench_sm90() {
  local dir=$1 label=$2 types=$3 shapes=$4 t0=$SECONDS
  shift 4
  mkdir -p "$dir/$label"
  deno task bench --no-sim --no-compile --gpu --target "${BENCH_TARGET:-sm90}" --types "$types" \
    --shapes "$shapes" \
    --out "$dir/$label" "$@" >"$dir/$label.log" 2>&1
  echo "bench $label: exit $? ($((SECONDS - t0)) s)"
  grep -E "^(f16|bf16|tf32|s8) |ERROR|schedule lines|MISSED|met" "$dir/$label.log" |
    sed 's/\x1b\[[0-9;]*m//g' | cut -c1-330
}

# bench_ab DIR A B TYPES SHAPES SCHEDULE AFTER: the sm90 benchmark at the default schedule
# (DIR/A), then with SCHEDULE's lines (DIR/B), each followed by the command AFTER (e.g. packing
# DIR, so that a call cut short keeps what it did).
bench_ab() {
  local dir=$1 a=$2 b=$3 types=$4 shapes=$5 sched=$6 after=$7
  bench_sm90 "$dir" "$a" "$types" "$shapes"
  $after
  bench_sm90 "$dir" "$b" "$types" "$shapes" --schedule "$sched"
  $after
}

# bench_cluster_ab DIR RUNS AFTER: for each TYPES:SHAPES of RUNS (space-separated), bench_ab of
# the default (DIR/default-i) against `cluster 2` (DIR/cluster2-i).
bench_cluster_ab() {
  local dir=$1 runs=$2 after=$3 i=0 run
  for run in $runs; do
    i=$((i + 1))
    bench_ab "$dir" "default-$i" "cluster2-$i" "${run%%:*}" "${run#*:}" "cluster 2" "$after"
  done
}

# ncu_pair DIR MxNxK [SCHEDULE...]: Nsight Compute (its base clock) on one launch after warm-up of
# f16's --tune kernel at the size with each SCHEDULE's lines ("" the default), and of cuBLAS's
# kernel for the same f16 TN product (torch); DRAM, L2, shared-memory and instruction counts
# (NCU_METRICS for other metrics) into DIR/*.txt, the lines that matter into DIR/summary.txt.
ncu_pair() {
  local dir=$1 s=$2 i=0 M N K sched f
  shift 2
  IFS=x read -r M N K <<<"$s"
  mkdir -p "$dir"
  local ncu=(ncu --section SpeedOfLight --section InstructionStats
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --metrics
    "${NCU_METRICS:-gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sectors_op_read.sum}")
  for sched in "$@"; do
    i=$((i + 1))
    f=bench/kernels/f16.gemm
    if [ -n "$sched" ]; then
      f=$dir/var$i.gemm
      sed "s|^}|  schedule {\n    ${sched}\n  }\n}|" bench/kernels/f16.gemm >"$f"
    fi
    timeout 150 "${ncu[@]}" -k regex:bench_ --launch-skip 3 --launch-count 1 \
      deno run --cached-only -A cli.ts run "$f" --size "M=$M,N=$N,K=$K" --target sm90 --tune \
      --check none --iters 2 --warmup 3 >"$dir/ours$i.txt" 2>&1 || echo "ours $i rc $?"
  done
  ncu_cublas_f16 "$dir/cublas.txt" "$M" "$N" "$K" "${ncu[@]}" || echo "cublas rc $?"
  for f in "$dir"/ours*.txt "$dir/cublas.txt"; do
    echo "== $f"
    grep -E "^  [a-zA-Z_]+.*\(|Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|Executed Instructions|Issued Instructions|dram__bytes|lts__t_|L2 Hit|Shared .*(Load|Store)|Bank|Mem Busy|Max Bandwidth|Mem Pipes" "$f" | head -48
  done | tee -a "$dir/summary.txt"
}

# ncu_cublas_f16 FILE M N K NCU...: the command NCU... (ncu and its options) on one launch, after
# warm-up, of cuBLAS's kernel for f16 A[M, K] row x W[N, K] (torch's a @ w.t()), into FILE.
ncu_cublas_f16() {
  local file=$1 M=$2 N=$3 K=$4
  shift 4
  timeout 150 "$@" -k regex:'nvjet|gemm|gemv|sm90|cutlass' --launch-skip 3 --launch-count 1 \
    python3 - "$M" "$N" "$K" >"$file" 2>&1 <<'PY'
import sys, torch
M, N, K = map(int, sys.argv[1:4])
a = torch.randn(M, K, dtype=torch.float16, device="cuda")
w = torch.randn(N, K, dtype=torch.float16, device="cuda")
for _ in range(5):
    a @ w.t()
torch.cuda.synchronize()
PY
}
