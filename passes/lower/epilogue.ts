/**
 * The epilogue's driver: the shared set-up, then D straight from registers
 * ({@link directEpilogue}) or staged through shared memory
 * ({@link stagedEpilogue}) as {@link stagePlan} decides.
 *
 * @module
 */

import type { Operand, Reg } from "../../ir/kernel.ts";
import type { LowerContext } from "./context.ts";
import { directEpilogue } from "./epilogue_direct.ts";
import { alongRow } from "./epilogue_loads.ts";
import { setupEpilogue } from "./epilogue_setup.ts";
import { stagedEpilogue, stagePlan } from "./epilogue_staged.ts";

/**
 * Emits the epilogue: the expression per element of the accumulators, and
 * the stores of D.
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
 */
export function epilogue(
  cx: LowerContext,
  acc: Reg[][][],
  m0: Reg,
  n0: Reg,
  M: Operand,
  N: Operand,
  bz: Reg,
  smem: Reg,
  before?: (i: number, j: number) => void,
): void {
  const st = setupEpilogue(cx, acc, m0, n0, M, N, bz, smem, before);
  const { nodes, loads, readsMatrix, stageGroups, base0R, base0C, d, dBytes, pairOk, cType } = st;

  // Epilogue loads (C, a bias, split-K's partial sums) cannot alias the
  // shared-memory stores, so ptxas would hoist every load of a chunk above
  // them: one accumulator-tile row a chunk bounds the registers they hold.
  // A bias along M alone is loaded once a row (cached) and takes whole
  // chunks: +2.5% at 4096³ (a bias along N lost 0.6% so: bench/NOTES.md 35).
  // An epilogue that reads a row-major matrix (C) aligned to 4 stages the
  // raw accumulators and is evaluated along D's rows, where neighbouring
  // lanes read C.
  const rowVectorsOnly = [...nodes.values()].every((x) => x.rows && !x.cols);
  const maxTiles = before !== undefined || !rowVectorsOnly ? 1 : acc.length;
  // A matrix the raw path cannot read 4 at a time along a row (a
  // column-major C, or one aligned to less than 4) keeps a 16-bit D
  // direct: the fragment layout reads C in whole sectors (bench/NOTES.md
  // 37). An 8-bit D stays staged (shortcut: direct, one spilled).
  const rawReadable = dBytes !== 2 ||
    [...nodes.values()].every((x) => !(x.rows && x.cols) || alongRow(loads.get(x.tensor)!, 4));
  const stage = !rawReadable ? null : stagePlan(
    cx,
    cx.shape,
    base0R,
    base0C,
    stageGroups,
    d,
    dBytes,
    pairOk,
    maxTiles,
    readsMatrix ? "raw" : "out",
    cType,
  );
  if (stage === null) directEpilogue(cx, st);
  else stagedEpilogue(cx, st, stage);
}
