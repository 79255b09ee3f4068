import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { simtShape } from "../ir/simt.ts";
import { ptxTarget } from "../backends/ptx/print.ts";
import { targetInfo } from "../ir/target.ts";

function kernel(a: string, b: string, d: string, epilogue: string, sched = "") {
  const r = compile(
    `kernel simt {
  A: f32[M, K] ${a}
  B: f32[K, N] ${b}
${epilogue.includes("bias") ? "  bias: f32[N]\n" : ""}  D: ${d}[M, N] row
  alpha: f32 = 1.0
  D[m, n] = ${epilogue}
  schedule {
    math f32
${sched}  }
}`,
    { file: "simt.gemm" },
  );
  assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
  return r.kernels[0]!;
}

Deno.test("SIMT shape: cells of 8 x 4 lanes tile the warp tile, every element once", () => {
  const s = simtShape(32, 64); // a 4 x 16 micro-tile a lane, in runs of 4 x 4
  assert.equal(s.name, "simt.f32.4x16");
  assert.deepEqual([s.m, s.n, s.a.regs, s.b.regs, s.c.regs], [32, 16, 4, 4, 16]);
  const seen = new Set<string>();
  for (let ti = 0; ti < 32 / s.m; ti++) {
    for (let tj = 0; tj < 64 / s.n; tj++) {
      for (let l = 0; l < 32; l++) {
        for (let r = 0; r < s.c.regs; r++) {
          const [row, col] = s.c.coord(l, r, 0);
          seen.add(`${ti * s.m + row},${tj * s.n + col}`);
        }
      }
    }
  }
  assert.equal(seen.size, 32 * 64);
  // Lane 5 (g 1, tig 1), register 6: row 1 * 4 + 1, column 1 * 4 + 2 of the cell.
  assert.deepEqual(s.c.coord(5, 6, 0), [5, 6]);
  // Runs of 2 where 4 does not divide the micro-tile (16 x 24: 2 x 6 a lane).
  const odd = simtShape(16, 24);
  assert.deepEqual([odd.m, odd.n, odd.c.regs], [16, 8, 4]);
  assert.throws(() => simtShape(20, 64));
});

Deno.test("SIMT: fragments load as ld.shared.v4 runs in every layout; copies and occupancy", () => {
  // The default warp tile 64x32: an 8 x 8 micro-tile a lane, per k-step 2 vectors of A and 2 of
  // B, 8 k-steps in the loop body and the first k-step's fragments once more before the loop.
  const vecs = (t: string) => (t.match(/ld\.shared\.v4\.b32/g) ?? []).length;
  const scalars = (t: string) => (t.match(/ld\.shared\.b32/g) ?? []).length;
  for (const [a, b] of [["col", "row"], ["row", "col"], ["col", "col"], ["row", "row"]]) {
    const k = kernel(a!, b!, "f32", "A[m, k] * B[k, n]");
    assert.equal(k.planned.plan.mma!.shape, "simt.f32.8x8");
    assert.equal(vecs(k.ptx), 4 * (8 + 1), `${a}/${b}`);
    assert.equal(scalars(k.ptx), 0, `${a}/${b}`);
    // Two blocks an SM, but where B alone is transposed (4-byte cp.async: it spilled at 128).
    const two = !(a === "col" && b === "col");
    assert.equal(/\.minnctapersm 2\n/.test(k.ptx), two, `${a}/${b}`);
    assert.equal(/, 2 blocks per SM\n/.test(k.kernelText), two);
    // A K-contiguous operand (row-major A, column-major B) is stored transposed: M/N-contiguous
    // in shared memory. A transposed A goes through registers (16-byte loads, 4-byte stores),
    // and so does B with it; a transposed B alone is filled by 4-byte cp.async. An
    // M/N-contiguous operand is copied by 16-byte cp.async.
    const pipe = k.planned.plan.pipeline!;
    const aT = a === "row";
    for (const [p, kContig] of [[pipe.a, aT], [pipe.b, b === "col"]] as const) {
      const regs = kContig && aT;
      assert.equal(p.contiguous, "outer");
      assert.equal(p.transpose === true, kContig);
      assert.equal(p.viaRegisters === true, regs, `${a}/${b}`);
      assert.equal(p.async, !regs);
      assert.equal(p.copyBytes, kContig && !regs ? 4 : 16);
    }
    assert.equal(/ld\.global\.v4\.b32/.test(k.ptx), aT);
  }
});

Deno.test("SIMT: transposed tiles agree with the reference at ragged sizes", () => {
  const src = (align: number) =>
    `kernel t {
  A: f32[M, K] row align ${align}
  B: f32[K, N] col align ${align}
  D: f32[M, N] row align 1
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    math f32
  }
}`;
  // Align 1: 4-byte cp.async a line apart; the default tile (lines of 8 elements) and two whose
  // lines of 16 elements put rows 8 apart in one bank group (2-way conflicts on those copies;
  // a shortcut). Align 4: through registers (16-byte loads), a tail of 4 in the last k-tile.
  const cases: [number, string, number][] = [
    [1, "", 1],
    [1, "    threadblock 64x128x16\n    warp 32x32x16\n", 2],
    [1, "    threadblock 32x32x16\n    warp 8x8x16\n", 2],
    // One warp, lines of 64 elements: each thread copies elements of one line 32 apart (a
    // round of copies is part of a line; fuzz seed 30303 found this path reading the wrong
    // lines), 4-way conflicts.
    [1, "    threadblock 32x32x64\n", 4],
    [4, "", 1],
    [4, "    threadblock 64x128x16\n    warp 32x32x16\n", 1],
  ];
  let seed = 11;
  for (const [align, sched, conflicts] of cases) {
    const text = src(align).replace("    math f32\n", `    math f32\n${sched}`);
    const r = compile(text, { file: "t.gemm" });
    assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
    const k = r.kernels[0]!;
    const pipe = k.planned.plan.pipeline!;
    const where = `align ${align} ${sched}`;
    assert.equal(pipe.a.transpose, true);
    assert.equal(pipe.b.transpose, true);
    assert.equal(pipe.a.viaRegisters === true, align === 4, where);
    const scale = align === 4 ? 32 / k.planned.plan.tile!.threadblock.k : 1;
    assert.deepEqual([pipe.a.swizzleScale, pipe.b.swizzleScale], [scale, scale], where);
    const sizes = { M: 133, N: 70, K: align === 4 ? 36 : 37 };
    const rep = simulateGemm(k, sizes, { seed: seed++ });
    assert.ok(rep.ok, `${where}: ${JSON.stringify(rep.comparison.first)}`);
    assert.equal(rep.sim.hazardCount, 0);
    // The copies of a warp land in rows of the tile in distinct bank groups (but for the
    // shortcut), and the fragments' vector loads read consecutive chunks.
    const banks = rep.sim.stats.banks;
    const copies = align === 4 ? banks.sts : banks.cpasync;
    assert.ok(copies.requests > 0);
    assert.equal(copies.wavefronts, copies.ideal * conflicts, where);
    assert.equal(banks.lds.wavefronts, banks.lds.ideal, where);
  }
});

Deno.test("SIMT: a skinny problem splits K over two blocks an SM's worth, and agrees", () => {
  const src = Deno.readTextFileSync(new URL("../bench/kernels/f32.gemm", import.meta.url));
  const at = (M: number, N: number, K: number) => {
    const r = compile(src, { file: "f32.gemm", sizeHints: { M, N, K }, sms: 132 });
    assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
    return r.kernels[0]!;
  };
  // M=128, N=8192: 64 tiles of 128x128, two blocks an SM on 132 SMs: split 4 (not 2).
  const k = at(128, 8192, 8192);
  assert.equal(k.kernel.grid.splitK, 4);
  assert.deepEqual(k.planned.plan.tile!.threadblock, { m: 128, n: 128, k: 8 });
  assert.equal(k.kernel.minBlocksPerSm, 2);
  // Enough tiles: no split.
  assert.equal(at(4096, 4096, 4096).kernel.grid.splitK, 1);
  assert.equal(at(1024, 1024, 8192).kernel.grid.splitK, 4);
  // The split kernel at ragged sizes, splits of unequal k-tile counts.
  const rep = simulateGemm(k, { M: 72, N: 136, K: 300 }, { seed: 17 });
  assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
  assert.equal(rep.sim.hazardCount, 0);
});

Deno.test("SIMT: wave-aware tiles, 128x64 where 128x128 leaves a last wave nearly empty", () => {
  const src = Deno.readTextFileSync(new URL("../bench/kernels/f32.gemm", import.meta.url));
  const at = (n: number) => {
    const r = compile(src, { file: "f32.gemm", sizeHints: { M: n, N: n, K: n }, sms: 132 });
    assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
    return r.kernels[0]!;
  };
  // 5000^3: 1600 tiles of 128x128 on 264 slots (two blocks an SM) are 6.06 waves; 3160 of
  // 128x64 are 11.97. 4096^3 and 8192^3 fill their waves alike with either: 128x128.
  const odd = at(5000);
  assert.deepEqual(odd.planned.plan.tile!.threadblock, { m: 128, n: 64, k: 8 });
  assert.equal(odd.kernel.threads, 128);
  for (const n of [4096, 8192]) {
    assert.deepEqual(at(n).planned.plan.tile!.threadblock, { m: 128, n: 128, k: 8 });
  }
  const rep = simulateGemm(odd, { M: 140, N: 72, K: 52 }, { seed: 23 });
  assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
  assert.equal(rep.sim.hazardCount, 0);
});

Deno.test("math f32 lowers to fma.rn.f32 from shared memory, no mma", () => {
  const k = kernel("row", "col", "f32", "A[m, k] * B[k, n]");
  assert.equal(k.planned.plan.mma!.shape, "simt.f32.8x8");
  assert.match(k.kernelText, /= mad\.f32 /);
  assert.doesNotMatch(k.kernelText, /= mma /);
  assert.match(k.ptx, /fma\.rn\.f32/);
  assert.doesNotMatch(k.ptx, /mma\.sync/);
});

Deno.test("SIMT agrees with the reference for every layout, sizes on and off the tile", () => {
  const cases: [string, string, string, string, Record<string, number>][] = [
    ["row", "col", "f32", "A[m, k] * B[k, n]", { M: 128, N: 128, K: 64 }],
    ["col", "row", "f32", "alpha * A[m, k] * B[k, n] + bias[n]", { M: 76, N: 52, K: 44 }],
    ["row", "row", "f16", "f16(relu(A[m, k] * B[k, n]))", { M: 130, N: 40, K: 24 }],
    ["col", "col", "bf16", "bf16(A[m, k] * B[k, n] - bias[n])", { M: 64, N: 200, K: 20 }],
  ];
  let seed = 1;
  for (const [a, b, d, e, sizes] of cases) {
    const rep = simulateGemm(kernel(a, b, d, e), sizes, { seed: seed++ });
    assert.ok(rep.ok, `${a}/${b}/${d} ${JSON.stringify(rep.comparison.first)}`);
    assert.equal(rep.sim.hazardCount, 0);
  }
  // A smaller schedule: threadblock 64x64x16, warp 32x32.
  const small = kernel(
    "row",
    "col",
    "f32",
    "A[m, k] * B[k, n]",
    "    threadblock 64x64x16\n    warp 32x32x16\n",
  );
  assert.equal(small.planned.plan.mma!.shape, "simt.f32.4x8");
  assert.ok(simulateGemm(small, { M: 100, N: 92, K: 80 }, { seed: 9 }).ok);
});

ptxasTest("SIMT: two blocks an SM where 128 registers suffice; no spill", async (ptxas) => {
  // The default 8x8 micro-tile in every layout, with and without a bias: two blocks an SM, but
  // one where B alone is transposed (4-byte cp.async; with a bias it spilled 16-48 bytes at 128
  // registers). One block at align 1 (8-60 bytes spilled at 128), and for a 64x64 warp tile
  // (8 x 16 a lane: 128 accumulators; 1.9 KB spilled at 128). Split-K: two blocks up to 4
  // splits (the C-reading example, as `--tune` picks it for M=96, N=4096), one beyond (the last
  // split's reduction of 8 spilled 8-12 bytes at 128).
  const cases: [CompiledKernel, number][] = [];
  const example = Deno.readTextFileSync(new URL("../examples/sgemm_simt.gemm", import.meta.url));
  const hinted = compile(example, {
    file: "sgemm_simt.gemm",
    sizeHints: { M: 96, N: 4096, K: 2048 },
    sms: 132,
  });
  assert.ok(hinted.ok);
  assert.equal(hinted.kernels[0]!.kernel.grid.splitK, 4);
  cases.push([hinted.kernels[0]!, 2]);
  cases.push([kernel("row", "col", "f32", "A[m, k] * B[k, n]", "    split_k 8\n"), 1]);
  for (const [a, b] of [["row", "col"], ["col", "row"], ["col", "col"], ["row", "row"]]) {
    const blocks = a === "col" && b === "col" ? 1 : 2;
    cases.push([kernel(a!, b!, "f32", "A[m, k] * B[k, n]"), blocks]);
    cases.push([kernel(a!, b!, "f32", "alpha * A[m, k] * B[k, n] + bias[n]"), blocks]);
  }
  const big = "    threadblock 256x128x8\n    warp 64x64x8\n";
  cases.push([kernel("col", "row", "f32", "A[m, k] * B[k, n]", big), 1]);
  const align1 = compile(
    `kernel a1 {
  A: f32[M, K] row align 1
  B: f32[K, N] col align 1
  C: f32[M, N] row align 1
  D: f32[M, N] row align 1
  D[m, n] = A[m, k] * B[k, n] + C[m, n]
  schedule {
    math f32
  }
}`,
    { file: "a1.gemm" },
  );
  assert.ok(align1.ok);
  cases.push([align1.kernels[0]!, 1]);
  for (const [ck, blocks] of cases) {
    const where = ck.kernelText.slice(0, 160);
    assert.equal(ck.kernel.minBlocksPerSm ?? 1, blocks, where);
    const p = await runPtxas(ck.ptx, { arch: ptxTarget(ck.kernel.target), ptxasPath: ptxas });
    assert.ok(p.ok, p.log);
    const k = p.kernels[0]!;
    assert.equal(k.spillStoreBytes + k.spillLoadBytes + k.stackFrameBytes, 0, where);
    assert.ok(
      k.registers <= targetInfo(ck.kernel.target).registersPerSm / (blocks * ck.kernel.threads),
    );
  }
});
