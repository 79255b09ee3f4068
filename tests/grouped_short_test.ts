/**
 * A grouped kernel's short tiles (passes/short_tile.ts, `plan.short`): the problems
 * with at most half a tile's rows run a second plan, the same warps over a tile half
 * as tall.
 *
 * - For every tensor-core type: the short plan exists for a 2x2 warp layout; a
 *   problem of half a tile's rows costs exactly half the MMAs of one a row taller
 *   (so the short path ran, and only there); mixed lists (tiny, empty, K=0, exactly
 *   half, one past half, several tiles) agree with the reference, no hazards.
 * - Where there is no short plan: ungrouped kernels, one warp row, SIMT math.
 * - The default bf16 grouped kernel assembles with ptxas without spills.
 * - The GEMM IR verifier refuses a short plan that does not fit the kernel.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import { simulateGrouped } from "../harness/simulate_grouped.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { verifyGemm } from "../ir/verify_gemm.ts";
import type { Plan } from "../ir/gemm.ts";
import { ptxasTest } from "./_ptxas.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";

type Sizes = Record<string, number>;

function compileOne(src: string): CompiledKernel {
  const r = compile(src, { file: "short.gemm" });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  return r.kernels[0]!;
}

function source(a: string, b: string, d: string, sched: string, grouped = true): string {
  const al = a === "s4" || a === "u4" ? 2 : 1; // sub-byte types: alignments of whole bytes
  return `kernel s${grouped ? " grouped" : ""} {\n  A: ${a}[M, K] row align ${al}\n` +
    `  B: ${b}[K, N] col align ${al}\n  D: ${d}[M, N] row align 1\n` +
    `  D[m, n] = A[m, k] * B[k, n]\n  schedule {\n    ${sched}\n  }\n}\n`;
}

interface Case {
  readonly name: string;
  readonly a: string;
  readonly d: string;
  /** The schedule lines: a 2x2 warp layout. */
  readonly sched: string;
  /** The k-tile's K, and an odd K (a multiple of the alignment a sub-byte type needs). */
  readonly kt: number;
  readonly odd: number;
}

const CASES: readonly Case[] = [
  {
    name: "f16",
    a: "f16",
    d: "f32",
    sched: "threadblock 64x64x32\n    warp 32x32x32",
    kt: 32,
    odd: 37,
  },
  {
    name: "bf16",
    a: "bf16",
    d: "bf16",
    sched: "threadblock 64x64x32\n    warp 32x32x32",
    kt: 32,
    odd: 37,
  },
  {
    name: "tf32",
    a: "f32",
    d: "f32",
    sched: "threadblock 64x64x32\n    warp 32x32x32\n    math tf32",
    kt: 32,
    odd: 37,
  },
  {
    name: "3xtf32",
    a: "f32",
    d: "f32",
    sched: "threadblock 64x64x32\n    warp 32x32x32\n    math 3xtf32",
    kt: 32,
    odd: 37,
  },
  {
    name: "f64",
    a: "f64",
    d: "f64",
    sched: "threadblock 64x64x16\n    warp 32x32x16",
    kt: 16,
    odd: 19,
  },
  {
    name: "s8",
    a: "s8",
    d: "s32",
    sched: "threadblock 64x64x64\n    warp 32x32x64",
    kt: 64,
    odd: 67,
  },
  {
    name: "s4",
    a: "s4",
    d: "s32",
    sched: "threadblock 64x64x128\n    warp 32x32x128",
    kt: 128,
    odd: 130,
  },
];

for (const c of CASES) {
  Deno.test(`short tiles, ${c.name}: half a tile's rows cost half the MMAs; mixed lists agree`, () => {
    const ck = compileOne(source(c.a, c.a, c.d, c.sched));
    const short = ck.planned.plan.short;
    assert.ok(short !== null && short !== undefined, "a 2x2 warp layout has a short plan");
    assert.deepEqual(short.tile!.threadblock, { m: 32, n: 64, k: c.kt });
    assert.deepEqual([short.warp!.warpsM, short.warp!.warpsN], [1, 4]);
    assert.match(printGemm(ck.planned), /plan\.short threadblock 32x64x/);
    const mmas = (p: Sizes[]) => {
      const rep = simulateGrouped(ck, p, { seed: 3 });
      assert.ok(rep.ok, JSON.stringify(rep.problems.map((q) => q.comparison.first)));
      assert.equal(rep.sim.hazardCount, 0);
      return rep.sim.stats.mmas;
    };
    const half = mmas([{ M: 32, N: 64, K: c.kt }]);
    const full = mmas([{ M: 33, N: 64, K: c.kt }]);
    assert.ok(half > 0);
    assert.equal(2 * half, full, "the short tile's MMAs are half a full tile's");
    // Tiny, empty, K=0, exactly half, past half (its last tile stays on the full plan),
    // and several tiles of a short problem along N.
    const rep = simulateGrouped(ck, [
      { M: 1, N: 1, K: c.odd },
      { M: 0, N: 40, K: c.odd },
      { M: 5, N: 9, K: 0 },
      { M: 32, N: 70, K: c.odd },
      { M: 33, N: 40, K: 2 * c.kt },
      { M: 70, N: 65, K: c.odd },
      { M: 17, N: 130, K: c.kt + c.odd },
    ], { seed: 11 });
    const bad = rep.problems.flatMap((p, i) =>
      p.ok ? [] : [`${i}: ${JSON.stringify(p.comparison.first)}`]
    );
    assert.deepEqual(bad, []);
    assert.equal(rep.sim.hazardCount, 0);
  });
}

Deno.test("short tiles: none for ungrouped kernels, one warp row, or SIMT math", () => {
  const none = (src: string) => compileOne(src).planned.plan.short ?? null;
  assert.equal(
    none(source("f16", "f16", "f32", "threadblock 64x64x32\n    warp 32x32x32", false)),
    null,
  );
  assert.equal(none(source("f16", "f16", "f32", "threadblock 64x256x32\n    warp 64x64x32")), null);
  assert.equal(
    none(source("f32", "f32", "f32", "threadblock 64x64x32\n    warp 32x32x32\n    math f32")),
    null,
  );
  const ck = compileOne(source("f16", "f16", "f32", "threadblock 64x256x32\n    warp 64x64x32"));
  assert.match(printGemm(ck.planned), /plan\.short none/);
});

ptxasTest("short tiles: the default bf16 grouped kernel assembles without spills", async () => {
  const ck = compileOne(
    "kernel experts grouped {\n  X: bf16[M, K] row\n  W: bf16[K, N] col\n  Y: bf16[M, N] row\n" +
      "  Y[m, n] = X[m, k] * W[k, n]\n}\n",
  );
  assert.deepEqual(ck.planned.plan.short?.tile?.threadblock, { m: 64, n: 256, k: 32 });
  const r = await runPtxas(ck.ptx, { arch: "sm_80" });
  assert.ok(r.ok, r.log);
  assert.deepEqual([r.kernels[0]!.spillStoreBytes, r.kernels[0]!.spillLoadBytes], [0, 0]);
});

Deno.test("short tiles: the verifier refuses a short plan that does not fit the kernel", () => {
  const ck = compileOne(source("f16", "f16", "f32", "threadblock 64x64x32\n    warp 32x32x32"));
  const k = ck.planned;
  const short = k.plan.short!;
  verifyGemm(k);
  const bad = (plan: Plan, msg: RegExp) =>
    assert.throws(() => verifyGemm({ ...k, plan: { ...k.plan, short: plan } }), msg);
  bad({ ...short, tile: { ...short.tile!, threadblock: { m: 16, n: 64, k: 32 } } }, /not half/);
  bad({ ...short, warp: { ...short.warp!, threads: 64 } }, /threads/);
  bad({ ...short, pipeline: { ...short.pipeline!, smemBytes: 1 << 20 } }, /shared memory/);
  const ungrouped = compileOne(
    source("f16", "f16", "f32", "threadblock 64x64x32\n    warp 32x32x32", false),
  );
  assert.throws(
    () => verifyGemm({ ...ungrouped.planned, plan: { ...ungrouped.planned.plan, short } }),
    /not grouped/,
  );
});
