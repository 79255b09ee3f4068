/**
 * The grammar (dsl/gemm.ohm through dsl/parse.ts): programs that parse, with
 * the AST facts they must produce, and programs that do not, with the exact
 * line and column of the E0001 syntax diagnostic (tests/grammar_rejects_test.ts).
 *
 * Accepted programs that are whole kernels are also run through the checker,
 * so that "the grammar accepts it" and "the language accepts it" agree.
 */

import assert from "node:assert/strict";
import { parseProgram } from "../dsl/parse.ts";
import type { ExprAst, KernelAst, ProgramAst, TensorDeclAst } from "../dsl/ast.ts";
import { check, formatDiagnostics } from "../compiler.ts";
import { DTYPES } from "../ir/dtype.ts";
import type { GemmKernel } from "../ir/gemm.ts";
import { printEpilogueExpr } from "../ir/print_gemm.ts";

const FILE = "t.gemm";

/** Parses, failing the test with the rendered diagnostic if it does not. */
function parses(src: string): ProgramAst {
  const r = parseProgram(src, FILE);
  if (!r.ok) {
    const d = r.diagnostics[0]!;
    assert.fail(`expected to parse, got ${d.line}:${d.column}: ${d.message}\n${src}`);
  }
  return r.ast;
}

/** Parses and checks, failing with the rendered diagnostics if either fails. */
function checks(src: string): GemmKernel[] {
  parses(src);
  const r = check(src, { file: FILE });
  if (r.diagnostics.length > 0) {
    assert.fail(`expected to check, got\n${formatDiagnostics(r.diagnostics, src)}`);
  }
  return [...r.kernels];
}

/** The only kernel of a program. */
function only(p: ProgramAst): KernelAst {
  assert.equal(p.kernels.length, 1);
  return p.kernels[0]!;
}

function tensors(k: KernelAst): TensorDeclAst[] {
  return k.items.filter((i): i is TensorDeclAst => i.kind === "tensorDecl");
}

/** The right-hand side of a kernel's statement. */
function rhs(k: KernelAst): ExprAst {
  const s = k.items.find((i) => i.kind === "statement");
  assert.ok(s !== undefined && s.kind === "statement", "no statement");
  return s.expr;
}

/** An f16 GEMM with the given statement; declares C, bias[N] and rowbias[M] where it uses them
 * (an unused tensor is an error). */
function gemm(statement: string, extra = ""): string {
  const uses = (t: string) => new RegExp(`\\b${t}\\[`).test(statement);
  const lines = [
    "kernel k {",
    "  A: f16[M, K] row",
    "  B: f16[K, N] col",
    ...(uses("C") ? ["  C: f32[M, N] row"] : []),
    "  D: f32[M, N] row",
    ...(uses("bias") ? ["  bias: f32[N]"] : []),
    ...(uses("rowbias") ? ["  rowbias: f32[M]"] : []),
    "  alpha: f32 = 1.0",
    "  beta: f32 = 0.0",
    `${extra}  ${statement}`,
    "}",
  ];
  return lines.join("\n") + "\n";
}

/** The epilogue as the IR prints it. */
function epilogue(k: GemmKernel): string {
  return printEpilogueExpr(k.epilogue.expr, k.problem.indices);
}

// ---- accepted --------------------------------------------------------------

Deno.test("grammar accepts: an empty file and a file of comments only", () => {
  assert.equal(parses("").kernels.length, 0);
  assert.equal(parses("// nothing here\n\n   // still nothing\n").kernels.length, 0);
});

Deno.test("grammar accepts: an empty kernel (the checker then wants a statement)", () => {
  const k = only(parses("kernel empty { }"));
  assert.equal(k.name.text, "empty");
  assert.equal(k.items.length, 0);
  const r = check("kernel empty { }");
  assert.equal(r.diagnostics[0]?.code, "E0114");
});

Deno.test("grammar accepts: the hgemm of the design brief with its schedule", () => {
  const src = `// D = alpha * A·B + beta * C
kernel hgemm {
  A: f16[M, K] row
  B: f16[K, N] col
  C: f32[M, N] row
  D: f32[M, N] row
  alpha: f32 = 1.0
  beta: f32 = 0.0

  D[m, n] = alpha * A[m, k] * B[k, n] + beta * C[m, n]

  schedule {            // optional, and every line in it is optional
    threadblock 128x256x32
    warp 64x64x32
    mma 16x8x16
    stages 3
    swizzle 8
  }
}
`;
  const k = only(parses(src));
  assert.deepEqual(k.items.map((i) => i.kind), [
    "tensorDecl",
    "tensorDecl",
    "tensorDecl",
    "tensorDecl",
    "scalarDecl",
    "scalarDecl",
    "statement",
    "schedule",
  ]);
  const [g] = checks(src);
  assert.deepEqual(g!.schedule, {
    threadblock: { m: 128, n: 256, k: 32 },
    warp: { m: 64, n: 64, k: 32 },
    mma: { m: 16, n: 8, k: 16 },
    stages: 3,
    swizzle: 8,
  });
});

Deno.test("grammar accepts: two kernels in one file, each checked", () => {
  const src = `kernel first {
  A: f16[M, K]
  B: f16[K, N] col
  D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n]
}
kernel second {
  A: s8[M, K]
  B: s8[K, N] col
  D: s32[M, N]
  D[m, n] = A[m, k] * B[k, n]
}
`;
  assert.deepEqual(parses(src).kernels.map((k) => k.name.text), ["first", "second"]);
  assert.deepEqual(checks(src).map((k) => k.math.acc), ["f32", "s32"]);
});

Deno.test("grammar accepts: three kernels, separated by comments or by nothing", () => {
  const body = "{ A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }";
  const src = `kernel a ${body} // one\n// two\nkernel b ${body}kernel c ${body}`;
  assert.deepEqual(checks(src).map((k) => k.name), ["a", "b", "c"]);
});

Deno.test("grammar accepts: comments between any two tokens", () => {
  const src = `// header
kernel // after the keyword
  k // after the name
{ // after the brace
  A: // after the colon
    f16[M, // inside the dims
        K] row // after the layout
  B: f16[K, N] col align 8 // after align
  D: f32[M, N]
  D[m, n] = // after =
    A[m, k] * // after *
    B[k, n] // at the end of the statement
  schedule { // after the schedule brace
    stages 3 // after a value
    // a line of its own
  } // after the schedule
} // after the kernel
// trailer`;
  const [g] = checks(src);
  assert.equal(g!.schedule.stages, 3);
  assert.equal(g!.problem.b.layout, "col");
});

Deno.test("grammar accepts: every dtype in a tensor declaration", () => {
  for (const dt of DTYPES) {
    const k = only(parses(`kernel k {\n  X: ${dt}[M, K]\n}`));
    assert.equal(tensors(k)[0]!.dtype, dt, dt);
  }
  assert.equal(DTYPES.length, 13);
});

Deno.test("grammar accepts: every dtype in a scalar declaration (the checker limits them)", () => {
  for (const dt of DTYPES) {
    const k = only(parses(`kernel k {\n  s: ${dt}\n}`));
    const s = k.items[0]!;
    assert.ok(s.kind === "scalarDecl" && s.dtype === dt, dt);
  }
});

Deno.test("grammar accepts: symbolic and literal dims", () => {
  const k = only(parses("kernel k {\n  A: f16[M, 64]\n  B: f16[128, N_2]\n  C: f32[Rows0, _x]\n}"));
  const [a, b, c] = tensors(k);
  assert.deepEqual(a!.dims.map((d) => d.kind), ["sym", "const"]);
  assert.deepEqual(b!.dims.map((d) => (d.kind === "sym" ? d.name : d.value)), [128, "N_2"]);
  assert.deepEqual(c!.dims.map((d) => (d.kind === "sym" ? d.name : d.value)), ["Rows0", "_x"]);
  const [g] = checks(`kernel k {
  A: f16[64, K]
  B: f16[K, 256] col
  D: f32[64, 256]
  D[m, n] = A[m, k] * B[k, n]
}`);
  assert.deepEqual(g!.problem.m, { kind: "const", value: 64 });
  assert.deepEqual(g!.problem.n, { kind: "const", value: 256 });
  assert.deepEqual(g!.dims, ["K"]);
});

Deno.test("grammar accepts: rank 1, 2 and 3 tensors", () => {
  const k = only(parses("kernel k {\n  v: f32[N]\n  A: f16[M, K]\n  Z: f16[L, M, K]\n}"));
  assert.deepEqual(tensors(k).map((t) => t.dims.length), [1, 2, 3]);
});

Deno.test("grammar accepts: row, col and no layout", () => {
  const k = only(parses("kernel k {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  C: f32[M, N]\n}"));
  assert.deepEqual(tensors(k).map((t) => t.layout?.value ?? null), ["row", "col", null]);
});

Deno.test("grammar accepts: align N with and without a layout", () => {
  const k = only(parses(
    "kernel k {\n  A: f16[M, K] align 2\n  B: f16[K, N] col align 1\n  C: f32[M, N] row align 4\n}",
  ));
  assert.deepEqual(tensors(k).map((t) => t.align?.value), [2, 1, 4]);
  assert.deepEqual(tensors(k).map((t) => t.layout?.value ?? null), [null, "col", "row"]);
});

Deno.test("grammar accepts: scalars with and without defaults of every literal form", () => {
  const src = `kernel k {
  a: f32
  b: f32 = 1
  c: f32 = 0.5
  d: f32 = -1.5
  e: f32 = 1e-3
  f: f64 = 2.5E+2
  g: f32 = -3.0e2
  h: s32 = -7
  i: f32 = - 4
}`;
  const k = only(parses(src));
  const defaults = k.items.map((i) => (i.kind === "scalarDecl" ? i.default?.value ?? null : "?"));
  assert.deepEqual(defaults, [null, 1, 0.5, -1.5, 0.001, 250, -300, -7, -4]);
  const texts = k.items.map((i) => (i.kind === "scalarDecl" ? i.default?.text ?? null : "?"));
  assert.deepEqual(texts, [null, "1", "0.5", "-1.5", "1e-3", "2.5E+2", "-3.0e2", "-7", "-4"]);
});

Deno.test("grammar accepts: Einstein summation with arbitrary index names", () => {
  const src = `kernel k {
  X: f16[Rows, Inner] row
  Y: f16[Inner, Cols] col
  Out: f32[Rows, Cols] row
  Out[i_1, j2] = X[i_1, sum_idx] * Y[sum_idx, j2]
}`;
  const [g] = checks(src);
  assert.deepEqual(g!.problem.indices, { m: "i_1", n: "j2", k: "sum_idx", batch: null });
  assert.equal(g!.problem.a.tensor, "X");
  assert.equal(g!.problem.b.tensor, "Y");
});

Deno.test("grammar accepts: identifiers that start with a keyword", () => {
  const src = `kernel kernels {
  rows: f16[M, K] row
  cols: f16[K, N] col
  aligned: f32[M, N]
  popcount: f32 = 2.0
  schedules: f32[N]
  aligned[row_, col_] = popcount * rows[row_, k] * cols[k, col_] + schedules[col_]
}`;
  const [g] = checks(src);
  assert.equal(g!.name, "kernels");
  assert.equal(epilogue(g!), "((popcount * acc) + schedules[col_])");
});

Deno.test("grammar accepts: a kernel on one line without optional whitespace", () => {
  const [g] = checks(
    "kernel k{A:f16[M,K]B:f16[K,N]col D:f32[M,N]D[m,n]=A[m,k]*B[k,n]schedule{stages 2}}",
  );
  assert.equal(g!.schedule.stages, 2);
  assert.equal(g!.problem.b.layout, "col");
});

Deno.test("grammar accepts: CRLF line endings and tabs", () => {
  const src = "kernel k {\r\n\tA: f16[M, K]\r\n\tB: f16[K, N]\tcol\r\n\tD: f32[M, N]\r\n" +
    "\tD[m, n] = A[m, k] * B[k, n]\r\n\tschedule {\r\n\t\tstages\t4\r\n\t}\r\n}\r\n";
  const [g] = checks(src);
  assert.equal(g!.schedule.stages, 4);
});

Deno.test("grammar accepts: declarations after the statement and the schedule first", () => {
  const src = `kernel k {
  schedule { split_k 2 }
  D[m, n] = A[m, k] * B[k, n]
  A: f16[M, K]
  B: f16[K, N] col
  D: f32[M, N]
}`;
  const [g] = checks(src);
  assert.equal(g!.schedule.splitK, 2);
  assert.deepEqual(g!.params.map((p) => p.name), ["A", "B", "D"]);
});

Deno.test("grammar accepts: + - * and parentheses, with precedence", () => {
  const [g] = checks(gemm("D[m, n] = alpha * (A[m, k] * B[k, n] - C[m, n]) + beta * C[m, n] * 2"));
  assert.equal(epilogue(g!), "((alpha * (acc - C[m, n])) + ((beta * C[m, n]) * 2))");
  const p = rhs(only(parses(gemm("D[m, n] = 1 - 2 - 3 * 4"))));
  // Left-associative: (1 - 2) - (3 * 4).
  assert.ok(p.kind === "binary" && p.op === "-" && p.lhs.kind === "binary" && p.lhs.op === "-");
  assert.ok(p.kind === "binary" && p.rhs.kind === "binary" && p.rhs.op === "*");
});

Deno.test("grammar accepts: redundant parentheses around a contraction and its factors", () => {
  for (
    const s of [
      "D[m, n] = (A[m, k] * B[k, n])",
      "D[m, n] = ((A[m, k]) * (B[k, n]))",
      "D[m, n] = (A[m, k]) * B[k, n]",
    ]
  ) {
    const [g] = checks(gemm(s));
    assert.equal(epilogue(g!), "acc", s);
  }
  const [g] = checks(
    gemm("D[m, n] = alpha * (A[m, k]) * B[k, n] + C[m, n] + bias[n] + rowbias[m]"),
  );
  assert.equal(epilogue(g!), "((((alpha * acc) + C[m, n]) + bias[n]) + rowbias[m])");
});

Deno.test("grammar accepts: unary minus on accesses, parentheses, numbers and itself", () => {
  const cases: [string, string][] = [
    ["D[m, n] = -A[m, k] * B[k, n] + C[m, n]", "(-(acc) + C[m, n])"],
    ["D[m, n] = A[m, k] * -B[k, n] + C[m, n]", "(-(acc) + C[m, n])"],
    ["D[m, n] = -(A[m, k] * B[k, n]) - -C[m, n]", "(-(acc) - -(C[m, n]))"],
    ["D[m, n] = - -A[m, k] * B[k, n] + C[m, n]", "(acc + C[m, n])"],
    ["D[m, n] = A[m, k] * B[k, n] * -2 + C[m, n]", "(-((acc * 2)) + C[m, n])"],
    ["D[m, n] = A[m, k] * B[k, n] + -0.5 * bias[n] * rowbias[m] + C[m, n]", ""],
  ];
  for (const [s, want] of cases) {
    const [g] = checks(gemm(s));
    if (want !== "") assert.equal(epilogue(g!), want, s);
  }
});

Deno.test("grammar accepts: number literals in expressions", () => {
  const e = rhs(only(parses(gemm("D[m, n] = 2 + 0.25 + 1e3 + 1.5e-2 + 6E+1"))));
  const nums: string[] = [];
  const walk = (x: ExprAst): void => {
    if (x.kind === "number") nums.push(`${x.text}=${x.value}`);
    if (x.kind === "binary") {
      walk(x.lhs);
      walk(x.rhs);
    }
  };
  walk(e);
  assert.deepEqual(nums, ["2=2", "0.25=0.25", "1e3=1000", "1.5e-2=0.015", "6E+1=60"]);
});

Deno.test("grammar accepts: every one-argument epilogue function", () => {
  for (const f of ["relu", "gelu", "sigmoid", "silu", "abs"]) {
    const [g] = checks(gemm(`D[m, n] = ${f}(A[m, k] * B[k, n] + bias[n])`));
    assert.equal(epilogue(g!), `${f}((acc + bias[n]))`, f);
  }
});

Deno.test("grammar accepts: min, max and clamp", () => {
  const [g1] = checks(gemm("D[m, n] = min(A[m, k] * B[k, n], 6.0)"));
  assert.equal(epilogue(g1!), "min(acc, 6)");
  const [g2] = checks(gemm("D[m, n] = max(A[m, k] * B[k, n], C[m, n])"));
  assert.equal(epilogue(g2!), "max(acc, C[m, n])");
  const [g3] = checks(gemm("D[m, n] = clamp(A[m, k] * B[k, n], -1, rowbias[m])"));
  assert.equal(epilogue(g3!), "clamp(acc, -(1), rowbias[m])");
});

Deno.test("grammar accepts: nested functions and casts named by a dtype", () => {
  for (const t of ["f64", "f32", "f16", "bf16", "s32", "s8", "u8"]) {
    const k = only(parses(gemm(`D[m, n] = ${t}(A[m, k] * B[k, n])`)));
    const e = rhs(k);
    assert.ok(e.kind === "call" && e.callee.text === t && e.args.length === 1, t);
  }
  const [g] = checks(gemm("D[m, n] = f32(relu(max(abs(A[m, k] * B[k, n]), silu(C[m, n]))))"));
  assert.equal(epilogue(g!), "f32(relu(max(abs(acc), silu(C[m, n]))))");
});

Deno.test("grammar accepts: popc with & and with ^", () => {
  for (const [op, mmaOp] of [["&", "and.popc"], ["^", "xor.popc"]] as const) {
    const src = `kernel b {
  A: b1[M, K] row
  B: b1[K, N] col
  D: s32[M, N]
  D[m, n] = popc(A[m, k] ${op} B[k, n])
}`;
    const e = rhs(only(parses(src)));
    assert.ok(e.kind === "popc" && e.op === op);
    const [g] = checks(src);
    assert.equal(g!.math.op, mmaOp);
    assert.equal(g!.math.acc, "s32");
  }
});

Deno.test("grammar accepts: popc inside an epilogue", () => {
  const [g] = checks(`kernel b {
  A: b1[M, K]
  B: b1[K, N] col
  bias: s32[N]
  D: s32[M, N]
  D[m, n] = 2 * popc(A[m, k] ^ B[k, n]) - bias[n]
}`);
  assert.equal(epilogue(g!), "((2 * acc) - bias[n])");
  assert.equal(g!.epilogue.compute, "s32");
});

Deno.test("grammar accepts: an empty schedule block", () => {
  const [g] = checks(gemm("D[m, n] = A[m, k] * B[k, n]", "  schedule { }\n"));
  assert.deepEqual(g!.schedule, {});
});

const SCHEDULE_LINES: [string, string, (g: GemmKernel) => unknown, unknown][] = [
  ["threadblock", "128x128x32", (g) => g.schedule.threadblock, { m: 128, n: 128, k: 32 }],
  ["warp", "64x32x32", (g) => g.schedule.warp, { m: 64, n: 32, k: 32 }],
  ["mma", "16x8x16", (g) => g.schedule.mma, { m: 16, n: 8, k: 16 }],
  ["stages", "4", (g) => g.schedule.stages, 4],
  ["swizzle", "2", (g) => g.schedule.swizzle, 2],
  ["split_k", "3", (g) => g.schedule.splitK, 3],
  ["cache_a", "evict_first", (g) => g.schedule.cacheA, "evict_first"],
  ["cache_b", "evict_last", (g) => g.schedule.cacheB, "evict_last"],
  ["math", "f32", (g) => g.math.mode, "simt"],
  ["accumulate", "f16", (g) => g.math.acc, "f16"],
  ["target", "sm86", (g) => g.target, "sm86"],
];

for (const [key, value, get, want] of SCHEDULE_LINES) {
  Deno.test(`grammar accepts: schedule key ${key}`, () => {
    // math applies to f32 operands, accumulate f16 to f16 ones.
    const dt = key === "math" ? "f32" : "f16";
    const src = `kernel k {
  A: ${dt}[M, K]
  B: ${dt}[K, N] col
  D: ${key === "accumulate" ? "f16" : "f32"}[M, N]
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    ${key} ${value} // ${key}
  }
}`;
    const k = only(parses(src));
    const sched = k.items.find((i) => i.kind === "schedule");
    assert.ok(sched !== undefined && sched.kind === "schedule");
    assert.deepEqual(sched.lines.map((l) => [l.key.text, l.value.text]), [[key, value]]);
    const [g] = checks(src);
    assert.deepEqual(get(g!), want);
  });
}

Deno.test("grammar accepts: every schedule key in one block", () => {
  const src = `kernel k {
  A: f32[M, K]
  B: f32[K, N] col
  D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    threadblock 128x128x32
    warp 64x64x32
    mma 16x8x8
    stages 3
    swizzle 4
    split_k 2
    cache_a evict_normal
    cache_b evict_first
    math 3xtf32
    accumulate f32
    target sm80
  }
}`;
  const [g] = checks(src);
  assert.equal(g!.math.mode, "3xtf32");
  assert.equal(g!.schedule.cacheA, "evict_normal");
  assert.equal(g!.schedule.cacheB, "evict_first");
  assert.deepEqual(Object.keys(g!.scheduleSpans).sort(), [
    "accumulate",
    "cache_a",
    "cache_b",
    "math",
    "mma",
    "split_k",
    "stages",
    "swizzle",
    "target",
    "threadblock",
    "warp",
  ]);
});

Deno.test("grammar: AST spans point at the source text", () => {
  const src = "kernel k {\n  A: f16[M, K] col align 4\n}";
  const [a] = tensors(only(parses(src)));
  const at = (s: { start: number; end: number }) => src.slice(s.start, s.end);
  assert.equal(at(a!.name.span), "A");
  assert.equal(at(a!.dtypeSpan), "f16");
  assert.equal(at(a!.layout!.span), "col");
  assert.equal(at(a!.align!.span), "4");
  assert.equal(at(a!.span), "A: f16[M, K] col align 4");
});
