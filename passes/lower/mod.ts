/**
 * `lower-kernel`: GEMM IR with a complete plan -> kernel IR.
 *
 * The program it writes, per thread (CUTLASS's Ampere multistage design):
 *
 * 1. Parameters, an L2 cache-eviction policy for each operand whose schedule
 *    names one (`createpolicy`; `cache_a`, `cache_b`), thread/warp/lane
 *    indices, the threadblock's tile from the block index through the
 *    rasterisation swizzle; blocks past the last tile column skip the whole
 *    body (a uniform `if`).
 * 2. Copy set-up: for each operand, each of this thread's copies per stage
 *    gets a global pointer, a bounds predicate for its M/N row, its k index
 *    within the tile, and a swizzled shared-memory offset.
 * 3. Prologue: fill `stages - 1` stages (cp.async, one commit group each;
 *    copies past K are zero-filled), `wait_group stages-2`, barrier, and the
 *    fragments of k-step 0.
 * 4. Main loop over k-tiles, k-steps unrolled: at k-step 0 issue the copies of
 *    tile `kt + stages - 1` into the stage freed by the previous iteration and
 *    commit; before the last k-step wait for the next stage and barrier; load
 *    the fragments of the next k-step into the other fragment buffer
 *    (double buffering) while the MMAs of this k-step run. Warp tiles too
 *    large for two buffers (the mma plan's `fragments: "interleaved"`) load
 *    each next fragment right after the MMAs that last read the one it
 *    replaces, so that about one buffer's registers are live. An epilogue
 *    that reads a matrix (C) runs the loop in two copies and prefetches C's
 *    tile into L2 between them, `prefetchAhead` k-tiles before the end
 *    (`epiPrefetch`).
 * 5. Drain (`wait_group 0`), then the epilogue. 8- and 16-bit row-major D is
 *    staged through shared memory (`plan.staging`): the fused epilogue
 *    expression per element (or pair) in registers, its result staged and
 *    stored in vectors along D's rows; or, for an epilogue that reads a
 *    matrix (C), the raw accumulators staged and the epilogue evaluated along
 *    D's rows. Otherwise each element or pair gets its row, column, bounds
 *    predicate, the expression, the conversion and a guarded store straight
 *    from registers (a column-major D walked by columns, each column of the
 *    warp tile addressed once). The loads of C are issued ahead of the stores
 *    to D they go with (`loadAhead`): ptxas cannot reorder them, as C may be
 *    D (in place).
 *
 * Shortcuts (named, to be lifted): column-major D and 32/64-bit D store
 * straight from registers; copy pointers are recomputed per k-tile from one
 * pointer per copy; split-K epilogues load C with each store (the last
 * split prefetches C's tile first); a C that is not row-major and aligned to
 * 4 keeps a 16-bit D direct (read along D's rows it would waste 3/4 of each
 * sector), and under an 8-bit D is read along D's rows one element at a time.
 *
 * The lowering is in phase modules that share one {@link LowerContext}:
 *
 * - `context.ts`: the context (the kernel, its MMA shape, the builder, the
 *   parameter and index registers), the small emitters (blocks per SM, the
 *   split-K workspace and the epilogue staging are the plan's, decided by
 *   passes/occupancy.ts, passes/workspace.ts and passes/epilogue_staging.ts);
 * - `affine.ts`: per-thread affine recipes and swizzled shared-memory offsets;
 * - `copies.ts`: the main loop's global -> shared copies;
 * - `cache_hints.ts`: which of an operand's copies carry its cache policy;
 * - `fragments.ts`: fragment loads (ldmatrix, ld.shared);
 * - `mma.ts`: the MMAs of a k-step (tensor-core, 3xtf32, SIMT);
 * - `split_k.ts`: the split-K reduction in the workspace gemm-workspace laid out;
 * - `epilogue.ts`, `epilogue_direct.ts`, `epilogue_staged.ts`: the epilogue's
 *   driver and its two paths (straight from registers, staged through shared
 *   memory);
 * - `epilogue_loads.ts`: loads of C and vectors, D's addresses, the L2 prefetch;
 * - `epilogue_expr.ts`: the epilogue expression, its functions and conversions;
 * - `kernel.ts`: the kernel's skeleton (parameters, indices, prologue, main
 *   loop, drain) and {@link lowerToKernel}.
 *
 * @module
 */

export { lowerToKernel } from "./kernel.ts";
export { prefetchAhead } from "./epilogue_loads.ts";
