/**
 * The epilogue's driver: the shared set-up, then D straight from registers
 * ({@link directEpilogue}) or staged through shared memory
 * ({@link stagedEpilogue}) as the plan's staging (pass
 * `gemm-epilogue-staging`) says.
 *
 * @module
 */

import type { LowerContext } from "./context.ts";
import { directEpilogue } from "./epilogue_direct.ts";
import { type EpilogueInputs, setupEpilogue } from "./epilogue_setup.ts";
import { stagedEpilogue } from "./epilogue_staged.ts";

/**
 * Emits the epilogue: the expression per element of the accumulators, and
 * the stores of D.
 *
 * @param cx The lowering's context.
 * @param at Where the epilogue runs: the accumulators, the tile, the sizes.
 */
export function epilogue(cx: LowerContext, at: EpilogueInputs): void {
  const st = setupEpilogue(cx, at);
  // gemm-epilogue-staging's decision (passes/epilogue_staging.ts).
  const stage = cx.k.plan.staging ?? null;
  if (stage === null) directEpilogue(cx, st);
  else stagedEpilogue(cx, st, stage);
}
