#!/bin/bash
# Writes schedule variants of the benchmark kernels (PTX + manifest) into $1
# for bench/research/gpu_quick.py --variants. Each line: TYPE TAG SCHEDULE-LINES (';' separated).
set -euo pipefail
out=${1:-.gen}
mkdir -p "$out"
while read -r typ tag sched; do
  [ -z "$typ" ] && continue
  name="var_${typ}_${tag}"
  body=$(sed "s/kernel bench_$typ/kernel $name/" "bench/kernels/$typ.gemm" | sed '$d')
  { echo "$body"; echo "  schedule {"; echo "$sched" | tr ';' '\n' | sed 's/^ */    /'; echo "  }"; echo "}"; } > "$out/$name.gemm"
  if deno run --cached-only -A cli.ts compile "$out/$name.gemm" --emit ptx -o "$out/$name.ptx" 2> "$out/$name.err"; then
    deno run --cached-only -A cli.ts compile "$out/$name.gemm" --emit json -o "$out/$name.json"
  else
    echo "skip $name: $(head -1 "$out/$name.err")"
  fi
done < "${2:-bench/research/variants.txt}"
