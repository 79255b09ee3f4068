/**
 * Hand-built kernel-IR programs that together use every operation, every
 * conversion, every memory width with every legal vector length, guards of
 * both polarities, nested loops and conditionals, and every row of the MMA
 * table. The PTX tests print and assemble them; they are ordinary kernels,
 * so the simulator and a GPU launcher can run them too (each writes its
 * results to its first tensor parameter, `out`, and never reads it).
 *
 * @module
 */

import type { Kernel } from "../../../ir/kernel.ts";
import type { Target } from "../../../ir/gemm.ts";
import { MMA_SHAPES } from "../../../ir/mma_table.ts";
import { registerClassKernel, registerOpsKernel } from "./register_kernels.ts";
import { memoryOpsKernel, mmaKernel, saxpyKernel } from "./memory_kernels.ts";
import { wgmmaKernels } from "./wgmma_kernels.ts";
import { tmaKernel } from "./tma_kernels.ts";
import { targetHas } from "../../../ir/target.ts";

export { registerClassKernel, registerOpsKernel } from "./register_kernels.ts";
export { memoryOpsKernel, mmaKernel, mmaKernelName, saxpyKernel } from "./memory_kernels.ts";

/**
 * Every test kernel: the two operation kernels and one kernel per MMA table row, and on a
 * target with wgmma one per row of `WGMMA_TEST_ROWS` and the TMA ring kernel.
 *
 * @param target The target.
 * @returns The kernels, with distinct names.
 */
export function allTestKernels(target: Target): Kernel[] {
  return [
    registerOpsKernel(target),
    registerClassKernel(target),
    memoryOpsKernel(target),
    saxpyKernel(target),
    ...MMA_SHAPES.map((r) => mmaKernel(r, target)),
    // sm90: the warpgroup MMA's operations (testdata/wgmma_kernels.ts).
    ...(targetHas(target, "wgmma") ? wgmmaKernels(target) : []),
    // sm90: mbarriers, TMA, setmaxnreg and named barriers (testdata/tma_kernels.ts).
    ...(targetHas(target, "tma") ? [tmaKernel(target)] : []),
  ];
}
