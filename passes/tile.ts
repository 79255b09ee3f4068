/**
 * `gemm-tile`: the threadblock tile, the rasterisation swizzle, split-K, and
 * which dimensions may leave partial tiles.
 *
 * Defaults per type start from CUTLASS's Ampere recommendations (TF32/BF16
 * 128x128x32, FP16 128x256x32, INT8 128x256x64, FP64 64x64x16, INT4
 * 128x256x128, B1 128x256x512), changed where measurements on the H200 said
 * so (BF16 128x256x32, TF32 128x256x16; see {@link defaultThreadblock}), and
 * shrink M or N when a compile-time size is small, so that a skinny problem
 * does not compute mostly padding.
 *
 * @module
 */

import type { DimRef, GemmKernel, Shape3, TilePlan } from "../ir/gemm.ts";
import type { CachePolicy } from "../ir/cache_policy.ts";
import { hasSyncCopies, knownSize, sparseMetaParam } from "../ir/gemm.ts";
import type { Dtype } from "../ir/dtype.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import {
  WAVE_TILES,
  WAVE_TILES_8BIT,
  WAVE_TILES_SIMT,
  WAVE_TILES_WGMMA,
  waveAwareTile,
  type WaveTile,
} from "./waves.ts";
import { targetInfo } from "../ir/target.ts";
import { stageBytes } from "./pipeline.ts";
import { shapeText } from "../ir/print_gemm.ts";
import {
  SKINNY_STREAMED_B,
  type SkinnyChoice,
  type SkinnyProblem,
  skinnySchedule,
  skinnyWgmmaSchedule,
} from "./skinny.ts";
import {
  WGMMA_SPLIT_MAX_N,
  wgmmaCandidate,
  wgmmaDefaultTile,
  wgmmaOnly,
  wgmmaRowFor,
} from "./wgmma.ts";

/**
 * The default threadblock tile for an MMA operand type.
 *
 * @param t The type the MMA consumes (`math.mmaA`).
 * @returns M x N x K.
 */
export function defaultThreadblock(t: Dtype): Shape3 {
  switch (t) {
    case "f16":
    case "bf16":
      // Measured on the H200 (bench/results/2026-11-29-h200-variants1.txt): 128x256x32
      // beats 128x128x32 by 10-20% for both 16-bit types at 4096^3 and 8192^3.
      return { m: 128, n: 256, k: 32 };
    case "tf32":
    case "f32":
      // Same run: 128x256x16 with 5 stages beat 128x128x32 (244 vs 201 TFLOPS at 8192^3).
      return { m: 128, n: 256, k: 16 };
    case "f64":
      return { m: 64, n: 64, k: 16 };
    case "s8":
    case "u8":
      return { m: 128, n: 256, k: 64 };
    case "e4m3":
    case "e5m2":
      // Never an mma.sync tile (passes/wgmma.ts wgmmaOnly): wgmma's default.
      return { m: 128, n: 256, k: 128 };
    case "s4":
    case "u4":
      return { m: 128, n: 256, k: 128 };
    case "b1":
      return { m: 128, n: 256, k: 512 };
    default:
      throw new Error(`No default tile for "${t}"`);
  }
}

/**
 * The default rasterisation group: 8 (CUTLASS's identity swizzle with
 * groups of 8 tile columns, which kept more of A and B in L2 on the H200:
 * +2% at 8192^3, +14% at 4096^3 for f16), fewer when a compile-time N has
 * fewer tile columns.
 *
 * @param tilesN Tile columns when N is a compile-time size, else null.
 * @returns 1, 2, 4 or 8.
 */
export function defaultSwizzle(tilesN: number | null): number {
  if (tilesN === null) return 8;
  let s = 1;
  while (s < 8 && s < tilesN) s *= 2;
  return s;
}

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

/**
 * An operand whose M (A) or N (B) side is contiguous in memory is copied into
 * shared memory in rows of the tile's M (N) extent, and the copies and the
 * swizzle find their row and column with shifts and masks: that extent must
 * be a power of two (160- and 192-wide tiles are for K-contiguous operands).
 *
 * @returns Null when the tile fits, else the diagnostic's message.
 */
export function mnContiguousPow2(k: GemmKernel, tm: number, tn: number): string | null {
  const pow2 = (v: number) => (v & (v - 1)) === 0;
  for (
    const [ax, v, contiguous, op] of [
      ["M", tm, k.problem.a.layout === "col", k.problem.a.tensor],
      ["N", tn, k.problem.b.layout === "row", k.problem.b.tensor],
    ] as const
  ) {
    if (contiguous && !pow2(v)) {
      return `Threadblock ${tm}x${tn}: ${op} is ${ax}-contiguous, so the tile's ${ax} extent ` +
        `${v} must be a power of two (only K-contiguous operands take tiles such as 160 or 192)`;
    }
  }
  return null;
}

/** A tile side halved while the compile-time size fits in half of it, down to `min`. */
function shrink(tile: number, size: number | null, min: number): number {
  if (size === null) return tile;
  let t = tile;
  while (t > min && size <= t / 2) t /= 2;
  return t;
}

/** What the default-tile decisions read about a kernel without a given threadblock. */
interface TileContext {
  readonly k: GemmKernel;
  /** The type's default tile ({@link baseTile}), before any size-driven change. */
  readonly d: Shape3;
  /** The smallest M or N side that shrinking leaves: 32 for f64, else 64. */
  readonly minM: number;
  /** Known (or hinted) M, N and K. */
  readonly mc: number | null;
  readonly nc: number | null;
  readonly kc: number | null;
  /** Tensor-core MMAs fed by cp.async: what the size-driven choices apply to. */
  readonly asyncTensor: boolean;
  /** SIMT f32 fed by cp.async. */
  readonly simt: boolean;
  /** A 16-bit MMA (f16, bf16). */
  readonly is16: boolean;
  /** The target's minimum grid (ir/target.ts). */
  readonly minBlocks: number;
  /** SMs of the GPU (`k.sms`, else the target's `defaultSms`). */
  readonly sms: number;
  /** Why a fallback came to the mma.sync default (sm90's {@link wgmmaFallback}). */
  readonly why?: string;
}

/**
 * The default tile before the problem's sizes are weighed: CUTLASS's sgemm
 * tile for SIMT f32 (math f32); for 3xtf32 a 128x64 tile 32 deep, since
 * 3xtf32 needs twice the fragment registers: a 128x64 tile of 4 warps of
 * 64x32 (two blocks an SM) ran +1.5% over 128x128 (8 such warps, one block
 * an SM) at 4096^3 and +7.5% at 5000^3 on the H200 (bench/NOTES.md 43); 32
 * deep (4 stages, half the barriers per MMA) +3.4% at 4096^3 and +3.5% at
 * 8192^3 over 16 deep (NOTES 47). Operands aligned to less than 4 bytes are
 * copied synchronously, one element per load and store (no cp.async): a
 * 128x128 tile keeps the copies per thread (and their registers) in bounds.
 * Otherwise {@link defaultThreadblock}, or for a sparse A (issue 21) {@link sparseThreadblock}.
 */
const SM80_SMEM = targetInfo("sm80").smemPerBlock;

function baseTile(k: GemmKernel, syncCopy: boolean): Shape3 {
  if (k.math.mode === "simt") return { m: 128, n: 128, k: 8 };
  if (k.math.mode === "3xtf32") return { m: 128, n: 64, k: 32 };
  const sparse = sparseMetaParam(k) !== null;
  const d = sparse
    ? sparseThreadblock(
      k.math.mmaA,
      targetInfo(k.target).smemPerBlock >= SM80_SMEM,
      k.problem.k.kind === "const",
    )
    : defaultThreadblock(k.math.mmaA);
  if (syncCopy) return { m: 128, n: 128, k: d.k };
  return d;
}

/**
 * The default tile of a structured-sparse A (issue 21): 256x128 (A's kept values are half
 * as many bytes as B's a k, so a tall tile reads less of shared memory an MMA), four
 * k-steps of `mma.sp` deep (two stages fit: half the barriers an MMA of three 2-step
 * stages). Measured on the H200 at 8192^3 (bench/results/2026-12-03-h200-issue21-meta/
 * packets.txt, one run): f16 608 TFLOP/s against 538 for 160x256x64 (3 stages), 525 for
 * 192x128x128, 499 for 128x256x64; tf32 256x128x64 286 against 274 (160x256x32) and 221
 * (256x128x32, 3 stages); s8 256x128x256 1120 TOP/s against 841 (160x256x128) and 828
 * (128x256x128); 256x128x128 (4 stages) 808 (the same directory, run2/s8-tiles.txt;
 * NOTES 59: two k-steps a tile are too few), but 8-bit kernels with a literal K take it
 * (see below). The 16-bit and tf32 tiles' two stages take 136 KiB; a target with less
 * shared memory a block (sm86: 99 KiB) and s4/u4 keep the dense default twice as deep
 * (128x256x64 f16, 40 KiB a stage; s4/u4 not measured with the packet tile: a shortcut).
 *
 * @param t A's MMA type.
 * @param measured Whether the target has the shared memory of sm80, where the tiles were
 *   measured (sm86 has less, sm90 more).
 * @param literalK Whether K is fixed in the source (8-bit kernels: see below).
 * @returns The tile before the problem's sizes are weighed.
 */
function sparseThreadblock(t: Dtype, measured: boolean, literalK: boolean): Shape3 {
  const twiceDeep = () => {
    const d = defaultThreadblock(t);
    return { ...d, k: 2 * d.k };
  };
  if (!measured) return twiceDeep();
  switch (t) {
    case "f16":
    case "bf16":
      return { m: 256, n: 128, k: 128 };
    case "tf32":
    case "f32":
      return { m: 256, n: 128, k: 64 };
    case "s8":
    case "u8":
      // 256x128x256 (measured: 1120 TOP/s, runtime K) spills 4 bytes with a literal K
      // (ptxas, sm_80, with or without an epilogue): there the half as deep tile (4
      // stages, 808 TOP/s with a runtime K, below the dense 985: a shortcut, the spilling
      // tile not measured against it).
      return { m: 256, n: 128, k: literalK ? 128 : 256 };
    default:
      return twiceDeep();
  }
}

/** The facts about a kernel that the default-tile decisions share. */
function tileContext(k: GemmKernel): TileContext {
  const syncCopy = hasSyncCopies(k);
  const { minBlocks, defaultSms } = targetInfo(k.target);
  return {
    k,
    d: baseTile(k, syncCopy),
    minM: k.math.mmaA === "f64" ? 32 : 64,
    mc: knownSize(k, k.problem.m),
    nc: knownSize(k, k.problem.n),
    kc: knownSize(k, k.problem.k),
    asyncTensor: !syncCopy && k.math.mode === "tensor",
    simt: k.math.mode === "simt" && !syncCopy,
    is16: k.math.mmaA === "f16" || k.math.mmaA === "bf16",
    minBlocks,
    sms: k.sms ?? defaultSms,
  };
}

/** Blocks of tile `t` over known M and N (Infinity when either is unknown). */
function gridBlocks(c: TileContext, t: Shape3): number {
  return c.mc === null || c.nc === null ? Infinity : Math.ceil(c.mc / t.m) * Math.ceil(c.nc / t.n);
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

/** What {@link defaultTile} chooses; `skinny` also names the warp tile and the stages. */
interface ChosenTile {
  readonly tb: Shape3;
  readonly smallGrid: boolean;
  readonly splitK: number;
  readonly skinny?: SkinnyChoice;
  /** A persistent grid where the kernel can have one (sm90's skinny wgmma tiles over more
   * tiles than SMs; passes/wgmma.ts `wgmmaPersistent`). */
  readonly persistent?: true;
  /** A skinny grid whose pipeline takes all the shared memory (TilePlan.deepPipeline). */
  readonly deepPipeline?: true;
  /** Clusters of 2 along M (TilePlan.cluster: sm90's skinny 64-row wgmma tiles). */
  readonly cluster?: 2;
  /** B's L2 eviction priority where the schedule names none (a skinny tile spanning M). */
  readonly cacheB?: CachePolicy;
  /** Why, in words (TilePlan.why). */
  readonly why: string;
}

/**
 * The problem the skinny rules (passes/skinny.ts) weigh, where they were measured: a TN
 * problem of 16-bit operands with f32 accumulators or 8-bit ones (s32), copied by cp.async,
 * M, N and K known or hinted, no batch, a dense ungrouped A, and a schedule that gives none of
 * warp, stages, mma and split_k (any of them keeps the general default). Null otherwise.
 */
function skinnyProblem(c: TileContext): SkinnyProblem | null {
  const { k, mc, nc, kc } = c;
  const s = k.schedule;
  const is8 = k.math.mmaA === "s8" || k.math.mmaA === "u8";
  const typed = (c.is16 && k.math.acc === "f32") || (is8 && k.math.acc === "s32");
  if (
    mc === null || nc === null || kc === null || !c.asyncTensor || !typed ||
    k.problem.a.layout !== "row" || k.problem.b.layout !== "col" ||
    k.problem.batch !== null || k.grouped || sparseMetaParam(k) !== null ||
    s.warp !== undefined || s.stages !== undefined || s.mma !== undefined ||
    s.splitK !== undefined
  ) return null;
  return { M: mc, N: nc, K: kc, sms: c.sms, bytes: is8 ? 1 : 2 };
}

/**
 * A skinny tile's `why`, and B's L2 eviction priority where the tile spans M (each of B's bytes
 * read once: passes/skinny.ts {@link SKINNY_STREAMED_B}) and the schedule names none for B.
 */
function streamedB(
  k: GemmKernel,
  sp: SkinnyProblem,
  tb: Shape3,
  why: string,
): { cacheB?: CachePolicy; why: string } {
  if (sp.M > tb.m || k.schedule.cacheB !== undefined) return { why };
  return {
    cacheB: SKINNY_STREAMED_B,
    why: `${why}; the tile spans M, so B is read once: cache_b ${SKINNY_STREAMED_B} ` +
      "(SKINNY_STREAMED_B)",
  };
}

/**
 * The default schedule of a kernel without a given threadblock: the type's
 * tile shrunk to small compile-time (or hinted) sizes, then to the target's
 * minimum grid unless split-K fills the SMs instead, then deepened or made
 * wave-aware ({@link deepenKTile}).
 */
function defaultTile(k: GemmKernel): ChosenTile {
  // `scheduler pingpong`: the default wgmma tile's width, one warpgroup tall (passes/wgmma.ts
  // `wgmmaPingPong`), whatever the sizes (a shortcut: not weighed against the waves).
  if (k.schedule.scheduler === "pingpong" && wgmmaCandidate(k)) {
    const tb = { ...wgmmaDefaultTile(k), m: 64 };
    const why = `scheduler pingpong: the default wgmma tile's width, one warpgroup tall`;
    return { tb, smallGrid: false, splitK: 1, why };
  }
  const c = tileContext(k);
  const sp = skinnyProblem(c);
  // sm90's wgmma tiles where they beat sm80's skinny ones, else sm80's (passes/skinny.ts).
  const wgSkinny = sp !== null && wgmmaCandidate(k) ? skinnyWgmmaSchedule(sp) : null;
  if (wgSkinny !== null) {
    return {
      tb: wgSkinny.threadblock,
      smallGrid: false,
      splitK: wgSkinny.splitK,
      ...(wgSkinny.persistent ? { persistent: true as const } : {}),
      ...(wgSkinny.cluster !== undefined ? { cluster: wgSkinny.cluster } : {}),
      deepPipeline: true,
      ...streamedB(
        k,
        sp!,
        wgSkinny.threadblock,
        `${skinnyText(sp!)}: sm90's wgmma rule (passes/skinny.ts skinnyWgmmaSchedule), ` +
          `${wgSkinny.rule}${wgSkinny.cluster !== undefined ? ", on clusters of 2 along M" : ""}` +
          `${wgSkinny.persistent ? ", persistent" : ""}`,
      ),
    };
  }
  const skinny = sp === null || wgmmaOnly(k) ? null : skinnySchedule(sp);
  if (skinny !== null) {
    const why = `${skinnyText(sp!)}: the skinny rule (passes/skinny.ts SKINNY_RULES), ` +
      `the one-wave grid of the most blocks: ${skinny.blocks}`;
    const tb = skinny.threadblock;
    return { tb, smallGrid: false, splitK: skinny.splitK, skinny, ...streamedB(k, sp!, tb, why) };
  }
  const sm90 = wgmmaCandidate(k) ? wgmmaFallback(k, c) : { ctx: c };
  if ("tile" in sm90) return sm90.tile;
  return sm80Default(sm90.ctx);
}

/**
 * The share of the SMs a grid of sm90's wgmma tiles must fill, more than, for the tile to be taken
 * ({@link wgmmaFallback}): half, for the default 128x256 and then for 128x128. Above it 128x128
 * needs two waves where 128x256 needs one, and one wave of the wide tile won (f16, K = 4096,
 * TFLOP/s burst / sustained; bench/NOTES.md 82, 84): on the H200 128 blocks (M = 1024, N = 4096)
 * 704 / 605 against 626 / 556 for 128x128; on an H100 112 blocks (M = 896) 641 / 583 against 542 /
 * 508, 96 (M = 768) 578 / 514 against 471 / 451, 80 (M = 640) 488 / 453 against 419 / 400, 70 (M
 * = 640, N = 3584) 426 / 417 against 376 / 374 (at the last three the wave rule's 128x224 ran
 * faster still: 617 / 552, 540 / 487, 476 / 457). Where 128x256 fills at most half, one wave of
 * 128x128 that fills more than half beat the sm80 target's tile (H100, M = 512, N = 4096: 128
 * blocks, 548 burst against 351 for 128x256x32 split 2). Below, the sm80 target's tile.
 */
export const WGMMA_WAVE_FILL = 1 / 2;

/**
 * The share of the SMs one wave of 128x128 must fill, at least, to be taken over a default tile
 * whose grid is also one wave but fills fewer ({@link wgmmaFallback}). Measured on an H100 (s8,
 * 512x4096x4096, TFLOP/s burst / sustained, cuBLAS in each run; bench/NOTES.md 85): 128 blocks of
 * 128x128x128 916.9 / 900.0 against 76 of the default 128x224x128, 698.1 / 712.0 (and 723.5 /
 * 870.1 against 689.6 / 715.4 in a disturbed earlier run). Where 128x128 takes two waves the wide
 * tile wins (640 rows: 813 against 680; 768: 956 against 781). Other types reach this only
 * where N / 128 is odd (M = 512, N = 4224: 68 blocks of 128x256 or 128x224 against 132 of
 * 128x128), measured there on the same H100 against the tile each replaced: f16 557.6 / 520.6
 * against 128x224's 452.7 / 432.5 (NOTES 85), bf16 554.2 / 533.4 against 128x224's 448.5 / 444.9,
 * tf32 294.6 / 278.6 against 128x256x32's 214.3 / 218.0 (NOTES 88). u8 is inferred from s8.
 */
export const WGMMA_FULL_WAVE = 15 / 16;

/**
 * sm90's warpgroup MMA (passes/wgmma.ts) where a wave of its tiles fills the SMs (more than
 * {@link WGMMA_WAVE_FILL} of them): the default tile, else 128x128 where a wave of those fills
 * more than that share; 128x128 also where both grids are one wave and 128x128's fills
 * {@link WGMMA_FULL_WAVE} of the SMs. A smaller grid keeps the mma.sync tile the sm80 target
 * chooses on the same GPU, with its minimum grid (108 blocks, measured on the H200's 132 SMs):
 * at M = 256, N = K = 4096 sm90's own minimum of 132 blocks gave 128x256x32 split 4 (32.0 µs)
 * where sm80's 128x64x128 ran 26.5 (NOTES 69; a shortcut of issue 23: no wgmma tile there).
 */
function wgmmaFallback(k: GemmKernel, c: TileContext): { tile: ChosenTile } | { ctx: TileContext } {
  const tb = wgmmaDefaultTile(k);
  const narrow = { ...tb, n: 128 };
  const blocks = gridBlocks(c, tb), narrowBlocks = gridBlocks(c, narrow);
  const narrowTile = (why: string) => ({ tile: { tb: narrow, smallGrid: false, splitK: 1, why } });
  const hasNarrow = tb.n > 128 && wgmmaRowFor(k, narrow) !== null;
  const oneWaveEach = blocks <= c.sms && narrowBlocks <= c.sms;
  const def = `the ${k.math.mmaA} wgmma default ${shapeText(tb)}`;
  if (hasNarrow && oneWaveEach && narrowBlocks >= WGMMA_FULL_WAVE * c.sms && !wgmmaOnly(k)) {
    return narrowTile(
      `one wave of 128x128 (${narrowBlocks} blocks on ${c.sms} SMs) fills 15/16 of them where ` +
        `${def}'s ${blocks} blocks fill fewer (WGMMA_FULL_WAVE)`,
    );
  }
  // 8-bit floats have no mma.sync plan: wgmma tiles at any size (a shortcut: unshrunk).
  if (blocks > WGMMA_WAVE_FILL * c.sms || wgmmaOnly(k)) {
    const t = wgmmaWaveWidth(k, c, tb);
    const grid = blocks === Infinity
      ? "sizes unknown"
      : `its ${blocks} blocks fill more than half of ${c.sms} SMs (WGMMA_WAVE_FILL)`;
    const why = `${def}: ${wgmmaOnly(k) ? "8-bit floats have no mma.sync plan" : grid}` +
      (t.n !== tb.n
        ? `; ${t.m}x${t.n} wide, whose waves fill the SMs better (WAVE_TILES_WGMMA)`
        : "");
    return { tile: { tb: t, smallGrid: false, splitK: 1, why } };
  }
  if (hasNarrow && narrowBlocks > WGMMA_WAVE_FILL * c.sms) {
    return narrowTile(
      `128x128: ${def}'s ${blocks} blocks fill at most half of ${c.sms} SMs, 128x128's ` +
        `${narrowBlocks} more (WGMMA_WAVE_FILL)`,
    );
  }
  return {
    ctx: {
      ...c,
      minBlocks: targetInfo("sm80").minBlocks,
      why: `wgmma tiles would fill at most half of ${c.sms} SMs (WGMMA_WAVE_FILL): ` +
        `the sm80 target's mma.sync tile`,
    },
  };
}

/**
 * The width of sm90's default 16-bit wgmma tile over known M and N: 128x256, or a tile of
 * {@link WAVE_TILES_WGMMA} where its waves fill the SMs enough better ({@link waveAwareTile}).
 */
function wgmmaWaveWidth(k: GemmKernel, c: TileContext, tb: Shape3): Shape3 {
  const sixteen = k.math.mmaA === "f16" || k.math.mmaA === "bf16";
  if (!sixteen || tb.n !== 256 || c.mc === null || c.nc === null) return tb;
  const t = waveAwareTile(tb, c.mc, c.nc, c.sms, WAVE_TILES_WGMMA);
  return wgmmaRowFor(k, t) !== null ? t : tb;
}

/** The mma.sync default: shrunk, split, deepened (see {@link defaultTile}). */
function sm80Default(c: TileContext): ChosenTile {
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

/** A skinny problem's sizes, as the rules weigh them. */
function skinnyText(p: SkinnyProblem): string {
  return `M = ${p.M}, N = ${p.N}, K = ${p.K} on ${p.sms} SMs`;
}

/**
 * The checks of a threadblock, given or chosen (E0209). K is a power of two
 * (the k-loop counts tiles with a shift). M and N may be any multiple of 16
 * and 8: 192x256 tiles of 96x64 warps read fewer shared-memory and L2 bytes
 * per MMA than any power-of-two tile whose accumulators fit (bench/NOTES.md
 * 14); the warp pass checks that warps divide them.
 */
function checkThreadblock(k: GemmKernel, tb: Shape3): void {
  const tbError = (msg: string) => scheduleError(k, "threadblock", "E0209", msg);
  if ((tb.k & (tb.k - 1)) !== 0) {
    tbError(`Threadblock ${tb.m}x${tb.n}x${tb.k}: the K extent ${tb.k} is not a power of two`);
  }
  if (tb.m < 16 || tb.n < 8) {
    tbError(`Threadblock ${tb.m}x${tb.n}x${tb.k} is smaller than one MMA (16x8)`);
  }
  const notPow2 = mnContiguousPow2(k, tb.m, tb.n);
  if (notPow2 !== null) tbError(notPow2);
  for (const [ax, v, q] of [["M", tb.m, 16], ["N", tb.n, 8]] as const) {
    if (v % q !== 0) {
      tbError(
        `Threadblock ${tb.m}x${tb.n}x${tb.k}: the ${ax} extent ${v} is not a multiple of ${q}`,
      );
    }
  }
}

/**
 * The check of a split-K (E0207) against a declared K only: a hinted K may
 * differ at run time, and splits without k-tiles add zeros.
 */
function checkSplitK(k: GemmKernel, tb: Shape3, splitK: number): void {
  const p = k.problem;
  if (splitK <= 1 || p.k.kind !== "const") return;
  const kTiles = Math.ceil(p.k.value / tb.k);
  if (kTiles < splitK) {
    scheduleError(
      k,
      "split_k",
      "E0207",
      `"split_k ${splitK}" exceeds the ${kTiles} k-tiles of K=${p.k.value} (tile K ${tb.k})`,
    );
  }
}

/** The pass. */
export const tilePass: GemmPass = {
  name: "gemm-tile",
  title: "Tile",
  summary: "Choose the threadblock tile, rasterisation swizzle and split-K; plan partial tiles",
  run(k: GemmKernel): GemmKernel {
    const p = k.problem;
    const given = k.schedule.threadblock;
    const chosen: ChosenTile = given === undefined
      ? defaultTile(k)
      : { tb: given, smallGrid: false, splitK: 1, why: "given by the schedule" };
    const skinny = chosen.skinny;
    const tb = chosen.tb;
    checkThreadblock(k, tb);
    // A default tile split along K keeps mma.sync where a warpgroup's row would be wider than
    // 128: the reduction beside 128 accumulators a thread spills (passes/wgmma.ts
    // wgmmaDefaultTile; bench/NOTES.md 78: 24-28 bytes at 64x256 split 4, M = 1).
    const splitWide = given === undefined && chosen.splitK > 1 && tb.n > WGMMA_SPLIT_MAX_N &&
      k.schedule.mma === undefined && !wgmmaOnly(k);
    const wgmma = wgmmaCandidate(k) && wgmmaRowFor(k, tb) !== null && !splitWide;
    if (k.schedule.mma?.m === 64 && !wgmma) {
      const mm = k.schedule.mma;
      scheduleError(
        k,
        ["mma", "threadblock"],
        "E0203",
        `"mma ${mm.m}x${mm.n}x${mm.k}" is a warpgroup MMA (wgmma): it needs target sm90, ` +
          `f16, bf16, tf32, s8 or u8 operands, A row-major and B column-major, no warp tile, ` +
          `and a threadblock of 64 or 128 rows, N = ${mm.n} and one 128-byte row of K`,
      );
    }
    const nConst = knownSize(k, p.n);
    // A grouped kernel (DESIGN §6.2): its persistent blocks take whole tiles from
    // every problem in turn, so no swizzle and no split-K (the checker refuses both).
    const swizzle = k.grouped
      ? 1
      : k.schedule.swizzle ?? defaultSwizzle(nConst === null ? null : Math.ceil(nConst / tb.n));
    const splitK = k.grouped ? 1 : k.schedule.splitK ?? chosen.splitK;
    checkSplitK(k, tb, splitK);
    const partial = (d: DimRef, t: number) => d.kind === "sym" || d.value % t !== 0;
    const tile: TilePlan = {
      threadblock: tb,
      swizzle,
      splitK,
      partial: { m: partial(p.m, tb.m), n: partial(p.n, tb.n), k: partial(p.k, tb.k) },
      ...(chosen.smallGrid ? { smallGrid: true as const } : {}),
      ...(skinny !== undefined ? { skinny: { warp: skinny.warp, stages: skinny.stages } } : {}),
      ...(chosen.deepPipeline ? { deepPipeline: true as const } : {}),
      ...(wgmma ? { wgmma: true as const } : {}),
      ...(chosen.persistent ? { persistent: true as const } : {}),
      ...(chosen.cluster !== undefined ? { cluster: chosen.cluster } : {}),
      why: chosen.why,
    };
    // B read once by a skinny tile that spans M: its copies evict_first, unless the schedule
    // names B's priority (passes/skinny.ts SKINNY_STREAMED_B).
    const cacheB = k.schedule.cacheB ?? chosen.cacheB;
    return {
      ...k,
      schedule: {
        ...k.schedule,
        threadblock: tb,
        swizzle,
        splitK,
        ...(cacheB !== undefined ? { cacheB } : {}),
      },
      plan: { ...k.plan, tile },
    };
  },
};
