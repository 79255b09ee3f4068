/**
 * The L2 cache-eviction priorities a kernel's copies may carry (schedule keys `cache_a` and
 * `cache_b`, ir/gemm.ts `Schedule`; the kernel IR's `createpolicy`, ir/kernel_memory.ts): a
 * table of their own, so that the kernel IR and its backends need not import the GEMM IR.
 *
 * @module
 */

/**
 * The values of the `cache_a` and `cache_b` schedule keys: the L2 eviction priority an operand's
 * global -> shared copies ask for (PTX `createpolicy.fractional.L2::<priority>.b64 policy, 1.0`,
 * sm_80, its policy passed to every `cp.async`, `ld.global` and TMA copy of the operand with
 * `.L2::cache_hint`). A performance hint only: it changes no result.
 */
export type CachePolicy = "evict_first" | "evict_last" | "evict_normal";

/** Each {@link CachePolicy}, in the order the checker lists them, with what it asks of the L2. */
export const CACHE_POLICIES: Readonly<Record<CachePolicy, string>> = Object.freeze({
  evict_first: "evict the operand's lines first (an operand read once, streamed)",
  evict_last: "keep the operand's lines ahead of normal ones (an operand reused by many blocks)",
  evict_normal: "the L2's normal priority, named explicitly",
});
