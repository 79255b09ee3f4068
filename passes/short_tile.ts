/**
 * `gemm-short-tile`: a grouped kernel's second plan, for the problems that have at
 * most half a threadblock's rows (DESIGN §6.2; {@link Plan.short}).
 *
 * In a mixture-of-experts layer many experts get few tokens: with 128-row tiles, an
 * expert of 64 tokens or fewer computes as many rows past M as inside it. The short
 * plan is the same block of warps over a tile half as tall: warps `warpsM / 2 x 2
 * warpsN`, each warp tile half as wide, the same k-tile and stages; the grouped tile
 * loop runs such a problem's tiles through it (a block-uniform branch on the
 * problem's M, passes/lower/kernel.ts), at half the MMAs. Only whole problems, not
 * the short last tile of a larger one: that tile would run ahead of the expert's
 * full tiles, which read the same B columns at the same time, and B would come from
 * DRAM twice (bench/NOTES.md 61: 11% slower at E=256).
 *
 * The short plan is planned by the same passes as the kernel's own (a schedule with
 * the short threadblock and warp tiles). None where it cannot apply: ungrouped
 * kernels, SIMT and sparse math, an odd `warpsM`, a warp tile that halves below two
 * MMA columns, or a short plan that would need more shared memory, registers or
 * threads than the full one.
 *
 * @module
 */

import type { GemmKernel, Plan } from "../ir/gemm.ts";
import { sparseMetaParam } from "../ir/gemm.ts";
import { DiagnosticError } from "../dsl/diagnostics.ts";
import type { GemmPass } from "./pass.ts";
import { plannedShape } from "./mma.ts";
import { PLANNING_PASSES } from "./planning.ts";

/**
 * The short plan of a planned kernel, or null where none applies (see the module).
 *
 * @param k The kernel, planned through `gemm-epilogue-staging`.
 * @returns The plan of its half-height tiles, or null.
 */
export function shortPlan(k: GemmKernel): Plan | null {
  const pl = k.plan;
  if (k.grouped !== true || k.math.mode === "simt" || sparseMetaParam(k) !== null) return null;
  // A wgmma tile is whole warpgroups of 64 rows: half of the default 128 would be one
  // warpgroup, half the threads, which the short plan does not change (not measured).
  if (pl.tile!.wgmma === true) return null;
  const tb = pl.tile!.threadblock;
  const wp = pl.warp!;
  const n = plannedShape(k).n;
  if (wp.warpsM % 2 !== 0 || wp.warp.n % (4 * n) !== 0) return null;
  let s: GemmKernel = {
    ...k,
    schedule: {
      ...k.schedule,
      threadblock: { m: tb.m / 2, n: tb.n, k: tb.k },
      warp: { m: wp.warp.m, n: wp.warp.n / 2, k: wp.warp.k },
      stages: pl.pipeline!.stages,
    },
    plan: {},
  };
  try {
    for (const p of PLANNING_PASSES) s = p.run(s);
  } catch (e) {
    // A schedule the passes refuse (an ldmatrix width, a copy split) has no short plan.
    if (e instanceof DiagnosticError) return null;
    throw e;
  }
  const sp = s.plan;
  const fits = sp.warp!.threads === wp.threads &&
    sp.pipeline!.smemBytes <= pl.pipeline!.smemBytes &&
    sp.mma!.regEstimate <= pl.mma!.regEstimate &&
    sp.occupancy!.blocksPerSm >= pl.occupancy!.blocksPerSm;
  return fits ? sp : null;
}

/** The pass: {@link shortPlan} into `plan.short`. */
export const shortTilePass: GemmPass = {
  name: "gemm-short-tile",
  title: "ShortTile",
  summary: "Plan the half-height tiles of a grouped kernel's problems of few rows",
  run(k: GemmKernel): GemmKernel {
    return { ...k, plan: { ...k.plan, short: shortPlan(k) } };
  },
};
