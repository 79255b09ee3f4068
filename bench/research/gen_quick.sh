#!/bin/bash
# Writes PTX and manifests of the benchmark kernels and the mma.sync peak
# kernels into the folder $1, for bench/research/gpu_quick.py.
set -euo pipefail
out=${1:-.gen}
mkdir -p "$out"
for f in bench/kernels/*.gemm; do
  n=bench_$(basename "$f" .gemm)
  deno run -A cli.ts compile "$f" --emit ptx -o "$out/$n.ptx"
  deno run -A cli.ts compile "$f" --emit json -o "$out/$n.json"
done
deno run -A bench/mma_peak.ts --variants > "$out/peak.ptx"
deno eval 'import { PEAK_SHAPES, peakKernel } from "./bench/mma_peak.ts"; import { MMA_SHAPES } from "./ir/mma_table.ts";
for (const [t, s] of Object.entries(PEAK_SHAPES)) { const k = peakKernel(s); const r = MMA_SHAPES.find((x) => x.name === s); console.log(t, k.name, r.m, r.n, r.k, 16); }
for (const a of [8, 32]) for (const t of ["f16", "tf32"]) { const s = PEAK_SHAPES[t]; const k = peakKernel(s, a); const r = MMA_SHAPES.find((x) => x.name === s); console.log(t + "_a" + a, k.name, r.m, r.n, r.k, a); }' > "$out/peak.json"
