/**
 * Simulates a grouped kernel (DESIGN §6.2) over a list of problems and checks
 * every one: each problem gets its own random inputs and poisoned output (as an
 * ordinary launch of the kernel's form would), the table is built from the
 * problems, the kernel runs on a persistent grid of a few blocks (so each block
 * takes tiles of several problems), and each problem's output is compared with
 * the reference GEMM, its gaps checked for stray writes.
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import { groupedGrid, problemTiles } from "../ir/kernel.ts";
import { type SimBuffer, simBufferAddress, type SimResult, simulate } from "../backends/sim/mod.ts";
import { groupTable } from "../backends/ptx/group_table.ts";
import { GROUP_PARAMS, tensorParam } from "../ir/gemm.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { type LaunchArgs, randomArgs } from "./inputs.ts";
import { referenceGemm } from "./reference.ts";
import { compareOutput, type Comparison, gapWrites } from "./compare.ts";
import { alignmentViolations, resolveSizes } from "./sizes.ts";
import { SIM_WORK_LIMIT, type SimulateOptions, simulationWork } from "./simulate_gemm.ts";

/** Options of {@link simulateGrouped}. */
export interface GroupedSimulateOptions extends SimulateOptions {
  /** Blocks of the persistent grid (default 3: each block takes tiles of several problems). */
  readonly blocks?: number;
}

/** One problem's result. */
export interface ProblemReport {
  /** The problem's sizes (dims and strides). */
  readonly sizes: Readonly<Record<string, number>>;
  /** Its output tiles. */
  readonly tiles: number;
  /** Its output compared with the reference. */
  readonly comparison: Comparison;
  /** Elements of a strided D's gaps that the kernel wrote (must be 0). */
  readonly gapWrites: number;
  /** Agreement and no stray write. */
  readonly ok: boolean;
  /** Its inputs. */
  readonly args: LaunchArgs;
  /** Its D's bytes as the simulator wrote them. */
  readonly output: Uint8Array;
}

/** The result of {@link simulateGrouped}. */
export interface GroupedReport {
  /** The kernel's name. */
  readonly kernel: string;
  /** The persistent grid launched. */
  readonly grid: readonly [number, number, number];
  /** The output tiles of every problem. */
  readonly totalTiles: number;
  /** Wall time of the simulation, in seconds. */
  readonly seconds: number;
  /** The simulator's result: hazards and statistics. */
  readonly sim: SimResult;
  /** Each problem's result, in order. */
  readonly problems: readonly ProblemReport[];
  /** Every problem agrees, and no hazard. */
  readonly ok: boolean;
}

/**
 * Simulates one grouped kernel over a list of problems and compares each with the reference.
 *
 * @param ck The compiled kernel (grouped).
 * @param given Each problem's sizes, by dimension name or role letter (M, N, K).
 * @param options Seed, scalars (shared by every problem), hazard checking, blocks.
 * @returns The report.
 * @throws {Error} For an ordinary kernel, sizes out of range or misaligned, or work over `maxWork`.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { simulateGrouped } from "./simulate_grouped.ts";
 * const src = "kernel e grouped { X: f16[M, K] row\n W: f16[K, N] col\n Y: f32[M, N] row\n" +
 *   " Y[m, n] = X[m, k] * W[k, n]\n schedule { threadblock 32x32x32\n warp 32x32x32 } }";
 * const r = simulateGrouped(compile(src).kernels[0]!,
 *   [{ M: 40, N: 8, K: 32 }, { M: 0, N: 8, K: 32 }, { M: 7, N: 40, K: 16 }], { seed: 2 });
 * ok(r.ok);
 * equal(r.totalTiles, 2 + 0 + 2);
 * equal(r.problems[1]!.comparison.elements, 0);
 * ```
 */
export function simulateGrouped(
  ck: CompiledKernel,
  given: readonly Readonly<Record<string, number>>[],
  options: GroupedSimulateOptions = {},
): GroupedReport {
  const layout = ck.kernel.group;
  if (layout === undefined) {
    throw new Error(`Kernel "${ck.name}" is not grouped: simulate it with --size, not --groups`);
  }
  const all = given.map((g, i) => {
    const sizes = resolveSizes(ck.gemm, g);
    const bad = alignmentViolations(ck.gemm, sizes);
    if (bad.length > 0) throw new Error(`Problem ${i}: ${bad.join("; ")}`);
    return sizes;
  });
  const work = all.reduce((w, s) => w + simulationWork(ck, s), 0);
  const maxWork = options.maxWork ?? SIM_WORK_LIMIT;
  if (work > maxWork) {
    throw new Error(
      `Simulation too large: ${work} multiply-adds and elements exceed the limit of ${maxWork} ` +
        "(raise it with --max-work)",
    );
  }
  // Scalars are shared: the first problem draws them, the others take them.
  const seed = options.seed ?? 1;
  const args: LaunchArgs[] = [];
  for (const [i, sizes] of all.entries()) {
    const scalars = i === 0 ? options.scalars ?? {} : Object.fromEntries(args[0]!.scalars);
    args.push(randomArgs(ck.gemm, sizes, seed + 7919 * i, scalars));
  }
  const buffers: SimBuffer[] = [];
  const problems = args.map((a, i) => {
    const addresses: Record<string, number> = {};
    for (const [name, bytes] of a.tensors) {
      addresses[name] = simBufferAddress(ck.kernel, buffers.length);
      buffers.push({ bytes, name: `problem ${i}: ${name}` });
    }
    return { sizes: a.sizes, addresses };
  });
  const table = groupTable(layout, ck.kernel.grid, problems);
  const grid = groupedGrid(table.totalTiles, options.blocks ?? 3);
  const launchArgs: Record<string, { bytes: Uint8Array } | number> = {
    [GROUP_PARAMS.table]: { bytes: table.bytes },
    [GROUP_PARAMS.count]: given.length,
  };
  for (const [n, v] of args[0]?.scalars ?? []) launchArgs[n] = v;
  // No problem: the scalars still need values (the kernel finds no tile).
  for (const p of ck.gemm.params) {
    if (p.kind === "scalar" && launchArgs[p.name] === undefined) launchArgs[p.name] = 1;
  }
  const t0 = performance.now();
  const sim = simulate(ck.kernel, { grid, args: launchArgs, buffers }, {
    hazards: options.hazards ?? true,
  });
  const seconds = (performance.now() - t0) / 1000;
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  const poisonByte = DTYPE_INFO[d.dtype].float ? 0xff : 0x5a;
  const reports = args.map((a, i): ProblemReport => {
    const ref = referenceGemm(ck.gemm, a);
    const output = a.tensors.get(d.name)!;
    const comparison = compareOutput(output, d.dtype, ref);
    const gaps = gapWrites(output, d.dtype, ref, poisonByte);
    return {
      sizes: all[i]!,
      tiles: problemTiles(ck.kernel.grid, all[i]!),
      comparison,
      gapWrites: gaps,
      ok: comparison.ok && gaps === 0,
      args: a,
      output,
    };
  });
  return {
    kernel: ck.name,
    grid,
    totalTiles: table.totalTiles,
    seconds,
    sim,
    problems: reports,
    ok: reports.every((r) => r.ok) && sim.hazardCount === 0,
  };
}
