/**
 * The rotated k-loop (schedule key `rotate_k`, passes/lower/rotate_k.ts): parsed and refused
 * where it cannot be (E0112, E0215); the skinny rule's default (passes/skinny.ts
 * `SKINNY_ROTATE_K`) and `rotate_k 0` against it; and the kernels themselves in the simulator at
 * odd sizes (M = 1, 7, 33; K not a multiple of the k-tile, K under the prologue's k-tiles, one
 * k-tile; split-K with a partial and an empty split): they agree with the reference with no
 * hazard, integer results bit for bit with the unrotated kernel's and f32 sums in another order
 * (so the rotation is on), and a kernel whose pointers do not wrap is caught. sm90's TMA
 * pipelines rotate in their producer (`tmaKSequence`): one tile a block, split-K, clusters of 2
 * along M and N, persistent, Stream-K and ping-pong blocks, and the boxes copied before the wait
 * (`pdlEarly`), simulated the same way; a producer that does not wrap is caught (its boxes past K
 * are zeros: a wrong result).
 */

import assert from "node:assert/strict";
import { compile, type CompileOptions } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { explainSchedules } from "../cli/explain.ts";
import { SKINNY_ROTATE_K } from "../passes/skinny.ts";
import { earlyDecisions } from "../passes/lower/early.ts";
import { walkOps } from "../ir/kernel.ts";
import { SimError } from "../backends/sim/mod.ts";
import { editOps } from "./_edit_ops.ts";

/** A TN GEMM of `ab` operands into `d` (accumulated in `acc`) with schedule lines. */
const GEMM = (ab: string, d: string, lines: readonly string[]) =>
  `kernel r {\n  A: ${ab}[M, K] row\n  B: ${ab}[K, N] col\n  D: ${d}[M, N] row\n` +
  `  D[m, n] = A[m, k] * B[k, n]\n  schedule {\n${lines.map((l) => `    ${l}\n`).join("")}  }\n}\n`;

/** The decode tile (16x32x256, 4 stages) with `rotate_k R`. */
const SKINNY = (ab: string, d: string, r: number, more: readonly string[] = []) =>
  GEMM(ab, d, [
    "threadblock 16x32x256",
    "warp 16x8x256",
    "stages 4",
    `rotate_k ${r}`,
    ...more,
  ]);

const one = (src: string, o: CompileOptions = {}) => compile(src, o).kernels[0]!;

/** The diagnostic codes a source is refused with (none: compiled). */
const codes = (src: string, o: CompileOptions = {}) =>
  compile(src, o).diagnostics.map((d) => d.code);

/** How many `rem` operations the kernel has (the rotation adds the one of its first k-tile). */
function rems(src: string): number {
  let n = 0;
  walkOps(one(src).kernel.body, (o) => {
    if (o.op === "bin" && o.fn === "rem") n++;
  });
  return n;
}

Deno.test("rotate_k: 0 to 65535 parse, another word or a larger number is E0112", () => {
  for (const r of [0, 1, 5, 65535]) assert.deepEqual(codes(SKINNY("f16", "f32", r)), [], `${r}`);
  const as = (v: string) => codes(SKINNY("f16", "f32", 0).replace("rotate_k 0", `rotate_k ${v}`));
  for (const v of ["x", "65536", "1x2"]) assert.deepEqual(as(v), ["E0112"], v);
  assert.deepEqual(as("-1"), ["E0001"]); // not a value the grammar reads
});

Deno.test("rotate_k: refused where the loop cannot rotate (E0215): cp.async wgmma, grouped", () => {
  assert.deepEqual(codes(SKINNY("f16", "f32", 1, ["split_k 2"])), []);
  const wg = GEMM("f16", "f32", ["threadblock 128x128x64", "target sm90", "rotate_k 1"]);
  assert.deepEqual(codes(wg), []);
  assert.notEqual(one(wg).planned.plan.pipeline!.tma, undefined);
  // A aligned to 8 bytes has no tensor map: its wgmma kernel is fed by cp.async.
  assert.deepEqual(codes(wg.replace("K] row", "K] row align 4")), ["E0215"]);
  const moe = Deno.readTextFileSync(new URL("../examples/moe.gemm", import.meta.url));
  const grouped = moe.replace(/\n}\s*$/, "\n  schedule { rotate_k 1 }\n}\n");
  assert.notEqual(grouped, moe);
  assert.deepEqual(codes(grouped), ["E0215"]);
});

Deno.test("rotate_k: the skinny rule's 16-bit tile rotates by SKINNY_ROTATE_K; rotate_k 0 turns it off", () => {
  const src = GEMM("f16", "f16", []);
  const sizes = { M: 16, N: 4096, K: 4096 };
  const o: CompileOptions = { sizeHints: sizes, sms: 132, target: "sm90" };
  const ck = one(src, o);
  assert.equal(ck.planned.schedule.threadblock?.m, 16);
  assert.equal(ck.planned.schedule.rotateK, SKINNY_ROTATE_K);
  const text = explainSchedules(compile(src, o).kernels);
  assert.match(text, new RegExp(`rotate_k ${SKINNY_ROTATE_K} \\(SKINNY_ROTATE_K\\)`));
  // s8's skinny tile is not rotated (it lost on the GPU), nor is a split-K one (K = 14336).
  const s8 = one(GEMM("s8", "s32", []), o).planned.schedule;
  assert.ok(s8.threadblock?.m === 16 && s8.splitK === 1 && s8.rotateK === undefined);
  const split = one(src, { ...o, sizeHints: { M: 16, N: 4096, K: 14336 } }).planned.schedule;
  assert.ok(split.splitK! > 1 && split.rotateK === undefined);
  // Nor is a tile not measured rotated: the A100's 16x64x128 (108 SMs).
  const a100 = one(src, { sizeHints: sizes, sms: 108, target: "sm80" }).planned.schedule;
  assert.deepEqual(a100.threadblock, { m: 16, n: 64, k: 128 });
  assert.equal(a100.rotateK, undefined);
  // Early copies of B (cache_b evict_normal: they are not declined) rotate with the loop.
  const early: CompileOptions = { ...o, pdl: true, pdlEarly: ["B"] };
  const normal = GEMM("f16", "f16", ["cache_b evict_normal"]);
  const both = one(normal, early).planned;
  assert.equal(both.schedule.rotateK, SKINNY_ROTATE_K);
  assert.deepEqual(earlyDecisions(both).map((d) => d.early), [true]);
  const off = one(GEMM("f16", "f16", ["rotate_k 0"]), o);
  assert.equal(off.planned.schedule.rotateK, 0);
  assert.deepEqual(off.planned.schedule.threadblock, ck.planned.schedule.threadblock);
  assert.equal(
    rems(GEMM("f16", "f16", ["rotate_k 1"])) - rems(GEMM("f16", "f16", ["rotate_k 0"])),
    1,
  );
});

// Copies before the PDL wait (`pdlEarly`) follow the rotated sequence (rotate_k.ts
// `KRotation.early`): K = 1008 is 4 k-tiles and the prologue's 3 are copied early, so blocks
// whose first k-tile is the 2nd to 4th wrap among them; K = 208 is one k-tile (the early copies
// past it are off). B alone and A with B, both evict_normal (evict_first ones are declined).
for (const named of [["B"], ["A", "B"]]) {
  Deno.test(`rotate_k with pdlEarly ${named.join("+")}: early copies wrap with the loop, s8 bit for bit`, () => {
    const o: CompileOptions = { target: "sm90", pdl: true, pdlEarly: named };
    const more = ["cache_a evict_normal", "cache_b evict_normal"];
    const ck = one(SKINNY("s8", "s32", 1, more), o);
    assert.deepEqual(earlyDecisions(ck.planned).map((d) => d.early), named.map(() => true));
    assert.match(ck.ptx, /before the wait/);
    for (const sizes of [{ M: 7, N: 104, K: 1008 }, { M: 1, N: 96, K: 208 }]) {
      const r = simulateGemm(ck, sizes, { seed: 4 });
      const plain = simulateGemm(one(SKINNY("s8", "s32", 0, more), o), sizes, { seed: 4 });
      assert.ok(r.ok && plain.ok, JSON.stringify(sizes));
      assert.deepEqual(r.sim.hazards, []);
      assert.deepEqual(r.output, plain.output);
      const f = simulateGemm(one(SKINNY("f16", "f32", 3, more), o), sizes, { seed: 4 });
      assert.ok(f.ok, `f16 ${JSON.stringify(sizes)}`);
      assert.deepEqual(f.sim.hazards, []);
    }
  });
}

/** Odd sizes: K not a multiple of 256, K of one k-tile, K under the prologue's 3 k-tiles. */
const SIZES = [
  { M: 7, N: 104, K: 1008 },
  { M: 1, N: 96, K: 208 },
  { M: 33, N: 72, K: 592 },
  { M: 16, N: 64, K: 2064 },
];

for (const r of [1, 3]) {
  for (const sizes of SIZES) {
    const at = `M=${sizes.M} N=${sizes.N} K=${sizes.K}`;
    Deno.test(`rotate_k ${r}: f16 -> f32 and s8 -> s32 agree at ${at}, s8 bit for bit`, () => {
      const f = simulateGemm(one(SKINNY("f16", "f32", r)), sizes, { seed: 7 });
      assert.ok(f.ok, `f16 ${at}`);
      assert.deepEqual(f.sim.hazards, []);
      const s8 = simulateGemm(one(SKINNY("s8", "s32", r)), sizes, { seed: 7 });
      const s8plain = simulateGemm(one(SKINNY("s8", "s32", 0)), sizes, { seed: 7 });
      assert.ok(s8.ok && s8plain.ok, `s8 ${at}`);
      assert.deepEqual(s8.sim.hazards, []);
      assert.deepEqual(s8.output, s8plain.output);
    });
  }
}

// Split-K: each split rotates among its own k-tiles; K = 1008 is 4 k-tiles, so split_k 3 gives
// splits of 2, 2 and 0 (an empty split) and split_k 2 of 2 and 2, the last partial.
for (const splitK of [2, 3]) {
  Deno.test(`rotate_k 1, split_k ${splitK}: agrees at odd sizes, s8 bit for bit, f32 another order`, () => {
    const more = [`split_k ${splitK}`];
    for (const sizes of [{ M: 7, N: 104, K: 1008 }, { M: 1, N: 64, K: 2064 }]) {
      const f = simulateGemm(one(SKINNY("f16", "f32", 1, more)), sizes, { seed: 5 });
      const fPlain = simulateGemm(one(SKINNY("f16", "f32", 0, more)), sizes, { seed: 5 });
      assert.ok(f.ok && fPlain.ok, `f16 ${JSON.stringify(sizes)}`);
      assert.deepEqual(f.sim.hazards, []);
      assert.notDeepEqual(f.output, fPlain.output);
      const s8 = simulateGemm(one(SKINNY("s8", "s32", 1, more)), sizes, { seed: 5 });
      const s8Plain = simulateGemm(one(SKINNY("s8", "s32", 0, more)), sizes, { seed: 5 });
      assert.ok(s8.ok && s8Plain.ok, `s8 ${JSON.stringify(sizes)}`);
      assert.deepEqual(s8.output, s8Plain.output);
    }
  });
}

Deno.test("rotate_k: f32 sums in another order than without it (the rotation is on)", () => {
  const sizes = { M: 16, N: 64, K: 2064 };
  const rotated = simulateGemm(one(SKINNY("f16", "f32", 1)), sizes, { seed: 3 });
  const plain = simulateGemm(one(SKINNY("f16", "f32", 0)), sizes, { seed: 3 });
  assert.ok(rotated.ok && plain.ok);
  assert.notDeepEqual(rotated.output, plain.output);
  // The same inputs, run twice: the same bytes.
  const again = simulateGemm(one(SKINNY("f16", "f32", 1)), sizes, { seed: 3 });
  assert.deepEqual(again.output, rotated.output);
});

Deno.test("rotate_k: a kernel whose pointers do not wrap back is caught (out of bounds)", () => {
  const ck = one(SKINNY("s8", "s32", 1));
  // The rotation's only u64 selects: the copy pointers moved back at the wrap.
  const kernel = editOps(ck.kernel, (o) => (o.op === "selp" && o.type === "u64" ? [] : null));
  assert.notDeepEqual(kernel.body, ck.kernel.body, "the mutation changed nothing");
  // Past the last k-tile the copies run off the end of A: the simulator refuses the source.
  assert.throws(
    () => simulateGemm({ ...ck, kernel }, { M: 7, N: 104, K: 1008 }, { seed: 7 }),
    (e: unknown) => e instanceof SimError && /Out-of-bounds cp\.async source/.test(e.message),
  );
});

/** sm90's TMA pipelines with `rotate_k R`: the schedule lines (`{K}` the k-tile: 64 for f16,
 * 128 for s8, one 128-byte row), and sizes of several tiles with K = 592 (a partial k-tile). */
const TMA_CASES: readonly { lines: readonly string[]; size: Record<string, number> }[] = [
  { lines: ["threadblock 64x32x{K}", "stages 4"], size: { M: 33, N: 136, K: 592 } },
  { lines: ["threadblock 128x64x{K}", "stages 3", "split_k 2"], size: { M: 33, N: 136, K: 592 } },
  { lines: ["cluster 2"], size: { M: 200, N: 600, K: 592 } },
  { lines: ["cluster 1x2"], size: { M: 200, N: 600, K: 592 } },
  { lines: ["scheduler stream_k"], size: { M: 200, N: 600, K: 592 } },
  { lines: ["scheduler pingpong"], size: { M: 200, N: 600, K: 592 } },
];

/** A TMA kernel of `ab` operands with the case's lines and `rotate_k r` (sm90, 132 SMs). */
const tma = (ab: "f16" | "s8", lines: readonly string[], r: number, o: CompileOptions = {}) => {
  const k = ab === "f16" ? "64" : "128";
  const src = GEMM(ab, ab === "f16" ? "f32" : "s32", [
    ...lines.map((l) => l.replace("{K}", k)),
    `rotate_k ${r}`,
  ]);
  const ck = one(src, { target: "sm90", sms: 132, ...o });
  assert.notEqual(ck.planned.plan.pipeline?.tma, undefined, `${lines} is a TMA pipeline`);
  return ck;
};

for (const { lines, size } of TMA_CASES) {
  Deno.test(`rotate_k on sm90's TMA pipeline (${lines.join("; ")}): agrees, s8 bit for bit, f32 another order`, () => {
    const f = simulateGemm(tma("f16", lines, 1), size, { seed: 11 });
    const fPlain = simulateGemm(tma("f16", lines, 0), size, { seed: 11 });
    assert.ok(f.ok && fPlain.ok);
    assert.deepEqual(f.sim.hazards, []);
    assert.notDeepEqual(f.output, fPlain.output);
    const s8 = simulateGemm(tma("s8", lines, 3), size, { seed: 11 });
    const s8Plain = simulateGemm(tma("s8", lines, 0), size, { seed: 11 });
    assert.ok(s8.ok && s8Plain.ok);
    assert.deepEqual(s8.sim.hazards, []);
    assert.deepEqual(s8.output, s8Plain.output);
  });
}

Deno.test("rotate_k on sm90's TMA pipeline: boxes copied before the wait (pdlEarly) rotate too", () => {
  const o: CompileOptions = { pdl: true, pdlEarly: ["A", "B"] };
  const lines = ["threadblock 64x64x{K}", "stages 4"];
  const ck = tma("s8", lines, 1, o);
  assert.ok(earlyDecisions(ck.planned).every((d) => d.early), "both operands copied early");
  const size = { M: 40, N: 200, K: 1296 };
  const rotated = simulateGemm(ck, size, { seed: 2 });
  const plain = simulateGemm(tma("s8", lines, 0, o), size, { seed: 2 });
  assert.ok(rotated.ok && plain.ok);
  assert.deepEqual(rotated.sim.hazards, []);
  assert.deepEqual(rotated.output, plain.output);
  const f = simulateGemm(tma("f16", lines, 1, o), size, { seed: 2 });
  assert.ok(f.ok);
  assert.deepEqual(f.sim.hazards, []);
});

Deno.test("rotate_k on sm90's TMA pipeline: a producer that does not wrap back is caught", () => {
  const ck = tma("s8", ["threadblock 64x32x{K}", "stages 4"], 1);
  // The wrap: the only select into the producer's k register ("pk").
  const kernel = editOps(
    ck.kernel,
    (o) => (o.op === "selp" && o.dst.name?.startsWith("pk") === true ? [] : null),
  );
  assert.notDeepEqual(kernel.body, ck.kernel.body, "the mutation changed nothing");
  // Past K the boxes are zeros: the k-tiles before the block's first are never summed.
  const r = simulateGemm({ ...ck, kernel }, { M: 33, N: 136, K: 592 }, { seed: 7 });
  assert.equal(r.ok, false);
});

Deno.test("rotate_k with PDL: the L2 prefetch of B's first k-tiles before the wait stays in bounds", () => {
  // Blocks whose rotated first k-tile is the last: the prefetch's k-tiles after it are past K.
  const ck = one(SKINNY("s8", "s32", 1), { target: "sm90", pdl: true });
  assert.match(ck.ptx, /prefetch\.global\.L2/);
  for (const sizes of [{ M: 7, N: 104, K: 1008 }, { M: 7, N: 200, K: 800 }]) {
    const r = simulateGemm(ck, sizes, { seed: 1 });
    assert.ok(r.ok, JSON.stringify(sizes));
    assert.deepEqual(r.sim.hazards, []);
  }
});
