/**
 * Stream-K on sm90's persistent warp-specialized kernels (passes/lower/stream_k.ts, issue 22):
 *
 * - the plan: `scheduler stream_k` shares out a persistent kernel's last tiles (a flag word, a
 *   workspace of two-part records, `2 x grid x` of them); the default, `scheduler persistent`
 *   and `scheduler tiles` do not; `scheduler` where no persistent kernel exists is E0213;
 * - simulated over small persistent grids (`sms` 3 to 5) at sizes where the tiles are not a
 *   multiple of the blocks (so that tiles are shared out), where they are, and where there are
 *   fewer tiles than blocks: every type agrees with the reference (integers exactly),
 *   hazards none;
 * - determinism: the blocks run in reverse order (another block arrives last at each shared-out
 *   tile) give the same bytes;
 * - mutations: an arrival that counts 2 (no part is ever last) leaves the shared-out tiles
 *   unwritten, and the comparison fails; a first arrival taken for the last (split-K's and
 *   Stream-K's) reads a partial nothing stored yet: the `unwritten-partial` hazard.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { type Kernel, type Op, workspaceBytes } from "../ir/kernel.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { tensorParam } from "../ir/gemm.ts";
import { STREAM_K_CASES as CASES, WGMMA_CASES } from "./testdata/wgmma_cases.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";

function compileFor(src: string, sms: number): CompiledKernel {
  const r = compile(src, { file: "sk.gemm", target: "sm90", sms });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  return r.kernels[0]!;
}

const GEMM = (a: string, d: string, stmt = "D[m, n] = A[m, k] * B[k, n]", sched = "") =>
  `kernel sk {\n  A: ${a}[M, K] row\n  B: ${a}[K, N] col\n  D: ${d}[M, N] row\n  ${stmt}\n` +
  `${sched === "" ? "" : `  schedule {\n    ${sched}\n  }\n`}}\n`;

Deno.test("stream-K: scheduler stream_k shares out a persistent sm90 kernel's last tiles", () => {
  const ck = compileFor(GEMM("f16", "f32", undefined, "scheduler stream_k"), 132);
  const p = ck.planned.plan;
  const own = p.pipeline!.tma!.persistent!;
  assert.deepEqual(own.streamK, { flagOffset: 4 * 49152 + 64 });
  assert.equal(own.stagingOffset, 4 * 49152 + 128);
  assert.equal(ck.kernel.dynamicSmemBytes, 4 * 49152 + 64 + 16);
  // Two parts a record: 256 threads x 128 f32 accumulators.
  assert.equal(p.workspace!.partialBytes, 256 * 128 * 4);
  assert.equal(p.workspace!.perTile, 128 + 2 * 256 * 128 * 4);
  assert.equal(ck.kernel.params.at(-3)!.name, "workspace"); // then the two tensor maps
  // 2 records a block of the grid: 8192^2 is 2048 tiles on 132 blocks.
  assert.equal(
    workspaceBytes(ck.kernel.grid, { M: 8192, N: 8192, K: 64 }),
    2 * 132 * p.workspace!.perTile,
  );
  assert.match(ck.ptx, /atom\.global\.add\.u32/);
  assert.equal(ck.manifest.workspace?.bytesPerTile, p.workspace!.perTile);
  for (const sched of ["", "scheduler persistent", "scheduler tiles"]) {
    const off = compileFor(GEMM("f16", "f32", undefined, sched), 132);
    assert.equal(off.planned.plan.pipeline!.tma!.persistent?.streamK, undefined, sched);
    assert.equal(off.planned.plan.workspace, null, sched);
    assert.doesNotMatch(off.ptx, /atom\.global/, sched);
  }
  const tiles = compileFor(GEMM("f16", "f32", undefined, "scheduler tiles"), 132);
  assert.equal(tiles.kernel.grid.persistent, undefined);
});

Deno.test("stream-K: a scheduler line without a warp-specialized sm90 kernel is E0213", () => {
  const cases = [
    [GEMM("f16", "f32", undefined, "scheduler stream_k"), "sm80"],
    [GEMM("f16", "f32", undefined, "scheduler persistent\n    split_k 2"), "sm90"],
    [GEMM("f16", "f32", undefined, "scheduler stream_k").replace("col", "row"), "sm90"],
  ] as const;
  for (const [src, target] of cases) {
    const r = compile(src, { file: "sk.gemm", target });
    assert.deepEqual(r.diagnostics.map((d) => d.code), ["E0213"], src);
  }
  const bad = compile(GEMM("f16", "f32", undefined, "scheduler dynamic"), { target: "sm90" });
  assert.deepEqual(bad.diagnostics.map((d) => d.code), ["E0112"]);
});

for (const c of CASES) {
  Deno.test(`stream-K ${c.name}: agrees with the reference, no hazards, any block order`, () => {
    const ck = compileFor(c.src, c.sms);
    assert.notEqual(ck.planned.plan.pipeline!.tma!.persistent!.streamK, undefined);
    const rep = simulateGemm(ck, c.sizes, { seed: 41 });
    assert.equal(rep.sim.hazardCount, 0, JSON.stringify(rep.sim.hazards[0]));
    const cmp = rep.comparison;
    assert.ok(cmp.ok, `${cmp.overBound} of ${cmp.elements} over; ${JSON.stringify(cmp.first)}`);
    const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
    if (!DTYPE_INFO[d.dtype].float) assert.equal(cmp.maxAbsError, 0);
    // Another block arrives last at every shared-out tile: the same bytes.
    const rev = simulateGemm(ck, c.sizes, { seed: 41, blockOrder: "reverse" });
    assert.deepEqual(rev.output, rep.output);
  });
}

/** The kernel with every `atom` adding `by` instead of 1. */
function withArrival(k: Kernel, by: number): Kernel {
  const map = (ops: readonly Op[]): Op[] =>
    ops.map((o) => {
      if (o.op === "atom") return { ...o, b: { kind: "imm", value: by } } as Op;
      if (o.op === "for") return { ...o, body: map(o.body) };
      if (o.op === "if") return { ...o, then: map(o.then), otherwise: map(o.otherwise) };
      return o;
    });
  return { ...k, body: map(k.body) };
}

Deno.test("stream-K mutation: an arrival that counts 2 leaves the shared-out tiles unwritten", () => {
  const c = CASES[0]!;
  const ck = compileFor(c.src, c.sms);
  let atoms = 0;
  const count = (ops: readonly Op[]) => {
    for (const o of ops) {
      if (o.op === "atom") atoms++;
      if (o.op === "for") count(o.body);
      if (o.op === "if") (count(o.then), count(o.otherwise));
    }
  };
  count(ck.kernel.body);
  assert.equal(atoms, 1);
  const good = simulateGemm(ck, c.sizes, { seed: 5 });
  assert.ok(good.comparison.ok);
  const bad = simulateGemm({ ...ck, kernel: withArrival(ck.kernel, 2) }, c.sizes, { seed: 5 });
  assert.ok(!bad.comparison.ok);
  // The 4 whole tiles are still right: 5 of 9 tiles (300 x 600 clipped) are not.
  assert.ok(bad.comparison.overBound > 0 && bad.comparison.overBound < 300 * 600);
});

/** The kernel with the test of the arrival's old count (`setp.eq old, S - 1` after the `atom`)
 * comparing with 0 instead: the first part to arrive takes itself for the last. */
function firstIsLast(k: Kernel): Kernel {
  let old: number | null = null;
  const find = (ops: readonly Op[]) => {
    for (const o of ops) {
      if (o.op === "atom") old = o.dst.id;
      if (o.op === "for") find(o.body);
      if (o.op === "if") (find(o.then), find(o.otherwise));
    }
  };
  find(k.body);
  assert.notEqual(old, null);
  let changed = 0;
  const map = (ops: readonly Op[]): Op[] =>
    ops.map((o) => {
      if (o.op === "setp" && o.a.kind === "reg" && o.a.id === old && o.b.kind === "imm") {
        changed++;
        return { ...o, b: { kind: "imm", value: 0 } } as Op;
      }
      if (o.op === "for") return { ...o, body: map(o.body) };
      if (o.op === "if") return { ...o, then: map(o.then), otherwise: map(o.otherwise) };
      return o;
    });
  const body = map(k.body);
  assert.equal(changed, 1);
  return { ...k, body };
}

Deno.test("unwritten-partial: a first arrival taken for the last is caught (split-K, Stream-K)", () => {
  const splitK = compile(
    GEMM("f16", "f32", undefined, "threadblock 64x64x32\n    warp 32x32x32\n    split_k 3"),
    { file: "sk.gemm" },
  ).kernels[0]!;
  const streamK = compileFor(CASES[0]!.src, CASES[0]!.sms);
  for (
    const [ck, sizes] of [[splitK, { M: 70, N: 72, K: 200 }], [streamK, CASES[0]!.sizes]] as const
  ) {
    const good = simulateGemm(ck, sizes, { seed: 7 });
    assert.equal(good.sim.hazardCount, 0, ck.name);
    const bad = simulateGemm({ ...ck, kernel: firstIsLast(ck.kernel) }, sizes, { seed: 7 });
    assert.deepEqual([...new Set(bad.sim.hazards.map((h) => h.kind))], ["unwritten-partial"]);
    assert.match(bad.sim.hazards[0]!.message, /no block has stored in this launch/);
  }
});

Deno.test("stream-K at issue 22's odd sizes (M = 1, 7, 33; K not a k-tile multiple) agrees", () => {
  const ck = compileFor(
    GEMM("f16", "f16", "D[m, n] = f16(A[m, k] * B[k, n])", "scheduler stream_k"),
    3,
  );
  // 9, 5 and 8 tiles of 128x256 on 3 blocks: none, 5 and 5 shared out (P + r).
  for (const [M, N, K] of [[1, 2056, 200], [7, 1040, 136], [33, 1800, 520]]) {
    const rep = simulateGemm(ck, { M: M!, N: N!, K: K! }, { seed: M! });
    assert.ok(rep.ok, `M=${M}: ${JSON.stringify(rep.comparison.first)}`);
    assert.equal(rep.sim.hazardCount, 0);
  }
});

ptxasTest(
  "stream-K: every case, and each wgmma case asking for it, assembles without spills",
  async () => {
    const asked = WGMMA_CASES.filter((c) => !/split_k|align 4/.test(c.src)).map((c) => ({
      name: c.name,
      src: c.src.replace(/\}\s*$/, "  schedule { scheduler stream_k }\n}\n").replace(
        /schedule \{ ([^}]*) \}\n {2}schedule \{ scheduler stream_k \}/,
        "schedule {\n    $1\n    scheduler stream_k\n  }",
      ),
      sms: 132,
    }));
    for (const c of [...CASES, ...asked]) {
      const ck = compileFor(c.src, c.sms);
      assert.notEqual(ck.planned.plan.pipeline!.tma!.persistent!.streamK, undefined, c.name);
      const r = await runPtxas(ck.ptx, { arch: "sm_90a" });
      assert.ok(r.ok, `${c.name}: ${r.log}`);
      for (const k of r.kernels) {
        assert.deepEqual([k.spillStoreBytes, k.spillLoadBytes], [0, 0], c.name);
      }
    }
  },
);
