/**
 * `gemm-workspace`: the layout of the split-K workspace (see
 * {@link WorkspacePlan}): one record per output tile, a 128-byte header with
 * the arrival counter, then each split's partial accumulators. Kernels
 * without split-K get none.
 *
 * @module
 */

import type { GemmKernel, WorkspacePlan } from "../ir/gemm.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import { plannedShape } from "./mma.ts";
import { WORKSPACE_PARAM } from "../ir/kernel.ts";

/** The parts of a Stream-K tile's record: a shared-out tile spans at most two blocks' shares
 * (passes/lower/stream_k.ts). */
export const STREAM_K_PARTS = 2;

/** Bytes of a record's header: the u32 arrival counter, padded to a 128-byte line. */
const HEADER_BYTES = 128;

/**
 * The workspace layout of a split-K kernel.
 *
 * @param k The kernel (tile, warp and mma plans made, split_k above 1).
 * @returns The layout.
 */
export function workspacePlan(k: GemmKernel, parts = k.plan.tile!.splitK): WorkspacePlan {
  const wp = k.plan.warp!;
  const s = plannedShape(k);
  const accBytes = s.cType === "f64" ? 8 : 4;
  const regs = (wp.warp.m / s.m) * (wp.warp.n / s.n) * s.c.regs;
  const partialBytes = wp.threads * regs * accBytes;
  return {
    param: WORKSPACE_PARAM,
    headerBytes: HEADER_BYTES,
    accBytes,
    // 16-byte chunks (8 for f16 accumulators, whose MMA tile holds 8 bytes a thread).
    chunkBytes: Math.min(16, s.c.regs * accBytes),
    partialBytes,
    perTile: HEADER_BYTES + parts * partialBytes,
  };
}

/** The pass. */
export const workspacePass: GemmPass = {
  name: "gemm-workspace",
  title: "SplitKWorkspace",
  summary: "Lay out the split-K workspace: a header with the arrival counter, a partial per split",
  run(k: GemmKernel): GemmKernel {
    const splitK = k.plan.tile!.splitK;
    // Stream-K (passes/lower/stream_k.ts): a tile shared out has two parts.
    const streamK = k.plan.pipeline?.tma?.persistent?.streamK !== undefined;
    if (splitK === 1 && !streamK) return { ...k, plan: { ...k.plan, workspace: null } };
    if (k.params.some((q) => q.name === WORKSPACE_PARAM) || k.dims.includes(WORKSPACE_PARAM)) {
      scheduleError(
        k,
        "split_k",
        "E0212",
        `"split_k ${splitK}" adds a parameter named "${WORKSPACE_PARAM}": rename the kernel's "${WORKSPACE_PARAM}"`,
      );
    }
    const parts = streamK ? STREAM_K_PARTS : splitK;
    return { ...k, plan: { ...k.plan, workspace: workspacePlan(k, parts) } };
  },
};
