/**
 * Skinny problems (issue 22): the GEMMs of LLM inference, a few to a few hundred
 * rows of activations against a large weight matrix, are bound by reading the
 * weights from HBM, not by the tensor cores. What reaches that limit is one wave
 * of blocks that fills the SMs, each streaming a long run of K through a deep
 * pipeline: a tile 16 or 64 rows tall, 128 deep, and split-K where the output
 * tiles alone leave SMs idle. {@link skinnySchedule} picks it for a 16-bit
 * TN problem (A row-major, B column-major) with known (or hinted) M <= 128.
 *
 * The candidates and the rule come from one sweep on the H200 (132 SMs; 35
 * schedules at the 18 f16 shapes of `bench/llm_shapes.ts`, each a CUDA graph of
 * 20 launches over 4 input sets; bench/research/llm/, bench/NOTES.md 56): the
 * fastest schedule of every shape with M <= 128 has one wave of 112-128 blocks,
 * the fewest splits among those, and, for M = 128 with a long K, warps larger
 * than 32x32 (whose MMAs then start to count). Measured for f16 with f32
 * accumulation; bf16 takes the same (its copies and MMAs are the same sizes).
 * 8-bit operands (s8, u8; s32 accumulators) have their own candidates, the same
 * bytes a k-tile row (bench/NOTES.md 60, measured at M = 16 and 128). Shortcuts:
 * batched problems, 4-bit and other types, other layouts and f16 accumulation keep
 * the general default; 8-bit M in 17..64 takes the M = 128 candidates unmeasured.
 *
 * @module
 */

import type { CachePolicy } from "../ir/cache_policy.ts";
import type { Shape3 } from "../ir/gemm.ts";

/** One candidate: the threadblock, its warp tile and its preferred stage count. */
export interface SkinnyTile {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly warp: { readonly m: number; readonly n: number };
  readonly stages: number;
  /** Only for K up to this (32x32 warps lose to larger ones on long K: NOTES 56). */
  readonly maxK?: number;
  /** Only without split-K (the tile measured only so: 16x112, NOTES 101). */
  readonly unsplit?: boolean;
}

/** The candidates of problems up to `maxM` rows. */
export interface SkinnyClass {
  readonly maxM: number;
  readonly tiles: readonly SkinnyTile[];
}

/**
 * The candidates by M, in order of preference on a tie, with what they measured
 * (f16, µs; NOTES 56). M <= 16: at N=K=4096 16x32x256 (128 blocks) 11.5, 16x64x128
 * split 2 12.2-12.3, the old default 64x256x64 split 4 19.3; at N=14336 16x128x128
 * (112 blocks) 29.6 against 31.9; at K=14336 16x64x128 split 2 31.4-31.6 against
 * 42.0, where 16x32x256 lost 2% (so it stops at K = 8192). M = 64: 64x64x128 split
 * 2 14.3-14.5 and 34.8-35.0 (K=14336) against 19.8 and 43.1. M = 128: 64x64x128
 * 17.1-17.3 against 28.2; at N=14336 128x128x64 41.2-41.8 against 46.8; at
 * K=14336 64x128x128 split 2 45.6-46.7 against 55.2, where 64x64x128 took 58.0.
 *
 * 16x32x256 keeps 4 stages (96 KB), not 3. bench/timeline.ts (NOTES 95, an H100, M = 16, N = K =
 * 4096, PDL) showed the blocks' ends spread over ~2 µs, and with 6 stages every quantile of them
 * ~0.5 µs earlier (the spread did not shrink): more bytes in flight a block, faster streaming. With
 * B `evict_first`, the llm table's protocol (µs burst, +PDL in brackets): 3 stages 14.4 (12.6), 4
 * stages 14.1 (12.3), 6 stages 14.2 (12.3-12.4), 9 stages 14.5 (13.4: 216 KB leave no room for
 * the next grid's block beside this one, so PDL gains less), 3 again 14.4 (12.6); then the new
 * default against 3 stages, bracketed: f16 M = 16 12.2-12.3 against 12.6, M = 1 12.2 against
 * 12.5-12.6, bf16 M = 16 12.2-12.3 against 12.6, f16 K = 8192 23.2-23.3 against 23.8-23.9 (without
 * PDL 0-0.4 µs). 4 stages is the deepest whose next grid's block fits beside it. Before the hint,
 * NOTES 73 and 90 measured 3, 6 and 9 stages as a tie on the H100; the H200 is inferred.
 *
 * 16x112x128 on two warps of 16x56 gives N = 14336 a wave of 128 blocks where 16x128 gave 112
 * (NOTES 101, an H100, M = 16, K = 4096, µs burst, PDL in brackets, 16x128 / 16x112 / 16x128 in
 * one call): f16 41.7 (38.4), 41.0 (38.0), 41.6 (38.4); s8 (16x112x256 below) 22.7 (19.6), 22.4
 * (19.3), 22.8 (19.6). Seven warps of 16x16 on the same tile tied 16x128 (41.4, 22.6). The H200 is
 * inferred, and so is every other N where 16x112 makes more blocks than 16x128 in one wave (about
 * 8,449-14,784 on 132 SMs, 6,913-12,096 on 108): the rule's own principle, measured at N = 14336.
 * It is never split (`unsplit`): at N = K = 4096 on 108 SMs it would otherwise take 74 blocks of
 * 16x112 split 2 from 16x64's 64, a split not measured.
 */
export const SKINNY_TILES_16: readonly SkinnyClass[] = [
  {
    maxM: 16,
    tiles: [
      { m: 16, n: 32, k: 256, warp: { m: 16, n: 8 }, stages: 4, maxK: 8192 },
      { m: 16, n: 64, k: 128, warp: { m: 16, n: 16 }, stages: 4 },
      { m: 16, n: 112, k: 128, warp: { m: 16, n: 56 }, stages: 4, unsplit: true },
      { m: 16, n: 128, k: 128, warp: { m: 16, n: 32 }, stages: 4 },
    ],
  },
  {
    maxM: 64,
    tiles: [
      { m: 64, n: 64, k: 128, warp: { m: 32, n: 32 }, stages: 4 },
      { m: 64, n: 128, k: 128, warp: { m: 32, n: 64 }, stages: 3 },
    ],
  },
  {
    maxM: 128,
    tiles: [
      { m: 64, n: 64, k: 128, warp: { m: 32, n: 32 }, stages: 4, maxK: 8192 },
      { m: 64, n: 128, k: 128, warp: { m: 32, n: 64 }, stages: 3 },
      { m: 128, n: 128, k: 64, warp: { m: 64, n: 64 }, stages: 4 },
    ],
  },
];

/**
 * The 8-bit candidates (s8, u8 operands), with what they measured (s8 -> s32, µs,
 * a CUDA graph of 20 launches over 4 input sets; bench/NOTES.md 60). M <= 16: at
 * N = K = 4096 16x32x512 (128 blocks) 6.9 against the general default's 10.4; at
 * N = 14336 16x128x256 (112 blocks) 16.4 against 18.0 (16x112x256 since NOTES 101, as the 16-bit
 * 16x112 above); at K = 14336 16x32x512 18.2 against 29.1 (16x64x256 split 2: 18.4). M = 128: 64x64x256 is the general default
 * at N = 4096 (10.5, and 28.3 at K = 14336); at N = 14336 128x112x128 (128 blocks)
 * 23.0 against 29.4; at N = 8192 the general default's 128x64x256 (128 blocks, the
 * main benchmark's skinny s8 row, bench/NOTES.md 23) stays. No split-K for 8-bit
 * operands: it lost in the sweep (M = 128, K = 14336: 64x64x256 split 2 37.3 against
 * 28.3 unsplit) or tied (M = 16: 16x64x256 split 2 18.4 against 16x32x512's 18.2). The same
 * shared memory as 16x32x256 in 6 stages beat 16x32x512 in 3 on an H100 in three calls at M = 16,
 * N = K = 4096 (NOTES 85, 86; the llm table's protocol, µs, PDL): 9.0 against 9.3 (7.9, 8.0),
 * 9.2 against 9.4 (8.0, 8.1), 8.9 against 9.4 (7.9, 8.0), and at K = 14336 23.3 against 24.1
 * (22.0, 22.5): M <= 16 takes it (sm80 and sm86 inferred from the H100, which runs this tile).
 */
export const SKINNY_TILES_8: readonly SkinnyClass[] = [
  {
    maxM: 16,
    tiles: [
      { m: 16, n: 32, k: 256, warp: { m: 16, n: 8 }, stages: 6 },
      { m: 16, n: 64, k: 256, warp: { m: 16, n: 16 }, stages: 4 },
      { m: 16, n: 112, k: 256, warp: { m: 16, n: 56 }, stages: 4, unsplit: true },
      { m: 16, n: 128, k: 256, warp: { m: 16, n: 32 }, stages: 4 },
    ],
  },
  {
    maxM: 128,
    tiles: [
      { m: 64, n: 64, k: 256, warp: { m: 32, n: 32 }, stages: 4 },
      { m: 128, n: 64, k: 256, warp: { m: 64, n: 32 }, stages: 3 },
      { m: 128, n: 112, k: 128, warp: { m: 64, n: 56 }, stages: 4 },
    ],
  },
];

/** The split-K counts tried, and the fewest k-tiles a split keeps. */
const SPLITS = [1, 2, 4, 8] as const;
const MIN_KTILES_PER_SPLIT = 8;

/** By operand bytes: the candidates, and the split-K counts tried (8-bit: none, see
 * {@link SKINNY_TILES_8}). */
const SKINNY_RULES: Readonly<
  Record<1 | 2, { readonly classes: readonly SkinnyClass[]; readonly splits: readonly number[] }>
> = {
  1: { classes: SKINNY_TILES_8, splits: [1] },
  2: { classes: SKINNY_TILES_16, splits: SPLITS },
};

/**
 * The smallest N and K the rule serves: the sweep measured N, K >= 4096 (a weight
 * matrix of LLM inference); smaller problems keep the general default.
 */
const MIN_NK = 2048;

/** What {@link skinnySchedule} weighs. */
export interface SkinnyProblem {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  /** SMs of the GPU. */
  readonly sms: number;
  /** Bytes of an operand element: 2 (f16, bf16; the default) or 1 (s8, u8). */
  readonly bytes?: 1 | 2;
}

/**
 * The chosen schedule: the tile, the warp tile, the preferred stage count
 * (gemm-pipeline caps it by the target's shared memory) and split-K.
 */
export interface SkinnyChoice {
  readonly threadblock: Shape3;
  readonly warp: Shape3;
  readonly stages: number;
  readonly splitK: number;
  /** Blocks of the grid. */
  readonly blocks: number;
}

/**
 * The L2 eviction priority of B's copies where a skinny tile ({@link skinnySchedule}, {@link
 * skinnyWgmmaSchedule}) spans all of M, so that each of B's bytes is read by one block, once (the
 * weights of a decode GEMM): `evict_first`, the `cache_b` key's default there (passes/tile.ts).
 * Measured on an H100 (f16, N = K = 4096, the sm90 target, µs burst / sustained, default /
 * evict_first / default again in one call; bench/NOTES.md 91): M = 16 (16x32x256, mma.sync fed by
 * cp.async) 15.5 / 15.5, 14.8 / 14.8, 15.4 / 15.4, and with PDL 14.1, 13.0, 14.0 (0.80 to 0.86
 * of the floor); M = 128 (128x32x64, wgmma fed by TMA) 16.6 / 16.7, 15.5 / 15.7, 16.7 / 16.8
 * (PDL 15.3, 14.5, 15.4); A `evict_last` beside it added nothing (15.4 / 15.6). On the H200
 * (NOTES 92, `cache_b evict_normal` then the default, two calls on one machine, µs burst, PDL):
 * f16 M = 1 12.6 -> 12.0 (11.1 -> 10.6), M = 16 12.9 -> 12.2 (11.2 -> 10.7), M = 64 (64x32 wgmma)
 * 12.8 -> 11.8 (11.2 -> 10.8), M = 128 14.7 -> 13.9 in one call (13.1 -> 13.0); s8 M = 16 8.0 ->
 * 7.3 (6.5 -> 5.8), M = 128 9.8 -> 9.2 (8.3 -> 8.3). Where the tile is shorter than M, each of
 * B's bytes is read by several blocks, and no hint is given, unless a cluster along M multicasts
 * B's box to tiles that together span M (read from the L2 once). Measured after, on an H100
 * (NOTES 94, against NOTES 90's runs without it): f16 M = 128 on 64x64 clusters 17.2 -> 15.6, and
 * bf16 there 15.6 with it. Inferred, not measured: the clusters and bf16 on the H200, the N =
 * 14336 and K = 14336 rows (given it, they ran at 0.83-0.93 of the H200's floor, NOTES 92), and
 * the sm80 and sm86 targets (the same cp.async instructions).
 */
export const SKINNY_STREAMED_B: CachePolicy = "evict_first";

/**
 * The k-loop rotation (`rotate_k`, passes/lower/rotate_k.ts) the skinny rule gives its one
 * measured tile, {@link SKINNY_ROTATED_TILE} of 16-bit operands without split-K
 * ({@link skinnyRotation}): block x starts at k-tile x mod kTiles, so that the blocks of the one
 * wave do not read the same k-tile of A, and B at the same offset of their slices, at once. A
 * kernel that reads A and B as that tile does and nothing else (bench/slice_read.ts, an H100,
 * bench/NOTES.md 96) ended its last block 0.2-0.3 µs sooner at N = K = 4096 and 0.6-0.7 µs at
 * K = 8192 rotated by 1 or 5 k-tiles a block. Measured on our kernels (NOTES 96, an H100, M = 16,
 * N = 4096, `--target sm90`, the default bracketing `rotate_k 0` in one call, µs burst, ours+PDL in
 * brackets): f16 K = 4096 14.2-14.3 (12.3-12.4) against 14.3-14.4 (12.5); bf16 14.2-14.3
 * (12.3-12.5) against 14.3 (12.5-12.6); f16 K = 8192 25.7 (23.5-23.6) against 26.0-26.1
 * (24.0-24.1), bf16 25.8-25.9 (23.5-23.6) against 26.1 (23.9-24.0); the slowest block 0.24 µs
 * sooner (bench/timeline.ts). s8 on the same tile (6 stages) lost: 7.0-7.1 against 6.8-6.9 with
 * PDL, so 8-bit tiles are not rotated. The split-K tile of K = 14336 (16x64x128, split_k 2) tied
 * rotated (NOTES 97, f16 and bf16 at M = 1 and 16: 44.0-44.4 µs, 42.4-42.7 with PDL, both ways), so
 * it is not rotated; nor are the tiles not measured rotated (the A100's 16x64x128, the taller sm80
 * tiles): the mechanism is general, the sign is not (s8). Not measured on the H200, where the
 * targets are.
 */
export const SKINNY_ROTATE_K = 1;

/** The one skinny tile measured rotated ({@link SKINNY_ROTATE_K}): 16x32x256, one wave of 128
 * blocks at M <= 16 on 128 SMs or more. */
export const SKINNY_ROTATED_TILE: Shape3 = Object.freeze({ m: 16, n: 32, k: 256 });

/**
 * The rotation the skinny rule gives its choice: {@link SKINNY_ROTATE_K} for
 * {@link SKINNY_ROTATED_TILE} of 16-bit operands without split-K, else none.
 *
 * @param p The problem.
 * @param c The skinny choice for it.
 * @returns The `rotate_k`, or undefined.
 */
export function skinnyRotation(p: SkinnyProblem, c: SkinnyChoice): number | undefined {
  const t = c.threadblock, r = SKINNY_ROTATED_TILE;
  const measured = t.m === r.m && t.n === r.n && t.k === r.k;
  return measured && (p.bytes ?? 2) === 2 && c.splitK === 1 ? SKINNY_ROTATE_K : undefined;
}

/**
 * The skinny schedule for a problem: among the candidates of M's class and
 * split-K in 1, 2, 4, 8 (each split at least 8 k-tiles; 1 for a candidate marked
 * `unsplit`), those whose grid is one
 * wave (blocks <= SMs); the most blocks, then the fewest splits, then the
 * candidates' order. Null when M is above 128, N or K below 2048, or no candidate
 * fits in one wave (a wide N): the general default then.
 *
 * @param p The problem.
 * @returns The choice, or null.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { skinnySchedule } from "./skinny.ts";
 * const c = skinnySchedule({ M: 16, N: 4096, K: 4096, sms: 132 })!;
 * equal(`${c.threadblock.m}x${c.threadblock.n} split ${c.splitK}`, "16x32 split 1");
 * ```
 */
export function skinnySchedule(p: SkinnyProblem): SkinnyChoice | null {
  const rule = SKINNY_RULES[p.bytes ?? 2];
  const cls = rule.classes.find((c) => p.M <= c.maxM);
  if (cls === undefined || p.N < MIN_NK || p.K < MIN_NK) return null;
  let best: SkinnyChoice | null = null;
  for (const t of cls.tiles) {
    if (t.maxK !== undefined && p.K > t.maxK) continue;
    const tiles = Math.ceil(p.M / t.m) * Math.ceil(p.N / t.n);
    const kTiles = Math.ceil(p.K / t.k);
    for (const s of rule.splits) {
      if (s > 1 && (t.unsplit || kTiles / s < MIN_KTILES_PER_SPLIT)) break;
      const blocks = tiles * s;
      if (blocks > p.sms) break;
      const better = best === null || blocks > best.blocks ||
        (blocks === best.blocks && s < best.splitK);
      if (better) {
        best = {
          threadblock: { m: t.m, n: t.n, k: t.k },
          warp: { m: t.warp.m, n: t.warp.n, k: t.k },
          stages: t.stages,
          splitK: s,
          blocks,
        };
      }
    }
  }
  return best;
}

/** What {@link skinnyWgmmaSchedule} chooses: sm90's 128x128x64 wgmma tile and split-K. */
export interface SkinnyWgmmaChoice {
  readonly threadblock: Shape3;
  readonly splitK: number;
  /** Blocks of the grid (tiles x splits; a persistent grid has at most one an SM). */
  readonly blocks: number;
  /** A persistent grid: where there are more tiles than SMs, unsplit (M = 256, N = 14336: 56.1
   * µs against 57.6 for one block a tile, bench/NOTES.md 68), and for 8-bit types' 128x32 tiles
   * (one a block; NOTES 85). */
  readonly persistent: boolean;
  /** Clusters of 2 along M (B multicast, passes/wgmma.ts `wgmmaCluster`), which make the grid
   * persistent: the 64x64 tiles of M = 65-128, whose two tile rows then read each column of B
   * from L2 once. */
  readonly cluster?: 2;
  /** Which rule chose it, in words (`gemm compile --emit explain`). */
  readonly rule: string;
}

/** sm90's skinny tile: two consumer warpgroups of 64 x 128, one 128-byte row of K. */
const WGMMA_SKINNY_TILE: Shape3 = { m: 128, n: 128, k: 64 };

/**
 * sm90's narrower skinny tiles, in order (the first whose grid fills 3/4 of the SMs in one wave),
 * where the 128x128 tiles neither fill the SMs nor split a long K: two consumer warpgroups of 64 x
 * 64 for M above 128, one of 64 x 32 for M = 33-64, one of 64 x 64 on clusters for M = 65-128
 * (8-bit types: two of 64 x 32, 128x32, below K = 8192).
 * Measured with deep pipelines on an H100 (f16, `gemm run`, µs; bench/NOTES.md 73): M = 256,
 * N = K = 4096 128x64 20.7 against 25.5 for sm80's 128x64x128 (and 28.4 with 4 stages); M =
 * 128 64x64 18.0 against 20.0. The 64x64 tiles run on clusters of 2 (the two tile rows read B's
 * columns from L2 once) and come before a split K: M = 128, N = 4096, K = 14336 47.2 against
 * 57.0 for 128x128 split 4, and N = K = 4096 19.9 against 20.2 for the same tile unclustered
 * (NOTES 76, an H100); 128x64 on clusters lost (M = 256: 22.8 against 19.4 at N = K = 4096, 62.9
 * against 57.3 for split 2 at K = 14336). At M = 64 (NOTES 79, an H100, the llm table's
 * protocol, µs burst, +PDL): N = K = 4096 64x32 with 18 stages 15.5, +PDL 14.3, against 18.7 and
 * 16.0 for sm80's 64x64x128 split 2; on clusters of 2 along N (A multicast) 16.9 and 15.6.
 * s8 at M = 128 (NOTES 79, the same protocol), 64x64x128 on clusters with 14 stages against
 * sm80's 64x64x256: N = K = 4096 11.0 against 11.4 (PDL 10.0, 10.3), K = 14336 26.9 against 30.6
 * (PDL 25.3, 29.0); the other 8-bit rows keep sm80's tiles (64x64 at N = 14336, more than one
 * wave, lost: 29.6 against 28.2; the rest not measured on wgmma). A persistent 128x32x128 beat
 * that 64x64x128 at N = K = 4096 (NOTES 85, an H100, two calls: 10.3 and 10.2 against 11.0, PDL
 * 9.0 and 8.9 against 10.0) and lost at K = 14336 (26.9 / 27.2 against 26.5 / 26.6, PDL 25.6 /
 * 27.4 against 25.2 / 26.2), where f16's 128x32 tied its 64x64 at N = K = 4096 (NOTES 81): so
 * 8-bit types take 128x32 below K = 8192 and 64x64 from there. f16's 128x32 (one block a tile, 11
 * stages) then beat its 64x64 on clusters in two calls at M = 128, N = K = 4096 (NOTES 86, an
 * H100, the llm table's protocol, µs burst / sustained, PDL): 16.7 / 16.8 against 17.1 / 17.1
 * (PDL 15.3 / 15.5 against 16.0 / 16.2), and 16.7 / 16.8 against 17.3 / 17.3 (PDL 15.3 / 15.7
 * against 16.0 / 16.6), and lost at K = 14336 (49.9 against 47.3): so 16-bit types take it below
 * K = 8192 too. bf16's pair, measured after (NOTES 88, an H100, adjacent runs): 16.3 / 16.4
 * against 16.7 / 16.7 on clusters (PDL 14.9 / 15.1 against 15.6 / 15.6). Its K = 14336 side,
 * measured after (NOTES 89, the H200, adjacent runs): the 64x64 on clusters 36.5 / 41.5 against
 * 128x32's 40.2 / 46.8 (PDL 35.3 / 43.3 against 39.3 / 47.6), as f16's. On the H200, where
 * issue 22's targets are stated, the K = 4096 side reverses (NOTES 92, the llm table's protocol,
 * f16 at M = 128, N = K = 4096, neither with an L2 hint): 64x64 on clusters 14.0 / 14.7 (PDL 12.6
 * / 13.6) against 128x32's 14.7 / 15.9 (PDL 13.1 / 15.1). So 16-bit types take 64x64 on clusters
 * at every K and give up the H100's 3% (the target table cannot tell the two 132-SM cards
 * apart). The pair with B `evict_first` on both sides, measured after on an H100 (NOTES 94, f16 and
 * bf16 alike): 15.6 against 128x32's 15.3 (PDL 14.7 against 14.2), the H100's 2-3.5% as
 * predicted. Inferred, not measured: the pair with the hint, and bf16, on the H200.
 */
const WGMMA_SKINNY_NARROW: readonly {
  readonly tile: Shape3;
  readonly maxM: number;
  /** On clusters of 2, and chosen before a split K (bench/NOTES.md 76). */
  readonly cluster?: 2;
  /** Which operand widths it serves, in bytes (8-bit tiles take a k-tile twice as deep: one
   * 128-byte row of K). */
  readonly bytes: readonly (1 | 2)[];
  /** A persistent grid (one tile a block where the grid is one wave). */
  readonly persistent?: true;
  /** Only below this K (a long K takes the next tile). */
  readonly belowK?: number;
}[] = [
  { tile: { m: 128, n: 64, k: 64 }, maxM: 256, bytes: [2] },
  { tile: { m: 64, n: 32, k: 64 }, maxM: 64, bytes: [2] },
  { tile: { m: 128, n: 32, k: 64 }, maxM: 128, bytes: [1], persistent: true, belowK: 8192 },
  { tile: { m: 64, n: 64, k: 64 }, maxM: 128, cluster: 2, bytes: [1, 2] },
];

/** The fewest rows sm90's skinny wgmma tiles serve: below, sm80's skinny tiles (16 rows tall)
 * stay (M = 16: 64x32 with 18 stages 19.8 µs against 16.2, bench/NOTES.md 74); M = 64 took
 * 64x32 (NOTES 79); M = 33-63 is inferred from it, not measured. */
const WGMMA_SKINNY_MIN_M = 33;

/** The share of the SMs the 128x128 tiles must fill unsplit, and the shortest K a split
 * serves (both from the measured rows of {@link skinnyWgmmaSchedule}). */
const WGMMA_SKINNY_MIN_FILL = 0.75;
const WGMMA_SKINNY_SPLIT_MIN_K = 8192;

/**
 * The skinny schedule of a 16-bit problem on a target with wgmma (sm90) where the warpgroup
 * tile beats sm80's skinny tiles, or null (sm80's rule, {@link skinnySchedule}, then). Measured
 * on the H200 (f16, µs; bench/NOTES.md 67-68): where 128x128 tiles fill at least 3/4 of the SMs
 * unsplit (a wide N: M = 128, N = 14336 37.0 against 43.7 for sm80's, bf16 36.4 against 44.0;
 * M = 100 37.4 against 44.0; M = 256 56.1 against 72.0), or where a long K (>= 8192) splits
 * them into one wave (N = 4096, K = 14336: M = 128 split 4, 42.2 against 47.7; M = 256 split 2,
 * 56.9 against 81.8). Where neither holds, a narrower tile that fills 3/4 of the SMs in one wave
 * ({@link WGMMA_SKINNY_NARROW}: M = 129-256 and 65-128 at N = K = 4096); at M = 65-128 its 64x64
 * tiles on clusters of 2 come before the split (M = 128, K = 14336 on an H100: 47.2 against 57.0
 * for split 4, NOTES 76). At M = 33-64 only the narrow 64x32 tile, where its grid is one wave
 * (N = 4096 at K = 4096 or 14336; NOTES 79). Every one of these
 * pipelines takes all the shared memory (TilePlan.deepPipeline): a TMA producer keeps every
 * stage in flight, and the loads are what bounds these grids (NOTES 73: M = 256, N = K = 4096
 * 128x64 with 9 stages 20.7 against 28.4 with 4). With 4 stages, sm80's tiles tied or won at N
 * = K = 4096 (M = 128: 19.0 against 19.4; M = 256: 29.2 against 27.3; NOTES 67). M <= 32 keeps
 * sm80's tiles, and M = 33-64 wherever the 64x32 grid is more than one wave: 64-row wgmma tiles
 * (one consumer warpgroup) with 4 stages tied at best (34.7 against 34.8 at N = 14336, 37.4
 * against 37.7 at K = 14336) and lost at N = K = 4096 (20.2 against 18.1); with deep pipelines
 * on an H100 they lost at M = 16 (NOTES 74: N = K = 4096 64x32 with 18 stages 19.8 against 16.2;
 * M = 64 64x64 split 2 19.6 against 19.7).
 * At M = 65-128, 16-bit types take 64x64 on clusters at every K (NOTES 92: on the H200 it beat
 * the 128x32 that NOTES 86 chose on an H100 below K = 8192).
 * 8-bit types take only the narrow tiles of M = 65-128 where they make one wave: persistent
 * 128x32x128 below K = 8192, 64x64x128 on clusters from there (NOTES 79, 85); sm80's rule
 * elsewhere. Shortcuts: the other 8-bit rows are not measured on wgmma
 * (u8 is inferred from s8); the main benchmark's M = 128, N = K = 8192 takes split 2 by the rule, not
 * measured when it was written.
 *
 * @param p The problem (16-bit or 8-bit operands).
 * @returns The choice, or null.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { skinnyWgmmaSchedule } from "./skinny.ts";
 * const c = skinnyWgmmaSchedule({ M: 256, N: 4096, K: 14336, sms: 132 })!;
 * equal(`${c.threadblock.m}x${c.threadblock.n} split ${c.splitK}`, "128x128 split 2");
 * ```
 */
export function skinnyWgmmaSchedule(p: SkinnyProblem): SkinnyWgmmaChoice | null {
  if (p.M < WGMMA_SKINNY_MIN_M || p.M > 256 || p.N < MIN_NK || p.K < MIN_NK) return null;
  // 8-bit operands: only the narrow tiles measured for them (M = 65-128).
  if ((p.bytes ?? 2) === 1) return p.M > 64 ? narrowWgmmaTile(p) : null;
  // M <= 64: only a one-wave grid of 64x32 tiles (a 128-row tile would be half empty).
  if (p.M <= 64) return narrowWgmmaTile(p);
  const t = WGMMA_SKINNY_TILE;
  const tiles = Math.ceil(p.M / t.m) * Math.ceil(p.N / t.n);
  if (tiles >= WGMMA_SKINNY_MIN_FILL * p.sms) {
    return {
      threadblock: t,
      splitK: 1,
      blocks: Math.min(tiles, p.sms),
      persistent: tiles > p.sms,
      rule: `128x128: its ${tiles} tiles fill 3/4 of the SMs or more`,
    };
  }
  const kTiles = Math.ceil(p.K / t.k);
  const split = p.K < WGMMA_SKINNY_SPLIT_MIN_K
    ? undefined
    : [...SPLITS].reverse().find((s) =>
      s > 1 && tiles * s <= p.sms && kTiles / s >= MIN_KTILES_PER_SPLIT
    );
  const narrow = narrowWgmmaTile(p);
  if (narrow?.cluster !== undefined) return narrow;
  if (split !== undefined && tiles * split >= WGMMA_SKINNY_MIN_FILL * p.sms) {
    return {
      threadblock: t,
      splitK: split,
      blocks: tiles * split,
      persistent: false,
      rule: `128x128 split ${split}: ${tiles} tiles, a K of ${p.K} split to fill 3/4 of the SMs`,
    };
  }
  return narrow;
}

/** The first of {@link WGMMA_SKINNY_NARROW} for M whose tiles fill 3/4 of the SMs in one wave,
 * or null. Its clusters make the grid persistent (passes/wgmma.ts `wgmmaPersistent`: a
 * cluster's CTAs take a column's two tiles). */
function narrowWgmmaTile(p: SkinnyProblem): SkinnyWgmmaChoice | null {
  const bytes = p.bytes ?? 2;
  for (
    const { tile: t16, maxM, cluster, bytes: serves, persistent, belowK } of WGMMA_SKINNY_NARROW
  ) {
    if (p.M > maxM || !serves.includes(bytes) || p.K >= (belowK ?? Infinity)) continue;
    const tile = bytes === 1 ? { ...t16, k: 2 * t16.k } : t16;
    const n = Math.ceil(p.M / tile.m) * Math.ceil(p.N / tile.n);
    if (n >= WGMMA_SKINNY_MIN_FILL * p.sms && n <= p.sms) {
      const below = belowK === undefined ? "" : `, K < ${belowK}`;
      return {
        threadblock: tile,
        splitK: 1,
        blocks: n,
        persistent: persistent === true,
        ...(cluster ? { cluster } : {}),
        rule: `WGMMA_SKINNY_NARROW's tile for M <= ${maxM}${below}: one wave of ${n} blocks`,
      };
    }
  }
  return null;
}
