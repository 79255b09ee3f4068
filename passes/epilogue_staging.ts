/**
 * `gemm-epilogue-staging`: whether the epilogue stages D through shared
 * memory, and how (see {@link StagingPlan}): 8- and 16-bit row-major D, with
 * a tensor-core MMA, stores whole vectors along D's rows instead of the
 * fragment's pairs. An epilogue that reads a matrix (C) stages the raw
 * accumulators ("raw") and is evaluated along D's rows, where neighbouring
 * lanes read C; others stage D's elements ("out").
 *
 * @module
 */

import {
  type EpilogueExpr,
  type GemmKernel,
  type MatrixView,
  type StagingPlan,
  type TensorParam,
  tensorParam,
} from "../ir/gemm.ts";
import { type EpilogueNode, visitEpilogue } from "../ir/epilogue_expr.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import type { MmaShape } from "../ir/mma_table.ts";
import { SIMT_PREFIX } from "../ir/simt.ts";
import { tallyWavefronts, type WavefrontTally } from "../ir/smem_banks.ts";
import type { GemmPass } from "./pass.ts";
import { plannedShape } from "./mma.ts";
import { targetInfo } from "../ir/target.ts";

/** One element of an accumulator tile's fragment: its register, its element
 * in the register, and its row and column from the lane's first element. */
export interface FragElem {
  readonly reg: number;
  readonly elem: number;
  readonly dr: number;
  readonly dc: number;
}

/** Elements stored together: one, or a pair of column neighbours. */
export type ElemGroup = readonly FragElem[];

/** A load of an epilogue tensor in the expression. */
export type LoadExpr = EpilogueNode<"load">;

/**
 * The first load of each tensor the expression reads, in order of appearance.
 *
 * @param e The epilogue expression.
 * @returns The loads by tensor name.
 */
export function loadsOf(e: EpilogueExpr): Map<string, LoadExpr> {
  const into = new Map<string, LoadExpr>();
  visitEpilogue(e, {
    load: (x) => {
      if (!into.has(x.tensor)) into.set(x.tensor, x);
    },
  });
  return into;
}

/**
 * The elements of one accumulator tile's fragment, grouped in runs along a
 * row: column-adjacent pairs (the first at an even column) where `pairs`,
 * else one element a group.
 *
 * @param s The MMA shape.
 * @param pairs Whether to pair column neighbours.
 * @returns The groups, in register order of their first elements.
 */
export function fragmentGroups(s: MmaShape, pairs: boolean): ElemGroup[] {
  const [r0, c0] = s.c.coord(0, 0, 0);
  const elems: FragElem[] = [];
  for (let r = 0; r < s.c.regs; r++) {
    for (let e = 0; e < s.c.elemsPerReg; e++) {
      const [rr, cc] = s.c.coord(0, r, e);
      elems.push({ reg: r, elem: e, dr: rr - r0, dc: cc - c0 });
    }
  }
  const groups: ElemGroup[] = [];
  const used = new Set<number>();
  elems.forEach((e, i) => {
    if (used.has(i)) return;
    used.add(i);
    const j = elems.findIndex((f, jj) => !used.has(jj) && f.dr === e.dr && f.dc === e.dc + 1);
    if (pairs && j >= 0 && e.dc % 2 === 0) {
      used.add(j);
      groups.push([e, elems[j]!]);
    } else groups.push([e]);
  });
  return groups;
}

/**
 * Whether a matrix the epilogue reads can be read `n` elements at a time
 * along D's rows: row-major, aligned to n elements or more, 16- or 32-bit
 * (64-bit: pairs).
 *
 * @param t The tensor.
 * @param view Its matrix view (null: a vector).
 * @param n Elements a load.
 * @returns Whether one load can read them.
 */
export function alongRow(t: TensorParam, view: MatrixView | null | undefined, n: number): boolean {
  const bits = DTYPE_INFO[t.dtype].bits;
  return view?.layout === "row" && t.align >= n &&
    (bits === 16 || bits === 32 || (bits === 64 && n === 2));
}

/**
 * Whether D takes a pair of column neighbours in one store: row-major,
 * aligned to 2, and of 16 bits or more.
 *
 * @param k The kernel.
 * @returns Whether the direct path stores pairs.
 */
export function pairsOk(k: GemmKernel): boolean {
  const d = tensorParam(k, k.problem.d.tensor);
  return k.problem.d.layout === "row" && d.align >= 2 && DTYPE_INFO[d.dtype].bits >= 16;
}

/**
 * Whether and how the epilogue stages D through shared memory (null: each
 * thread stores its accumulator elements straight from registers).
 *
 * Epilogue loads (C, a bias, split-K's partial sums) cannot alias the
 * shared-memory stores, so ptxas would hoist every load of a chunk above
 * them: one accumulator-tile row a chunk bounds the registers they hold. A
 * bias along M alone is loaded once a row (cached) and takes whole chunks:
 * +2.5% at 4096³ (a bias along N lost 0.6% so: bench/NOTES.md 35). A matrix
 * the raw path cannot read 4 at a time along a row (a column-major C, or one
 * aligned to less than 4) keeps a 16-bit D direct: the fragment layout reads
 * C in whole sectors (bench/NOTES.md 37). An 8-bit D stays staged (shortcut:
 * direct, one spilled).
 *
 * @param k The kernel (tile, warp, pipeline and mma plans made).
 * @returns The staging plan, or null.
 */
export function stagingPlan(k: GemmKernel): StagingPlan | null {
  if (k.plan.mma!.shape.startsWith(SIMT_PREFIX) || k.problem.d.layout !== "row") return null;
  const s = plannedShape(k);
  const d = tensorParam(k, k.problem.d.tensor);
  const dBytes = DTYPE_INFO[d.dtype].bits / 8;
  const pairOk = pairsOk(k);
  const loads = [...loadsOf(k.epilogue.expr).values()];
  const readsMatrix = loads.some((x) => x.rows && x.cols);
  const rowVectorsOnly = loads.every((x) => x.rows && !x.cols);
  const mTiles = k.plan.warp!.warp.m / s.m;
  const maxTiles = k.plan.tile!.splitK > 1 || !rowVectorsOnly ? 1 : mTiles;
  const rawReadable = dBytes !== 2 ||
    loads.every((x) =>
      !(x.rows && x.cols) ||
      alongRow(tensorParam(k, x.tensor), k.epilogue.views.find((v) => v.tensor === x.tensor), 4)
    );
  if (!rawReadable) return null;
  // Raw accumulators are staged in pairs whatever D's alignment.
  const groups = fragmentGroups(s, readsMatrix || pairOk);
  return stagedLayout(k, s, groups, {
    d,
    dBytes,
    pairOk,
    maxTiles,
    mode: readsMatrix ? "raw" : "out",
  });
}

/** What {@link stagedLayout} stages: D, its element size, whether the direct path stores
 * pairs, the most accumulator-tile rows a chunk, and the mode. */
interface StagedOutput {
  readonly d: TensorParam;
  readonly dBytes: number;
  readonly pairOk: boolean;
  readonly maxTiles: number;
  readonly mode: "out" | "raw";
}

/**
 * The staged layout, or null where staging does not pay or does not fit.
 *
 * Staged when D is row-major with 8- or 16-bit elements, the MMA is a
 * tensor-core one, and D's alignment allows vectors wider than the direct
 * path's stores (a pair of elements, or one); the vector is at most 16
 * bytes and one warp-tile row. A row of vectors that does not divide 32 (10,
 * 12, 14, 24 or 28: warp tiles 80, 96, 112, 192 or 224 16-bit columns wide)
 * is read back by lanes rounded up to a power of two, the rest idle:
 * measured faster than the direct path it replaced (bench/NOTES.md 83).
 * A chunk is as many accumulator-tile rows (at most `maxTiles`) as the
 * regions (one a warp) fit in the pipeline's shared memory, balanced over
 * the chunks: the epilogue never asks for more shared memory than the main
 * loop (shortcut: where one row does not fit, it stays direct). The
 * padding of a region's rows is the smallest multiple of
 * 16 bytes for which the fragment writes and the vector reads need the
 * fewest shared-memory wavefronts: conflict-free for warp-tile rows of 128
 * bytes or more (every default tile); narrower rows have no padding that
 * suits both sides, and their reads take up to twice the ideal (an XOR
 * swizzle would fix it; shortcut, the epilogue is a small part of a tile's
 * time). Column-major D stays direct (shortcut).
 */
function stagedLayout(
  k: GemmKernel,
  s: MmaShape,
  groups: readonly ElemGroup[],
  o: StagedOutput,
): StagingPlan | null {
  const { d, dBytes, mode } = o;
  // Only where the direct path's stores leave 32-byte sectors part-filled:
  // 4 lanes write a row's 8 columns, so 8- and 16-bit outputs (4 or 2
  // bytes a lane). f32/s32 pairs (8 bytes a lane) already fill sectors;
  // staging them measured -1% at tf32 8192³ and +2% at 4096³ (bench/NOTES.md 31).
  if (dBytes !== 1 && dBytes !== 2) return null;
  const wp = k.plan.warp!;
  // Raw: 4 accumulators of 4 bytes a lane, stored as 4 elements of D (D's
  // alignment at least 4).
  if (mode === "raw" && (k.epilogue.compute === "f64" || d.align < 4)) return null;
  const elemBytes = mode === "raw" ? 4 : dBytes;
  const rowBytes = wp.warp.n * elemBytes;
  let vecBytes = 16;
  while (
    vecBytes > 1 &&
    (mode === "out" && vecBytes > d.align * dBytes || rowBytes % vecBytes !== 0)
  ) {
    vecBytes /= 2;
  }
  if (mode === "raw" ? vecBytes !== 16 : vecBytes <= (o.pairOk ? 2 : 1) * dBytes) return null;
  const perRow = rowBytes / vecBytes;
  // A row is read back by `readLanes` lanes (perRow up to a power of two; the rest idle), so
  // that every lane reads the same column of each row it reads (rows of at most 32 vectors:
  // 512 bytes), and the warp whole rows at once.
  if (perRow > 32) return null;
  const readLanes = 2 ** Math.ceil(Math.log2(perRow));
  if ((s.m * readLanes) % 32 !== 0) return null;
  const mTiles = wp.warp.m / s.m;
  const warps = wp.threads / 32;
  // Not over a TMA pipeline's barriers (they stay live until the last stage is read); a
  // persistent kernel's in a region of its own after them (its stages are being refilled).
  const pipe = k.plan.pipeline!;
  const own = pipe.tma?.persistent;
  // Ping-pong: half of it for each consumer warpgroup's region (128-byte aligned).
  const rest = own === undefined ? 0 : targetInfo(k.target).smemPerBlock - own.stagingOffset;
  const avail = own !== undefined
    ? (own.pingPong !== undefined ? Math.floor(rest / 256) * 128 : rest)
    : pipe.tma?.barrierOffset ?? pipe.smemBytes;
  const nTiles = wp.warp.n / s.n;
  // Lane l's fragment position relative to lane 0's.
  const [r0, c0] = s.c.coord(0, 0, 0);
  const laneRow = Array.from({ length: 32 }, (_, l) => s.c.coord(l, 0, 0)[0] - r0);
  const laneCol = Array.from({ length: 32 }, (_, l) => s.c.coord(l, 0, 0)[1] - c0);
  const addrs = new Array<number>(32);
  /** Excess wavefronts of one tile row's writes and reads, or more than `limit`. */
  const excess = (stride: number, limit: number): number => {
    const t: WavefrontTally = { wavefronts: 0, ideal: 0 };
    for (let j = 0; j < nTiles && t.wavefronts - t.ideal <= limit; j++) {
      for (const grp of groups) {
        const e0 = grp[0]!;
        for (let l = 0; l < 32; l++) {
          addrs[l] = (laneRow[l]! + e0.dr) * stride +
            (laneCol[l]! + j * s.n + e0.dc) * elemBytes;
        }
        tallyWavefronts(addrs, 32, grp.length * elemBytes, t);
      }
    }
    // An idle lane reads its row's last vector again (the lowering's clamp): no wavefront more.
    for (let q = 0; q < (s.m * readLanes) / 32; q++) {
      for (let l = 0; l < 32; l++) {
        const row = (q * 32 + l - (l % readLanes)) / readLanes;
        addrs[l] = row * stride + Math.min(l % readLanes, perRow - 1) * vecBytes;
      }
      tallyWavefronts(addrs, 32, vecBytes, t);
    }
    return t.wavefronts - t.ideal;
  };
  // The pad with the fewest excess wavefronts (the pattern repeats every
  // accumulator-tile row), then as many tile rows a chunk as fit, balanced
  // over the chunks (5 rows that fit 3 at a time: 3 + 2).
  // Strides are whole 16-byte units (the vector reads' alignment): a row narrower than 16
  // bytes (an 8-wide warp tile of 8-bit D) starts padded to 16.
  let best: { stride: number; cost: number } | null = null;
  for (let pad = (16 - rowBytes % 16) % 16; pad <= 128; pad += 16) {
    const stride = rowBytes + pad;
    if (warps * s.m * stride > avail) break;
    const cost = excess(stride, best?.cost ?? Infinity);
    if (best === null || cost < best.cost) best = { stride, cost };
    if (cost === 0) break;
  }
  if (best === null) return null;
  const fit = Math.min(o.maxTiles, mTiles, Math.floor(avail / (warps * s.m * best.stride)));
  const tiles = Math.ceil(mTiles / Math.ceil(mTiles / fit));
  return {
    tiles,
    stride: best.stride,
    regionBytes: tiles * s.m * best.stride,
    vecBytes,
    perRow,
    readLanes,
    mode,
    elemBytes,
  };
}

/** The pass. */
export const epilogueStagingPass: GemmPass = {
  name: "gemm-epilogue-staging",
  title: "EpilogueStaging",
  summary: "Decide whether and how the epilogue stages D through shared memory",
  run(k: GemmKernel): GemmKernel {
    const staging = stagingPlan(k);
    // A persistent kernel's staging region adds to the block's shared memory.
    const pipe = k.plan.pipeline!;
    const own = pipe.tma?.persistent;
    if (own === undefined || staging === null) return { ...k, plan: { ...k.plan, staging } };
    const region = (k.plan.warp!.threads / 32) * staging.regionBytes;
    if (own.pingPong === undefined) {
      const smemBytes = own.stagingOffset + region;
      return { ...k, plan: { ...k.plan, staging, pipeline: { ...pipe, smemBytes } } };
    }
    // Ping-pong: the second consumer warpgroup's region after the first's, 128-byte aligned.
    const stagingBytes = Math.ceil(region / 128) * 128;
    const tma = {
      ...pipe.tma!,
      persistent: { ...own, pingPong: { ...own.pingPong, stagingBytes } },
    };
    const smemBytes = own.stagingOffset + stagingBytes + region;
    return { ...k, plan: { ...k.plan, staging, pipeline: { ...pipe, tma, smemBytes } } };
  },
};
