/**
 * What the two halves of the fragment-layout probe (mma_probe.ts, dense rows,
 * and mma_probe_sparse.ts, `mma.sp` rows) share: the result types, the dense
 * probe kernel of a row, packing a matrix into each lane's fragment registers
 * through the table's maps and reading D back, the launches' inputs (random,
 * exact in the row's types) and the host's exact A·B + C, and the launcher
 * that runs a probe kernel on the simulator.
 *
 * @module
 */

import type { FragmentMap, MmaDtype, MmaShape } from "../ir/mma_table.ts";
import { imm, KernelBuilder } from "../ir/builder.ts";
import type { Kernel, Reg, RegType } from "../ir/kernel.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { simulate } from "../backends/sim/mod.ts";
import type { Cuda, CudaFunction, DeviceBuffer } from "../backends/cuda/driver.ts";
import { intRange, type Rng } from "../numerics/random.ts";
import {
  bf16BitsToF32,
  bitsF32,
  f16BitsToF32,
  f32Bits,
  f32ToBf16Bits,
  f32ToF16Bits,
} from "../numerics/mod.ts";
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

/**
 * The verdict on a row whose launches ran: the map and the product agree everywhere, the raw
 * registers equal the simulator's where compared (null: not compared), and a sparse row's
 * metadata map, if given, agrees too.
 */
export function probeVerdict(
  s: Pick<MmaShape, "name" | "ptx">,
  mode: ProbeMode,
  { cMap, product }: { readonly cMap: ProbeMapCheck; readonly product: ProbeCount },
  simIdentical: boolean | null,
  metaMap?: ProbeMetaCheck,
): ProbeResult {
  const all = (c: ProbeCount) => c.agree === c.total;
  return {
    shape: s.name,
    ptx: s.ptx,
    mode,
    cMap,
    product,
    simIdentical,
    error: null,
    ok: all(cMap) && all(product) && simIdentical !== false &&
      (metaMap === undefined || all(metaMap)),
    ...(metaMap === undefined ? {} : { metaMap }),
  };
}

/**
 * The verdict on a row whose GPU probe failed in the driver (JIT, load or launch): nothing
 * agrees, `products` products were due for each C/D element.
 */
export function failedProbe(
  s: Pick<MmaShape, "name" | "ptx" | "c">,
  error: string,
  products = 1,
): ProbeResult {
  const total = 32 * s.c.regs * s.c.elemsPerReg;
  return {
    shape: s.name,
    ptx: s.ptx,
    mode: "gpu",
    cMap: { agree: 0, total, mismatches: [] },
    product: { agree: 0, total: total * products },
    simIdentical: null,
    error,
    ok: false,
  };
}

/** Frees a GPU probe's buffers and unloads its modules, each whatever the others do (a failure
 * here is the launch's, already reported). */
export function releaseProbe(
  buffers: readonly DeviceBuffer[],
  unloads: readonly (() => void)[],
): void {
  for (const f of [...buffers.map((b) => () => b.free()), ...unloads]) {
    try {
      f();
    } catch { /* reported by the launch that failed */ }
  }
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
): FragmentValues {
  const rb = map.regBits / 8;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (lane, reg, elem) => {
    const off = (lane * map.regs + reg) * rb;
    if (map.dtype === "f64") return dv.getFloat64(off, true);
    return decode(map.dtype, dv.getUint32(off, true), elem);
  };
}

/** An unpacked fragment: element `elem` of register `reg` of lane `lane`. */
export type FragmentValues = (lane: number, reg: number, elem: number) => number;

/**
 * Checks a row's C/D fragment map and its products: element (lane, reg, elem) of the identity
 * launches holds its row (`rows`) and column (`cols`) plus one, which must be where the map
 * puts it; each product's element must equal the host's product at the map's position.
 *
 * @param s The MMA table row.
 * @param rows The launch whose D holds each element's row + 1.
 * @param cols The launch whose D holds each element's column + 1.
 * @param prods Products of random inputs and the host's product of the same inputs.
 * @returns The map's check (the first 8 mismatches) and the products' count.
 */
export function checkCMap(
  s: MmaShape,
  rows: FragmentValues,
  cols: FragmentValues,
  prods: readonly { readonly d: FragmentValues; readonly want: (i: number, j: number) => number }[],
): { cMap: ProbeMapCheck; product: ProbeCount } {
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
  return {
    cMap: { agree, total, mismatches },
    product: { agree: prodAgree, total: total * prods.length },
  };
}

/** A launch's inputs: A (M x K), B (K x N), C (M x N) by (row, col). */
export interface ProbeInputs {
  readonly a: (r: number, c: number) => number;
  readonly b: (r: number, c: number) => number;
  readonly c: (r: number, c: number) => number;
}

/** The integer and bit element types (the rest are floats). */
export const INT_TYPES = new Set<MmaDtype>(["s8", "u8", "s4", "u4", "b1"]);

/** Random A, B, C whose every product and sum is exact in the row's types. */
export function randomInputs(s: MmaShape, rng: Rng): ProbeInputs {
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
export function hostProduct(s: MmaShape, x: ProbeInputs): (i: number, j: number) => number {
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
 * A launcher that runs a probe kernel on the GPU: the launch's inputs uploaded into `inputs`
 * (A, B, C and, for a sparse row, its metadata), D poisoned (0xff), one warp launched with the
 * kernel's pointers A, B, C, D then the rest of `inputs`, and D read back.
 *
 * @param cuda The driver.
 * @param fn The loaded probe kernel.
 * @param inputs The input buffers, in the launcher's argument order.
 * @param d D's buffer.
 * @returns The launcher.
 */
export function gpuProbeLauncher(
  cuda: Cuda,
  fn: CudaFunction,
  inputs: readonly DeviceBuffer[],
  d: DeviceBuffer,
): ProbeLauncher {
  const params = [...inputs.slice(0, 3), d, ...inputs.slice(3)];
  return (a, b, c, e) => {
    [a, b, c, e].slice(0, inputs.length).forEach((x, i) => inputs[i]!.upload(x!));
    d.fill(0xff);
    cuda.launch(
      fn,
      { grid: [1, 1, 1], block: [32, 1, 1], dynamicSmemBytes: 0 },
      params.map((buf) => ({ type: "u64", value: buf.ptr })),
    );
    cuda.synchronize();
    return d.download();
  };
}

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

/** Whether two byte arrays hold the same bytes. */
export function equalBytes(x: Uint8Array, y: Uint8Array): boolean {
  return x.length === y.length && x.every((v, i) => v === y[i]);
}
