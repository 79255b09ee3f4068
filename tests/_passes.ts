/**
 * What the tests of the GEMM passes' choices share (tests/passes_defaults_test.ts,
 * tests/passes_plan_test.ts): a one-kernel program from its declarations, compiling it to its
 * one kernel, the f16 declarations, and one-line forms of a tile shape and of an operand's
 * shared-memory plan.
 *
 * @module
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import type { OperandSmem, Target } from "../ir/gemm.ts";

/** A one-kernel program from its declarations, statement and schedule lines. */
export function program(
  a: string,
  b: string,
  d: string,
  opts: { expr?: string; schedule?: readonly string[] } = {},
): string {
  const s = opts.schedule ?? [];
  return `kernel k {\n  A: ${a}\n  B: ${b}\n  D: ${d}\n\n  D[m, n] = ${
    opts.expr ?? "A[m, k] * B[k, n]"
  }\n` + (s.length > 0 ? `\n  schedule {\n${s.map((l) => `    ${l}\n`).join("")}  }\n` : "") +
    "}\n";
}

/** Compiles a program (for `target` if given); the test fails unless it gives one kernel. */
export function compileOk(text: string, target?: Target): CompiledKernel {
  const r = compile(text, { file: "t.gemm", ...(target !== undefined ? { target } : {}) });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  assert.equal(r.kernels.length, 1);
  return r.kernels[0]!;
}

/** A tile shape as `MxNxK` (ir/print_gemm.ts). */
export { shapeText as shape } from "../ir/print_gemm.ts";

/** One operand's shared-memory plan in one line: contiguity, rows x bytes, swizzle, copies. */
export function smem(o: OperandSmem): string {
  return `${o.contiguous} ${o.rows}x${o.rowBytes}B shift ${o.swizzleShift} scale ${o.swizzleScale} ` +
    `${o.async ? "cp.async" : "sync"} ${o.copyBytes}B x${o.copiesPerThread}`;
}

/** The f16 GEMM's declarations: A row-major, B column-major, an f32 D. */
export const F16 = ["f16[M, K] row", "f16[K, N] col", "f32[M, N] row"] as const;
