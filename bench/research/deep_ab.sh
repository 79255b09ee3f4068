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
for tree in . "$BASE"; do
  name=$(basename "$(cd "$tree" && pwd)")
  [ "$tree" = . ] && name=new
  [ -e "$tree/node_modules" ] || ln -s "$PWD/node_modules" "$tree/node_modules"
  t0=$SECONDS
  (cd "$tree" && deno run --cached-only -A bench/main.ts --no-sim --no-compile --gpu --shapes llm \
    --target sm90 --types f16 --m "$MS" --pdl --out "$W/$name") >"$W/$name.log" 2>&1
  echo "llm $name: exit $? ($((SECONDS - t0)) s)"
  grep -E '^f16 ' "$W/$name.log" | cut -c1-300
done
t0=$SECONDS
[ "${VARIANTS:-1}" = 0 ] || bash bench/research/sm90_deep.sh "$W/variants" >"$W/variants.log" 2>&1
echo "variants: ($((SECONDS - t0)) s)"
cat "$W/variants/summary.txt"
tar -czf "$OUT/all.tgz" -C "$W" .
