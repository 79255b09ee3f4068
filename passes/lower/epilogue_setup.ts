/**
 * The epilogue's set-up, shared by its direct and staged paths: the warp's
 * and lane's positions in D, the grouping of each accumulator tile's
 * elements, D's and the epilogue tensors' base addresses.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import {
  type ComputeType,
  type EpilogueExpr,
  type TensorParam,
  tensorParam,
  unreachable,
} from "../../ir/gemm.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import { type Affine, emitAffine, laneAffine } from "./affine.ts";
import { type LowerContext, tensorBase, vectorBase } from "./context.ts";
import { convertOut, evalEpilogue } from "./epilogue_expr.ts";
import type { EpiTensor } from "./epilogue_loads.ts";
import * as ir from "../../ir/builder.ts";

/** A load of an epilogue tensor in the expression. */
export type LoadExpr = Extract<EpilogueExpr, { op: "load" }>;

/** One element of an accumulator tile's fragment: its register, its element
 * in the register, and its row and column from the lane's first element. */
export interface FragElem {
  readonly reg: number;
  readonly elem: number;
  readonly dr: number;
  readonly dc: number;
}

/** Elements stored together: one, or a pair of column neighbours. */
export type ElemGroup = readonly FragElem[];

/** What the direct and the staged epilogue share (see {@link setupEpilogue}). */
export interface EpilogueSetup {
  /** The accumulator registers, by tile row, tile column and register. */
  readonly acc: Reg[][][];
  readonly M: Operand;
  readonly N: Operand;
  /** The shared memory's base (the staged path's regions). */
  readonly smem: Reg;
  /** Split-K: loads tile (i, j)'s sums right before its epilogue. */
  readonly before: ((i: number, j: number) => void) | undefined;
  /** The epilogue's compute type. */
  readonly cType: ComputeType;
  /** D's parameter. */
  readonly d: TensorParam;
  /** The warp tile's first row and column of D. */
  readonly wRow: Reg;
  readonly wCol: Reg;
  /** The lane's first accumulator element's row and column in an accumulator tile. */
  readonly base0R: Affine;
  readonly base0C: Affine;
  /** The lane's first row and column of D. */
  readonly laneRow: Reg;
  readonly laneCol: Reg;
  /** A tile's elements as stored straight from registers (pairs where D allows). */
  readonly groups: readonly ElemGroup[];
  /** A tile's elements as staged (raw accumulators: always in pairs). */
  readonly stageGroups: readonly ElemGroup[];
  /** Whether D takes pairs of elements in one store. */
  readonly pairOk: boolean;
  readonly dRowMajor: boolean;
  /** Bytes of one element of D. */
  readonly dBytes: number;
  /** D's base address (batch offset applied) and leading dimension. */
  readonly dBase: Reg;
  readonly ldD: Operand;
  /** The tensors the expression loads, by name, and one load of each. */
  readonly loads: ReadonlyMap<string, EpiTensor>;
  readonly nodes: ReadonlyMap<string, LoadExpr>;
  /** Whether the expression reads a matrix (C). */
  readonly readsMatrix: boolean;
  /** Whether the accumulators (at most 128 registers) leave room for loads issued ahead. */
  readonly roomy: boolean;
  /** The epilogue of one accumulator value as D's type. */
  readonly output: (accV: Reg, load: (x: LoadExpr) => Reg) => Reg;
}

/**
 * The epilogue's shared set-up: emits the warp's and the lane's first row and
 * column of D, D's base address and the epilogue tensors' base addresses,
 * and groups each accumulator tile's elements.
 *
 * @param cx The lowering's context.
 * @param acc The accumulator registers, by tile row, tile column and register.
 * @param m0 The threadblock tile's first row.
 * @param n0 The threadblock tile's first column.
 * @param M The problem's M.
 * @param N The problem's N.
 * @param bz The batch index.
 * @param smem The shared memory's base.
 * @param before Split-K: loads tile (i, j)'s sums before its epilogue.
 * @returns What the direct and the staged path read.
 */
export function setupEpilogue(
  cx: LowerContext,
  acc: Reg[][][],
  m0: Reg,
  n0: Reg,
  M: Operand,
  N: Operand,
  bz: Reg,
  smem: Reg,
  before: ((i: number, j: number) => void) | undefined,
): EpilogueSetup {
  const k = cx.k;
  const b = cx.b;
  const wp = k.plan.warp!;
  const s = cx.shape;
  const compute = k.epilogue.compute;
  const cType = compute;
  const d = tensorParam(k, k.problem.d.tensor);
  b.emit(ir.comment("epilogue"));
  // Warp origin.
  const wRow = cx.bin(
    "add",
    "u32",
    m0,
    cx.bin("mul", "u32", cx.features.get("wm")!, imm(wp.warp.m)),
  );
  const wCol = cx.bin(
    "add",
    "u32",
    n0,
    cx.bin("mul", "u32", cx.features.get("wn")!, imm(wp.warp.n)),
  );
  // Accumulator element positions: (row, col) = (g*ag + tig*at + dr, g*bg + tig*bt + dc).
  const what = `Accumulator map of ${s.name}`;
  const base0R = laneAffine((l) => s.c.coord(l, 0, 0)[0], what);
  const base0C = laneAffine((l) => s.c.coord(l, 0, 0)[1], what);
  const laneRow = cx.bin("add", "u32", wRow, emitAffine(cx, { c: 0, terms: base0R.terms }));
  const laneCol = cx.bin("add", "u32", wCol, emitAffine(cx, { c: 0, terms: base0C.terms }));
  // Elements of one tile's fragment, as (reg, elem, dRow, dCol), grouped into row runs.
  const elems: FragElem[] = [];
  for (let r = 0; r < s.c.regs; r++) {
    for (let e = 0; e < s.c.elemsPerReg; e++) {
      const [rr, cc] = s.c.coord(0, r, e);
      elems.push({ reg: r, elem: e, dr: rr - base0R.c, dc: cc - base0C.c });
    }
  }
  // Pairs of column-adjacent elements (vectorised when D is row-major and aligned).
  const dRowMajor = k.problem.d.layout === "row";
  const dBytes = DTYPE_INFO[d.dtype].bits / 8;
  const pairOk = dRowMajor && d.align >= 2 && dBytes >= 2;
  const grouped = (pairs: boolean) => {
    const groups: ElemGroup[] = [];
    const used = new Set<number>();
    elems.forEach((e, i) => {
      if (used.has(i)) return;
      used.add(i);
      const j = elems.findIndex((f, jj) => !used.has(jj) && f.dr === e.dr && f.dc === e.dc + 1);
      if (pairs && j >= 0 && e.dc % 2 === 0) {
        used.add(j);
        groups.push([e, elems[j]!]);
      } else groups.push([e]);
    });
    return groups;
  };
  const groups = grouped(pairOk);
  // D's base and leading dimension.
  const dBase = tensorBase(cx, k.problem.d, d, bz);
  const ldD = dRowMajor ? N : M;
  const { loads, nodes, readsMatrix } = epilogueTensors(cx, bz);
  // Raw accumulators are staged in pairs whatever D's alignment.
  const stageGroups = readsMatrix ? grouped(true) : groups;
  /** The epilogue of one accumulator value as D's type. */
  const output = (accV: Reg, load: (x: LoadExpr) => Reg) =>
    convertOut(cx, evalEpilogue(cx, k.epilogue.expr, accV, cType, load), cType, d.dtype);
  // Accumulators of at most 128 registers (a 64x64 f32 warp tile) leave
  // room for loads issued ahead; more, for fewer (ptxas spilled).
  const roomy = acc.length * acc[0]!.length * s.c.regs <= 128;
  return {
    acc,
    M,
    N,
    smem,
    before,
    cType,
    d,
    wRow,
    wCol,
    base0R,
    base0C,
    laneRow,
    laneCol,
    groups,
    stageGroups,
    pairOk,
    dRowMajor,
    dBytes,
    dBase,
    ldD,
    loads,
    nodes,
    readsMatrix,
    roomy,
    output,
  };
}

/**
 * The tensors the epilogue expression loads, each with its base address
 * (emitted here), and one load expression of each.
 *
 * @param cx The lowering's context.
 * @param bz The batch index.
 * @returns The tensors by name, a load of each, and whether one is a matrix.
 */
function epilogueTensors(
  cx: LowerContext,
  bz: Reg,
): { loads: Map<string, EpiTensor>; nodes: Map<string, LoadExpr>; readsMatrix: boolean } {
  const k = cx.k;
  const loads = new Map<string, EpiTensor>();
  // One load expression of each tensor (they differ only in where they sit).
  const nodes = new Map<string, LoadExpr>();
  let readsMatrix = false;
  const collect = (e: EpilogueExpr): void => {
    switch (e.op) {
      case "load":
        readsMatrix ||= e.rows && e.cols;
        if (!nodes.has(e.tensor)) nodes.set(e.tensor, e);
        if (!loads.has(e.tensor)) {
          const t = tensorParam(k, e.tensor);
          const view = k.epilogue.views.find((v) => v.tensor === e.tensor) ?? null;
          const base = view !== null
            ? tensorBase(cx, view, t, bz)
            : e.batched
            ? vectorBase(cx, t, bz)
            : cx.params.get(t.name)!;
          loads.set(e.tensor, { base, t, view });
        }
        return;
      case "unary":
      case "cast":
        return collect(e.x);
      case "binary":
        collect(e.a);
        return collect(e.b);
      case "clamp":
        collect(e.x);
        collect(e.lo);
        return collect(e.hi);
      case "acc":
      case "const":
      case "scalar":
        return;
      default:
        return unreachable(e);
    }
  };
  collect(k.epilogue.expr);
  return { loads, nodes, readsMatrix };
}
