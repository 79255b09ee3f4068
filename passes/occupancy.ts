/**
 * `gemm-occupancy`: how many blocks of the kernel an SM is built to hold at
 * once (the kernel IR's `minBlocksPerSm`, PTX `.minnctapersm`). gemm-tile
 * counts on it before the shared memory and registers are known
 * (passes/tile_sm80.ts `expectedBlocksPerSm`); this pass decides it from the complete
 * tile, warp and pipeline plans.
 *
 * @module
 */

import type { GemmKernel, OccupancyPlan, OperandSmem } from "../ir/gemm.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import type { GemmPass } from "./pass.ts";
import { blocksFit, targetInfo } from "../ir/target.ts";

/** Registers a thread of the SIMT kernels that take two blocks an SM needs
 * (measured: ptxas spilled the kernels listed at {@link blocksPerSm} under it). */
const SIMT_TWO_BLOCK_REGS = 128;

/**
 * Blocks per SM the kernel is built for. SIMT kernels of at most 64
 * accumulators a thread (CUTLASS's sgemm tile, 8x8 a lane) fit in
 * the target's `registersPerSm` / (2 * threads) registers (65536: up to 256
 * threads at 128 a thread): two blocks share
 * an SM where their shared memory fits twice, and hide each other's
 * barriers (+3-4%, bench/NOTES.md 39). At 128 registers ptxas spilled
 * (tests/simt_test.ts) larger micro-tiles (a 64x64 warp tile, 1.9 KB),
 * tensors aligned to less than 16 bytes (8-60 bytes) and a transposed B
 * copied by 4-byte cp.async with a bias (16-48 bytes), and split-K over
 * more than 4 splits (the last split's reduction, 8-12 bytes at split 8):
 * those, and the tensor-core kernels, keep one block and up to 255
 * registers.
 *
 * @param k The kernel (tile, warp and pipeline plans made).
 * @returns 1 or 2.
 */
export function blocksPerSm(k: GemmKernel): 1 | 2 {
  if (k.math.mode !== "simt") return 1;
  const pipe = k.plan.pipeline!;
  const w = k.plan.warp!.warp;
  const threads = k.plan.warp!.threads;
  const aligned = k.params.every((p) =>
    p.kind !== "tensor" || p.align * DTYPE_INFO[p.dtype].bits >= 128
  );
  const byCopies = (o: OperandSmem) => o.transpose === true && o.viaRegisters !== true;
  // Two blocks' threads leave each SIMT_TWO_BLOCK_REGS registers (65536 / 512).
  const regsFit = targetInfo(k.target).registersPerSm / (2 * threads) >= SIMT_TWO_BLOCK_REGS;
  const fits = regsFit && blocksFit(k.target, 2, threads, pipe.smemBytes) &&
    (w.m / 8) * (w.n / 4) <= 64 && aligned && !byCopies(pipe.a) && !byCopies(pipe.b) &&
    k.plan.tile!.splitK <= 4;
  return fits ? 2 : 1;
}

/** The pass. */
export const occupancyPass: GemmPass = {
  name: "gemm-occupancy",
  title: "Occupancy",
  summary: "Decide the blocks per SM the kernel is built for (.minnctapersm)",
  run(k: GemmKernel): GemmKernel {
    const occupancy: OccupancyPlan = { blocksPerSm: blocksPerSm(k) };
    return { ...k, plan: { ...k.plan, occupancy } };
  },
};
