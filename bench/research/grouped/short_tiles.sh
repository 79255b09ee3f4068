# Issue 20, short tiles (passes/short_tile.ts): the grouped GPU tests, then the prefill rows of
# bench/grouped.ts with this tree, then (same run) with a tree of the commit before short tiles
# unpacked in .device/base (`git archive <commit> | tar -x -C .device/base`). Run from the repo
# root on the device with DENO set and OUT a folder for the results.
set -u
B=${BASE_ROWS:-prefill E=128}
{ nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,temperature.gpu --format=csv,noheader
  git rev-parse --short HEAD 2>/dev/null; date; } >"$OUT/env.txt"
"$DENO" test --cached-only -A tests/gpu/grouped_test.ts >"$OUT/gpu-grouped-tests.txt" 2>&1
"$DENO" run --cached-only -A bench/grouped.ts prefill >"$OUT/new.txt" 2>&1
cp bench/results/grouped-*.md bench/results/grouped-*.json "$OUT/" 2>/dev/null
if [ -d .device/base ]; then
  ln -sfn "$PWD/node_modules" .device/base/node_modules
  (cd .device/base && "$DENO" run --cached-only -A bench/grouped.ts "$B" >"$OUT/base.txt" 2>&1)
fi
date >>"$OUT/env.txt"
