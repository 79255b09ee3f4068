/**
 * The PTX backend: kernel IR to PTX text for `sm_80`/`sm_86` ({@link printPtx}),
 * and `ptxas` to assemble it and report registers, shared memory and spills
 * ({@link runPtxas}, {@link findPtxas}, {@link formatPtxasReport}).
 *
 * @module
 */

export * from "./print.ts";
export * from "./ptxas.ts";
