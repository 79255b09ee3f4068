/**
 * Which copies of an operand carry the L2 cache-eviction policy its schedule asks for
 * (`cache_a`, `cache_b`; ir/gemm.ts `CachePolicy`), and why: one table of decisions that the
 * lowering follows ({@link LowerContext.cachePolicy}: one `createpolicy` a hinted operand at the
 * kernel's start, its register on every copy that carries it) and `gemm compile --emit explain`
 * prints, so that a key a kernel cannot honour is said, not dropped in silence.
 *
 * @module
 */

import {
  CACHE_KEYS,
  type GemmKernel,
  type OperandSmem,
  operandView,
  type ScheduleKey,
  sparseMetaParam,
} from "../../ir/gemm.ts";
import type { CachePolicy } from "../../ir/cache_policy.ts";

/** One operand whose schedule names an L2 eviction priority, and which copies carry it. */
export interface CacheHintDecision {
  /** The operand's role in the contraction. */
  readonly role: "A" | "B";
  /** Its schedule key (`cache_a`, `cache_b`). */
  readonly key: ScheduleKey;
  /** Its tensor parameter. */
  readonly tensor: string;
  /** The priority the schedule asks for. */
  readonly priority: CachePolicy;
  /** Which copies carry it, in words. */
  readonly why: string;
}

/** Which of an operand's global -> shared copies carry the hint: every kind does. */
function copyKind(k: GemmKernel, p: OperandSmem): string {
  if (k.plan.pipeline!.tma !== undefined) return "its TMA boxes carry it";
  if (p.async) return `its ${p.copyBytes}-byte cp.async copies carry it`;
  if (p.viaRegisters === true) {
    return "its 16-byte ld.global loads (transposed through registers) carry it";
  }
  return `its ${p.copyBytes}-byte ld.global loads (aligned to less than 4 bytes) carry it`;
}

/**
 * The decisions for the operands of `k` whose schedule names a priority (none without `cache_a`
 * or `cache_b`): TMA boxes, `cp.async` copies, the 16-byte loads of a tile transposed through
 * registers, the 1- and 2-byte loads of an operand aligned to less than 4 bytes and a sparse A's
 * metadata words (4-byte loads of its `_meta` tensor) all carry the policy.
 *
 * @param k The planned kernel (after gemm-pipeline).
 * @returns One decision a hinted operand, A's first.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { cacheHintDecisions } from "./cache_hints.ts";
 * const src = `kernel k {
 *   X: f16[M, K] row
 *   W: f16[K, N] col
 *   Y: f32[M, N] row
 *   Y[m, n] = X[m, k] * W[k, n]
 *   schedule { cache_b evict_first }
 * }`;
 * const [d] = cacheHintDecisions(compile(src).kernels[0]!.planned);
 * equal(d!.tensor, "W");
 * equal(d!.why, "its 16-byte cp.async copies carry it");
 * ```
 */
export function cacheHintDecisions(k: GemmKernel): CacheHintDecision[] {
  const out: CacheHintDecision[] = [];
  const pipe = k.plan.pipeline!;
  for (const role of ["A", "B"] as const) {
    const { key, field } = CACHE_KEYS[role];
    const priority = k.schedule[field];
    if (priority === undefined) continue;
    const p = role === "A" ? pipe.a : pipe.b;
    const meta = role === "A" ? sparseMetaParam(k) : null;
    const tensor = operandView(k, role).tensor;
    out.push({
      role,
      key,
      tensor,
      priority,
      why: copyKind(k, p) + (meta === null ? "" : ` (so do the metadata words of ${meta.name})`),
    });
  }
  return out;
}

/**
 * Whether an operand's copies carry the cache policy its schedule asks for ({@link
 * cacheHintDecisions}).
 *
 * @param k The planned kernel.
 * @param role The operand.
 * @returns False where the schedule asks for none (every kind of copy carries one it asks for).
 */
export function carriesCacheHint(k: GemmKernel, role: "A" | "B"): boolean {
  return cacheHintDecisions(k).some((d) => d.role === role);
}
