/**
 * The main loop: the copies' and fragments' set-up, the accumulators, the
 * k-loop's rotation where the schedule has one (rotate_k.ts), the prologue that fills
 * `stages - 1` stages, the loop over k-tiles (k-steps
 * unrolled, fragments double-buffered or interleaved with the MMAs), the L2
 * prefetch of C's tile before the last k-tiles, and the drain.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import type { MmaShape } from "../../ir/mma_table.ts";
import { log2, type LowerContext } from "./context.ts";
import {
  advanceStage,
  copiesBeforeWait,
  type CopyOperand,
  type CopyPlan,
  copySetup,
  issueCopies,
  type OperandCopies,
  skipTiles,
} from "./copies.ts";
import { epiPrefetch, prefetchAhead } from "./epilogue_loads.ts";
import { fragLoader, type FragPlan, fragSetup } from "./fragments.ts";
import { type KTileSums, mmas } from "./mma.ts";
import { type KRotation, kRotation } from "./rotate_k.ts";
import {
  keptRemaining,
  keptValuesOperand,
  loadMetaWords,
  type MetaCopies,
  metaCopySetup,
  metaFragSetup,
  type MetaSteps,
  metaSteps,
  type MetaWords,
  skipMetaTiles,
  sparseShape,
  storeMetaWords,
} from "./sparse.ts";
import * as ir from "../../ir/builder.ts";

/** The threadblock tile and what the main loop needs of the problem. */
export interface TileOrigin {
  /** The tile's first row and column. */
  readonly m0: Reg;
  readonly n0: Reg;
  readonly M: Operand;
  readonly N: Operand;
  readonly K: Operand;
  /** The batch index. */
  readonly bz: Reg;
  /** Split-K: this block's split; null without split-K. */
  readonly split: Reg | null;
  /** The shared memory's base. */
  readonly smem: Reg;
  /** Stream-K (passes/lower/stream_k.ts): the k-tiles of this block's part of the tile, in
   * place of {@link kTileSpan}'s (the warp-specialized loops read it). */
  readonly kSpan?: { readonly start: Reg; readonly count: Reg };
  /** Stream-K: emits whether the part is the whole tile, and else which of its two parts it
   * is and the workspace record of the tile (u32 registers), where the epilogue needs them
   * (computed again there, not held across the main loop). */
  readonly part?: () => { readonly whole: Reg; readonly index: Reg; readonly record: Reg };
}

/** What one k-step of the loop uses (see {@link kStep}). */
interface LoopState {
  readonly acc: Reg[][][];
  /** 3xtf32: the k-tile sums (null otherwise). */
  readonly kTile: KTileSums | null;
  readonly aFrag: FragPlan;
  readonly bFrag: FragPlan;
  /** The two fragment buffers of A and of B. */
  readonly aBuf: Reg[][][];
  readonly bBuf: Reg[][][];
  /** A sparse A's metadata registers (null: dense). */
  readonly meta: MetaSteps | null;
  /** The stage the fragments are read from. */
  readonly readOff: Reg;
  /** Issues the copies of the next k-tile to fetch (`deferMeta`: the metadata's
   * stores wait for `storeMeta`). */
  readonly issue: (deferMeta?: boolean) => void;
  /** Stores the metadata words of the copies issued last (nothing if stored). */
  readonly storeMeta: () => void;
  /** Loads k-step kk's fragments of A and B into buffer `buf`. */
  readonly loadBoth: (kk: number, buf: number) => void;
}

/**
 * Emits the mma.sync main loop of a threadblock tile, up to the drain (a wgmma plan's is
 * passes/lower/wgmma.ts `wgmmaMainLoop`; kernel.ts `tileMainLoop` picks).
 *
 * @param cx The lowering's context.
 * @param o The tile and the problem's sizes.
 * @returns The accumulators, by tile row, tile column and register.
 */
export function mainLoop(cx: LowerContext, o: TileOrigin): Reg[][][] {
  const k = cx.k;
  const b = cx.b;
  const pipe = k.plan.pipeline!;
  const mp = k.plan.mma!;
  const { m0, n0, M, N, K, bz, split, smem } = o;
  const copies = (role: "A" | "B", op: CopyOperand) => copySetup(cx, role, op, K, bz, smem);
  const sparse = sparseShape(cx) !== null;
  const aCopy = copies(
    "A",
    sparse ? keptValuesOperand(cx, m0, M, K, bz) : {
      view: k.problem.a,
      p: pipe.a,
      x0: m0,
      outerSize: M,
    },
  );
  const bCopy = copies("B", { view: k.problem.b, p: pipe.b, x0: n0, outerSize: N });
  const metaCopy = sparse ? metaCopySetup(cx, m0, M, K, bz, smem) : null;
  // A sparse A's copies are bounded by its kept values left (half of K left), and its metadata
  // words travel with them (before the PDL wait too, where A is read early).
  const sparseA = metaCopy === null ? {} : {
    remaining: (r: Reg) => keptRemaining(cx, r),
    meta: (stage: Reg, r: Reg) =>
      storeMetaWords(cx, metaCopy, loadMetaWords(cx, metaCopy, stage, r)),
  };
  const ops: Readonly<Record<"A" | "B", OperandCopies>> = {
    A: { c: aCopy, p: pipe.a, ...sparseA },
    B: { c: bCopy, p: pipe.b },
  };

  // Fragment address set-up.
  const aFrag = fragSetup(cx, "A", pipe.a, mp.aLoad, smem);
  const bFrag = fragSetup(cx, "B", pipe.b, mp.bLoad, smem);
  const metaFrag = sparse ? metaFragSetup(cx, smem) : null;
  const { acc, kTile } = zeroAccumulators(cx);
  const { kRem, kCount, start } = kTileRange(cx, K, split, aCopy, bCopy, metaCopy);
  const rot = kRotation(cx, K, { start, count: kCount }, [aCopy, bCopy]);
  const S = pipe.stages;
  const mTiles = acc.length;
  const writeOff = cx.mov("u32", imm(0), "wstage");
  const readOff = cx.mov("u32", imm(0), "rstage");

  const { issue, storeMeta } = copyIssuer(cx, { ...ops, meta: metaCopy }, { kRem, rot }, writeOff);

  // Before the previous grid's memory is ours: the L2 fetches B's first k-tiles meanwhile (or
  // the operands read early are copied).
  const late = copiesBeforeWait(cx, ops, { kRem, rot }, S - 1);
  b.emit(ir.comment(`prologue: fill ${S - 1} stages`));
  for (let s = 0; s < S - 1; s++) issue(false, late);
  b.emit(ir.wait(pipe.waitDepth));
  b.emit(ir.bar());

  const { aBuf, bBuf, loadBoth } = fragmentBuffers(cx, { A: aFrag, B: bFrag }, acc, readOff);
  loadBoth(0, 0);
  const meta = metaFrag === null ? null : metaSteps(cx, metaFrag, mTiles, mp.kSteps, readOff);

  const st: LoopState = {
    acc,
    kTile,
    aFrag,
    bFrag,
    aBuf,
    bBuf,
    meta,
    readOff,
    issue,
    storeMeta,
    loadBoth,
  };
  const kt = b.reg("u32", "kt");
  const KK = mp.kSteps;
  // k-steps per tile are a power of two >= 2 (gemm-mma), so the two fragment
  // buffers alternate evenly across tiles: k-step kk uses buffer kk % 2.
  if (KK % 2 !== 0) throw new Error(`lower-kernel: ${KK} k-steps per tile is odd`);
  const kLoop = (from: Operand, to: Operand) =>
    b.for(kt, from, to, 1, () => {
      for (let kk = 0; kk < KK; kk++) kStep(cx, st, kk);
    });
  kLoops(cx, o, kCount, kLoop, k.pdlTrigger === "last-copy" ? S - 1 : undefined);
  b.emit(ir.wait(0));
  cx.gridLaunch();
  return acc;
}

/** The copies of one k-tile into the stage at `writeOff` (see {@link LoopState.issue}), and the
 * deferred stores of a sparse A's metadata words; `fetch`: the unrotated fetch counter, and the
 * rotation of the k-loop where the schedule has one (rotate_k.ts). */
function copyIssuer(
  cx: LowerContext,
  c: Readonly<Record<"A" | "B", OperandCopies>> & { readonly meta: MetaCopies | null },
  fetch: { readonly kRem: Reg; readonly rot: KRotation | null },
  writeOff: Reg,
): Pick<LoopState, "storeMeta"> & {
  issue: (deferMeta?: boolean, roles?: readonly ("A" | "B")[]) => void;
} {
  // A sparse A's metadata words of the k-tile in flight, loaded by issue(true) and
  // stored by storeMeta() before the iteration's barrier (passes/lower/sparse.ts).
  let metaWords: MetaWords | null = null;
  const storeMeta = () => {
    if (metaWords !== null) storeMetaWords(cx, c.meta!, metaWords);
    metaWords = null;
  };
  const { kRem, rot } = fetch;
  const issue = (deferMeta = false, roles: readonly ("A" | "B")[] = ["A", "B"]) => {
    const bound = rot === null ? kRem : rot.bound(kRem);
    for (const r of roles) {
      const { c: plan, p, remaining } = c[r];
      issueCopies(cx, plan, p, writeOff, remaining?.(bound) ?? bound);
    }
    if (c.meta !== null && roles.includes("A")) {
      metaWords = loadMetaWords(cx, c.meta, writeOff, kRem);
      if (!deferMeta) storeMeta();
    }
    cx.b.emit(ir.commit());
    cx.b.emit(ir.bin("sub", "s32", kRem, kRem, imm(cx.k.plan.tile!.threadblock.k)));
    rot?.advance(roles);
    advanceStage(cx, writeOff, cx.k.plan.pipeline!.stages);
  };
  return { issue, storeMeta };
}

/** The two fragment buffers of A and of B (registers for each tile of the accumulators), and
 * the loader of one k-step's fragments of both from the stage at `readOff`. */
function fragmentBuffers(
  cx: LowerContext,
  frag: { readonly A: FragPlan; readonly B: FragPlan },
  acc: Reg[][][],
  readOff: Reg,
): Pick<LoopState, "aBuf" | "bBuf" | "loadBoth"> {
  const pipe = cx.k.plan.pipeline!;
  const fragRegs = (op: MmaShape["a"], tiles: number): Reg[][] =>
    Array.from(
      { length: tiles },
      () => Array.from({ length: op.regs }, () => cx.b.reg(op.regType)),
    );
  const [mTiles, nTiles] = [acc.length, acc[0]!.length];
  const aBuf = [fragRegs(cx.shape.a, mTiles), fragRegs(cx.shape.a, mTiles)];
  const bBuf = [fragRegs(cx.shape.b, nTiles), fragRegs(cx.shape.b, nTiles)];
  const loadBoth = (kk: number, buf: number) => {
    fragLoader(cx, frag.A, aBuf[buf]!, kk, readOff, pipe.a)(() => true);
    fragLoader(cx, frag.B, bBuf[buf]!, kk, readOff, pipe.b)(() => true);
  };
  return { aBuf, bBuf, loadBoth };
}

/**
 * Emits the loop over the k-tiles `[0, kCount)` by `kLoop`, cut where something must be emitted
 * a fixed number of k-tiles before the end (a second copy of the loop runs those last k-tiles: a
 * branch inside the loop body would split its basic block, which cost 6% in bench/NOTES.md 3):
 * - an epilogue that reads a matrix (C) asks the L2 for C's tile `prefetchAhead` k-tiles before
 *   the main loop ends (with split-K only the last split to finish reads C: it prefetches C's tile
 *   when it knows it is last, before it loads the partial sums);
 * - `triggerBack`: programmatic dependent launch's trigger (`griddep.launch`) that many k-tiles
 *   before the end, where the compile option `pdlTrigger` is `last-copy` (the mma.sync loop
 *   passes `stages - 1`: right after its last copy is issued).
 * The mma.sync and the wgmma main loops (wgmma.ts) share it.
 *
 * @param cx The lowering's context.
 * @param o The tile and the problem's sizes.
 * @param kCount The k-tiles this block computes.
 * @param kLoop Emits the loop over k-tiles `[from, to)`.
 * @param triggerBack The k-tiles before the end to emit the trigger at (absent: not here).
 */
export function kLoops(
  cx: LowerContext,
  o: TileOrigin,
  kCount: Operand,
  kLoop: (from: Operand, to: Operand) => void,
  triggerBack?: number,
): void {
  const { m0, n0, M, N, bz, split } = o;
  const prefetch = split === null ? epiPrefetch(cx, m0, n0, M, N, bz) : null;
  const cuts: { back: number; note: string; name: string; emit: () => void }[] = [];
  if (prefetch !== null) {
    const P = prefetchAhead(cx.k.plan.tile!.threadblock.k);
    const note = `the last ${P} k-tiles, after the L2 prefetch of C's tile`;
    cuts.push({ back: P, note, name: "kpf", emit: prefetch });
  }
  if (triggerBack !== undefined && cx.gridDep.on && !cx.gridDep.launched) {
    const note = `the last ${triggerBack} k-tiles, after every copy is issued: the next grid ` +
      "may start";
    cuts.push({ back: triggerBack, note, name: "ktrig", emit: () => cx.gridLaunch() });
  }
  // The earliest cut first (the most k-tiles before the end).
  cuts.sort((x, y) => y.back - x.back);
  let from: Operand = imm(0);
  for (const { back, note, name, emit } of cuts) {
    cx.b.emit(ir.comment(note));
    const at: Operand = kCount.kind === "imm"
      ? imm(Math.max(kCount.value - back, 0))
      : cx.bin("sub", "u32", cx.bin("max", "u32", kCount, imm(back)), imm(back), name);
    if (at.kind !== "imm" || from.kind !== "imm" || at.value > from.value) kLoop(from, at);
    emit();
    from = at;
  }
  kLoop(from, kCount);
}

/**
 * One k-step of the loop body: before the last, the wait for the next stage;
 * the next k-step's fragment loads; at k-step 0 the copies of the k-tile
 * `stages - 1` ahead; the MMAs.
 *
 * @param cx The lowering's context.
 * @param st The loop's registers and emitters.
 * @param kk The k-step within the k-tile.
 */
function kStep(cx: LowerContext, st: LoopState, kk: number): void {
  const b = cx.b;
  const pipe = cx.k.plan.pipeline!;
  const mp = cx.k.plan.mma!;
  const KK = mp.kSteps;
  const S = pipe.stages;
  const { acc, kTile, aFrag, bFrag, aBuf, bBuf, meta, readOff, issue, loadBoth } = st;
  const mTiles = acc.length;
  if (kk === KK - 1) {
    st.storeMeta();
    b.emit(ir.wait(pipe.waitDepth));
    b.emit(ir.bar());
    advanceStage(cx, readOff, S);
  }
  const next = (kk + 1) % 2;
  const interleaved = mp.fragments === "interleaved";
  if (!interleaved) loadBoth((kk + 1) % KK, next);
  meta?.next(kk, readOff);
  const sp = meta?.at(kk) ?? null;
  if (kk === 0) {
    b.emit(ir.comment(`copies of k-tile kt + ${S - 1}`));
    issue(true);
  }
  if (!interleaved) {
    mmas(cx, acc, aBuf[kk % 2]!, bBuf[kk % 2]!, kk, kTile, undefined, sp);
    meta?.after(kk);
    return;
  }
  // Each load of k-step kk+1 right after the MMAs that free its tiles.
  const aNext = fragLoader(cx, aFrag, aBuf[next]!, (kk + 1) % KK, readOff, pipe.a);
  const bNext = fragLoader(cx, bFrag, bBuf[next]!, (kk + 1) % KK, readOff, pipe.b);
  const bDone = new Set<number>();
  mmas(cx, acc, aBuf[kk % 2]!, bBuf[kk % 2]!, kk, kTile, (i, j, rowDone) => {
    if (i === mTiles - 1) {
      bDone.add(j);
      bNext((t) => bDone.has(t));
    }
    if (rowDone) aNext((t) => t <= i);
  }, sp);
  meta?.after(kk);
}

/**
 * The accumulators, each register set to zero (and, for 3xtf32, the k-tile
 * sums with their tile of zeros).
 *
 * @param cx The lowering's context.
 * @returns The accumulators, by tile row, tile column and register, and the k-tile sums.
 */
export function zeroAccumulators(cx: LowerContext): { acc: Reg[][][]; kTile: KTileSums | null } {
  const wp = cx.k.plan.warp!;
  const mTiles = wp.warp.m / cx.shape.m;
  const nTiles = wp.warp.n / cx.shape.n;
  const accType = cx.shape.c.regType;
  const acc: Reg[][][] = [];
  for (let i = 0; i < mTiles; i++) {
    const row: Reg[][] = [];
    for (let j = 0; j < nTiles; j++) {
      const regs: Reg[] = [];
      for (let r = 0; r < cx.shape.c.regs; r++) {
        regs.push(cx.mov(accType, imm(0), `acc${i}_${j}_${r}`));
      }
      row.push(regs);
    }
    acc.push(row);
  }
  const kTile = cx.k.math.mode !== "3xtf32" ? null : {
    zero: Array.from({ length: cx.shape.c.regs }, () => cx.mov("f32", imm(0))),
    sums: [],
  };
  return { acc, kTile };
}

/**
 * The k-tiles this block computes: without split-K all `ceil(K / tileK)` from the first;
 * with split-K its split's, `[s * per, s * per + count)`, per = ceil(kTiles / split_k), the
 * last splits getting fewer or none (count 0: a partial of zeros).
 *
 * @param cx The lowering's context.
 * @param K The problem's K.
 * @param split This block's split, or null.
 * @returns The first k-tile (null: 0) and the count.
 */
export function kTileSpan(
  cx: LowerContext,
  K: Operand,
  split: Reg | null,
): { start: Reg | null; kCount: Operand } {
  const tb = cx.k.plan.tile!.threadblock;
  const splitK = cx.k.plan.tile!.splitK;
  const kTiles = K.kind === "imm" ? imm(Math.ceil(K.value / tb.k)) : cx.bin(
    "shr",
    "u32",
    cx.bin("add", "u32", K, imm(tb.k - 1)),
    imm(log2(tb.k)),
    "ktiles",
  );
  if (split === null) return { start: null, kCount: kTiles };
  const kt = kTiles.kind === "imm" ? cx.mov("u32", kTiles) : kTiles;
  const per = cx.divRem("div", cx.bin("add", "u32", kt, imm(splitK - 1)), splitK, "kper");
  const start = cx.bin("min", "u32", cx.bin("mul", "u32", split, per), kt, "kstart");
  const kCount = cx.bin("min", "u32", per, cx.bin("sub", "u32", kt, start), "kcount");
  return { start, kCount };
}

/**
 * The k-tiles this block computes ({@link kTileSpan}): the count, and the s32 `kRem` of the
 * next k-tile to fetch (K - t * tileK, may go negative); with split-K the copies moved to the
 * split's first k-tile, and kRem stopped at the split's end, so that the copies fetched ahead
 * past it read nothing.
 *
 * @param cx The lowering's context.
 * @param K The problem's K.
 * @param split This block's split, or null.
 * @param aCopy A's copies.
 * @param bCopy B's copies.
 * @param metaCopy A sparse A's metadata copies, or null.
 * @returns The k-tile count, the fetch counter, and the first k-tile (null: 0).
 */
export function kTileRange(
  cx: LowerContext,
  K: Operand,
  split: Reg | null,
  aCopy: CopyPlan,
  bCopy: CopyPlan,
  metaCopy: MetaCopies | null,
): { kRem: Reg; kCount: Operand; start: Reg | null } {
  const tb = cx.k.plan.tile!.threadblock;
  const { start, kCount } = kTileSpan(cx, K, split);
  // kRem of the next tile to fetch: K - t * tileK (s32, may go negative).
  let kRem = cx.s32Of(K, "kfetch");
  if (start !== null) {
    const left = cx.bin("sub", "s32", kRem, cx.s32Of(cx.mulImm(start, tb.k)));
    kRem = cx.bin("min", "s32", left, cx.s32Of(cx.mulImm(kCount as Reg, tb.k)), "kfetch");
    skipTiles(cx, aCopy, start);
    skipTiles(cx, bCopy, start);
    if (metaCopy !== null) skipMetaTiles(cx, metaCopy, start);
  }
  return { kRem, kCount, start };
}
