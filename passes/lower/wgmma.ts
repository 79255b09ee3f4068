/**
 * The main loop of a wgmma tile (sm90, passes/wgmma.ts): cp.async copies into stages in
 * the instruction's shared layout, and per k-tile one group of warpgroup MMAs read from
 * the stage, left running while the next k-tile's copies are issued.
 *
 * With S stages and G = WGMMA_GROUPS_IN_FLIGHT (passes/wgmma.ts; 1), A = S - 1 - G
 * k-tiles are in flight ahead of the one computed: at k-tile kt, once its copies have
 * landed (wait A - 1, `fence.proxy.async` so that the wgmmas see what cp.async wrote, and
 * the barrier), the warpgroup issues the tile's wgmmas, commits them, issues the copies of
 * k-tile kt + A into the stage of k-tile kt - 1 - G (whose wgmmas every warpgroup retired
 * before the barrier), and waits until only G groups, this k-tile's, are pending. The
 * drain waits for the rest and for the copies.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Reg } from "../../ir/kernel.ts";
import { plannedWgmma, WGMMA_GROUPS_IN_FLIGHT } from "../wgmma.ts";
import type { LowerContext } from "./context.ts";
import {
  advanceStage,
  copiesBeforeWait,
  type CopyOperand,
  copySetup,
  issueCopies,
} from "./copies.ts";
import { kLoops, kTileRange, type TileOrigin, zeroAccumulators } from "./main_loop.ts";
import * as ir from "../../ir/builder.ts";

/** Bytes along K of one wgmma's operand rows (16 elements of 16 bits, 8 of tf32, 32 of 8 bits). */
const K_STEP_BYTES = 32;

/** Rows of A one warpgroup takes. */
const WARPGROUP_ROWS = 64;

/** A warpgroup's operand tiles in stage 0: its 64 rows of A's, and B's. */
export interface StageBases {
  readonly a: Reg;
  readonly b: Reg;
}

/**
 * The shared addresses of the executing warpgroup's operand tiles in stage 0 (its rows of A,
 * all of B); stage s is `stageBytes` s further.
 *
 * @param cx The lowering's context (a wgmma plan).
 * @param smem The shared memory's base.
 * @returns A's and B's bases.
 */
export function wgmmaStageBases(cx: LowerContext, smem: Reg): StageBases {
  const pipe = cx.k.plan.pipeline!;
  const group = cx.bin("shr", "u32", cx.features.get("warp")!, imm(2), "wgroup");
  const a = cx.bin(
    "add",
    "u32",
    cx.bin("mul", "u32", group, imm(WARPGROUP_ROWS * pipe.a.rowBytes)),
    cx.bin("add", "u32", smem, imm(pipe.a.offset)),
    "wga",
  );
  return { a, b: cx.bin("add", "u32", smem, imm(pipe.b.offset), "wgb") };
}

/**
 * Emits one k-tile's group of warpgroup MMAs from stage `stage` (u32 register): the fence,
 * the k-steps' wgmmas, 32 bytes of K apart, and the commit.
 *
 * @param cx The lowering's context (a wgmma plan).
 * @param d The accumulators.
 * @param bases The stage-0 tiles ({@link wgmmaStageBases}).
 * @param stage The stage read.
 */
export function wgmmaGroup(
  cx: LowerContext,
  d: readonly Reg[],
  bases: StageBases,
  stage: Reg,
): void {
  const b = cx.b;
  const pipe = cx.k.plan.pipeline!;
  const row = plannedWgmma(cx.k)!;
  const stageOf = (base: Reg, bytes: number) =>
    cx.bin("add", "u32", cx.bin("mul", "u32", stage, imm(bytes)), base);
  const aStage = stageOf(bases.a, pipe.a.stageBytes);
  const bStage = stageOf(bases.b, pipe.b.stageBytes);
  b.emit(ir.wgFence());
  for (let kk = 0; kk < cx.k.plan.mma!.kSteps; kk++) {
    const at = (base: Reg) => kk === 0 ? base : cx.bin("add", "u32", base, imm(kk * K_STEP_BYTES));
    b.emit(ir.wgmma(row.name, d, at(aStage), at(bStage), 1));
  }
  b.emit(ir.wgCommit());
}

/**
 * Emits the main loop of a wgmma tile, up to the drain.
 *
 * @param cx The lowering's context (a wgmma plan).
 * @param o The tile and the problem's sizes.
 * @returns The accumulators by tile row (one), n8 column and register: each warp's
 *   part of its warpgroup's, in the m16n8 fragment layout.
 */
export function wgmmaMainLoop(cx: LowerContext, o: TileOrigin): Reg[][][] {
  const k = cx.k;
  const b = cx.b;
  const pipe = k.plan.pipeline!;
  const tb = k.plan.tile!.threadblock;
  const { m0, n0, M, N, K, bz, split, smem } = o;
  const copies = (role: "A" | "B", op: CopyOperand) => copySetup(cx, role, op, K, bz, smem);
  const aCopy = copies("A", { view: k.problem.a, p: pipe.a, x0: m0, outerSize: M });
  const bCopy = copies("B", { view: k.problem.b, p: pipe.b, x0: n0, outerSize: N });
  const { acc } = zeroAccumulators(cx);
  const d = acc.flat(2);
  const { kRem, kCount } = kTileRange(cx, K, split, aCopy, bCopy, null);
  const S = pipe.stages;
  const writeOff = cx.mov("u32", imm(0), "wstage");
  const readOff = cx.mov("u32", imm(0), "rstage");
  const bases = wgmmaStageBases(cx, smem);

  const ops = { A: { c: aCopy, p: pipe.a }, B: { c: bCopy, p: pipe.b } };
  const issue = (roles: readonly ("A" | "B")[] = ["A", "B"]) => {
    for (const r of roles) issueCopies(cx, ops[r].c, ops[r].p, writeOff, kRem);
    b.emit(ir.commit());
    b.emit(ir.bin("sub", "s32", kRem, kRem, imm(tb.k)));
    advanceStage(cx, writeOff, S);
  };
  const ahead = S - 1 - WGMMA_GROUPS_IN_FLIGHT;
  const late = copiesBeforeWait(cx, ops, { kRem, rot: null }, ahead);
  b.emit(ir.comment(`prologue: fill ${ahead} stages`));
  for (let s = 0; s < ahead; s++) issue(late);

  const kt = b.reg("u32", "kt");
  const body = () => {
    b.emit(ir.wait(pipe.waitDepth));
    b.emit(ir.proxyFence());
    b.emit(ir.bar());
    wgmmaGroup(cx, d, bases, readOff);
    b.emit(ir.comment(`copies of k-tile kt + ${ahead}`));
    issue();
    b.emit(ir.wgWait(WGMMA_GROUPS_IN_FLIGHT));
    advanceStage(cx, readOff, S);
  };
  kLoops(cx, o, kCount, (from, to) => b.for(kt, from, to, 1, body));
  b.emit(ir.wgWait(0));
  b.emit(ir.wait(0));
  cx.gridLaunch();
  // The epilogue may reuse the stages (staging, split-K): every warpgroup's reads first.
  b.emit(ir.bar());
  return acc;
}
