#!/usr/bin/env bash
# Issue 22, B's slice asked of the L2 before griddepcontrol.wait (bench/NOTES.md 72): the GPU test
# of PDL chains, then the llm table on sm90 with --pdl from this tree and from a baseline tree
# (another commit's files, its node_modules linked), in one device call so that the ratios come
# from one run. Deno on PATH (run with --cached-only there). Not part of the benchmark or of CI.
# Written 2026-12-05. BASE_TREE e.g. .devcarry/base (`git archive COMMIT | tar -x -C .devcarry/base`),
# carried with `.devcarry`.
#
# Usage: bash bench/research/pdl_ab.sh OUT BASE_TREE [TYPES] [MS]
set -u
OUT="${1:?usage: pdl_ab.sh OUT BASE_TREE [TYPES] [MS]}"
BASE="${2:?usage: pdl_ab.sh OUT BASE_TREE [TYPES] [MS]}"
TYPES="${3:-f16}"
MS="${4:-1,16,64,128}"
mkdir -p "$OUT/new" "$OUT/base"
. bench/research/_gemm_run_rows.sh
card_state
t0=$SECONDS
deno test --cached-only -A tests/gpu/pdl_test.ts >"$OUT/pdl-test.txt" 2>&1
echo "pdl_test: exit $? ($((SECONDS - t0)) s)"; tail -n 4 "$OUT/pdl-test.txt"
llm() { # TREE DIR
  local t0=$SECONDS
  (cd "$1" && deno run --cached-only -A bench/main.ts --no-sim --no-compile --gpu --shapes llm \
    --target sm90 --types "$TYPES" --m "$MS" --pdl --out "$2") >"$2/llm.log" 2>&1
  echo "llm $1: exit $? ($((SECONDS - t0)) s)"
  grep -E '^f16|^bf16|^s8' "$2/llm.log" | cut -c1-300
}
[ -e "$BASE/node_modules" ] || ln -s "$PWD/node_modules" "$BASE/node_modules"
llm . "$OUT/new"
llm "$BASE" "$OUT/base"
