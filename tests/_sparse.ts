/**
 * Sparse GEMM programs the CPU tests (tests/sparse_lower_test.ts) and the GPU tests
 * (tests/gpu/sparse_test.ts) share: one per sparse type, with an epilogue.
 *
 * @module
 */

/** A sparse GEMM of operand type `a`, accumulator/output `d`, K as given, an epilogue. */
export function program(name: string, a: string, d: string, K: string, extra = ""): string {
  const epi = d === "s32"
    ? "A[m, k] * B[k, n] + bias[n]"
    : "relu(alpha * A[m, k] * B[k, n] + bias[n])";
  const scal = d === "s32" ? "" : "  alpha: f32\n";
  const biasT = d === "s32" ? "s32" : "f32";
  return `kernel ${name} {\n  A: ${a}[M, ${K}] row sparse\n  B: ${a}[${K}, N] col\n` +
    `  bias: ${biasT}[N]\n${scal}  D: ${d}[M, N]\n  D[m, n] = ${epi}\n${extra}}\n`;
}

/** Every sparse type, its output, a K that leaves a partial k-tile, and the sizes. */
export const TYPES = [
  ["f16", "f16", "208"],
  ["bf16", "bf16", "K"],
  ["f32", "f32", "112"],
  ["s8", "s32", "K"],
  ["u8", "s32", "224"],
  ["s4", "s32", "448"],
  ["u4", "s32", "K"],
] as const;

/**
 * The sizes a test runs a {@link program} at: M and N not tile multiples, a runtime K
 * that is a multiple of the kept values' alignment (and of 64 for the 4-bit types).
 */
export function sparseSizes(a: string, K: string): Record<string, number> {
  return { M: 70, N: 40, ...(K === "K" ? { K: a.endsWith("4") ? 384 : 224 } : {}) };
}
