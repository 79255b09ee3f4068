/**
 * The skinny (LLM inference) shapes of issue 22, shared by the benchmark
 * (`deno task bench --gpu --shapes llm`) and its research sweep
 * (bench/research/llm/): f16 and bf16 at M in {1, 16, 64, 128, 256, 1024}
 * against (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336)}, and s8 at
 * M in {16, 128} for the same (N, K).
 *
 * @module
 */

/** One problem of the table, with the types it is measured for. */
export interface LlmShape {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly types: readonly string[];
}

/** The (N, K) pairs: a square projection, an up-projection and a down-projection. */
export const LLM_NK: readonly (readonly [number, number])[] = [
  [4096, 4096],
  [14336, 4096],
  [4096, 14336],
];

/** M of the 16-bit rows and of the s8 rows. */
export const LLM_M_16BIT: readonly number[] = [1, 16, 64, 128, 256, 1024];
export const LLM_M_S8: readonly number[] = [16, 128];

/** Every shape of the table, (N, K) outermost. */
export const LLM_SHAPES: readonly LlmShape[] = LLM_NK.flatMap(([N, K]) =>
  [...new Set([...LLM_M_16BIT, ...LLM_M_S8])].sort((a, b) => a - b).map((M) => ({
    M,
    N,
    K,
    types: [
      ...(LLM_M_16BIT.includes(M) ? ["f16", "bf16"] : []),
      ...(LLM_M_S8.includes(M) ? ["s8"] : []),
    ],
  }))
);
