/**
 * The skinny tests' kernel and compile helper (tests/skinny_test.ts, tests/skinny_sm90_test.ts).
 *
 * @module
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import type { Target } from "../ir/gemm.ts";

/** The benchmark's kernel; s8 stores its s32 sums (with a bias: s32 too). */
export const BENCH = (t: string, extra = "") => {
  const sum = extra === "" ? "A[m, k] * B[k, n]" : "relu(A[m, k] * B[k, n] + bias[n])";
  const s8 = t === "s8";
  return `kernel sk {
  A: ${t}[M, K] row
  B: ${t}[K, N] col
  ${extra === "" ? "" : `bias: ${s8 ? "s32" : "f32"}[N]`}
  D: ${s8 ? "s32" : t}[M, N] row
  D[m, n] = ${s8 ? sum : `${t}(${sum})`}
${extra}}
`;
};

/** Compiles `src` for the H200's 132 SMs with `hints` as the sizes (sm80 unless `target`). */
export function hinted(
  src: string,
  hints: Record<string, number>,
  target?: Target,
): CompiledKernel {
  const r = compile(src, {
    file: "sk.gemm",
    sizeHints: hints,
    sms: 132,
    ...(target === undefined ? {} : { target }),
  });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}
