// cp.async landing, zero-fill, and the hazard checker: reads before a copy landed, races
// between warps without a barrier, unbalanced groups, and the mutants of a pipelined GEMM.

import assert from "node:assert/strict";
import { imm } from "../ir/builder.ts";
import type { Kernel } from "../ir/kernel.ts";
import { type HazardKind, SimError, simulate } from "../backends/sim/mod.ts";
import { f16BitsToF32, f32Bits } from "../numerics/mod.ts";
import {
  Emitter,
  type GemmMutant,
  kernelOf,
  PIPE,
  pipelinedGemm,
  randInt,
  rng,
} from "../backends/sim/_test_kernels.ts";

function randomWords(seed: number, n: number): Uint8Array {
  const r = rng(seed);
  const b = new Uint8Array(n * 4);
  const dv = new DataView(b.buffer);
  for (let i = 0; i < n; i++) dv.setUint32(i * 4, randInt(r, 1, 0xfffffffe), true);
  return b;
}

function words(b: Uint8Array): number[] {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return Array.from({ length: b.length / 4 }, (_, i) => dv.getUint32(i * 4, true));
}

/**
 * 32 threads; thread t cp.asyncs 16 bytes from In + 16 t to shared 16 t, then reads its word 0
 * into Early (before any wait), commits, waits, and reads it again into Late.
 */
function landingKernel(opts: { srcBytes: number; wait: boolean; commit: boolean }): Kernel {
  const e = new Emitter();
  const tid = e.tid();
  const src = e.addr(e.param("In"), tid, 16);
  const smem = e.reg("u32");
  e.emit({ op: "smembase", dst: smem });
  const dst = e.reg("u32");
  e.emit({ op: "mad", type: "u32", dst, a: tid, b: imm(16), c: smem });
  e.emit({
    op: "cpasync",
    cache: "cg",
    bytes: 16,
    dst,
    dstOffset: 0,
    src,
    srcBytes: imm(opts.srcBytes),
  });
  const early = [0, 1, 2, 3].map(() => e.reg("b32"));
  e.emit({ op: "lds", width: "b32", dst: early, addr: dst, offset: 0 });
  if (opts.commit) e.emit({ op: "commit" });
  if (opts.wait) e.emit({ op: "wait", n: 0 });
  const late = [0, 1, 2, 3].map(() => e.reg("b32"));
  e.emit({ op: "lds", width: "b32", dst: late, addr: dst, offset: 0 });
  e.emit({
    op: "stg",
    width: "b32",
    src: early,
    addr: e.addr(e.param("Early"), tid, 16),
    offset: 0,
  });
  e.emit({ op: "stg", width: "b32", src: late, addr: e.addr(e.param("Late"), tid, 16), offset: 0 });
  return kernelOf(e, "landing", 32, 512, { tensors: ["In", "Early", "Late"] });
}

function runLanding(opts: { srcBytes: number; wait: boolean; commit: boolean }) {
  const input = randomWords(7, 128);
  const early = new Uint8Array(512).fill(0x5a);
  const late = new Uint8Array(512).fill(0x5a);
  const res = simulate(landingKernel(opts), {
    grid: [1, 1, 1],
    args: { In: { bytes: input }, Early: { bytes: early }, Late: { bytes: late } },
  });
  return { res, input: words(input), early: words(early), late: words(late) };
}

function kinds(res: { hazards: readonly { kind: HazardKind }[] }): HazardKind[] {
  return [...new Set(res.hazards.map((h) => h.kind))].sort();
}

Deno.test("cp.async lands at wait, not before; a read before the wait is a hazard", () => {
  const { res, input, early, late } = runLanding({ srcBytes: 16, wait: true, commit: true });
  // Before the wait the read sees shared memory as it was (poisoned with 0xff at block start).
  assert.ok(early.every((w) => w === 0xffffffff));
  assert.deepEqual(late, input);
  assert.deepEqual(kinds(res), ["read-before-landed"]);
  const h = res.hazards[0]!;
  assert.equal(h.op, "{%b6, %b7, %b8, %b9} = lds.b32 [%r5]");
  assert.deepEqual(h.block, [0, 0, 0]);
  assert.deepEqual(h.warps, [0, 0]);
  assert.equal(h.address, 0);
  assert.equal(h.count, 32);
  assert.equal(res.stats.globalBytesRead, 512);
  assert.equal(res.stats.sharedBytesWritten, 512);
});

Deno.test("cp.async with srcBytes 0 writes zeros; with 8 of 16 it zero-fills the rest", () => {
  const z = runLanding({ srcBytes: 0, wait: true, commit: true });
  assert.ok(z.late.every((w) => w === 0));
  assert.equal(z.res.stats.globalBytesRead, 0);
  const h = runLanding({ srcBytes: 8, wait: true, commit: true });
  for (let t = 0; t < 32; t++) {
    assert.deepEqual(h.late.slice(4 * t, 4 * t + 4), [h.input[4 * t], h.input[4 * t + 1], 0, 0]);
  }
  assert.equal(h.res.stats.globalBytesRead, 256);
});

Deno.test("a copy not yet committed at a wait does not land, and is reported at the end", () => {
  const { res, late } = runLanding({ srcBytes: 16, wait: true, commit: false });
  assert.ok(late.every((w) => w === 0xffffffff));
  assert.deepEqual(kinds(res), ["read-before-landed", "unbalanced-cp.async"]);
  const u = res.hazards.find((h) => h.kind === "unbalanced-cp.async")!;
  assert.match(u.message, /32 cp\.async copies still pending .*32 never committed/);
});

Deno.test("committed copies never waited for are reported as unbalanced", () => {
  const { res } = runLanding({ srcBytes: 16, wait: false, commit: true });
  const u = res.hazards.find((h) => h.kind === "unbalanced-cp.async")!;
  assert.match(u.message, /0 never committed, 32 committed but never waited for/);
});

/** 64 threads: warp 0 stores to shared, (optionally) bar, warp 1 reads it back. */
function handoffKernel(bar: boolean, sameWarp = false): Kernel {
  const e = new Emitter();
  const tid = e.tid();
  const lane = e.bin("and", "u32", tid, 31);
  const warp = e.bin("shr", "u32", tid, 5);
  const addr = e.bin("shl", "u32", lane, 2);
  const v = e.reg("b32");
  e.emit({ op: "ldg", width: "b32", dst: [v], addr: e.addr(e.param("In"), tid, 4), offset: 0 });
  const writer = e.setp("eq", "u32", warp, 0);
  e.if(writer, false, () => {
    e.emit({ op: "sts", width: "b32", src: [v], addr, offset: 0 });
  });
  if (bar) e.emit({ op: "bar" });
  const reader = e.setp("eq", "u32", warp, sameWarp ? 0 : 1);
  e.if(reader, false, () => {
    const x = e.reg("b32");
    e.emit({ op: "lds", width: "b32", dst: [x], addr, offset: 0 });
    e.emit({ op: "stg", width: "b32", src: [x], addr: e.addr(e.param("Out"), lane, 4), offset: 0 });
  });
  return kernelOf(e, "handoff", 64, 128, { tensors: ["In", "Out"] });
}

function runHandoff(bar: boolean, sameWarp = false) {
  const input = randomWords(11, 64);
  const out = new Uint8Array(128).fill(0x5a);
  const res = simulate(handoffKernel(bar, sameWarp), {
    grid: [1, 1, 1],
    args: { In: { bytes: input }, Out: { bytes: out } },
  });
  return { res, input: words(input), out: words(out) };
}

Deno.test("a missing bar between a warp's store and another warp's load is a race", () => {
  const { res } = runHandoff(false);
  assert.deepEqual(kinds(res), ["race"]);
  const h = res.hazards[0]!;
  assert.match(h.op, /lds\.b32/);
  assert.deepEqual(h.warps, [1, 0]);
  assert.equal(h.address, 0);
  assert.equal(h.count, 32);
  assert.match(h.message, /Warp 1 reads a shared byte that warp 0 wrote with no bar in between/);
});

Deno.test("with the bar, or within one warp, there is no race", () => {
  const ok = runHandoff(true);
  assert.deepEqual(ok.res.hazards, []);
  assert.deepEqual(ok.out, ok.input.slice(0, 32));
  assert.deepEqual(runHandoff(false, true).res.hazards, []);
});

// ---------------------------------------------------------------------------------------------
// The pipelined GEMM and its mutants
// ---------------------------------------------------------------------------------------------

function randomF16(r: () => number): number {
  const sign = r() < 0.5 ? 0x8000 : 0;
  return sign | (randInt(r, 15 - 4, 15 + 2) << 10) | randInt(r, 0, 1023);
}

function gemmInputs(M: number, N: number, K: number, seed: number) {
  const r = rng(seed);
  const a = new Uint16Array(M * K).map(() => randomF16(r));
  const b = new Uint16Array(N * K).map(() => randomF16(r)); // B column-major: b[n * K + k]
  return { a, b };
}

/** The simulator's documented model of this kernel: per k16 step, f64 sum then one f32 rounding. */
function gemmModel(a: Uint16Array, b: Uint16Array, M: number, N: number, K: number): Float32Array {
  const d = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k0 = 0; k0 < K; k0 += 16) {
        let s = acc;
        for (let k = k0; k < k0 + 16; k++) {
          s += f16BitsToF32(a[i * K + k]!) * f16BitsToF32(b[j * K + k]!);
        }
        acc = Math.fround(s);
      }
      d[i * N + j] = acc;
    }
  }
  return d;
}

function runGemm(mutant: GemmMutant, M = 64, N = 64, K = 128) {
  const { a, b } = gemmInputs(M, N, K, 1234);
  const d = new Float32Array(M * N).fill(NaN);
  const res = simulate(pipelinedGemm(mutant), {
    grid: [N / PIPE.BN, M / PIPE.BM, 1],
    args: {
      A: { bytes: new Uint8Array(a.buffer) },
      B: { bytes: new Uint8Array(b.buffer) },
      D: { bytes: new Uint8Array(d.buffer) },
      M,
      N,
      K,
    },
  });
  return { res, d, want: gemmModel(a, b, M, N, K) };
}

Deno.test("the pipelined GEMM equals its model bit for bit, with no hazards", () => {
  const { res, d, want } = runGemm("none");
  assert.deepEqual(res.hazards, []);
  assert.equal(res.hazardCount, 0);
  for (let i = 0; i < want.length; i++) {
    assert.equal(f32Bits(d[i]!), f32Bits(want[i]!), `D[${i}] = ${d[i]}, want ${want[i]}`);
  }
  const st = res.stats;
  const blocks = 4;
  const kTiles = 4;
  assert.equal(res.blocks, blocks);
  assert.equal(st.mmas, blocks * 4 * kTiles * 2 * 2);
  assert.equal(st.byKind["mma"], st.mmas);
  assert.equal(st.byKind["ldmatrix"], blocks * 4 * kTiles * 4);
  assert.equal(st.globalBytesRead, 64 * 128 * 2 * 2 * 2); // A and B, each read by 2 blocks
  assert.equal(st.globalBytesWritten, 64 * 64 * 4);
  // 64-byte rows without a swizzle: every ldmatrix phase hits each bank group 4 times... and
  // contiguous 16-byte cp.async stores are conflict-free.
  assert.equal(st.banks.cpasync.wavefronts, st.banks.cpasync.ideal);
  assert.equal(st.banks.ldmatrix.wavefronts, 4 * st.banks.ldmatrix.ideal);
});

Deno.test("mutant: deleting the wait is caught (read before the cp.async landed)", () => {
  const { res } = runGemm("no-wait");
  assert.ok(kinds(res).includes("read-before-landed"), JSON.stringify(kinds(res)));
});

Deno.test("mutant: deleting the bar is caught (race)", () => {
  const { res } = runGemm("no-bar");
  assert.deepEqual(kinds(res), ["race"]);
  assert.ok(res.hazards.some((h) => /ldmatrix/.test(h.op)));
});

Deno.test("mutant: a wait one group too permissive is caught", () => {
  const { res } = runGemm("wait-too-permissive");
  assert.ok(kinds(res).includes("read-before-landed"));
});

Deno.test("mutant: a prefetch distance of `stages` (overwriting the stage in use) is caught", () => {
  const { res } = runGemm("short-distance");
  assert.ok(kinds(res).includes("read-before-landed"));
});

Deno.test("hazards off: same results, no hazards collected", () => {
  const { a, b } = gemmInputs(64, 64, 128, 1234);
  const d = new Float32Array(64 * 64).fill(NaN);
  const res = simulate(pipelinedGemm("no-bar"), {
    grid: [2, 2, 1],
    args: {
      A: { bytes: new Uint8Array(a.buffer) },
      B: { bytes: new Uint8Array(b.buffer) },
      D: { bytes: new Uint8Array(d.buffer) },
      M: 64,
      N: 64,
      K: 128,
    },
  }, { hazards: false });
  assert.deepEqual(res.hazards, []);
  const want = gemmModel(a, b, 64, 64, 128);
  assert.deepEqual(Array.from(d), Array.from(want));
});

Deno.test("maxHazards bounds the recorded list; the count goes on", () => {
  const { a, b } = gemmInputs(64, 64, 128, 99);
  const d = new Float32Array(64 * 64);
  const res = simulate(pipelinedGemm("no-bar"), {
    grid: [2, 2, 1],
    args: {
      A: { bytes: new Uint8Array(a.buffer) },
      B: { bytes: new Uint8Array(b.buffer) },
      D: { bytes: new Uint8Array(d.buffer) },
      M: 64,
      N: 64,
      K: 128,
    },
  }, { maxHazards: 1 });
  assert.equal(res.hazards.length, 1);
  assert.ok(res.hazardCount > 1);
});

// ---------------------------------------------------------------------------------------------
// cp.async errors
// ---------------------------------------------------------------------------------------------

function cpKernel(
  bytes: 4 | 8 | 16,
  srcBytes: number,
  dstOffset: number,
  cache: "ca" | "cg" = "ca",
) {
  const e = new Emitter();
  const tid = e.tid();
  const src = e.addr(e.param("In"), tid, bytes);
  const dst = e.bin("mul", "u32", tid, bytes);
  e.emit({ op: "cpasync", cache, bytes, dst, dstOffset, src, srcBytes: imm(srcBytes) });
  e.emit({ op: "commit" });
  e.emit({ op: "wait", n: 0 });
  return kernelOf(e, "cp", 32, 32 * 16, { tensors: ["In"] });
}

function runCp(k: Kernel): void {
  simulate(k, { grid: [1, 1, 1], args: { In: { bytes: randomWords(3, 128) } } });
}

Deno.test("bad cp.async sizes and misaligned destinations raise", () => {
  assert.throws(() => runCp(cpKernel(8, 9, 0)), SimError);
  assert.throws(() => runCp(cpKernel(8, 8, 0, "cg")), /cp\.async\.cg copies 16 bytes/);
  assert.throws(
    () => runCp(cpKernel(8, 8, 4)),
    /Misaligned cp\.async destination: shared address 0x4 is not a multiple of 8: at "cpasync\.ca\.8 \[%r4 \+ 4\], \[%rd3\], 8" \(op 5, line 9\), block \(0, 0, 0\), warp 0, lane 0/,
  );
  runCp(cpKernel(4, 4, 0));
});
