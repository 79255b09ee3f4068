/**
 * Which operands a kernel compiled with the option `pdlEarly` reads before its
 * `griddepcontrol.wait`, and why each named one is or is not: one table of decisions that the
 * lowering follows ({@link LowerContext.earlyOperands}) and the CLI explains (a name the kernel
 * still reads after the wait is a note on stderr, not a silent no-op).
 *
 * @module
 */

import { CACHE_KEYS, type GemmKernel, operandView, sparseMetaParam } from "../../ir/gemm.ts";
import { targetHas } from "../../ir/target.ts";

/**
 * The least share of a stage's bytes whose box a TMA kernel copies before its `griddep.wait`
 * where the compile option `pdlEarly` allows it ({@link earlyDecisions}). Measured on H100s
 * (bench/NOTES.md 86, f16 and s8 at N = K = 4096, ours+PDL µs, `--pdl` against `--pdl-early`, two
 * calls each): B's box of a third of the stage gained (64x32 at M = 64 14.5 -> 14.1, 128x64 at M =
 * 256 19.6 -> 18.5), of a half on clusters of 2 (64x64 at M = 128) 0.5 µs in burst; of a fifth
 * (128x32, the M = 65-128 tiles) it lost 0.3-0.4 µs in all four measurements. The bound between a
 * fifth and a third is not measured: a shortcut. The cp.async kernels' early copies tied (M <= 16)
 * and are kept, except those of an operand that streams with `evict_first` ({@link
 * EARLY_STREAMED_WHY}). With B `evict_normal` so that it is copied early, the rotated 16x32x256
 * kernel read 1.4-1.5 µs slower with PDL than the default, which streams B and copies nothing early
 * (NOTES 98; the hint and the copies together, not apart).
 */
export const EARLY_MIN_STAGE_SHARE = 0.25;

/**
 * Why a cp.async kernel does not copy an operand whose copies carry `evict_first` (the skinny
 * tiles' default for B, passes/skinny.ts `SKINNY_STREAMED_B`) before its wait. Measured on an
 * H100 (bench/NOTES.md 94, the 16x32x256 mma.sync kernels at N = K = 4096, ours+PDL µs, one call):
 * f16 M = 1 and 16 12.6 with the L2 prefetch `pdl` issues against 13.4 with the early copies, s8
 * M = 16 6.8 against 7.9; NOTES 86 had measured a tie before the hint. Not measured on the H200,
 * nor for an operand the schedule streams on its own (`cache_b evict_first`), which this rule
 * covers by inference.
 */
export const EARLY_STREAMED_WHY =
  "its copies stream with evict_first, where copies before the wait lost 0.8-1.1 µs to the L2 " +
  "prefetch (bench/NOTES.md 94)";

/** One operand the option `pdlEarly` names, and whether the kernel reads it before its wait. */
export interface EarlyDecision {
  /** The operand's role in the contraction. */
  readonly role: "A" | "B";
  /** Its tensor parameter. */
  readonly tensor: string;
  /** Whether its first stages are copied before `griddepcontrol.wait`. */
  readonly early: boolean;
  /** Why, in words (e.g. "its box is 0.20 of a stage, under the 0.25 that paid"). */
  readonly why: string;
}

/**
 * The decisions for the operands of `k` that its option `pdlEarly` names (none without the
 * option): an operand is read early unless the kernel does not wait at all (no `pdl`, or a
 * target without `griddepcontrol`), it is grouped (its problem table, which the grid before may
 * write, keeps every load after the wait), in a TMA kernel its box is under
 * {@link EARLY_MIN_STAGE_SHARE} of a stage's bytes, or in a cp.async kernel its copies carry
 * `evict_first` ({@link EARLY_STREAMED_WHY}). A rotated cp.async loop (`rotate_k`) copies its
 * first rotated k-tiles early (passes/lower/rotate_k.ts `KRotation.early`). A sparse A read early
 * copies its metadata words with its kept values (the wait's and the manifest's list name both).
 *
 * @param k The planned kernel (its pipeline chosen).
 * @returns One decision per named operand, A before B.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { earlyDecisions } from "./early.ts";
 * const src = `kernel k {
 *   A: f16[M, K] row
 *   B: f16[K, N] col
 *   D: f16[M, N] row
 *   D[m, n] = A[m, k] * B[k, n]
 *   schedule { target sm80 }
 * }`;
 * const r = compile(src, { pdl: true, pdlEarly: ["B"] });
 * const d = earlyDecisions(r.kernels[0]!.planned);
 * deepEqual(d.map((x) => [x.tensor, x.early]), [["B", false]]);
 * ```
 */
export function earlyDecisions(k: GemmKernel): readonly EarlyDecision[] {
  const named = k.pdlEarly ?? [];
  const roles = (["A", "B"] as const).filter((r) => named.includes(operandView(k, r).tensor));
  const refusal = kernelRefusal(k);
  return roles.map((role) => {
    const tensor = operandView(k, role).tensor;
    if (refusal !== undefined) return { role, tensor, early: false, why: refusal };
    const pipe = k.plan.pipeline!;
    if (pipe.tma === undefined) {
      const meta = role === "A" ? sparseMetaParam(k) : null;
      const words = meta === null ? "" : ` (its metadata words, ${meta.name}, with them)`;
      return k.schedule[CACHE_KEYS[role].field] === "evict_first"
        ? { role, tensor, early: false, why: EARLY_STREAMED_WHY }
        : { role, tensor, early: true, why: `its first stages are copied before the wait${words}` };
    }
    const share = (role === "A" ? pipe.a : pipe.b).stageBytes /
      (pipe.a.stageBytes + pipe.b.stageBytes);
    const of = `its box is ${share.toFixed(2)} of a stage`;
    return share >= EARLY_MIN_STAGE_SHARE
      ? { role, tensor, early: true, why: `${of}, copied before the wait` }
      : {
        role,
        tensor,
        early: false,
        why: `${of}, under the ${EARLY_MIN_STAGE_SHARE} that paid (bench/NOTES.md 86)`,
      };
  });
}

/**
 * Whether kernel `k` waits for the grid before it (`griddepcontrol.wait`): compiled with `pdl`
 * for a target that has it. The lowering's `LowerContext.gridDep` and {@link earlyDecisions} ask
 * this one function.
 *
 * @param k The kernel.
 * @returns Whether it waits.
 */
export function waitsForGrid(k: GemmKernel): boolean {
  return k.pdl === true && targetHas(k.target, "griddepcontrol");
}

/** Why no operand of `k` is read early, whatever the option names; undefined where one may be. */
function kernelRefusal(k: GemmKernel): string | undefined {
  if (!waitsForGrid(k)) {
    return k.pdl !== true
      ? "the kernel is compiled without pdl"
      : `${k.target} has no griddepcontrol: the kernel does not wait`;
  }
  if (k.grouped === true) {
    // Its copies' addresses and sizes come from the problem table, which a grid before it may
    // write (an MoE's routing counts the rows of each expert): the table, and so every input,
    // is read after the wait.
    return "a grouped kernel reads its problem table, and so every input, after the wait";
  }
  return undefined;
}
