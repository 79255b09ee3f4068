// The simulator's warpgroup MMAs (backends/sim/_wgmma.ts): hand-built kernels that copy A
// (64 G x K) and B (N x K) into shared memory in the WGMMA_SMEM layout, fence, run two
// wgmmas along K, wait and store the accumulators; compared with an f64 reference (integers
// bit-exact, saturation included), and their mutants caught with the right hazard kind. The
// 8-bit float rows (all four format pairs) against an exact BigInt reference of their
// accumulation model (numerics/mod.ts: each instruction's sum truncated to 14 bits), with
// e5m2 subnormals and the largest values, and a mutant that reads A in the other format.

import assert from "node:assert/strict";
import { imm, when } from "../ir/builder.ts";
import * as ir from "../ir/builder.ts";
import type { Kernel, Op, Reg } from "../ir/kernel.ts";
import {
  WGMMA_BY_NAME,
  WGMMA_TYPE_BITS,
  type WgmmaShape,
  type WgmmaType,
} from "../ir/wgmma_table.ts";
import { type HazardKind, SimError, type SimOptions, simulate } from "../backends/sim/mod.ts";
import {
  bf16BitsToF32,
  bitsF32,
  f16BitsToF32,
  f32Bits,
  f32ToBf16Bits,
  f32ToF16Bits,
  fp8ToNumber,
  tf32Truncate,
} from "../numerics/mod.ts";
import {
  Emitter,
  rng,
  wgmmaAccOffsets,
  wgmmaFirstAccElement,
} from "../backends/sim/_test_kernels.ts";

/** Bytes of a row of the global A and B (two wgmma K steps of 32 bytes). */
const ROW_BYTES = 64;

/** Deliberate bugs of {@link wgmmaKernel}. */
type Mutant =
  | "none"
  | "no-wait"
  | "wait-1"
  | "no-fence"
  | "no-proxyfence"
  | "no-bar"
  | "store-during"
  | "no-cp-wait";

interface Spec {
  readonly shape: string;
  /** Warpgroups (128 threads each). */
  readonly groups: 1 | 2;
  /** How the operands reach shared memory. */
  readonly copy: "sts" | "cpasync";
  /** "c": the accumulators loaded from C, then D = C + A B; "zero": the first wgmma with
   * scale-d 0 (the accumulators never written before), D = A B. */
  readonly init: "c" | "zero";
  /** The k-steps as a loop of wgmma, commit, wait 1 (the pipeline's pattern). */
  readonly loop?: boolean;
  readonly mutant?: Mutant;
}

function accBytes(s: WgmmaShape): number {
  return s.cType === "f16" ? 2 : 4;
}

/** Copies `rows` rows of 64 bytes from `src` to the WGMMA_SMEM tile at shared `base`: chunk
 * i = r * 4 + c (thread tid + T * it) lands at base + (r>>3)*1024 + (r&7)*128 + (c^(r&7))*16. */
function copyTile(e: Emitter, spec: Spec, src: Reg, base: Reg, rows: number, tid: Reg): void {
  const T = 128 * spec.groups;
  const chunks = rows * 4;
  for (let it = 0; it * T < chunks; it++) {
    const i = e.bin("add", "u32", tid, it * T);
    const p = chunks - it * T < T ? e.setp("lt", "u32", i, chunks) : null;
    const g = when(p);
    const r = e.bin("shr", "u32", i, 2);
    const c = e.bin("and", "u32", i, 3);
    const r7 = e.bin("and", "u32", r, 7);
    const sw = e.bin("shl", "u32", e.bin("xor", "u32", c, r7), 4);
    const grp = e.bin("shl", "u32", e.bin("shr", "u32", r, 3), 10);
    const dst = e.bin("add", "u32", e.bin("add", "u32", grp, e.bin("shl", "u32", r7, 7)), sw);
    const sa = e.bin("add", "u32", dst, base);
    const ga = e.addr(src, i, 16);
    if (spec.copy === "sts") {
      const v = [0, 1, 2, 3].map(() => e.reg("b32"));
      e.emit(ir.ldg("b32", v, ga, 0, g));
      e.emit(ir.sts("b32", v, sa, 0, g));
    } else {
      e.emit(
        ir.cpAsync(
          { cache: "cg", bytes: 16, dst: sa, dstOffset: 0, src: ga, srcBytes: imm(16) },
          g,
        ),
      );
    }
  }
}

/** The per-register byte offsets of a thread's accumulators from its first element's
 * address in the row-major 64G x N tile. */
function accOffsets(s: WgmmaShape): number[] {
  return wgmmaAccOffsets(s.n, s.accRegs, s.cType === "f16", accBytes(s));
}

/** A kernel: copy A and B in, `proxyfence`, `bar`, `wgfence`, two wgmmas along K, `wgcommit`,
 * `wgwait 0`, store D (parameters A, B, C, D; one block). */
function wgmmaKernel(spec: Spec): Kernel {
  const s = WGMMA_BY_NAME.get(spec.shape)!;
  const mutant = spec.mutant ?? "none";
  const G = spec.groups;
  const e = new Emitter();
  const [A, B, C, D] = ["A", "B", "C", "D"].map((n) => e.param(n));
  const tid = e.tid();
  const smem = e.reg("u32", "smem");
  e.emit(ir.smemBase(smem));
  const bBase = e.bin("add", "u32", smem, 8192 * G);
  copyTile(e, spec, A!, smem, 64 * G, tid);
  copyTile(e, spec, B!, bBase, s.n, tid);
  if (spec.copy === "cpasync") {
    e.emit(ir.commit());
    if (mutant !== "no-cp-wait") e.emit(ir.wait(0));
  }
  if (mutant !== "no-proxyfence") e.emit(ir.proxyFence());
  if (mutant !== "no-bar") e.emit(ir.bar());

  const el = wgmmaFirstAccElement(e, tid, s.n);
  const offs = accOffsets(s);
  const accType = s.cType === "f16" ? "b32" : s.cType;
  const d = offs.map(() => e.reg(accType, "acc"));
  if (spec.init === "c") {
    const pc = e.addr(C!, el, accBytes(s));
    d.forEach((r, i) => e.emit(ir.ldg("b32", [r], pc, offs[i]!)));
  }

  const aAddr = e.reg("u32");
  e.emit(ir.mad("u32", aAddr, e.bin("shr", "u32", tid, 7), imm(8192), smem));
  const step = (kk: number | Reg, scaleD: 0 | 1) => {
    const off = (x: Reg) =>
      typeof kk === "number" ? (kk === 0 ? x : e.bin("add", "u32", x, 32)) : (() => {
        const r = e.reg("u32");
        e.emit(ir.mad("u32", r, kk, imm(32), x));
        return r;
      })();
    e.emit(ir.wgmma(s.name, d, off(aAddr), off(bBase), scaleD));
  };
  if (spec.loop) {
    const kt = e.reg("u32", "kt");
    e.for(kt, imm(0), imm(2), 1, () => {
      if (mutant !== "no-fence") e.emit(ir.wgFence());
      step(kt, 1);
      e.emit(ir.wgCommit());
      if (mutant !== "no-wait") e.emit(ir.wgWait(1));
    });
  } else {
    if (mutant !== "no-fence") e.emit(ir.wgFence());
    step(0, spec.init === "zero" ? 0 : 1);
    step(1, 1);
    e.emit(ir.wgCommit());
  }
  if (mutant === "store-during") {
    e.emit(ir.sts("b32", [imm(0)], aAddr, 16, when(e.setp("eq", "u32", tid, 0))));
  }
  if (mutant === "wait-1") e.emit(ir.wgWait(1));
  else if (mutant !== "no-wait") e.emit(ir.wgWait(0));

  const pd = e.addr(D!, el, accBytes(s));
  d.forEach((r, i) => e.emit(ir.stg("b32", [r], pd, offs[i]!)));
  return {
    kind: "kernel",
    name: `wgmma_${mutant.replaceAll("-", "_")}`,
    target: "sm90",
    params: ["A", "B", "C", "D"].map((name) => ({ name, kind: "tensor", ptx: "u64" }) as const),
    threads: 128 * G,
    dynamicSmemBytes: 8192 * G + 128 * s.n,
    grid: { tileM: 64 * G, tileN: s.n, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: e.regs,
    body: e.body,
  };
}

/** An operand element: its bits (as stored) and its value as the instruction reads it. */
function randomElement(type: string, r: () => number): [number, number] {
  const x = r() * 4 - 2;
  switch (type) {
    case "f16": {
      const h = f32ToF16Bits(x);
      return [h, f16BitsToF32(h)];
    }
    case "bf16": {
      const h = f32ToBf16Bits(x);
      return [h, bf16BitsToF32(h)];
    }
    case "tf32": {
      // Full f32 words: the instruction reads the top 19 bits only.
      const w = f32Bits(x);
      return [w, tf32Truncate(bitsF32(w))];
    }
    case "s8": {
      const v = Math.floor(r() * 256) - 128;
      return [v & 0xff, v];
    }
    case "e4m3":
    case "e5m2": {
      const c = fp8Code(type, r);
      return [c, fp8ToNumber(c, type)];
    }
    default: {
      const v = Math.floor(r() * 256);
      return [v, v];
    }
  }
}

function writeElem(dv: DataView, i: number, bytes: number, bits: number): void {
  if (bytes === 1) dv.setUint8(i, bits);
  else if (bytes === 2) dv.setUint16(i * 2, bits, true);
  else dv.setUint32(i * 4, bits, true);
}

interface Run {
  readonly res: ReturnType<typeof simulate>;
  /** D as the kernel stored it, and the reference with its error bound, row-major. */
  readonly got: number[];
  readonly want: number[];
  readonly bound: number[];
}

/** An 8-bit float code, random sign: a quarter of them the largest magnitude, a quarter
 * subnormals, the rest any finite code (zero included). */
function fp8Code(type: "e4m3" | "e5m2", r: () => number): number {
  const max = type === "e4m3" ? 0x7e : 0x7b;
  const subnormals = type === "e4m3" ? 7 : 3;
  const u = r();
  const mag = u < 0.25
    ? max
    : u < 0.5
    ? 1 + Math.floor(r() * subnormals)
    : Math.floor(r() * (max + 1));
  return mag | (r() < 0.5 ? 0x80 : 0);
}

function operand(type: string, rows: number, K: number, r: () => number) {
  const eb = WGMMA_TYPE_BITS[type as WgmmaType] / 8;
  const bytes = new Uint8Array(rows * ROW_BYTES);
  const dv = new DataView(bytes.buffer);
  const vals = new Float64Array(rows * K);
  for (let i = 0; i < rows * K; i++) {
    const [bits, v] = randomElement(type, r);
    writeElem(dv, i, eb, bits);
    vals[i] = v;
  }
  return { bytes, vals };
}

function satS32(x: number): number {
  return Math.max(-2147483648, Math.min(2147483647, x));
}

/** Runs a kernel of `spec` on random inputs and computes the reference. */
function runSpec(
  spec: Spec,
  seed: number,
  kernel: Kernel = wgmmaKernel(spec),
  options: SimOptions = {},
): Run {
  const s = WGMMA_BY_NAME.get(spec.shape)!;
  const r = rng(seed);
  const M = 64 * spec.groups;
  const N = s.n;
  const K = 2 * s.k;
  const a = operand(s.aType, M, K, r);
  const b = operand(s.bType, N, K, r);
  const eb = accBytes(s);
  const c = new Uint8Array(M * N * eb);
  const cdv = new DataView(c.buffer);
  const cv = new Float64Array(M * N);
  for (let i = 0; i < M * N; i++) {
    if (s.cType === "s32") {
      // Anywhere in the s32 range, so that some sums saturate.
      const v = Math.floor(r() * 2 ** 32) - 2 ** 31;
      cdv.setInt32(i * 4, v, true);
      cv[i] = v;
    } else if (s.cType === "f16") {
      const h = f32ToF16Bits(r() * 8 - 4);
      cdv.setUint16(i * 2, h, true);
      cv[i] = f16BitsToF32(h);
    } else {
      const v = Math.fround(r() * 8 - 4);
      cdv.setFloat32(i * 4, v, true);
      cv[i] = v;
    }
  }
  const out = new Uint8Array(M * N * eb).fill(0xff);
  const res = simulate(kernel, {
    grid: [1, 1, 1],
    args: { A: { bytes: a.bytes }, B: { bytes: b.bytes }, C: { bytes: c }, D: { bytes: out } },
  }, options);
  const odv = new DataView(out.buffer);
  const got: number[] = [];
  const want: number[] = [];
  const bound: number[] = [];
  const ulp = s.cType === "f16" ? 2 ** -10 : 2 ** -23;
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      const q = i * N + j;
      got.push(
        s.cType === "s32"
          ? odv.getInt32(q * 4, true)
          : s.cType === "f16"
          ? f16BitsToF32(odv.getUint16(q * 2, true))
          : odv.getFloat32(q * 4, true),
      );
      let acc = spec.init === "c" ? cv[q]! : 0;
      let mag = Math.abs(acc);
      for (let half = 0; half < 2; half++) {
        let p = 0;
        for (let k = half * s.k; k < (half + 1) * s.k; k++) {
          p += a.vals[i * K + k]! * b.vals[j * K + k]!;
        }
        acc = s.cType === "s32" ? satS32(acc + p) : acc + p;
        for (let k = half * s.k; k < (half + 1) * s.k; k++) {
          mag += Math.abs(a.vals[i * K + k]! * b.vals[j * K + k]!);
        }
      }
      want.push(acc);
      bound.push(s.cType === "s32" ? 0 : 2 * ulp * mag);
    }
  }
  return { res, got, want, bound };
}

function kinds(res: { hazards: readonly { kind: HazardKind }[] }): HazardKind[] {
  return [...new Set(res.hazards.map((h) => h.kind))].sort();
}

function expectAgrees(run: Run, what: string): void {
  const { res, got, want, bound } = run;
  assert.equal(
    res.hazardCount,
    0,
    `${what}: ${res.hazards.map((h) => `${h.kind}: ${h.op}: ${h.message}`).join("\n")}`,
  );
  for (let i = 0; i < got.length; i++) {
    const ok = bound[i] === 0 ? got[i] === want[i] : Math.abs(got[i]! - want[i]!) <= bound[i]!;
    if (!ok) {
      assert.fail(`${what}: element ${i}: got ${got[i]}, want ${want[i]} (within ${bound[i]})`);
    }
  }
}

const SHAPES: readonly { readonly rows: (n: number) => string; readonly ns: readonly number[] }[] =
  [
    { rows: (n) => `wg.m64n${n}k16.f16.f32`, ns: [8, 64, 256] },
    { rows: (n) => `wg.m64n${n}k16.f16.f16`, ns: [8, 64, 256] },
    { rows: (n) => `wg.m64n${n}k16.bf16.f32`, ns: [8, 64, 256] },
    { rows: (n) => `wg.m64n${n}k8.tf32.f32`, ns: [8, 64, 256] },
    { rows: (n) => `wg.m64n${n}k32.s8.s32`, ns: [8, 64, 224] },
    { rows: (n) => `wg.m64n${n}k32.u8.s8.s32`, ns: [8, 64] },
    { rows: (n) => `wg.m64n${n}k32.s8.u8.s32`, ns: [64] },
    { rows: (n) => `wg.m64n${n}k32.u8.s32`, ns: [64] },
  ];

let seed = 1;
for (const { rows, ns } of SHAPES) {
  for (const n of ns) {
    const shape = rows(n);
    const sd = seed++;
    Deno.test(`wgmma ${shape}: D = C + A B agrees with the reference, no hazards`, () => {
      const run = runSpec({ shape, groups: 1, copy: "sts", init: "c" }, sd);
      expectAgrees(run, shape);
      assert.equal(run.res.stats.byKind["wgmma"], 2 * 4);
      assert.equal(run.res.stats.mmas, 0);
    });
  }
}

Deno.test("wgmma with scale-d 0 ignores the (poisoned) accumulators; two warpgroups, cp.async", () => {
  for (const shape of ["wg.m64n64k16.f16.f32", "wg.m64n8k32.s8.s32", "wg.m64n32k16.f16.f16"]) {
    const run = runSpec({ shape, groups: 2, copy: "cpasync", init: "zero" }, seed++);
    expectAgrees(run, shape);
    const s = WGMMA_BY_NAME.get(shape)!;
    // Per wgmma and warpgroup: A's 64 rows and B's N of 32 bytes.
    const copied = (128 + s.n) * ROW_BYTES;
    assert.equal(run.res.stats.sharedBytesRead, 2 * 2 * (64 + s.n) * 32);
    assert.equal(run.res.stats.sharedBytesWritten, copied);
    assert.equal(run.res.stats.byKind["wgmma"], 2 * 8);
  }
});

Deno.test("wgmma in a loop with wait 1: chained accumulators of a pending wgmma are no hazard", () => {
  const spec: Spec = {
    shape: "wg.m64n64k16.bf16.f32",
    groups: 2,
    copy: "cpasync",
    init: "c",
    loop: true,
  };
  expectAgrees(runSpec(spec, 77), "loop");
});

/** A mutant of the correct kernel, and the hazard kinds it must report (exactly). */
const MUTANTS: readonly { mutant: Mutant; kinds: HazardKind[]; spec?: Partial<Spec> }[] = [
  { mutant: "no-wait", kinds: ["accumulator-before-wait", "unbalanced-wgmma"] },
  { mutant: "wait-1", kinds: ["accumulator-before-wait", "unbalanced-wgmma"] },
  {
    mutant: "no-wait",
    kinds: ["accumulator-before-wait", "unbalanced-wgmma"],
    spec: { loop: true },
  },
  { mutant: "no-fence", kinds: ["unfenced-accumulator"] },
  { mutant: "no-fence", kinds: ["unfenced-accumulator"], spec: { loop: true } },
  { mutant: "no-proxyfence", kinds: ["unfenced-async-proxy"] },
  { mutant: "no-proxyfence", kinds: ["unfenced-async-proxy"], spec: { copy: "cpasync" } },
  { mutant: "no-bar", kinds: ["race"] },
  { mutant: "store-during", kinds: ["race", "write-during-wgmma"] },
  {
    mutant: "no-cp-wait",
    kinds: ["read-before-landed", "unbalanced-cp.async"],
    spec: { copy: "cpasync" },
  },
];

for (const m of MUTANTS) {
  const name = `${m.mutant}${m.spec === undefined ? "" : ` ${JSON.stringify(m.spec)}`}`;
  Deno.test(`wgmma mutant ${name}: reported as ${m.kinds.join(", ")}`, () => {
    const spec: Spec = {
      shape: "wg.m64n64k16.f16.f32",
      groups: 2,
      copy: "sts",
      init: "c",
      mutant: m.mutant,
      ...m.spec,
    };
    const { res } = runSpec(spec, 5, wgmmaKernel(spec), { maxHazards: 1000 });
    assert.deepEqual(kinds(res), [...m.kinds].sort(), res.hazards.map((h) => h.message).join("\n"));
    for (const h of res.hazards) assert.deepEqual(h.block, [0, 0, 0]);
  });
}

Deno.test("wgmma hazards name the operation: the store, the wgmma, the accumulator's reader", () => {
  const at = (mutant: Mutant, kind: HazardKind) => {
    const spec: Spec = { shape: "wg.m64n8k16.f16.f32", groups: 1, copy: "sts", init: "c", mutant };
    const { res } = runSpec(spec, 9, wgmmaKernel(spec), { maxHazards: 1000 });
    return res.hazards.find((h) => h.kind === kind)!;
  };
  const w = at("store-during", "write-during-wgmma");
  assert.match(w.op, /^@%p\d+ sts\.b32/);
  assert.deepEqual(w.warps, [0, 0, 1, 2, 3]);
  assert.match(w.message, /overwrites shared memory a wgmma of warpgroup 0 still reads/);
  const f = at("no-fence", "unfenced-accumulator");
  assert.match(f.op, /wgmma/);
  assert.match(f.message, /ldg/);
  const a = at("no-wait", "accumulator-before-wait");
  assert.match(a.op, /^stg/);
  assert.equal(a.count, 1);
  const u = at("no-wait", "unbalanced-wgmma");
  assert.match(
    u.message,
    /2 wgmmas still pending .*0 never committed, 2 committed but never waited/,
  );
  const p = at("no-proxyfence", "unfenced-async-proxy");
  assert.match(p.message, /fence\.proxy\.async/);
});

/** Replaces each op `f` matches (at the top level) by the ops it returns. */
function edit(k: Kernel, f: (o: Op) => Op[] | null): Kernel {
  return { ...k, body: k.body.flatMap((o) => f(o) ?? [o]) };
}

Deno.test("wgmma, wgfence, wgcommit, wgwait are warpgroup-collective; A's address uniform", () => {
  const spec: Spec = { shape: "wg.m64n8k16.f16.f32", groups: 2, copy: "sts", init: "c" };
  const base = wgmmaKernel(spec);
  for (const op of ["wgmma", "wgfence", "wgcommit", "wgwait"]) {
    // Only the threads below 192 run it: warpgroup 1 half-active.
    const p: Reg = { kind: "reg", id: base.regs.length, type: "pred" };
    const tid = base.body.find((o) => o.op === "sreg")!;
    const k = edit({ ...base, regs: [...base.regs, p] }, (o) => {
      if (o === tid) return [o, ir.setp("lt", "u32", p, (o as { dst: Reg }).dst, imm(192))];
      if (o.op !== op) return null;
      return [{ op: "if", cond: p, negate: false, uniform: false, then: [o], otherwise: [] }];
    });
    assert.throws(() => runSpec(spec, 3, k), (err: unknown) => {
      assert.ok(err instanceof SimError);
      assert.match(err.message, /warpgroup-collective: thread 64 of warpgroup 1/);
      return true;
    });
  }
  // A per-thread A address.
  const k = edit(
    base,
    (o) =>
      o.op === "wgmma" ? [{ ...o, a: base.body.find((x) => x.op === "sreg")!.dst as Reg }] : null,
  );
  assert.throws(() => runSpec(spec, 3, k), /wgmma A address differs across the warpgroup/);
});

Deno.test("wgmma: rows the simulator does not model, and a bad register count, are errors", () => {
  const spec: Spec = { shape: "wg.m64n8k16.f16.f32", groups: 1, copy: "sts", init: "c" };
  const base = wgmmaKernel(spec);
  const b1 = edit(
    base,
    (o) => o.op === "wgmma" ? [{ ...o, shape: "wg.m64n8k256.b1.s32" }] : null,
  );
  assert.throws(() => runSpec(spec, 3, b1), /b1 x b1 is not simulated/);
  const short = edit(base, (o) => o.op === "wgmma" ? [{ ...o, d: o.d.slice(1) }] : null);
  assert.throws(() => runSpec(spec, 3, short), /needs 4 accumulator registers, got 3/);
});

Deno.test("wgmma without hazard checks: the same result; only the unbalanced groups reported", () => {
  const spec: Spec = {
    shape: "wg.m64n64k16.f16.f32",
    groups: 1,
    copy: "sts",
    init: "c",
    mutant: "no-wait",
  };
  const on = runSpec(spec, 21);
  const off = runSpec(spec, 21, wgmmaKernel(spec), { hazards: false });
  assert.ok(on.res.hazardCount > 0);
  // As for cp.async, wgmmas left pending at the end of a block are reported all the same.
  assert.deepEqual(kinds(off.res), ["unbalanced-wgmma"]);
  assert.deepEqual(off.got, on.got);
});

/** The fp8 model's exact reference: each instruction's sum of the accumulator and its 32
 * products, exact (BigInt, in units of 2^-149), truncated toward zero to 14 significant bits
 * (at most 2^-139 below the f32 normals). */
function fp8Reference(
  c: number,
  a: Float64Array,
  b: Float64Array,
  ao: number,
  bo: number,
  K: number,
) {
  const unit = (x: number) => BigInt(x * 2 ** 149);
  let X = unit(c);
  let untruncated = c;
  for (let k0 = 0; k0 < 2 * K; k0 += K) {
    for (let k = k0; k < k0 + K; k++) X += unit(a[ao + k]! * b[bo + k]!);
    const neg = X < 0n;
    const m = neg ? -X : X;
    const shift = BigInt(Math.max(m.toString(2).length - 14, 10));
    X = m === 0n ? 0n : ((m >> shift) << shift) * (neg ? -1n : 1n);
    for (let k = k0; k < k0 + K; k++) untruncated += a[ao + k]! * b[bo + k]!;
  }
  return { want: Number(X) * 2 ** -149, untruncated: Math.fround(untruncated) };
}

/** Runs `kernelShape`'s wgmma kernel on operands of `shape`'s types (C + A B, one warpgroup)
 * and compares every element with {@link fp8Reference}: the mismatches, and the elements the
 * truncation changed. */
function runFp8(shape: string, seed: number, kernelShape = shape) {
  const s = WGMMA_BY_NAME.get(shape)!;
  const r = rng(seed);
  const M = 64;
  const N = s.n;
  const K = 2 * s.k;
  const a = operand(s.aType, M, K, r);
  const b = operand(s.bType, N, K, r);
  const c = new Float32Array(M * N).map(() => Math.fround(r() * 8 - 4));
  const out = new Float32Array(M * N).fill(NaN);
  const spec: Spec = { shape: kernelShape, groups: 1, copy: "sts", init: "c" };
  const res = simulate(wgmmaKernel(spec), {
    grid: [1, 1, 1],
    args: {
      A: { bytes: a.bytes },
      B: { bytes: b.bytes },
      C: { bytes: new Uint8Array(c.buffer) },
      D: { bytes: new Uint8Array(out.buffer) },
    },
  });
  const bad: string[] = [];
  let truncated = 0;
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      const q = i * N + j;
      const { want, untruncated } = fp8Reference(c[q]!, a.vals, b.vals, i * K, j * K, s.k);
      if (out[q] !== want) bad.push(`(${i}, ${j}): got ${out[q]}, want ${want}`);
      if (want !== untruncated) truncated++;
    }
  }
  return { res, bad, truncated, a, b };
}

const FP8_PAIRS = [["e4m3", "e4m3"], ["e4m3", "e5m2"], ["e5m2", "e4m3"], ["e5m2", "e5m2"]] as const;
const fp8Shape = (n: number, a: string, b: string) =>
  `wg.m64n${n}k32.${a === b ? a : `${a}.${b}`}.f32`;

for (const [ta, tb] of FP8_PAIRS) {
  const shape = fp8Shape(64, ta, tb);
  Deno.test(`wgmma ${shape}: D = C + A B bit for bit as the fp8 model (FP22 per instruction)`, () => {
    const run = runFp8(shape, 31 + ta.length + tb.charCodeAt(1));
    assert.equal(run.res.hazardCount, 0);
    assert.deepEqual(run.bad.slice(0, 5), [], `${run.bad.length} elements differ`);
    // The model is what is checked: many sums lose bits to the 14-bit truncation.
    assert.ok(run.truncated > 64 * 8, `only ${run.truncated} elements truncated`);
    // The operands hold subnormals and the largest magnitudes of their formats.
    for (const [op, t] of [[run.a, ta], [run.b, tb]] as const) {
      const mags = [...op.bytes].map((x) => x & 0x7f);
      assert.ok(mags.includes(t === "e4m3" ? 0x7e : 0x7b));
      assert.ok(mags.some((m) => m > 0 && m < (t === "e4m3" ? 8 : 4)));
    }
    assert.equal(run.res.stats.sharedBytesRead, 2 * (64 + 64) * 32);
  });
  const other = ta === "e4m3" ? "e5m2" : "e4m3";
  Deno.test(`wgmma ${shape} mutant: A read as ${other} is caught`, () => {
    const run = runFp8(shape, 7, fp8Shape(64, other, tb));
    assert.ok(run.bad.length > 64 * 32, `only ${run.bad.length} elements differ`);
  });
}

Deno.test("wgmma fp8: an e5m2 subnormal product survives beside zeros, vanishes beside 57344^2", () => {
  // One row of A and B: k = 0 the largest e5m2 squared (2^31.6), k = 1 the smallest
  // subnormal squared (2^-32), negative; C = 0. With the large product the exact sum is
  // 57344^2 - 2^-32, truncated one FP22 step (2^18) down; alone, 2^-32 is exact.
  const shape = fp8Shape(8, "e5m2", "e5m2");
  const run = (big: boolean) => {
    const a = new Uint8Array(64 * ROW_BYTES);
    const b = new Uint8Array(8 * ROW_BYTES);
    a[0] = big ? 0x7b : 0;
    b[0] = 0x7b;
    a[1] = 0x81;
    b[1] = 0x01;
    const out = new Float32Array(64 * 8).fill(NaN);
    simulate(wgmmaKernel({ shape, groups: 1, copy: "sts", init: "c" }), {
      grid: [1, 1, 1],
      args: {
        A: { bytes: a },
        B: { bytes: b },
        C: { bytes: new Uint8Array(64 * 8 * 4) },
        D: { bytes: new Uint8Array(out.buffer) },
      },
    });
    return out;
  };
  assert.equal(run(true)[0], 57344 * 57344 - 2 ** 18);
  assert.equal(run(false)[0], -(2 ** -32));
  assert.equal(run(false)[1], 0);
});
