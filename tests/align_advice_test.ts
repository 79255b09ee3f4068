/**
 * The alignment advice fits the dtype: b1 and 4-bit rows are whole bytes, so
 * their smallest `align` is 8 and 2 (ir/dtype.ts `minAlign`, the one table
 * the checker's E0117 and the advice both read), and the advice given for a
 * size that breaks an alignment is advice that works.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type Dtype, DTYPE_INFO, DTYPES, minAlign } from "../ir/dtype.ts";
import { compile } from "../compiler.ts";
import { alignmentViolations } from "../harness/sizes.ts";

Deno.test("minAlign: the fewest elements that fill a whole byte", () => {
  for (const t of DTYPES) {
    const bits = DTYPE_INFO[t].bits;
    const a = minAlign(t);
    assert.equal((a * bits) % 8, 0, t);
    assert.ok(a === 1 || ((a / 2) * bits) % 8 !== 0, t);
  }
  assert.deepEqual([minAlign("b1"), minAlign("u4"), minAlign("s8")], [8, 2, 1]);
});

/** A kernel whose A and B are `dtype` rows of K, declared `align`. */
function source(dtype: string, align: number | null, acc = "s32"): string {
  const al = align === null ? "" : ` align ${align}`;
  const body = dtype === "b1" ? "popc(A[m, k] & B[k, n])" : "A[m, k] * B[k, n]";
  return `kernel k {\n  A: ${dtype}[M, K] row${al}\n  B: ${dtype}[K, N] col${al}\n` +
    `  D: ${acc}[M, N] row\n  D[m, n] = ${body}\n}\n`;
}

Deno.test("E0117 names the dtype's smallest align; that align is accepted", () => {
  for (const [t, below] of [["b1", 4], ["s4", 1], ["u4", 1]] as const) {
    const bad = compile(source(t, below), { file: "k.gemm" });
    assert.equal(bad.diagnostics[0]?.code, "E0117", t);
    assert.match(bad.diagnostics[0]!.message, new RegExp(`needs at least ${minAlign(t)} elements`));
    assert.ok(compile(source(t, minAlign(t)), { file: "k.gemm" }).ok, t);
  }
});

Deno.test("the advice for a broken alignment fits the dtype, and following it works", () => {
  const cases: [Dtype, string, number, RegExp][] = [
    ["f16", "f32", 60, /declare "align 1" \(any size\)/],
    ["s8", "s32", 60, /declare "align 1" \(any size\)/],
    ["s4", "s32", 34, /declare "align 2" \(any multiple of 2\)/],
    ["b1", "s32", 72, /declare "align 8" \(any multiple of 8\)/],
  ];
  for (const [t, acc, k, says] of cases) {
    const [kernel] = compile(source(t, null, acc), { file: "k.gemm" }).kernels;
    assert.ok(kernel !== undefined, t);
    const sizes = { M: 16, N: 16, K: k };
    const bad = alignmentViolations(kernel.gemm, sizes);
    assert.equal(bad.length, 2, t);
    assert.match(bad[0]!, says, t);
    assert.doesNotMatch(bad[0]!, minAlign(t) > 1 ? /"align 1"/ : /whole bytes/, t);
    // Declared as advised, the same size is fine.
    const [fixed] = compile(source(t, minAlign(t), acc), { file: "k.gemm" }).kernels;
    assert.deepEqual(alignmentViolations(fixed!.gemm, sizes), [], t);
  }
  // A b1 row of 100 bits is no whole number of bytes: no align helps, another size does.
  const [b1] = compile(source("b1", null), { file: "k.gemm" }).kernels;
  const odd = alignmentViolations(b1!.gemm, { M: 16, N: 16, K: 100 });
  assert.match(odd[0]!, /pick a size that is, or declare "align 8" \(b1 rows are whole bytes\)/);
});
