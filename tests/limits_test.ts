/**
 * The source limits (dsl/limits.ts): a program at each limit compiles to
 * PTX (the parser, the checker and the passes take that much nesting), one
 * past it is an E0002 at the token over the limit, before the parser runs;
 * a name outside ASCII is an E0003 at the name.
 */

import assert from "node:assert/strict";
import { check, compile } from "../compiler.ts";
import {
  LIMITS,
  MAX_IDENTIFIER,
  MAX_NESTING,
  MAX_OPERATORS,
  MAX_SOURCE_LENGTH,
} from "../dsl/limits.ts";
import { MAX_DIM } from "../backends/ptx/contract.ts";

const ACC = "A[m, k] * B[k, n]";

function program(expr: string, out = "D"): string {
  return `kernel k {\n  A: f16[M, K]\n  B: f16[K, N] col\n  ${out}: f32[M, N]\n` +
    `  ${out}[m, n] = ${expr}\n}\n`;
}

/** A binary tree of max calls `depth` deep over C (2^depth - 1 calls). */
function tree(depth: number): string {
  return depth === 0 ? "1.5" : `max(${tree(depth - 1)}, ${tree(depth - 1)})`;
}

/** Nesting and operators at their limits together, in the shapes that recurse deepest. */
const AT_LIMITS: Readonly<Record<string, string>> = {
  "parentheses around a sum": "(".repeat(MAX_NESTING) + ACC + " + 1".repeat(MAX_OPERATORS - 1) +
    ")".repeat(MAX_NESTING),
  "calls then products": "relu(".repeat(MAX_NESTING) + ACC + ")".repeat(MAX_NESTING) +
    " * 2".repeat(MAX_OPERATORS - MAX_NESTING - 1),
  "unary minus inside parentheses": "(-".repeat(MAX_NESTING) + ACC + ")".repeat(MAX_NESTING) +
    " + 1".repeat(MAX_OPERATORS - MAX_NESTING - 1),
  "a chain of unary minus": "-".repeat(MAX_OPERATORS - 1) + ACC,
  "a binary tree of calls": tree(6) + " + " + ACC + " * 2".repeat(MAX_OPERATORS - 65),
};

for (const [name, expr] of Object.entries(AT_LIMITS)) {
  Deno.test(`limits: ${name} at the limits compiles`, () => {
    const r = compile(program(expr), { file: "k.gemm" });
    assert.deepEqual(r.diagnostics, []);
    assert.ok(r.ok && r.kernels[0]!.ptx.includes(".entry k"));
  });
}

/** One past each limit, with the 1-based column of the token over it on line 5. */
const OVER: readonly (readonly [string, string, string, number])[] = [
  [
    "parentheses",
    "(".repeat(MAX_NESTING + 1) + ACC + ")".repeat(MAX_NESTING + 1),
    "nested",
    13 + MAX_NESTING,
  ],
  [
    "operators",
    ACC + " + 1".repeat(MAX_OPERATORS + 1),
    "too long",
    13 + ACC.length + 4 * (MAX_OPERATORS - 1) + 1,
  ],
  [
    // Each repetition adds a + and a call: the call of the last one is one past.
    "operators and calls",
    ACC + " + relu(1)".repeat(MAX_OPERATORS / 2),
    "and calls",
    13 + ACC.length + 10 * (MAX_OPERATORS / 2 - 1) + 3,
  ],
];

for (const [name, expr, words, column] of OVER) {
  Deno.test(`limits: one past the limit of ${name} is E0002 at the token over it`, () => {
    const d = check(program(expr), { file: "k.gemm" }).diagnostics;
    assert.deepEqual(d.map((x) => [x.code, x.line, x.column]), [["E0002", 5, column]]);
    assert.match(d[0]!.message, new RegExp(words));
  });
}

Deno.test("limits: an identifier of the limit's length is legal, one longer is E0002", () => {
  const ok = "D" + "x".repeat(MAX_IDENTIFIER - 1);
  assert.deepEqual(check(program(ACC, ok), { file: "k.gemm" }).diagnostics, []);
  // Twice in the program, under the source length limit.
  const long = "D" + "x".repeat(100_000);
  const d = check(program(ACC, long), { file: "k.gemm" }).diagnostics;
  assert.deepEqual(d.map((x) => [x.code, x.line, x.column]), [["E0002", 4, 3]]);
  assert.equal(d[0]!.span.end - d[0]!.span.start, MAX_IDENTIFIER);
});

Deno.test("limits: comments and exponents count neither as nesting nor as operators", () => {
  const comment = `// ${"(".repeat(MAX_NESTING + 1)} ${"-".repeat(MAX_OPERATORS + 1)}\n`;
  const expr = ACC + " + 1e-3".repeat(MAX_OPERATORS - 1);
  assert.deepEqual(check(comment + program(expr), { file: "k.gemm" }).diagnostics, []);
});

Deno.test("limits: a name outside ASCII is E0003 at the name", () => {
  const d = check(program(ACC, "Dé"), { file: "k.gemm" }).diagnostics;
  assert.deepEqual(d.map((x) => [x.code, x.line, x.column]), [["E0003", 4, 3]]);
  assert.match(d[0]!.message, /"Dé" is not ASCII/);
});

Deno.test("limits: a source of the limit's length is legal, one character more is E0002 there", () => {
  const base = program(ACC);
  const pad = (n: number) => base + "//" + "x".repeat(n - base.length - 3) + "\n";
  assert.equal(pad(MAX_SOURCE_LENGTH).length, MAX_SOURCE_LENGTH);
  assert.deepEqual(check(pad(MAX_SOURCE_LENGTH), { file: "k.gemm" }).diagnostics, []);
  const d = check(pad(MAX_SOURCE_LENGTH + 1), { file: "k.gemm" }).diagnostics;
  assert.deepEqual(d.map((x) => [x.code, x.span.start]), [["E0002", MAX_SOURCE_LENGTH]]);
  assert.match(d[0]!.message, new RegExp(`limit of ${MAX_SOURCE_LENGTH}`));
});

Deno.test("limits: a byte order mark reads as a space, and spans stay those of the text", () => {
  const r = compile("\uFEFF" + program(ACC), { file: "k.gemm" });
  assert.ok(r.ok, JSON.stringify(r.diagnostics));
  const d = check("\uFEFF" + program("A[m, k] * B[k, n] + q"), { file: "k.gemm" }).diagnostics;
  assert.deepEqual(d.map((x) => [x.code, x.line, x.column]), [["E0101", 5, 33]]);
});

Deno.test("limits: the README's Limits table lists every row of LIMITS with its value", () => {
  const readme = Deno.readTextFileSync(new URL("../README.md", import.meta.url));
  const section = readme.slice(readme.indexOf("## Limits"), readme.indexOf("## Development"));
  const rows = [...section.matchAll(/^\| `(\w+)` +\| (\d+) ([^|]*?) +\|/gm)]
    .map((m) => [m[1], Number(m[2]), m[3]]);
  const want = Object.entries(LIMITS).map(([k, v]) => [k, v.value, v.unit]);
  assert.deepEqual(rows, want);
  // The launch contract's bound on a runtime size is the same value.
  assert.equal(LIMITS.runtimeSize.value, MAX_DIM);
});

Deno.test("limits: CRLF line endings compile, a carriage return alone is E0001 at it", () => {
  const crlf = program(ACC).replace(/\n/g, "\r\n");
  assert.ok(compile("// a comment\r\n" + crlf, { file: "k.gemm" }).ok);
  const d = check("// a comment\r" + program(ACC), { file: "k.gemm" }).diagnostics;
  assert.deepEqual(d.map((x) => [x.code, x.span.start]), [["E0001", 12]]);
  assert.match(d[0]!.message, /carriage return/);
});
