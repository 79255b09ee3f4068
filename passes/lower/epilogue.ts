/**
 * The epilogue's driver: the shared set-up, then D straight from registers
 * ({@link directEpilogue}) or staged through shared memory
 * ({@link stagedEpilogue}) as the plan's staging (pass
 * `gemm-epilogue-staging`) says.
 *
 * @module
 */

import type { Operand, Reg } from "../../ir/kernel.ts";
import type { LowerContext } from "./context.ts";
import { directEpilogue } from "./epilogue_direct.ts";
import { setupEpilogue } from "./epilogue_setup.ts";
import { stagedEpilogue } from "./epilogue_staged.ts";

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
  // gemm-epilogue-staging's decision (passes/epilogue_staging.ts).
  const stage = cx.k.plan.staging ?? null;
  if (stage === null) directEpilogue(cx, st);
  else stagedEpilogue(cx, st, stage);
}
