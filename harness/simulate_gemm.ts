/**
 * Simulates a compiled GEMM on random inputs and checks it: random inputs
 * (never zeros), a poisoned output, the kernel IR executed by the simulator
 * over the whole grid, then the output compared with the reference GEMM.
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import { gridFor } from "../ir/kernel.ts";
import {
  gridBlocks,
  type RoleSchedule,
  type SimArg,
  type SimResult,
  simulate,
} from "../backends/sim/mod.ts";
import { type LaunchArgs, randomArgs } from "./inputs.ts";
import { referenceGemm } from "./reference.ts";
import { compareOutput, type Comparison, gapWrites } from "./compare.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { alignmentViolations, resolveSizes } from "./sizes.ts";
import { type DimRef, tensorParam } from "../ir/gemm.ts";
import { dimValue, tensorShape } from "./tensor.ts";
import { workspaceArgs } from "./workspace.ts";
import { LIMITS } from "../dsl/limits.ts";

/** Options of {@link simulateGemm}. */
export interface SimulateOptions {
  /** The seed of the random inputs (and of random scalars). */
  readonly seed?: number;
  /** Scalar values (default: random). */
  readonly scalars?: Readonly<Record<string, number>>;
  /** Check shared-memory hazards (default true). */
  readonly hazards?: boolean;
  /** The most work to take on (see {@link simulationWork}; default {@link SIM_WORK_LIMIT}). */
  readonly maxWork?: number;
  /** The order the blocks run in: launch order (default), or its reverse (which changes the
   * block that arrives last at a split-K or Stream-K tile: the result must not change). */
  readonly blockOrder?: "launch" | "reverse";
  /** The order a warp-specialized block's roles take turns in (default: the simulator's). */
  readonly schedule?: RoleSchedule;
}

/**
 * The default bound on {@link simulationWork} (dsl/limits.ts `LIMITS.simulationWork`): 2^31, some 20 s of simulation
 * without the hazard checker (about 10^8 multiply-adds a second) and the
 * inputs' few gigabytes at most. Above it the simulation is refused before
 * anything is allocated.
 */
export const SIM_WORK_LIMIT: number = LIMITS.simulationWork.value;

/**
 * The work of simulating a kernel at resolved sizes: its multiply-adds
 * (L·M·N·K) plus the elements of its tensors (what is allocated and
 * drawn, which dominates when K is small).
 *
 * @param ck The compiled kernel.
 * @param sizes Sizes by the kernel's dimension names.
 * @returns The work, in multiply-adds and elements.
 */
export function simulationWork(
  ck: CompiledKernel,
  sizes: Readonly<Record<string, number>>,
): number {
  const p = ck.gemm.problem;
  const dim = (d: DimRef | null) => d === null ? 1 : dimValue(d, sizes);
  let work = dim(p.batch) * dim(p.m) * dim(p.n) * dim(p.k);
  for (const t of ck.gemm.params) {
    if (t.kind === "tensor") work += tensorShape(t, sizes).elements;
  }
  return work;
}

/** The result of {@link simulateGemm}. */
export interface SimulateReport {
  /** The kernel's name. */
  readonly kernel: string;
  /** The value of every symbolic dimension. */
  readonly sizes: Readonly<Record<string, number>>;
  /** The grid `[x, y, z]` launched, in blocks. */
  readonly grid: readonly [number, number, number];
  /** Wall time of the simulation, in seconds. */
  readonly seconds: number;
  /** The simulator's result: hazards and statistics. */
  readonly sim: SimResult;
  /** The output compared with the reference GEMM. */
  readonly comparison: Comparison;
  /** Elements of a strided D's gaps that the kernel wrote (must be 0). */
  readonly gapWrites: number;
  /** Agreement with the reference, no hazard and no write outside D's view. */
  readonly ok: boolean;
  /** The inputs the kernel ran on. */
  readonly args: LaunchArgs;
  /** D's bytes as the simulator wrote them. */
  readonly output: Uint8Array;
}

/**
 * Builds the simulator's argument object from launch arguments.
 *
 * @param args The launch arguments.
 * @returns Arguments by parameter name.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { randomArgs } from "./inputs.ts";
 * import { simArgs } from "./simulate_gemm.ts";
 * const k = check("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }")
 *   .kernels[0]!;
 * const a = simArgs(randomArgs(k, { M: 16, N: 8, K: 32 }, 1));
 * equal(a.N, 8);
 * ok(typeof a.A === "object" && a.A.bytes.length === 16 * 32 * 2);
 * ```
 */
export function simArgs(args: LaunchArgs): Record<string, SimArg> {
  const out: Record<string, SimArg> = {};
  for (const [n, b] of args.tensors) out[n] = { bytes: b };
  for (const [n, v] of args.scalars) out[n] = v;
  for (const [n, v] of Object.entries(args.sizes)) out[n] = v;
  return out;
}

/**
 * Simulates one compiled kernel at the given sizes and compares with the reference.
 *
 * @param ck The compiled kernel.
 * @param given Sizes by dimension name or role letter (M, N, K, L).
 * @param options Seed, scalars, hazard checking.
 * @returns The report.
 * @throws {Error} For sizes out of range or misaligned, or work over `maxWork`, before anything is allocated.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { simulateGemm } from "./simulate_gemm.ts";
 * const r = compile("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * const rep = simulateGemm(r.kernels[0]!, { M: 40, N: 24, K: 64 }, { seed: 3 });
 * ok(rep.ok);
 * equal(rep.comparison.elements, 40 * 24);
 * equal(rep.sim.hazardCount, 0);
 * ```
 */
export function simulateGemm(
  ck: CompiledKernel,
  given: Readonly<Record<string, number>>,
  options: SimulateOptions = {},
): SimulateReport {
  const sizes = resolveSizes(ck.gemm, given);
  const bad = alignmentViolations(ck.gemm, sizes);
  if (bad.length > 0) throw new Error(bad.join("; "));
  const work = simulationWork(ck, sizes);
  const maxWork = options.maxWork ?? SIM_WORK_LIMIT;
  if (!(maxWork >= 0)) throw new TypeError(`Option maxWork must be a number >= 0, got ${maxWork}`);
  if (work > maxWork) {
    throw new Error(
      `Simulation too large: ${work} multiply-adds and elements exceed the limit of ${maxWork} ` +
        "(raise it with --max-work)",
    );
  }
  const args = randomArgs(ck.gemm, sizes, options.seed ?? 1, options.scalars ?? {});
  const grid = gridFor(ck.kernel.grid, sizes);
  const t0 = performance.now();
  const ws: Record<string, SimArg> = {};
  for (const [n, bytes] of workspaceArgs(ck.kernel, sizes)) ws[n] = { bytes };
  const sim = simulate(ck.kernel, { grid, args: { ...simArgs(args), ...ws } }, {
    hazards: options.hazards ?? true,
    ...(options.blockOrder === "reverse" ? { blocks: gridBlocks(grid).reverse() } : {}),
    ...(options.schedule === undefined ? {} : { schedule: options.schedule }),
  });
  const seconds = (performance.now() - t0) / 1000;
  const ref = referenceGemm(ck.gemm, args);
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  const output = args.tensors.get(d.name)!;
  const comparison = compareOutput(output, d.dtype, ref);
  // A strided D's gaps must still hold the poison (DESIGN §6.1).
  const gaps = gapWrites(output, d.dtype, ref, DTYPE_INFO[d.dtype].float ? 0xff : 0x5a);
  return {
    kernel: ck.name,
    sizes,
    grid,
    seconds,
    sim,
    comparison,
    gapWrites: gaps,
    ok: comparison.ok && sim.hazardCount === 0 && gaps === 0,
    args,
    output,
  };
}
