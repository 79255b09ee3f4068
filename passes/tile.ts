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
 * This module holds the pass, its checks and the order in which it tries the default rules
 * (`defaultTile`); the rules live beside it: passes/skinny.ts (skinny problems' measured
 * tiles), passes/tile_sm90.ts (sm90's wgmma tiles where their waves fill the SMs),
 * passes/tile_sm80.ts (the mma.sync tile weighed against the sizes: shrunk, split-K,
 * wave-aware, deepened), passes/tile_context.ts (each type's default tile and the facts the rules share).
 *
 * @module
 */

import type { DimRef, GemmKernel, Shape3, TilePlan } from "../ir/gemm.ts";
import type { CachePolicy } from "../ir/cache_policy.ts";
import { knownSize, sparseMetaParam } from "../ir/gemm.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import {
  SKINNY_STREAMED_B,
  type SkinnyProblem,
  skinnyRotation,
  skinnySchedule,
  skinnyWgmmaSchedule,
} from "./skinny.ts";
import {
  WGMMA_SPLIT_MAX_N,
  wgmmaCandidate,
  wgmmaDefaultTile,
  wgmmaOnly,
  wgmmaRowFor,
  wgmmaTma,
} from "./wgmma.ts";
import {
  type ChosenTile,
  mnContiguousPow2,
  type TileContext,
  tileContext,
} from "./tile_context.ts";
import { sm80Default } from "./tile_sm80.ts";
import { wgmmaFallback } from "./tile_sm90.ts";

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
 * A skinny tile's `why`, and B's L2 eviction priority where the tile spans M, or a cluster of
 * `clusterM` tiles along M does (B's box multicast to them): each of B's bytes read from the L2
 * once (passes/skinny.ts {@link SKINNY_STREAMED_B}), unless the schedule names a policy for B.
 */
function streamedB(
  k: GemmKernel,
  sp: SkinnyProblem,
  tb: Shape3,
  why: string,
  clusterM = 1,
): { cacheB?: CachePolicy; why: string } {
  if (sp.M > tb.m * clusterM || k.schedule.cacheB !== undefined) return { why };
  const spans = clusterM === 1 ? "the tile spans M" : `a cluster's ${clusterM} tiles span M`;
  return {
    cacheB: SKINNY_STREAMED_B,
    why: `${why}; ${spans}, so B is read once: cache_b ${SKINNY_STREAMED_B} ` +
      "(SKINNY_STREAMED_B)",
  };
}

/**
 * The default schedule of a kernel without a given threadblock: the type's
 * tile shrunk to small compile-time (or hinted) sizes, then to the target's
 * minimum grid unless split-K fills the SMs instead, then deepened or made
 * wave-aware (passes/tile_sm80.ts `sm80Default`); sm90's wgmma tiles where
 * their waves fill the SMs (passes/tile_sm90.ts `wgmmaFallback`).
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
        wgSkinny.cluster ?? 1,
      ),
    };
  }
  const skinny = sp === null || wgmmaOnly(k) ? null : skinnySchedule(sp);
  if (skinny !== null) {
    const why = `${skinnyText(sp!)}: the skinny rule (passes/skinny.ts SKINNY_RULES), ` +
      `the one-wave grid of the most blocks: ${skinny.blocks}`;
    const tb = skinny.threadblock;
    const rotateK = skinnyRotation(sp!, skinny);
    return {
      tb,
      smallGrid: false,
      splitK: skinny.splitK,
      skinny,
      ...streamedB(k, sp!, tb, why),
      ...(rotateK !== undefined ? { rotateK } : {}),
    };
  }
  const sm90 = wgmmaCandidate(k) ? wgmmaFallback(k, c) : { ctx: c };
  if ("tile" in sm90) return sm90.tile;
  return sm80Default(sm90.ctx);
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

/**
 * The check of a k-loop rotation (`rotate_k` > 0, E0215): the mma.sync main loop of one dense,
 * ungrouped problem rotates, a split-K split's k-tiles among its own (passes/lower/rotate_k.ts
 * `kRotation`), and so does sm90's warp-specialized pipeline, in its TMA producer
 * (`tmaKSequence`); a sparse A's metadata, a grouped kernel's tiles and a wgmma kernel fed by
 * cp.async (no TMA) are not rotated (a shortcut).
 *
 * @param k The kernel, its tile planned.
 * @param rotateK The rotation.
 */
function checkRotation(k: GemmKernel, rotateK: number): void {
  const why = k.grouped
    ? "a grouped kernel"
    : sparseMetaParam(k) !== null
    ? "a sparse A"
    : k.plan.tile?.wgmma === true && !wgmmaTma(k)
    ? "a wgmma kernel fed by cp.async (no TMA)"
    : null;
  if (why === null) return;
  scheduleError(
    k,
    "rotate_k",
    "E0215",
    `"rotate_k ${rotateK}" needs the mma.sync main loop of one dense problem or sm90's TMA ` +
      `pipeline, not ${why}`,
  );
}

/**
 * The k-loop rotation: the schedule's `rotate_k`, else the default's (passes/skinny.ts
 * `skinnyRotation`). `why` is what the tile's reason adds (nothing where the schedule gives it
 * or no default has it).
 */
function rotation(k: GemmKernel, chosen: ChosenTile): { rotateK?: number; why: string } {
  if (k.schedule.rotateK !== undefined) return { rotateK: k.schedule.rotateK, why: "" };
  if (chosen.rotateK === undefined) return { why: "" };
  return {
    rotateK: chosen.rotateK,
    why: `; one wave: the k-loop rotated, rotate_k ${chosen.rotateK} (SKINNY_ROTATE_K)`,
  };
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
    const rot = rotation(k, chosen);
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
      why: `${chosen.why}${rot.why}`,
    };
    if ((rot.rotateK ?? 0) > 0) checkRotation({ ...k, plan: { ...k.plan, tile } }, rot.rotateK!);
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
        ...(rot.rotateK !== undefined ? { rotateK: rot.rotateK } : {}),
      },
      plan: { ...k.plan, tile },
    };
  },
};
