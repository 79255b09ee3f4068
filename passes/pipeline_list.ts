/**
 * The whole compilation pipeline, in order: one readable list. GEMM IR
 * passes first (each verified with the GEMM IR verifier), then the lowering
 * to the kernel IR (verified with the kernel-IR verifier).
 *
 * @module
 */

import type { GemmKernel } from "../ir/gemm.ts";
import type { Kernel } from "../ir/kernel.ts";
import { verifyGemm } from "../ir/verify_gemm.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { printKernel } from "../ir/print_kernel.ts";
import { dumpHeader, type GemmPass } from "./pass.ts";
import { PLANNING_PASSES } from "./planning.ts";
import { shortTilePass } from "./short_tile.ts";
import { lowerToKernel } from "./lower/mod.ts";

/**
 * The GEMM IR passes, in order.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { GEMM_PASSES } from "./pipeline_list.ts";
 * equal(GEMM_PASSES[0]?.name, "gemm-tile");
 * ```
 */
export const GEMM_PASSES: readonly GemmPass[] = Object.freeze([...PLANNING_PASSES, shortTilePass]);

/** The lowering's name and title, as `--dump-after` and dumps show them. */
export const LOWER_PASS = Object.freeze({
  name: "lower-kernel",
  title: "LowerToKernelIR",
  summary: "Lower the planned GEMM to the thread-level kernel IR",
});

/**
 * Every pass name, in pipeline order.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { PASS_NAMES } from "./pipeline_list.ts";
 * equal(PASS_NAMES.at(-1), "lower-kernel");
 * ```
 */
export const PASS_NAMES: readonly string[] = Object.freeze([
  ...GEMM_PASSES.map((p) => p.name),
  LOWER_PASS.name,
]);

/** Receives the IR text after a pass. */
export type DumpHook = (passName: string, text: string) => void;

/** What {@link runPipeline} returns. */
export interface PipelineResult {
  /** The planned GEMM IR (every pass's decisions filled in). */
  gemm: GemmKernel;
  /** The kernel IR lowered from it. */
  kernel: Kernel;
}

/**
 * Runs every pass on a checked GEMM IR kernel, verifying after each.
 *
 * @param k The checked kernel.
 * @param dump Called after each pass with the dump (header + IR text).
 * @returns The planned GEMM IR and the kernel IR.
 * @throws DiagnosticError for schedules that cannot be honoured.
 * @example
 * ```ts
 * import { deepEqual, ok } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { PASS_NAMES, runPipeline } from "./pipeline_list.ts";
 * const r = check("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * const ran: string[] = [];
 * const { gemm, kernel } = runPipeline(r.kernels[0]!, (pass) => ran.push(pass));
 * deepEqual(ran, PASS_NAMES); // every GEMM pass, then the lowering
 * ok(gemm.plan.tile !== undefined && kernel.threads > 0);
 * ```
 */
export function runPipeline(k: GemmKernel, dump?: DumpHook): PipelineResult {
  let cur = k;
  for (const p of GEMM_PASSES) {
    cur = p.run(cur);
    verifyGemm(cur);
    dump?.(p.name, `${dumpHeader(p.title, p.name)}\n${printGemm(cur)}`);
  }
  const kernel = lowerToKernel(cur);
  verifyKernel(kernel);
  dump?.(
    LOWER_PASS.name,
    `${dumpHeader(LOWER_PASS.title, LOWER_PASS.name)}\n${printKernel(kernel)}`,
  );
  return { gemm: cur, kernel };
}
