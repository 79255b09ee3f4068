// The simulator's TMA copies, mbarriers and warp-specialized roles (backends/sim/_tma.ts,
// _mbarrier.ts, _roles.ts): hand-built kernels. A TMA box copy (128-byte swizzle, zero fill
// outside the tensor) checked byte for byte against boxOffset; a producer/consumer ring of
// stages feeding wgmma checked against an f64 reference under every schedule; and mutants of
// the ring (wrong parity, skipped waits, early release, wrong expect_tx, a named barrier of
// the wrong size) each caught, by a hazard or a SimError, under every schedule.

import assert from "node:assert/strict";
import { imm, when } from "../ir/builder.ts";
import * as ir from "../ir/builder.ts";
import type { Kernel, KernelParam, Op, Operand, Reg } from "../ir/kernel.ts";
import { boxOffset, tensorMapArgs, type TensorMapSpec } from "../ir/tensor_map.ts";
import {
  type HazardKind,
  type RoleSchedule,
  SimError,
  type SimOptions,
  type SimResult,
  simulate,
} from "../backends/sim/mod.ts";
import { f16BitsToF32, f32ToF16Bits } from "../numerics/mod.ts";
import {
  Emitter,
  randInt,
  rng,
  wgmmaAccOffsets,
  wgmmaFirstAccElement,
} from "../backends/sim/_test_kernels.ts";
import { editOps } from "./_edit_ops.ts";

const SCHEDULES: readonly RoleSchedule[] = ["producer-first", "consumer-first", "alternate"];

function kinds(res: SimResult): HazardKind[] {
  return [...new Set(res.hazards.map((h) => h.kind))].sort();
}

function tensor(name: string): KernelParam {
  return { name, kind: "tensor", ptx: "u64" };
}

function scalar(name: string): KernelParam {
  return { name, kind: "scalar", ptx: "s32", dtype: "s32" };
}

function dim(name: string): KernelParam {
  return { name, kind: "dim", ptx: "u32" };
}

function kernel(e: Emitter, name: string, threads: number, smem: number, params: KernelParam[]) {
  return {
    kind: "kernel",
    name,
    target: "sm90",
    params,
    threads,
    dynamicSmemBytes: smem,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: e.regs,
    body: e.body,
  } as const satisfies Kernel;
}

// ---------------------------------------------------------------------------
// One TMA box copy, stored back raw
// ---------------------------------------------------------------------------

interface BoxCase {
  readonly spec: TensorMapSpec;
  /** Values of the dims the spec names. */
  readonly dims: Readonly<Record<string, number>>;
  /** Elements of the tensor. */
  readonly elements: number;
}

/** A kernel of 32 threads: thread 0 inits a barrier, arrives with the box's bytes and issues
 * the copy at coordinates (scalars c0, c1, c2); all wait, then copy the box's shared bytes
 * to D word by word. */
function boxKernel(c: BoxCase, opts: { dstOffset?: number; noWait?: boolean } = {}): Kernel {
  const rank = c.spec.box.length;
  const bytes = c.spec.box.reduce((p, d) => p * d, c.spec.elementBytes);
  const e = new Emitter();
  const D = e.param("D");
  const coords = ["c0", "c1", "c2"].slice(0, rank).map((n) => e.loadParam("s32", n));
  const tid = e.tid();
  const smem = e.reg("u32");
  e.emit(ir.smemBase(smem));
  const dst = e.bin("add", "u32", smem, opts.dstOffset ?? 0);
  const bar = e.bin("add", "u32", smem, bytes + 512);
  const t0 = e.setp("eq", "u32", tid, 0);
  e.if(t0, false, () => {
    e.emit(ir.mbarInit(bar, 1));
    e.emit(ir.mbarFence());
  });
  e.emit(ir.bar());
  e.if(t0, false, () => {
    e.emit(ir.mbarArrive(bar, bytes));
    e.emit(ir.tmaLoad(dst, "A_map", coords, bar));
  });
  if (opts.noWait !== true) e.emit(ir.mbarWait(bar, imm(0)));
  for (let w = 0; w * 128 < bytes; w++) {
    const i = e.bin("add", "u32", tid, w * 32);
    const g = when(e.setp("lt", "u32", i, bytes / 4));
    const sa = e.reg("u32");
    e.emit(ir.mad("u32", sa, i, imm(4), dst));
    const v = e.reg("b32");
    e.emit(ir.lds("b32", [v], sa, 0, g));
    e.emit(ir.stg("b32", [v], e.addr(D, i, 4), 0, g));
  }
  const dimNames = [
    ...new Set([...c.spec.dims, ...c.spec.strides].flat().filter((f) => typeof f === "string")),
  ];
  return kernel(e, "tma_box", 32, bytes + 2048, [
    tensor("A"),
    tensor("D"),
    ...["c0", "c1", "c2"].slice(0, rank).map(scalar),
    ...(dimNames as string[]).map(dim),
    { name: "A_map", kind: "tensormap", ptx: "tmap", tmap: c.spec },
  ]);
}

/** The box's bytes as the copy must leave them: element (e0, e1, ..) of the box at boxOffset,
 * the tensor's element at origin + e, or zeros outside. */
function boxReference(c: BoxCase, a: Uint8Array, origin: readonly number[]): Uint8Array {
  const args = tensorMapArgs(c.spec, 0n, c.dims);
  const eb = c.spec.elementBytes;
  const box = c.spec.box;
  const out = new Uint8Array(box.reduce((p, d) => p * d, eb));
  const n = box.reduce((p, d) => p * d, 1);
  for (let i = 0; i < n; i++) {
    const e: number[] = [];
    let r = i;
    for (const d of box) {
      e.push(r % d);
      r = Math.floor(r / d);
    }
    const g = e.map((x, k) => x + origin[k]!);
    const inside = g.every((x, k) => x >= 0 && x < args.globalDim[k]!);
    let src = g[0]! * eb;
    for (let k = 1; k < g.length; k++) src += g[k]! * args.globalStrides[k - 1]!;
    const at = boxOffset(args, e);
    for (let b = 0; b < eb; b++) out[at + b] = inside ? a[src + b]! : 0;
  }
  return out;
}

const BOXES: readonly (BoxCase & { readonly what: string })[] = [
  {
    what: "f16, 64 x 32 box, 128-byte swizzle",
    spec: {
      tensor: "A",
      dataType: "float16",
      elementBytes: 2,
      dims: [["K"], ["M"]],
      strides: [["K"]],
      box: [64, 32],
      swizzle: 128,
    },
    dims: { K: 200, M: 70 },
    elements: 200 * 70,
  },
  {
    what: "8-bit, 128 x 16 box, 128-byte swizzle, padded stride",
    spec: {
      tensor: "A",
      dataType: "uint8",
      elementBytes: 1,
      dims: [["K"], ["M"]],
      strides: [["LDA"]],
      box: [128, 16],
      swizzle: 128,
    },
    dims: { K: 150, M: 40, LDA: 160 },
    elements: 160 * 40,
  },
  {
    what: "f32, rank 3 (batch), 16 x 8 x 2 box, no swizzle",
    spec: {
      tensor: "A",
      dataType: "float32",
      elementBytes: 4,
      dims: [["K"], ["M"], [3]],
      strides: [["K"], ["K", "M"]],
      box: [16, 8, 2],
      swizzle: 0,
    },
    dims: { K: 36, M: 20 },
    elements: 36 * 20 * 3,
  },
];

for (const c of BOXES) {
  Deno.test(`TMA box copy (${c.what}): swizzled, zeros outside the tensor, no hazards`, () => {
    const r = rng(c.elements);
    const eb = c.spec.elementBytes;
    const a = new Uint8Array(c.elements * eb).map(() => randInt(r, 1, 255));
    const bytes = c.spec.box.reduce((p, d) => p * d, eb);
    const k = boxKernel(c);
    const gd = tensorMapArgs(c.spec, 0n, c.dims).globalDim;
    // Inside, across each edge, and wholly outside along one dimension.
    const origins = [
      c.spec.box.map(() => 0),
      c.spec.box.map((b, i) => gd[i]! - b + 3),
      c.spec.box.map((_, i) => (i === 0 ? -5 : 1)),
      c.spec.box.map((_, i) => (i === 1 ? -2 : 0)),
      c.spec.box.map((_, i) => (i === 0 ? gd[0]! + 1 : 0)),
    ];
    for (const o of origins) {
      const d = new Uint8Array(bytes).fill(0xee);
      const args: Record<string, number | { bytes: Uint8Array }> = {
        A: { bytes: a },
        D: { bytes: d },
        ...c.dims,
      };
      o.forEach((v, i) => (args[`c${i}`] = v));
      const res = simulate(k, { grid: [1, 1, 1], args });
      assert.deepEqual(res.hazards, [], `origin ${o}`);
      assert.deepEqual(d, boxReference(c, a, o), `origin ${o}`);
      assert.equal(res.stats.tmaCopies, 1);
      assert.equal(res.stats.tmaBytes, bytes);
      const inside = c.spec.box.reduce(
        (p, b, i) => p * Math.max(0, Math.min(b, gd[i]! - o[i]!) - Math.max(0, -o[i]!)),
        eb,
      );
      assert.equal(res.stats.globalBytesRead, inside);
    }
  });
}

function dropTma(ops: readonly Op[]): Op[] {
  return ops.filter((o) => o.op !== "tma").map((o) =>
    o.op === "if" ? { ...o, then: dropTma(o.then), otherwise: dropTma(o.otherwise) } : o
  );
}

Deno.test("TMA box copy: no copy, a read before the wait, a misaligned box, a live barrier's bytes", () => {
  const c = BOXES[0]!;
  const a = new Uint8Array(c.elements * 2).fill(1);
  const run = (k: Kernel) =>
    simulate(k, {
      grid: [1, 1, 1],
      args: { A: { bytes: a }, D: { bytes: new Uint8Array(4096) }, c0: 0, c1: 0, ...c.dims },
    }, { maxHazards: 100 });
  // No copy: the phase waits for the announced bytes forever, with no other role to run.
  const noCopy = boxKernel(c);
  assert.throws(
    () => run({ ...noCopy, body: dropTma(noCopy.body) }),
    /Deadlock: .*"mbarrier\.wait \[%r\d+\], parity 0" .* in threads 0\.\.31 waits for the phase of parity 0 of the mbarrier at shared 0x1200 \(in phase 0, parity 0: 0 of 1 arrivals and 4096 transaction bytes pending\)/,
  );
  const early = run(boxKernel(c, { noWait: true }));
  assert.deepEqual(kinds(early), ["tma-before-wait", "unbalanced-tma"]);
  assert.match(early.hazards[0]!.message, /before waiting for the phase 0 it completes/);
  assert.match(early.hazards[0]!.op, /^ld\.shared|lds/);
  assert.throws(
    () => run(boxKernel(c, { dstOffset: 512 })),
    /TMA destination at shared 0x200 is not 1024-byte aligned \(the 128-byte swizzle\)/,
  );
  // The barrier sits 512 bytes after the box: a box 1024 further overlaps it.
  assert.throws(
    () => run(boxKernel(c, { dstOffset: 1024 })),
    (e: unknown) =>
      e instanceof SimError && /TMA copy touches the bytes of the mbarrier/.test(e.message),
  );
});

// ---------------------------------------------------------------------------
// A warp-specialized ring of stages: one producer warpgroup, one consumer warpgroup
// ---------------------------------------------------------------------------

/** Deliberate bugs of {@link ringKernel}. */
type RingMutant =
  | "none"
  | "wrong-parity"
  | "no-empty-wait"
  | "early-release"
  | "tx-few"
  | "tx-many"
  | "no-full-wait"
  | "named-bar-count"
  | "no-mbarfence"
  | "no-bar"
  | "consumer-short";

const SHAPE = "wg.m64n64k16.f16.f32";
const TILE_K = 64;
/** Bytes of one operand box (64 rows of 64 f16) and of a stage (A then B). */
const BOX = 64 * TILE_K * 2;
const STAGE = 2 * BOX;

function mapSpec(tensor: string): TensorMapSpec {
  return {
    tensor,
    dataType: "float16",
    elementBytes: 2,
    dims: [["K"], [64]],
    strides: [["K"]],
    box: [TILE_K, 64],
    swizzle: 128,
  };
}

/** The accumulator registers' byte offsets from a thread's first element in the row-major
 * 64 x 64 f32 tile (ir/kernel.ts WgmmaOp's register layout). */
function accOffsets(): number[] {
  return wgmmaAccOffsets(64, 32, false, 4);
}

/** `dst = a * k + c` (u32). */
function mad(e: Emitter, a: Operand, k: number, c: Operand): Reg {
  const d = e.reg("u32");
  e.emit(ir.mad("u32", d, a, imm(k), c));
  return d;
}

/**
 * D (64 x 64, f32) = A (64 x K) B (64 x K)^T: 256 threads; warpgroup 1 produces (thread 128
 * waits for an empty stage, announces its bytes, issues A's and B's boxes), warpgroup 0
 * consumes (waits for a full stage, 4 wgmmas, commit, wait 1, releases the previous stage
 * from lane 0 of each warp), then stores D and meets at a named barrier.
 */
export function ringKernel(stages: number, mutant: RingMutant = "none"): Kernel {
  const e = new Emitter();
  const D = e.param("D");
  const K = e.param("K", "u32");
  const tid = e.tid();
  const smem = e.reg("u32");
  e.emit(ir.smemBase(smem));
  const kCount = e.bin("shr", "u32", e.bin("add", "u32", K, TILE_K - 1), 6);
  const full = (s: Operand) => mad(e, s, 8, e.bin("add", "u32", smem, stages * STAGE));
  const empty = (s: Operand) => mad(e, s, 8, e.bin("add", "u32", smem, stages * STAGE + 64));
  const stageOf = (kt: Reg) => {
    const s = e.bin("rem", "u32", kt, stages);
    const ph = e.bin("and", "u32", e.bin("div", "u32", kt, stages), 1);
    return { s, ph, a: mad(e, s, STAGE, smem) };
  };
  e.if(e.setp("eq", "u32", tid, 0), false, () => {
    for (let s = 0; s < stages; s++) {
      e.emit(ir.mbarInit(full(imm(s)), 1));
      e.emit(ir.mbarInit(empty(imm(s)), 4));
    }
    if (mutant !== "no-mbarfence") e.emit(ir.mbarFence());
  });
  if (mutant !== "no-bar") e.emit(ir.bar());
  e.if(e.setp("ge", "u32", tid, 128), "warpgroup", () => {
    e.emit(ir.setMaxNReg("dec", 40));
    e.if(e.setp("eq", "u32", tid, 128), false, () => {
      const kt = e.reg("u32", "kt");
      e.for(kt, imm(0), kCount, 1, () => {
        const { s, ph, a } = stageOf(kt);
        if (mutant !== "no-empty-wait") e.emit(ir.mbarWait(empty(s), e.bin("xor", "u32", ph, 1)));
        const tx = mutant === "tx-few" ? BOX : mutant === "tx-many" ? STAGE + 16 : STAGE;
        const f = full(s);
        e.emit(ir.mbarArrive(f, tx));
        const k0 = e.bin("mul", "u32", kt, TILE_K);
        e.emit(ir.tmaLoad(a, "A_map", [k0, imm(0)], f));
        e.emit(ir.tmaLoad(e.bin("add", "u32", a, BOX), "B_map", [k0, imm(0)], f));
      });
    });
  }, () => {
    e.emit(ir.setMaxNReg("inc", 232));
    const d = accOffsets().map(() => e.reg("f32", "acc"));
    for (const r of d) e.emit(ir.mov(r, imm(0)));
    const lane0 = e.setp("eq", "u32", e.bin("and", "u32", tid, 31), 0);
    const kt = e.reg("u32", "kt");
    const to = mutant === "consumer-short" ? e.bin("sub", "u32", kCount, 1) : kCount;
    e.for(kt, imm(0), to, 1, () => {
      const { s, ph, a } = stageOf(kt);
      const par = mutant === "wrong-parity" ? e.bin("xor", "u32", ph, 1) : ph;
      if (mutant !== "no-full-wait") e.emit(ir.mbarWait(full(s), par));
      e.emit(ir.wgFence());
      for (let ks = 0; ks < TILE_K / 16; ks++) {
        const off = (x: Reg) => (ks === 0 ? x : e.bin("add", "u32", x, 32 * ks));
        e.emit(ir.wgmma(SHAPE, d, off(a), off(e.bin("add", "u32", a, BOX)), 1));
      }
      e.emit(ir.wgCommit());
      if (mutant === "early-release") e.emit(ir.mbarArrive(empty(s), undefined, when(lane0)));
      e.emit(ir.wgWait(1));
      // Uniform among the consumers only.
      e.if(e.setp("gt", "u32", kt, 0), true, () => {
        if (mutant === "early-release") return;
        const prev = e.bin("rem", "u32", e.bin("sub", "u32", kt, 1), stages);
        e.emit(ir.mbarArrive(empty(prev), undefined, when(lane0)));
      });
    });
    e.emit(ir.wgWait(0));
    const el = wgmmaFirstAccElement(e, tid, 64);
    const pd = e.addr(D, el, 4);
    accOffsets().forEach((o, i) => e.emit(ir.stg("b32", [d[i]!], pd, o)));
    e.emit(ir.namedBar(1, mutant === "named-bar-count" ? 256 : 128));
  });
  return kernel(e, `ring_${mutant.replaceAll("-", "_")}`, 256, stages * STAGE + 128, [
    tensor("A"),
    tensor("B"),
    tensor("D"),
    dim("K"),
    { name: "A_map", kind: "tensormap", ptx: "tmap", tmap: mapSpec("A") },
    { name: "B_map", kind: "tensormap", ptx: "tmap", tmap: mapSpec("B") },
  ]);
}

interface RingRun {
  readonly res: SimResult;
  readonly bad: number;
  readonly first: string;
}

/** Runs the ring on random f16 A and B (64 x K each) against the f64 reference. */
export function runRing(k: Kernel, K: number, seed: number, options: SimOptions = {}): RingRun {
  const r = rng(seed);
  const gen = () => {
    const bits = new Uint16Array(64 * K).map(() => f32ToF16Bits(r() * 4 - 2));
    return { bits, vals: Array.from(bits, f16BitsToF32) };
  };
  const a = gen();
  const b = gen();
  const out = new Uint8Array(64 * 64 * 4).fill(0xff);
  const res = simulate(k, {
    grid: [1, 1, 1],
    args: {
      A: { bytes: new Uint8Array(a.bits.buffer) },
      B: { bytes: new Uint8Array(b.bits.buffer) },
      D: { bytes: out },
      K,
    },
  }, { maxHazards: 100, ...options });
  const got = new Float32Array(out.buffer);
  let bad = 0;
  let first = "";
  for (let i = 0; i < 64; i++) {
    for (let j = 0; j < 64; j++) {
      let want = 0;
      let mag = 0;
      for (let q = 0; q < K; q++) {
        const p = a.vals[i * K + q]! * b.vals[j * K + q]!;
        want += p;
        mag += Math.abs(p);
      }
      const g = got[i * 64 + j]!;
      if (!(Math.abs(g - want) <= 2 ** -18 * mag)) {
        if (bad++ === 0) first = `D[${i}][${j}] = ${g}, want ${want}`;
      }
    }
  }
  return { res, bad, first };
}

for (const [stages, K] of [[2, 64 * 5 + 24], [3, 64 * 7 + 8], [4, 64 * 2]] as const) {
  Deno.test(`TMA ring of ${stages} stages, K = ${K}: agrees with the reference, no hazards, every schedule`, () => {
    for (const schedule of SCHEDULES) {
      const { res, bad, first } = runRing(ringKernel(stages), K, stages * 1000 + K, { schedule });
      assert.deepEqual(res.hazards.map((h) => `${h.kind}: ${h.message}`), [], schedule);
      assert.equal(bad, 0, `${schedule}: ${first}`);
      const kc = Math.ceil(K / 64);
      assert.equal(res.stats.tmaCopies, 2 * kc);
      assert.equal(res.stats.tmaBytes, 2 * kc * BOX);
      assert.equal(res.stats.byKind["wgmma"], 4 * 4 * kc);
      // The producer's waits: one warp; the consumers': 4 warps.
      assert.equal(res.stats.byKind["mbarwait"], kc + 4 * kc);
      assert.equal(res.stats.byKind["setmaxnreg"], 8);
      // The producer runs ahead until the ring is full, then waits for a release.
      if (schedule === "producer-first" && kc > stages) assert.ok(res.stats.mbarrierBlocked > 0);
    }
  });
}

Deno.test("TMA ring: with the hazard checks off, the same result", () => {
  const on = runRing(ringKernel(3), 64 * 4 + 16, 8);
  const off = runRing(ringKernel(3), 64 * 4 + 16, 8, { hazards: false });
  assert.equal(on.bad + off.bad, 0);
  assert.equal(off.res.hazardCount, 0);
});

/** What a mutant does under a schedule: the hazard kinds (exactly), or the error; `missed`:
 * that interleaving happens to be benign (no hazard, the right result). */
interface Expect {
  readonly hazards?: readonly HazardKind[];
  readonly error?: RegExp;
  readonly missed?: true;
}

const DEADLOCK = /^Deadlock: every thread still running waits on an mbarrier: /;

/** Each mutant under each schedule; the default (producer-first) catches every one. */
const RING_MUTANTS: readonly {
  readonly mutant: RingMutant;
  readonly expect: Partial<Record<RoleSchedule, Expect>> & { readonly all?: Expect };
}[] = [
  {
    mutant: "wrong-parity",
    expect: {
      // The producer filled both stages: the consumer waits for phase 1 of full[0], the
      // producer for a release of stage 0 that never comes.
      "producer-first": {
        error:
          /^Deadlock: .*in threads 128\.\.128 waits for the phase of parity 0 of the mbarrier at shared 0x8040 \(in phase 0.* in threads 0\.\.127 waits for the phase of parity 1 of the mbarrier at shared 0x8000 \(in phase 1/,
      },
      // The consumer runs first: its wait returns at once, over stages nothing wrote yet.
      "consumer-first": { error: /^Deadlock: .*hazards so far: uninitialized-read/ },
      alternate: { error: DEADLOCK },
    },
  },
  {
    mutant: "no-empty-wait",
    expect: {
      "producer-first": {
        error: /^Deadlock: .*hazards so far: tma-overwrite \(line \d+\), tma-overwrite/,
      },
      // The consumer keeps pace: each early reload lands after its stage was consumed.
      "consumer-first": { missed: true },
      alternate: { missed: true },
    },
  },
  {
    mutant: "early-release",
    expect: {
      "producer-first": { hazards: ["write-during-wgmma"] },
      alternate: { hazards: ["write-during-wgmma"] },
      // The consumer retires the group before the producer's turn.
      "consumer-first": { missed: true },
    },
  },
  {
    // Only A's bytes announced: the phase completes with A's copy, B's lands in the next
    // phase (read before it: tma-before-wait) and, with every stage's phase off by one,
    // a copy completes bytes no arrival announced.
    mutant: "tx-few",
    expect: {
      "producer-first": {
        error: /^More transaction bytes completed than expected: .*hazards so far: tma-before-wait/,
      },
      all: {
        error:
          /^More transaction bytes completed than expected: .*\(in phase 2, parity 0: 0 of 1 arrivals and -8192 transaction bytes pending\)/,
      },
    },
  },
  {
    mutant: "tx-many",
    expect: {
      all: {
        error:
          /^Deadlock: .*waits for the phase of parity 0 of the mbarrier at shared 0x8000 \(in phase 0, parity 0: 0 of 1 arrivals and 16 transaction bytes pending\)/,
      },
    },
  },
  {
    mutant: "no-full-wait",
    expect: {
      "producer-first": { hazards: ["tma-before-wait", "tma-overwrite", "unbalanced-tma"] },
      "consumer-first": { error: /^Deadlock: .*hazards so far: uninitialized-read/ },
      alternate: {
        hazards: [
          "tma-before-wait",
          "tma-overwrite",
          "unbalanced-tma",
          "uninitialized-read",
          "write-during-wgmma",
        ],
      },
    },
  },
  {
    mutant: "named-bar-count",
    expect: { all: { error: /^Named barrier 1 expects 256 threads but 128 reach it/ } },
  },
  { mutant: "no-mbarfence", expect: { all: { hazards: ["unpublished-mbarrier"] } } },
  { mutant: "no-bar", expect: { all: { hazards: ["unpublished-mbarrier"] } } },
  // The consumers stop a k-tile early: the last stage's copies land unread.
  { mutant: "consumer-short", expect: { all: { hazards: ["unbalanced-tma"] } } },
];

for (const m of RING_MUTANTS) {
  Deno.test(`TMA ring mutant ${m.mutant}: caught (by default), as expected under each schedule`, () => {
    const k = ringKernel(2, m.mutant);
    for (const schedule of SCHEDULES) {
      const want = m.expect[schedule] ?? m.expect.all!;
      const also = m.expect[schedule] !== undefined ? m.expect.all : undefined;
      let run: RingRun | null = null;
      let err: unknown = null;
      try {
        run = runRing(k, 64 * 5 + 8, 31, { schedule });
      } catch (e) {
        err = e;
      }
      if (want.error !== undefined) {
        assert.ok(err instanceof SimError, `${schedule}: expected an error, got ${err ?? "none"}`);
        assert.match(err.message, want.error, schedule);
        if (also?.error !== undefined) assert.match(err.message, also.error, schedule);
        continue;
      }
      if (err !== null) throw err;
      const { res, bad, first } = run!;
      const msg = `${schedule}: ${res.hazards.map((h) => h.message).join("\n")}`;
      if (want.missed === true) {
        assert.deepEqual(kinds(res), [], msg);
        assert.equal(bad, 0, `${schedule}: ${first}`);
      } else assert.deepEqual(kinds(res), [...want.hazards!].sort(), msg);
    }
  });
}

Deno.test("TMA ring: a deadlock names each wait, its barrier and phase; the hazards before it", () => {
  assert.throws(() => runRing(ringKernel(2, "wrong-parity"), 64 * 3, 2), (e: unknown) => {
    assert.ok(e instanceof SimError);
    // Reported at the first wait, in the producer's one thread.
    assert.equal(e.where?.warp, 4);
    assert.equal(e.where?.lane, 0);
    assert.match(e.where!.op, /^mbarrier\.wait/);
    assert.match(e.message, /\(op 10\/2\/0\/\d+, line \d+\) in threads 128\.\.128/);
    assert.match(e.message, /4 of 4 arrivals and 0 transaction bytes pending/);
    return true;
  });
});

// ---------------------------------------------------------------------------
// Errors of the synchronisation itself
// ---------------------------------------------------------------------------

const edit = editOps;

function ringThrows(k: Kernel, re: RegExp): void {
  assert.throws(() => runRing(k, 64 * 3, 5), (e: unknown) => {
    assert.ok(e instanceof SimError, String(e));
    assert.match(e.message, re);
    return true;
  });
}

Deno.test("mbarriers: use before init, a second init, an arrival past the count are errors", () => {
  const base = ringKernel(2);
  ringThrows(
    edit(base, (o) => (o.op === "mbarinit" ? [] : null)),
    /mbarrier\.try_wait of the mbarrier at shared 0x\w+, which is not initialised/,
  );
  ringThrows(
    edit(base, (o) => (o.op === "mbarinit" ? [o, o] : null)),
    /mbarrier\.init of the mbarrier at shared 0x\w+ .*already live/,
  );
  // Two expect_tx arrivals where the full barrier expects one.
  ringThrows(
    edit(base, (o) => (o.op === "mbararrive" && o.tx !== undefined ? [o, o] : null)),
    /An arrival past the 1 that a phase expects: the mbarrier at shared 0x\w+ \(in phase 0/,
  );
  // A TMA copy completing more bytes than announced, after the arrival.
  ringThrows(
    edit(
      base,
      (o) => (o.op === "mbararrive" && o.tx !== undefined ? [{ ...o, tx: BOX - 64 }] : null),
    ),
    /More transaction bytes completed than expected/,
  );
  // An ordinary store over a live barrier.
  const sts = edit(
    base,
    (o) => (o.op === "mbarfence"
      ? [
        o,
        ir.sts(
          "b32",
          [imm(0)],
          (base.body.find((x) => x.op === "smembase") as { dst: Reg }).dst,
          2 * STAGE + 8,
        ),
      ]
      : null),
  );
  ringThrows(sts, /st\.shared touches the bytes of the mbarrier at shared 0x8008/);
});

Deno.test("roles: a warpgroup-uniform if, setmaxnreg and bar.sync 0 are checked", () => {
  const base = ringKernel(2);
  // The role split at thread 192: not uniform within warpgroup 1.
  const at192 = edit(
    base,
    (o) =>
      o.op === "setp" && o.cmp === "ge" && o.b.kind === "imm" && o.b.value === 128
        ? [{ ...o, b: imm(192) }]
        : null,
  );
  ringThrows(
    at192,
    /warpgroup-uniform if differs within warpgroup 1: false in thread 128, true in thread 192/,
  );
  // setmaxnreg in the producer's single thread.
  const one = edit(
    base,
    (o) => o.op === "tma" && o.map === "A_map" ? [ir.setMaxNReg("dec", 40), o] : null,
  );
  ringThrows(one, /setmaxnreg is warpgroup-collective: thread 1 of warpgroup 1/);
  // A block-wide barrier inside a role.
  const bar0 = edit(base, (o) => (o.op === "bar" && o.named !== undefined ? [ir.bar()] : null));
  ringThrows(bar0, /bar\.sync in non-uniform control flow/);
  // A consumer-only loop whose trip count differs inside the role is still checked.
  const tidReg = (base.body.find((x) => x.op === "sreg") as { dst: Reg }).dst;
  const ragged = edit(
    base,
    (o) => o.op === "for" && o.body.some((x) => x.op === "wgfence") ? [{ ...o, to: tidReg }] : null,
  );
  ringThrows(ragged, /Loop trip count is not uniform/);
});
