/**
 * The mma.sync default tile at known (or hinted) sizes, for sm80 and sm86 and for sm90 where
 * its wgmma tiles would leave the SMs idle (passes/tile_sm90.ts): the type's tile
 * (passes/tile_context.ts) shrunk where M or N is small, so that a skinny problem does not
 * compute mostly padding, then halved to the target's minimum grid unless split-K fills the SMs
 * instead ({@link defaultSplitK}, counting {@link expectedBlocksPerSm}), then given a deeper
 * k-tile (a long K on few blocks; rows off 32-byte sectors, {@link misalignedRows}) or the shape
 * whose waves fill the SMs best (passes/waves.ts). {@link sm80Default} runs the steps in turn
 * and writes each in the tile's `why`.
 *
 * @module
 */

import type { GemmKernel, Shape3 } from "../ir/gemm.ts";
import { hasSyncCopies, sparseMetaParam } from "../ir/gemm.ts";
import {
  WAVE_TILES,
  WAVE_TILES_8BIT,
  WAVE_TILES_SIMT,
  waveAwareTile,
  type WaveTile,
} from "./waves.ts";
import { targetInfo } from "../ir/target.ts";
import { stageBytes } from "./pipeline.ts";
import { shapeText } from "../ir/print_gemm.ts";
import { type ChosenTile, gridBlocks, mnContiguousPow2, type TileContext } from "./tile_context.ts";

/**
 * The blocks per SM that gemm-tile counts on when it weighs waves and
 * split-K, before shared memory and registers are known: 2 for SIMT f32
 * fed by cp.async (whose default tiles gemm-occupancy gives two blocks an
 * SM), else 1. gemm-occupancy decides; where it keeps one block (operands
 * aligned below 16 bytes, a B transposed by 4-byte cp.async) this
 * prediction is a shortcut (the tile then counts twice the slots).
 *
 * @param k The kernel.
 * @returns 1 or 2.
 */
export function expectedBlocksPerSm(k: GemmKernel): 1 | 2 {
  return k.math.mode === "simt" && !hasSyncCopies(k) ? 2 : 1;
}

/**
 * The default split-K for a known (or hinted) problem whose default tiles
 * leave most SMs idle: split K over about as many blocks as fill the SMs
 * once (at most 8), when each split keeps at least 32 k-tiles. Measured on
 * the H200 at M=128, N=K=8192 (bench/NOTES.md 19, alternating launches):
 * 128x256 tiles with split_k 4 against the small-grid tile 128x64 with 8
 * warps: tf32 +44%, bf16 +5%, f16 +3%; s8 -7% (so s8 keeps the small-grid
 * tile); split_k 8 (two blocks per SM's worth) -23% for f16. Skinny 16-bit
 * TN problems whose 128x64 grid fills the SMs take a deep 128x64 tile
 * instead (`deep16` in the pass; bench/NOTES.md 30).
 *
 * @param tiles Output tiles of the default tile.
 * @param kTiles k-tiles of K.
 * @param sms SMs of the GPU.
 * @returns split_k (1: none).
 */
export function defaultSplitK(tiles: number, kTiles: number, sms: number): number {
  if (2 * tiles > sms) return 1;
  const s = Math.min(8, Math.floor(sms / tiles), Math.floor(kTiles / 32));
  return s >= 2 ? s : 1;
}

/**
 * Whether a 16-bit GEMM's operands are both K-contiguous with rows that do
 * not start on 32-byte sectors (K * 2 bytes not a multiple of 32): then each
 * 64-byte row of a 32-deep k-tile touches three sectors half the time
 * instead of two. A 64-deep k-tile (3 stages) halves that waste: on the
 * H200 at 5000^3 (rows of 10000 bytes) +5% for f16 and +7% for bf16 under
 * one power state, while at K=5008 (aligned rows) it loses 1.3%
 * (bench/NOTES.md 22). Measured for A row-major and B column-major only;
 * other types and layouts keep their k-tile (a shortcut).
 */
export function misalignedRows(k: GemmKernel, K: number): boolean {
  const t = k.math.mmaA;
  if (t !== "f16" && t !== "bf16") return false;
  const kContig = k.problem.a.layout === "row" && k.problem.b.layout === "col";
  return kContig && (K * 2) % 32 !== 0;
}

/** A tile side halved while the compile-time size fits in half of it, down to `min`. */
function shrink(tile: number, size: number | null, min: number): number {
  if (size === null) return tile;
  let t = tile;
  while (t > min && size <= t / 2) t /= 2;
  return t;
}

/**
 * With both sizes known, keep at least the target's minBlocks (one block per
 * SM of an A100, 108; ir/target.ts): halve the larger side of the tile while
 * the grid is smaller, down to 64 (skinny problems such as M=128, N=K=8192).
 */
function shrinkForGrid(c: TileContext, tb: Shape3): Shape3 {
  let shrunk = tb;
  while (gridBlocks(c, shrunk) < c.minBlocks && (shrunk.m > c.minM || shrunk.n > c.minM)) {
    shrunk = shrunk.n >= shrunk.m && shrunk.n > c.minM
      ? { ...shrunk, n: shrunk.n / 2 }
      : { ...shrunk, m: shrunk.m / 2 };
  }
  return shrunk;
}

/**
 * Whether a skinny 16-bit problem takes a deep 128x64 tile (`deep16`). A
 * skinny 16-bit problem (K-contiguous A and B) with a long K whose tile
 * shrinks to 128x64 or 64x128 with a grid that fills the SMs streams its
 * K-contiguous rows from DRAM: a 128-deep k-tile (256 bytes of each row per
 * stage, 3 stages) with 4 warps of 64x32 beat split_k 4 of 128x256 by 6.7%
 * (f16) and 5.6% (bf16) at M=128, N=K=8192 on the H200, each kernel timed
 * alone (bench/NOTES.md 30). Measured at that shape and layout only (a
 * shortcut).
 */
function isDeep16(c: TileContext, shrunk: Shape3): boolean {
  const { k, mc, nc, kc } = c;
  return mc !== null && nc !== null && kc !== null && c.asyncTensor && c.is16 &&
    k.problem.a.layout === "row" && k.problem.b.layout === "col" &&
    kc >= 16 * 4 * c.d.k && shrunk.m * shrunk.n === 128 * 64 &&
    gridBlocks(c, shrunk) >= c.minBlocks;
}

/**
 * The automatic split-K (1: none). Few tiles and a long K (skinny problems):
 * split K rather than shrink the tile (tf32 and other 16-bit problems, f32
 * accumulators; defaultSplitK). SIMT f32 too: its shrunk 128x64 tile has 4
 * warps, one block an SM at M=128, N=K=8192, and ran at 0.43 of cuBLAS's f32
 * GEMM on the H200; 128x128 tiles split 4 ways 0.81, 8 ways 0.82, 128x64
 * split 2 ways 0.69 (bench/NOTES.md 43). Its 128x128 tile runs two blocks an
 * SM (expectedBlocksPerSm), so the split fills twice the SMs: a shortcut
 * where the lowering keeps one block (operands aligned below 16 bytes; nn,
 * whose B alone is copied by 4-byte cp.async), which then gets twice the
 * split it would need.
 *
 * @param tb The tile shrunk to the sizes, before {@link shrinkForGrid}.
 */
function autoSplitK(c: TileContext, tb: Shape3, deep16: boolean): number {
  const { k, mc, nc, kc, simt } = c;
  if (
    mc === null || nc === null || kc === null || k.schedule.splitK !== undefined ||
    !((c.asyncTensor && k.math.acc === "f32" && !deep16 &&
      (c.is16 || k.math.mmaA === "tf32")) || simt)
  ) return 1;
  const tiles = Math.ceil(mc / tb.m) * Math.ceil(nc / tb.n);
  const slots = c.sms * expectedBlocksPerSm(k);
  const s = defaultSplitK(tiles, Math.ceil(kc / tb.k), slots);
  // SIMT: at most 4 ways. The last split's reduction of 8 spilled 8-12 bytes at the
  // 128 registers of two blocks an SM (tests/ptxas_sweep.ts), and split 8 measured no
  // faster than 4 (39.5 against 39.1 TFLOPS at M=128, N=K=8192).
  return simt ? Math.min(4, s) : s;
}

/**
 * The wave-aware tile for a default-sized tile over known M and N without
 * split-K ({@link waveAwareTile}): tensor-core MMAs weigh {@link WAVE_TILES}
 * or {@link WAVE_TILES_8BIT}, SIMT f32 {@link WAVE_TILES_SIMT}; other tiles
 * (a sparse A's among them) stay.
 */
function waveTile(c: TileContext, tb: Shape3, splitK: number): Shape3 {
  const { k, mc, nc, d } = c;
  if (splitK !== 1 || mc === null || nc === null || tb.m !== d.m || tb.n !== d.n) return tb;
  if (c.asyncTensor) {
    const a = k.math.mmaA;
    // A sparse A's tile (sparseThreadblock) was measured against none of these.
    const table = sparseMetaParam(k) !== null
      ? []
      : a === "f16" || a === "bf16" || a === "tf32"
      ? WAVE_TILES
      : a === "s8" || a === "u8"
      ? WAVE_TILES_8BIT
      : [];
    // Only tiles whose M (N) extent is a power of two where A (B) is
    // M- (N-) contiguous (mnContiguousPow2).
    const fits = (t: WaveTile) => mnContiguousPow2(k, t.m, t.n) === null;
    return waveAwareTile(tb, mc, nc, c.sms, table.filter(fits));
  }
  if (c.simt) {
    // Two blocks an SM (expectedBlocksPerSm): twice the SMs' slots.
    return waveAwareTile(tb, mc, nc, expectedBlocksPerSm(k) * c.sms, WAVE_TILES_SIMT);
  }
  return tb;
}

/**
 * The k-tile's depth, and whether the tile is a small grid's, for a tile
 * already shrunk or split; a tile neither deepened nor of a small grid
 * takes its wave-aware shape ({@link waveTile}) instead.
 *
 * @returns The tile and the plan's `smallGrid`.
 */
function deepenKTile(
  c: TileContext,
  tb: Shape3,
  deep16: boolean,
  splitK: number,
): { readonly tb: Shape3; readonly smallGrid: boolean; readonly kWhy?: string } {
  const { k, kc, d } = c;
  const smallerTile = tb.m * tb.n < d.m * d.n;
  // A shrunk 8-bit tile with a long K is latency-bound on its loads:
  // a 256-deep k-tile (3 stages, 144 KB) keeps 4x the bytes in flight.
  // M=128, N=K=8192 s8 on the H200, alternating launches: 400 -> 595
  // TOPS (1.49; 128-deep with 5 stages 1.46; bench/NOTES.md 23).
  // Measured at that shape only (a shortcut).
  const deep8 = kc !== null && c.asyncTensor &&
    (k.math.mmaA === "s8" || k.math.mmaA === "u8") && smallerTile && kc >= 16 * 4 * d.k;
  // A shrunk 16-bit tile (about one block per SM, each with a long K)
  // is latency-bound: a 64-deep k-tile halves the barriers and doubles
  // the bytes in flight per stage (with 32x32 warps, gemm-warp): M=128,
  // N=K=8192 f16 went from 0.29 to 0.40 of the ceiling on the H200
  // (bench/NOTES.md 11). tf32 and s8 measured no gain.
  // Each deepening only where two stages of the deeper tile fit the target's shared memory (a
  // sparse A's tile on sm86 is twice as deep already: its small grid's 64x256x128 would not).
  const deepK = deep16 || deep8 ? 4 * d.k : 2 * tb.k;
  const fits = twoStagesFit(c, { ...tb, k: deepK });
  const smallGrid = !deep16 && c.asyncTensor && c.is16 && smallerTile && fits;
  // Which deepening applies (none: the wave-aware shape instead), in words for TilePlan.why.
  const kWhy = !fits
    ? undefined
    : deep16
    ? "deep16: a 128x64 tile with a long K"
    : deep8
    ? "deep8: a shrunk 8-bit tile with a long K"
    : smallGrid
    ? "a small grid's: a long K on few blocks"
    : undefined;
  const t = kWhy !== undefined ? { ...tb, k: deepK } : waveTile(c, tb, splitK);
  // Rows that do not start on 32-byte sectors take a 64-deep k-tile (misalignedRows).
  if (
    !smallGrid && kc !== null && c.asyncTensor && misalignedRows(k, kc) && t.k === 32 &&
    twoStagesFit(c, { ...t, k: 64 })
  ) {
    return { tb: { ...t, k: 64 }, smallGrid, kWhy: "misalignedRows: rows off 32-byte sectors" };
  }
  return { tb: t, smallGrid, ...(kWhy !== undefined ? { kWhy } : {}) };
}

/**
 * The mma.sync default of a kernel without a given threadblock (passes/tile.ts `defaultTile`,
 * where no skinny rule and no sm90 wgmma tile applies): the type's tile shrunk to small
 * compile-time (or hinted) sizes, then to the target's minimum grid unless split-K fills the SMs
 * instead, then deepened or made wave-aware ({@link deepenKTile}).
 *
 * @param c The kernel's facts (passes/tile_context.ts), its minimum grid the sm80 target's
 *   where sm90 fell back here.
 * @returns The tile, its split-K and why.
 */
export function sm80Default(c: TileContext): ChosenTile {
  const sized = { m: shrink(c.d.m, c.mc, c.minM), n: shrink(c.d.n, c.nc, c.minM), k: c.d.k };
  const shrunk = shrinkForGrid(c, sized);
  const deep16 = isDeep16(c, shrunk);
  const splitK = autoSplitK(c, sized, deep16);
  const from = splitK === 1 ? shrunk : sized;
  const { tb, smallGrid, kWhy } = deepenKTile(c, from, deep16, splitK);
  const why = [
    ...(c.why === undefined ? [] : [c.why]),
    `the ${c.k.math.mmaA} default ${shapeText(c.d)}`,
  ];
  if (sized.m !== c.d.m || sized.n !== c.d.n) {
    why.push(`shrunk to ${sized.m}x${sized.n} for M = ${c.mc ?? "?"}, N = ${c.nc ?? "?"}`);
  }
  if (splitK > 1) {
    why.push(`split_k ${splitK} so that a long K fills ${c.sms} SMs (defaultSplitK)`);
  } else if (shrunk.m !== sized.m || shrunk.n !== sized.n) {
    why.push(`halved to ${shrunk.m}x${shrunk.n} for a grid of ${c.minBlocks} blocks or more`);
  }
  if (tb.m !== from.m || tb.n !== from.n) {
    why.push(`${tb.m}x${tb.n}, whose waves fill the SMs better (waveAwareTile)`);
  }
  if (tb.k !== from.k) why.push(`a k-tile of ${tb.k} (${kWhy ?? "the wave-aware tile's"})`);
  return { tb, smallGrid, splitK, why: why.join("; ") };
}

/** Whether two stages of tile `t` (gemm-pipeline's {@link stageBytes}) fit the target's shared
 * memory a block: the cp.async tiles this deepens keep no other shared memory beside them. */
function twoStagesFit(c: TileContext, t: Shape3): boolean {
  return 2 * stageBytes(c.k, t) <= targetInfo(c.k.target).smemPerBlock;
}
