# The 8-bit skinny rule's device call (2026-12-03): the skinny GPU tests (s8 cases included),
# then the s8 rows of the LLM benchmark. Run from the repo root with DENO and OUT set.
set -u
{ nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,temperature.gpu --format=csv,noheader
  date; } >"$OUT/env.txt"
"$DENO" test --cached-only -A tests/gpu/skinny_test.ts >"$OUT/gpu-skinny.txt" 2>&1
"$DENO" run --cached-only -A bench/llm.ts --types s8 --out "$OUT" >"$OUT/llm-s8.log" 2>&1
date >>"$OUT/env.txt"
