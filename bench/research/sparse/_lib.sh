# Shared by the sparse research scripts (packets.sh, states.sh, s8_tiles.sh): `gen` writes a GEMM
# program, `run` times it with `gemm run --check none` at 8192^3. Source it from the repo
# root with DENO set.
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
