#!/usr/bin/env bash
# Issue 22, how a pdl kernel asks the L2 for B before griddepcontrol.wait (bench/NOTES.md 72): the
# GPU test of PDL chains, then the llm table on sm90 with --pdl from each tree in turn (this one,
# "."; others: another commit's or variant's files, carried in .devcarry, their node_modules
# linked to this one's), in one device call so that the ratios come from one run. Deno on PATH
# (run with --cached-only there). Not part of the benchmark or of CI. Written 2026-12-05.
#
# Usage: bash bench/research/pdl_ab.sh OUT TYPES MS TREE...
#   e.g. git archive COMMIT | tar -x -C .devcarry/base; pdl_ab.sh "$OUT" f16 1,64 . .devcarry/base
set -u
OUT="${1:?usage: pdl_ab.sh OUT TYPES MS TREE...}"
TYPES="${2:?usage: pdl_ab.sh OUT TYPES MS TREE...}"
MS="${3:?usage: pdl_ab.sh OUT TYPES MS TREE...}"
shift 3
mkdir -p "$OUT"
. bench/research/_gemm_run_rows.sh
card_state
t0=$SECONDS
deno test --cached-only -A tests/gpu/pdl_test.ts >"$OUT/pdl-test.txt" 2>&1
echo "pdl_test: exit $? ($((SECONDS - t0)) s)"; tail -n 4 "$OUT/pdl-test.txt"
for tree in "$@"; do
  llm_tree "$tree" "$OUT/$(basename "$(cd "$tree" && pwd)")" "$TYPES" "$MS"
done
