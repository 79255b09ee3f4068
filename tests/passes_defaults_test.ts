/**
 * The defaults each GEMM pass chooses per type (threadblock, warp, threads, stages,
 * shared-memory layout, copy widths, MMA instruction, fragment loads, k-steps), at runtime
 * sizes on sm80; the default swizzle; and the stages per target.
 *
 * How the plan follows known sizes, the schedule, alignment and layout is in
 * tests/passes_plan_test.ts; the pass manager, dumps and `--emit kernel-ir` in
 * tests/passes_manager_test.ts.
 */

import assert from "node:assert/strict";
import { check } from "../compiler.ts";
import type { GemmKernel } from "../ir/gemm.ts";
import { defaultSwizzle } from "../passes/tile.ts";
import { defaultThreadblock } from "../passes/tile_context.ts";
import { TARGET_NAMES, targetHas, targetInfo } from "../ir/target.ts";
import { defaultStages } from "../passes/pipeline.ts";
import { compileOk, F16, program, shape, smem } from "./_passes.ts";

/** The plan's decisions, as one reviewable object. */
function summary(k: GemmKernel) {
  const p = k.plan;
  const t = p.tile!;
  const w = p.warp!;
  const pl = p.pipeline!;
  const m = p.mma!;
  return {
    tb: shape(t.threadblock),
    warp: shape(w.warp),
    warps: `${w.warpsM}x${w.warpsN}`,
    threads: w.threads,
    stages: pl.stages,
    smem: pl.smemBytes,
    a: smem(pl.a),
    b: smem(pl.b),
    mma: m.shape,
    loads: `${m.aLoad}/${m.bLoad}`,
    kSteps: m.kSteps,
    regs: m.regEstimate,
  };
}

// ---- defaults per type ----------------------------------------------------------------------

Deno.test("gemm-tile: default threadblock per MMA type (CUTLASS's guide; bf16, tf32 as measured)", () => {
  // CUTLASS's Ampere guide, except bf16 (128x256x32) and tf32 (128x256x16), which measured
  // faster on the H200 (bench/results/2026-11-29-h200-variants1.txt).
  const want: Record<string, string> = {
    f16: "128x256x32",
    bf16: "128x256x32",
    tf32: "128x256x16",
    f32: "128x256x16",
    s8: "128x256x64",
    u8: "128x256x64",
    f64: "64x64x16",
    s4: "128x256x128",
    u4: "128x256x128",
    b1: "128x256x512",
  };
  for (const [t, s] of Object.entries(want)) {
    assert.equal(shape(defaultThreadblock(t as Parameters<typeof defaultThreadblock>[0])), s, t);
  }
  assert.throws(() => defaultThreadblock("s32"), /^Error: No default tile for "s32"$/);
});

Deno.test("gemm-tile: default swizzle 8, fewer for few compile-time tile columns", () => {
  assert.deepEqual(
    [null, 1, 2, 3, 4, 5, 8, 100].map((n) => defaultSwizzle(n)),
    [8, 1, 2, 4, 4, 8, 8, 8],
  );
  // N = 512 with 256-wide tiles: 2 tile columns.
  const k = compileOk(program("f16[M, K] row", "f16[K, 512] col", "f32[M, 512] row")).planned;
  assert.deepEqual([k.plan.tile!.threadblock.n, k.plan.tile!.swizzle], [256, 2]);
});

/** Per type, at runtime sizes, on sm80: every default the passes choose. */
const DEFAULTS: readonly {
  readonly name: string;
  readonly decl: readonly [string, string, string];
  readonly expr?: string;
  readonly schedule?: readonly string[];
  readonly want: ReturnType<typeof summary>;
}[] = [
  {
    name: "f16 -> f32",
    decl: F16,
    // Per stage: A 128 rows x 64 B + B 256 x 64 B = 24576 B; 166912 / 24576 = 6 fit, capped at 4.
    // Registers: 4x8 tiles x 4 f32 + 2 buffers x (4 x 4 + 8 x 2) + 40 = 232.
    want: {
      tb: "128x256x32",
      warp: "64x64x32",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k16.f16.f32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  },
  {
    name: "f16 -> f16 (accumulate f16)",
    decl: ["f16[M, K] row", "f16[K, N] col", "f16[M, N] row"],
    schedule: ["accumulate f16"],
    // f16x2 accumulators: half the accumulator registers (64 instead of 128).
    want: {
      tb: "128x256x32",
      warp: "64x64x32",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k16.f16.f16",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 168,
    },
  },
  {
    name: "bf16",
    decl: ["bf16[M, K] row", "bf16[K, N] col", "f32[M, N] row"],
    want: {
      tb: "128x256x32",
      warp: "64x64x32",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k16.bf16.f32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  },
  {
    name: "f32 as tf32",
    decl: ["f32[M, K] row", "f32[K, N] col", "f32[M, N] row"],
    // 64-byte rows (16 x 4 B); 24576 B per stage: 6 fit on sm80, capped at 5 for tf32.
    want: {
      tb: "128x256x16",
      warp: "64x64x16",
      warps: "2x4",
      threads: 256,
      stages: 5,
      smem: 122880,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k8.tf32.f32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  },
  {
    name: "f32 as 3xtf32",
    decl: ["f32[M, K] row", "f32[K, N] col", "f32[M, N] row"],
    schedule: ["math 3xtf32"],
    // Tile 128x64x32 with 4 stages (two blocks an SM), warp 64x32: big and small parts
    // double the fragments (4 buffers). 4x4 tiles x 4 + 4 x (4 x 4 + 4 x 2) + 40 = 200.
    want: {
      tb: "128x64x32",
      warp: "64x32x32",
      warps: "2x2",
      threads: 128,
      stages: 4,
      smem: 98304,
      a: "k 128x128B shift 3 scale 1 cp.async 16B x8",
      b: "k 64x128B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k8.tf32.f32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 4,
      regs: 200,
    },
  },
  {
    name: "f64",
    decl: ["f64[M, K] row", "f64[K, N] col", "f64[M, N] row"],
    // Warp 32x32, m8n8k4; fragments by ld.shared (swizzle scale 2); 64-bit registers count 2.
    want: {
      tb: "64x64x16",
      warp: "32x32x16",
      warps: "2x2",
      threads: 128,
      stages: 4,
      smem: 65536,
      a: "k 64x128B shift 3 scale 2 cp.async 16B x4",
      b: "k 64x128B shift 3 scale 2 cp.async 16B x4",
      mma: "m8n8k4.f64.f64",
      loads: "lds/lds",
      kSteps: 4,
      regs: 136,
    },
  },
  {
    name: "s8",
    decl: ["s8[M, K] row", "s8[K, N] col", "s32[M, N] row"],
    want: {
      tb: "128x256x64",
      warp: "64x64x64",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k32.s8.s32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  },
  {
    name: "u8 x s8",
    decl: ["u8[M, K] row", "s8[K, N] col", "s32[M, N] row"],
    want: {
      tb: "128x256x64",
      warp: "64x64x64",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k32.u8.s8.s32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  },
  {
    name: "s4",
    decl: ["s4[M, K] row", "s4[K, N] col", "s32[M, N] row"],
    want: {
      tb: "128x256x128",
      warp: "64x64x128",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k64.s4.s32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  },
  {
    name: "u4",
    decl: ["u4[M, K] row", "u4[K, N] col", "s32[M, N] row"],
    want: {
      tb: "128x256x128",
      warp: "64x64x128",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: "m16n8k64.u4.s32",
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  },
  ...(["and", "xor"] as const).map((op) => ({
    name: `b1 ${op}`,
    decl: ["b1[M, K] row", "b1[K, N] col", "s32[M, N] row"] as const,
    expr: `popc(A[m, k] ${op === "and" ? "&" : "^"} B[k, n])`,
    want: {
      tb: "128x256x512",
      warp: "64x64x512",
      warps: "2x4",
      threads: 256,
      stages: 4,
      smem: 98304,
      a: "k 128x64B shift 3 scale 1 cp.async 16B x2",
      b: "k 256x64B shift 3 scale 1 cp.async 16B x4",
      mma: `m16n8k256.b1.s32.${op}.popc`,
      loads: "ldmatrix/ldmatrix",
      kSteps: 2,
      regs: 232,
    },
  })),
];

for (const c of DEFAULTS) {
  Deno.test(`passes: defaults for ${c.name}`, () => {
    const text = program(...c.decl, {
      ...(c.expr !== undefined ? { expr: c.expr } : {}),
      ...(c.schedule !== undefined ? { schedule: c.schedule } : {}),
    });
    const k = compileOk(text).planned;
    assert.deepEqual(summary(k), c.want);
    // The completed schedule says what the plan says; with a runtime N the swizzle is 8;
    // split-k is 1.
    const s = k.schedule;
    assert.equal(shape(s.threadblock!), c.want.tb);
    assert.equal(shape(s.warp!), c.want.warp);
    assert.equal(s.stages, c.want.stages);
    assert.equal(s.swizzle, 8);
    assert.equal(s.splitK, 1);
    assert.deepEqual(k.plan.tile!.partial, { m: true, n: true, k: true });
    assert.equal(k.plan.pipeline!.waitDepth, c.want.stages - 2);
    // Operand B's stages follow all of A's.
    assert.equal(k.plan.pipeline!.b.offset, c.want.stages * k.plan.pipeline!.a.stageBytes);
    assert.equal(k.plan.pipeline!.a.offset, 0);
  });
}

Deno.test("gemm-pipeline: stages = min(4 (tf32: 5), what fits), per target", () => {
  const k = (t: string) =>
    check(program(`${t}[M, K] row`, `${t}[K, N] col`, "f32[M, N] row")).kernels[0]!;
  assert.deepEqual(["f16", "bf16", "f32"].map((t) => defaultStages(k(t))), [4, 4, 5]);
  // tf32 128x256x16 and f16 128x256x32: 24576 B a stage. sm80: 6 fit -> 5 (tf32), 4 (f16);
  // sm86: 101376 / 24576 = 4 fit -> 4.
  const text = program("f32[M, K] row", "f32[K, N] col", "f32[M, N] row");
  // sm90 runs these programs on wgmma, whose stages tests/wgmma_test.ts checks.
  for (const t of TARGET_NAMES.filter((x) => !targetHas(x, "wgmma"))) {
    const fit = Math.floor(targetInfo(t).smemPerBlock / 24576);
    const p = compileOk(text, t).planned.plan.pipeline!;
    const s = Math.min(5, fit);
    assert.deepEqual([p.stages, p.smemBytes, p.waitDepth], [s, s * 24576, s - 2], t);
    assert.equal(compileOk(program(...F16), t).planned.plan.pipeline!.stages, Math.min(4, fit));
  }
  // The values above for the two targets, written out (not from the table).
  assert.deepEqual(
    (["sm80", "sm86"] as const).map((t) => compileOk(text, t).planned.plan.pipeline!.stages),
    [5, 4],
  );
  // Given stages are kept, the wait depth follows.
  const p = compileOk(program(...F16, { schedule: ["stages 2"] })).planned.plan.pipeline!;
  assert.deepEqual([p.stages, p.waitDepth, p.smemBytes, p.b.offset], [2, 0, 49152, 16384]);
  const p5 = compileOk(program(...F16, { schedule: ["stages 6"] })).planned.plan.pipeline!;
  assert.deepEqual([p5.stages, p5.waitDepth, p5.smemBytes], [6, 4, 147456]);
});
