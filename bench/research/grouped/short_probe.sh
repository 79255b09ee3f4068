# Issue 20, short tiles: the time of full and of short tiles alone and beside each other, by
# `gemm run --groups` on lists of E equal problems of M rows, in three trees: this one (short
# tiles for problems of M <= half a tile), .device/rows (a copy of it whose branch in
# passes/lower/kernel.ts tests the tile's rows, M - m0, instead: an expert's last tile runs short
# too) and .device/base (`git archive 7ec139e`, before short tiles); a tree not there is skipped.
# Slow: ~60 s a run, most of it drawing 128 problems' inputs on the host. Run from the
# repo root on the device with DENO and OUT set.
set -u
list() { local s="" i; for ((i = 0; i < $1; i++)); do s+="M=$2,N=$3,K=$4;"; done; echo "${s%;}"; }
printf 'kernel experts grouped {\n  X: bf16[M, K] row\n  W: bf16[K, N] col\n  Y: bf16[M, N] row\n  Y[m, n] = X[m, k] * W[k, n]\n}\n' >/tmp/def.gemm
for shape in "128 128 1536 2048" "128 64 1536 2048" "128 192 1536 2048" "64 128 4096 7168" "64 64 4096 7168" "64 192 4096 7168"; do
  for tree in new rows base; do
    d=.; [ $tree != new ] && d=.device/$tree
    [ -d $d ] || continue
    ln -sfn "$PWD/node_modules" $d/node_modules 2>/dev/null
    set -- $shape
    printf '%-5s E=%s M=%s N=%s K=%s: ' $tree "$@"
    (cd $d && "$DENO" run --cached-only -A cli.ts run /tmp/def.gemm --groups "$(list "$@")" \
      --check none --iters 20 --warmup 10 2>&1 | grep -E "time|rror" | tr '\n' ' ')
    echo
  done
done
