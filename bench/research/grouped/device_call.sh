# One device call of 2026-12-03 (issue 20 short tiles; issue 22 skinny variants): the grouped GPU
# tests, the prefill rows of bench/grouped.ts with this tree and with .device/base (the tree
# before short tiles) in the same run, then the skinny sweeps of .device/gen3 and .device/gens8
# (bench/research/llm/gen.ts with variants3.txt, and TYPES=s8 with variants_s8.txt). Run from
# the repo root on the device with DENO and OUT set; each step writes its own file in OUT.
set -u
{ nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,temperature.gpu --format=csv,noheader
  date; } >"$OUT/env.txt"
"$DENO" test --cached-only -A tests/gpu/grouped_test.ts >"$OUT/gpu-grouped-tests.txt" 2>&1
"$DENO" run --cached-only -A bench/grouped.ts prefill >"$OUT/grouped-new.txt" 2>&1
ln -sfn "$PWD/node_modules" .device/base/node_modules
(cd .device/base && "$DENO" run --cached-only -A bench/grouped.ts prefill >"$OUT/grouped-base.txt" 2>&1)
date >>"$OUT/env.txt"
python3 bench/research/llm/sweep.py .device/gen3 128 >"$OUT/sweep3.txt" 2>&1
date >>"$OUT/env.txt"
python3 bench/research/llm/sweep.py .device/gens8 128 >"$OUT/sweep-s8.txt" 2>&1
date >>"$OUT/env.txt"
