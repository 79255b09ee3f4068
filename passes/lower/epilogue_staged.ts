/**
 * The epilogue staged through shared memory: the staging plan (`stagePlan`).
 *
 * @module
 */

import type { TensorParam } from "../../ir/gemm.ts";
import type { MmaShape } from "../../ir/mma_table.ts";
import { SIMT_PREFIX } from "../../ir/simt.ts";
import { tallyWavefronts, type WavefrontTally } from "../../ir/smem_banks.ts";
import { type Affine, termOf } from "./affine.ts";
import type { LowerContext } from "./context.ts";

/** How the epilogue stages D through shared memory (see `stagePlan`). */
interface StagePlan {
  /** Accumulator-tile rows (of `shape.m` rows each) a warp stages at once. */
  readonly tiles: number;
  /** Bytes from one staged row to the next (the warp tile's row plus padding). */
  readonly stride: number;
  /** Bytes of one warp's region. */
  readonly regionBytes: number;
  /** Bytes a lane reads back at once (and, staging outputs, stores to D). */
  readonly vecBytes: number;
  /** Vectors in one staged row. */
  readonly perRow: number;
  /** Staged: D's elements ("out"), or the accumulators in the compute type ("raw"),
   * the epilogue then evaluated along D's rows (epilogues that read a matrix). */
  readonly mode: "out" | "raw";
  /** Bytes of one staged element. */
  readonly elemBytes: number;
}

/**
 * Whether and how the epilogue stages D through shared memory (null: each
 * thread stores its accumulator elements straight from registers).
 *
 * Staged when D is row-major with 8- or 16-bit elements, the MMA is a
 * tensor-core one, and D's alignment allows vectors wider than the direct
 * path's stores (a pair of elements, or one); the vector is at most 16
 * bytes and one warp-tile row.
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
export function stagePlan(
  cx: LowerContext,
  s: MmaShape,
  rowAff: Affine,
  colAff: Affine,
  groups: readonly (readonly { dr: number; dc: number }[])[],
  d: TensorParam,
  dBytes: number,
  pairOk: boolean,
  maxTiles: number,
  mode: "out" | "raw",
  cType: "f32" | "f64" | "s32",
): StagePlan | null {
  const k = cx.k;
  if (k.plan.mma!.shape.startsWith(SIMT_PREFIX) || k.problem.d.layout !== "row") return null;
  // Only where the direct path's stores leave 32-byte sectors part-filled:
  // 4 lanes write a row's 8 columns, so 8- and 16-bit outputs (4 or 2
  // bytes a lane). f32/s32 pairs (8 bytes a lane) already fill sectors;
  // staging them measured -1% at tf32 8192³ and +2% at 4096³ (bench/NOTES.md 31).
  if (dBytes !== 1 && dBytes !== 2) return null;
  const wp = k.plan.warp!;
  // Raw: 4 accumulators of 4 bytes a lane, stored as 4 elements of D (D's
  // alignment at least 4).
  if (mode === "raw" && (cType === "f64" || d.align < 4)) return null;
  const elemBytes = mode === "raw" ? 4 : dBytes;
  const rowBytes = wp.warp.n * elemBytes;
  let vecBytes = 16;
  while (
    vecBytes > 1 &&
    (mode === "out" && vecBytes > d.align * dBytes || rowBytes % vecBytes !== 0)
  ) {
    vecBytes /= 2;
  }
  if (mode === "raw" ? vecBytes !== 16 : vecBytes <= (pairOk ? 2 : 1) * dBytes) return null;
  const perRow = rowBytes / vecBytes;
  // Every lane reads the same number of vectors from each accumulator-tile
  // row, the same column of each (rows of at most 32 vectors: 512 bytes).
  if (32 % perRow !== 0 || (s.m * perRow) % 32 !== 0) return null;
  const mTiles = wp.warp.m / s.m;
  const warps = cx.threads / 32;
  const avail = k.plan.pipeline!.smemBytes;
  const nTiles = wp.warp.n / s.n;
  // Lane l's fragment position relative to lane 0's (affine in g = l / 4, tig = l % 4).
  const lanes = (a: Affine) =>
    Array.from({ length: 32 }, (_, l) => termOf(a, "g") * (l >> 2) + termOf(a, "tig") * (l & 3));
  const laneRow = lanes(rowAff);
  const laneCol = lanes(colAff);
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
    for (let q = 0; q < (s.m * perRow) / 32; q++) {
      for (let l = 0; l < 32; l++) {
        const v = q * 32 + l;
        addrs[l] = Math.floor(v / perRow) * stride + (v % perRow) * vecBytes;
      }
      tallyWavefronts(addrs, 32, vecBytes, t);
    }
    return t.wavefronts - t.ideal;
  };
  // The pad with the fewest excess wavefronts (the pattern repeats every
  // accumulator-tile row), then as many tile rows a chunk as fit, balanced
  // over the chunks (5 rows that fit 3 at a time: 3 + 2).
  let best: { stride: number; cost: number } | null = null;
  for (let pad = 0; pad <= 128; pad += 16) {
    const stride = rowBytes + pad;
    if (warps * s.m * stride > avail) break;
    const cost = excess(stride, best?.cost ?? Infinity);
    if (best === null || cost < best.cost) best = { stride, cost };
    if (cost === 0) break;
  }
  if (best === null) return null;
  const fit = Math.min(maxTiles, mTiles, Math.floor(avail / (warps * s.m * best.stride)));
  const tiles = Math.ceil(mTiles / Math.ceil(mTiles / fit));
  return {
    tiles,
    stride: best.stride,
    regionBytes: tiles * s.m * best.stride,
    vecBytes,
    perRow,
    mode,
    elemBytes,
  };
}
