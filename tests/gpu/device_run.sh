#!/usr/bin/env bash
# Everything that needs a GPU, in one command for a device call:
# the GPU tests, the launch example, the C and Python examples, the launch-overhead
# benchmark, the strided-against-dense benchmark, the grouped (MoE) benchmark and the 2:4 sparse benchmark. Logs go to $OUT (default out/device); the last lines are a summary.
#   DENO  the deno to run (default deno); it runs with --cached-only (no network there).
#   STEPS which steps to run (default: all): tests launch c py overhead strided grouped sparse
set -uo pipefail
cd "$(dirname "$0")/../.."
DENO=${DENO:-deno}
OUT=${OUT:-out/device}
STEPS=${STEPS:-tests launch c py overhead strided grouped sparse}
mkdir -p "$OUT"
summary=()
step() {
  local name=$1
  shift
  echo "==> $name: $*"
  local t0=$SECONDS
  "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  tail -n 25 "$OUT/$name.txt"
  summary+=("$name: exit $rc ($((SECONDS - t0)) s)")
}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv; git rev-parse --short HEAD 2>/dev/null; date -u; } >"$OUT/env.txt" 2>&1
for s in $STEPS; do
  case $s in
  tests) step gpu-tests "$DENO" test --cached-only -A tests/gpu/ ;;
  launch) step launch-example sh -c "$DENO run --cached-only -A examples/launch.ts && \
    $DENO run --cached-only -A examples/sparse_launch.ts" ;;
  c) step c-example env DENO="$DENO" DENO_FLAGS=--cached-only OUT=/tmp/gemmc_c sh -c \
    'sh examples/c/build.sh && /tmp/gemmc_c/gemm_example' ;;
  py) step py-example sh -c "mkdir -p /tmp/gemmc_py && for k in hgemm s8_gemm splitk strided; do \
    $DENO run --cached-only -A cli.ts compile --emit py -o /tmp/gemmc_py/\$k.py examples/\$k.gemm || exit 1; done && \
    $DENO run --cached-only -A cli.ts compile --emit py -o /tmp/gemmc_py/grouped.py examples/python/grouped.gemm && \
    python3 examples/python/gemm_torch.py /tmp/gemmc_py --backend cuda-python && \
    python3 examples/python/gemm_torch.py /tmp/gemmc_py --backend cupy" ;;
  overhead) step launch-overhead "$DENO" run --cached-only -A bench/main.ts --no-sim --no-compile --launch ;;
  strided) step strided-bench "$DENO" run --cached-only -A bench/main.ts --no-sim --no-compile --strided ;;
  grouped) step grouped-bench "$DENO" run --cached-only -A bench/main.ts --no-sim --no-compile --grouped ;;
  sparse) step sparse-bench "$DENO" run --cached-only -A bench/main.ts --no-sim --no-compile --sparse ;;
  esac
done
cat "$OUT/env.txt"
printf '%s\n' "${summary[@]}"
