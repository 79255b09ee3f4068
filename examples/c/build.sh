#!/bin/sh
# Builds the C example: compiles kernels.gemm into one C file with gemmc
# (`gemm compile --emit c`), then main.c against it and the CUDA driver.
#   DENO, DENO_FLAGS  the deno to run and flags for `deno run` (e.g. --cached-only)
#   CC                the C compiler (default gcc)
#   CUDA_HOME         the toolkit, for cuda.h (default: beside nvcc, else /usr/local/cuda)
#   CUDA_LIBS         what to link for the driver (default: found, see below)
#   OUT               the build directory (default examples/c/build)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-$HERE/build}
mkdir -p "$OUT"

# The C file, from the repository root (where deno.json is).
(cd "$ROOT" && ${DENO:-deno} run ${DENO_FLAGS:-} -A cli.ts compile --emit c \
  -o "$OUT/gemmc_kernels.h" "$HERE/kernels.gemm")

# cuda.h: $CUDA_HOME, the toolkit of nvcc (following a wrapper script's exec), /usr/local/cuda.
find_cuda() {
  if [ -n "${CUDA_HOME:-}" ] && [ -f "$CUDA_HOME/include/cuda.h" ]; then echo "$CUDA_HOME"; return; fi
  nvcc=$(command -v nvcc 2>/dev/null || true)
  if [ -n "$nvcc" ]; then
    real=$(readlink -f "$nvcc")
    dir=$(dirname "$(dirname "$real")")
    if [ -f "$dir/include/cuda.h" ]; then echo "$dir"; return; fi
    wrapped=$(sed -n 's/^exec \([^ ]*\)\/bin\/nvcc.*/\1/p' "$real" 2>/dev/null | head -n 1)
    if [ -n "$wrapped" ] && [ -f "$wrapped/include/cuda.h" ]; then echo "$wrapped"; return; fi
  fi
  echo /usr/local/cuda
}
CUDA=$(find_cuda)

# libcuda: $CUDA_LIBS, else the driver's libcuda.so, else libcuda.so.1 by name, else the stub.
LIBS=${CUDA_LIBS:--lcuda}
if [ -z "${CUDA_LIBS:-}" ] && ! ${CC:-gcc} -xc - -o /dev/null -lcuda 2>/dev/null <<'C'
int main(void) { return 0; }
C
then
  so1=$(ldconfig -p 2>/dev/null | sed -n 's/.*libcuda\.so\.1 .*=> \(.*\)/\1/p' | head -n 1)
  if [ -n "$so1" ]; then LIBS="$so1"
  else LIBS="-L$CUDA/lib64/stubs -L$CUDA/targets/x86_64-linux/lib/stubs -lcuda"; fi
fi

${CC:-gcc} -std=c11 -O2 -Wall -Wextra -Werror -I"$OUT" -I"$CUDA/include" "$HERE/main.c" \
  -o "$OUT/gemm_example" $LIBS -lm
echo "built $OUT/gemm_example"
