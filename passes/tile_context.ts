/**
 * What gemm-tile's default rules (passes/tile.ts) start from and return: each type's default
 * threadblock before the problem's sizes are weighed ({@link defaultThreadblock}; a sparse A's
 * own, `sparseThreadblock`), the facts about a kernel that the rules read ({@link TileContext}:
 * its known or hinted sizes, the GPU's SMs, the target's minimum grid), the grid a tile makes
 * ({@link gridBlocks}), which tiles an operand's layout admits ({@link mnContiguousPow2}), and
 * what a rule chooses ({@link ChosenTile}).
 *
 * @module
 */

import type { GemmKernel, Shape3 } from "../ir/gemm.ts";
import type { CachePolicy } from "../ir/cache_policy.ts";
import { hasSyncCopies, knownSize, sparseMetaParam } from "../ir/gemm.ts";
import type { Dtype } from "../ir/dtype.ts";
import { targetInfo } from "../ir/target.ts";
import type { SkinnyChoice } from "./skinny.ts";

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

/** What the default-tile decisions read about a kernel without a given threadblock. */
export interface TileContext {
  /** The kernel. */
  readonly k: GemmKernel;
  /** The type's default tile ({@link baseTile}), before any size-driven change. */
  readonly d: Shape3;
  /** The smallest M or N side that shrinking leaves: 32 for f64, else 64. */
  readonly minM: number;
  /** Known (or hinted) M, else null. */
  readonly mc: number | null;
  /** Known (or hinted) N, else null. */
  readonly nc: number | null;
  /** Known (or hinted) K, else null. */
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
  /** Why a fallback came to the mma.sync default (sm90's `wgmmaFallback`, passes/tile_sm90.ts). */
  readonly why?: string;
}

/** sm80's shared memory a block, where a sparse A's tiles were measured (`sparseThreadblock`). */
const SM80_SMEM = targetInfo("sm80").smemPerBlock;

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
export function tileContext(k: GemmKernel): TileContext {
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
export function gridBlocks(c: TileContext, t: Shape3): number {
  return c.mc === null || c.nc === null ? Infinity : Math.ceil(c.mc / t.m) * Math.ceil(c.nc / t.n);
}

/**
 * What a default rule chooses (passes/tile.ts `defaultTile`); `skinny` also names the warp tile and
 * the stages.
 */
export interface ChosenTile {
  /** The threadblock tile. */
  readonly tb: Shape3;
  /** A shrunk 16-bit tile on few blocks, its k-tile deepened (TilePlan.smallGrid). */
  readonly smallGrid: boolean;
  /** The default split-K (1: none); the schedule's `split_k` overrides it. */
  readonly splitK: number;
  /** The skinny rule's choice (passes/skinny.ts), with its warp tile and stages. */
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
  /** The k-loop's rotation where the schedule names none (the skinny rule's measured 16-bit tile:
   * passes/skinny.ts `skinnyRotation`). */
  readonly rotateK?: number;
  /** Why, in words (TilePlan.why). */
  readonly why: string;
}
