#!/usr/bin/env bash
# The GPU evidence of issues 6 and 7, in one call on the device machine:
# the fragment-layout probe, every example at a tile-multiple size and at an
# odd size (align-1 example at odd sizes) with --check sim, then the
# benchmark. Output under $OUT. Needs .devcarry/deno.gz and node_modules:
#   mkdir -p .devcarry && echo /.devcarry/ >> .git/info/exclude
#   gzip -c "$(npx -y deno@2.9.6 eval 'console.log(Deno.execPath())')" > .devcarry/deno.gz
#   deno cache mod.ts cli.ts bench/gpu_bench.ts   # fills node_modules with ohm-js
# then call the device tool with carry [".devcarry", "node_modules"] and
# `bash bench/research/gpu_evidence.sh` (SKIP_EXAMPLES=1 or SKIP_BENCH=1 to do less).
set -u
mkdir -p /tmp/denobin && gunzip -c .devcarry/deno.gz > /tmp/denobin/deno && chmod +x /tmp/denobin/deno
export PATH=/tmp/denobin:$PATH DENO_DIR=/tmp/denodir NO_COLOR=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; deno --version | head -1; } > $OUT/env.txt 2>&1
cat $OUT/env.txt
if [ "${SKIP_EXAMPLES:-}" = "" ]; then
  echo "== probe"; timeout 120 deno run --cached-only -A backends/cuda/probe.ts > $OUT/probe.txt 2>&1; tail -1 $OUT/probe.txt
  echo "== examples"
  for f in examples/*.gemm; do
    for size in M=1024,N=1024,K=1024,L=2 M=1000,N=1000,K=1152,L=3; do
      timeout 200 deno run --cached-only -A cli.ts run $f --size $size --check sim --iters 5 2>&1
      echo "exit $? $f $size"
    done
  done > $OUT/examples.txt
  timeout 200 deno run --cached-only -A cli.ts run examples/align1.gemm --size M=1001,N=999,K=1003 --check sim --iters 5 >> $OUT/examples.txt 2>&1
  echo "exit $? examples/align1.gemm M=1001,N=999,K=1003" >> $OUT/examples.txt
  grep -E "^exit|AGREES|MISMATCH|simulator|Error|error" $OUT/examples.txt | grep -v "^  reference" | cut -c1-160
fi
if [ "${SKIP_BENCH:-}" = "" ]; then
  echo "== bench"
  timeout 500 deno run --cached-only -A bench/gpu_bench.ts --out $OUT ${BENCH_ARGS:-} 2>&1 | tee $OUT/bench.txt
fi
