#!/usr/bin/env bash
# Where the skinny rows at N = K = 4096 lose (issue 22, bench/NOTES.md 73): Nsight Compute's
# speed-of-light and memory sections (DRAM, L2, L1 throughput, bytes) for our sm90 --tune kernel
# and for cuBLAS's, one launch each after warm-up, M = 16, 64, 128, 256; and cuBLAS's kernel
# names (torch.profiler) at those shapes. Not part of the benchmark or of CI. Written 2026-12-06.
#
# Usage: bash bench/research/skinny_ncu.sh OUT [SHAPES]   (Deno on PATH, a GPU, ncu)
set -u
. bench/research/_gemm_run_rows.sh
OUT="${1:?usage: skinny_ncu.sh OUT [SHAPES]}"
SHAPES="${2:-16x4096x4096 64x4096x4096 128x4096x4096 256x4096x4096 128x14336x4096}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv | tee "$OUT/smi.txt"
NCU=(ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis
  --section LaunchStats --section Occupancy
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sectors_op_read.sum)
for s in $SHAPES; do
  IFS=x read -r M N K <<<"$s"
  timeout 120 "${NCU[@]}" -k regex:bench_ --launch-skip 2 --launch-count 1 \
    deno run --cached-only -A cli.ts run bench/kernels/f16.gemm --size "M=$M,N=$N,K=$K" \
    --target sm90 --tune --iters 2 --warmup 1 >"$OUT/ours_$s.txt" 2>&1 || echo "ours $s rc $?"
  ncu_cublas_f16 "$OUT/cublas_$s.txt" "$M" "$N" "$K" "${NCU[@]}" || echo "cublas $s rc $?"
  for f in ours cublas; do
    echo "== $f $s"
    grep -E "^  [a-zA-Z_]+.*\(|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Memory Throughput|Compute \(SM\) Throughput|dram__bytes_read|lts__t_bytes|lts__t_sectors_op_read|Grid Size|Block Size|Cluster Size|Registers Per|Shared Memory Config|Dynamic Shared|Achieved Occupancy|Max Bandwidth|L2 Hit|Mem Busy|Mem Pipes" "$OUT/${f}_$s.txt" | head -40
  done | tee -a "$OUT/summary.txt"
done
echo done
