/**
 * Grouped kernels (DESIGN §6.2): one launch over a table of problems of
 * different sizes, on a persistent grid.
 *
 * - `simulateGrouped` agrees with the reference for every operand type the
 *   compiler has (f16, bf16, tf32, 3xtf32, f32 SIMT, f64, s8, u8, s4, u4, b1),
 *   over problem lists with a tiny problem, empty ones (M=0, N=0), a K=0 one
 *   (D is the epilogue of a zero accumulator) and sizes that are not tile
 *   multiples, on small tiles so that each of the 3 persistent blocks runs
 *   tiles of several problems; no hazards.
 * - Epilogues with shared scalars and per-problem extra tensors (C, bias), a
 *   strided grouped kernel (each problem its own strides, gaps left poisoned),
 *   a kernel with a literal K.
 * - The table layout, the kernel-IR and GEMM-IR printing of a grouped kernel.
 * - Mutations that the checks must catch: a wrong `tiles_before`, two problems'
 *   D addresses swapped, a short count, a wrong stride; and an empty problem
 *   whose tensors point at a sentinel buffer that stays untouched.
 * - `gemm simulate --groups` on the command line, and its usage errors.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import { simulateGrouped } from "../harness/simulate_grouped.ts";
import { type SimBuffer, simBufferAddress, simulate } from "../backends/sim/mod.ts";
import { groupTable } from "../backends/ptx/group_table.ts";
import { GROUP_PARAMS, tensorParam } from "../ir/gemm.ts";
import { groupedGrid, problemTiles } from "../ir/kernel.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { type LaunchArgs, randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { compareOutput, gapWrites } from "../harness/compare.ts";
import { resolveSizes } from "../harness/sizes.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { printKernel } from "../ir/print_kernel.ts";
import { assertNoStackTrace, gemm, gemmAll } from "./_cli.ts";
import { moeProblems, planGroupedLaunch } from "../backends/cuda/grouped.ts";
import { LaunchError } from "../backends/cuda/bind.ts";
import { Rng } from "../numerics/random.ts";

type Sizes = Record<string, number>;

/** A grouped kernel `g` with these declarations, statement and schedule lines. */
function grouped(decls: readonly string[], stmt: string, sched: readonly string[]): string {
  return `kernel g grouped {\n${decls.map((d) => `  ${d}\n`).join("")}\n  ${stmt}\n\n` +
    `  schedule {\n${sched.map((l) => `    ${l}\n`).join("")}  }\n}\n`;
}

function compileOne(src: string): CompiledKernel {
  const r = compile(src, { file: "grouped.gemm" });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  assert.equal(r.kernels.length, 1);
  const ck = r.kernels[0]!;
  assert.ok(ck.kernel.group !== undefined, "a grouped kernel has a table layout");
  return ck;
}

/** Simulates, and asserts every problem agrees, no hazard, and the grid is persistent. */
function expectAgrees(
  ck: CompiledKernel,
  problems: readonly Sizes[],
  seed: number,
  scalars: Readonly<Record<string, number>> = {},
) {
  const rep = simulateGrouped(ck, problems, { seed, scalars });
  const bad = rep.problems.flatMap((p, i) =>
    p.ok ? [] : [
      `problem ${i} ${
        JSON.stringify(p.sizes)
      }: ${p.comparison.overBound} of ${p.comparison.elements} ` +
      `over the bound, first ${JSON.stringify(p.comparison.first)}, ${p.gapWrites} gap writes`,
    ]
  );
  assert.deepEqual(bad, [], ck.name);
  assert.equal(rep.sim.hazardCount, 0, JSON.stringify(rep.sim.hazards));
  assert.ok(rep.ok);
  assert.equal(rep.problems.length, problems.length);
  // Tiles and elements per problem; the persistent grid of 3 blocks over more tiles.
  let tiles = 0;
  for (const [i, p] of rep.problems.entries()) {
    assert.equal(p.tiles, problemTiles(ck.kernel.grid, p.sizes), `problem ${i} tiles`);
    tiles += p.tiles;
    const d = ck.gemm.problem;
    const m = d.m.kind === "const" ? d.m.value : p.sizes[d.m.name]!;
    const n = d.n.kind === "const" ? d.n.value : p.sizes[d.n.name]!;
    assert.equal(p.comparison.elements, m * n, `problem ${i} elements`);
    if (m * n === 0) assert.equal(p.tiles, 0);
  }
  assert.equal(rep.totalTiles, tiles);
  assert.deepEqual(rep.grid, groupedGrid(tiles, 3));
  return rep;
}

// ---- every operand type --------------------------------------------------------------------

interface TypeCase {
  readonly name: string;
  readonly decls: readonly string[];
  readonly stmt: string;
  readonly sched: readonly string[];
  /** The tiny problem (the least sizes the alignments allow). */
  readonly tiny: Sizes;
  /** K of the odd problems: a multiple of the operands' alignment. */
  readonly k: readonly [number, number];
  /** N multiple (D's alignment). */
  readonly nStep?: number;
  readonly mma?: RegExp;
  readonly scalars?: Record<string, number>;
}

const GEMM = "D[m, n] = A[m, k] * B[k, n]";
const T32 = ["threadblock 32x32x32", "warp 32x32x32"];

const TYPES: readonly TypeCase[] = [
  {
    name: "f16 -> f32 (align 1)",
    decls: ["A: f16[M, K] row align 1", "B: f16[K, N] col align 1", "D: f32[M, N] row align 1"],
    stmt: GEMM,
    sched: T32,
    tiny: { M: 1, N: 1, K: 1 },
    k: [37, 3],
    mma: /m16n8k16\.f16\.f32/,
  },
  {
    name: "f16 accumulate f16, A col-major",
    decls: ["A: f16[M, K] col align 1", "B: f16[K, N] col", "D: f16[M, N] row"],
    stmt: GEMM,
    sched: [...T32, "accumulate f16"],
    tiny: { M: 1, N: 8, K: 8 },
    k: [40, 8],
    nStep: 8,
    mma: /m16n8k16\.f16\.f16/,
  },
  {
    name: "bf16 -> bf16 (default alignment 8)",
    decls: ["A: bf16[M, K] row", "B: bf16[K, N] col", "D: bf16[M, N] row"],
    stmt: "D[m, n] = bf16(alpha * A[m, k] * B[k, n])",
    sched: T32,
    tiny: { M: 1, N: 8, K: 8 },
    k: [56, 8],
    nStep: 8,
    mma: /m16n8k16\.bf16\.f32/,
  },
  {
    name: "tf32",
    decls: ["A: f32[M, K] row align 1", "B: f32[K, N] row align 1", "D: f32[M, N] row align 1"],
    stmt: GEMM,
    sched: [...T32, "math tf32"],
    tiny: { M: 1, N: 1, K: 1 },
    k: [37, 5],
    mma: /m16n8k8\.tf32\.f32/,
  },
  {
    name: "3xtf32",
    decls: ["A: f32[M, K] col align 1", "B: f32[K, N] col align 1", "D: f32[M, N] row align 1"],
    stmt: GEMM,
    sched: [...T32, "math 3xtf32"],
    tiny: { M: 1, N: 1, K: 1 },
    k: [37, 5],
    mma: /m16n8k8\.tf32\.f32/,
  },
  {
    name: "f32 SIMT",
    decls: ["A: f32[M, K] row align 1", "B: f32[K, N] col align 1", "D: f32[M, N] row align 1"],
    stmt: GEMM,
    sched: [...T32, "math f32"],
    tiny: { M: 1, N: 1, K: 1 },
    k: [37, 5],
  },
  {
    name: "f64",
    decls: ["A: f64[M, K] row align 1", "B: f64[K, N] col align 1", "D: f64[M, N] col align 1"],
    stmt: GEMM,
    sched: ["threadblock 32x32x16", "warp 16x16x16"],
    tiny: { M: 1, N: 1, K: 1 },
    k: [37, 3],
    mma: /m8n8k4\.f64\.f64/,
  },
  {
    name: "s8 -> s32",
    decls: ["A: s8[M, K] row align 1", "B: s8[K, N] col align 1", "D: s32[M, N] row align 1"],
    stmt: GEMM,
    sched: ["threadblock 32x32x64", "warp 32x32x64"],
    tiny: { M: 1, N: 1, K: 1 },
    k: [67, 3],
    mma: /m16n8k32\.s8\.s32/,
  },
  {
    name: "u8 x s8 -> u8 with a clamp and a shift",
    decls: [
      "A: u8[M, K] row align 1",
      "B: s8[K, N] col align 1",
      "D: u8[M, N] row align 1",
      "shift: s32 = 0",
    ],
    stmt: "D[m, n] = u8(clamp(A[m, k] * B[k, n] + shift, 0, 255))",
    sched: ["threadblock 32x32x64", "warp 32x32x64"],
    tiny: { M: 1, N: 1, K: 1 },
    k: [67, 3],
    scalars: { shift: 517 },
  },
  {
    name: "s4 -> s32 (align 2)",
    decls: ["A: s4[M, K] row align 2", "B: s4[K, N] col align 2", "D: s32[M, N] row align 1"],
    stmt: GEMM,
    sched: ["threadblock 32x32x128", "warp 32x32x128"],
    tiny: { M: 1, N: 1, K: 2 },
    k: [130, 6],
    mma: /m16n8k64\.s4\.s32/,
  },
  {
    name: "u4 -> s32 with a bias (align 2)",
    decls: [
      "A: u4[M, K] row align 2",
      "B: u4[K, N] col align 2",
      "bias: s32[N]",
      "D: s32[M, N] row align 1",
    ],
    stmt: "D[m, n] = A[m, k] * B[k, n] + bias[n]",
    sched: ["threadblock 32x32x128", "warp 32x32x128"],
    tiny: { M: 1, N: 1, K: 2 },
    k: [130, 6],
  },
  {
    name: "b1 xor-popc (align 8)",
    decls: ["A: b1[M, K] row align 8", "B: b1[K, N] col align 8", "D: s32[M, N] row align 1"],
    stmt: "D[m, n] = popc(A[m, k] ^ B[k, n])",
    sched: ["threadblock 32x32x512", "warp 32x32x512"],
    tiny: { M: 1, N: 1, K: 8 },
    k: [520, 24],
    mma: /b1/,
  },
  {
    name: "b1 and-popc (align 8)",
    decls: ["A: b1[M, K] row align 8", "B: b1[K, N] col align 8", "D: s32[M, N] row align 1"],
    stmt: "D[m, n] = popc(A[m, k] & B[k, n])",
    sched: ["threadblock 32x32x512", "warp 32x32x512"],
    tiny: { M: 1, N: 1, K: 8 },
    k: [24, 8],
    mma: /b1/,
  },
];

/** The problem list of a type: tiny, M=0, N=0, K=0 and two odd ones. */
function problemsOf(t: TypeCase): Sizes[] {
  const n = (x: number) => Math.ceil(x / (t.nStep ?? 1)) * (t.nStep ?? 1);
  return [
    t.tiny,
    { M: 0, N: n(40), K: t.k[0] },
    { M: 70, N: n(40), K: t.k[0] },
    { M: 9, N: 0, K: t.k[1] },
    { M: 5, N: n(7), K: 0 },
    { M: 33, N: n(65), K: t.k[1] },
  ];
}

for (const [i, t] of TYPES.entries()) {
  Deno.test(`simulateGrouped: ${t.name}: tiny, empty, K=0 and odd problems agree`, () => {
    const decls = t.stmt.includes("alpha") ? [...t.decls, "alpha: f32 = 1.0"] : t.decls;
    const ck = compileOne(grouped(decls, t.stmt, t.sched));
    if (t.mma !== undefined) assert.match(ck.planned.plan.mma!.shape, t.mma);
    const rep = expectAgrees(ck, problemsOf(t), 101 + 13 * i, t.scalars ?? {});
    assert.ok(rep.totalTiles > 3 * 2, "each block runs several tiles");
    // The K=0 problem's output is written (the epilogue of a zero accumulator).
    assert.equal(rep.problems[4]!.comparison.elements, 5 * (t.nStep === 8 ? 8 : 7));
  });
}

// ---- epilogues, strides, literal dims ------------------------------------------------------

Deno.test("simulateGrouped: alpha/beta with a C matrix and a bias vector per problem", () => {
  const ck = compileOne(grouped(
    [
      "A: f16[M, K] row",
      "B: f16[K, N] col",
      "C: f32[M, N] row align 1",
      "bias: f32[N]",
      "D: f32[M, N] row align 1",
      "alpha: f32 = 1.0",
      "beta: f32 = 1.0",
    ],
    "D[m, n] = alpha * A[m, k] * B[k, n] + beta * C[m, n] + bias[n]",
    T32,
  ));
  const fields = ck.kernel.group!.fields.map((f) => f.name);
  assert.deepEqual(fields, ["A", "B", "C", "bias", "D", "M", "K", "N", "tiles_before"]);
  // Scalars stay kernel parameters, after the table and the count.
  assert.deepEqual(ck.kernel.params.map((p) => `${p.name}:${p.kind}`), [
    `${GROUP_PARAMS.table}:table`,
    `${GROUP_PARAMS.count}:count`,
    "alpha:scalar",
    "beta:scalar",
  ]);
  const problems = [
    { M: 45, N: 33, K: 40 },
    { M: 0, N: 33, K: 40 },
    { M: 3, N: 70, K: 8 },
    { M: 64, N: 1, K: 0 },
    { M: 31, N: 17, K: 72 },
  ];
  const rep = expectAgrees(ck, problems, 77, { alpha: 0.625, beta: -1.375 });
  for (const p of rep.problems) {
    assert.equal(p.args.scalars.get("alpha"), 0.625);
    assert.equal(p.args.scalars.get("beta"), -1.375);
  }
  // Each problem had its own C and bias (different random values).
  const c0 = rep.problems[0]!.args.tensors.get("bias")!;
  const c2 = rep.problems[2]!.args.tensors.get("bias")!;
  assert.notDeepEqual(c0.slice(0, 4), c2.slice(0, 4));
});

const STRIDED = grouped(
  [
    "A: f16[M, K] row strides(lda)",
    "B: f16[K, N] col strides(ldb)",
    "D: f32[M, N] row strides(ldd)",
  ],
  GEMM,
  T32,
);

Deno.test("simulateGrouped: strided views, each problem its own strides, gaps untouched", () => {
  const ck = compileOne(STRIDED);
  const layout = ck.kernel.group!;
  assert.deepEqual(
    layout.fields.filter((f) => f.kind === "stride").map((f) => `${f.name}:${f.ptx}`),
    ["lda:u64", "ldb:u64", "ldd:u64"],
  );
  const problems = [
    { M: 40, N: 24, K: 32, lda: 48, ldb: 40, ldd: 28 },
    { M: 0, N: 24, K: 32, lda: 32, ldb: 32, ldd: 24 },
    { M: 7, N: 44, K: 16, lda: 24, ldb: 16, ldd: 52 },
    { M: 33, N: 12, K: 64, lda: 72, ldb: 64, ldd: 12 },
  ];
  const rep = expectAgrees(ck, problems, 31);
  for (const [i, p] of rep.problems.entries()) {
    assert.equal(p.gapWrites, 0, `problem ${i}`);
    assert.equal(p.sizes["ldd"], problems[i]!.ldd);
  }
  // D's gaps exist (ldd > N), and are still poison: 0xff bytes.
  const d = rep.problems[2]!.output;
  assert.equal(d.length, (6 * 52 + 44) * 4);
  const gap = d.slice(44 * 4, 52 * 4);
  assert.ok(gap.every((b) => b === 0xff));
});

Deno.test("simulateGrouped: a literal K (only M and N in the table)", () => {
  const ck = compileOne(grouped(
    ["X: bf16[M, 48] row", "W: bf16[48, N] col", "Y: f32[M, N] row align 1"],
    "Y[m, n] = X[m, k] * W[k, n]",
    T32,
  ));
  assert.deepEqual(
    ck.kernel.group!.fields.map((f) => `${f.name}@${f.offset}:${f.ptx}`),
    ["X@0:u64", "W@8:u64", "Y@16:u64", "M@24:u32", "N@28:u32", "tiles_before@32:u32"],
  );
  assert.equal(ck.kernel.group!.entryBytes, 40);
  expectAgrees(ck, [{ M: 1, N: 1 }, { M: 0, N: 5 }, { M: 70, N: 33 }, { M: 12, N: 0 }], 9);
});

Deno.test("simulateGrouped: no problems, and only empty problems, run no tile", () => {
  const ck = compileOne(grouped(
    ["A: f16[M, K] row", "B: f16[K, N] col", "D: f32[M, N] row align 1"],
    GEMM,
    T32,
  ));
  const none = simulateGrouped(ck, [], { seed: 3 });
  assert.ok(none.ok);
  assert.equal(none.totalTiles, 0);
  assert.deepEqual(none.grid, [1, 1, 1]);
  assert.equal(none.sim.stats.byKind["mma"] ?? 0, 0);
  const empty = simulateGrouped(ck, [{ M: 0, N: 8, K: 8 }, { M: 8, N: 0, K: 8 }], { seed: 3 });
  assert.ok(empty.ok);
  assert.equal(empty.totalTiles, 0);
  assert.equal(empty.sim.stats.globalBytesWritten, 0);
});

Deno.test("simulateGrouped: refuses an ordinary kernel, misaligned sizes, too much work", () => {
  const ordinary = compile(
    "kernel k { A: f16[M, K] row\n B: f16[K, N] col\n D: f32[M, N] row\n D[m, n] = A[m, k] * B[k, n] }",
  ).kernels[0]!;
  assert.throws(() => simulateGrouped(ordinary, [{ M: 8, N: 8, K: 8 }]), /is not grouped/);
  const ck = compileOne(grouped(
    ["A: f16[M, K] row", "B: f16[K, N] col", "D: f32[M, N] row align 1"],
    GEMM,
    T32,
  ));
  assert.throws(
    () => simulateGrouped(ck, [{ M: 8, N: 8, K: 8 }, { M: 8, N: 8, K: 7 }]),
    /^Error: Problem 1: Tensor "A" declares align 8/,
  );
  assert.throws(
    () => simulateGrouped(ck, [{ M: 64, N: 64, K: 64 }], { maxWork: 1000 }),
    /Simulation too large/,
  );
});

// ---- printing ------------------------------------------------------------------------------

Deno.test("printing: the GEMM IR says grouped, the kernel IR shows the table", () => {
  const ck = compileOne(STRIDED);
  const g = printGemm(ck.gemm);
  assert.ok(g.startsWith("gemm @g grouped target sm80 {\n"), g.split("\n")[0]);
  assert.equal(ck.gemmText, g);
  const k = printKernel(ck.kernel);
  assert.equal(ck.kernelText, k);
  const lines = k.split("\n");
  // The header keeps the ordinary form; the parameters are the table and the count.
  assert.ok(lines[0]!.startsWith(
    `kernel @g target sm80 (${GROUP_PARAMS.table}: u64 table, ${GROUP_PARAMS.count}: u32 count)`,
  ));
  const layout = ck.kernel.group!;
  assert.equal(
    lines[2],
    `  group table: ${layout.entryBytes}-byte entries (` +
      layout.fields.map((f) => `${f.name}: ${f.ptx} ${f.kind} @${f.offset}`).join(", ") + ")",
  );
  assert.match(
    lines[2]!,
    /\(A: u64 tensor @0, B: u64 tensor @8, D: u64 tensor @16, lda: u64 stride @24,/,
  );
  // An ordinary kernel prints neither.
  const o = compile(
    "kernel k { A: f16[M, K] row\n B: f16[K, N] col\n D: f32[M, N] row\n D[m, n] = A[m, k] * B[k, n] }",
  ).kernels[0]!;
  assert.ok(o.gemmText.startsWith("gemm @k target sm80 {"));
  assert.doesNotMatch(o.kernelText, /grouped|group table/);
});

// ---- mutations: the checks can fail --------------------------------------------------------

/** One problem's inputs and its D buffer's place. */
interface Built {
  readonly args: LaunchArgs[];
  readonly buffers: SimBuffer[];
  readonly addresses: Record<string, number>[];
}

/** Random inputs for each problem, in simulator buffers (as simulateGrouped lays them out). */
function build(ck: CompiledKernel, problems: readonly Sizes[], seed: number): Built {
  const args = problems.map((p, i) =>
    randomArgs(ck.gemm, resolveSizes(ck.gemm, p), seed + 31 * i, {})
  );
  const buffers: SimBuffer[] = [];
  const addresses = args.map((a) => {
    const at: Record<string, number> = {};
    for (const [name, bytes] of a.tensors) {
      at[name] = simBufferAddress(ck.kernel, buffers.length);
      buffers.push({ bytes, name });
    }
    return at;
  });
  return { args, buffers, addresses };
}

/** Runs the kernel over a table (as built, or altered) and says which problems agree. */
function runTable(
  ck: CompiledKernel,
  b: Built,
  table: Uint8Array,
  count: number,
  totalTiles: number,
): boolean[] {
  const launch: Record<string, { bytes: Uint8Array } | number> = {
    [GROUP_PARAMS.table]: { bytes: table },
    [GROUP_PARAMS.count]: count,
  };
  for (const [n, v] of b.args[0]!.scalars) launch[n] = v;
  const sim = simulate(ck.kernel, {
    grid: groupedGrid(totalTiles, 3),
    args: launch,
    buffers: b.buffers,
  }, { hazards: true });
  assert.equal(sim.hazardCount, 0);
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  return b.args.map((a) => {
    const ref = referenceGemm(ck.gemm, a);
    const out = a.tensors.get(d.name)!;
    const poison = DTYPE_INFO[d.dtype].float ? 0xff : 0x5a;
    return compareOutput(out, d.dtype, ref).ok && gapWrites(out, d.dtype, ref, poison) === 0;
  });
}

const MUT = grouped(
  ["A: f16[M, K] row", "B: f16[K, N] col", "D: f32[M, N] row align 1"],
  GEMM,
  T32,
);
const MUT_PROBLEMS = [
  { M: 40, N: 40, K: 24 },
  { M: 0, N: 16, K: 8 },
  { M: 40, N: 40, K: 24 },
  { M: 9, N: 70, K: 16 },
];

function tableOf(ck: CompiledKernel, b: Built, problems: readonly Sizes[]) {
  return groupTable(
    ck.kernel.group!,
    ck.kernel.grid,
    problems.map((_p, i) => ({ sizes: b.args[i]!.sizes, addresses: b.addresses[i]! })),
  );
}

function fieldOffset(ck: CompiledKernel, name: string): number {
  const f = ck.kernel.group!.fields.find((x) => x.name === name);
  assert.ok(f !== undefined, name);
  return f.offset;
}

Deno.test("mutation: the table as built agrees (the baseline of the mutations)", () => {
  const ck = compileOne(MUT);
  const b = build(ck, MUT_PROBLEMS, 501);
  const t = tableOf(ck, b, MUT_PROBLEMS);
  assert.equal(t.totalTiles, 4 + 0 + 4 + 3);
  assert.deepEqual(runTable(ck, b, t.bytes, MUT_PROBLEMS.length, t.totalTiles), [
    true,
    true,
    true,
    true,
  ]);
});

Deno.test("mutation: a wrong tiles_before is caught", () => {
  const ck = compileOne(MUT);
  // Problems 0 and 2: 2x2 tiles each, problem 3: 1x3 tiles; tiles_before 0, 4, 4, 8.
  const mutated = (entry: number, tilesBefore: number, seed: number) => {
    const at = entry * ck.kernel.group!.entryBytes + fieldOffset(ck, "tiles_before");
    const b = build(ck, MUT_PROBLEMS, seed);
    const t = tableOf(ck, b, MUT_PROBLEMS);
    const dv = new DataView(t.bytes.buffer);
    assert.equal(dv.getUint32(at, true), [0, 4, 4, 8][entry]);
    dv.setUint32(at, tilesBefore, true);
    return runTable(ck, b, t.bytes, MUT_PROBLEMS.length, t.totalTiles);
  };
  // Problem 3 from tile 7: problem 2's last tile never runs (problem 3's tiles all run,
  // and its one past the end is skipped by the kernel's range guard).
  assert.deepEqual(mutated(3, 7, 502), [true, true, false, true]);
  // Problem 2 from tile 3: problem 0's last tile never runs.
  assert.deepEqual(mutated(2, 3, 512), [false, true, true, true]);
});

Deno.test("mutation: two problems' D addresses swapped are caught", () => {
  const ck = compileOne(MUT);
  const b = build(ck, MUT_PROBLEMS, 503);
  const t = tableOf(ck, b, MUT_PROBLEMS);
  const dv = new DataView(t.bytes.buffer);
  const e = ck.kernel.group!.entryBytes;
  const off = fieldOffset(ck, "D");
  const d0 = dv.getBigUint64(off, true);
  const d2 = dv.getBigUint64(2 * e + off, true);
  assert.notEqual(d0, d2);
  dv.setBigUint64(off, d2, true);
  dv.setBigUint64(2 * e + off, d0, true);
  assert.deepEqual(runTable(ck, b, t.bytes, MUT_PROBLEMS.length, t.totalTiles), [
    false,
    true,
    false,
    true,
  ]);
});

Deno.test("mutation: a count short of the table leaves the last problem's D poisoned", () => {
  const ck = compileOne(MUT);
  const b = build(ck, MUT_PROBLEMS, 504);
  const t = tableOf(ck, b, MUT_PROBLEMS);
  const ok = runTable(ck, b, t.bytes, MUT_PROBLEMS.length - 1, t.totalTiles);
  assert.deepEqual(ok, [true, true, true, false]);
  const d = b.args[3]!.tensors.get("D")!;
  assert.ok(d.every((x) => x === 0xff), "never written");
});

Deno.test("mutation: a wrong stride in the table writes into D's gaps, and is caught", () => {
  const ck = compileOne(STRIDED);
  const problems = [
    { M: 20, N: 24, K: 32, lda: 40, ldb: 32, ldd: 28 },
    { M: 7, N: 12, K: 16, lda: 16, ldb: 24, ldd: 16 },
  ];
  const b = build(ck, problems, 505);
  const t = tableOf(ck, b, problems);
  assert.deepEqual(runTable(ck, b, t.bytes, 2, t.totalTiles), [true, true]);
  const b2 = build(ck, problems, 505);
  const t2 = tableOf(ck, b2, problems);
  const dv = new DataView(t2.bytes.buffer);
  dv.setBigUint64(fieldOffset(ck, "ldd"), 24n, true); // problem 0 written with rows 24 apart
  assert.deepEqual(runTable(ck, b2, t2.bytes, 2, t2.totalTiles), [false, true]);
  const d = tensorParam(ck.gemm, "D");
  const ref = referenceGemm(ck.gemm, b2.args[0]!);
  assert.ok(gapWrites(b2.args[0]!.tensors.get("D")!, d.dtype, ref, 0xff) > 0);
});

Deno.test("an empty problem's tensors are never touched, even when they point at memory", () => {
  const ck = compileOne(MUT);
  const b = build(ck, MUT_PROBLEMS, 506);
  // A sentinel buffer of poison for the empty problem 1's A, B and D.
  const sentinel = new Uint8Array(4096).fill(0x5a);
  const at = simBufferAddress(ck.kernel, b.buffers.length);
  b.buffers.push({ bytes: sentinel, name: "sentinel" });
  const problems = MUT_PROBLEMS.map((_p, i) => ({
    sizes: b.args[i]!.sizes,
    addresses: i === 1 ? { A: at, B: at, D: at } : b.addresses[i]!,
  }));
  const t = groupTable(ck.kernel.group!, ck.kernel.grid, problems);
  // Its tiles_before is the next problem's: it owns no tile.
  const dv = new DataView(t.bytes.buffer);
  const e = ck.kernel.group!.entryBytes;
  const tb = fieldOffset(ck, "tiles_before");
  assert.equal(dv.getUint32(e + tb, true), dv.getUint32(2 * e + tb, true));
  assert.deepEqual(runTable(ck, b, t.bytes, 4, t.totalTiles), [true, true, true, true]);
  assert.ok(sentinel.every((x) => x === 0x5a), "the empty problem's memory is untouched");
});

// ---- the command line ----------------------------------------------------------------------

const MOE = "examples/moe.gemm";
const MOE_GROUPS = "M=100,N=72,K=64;M=0,N=64,K=64;M=7,N=136,K=40";

Deno.test("gemm simulate --groups: text and --json reports of examples/moe.gemm", async () => {
  const [text, json] = await gemmAll([
    ["simulate", MOE, "--groups", MOE_GROUPS],
    ["simulate", MOE, "--groups", MOE_GROUPS, "--json", "--seed", "7"],
  ]);
  assertNoStackTrace(text!, "simulate --groups");
  assert.equal(text!.code, 0, text!.stdout + text!.stderr);
  assert.equal(text!.stderr, "");
  assert.match(text!.stdout, /^moe: AGREES \(3 problems\) with the reference \(\d+ tiles; /);
  assert.match(text!.stdout, /^ {2}problem 0 \(M=100, K=64, N=72; \d+ tiles\): agrees; /m);
  assert.match(text!.stdout, /^ {2}problem 1 \(M=0, K=64, N=64; 0 tiles\): agrees; 0 of 0 /m);
  assert.match(text!.stdout, /^ {2}problem 2 \(M=7, K=40, N=136; \d+ tiles\): agrees; /m);
  assert.match(text!.stdout, /^ {2}hazards: none$/m);
  assert.equal(json!.code, 0, json!.stderr);
  const j = JSON.parse(json!.stdout);
  assert.equal(j.reports.length, 1);
  const r = j.reports[0];
  assert.equal(r.kernel, "moe");
  assert.equal(r.agree, true);
  assert.equal(r.hazardCount, 0);
  assert.deepEqual(
    r.problems.map((p: { sizes: Sizes }) => p.sizes),
    [{ M: 100, K: 64, N: 72 }, { M: 0, K: 64, N: 64 }, { M: 7, K: 40, N: 136 }],
  );
  assert.deepEqual(r.problems.map((p: { elements: number }) => p.elements), [7200, 0, 952]);
  assert.equal(r.problems[1].tiles, 0);
  assert.equal(
    r.totalTiles,
    r.problems.reduce((s: number, p: { tiles: number }) => s + p.tiles, 0),
  );
});

Deno.test("gemm simulate --groups: usage errors exit 2 with one line", async () => {
  const cases: [string[], RegExp][] = [
    [["examples/hgemm.gemm", "--groups", "M=8,N=8,K=8"], /--groups is for grouped kernels/],
    [[MOE], /--groups is required: kernel "moe" is grouped/],
    [[MOE, "--size", "M=8,N=8,K=8"], /--groups is required/],
    [[MOE, "--groups", "M=1,N=8,K=8;;M=2,N=8,K=8"], /^gemm: --groups: Bad --groups /],
    [[MOE, "--groups", ""], /--groups/],
    [[MOE, "--groups", "M=8,N=8,K=7"], /Problem 0: Tensor "X" declares align 8/],
  ];
  const runs = await gemmAll(cases.map(([a]) => ["simulate", ...a]));
  cases.forEach(([args, re], i) => {
    const r = runs[i]!;
    const what = `simulate ${args.join(" ")}`;
    assertNoStackTrace(r, what);
    assert.equal(r.code, 2, `${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
    assert.equal(r.stdout, "", what);
    assert.match(r.stderr, re, what);
    assert.equal(r.stderr.trimEnd().split("\n").length, 1, `${what}: one line\n${r.stderr}`);
  });
});

Deno.test("gemm compile --emit json describes the table of examples/moe.gemm", async () => {
  const r = await gemm("compile", MOE, "--emit", "json");
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  const m = Array.isArray(j.kernels) ? j.kernels[0] : j;
  assert.deepEqual(m.params.map((p: { name: string }) => p.name), [
    GROUP_PARAMS.table,
    GROUP_PARAMS.count,
  ]);
  assert.equal(m.group.entryBytes, 40);
  assert.deepEqual(
    m.group.fields.map((f: { name: string; offset: number }) => `${f.name}@${f.offset}`),
    ["X@0", "W@8", "Y@16", "M@24", "K@28", "N@32", "tiles_before@36"],
  );
});

// The C and Python artefacts of a grouped kernel (their contents: tests/aot_c_grouped_test.ts,
// tests/aot_python_test.ts).
Deno.test("gemm compile --emit c / py of a grouped kernel", async () => {
  for (const emit of ["c", "py"]) {
    const r = await gemm("compile", MOE, "--emit", emit);
    assertNoStackTrace(r, `--emit ${emit}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /experts|moe/);
  }
});

// ---------------------------------------------------------------------------
// The launcher's checks across problems (backends/cuda/grouped.ts planGroupedLaunch):
// pure, no driver.
// ---------------------------------------------------------------------------

Deno.test("grouped launch plan: outputs overlapping another problem's tensors are refused", () => {
  const ck = compile(Deno.readTextFileSync(MOE)).kernels[0]!;
  const m = ck.manifest;
  const N = 64, K = 32, bytes = 2;
  const rng = new Rng(11);
  // The mixture-of-experts form: each expert's rows of X and Y its own, W per expert.
  const offs: number[] = [];
  let end = 0;
  for (let g = 0; g < 6; g++) offs.push(end += g === 2 ? 0 : rng.int(1, 40));
  const base = (i: number) => BigInt(i) << 36n;
  const ps = moeProblems(m, { a: base(1), b: base(2), d: base(3), offs, sizes: { N, K } });
  assert.equal(planGroupedLaunch(m, ps, {}).tiles.length, 6);
  const refused = (problems: typeof ps, want: RegExp) => {
    assert.throws(() => planGroupedLaunch(m, problems, {}), (e: Error) => {
      assert.ok(e instanceof LaunchError, String(e));
      assert.match(e.message, want);
      return true;
    });
  };
  // Expert 4's Y moved one row up: it writes expert 3's last row.
  const y4 = ps[4]!.buffers.Y as bigint;
  const shifted = ps.map((p, i) =>
    i === 4 ? { ...p, buffers: { ...p.buffers, Y: y4 - BigInt(N * bytes) } } : p
  );
  refused(shifted, /Problem 3's output "Y" overlaps problem 4's output "Y"/);
  // Expert 1 reads X from where expert 0 writes Y.
  const reads = ps.map((p, i) =>
    i === 1 ? { ...p, buffers: { ...p.buffers, X: ps[0]!.buffers.Y as bigint } } : p
  );
  refused(reads, /Problem 0's output "Y" overlaps problem 1's input "X"/);
  // Inputs may be shared (every expert reading one W is legal), and an expert with no
  // tokens (M=0: no tile) touches nothing, wherever its pointers point.
  const sharedW = ps.map((p) => ({ ...p, buffers: { ...p.buffers, W: base(2) } }));
  assert.equal(planGroupedLaunch(m, sharedW, {}).tiles.length, 6);
  const y3 = ps[3]!.buffers.Y as bigint;
  const empty = ps.map((p, i) => i === 2 ? { ...p, buffers: { ...p.buffers, Y: y3 } } : p);
  assert.equal(ps[2]!.sizes.M, 0);
  assert.equal(planGroupedLaunch(m, empty, {}).tiles[2], 0);
});
