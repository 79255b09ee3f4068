/**
 * The benchmark's own kernels (bench/): the mma.sync ceiling kernels with
 * fixed and with random operands, run in the simulator (random operands must
 * be finite values of the operand type, rotated across the MMAs); the clock
 * probe's and the streaming read's (`--read`) hand-written PTX assemble; the ablation kernels of bench/research/ablate.ts
 * remove exactly what they say (and the no-store one still verifies).
 *
 * ptxas tests are skipped visibly without ptxas, and fail without it under
 * `CI=true`.
 */

import assert from "node:assert/strict";
import { simulate } from "../backends/sim/mod.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { printPtx } from "../backends/ptx/print.ts";
import { compile } from "../compiler.ts";
import { type Op, walkOps } from "../ir/kernel.ts";
import { MMA_SHAPES } from "../ir/mma_table.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import {
  FFMA_CHAINS,
  FFMA_UNROLL,
  ffmaKernel,
  ffmaOps,
  OPERAND_SETS,
  PEAK_SHAPES,
  PEAK_THREADS,
  peakKernel,
} from "../bench/mma_peak.ts";
import { CLOCK_PROBE_PTX } from "../bench/clock_probe.ts";
import {
  STREAM_READ_BLOCK,
  STREAM_READ_BLOCKS_PER_SM,
  STREAM_READ_PTX,
  xorWords,
} from "../bench/stream_read.ts";
import { ablate } from "../bench/research/ablate.ts";
import { cutlassName, problemsFor, withSchedule } from "../bench/gpu_bench.ts";

function ops(body: readonly Op[], kind: Op["op"]): Op[] {
  const out: Op[] = [];
  walkOps(body, (o) => {
    if (o.op === kind) out.push(o);
  });
  return out;
}

/** Each thread's output of a one-block peak run (the sum of its accumulators). */
function runPeak(shape: string, operands: "fixed" | "random"): number[] {
  const k = peakKernel(shape, undefined, operands);
  const wide = MMA_SHAPES.find((s) => s.name === shape)!.regBits === 64;
  const out = new Uint8Array(PEAK_THREADS * 8).fill(0xff); // poison (NaN as f32 and f64)
  const res = simulate(k, { grid: [1, 1, 1], args: { out: { bytes: out }, iters: 1 } });
  assert.deepEqual(res.hazards, []);
  assert.equal(res.stats.mmas, 16 * (PEAK_THREADS / 32));
  const view = new DataView(out.buffer);
  const c = MMA_SHAPES.find((s) => s.name === shape)!.cType;
  return Array.from(
    { length: PEAK_THREADS },
    (_, t) =>
      wide
        ? view.getFloat64(t * 8, true)
        : c === "f32"
        ? view.getFloat32(t * 4, true)
        : view.getInt32(t * 4, true),
  );
}

for (const [type, shape] of Object.entries(PEAK_SHAPES)) {
  Deno.test(`peak kernel ${type}: random operands are finite and differ from the fixed ones`, () => {
    const fixed = runPeak(shape, "fixed");
    const random = runPeak(shape, "random");
    assert.ok(random.every(Number.isFinite), `${type}: a non-finite result`);
    assert.ok(fixed.every(Number.isFinite), `${type}: a non-finite result (fixed)`);
    assert.ok(random.some((v, i) => v !== fixed[i]), `${type}: random operands change nothing`);
    // Distinct thread results: the operands depend on the thread.
    assert.ok(new Set(random).size > PEAK_THREADS / 4, `${type}: too few distinct results`);
  });

  Deno.test(`peak kernel ${type}: random operands rotate across the MMAs`, () => {
    const mmas = ops(peakKernel(shape, undefined, "random").body, "mma") as Extract<
      Op,
      { op: "mma" }
    >[];
    const aSets = new Set(mmas.map((m) => m.a.map((r) => r.id).join()));
    const bSets = new Set(mmas.map((m) => m.b.map((r) => r.id).join()));
    assert.equal(aSets.size, OPERAND_SETS);
    assert.equal(bSets.size, OPERAND_SETS);
    for (let i = 1; i < mmas.length; i++) {
      assert.notEqual(mmas[i]!.a, mmas[i - 1]!.a, "consecutive MMAs share A");
    }
  });
}

/** Each thread's f32 output of a one-block FFMA ceiling run of `iters` rounds. */
function runFfma(operands: "fixed" | "random", iters: number): Float32Array {
  const out = new Uint8Array(PEAK_THREADS * 4).fill(0xff); // poison (NaN)
  const res = simulate(ffmaKernel(operands), {
    grid: [1, 1, 1],
    args: { out: { bytes: out }, iters },
  });
  assert.deepEqual(res.hazards, []);
  return new Float32Array(out.buffer);
}

Deno.test("FFMA ceiling kernel: each thread's chains add up as fma.rn.f32 computes them", () => {
  const iters = 3;
  const got = runFfma("fixed", iters);
  const bits = new Uint32Array(1);
  const f = new Float32Array(bits.buffer);
  const value = (tid: number, salt: number) => {
    bits[0] = ((tid & 0xff) | (0x3f800000 + salt)) >>> 0;
    return f[0]!;
  };
  for (let tid = 0; tid < PEAK_THREADS; tid++) {
    const [a, b] = [value(tid, 1), value(tid, 2)];
    // a * b is exact in a double (24 + 24 bits), and so is a * b + acc here:
    // one rounding to f32, as fma.rn.f32.
    let acc = 0;
    for (let i = 0; i < iters * FFMA_UNROLL; i++) acc = Math.fround(a * b + acc);
    let sum = acc;
    for (let j = 1; j < FFMA_CHAINS; j++) sum = Math.fround(sum + acc);
    assert.equal(got[tid], sum, `thread ${tid}`);
  }
  // The operation count the benchmark divides by: 2 per fma the loop body issues, per thread.
  const loopFmas =
    ops(ffmaKernel("fixed").body, "mad").filter((o) => o.op === "mad" && o.type === "f32").length;
  assert.equal(ffmaOps(1, iters), 2 * loopFmas * iters * PEAK_THREADS);
});

Deno.test("FFMA ceiling kernel: random operands are finite, differ by thread, one pair a chain", () => {
  const fixed = runFfma("fixed", 2);
  const random = runFfma("random", 2);
  assert.ok(random.every(Number.isFinite));
  assert.ok(random.some((v, i) => v !== fixed[i]));
  assert.ok(new Set(random).size > PEAK_THREADS / 4, "too few distinct results");
  const fmas = ops(ffmaKernel("random").body, "mad").filter((o) =>
    o.op === "mad" && o.type === "f32"
  ) as Extract<Op, { op: "mad" }>[];
  assert.equal(fmas.length, FFMA_UNROLL * FFMA_CHAINS);
  // Each chain its own (x, y) pair, and each x against several y in a row.
  const pairs = new Set(fmas.map((m) => `${JSON.stringify(m.a)} ${JSON.stringify(m.b)}`));
  assert.equal(pairs.size, FFMA_CHAINS);
  assert.equal(JSON.stringify(fmas[0]!.a), JSON.stringify(fmas[1]!.a));
  assert.notEqual(JSON.stringify(fmas[0]!.b), JSON.stringify(fmas[1]!.b));
});

ptxasTest(
  "peak kernels (fixed and random) and the clock probe assemble for sm_80",
  async (ptxas) => {
    const kernels = Object.values(PEAK_SHAPES).flatMap((s) => [
      peakKernel(s),
      peakKernel(s, undefined, "random"),
    ]).concat([ffmaKernel("fixed"), ffmaKernel("random")]);
    const r = await runPtxas(printPtx(kernels, { minBlocksPerSm: 1 }), {
      arch: "sm_80",
      ptxasPath: ptxas,
    });
    assert.ok(r.ok, r.log);
    assert.equal(r.kernels.length, kernels.length);
    assert.ok(r.kernels.every((k) => k.spillStoreBytes === 0 && k.stackFrameBytes === 0));
    const p = await runPtxas(CLOCK_PROBE_PTX, { arch: "sm_80", ptxasPath: ptxas });
    assert.ok(p.ok, p.log);
    assert.deepEqual(p.kernels.map((k) => k.name), ["clock_probe"]);
  },
);

ptxasTest(
  "bench/stream_read.ts's PTX assembles for sm_80 and sm_90, its grid resident at once",
  async (ptxas) => {
    for (const arch of ["sm_80", "sm_90"] as const) {
      const r = await runPtxas(STREAM_READ_PTX, { arch, ptxasPath: ptxas });
      assert.ok(r.ok, r.log);
      const [k] = r.kernels;
      assert.deepEqual(r.kernels.map((x) => x.name), ["stream_read"]);
      assert.ok(k!.spillStoreBytes === 0 && k!.stackFrameBytes === 0, arch);
      // 8 blocks of 256 threads on an SM's 65,536 registers: at most 32 a thread.
      const threads = STREAM_READ_BLOCK * STREAM_READ_BLOCKS_PER_SM;
      assert.ok(k!.registers * threads <= 65536, `${arch}: ${k!.registers} registers`);
    }
    // Four loads in flight a thread in the main loop, then one at a time, for A and for B.
    assert.equal(STREAM_READ_PTX.match(/ld\.global\.cg\.v4\.u32/g)?.length, 2 * (4 + 1));
    assert.equal(STREAM_READ_PTX.match(/st\.global\.cs\.v4\.u32/g)?.length, 1);
  },
);

Deno.test("xorWords: the xor of every little-endian 32-bit word, from an accumulator", () => {
  const bytes = new Uint8Array([1, 0, 0, 0, 0, 1, 0, 0, 0xff, 0, 0, 0x80, 9, 9, 9, 9]);
  assert.equal(xorWords(bytes.subarray(0, 12)), (1 ^ 0x100 ^ 0x800000ff) >>> 0);
  assert.equal(xorWords(bytes.subarray(12), xorWords(bytes.subarray(0, 12))), xorWords(bytes));
  // An offset view reads its own words.
  assert.equal(xorWords(bytes.subarray(4, 8)), 0x100);
});

Deno.test("ablation kernels remove exactly one side of the main loop", () => {
  const src = Deno.readTextFileSync(new URL("../bench/kernels/f16.gemm", import.meta.url));
  const r = compile(src);
  assert.ok(r.ok);
  const k = r.kernels[0]!.kernel;
  const count = (body: readonly Op[], kind: Op["op"]) => ops(body, kind).length;
  assert.ok(count(k.body, "mma") > 0 && count(k.body, "cpasync") > 0);
  const copy = ablate(k, "copy", "k_copy");
  assert.equal(count(copy.body, "mma"), 0);
  assert.equal(count(copy.body, "ldmatrix"), 0);
  assert.equal(count(copy.body, "cpasync"), count(k.body, "cpasync"));
  assert.equal(count(copy.body, "bar"), count(k.body, "bar"));
  assert.ok(copy.dynamicSmemBytes >= 116 * 1024, "copy-only keeps one block per SM");
  const math = ablate(k, "math", "k_math");
  assert.equal(count(math.body, "cpasync"), 0);
  assert.equal(count(math.body, "mma"), count(k.body, "mma"));
  assert.equal(count(math.body, "wait"), count(k.body, "wait"));
  assert.equal(math.dynamicSmemBytes, k.dynamicSmemBytes);
  assert.equal(math.name, "k_math");
  const nostore = ablate(k, "nostore", "k_nostore");
  const stores = ops(nostore.body, "stg") as Extract<Op, { op: "stg" }>[];
  assert.equal(stores.length, count(k.body, "stg"));
  const never = stores[0]!.guard!.pred;
  assert.ok(stores.every((o) => o.guard?.pred === never && !o.guard.negate));
  const def = ops(nostore.body, "setp").find((o) => o.op === "setp" && o.dst === never);
  assert.ok(def !== undefined && def.op === "setp" && def.cmp === "eq", "the predicate is M == ~0");
  assert.equal(count(nostore.body, "mma"), count(k.body, "mma"));
  verifyKernel(nostore);
});

Deno.test("D = f16(A * B) rounds each accumulator to f16 once (no f16 -> f32 -> f16 round trip)", () => {
  const src = Deno.readTextFileSync(new URL("../bench/kernels/f16.gemm", import.meta.url));
  const r = compile(src);
  assert.ok(r.ok);
  const k = r.kernels[0]!.kernel;
  const toF16 = ops(k.body, "cvt").filter((o) => o.op === "cvt" && o.kind === "f16.f32").length;
  const accs = ops(k.body, "mma").length > 0 ? 64 * 64 / 32 : 0; // 64x64 warp tile, 32 lanes
  assert.equal(toF16, accs);
  const widen = ops(k.body, "cvt").filter((o) => o.op === "cvt" && o.kind === "f32.f16").length;
  assert.equal(widen, 0, "no f16 -> f32 conversion is left behind");
  // Pairs stored together: one bounds predicate per pair (64 pairs), none for the second element.
  const bounds = ops(k.body, "setp").filter((o) => o.op === "setp" && o.type === "u32").length;
  assert.ok(bounds <= 64 + 64 + 8, `${bounds} u32 compares in the kernel`);
});

Deno.test("benchmark kernel names in CUTLASS's style, f32 operands included", () => {
  const name = (file: string, t: Parameters<typeof cutlassName>[1], M: number, N: number) => {
    const src = Deno.readTextFileSync(new URL(`../bench/kernels/${file}.gemm`, import.meta.url));
    const r = compile(src, { file: `${file}.gemm`, sizeHints: { M, N, K: 8192 }, sms: 132 });
    assert.ok(r.ok);
    return cutlassName(r.kernels[0]!, t);
  };
  assert.equal(name("f16", "f16", 8192, 8192), "s16816gemm_f16_160x256_32x4_tn_align8");
  assert.equal(name("tf32", "tf32", 128, 8192), "s1688tf32gemm_128x256_16x5_tn_align4_splitk4");
  assert.equal(name("s8", "s8", 8192, 8192), "i16832gemm_s8_128x256_64x4_tn_align16");
  assert.equal(name("f64", "f64", 8192, 8192), "d884gemm_64x64_16x4_tn_align2");
  assert.equal(name("f32", "f32", 128, 8192), "sgemm_128x128_8x4_tn_align4_splitk4");
  assert.equal(name("3xtf32", "3xtf32", 8192, 8192), "s1688gemm_3xtf32_128x64_32x4_tn_align4");
  // sm90's persistent f16 kernel at 8192³ runs on clusters of 2 by default.
  const src = Deno.readTextFileSync(new URL("../bench/kernels/f16.gemm", import.meta.url));
  const sm90 = compile(src, { sizeHints: { M: 8192, N: 8192, K: 8192 }, sms: 132, target: "sm90" });
  assert.ok(sm90.ok);
  assert.equal(
    cutlassName(sm90.kernels[0]!, "f16"),
    "s6425616gemm_f16_128x256_64x3_tn_align8_cluster2",
  );
});

Deno.test("bench --schedule: the lines become the kernel's schedule block", () => {
  const src = Deno.readTextFileSync(new URL("../bench/kernels/f16.gemm", import.meta.url));
  const r = compile(withSchedule(src, "target sm90; stages 2; cluster 1"), { sms: 132 });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  assert.equal(ck.gemm.target, "sm90");
  assert.equal(ck.planned.schedule.stages, 2);
  assert.equal(ck.planned.schedule.cluster, 1);
});

Deno.test("bench --shapes: named problems, S for S³ and MxNxK, in the option's order", () => {
  assert.equal(problemsFor(undefined).length, 4);
  assert.deepEqual(problemsFor(["3072", "odd", "256x4096x1024"]), [
    { shape: "3072", M: 3072, N: 3072, K: 3072 },
    { shape: "odd", M: 5000, N: 5000, K: 5000 },
    { shape: "256x4096x1024", M: 256, N: 4096, K: 1024 },
  ]);
  for (const bad of ["0", "12x34", "big", "2x3x-4", "1.5"]) {
    assert.throws(() => problemsFor([bad]), /--shapes/, bad);
  }
});
