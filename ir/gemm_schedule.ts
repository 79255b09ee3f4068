/**
 * The GEMM IR's schedule as the source gives it (ir/gemm.ts `GemmKernel.schedule`): the keys of
 * the schedule block, the settings they give, and the values the `scheduler` and `cluster` keys
 * take. The passes read it and write what they decide into the plan (ir/gemm_plan.ts). ir/gemm.ts
 * re-exports it, so that code that reads the GEMM IR imports every type from there; it is apart to
 * keep each file near a reader's length.
 *
 * @module
 */

import type { CachePolicy } from "./cache_policy.ts";

/** An M x N x K shape. */
export interface Shape3 {
  /** Rows (along M). */
  readonly m: number;
  /** Columns (along N). */
  readonly n: number;
  /** Depth (along K). */
  readonly k: number;
}

/** Keys of the schedule block that remain schedule settings in the IR
 * (`math` and `accumulate` become part of ir/gemm.ts's `MathSpec`). */
export type ScheduleKey =
  | "threadblock"
  | "warp"
  | "mma"
  | "stages"
  | "swizzle"
  | "split_k"
  | "scheduler"
  | "cluster"
  | "cache_a"
  | "cache_b"
  | "rotate_k"
  | "math"
  | "accumulate"
  | "target";

/** The schedule as far as it is known: given by the user, or chosen by passes. */
export interface Schedule {
  /** The threadblock tile (`threadblock` key). */
  readonly threadblock?: Shape3;
  /** The warp tile (`warp` key). */
  readonly warp?: Shape3;
  /** The MMA instruction's shape (`mma` key). */
  readonly mma?: Shape3;
  /** Pipeline stages (`stages` key). */
  readonly stages?: number;
  /** Threadblock swizzle (`swizzle` key). */
  readonly swizzle?: number;
  /** K-splits (`split_k` key; 1: no split). */
  readonly splitK?: number;
  /** How a warp-specialized sm90 kernel's blocks take tiles (`scheduler` key; passes/wgmma.ts
   * `wgmmaPersistent`): `tiles` one block a tile, `persistent` one block an SM looping over
   * whole tiles, `stream_k` persistent with the last tiles' k-loops shared out evenly,
   * `pingpong` persistent with two consumer warpgroups that take the block's tiles in turn
   * (one's epilogue beside the other's main loop; the threadblock tile is one warpgroup's). */
  readonly scheduler?: Scheduler;
  /** CTAs per thread-block cluster (`cluster` key; passes/wgmma.ts `wgmmaCluster`): 1, or 2 for
   * a persistent warp-specialized sm90 kernel whose two CTAs take vertically adjacent tiles and
   * load B's box once for both (TMA multicast, each CTA half of it). */
  readonly cluster?: number;
  /** Along which dimension a cluster's CTAs lie (`cluster 1x2`: `n`; absent: `m`, as `cluster 2`
   * and `2x1`): along N they take horizontally adjacent tiles and load A's box once for both. */
  readonly clusterAxis?: ClusterAxis;
  /** The L2 eviction priority of operand A's global -> shared copies (`cache_a` key;
   * ir/cache_policy.ts `CACHE_POLICIES`): every `cp.async`, TMA box and `ld.global` of A carries
   * it, the 1- and 2-byte loads of an A aligned to less than 4 bytes and a sparse A's metadata
   * words included (passes/lower/cache_hints.ts). Absent: no hint at all. */
  readonly cacheA?: CachePolicy;
  /** The L2 eviction priority of operand B's global -> shared copies (`cache_b` key), as
   * {@link cacheA}'s of A. */
  readonly cacheB?: CachePolicy;
  /** The k-loop's rotation (`rotate_k` key; passes/lower/rotate_k.ts): block x of the grid
   * starts at its k-tile `(x * rotateK) mod count` (of K's, or with split-K of its split's) and
   * wraps around to those before it, so that the blocks of a wave do not all read the same
   * k-offsets of A and B at once. 0 (or absent): every block from its first k-tile. The
   * mma.sync main loop and sm90's TMA producer have it (E0215 elsewhere: grouped, sparse,
   * cp.async-fed wgmma); the skinny rule's measured 16-bit tile takes
   * passes/skinny.ts `SKINNY_ROTATE_K` (`skinnyRotation`). */
  readonly rotateK?: number;
}

/** The schedule key of each operand's {@link CachePolicy} (ir/cache_policy.ts), and its field
 * of {@link Schedule}. */
export const CACHE_KEYS: Readonly<
  Record<"A" | "B", { readonly key: ScheduleKey; readonly field: "cacheA" | "cacheB" }>
> = Object.freeze({
  A: Object.freeze({ key: "cache_a", field: "cacheA" }),
  B: Object.freeze({ key: "cache_b", field: "cacheB" }),
});

/** Along which dimension of the tile grid a thread-block cluster's CTAs lie: `m` (they share
 * B's columns, multicast) or `n` (they share A's rows). */
export type ClusterAxis = "m" | "n";

/** The values of the `cluster` schedule key: CTAs a cluster and their axis (`MxN`: CTAs along
 * M by along N). */
export const CLUSTER_SHAPES: Readonly<
  Record<string, { readonly ctas: number; readonly axis: ClusterAxis }>
> = Object.freeze({
  "1": { ctas: 1, axis: "m" },
  "2": { ctas: 2, axis: "m" },
  "2x1": { ctas: 2, axis: "m" },
  "1x2": { ctas: 2, axis: "n" },
});

/** The values of the `scheduler` schedule key. */
export type Scheduler = "tiles" | "persistent" | "stream_k" | "pingpong";

/** {@link Scheduler}'s values, as the checker accepts them. */
export const SCHEDULERS: readonly Scheduler[] = Object.freeze([
  "tiles",
  "persistent",
  "stream_k",
  "pingpong",
]);
