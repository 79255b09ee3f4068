/**
 * The GEMM IR: golden text (`printGemm`) for every example, the verifier on
 * hand-broken kernels, and the semantic facts the checker must establish
 * (roles, normalised layouts, accumulators, compute types, batch, runtime dims).
 *
 * Regenerate the goldens with `UPDATE_GOLDEN=1 deno task test tests/gemm_ir_test.ts`
 * and review the diff.
 */

import assert from "node:assert/strict";
import { check, compile, formatDiagnostics } from "../compiler.ts";
import type { GemmKernel, TensorParam } from "../ir/gemm.ts";
import { printGemm, printSchedule } from "../ir/print_gemm.ts";
import { verifyGemm } from "../ir/verify_gemm.ts";
import { examples, ROOT } from "./_examples.ts";
import { DEFAULT_TARGET, type Target, TARGET_NAMES } from "../ir/target.ts";

const GOLDEN_DIR = "tests/golden/ir";
const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

/** Checks a source that must be clean; returns its kernels. */
function kernels(src: string, options: { target?: Target } = {}): GemmKernel[] {
  const r = check(src, { file: "t.gemm", ...options });
  if (r.diagnostics.length > 0) assert.fail(formatDiagnostics(r.diagnostics, src));
  return [...r.kernels];
}

function one(src: string): GemmKernel {
  const ks = kernels(src);
  assert.equal(ks.length, 1);
  return ks[0]!;
}

function tensor(k: GemmKernel, name: string): TensorParam {
  const p = k.params.find((q) => q.name === name);
  assert.ok(p !== undefined && p.kind === "tensor", `no tensor ${name}`);
  return p;
}

// ---- goldens for every example ---------------------------------------------

for (const name of examples()) {
  Deno.test(`GEMM IR golden: examples/${name}.gemm`, () => {
    const file = `examples/${name}.gemm`;
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    const r = compile(text, { file });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
    assert.ok(r.kernels.length >= 1);
    for (const k of r.kernels) {
      verifyGemm(k.gemm);
      assert.equal(k.gemmText, printGemm(k.gemm));
    }
    // As `gemm compile --emit ir` prints it: the kernels, a blank line between two.
    const out = r.kernels.map((k) => k.gemmText).join("\n");
    const golden = new URL(`${GOLDEN_DIR}/${name}.ir`, ROOT);
    if (UPDATE) {
      Deno.mkdirSync(new URL(`${GOLDEN_DIR}/`, ROOT), { recursive: true });
      Deno.writeTextFileSync(golden, out);
    }
    assert.equal(out, Deno.readTextFileSync(golden));
  });
}

Deno.test("GEMM IR golden: every golden has an example", () => {
  const names = new Set(examples());
  for (const e of Deno.readDirSync(new URL(`${GOLDEN_DIR}/`, ROOT))) {
    assert.ok(names.has(e.name.replace(/\.ir$/, "")), `stale golden ${e.name}`);
  }
});

Deno.test("GEMM IR golden: the two-kernel example prints both kernels", () => {
  const text = Deno.readTextFileSync(new URL(`${GOLDEN_DIR}/two_kernels.ir`, ROOT));
  assert.deepEqual([...text.matchAll(/^gemm @(\w+)/gm)].map((m) => m[1]), [
    "proj_gelu",
    "gate_silu",
  ]);
});

Deno.test("GEMM IR: the examples cover every SM80 type combination", () => {
  const combos = new Set<string>();
  for (const name of examples()) {
    const text = Deno.readTextFileSync(new URL(`examples/${name}.gemm`, ROOT));
    for (const k of kernels(text)) {
      combos.add(`${k.math.mmaA}x${k.math.mmaB}->${k.math.acc}:${k.math.mode}:${k.math.op}`);
    }
  }
  for (
    const c of [
      "f16xf16->f32:tensor:mul",
      "f16xf16->f16:tensor:mul",
      "bf16xbf16->f32:tensor:mul",
      "tf32xtf32->f32:tensor:mul",
      "tf32xtf32->f32:3xtf32:mul",
      "f64xf64->f64:tensor:mul",
      "s8xs8->s32:tensor:mul",
      "u8xs8->s32:tensor:mul",
      "s4xs4->s32:tensor:mul",
      "u4xu4->s32:tensor:mul",
      "b1xb1->s32:tensor:and.popc",
      "b1xb1->s32:tensor:xor.popc",
    ]
  ) {
    assert.ok(combos.has(c), `no example for ${c}; have ${[...combos].join(", ")}`);
  }
});

// ---- the verifier ------------------------------------------------------------

const HGEMM = Deno.readTextFileSync(new URL("examples/hgemm.gemm", ROOT));
const BATCHED = Deno.readTextFileSync(new URL("examples/batched.gemm", ROOT));

/** A mutable deep copy of a kernel, to break by hand. */
// deno-lint-ignore no-explicit-any
function copy(k: GemmKernel): any {
  return structuredClone(k);
}

// deno-lint-ignore no-explicit-any
const BROKEN: [string, (k: any) => void, RegExp][] = [
  ["a duplicate parameter", (k) => k.params.push(k.params[0]), /duplicate parameter "A"/],
  [
    "a rank-4 tensor",
    (k) => k.params[0].dims.push({ kind: "sym", name: "K" }, { kind: "sym", name: "K" }),
    /tensor "A" has rank 4/,
  ],
  ["a rank-0 tensor", (k) => (k.params[2].dims = []), /tensor "C" has rank 0/],
  ["an alignment of 3", (k) => (k.params[1].align = 3), /tensor "B" has alignment 3/],
  ["an alignment of 0", (k) => (k.params[1].align = 0), /tensor "B" has alignment 0/],
  ["an unlisted dim", (k) => (k.dims = ["M", "K"]), /dim "N" is not listed/],
  ["an operand that is not a tensor", (k) => (k.problem.a.tensor = "alpha"), /no tensor "alpha"/],
  ["an unknown operand", (k) => (k.problem.b.tensor = "Z"), /no tensor "Z"/],
  ["operand roles swapped", (k) => (k.params[0].role = "B"), /roles disagree/],
  ["math types that disagree", (k) => (k.math.a = "bf16"), /math types disagree/],
  [
    "a batched operand without a batch",
    (k) => (k.problem.a.batched = true),
    /batched operand in an unbatched problem/,
  ],
  [
    "an integer accumulator for f16",
    (k) => (k.math.acc = "s32"),
    /accumulator "s32" does not fit "f16"/,
  ],
  ["a float accumulator for popc", (k) => (k.math.op = "xor.popc"), /accumulator "f32"/],
  [
    "an epilogue reading an unknown scalar",
    (k) => (k.epilogue.expr = { op: "scalar", name: "gamma" }),
    /unknown scalar "gamma"/,
  ],
  [
    "an epilogue reading a tensor as a scalar",
    (k) => (k.epilogue.expr = { op: "scalar", name: "C" }),
    /unknown scalar "C"/,
  ],
  [
    "an epilogue reading operand A",
    (k) => (k.epilogue.expr = { op: "load", tensor: "A", rows: true, cols: true, batched: false }),
    /epilogue reads "A" of role A/,
  ],
  [
    "an epilogue matrix without a view",
    (k) => (k.epilogue.views = []),
    /epilogue matrix "C" has no view/,
  ],
  [
    "a broken tensor deep in the epilogue",
    (k) => (k.epilogue.expr = {
      op: "clamp",
      x: { op: "acc" },
      lo: { op: "const", value: 0 },
      hi: { op: "unary", fn: "relu", x: { op: "load", tensor: "nope", rows: true, cols: false } },
    }),
    /no tensor "nope"/,
  ],
  [
    "a threadblock with a zero extent",
    (k) => (k.schedule.threadblock = { m: 128, n: 0, k: 32 }),
    /threadblock has a non-positive extent/,
  ],
  ["a warp with a negative extent", (k) => (k.schedule.warp.k = -32), /warp has a non-positive/],
  ["zero stages", (k) => (k.schedule.stages = 0), /stages is 0/],
  ["fractional swizzle", (k) => (k.schedule.swizzle = 1.5), /swizzle is 1.5/],
  ["split-k of -1", (k) => (k.schedule.splitK = -1), /splitK is -1/],
];

Deno.test("verifyGemm: every checked example passes", () => {
  for (const name of examples()) {
    const text = Deno.readTextFileSync(new URL(`examples/${name}.gemm`, ROOT));
    for (const k of kernels(text)) verifyGemm(k);
  }
});

for (const [what, breakIt, message] of BROKEN) {
  Deno.test(`verifyGemm rejects ${what}`, () => {
    const k = copy(one(HGEMM));
    verifyGemm(k);
    breakIt(k);
    assert.throws(() => verifyGemm(k), (e: unknown) => {
      assert.ok(e instanceof Error);
      assert.match(e.message, /^GEMM IR verifier: kernel "hgemm": /);
      assert.match(e.message, message);
      return true;
    });
  });
}

Deno.test("verifyGemm rejects a batched GEMM whose output is not batched", () => {
  const k = copy(one(BATCHED));
  verifyGemm(k);
  k.problem.d.batched = false;
  assert.throws(() => verifyGemm(k), /the output of a batched GEMM is not batched/);
});

// ---- semantic facts ----------------------------------------------------------

Deno.test("roles follow the structure, whatever the index names and factor order", () => {
  const k = one(`kernel k {
  Q: f16[Seq, Dh] row
  Kt: f16[Dh, Ctx] col
  S: f32[Seq, Ctx] row
  S[query, key] = Kt[d, key] * Q[query, d]
}`);
  assert.deepEqual(k.problem.indices, { m: "query", n: "key", k: "d", batch: null });
  assert.equal(k.problem.a.tensor, "Q");
  assert.equal(k.problem.b.tensor, "Kt");
  assert.equal(k.problem.d.tensor, "S");
  assert.deepEqual([k.problem.m, k.problem.n, k.problem.k], [
    { kind: "sym", name: "Seq" },
    { kind: "sym", name: "Ctx" },
    { kind: "sym", name: "Dh" },
  ]);
  assert.deepEqual(k.params.map((p) => (p.kind === "tensor" ? p.role : "scalar")), [
    "A",
    "B",
    "D",
  ]);
});

Deno.test("layout: W[Cols, Inner] row read as W[c, p] is a column-major B", () => {
  const k = one(Deno.readTextFileSync(new URL("examples/bf16_gemm.gemm", ROOT)));
  assert.equal(k.problem.b.tensor, "W");
  assert.equal(k.problem.b.layout, "col");
  assert.equal(tensor(k, "W").layout, "row", "the declared layout is kept on the parameter");
  assert.equal(k.problem.a.layout, "row");
});

/** The normalised operands (`tensor:layout` for A, B, D) for declarations (`"M, K] col"`) and
 * accesses. */
function layouts(decl: [string, string, string], access: [string, string, string]): string {
  const k = one(`kernel k {
  A: f16[${decl[0]}
  B: f16[${decl[1]}
  D: f32[${decl[2]}
  D[${access[2]}] = A[${access[0]}] * B[${access[1]}]
}`);
  const { a, b, d } = k.problem;
  return [a, b, d].map((v) => `${v.tensor}:${v.layout}`).join(" ");
}

Deno.test("layout: declared layout plus index order gives the normalised layout", () => {
  const plain: [string, string, string] = ["m, k", "k, n", "m, n"];
  // A[K, M] col read as A[k, m]: K is contiguous, so A is row-major (k fastest).
  assert.equal(
    layouts(["K, M] col", "K, N] row", "M, N] row"], ["k, m", "k, n", "m, n"]),
    "A:row B:row D:row",
  );
  assert.equal(layouts(["M, K] col", "K, N] col", "M, N] col"], plain), "A:col B:col D:col");
  assert.equal(
    layouts(["M, K] row", "N, K] row", "M, N] row"], ["m, k", "n, k", "m, n"]),
    "A:row B:col D:row",
  );
  // A[K, M] row read as A[k, m]: M is contiguous, a column-major A; B[N, K] col: N contiguous.
  assert.equal(
    layouts(["K, M] row", "N, K] col", "M, N] col"], ["k, m", "n, k", "m, n"]),
    "A:col B:row D:col",
  );
  // No layout is row.
  assert.equal(layouts(["M, K]", "K, N]", "M, N]"], plain), "A:row B:row D:row");
  // The output's index order decides the roles: D[n, m] makes B's rows the M of the GEMM.
  assert.equal(
    layouts(["M, K] row", "N, K] row", "N, M] row"], ["m, k", "n, k", "n, m"]),
    "B:row A:col D:row",
  );
});

Deno.test("layout: epilogue matrices get a normalised view too", () => {
  const k = one(`kernel k {
  A: f16[M, K]
  B: f16[K, N] col
  C: f32[N, M] row
  E: f32[M, N] col
  D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n] + C[n, m] * E[m, n]
}`);
  assert.deepEqual(k.epilogue.views, [
    { tensor: "C", layout: "col", batched: false },
    { tensor: "E", layout: "col", batched: false },
  ]);
  assert.deepEqual(tensor(k, "C").role, "C");
});

const ACC: [string, string, string, string | null][] = [
  // operand type, output type, accumulator, mma operand type (null: same)
  ["f16", "f32", "f32", null],
  ["bf16", "f32", "f32", null],
  ["f32", "f32", "f32", "tf32"],
  ["tf32", "f32", "f32", "tf32"],
  ["f64", "f64", "f64", null],
  ["s8", "s32", "s32", null],
  ["u8", "s32", "s32", null],
  ["s4", "s32", "s32", null],
  ["u4", "s32", "s32", null],
];

Deno.test("accumulator defaults per operand type", () => {
  for (const [t, out, acc, mma] of ACC) {
    const k = one(`kernel k {
  A: ${t}[M, K]
  B: ${t}[K, N] col
  D: ${out}[M, N]
  D[m, n] = A[m, k] * B[k, n]
}`);
    assert.equal(k.math.acc, acc, t);
    assert.equal(k.math.mmaA, mma ?? t, t);
    assert.equal(k.math.mmaB, mma ?? t, t);
    assert.equal(k.math.mode, "tensor");
    assert.equal(k.math.op, "mul");
  }
  const b1 = one(Deno.readTextFileSync(new URL("examples/b1_xor.gemm", ROOT)));
  assert.equal(b1.math.acc, "s32");
  const f16acc = one(Deno.readTextFileSync(new URL("examples/hgemm_f16acc.gemm", ROOT)));
  assert.equal(f16acc.math.acc, "f16");
});

Deno.test("math mode for f32 operands: tf32, 3xtf32, f32 (SIMT)", () => {
  const src = (m: string) =>
    `kernel k {\n  A: f32[M, K]\n  B: f32[K, N] col\n  D: f32[M, N]\n  D[m, n] = A[m, k] * B[k, n]\n${m}}`;
  const none = one(src(""));
  assert.deepEqual([none.math.mode, none.math.mmaA], ["tensor", "tf32"]);
  const tf32 = one(src("  schedule { math tf32 }\n"));
  assert.deepEqual([tf32.math.mode, tf32.math.mmaA], ["tensor", "tf32"]);
  const x3 = one(src("  schedule { math 3xtf32 }\n"));
  assert.deepEqual([x3.math.mode, x3.math.mmaA, x3.math.mmaB], ["3xtf32", "tf32", "tf32"]);
  const simt = one(src("  schedule { math f32 }\n"));
  assert.deepEqual([simt.math.mode, simt.math.mmaA, simt.math.mmaB], ["simt", "f32", "f32"]);
});

/** The epilogue compute type of an s8 GEMM with the given statement and extra declarations. */
function intCompute(statement: string, decls = ""): string {
  return one(`kernel k {
  A: s8[M, K]
  B: s8[K, N] col
  D: s32[M, N]
${decls}  D[m, n] = ${statement}
}`).epilogue.compute;
}

Deno.test("epilogue compute type", () => {
  assert.equal(intCompute("A[m, k] * B[k, n]"), "s32");
  assert.equal(intCompute("2 * A[m, k] * B[k, n] + 1"), "s32");
  assert.equal(intCompute("relu(A[m, k] * B[k, n]) + b[n]", "  b: s32[N]\n"), "s32");
  assert.equal(intCompute("clamp(A[m, k] * B[k, n], -128, 127)"), "s32");
  assert.equal(intCompute("A[m, k] * B[k, n] + shift", "  shift: s32 = 3\n"), "s32");
  // Anything floating makes it f32.
  assert.equal(intCompute("A[m, k] * B[k, n] * 0.5"), "f32");
  assert.equal(intCompute("A[m, k] * B[k, n] * 1e1"), "f32");
  assert.equal(intCompute("scale * A[m, k] * B[k, n]", "  scale: f32\n"), "f32");
  assert.equal(intCompute("A[m, k] * B[k, n] + b[n]", "  b: f16[N]\n"), "f32");
  assert.equal(intCompute("s32(f32(A[m, k] * B[k, n]))"), "f32");
  assert.equal(intCompute("gelu(A[m, k] * B[k, n])"), "f32");
  // Float accumulators compute in f32, f64 in f64.
  assert.equal(one(HGEMM).epilogue.compute, "f32");
  const d = one(Deno.readTextFileSync(new URL("examples/dgemm.gemm", ROOT)));
  assert.equal(d.epilogue.compute, "f64");
  const u8 = one(Deno.readTextFileSync(new URL("examples/u8_gemm.gemm", ROOT)));
  assert.equal(u8.epilogue.compute, "s32");
});

Deno.test("batch: the leading output index, batched operands, broadcast operands", () => {
  const k = one(`kernel k {
  A: f16[L, M, K]
  B: f16[K, N] col
  C: f32[M, N]
  s: f32[L]
  D: f32[L, M, N]
  D[b, i, j] = A[b, i, p] * B[p, j] + C[i, j] * s[b]
}`);
  assert.deepEqual(k.problem.batch, { kind: "sym", name: "L" });
  assert.equal(k.problem.indices.batch, "b");
  assert.deepEqual([k.problem.a.batched, k.problem.b.batched, k.problem.d.batched], [
    true,
    false,
    true,
  ]);
  assert.deepEqual(k.epilogue.views, [{ tensor: "C", layout: "row", batched: false }]);
  assert.equal(tensor(k, "s").role, "bias");
  assert.match(printGemm(k), /epilogue f32: D = \(acc \+ \(C\[i, j\] \* s\[b\]\)\)/);
  const ex = one(BATCHED);
  assert.deepEqual(ex.problem.batch, { kind: "sym", name: "L" });
  assert.ok(ex.problem.a.batched && ex.problem.b.batched && ex.problem.d.batched);
  const plain = one(HGEMM);
  assert.equal(plain.problem.batch, null);
  assert.equal(plain.problem.indices.batch, null);
});

Deno.test("runtime dims: in order of first appearance in the declarations", () => {
  const k = one(`kernel k {
  bias: f32[N]
  B: f16[K, N] col
  A: f16[M, K]
  D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n] + bias[n]
}`);
  assert.deepEqual(k.dims, ["N", "K", "M"]);
  assert.deepEqual(k.params.map((p) => p.name), ["bias", "B", "A", "D"]);
  const lit = one(`kernel k {
  A: f16[128, K]
  B: f16[K, 64] col
  D: f32[128, 64]
  D[m, n] = A[m, k] * B[k, n]
}`);
  assert.deepEqual(lit.dims, ["K"]);
  assert.deepEqual(one(BATCHED).dims, ["L", "M", "K", "N"]);
});

Deno.test("parameters: declaration order, default alignment of 16 bytes, scalar defaults", () => {
  const k = one(`kernel k {
  A: s4[M, K]
  B: s4[K, N] col align 8
  bias: s32[N]
  D: s32[M, N]
  shift: s32 = -3
  scale: f32
  D[m, n] = scale * A[m, k] * B[k, n] + bias[n] + shift
}`);
  assert.deepEqual(
    k.params.map((p) =>
      p.kind === "tensor"
        ? `${p.name}:${p.dtype}:${p.layout}:${p.align}:${p.role}`
        : `${p.name}:${p.dtype}=${p.default}`
    ),
    [
      "A:s4:row:32:A",
      "B:s4:col:8:B",
      "bias:s32:row:4:bias",
      "D:s32:row:4:D",
      "shift:s32=-3",
      "scale:f32=null",
    ],
  );
  const widths: [string, number][] = [["f64", 2], ["f32", 4], ["f16", 8], ["s8", 16], ["b1", 128]];
  for (const [t, a] of widths) {
    const src = t === "b1"
      ? "kernel k {\n  A: b1[M, K]\n  B: b1[K, N] col\n  D: s32[M, N]\n  D[m, n] = popc(A[m, k] & B[k, n])\n}"
      : `kernel k {\n  A: ${t}[M, K]\n  B: ${t}[K, N] col\n  D: ${
        t === "s8" ? "s32" : t
      }[M, N]\n  D[m, n] = A[m, k] * B[k, n]\n}`;
    assert.equal(tensor(one(src), "A").align, a, t);
  }
});

Deno.test("target: the table's first by default, the schedule's, or the option's", () => {
  assert.equal(one(HGEMM).target, DEFAULT_TARGET);
  for (const s of TARGET_NAMES) {
    const src = HGEMM.replace("swizzle 8", `swizzle 8\n    target ${s}`);
    assert.equal(one(src).target, s);
    for (const o of TARGET_NAMES) {
      assert.equal(kernels(HGEMM, { target: o })[0]!.target, o);
      assert.equal(kernels(src, { target: o })[0]!.target, o, `${s} overridden by ${o}`);
    }
  }
});

Deno.test("spans: parameters and schedule lines point into the source", () => {
  const k = one(HGEMM);
  const at = (s: { start: number; end: number }) => HGEMM.slice(s.start, s.end);
  assert.equal(at(tensor(k, "B").span), "B: f16[K, N] col");
  assert.equal(at(k.scheduleSpans.threadblock!), "threadblock 128x256x32");
  assert.equal(at(k.scheduleSpans.swizzle!), "swizzle 8");
  assert.equal(k.scheduleSpans.split_k, undefined);
  assert.ok(at(k.span).startsWith("kernel hgemm {") && at(k.span).endsWith("}"));
  assert.equal(k.source.text, HGEMM);
  assert.equal(k.source.file, "t.gemm");
});

Deno.test("compile: --kernel selects one kernel of a file", () => {
  const text = Deno.readTextFileSync(new URL("examples/two_kernels.gemm", ROOT));
  const r = compile(text, { kernel: "gate_silu" });
  assert.ok(r.ok);
  assert.deepEqual(r.kernels.map((k) => k.name), ["gate_silu"]);
  assert.deepEqual(compile(text, { kernel: "nope" }).kernels, []);
});

Deno.test("printGemm: a negated contraction, casts and clamp print in full", () => {
  const k = one(`kernel k {
  A: s8[M, K]
  B: u8[K, N] col
  D: s8[M, N]
  lo: s32 = -128
  D[m, n] = s8(clamp(-(A[m, k] * B[k, n]) + 1, lo, 127))
}`);
  assert.match(printGemm(k), /epilogue s32: D = s8\(clamp\(\(-\(acc\) \+ 1\), lo, 127\)\)/);
  assert.match(printGemm(k), /math s8 x u8 -> s32, mma s8 x u8, mode tensor, op mul/);
  assert.match(printGemm(k), /scalar lo: s32 = -128/);
});

Deno.test("printSchedule: its pairs are schedule lines that parse back to the same schedule", () => {
  const src = (lines: string) =>
    `kernel k {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f16[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule {
${lines}
  }
}`;
  const schedules = [
    "",
    "    cache_a evict_first",
    "    cache_b evict_last",
    "    threadblock 128x128x64\n    stages 4\n    cache_b evict_normal\n    cache_a evict_last",
    "    target sm90\n    scheduler persistent\n    cluster 1x2\n    cache_b evict_first",
    "    target sm90\n    cluster 2\n    swizzle 4\n    cache_a evict_first",
    "    split_k 2\n    warp 64x64x32\n    mma 16x8x16\n    cache_b evict_first",
  ];
  for (const lines of schedules) {
    const k = one(src(lines));
    // The planned schedule too: the passes fill in what the source leaves out.
    const planned = compile(src(lines), { file: "t.gemm" });
    assert.ok(planned.ok, formatDiagnostics(planned.diagnostics, src(lines)));
    for (const s of [k.schedule, planned.kernels[0]!.planned.schedule]) {
      const printed = printSchedule(s).split(", ").filter((p) => !p.endsWith(" -"));
      const target = k.target === "sm90" ? ["    target sm90"] : [];
      const back = one(src([...printed.map((p) => `    ${p}`), ...target].join("\n")));
      assert.deepEqual(back.schedule, s, `${lines} printed as ${printed.join(", ")}`);
    }
  }
  assert.match(
    printSchedule(one(src(schedules[3]!)).schedule),
    /, cache_a evict_last, cache_b evict_normal$/,
  );
  assert.doesNotMatch(printSchedule(one(src("")).schedule), /cache/);
});
