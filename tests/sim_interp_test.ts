// The interpreter, lane by lane: register operations against JavaScript references, guards,
// non-uniform and uniform ifs, loops, ldmatrix against ldmatrixCoord, bank-conflict counts, and
// the errors (out-of-bounds, misaligned, non-uniform control flow) with their locations.

import assert from "node:assert/strict";
import * as ir from "../ir/builder.ts";
import { imm } from "../ir/builder.ts";
import type { CachePolicy } from "../ir/cache_policy.ts";
import { POLICY_VALUES } from "../backends/sim/_ops.ts";
import type { BinFn, Kernel, Reg } from "../ir/kernel.ts";
import { ldmatrixCoord } from "../ir/mma_table.ts";
import { printKernel } from "../ir/print_kernel.ts";
import { SimError, simulate } from "../backends/sim/mod.ts";
import { indexOps } from "../backends/sim/_compile.ts";
import {
  bitsF32,
  f32Bits,
  f32ToF16Bits,
  f32ToTf32Rna,
  maxPtx,
  minPtx,
  popc32,
} from "../numerics/mod.ts";
import { Emitter, kernelOf, randInt, rng } from "../backends/sim/_test_kernels.ts";

// ---------------------------------------------------------------------------------------------
// Register operations
// ---------------------------------------------------------------------------------------------

const LANES = 64;

/** Inputs of a case: integer bits x, y (y odd, never 0), z, and f32 values f, g, h. */
interface In {
  readonly x: number;
  readonly y: number;
  readonly z: number;
  readonly f: number;
  readonly g: number;
  readonly h: number;
}

interface Case {
  readonly name: string;
  /** Emits the operations; returns a 32-bit register holding the result bits. */
  readonly emit: (e: Emitter, r: Readonly<Record<keyof In, Reg>>) => Reg;
  /** The result bits (u32), from the inputs. */
  readonly ref: (i: In) => number;
}

const s32 = (v: number) => v | 0;
const u32 = (v: number) => v >>> 0;

function binCase(fn: BinFn, type: "u32" | "s32", ref: (a: number, b: number) => number): Case {
  return {
    name: `${fn}.${type}`,
    emit: (e, r) => e.bin(fn, type, r.x, r.y),
    ref: (i) => u32(type === "s32" ? ref(s32(i.x), s32(i.y)) : ref(i.x, i.y)),
  };
}

function fCase(fn: BinFn, ref: (a: number, b: number) => number): Case {
  return {
    name: `${fn}.f32`,
    emit: (e, r) => e.bin(fn, "f32", r.f, r.g),
    ref: (i) => f32Bits(ref(i.f, i.g)),
  };
}

const CASES: Case[] = [
  binCase("add", "u32", (a, b) => a + b),
  binCase("sub", "u32", (a, b) => a - b),
  binCase("mul", "u32", (a, b) => Number((BigInt(a) * BigInt(b)) & 0xffffffffn)),
  binCase("div", "u32", (a, b) => Math.floor(a / b)),
  binCase("rem", "u32", (a, b) => a - Math.floor(a / b) * b),
  binCase("min", "u32", (a, b) => Math.min(a, b)),
  binCase("max", "u32", (a, b) => Math.max(a, b)),
  binCase("and", "u32", (a, b) => a & b),
  binCase("or", "u32", (a, b) => a | b),
  binCase("xor", "u32", (a, b) => a ^ b),
  binCase("div", "s32", (a, b) => Math.trunc(a / b)),
  binCase("rem", "s32", (a, b) => a - Math.trunc(a / b) * b),
  binCase("min", "s32", (a, b) => Math.min(a, b)),
  binCase("mul", "s32", (a, b) => Number(BigInt.asIntN(32, BigInt(a) * BigInt(b)))),
  {
    name: "shl.u32 by y % 40 (>= 32 gives 0)",
    emit: (e, r) => e.bin("shl", "u32", r.x, e.bin("rem", "u32", r.y, 40)),
    ref: (i) => (i.y % 40 >= 32 ? 0 : u32(i.x * 2 ** (i.y % 40))),
  },
  {
    name: "shr.s32 by y % 40 (arithmetic, >= 32 gives the sign)",
    emit: (e, r) => e.bin("shr", "s32", r.x, e.bin("rem", "u32", r.y, 40)),
    ref: (i) => u32(Math.floor(s32(i.x) / 2 ** Math.min(i.y % 40, 31))),
  },
  {
    name: "shr.u32 by y % 40",
    emit: (e, r) => e.bin("shr", "u32", r.x, e.bin("rem", "u32", r.y, 40)),
    ref: (i) => (i.y % 40 >= 32 ? 0 : Math.floor(i.x / 2 ** (i.y % 40))),
  },
  {
    name: "mad.u32",
    emit: (e, r) => {
      const d = e.reg("u32");
      e.emit({ op: "mad", type: "u32", dst: d, a: r.x, b: r.y, c: r.z });
      return d;
    },
    ref: (i) => Number((BigInt(i.x) * BigInt(i.y) + BigInt(i.z)) & 0xffffffffn),
  },
  {
    name: "not, neg, popc, abs",
    emit: (e, r) => {
      const n = e.reg("u32");
      e.emit({ op: "un", fn: "not", type: "u32", dst: n, src: r.x });
      const m = e.reg("s32");
      e.emit({ op: "un", fn: "neg", type: "s32", dst: m, src: n });
      const a = e.reg("s32");
      e.emit({ op: "un", fn: "abs", type: "s32", dst: a, src: m });
      const p = e.reg("u32");
      e.emit({ op: "un", fn: "popc", type: "b32", dst: p, src: r.z });
      return e.bin("add", "u32", a, p);
    },
    ref: (i) => u32((Math.abs(s32(-s32(~i.x))) | 0) + popc32(i.z)),
  },
  fCase("add", (a, b) => a + b),
  fCase("sub", (a, b) => a - b),
  fCase("mul", (a, b) => a * b),
  fCase("div", (a, b) => a / b),
  fCase("min", minPtx),
  fCase("max", maxPtx),
  {
    name: "mad.f32 is a correctly rounded fma",
    emit: (e, r) => {
      const d = e.reg("f32");
      e.emit({ op: "mad", type: "f32", dst: d, a: r.f, b: r.g, c: r.h });
      return d;
    },
    ref: (i) => f32Bits(fmaF32Exact(i.f, i.g, i.h)),
  },
  {
    name: "setp.ne.f32 is ordered; selp",
    emit: (e, r) => {
      const p = e.reg("pred");
      const nan = e.reg("f32");
      e.emit({ op: "bin", fn: "div", type: "f32", dst: nan, a: imm(0), b: imm(0) });
      e.emit({ op: "setp", cmp: "ne", type: "f32", dst: p, a: r.f, b: nan });
      const q = e.reg("pred");
      e.emit({ op: "setp", cmp: "lt", type: "f32", dst: q, a: r.f, b: r.g });
      const pq = e.bin("or", "pred", p, q);
      const d = e.reg("u32");
      e.emit({ op: "selp", type: "u32", dst: d, a: r.x, b: r.y, p: pq });
      return d;
    },
    ref: (i) => (i.f < i.g ? i.x : i.y),
  },
  {
    name: "cvt f16.f32, tf32.f32, pack/unpack",
    emit: (e, r) => {
      const h = e.reg("b16");
      e.emit({ op: "cvt", kind: "f16.f32", dst: h, src: r.f });
      const t = e.reg("b32");
      e.emit({ op: "cvt", kind: "tf32.f32", dst: t, src: r.g });
      const lo = e.reg("b16");
      const hi = e.reg("b16");
      e.emit({ op: "unpack", lo, hi, src: t });
      const d = e.reg("b32");
      e.emit({ op: "pack", dst: d, lo: h, hi });
      return d;
    },
    ref: (i) => u32(f32ToF16Bits(i.f) | (f32Bits(f32ToTf32Rna(i.g)) & 0xffff0000)),
  },
  {
    name: "cvt s32.f32 (rni, saturating), s8.s32, u8.s32",
    emit: (e, r) => {
      const big = e.bin("mul", "f32", r.f, imm(1e4));
      const a = e.reg("s32");
      e.emit({ op: "cvt", kind: "s32.f32", dst: a, src: big });
      const b = e.reg("u32");
      e.emit({ op: "cvt", kind: "s8.s32", dst: b, src: a });
      const c = e.reg("u32");
      e.emit({ op: "cvt", kind: "u8.s32", dst: c, src: a });
      return e.bin("xor", "u32", e.bin("add", "u32", a, b), e.bin("shl", "u32", c, 8));
    },
    ref: (i) => {
      const v = Math.fround(i.f * 1e4);
      const a = rniRef(v);
      const b = Math.max(-128, Math.min(127, a));
      const c = Math.max(0, Math.min(255, a));
      return u32((a + b) ^ (c << 8));
    },
  },
];

/** Round to nearest, ties to even, saturate to s32 (a plain reference). */
function rniRef(v: number): number {
  if (Number.isNaN(v)) return 0;
  const f = Math.floor(v);
  const d = v - f;
  let r = d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
  r = Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, r));
  return r;
}

/** Exact dyadic value of a finite double as a BigInt numerator over 2^1100. */
function exact(v: number): bigint {
  return BigInt(v * 2 ** 600) * 2n ** 500n; // |v| >= 2^-149 for f32 values: v * 2^600 is an integer
}

/**
 * The correctly rounded f32 of a * b + c, found by comparing exact distances to the f32
 * neighbours of a candidate (an independent check of the interpreter's fma).
 */
function fmaF32Exact(a: number, b: number, c: number): number {
  const x = BigInt(a * 2 ** 300) * BigInt(b * 2 ** 300) * 2n ** 500n + exact(c);
  const near = Math.fround(a * b + c); // within an ulp or so of the answer
  let best = near;
  let bestD = -1n;
  for (const cand of [neighbour(near, -1), near, neighbour(near, 1)]) {
    if (!Number.isFinite(cand)) continue;
    const d0 = exact(cand) - x;
    const d = d0 < 0n ? -d0 : d0;
    if (bestD < 0n || d < bestD || (d === bestD && (f32Bits(cand) & 1) === 0)) {
      best = cand;
      bestD = d;
    }
  }
  return best;
}

function neighbour(v: number, dir: 1 | -1): number {
  const u = f32Bits(v);
  if (v === 0) return dir * 2 ** -149;
  return bitsF32(v > 0 === (dir > 0) ? u + 1 : u - 1);
}

function randomF32(r: () => number): number {
  const sign = r() < 0.5 ? 1 : 0;
  return bitsF32(
    ((sign << 31) | (randInt(r, 127 - 30, 127 + 30) << 23) | randInt(r, 0, 0x7fffff)) >>> 0,
  );
}

function registerKernel(cases: readonly Case[]): Kernel {
  const e = new Emitter();
  const tid = e.tid();
  const ins: Record<string, Reg> = {};
  for (const n of ["x", "y", "z", "f", "g", "h"]) {
    const v = e.reg(n === "f" || n === "g" || n === "h" ? "f32" : "b32", n);
    e.emit({
      op: "ldg",
      width: "b32",
      dst: [v],
      addr: e.addr(e.param(n.toUpperCase()), tid, 4),
      offset: 0,
    });
    ins[n] = v;
  }
  const out = e.param("Out");
  cases.forEach((c, k) => {
    const d = c.emit(e, ins as Record<keyof In, Reg>);
    e.emit({ op: "stg", width: "b32", src: [d], addr: e.addr(out, tid, 4), offset: k * LANES * 4 });
  });
  return kernelOf(e, "registers", LANES, 0, { tensors: ["X", "Y", "Z", "F", "G", "H", "Out"] });
}

Deno.test("register operations match their JavaScript references lane by lane", () => {
  const cases = CASES;
  const kernel = registerKernel(cases);
  for (let trial = 0; trial < 4; trial++) {
    const r = rng(100 + trial);
    const input: In[] = Array.from({ length: LANES }, () => ({
      x: randInt(r, 0, 2 ** 32 - 1),
      y: (randInt(r, 0, 2 ** 32 - 1) | 1) >>> 0,
      z: randInt(r, 0, 2 ** 32 - 1),
      f: randomF32(r),
      g: randomF32(r),
      h: randomF32(r),
    }));
    // Cancellation for the fma: h close to -f * g in some lanes.
    for (let t = 0; t < LANES; t += 3) {
      const i = input[t]!;
      input[t] = { ...i, h: Math.fround(-i.f * i.g * (1 + (r() - 0.5) * 2 ** -20)) };
    }
    const col = (k: keyof In, float: boolean) => {
      const b = new Uint8Array(LANES * 4);
      const dv = new DataView(b.buffer);
      input.forEach((i, t) =>
        float ? dv.setFloat32(t * 4, i[k], true) : dv.setUint32(t * 4, i[k], true)
      );
      return { bytes: b };
    };
    const out = new Uint8Array(cases.length * LANES * 4).fill(0xa5);
    simulate(kernel, {
      grid: [1, 1, 1],
      args: {
        X: col("x", false),
        Y: col("y", false),
        Z: col("z", false),
        F: col("f", true),
        G: col("g", true),
        H: col("h", true),
        Out: { bytes: out },
      },
    });
    const dv = new DataView(out.buffer);
    cases.forEach((c, k) => {
      for (let t = 0; t < LANES; t++) {
        const got = dv.getUint32((k * LANES + t) * 4, true);
        const want = c.ref(input[t]!) >>> 0;
        assert.equal(
          got,
          want,
          `${c.name}, lane ${t}: got 0x${got.toString(16)}, want 0x${want.toString(16)}`,
        );
      }
    });
  }
});

Deno.test("u64 arithmetic: mulwide, add, shr, and, b64 stores of u64 registers", () => {
  const e = new Emitter();
  const tid = e.tid();
  const x = e.reg("u32");
  e.emit({ op: "ldg", width: "b32", dst: [x], addr: e.addr(e.param("X"), tid, 4), offset: 0 });
  const w = e.reg("u64");
  e.emit({ op: "mulwide", dst: w, a: x, b: imm(0x1fffff) });
  const z = e.reg("u64");
  e.emit({ op: "cvt", kind: "u64.u32", dst: z, src: tid });
  const s = e.bin("add", "u64", w, z);
  const h = e.bin("shr", "u64", s, 7);
  const m = e.bin("and", "u64", h, 0xfff0f0f0f0f);
  e.emit({
    op: "stg",
    width: "b64",
    src: [s, m],
    addr: e.addr(e.param("Out"), tid, 16),
    offset: 0,
  });
  const k = kernelOf(e, "u64ops", 32, 0, { tensors: ["X", "Out"] });
  const r = rng(5);
  const xs = new Uint32Array(32).map(() => randInt(r, 0, 2 ** 32 - 1));
  const out = new BigUint64Array(64).fill(0xdeadbeefn);
  simulate(k, {
    grid: [1, 1, 1],
    args: { X: { bytes: new Uint8Array(xs.buffer) }, Out: { bytes: new Uint8Array(out.buffer) } },
  });
  for (let t = 0; t < 32; t++) {
    const sum = BigInt(xs[t]!) * 0x1fffffn + BigInt(t);
    assert.equal(out[2 * t], sum);
    assert.equal(out[2 * t + 1], (sum >> 7n) & 0xfff0f0f0f0fn);
  }
});

Deno.test("u64 arithmetic beyond 2^53 raises instead of losing bits", () => {
  const e = new Emitter();
  const a = e.param("A");
  const big = e.bin("shl", "u64", a, 20);
  void big;
  const k = kernelOf(e, "u64big", 32, 0, { tensors: ["A"] });
  assert.throws(
    () => simulate(k, { grid: [1, 1, 1], args: { A: { bytes: new Uint8Array(4) } } }),
    /u64 result .* is outside the simulator's exact range \[0, 2\^53\)/,
  );
});

Deno.test("createpolicy writes its priority's value; hinted copies copy as without the hint", () => {
  /** Lane t: its three policies to Pol[3t ..], In[t] through a hinted ld.global to Out[t] and
   * through a hinted cp.async (and shared memory) to Out2[t]. */
  const kernel = (policyOf: (e: Emitter, policies: Reg[]) => Reg) => {
    const e = new Emitter();
    const tid = e.tid();
    const policies = (Object.keys(POLICY_VALUES) as CachePolicy[]).map((priority) => {
      const p = e.reg("u64");
      e.emit(ir.createPolicy(p, priority));
      return p;
    });
    const pol = e.addr(e.param("Pol"), tid, 24);
    policies.forEach((p, i) => e.emit(ir.stg("b64", [p], pol, 8 * i)));
    const src = e.addr(e.param("In"), tid, 4);
    const v = e.reg("b32");
    e.emit(ir.ldg("b32", [v], src, 0, undefined, undefined, policyOf(e, policies)));
    e.emit(ir.stg("b32", [v], e.addr(e.param("Out"), tid, 4), 0));
    const smem = e.reg("u32");
    e.emit(ir.smemBase(smem));
    const dst = e.bin("add", "u32", smem, e.bin("shl", "u32", tid, 2));
    e.emit(ir.cpAsync({
      cache: "ca",
      bytes: 4,
      dst,
      dstOffset: 0,
      src,
      srcBytes: imm(4),
      policy: policies[0]!,
    }));
    e.emit(ir.commit());
    e.emit(ir.wait(0));
    const w = e.reg("b32");
    e.emit(ir.lds("b32", [w], dst, 0));
    e.emit(ir.stg("b32", [w], e.addr(e.param("Out2"), tid, 4), 0));
    return kernelOf(e, "policies", 64, 256, { tensors: ["Pol", "In", "Out", "Out2"] });
  };
  const input = new Uint32Array(64).map((_, i) => 0x9e3779b9 * (i + 1) >>> 0);
  const run = (k: Kernel) => {
    const pol = new BigUint64Array(3 * 64);
    const out = new Uint32Array(64).fill(0xdeadbeef);
    const out2 = new Uint32Array(64).fill(0xdeadbeef);
    const bytes = (a: Uint32Array | BigUint64Array) => ({ bytes: new Uint8Array(a.buffer) });
    const res = simulate(k, {
      grid: [1, 1, 1],
      args: { Pol: bytes(pol), In: bytes(input), Out: bytes(out), Out2: bytes(out2) },
    });
    return { res, pol, out, out2 };
  };
  const { res, pol, out, out2 } = run(kernel((_, ps) => ps[1]!));
  const values = Object.values(POLICY_VALUES).map(BigInt);
  for (let t = 0; t < 64; t++) assert.deepEqual([...pol.slice(3 * t, 3 * t + 3)], values);
  assert.equal(new Set(values).size, 3);
  assert.deepEqual(out, input);
  assert.deepEqual(out2, input);
  assert.equal(res.stats.byKind.createpolicy, 3 * 2);
  assert.deepEqual(res.hazards, []);
  // A policy operand no createpolicy wrote: an address, and a register never written.
  const address = kernel((e) => e.param("In"));
  assert.throws(
    () => run(address),
    (x) =>
      x instanceof SimError &&
      /^Cache policy register holds \d+: no createpolicy wrote it/.test(x.message) &&
      x.where?.lane === 0 && /ldg\.L2::cache_hint/.test(x.where.op),
  );
  const unwritten = kernel((e) => e.reg("u64"));
  assert.throws(() => run(unwritten), /Cache policy register holds NaN: no createpolicy wrote it/);
});

// ---------------------------------------------------------------------------------------------
// Guards, ifs, loops
// ---------------------------------------------------------------------------------------------

Deno.test("guards mask lanes: a guarded-off load keeps the default, a guarded-off store writes nothing", () => {
  const e = new Emitter();
  const tid = e.tid();
  const p = e.setp("lt", "u32", tid, 40);
  const v = e.reg("b32");
  e.emit({ op: "mov", dst: v, src: imm(7) });
  e.emit({
    op: "ldg",
    width: "b32",
    dst: [v],
    addr: e.addr(e.param("In"), tid, 4),
    offset: 0,
    guard: { pred: p, negate: false },
  });
  e.emit({ op: "stg", width: "b32", src: [v], addr: e.addr(e.param("Out"), tid, 4), offset: 0 });
  e.emit({
    op: "stg",
    width: "b32",
    src: [v],
    addr: e.addr(e.param("Out2"), tid, 4),
    offset: 0,
    guard: { pred: p, negate: true },
  });
  const k = kernelOf(e, "guards", 64, 0, { tensors: ["In", "Out", "Out2"] });
  const input = new Uint32Array(64).map((_, i) => 1000 + i * 17);
  const out = new Uint32Array(64).fill(0xdeadbeef);
  const out2 = new Uint32Array(64).fill(0xdeadbeef);
  const res = simulate(k, {
    grid: [1, 1, 1],
    args: {
      In: { bytes: new Uint8Array(input.buffer) },
      Out: { bytes: new Uint8Array(out.buffer) },
      Out2: { bytes: new Uint8Array(out2.buffer) },
    },
  });
  for (let t = 0; t < 64; t++) {
    assert.equal(out[t], t < 40 ? 1000 + t * 17 : 7);
    assert.equal(out2[t], t < 40 ? 0xdeadbeef : 7);
  }
  assert.equal(res.stats.globalBytesRead, 40 * 4);
  assert.equal(res.stats.globalBytesWritten, (64 + 24) * 4);
});

Deno.test("non-uniform ifs run both branches under masks, nested; counts follow the warps", () => {
  const e = new Emitter();
  const tid = e.tid();
  const out = e.addr(e.param("Out"), tid, 4);
  const p = e.setp("lt", "u32", tid, 40);
  const v = e.reg("u32");
  e.if(p, false, () => {
    e.emit({ op: "bin", fn: "mul", type: "u32", dst: v, a: tid, b: imm(3) });
    const q = e.setp("eq", "u32", e.bin("and", "u32", tid, 3), 0);
    e.if(q, false, () => {
      e.emit({ op: "bin", fn: "add", type: "u32", dst: v, a: v, b: imm(5) });
    });
  }, () => {
    e.emit({ op: "bin", fn: "add", type: "u32", dst: v, a: tid, b: imm(1000) });
  });
  e.emit({ op: "stg", width: "b32", src: [v], addr: out, offset: 0 });
  const k = kernelOf(e, "ifs", 96, 0, { tensors: ["Out"] });
  const o = new Uint32Array(96).fill(0xdeadbeef);
  const res = simulate(k, { grid: [1, 1, 1], args: { Out: { bytes: new Uint8Array(o.buffer) } } });
  for (let t = 0; t < 96; t++) {
    assert.equal(o[t], t < 40 ? t * 3 + (t % 4 === 0 ? 5 : 0) : t + 1000);
  }
  // then-branch: warps 0 and 1; else-branch: warps 1 and 2; everything else: 3 warps.
  const st = res.stats.byKind;
  assert.equal(st["bin"], 2 + 2 + 2 + 2 + 3 /* mulwide's add */);
  assert.equal(st["setp"], 3 + 2);
});

Deno.test("a uniform if whose condition differs across threads is an error", () => {
  const e = new Emitter();
  const tid = e.tid();
  const p = e.setp("lt", "u32", tid, 16);
  e.if(p, true, () => e.emit({ op: "bar" }));
  const k = kernelOf(e, "uif", 64, 0, {});
  assert.throws(
    () => simulate(k, { grid: [1, 1, 1], args: {} }),
    /Condition of a uniform if differs across threads: true in thread 0, false in thread 16: at "if\.uniform %p1 \{" \(op 2, line 6\), block \(0, 0, 0\), warp 0, lane 16/,
  );
});

Deno.test("a loop whose trip count differs across threads is an error; a uniform one runs", () => {
  const e = new Emitter();
  const tid = e.tid();
  const n = e.bin("shr", "u32", tid, 5);
  const i = e.reg("u32");
  const acc = e.reg("u32");
  e.emit({ op: "mov", dst: acc, src: imm(0) });
  e.for(i, imm(0), n, 1, () => {
    e.emit({ op: "bin", fn: "add", type: "u32", dst: acc, a: acc, b: i });
  });
  assert.throws(
    () => simulate(kernelOf(e, "loop", 64, 0, {}), { grid: [1, 1, 1], args: {} }),
    /Loop trip count is not uniform: thread 0 stops at 0 but thread 32 continues at 0/,
  );
  const u = new Emitter();
  const t2 = u.tid();
  const j = u.reg("u32");
  const s = u.reg("u32");
  u.emit({ op: "mov", dst: s, src: t2 });
  u.for(j, imm(3), imm(10), 2, () => {
    u.emit({ op: "bin", fn: "add", type: "u32", dst: s, a: s, b: j });
  });
  u.emit({ op: "stg", width: "b32", src: [s], addr: u.addr(u.param("Out"), t2, 4), offset: 0 });
  const o = new Uint32Array(64).fill(1);
  simulate(kernelOf(u, "loop2", 64, 0, { tensors: ["Out"] }), {
    grid: [1, 1, 1],
    args: { Out: { bytes: new Uint8Array(o.buffer) } },
  });
  assert.deepEqual(Array.from(o), Array.from({ length: 64 }, (_, t) => t + 3 + 5 + 7 + 9));
});

Deno.test("bar in a non-uniform if, and a partial warp at an mma, are errors", () => {
  const e = new Emitter();
  const tid = e.tid();
  const p = e.setp("lt", "u32", tid, 16);
  e.if(p, false, () => e.emit({ op: "bar" }));
  assert.throws(
    () => simulate(kernelOf(e, "badbar", 64, 0, {}), { grid: [1, 1, 1], args: {} }),
    /bar\.sync in non-uniform control flow .*: at "bar" \(op 2\/0, line 7\)/,
  );
  const m = new Emitter();
  const t = m.tid();
  const q = m.setp("lt", "u32", t, 16);
  const regs = (n: number, ty: Reg["type"]) => Array.from({ length: n }, () => m.reg(ty));
  const c = regs(4, "f32");
  m.if(q, false, () => {
    m.emit({ op: "mma", shape: "m16n8k16.f16.f32", d: c, a: regs(4, "b32"), b: regs(2, "b32"), c });
  });
  assert.throws(
    () => simulate(kernelOf(m, "badmma", 32, 0, {}), { grid: [1, 1, 1], args: {} }),
    /mma is warp-collective: lane 16 of warp 0 does not take part .*warp 0, lane 16/,
  );
});

// ---------------------------------------------------------------------------------------------
// Errors with locations
// ---------------------------------------------------------------------------------------------

Deno.test("an out-of-bounds global load names the op, block, warp and lane", () => {
  const e = new Emitter();
  const tid = e.tid();
  const bx = e.reg("u32");
  e.emit({ op: "sreg", dst: bx, sreg: "ctaid.x" });
  const i = e.reg("u32");
  e.emit({ op: "mad", type: "u32", dst: i, a: bx, b: imm(64), c: tid });
  const v = e.reg("b32");
  e.emit({ op: "ldg", width: "b32", dst: [v], addr: e.addr(e.param("In"), i, 4), offset: 0 });
  const k = kernelOf(e, "oob", 64, 0, { tensors: ["In"] });
  const run = () =>
    simulate(k, { grid: [2, 1, 1], args: { In: { bytes: new Uint8Array((64 + 37) * 4) } } });
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof SimError);
    assert.equal(
      err.message,
      'Out-of-bounds global load: 4 bytes at offset 404 of tensor "In" (404 bytes): at "{%b3} = ldg.b32 [%rd6]" (op 6, line 10), block (1, 0, 0), warp 1, lane 5',
    );
    assert.deepEqual(err.where, {
      op: "{%b3} = ldg.b32 [%rd6]",
      path: "6",
      line: 10,
      block: [1, 0, 0],
      warp: 1,
      lane: 5,
    });
    // The line is the op's line in the printed kernel.
    assert.equal(printKernel(k).split("\n")[err.where.line - 1]!.trim(), err.where.op);
    return true;
  });
  // Restricting the run to block 0 avoids it.
  simulate(k, { grid: [2, 1, 1], args: { In: { bytes: new Uint8Array((64 + 37) * 4) } } }, {
    blocks: [[0, 0, 0]],
  });
});

Deno.test("out-of-bounds and misaligned shared accesses raise", () => {
  const e = new Emitter();
  const tid = e.tid();
  const a = e.bin("mul", "u32", tid, 4);
  e.emit({ op: "sts", width: "b32", src: [tid], addr: a, offset: 0 });
  assert.throws(
    () => simulate(kernelOf(e, "soob", 32, 100, {}), { grid: [1, 1, 1], args: {} }),
    /Out-of-bounds shared store: 4 bytes at shared address 0x64 \(shared memory has 100 bytes\): .*warp 0, lane 25/,
  );
  const m = new Emitter();
  const t = m.tid();
  const b = m.bin("mul", "u32", t, 4);
  const x = [m.reg("b32"), m.reg("b32")];
  m.emit({ op: "lds", width: "b32", dst: x, addr: b, offset: 0 });
  assert.throws(
    () => simulate(kernelOf(m, "smis", 32, 1024, {}), { grid: [1, 1, 1], args: {} }),
    /Misaligned shared load: shared address 0x4 is not a multiple of 8: .*lane 1/,
  );
});

// ---------------------------------------------------------------------------------------------
// ldmatrix
// ---------------------------------------------------------------------------------------------

/** One warp: shared = In (1024 bytes); lane l supplies row address Rows[l]; Out = the registers. */
function ldmatrixKernel(num: 1 | 2 | 4, trans: boolean): Kernel {
  const e = new Emitter();
  const tid = e.tid();
  const sm = e.reg("u32");
  e.emit({ op: "smembase", dst: sm });
  const inp = e.param("In");
  for (let half = 0; half < 2; half++) {
    const v = [0, 1, 2, 3].map(() => e.reg("b32"));
    e.emit({ op: "ldg", width: "b32", dst: v, addr: e.addr(inp, tid, 16), offset: half * 512 });
    const s = e.reg("u32");
    e.emit({ op: "mad", type: "u32", dst: s, a: tid, b: imm(16), c: sm });
    e.emit({ op: "sts", width: "b32", src: v, addr: s, offset: half * 512 });
  }
  e.emit({ op: "bar" });
  const row = e.reg("u32");
  e.emit({ op: "ldg", width: "b32", dst: [row], addr: e.addr(e.param("Rows"), tid, 4), offset: 0 });
  const d = Array.from({ length: num }, () => e.reg("b32"));
  e.emit({ op: "ldmatrix", num, trans, dst: d, addr: row, offset: 0 });
  const out = e.addr(e.param("Out"), tid, 4 * num);
  d.forEach((r, j) => e.emit({ op: "stg", width: "b32", src: [r], addr: out, offset: 4 * j }));
  return kernelOf(e, "ldm", 32, 1024, { tensors: ["In", "Rows", "Out"] });
}

for (const num of [1, 2, 4] as const) {
  for (const trans of [false, true]) {
    Deno.test(`ldmatrix.x${num}${trans ? ".trans" : ""} matches ldmatrixCoord`, () => {
      const r = rng(num * 10 + (trans ? 1 : 0));
      const input = new Uint16Array(512).map(() => randInt(r, 1, 0xfffe));
      // Rows: distinct random 16-byte chunks of the 1024 bytes; lanes past 8 * num get garbage.
      const chunks = Array.from({ length: 64 }, (_, i) => i).sort(() => r() - 0.5);
      const rows = new Uint32Array(32).map((_, l) => (l < 8 * num ? chunks[l]! * 16 : 0xfffffff0));
      const out = new Uint32Array(32 * num).fill(0xdeadbeef);
      const res = simulate(ldmatrixKernel(num, trans), {
        grid: [1, 1, 1],
        args: {
          In: { bytes: new Uint8Array(input.buffer) },
          Rows: { bytes: new Uint8Array(rows.buffer) },
          Out: { bytes: new Uint8Array(out.buffer) },
        },
      });
      for (let l = 0; l < 32; l++) {
        for (let j = 0; j < num; j++) {
          const word = out[l * num + j]!;
          for (let el = 0; el < 2; el++) {
            const [rr, cc] = ldmatrixCoord(l, j, el, trans);
            const want = input[(rows[8 * j + rr]! + 2 * cc) / 2]!;
            assert.equal((word >>> (16 * el)) & 0xffff, want, `lane ${l} reg ${j} elem ${el}`);
          }
        }
      }
      assert.deepEqual(res.hazards, []);
      assert.equal(res.stats.banks.ldmatrix.requests, 1);
      assert.equal(res.stats.banks.ldmatrix.ideal, num);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Bank conflicts
// ---------------------------------------------------------------------------------------------

/** One warp: an lds, sts, ldmatrix or cp.async whose lane l accesses `l * stride` bytes. */
function bankKernel(
  kind: "lds" | "sts" | "ldmatrix" | "cpasync",
  stride: number,
  vec: 1 | 2 | 4 = 1,
) {
  const e = new Emitter();
  const tid = e.tid();
  const a = e.bin("mul", "u32", tid, stride);
  const regs = Array.from({ length: kind === "ldmatrix" ? 4 : vec }, () => e.reg("b32"));
  if (kind !== "lds" && kind !== "ldmatrix") {
    for (const r of regs) e.emit({ op: "mov", dst: r, src: imm(1) });
  }
  if (kind === "lds") e.emit({ op: "lds", width: "b32", dst: regs, addr: a, offset: 0 });
  if (kind === "sts") e.emit({ op: "sts", width: "b32", src: regs, addr: a, offset: 0 });
  if (kind === "ldmatrix") {
    e.emit({ op: "ldmatrix", num: 4, trans: false, dst: regs, addr: a, offset: 0 });
  }
  if (kind === "cpasync") {
    const src = e.addr(e.param("In"), tid, 16);
    e.emit({ op: "cpasync", cache: "cg", bytes: 16, dst: a, dstOffset: 0, src, srcBytes: imm(16) });
    e.emit({ op: "commit" });
    e.emit({ op: "wait", n: 0 });
  }
  return kernelOf(e, "banks", 32, 8192, { tensors: ["In"] });
}

function banks(kind: "lds" | "sts" | "ldmatrix" | "cpasync", stride: number, vec: 1 | 2 | 4 = 1) {
  const res = simulate(bankKernel(kind, stride, vec), {
    grid: [1, 1, 1],
    args: { In: { bytes: new Uint8Array(512) } },
  });
  const b = res.stats.banks[kind];
  assert.equal(b.requests, 1);
  return [b.wavefronts, b.ideal];
}

Deno.test("bank conflicts: conflict-free, 2-way, 8-way, broadcast, vectors, ldmatrix, cp.async", () => {
  assert.deepEqual(banks("lds", 4), [1, 1]); // conflict-free
  assert.deepEqual(banks("lds", 0), [1, 1]); // one word, broadcast
  assert.deepEqual(banks("lds", 8), [2, 1]); // lanes l and l + 16 share a bank
  assert.deepEqual(banks("lds", 32), [8, 1]); // 8 lanes on each of banks 0, 8, 16, 24
  assert.deepEqual(banks("lds", 128), [32, 1]);
  assert.deepEqual(banks("sts", 8), [2, 1]);
  assert.deepEqual(banks("lds", 8, 2), [2, 2]); // 64-bit: two half-warp phases, each clean
  assert.deepEqual(banks("lds", 16, 4), [4, 4]); // 128-bit: four quarter-warp phases
  assert.deepEqual(banks("lds", 32, 4), [8, 4]); // 2-way within each quarter
  assert.deepEqual(banks("ldmatrix", 16), [4, 4]); // contiguous 16-byte rows
  assert.deepEqual(banks("ldmatrix", 128), [32, 4]); // rows 128 bytes apart: 8-way per matrix
  assert.deepEqual(banks("cpasync", 16), [4, 4]);
  assert.deepEqual(banks("cpasync", 32), [8, 4]);
});

Deno.test("operation lines and paths follow printKernel through loops, ifs and elses", () => {
  const e = new Emitter();
  const tid = e.tid();
  const p = e.setp("lt", "u32", tid, 3);
  const i = e.reg("u32");
  e.for(i, imm(0), imm(2), 1, () => {
    e.emit({ op: "comment", text: "loop body" });
    e.if(p, false, () => {
      e.emit({ op: "bin", fn: "add", type: "u32", dst: tid, a: tid, b: imm(1) });
    }, () => {
      e.emit({ op: "bin", fn: "sub", type: "u32", dst: tid, a: tid, b: imm(1) });
      e.if(p, true, () => e.emit({ op: "bar" }));
    });
  });
  e.emit({ op: "bar" });
  const k = kernelOf(e, "lines", 32, 0, {});
  const text = printKernel(k).split("\n");
  const infos = indexOps(k);
  assert.deepEqual(infos.map((x) => x.path), [
    "0",
    "1",
    "2",
    "2/0",
    "2/1",
    "2/1/0",
    "2/1/else/0",
    "2/1/else/1",
    "2/1/else/1/0",
    "3",
  ]);
  for (const x of infos) assert.equal(text[x.line - 1]!.trim(), x.text, `op ${x.path}`);
});
