/**
 * The launch grid and the split-K / Stream-K workspace as data: a kernel's {@link GridPlan},
 * and the functions that evaluate it for runtime sizes (every launcher, the manifest, the
 * simulator's harness). ir/kernel.ts re-exports this module.
 *
 * @module
 */

import type { Kernel } from "./kernel.ts";

/** How the grid follows from the runtime sizes: x = ceil(N / tileN) * swizzle
 * grouping, and so on, written as data so that both a launcher and the
 * manifest can evaluate it. */
export interface GridPlan {
  /** Rows of D per block. */
  readonly tileM: number;
  /** Columns of D per block. */
  readonly tileN: number;
  /** Rasterisation group size (CUTLASS's identity swizzle with log tile). */
  readonly swizzle: number;
  /** K-splits (1: none); the grid's z has split_k blocks per batch. */
  readonly splitK: number;
  /** Dimension names (or constants) for M, N and batch. */
  readonly m: string | number;
  /** The dimension name (or constant) of N. */
  readonly n: string | number;
  /** The batch dimension's name (or constant); null: no batch. */
  readonly batch: string | number | null;
  /** A persistent kernel (sm90's warp-specialized one): the grid is `[min(tiles, blocks),
   * 1, 1]` ({@link gridFor}), `tiles` every batch's output tiles, `blocks` those that run
   * at once: the device's SMs (by default `blocks`, the target's) times `.minnctapersm`.
   * Each block takes tiles `ctaid.x, ctaid.x + nctaid.x, ...` in the rasterised order.
   * With `cluster` C (the kernel's CTAs per cluster), the cluster's C CTAs take the C tiles of
   * a unit C tiles tall together (C tiles wide with `clusterAxis` `n`): the grid is
   * `[C min(units, floor(blocks / C)), 1, 1]`, `units` = ceil(tilesM / C) tilesN batch
   * (tilesM ceil(tilesN / C) batch along N), at least C. */
  readonly persistent?: {
    readonly blocks: number;
    readonly cluster?: number;
    readonly clusterAxis?: "n";
  };
  /** split_k > 1: bytes of the workspace per output tile (a 128-byte header
   * with the tile's arrival counter, then one partial accumulator tile per
   * split); the workspace is `tilesM * tilesN * batch` of them
   * ({@link workspaceBytes}). A persistent (Stream-K) kernel: a record of two
   * partials per tile of its shared-out region, at most `2 * grid x` records.
   * Absent or 0: no workspace. */
  readonly workspacePerTile?: number;
}

/**
 * The bytes of the split-K workspace for given runtime sizes: one record of
 * `plan.workspacePerTile` bytes per output tile (0 without split-K). The
 * launcher zeroes it once; every launch leaves its counters at zero again.
 *
 * @param plan The kernel's grid plan.
 * @param dims Runtime sizes by dimension name.
 * @returns Bytes.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { workspaceBytes } from "./grid.ts";
 * const plan = { tileM: 128, tileN: 256, swizzle: 1, splitK: 4, m: "M", n: "N", batch: null,
 *   workspacePerTile: 1024 };
 * equal(workspaceBytes(plan, { M: 128, N: 1024 }), 4 * 1024);
 * ```
 */
export function workspaceBytes(
  plan: GridPlan,
  dims: Readonly<Record<string, number>>,
): number {
  const per = plan.workspacePerTile ?? 0;
  if (per === 0) return 0;
  const [x, , z] = gridFor(plan, dims);
  // Stream-K (passes/lower/stream_k.ts): the shared-out tiles are fewer than two a block.
  if (plan.persistent !== undefined) return 2 * x * per;
  return (x / plan.swizzle) * Math.ceil(val(plan.n, dims) / plan.tileN) * (z / plan.splitK) * per;
}

/** The name of the split-K workspace parameter (the last parameter but the tensor maps, when
 * split_k > 1). */
export const WORKSPACE_PARAM = "workspace";

/**
 * The names of a kernel's workspace parameters (none, or the one of split-K).
 *
 * @param kernel The kernel IR.
 * @returns Parameter names.
 */
export function workspaceParams(kernel: Kernel): string[] {
  if ((kernel.grid.workspacePerTile ?? 0) === 0) return [];
  // Last but the tensor maps (sm90), which come after every other parameter.
  return [kernel.params.findLast((p) => p.kind !== "tensormap")!.name];
}

function val(d: string | number, dims: Readonly<Record<string, number>>): number {
  if (typeof d === "number") return d;
  const v = dims[d];
  if (v === undefined) throw new Error(`Missing size for dimension "${d}"`);
  return v;
}

/**
 * The launch grid for given runtime sizes: `[tilesM * swizzle,
 * ceil(tilesN / swizzle), batch * splitK]` (CUTLASS's identity swizzle: block
 * x selects tile row `x / swizzle` and tile column `y * swizzle + x % swizzle`;
 * blocks past the last tile column exit at once); a persistent kernel's
 * `[min(tiles, residentBlocks), 1, 1]` ({@link GridPlan.persistent}).
 *
 * @param plan The kernel's grid plan.
 * @param dims Runtime sizes by dimension name.
 * @param residentBlocks A persistent kernel's blocks that run at once on the device (default:
 *   the plan's, for the target's SM count).
 * @returns `[x, y, z]`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { gridFor } from "./grid.ts";
 * const g = gridFor({ tileM: 128, tileN: 128, swizzle: 1, splitK: 1, m: "M", n: "N", batch: null },
 *   { M: 256, N: 384 });
 * equal(g.join(), "2,3,1");
 * ```
 */
export function gridFor(
  plan: GridPlan,
  dims: Readonly<Record<string, number>>,
  residentBlocks?: number,
): [number, number, number] {
  const tilesM = Math.ceil(val(plan.m, dims) / plan.tileM);
  const tilesN = Math.ceil(val(plan.n, dims) / plan.tileN);
  const batch = plan.batch === null ? 1 : val(plan.batch, dims);
  if (plan.persistent !== undefined) {
    const c = plan.persistent.cluster ?? 1;
    const blocks = residentBlocks ?? plan.persistent.blocks;
    const alongN = plan.persistent.clusterAxis === "n";
    const units = (alongN ? tilesM * Math.ceil(tilesN / c) : Math.ceil(tilesM / c) * tilesN) *
      batch;
    if (c > 1) return [c * Math.max(1, Math.min(units, Math.floor(blocks / c))), 1, 1];
    return groupedGrid(units, blocks);
  }
  return [tilesM * plan.swizzle, Math.ceil(tilesN / plan.swizzle), batch * plan.splitK];
}

/**
 * A grouped problem's output tiles: `ceil(M / tileM) * ceil(N / tileN)`, 0 when M
 * or N is 0 (a problem with no rows, such as an expert that got no tokens).
 *
 * @param plan The kernel's grid plan.
 * @param dims The problem's sizes by dimension name.
 * @returns The tile count.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { problemTiles } from "./grid.ts";
 * const plan = { tileM: 128, tileN: 64, swizzle: 1, splitK: 1, m: "M", n: "N", batch: null };
 * equal(problemTiles(plan, { M: 129, N: 64 }), 2);
 * equal(problemTiles(plan, { M: 0, N: 64 }), 0);
 * ```
 */
export function problemTiles(plan: GridPlan, dims: Readonly<Record<string, number>>): number {
  return Math.ceil(val(plan.m, dims) / plan.tileM) * Math.ceil(val(plan.n, dims) / plan.tileN);
}

/**
 * A grouped kernel's persistent grid: `[min(tiles, blocks), 1, 1]`, where
 * `blocks` is as many as run at once (SMs times blocks per SM); at least one
 * block (which finds no tile when there are none).
 *
 * @param totalTiles The output tiles of all problems.
 * @param residentBlocks Blocks that run at once on the device.
 * @returns `[x, 1, 1]`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { groupedGrid } from "./grid.ts";
 * equal(groupedGrid(10, 264).join(), "10,1,1");
 * equal(groupedGrid(5000, 264).join(), "264,1,1");
 * equal(groupedGrid(0, 264).join(), "1,1,1");
 * ```
 */
export function groupedGrid(totalTiles: number, residentBlocks: number): [number, number, number] {
  return [Math.max(1, Math.min(totalTiles, residentBlocks)), 1, 1];
}
