/**
 * The grammar's rejections (dsl/gemm.ohm through dsl/parse.ts): programs that do not parse,
 * each with the exact line and column of its E0001 syntax diagnostic, which the checker's
 * front door reports too. The accepted programs are in tests/grammar_test.ts.
 */

import assert from "node:assert/strict";
import { parseProgram } from "../dsl/parse.ts";
import { check } from "../compiler.ts";

const FILE = "t.gemm";

interface Rejected {
  readonly name: string;
  readonly src: string;
  readonly line: number;
  readonly column: number;
  /** A fragment the message must contain. */
  readonly says: string;
}

const K = "kernel k {\n";
const REJECTED: readonly Rejected[] = [
  { name: "an unknown dtype", src: `${K}  A: f8[M, K]\n}`, line: 2, column: 6, says: 'found "f8"' },
  {
    name: "a dtype in capitals",
    src: `${K}  A: F16[M, K]\n}`,
    line: 2,
    column: 6,
    says: "a dtype",
  },
  {
    name: "a missing closing brace",
    src: `${K}  A: f16[M, K]\n`,
    line: 2,
    column: 15,
    says: 'Expected "}"',
  },
  {
    name: "a missing opening brace",
    src: "kernel k\n  A: f16[M]\n}",
    line: 1,
    column: 9,
    says: 'Expected "{" or "grouped", found end of line',
  },
  { name: "a missing kernel name", src: "kernel {\n}", line: 1, column: 8, says: "an identifier" },
  { name: "a keyword as kernel name", src: "kernel row {\n}", line: 1, column: 8, says: '"row"' },
  { name: "a number as kernel name", src: "kernel 1k {\n}", line: 1, column: 8, says: '"1k"' },
  { name: "no kernel keyword", src: "k {\n}", line: 1, column: 1, says: '"kernel"' },
  {
    name: "a missing ] at the end of a declaration line",
    src: `${K}  A: f16[M, K\n}`,
    line: 2,
    column: 14,
    says: 'Expected "]" or ",", found end of line',
  },
  {
    name: "a missing ] before the layout",
    src: `${K}  A: f16[M, K row\n}`,
    line: 2,
    column: 15,
    says: 'found "row"',
  },
  { name: "empty dims", src: `${K}  A: f16[]\n}`, line: 2, column: 10, says: 'found "]"' },
  {
    name: "a trailing comma in dims",
    src: `${K}  A: f16[M,]\n}`,
    line: 2,
    column: 12,
    says: '"]"',
  },
  { name: "a decimal dim", src: `${K}  A: f16[M, 6.4]\n}`, line: 2, column: 14, says: '".4"' },
  { name: "dims in parentheses", src: `${K}  A: f16(M, K)\n}`, line: 2, column: 9, says: '"("' },
  { name: "a missing colon", src: `${K}  A f16[M, K]\n}`, line: 2, column: 5, says: '":"' },
  {
    name: "an unknown layout word",
    src: `${K}  A: f16[M, K] diag\n}`,
    line: 2,
    column: 20,
    says: "found end of line",
  },
  { name: "two layouts", src: `${K}  A: f16[M, K] row col\n}`, line: 2, column: 20, says: '"col"' },
  {
    name: "align before the layout",
    src: `${K}  A: f16[M, K] align 8 row\n}`,
    line: 2,
    column: 24,
    says: '"row"',
  },
  {
    name: "align without a number",
    src: `${K}  A: f16[M, K] align\n}`,
    line: 2,
    column: 21,
    says: "Expected an integer, found end of line",
  },
  {
    name: "align of a name",
    src: `${K}  A: f16[M, K] align x\n}`,
    line: 2,
    column: 22,
    says: '"x"',
  },
  {
    name: "a keyword as tensor name",
    src: `${K}  col: f16[M]\n}`,
    line: 2,
    column: 3,
    says: '"col"',
  },
  {
    name: "a scalar default missing",
    src: `${K}  alpha: f32 =\n}`,
    line: 2,
    column: 15,
    says: "Expected a number, found end of line",
  },
  { name: "a default .5", src: `${K}  alpha: f32 = .5\n}`, line: 2, column: 16, says: '".5"' },
  { name: "a default 1.", src: `${K}  alpha: f32 = 1.\n}`, line: 2, column: 16, says: '"1."' },
  {
    name: "an exponent without digits",
    src: `${K}  alpha: f32 = 1e\n}`,
    line: 2,
    column: 16,
    says: 'Expected a number, found "1e"',
  },
  {
    name: "a default that is a name",
    src: `${K}  alpha: f32 = beta\n}`,
    line: 2,
    column: 16,
    says: "a number",
  },
  {
    name: "a number with two dots",
    src: `${K}  D[m, n] = 1.5.2\n}`,
    line: 2,
    column: 13,
    says: '"1.5.2"',
  },
  {
    name: "division",
    src: `${K}  D[m, n] = A[m, k] / B[k, n]\n}`,
    line: 2,
    column: 21,
    says: '"/"',
  },
  {
    name: "a power",
    src: `${K}  D[m, n] = A[m, k] ** B[k, n]\n}`,
    line: 2,
    column: 22,
    says: '"*"',
  },
  {
    name: "& outside popc",
    src: `${K}  D[m, n] = A[m, k] & B[k, n]\n}`,
    line: 2,
    column: 21,
    says: '"&"',
  },
  {
    name: "popc with |",
    src: `${K}  D[m, n] = popc(A[m, k] | B[k, n])\n}`,
    line: 2,
    column: 26,
    says: 'Expected an "&" or "^", found "|"',
  },
  {
    name: "popc with *",
    src: `${K}  D[m, n] = popc(A[m, k] * B[k, n])\n}`,
    line: 2,
    column: 26,
    says: '"*"',
  },
  {
    name: "popc of one operand",
    src: `${K}  D[m, n] = popc(A[m, k])\n}`,
    line: 2,
    column: 25,
    says: '"&" or "^"',
  },
  {
    name: "a missing ] in an access",
    src: `${K}  D[m, n] = A[m, k] * B[k, n\n}`,
    line: 2,
    column: 29,
    says: 'Expected "]" or ",", found end of line',
  },
  {
    name: "a number as an index",
    src: `${K}  D[m, n] = A[m, 0] * B[k, n]\n}`,
    line: 2,
    column: 18,
    says: "an identifier",
  },
  {
    name: "an unclosed parenthesis",
    src: `${K}  D[m, n] = (A[m, k] * B[k, n]\n}`,
    line: 2,
    column: 31,
    says: 'Expected ")"',
  },
  {
    name: "an unclosed call",
    src: `${K}  D[m, n] = relu(A[m, k] * B[k, n]\n}`,
    line: 2,
    column: 35,
    says: 'Expected ")"',
  },
  {
    name: "an empty argument",
    src: `${K}  D[m, n] = clamp(x,, 1)\n}`,
    line: 2,
    column: 21,
    says: '","',
  },
  {
    name: "a dangling +",
    src: `${K}  D[m, n] = A[m, k] * B[k, n] +\n}`,
    line: 2,
    column: 32,
    says: "found end of line",
  },
  { name: "==", src: `${K}  D[m, n] == A[m, k]\n}`, line: 2, column: 12, says: '"="' },
  {
    name: "an output without indices",
    src: `${K}  D = A[m, k]\n}`,
    line: 2,
    column: 5,
    says: '"="',
  },
  { name: "an empty index list", src: `${K}  D[] = A[m, k]\n}`, line: 2, column: 5, says: '"]"' },
  {
    name: "a statement with no right-hand side",
    src: `${K}  D[m, n] =\n}`,
    line: 2,
    column: 12,
    says: "found end of line",
  },
  {
    name: "schedule without a block",
    src: `${K}  schedule\n}`,
    line: 2,
    column: 11,
    says: 'Expected "{", found end of line',
  },
  {
    name: "a schedule line without a value before }",
    src: `${K}  schedule {\n    stages\n  }\n}`,
    line: 3,
    column: 11,
    says: "Expected a schedule value, found end of line",
  },
  {
    name: "a schedule line with its value on the next line",
    src: `${K}  schedule {\n    stages\n      3\n  }\n}`,
    line: 3,
    column: 11,
    says: "Expected a schedule value",
  },
  {
    name: "a schedule key followed by } on its line",
    src: `${K}  schedule { stages }\n}`,
    line: 2,
    column: 21,
    says: 'Expected a schedule value, found "}"',
  },
  {
    name: "a schedule line without a key",
    src: `${K}  schedule {\n    128x128x32\n  }\n}`,
    line: 3,
    column: 5,
    says: 'found "128x128x32"',
  },
  {
    name: "a comma after a schedule value",
    src: `${K}  schedule {\n    threadblock 128x128x32,\n  }\n}`,
    line: 3,
    column: 27,
    says: '","',
  },
  {
    name: "an unclosed schedule block",
    src: `${K}  schedule {\n    stages 3\n}\n`,
    line: 4,
    column: 2,
    says: "found end of input",
  },
  {
    name: "a stray closing brace",
    src: "kernel k {\n}\n}\n",
    line: 3,
    column: 1,
    says: 'Expected end of input or "kernel"',
  },
  {
    name: "a block comment",
    src: `${K}  A: f16[M, K] /* c */\n}`,
    line: 2,
    column: 16,
    says: '"/"',
  },
  {
    name: "kernel at the end of input",
    src: "kernel k { }\nkernel",
    line: 2,
    column: 7,
    says: "found end of input",
  },
];

for (const r of REJECTED) {
  Deno.test(`grammar rejects: ${r.name}`, () => {
    const p = parseProgram(r.src, FILE);
    assert.ok(!p.ok, `expected a syntax error:\n${r.src}`);
    assert.equal(p.diagnostics.length, 1);
    const d = p.diagnostics[0]!;
    assert.equal(d.code, "E0001");
    assert.equal(d.file, FILE);
    assert.deepEqual([d.line, d.column], [r.line, r.column], d.message);
    assert.ok(d.message.startsWith("Expected "), d.message);
    assert.ok(d.message.includes(r.says), `"${d.message}" lacks "${r.says}"`);
    // The checker front door reports the same syntax diagnostic (and, after it, those of
    // other kernels parsed on their own: dsl/resync.ts; here only `kernel k { }`'s E0114).
    const c = check(r.src, { file: FILE });
    assert.deepEqual(c.diagnostics.filter((d) => d.code === "E0001"), p.diagnostics);
    assert.ok(c.diagnostics.every((d) => d.code === "E0001" || d.code === "E0114"));
    assert.equal(c.kernels.length, 0);
  });
}

Deno.test("grammar rejects: a syntax error in the second kernel stops the whole file", () => {
  const src = `kernel ok {
  A: f16[M, K]
  B: f16[K, N] col
  D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n]
}
kernel bad {
  A: f16[M, K
}
`;
  const p = parseProgram(src, FILE);
  assert.ok(!p.ok);
  assert.deepEqual([p.diagnostics[0]!.line, p.diagnostics[0]!.column], [8, 14]);
});

Deno.test("grammar: at least 40 accepted and rejected programs", () => {
  assert.ok(REJECTED.length >= 40, `${REJECTED.length} rejected`);
});
