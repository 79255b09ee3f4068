#!/usr/bin/env bash
# Issue 22, programmatic dependent launch (bench/NOTES.md 71): the GPU test of PDL chains, the
# llm table on sm90 with ours timed again as dependent launches (--pdl), then the sm90 GPU tests
# of the kernels that now carry griddepcontrol. One device call; Deno on PATH (run with
# --cached-only there). Not part of the benchmark or of CI. Written 2026-12-05.
#
# Usage: bash bench/research/pdl.sh OUT [TYPES] [MS]
set -u
OUT="${1:?usage: pdl.sh OUT [TYPES] [MS]}"
TYPES="${2:-f16}"
MS="${3:-1,16,64,128,256}"
mkdir -p "$OUT"
. bench/research/_gemm_run_rows.sh
card_state
t0=$SECONDS
deno test --cached-only -A tests/gpu/pdl_test.ts >"$OUT/pdl-test.txt" 2>&1
echo "pdl_test: exit $? ($((SECONDS - t0)) s)"; tail -n 4 "$OUT/pdl-test.txt"
t0=$SECONDS
deno run --cached-only -A bench/main.ts --no-sim --no-compile --gpu --shapes llm --target sm90 \
  --types "$TYPES" --m "$MS" --pdl --out "$OUT" >"$OUT/llm.log" 2>&1
echo "llm: exit $? ($((SECONDS - t0)) s)"
grep -E '^\| (f16|bf16|s8) ' "$OUT"/llm-*.md | cut -c1-400
