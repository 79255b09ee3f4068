/**
 * The front end and the harness of structured-sparse A (DESIGN §6.3, issue 21):
 * `sparse` in the grammar (not a keyword), the checker's rules (E0127, goldens in
 * tests/testdata/bad/E0127_sparse_*), the metadata parameter right after A, the
 * sparse kernels compiling to mma.sp (tests/sparse_lower_test.ts has the rest), random inputs (kept
 * values and metadata, their byte sizes) and the reference (the decompressed A's
 * product), which must equal that of the same kernel made dense.
 */

import assert from "node:assert/strict";
import { check, compile, parse } from "../compiler.ts";
import type { GemmKernel, TensorParam } from "../ir/gemm.ts";
import { sparseMetaParam } from "../ir/gemm.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { type LaunchArgs, randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { sparseExtents, tensorShape, writeElem } from "../harness/tensor.ts";
import { checkSparsePattern, decompressSparse } from "../numerics/sparse_compress.ts";
import { sparseGroup, sparseMetaBytes, sparseValueBytes } from "../numerics/sparse.ts";
import { runFront } from "./fuzz_front.ts";
import { gemm } from "./_cli.ts";
import type { TensorDeclAst } from "../dsl/ast.ts";

/** A one-kernel program: `decl` declares A, `rest` the others and the statement. */
function program(aDecl: string, ab: string, d: string, extra = ""): string {
  return `kernel spmm {\n  A: ${aDecl}\n  B: ${ab}[K, N] col\n  D: ${d}[M, N]\n${extra}` +
    `  D[m, n] = A[m, k] * B[k, n]\n}\n`;
}

function checked(src: string): GemmKernel {
  const r = check(src, { file: "s.gemm" });
  assert.deepEqual(r.diagnostics, [], src);
  return r.kernels[0]!;
}

function tensorDecls(src: string): TensorDeclAst[] {
  const p = parse(src);
  assert.ok(p.ok, src);
  return p.ast.kernels[0]!.items.filter((i): i is TensorDeclAst => i.kind === "tensorDecl");
}

// ---- grammar ----

Deno.test("sparse grammar: after the layout, before strides and align; its span is the word", () => {
  const src = "kernel k {\n  A: f16[M, K] row sparse align 4\n  B: f16[K, N] sparse\n}";
  const [a, b] = tensorDecls(src);
  assert.equal(src.slice(a!.sparse!.start, a!.sparse!.end), "sparse");
  assert.equal(a!.align?.value, 4);
  assert.equal(src.slice(b!.sparse!.start, b!.sparse!.end), "sparse");
  assert.equal(b!.layout, null);
  const st = tensorDecls("kernel k { A: f16[M, K] row sparse strides(lda) align 8 }")[0]!;
  assert.ok(st.sparse !== null && st.strides !== null && st.align !== null);
  assert.equal(tensorDecls("kernel k { A: f16[M, K] row }")[0]!.sparse, null);
});

Deno.test("sparse grammar: not a keyword (a tensor, scalar or index named sparse)", () => {
  // After a declaration, "sparse:" and "sparse[" start the next item.
  const src = "kernel k {\n  A: f16[M, K] row\n  sparse: f16[K, N] col\n  s: f32 = 1.0\n" +
    "  D: f32[M, N]\n  sparse_x: f32\n  D[m, n] = A[m, sparse] * sparse[sparse, n]\n}";
  const ds = tensorDecls(src);
  assert.deepEqual(ds.map((d) => [d.name.text, d.sparse]), [["A", null], ["sparse", null], [
    "D",
    null,
  ]]);
  assert.deepEqual(check(src).diagnostics, []);
  const scalar = "kernel k {\n  A: f16[M, K] row sparse\n  sparse: f32\n  B: f16[K, N] col\n" +
    "  D: f32[M, N]\n  D[m, n] = sparse * A[m, k] * B[k, n]\n}";
  assert.equal(tensorDecls(scalar)[0]!.sparse !== null, true);
  assert.deepEqual(check(scalar).diagnostics, []);
});

Deno.test("sparse grammar: out of order or repeated is a syntax error", () => {
  for (
    const decl of [
      "f16[M, K] sparse row",
      "f16[M, K] align 8 sparse",
      "f16[M, K] strides(lda) sparse",
      "f16[M, K] sparse sparse",
    ]
  ) {
    const r = parse(`kernel k {\n  A: ${decl}\n}`);
    assert.ok(!r.ok, decl);
    assert.deepEqual(r.diagnostics.map((d) => d.code), ["E0001"], decl);
  }
});

// ---- checker ----

Deno.test("sparse check: A_meta right after A in the parameters, as the printer shows", () => {
  const src =
    "kernel spmm {\n  alpha: f32 = 1.0\n  X: bf16[M, K] row sparse\n  W: bf16[K, N] col\n" +
    "  C: f32[M, N]\n  Y: f32[M, N]\n  Y[m, n] = alpha * X[m, k] * W[k, n] + C[m, n]\n}";
  const k = checked(src);
  assert.deepEqual(k.params.map((p) => p.name), ["alpha", "X", "X_meta", "W", "C", "Y"]);
  const x = k.params[1] as TensorParam;
  const meta = sparseMetaParam(k)!;
  assert.equal(x.sparse, true);
  assert.equal(meta, k.params[2]);
  assert.deepEqual(
    [meta.kind, meta.role, meta.dtype, meta.dims, meta.layout],
    ["tensor", "A_meta", "bf16", x.dims, "row"],
  );
  assert.equal(src.slice(meta.span.start, meta.span.end), "sparse");
  assert.ok(!k.params.some((p) => p.kind === "tensor" && p.sparse === true && p.name !== "X"));
  const text = printGemm(k);
  assert.match(text, /tensor X: bf16\[M, K\] row sparse align 8 role A\n/);
  assert.match(text, /tensor X_meta: metadata of bf16\[M, K\] row role A_meta\n/);
  // A dense kernel has no metadata and prints no "sparse".
  const dense = checked(src.replace(" sparse", ""));
  assert.equal(sparseMetaParam(dense), null);
  assert.doesNotMatch(printGemm(dense), /sparse|A_meta/);
});

Deno.test("sparse check: every sparse type, a literal K a multiple of its group", () => {
  const cases: [string, string, string, number][] = [
    ["f16", "f16", "f32", 4],
    ["bf16", "bf16", "f32", 4],
    ["f32", "f32", "f32", 2],
    ["tf32", "tf32", "f32", 2],
    ["s8", "s8", "s32", 4],
    ["u8", "u8", "s32", 4],
    ["s4", "s4", "s32", 8],
    ["u4", "u4", "s32", 8],
  ];
  for (const [a, b, d, g] of cases) {
    assert.equal(sparseGroup(a).elements, g);
    // A literal K: a multiple of the group is legal, one less than that is not.
    const ok = check(
      program(`${a}[M, ${3 * g}] row sparse`, b, d).replace("[K, N]", `[${3 * g}, N]`),
    );
    assert.deepEqual(ok.diagnostics, [], a);
    const bad = check(
      program(`${a}[M, ${3 * g - 1}] row sparse`, b, d).replace("[K, N]", `[${3 * g - 1}, N]`),
    );
    assert.deepEqual(bad.diagnostics.map((x) => x.code), ["E0127"], a);
    assert.match(bad.diagnostics[0]!.message, new RegExp(`not a multiple of ${g}`));
  }
  for (const t of ["f64", "s32", "b1"]) {
    const r = check(program(`${t}[M, K] row sparse`, t, t === "f64" ? "f64" : "s32"));
    assert.deepEqual(r.diagnostics.map((x) => x.code), ["E0127"], t);
    assert.match(r.diagnostics[0]!.message, new RegExp(`is ${t}, which cannot be sparse`));
  }
});

Deno.test("sparse check: batched, and K-contiguous through a col declaration", () => {
  const batched = checked(
    "kernel k {\n  A: s8[L, M, K] row sparse\n  B: s8[L, K, N] col\n  D: s32[L, M, N]\n" +
      "  D[l, m, n] = A[l, m, k] * B[l, k, n]\n}",
  );
  assert.equal(sparseMetaParam(batched)?.dims.length, 3);
  // [K, M] col: K is contiguous, as [M, K] row.
  const col = checked(
    "kernel k {\n  A: f16[K, M] col sparse\n  B: f16[K, N] col\n  D: f32[M, N]\n" +
      "  D[m, n] = A[k, m] * B[k, n]\n}",
  );
  assert.equal(col.problem.a.layout, "row");
  // [K, M] row: M contiguous.
  const r = check(
    "kernel k {\n  A: f16[K, M] row sparse\n  B: f16[K, N] col\n  D: f32[M, N]\n" +
      "  D[m, n] = A[k, m] * B[k, n]\n}",
  );
  assert.deepEqual(r.diagnostics.map((d) => [d.code, d.line, d.column]), [["E0127", 2, 16]]);
});

Deno.test("sparse check: sparse on C or bias, and A_meta taken by a tensor or a dimension", () => {
  const onC = check(
    program("f16[M, K] row", "f16", "f32", "  C: f32[M, N] sparse\n")
      .replace("B[k, n]\n", "B[k, n] + C[m, n]\n"),
  );
  assert.deepEqual(onC.diagnostics.map((d) => d.code), ["E0127"]);
  assert.match(onC.diagnostics[0]!.message, /"C" is not an operand/);
  const onD = check(
    "kernel k {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  D: f16[M, N] sparse\n" +
      "  D[m, n] = f16(A[m, k] * B[k, n])\n}",
  );
  assert.deepEqual(onD.diagnostics.map((d) => [d.code, d.line, d.column]), [["E0127", 4, 16]]);
  assert.match(onD.diagnostics[0]!.message, /"D" is the output/);
  const tensor = check(
    program("f16[M, K] row sparse", "f16", "f32", "  A_meta: f32[N]\n")
      .replace("B[k, n]\n", "B[k, n] + A_meta[n]\n"),
  );
  assert.deepEqual(tensor.diagnostics.map((d) => [d.code, d.line, d.column]), [["E0127", 5, 3]]);
  const dim = check(
    "kernel k {\n  A: f16[A_meta, K] row sparse\n  B: f16[K, N] col\n  D: f32[A_meta, N]\n" +
      "  D[m, n] = A[m, k] * B[k, n]\n}",
  );
  assert.deepEqual(dim.diagnostics.map((d) => [d.code, d.line, d.column]), [["E0127", 2, 10]]);
});

// ---- through the passes ----

Deno.test("sparse compile: mma.sp in the PTX; the schedule is honoured; dense kernels of the file too", () => {
  const src = program("f16[M, K] row sparse", "f16", "f32") +
    program("f16[M, K] row", "f16", "f32").replace("spmm", "dense");
  const r = compile(src, { file: "s.gemm" });
  assert.deepEqual(r.diagnostics, []);
  assert.deepEqual(r.kernels.map((k) => k.name), ["spmm", "dense"]);
  const ptx = (name: string) => r.kernels.find((k) => k.name === name)!.ptx;
  assert.match(
    ptx("spmm"),
    /mma\.sp::ordered_metadata\.sync\.aligned\.m16n8k32\.row\.col\.f32\.f16\.f16\.f32 /,
  );
  assert.doesNotMatch(ptx("dense"), /mma\.sp/);
  // A schedule the sparse plan cannot honour is a schedule diagnostic, as for dense kernels.
  const sched = compile(
    program("s4[M, K] row sparse", "s4", "s32", "  schedule {\n    mma 16x8x32\n  }\n"),
  );
  assert.deepEqual(sched.diagnostics.map((d) => d.code), ["E0203"]);
  assert.match(sched.diagnostics[0]!.message, /No mma\.sp instruction 16x8x32 for s4 x s4 -> s32/);
});

Deno.test("sparse CLI: gemm check and gemm compile accept a sparse kernel", async () => {
  const dir = Deno.makeTempDirSync();
  const file = `${dir}/spmm.gemm`;
  Deno.writeTextFileSync(file, program("f16[M, K] row sparse", "f16", "f32"));
  const c = await gemm("check", file);
  assert.deepEqual([c.code, c.stderr, c.stdout], [0, "", ""]);
  const k = await gemm("compile", file, "--emit", "ptx");
  assert.equal(k.code, 0, k.stderr);
  assert.match(k.stdout, /mma\.sp::ordered_metadata\.sync/);
  // A checker error of a sparse kernel still fails gemm check.
  Deno.writeTextFileSync(file, program("f64[M, K] row sparse", "f64", "f64"));
  const bad = await gemm("check", file);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /error\[E0127\]/);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("sparse front: no crash when sparse is added to every declaration of every example", () => {
  const dir = new URL("../examples/", import.meta.url);
  let cases = 0;
  const verdicts = new Set<string>();
  const names = [...Deno.readDirSync(dir)].map((x) => x.name).filter((n) => n.endsWith(".gemm"));
  for (const name of names.sort()) {
    const text = Deno.readTextFileSync(new URL(name, dir));
    // After each declaration's brackets and layout.
    const re = /^(\s*\w+\s*:\s*\w+\[[^\]]*\](?:\s+(?:row|col))?)/gm;
    for (const m of text.matchAll(re)) {
      const at = m.index + m[1]!.length;
      const source = text.slice(0, at) + " sparse" + text.slice(at);
      const o = runFront({ kind: "sparse", source, options: {}, badOption: false }, Infinity);
      assert.notEqual(o.verdict, "crash", `${name}: ${o.detail}`);
      verdicts.add(`${o.verdict} ${o.codes.join(",")}`);
      cases++;
    }
  }
  assert.ok(cases > 40, `${cases} cases`);
  // Both outcomes occur: E0127 (not A, a type that cannot be sparse) and a sparse kernel compiled.
  assert.ok([...verdicts].some((v) => v.includes("E0127")), [...verdicts].join("; "));
  assert.ok([...verdicts].some((v) => v.startsWith("compiled")), [...verdicts].join("; "));
});

// ---- harness ----

/** The same arguments for the kernel made dense: A's decompressed matrix in A's dense layout. */
function denseArgs(sparse: GemmKernel, dense: GemmKernel, args: LaunchArgs): LaunchArgs {
  const a = sparse.params.find((p) => p.kind === "tensor" && p.sparse === true) as TensorParam;
  const meta = sparseMetaParam(sparse)!;
  const da = dense.params.find((p) => p.name === a.name) as TensorParam;
  const sizes = args.sizes;
  const sh = tensorShape(da, sizes);
  // [batch, M, K] row-major: A's dense storage too, K being contiguous in either layout.
  const { batch, rows, cols } = sparseExtents(a, sizes);
  const mb = args.tensors.get(meta.name)!;
  const full = decompressSparse(
    { values: args.tensors.get(a.name)!, meta: new Uint32Array(mb.slice().buffer) },
    a.dtype,
    rows,
    cols,
    { batch },
  );
  assert.ok(checkSparsePattern(full, a.dtype, rows, cols, { batch }).ok);
  const bytes = new Uint8Array(sh.bytes);
  for (let i = 0; i < full.length; i++) writeElem(bytes, a.dtype, i, full[i]!);
  const tensors = new Map(args.tensors);
  tensors.delete(meta.name);
  tensors.set(a.name, bytes);
  return { tensors, scalars: args.scalars, sizes };
}

const HARNESS_CASES: readonly { name: string; src: string; sizes: Record<string, number> }[] = [
  {
    name: "f16",
    src: program("f16[M, K] row sparse", "f16", "f32"),
    sizes: { M: 37, N: 23, K: 44 },
  },
  {
    name: "bf16 epilogue",
    src: program("bf16[M, K] row sparse", "bf16", "bf16", "  C: bf16[M, N]\n  alpha: f32\n")
      .replace("= A[m, k] * B[k, n]", "= bf16(alpha * A[m, k] * B[k, n] + C[m, n])"),
    sizes: { M: 19, N: 13, K: 52 },
  },
  {
    name: "tf32",
    src: program("tf32[M, K] row sparse", "tf32", "f32"),
    sizes: { M: 21, N: 17, K: 26 },
  },
  { name: "f32", src: program("f32[M, K] row sparse", "f32", "f32"), sizes: { M: 9, N: 5, K: 14 } },
  { name: "s8", src: program("s8[M, K] row sparse", "s8", "s32"), sizes: { M: 33, N: 29, K: 68 } },
  { name: "u8", src: program("u8[M, K] row sparse", "u8", "s32"), sizes: { M: 7, N: 11, K: 12 } },
  { name: "s4", src: program("s4[M, K] row sparse", "s4", "s32"), sizes: { M: 35, N: 18, K: 88 } },
  { name: "u4", src: program("u4[M, K] row sparse", "u4", "s32"), sizes: { M: 5, N: 6, K: 24 } },
  {
    name: "f16 batched",
    src: "kernel k {\n  A: f16[L, M, K] row sparse\n  B: f16[L, K, N] col\n  D: f16[L, M, N]\n" +
      "  D[l, m, n] = f16(A[l, m, k] * B[l, k, n])\n}",
    sizes: { L: 3, M: 17, N: 9, K: 36 },
  },
  {
    name: "s8 [K, M] col",
    src: "kernel k {\n  A: s8[K, M] col sparse\n  B: s8[K, N] col\n  D: s32[M, N]\n" +
      "  D[m, n] = A[k, m] * B[k, n]\n}",
    sizes: { M: 13, N: 7, K: 20 },
  },
];

for (const c of HARNESS_CASES) {
  Deno.test(`sparse harness: ${c.name}: the reference is the dense kernel's on the decompressed A`, () => {
    const k = checked(c.src);
    const dense = checked(c.src.replace(" sparse", ""));
    const a = k.params.find((p) => p.kind === "tensor" && p.sparse === true) as TensorParam;
    const meta = sparseMetaParam(k)!;
    const { M, K } = c.sizes as { M: number; K: number };
    const L = c.sizes["L"] ?? 1;
    const args = randomArgs(k, c.sizes, 20261202);
    // The buffers: kept values and canonical metadata, by numerics/sparse.ts's sizes.
    assert.equal(args.tensors.get(a.name)!.length, sparseValueBytes(M, K, a.dtype, L));
    assert.equal(args.tensors.get(meta.name)!.length, sparseMetaBytes(M, K, a.dtype, L));
    assert.equal(tensorShape(a, c.sizes).bytes, sparseValueBytes(M, K, a.dtype, L));
    assert.equal(tensorShape(meta, c.sizes).bytes, sparseMetaBytes(M, K, a.dtype, L));
    assert.deepEqual(
      [...args.tensors.keys()],
      k.params.filter((p) => p.kind === "tensor").map((p) => p.name),
    );
    const want = referenceGemm(dense, denseArgs(k, dense, args));
    const got = referenceGemm(k, args);
    assert.deepEqual(got, want);
    // Not a vacuous equality: the product has many distinct nonzero values.
    const nonzero = got.values.filter((v) => v !== 0).length;
    assert.ok(nonzero > got.values.length / 2, `${nonzero} nonzero of ${got.values.length}`);
    assert.ok(new Set(got.values).size > got.values.length / 4);
    // Another seed draws another A.
    const other = randomArgs(k, c.sizes, 7);
    assert.notDeepEqual(other.tensors.get(a.name), args.tensors.get(a.name));
  });
}

Deno.test("sparse harness: a runtime K that is not a multiple of the group is refused", () => {
  const k = checked(program("s4[M, K] row sparse", "s4", "s32"));
  assert.throws(() => randomArgs(k, { M: 8, N: 8, K: 20 }, 1), /not a multiple of 8/);
  const a = k.params[0] as TensorParam;
  assert.throws(() => tensorShape(a, { M: 8, N: 8, K: 20 }), RangeError);
});

Deno.test("sparse check: the default alignment follows the kept values' rows (K / 2)", () => {
  const alignOf = (decl: string, k: string) => {
    const src = program(decl, "f16", "f32").replace("B: f16[K, N]", `B: f16[${k}, N]`);
    return (checked(src).params[0] as TensorParam).align;
  };
  // K = 36: rows of 18 kept f16 (36 bytes): 4-byte aligned, 2 elements (dense: 4 elements).
  assert.equal(alignOf("f16[M, 36] row sparse", "36"), 2);
  assert.equal(alignOf("f16[M, 36] row", "36"), 4);
  // K = 32: 16 kept (32 bytes): the full 16 bytes.
  assert.equal(alignOf("f16[M, 32] row sparse", "32"), 8);
  assert.equal(alignOf("f16[M, K] row sparse align 2", "K"), 2);
});
