/**
 * The split-K workspace (a kernel compiled with `split_k` > 1 takes one more
 * `.u64` parameter, last: see passes/lower/split_k.ts `splitKReduce`). Each output
 * tile has a record of `gridPlan.workspacePerTile` bytes: an arrival counter
 * and the splits' partial accumulators. A launcher allocates
 * {@link workspaceBytes} bytes, zeroes them once, and may reuse them for every
 * later launch of the kernel at those sizes (each launch leaves the counters at
 * zero) but not for two launches running at the same time.
 *
 * @module
 */

import { type Kernel, workspaceBytes, workspaceParams } from "../ir/kernel.ts";

export { workspaceBytes };

/**
 * Zeroed host buffers for a kernel's workspace parameters, by name (for the
 * simulator, or to upload).
 *
 * @param kernel The kernel IR.
 * @param sizes Runtime sizes by dimension name.
 * @returns Buffers by parameter name (empty without split-K).
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { workspaceArgs } from "./workspace.ts";
 * const src = `kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n]  schedule { split_k 2 } }`;
 * const k = compile(src).kernels[0]!.kernel;
 * ok(workspaceArgs(k, { M: 128, N: 256, K: 64 }).get("workspace")!.length > 0);
 * ```
 */
export function workspaceArgs(
  kernel: Kernel,
  sizes: Readonly<Record<string, number>>,
): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  for (const n of workspaceParams(kernel)) {
    out.set(n, new Uint8Array(workspaceBytes(kernel.grid, sizes)));
  }
  return out;
}
