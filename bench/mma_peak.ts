/**
 * The `mma.sync` ceiling microbenchmark: kernels that issue only independent
 * `mma.sync` instructions from registers (sixteen accumulator sets per thread,
 * 256 threads per block, several blocks per SM), written in gemmc's own
 * kernel IR and printed by its PTX backend, one per MMA shape that the
 * benchmarks compare against.
 *
 * The sparse ceiling (`mma.sp`, ir/mma_sparse.ts): {@link SPARSE_PEAK_SHAPES}
 * through the same {@link peakKernel} (compressed A fragments, a valid
 * metadata register, selector 0), plain or `mma.sp::ordered_metadata`
 * ({@link sparsePeakKernels}); {@link peakOps} counts a sparse MMA by its dense
 * shape (dense-equivalent operations, as cuSPARSELt and the issue quote them).
 *
 * Run on a GPU through `bench/gpu_bench.ts`; `deno run bench/mma_peak.ts
 * --ptx` prints the module (`--sparse`: the sparse kernels' module instead,
 * PTX 8.5 for ordered_metadata).
 *
 * @module
 */

import { imm, KernelBuilder } from "../ir/builder.ts";
import type { Kernel, Reg, RegType } from "../ir/kernel.ts";
import { MMA_SHAPES, type MmaShape } from "../ir/mma_table.ts";
import { sparseMmaByName } from "../ir/mma_sparse.ts";
import { printPtx } from "../backends/ptx/print.ts";
import * as ir from "../ir/builder.ts";

/** Accumulator sets per thread: enough independent MMAs to fill the pipe
 * (16 measured 3-4% above 8 on the H200, 2026-11-29). */
export const PEAK_ACCUMULATORS = 16;
/** Operand values of a peak kernel: `fixed`, one A and one B fragment per
 * thread, the same for every MMA (the ceiling as ../shared/ANCHORS.md measures
 * it); `random`, {@link OPERAND_SETS} fragments of random bits rotated across
 * the accumulators. The tensor cores draw more power on changing random
 * operands, and the H200 holds 700 W by lowering its clock: `random` is the
 * ceiling at the power a GEMM on random data draws (bench/NOTES.md 8). */
export type PeakOperands = "fixed" | "random";
/** Different A (and B) fragments of a `random` peak kernel. */
export const OPERAND_SETS = 4;
/** Threads per block. */
export const PEAK_THREADS = 256;

/** The shapes measured, by benchmark type. */
export const PEAK_SHAPES: Readonly<Record<string, string>> = Object.freeze({
  f16: "m16n8k16.f16.f32",
  bf16: "m16n8k16.bf16.f32",
  tf32: "m16n8k8.tf32.f32",
  s8: "m16n8k32.s8.s32",
  f64: "m8n8k4.f64.f64",
  s4: "m16n8k64.s4.s32",
  b1: "m16n8k256.b1.s32.and.popc",
});

/** The sparse shapes measured (`mma.sp`), by benchmark type. */
export const SPARSE_PEAK_SHAPES: Readonly<Record<string, string>> = Object.freeze({
  f16: "sp.m16n8k32.f16.f32",
  bf16: "sp.m16n8k32.bf16.f32",
  tf32: "sp.m16n8k16.tf32.f32",
  s8: "sp.m16n8k64.s8.s32",
});

/** Valid metadata words (every nibble keeps two ascending positions, so also valid for
 * ordered_metadata): 2:4 types, and tf32 (only 0b0100 and 0b1110 nibbles). */
const META_WORDS = [0x44444444, 0xeeeeeeee, 0x98989898, 0xdcdcdcdc];
const META_WORDS_TF32 = [0x44444444, 0xeeeeeeee, 0x4e4e4e4e, 0xe4e4e4e4];

/**
 * A peak kernel for one MMA table row (dense, or sparse "sp.*"): `iters` rounds of
 * `accumulators` independent MMAs; each thread writes one value derived from its
 * accumulators. A sparse row's MMAs read a constant valid metadata register (with `random`
 * operands, one of four rotated with A) and selector 0.
 *
 * @param shapeName The MMA table row.
 * @param accumulators Independent accumulator sets per thread.
 * @param operands Fixed or random operand values.
 * @param ordered Sparse rows: `mma.sp::ordered_metadata` instead of `mma.sp`.
 * @returns The kernel (params: `out` tensor, `iters` dim).
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { printPtx } from "../backends/ptx/print.ts";
 * import { peakKernel } from "./mma_peak.ts";
 * const k = peakKernel("sp.m16n8k32.f16.f32", 16, "fixed", true);
 * ok(k.name.endsWith("_ord"));
 * ok(printPtx([k]).includes("mma.sp::ordered_metadata.sync.aligned.m16n8k32"));
 * ```
 */
export function peakKernel(
  shapeName: string,
  accumulators = PEAK_ACCUMULATORS,
  operands: PeakOperands = "fixed",
  ordered = false,
): Kernel {
  const sp = sparseMmaByName(shapeName);
  const s = sp ?? MMA_SHAPES.find((x) => x.name === shapeName);
  if (s === undefined) throw new Error(`Unknown MMA shape "${shapeName}"`);
  const b = new KernelBuilder();
  const frame = peakParams(b);
  const { iters, tid } = frame;
  const { operand, hashed } = operandRegs(b, tid, s.regBits === 64);
  const As = operands === "fixed"
    ? [operand(s.a.regs, 1)]
    : Array.from({ length: OPERAND_SETS }, (_, j) => hashed(s.a.regs, 2 * j + 1, s.aType));
  const Bs = operands === "fixed"
    ? [operand(s.b.regs, 7)]
    : Array.from({ length: OPERAND_SETS }, (_, j) => hashed(s.b.regs, 2 * j + 2, s.bType));
  const metas = sp === undefined
    ? []
    : (sp.aType === "tf32" ? META_WORDS_TF32 : META_WORDS).slice(0, As.length).map((w) => {
      const r = b.reg("b32");
      b.emit(ir.mov(r, imm(w)));
      return r;
    });
  const accType = s.c.regType;
  const acc: Reg[][] = Array.from(
    { length: accumulators },
    () =>
      Array.from({ length: s.c.regs }, () => {
        const r = b.reg(accType);
        b.emit(ir.mov(r, imm(0)));
        return r;
      }),
  );
  const i = b.reg("u32", "i");
  b.for(i, imm(0), iters, 1, () => {
    acc.forEach((c, j) => {
      const a = As[j % As.length]!;
      const bb = Bs[Math.floor(j / As.length) % Bs.length]!;
      const meta = metas[j % As.length];
      b.emit(
        meta === undefined
          ? ir.mma(s.name, c, a, bb, c)
          : ir.mma(s.name, c, a, bb, c, { meta, selector: 0, ordered }),
      );
    });
  });
  return peakFinish(
    b,
    `peak_${s.name.replaceAll(".", "_")}${
      accumulators === PEAK_ACCUMULATORS ? "" : `_a${accumulators}`
    }${operands === "fixed" ? "" : "_rand"}${ordered && sp !== undefined ? "_ord" : ""}`,
    frame,
    acc.map((c) => c[0]!),
    accType,
  );
}

/** A peak kernel's operand fragments from the thread index: `operand` fixed, small finite values;
 * `hashed` random-looking bits of finite values of the operand type (|x| in [0.5, 1)), as in a
 * GEMM on random data. `wide`: 64-bit registers (f64). */
function operandRegs(b: KernelBuilder, tid: Reg, wide: boolean): {
  operand: (n: number, salt: number) => Reg[];
  hashed: (n: number, salt: number, t: MmaShape["aType"]) => Reg[];
} {
  // Operand registers: finite, small values from the thread index.
  const operand = (n: number, salt: number): Reg[] =>
    Array.from({ length: n }, (_, i) => {
      if (wide) {
        const f = b.reg("f32");
        b.emit(ir.cvt("f32.s32", f, imm(i + salt)));
        const d = b.reg("f64");
        b.emit(ir.cvt("f64.f32", d, f));
        return d;
      }
      const x = b.reg("u32");
      b.emit(ir.bin("and", "u32", x, tid, imm(0x00ff00ff)));
      const y = b.reg("u32");
      b.emit(ir.bin("or", "u32", y, x, imm(0x38003800 + salt + i)));
      const r = b.reg("b32");
      b.emit(ir.cvt("b32.u32", r, y));
      return r;
    });
  // "random": OPERAND_SETS different A and B fragments of random-looking bits
  // (finite values of the operand type), rotated so that consecutive MMAs see
  // different operands, as in a GEMM on random data.
  const u32 = (fn: "shr" | "xor" | "mul" | "and" | "or", a: Reg, v: number): Reg => {
    const d = b.reg("u32");
    b.emit(ir.bin(fn, "u32", d, a, imm(v)));
    return d;
  };
  const cvt = (kind: "b32.u32" | "s32.b32" | "f64.s32", type: RegType, src: Reg): Reg => {
    const d = b.reg(type);
    b.emit(ir.cvt(kind, d, src));
    return d;
  };
  const hashed = (n: number, salt: number, t: MmaShape["aType"]): Reg[] =>
    Array.from({ length: n }, (_, i) => {
      const h1 = b.reg("u32");
      const c = imm(salt * 977 + i * 131 + 1);
      b.emit(ir.mad("u32", h1, tid, imm(0x9e3779b1), c));
      const h3 = b.reg("u32");
      b.emit(ir.bin("xor", "u32", h3, h1, u32("shr", h1, 15)));
      const h = u32("mul", h3, 0x85ebca6b);
      if (wide) return cvt("f64.s32", "f64", cvt("s32.b32", "s32", cvt("b32.u32", "b32", h)));
      // Sign and mantissa random, exponent fixed (|x| in [0.5, 1)).
      const [keep, set] = t === "f16"
        ? [0x83ff83ff, 0x38003800]
        : t === "bf16"
        ? [0x807f807f, 0x3f003f00]
        : t === "tf32"
        ? [0x807fe000, 0x3f000000]
        : [0xffffffff, 0];
      return cvt("b32.u32", "b32", u32("or", u32("and", h, keep), set));
    });
  return { operand, hashed };
}

/** A peak kernel's parameters and the thread index. */
interface PeakFrame {
  readonly out: Reg;
  readonly iters: Reg;
  readonly tid: Reg;
}

/** Reads a peak kernel's parameters (`out`, `iters`) and the thread index. */
function peakParams(b: KernelBuilder): PeakFrame {
  const out = b.loadParam("u64", "out");
  const iters = b.loadParam("u32", "iters");
  const tid = b.readSreg("tid.x", "tid");
  return { out, iters, tid };
}

/**
 * Ends a peak kernel: keeps every accumulator live by combining `keep` (one
 * register of each set) and storing the result, one value a thread, to
 * `out[blockIdx * PEAK_THREADS + tid]`.
 */
function peakFinish(
  b: KernelBuilder,
  name: string,
  { out, tid }: PeakFrame,
  keep: readonly Reg[],
  type: RegType,
): Kernel {
  const wide = type === "f64";
  let sum = keep[0]!;
  for (const r of keep.slice(1)) {
    const t = b.reg(type);
    const fn = type === "b32" ? "xor" : "add";
    b.emit(ir.bin(fn, type as "b32" | "f32" | "s32" | "f64", t, sum, r));
    sum = t;
  }
  const bid = b.readSreg("ctaid.x", "bid");
  const gtid = b.reg("u32");
  b.emit(ir.mad("u32", gtid, bid, imm(PEAK_THREADS), tid));
  const off = b.reg("u64");
  b.emit(ir.mulWide(off, gtid, imm(wide ? 8 : 4)));
  const addr = b.reg("u64");
  b.emit(ir.bin("add", "u64", addr, out, off));
  b.emit(ir.stg(wide ? "b64" : "b32", [sum], addr, 0));
  return {
    kind: "kernel",
    name,
    target: "sm80",
    params: [
      { name: "out", kind: "tensor", ptx: "u64" },
      { name: "iters", kind: "dim", ptx: "u32" },
    ],
    threads: PEAK_THREADS,
    dynamicSmemBytes: 0,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: b.regs,
    body: b.body,
  };
}

/** Independent f32 accumulators per thread of the FFMA ceiling kernel. */
export const FFMA_CHAINS = 32;
/** Copies of the {@link FFMA_CHAINS} fmas in one loop iteration: the loop's
 * counter, compare and branch take issue slots that the fmas would use
 * (with one copy the kernel measured 0.91 of the H200's 128 fma/clock/SM). */
export const FFMA_UNROLL = 4;

/**
 * The CUDA cores' ceiling, for `math f32` (SIMT) GEMMs: `iters` rounds of
 * {@link FFMA_UNROLL} x {@link FFMA_CHAINS} `fma.rn.f32` a thread into
 * independent accumulators, from registers. `fixed`: one (a, b) pair a
 * thread; `random`: the outer product of 4 x 8 values of random sign and
 * mantissa (|x| in [0.5, 1)), each chain its own pair, in the order a SIMT
 * GEMM's thread tile issues them (one x against 8 y): with 4 pairs rotated
 * from one fma to the next, the three source registers fell into one
 * register bank often enough to cost 30% (43 against 61 TFLOPS on the H200).
 *
 * @param operands Fixed or random operand values.
 * @returns The kernel (params: `out` tensor, `iters` dim).
 */
export function ffmaKernel(operands: PeakOperands = "fixed"): Kernel {
  const b = new KernelBuilder();
  const frame = peakParams(b);
  const { iters, tid } = frame;
  const u32 = (fn: "shr" | "xor" | "and" | "or", a: Reg, v: number): Reg => {
    const d = b.reg("u32");
    b.emit(ir.bin(fn, "u32", d, a, imm(v)));
    return d;
  };
  const f32 = (bits: Reg): Reg => {
    const raw = b.reg("b32");
    b.emit(ir.cvt("b32.u32", raw, bits));
    const d = b.reg("f32");
    b.emit(ir.cvt("f32.b32", d, raw));
    return d;
  };
  // Fixed: 1 + (tid & 255) / 2^23 (and the salt), a different value a thread. Random: a hash of tid.
  const value = (salt: number): Reg => {
    if (operands === "fixed") return f32(u32("or", u32("and", tid, 0xff), 0x3f800000 + salt));
    const h1 = b.reg("u32");
    b.emit(ir.mad("u32", h1, tid, imm(0x9e3779b1), imm(salt * 977 + 1)));
    const h = b.reg("u32");
    b.emit(ir.bin("xor", "u32", h, h1, u32("shr", h1, 15)));
    return f32(u32("or", u32("and", h, 0x807fffff), 0x3f000000));
  };
  const [nx, ny] = operands === "fixed" ? [1, 1] : [4, 8];
  const xs = Array.from({ length: nx }, (_, j) => value(2 * j + 1));
  const ys = Array.from({ length: ny }, (_, j) => value(2 * j + 2));
  const acc = Array.from({ length: FFMA_CHAINS }, () => {
    const r = b.reg("f32");
    b.emit(ir.mov(r, imm(0)));
    return r;
  });
  const i = b.reg("u32", "i");
  b.for(i, imm(0), iters, 1, () => {
    for (let u = 0; u < FFMA_UNROLL; u++) {
      acc.forEach((c, j) => {
        const x = xs[Math.floor(j / ny) % nx]!;
        b.emit(ir.mad("f32", c, x, ys[j % ny]!, c));
      });
    }
  });
  return peakFinish(b, `peak_ffma_f32${operands === "fixed" ? "" : "_rand"}`, frame, acc, "f32");
}

/**
 * Operations one FFMA ceiling launch performs (2 per fma).
 *
 * @param blocks Blocks launched.
 * @param iters The loop count.
 * @returns The operation count.
 */
export function ffmaOps(blocks: number, iters: number): number {
  return 2 * FFMA_UNROLL * FFMA_CHAINS * iters * blocks * PEAK_THREADS;
}

/**
 * The sparse ceiling kernels: every {@link SPARSE_PEAK_SHAPES} row with `mma.sp` and with
 * `mma.sp::ordered_metadata` (a module with them prints as PTX 8.5).
 *
 * @param operands Fixed or random operand values.
 * @returns The kernels, plain and ordered for each shape.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sparsePeakKernels } from "./mma_peak.ts";
 * equal(sparsePeakKernels().length, 8);
 * ```
 */
export function sparsePeakKernels(operands: PeakOperands = "fixed"): Kernel[] {
  return Object.values(SPARSE_PEAK_SHAPES).flatMap((s) => [
    peakKernel(s, PEAK_ACCUMULATORS, operands, false),
    peakKernel(s, PEAK_ACCUMULATORS, operands, true),
  ]);
}

/**
 * Operations one peak-kernel launch performs (2 per multiply-add; a sparse row counts its
 * dense shape).
 *
 * @param shapeName The MMA table row.
 * @param blocks Blocks launched.
 * @param iters The loop count.
 * @returns The operation count.
 */
export function peakOps(shapeName: string, blocks: number, iters: number): number {
  const s = sparseMmaByName(shapeName) ?? MMA_SHAPES.find((x) => x.name === shapeName)!;
  const warps = (blocks * PEAK_THREADS) / 32;
  return 2 * s.m * s.n * s.k * PEAK_ACCUMULATORS * iters * warps;
}

if (import.meta.main) {
  if (Deno.args.includes("--sparse")) {
    console.log(printPtx(sparsePeakKernels(), { minBlocksPerSm: 1 }));
    Deno.exit(0);
  }
  const kernels = Object.values(PEAK_SHAPES).map((s) => peakKernel(s));
  if (Deno.args.includes("--variants")) {
    for (const a of [8, 32]) {
      kernels.push(peakKernel(PEAK_SHAPES.f16!, a), peakKernel(PEAK_SHAPES.tf32!, a));
    }
  }
  console.log(printPtx(kernels, { minBlocksPerSm: 1 }));
}
