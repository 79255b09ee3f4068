/**
 * How the GEMM passes' plan follows what is known: sizes that shrink the tile, the schedule's
 * swizzle, split-k, threadblock, warp tile and MMA instruction shape, the alignment that sets
 * the copy width (cp.async 16/8/4 bytes or synchronous), the layout that sets the XOR-swizzle
 * shift and the fragment loads (ldmatrix, ldmatrix.trans, ld.shared), and 3xtf32's kernel IR.
 *
 * The per-type defaults are in tests/passes_defaults_test.ts.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { DEFAULT_TARGET, targetInfo } from "../ir/target.ts";
import { readExample } from "./_examples.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { compileOk, F16, program, shape, smem } from "./_passes.ts";

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
    // tiles make 416 blocks, 3.9 waves, and wastes less (passes/waves.ts waveAwareTile).
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

Deno.test("gemm-tile: a k-tile is deepened only where two stages of it fit the target", () => {
  // A sparse A's tile on sm86 is twice as deep already (128x256x64): a small grid's doubling
  // would have made 64x256x128, two stages of 146 KB over sm86's 99 KB (E0204 before).
  const { file, text } = readExample("sparse");
  const hints = { M: 16, N: 4096, K: 4096 };
  const sm86 = compile(text, { file, target: "sm86", sizeHints: hints });
  assert.ok(sm86.ok, sm86.diagnostics.map((d) => d.message).join("; "));
  const t = sm86.kernels[0]!.planned.plan.tile!;
  assert.equal(`${shape(t.threadblock)} split ${t.splitK}`, "64x256x64 split 2");
  assert.notEqual(t.smallGrid, true);
  const pipe = sm86.kernels[0]!.planned.plan.pipeline!;
  assert.ok(pipe.smemBytes <= targetInfo("sm86").smemPerBlock);
  // It runs: the simulator agrees at odd sizes (K split unevenly), no hazard.
  for (const sizes of [{ M: 7, N: 40, K: 208 }, { M: 33, N: 264, K: 1008 }]) {
    const rep = simulateGemm(sm86.kernels[0]!, sizes, { seed: 5 });
    assert.ok(rep.ok, `${JSON.stringify(sizes)}: ${JSON.stringify(rep.comparison)}`);
    assert.deepEqual(rep.sim.hazards, []);
  }
  // sm80 at M = 128, N = K = 8192: the 128x64 tile's deep16 k-tile (4x the sparse default's 128)
  // would have needed two stages of 136 KB (E0204 before); it keeps 128x64x128.
  const long = compile(text, { file, target: "sm80", sizeHints: { M: 128, N: 8192, K: 8192 } });
  assert.ok(long.ok, long.diagnostics.map((d) => d.message).join("; "));
  assert.equal(shape(long.kernels[0]!.planned.plan.tile!.threadblock), "128x64x128");
  const rep = simulateGemm(long.kernels[0]!, { M: 33, N: 136, K: 528 }, { seed: 6 });
  assert.ok(rep.ok && rep.sim.hazards.length === 0, JSON.stringify(rep.comparison));
  // sm80, whose shared memory holds it, keeps its small grid's deeper k-tile.
  const sm80 = compile(text, { file, target: "sm80", sizeHints: hints });
  assert.ok(sm80.ok);
  const t80 = sm80.kernels[0]!.planned.plan.tile!;
  assert.equal(`${shape(t80.threadblock)} ${t80.smallGrid}`, "64x64x256 true");
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
