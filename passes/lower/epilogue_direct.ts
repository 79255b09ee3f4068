/**
 * The epilogue straight from registers: D's elements (or pairs) each with
 * its row, column, bounds predicate, the expression and a guarded store.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import type { Reg } from "../../ir/kernel.ts";
import type { LowerContext } from "./context.ts";
import { accValue } from "./epilogue_expr.ts";
import { alongRow, globalAddr, loadAhead, store } from "./epilogue_loads.ts";
import type { ElemGroup, EpilogueSetup } from "./epilogue_setup.ts";

/** Registers an epilogue's loads issued ahead of a batch of direct stores may
 * hold where the accumulators leave room (`roomy`: at most half a thread's
 * registers, a 64x64 f32 warp tile); half as many above. A measured budget,
 * not a target's figure: more spilled kernels near the limit of the target's
 * `registersPerThread` (255; tests/ptxas_sweep.ts: 16 and 32 did, and so did
 * a budget growing as the rows of accumulators retire). */
const AHEAD_REGS = 8;

/**
 * Emits the direct epilogue. (About 100 lines: the loads issued ahead of a
 * batch and D's addresses are closures over one epilogue's positions and
 * caches.)
 *
 * @param cx The lowering's context.
 * @param st The epilogue's set-up.
 */
export function directEpilogue(cx: LowerContext, st: EpilogueSetup): void {
  const s = cx.shape;
  const { acc, M, N, before, cType, d, laneRow, laneCol } = st;
  const { groups, dRowMajor, dBytes, dBase, ldD, loads, nodes, roomy, output } = st;
  // Row by row of accumulator tiles, in batches of tiles whose loads hold
  // at most `budget` registers: every load of a batch is issued before
  // the batch's first store (ptxas keeps a load of C below an earlier
  // store to D, which may be the same memory: one load latency a batch,
  // not one an element), a pair of a row-major matrix aligned to 2 in
  // one load. Each element of C is read by the thread that writes that
  // element of D, before it writes it, so C may be D (in place).
  const nElems = groups.reduce((n, g) => n + g.length, 0);
  const perJ = [...nodes.values()].reduce(
    (n, x) => n + nElems * (DTYPE_INFO[loads.get(x.tensor)!.t.dtype].bits === 64 ? 2 : 1),
    0,
  );
  const budget = roomy ? AHEAD_REGS : AHEAD_REGS / 2;
  // Tiles a batch (along a row of tiles, or a column for column-major D).
  const jBatch = perJ === 0 ? Infinity : Math.max(1, Math.floor(budget / perJ));
  // Shortcut: split-K keeps each group's loads right before its store
  // (loads ahead spilled, with its own loads of the partial sums;
  // tests/ptxas_sweep.ts).
  const ahead = nodes.size > 0 && before === undefined;
  const issue = (i: number, j: number, grp: ElemGroup) => {
    const e0 = grp[0]!;
    const row = cx.bin("add", "u32", laneRow, imm(i * s.m + e0.dr));
    const col = cx.bin("add", "u32", laneCol, imm(j * s.n + e0.dc));
    const rowOk = cx.setp("lt", "u32", row, M);
    const cols: Reg[] = [];
    const oks: Reg[] = [];
    grp.forEach((_, q) => {
      // The second element of a pair needs its own column and bounds
      // predicate only for the epilogue's loads (the pair is stored
      // under the first one's).
      const own = q === 0 || loads.size > 0;
      const cq = own && q > 0 ? cx.bin("add", "u32", col, imm(q)) : col;
      cols.push(cq);
      oks.push(
        own ? cx.bin("and", "pred", rowOk, cx.setp("lt", "u32", cq, N)) : oks[0]!,
      );
    });
    const got = new Map<string, () => Reg[]>();
    for (const x of nodes.values()) {
      const info = loads.get(x.tensor)!;
      // (Pair loads spilled tf32's 80x64 warp tiles: register pairs.)
      if (x.rows && x.cols && grp.length === 2 && roomy && alongRow(info, 2)) {
        got.set(x.tensor, loadAhead(cx, x, info, row, col, oks[0]!, 2, cType));
        continue;
      }
      const one = grp.map((_, q) => loadAhead(cx, x, info, row, cols[q]!, oks[q]!, 1, cType));
      got.set(x.tensor, () => one.map((f) => f()[0]!));
    }
    return { row, col, oks, got };
  };
  // Batches of (i, j) tiles: row-major D by rows of tiles, `jBatch`
  // tiles at a time; column-major D by columns of tiles, as many at a
  // time, each column of D's elements addressed once (its address plus
  // the row's offset: a column of the warp tile is contiguous in D),
  // where the address of every element spilled 52 kernels
  // (tests/ptxas_sweep.ts).
  const batches = storeBatches(acc, dRowMajor, jBatch);
  const colAddr = new Map<string, Reg>();
  const address = (
    i: number,
    j: number,
    e0: { dr: number; dc: number },
    p: { row: Reg; col: Reg },
  ) => {
    if (dRowMajor) {
      return { addr: globalAddr(cx, dBase, p.row, p.col, ldD, true, dBytes), off: 0 };
    }
    const key = `${j}:${e0.dc}`;
    let a = colAddr.get(key);
    if (a === undefined) {
      a = globalAddr(cx, dBase, laneRow, p.col, ldD, false, dBytes);
      colAddr.set(key, a);
    }
    return { addr: a, off: (i * s.m + e0.dr) * dBytes };
  };
  for (const batch of batches) {
    const pos = !ahead ? null : batch.map(([i, j]) => groups.map((grp) => issue(i, j, grp)));
    batch.forEach(([i, j], t) => {
      const regs = acc[i]![j]!;
      before?.(i, j);
      groups.forEach((grp, gi) => {
        const p = pos?.[t]?.[gi] ?? issue(i, j, grp);
        const outs = grp.map((e, q) =>
          output(accValue(cx, regs[e.reg]!, e.elem, cType), (x) => p.got.get(x.tensor)!()[q]!)
        );
        const { addr, off } = address(i, j, grp[0]!, p);
        store(cx, "stg", addr, off, outs, d.dtype, p.oks[0]!);
      });
    });
  }
}

/**
 * The batches of (i, j) accumulator tiles the direct epilogue stores
 * together: row-major D by rows of tiles, `jBatch` at a time; column-major
 * D by columns of tiles, as many at a time.
 *
 * @param acc The accumulator registers, by tile row, tile column and register.
 * @param dRowMajor Whether D is row-major.
 * @param jBatch Tiles a batch.
 * @returns The batches, in store order.
 */
function storeBatches(acc: Reg[][][], dRowMajor: boolean, jBatch: number): [number, number][][] {
  const batches: [number, number][][] = [];
  if (dRowMajor) {
    for (let i = 0; i < acc.length; i++) {
      for (let j0 = 0; j0 < acc[i]!.length; j0 += jBatch) {
        const n = Math.min(acc[i]!.length, j0 + jBatch) - j0;
        batches.push(Array.from({ length: n }, (_, jj) => [i, j0 + jj] as [number, number]));
      }
    }
  } else {
    for (let j = 0; j < acc[0]!.length; j++) {
      for (let i0 = 0; i0 < acc.length; i0 += jBatch) {
        const n = Math.min(acc.length, i0 + jBatch) - i0;
        batches.push(Array.from({ length: n }, (_, ii) => [i0 + ii, j] as [number, number]));
      }
    }
  }
  return batches;
}
