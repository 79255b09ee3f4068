/**
 * The fragment-layout probe: for every row of the MMA table
 * (ir/mma_table.ts), a one-warp kernel-IR program loads each lane's A, B and
 * C fragment registers from memory, runs that row's `mma`, and stores the D
 * registers. The host fills the registers from matrices through the table's
 * fragment maps and reads D back through them, so each launch tests the
 * table against the hardware:
 *
 * 1. **C/D map, rows**: A holds the row number in column 0 (floats; for
 *    integer and b1 rows, `i + 1` ones along row `i`) and B ones, so
 *    `D[i][j] = i + 1`: every lane, register and element of D says which row
 *    it holds.
 * 2. **C/D map, columns**: likewise with `D[i][j] = j + 1`.
 *    Together: the (row, column) of every D element on the hardware, compared
 *    with the table's map of C/D, element by element.
 * 3. **Product**: A, B and C random (small integers for float types, so that
 *    every product and sum is exact; the whole range for integer types), and
 *    D read through the table must equal A·B + C computed on the host,
 *    exactly. This checks the A and B maps: a wrong map scrambles the
 *    product. (One ambiguity no `mma` can expose: the same permutation of k
 *    applied to both the A and the B map leaves every product unchanged.)
 *
 * Sparse rows (`mma.sp`, ir/mma_sparse.ts) take a fourth input, each lane's
 * metadata register, and A as the compressed fragment: the host draws a 2:4
 * pattern (1:2 for tf32, 4:8 in pairs for s4/u4), packs the kept values of A
 * through the row's compressed map and the pattern's nibbles through its
 * metadata map (the lanes that supply no metadata under the selector get a
 * valid but different pattern, so a launch that read them would compute a
 * wrong D), and checks D against the host product of the decompressed A. The
 * C/D map launches use the pattern "first kept columns" and selector 0; the
 * random product runs once per legal selector, with `mma.sp` and with
 * `mma.sp::ordered_metadata` (one kernel each, {@link sparseProbeKernel}).
 * Then, per selector, 8 (16 for 16 chunks a row) launches of a binary code
 * find the (lane, nibble) each (row, chunk) of A takes its metadata from, and
 * compare it with the table's metadata map (`metaMap` of the result; the
 * mismatches name the lane and nibble the launch used, so a wrong layout in
 * ir/mma_sparse.ts can be corrected from the probe's output).
 *
 * Modes: `gpu` launches the PTX through the CUDA driver and also runs the
 * simulator on the same registers (the raw D registers must be identical);
 * `sim` runs the simulator alone (which uses the table, so it checks the
 * probe's own code, on any machine).
 *
 * Run `deno run -A harness/mma_probe.ts [--sim] [--json]` (every dense and
 * sparse row).
 *
 * @module
 */

import { type FragmentMap, MMA_SHAPES, type MmaDtype, type MmaShape } from "../ir/mma_table.ts";
import { metaNibble, SPARSE_MMA_TABLE, type SparseMmaShape } from "../ir/mma_sparse.ts";
import { imm, KernelBuilder } from "../ir/builder.ts";
import type { Kernel, Reg, RegType } from "../ir/kernel.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printPtx } from "../backends/ptx/print.ts";
import { simulate } from "../backends/sim/mod.ts";
import { intRange, Rng } from "../numerics/random.ts";
import {
  bf16BitsToF32,
  bitsF32,
  f16BitsToF32,
  f32Bits,
  f32ToBf16Bits,
  f32ToF16Bits,
} from "../numerics/mod.ts";
import { Cuda, cudaAvailable, CudaError, type DeviceBuffer } from "../backends/cuda/driver.ts";
import * as ir from "../ir/builder.ts";

/** Where the probe runs. */
export type ProbeMode = "gpu" | "sim";

/** One element of D whose position on the hardware differs from the table's. */
export interface ProbeMismatch {
  /** The lane (0-31) that holds the element. */
  readonly lane: number;
  /** The lane's register index within the fragment. */
  readonly reg: number;
  /** The element index within that register (packed types hold several). */
  readonly elem: number;
  /** The table's (row, col). */
  readonly table: readonly [number, number];
  /** What the launch says it holds (row, col); NaN where it held no valid id. */
  readonly observed: readonly [number, number];
}

/** Elements that agree, of all checked. */
export interface ProbeCount {
  /** Elements that agree. */
  readonly agree: number;
  /** Elements checked. */
  readonly total: number;
}

/** The check of a row's C/D fragment map: the count, and the first mismatches. */
export interface ProbeMapCheck extends ProbeCount {
  /** The first few mismatches. */
  readonly mismatches: readonly ProbeMismatch[];
}

/** The probe's verdict on one MMA table row. */
export interface ProbeResult {
  /** The MMA table row's name. */
  readonly shape: string;
  /** The PTX instruction the row stands for. */
  readonly ptx: string;
  /** Where the probe ran. */
  readonly mode: ProbeMode;
  /** C/D map: elements whose (row, col) the launches confirm, of all. */
  readonly cMap: ProbeMapCheck;
  /** Random A, B, C: elements of D equal to the host's A·B + C, of all. */
  readonly product: ProbeCount;
  /** GPU mode: the raw D registers of all three launches equal the simulator's; sim mode: null. */
  readonly simIdentical: boolean | null;
  /** A JIT or driver failure, if the shape could not run. */
  readonly error: string | null;
  /** Whether the map and the product agree everywhere and nothing failed. */
  readonly ok: boolean;
  /** Sparse rows: the metadata map found by the launches, against the table's. */
  readonly metaMap?: ProbeMetaCheck;
}

/** One chunk of A whose metadata the launch read from another (lane, nibble). */
export interface ProbeMetaMismatch {
  /** The sparsity selector of the launch. */
  readonly selector: number;
  /** The row of A. */
  readonly row: number;
  /** The chunk of the row (dense columns chunk * group ..). */
  readonly chunk: number;
  /** The table's [lane, nibble]. */
  readonly table: readonly [number, number];
  /** The launch's [lane, nibble]; NaN where the launches gave no consistent answer. */
  readonly observed: readonly [number, number];
}

/** The check of a sparse row's metadata map: (row, chunk) pairs per selector. */
export interface ProbeMetaCheck extends ProbeCount {
  /** The first few mismatches. */
  readonly mismatches: readonly ProbeMetaMismatch[];
}

/** The PTX entry name of a row's probe. */
export function probeName(s: MmaShape): string {
  return `probe_${s.name.replace(/\./g, "_")}`;
}

/**
 * The probe kernel of one MMA table row: 32 threads; parameters `a`, `b`, `c`
 * (each lane's fragment registers, lane-major, 4 or 8 bytes each) and `d`
 * (written likewise).
 *
 * @param s The row.
 * @returns The kernel-IR program.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { MMA_SHAPES } from "../ir/mma_table.ts";
 * import { probeKernel } from "./mma_probe.ts";
 * const k = probeKernel(MMA_SHAPES[0]!);
 * equal(k.threads, 32);
 * equal(k.params.length, 4);
 * ```
 */
export function probeKernel(s: MmaShape): Kernel {
  const b = new KernelBuilder();
  const tid = b.readSreg("tid.x", "tid");
  const operand = (name: string, map: FragmentMap, type: RegType) => {
    const base = b.loadParam("u64", name);
    const rb = map.regBits / 8;
    const off = b.reg("u64");
    b.emit(ir.mulWide(off, tid, imm(map.regs * rb)));
    const addr = b.reg("u64");
    b.emit(ir.bin("add", "u64", addr, base, off));
    const regs: Reg[] = [];
    for (let r = 0; r < map.regs; r++) regs.push(b.reg(type, `${name}${r}`));
    return { addr, regs, width: rb === 8 ? "b64" as const : "b32" as const, rb };
  };
  const A = operand("a", s.a, s.a.regType);
  const B = operand("b", s.b, s.b.regType);
  const C = operand("c", s.c, s.c.regType);
  const D = operand("d", s.c, s.c.regType);
  for (const X of [A, B, C]) {
    X.regs.forEach((r, i) => b.emit(ir.ldg(X.width, [r], X.addr, i * X.rb)));
  }
  b.emit(ir.mma(s.name, D.regs, A.regs, B.regs, C.regs));
  D.regs.forEach((r, i) => b.emit(ir.stg(D.width, [r], D.addr, i * D.rb)));
  const k: Kernel = {
    kind: "kernel",
    name: probeName(s),
    target: "sm80",
    params: ["a", "b", "c", "d"].map((name) => ({ name, kind: "tensor", ptx: "u64" })),
    threads: 32,
    dynamicSmemBytes: 0,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: b.regs,
    body: b.body,
  };
  verifyKernel(k);
  return k;
}

/** Whether a row is a sparse one (ir/mma_sparse.ts). */
function isSparse(s: MmaShape): s is SparseMmaShape {
  return (s as Partial<SparseMmaShape>).sparse === true;
}

/** Which `mma.sp` a sparse probe kernel runs: the selector and ordered_metadata. */
export interface SparseVariant {
  /** The sparsity selector (one of the row's `meta.selectors`). */
  readonly selector: number;
  /** `mma.sp::ordered_metadata` instead of `mma.sp`. */
  readonly ordered: boolean;
}

/**
 * The probe kernel of a sparse row: as {@link probeKernel}, with a fifth parameter `e`
 * (each lane's metadata register, one b32 a lane) and `a` the compressed fragment.
 *
 * @param s The sparse row.
 * @param v The selector and ordered_metadata.
 * @returns The kernel-IR program.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { SPARSE_MMA_TABLE } from "../ir/mma_sparse.ts";
 * import { sparseProbeKernel } from "./mma_probe.ts";
 * const k = sparseProbeKernel(SPARSE_MMA_TABLE[0]!, { selector: 1, ordered: true });
 * equal(k.params.length, 5);
 * equal(k.name, "probe_sp_m16n8k16_f16_f32_s1_ord");
 * ```
 */
export function sparseProbeKernel(s: SparseMmaShape, v: SparseVariant): Kernel {
  const b = new KernelBuilder();
  const tid = b.readSreg("tid.x", "tid");
  const operand = (name: string, regs: number, type: RegType) => {
    const base = b.loadParam("u64", name);
    const off = b.reg("u64");
    b.emit(ir.mulWide(off, tid, imm(regs * 4)));
    const addr = b.reg("u64");
    b.emit(ir.bin("add", "u64", addr, base, off));
    const rs: Reg[] = [];
    for (let r = 0; r < regs; r++) rs.push(b.reg(type, `${name}${r}`));
    return { addr, regs: rs };
  };
  const A = operand("a", s.a.regs, s.a.regType);
  const B = operand("b", s.b.regs, s.b.regType);
  const C = operand("c", s.c.regs, s.c.regType);
  const D = operand("d", s.c.regs, s.c.regType);
  const E = operand("e", 1, "b32");
  for (const X of [A, B, C, E]) {
    X.regs.forEach((r, i) => b.emit(ir.ldg("b32", [r], X.addr, i * 4)));
  }
  b.emit(ir.mma(s.name, D.regs, A.regs, B.regs, C.regs, {
    meta: E.regs[0]!,
    selector: v.selector,
    ordered: v.ordered,
  }));
  D.regs.forEach((r, i) => b.emit(ir.stg("b32", [r], D.addr, i * 4)));
  const out: Kernel = {
    kind: "kernel",
    name: `${probeName(s)}_s${v.selector}${v.ordered ? "_ord" : ""}`,
    target: "sm80",
    params: ["a", "b", "c", "d", "e"].map((name) => ({ name, kind: "tensor", ptx: "u64" })),
    threads: 32,
    dynamicSmemBytes: 0,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: b.regs,
    body: b.body,
  };
  verifyKernel(out);
  return out;
}

/** The kept dense columns of each (row, chunk) of a sparse A. */
type Keep = (row: number, chunk: number) => readonly number[];

/** The pattern "first kept columns of every chunk". */
function firstKept(s: SparseMmaShape): Keep {
  const cols = Object.freeze(Array.from({ length: s.meta.kept }, (_, i) => i));
  return () => cols;
}

/** A random legal pattern (2:4; tf32 1:2; s4/u4 two of the four pairs). */
function randomKeep(s: SparseMmaShape, rng: Rng): Keep {
  const { group, kept, chunks } = s.meta;
  const pairs = group === 8;
  const slots = pairs ? 4 : group;
  const pick = pairs ? 2 : kept;
  const t: (readonly number[])[] = [];
  for (let i = 0; i < s.m * chunks; i++) {
    const all = Array.from({ length: slots }, (_, j) => j);
    for (let j = slots - 1; j > 0; j--) {
      const x = rng.int(0, j);
      [all[j], all[x]] = [all[x]!, all[j]!];
    }
    const sel = all.slice(0, pick).sort((x, y) => x - y);
    t.push(pairs ? sel.flatMap((p) => [2 * p, 2 * p + 1]) : sel);
  }
  return (r, c) => t[r * chunks + c]!;
}

/** A dense A restricted to the pattern: `a` where kept, 0 elsewhere. */
function restrict(s: SparseMmaShape, keep: Keep, a: (r: number, c: number) => number) {
  const { group } = s.meta;
  return (r: number, c: number) => keep(r, Math.floor(c / group)).includes(c % group) ? a(r, c) : 0;
}

/**
 * The compressed A fragment bytes of a sparse row: the kept values of dense A (by the
 * pattern `keep`) through the row's compressed map.
 */
function packSparseA(s: SparseMmaShape, keep: Keep, a: (r: number, c: number) => number) {
  const { group, kept } = s.meta;
  return packFragment(s.a, (r, j) => {
    const chunk = Math.floor(j / kept);
    return a(r, chunk * group + keep(r, chunk)[j % kept]!);
  });
}

/**
 * Each lane's metadata register of a sparse row for pattern `keep` and a selector, one b32
 * a lane (little-endian). Lanes that supply no metadata under the selector get 0xEEEEEEEE
 * (valid, and a different pattern).
 *
 * @param s The sparse row.
 * @param selector The sparsity selector.
 * @param keep The kept dense columns of each (row, chunk).
 * @returns The bytes a sparse probe kernel loads as `e`.
 */
export function packMeta(s: SparseMmaShape, selector: number, keep: Keep): Uint8Array {
  const bytes = new Uint8Array(32 * 4);
  const dv = new DataView(bytes.buffer);
  for (let lane = 0; lane < 32; lane++) {
    let w = 0;
    let supplies = false;
    for (let n = 0; n < 8; n++) {
      const rc = s.meta.coord(lane, selector, n);
      if (rc === undefined) continue;
      supplies = true;
      w = (w | (metaNibble(s, keep(rc[0], rc[1])) << (4 * n))) >>> 0;
    }
    dv.setUint32(4 * lane, supplies ? w : 0xeeeeeeee, true);
  }
  return bytes;
}

/** Bits of one element of type `t` holding the (exactly representable) value `v`. */
function encode(t: MmaDtype, v: number): number {
  switch (t) {
    case "f16":
      return f32ToF16Bits(v);
    case "bf16":
      return f32ToBf16Bits(v);
    case "tf32":
    case "f32":
      return f32Bits(v);
    case "s32":
      return v | 0;
    case "s8":
    case "u8":
      return v & 0xff;
    case "s4":
    case "u4":
      return v & 0xf;
    case "b1":
      return v & 1;
    case "f64":
      throw new Error("f64 is not packed");
  }
}

/** The value of element `e` of a 32-bit register word of type `t`. */
function decode(t: MmaDtype, w: number, e: number): number {
  switch (t) {
    case "f16":
      return f16BitsToF32((w >>> (16 * e)) & 0xffff);
    case "bf16":
      return bf16BitsToF32((w >>> (16 * e)) & 0xffff);
    case "tf32":
    case "f32":
      return bitsF32(w >>> 0);
    case "s32":
      return w | 0;
    case "s8":
      return ((w >>> (8 * e)) << 24) >> 24;
    case "u8":
      return (w >>> (8 * e)) & 0xff;
    case "s4":
      return ((w >>> (4 * e)) << 28) >> 28;
    case "u4":
      return (w >>> (4 * e)) & 0xf;
    case "b1":
      return (w >>> e) & 1;
    case "f64":
      throw new Error("f64 is not packed");
  }
}

/**
 * Each lane's fragment registers for a matrix, through the table's map:
 * lane-major, register by register (little-endian words; f64 as doubles).
 *
 * @param map The operand's fragment map.
 * @param value The matrix, by (row, col).
 * @returns The bytes a probe kernel loads.
 */
export function packFragment(
  map: FragmentMap,
  value: (r: number, c: number) => number,
): Uint8Array {
  const rb = map.regBits / 8;
  const bytes = new Uint8Array(32 * map.regs * rb);
  const dv = new DataView(bytes.buffer);
  const bits = map.regBits / map.elemsPerReg;
  for (let lane = 0; lane < 32; lane++) {
    for (let r = 0; r < map.regs; r++) {
      const off = (lane * map.regs + r) * rb;
      if (map.dtype === "f64") {
        const [row, col] = map.coord(lane, r, 0);
        dv.setFloat64(off, value(row, col), true);
        continue;
      }
      let w = 0;
      for (let e = 0; e < map.elemsPerReg; e++) {
        const [row, col] = map.coord(lane, r, e);
        const x = encode(map.dtype, value(row, col));
        w = bits === 32 ? x : (w | (x << (bits * e))) >>> 0;
      }
      dv.setUint32(off, w >>> 0, true);
    }
  }
  return bytes;
}

/**
 * The values a probe kernel stored, by (lane, reg, elem).
 *
 * @param map The C/D fragment map.
 * @param bytes The D buffer.
 * @returns `value(lane, reg, elem)`.
 */
export function unpackFragment(
  map: FragmentMap,
  bytes: Uint8Array,
): (lane: number, reg: number, elem: number) => number {
  const rb = map.regBits / 8;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (lane, reg, elem) => {
    const off = (lane * map.regs + reg) * rb;
    if (map.dtype === "f64") return dv.getFloat64(off, true);
    return decode(map.dtype, dv.getUint32(off, true), elem);
  };
}

/** A launch's inputs: A (M x K), B (K x N), C (M x N) by (row, col). */
interface ProbeInputs {
  readonly a: (r: number, c: number) => number;
  readonly b: (r: number, c: number) => number;
  readonly c: (r: number, c: number) => number;
}

const INT_TYPES = new Set<MmaDtype>(["s8", "u8", "s4", "u4", "b1"]);

/** Matrices whose product gives every D element its row + 1 (`rows`) or column + 1. */
function idInputs(s: MmaShape, which: "rows" | "cols"): ProbeInputs {
  const zero = () => 0;
  if (!INT_TYPES.has(s.aType)) {
    // Floats: the id in column / row 0 of the k dimension, exact in every type.
    return which === "rows"
      ? { a: (i, k) => (k === 0 ? i + 1 : 0), b: (k) => (k === 0 ? 1 : 0), c: zero }
      : { a: (_i, k) => (k === 0 ? 1 : 0), b: (k, j) => (k === 0 ? j + 1 : 0), c: zero };
  }
  // Integers and bits: i + 1 ones along k (K >= 16 >= M here), the other side all ones;
  // for xor.popc the other side is all zeros (x ^ 0 = x).
  const other = s.op === "xor.popc" ? 0 : 1;
  return which === "rows"
    ? { a: (i, k) => (k <= i ? 1 : 0), b: () => other, c: zero }
    : { a: () => other, b: (k, j) => (k <= j ? 1 : 0), c: zero };
}

/** Random A, B, C whose every product and sum is exact in the row's types. */
function randomInputs(s: MmaShape, rng: Rng): ProbeInputs {
  // Integers over their whole range; floats as small integers, so products and sums are exact.
  const range = (t: MmaDtype): [number, number] =>
    ["s8", "u8", "s4", "u4", "b1"].includes(t) ? intRange(t) : [-4, 4];
  const matrix = (rows: number, cols: number, [lo, hi]: [number, number]) => {
    const m = new Float64Array(rows * cols);
    for (let i = 0; i < m.length; i++) m[i] = rng.int(lo, hi);
    return (r: number, c: number) => m[r * cols + c]!;
  };
  const cRange: [number, number] = INT_TYPES.has(s.aType) ? [-1000, 1000] : [-16, 16];
  return {
    a: matrix(s.m, s.k, range(s.aType)),
    b: matrix(s.k, s.n, range(s.bType)),
    c: matrix(s.m, s.n, cRange),
  };
}

/** D = A·B + C on the host (b1: popc of and / xor), exact. */
function hostProduct(s: MmaShape, x: ProbeInputs): (i: number, j: number) => number {
  return (i, j) => {
    let acc = x.c(i, j);
    for (let k = 0; k < s.k; k++) {
      const a = x.a(i, k);
      const b = x.b(k, j);
      acc += s.op === "and.popc" ? a & b : s.op === "xor.popc" ? a ^ b : a * b;
    }
    return acc;
  };
}

/** Runs one probe launch on fragment register bytes A, B, C (and, for a sparse row, the
 * metadata registers E); returns D's bytes. */
export type ProbeLauncher = (
  a: Uint8Array,
  b: Uint8Array,
  c: Uint8Array,
  e?: Uint8Array,
) => Uint8Array;

/**
 * A launcher that runs a row's probe kernel on the simulator.
 *
 * @param s The row.
 * @param kernel Its probe kernel (default {@link probeKernel}).
 * @returns The launcher.
 */
export function simProbeLauncher(s: MmaShape, kernel: Kernel = probeKernel(s)): ProbeLauncher {
  return (a, b, c, e) => {
    const d = new Uint8Array(32 * s.c.regs * (s.c.regBits / 8)).fill(0xff);
    simulate(kernel, {
      grid: [1, 1, 1],
      args: {
        a: { bytes: a.slice() },
        b: { bytes: b.slice() },
        c: { bytes: c.slice() },
        d: { bytes: d },
        ...(e === undefined ? {} : { e: { bytes: e.slice() } }),
      },
    });
    return d;
  };
}

/** The launchers of a sparse row's variant: the device (or simulator) and the simulator. */
export type SparseLaunchers = (v: SparseVariant) => [ProbeLauncher, ProbeLauncher | null];

/** Every variant a sparse row's probe runs: each legal selector, plain and ordered. */
export function sparseVariants(s: SparseMmaShape): SparseVariant[] {
  return s.meta.selectors.flatMap((selector) => [
    { selector, ordered: false },
    { selector, ordered: true },
  ]);
}

/**
 * The probe launches of one sparse row, judged against the row: the C/D map launches
 * (pattern "first kept", selector 0) and, for every variant, a random product with a random
 * pattern, against the host product of the decompressed A (exact).
 *
 * @param s The sparse row under test.
 * @param mode Recorded in the result.
 * @param launchers The launchers of each variant.
 * @param seed Seed of the random inputs.
 * @returns The verdict (`product` sums over the variants).
 */
export function evaluateSparseProbe(
  s: SparseMmaShape,
  mode: ProbeMode,
  launchers: SparseLaunchers,
  seed: number,
): ProbeResult {
  let simSame: boolean | null = null;
  const run = (v: SparseVariant, keep: Keep, x: ProbeInputs) => {
    const [launch, sim] = launchers(v);
    const a = packSparseA(s, keep, x.a);
    const b = packFragment(s.b, x.b);
    const c = packFragment(s.c, x.c);
    const e = packMeta(s, v.selector, keep);
    const d = launch(a, b, c, e);
    if (sim !== null) simSame = (simSame ?? true) && equalBytes(d, sim(a, b, c, e));
    return unpackFragment(s.c, d);
  };
  const first = firstKept(s);
  const v0 = { selector: 0, ordered: false };
  const rows = run(v0, first, sparseIdInputs(s, first, "rows"));
  const cols = run(v0, first, sparseIdInputs(s, first, "cols"));
  const rng = new Rng(seed);
  const prods = sparseVariants(s).map((v) => {
    const keep = randomKeep(s, rng);
    const rnd = randomInputs(s, rng);
    const x = { ...rnd, a: restrict(s, keep, rnd.a) };
    return { d: run(v, keep, x), want: hostProduct(s, x) };
  });
  const mismatches: ProbeMismatch[] = [];
  let agree = 0;
  let prodAgree = 0;
  let total = 0;
  const asId = (v: number, n: number) => (Number.isInteger(v) && v >= 1 && v <= n ? v - 1 : NaN);
  for (let lane = 0; lane < 32; lane++) {
    for (let r = 0; r < s.c.regs; r++) {
      for (let e = 0; e < s.c.elemsPerReg; e++) {
        total++;
        const table = s.c.coord(lane, r, e);
        const observed: [number, number] = [
          asId(rows(lane, r, e), s.m),
          asId(cols(lane, r, e), s.n),
        ];
        if (observed[0] === table[0] && observed[1] === table[1]) agree++;
        else if (mismatches.length < 8) mismatches.push({ lane, reg: r, elem: e, table, observed });
        for (const p of prods) if (p.d(lane, r, e) === p.want(table[0], table[1])) prodAgree++;
      }
    }
  }
  const metaMap = discoverMeta(s, launchers);
  const simIdentical: boolean | null = simSame === null
    ? metaMap.simSame
    : simSame && metaMap.simSame !== false;
  return {
    shape: s.name,
    ptx: s.ptx,
    mode,
    cMap: { agree, total, mismatches },
    product: { agree: prodAgree, total: total * prods.length },
    simIdentical,
    error: null,
    ok: agree === total && prodAgree === total * prods.length && simIdentical !== false &&
      metaMap.check.agree === metaMap.check.total,
    metaMap: metaMap.check,
  };
}

/**
 * Finds which (lane, nibble) of the metadata registers each (row, chunk) of A is read from,
 * for every selector, with launches of a binary code: A's kept values all 1, C 0; launch
 * (bit b, half h) writes nibble 0b1110 ("keep the upper half of the chunk") where bit b of
 * the slot index 8 * lane + nibble is set and 0b0100 (the lower half) elsewhere, and B
 * (k, j) is 1 exactly where k is in the upper half of chunk 8h + j, so that D[i][j] is the
 * kept count where row i's chunk 8h + j read a 1 bit and 0 where it read a 0 bit.
 */
function discoverMeta(
  s: SparseMmaShape,
  launchers: SparseLaunchers,
): { check: ProbeMetaCheck; simSame: boolean | null } {
  const { group, kept, chunks } = s.meta;
  const a = packFragment(s.a, () => 1);
  const c = packFragment(s.c, () => 0);
  let simSame: boolean | null = null;
  const mismatches: ProbeMetaMismatch[] = [];
  let agree = 0;
  let total = 0;
  for (const selector of s.meta.selectors) {
    const [launch, sim] = launchers({ selector, ordered: false });
    const slot = new Float64Array(s.m * chunks); // the (lane, nibble) slot index found
    for (let h = 0; h * 8 < chunks; h++) {
      const b = packFragment(s.b, (k, j) => {
        const ch = Math.floor(k / group);
        return ch - 8 * h === j && k % group >= group / 2 ? 1 : 0;
      });
      for (let bit = 0; bit < 8; bit++) {
        const e = new Uint8Array(128);
        const dv = new DataView(e.buffer);
        for (let lane = 0; lane < 32; lane++) {
          let w = 0;
          for (let n = 0; n < 8; n++) {
            w = (w | ((((8 * lane + n) >> bit) & 1 ? 0xe : 0x4) << (4 * n))) >>> 0;
          }
          dv.setUint32(4 * lane, w, true);
        }
        const bytes = launch(a, b, c, e);
        if (sim !== null) simSame = (simSame ?? true) && equalBytes(bytes, sim(a, b, c, e));
        const d = unpackFragment(s.c, bytes);
        for (let lane = 0; lane < 32; lane++) {
          for (let r = 0; r < s.c.regs; r++) {
            for (let el = 0; el < s.c.elemsPerReg; el++) {
              const [i, j] = s.c.coord(lane, r, el);
              const ch = 8 * h + j;
              if (ch >= chunks) continue;
              const v = d(lane, r, el);
              const x = v === kept ? 1 : v === 0 ? 0 : NaN;
              slot[i * chunks + ch] = slot[i * chunks + ch]! + x * (1 << bit);
            }
          }
        }
      }
    }
    const where = new Map<number, [number, number]>();
    for (let lane = 0; lane < 32; lane++) {
      for (let n = 0; n < 8; n++) {
        const rc = s.meta.coord(lane, selector, n);
        if (rc !== undefined) where.set(rc[0] * chunks + rc[1], [lane, n]);
      }
    }
    for (let i = 0; i < s.m; i++) {
      for (let ch = 0; ch < chunks; ch++) {
        total++;
        const table = where.get(i * chunks + ch)!;
        const x = slot[i * chunks + ch]!;
        const observed: [number, number] = Number.isNaN(x) ? [NaN, NaN] : [x >> 3, x & 7];
        if (observed[0] === table[0] && observed[1] === table[1]) agree++;
        else if (mismatches.length < 8) {
          mismatches.push({ selector, row: i, chunk: ch, table, observed });
        }
      }
    }
  }
  return { check: { agree, total, mismatches }, simSame };
}

/** C/D id inputs of a sparse row on pattern `keep` (the same for every row). */
function sparseIdInputs(s: SparseMmaShape, keep: Keep, which: "rows" | "cols"): ProbeInputs {
  const zero = () => 0;
  const { group } = s.meta;
  // The kept dense columns in k order (the same in every row).
  const kept: number[] = [];
  for (let k = 0; k < s.k; k++) {
    if (keep(0, Math.floor(k / group)).includes(k % group)) kept.push(k);
  }
  const rank = new Map(kept.map((k, i) => [k, i]));
  const isKept = (k: number) => rank.has(k);
  const k0 = kept[0]!;
  if (!INT_TYPES.has(s.aType)) {
    return which === "rows"
      ? { a: (i, k) => (k === k0 ? i + 1 : 0), b: (k) => (k === k0 ? 1 : 0), c: zero }
      : { a: (_i, k) => (k === k0 ? 1 : 0), b: (k, j) => (k === k0 ? j + 1 : 0), c: zero };
  }
  return which === "rows"
    ? { a: (i, k) => (isKept(k) && rank.get(k)! <= i ? 1 : 0), b: () => 1, c: zero }
    : {
      a: (_i, k) => (isKept(k) ? 1 : 0),
      b: (k, j) => (isKept(k) && rank.get(k)! <= j ? 1 : 0),
      c: zero,
    };
}

/**
 * The three probe launches of one row, judged against a table row: `s`'s
 * fragment maps fill the registers and read D back, whatever kernel `launch`
 * runs (so a test can hand it a deliberately wrong table row).
 *
 * @param s The table row under test.
 * @param mode Recorded in the result.
 * @param launch Runs the probe kernel.
 * @param sim Also runs it on the simulator, to compare raw D registers (or null).
 * @param seed Seed of the random product check.
 * @returns The verdict.
 */
export function evaluateProbe(
  s: MmaShape,
  mode: ProbeMode,
  launch: ProbeLauncher,
  sim: ProbeLauncher | null,
  seed: number,
): ProbeResult {
  const run = (x: ProbeInputs) => {
    const a = packFragment(s.a, x.a);
    const b = packFragment(s.b, x.b);
    const c = packFragment(s.c, x.c);
    const d = launch(a, b, c);
    const same = sim === null ? null : equalBytes(d, sim(a, b, c));
    return { d: unpackFragment(s.c, d), same };
  };
  const rows = run(idInputs(s, "rows"));
  const cols = run(idInputs(s, "cols"));
  const rnd = randomInputs(s, new Rng(seed));
  const prod = run(rnd);
  const want = hostProduct(s, rnd);
  const mismatches: ProbeMismatch[] = [];
  let agree = 0;
  let prodAgree = 0;
  let total = 0;
  const asId = (v: number, n: number) => (Number.isInteger(v) && v >= 1 && v <= n ? v - 1 : NaN);
  for (let lane = 0; lane < 32; lane++) {
    for (let r = 0; r < s.c.regs; r++) {
      for (let e = 0; e < s.c.elemsPerReg; e++) {
        total++;
        const table = s.c.coord(lane, r, e);
        const observed: [number, number] = [
          asId(rows.d(lane, r, e), s.m),
          asId(cols.d(lane, r, e), s.n),
        ];
        if (observed[0] === table[0] && observed[1] === table[1]) agree++;
        else if (mismatches.length < 8) mismatches.push({ lane, reg: r, elem: e, table, observed });
        if (prod.d(lane, r, e) === want(table[0], table[1])) prodAgree++;
      }
    }
  }
  const simIdentical = sim === null ? null : rows.same === true && cols.same === true &&
    prod.same === true;
  return {
    shape: s.name,
    ptx: s.ptx,
    mode,
    cMap: { agree, total, mismatches },
    product: { agree: prodAgree, total },
    simIdentical,
    error: null,
    ok: agree === total && prodAgree === total && simIdentical !== false,
  };
}

function equalBytes(x: Uint8Array, y: Uint8Array): boolean {
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Options of {@link runProbe}. */
export interface ProbeOptions {
  /** `gpu` (default) or `sim`. */
  readonly mode?: ProbeMode;
  /** The rows to probe (default: every row of the MMA table). */
  readonly shapes?: readonly MmaShape[];
  /** Seed of the random product check (default 1). */
  readonly seed?: number;
  /** GPU mode: an open driver handle (left open); default: one opened and closed here. */
  readonly cuda?: Cuda;
}

/**
 * Runs the fragment-layout probe on every MMA table row.
 *
 * @param options Mode, rows, seed, driver.
 * @returns One verdict per row.
 * @throws {CudaUnavailableError} In GPU mode, when no driver can be used.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { MMA_SHAPES } from "../ir/mma_table.ts";
 * import { runProbe } from "./mma_probe.ts";
 * const [r] = await runProbe({ mode: "sim", shapes: [MMA_SHAPES[0]!] });
 * ok(r?.ok);
 * ```
 */
export async function runProbe(options: ProbeOptions = {}): Promise<ProbeResult[]> {
  const mode = options.mode ?? "gpu";
  const shapes = options.shapes ?? MMA_SHAPES;
  const seed = options.seed ?? 1;
  const results: ProbeResult[] = [];
  if (mode === "sim") {
    for (const s of shapes) {
      if (isSparse(s)) {
        const l: SparseLaunchers = (v) => [simProbeLauncher(s, sparseProbeKernel(s, v)), null];
        results.push(evaluateSparseProbe(s, "sim", l, seed));
      } else results.push(evaluateProbe(s, "sim", simProbeLauncher(s), null, seed));
    }
    return await Promise.resolve(results);
  }
  const cuda = options.cuda ?? Cuda.open();
  try {
    for (const s of shapes) {
      if (isSparse(s)) {
        results.push(gpuSparseProbe(cuda, s, seed));
        continue;
      }
      const kernel = probeKernel(s);
      let result: ProbeResult;
      const buffers: DeviceBuffer[] = [];
      let unload: (() => void) | null = null;
      try {
        const module = cuda.loadModule(printPtx([kernel]));
        unload = () => module.unload();
        const fn = module.getFunction(kernel.name);
        const dBytes = 32 * s.c.regs * (s.c.regBits / 8);
        const bufs = [
          32 * s.a.regs * (s.a.regBits / 8),
          32 * s.b.regs * (s.b.regBits / 8),
          dBytes,
          dBytes,
        ].map((n) => {
          const b = cuda.alloc(n);
          buffers.push(b);
          return b;
        });
        const [ba, bb, bc, bd] = bufs as [DeviceBuffer, DeviceBuffer, DeviceBuffer, DeviceBuffer];
        const gpu: ProbeLauncher = (a, b, c) => {
          ba.upload(a);
          bb.upload(b);
          bc.upload(c);
          bd.fill(0xff);
          cuda.launch(fn, { grid: [1, 1, 1], block: [32, 1, 1], dynamicSmemBytes: 0 }, [
            { type: "u64", value: ba.ptr },
            { type: "u64", value: bb.ptr },
            { type: "u64", value: bc.ptr },
            { type: "u64", value: bd.ptr },
          ]);
          cuda.synchronize();
          return bd.download();
        };
        result = evaluateProbe(s, "gpu", gpu, simProbeLauncher(s, kernel), seed);
      } catch (e) {
        if (!(e instanceof CudaError)) throw e;
        result = {
          shape: s.name,
          ptx: s.ptx,
          mode,
          cMap: { agree: 0, total: 32 * s.c.regs * s.c.elemsPerReg, mismatches: [] },
          product: { agree: 0, total: 32 * s.c.regs * s.c.elemsPerReg },
          simIdentical: null,
          error: e.message,
          ok: false,
        };
      } finally {
        for (const b of buffers) {
          try {
            b.free();
          } catch { /* reported by the launch that failed */ }
        }
        try {
          unload?.();
        } catch { /* likewise */ }
      }
      results.push(result);
    }
  } finally {
    if (options.cuda === undefined) cuda.close();
  }
  return results;
}

/** The GPU probe of one sparse row: a module of one kernel per variant. */
function gpuSparseProbe(cuda: Cuda, s: SparseMmaShape, seed: number): ProbeResult {
  const buffers: DeviceBuffer[] = [];
  const unloads: (() => void)[] = [];
  try {
    const alloc = (n: number) => {
      const b = cuda.alloc(n);
      buffers.push(b);
      return b;
    };
    const dBytes = 32 * s.c.regs * 4;
    const [ba, bb, bc, bd, be] = [32 * s.a.regs * 4, 32 * s.b.regs * 4, dBytes, dBytes, 128]
      .map(alloc) as [DeviceBuffer, DeviceBuffer, DeviceBuffer, DeviceBuffer, DeviceBuffer];
    const cache = new Map<string, [ProbeLauncher, ProbeLauncher]>();
    const launchers: SparseLaunchers = (v) => {
      const key = `${v.selector}/${v.ordered}`;
      let l = cache.get(key);
      if (l === undefined) {
        const kernel = sparseProbeKernel(s, v);
        const module = cuda.loadModule(printPtx([kernel]));
        unloads.push(() => module.unload());
        const fn = module.getFunction(kernel.name);
        const gpu: ProbeLauncher = (a, b, c, e) => {
          ba.upload(a);
          bb.upload(b);
          bc.upload(c);
          be.upload(e!);
          bd.fill(0xff);
          cuda.launch(fn, { grid: [1, 1, 1], block: [32, 1, 1], dynamicSmemBytes: 0 }, [
            { type: "u64", value: ba.ptr },
            { type: "u64", value: bb.ptr },
            { type: "u64", value: bc.ptr },
            { type: "u64", value: bd.ptr },
            { type: "u64", value: be.ptr },
          ]);
          cuda.synchronize();
          return bd.download();
        };
        l = [gpu, simProbeLauncher(s, kernel)];
        cache.set(key, l);
      }
      return l;
    };
    return evaluateSparseProbe(s, "gpu", launchers, seed);
  } catch (e) {
    if (!(e instanceof CudaError)) throw e;
    const total = 32 * s.c.regs * s.c.elemsPerReg;
    return {
      shape: s.name,
      ptx: s.ptx,
      mode: "gpu",
      cMap: { agree: 0, total, mismatches: [] },
      product: { agree: 0, total: total * sparseVariants(s).length },
      simIdentical: null,
      error: e.message,
      ok: false,
    };
  } finally {
    for (const b of buffers) {
      try {
        b.free();
      } catch { /* reported by the launch that failed */ }
    }
    for (const u of unloads) {
      try {
        u();
      } catch { /* likewise */ }
    }
  }
}

/**
 * The probe's results as a table, one line per row.
 *
 * @param results From {@link runProbe}.
 * @returns The text.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { formatProbe } from "./mma_probe.ts";
 * const text = formatProbe([{
 *   shape: "m16n8k16.f16.f32",
 *   ptx: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
 *   mode: "sim",
 *   cMap: { agree: 128, total: 128, mismatches: [] },
 *   product: { agree: 128, total: 128 },
 *   simIdentical: null,
 *   error: null,
 *   ok: true,
 * }]);
 * ok(text.includes("m16n8k16.f16.f32") && text.includes("128/128"));
 * ```
 */
export function formatProbe(results: readonly ProbeResult[]): string {
  const w = Math.max(5, ...results.map((r) => r.shape.length));
  const lines = [
    `${"shape".padEnd(w)}  ${"C/D map".padEnd(9)}  ${"A·B + C".padEnd(9)}  ${
      "simulator".padEnd(10)
    }  verdict`,
  ];
  for (const r of results) {
    if (r.error !== null) {
      lines.push(`${r.shape.padEnd(w)}  FAILED: ${r.error.split("\n")[0]}`);
      continue;
    }
    const sim = r.simIdentical === null ? "-" : r.simIdentical ? "identical" : "DIFFERS";
    lines.push(
      `${r.shape.padEnd(w)}  ${`${r.cMap.agree}/${r.cMap.total}`.padEnd(9)}  ${
        `${r.product.agree}/${r.product.total}`.padEnd(9)
      }  ${sim.padEnd(10)}  ${r.ok ? "OK" : "MISMATCH"}`,
    );
    for (const m of r.cMap.mismatches) {
      lines.push(
        `${"".padEnd(w)}    lane ${m.lane} reg ${m.reg} elem ${m.elem}: table (${
          m.table.join(", ")
        }), ${r.mode === "gpu" ? "GPU" : "simulator"} (${m.observed.join(", ")})`,
      );
    }
    const mm = r.metaMap;
    if (mm !== undefined && mm.agree !== mm.total) {
      lines.push(`${"".padEnd(w)}    metadata map ${mm.agree}/${mm.total}`);
      for (const m of mm.mismatches) {
        lines.push(
          `${"".padEnd(w)}    selector ${m.selector} row ${m.row} chunk ${m.chunk}: table lane ${
            m.table[0]
          } nibble ${m.table[1]}, ${r.mode === "gpu" ? "GPU" : "simulator"} lane ${
            m.observed[0]
          } nibble ${m.observed[1]}`,
        );
      }
    }
  }
  const bad = results.filter((r) => !r.ok).length;
  lines.push(
    bad === 0
      ? `All ${results.length} MMA shapes agree with the table (${results[0]?.mode ?? "gpu"})`
      : `${bad} of ${results.length} MMA shapes disagree with the table`,
  );
  return lines.join("\n") + "\n";
}

if (import.meta.main) {
  const sim = Deno.args.includes("--sim");
  const json = Deno.args.includes("--json");
  const unknown = Deno.args.filter((a) => a !== "--sim" && a !== "--json");
  if (unknown.length > 0) {
    console.error(`probe: unknown argument "${unknown[0]}": expected --sim, --json`);
    Deno.exit(2);
  }
  if (!sim) {
    const a = cudaAvailable();
    if (!a.ok) {
      console.error(`probe: ${a.why} (probe.ts --sim runs the probe there)`);
      Deno.exit(1);
    }
  }
  const results = await runProbe({
    mode: sim ? "sim" : "gpu",
    shapes: [...MMA_SHAPES, ...SPARSE_MMA_TABLE],
  });
  if (json) console.log(JSON.stringify({ results }, null, 2));
  else Deno.stdout.writeSync(new TextEncoder().encode(formatProbe(results)));
  Deno.exit(results.every((r) => r.ok) ? 0 : 1);
}
