/**
 * `gemm-pipeline`: the multistage shared-memory pipeline. Chooses the number
 * of stages (default: the most that fit, capped at 4), lays out each
 * operand's tile per stage (16-byte chunks XOR-swizzled, see
 * {@link OperandSmem}), the copy width from the alignment (cp.async of 16, 8
 * or 4 bytes; `.cg` for 16; a synchronous load/store below 4 bytes), the
 * copies per thread, and the wait depth.
 *
 * @module
 */

import type {
  GemmKernel,
  MatrixView,
  MetaSmem,
  OperandSmem,
  PipelinePlan,
  Shape3,
} from "../ir/gemm.ts";
import { operandView, sparseMetaParam, tensorParam } from "../ir/gemm.ts";
import { sparseGroup } from "../numerics/sparse.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { requireInstruction, targetInfo } from "../ir/target.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import {
  persistentStagingBytes,
  TMA_PRODUCER_THREADS,
  tmaConsumerRegs,
  tmaProducerRegs,
  WGMMA_DEFAULT_STAGES,
  WGMMA_GROUPS_IN_FLIGHT,
  wgmmaCluster,
  wgmmaClusterAxis,
  wgmmaPersistent,
  wgmmaPingPong,
  wgmmaStreamK,
  wgmmaTma,
} from "./wgmma.ts";
import { WGMMA_SMEM } from "../ir/wgmma_table.ts";

function log2(x: number): number {
  return Math.round(Math.log2(x));
}

/** Plans one operand's stage tile (offset filled in by the caller). */
function operandSmem(
  k: GemmKernel,
  view: MatrixView,
  role: "A" | "B",
  outer: number,
  tileK: number,
  threads: number,
): Omit<OperandSmem, "offset"> {
  const t = tensorParam(k, view.tensor);
  const bits = DTYPE_INFO[t.dtype].bits;
  const transpose = transposed(k, role);
  const kContig = kContiguous(k, role) && !transpose;
  const rows = kContig ? outer : tileK;
  const rowBytes = ((kContig ? tileK : outer) * bits) / 8;
  if (rowBytes % 16 !== 0 || !Number.isInteger(rowBytes)) {
    scheduleError(
      k,
      "threadblock",
      "E0209",
      `Operand ${role} ("${view.tensor}", ${t.dtype}) has ${rowBytes}-byte tile rows: ` +
        `they must be a multiple of 16 bytes (increase the threadblock's ${
          kContig ? "K" : role === "A" ? "M" : "N"
        })`,
    );
  }
  const rowChunks = rowBytes / 16;
  if ((rows * rowChunks) % 8 !== 0) {
    scheduleError(
      k,
      "threadblock",
      "E0209",
      `Operand ${role} tile of ${rows} x ${rowBytes} bytes is not a whole number of 128-byte lines`,
    );
  }
  const stageBytes = operandStageBytes(k, role, outer, tileK);
  const viaRegs = transpose && viaRegisters(k, role, threads);
  const copyBytes = transpose && !viaRegs ? bits / 8 : Math.min(16, (t.align * bits) / 8);
  // The lowering finds each copy's row and column from the thread index with
  // a shift and a mask, which needs whole rows per round of copies or whole
  // rounds per row (passes/lower/copies.ts copySetup); a transposed tile's copies
  // go along its global lines (tileK elements).
  const perRow = (transpose ? (tileK * bits) / 8 : rowBytes) / copyBytes;
  if (Number.isInteger(perRow) && threads % perRow !== 0 && perRow % threads !== 0) {
    scheduleError(
      k,
      ["warp", "threadblock"],
      "E0209",
      `Operand ${role}: ${threads} threads cannot share its tile rows of ${perRow} copies ` +
        `(${copyBytes} bytes each): the thread count and the copies per row must divide one ` +
        `another (use a power-of-two number of warps)`,
    );
  }
  return {
    contiguous: kContig ? "k" : "outer",
    rows,
    rowBytes,
    ...(viaRegs ? { viaRegisters: true } : {}),
    // Through registers: a thread's 4 stores go to rows 4k'..4k'+3, one XOR
    // for all four (shift + 2: their offsets stay constants apart, one base
    // register), and scale 8 / (tileK / 4) puts the tileK / 4 groups of 4
    // rows a warp's store writes in distinct bank groups (one group: any
    // scale). Transposed by cp.async: the 4-byte copies of a warp write 8
    // k-rows of a column run (consecutive threads along a global line, each
    // thread a line apart per copy), scale 1 spreads them over 8 bank groups.
    // (Shortcut: for lines of other than 8 elements this leaves 2- to 4-way
    // conflicts on those copies: rows 8 apart share an XOR for 16 and more,
    // and the 2-chunk runs of 4 rows overlap under it for 4.)
    swizzleShift: viaRegs ? log2(rowChunks) + 2 : log2(Math.max(8, rowChunks)),
    // Scale 2 for tiles read by ld.shared: gemm-fragment-load sets it once it chooses the loads.
    swizzleScale: viaRegs ? Math.min(4, 32 / tileK) as 1 | 2 | 4 : 1,
    stageBytes,
    copyBytes,
    async: copyBytes >= 4 && !viaRegs,
    copiesPerThread: Math.ceil(stageBytes / copyBytes / threads),
    ...(transpose ? { transpose } : {}),
  };
}

/**
 * A sparse A's metadata tile (ir/gemm.ts {@link MetaSmem}; offset filled in by the
 * caller): the threadblock's 16-row blocks, each the packets of the k-tile's K.
 *
 * @param k The kernel (tile plan made; A sparse).
 * @returns The tile.
 */
function metaSmem(k: GemmKernel): Omit<MetaSmem, "offset"> {
  const tb = k.plan.tile!.threadblock;
  const a = tensorParam(k, k.problem.a.tensor);
  const kPerWord = 8 * sparseGroup(a.dtype).elements;
  const kPerPacket = 2 * kPerWord;
  if (tb.k % kPerPacket !== 0) {
    scheduleError(
      k,
      "threadblock",
      "E0209",
      `Sparse A ("${a.name}", ${a.dtype}): tile K ${tb.k} must be a multiple of ${kPerPacket}, ` +
        `the K of one metadata packet (two metadata words of each row)`,
    );
  }
  const K = k.problem.k;
  const rowWords = K.kind === "const" ? Math.ceil(K.value / kPerWord) : null;
  const blocks = tb.m / 16;
  const packets = tb.k / kPerPacket;
  return { blocks, packets, stageBytes: metaStageBytes(tb.m, tb.k, a.dtype), rowWords, kPerWord };
}

/**
 * The bytes a stage holds of a sparse A's metadata for a `tbM` x `tbK` tile: a 128-byte packet
 * for each 16 rows and each two 32-bit words of a row's nibbles (one nibble a group of
 * `sparseGroup(dtype).elements`).
 *
 * @param tbM The tile's rows.
 * @param tbK The tile's K (a multiple of a packet's).
 * @param dtype A's type.
 * @returns The bytes.
 */
export function metaStageBytes(tbM: number, tbK: number, dtype: string): number {
  return (tbM / 16) * (tbK / (16 * sparseGroup(dtype).elements)) * 128;
}

/** The bytes a stage holds of an operand's `outer` x `tileK` tile, at its tensor's width. */
function operandStageBytes(k: GemmKernel, role: "A" | "B", outer: number, tileK: number): number {
  return (outer * tileK * DTYPE_INFO[tensorParam(k, operandView(k, role).tensor).dtype].bits) / 8;
}

/**
 * The bytes of one pipeline stage of threadblock `tb`, as gemm-pipeline lays it out: A's tile (a
 * sparse A's kept half of the k-tile), B's, and a sparse A's metadata. gemm-tile asks it of a
 * deeper k-tile before it takes one.
 *
 * @param k The kernel.
 * @param tb The threadblock tile.
 * @returns The bytes (without a TMA pipeline's barriers).
 */
export function stageBytes(k: GemmKernel, tb: Shape3): number {
  const sparse = sparseMetaParam(k) !== null;
  const meta = sparse ? metaStageBytes(tb.m, tb.k, tensorParam(k, k.problem.a.tensor).dtype) : 0;
  const a = operandStageBytes(k, "A", tb.m, sparse ? tb.k / 2 : tb.k);
  return a + operandStageBytes(k, "B", tb.n, tb.k) + meta;
}

/**
 * Whether an operand's tile is stored transposed: SIMT f32 stores a
 * K-contiguous operand M/N-contiguous, so that its fragments load 4 registers
 * at a time (ir/simt.ts; bench/NOTES.md 40).
 *
 * @param k The kernel.
 * @param role The operand.
 * @returns True where it is.
 */
export function transposed(k: GemmKernel, role: "A" | "B"): boolean {
  return k.math.mode === "simt" && kContiguous(k, role) &&
    DTYPE_INFO[tensorParam(k, operandView(k, role).tensor).dtype].bits === 32;
}

/** Whether an operand is K-contiguous in global memory (A row-major, B column-major). */
function kContiguous(k: GemmKernel, role: "A" | "B"): boolean {
  return role === "A" ? k.problem.a.layout === "row" : k.problem.b.layout === "col";
}

/**
 * Whether a transposed operand (SIMT f32, K-contiguous in global memory) is
 * copied through registers: each thread loads 4 consecutive k of a line (16
 * bytes, `ld.global.v4`) and stores them to 4 rows of the tile, instead of 4
 * single-element cp.async. Needs 16-byte alignment and whole vectors a
 * thread. Measured on the H200 (bench/NOTES.md 42): +6-8% where A is
 * transposed (alone or with B), -4.6% where B alone is (and A alone in the
 * tn case spilled): so A, and B only with A.
 *
 * @param k The kernel (tile and warp plans made).
 * @param role The operand.
 * @param threads Threads of the block.
 * @returns True to copy through registers.
 */
export function viaRegisters(k: GemmKernel, role: "A" | "B", threads: number): boolean {
  if (!transposed(k, role)) return false;
  const t = tensorParam(k, operandView(k, role).tensor);
  const tb = k.plan.tile!.threadblock;
  const outer = role === "A" ? tb.m : tb.n;
  const perLine = tb.k / 4;
  const fits = t.align >= 4 && tb.k % 4 === 0 && perLine <= 8 && threads % perLine === 0 &&
    (outer * perLine) % threads === 0;
  return fits && (role === "A" || viaRegisters(k, "A", threads));
}

/**
 * The stages a deep pipeline (TilePlan.deepPipeline: sm90's skinny wgmma grids) asks for,
 * capped by what fits: one block an SM, whose TMA producer keeps every stage in flight, holds
 * as many k-tiles as its shared memory does (bench/NOTES.md 73). The cap only bounds small
 * tiles, whose stages would outnumber a split's k-tiles: 64x32 (12 KB a stage) gets the 18
 * it was measured with (NOTES 79), the larger tiles fewer by what fits.
 */
export const DEEP_PIPELINE_STAGES = 18;

/**
 * The preferred stage count when the schedule is silent: 4, 5 for tf32
 * (whose 128x256x16 tile has half the bytes per stage; 5 stages measured
 * best on the H200), 6 for 16-bit split-K kernels, 4 for 3xtf32 (its
 * 128x64x32 tile: 5 stages, 120 KB, left one block an SM and ran 9% slower
 * than 4 at 4096^3; bench/NOTES.md 47); a deep pipeline's {@link DEEP_PIPELINE_STAGES}
 * or a skinny tile's own count (passes/skinny.ts).
 * Capped by what fits.
 *
 * @param k The kernel.
 * @returns The stage count to try.
 */
export function defaultStages(k: GemmKernel): number {
  return stagePreference(k).stages;
}

/** {@link defaultStages}, with why in words (PipelinePlan.stagesWhy). */
function stagePreference(k: GemmKernel): { readonly stages: number; readonly why: string } {
  // Split-K kernels of 16-bit types serve skinny problems, latency-bound on
  // their loads: 6 stages measured +2.4% for f16 and bf16 at M=128,
  // N=K=8192 on the H200 (bench/NOTES.md 23; tf32: no gain).
  const a = k.math.mmaA;
  // sm90's skinny wgmma grids: all the shared memory (NOTES 73); sm80's skinny tiles: their
  // own count (passes/skinny.ts, measured with it; deeper tied, NOTES 73).
  if (k.plan.tile?.deepPipeline) {
    return {
      stages: DEEP_PIPELINE_STAGES,
      why: "a skinny wgmma grid's deep pipeline (DEEP_PIPELINE_STAGES)",
    };
  }
  const skinny = k.plan.tile?.skinny?.stages;
  if (skinny !== undefined) return { stages: skinny, why: "the skinny tile's own count" };
  if (k.plan.tile?.wgmma) return { stages: WGMMA_DEFAULT_STAGES, why: "the wgmma default" };
  if ((k.plan.tile?.splitK ?? 1) > 1 && (a === "f16" || a === "bf16")) {
    return { stages: 6, why: "a 16-bit split-K kernel's" };
  }
  if (k.math.mode === "3xtf32") return { stages: 4, why: "the 3xtf32 default" };
  return a === "tf32" ? { stages: 5, why: "the tf32 default" } : { stages: 4, why: "the default" };
}

/**
 * The operand tiles of a wgmma program are the instruction's layout (ir/wgmma_table.ts
 * `WGMMA_SMEM`): 128-byte rows, chunk c of row r at c ^ (r % 8), stages of whole 1,024-byte
 * groups (so every stage of A and of B starts on a group). A compiler bug otherwise.
 */
function checkWgmmaLayout(...tiles: Omit<OperandSmem, "offset">[]): void {
  for (const t of tiles) {
    const ok = t.contiguous === "k" && t.rowBytes === WGMMA_SMEM.rowBytes &&
      t.swizzleShift === 3 && t.swizzleScale === 1 && t.stageBytes % WGMMA_SMEM.groupBytes === 0 &&
      t.async && t.transpose !== true;
    if (!ok) {
      throw new Error(`gemm-pipeline: a wgmma operand tile off the layout: ${JSON.stringify(t)}`);
    }
  }
}

/** Two 8-byte mbarriers a stage after the stages (a TMA pipeline). */
const TMA_BARRIER_BYTES = 16;

/** E0206: a schedule's stage count below what the pipeline needs. */
function checkLeastStages(k: GemmKernel, least: number): void {
  const given = k.schedule.stages;
  if (given !== undefined && given < least) {
    scheduleError(
      k,
      "stages",
      "E0206",
      `"stages ${given}": a ${wgmmaTma(k) ? "TMA" : "cp.async"} pipeline ${
        k.plan.tile!.wgmma === true ? "feeding wgmma " : ""
      }needs at least ${least} stages`,
    );
  }
}

/**
 * The stage count: the schedule's, else the preference capped by what fits beside `reserve`
 * bytes (at least `least`), with why; E0204 where it is over the budget.
 */
function stageCount(
  k: GemmKernel,
  perStage: number,
  least: number,
  reserve: number,
): { readonly stages: number; readonly why: string } {
  const budget = targetInfo(k.target).smemPerBlock;
  const given = k.schedule.stages;
  const fit = Math.floor((budget - reserve) / perStage);
  // At least 2 when the schedule is silent, so that an over-budget tile is
  // reported with the figure of the smallest pipeline (2 stages).
  const pref = stagePreference(k);
  const stages = given ?? Math.max(least, Math.min(pref.stages, fit));
  if (stages < least || stages * perStage > budget) {
    const need = stages * perStage;
    const hint = fit >= 2
      ? `use stages ${fit} or fewer`
      : `use a smaller threadblock tile (2 stages need ${2 * perStage} bytes)`;
    scheduleError(
      k,
      ["stages", "threadblock"],
      "E0204",
      `Shared memory over the budget: ${stages} stages x ${perStage} bytes = ${need} bytes > ` +
        `${budget} bytes on ${k.target}; ${hint}`,
    );
  }
  const why = given !== undefined
    ? "given by the schedule"
    : stages < pref.stages
    ? `${pref.why} asks for ${pref.stages}; ${fit} fit in shared memory`
    : pref.why;
  return { stages, why };
}

/** What a persistent TMA kernel keeps beside its stages and barriers. */
interface PersistentRoom {
  readonly persistent: boolean;
  readonly streamK: boolean;
  readonly pingPong: boolean;
  /** Stream-K's flag word, or ping-pong's two turn barriers (16 bytes), after the barriers. */
  readonly flagBytes: number;
  /** The staged epilogue's bytes (ping-pong: a 128-byte aligned region each) and the flags. */
  readonly reserve: number;
}

/** A persistent kernel keeps room for the staged epilogue beside the stages. */
function persistentRoom(k: GemmKernel, persistent: boolean): PersistentRoom {
  const pingPong = persistent && wgmmaPingPong(k);
  const streamK = persistent && wgmmaStreamK(k);
  const flagBytes = streamK || pingPong ? 16 : 0;
  const staging = persistent ? persistentStagingBytes(k) : 0;
  const reserve = (pingPong ? 2 * Math.ceil(staging / 128) * 128 : staging) + flagBytes;
  return { persistent, streamK, pingPong, flagBytes, reserve };
}

/** A TMA pipeline's part of the plan: its barriers, warp roles, cluster and persistent regions. */
function tmaPlan(
  k: GemmKernel,
  cluster: number,
  stages: number,
  perStage: number,
  room: PersistentRoom,
): NonNullable<PipelinePlan["tma"]> {
  const threads = k.plan.warp!.threads;
  const consumers = room.pingPong ? 2 * threads : threads;
  // The barriers end where the stages and their two 8-byte mbarriers do.
  const barriersEnd = stages * (perStage + TMA_BARRIER_BYTES);
  return {
    barrierOffset: stages * perStage,
    producerThreads: TMA_PRODUCER_THREADS,
    producerRegs: tmaProducerRegs(k),
    consumerRegs: tmaConsumerRegs(k.target, consumers, tmaProducerRegs(k)),
    ...(cluster > 1 ? { cluster } : {}),
    ...(cluster > 1 && wgmmaClusterAxis(k) === "n" ? { clusterAxis: "n" as const } : {}),
    ...(room.persistent
      ? {
        persistent: {
          // The staging region (if any) from the next 128 bytes after the barriers and
          // Stream-K's flag.
          stagingOffset: Math.ceil((barriersEnd + room.flagBytes) / 128) * 128,
          ...(room.streamK ? { streamK: { flagOffset: barriersEnd } } : {}),
          // The staging regions' stride is gemm-epilogue-staging's (0: none).
          ...(room.pingPong ? { pingPong: { stagingBytes: 0, turnOffset: barriersEnd } } : {}),
        },
      }
      : {}),
  };
}

/** The pass. */
export const pipelinePass: GemmPass = {
  name: "gemm-pipeline",
  title: "StagePipeline",
  summary: "Lay out the shared-memory stages, choose copy widths and the stage count",
  run(k: GemmKernel): GemmKernel {
    const tb = k.plan.tile!.threadblock;
    const threads = k.plan.warp!.threads;
    // A sparse A's tile holds the kept values: half of the k-tile's columns.
    const sparse = sparseMetaParam(k) !== null;
    const a = operandSmem(k, k.problem.a, "A", tb.m, sparse ? tb.k / 2 : tb.k, threads);
    const b = operandSmem(k, k.problem.b, "B", tb.n, tb.k, threads);
    const meta = sparse ? metaSmem(k) : null;
    if (a.async || b.async || meta !== null) {
      requireInstruction(k.target, "cp.async", "gemm-pipeline's copies");
    }
    const perStage = stageBytes(k, tb);
    // A wgmma pipeline keeps a stage more: the one the previous k-tile's wgmmas still read
    // (passes/wgmma.ts WGMMA_GROUPS_IN_FLIGHT).
    const wgmma = k.plan.tile!.wgmma === true;
    // A TMA pipeline's stages are handed back by mbarrier as soon as their wgmmas retire, so
    // it needs no stage more (passes/wgmma.ts wgmmaTma).
    const tma = wgmmaTma(k);
    const least = 2 + (wgmma && !tma ? WGMMA_GROUPS_IN_FLIGHT : 0);
    const barrierBytes = tma ? TMA_BARRIER_BYTES : 0;
    checkLeastStages(k, least);
    if (wgmma) checkWgmmaLayout(a, b);
    // (Both asked of every kernel: a `scheduler` or `cluster` line it cannot honour is refused
    // there.)
    const persistent = wgmmaPersistent(k);
    const cluster = wgmmaCluster(k);
    const room = persistentRoom(k, persistent);
    const { stages, why } = stageCount(k, perStage + barrierBytes, least, room.reserve);
    const pipe: PipelinePlan = {
      stages,
      stagesWhy: why,
      a: { ...a, offset: 0 },
      b: { ...b, offset: stages * a.stageBytes },
      ...(meta === null
        ? {}
        : { meta: { ...meta, offset: stages * (a.stageBytes + b.stageBytes) } }),
      smemBytes: stages * (perStage + barrierBytes) + room.flagBytes,
      waitDepth: stages - least,
      ...(tma ? { tma: tmaPlan(k, cluster, stages, perStage, room) } : {}),
    };
    return { ...k, schedule: { ...k.schedule, stages }, plan: { ...k.plan, pipeline: pipe } };
  },
};
