/**
 * The passes: tile arithmetic and the defaults each pass chooses per type
 * (threadblock, warp, threads, stages, shared-memory layout, copy widths,
 * MMA instruction, fragment loads, k-steps), the pass manager (names,
 * order, purity, dumps), golden dumps after every pass for three examples,
 * and `--emit kernel-ir` for every example on both targets.
 *
 * The dump goldens (tests/golden/dumps/NAME.txt) keep every GEMM-IR dump
 * whole and the kernel-IR dump's first lines only, so that they stay
 * reviewable. Regenerate them with
 * `UPDATE_GOLDEN=1 deno task test tests/passes_test.ts` and read the diff.
 */

import assert from "node:assert/strict";
import { check, compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import type { GemmKernel, OperandSmem, Shape3, Target } from "../ir/gemm.ts";
import { verifyGemm } from "../ir/verify_gemm.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { printKernel } from "../ir/print_kernel.ts";
import { dumpHeader } from "../passes/pass.ts";
import { GEMM_PASSES, LOWER_PASS, PASS_NAMES, runPipeline } from "../passes/pipeline_list.ts";
import { defaultSwizzle, defaultThreadblock } from "../passes/tile.ts";
import { DEFAULT_TARGET, TARGET_NAMES, targetHas, targetInfo, targetList } from "../ir/target.ts";
import { defaultStages } from "../passes/pipeline.ts";
import { gemm } from "./_cli.ts";
import { examples, ROOT } from "./_examples.ts";

const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

function readExample(name: string): { file: string; text: string } {
  const file = `examples/${name}.gemm`;
  return { file, text: Deno.readTextFileSync(new URL(file, ROOT)) };
}

/** A one-kernel program from its declarations, statement and schedule lines. */
function program(
  a: string,
  b: string,
  d: string,
  opts: { expr?: string; schedule?: readonly string[] } = {},
): string {
  const s = opts.schedule ?? [];
  return `kernel k {\n  A: ${a}\n  B: ${b}\n  D: ${d}\n\n  D[m, n] = ${
    opts.expr ?? "A[m, k] * B[k, n]"
  }\n` + (s.length > 0 ? `\n  schedule {\n${s.map((l) => `    ${l}\n`).join("")}  }\n` : "") +
    "}\n";
}

function compileOk(text: string, target?: Target): CompiledKernel {
  const r = compile(text, { file: "t.gemm", ...(target !== undefined ? { target } : {}) });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  assert.equal(r.kernels.length, 1);
  return r.kernels[0]!;
}

const shape = (s: Shape3) => `${s.m}x${s.n}x${s.k}`;

/** One operand's shared-memory plan in one line: contiguity, rows x bytes, swizzle, copies. */
function smem(o: OperandSmem): string {
  return `${o.contiguous} ${o.rows}x${o.rowBytes}B shift ${o.swizzleShift} scale ${o.swizzleScale} ` +
    `${o.async ? "cp.async" : "sync"} ${o.copyBytes}B x${o.copiesPerThread}`;
}

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

const F16 = ["f16[M, K] row", "f16[K, N] col", "f32[M, N] row"] as const;

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

Deno.test("gemm-tile: known sizes shrink the tile (to fill 108 SMs), never below 64 (f64: 32)", () => {
  // The cases below are worked out for the default target's minimum grid.
  assert.equal(targetInfo(DEFAULT_TARGET).minBlocks, 108);
  // A, B, D, tile, warp, partial m/n/k. With both M and N known, the larger side of the tile
  // halves while the grid has fewer than 108 blocks; the warp tile halves (to 32) until a
  // block has 4 warps. A shrunk 16-bit tile ("small grid") also doubles its k-tile and keeps
  // 8 warps where 32x32 warp tiles allow (bench/NOTES.md 10).
  const cases: readonly [string, string, string, string, string, string][] = [
    [
      "f16[64, K] row",
      "f16[K, 32] col",
      "f32[64, 32] row",
      "64x64x64",
      "32x32x64",
      "false true true",
    ],
    [
      "f16[100, 64] row",
      "f16[64, 129] col",
      "f32[100, 129] row",
      "64x64x64",
      "32x32x64",
      "true true false",
    ],
    [
      "f16[128, 64] row",
      "f16[64, 256] col",
      "f32[128, 256] row",
      "64x64x64",
      "32x32x64",
      "false false false",
    ],
    [
      "f16[65, K] row",
      "f16[K, 128] col",
      "f32[65, 128] row",
      "64x64x64",
      "32x32x64",
      "true false true",
    ],
    [
      "f16[16, K] row",
      "f16[K, 16] col",
      "f32[16, 16] row",
      "64x64x64",
      "32x32x64",
      "true true true",
    ],
    // Skinny: 1 x 32 blocks of 128x256; 128x64 gives 128 blocks.
    [
      "f16[128, K] row",
      "f16[K, 8192] col",
      "f32[128, 8192] row",
      "128x64x64",
      "32x32x64",
      "false false true",
    ],
    // Large: 32 x 16 = 512 blocks of the default tile, 4.7 waves on 108 SMs; 160x256
    // tiles make 416 blocks, 3.9 waves, and wastes less (passes/tile.ts waveAwareTile).
    [
      "f16[4096, K] row",
      "f16[K, 4096] col",
      "f32[4096, 4096] row",
      "160x256x32",
      "80x64x32",
      "true false true",
    ],
    // 3456 x 1024 = 27 x 4 tiles of 128x256: one whole wave on 108 SMs: it stays.
    [
      "f16[3456, K] row",
      "f16[K, 1024] col",
      "f32[3456, 1024] row",
      "128x256x32",
      "64x64x32",
      "false false true",
    ],
    [
      "f64[16, K] row",
      "f64[K, 48] col",
      "f64[16, 48] row",
      "32x32x16",
      "32x32x16",
      "true true true",
    ],
    [
      "f64[32, 8] row",
      "f64[8, 32] col",
      "f64[32, 32] row",
      "32x32x16",
      "32x32x16",
      "false false true",
    ],
    // Only N known: it shrinks to its size (256 -> 64), M keeps the default.
    [
      "s8[M, 64] row",
      "s8[64, 64] col",
      "s32[M, 64] row",
      "128x64x64",
      "64x32x64",
      "true false false",
    ],
  ];
  for (const [a, b, d, tile, warp, partial] of cases) {
    const k = compileOk(program(a, b, d)).planned;
    const t = k.plan.tile!;
    const w = k.plan.warp!;
    assert.equal(shape(t.threadblock), tile, `${a} ${b}`);
    assert.equal(shape(w.warp), warp, `${a} ${b}`);
    assert.equal(`${t.partial.m} ${t.partial.n} ${t.partial.k}`, partial, `${a} ${b}`);
    assert.equal(w.threads, (t.threadblock.m / w.warp.m) * (t.threadblock.n / w.warp.n) * 32);
    const t0 = t.threadblock;
    const shrunk16 = a.startsWith("f16") && t0.m * t0.n < 128 * 256;
    assert.equal(t.smallGrid === true, shrunk16, `${a} ${b}: small grid`);
  }
  // A given threadblock is never shrunk.
  const k = compileOk(
    program("f16[16, K] row", "f16[K, 16] col", "f32[16, 16] row", {
      schedule: ["threadblock 128x128x32"],
    }),
  ).planned;
  assert.equal(shape(k.plan.tile!.threadblock), "128x128x32");
  assert.equal(shape(k.plan.warp!.warp), "64x64x32");
});

Deno.test("gemm-tile: swizzle and split-k from the schedule reach the grid plan", () => {
  const ck = compileOk(program(...F16, { schedule: ["swizzle 4"] }));
  assert.equal(ck.planned.plan.tile!.swizzle, 4);
  assert.deepEqual(ck.kernel.grid, {
    tileM: 128,
    tileN: 256,
    swizzle: 4,
    splitK: 1,
    m: "M",
    n: "N",
    batch: null,
  });
  const hg = readExample("hgemm");
  const h = compile(hg.text, hg).kernels[0]!;
  assert.equal(h.planned.plan.tile!.swizzle, 8);
  assert.equal(h.kernel.grid.swizzle, 8);
});

Deno.test("gemm-warp: warps, threads and the warp tile from the schedule", () => {
  const cases: readonly [string[], string, string, number][] = [
    [["threadblock 128x128x32", "warp 32x64x32"], "32x64x32", "4x2", 256],
    [["threadblock 256x128x32", "warp 64x64x32"], "64x64x32", "4x2", 256],
    [["threadblock 64x64x32", "warp 32x32x32"], "32x32x32", "2x2", 128],
    [["threadblock 128x256x32"], "64x64x32", "2x4", 256],
    [["threadblock 128x128x32", "warp 64x32x32"], "64x32x32", "2x4", 256],
    // The default warp tile halves until the block has 4 warps.
    [["threadblock 64x64x64"], "32x32x64", "2x2", 128],
    [["threadblock 128x64x32"], "64x32x32", "2x2", 128],
  ];
  for (const [sched, warp, warps, threads] of cases) {
    const k = compileOk(program(...F16, { schedule: sched })).planned;
    const w = k.plan.warp!;
    assert.deepEqual([shape(w.warp), `${w.warpsM}x${w.warpsN}`, w.threads], [warp, warps, threads]);
    assert.equal(compileOk(program(...F16, { schedule: sched })).kernel.threads, threads);
  }
});

Deno.test("gemm-pipeline: the cp.async width follows the alignment (16/8/4 bytes, sync below)", () => {
  // [A decl, B decl, A copy, B copy]
  const cases: readonly [string, string, string, string][] = [
    ["f16[M, K] row", "f16[K, N] col", "cp.async 16B x2", "cp.async 16B x4"],
    ["f16[M, K] row align 4", "f16[K, N] col align 2", "cp.async 8B x4", "cp.async 4B x16"],
    // Synchronous copies: 128x128 tiles with 64x32 warps (8 warps).
    ["f16[M, K] row align 1", "f16[K, N] col align 1", "sync 2B x16", "sync 2B x16"],
    ["s8[M, K] row align 8", "s8[K, N] col align 4", "cp.async 8B x4", "cp.async 4B x16"],
    ["s8[M, K] row align 2", "s8[K, N] col align 1", "sync 2B x16", "sync 1B x32"],
  ];
  for (const [a, b, ca, cb] of cases) {
    const d = a.startsWith("s8") ? "s32[M, N] row" : "f32[M, N] row";
    const p = compileOk(program(a, b, d)).planned.plan.pipeline!;
    assert.equal(smem(p.a).replace(/^.* (cp\.async|sync)/, "$1"), ca, a);
    assert.equal(smem(p.b).replace(/^.* (cp\.async|sync)/, "$1"), cb, b);
  }
  // f32 (tf32) and f64: 1 element is 4 or 8 bytes, still asynchronous.
  const f32 = compileOk(program("f32[M, K] row align 1", "f32[K, N] col align 2", "f32[M, N] row"))
    .planned.plan.pipeline!;
  assert.deepEqual([f32.a.copyBytes, f32.a.async, f32.b.copyBytes, f32.b.async], [
    4,
    true,
    8,
    true,
  ]);
  const f64 = compileOk(program("f64[M, K] row align 1", "f64[K, N] col", "f64[M, N] row"))
    .planned.plan.pipeline!;
  assert.deepEqual([f64.a.copyBytes, f64.a.async, f64.b.copyBytes], [8, true, 16]);
});

Deno.test("gemm-pipeline: the kernel copies with cp.async.cg 16, .ca 8/4, or ld/st below 4", () => {
  const count = (ck: CompiledKernel, re: RegExp) => ck.kernelText.match(re)?.length ?? 0;
  const wide = compileOk(program(...F16));
  assert.ok(count(wide, /cpasync\.cg\.16\.L2::128B /g) > 0);
  assert.equal(count(wide, /cpasync\.ca\./g), 0);
  const mid = compileOk(program("f16[M, K] row align 4", "f16[K, N] col align 2", F16[2]));
  assert.ok(count(mid, /cpasync\.ca\.8 /g) > 0);
  assert.ok(count(mid, /cpasync\.ca\.4 /g) > 0);
  assert.equal(count(mid, /cpasync\.cg\./g), 0);
  const narrow = compileOk(program("f16[M, K] row align 1", "f16[K, N] col align 1", F16[2]));
  assert.equal(count(narrow, /cpasync/g), 0);
  assert.ok(count(narrow, /ldg\.b16 /g) > 0);
  assert.ok(count(narrow, /sts\.b16 /g) > 0);
});

Deno.test("gemm-pipeline: the XOR-swizzle shift is log2 of max(8, 16-byte chunks a row)", () => {
  const cases: readonly [string, string, string, number, number][] = [
    // K-contiguous f16 rows of 32 x 2 = 64 bytes: 4 chunks -> 8 -> shift 3.
    ["f16[M, K] row", "f16[K, N] col", "f32[M, N] row", 3, 3],
    // M/N-contiguous f16: A rows of 128 x 2 = 256 bytes (16 chunks), B 256 x 2 = 512 (32).
    ["f16[M, K] col", "f16[K, N] row", "f32[M, N] row", 4, 5],
    // s8 with K 64: 64-byte rows.
    ["s8[M, K] row", "s8[K, N] col", "s32[M, N] row", 3, 3],
    // tf32 (tile K 16): A rows of 16 x 4 = 64 bytes; B row-major, 256 x 4 = 1024-byte rows.
    ["f32[M, K] row", "f32[K, N] row", "f32[M, N] row", 3, 6],
  ];
  for (const [a, b, d, sa, sb] of cases) {
    const p = compileOk(program(a, b, d)).planned.plan.pipeline!;
    assert.deepEqual([p.a.swizzleShift, p.b.swizzleShift], [sa, sb], `${a} ${b}`);
    for (const o of [p.a, p.b]) {
      assert.equal(o.swizzleShift, Math.log2(Math.max(8, o.rowBytes / 16)));
      assert.equal(o.stageBytes, o.rows * o.rowBytes);
    }
  }
});

Deno.test("gemm-mma: ldmatrix, ldmatrix.trans or ld.shared by type and layout", () => {
  const cases: readonly [string, string, string, string][] = [
    ["f16[M, K] row", "f16[K, N] col", "f32[M, N] row", "ldmatrix/ldmatrix"],
    ["f16[M, K] col", "f16[K, N] row", "f32[M, N] row", "ldmatrix.trans/ldmatrix.trans"],
    ["f16[M, K] row", "f16[K, N] row", "f32[M, N] row", "ldmatrix/ldmatrix.trans"],
    ["bf16[M, K] col", "bf16[K, N] col", "f32[M, N] row", "ldmatrix.trans/ldmatrix"],
    ["f32[M, K] col", "f32[K, N] col", "f32[M, N] row", "lds/ldmatrix"],
    ["f32[M, K] row", "f32[K, N] row", "f32[M, N] row", "ldmatrix/lds"],
    ["f64[M, K] row", "f64[K, N] col", "f64[M, N] row", "lds/lds"],
    ["f64[M, K] col", "f64[K, N] row", "f64[M, N] row", "lds/lds"],
    ["s8[M, K] row", "s8[K, N] col", "s32[M, N] row", "ldmatrix/ldmatrix"],
    ["u4[M, K] row", "u4[K, N] col", "s32[M, N] row", "ldmatrix/ldmatrix"],
  ];
  for (const [a, b, d, loads] of cases) {
    const ck = compileOk(program(a, b, d));
    const m = ck.planned.plan.mma!;
    assert.equal(`${m.aLoad}/${m.bLoad}`, loads, `${a} ${b}`);
    // ld.shared-read tiles get swizzle scale 2, ldmatrix-read ones 1.
    const p = ck.planned.plan.pipeline!;
    assert.equal(p.a.swizzleScale, m.aLoad === "lds" ? 2 : 1);
    assert.equal(p.b.swizzleScale, m.bLoad === "lds" ? 2 : 1);
    // The kernel IR's main loop does what the plan says (a staged epilogue reads
    // shared memory with ld.shared too).
    const text = ck.kernelText.split("// epilogue")[0]!;
    assert.equal(/ldmatrix\.x\d\.trans /.test(text), loads.includes("trans"), `${a} ${b}`);
    assert.equal(/= lds\./.test(text), loads.includes("lds"), `${a} ${b}`);
  }
});

Deno.test("gemm-mma: the instruction shape from the schedule, and the k-steps", () => {
  const cases: readonly [readonly [string, string, string], string, string, number][] = [
    [F16, "mma 16x8x8", "m16n8k8.f16.f32", 4],
    [F16, "mma 16x8x16", "m16n8k16.f16.f32", 2],
    [["bf16[M, K] row", "bf16[K, N] col", "f32[M, N] row"], "mma 16x8x8", "m16n8k8.bf16.f32", 4],
    [["f32[M, K] row", "f32[K, N] col", "f32[M, N] row"], "mma 16x8x4", "m16n8k4.tf32.f32", 4],
    [["s8[M, K] row", "s8[K, N] col", "s32[M, N] row"], "mma 16x8x16", "m16n8k16.s8.s32", 4],
    [["s4[M, K] row", "s4[K, N] col", "s32[M, N] row"], "mma 16x8x32", "m16n8k32.s4.s32", 4],
    [["f64[M, K] row", "f64[K, N] col", "f64[M, N] row"], "mma 8x8x4", "m8n8k4.f64.f64", 4],
  ];
  for (const [decl, line, name, kSteps] of cases) {
    const ck = compileOk(program(...decl, { schedule: [line] }));
    const m = ck.planned.plan.mma!;
    assert.deepEqual([m.shape, m.kSteps], [name, kSteps], line);
    assert.equal(m.kSteps, ck.planned.plan.tile!.threadblock.k / m.instr.k);
    assert.ok(ck.kernelText.includes(` = mma ${name} `), name);
  }
  const b1 = compileOk(
    program("b1[M, K] row", "b1[K, N] col", "s32[M, N] row", {
      expr: "popc(A[m, k] & B[k, n])",
      schedule: ["mma 16x8x128"],
    }),
  );
  assert.deepEqual(
    [b1.planned.plan.mma!.shape, b1.planned.plan.mma!.kSteps],
    ["m16n8k128.b1.s32.and.popc", 4],
  );
});

// ---- the pass manager -----------------------------------------------------------------------

Deno.test("pass manager: one ordered list of kebab-case passes with summaries", () => {
  assert.deepEqual(PASS_NAMES, [
    "gemm-tile",
    "gemm-warp",
    "gemm-pipeline",
    "gemm-mma",
    "gemm-fragment-load",
    "gemm-occupancy",
    "gemm-workspace",
    "gemm-epilogue-staging",
    "gemm-short-tile",
    "lower-kernel",
  ]);
  assert.deepEqual(GEMM_PASSES.map((p) => p.title), [
    "Tile",
    "WarpPartition",
    "StagePipeline",
    "MmaSelect",
    "FragmentLoad",
    "Occupancy",
    "SplitKWorkspace",
    "EpilogueStaging",
    "ShortTile",
  ]);
  for (const p of [...GEMM_PASSES, LOWER_PASS]) {
    assert.match(p.name, /^[a-z]+(-[a-z]+)*$/);
    assert.ok(p.summary.length > 10 && !p.summary.endsWith("."), p.name);
  }
  assert.equal(
    dumpHeader("Tile", "gemm-tile"),
    "// -----// IR Dump After Tile (gemm-tile) //----- //",
  );
});

function deepFreeze<T>(x: T): T {
  if (typeof x === "object" && x !== null && !Object.isFrozen(x)) {
    Object.freeze(x);
    for (const v of Object.values(x)) deepFreeze(v);
  }
  return x;
}

Deno.test("pass manager: each pass is a pure function that adds its part of the plan", () => {
  const { file, text } = readExample("hgemm");
  const k0 = check(text, { file }).kernels[0]!;
  assert.deepEqual(k0.plan, {});
  const before = JSON.stringify(k0);
  let k = deepFreeze(k0);
  const added: string[][] = [];
  for (const p of GEMM_PASSES) {
    const next = p.run(k);
    verifyGemm(next);
    added.push(Object.keys(next.plan).filter((key) => !(key in k.plan)));
    // Running a pass twice on the same input gives the same output.
    assert.deepEqual(p.run(k), next, p.name);
    k = deepFreeze(next);
  }
  assert.deepEqual(added, [
    ["tile"],
    ["warp"],
    ["pipeline"],
    ["instruction"],
    ["mma"],
    ["occupancy"],
    ["workspace"],
    ["staging"],
    ["short"],
  ]);
  assert.equal(JSON.stringify(k0), before, "the input is untouched");
  // The pipeline gives the same as the passes one by one.
  const r = runPipeline(k0);
  assert.deepEqual(r.gemm, k);
  verifyKernel(r.kernel);
});

Deno.test("pass manager: a pass out of order is an error, not a wrong plan", () => {
  const { file, text } = readExample("s8_gemm");
  const k = check(text, { file }).kernels[0]!;
  assert.throws(() => GEMM_PASSES[1]!.run(k));
});

Deno.test("pass manager: the dump hook sees every pass in order, header first", () => {
  const { file, text } = readExample("dgemm");
  const seen: [string, string][] = [];
  const r = compile(text, { file, dump: (pass, t) => seen.push([pass, t]) });
  assert.ok(r.ok);
  assert.deepEqual(seen.map(([p]) => p), PASS_NAMES);
  const titles = [...GEMM_PASSES.map((p) => p.title), LOWER_PASS.title];
  seen.forEach(([p, t], i) => {
    assert.ok(t.startsWith(dumpHeader(titles[i]!, p) + "\n"), p);
  });
  // The last GEMM-IR dump is the planned kernel; the lowering's is the kernel IR.
  const ck = r.kernels[0]!;
  const last = GEMM_PASSES.at(-1)!;
  assert.equal(
    seen[GEMM_PASSES.length - 1]![1],
    `${dumpHeader(last.title, last.name)}\n${printGemm(ck.planned)}`,
  );
  assert.equal(
    seen[GEMM_PASSES.length]![1],
    `${dumpHeader("LowerToKernelIR", "lower-kernel")}\n${ck.kernelText}`,
  );
});

// ---- golden dumps -----------------------------------------------------------------------

/** Lines of the kernel IR a dump golden keeps. */
const KERNEL_IR_LINES = 60;

/** `--dump-after all` as a golden: GEMM-IR dumps whole, the kernel-IR dump cut. */
function dumpGolden(name: string): string {
  const { file, text } = readExample(name);
  const parts: string[] = [];
  const r = compile(text, {
    file,
    dump: (pass, t) => {
      if (pass !== LOWER_PASS.name) {
        parts.push(t);
        return;
      }
      const lines = t.split("\n");
      // The header line, then the kernel IR's first lines.
      parts.push(
        lines.slice(0, 1 + KERNEL_IR_LINES).join("\n") +
          `\n// ... (kernel IR cut after ${KERNEL_IR_LINES} lines: see --emit kernel-ir)\n`,
      );
    },
  });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  return parts.join("\n");
}

const DUMPS = ["hgemm", "dgemm", "s8_gemm"] as const;

for (const name of DUMPS) {
  Deno.test(`golden dumps after each pass: examples/${name}.gemm`, () => {
    const out = dumpGolden(name);
    const golden = new URL(`tests/golden/dumps/${name}.txt`, ROOT);
    if (UPDATE) {
      Deno.mkdirSync(new URL("tests/golden/dumps/", ROOT), { recursive: true });
      Deno.writeTextFileSync(golden, out);
    }
    let want: string;
    try {
      want = Deno.readTextFileSync(golden);
    } catch {
      assert.fail(`No golden tests/golden/dumps/${name}.txt: run with UPDATE_GOLDEN=1`);
    }
    assert.equal(out, want);
    // Each of the five passes is there, in order.
    const headers = [
      ...out.matchAll(/^\/\/ -----\/\/ IR Dump After \w+ \(([\w-]+)\) \/\/----- \/\/$/gm),
    ]
      .map((m) => m[1]);
    assert.deepEqual(headers, PASS_NAMES);
  });
}

Deno.test("golden dumps: one per listed example, none stale", () => {
  const files = [...Deno.readDirSync(new URL("tests/golden/dumps/", ROOT))].map((e) => e.name)
    .sort();
  assert.deepEqual(files, DUMPS.map((n) => `${n}.txt`).sort());
});

// ---- --emit kernel-ir for every example and both targets ------------------------------------

for (const name of examples()) {
  Deno.test(`--emit kernel-ir: examples/${name}.gemm on ${targetList(" and ")}`, () => {
    const { file, text } = readExample(name);
    for (const target of TARGET_NAMES) {
      const r = compile(text, { file, target });
      assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
      assert.ok(r.kernels.length >= 1);
      for (const ck of r.kernels) {
        verifyKernel(ck.kernel);
        assert.equal(ck.kernel.target, target);
        assert.equal(ck.planned.target, target);
        assert.equal(ck.kernelText, printKernel(ck.kernel));
        assert.ok(ck.kernelText.startsWith(`kernel @${ck.name} target ${target} (`));
        assert.ok(ck.planned.plan.pipeline!.smemBytes <= targetInfo(target).smemPerBlock);
        assert.equal(ck.kernel.dynamicSmemBytes, ck.planned.plan.pipeline!.smemBytes);
        // A warp-specialized kernel's producer warpgroup comes after the plan's warps.
        const producer = ck.planned.plan.pipeline!.tma?.producerThreads ?? 0;
        assert.equal(ck.kernel.threads, ck.planned.plan.warp!.threads + producer);
        assert.ok(ck.planned.plan.mma!.regEstimate <= targetInfo(target).registersPerThread);
      }
    }
  });
}

Deno.test("cli: gemm compile --emit kernel-ir --target sm86 prints every kernel's IR", async () => {
  const { file, text } = readExample("two_kernels");
  const r = await gemm("compile", file, "--emit", "kernel-ir", "--target", "sm86");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
  const want = compile(text, { file, target: "sm86" }).kernels.map((k) => k.kernelText).join("\n");
  assert.equal(r.stdout, want);
  assert.equal([...r.stdout.matchAll(/^kernel @\w+ target sm86 /gm)].length, 2);
});

Deno.test("cli: gemm compile --dump-after all / PASS prints the dumps on stderr", async () => {
  const { file, text } = readExample("hgemm");
  const dumps: string[] = [];
  const ck = compile(text, { file, dump: (_p, t) => dumps.push(t) }).kernels[0]!;
  const [all, one] = await Promise.all([
    gemm("compile", file, "--dump-after", "all"),
    gemm("compile", file, "--dump-after", "gemm-pipeline", "--emit", "kernel-ir"),
  ]);
  assert.equal(all.code, 0, all.stderr);
  assert.equal(all.stderr, dumps.map((d) => d + "\n").join(""));
  assert.equal(all.stdout, ck.gemmText);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(one.stderr, dumps[2] + "\n");
  assert.equal(one.stdout, ck.kernelText);
});

Deno.test("3xtf32: each k-tile's MMAs start from zero and add.f32 into the accumulator", () => {
  const ck = compileOk(
    program("f32[M, K] row", "f32[K, N] col", "f32[M, N] row", { schedule: ["math 3xtf32"] }),
  );
  const kSteps = ck.planned.plan.mma!.kSteps;
  assert.ok(kSteps >= 2);
  const text = ck.kernelText;
  const mmas = [
    ...text.matchAll(/^\s*\{([^}]*)\} = mma (\S+) \{[^}]*\}, \{[^}]*\}, \{([^}]*)\}$/gm),
  ];
  // The zero tile: the C of the first MMA, never written again.
  const zero = mmas[0]![3]!;
  for (const r of zero.split(", ")) {
    assert.equal(text.match(new RegExp(`\\${r} = `, "g"))?.length, 1, `${r} is written once`);
  }
  // Every MMA starts a k-tile's sum from zero or chains on its own result (3 MMAs a product,
  // kSteps k-steps a k-tile); each sum, none of the accumulators, is added with add.f32.
  const starts = mmas.filter((m) => m[3] === zero);
  assert.ok(mmas.every((m) => m[3] === zero || m[3] === m[1]));
  assert.equal(starts.length * 3 * kSteps, mmas.length);
  for (const m of starts) {
    for (const r of m[1]!.split(", ")) {
      assert.match(text, new RegExp(`(%f\\d+) = add\\.f32 \\1, \\${r}\\n`));
    }
  }
});
