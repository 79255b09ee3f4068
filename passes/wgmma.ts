/**
 * Hopper's warpgroup MMA (issue 23, DESIGN §6.4): which programs the sm90 target runs on
 * `wgmma.mma_async`, and the shape of their plan. The passes ask this module; none of them
 * restates its rules.
 *
 * A wgmma program's plan:
 * - gemm-tile: a threadblock of 64-row warpgroup tiles (M a multiple of 64, at most three
 *   warpgroups), N up to the row's largest N, K one 128-byte row of the operand (64
 *   elements of a 16-bit type, 32 of tf32, 128 of an 8-bit one); default {@link
 *   wgmmaDefaultTile}, and `plan.tile.wgmma` set;
 * - gemm-warp: warp w takes rows 16w .. 16w + 15 and every column (warpgroup w / 4 takes
 *   rows 64 (w / 4) .., as the instruction's accumulator does), so the epilogue, split-K
 *   and staging see m16n8 accumulator fragments as on sm80;
 * - gemm-pipeline: the operand tiles of 128-byte rows in the wgmma layout (ir/wgmma_table.ts
 *   `WGMMA_SMEM`; every stage a multiple of 1,024 bytes), at least 3 stages, copies waited
 *   for `stages - 3` deep (one stage more than mma.sync's: the stage the previous
 *   k-tile's wgmmas still read);
 * - gemm-mma: the wgmma row (`plan.mma.wgmma`) beside the m16n8 row of the same types
 *   whose accumulator map the epilogue reads; gemm-fragment-load: loads `wgmma` (no
 *   fragments: the instruction reads shared memory).
 *
 * Shortcuts (issue 23): operands by cp.async from every thread (no TMA, no producer warp,
 * no mbarrier, no clusters); both operands K-contiguous (A row-major, B column-major; the
 * transposes that 16-bit rows allow are not used); no sparse or 3xtf32 kernels; grouped
 * kernels copy by cp.async from every thread (their operands' addresses come from the problem
 * table, so no tensor map describes them) and have no short plan (passes/short_tile.ts);
 * problems too small for a wave of default tiles keep the mma.sync plan.
 *
 * @module
 */

import type { ClusterAxis, DimRef, GemmKernel, Shape3 } from "../ir/gemm.ts";
import type { TensorMapDataType, TensorMapFactor, TensorMapSpec } from "../ir/tensor_map.ts";
import { DTYPE_INFO, isFp8 } from "../ir/dtype.ts";
import { SETMAXNREG } from "../ir/kernel_sm90.ts";
import { launchRegisters, type Target, targetHas, targetInfo } from "../ir/target.ts";
import {
  WARPGROUP_THREADS,
  WGMMA_BY_NAME,
  WGMMA_SMEM,
  type WgmmaShape,
} from "../ir/wgmma_table.ts";
import { hasSyncCopies, knownSize, operandView, sparseMetaParam } from "../ir/gemm.ts";
import { scheduleError } from "./pass.ts";

/** The operand and accumulator types wgmma programs take: `mmaA.acc`. */
const WGMMA_TYPES: ReadonlySet<string> = new Set([
  "f16.f32",
  "f16.f16",
  "bf16.f32",
  "tf32.f32",
  "e4m3.f32",
  "e5m2.f32",
  "s8.s32",
  "u8.s32",
]);

/** Warpgroups a block at most: a 64 x 256 f32 accumulator takes 128 registers a thread, and
 * three warpgroups of them fit the register file (192x256x64: 164 registers, no spill; 656
 * TFLOP/s at f16 8192³ against 670 for the default two, bench/NOTES.md 62). */
const MAX_WARPGROUPS = 3;

/**
 * Whether a kernel's types, layouts and schedule let it run on wgmma (before its tile):
 * a target with wgmma, tensor-core math of a type above with the same type for A and B
 * (s8 with u8 is not offered: a shortcut), both operands K-contiguous and copied by cp.async,
 * no sparse A (grouped or not), and a schedule that names no warp tile and no mma.sync shape
 * (`mma 64xNxK` asks for wgmma).
 *
 * @param k The kernel (any plan).
 * @returns Whether it is a wgmma program once its tile fits ({@link wgmmaTileFits}).
 */
export function wgmmaCandidate(k: GemmKernel): boolean {
  const m = k.math;
  const s = k.schedule;
  // 8-bit floats multiply in any pair; the other types each with itself.
  const pair = m.mmaA === m.mmaB || (isFp8(m.mmaA) && isFp8(m.mmaB));
  return targetHas(k.target, "wgmma") && m.mode === "tensor" && m.op === "mul" &&
    pair && WGMMA_TYPES.has(`${m.mmaA}.${m.acc}`) && WGMMA_TYPES.has(`${m.mmaB}.${m.acc}`) &&
    k.problem.a.layout === "row" && k.problem.b.layout === "col" &&
    sparseMetaParam(k) === null && !hasSyncCopies(k) &&
    (s.mma === undefined ? s.warp === undefined : s.mma.m === 64);
}

/** Elements of the MMA type in one 128-byte row of the layout. */
function rowElems(k: GemmKernel): number {
  return (8 * WGMMA_SMEM.rowBytes) / DTYPE_INFO[k.math.mmaA].bits;
}

/**
 * The wgmma row a threadblock of a candidate kernel would use, if its tile fits: M a
 * multiple of 64 up to {@link MAX_WARPGROUPS} warpgroups, N a row's N, K one 128-byte row,
 * and (when the schedule names `mma 64xNxK`) that N and K.
 *
 * @param k The kernel ({@link wgmmaCandidate}).
 * @param tb The threadblock.
 * @returns The row, or null.
 */
export function wgmmaRowFor(k: GemmKernel, tb: Shape3): WgmmaShape | null {
  const groups = tb.m / 64;
  if (!Number.isInteger(groups) || groups < 1 || groups > MAX_WARPGROUPS) return null;
  if (tb.k !== rowElems(k)) return null;
  const want = k.schedule.mma;
  if (want !== undefined && want.n !== tb.n) return null;
  const row = [...WGMMA_BY_NAME.values()].find((r) =>
    r.n === tb.n && r.aType === k.math.mmaA && r.bType === k.math.mmaB && r.cType === k.math.acc
  );
  if (row === undefined || (want !== undefined && want.k !== row.k)) return null;
  return row;
}

/**
 * The default tile of a wgmma program: two warpgroups of 64 x 256 (64 x 224 for 8-bit types,
 * whose rows stop at N = 224; 64 x 128 with split-K), one 128-byte row deep. Measured on the
 * H200 (bench/results/2026-12-04-h200-issue23-wgmma/README.md): the fastest of seven f16 tiles
 * at 8192³, and of four s8 tiles at 8192³ and 4096³ (128x224x128 1.36 / 1.07 POPS against
 * 1.25 / 1.00 for 128x192x128).
 *
 * @param k The kernel ({@link wgmmaCandidate}).
 * @returns The tile.
 */
export function wgmmaDefaultTile(k: GemmKernel): Shape3 {
  // 8-bit integers: rows stop at N = 224; 8-bit floats go to 256 like the 16-bit types.
  const eight = DTYPE_INFO[k.math.mmaA].bits === 8 && !isFp8(k.math.mmaA);
  const split = (k.schedule.splitK ?? 1) > 1;
  return { m: 128, n: split ? WGMMA_SPLIT_MAX_N : eight ? 224 : 256, k: rowElems(k) };
}

/** The widest warpgroup row of a split-K wgmma kernel by default: the reduction's registers
 * beside 128 accumulators a thread spilled 40 bytes at bf16 128x256 (examples/splitk.gemm) and
 * 24-28 at a 64x256 split 4 (bench/NOTES.md 78); a shortcut, not measured on a GPU. */
export const WGMMA_SPLIT_MAX_N = 128;

/**
 * The k-tiles of wgmmas a warpgroup keeps running while it issues the next copies
 * (`wgmma.wait_group` depth): 1, so the tensor cores always have the current k-tile's group
 * queued. The pipeline then keeps that many stages more than mma.sync's, still being read:
 * S stages hold S - 1 - this k-tiles of copies in flight.
 */
export const WGMMA_GROUPS_IN_FLIGHT = 1;

/** The stages a wgmma program gets by default (4 of 48 KiB for the 16-bit default tile; 3
 * measured 21% slower, bench/NOTES.md 62). */
export const WGMMA_DEFAULT_STAGES = 4;

/**
 * The wgmma row of a planned kernel (`plan.mma.wgmma`), or null for an mma.sync plan.
 *
 * @param k The kernel (mma plan made).
 * @returns The row.
 */
export function plannedWgmma(k: GemmKernel): WgmmaShape | null {
  const name = k.plan.mma?.wgmma ?? k.plan.instruction?.wgmma;
  if (name === undefined) return null;
  const row = WGMMA_BY_NAME.get(name);
  if (row === undefined) throw new Error(`Unknown wgmma shape "${name}"`);
  return row;
}

/** Threads of a warp-specialized kernel's producer warpgroup. */
export const TMA_PRODUCER_THREADS = WARPGROUP_THREADS;

/**
 * Registers a producer thread keeps (`setmaxnreg.dec`): it only computes coordinates, so the
 * fewest `setmaxnreg` allows, which leaves two consumer warpgroups 240 each; 40 (232 for the
 * consumers) for a batched kernel, whose 3-D coordinates need more. Found by ptxas
 * (bench/NOTES.md 78, `bench/research/spill_sweep.ts`): at 40 / 232 tf32's 128x256 consumers on
 * clusters of 2 spilled 8 bytes, at 24 / 240 none did, but the producers of two batched kernels
 * (Stream-K, clusters) spilled 8 bytes. Not measured on a GPU: a shortcut.
 *
 * @param k The kernel.
 * @returns Registers per producer thread.
 */
export function tmaProducerRegs(k: GemmKernel): number {
  return k.problem.batch === null ? SETMAXNREG.min : 40;
}

/**
 * Whether a wgmma program's operands come by TMA from a producer warpgroup (the
 * warp-specialized pipeline, `plan.pipeline.tma`): a target with TMA, and A and B whose rows
 * start on 16 bytes (the tensor map's strides are multiples of 16 bytes; a literal stride that
 * is not keeps the cp.async pipeline). Runtime strides are checked when the launcher builds
 * the map (ir/tensor_map.ts `tensorMapArgs`).
 *
 * @param k The kernel (tile planned, `tile.wgmma`).
 * @returns Whether the pipeline is TMA's.
 */
export function wgmmaTma(k: GemmKernel): boolean {
  // A grouped kernel's tensors are the problem table's addresses: no host-built tensor map
  // describes them (tensormap.replace in the kernel would; a shortcut).
  if (k.plan.tile?.wgmma !== true || !targetHas(k.target, "tma") || k.grouped) return false;
  if (!consumerFitsBeside(k.target, k.plan.tile.threadblock)) return false;
  return [k.problem.a.tensor, k.problem.b.tensor].every((n) => {
    const t = k.params.find((q) => q.name === n);
    if (t === undefined || t.kind !== "tensor") return false;
    const bytes = DTYPE_INFO[t.dtype].bits / 8;
    const literal = (t.strides ?? []).every((s) =>
      s.kind === "sym" || (s.value * bytes) % 16 === 0
    );
    return (t.align * bytes) % 16 === 0 && literal;
  });
}

/** Registers a consumer thread needs beside its accumulators: ptxas asked for 154 where a
 * 64 x 256 warpgroup holds 128 (bench/NOTES.md 67). */
const CONSUMER_REGS_BESIDE_ACC = 32;

/**
 * Whether a warp-specialized block's consumer code fits the registers ptxas allows a thread of
 * the whole block (the register file over its threads, producer included). Three consumer
 * warpgroups of 64 x 256 (192x256, 512 threads: 128 registers) do not: ptxas refused it
 * (C7602, NOTES 67), so such tiles keep the cp.async pipeline (656 TFLOP/s at f16 8192³,
 * NOTES 62). Counting what `setmaxnreg` grants the consumers instead (160) does not help: ptxas
 * holds the whole kernel to the registers of the launch (tried and reverted, NOTES 84).
 *
 * @param t The target.
 * @param tb The threadblock (M a multiple of 64).
 * @returns Whether the TMA pipeline's consumers fit.
 */
function consumerFitsBeside(t: Target, tb: Shape3): boolean {
  const threads = (tb.m / 64) * WARPGROUP_THREADS + TMA_PRODUCER_THREADS;
  // A 64 x N warpgroup tile of 32-bit accumulators: N / 2 registers a thread.
  return tb.n / 2 + CONSUMER_REGS_BESIDE_ACC <= Math.floor(targetInfo(t).registersPerSm / threads);
}

/**
 * The registers a consumer thread gets (`setmaxnreg.inc`): what the block was launched with (the
 * register file over its threads, a multiple of 8 a thread) less the producer's, shared by the
 * consumer threads, a multiple of 8, at most 256: 240 for two consumer warpgroups beside a
 * producer of 24, 232 beside one of 40. ptxas allocates the consumers' code within it (tf32's
 * consumers on clusters spilled 8 bytes at 232 and none at 240, NOTES 78).
 *
 * @param t The target.
 * @param consumerThreads The consumer warpgroups' threads.
 * @param producerRegs The producer's registers ({@link tmaProducerRegs}).
 * @returns Registers per consumer thread.
 */
export function tmaConsumerRegs(
  t: Target,
  consumerThreads: number,
  producerRegs: number,
): number {
  const threads = consumerThreads + TMA_PRODUCER_THREADS;
  const launched = launchRegisters(t, threads) * threads;
  const left = launched - TMA_PRODUCER_THREADS * producerRegs;
  return Math.min(256, Math.floor(left / consumerThreads / 8) * 8);
}

/**
 * The tensor map of a TMA-loaded operand: its K-contiguous rows as the map's innermost
 * dimension, the tile's rows (M for A, N for B) next, the batch last when the tensor has one
 * (not for a literal batch stride of 0: one matrix for every batch); strides from its
 * `strides(...)` or dense; the box one k-tile of the threadblock's rows; the 128-byte swizzle
 * of the wgmma layout. A runtime batch stride of 0 is refused when the launcher builds the map
 * (ir/tensor_map.ts: strides are positive multiples of 16 bytes): a shortcut.
 *
 * @param k The kernel (planned tile).
 * @param role A or B.
 * @returns The map's rule.
 */
export function operandTensorMap(k: GemmKernel, role: "A" | "B"): TensorMapSpec {
  const view = operandView(k, role);
  const t = k.params.find((q) => q.name === view.tensor);
  if (t === undefined || t.kind !== "tensor") throw new Error(`No tensor ${view.tensor}`);
  const ref = (d: DimRef): TensorMapFactor => d.kind === "sym" ? d.name : d.value;
  const tb = k.plan.tile!.threadblock;
  // Declared [batch?, X, Y]: `row` makes Y contiguous, `col` X; the contiguous one is K (A and
  // B are K-contiguous on this path), the other the tile's rows (M for A, N for B).
  const n = t.dims.length;
  const [kDim, rowDim] = t.layout === "row"
    ? [t.dims[n - 1]!, t.dims[n - 2]!]
    : [t.dims[n - 2]!, t.dims[n - 1]!];
  // A batch stride of 0 (one matrix broadcast over the batch): a map of the matrix alone.
  const batchStride = n === 3 ? t.strides?.[0] : undefined;
  const batched = n === 3 && !(batchStride?.kind === "const" && batchStride.value === 0);
  const dims = [[ref(kDim)], [ref(rowDim)], ...(batched ? [[ref(t.dims[0]!)]] : [])];
  // Declared strides are outermost first: [batch?, line].
  const strides = t.strides !== undefined
    ? [[ref(t.strides.at(-1)!)], ...(batched ? [[ref(t.strides[0]!)]] : [])]
    : [[ref(kDim)], ...(batched ? [[ref(kDim), ref(rowDim)]] : [])];
  const bytes = DTYPE_INFO[t.dtype].bits / 8;
  return {
    tensor: t.name,
    dataType: TMAP_TYPE[t.dtype] ?? (() => {
      throw new Error(`No tensor-map type for ${t.dtype}`);
    })(),
    elementBytes: bytes as 1 | 2 | 4,
    dims,
    strides,
    // A cluster's CTAs each copy their share of the box they share (B's along M, A's along N)
    // into all of them (wgmmaCluster).
    box: [tb.k, boxRows(k, role), ...(batched ? [1] : [])],
    swizzle: WGMMA_SMEM.rowBytes === 128 ? 128 : 0,
  };
}

/** The rows of an operand's TMA box: the tile's (M for A, N for B), a cluster's share of them
 * for the operand its CTAs share (wgmmaClusterAxis). */
function boxRows(k: GemmKernel, role: "A" | "B"): number {
  const tb = k.plan.tile!.threadblock;
  const rows = role === "A" ? tb.m : tb.n;
  const shared = wgmmaClusterAxis(k) === "m" ? "B" : "A";
  return role === shared ? rows / wgmmaCluster(k) : rows;
}

/** The map's element type of each operand type TMA copies. */
const TMAP_TYPE: Readonly<Partial<Record<string, TensorMapDataType>>> = {
  f16: "float16",
  bf16: "bfloat16",
  f32: "float32",
  s8: "uint8",
  u8: "uint8",
  e4m3: "uint8",
  e5m2: "uint8",
};

/**
 * Whether a kernel must run on wgmma whatever its size: its operands are 8-bit floats, which
 * no mma.sync of the target multiplies.
 *
 * @param k The kernel.
 * @returns Whether the mma.sync plans are closed to it.
 */
export function wgmmaOnly(k: GemmKernel): boolean {
  return isFp8(k.math.mmaA) || isFp8(k.math.mmaB);
}

/**
 * Whether a warp-specialized kernel is persistent (`plan.pipeline.tma.persistent`): as its
 * `scheduler` line says, else every one without split-K (whose blocks of one tile meet in the
 * workspace) that asks for a cluster, that gemm-tile's default made persistent or clustered
 * (`plan.tile.persistent`, `plan.tile.cluster`), whose known sizes, if any, give each block at
 * least {@link PERSISTENT_MIN_TILES_A_BLOCK} tiles, or that would default to clusters of 2 and
 * gets at least {@link CLUSTER_MIN_TILES_A_BLOCK} tiles a block. A schedule that asks for a
 * persistent scheduler where there is none to have is refused (E0213).
 *
 * @param k The kernel (tile planned).
 * @returns Whether its grid is one block an SM looping over tiles.
 */
export function wgmmaPersistent(k: GemmKernel): boolean {
  const want = k.schedule.scheduler;
  const can = wgmmaTma(k) && k.plan.tile!.splitK === 1 && !k.grouped;
  if (want === "tiles") return false;
  if (want !== undefined && !can) {
    scheduleError(
      k,
      "scheduler",
      "E0213",
      `"scheduler ${want}" needs a warp-specialized sm90 kernel (target sm90, TMA-fed wgmma: ` +
        "K-contiguous operands aligned to 16 bytes), not grouped and without split_k",
    );
  }
  // A `cluster` line asks for a persistent kernel too (wgmmaCluster).
  const asked = want !== undefined || (k.schedule.cluster ?? 1) > 1;
  const tile = k.plan.tile!;
  const chosen = tile.persistent === true || tile.cluster !== undefined;
  const clustered = clusterByDefault(k) && !fewTilesABlock(k, CLUSTER_MIN_TILES_A_BLOCK);
  return can && (asked || chosen || !fewTilesABlock(k, PERSISTENT_MIN_TILES_A_BLOCK) || clustered);
}

/**
 * Whether a persistent kernel shares out the k-loops of its last tiles (Stream-K,
 * passes/lower/stream_k.ts): only where its schedule says `scheduler stream_k`. Not the
 * default: measured on the H200 (bench/NOTES.md 65) it ran 5000³ f16 at 405 TFLOP/s against
 * 399 for the persistent kernel without it and 439 for one block a tile, and 8192³ no faster.
 *
 * @param k The kernel (tile planned).
 * @returns Whether its persistent grid runs Stream-K.
 */
export function wgmmaStreamK(k: GemmKernel): boolean {
  return k.schedule.scheduler === "stream_k" && wgmmaPersistent(k);
}

/**
 * Whether a persistent kernel runs two consumer warpgroups in ping-pong (`scheduler pingpong`):
 * each runs the program of a threadblock tile of one warpgroup (64 rows) on every other tile of
 * the block, so that one's epilogue runs beside the other's main loop, the ring's stages going
 * to each in the order the producer fills them (passes/lower/wgmma_ws.ts). A tile of more than
 * one warpgroup is refused (E0213).
 *
 * Shortcut (issue 23): each warpgroup's program is emitted once for each (named barriers 1
 * and 2), doubling the consumers' code. Never a default: measured on an H100 (bench/NOTES.md 81)
 * it ran f16 8192³ at 528 TFLOP/s against the cooperative 128x256's 757, because a 64-row tile
 * brings 1.67x the operand bytes a FLOP; a 128-row tile a warpgroup is not built (shortcut).
 *
 * @param k The kernel (tile and warps planned).
 * @returns Whether it is a ping-pong kernel.
 */
export function wgmmaPingPong(k: GemmKernel): boolean {
  if (k.schedule.scheduler !== "pingpong" || !wgmmaPersistent(k)) return false;
  const threads = k.plan.warp!.threads;
  if (threads !== WARPGROUP_THREADS) {
    scheduleError(
      k,
      "scheduler",
      "E0213",
      `"scheduler pingpong" needs a threadblock tile of one warpgroup (64 rows: one consumer ` +
        `warpgroup a tile), not ${threads / 32} warps`,
    );
  }
  return true;
}

/**
 * CTAs per thread-block cluster of a warp-specialized kernel (`plan.pipeline.tma.cluster`): its
 * `cluster` line, else {@link defaultCluster}'s. Two need a persistent kernel without Stream-K
 * (the cluster's CTAs take the two tiles of a column pair together, or of a row pair along N,
 * passes/lower/kernel.ts) and a shared box (B's along M, A's along N) whose halves are whole
 * swizzle atoms (8 rows); elsewhere the line is refused (E0214).
 *
 * Shortcut (issue 23): only pairs (along M, B multicast, or along N, A multicast), no 2x2 or
 * 4-CTA clusters, no clusters for one block a tile or split-K.
 *
 * @param k The kernel (tile planned).
 * @returns 1 or 2.
 */
export function wgmmaCluster(k: GemmKernel): number {
  const want = k.schedule.cluster ?? defaultCluster(k);
  if (want === 1) return 1;
  const axis = wgmmaClusterAxis(k);
  if (!canCluster(k, want, axis)) {
    const [shape, dim] = axis === "m" ? [`${want}`, "N"] : [`1x${want}`, "M"];
    scheduleError(
      k,
      "cluster",
      "E0214",
      `"cluster ${shape}" needs a persistent warp-specialized sm90 kernel (target sm90, TMA-fed ` +
        "wgmma, without split_k or scheduler stream_k or tiles) whose threadblock " + dim +
        " halves into multiples of 8",
    );
  }
  return want;
}

/**
 * The axis of a kernel's cluster (meaningful where {@link wgmmaCluster} is above 1): `n` only
 * where its `cluster` line says `1x2`; every default cluster lies along M (`cluster 1x2` lost
 * wherever it was measured, bench/NOTES.md 79).
 *
 * @param k The kernel.
 * @returns `m` (pairs of a tile column, B multicast) or `n` (pairs of a tile row, A multicast).
 */
export function wgmmaClusterAxis(k: GemmKernel): ClusterAxis {
  return k.schedule.clusterAxis ?? "m";
}

/** Operand types whose persistent kernels default to clusters of 2: those measured on an H100
 * (bench/NOTES.md 75-76, 8192³, TFLOP/s burst / sustained, one block a tile or unclustered ->
 * cluster 2 in the same call: f16 759 -> 765 / 625 -> 654, bf16 793 -> 799 / 697 -> 687, tf32
 * 395 -> 394 / 305 -> 329, s8 1319 -> 1572 / 1328 -> 1317) and on an H200 (NOTES 77, e4m3 ->
 * bf16: 8192³ 1517 -> 1521 / 1176 -> 1176, 5008³ 1066 -> 1178 / 1001 -> 1029). u8 runs s8's
 * kernel with another sign, e5m2 e4m3's with another format (shortcuts: neither measured
 * itself). */
const CLUSTER_DEFAULT_TYPES: ReadonlySet<string> = new Set([
  "f16",
  "bf16",
  "tf32",
  "s8",
  "u8",
  "e4m3",
  "e5m2",
]);

/** Tile rows a problem's known (or hinted) M must give for the default cluster: a cluster whose
 * second tile lies past M idles one CTA, at most 1 in 9 of them from this many rows on. */
const CLUSTER_MIN_TILE_ROWS = 8;

/** Tiles a block must at least get, where the sizes are known, for a kernel that would default
 * to clusters of 2 to be made persistent (and so clustered) rather than one block a tile.
 * Measured on an H100 (bench/NOTES.md 76, f16, TFLOP/s burst / sustained, one block a tile ->
 * persistent on clusters of 2, same call): 5000³ (6.1 tiles a block) 470 -> 598 / 465 -> 536,
 * 4096³ (3.9) 721 -> 731 / 607 -> 642, tf32 5000³ 304 -> 327 / 283 -> 287; 3072³ (2.2) 544 ->
 * 532 / 500 -> 490, 2048³ (1.9 of 128x128) 527 -> 465 / 510 -> 460. Between 2.2 and 3.9 it is
 * not measured: a shortcut. */
const CLUSTER_MIN_TILES_A_BLOCK = 3;

/**
 * The cluster a schedule without a `cluster` line gets: the one gemm-tile's default chose
 * (`plan.tile.cluster`) where the kernel can have it, else 2 for a persistent, not Stream-K,
 * kernel that {@link clusterByDefault} admits; else 1.
 *
 * @param k The kernel (tile planned).
 * @returns 1 or 2.
 */
function defaultCluster(k: GemmKernel): number {
  const chosen = k.plan.tile!.cluster;
  if (chosen !== undefined && canCluster(k, chosen, "m")) return chosen;
  return clusterByDefault(k) && canCluster(k, 2, "m") ? 2 : 1;
}

/** Whether a kernel without a `cluster` line is of a measured type
 * ({@link CLUSTER_DEFAULT_TYPES}), its known or hinted M gives at least
 * {@link CLUSTER_MIN_TILE_ROWS} tile rows and its B box halves into swizzle atoms, so that it
 * takes clusters of 2 where it is persistent (unknown sizes do not: a problem of one tile row
 * would idle half its CTAs). */
function clusterByDefault(k: GemmKernel): boolean {
  const m = knownSize(k, k.problem.m);
  const tb = k.plan.tile!.threadblock;
  const rows = m === null ? 0 : Math.ceil(m / tb.m);
  return k.schedule.cluster === undefined && CLUSTER_DEFAULT_TYPES.has(k.math.mmaA) &&
    rows >= CLUSTER_MIN_TILE_ROWS && halvesIntoAtoms(tb.n, 2);
}

/** Whether B's box of `n` rows splits into `ctas` slices of whole swizzle atoms (8 rows). */
function halvesIntoAtoms(n: number, ctas: number): boolean {
  return (n / ctas) % 8 === 0;
}

/** Whether a kernel can run on clusters of `n` CTAs along `axis`: persistent, not Stream-K,
 * and the shared box (B's along M, A's along N) splits into `n` slices of whole swizzle atoms
 * (8 rows). */
function canCluster(k: GemmKernel, n: number, axis: ClusterAxis): boolean {
  const tb = k.plan.tile!.threadblock;
  return wgmmaPersistent(k) && !wgmmaStreamK(k) &&
    halvesIntoAtoms(axis === "m" ? tb.n : tb.m, n);
}

/** Tiles a persistent block must at least get, where the sizes are known, for its static
 * round of tiles to beat the hardware's dynamic placement of one block a tile: at 5000³
 * (6.06 tiles a block) the persistent f16 kernel ran 419-436 TFLOP/s against 446-447 for the
 * one of a block a tile, at 8192³ (15.5) 1.00-1.01x against 0.99-1.00x of cuBLAS
 * (bench/NOTES.md 63; Stream-K did not change the first, NOTES 65). Between the two it is not
 * measured: a shortcut. */
const PERSISTENT_MIN_TILES_A_BLOCK = 8;

/** Whether known (or hinted) sizes give the blocks of a persistent grid fewer than `least`
 * tiles each. */
function fewTilesABlock(k: GemmKernel, least: number): boolean {
  const p = k.problem;
  const [m, n] = [knownSize(k, p.m), knownSize(k, p.n)];
  const b = p.batch === null ? 1 : knownSize(k, p.batch);
  if (m === null || n === null || b === null) return false;
  const tb = k.plan.tile!.threadblock;
  const tiles = Math.ceil(m / tb.m) * Math.ceil(n / tb.n) * b;
  const blocks = k.sms ?? targetInfo(k.target).defaultSms;
  return tiles < least * blocks;
}

/**
 * Bytes a persistent kernel keeps beside its stages for the staged epilogue (which cannot
 * reuse the stages: the producer fills them for the next tile meanwhile): D's tile at D's
 * width with 64 bytes of padding a row, where D is an 8- or 16-bit row-major matrix whose
 * epilogue reads no matrix (the staging of the outputs, passes/epilogue_staging.ts); else
 * none (a direct epilogue).
 *
 * @param k The kernel (tile planned).
 * @returns The bytes.
 */
export function persistentStagingBytes(k: GemmKernel): number {
  const d = k.params.find((q) => q.name === k.problem.d.tensor);
  if (d === undefined || d.kind !== "tensor") return 0;
  const bits = DTYPE_INFO[d.dtype].bits;
  const readsMatrix = k.epilogue.views.length > 0;
  if (bits > 16 || k.problem.d.layout !== "row" || readsMatrix) return 0;
  const tb = k.plan.tile!.threadblock;
  return tb.m * ((tb.n * bits) / 8 + 64);
}
