#!/usr/bin/env bash
# Issue 22, deep pipelines for skinny grids (bench/NOTES.md 73), in one device call: the llm
# table (f16, sm90, --pdl) from this tree and from BASE (the commit before the rule, carried in
# .devcarry), then sm90_deep.sh's variant rows. Everything is packed into OUT/all.tgz, one
# file, since the device returns only a few. Deno on PATH. Not part of the benchmark or of CI.
# Written 2026-12-06.
#
# Usage: bash bench/research/deep_ab.sh OUT MS BASE
#   VARIANTS=0: skip the variant rows (ROWS=2: sm90_deep.sh's second set); GPU_TEST=1: first
#   tests/gpu/skinny_test.ts's sm90 cases.
set -u
OUT="${1:?usage: deep_ab.sh OUT MS BASE}"
MS="${2:?usage: deep_ab.sh OUT MS BASE}"
BASE="${3:?usage: deep_ab.sh OUT MS BASE}"
W=/tmp/deep_ab
mkdir -p "$W" "$OUT"
if [ "${GPU_TEST:-0}" = 1 ]; then
  deno test --cached-only -A tests/gpu/skinny_test.ts --filter sm90 >"$W/gpu-skinny-test.txt" 2>&1
  echo "gpu skinny test (sm90): exit $?"; grep -E "passed|failed|FAILED" "$W/gpu-skinny-test.txt" | tail -8
fi
. bench/research/_gemm_run_rows.sh
llm_tree . "$W/new" f16 "$MS"
llm_tree "$BASE" "$W/$(basename "$(cd "$BASE" && pwd)")" f16 "$MS"
if [ "${VARIANTS:-1}" != 0 ]; then
  t0=$SECONDS
  bash bench/research/sm90_deep.sh "$W/variants" >"$W/variants.log" 2>&1
  echo "variants: ($((SECONDS - t0)) s)"
  cat "$W/variants/summary.txt"
fi
tar -czf "$OUT/all.tgz" -C "$W" .
