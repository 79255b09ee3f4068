/**
 * The epilogue's set-up, shared by its direct and staged paths: the warp's
 * and lane's positions in D, the grouping of each accumulator tile's
 * elements, D's and the epilogue tensors' base addresses.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { type ComputeType, type TensorParam, tensorParam } from "../../ir/gemm.ts";
import { visitEpilogue } from "../../ir/epilogue_expr.ts";
import { targetInfo } from "../../ir/target.ts";
import {
  type ElemGroup,
  type FragElem,
  fragmentGroups,
  type LoadExpr,
  loadsOf,
  pairsOk,
} from "../epilogue_staging.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import { type Affine, emitAffine, laneAffine } from "./affine.ts";
import { lineStride, type LowerContext, tensorBase, vectorBase } from "./context.ts";
import { convertOut, evalEpilogue } from "./epilogue_expr.ts";
import type { EpiTensor } from "./epilogue_loads.ts";
import * as ir from "../../ir/builder.ts";

export type { ElemGroup, FragElem, LoadExpr };

/** Where the epilogue runs: what the kernel's skeleton (kernel.ts) hands it. */
export interface EpilogueInputs {
  /** The accumulator registers, by tile row, tile column and register. */
  readonly acc: Reg[][][];
  /** The threadblock tile's first row and column. */
  readonly m0: Reg;
  readonly n0: Reg;
  /** The problem's M and N. */
  readonly M: Operand;
  readonly N: Operand;
  /** The batch index. */
  readonly bz: Reg;
  /** The shared memory's base. */
  readonly smem: Reg;
  /** Split-K: loads tile (i, j)'s sums before its epilogue. */
  readonly before?: (i: number, j: number) => void;
}

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
  readonly dRowMajor: boolean;
  /** Bytes of one element of D. */
  readonly dBytes: number;
  /** D's base address (batch offset applied) and leading dimension. */
  readonly dBase: Reg;
  readonly ldD: Operand;
  /** The tensors the expression loads, by name, and one load of each. */
  readonly loads: ReadonlyMap<string, EpiTensor>;
  readonly nodes: ReadonlyMap<string, LoadExpr>;
  /** Whether the accumulators (at most half the registers a thread may have: 128 of
   * 255) leave room for loads issued ahead. */
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
 * @param at Where the epilogue runs: the accumulators, the tile, the sizes.
 * @returns What the direct and the staged path read.
 */
export function setupEpilogue(cx: LowerContext, at: EpilogueInputs): EpilogueSetup {
  const { acc, m0, n0, M, N, bz, smem, before } = at;
  const k = cx.k;
  const b = cx.b;
  const wp = k.plan.warp!;
  const s = cx.shape;
  const cType = k.epilogue.compute;
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
  // Elements of one tile's fragment grouped into row runs: pairs of
  // column-adjacent elements where D is row-major and aligned.
  const dRowMajor = k.problem.d.layout === "row";
  const dBytes = DTYPE_INFO[d.dtype].bits / 8;
  const groups = fragmentGroups(s, pairsOk(k));
  // D's base and leading dimension.
  const dBase = tensorBase(cx, k.problem.d, d, bz);
  const ldD = lineStride(cx, d) ?? (dRowMajor ? N : M);
  const { loads, readsMatrix } = epilogueTensors(cx, bz);
  // One load expression of each tensor (they differ only in where they sit).
  const nodes = loadsOf(k.epilogue.expr);
  // Raw accumulators are staged in pairs whatever D's alignment.
  const stageGroups = readsMatrix ? fragmentGroups(s, true) : groups;
  /** The epilogue of one accumulator value as D's type. */
  const output = (accV: Reg, load: (x: LoadExpr) => Reg) =>
    convertOut(cx, evalEpilogue(cx, k.epilogue.expr, accV, cType, load), cType, d.dtype);
  // Accumulators of at most half the registers a thread may have (the
  // target's 255: 128, a 64x64 f32 warp tile) leave room for loads issued
  // ahead; more, for fewer (ptxas spilled).
  const roomy = acc.length * acc[0]!.length * s.c.regs <=
    Math.ceil(targetInfo(k.target).registersPerThread / 2);
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
    dRowMajor,
    dBytes,
    dBase,
    ldD,
    loads,
    nodes,
    roomy,
    output,
  };
}

/**
 * The tensors the epilogue expression loads, each with its base address
 * (emitted here).
 *
 * @param cx The lowering's context.
 * @param bz The batch index.
 * @returns The tensors by name, and whether one is a matrix.
 */
function epilogueTensors(
  cx: LowerContext,
  bz: Reg,
): { loads: Map<string, EpiTensor>; readsMatrix: boolean } {
  const k = cx.k;
  const loads = new Map<string, EpiTensor>();
  let readsMatrix = false;
  visitEpilogue(k.epilogue.expr, {
    load: (e) => {
      readsMatrix ||= e.rows && e.cols;
      if (loads.has(e.tensor)) return;
      const t = tensorParam(k, e.tensor);
      const view = k.epilogue.views.find((v) => v.tensor === e.tensor) ?? null;
      const base = view !== null
        ? tensorBase(cx, view, t, bz)
        : e.batched
        ? vectorBase(cx, t, bz)
        : cx.params.get(t.name)!;
      loads.set(e.tensor, { base, t, view });
    },
  });
  return { loads, readsMatrix };
}
