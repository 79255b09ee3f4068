/**
 * What the C and Python artefacts share about grouped kernels (DESIGN §6.2):
 * the launch contract of one problem, from the manifest's `group.problem`.
 *
 * @module
 */

import type { KernelManifest } from "../ptx/manifest.ts";
import { type LaunchContract, launchContract } from "../ptx/contract.ts";

/**
 * The launch contract of one problem of a grouped kernel: its tensors, dims and
 * strides as the ordinary kernel of the same form would take them, and the
 * kernel's scalars (shared by every problem; `param` their index in the grouped
 * kernel's ABI, after the table and the count). Throws for an ordinary kernel.
 *
 * @param m The grouped kernel's manifest.
 * @returns The contract of one problem.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { problemContract } from "./_group.ts";
 * const ck = compile("kernel e grouped { X: bf16[M, K] row\n W: bf16[K, N] col\n" +
 *   " Y: bf16[M, N] row\n alpha: f32 = 1.0\n Y[m, n] = alpha * X[m, k] * W[k, n] }").kernels[0]!;
 * const c = problemContract(ck.manifest);
 * deepEqual(c.tensors.map((t) => t.name), ["X", "W", "Y"]);
 * deepEqual(c.scalars.map((s) => [s.name, s.param]), [["alpha", 2]]);
 * ```
 */
export function problemContract(m: KernelManifest): LaunchContract {
  if (m.group === undefined) throw new Error(`Kernel "${m.name}" is not grouped`);
  const scalars = m.params.filter((p) => p.kind === "scalar");
  const c = launchContract({ ...m, params: [...m.group.problem, ...scalars] });
  return {
    ...c,
    scalars: c.scalars.map((s) => ({
      ...s,
      param: m.params.findIndex((p) => p.name === s.name),
    })),
  };
}
