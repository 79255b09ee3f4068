/**
 * SM90 (Hopper) warpgroup MMA: every `wgmma.mma_async.sync.aligned` variant of the PTX ISA
 * for `sm_90a`, as data (issue 23, item 1). A row is one instruction: a warpgroup (4 warps,
 * 128 threads) multiplies a 64 x K tile of A by a K x N tile of B into a 64 x N
 * accumulator held in registers, A from shared memory (a matrix descriptor) or from
 * registers, B always from shared memory.
 *
 * Source: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions",
 * `wgmma.mma_async` (9.7.15.5 in the 9.x ISA): its syntax per type family, the shapes
 * each allows, the operand lists (`d, a-desc | a, b-desc, scale-d` and, for floating
 * types, `imm-scale-a, imm-scale-b`; `imm-trans-a, imm-trans-b` for .f16/.bf16 with A
 * from shared memory, `imm-trans-b` alone with A from registers), and `.satfinite` for
 * the integer rows:
 *   - .f16 x .f16 -> .f16 | .f32, .bf16 x .bf16 -> .f32: m64nNk16, N = 8, 16, .., 256;
 *   - .tf32 x .tf32 -> .f32: m64nNk8, the same N;
 *   - .e4m3 | .e5m2 x .e4m3 | .e5m2 -> .f16 | .f32: m64nNk32, the same N;
 *   - .s8 | .u8 x .s8 | .u8 -> .s32: m64nNk32, N = 8, 16, 24, 32, then 48 .. 224 by 16;
 *   - .b1 x .b1 -> .s32 (`.and.popc`): m64nNk256, N = 8, 16, 24, 32, then 48 .. 256 by 16.
 *
 * The accumulator: 64 x N elements over 128 threads, N / 2 of them a thread: N / 2 `.f32` or
 * `.s32` registers, N / 4 `.f16x2` ones, each warp's 16 rows in the m16n8 accumulator layout
 * of ir/mma_table.ts (the kernel IR's WgmmaOp says which register holds which element; the
 * simulator, backends/sim/_wgmma.ts, executes it, and tests/gpu/wgmma_test.ts checks it on
 * the GPU). The one shared-memory layout the kernels use, {@link WGMMA_SMEM}, and its
 * descriptor are below. Not here (a shortcut of issue 23): A from registers in the
 * kernels, the other swizzles (none, 32 and 64 bytes), M/N-major tiles, the b1
 * rows in the simulator.
 *
 * @module
 */

import { MMA_SHAPES } from "./mma_table.ts";

/** The element types of wgmma operands. */
export type WgmmaType = "f16" | "bf16" | "tf32" | "e4m3" | "e5m2" | "s8" | "u8" | "b1";

/** The accumulator types. */
export type WgmmaAcc = "f16" | "f32" | "s32";

/** One `wgmma.mma_async` variant. */
export interface WgmmaShape {
  /** Unique name: "wg.m64n128k16.f16.f32", "wg.m64n64k32.e4m3.e5m2.f32". */
  readonly name: string;
  readonly m: 64;
  readonly n: number;
  readonly k: number;
  readonly aType: WgmmaType;
  readonly bType: WgmmaType;
  readonly cType: WgmmaAcc;
  /** The PTX mnemonic, e.g. "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16". */
  readonly ptx: string;
  /** Accumulator registers a thread: N / 2 (.f32, .s32) or N / 4 (.f16x2). */
  readonly accRegs: number;
  /** The accumulator registers' PTX type. */
  readonly accRegType: "f32" | "b32" | "s32";
  /** A's registers a thread when A comes from registers (64 x K over 128 threads, 32-bit). */
  readonly aRegs: number;
  /** Whether the instruction takes `imm-scale-a, imm-scale-b` (the floating types). */
  readonly scales: boolean;
  /** Whether it takes transposes (`imm-trans-a, imm-trans-b`; .f16 and .bf16 only). */
  readonly transposes: boolean;
  /** The lowest PTX ISA version that has it: 8.0, or 8.4 for mixed s8/u8 operands (ptxas:
   * "WGMMA with mixed integer types requires PTX ISA .version 8.4"). */
  readonly ptxVersion: "8.0" | "8.4";
}

/** Bits of each operand type (tf32: a 32-bit word). */
export const WGMMA_TYPE_BITS: Readonly<Record<WgmmaType, number>> = {
  f16: 16,
  bf16: 16,
  tf32: 32,
  e4m3: 8,
  e5m2: 8,
  s8: 8,
  u8: 8,
  b1: 1,
};

/** N of the floating rows: 8 .. 256 by 8. */
const FLOAT_N = Array.from({ length: 32 }, (_, i) => 8 * (i + 1));
/** N of the integer rows: 8, 16, 24, 32, then 48 .. 224 by 16. */
const INT_N = [8, 16, 24, 32, ...Array.from({ length: 12 }, (_, i) => 48 + 16 * i)];
/** N of the single-bit rows: 8, 16, 24, 32, then 48 .. 256 by 16. */
const B1_N = [8, 16, 24, 32, ...Array.from({ length: 14 }, (_, i) => 48 + 16 * i)];

function row(n: number, k: number, aType: WgmmaType, bType: WgmmaType, cType: WgmmaAcc) {
  const types = aType === bType ? aType : `${aType}.${bType}`;
  const tail = aType === "b1"
    ? `s32.b1.b1.and.popc`
    : cType === "s32"
    ? `satfinite.s32.${aType}.${bType}`
    : `${cType}.${aType}.${bType}`;
  return Object.freeze({
    name: `wg.m64n${n}k${k}.${types}.${cType}`,
    m: 64 as const,
    n,
    k,
    aType,
    bType,
    cType,
    ptx: `wgmma.mma_async.sync.aligned.m64n${n}k${k}.${tail}`,
    accRegs: cType === "f16" ? n / 4 : n / 2,
    accRegType: cType === "f16"
      ? "b32" as const
      : cType === "f32"
      ? "f32" as const
      : "s32" as const,
    aRegs: (64 * k * WGMMA_TYPE_BITS[aType]) / (128 * 32),
    scales: cType !== "s32",
    transposes: aType === "f16" || aType === "bf16",
    ptxVersion: cType === "s32" && aType !== bType ? "8.4" as const : "8.0" as const,
  });
}

function build(): WgmmaShape[] {
  const out: WgmmaShape[] = [];
  for (const n of FLOAT_N) {
    out.push(row(n, 16, "f16", "f16", "f16"), row(n, 16, "f16", "f16", "f32"));
    out.push(row(n, 16, "bf16", "bf16", "f32"), row(n, 8, "tf32", "tf32", "f32"));
    for (const a of ["e4m3", "e5m2"] as const) {
      for (const b of ["e4m3", "e5m2"] as const) {
        for (const c of ["f16", "f32"] as const) out.push(row(n, 32, a, b, c));
      }
    }
  }
  for (const n of INT_N) {
    for (const a of ["s8", "u8"] as const) {
      for (const b of ["s8", "u8"] as const) out.push(row(n, 32, a, b, "s32"));
    }
  }
  for (const n of B1_N) out.push(row(n, 256, "b1", "b1", "s32"));
  return out;
}

/**
 * Every `wgmma.mma_async` variant of sm_90a (the module's list), frozen; names unique.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { WGMMA_TABLE } from "./wgmma_table.ts";
 * const r = WGMMA_TABLE.find((s) => s.name === "wg.m64n256k16.f16.f32")!;
 * equal(r.ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16");
 * equal(r.accRegs, 128); // 64 x 256 f32 over a warpgroup's 128 threads
 * equal(r.aRegs, 4); // A from registers: 64 x 16 f16
 * ```
 */
export const WGMMA_TABLE: readonly WgmmaShape[] = Object.freeze(build());

{
  const names = new Set<string>();
  for (const s of WGMMA_TABLE) {
    if (names.has(s.name)) throw new Error(`wgmma table: duplicate ${s.name}`);
    names.add(s.name);
    if (!Number.isInteger(s.aRegs) || !Number.isInteger(s.accRegs) || s.n % 8 !== 0) {
      throw new Error(`wgmma table: ${s.name}: bad register counts`);
    }
  }
}

/**
 * The operands a row's instruction takes after `d`, as PTX text, for A from shared memory
 * (`aDesc`) or registers (`aRegs`): `a, b-desc, scale-d` and the row's immediates
 * (scales 1, transposes 0).
 *
 * @param s The row.
 * @param a A's descriptor register, or its registers' list (`{%r1, ..}`).
 * @param bDesc B's descriptor register.
 * @param scaleD The `scale-d` predicate or immediate (0: D = A * B; 1: D += A * B).
 * @param fromRegs Whether `a` is A's registers.
 * @returns The operands, comma-separated.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { WGMMA_TABLE, wgmmaOperands } from "./wgmma_table.ts";
 * const s = WGMMA_TABLE.find((r) => r.name === "wg.m64n8k16.f16.f32")!;
 * equal(wgmmaOperands(s, "%rd1", "%rd2", "1", false), "%rd1, %rd2, 1, 1, 1, 0, 0");
 * equal(wgmmaOperands(s, "{%r1, %r2, %r3, %r4}", "%rd2", "p", true), "{%r1, %r2, %r3, %r4}, %rd2, p, 1, 1, 0");
 * ```
 */
export function wgmmaOperands(
  s: WgmmaShape,
  a: string,
  bDesc: string,
  scaleD: string,
  fromRegs: boolean,
): string {
  const imms = [
    ...(s.scales ? ["1", "1"] : []),
    ...(s.transposes ? (fromRegs ? ["0"] : ["0", "0"]) : []),
  ];
  return [a, bDesc, scaleD, ...imms].join(", ");
}

/** Threads of a warpgroup: the 4 warps that issue a wgmma together. */
export const WARPGROUP_THREADS = 128;

/**
 * The one shared-memory layout the kernels give wgmma operands (issue 23; the ISA's
 * K-major canonical layout with the 128-byte swizzle): a tile of R rows (M or N) by K,
 * K contiguous, each row 128 bytes, 8-row groups of 1,024 bytes one after another, and
 * within a group the 16-byte chunk c of row r stored at chunk c ^ (r % 8). The swizzle
 * acts on the absolute shared address, so a tile's groups start at 1024-byte boundaries;
 * the instruction's K (32 bytes of 16-bit types) is a start address 32 bytes further
 * along the row. Its matrix descriptor: start address >> 4 (bits 0-13), leading byte
 * offset 16 >> 4 (bits 16-29; unused with this swizzle, 1 by convention), stride byte
 * offset 1024 >> 4 (bits 32-45), base offset 0 (bits 49-51), swizzle mode 1 (128 bytes,
 * bits 62-63). The pipeline's tiles of 128-byte rows (passes/pipeline.ts, shift 3, scale
 * 1) are stored this way; the simulator reads operands through {@link wgmmaSmemAddress}.
 */
export const WGMMA_SMEM = Object.freeze({
  /** Bytes of one row (the swizzle span). */
  rowBytes: 128,
  /** Bytes between consecutive groups of 8 rows (the stride byte offset). */
  groupBytes: 1024,
  /** The leading byte offset field's value in bytes (unused by the 128-byte swizzle). */
  leadingBytes: 16,
  /** The swizzle mode field: 1, the 128-byte swizzle. */
  swizzleMode: 1,
});

/**
 * The shared address of element (row, byte `kb` along K) of a wgmma operand tile that
 * starts at `start` in the {@link WGMMA_SMEM} layout.
 *
 * @param start The tile's start address (a 1024-byte boundary plus less than 128).
 * @param row The row (M for A, N for B).
 * @param kb The byte offset along K from the start.
 * @returns The byte's shared address.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { wgmmaSmemAddress } from "./wgmma_table.ts";
 * equal(wgmmaSmemAddress(0, 0, 0), 0);
 * equal(wgmmaSmemAddress(0, 1, 0), 128 + 16); // row 1: chunk 0 lands in chunk 1
 * equal(wgmmaSmemAddress(2048, 9, 34), 2048 + 1024 + 128 + (2 ^ 1) * 16 + 2);
 * ```
 */
export function wgmmaSmemAddress(start: number, row: number, kb: number): number {
  const pre = start + (row >> 3) * WGMMA_SMEM.groupBytes + (row & 7) * WGMMA_SMEM.rowBytes + kb;
  return pre ^ (((pre >> 7) & 7) << 4);
}

/**
 * The 64-bit matrix descriptor's high word for the {@link WGMMA_SMEM} layout (stride
 * byte offset and swizzle mode), and the low word's bits other than the start address
 * (the leading byte offset): the printer ORs `(address >> 4) & 0x3fff` into the low word.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { wgmmaDescriptorWords } from "./wgmma_table.ts";
 * const w = wgmmaDescriptorWords();
 * equal(w.hi, 0x40000040);
 * equal(w.loFixed, 0x10000);
 * ```
 */
export function wgmmaDescriptorWords(): { readonly hi: number; readonly loFixed: number } {
  const hi = ((WGMMA_SMEM.swizzleMode << 30) | (WGMMA_SMEM.groupBytes >> 4)) >>> 0;
  return { hi, loFixed: (WGMMA_SMEM.leadingBytes >> 4) << 16 };
}

/** The m16n8 accumulator fragment (f32: four registers a lane) that each warp's 16 rows of
 * every n8 block of a wgmma accumulator repeat. */
const M16N8_ACC = MMA_SHAPES.find((r) => r.name === "m16n8k8.tf32.f32")!.c;

/**
 * Where accumulator element `e` of warpgroup thread `t` lies in the 64 x N tile: element
 * e = 4j + i is register i of the m16n8 accumulator fragment (ir/mma_table.ts) of n8 block
 * j, in the 16 rows of warp t / 32. For an f16 accumulator, element 4j + 2h + c is half c of
 * register 2j + h. The lowering reads each warp's accumulators as those fragments
 * (passes/wgmma.ts); the simulator writes them here.
 *
 * @param t The thread in its warpgroup (0 .. 127).
 * @param e The element (0 .. N / 2 - 1).
 * @returns [row, column].
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { wgmmaAccCoord } from "./wgmma_table.ts";
 * deepEqual(wgmmaAccCoord(0, 0), [0, 0]);
 * deepEqual(wgmmaAccCoord(37, 6), [16 + 1 + 8, 8 + 2 + 0]); // warp 1, lane 5, block 1, register 2
 * ```
 */
export function wgmmaAccCoord(t: number, e: number): readonly [number, number] {
  const [r, c] = M16N8_ACC.coord(t & 31, e & 3, 0);
  return [16 * ((t >> 5) & 3) + r, 8 * (e >> 2) + c];
}

/** The row of each name. */
export const WGMMA_BY_NAME: ReadonlyMap<string, WgmmaShape> = new Map(
  WGMMA_TABLE.map((s) => [s.name, s]),
);
