/**
 * The kernel's skeleton: parameters in ABI order, the operands' cache policies, thread and
 * block indices, the prologue, the main loop over k-tiles, the drain, then split-K or the
 * epilogue.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { type GemmKernel, GROUP_PARAMS } from "../../ir/gemm.ts";
import type { GroupLayout, Kernel, KernelParam, Operand, Reg, RegType } from "../../ir/kernel.ts";
import { groupedTiles, groupLayout } from "./grouped.ts";
import { log2, LowerContext } from "./context.ts";
import { epilogue } from "./epilogue.ts";
import type { EpilogueInputs } from "./epilogue_setup.ts";
import { epiPrefetch } from "./epilogue_loads.ts";
import { mainLoop } from "./main_loop.ts";
import { wgmmaMainLoop } from "./wgmma.ts";
import { splitKReduce } from "./split_k.ts";
import {
  tensorMapParams,
  type TileFinish,
  type TileSource,
  warpSpecializedTile,
  warpSpecializedTiles,
} from "./wgmma_ws.ts";
import { streamKFinish, streamKUnits } from "./stream_k.ts";
import type { TileOrigin } from "./main_loop.ts";
import { targetInfo } from "../../ir/target.ts";
import * as ir from "../../ir/builder.ts";

/** A tile's main loop, up to the drain: wgmma's (passes/lower/wgmma.ts) or mma.sync's. */
function tileMainLoop(cx: LowerContext, o: TileOrigin): Reg[][][] {
  return cx.k.plan.mma!.wgmma !== undefined ? wgmmaMainLoop(cx, o) : mainLoop(cx, o);
}

/**
 * Builds the kernel: parameters, indices, and for a block inside the grid
 * its threadblock tile's main loop, then split-K or the epilogue.
 *
 * @param cx The lowering's context.
 * @returns The kernel-IR program.
 */
function buildKernel(cx: LowerContext): Kernel {
  if (cx.k.grouped) return buildGroupedKernel(cx);
  if (cx.k.plan.pipeline!.tma?.persistent !== undefined) return buildPersistentKernel(cx);
  const k = cx.k;
  const b = cx.b;
  const tb = k.plan.tile!.threadblock;
  const kparams = emitParams(cx);
  cx.emitCachePolicies();
  const { split, bz, tileMIdx, tileNIdx } = emitIndices(cx);
  const M = cx.dim(k.problem.m);
  const N = cx.dim(k.problem.n);
  const K = cx.dim(k.problem.k);
  const tilesN = cx.divRem("div", cx.bin("add", "u32", N, imm(tb.n - 1)), tb.n);
  const inGrid = cx.setp("lt", "u32", tileNIdx, tilesN);
  b.if(inGrid, true, () => {
    const m0 = cx.mulImm(tileMIdx, tb.m, "m0");
    const n0 = cx.mulImm(tileNIdx, tb.n, "n0");
    const smem = b.reg("u32", "smem");
    b.emit(ir.smemBase(smem));
    const origin = { m0, n0, M, N, K, bz, split, smem };
    const ix = { split, tileMIdx, tileNIdx, tilesN };
    const finish = (acc: Reg[][][]) => tileEnd(cx, { acc, m0, n0, M, N, bz, smem }, ix);
    if (k.plan.pipeline!.tma !== undefined) {
      // The wait comes after the barriers' set-up (wgmma_ws.ts `warpSpecializedTiles`).
      warpSpecializedTile(cx, origin, finish);
    } else finish(tileMainLoop(cx, origin));
  });
  return kernelOf(cx, kparams);
}

/** The block's tile indices that split-K's reduction needs. */
interface TileIndices {
  readonly split: Reg | null;
  readonly tileMIdx: Reg;
  readonly tileNIdx: Reg;
  readonly tilesN: Reg;
}

/**
 * What follows a tile's main loop: the epilogue, or split-K's reduction and then the
 * epilogue of the last split.
 *
 * @param cx The lowering's context.
 * @param at The accumulators, the tile and the sizes.
 * @param ix The block's split and tile indices.
 */
function tileEnd(cx: LowerContext, at: EpilogueInputs, ix: TileIndices): void {
  const { split, tileMIdx, tileNIdx, tilesN } = ix;
  if (split === null) return epilogue(cx, at);
  const tb = cx.k.plan.tile!.threadblock;
  const { m0, n0, M, N, bz, smem } = at;
  const tilesM = cx.divRem("div", cx.bin("add", "u32", M, imm(tb.m - 1)), tb.m);
  const tileLin = cx.bin(
    "add",
    "u32",
    cx.bin(
      "mul",
      "u32",
      cx.bin("add", "u32", cx.bin("mul", "u32", bz, tilesM), tileMIdx),
      tilesN,
    ),
    tileNIdx,
    "tile",
  );
  splitKReduce(
    cx,
    at.acc,
    split,
    tileLin,
    smem,
    (sum) => epilogue(cx, { ...at, before: sum }),
    epiPrefetch(cx, m0, n0, M, N, bz),
  );
}

/**
 * Builds a persistent warp-specialized kernel (sm90, `plan.pipeline.tma.persistent`): block
 * x takes tiles x, x + nctaid.x, ... of every batch's tiles in the rasterised order
 * ({@link persistentTile}), its producer filling the next tile's stages while its consumers
 * run the epilogue (staged in a region of its own). No split-K. With `scheduler stream_k` the
 * last tiles' k-loops are shared out instead (stream_k.ts).
 *
 * @param cx The lowering's context.
 * @returns The kernel-IR program.
 */
function buildPersistentKernel(cx: LowerContext): Kernel {
  const k = cx.k;
  const b = cx.b;
  const tb = k.plan.tile!.threadblock;
  const kparams = emitParams(cx);
  cx.emitCachePolicies();
  emitThreadIndices(cx);
  // The wait comes after the barriers' set-up (wgmma_ws.ts `warpSpecializedTiles`).
  const M = cx.dim(k.problem.m);
  const N = cx.dim(k.problem.n);
  const K = cx.dim(k.problem.k);
  const batch = k.problem.batch === null ? imm(1) : cx.dim(k.problem.batch);
  // A cluster's CTAs take the C vertically adjacent tiles of a unit C tiles tall together
  // (horizontally adjacent, C tiles wide, along N; wgmma_ws.ts), rank r the r-th: the grid's
  // geometry counts units.
  const tma = k.plan.pipeline!.tma!;
  const cluster = tma.cluster ?? 1;
  const alongN = tma.clusterAxis === "n";
  const unitM = alongN ? tb.m : tb.m * cluster;
  const unitN = alongN ? tb.n * cluster : tb.n;
  // The grid's geometry, computed again where each tile is decoded (not kept live across
  // the main loop: the f32 epilogue's kernels sit at ptxas's 168 registers).
  const geometry = () => {
    const tilesM = cx.divRem("div", cx.bin("add", "u32", M, imm(unitM - 1)), unitM, "tilesm");
    const tilesN = cx.divRem("div", cx.bin("add", "u32", N, imm(unitN - 1)), unitN, "tilesn");
    return { tilesM, tilesN, perBatch: cx.bin("mul", "u32", tilesM, tilesN, "tilesmn") };
  };
  const tiles = cx.bin("mul", "u32", geometry().perBatch, batch, "tiles");
  const own = k.plan.pipeline!.tma!.persistent!;
  const shared = () => {
    const smem = b.reg("u32", "smem");
    b.emit(ir.smemBase(smem));
    return { smem, staging: cx.bin("add", "u32", smem, imm(own.stagingOffset)) };
  };
  const finishTile = (smem: Reg, staging: Reg): TileFinish => (acc, o, wg, rcx) => {
    // A ping-pong kernel's second consumer warpgroup stages in a region of its own.
    const shift = wg * (own.pingPong?.stagingBytes ?? 0);
    const epi = (before?: (i: number, j: number) => void) =>
      epilogue(rcx, {
        acc,
        m0: o.m0,
        n0: o.n0,
        M,
        N,
        bz: o.bz,
        smem: shift === 0 ? staging : rcx.bin("add", "u32", staging, imm(shift)),
        ...(before !== undefined ? { before } : {}),
      });
    if (o.part === undefined) return epi();
    const flag = () => rcx.bin("add", "u32", smem, imm(own.streamK!.flagOffset));
    streamKFinish(rcx, acc, o.part, flag, epi);
  };
  const finish = (smem: Reg, staging: Reg): TileFinish => (acc, o, wg, rcx) => {
    // A cluster's tile below the last row of tiles (M tiles odd; right of the last column
    // along N) ran only for its peer's sake.
    if (cluster === 1) return finishTile(smem, staging)(acc, o, wg, rcx);
    const inside = alongN ? rcx.setp("lt", "u32", o.n0, N) : rcx.setp("lt", "u32", o.m0, M);
    b.if(inside, true, () => finishTile(smem, staging)(acc, o, wg, rcx));
  };
  const g: PersistentGrid = { M, N, K, tiles, geometry, unitM, unitN, cluster, alongN, shared };
  const { smem, staging, source } = own.streamK !== undefined
    ? streamKSource(cx, g)
    : roundSource(cx, g);
  warpSpecializedTiles(cx, smem, source, finish(smem, staging));
  return kernelOf(cx, kparams);
}

/** What a persistent kernel's tile sources share. */
interface PersistentGrid {
  readonly M: Operand;
  readonly N: Operand;
  readonly K: Operand;
  /** Every batch's units (tiles without a cluster). */
  readonly tiles: Reg;
  /** Emits the grid's tile rows (of units), columns and units a batch. */
  readonly geometry: () => { readonly tilesM: Reg; readonly tilesN: Reg; readonly perBatch: Reg };
  /** A unit's rows and columns: the tile's, times the cluster's CTAs along its axis. */
  readonly unitM: number;
  readonly unitN: number;
  readonly cluster: number;
  /** Whether a cluster's CTAs lie along N (`tma.clusterAxis` `n`), else along M. */
  readonly alongN: boolean;
  /** Emits the shared memory's base and the epilogue's staging. */
  readonly shared: () => { readonly smem: Reg; readonly staging: Reg };
}

/** A tile source and the shared memory it was emitted with. */
interface PersistentSource {
  readonly smem: Reg;
  readonly staging: Reg;
  readonly source: TileSource;
}

/** Stream-K's tiles (stream_k.ts): whole tiles, then parts of the last tiles' k-loops. */
function streamKSource(cx: LowerContext, g: PersistentGrid): PersistentSource {
  const { M, N, K } = g;
  const { smem, staging } = g.shared();
  const units = streamKUnits(cx, g.tiles, K);
  const at = (i: Reg | null): TileOrigin => {
    const p = units.at(i!);
    const { m0, n0, bz } = persistentTile(cx, p.tile, g.geometry());
    return {
      m0,
      n0,
      M,
      N,
      K,
      bz,
      split: null,
      smem,
      kSpan: { start: p.start, count: p.count },
      part: () => {
        const q = units.at(i!);
        return { whole: q.whole, index: q.index, record: q.record };
      },
    };
  };
  return { smem, staging, source: { count: units.count, at } };
}

/** The static round: block (or cluster) x takes units x, x + nx, ... of the rasterised order,
 * a cluster's CTA of rank r the unit's r-th tile. */
function roundSource(cx: LowerContext, g: PersistentGrid): PersistentSource {
  const { M, N, K, cluster, alongN } = g;
  const tb = cx.k.plan.tile!.threadblock;
  // Cluster units: a cluster's index and count (the CTA's own and the grid's without one).
  const bx = cluster > 1
    ? cx.divRem("div", cx.b.readSreg("ctaid.x"), cluster, "bx")
    : cx.b.readSreg("ctaid.x", "bx");
  const nx = cluster > 1
    ? cx.divRem("div", cx.b.readSreg("nctaid.x"), cluster, "nbx")
    : cx.b.readSreg("nctaid.x", "nbx");
  // Units bx, bx + nx, ... below `tiles` (bx < nx: no underflow).
  const count = cx.bin(
    "div",
    "u32",
    cx.bin("sub", "u32", cx.bin("add", "u32", g.tiles, cx.bin("sub", "u32", nx, imm(1))), bx),
    nx,
    "mytiles",
  );
  const { smem, staging } = g.shared();
  const at = (i: Reg | null): TileOrigin => {
    const t = cx.bin("add", "u32", bx, cx.bin("mul", "u32", i!, nx), "t");
    const { m0, n0, bz } = persistentTile(cx, t, g.geometry(), g.unitM, g.unitN);
    if (cluster === 1) return { m0, n0, M, N, K, bz, split: null, smem };
    // The rank's tile of the unit: below the first along M, right of it along N.
    const rank = cx.mulImm(cx.b.readSreg("cluster_ctarank"), alongN ? tb.n : tb.m);
    const m0r = alongN ? m0 : cx.bin("add", "u32", m0, rank, "m0r");
    const n0r = alongN ? cx.bin("add", "u32", n0, rank, "n0r") : n0;
    return { m0: m0r, n0: n0r, M, N, K, bz, split: null, smem };
  };
  return { smem, staging, source: { count, at } };
}

/**
 * A persistent kernel's tile t: its batch `t / (tilesM tilesN)`, then within the batch the
 * tiles in groups of `swizzle` tile columns, each group's tiles column by column within a row
 * and row by row (the blocks running at once cover a few rows of a group: they share its
 * B columns and A rows in L2), the last group as wide as the columns left. The tiles are
 * `rows` tall and `cols` wide (a cluster's unit; default the threadblock's).
 */
function persistentTile(
  cx: LowerContext,
  t: Reg,
  g: { readonly tilesM: Reg; readonly tilesN: Reg; readonly perBatch: Reg },
  rows: number = cx.k.plan.tile!.threadblock.m,
  cols: number = cx.k.plan.tile!.threadblock.n,
): { m0: Reg; n0: Reg; bz: Reg } {
  const sw = cx.k.plan.tile!.swizzle;
  const bz = cx.bin("div", "u32", t, g.perBatch, "bz");
  const r = cx.bin("sub", "u32", t, cx.bin("mul", "u32", bz, g.perBatch));
  const perGroup = cx.mulImm(g.tilesM, sw);
  const grp = cx.bin("div", "u32", r, perGroup);
  const rem = cx.bin("sub", "u32", r, cx.bin("mul", "u32", grp, perGroup));
  const first = cx.mulImm(grp, sw);
  const width = cx.bin("min", "u32", imm(sw), cx.bin("sub", "u32", g.tilesN, first));
  const tm = cx.bin("div", "u32", rem, width);
  const tn = cx.bin(
    "add",
    "u32",
    first,
    cx.bin("sub", "u32", rem, cx.bin("mul", "u32", tm, width)),
  );
  return { m0: cx.mulImm(tm, rows, "m0"), n0: cx.mulImm(tn, cols, "n0"), bz };
}

/**
 * Builds a grouped kernel (DESIGN §6.2): the table and count parameters and the
 * scalars, the thread's indices, then the persistent loop over every problem's
 * tiles (grouped.ts), each tile's main loop and epilogue as in {@link buildKernel}
 * (no batch, no split-K).
 *
 * @param cx The lowering's context.
 * @returns The kernel-IR program.
 */
function buildGroupedKernel(cx: LowerContext): Kernel {
  const b = cx.b;
  const layout = groupLayout(cx.k);
  const kparams = emitParams(cx);
  cx.emitCachePolicies();
  emitThreadIndices(cx);
  cx.gridWait(); // before the problem table's first load
  cx.gridLaunch();
  const bz = cx.mov("u32", imm(0), "batch");
  // The tiles of a problem with at most half a tile's rows (an expert with few tokens)
  // run the short plan (passes/short_tile.ts): the same warps over a tile half as tall.
  const short = cx.k.plan.short ?? null;
  const cxShort = short === null ? null : cx.variant(short);
  if (cxShort !== null) emitWarpIndices(cxShort);
  const half = cx.k.plan.tile!.threadblock.m / 2;
  groupedTiles(cx, layout, ({ m0, n0, M, N, K }) => {
    const smem = b.reg("u32", "smem");
    b.emit(ir.smemBase(smem));
    const body = (c: LowerContext) => () => {
      const acc = tileMainLoop(c, { m0, n0, M, N, K, bz, split: null, smem });
      epilogue(c, { acc, m0, n0, M, N, bz, smem });
    };
    if (cxShort === null) return body(cx)();
    // The problem's M, not the tile's rows: a short last tile beside full ones would
    // run ahead of its siblings, which read the same B columns at the same time (see
    // passes/short_tile.ts).
    b.if(cx.setp("le", "u32", M, imm(half)), true, body(cxShort), body(cx));
  });
  return kernelOf(cx, kparams, layout);
}

/**
 * Emits the kernel's parameters in ABI order: tensors, dims, strides, scalars, and
 * with split_k > 1 the workspace, last.
 *
 * @param cx The lowering's context (its `params` are written here).
 * @returns The parameters.
 */
function emitParams(cx: LowerContext): KernelParam[] {
  const k = cx.k;
  const b = cx.b;
  const kparams: KernelParam[] = [];
  if (k.grouped) {
    // DESIGN §6.2: the table's address and the problem count replace the tensors,
    // dims and strides (each problem's are in its table entry).
    kparams.push({ name: GROUP_PARAMS.table, kind: "table", ptx: "u64" });
    kparams.push({ name: GROUP_PARAMS.count, kind: "count", ptx: "u32" });
  } else {
    for (const p of k.params) {
      if (p.kind === "tensor") {
        kparams.push({ name: p.name, kind: "tensor", ptx: "u64", dtype: p.dtype });
      }
    }
    for (const d of k.dims) kparams.push({ name: d, kind: "dim", ptx: "u32" });
    // Stride parameters (DESIGN §6.1): `.u64` elements, after the dims, before the scalars.
    for (const st of k.strides ?? []) kparams.push({ name: st, kind: "stride", ptx: "u64" });
  }
  for (const p of k.params) {
    if (p.kind === "scalar") {
      const ptx = p.dtype === "f64" ? "f64" : p.dtype === "s32" ? "s32" : "f32";
      kparams.push({ name: p.name, kind: "scalar", ptx, dtype: p.dtype });
    }
  }
  // split_k > 1: the workspace (gemm-workspace's parameter), last (see splitKReduce).
  const workspace = k.plan.workspace ?? null;
  if (workspace !== null) {
    kparams.push({ name: workspace.param, kind: "tensor", ptx: "u64", dtype: "u8" });
  }
  kparams.push(...tensorMapParams(cx));
  for (const p of kparams) {
    if (p.ptx === "tmap") continue; // read by the TMA copies themselves
    const t: RegType = p.ptx === "u64" ? "u64" : p.ptx;
    const r = b.loadParam(t, p.name);
    cx.params.set(p.name, r);
  }
  return kparams;
}

/** This block's place in the grid (see {@link emitIndices}). */
interface BlockIndices {
  /** Split-K: this block's split of K; null without split-K. */
  readonly split: Reg | null;
  /** The batch index. */
  readonly bz: Reg;
  /** The threadblock tile's row and column of tiles. */
  readonly tileMIdx: Reg;
  readonly tileNIdx: Reg;
}

/**
 * Emits the thread's indices (the lane and warp features of the context)
 * and the block's: its batch, split and tile through the rasterisation
 * swizzle.
 *
 * @param cx The lowering's context (its `features` are written here).
 * @returns The block's indices.
 */
function emitIndices(cx: LowerContext): BlockIndices {
  const tile = cx.k.plan.tile!;
  emitThreadIndices(cx);
  const bx = cx.b.readSreg("ctaid.x", "bx");
  const by = cx.b.readSreg("ctaid.y", "by");
  const bzRaw = cx.b.readSreg("ctaid.z", "bz");
  // grid z = batch * split_k: the batch index and this block's split of K.
  const splitK = tile.splitK;
  const split = splitK > 1 ? cx.divRem("rem", bzRaw, splitK, "split") : null;
  const bz = splitK > 1 ? cx.divRem("div", bzRaw, splitK, "batch") : bzRaw;
  const ls = log2(tile.swizzle);
  const tileMIdx = ls === 0 ? bx : cx.bin("shr", "u32", bx, imm(ls));
  const tileNIdx = ls === 0 ? by : cx.bin(
    "add",
    "u32",
    cx.bin("shl", "u32", by, imm(ls)),
    cx.bin("and", "u32", bx, imm(tile.swizzle - 1)),
  );
  return { split, bz, tileMIdx, tileNIdx };
}

/**
 * Emits the thread's indices: the lane and warp features of the context.
 *
 * @param cx The lowering's context (its `features` are written here).
 */
function emitThreadIndices(cx: LowerContext): void {
  const tid = cx.b.readSreg("tid.x", "tid");
  const lane = cx.bin("and", "u32", tid, imm(31), "lane");
  const warp = cx.bin("shr", "u32", tid, imm(5), "warp");
  cx.features.set("tid", tid);
  cx.features.set("lane7", cx.bin("and", "u32", lane, imm(7)));
  cx.features.set(
    "lane8",
    cx.bin("and", "u32", cx.bin("shr", "u32", lane, imm(3)), imm(1)),
  );
  cx.features.set("lane16", cx.bin("shr", "u32", lane, imm(4)));
  cx.features.set("g", cx.bin("shr", "u32", lane, imm(2), "g"));
  cx.features.set("tig", cx.bin("and", "u32", lane, imm(3), "tig"));
  cx.features.set("warp", warp);
  emitWarpIndices(cx);
}

/**
 * Emits the warp's row and column of the context's warp layout (features `wm`, `wn`)
 * from its `warp` feature.
 *
 * @param cx The lowering's context (its `features` are written here).
 */
function emitWarpIndices(cx: LowerContext): void {
  const wp = cx.k.plan.warp!;
  const warp = cx.features.get("warp")!;
  cx.features.set("wm", cx.divRem("rem", warp, wp.warpsM, "wm"));
  cx.features.set("wn", cx.divRem("div", warp, wp.warpsM, "wn"));
}

/**
 * The kernel-IR program of the built body.
 *
 * @param cx The lowering's context.
 * @param kparams The parameters.
 * @param group A grouped kernel's problem table.
 * @returns The kernel.
 */
function kernelOf(cx: LowerContext, kparams: KernelParam[], group?: GroupLayout): Kernel {
  const k = cx.k;
  const b = cx.b;
  const tile = k.plan.tile!;
  const tb = tile.threadblock;
  const pipe = k.plan.pipeline!;
  // The decisions of gemm-occupancy and gemm-workspace.
  const minBlocks = k.plan.occupancy!.blocksPerSm;
  const workspace = k.plan.workspace ?? null;
  if (cx.gridDep.on && !(cx.gridDep.waited && cx.gridDep.launched)) {
    throw new Error(`lower-kernel: kernel "${k.name}" lacks its griddepcontrol wait or trigger`);
  }
  return {
    kind: "kernel",
    name: k.name,
    target: k.target,
    params: kparams,
    // A ping-pong kernel's two consumer warpgroups each run the tile's threads' program.
    threads: cx.threads * (pipe.tma?.persistent?.pingPong !== undefined ? 2 : 1) +
      (pipe.tma?.producerThreads ?? 0),
    dynamicSmemBytes: pipe.smemBytes,
    ...(minBlocks > 1 ? { minBlocksPerSm: minBlocks } : {}),
    ...(pipe.tma?.cluster !== undefined ? { cluster: pipe.tma.cluster } : {}),
    grid: {
      tileM: tb.m,
      tileN: tb.n,
      swizzle: tile.swizzle,
      splitK: tile.splitK,
      ...(workspace !== null ? { workspacePerTile: workspace.perTile } : {}),
      ...(pipe.tma?.persistent !== undefined
        ? {
          persistent: {
            blocks: (k.sms ?? targetInfo(k.target).defaultSms) * minBlocks,
            ...(pipe.tma.cluster !== undefined ? { cluster: pipe.tma.cluster } : {}),
            ...(pipe.tma.clusterAxis === "n" ? { clusterAxis: "n" as const } : {}),
          },
        }
        : {}),
      m: k.problem.m.kind === "sym" ? k.problem.m.name : k.problem.m.value,
      n: k.problem.n.kind === "sym" ? k.problem.n.name : k.problem.n.value,
      batch: k.problem.batch === null
        ? null
        : k.problem.batch.kind === "sym"
        ? k.problem.batch.name
        : k.problem.batch.value,
    },
    ...(group !== undefined ? { group } : {}),
    regs: b.regs,
    body: b.body,
  };
}

/**
 * Lowers a fully planned GEMM IR kernel to the kernel IR.
 *
 * @param k The kernel after `gemm-mma`.
 * @returns The kernel-IR program.
 */
export function lowerToKernel(k: GemmKernel): Kernel {
  if (
    k.plan.tile === undefined || k.plan.warp === undefined || k.plan.pipeline === undefined ||
    k.plan.mma === undefined
  ) {
    throw new Error(`lower-kernel: kernel "${k.name}" is not fully planned`);
  }
  return buildKernel(new LowerContext(k));
}
