/**
 * The vocabulary of the SM80 MMA table (element and register types, bit
 * ops) and the per-lane fragment maps of its operands: for a lane, a register
 * of that lane's fragment and an element packed inside that register, a map
 * gives the (row, col) of the operand tile it holds. ir/mma_table.ts builds
 * its rows from these and re-exports every name.
 *
 * Source of the layouts: PTX ISA, section "Warp Level Matrix Multiply-Accumulate
 * Instructions" -> "Matrix Fragments for mma.m*n*k*" (the subsections are listed
 * in ir/mma_table.ts). All those sections use the same two lane-derived quantities:
 *   groupID           = lane >> 2   (0..7)
 *   threadID_in_group = lane % 4    (0..3)
 * and number the fragment elements a_i / b_i / c_i "low to high": element i lives in
 * register floor(i / elemsPerReg), at packed position i % elemsPerReg, position 0 being the
 * least significant bits of the register (as for .f16x2, 4 x .s8, 8 x .s4, 32 x .b1).
 *
 * @module
 */

/** Element data types that appear in the SM80 mma table (operands and accumulators). */
export type MmaDtype =
  | "f16"
  | "bf16"
  | "tf32"
  | "f64"
  | "s8"
  | "u8"
  | "s4"
  | "u4"
  | "b1"
  | "f32"
  | "s32";

/** Bit-level reduction used by the single-bit (`.b1`) mma variants. */
export type MmaBitOp = "and.popc" | "xor.popc";

/** Storage width, in bits, of one element of each {@link MmaDtype} inside a register. */
export const MMA_DTYPE_BITS: Readonly<Record<MmaDtype, number>> = Object.freeze({
  f16: 16,
  bf16: 16,
  // tf32 occupies a full 32-bit register (the low 13 mantissa bits are ignored).
  tf32: 32,
  f64: 64,
  s8: 8,
  u8: 8,
  s4: 4,
  u4: 4,
  b1: 1,
  f32: 32,
  s32: 32,
});

/** The register type of an mma operand: a kernel-IR register type (ir/kernel.ts). */
export type MmaRegType = "b32" | "f32" | "s32" | "f64";

/** Which operand of `D = A * B + C` a fragment map describes (C and D share a layout). */
export type MmaOperand = "a" | "b" | "c";

/**
 * Per-lane fragment layout of one mma operand.
 *
 * The operand tile is A: M x K, B: K x N, C/D: M x N, all indexed as (row, col) in the
 * logical matrix (independent of the `.row.col` memory layout qualifiers).
 */
export interface FragmentMap {
  /** Which operand this map belongs to. */
  readonly operand: MmaOperand;
  /** Element type of the operand. */
  readonly dtype: MmaDtype;
  /** Number of rows of the operand tile (M for A and C, K for B). */
  readonly rows: number;
  /** Number of columns of the operand tile (K for A, N for B and C). */
  readonly cols: number;
  /** Number of 32-bit registers per lane (64-bit registers for f64). */
  readonly regs: number;
  /** Number of elements packed per register; element 0 sits in the lowest bits. */
  readonly elemsPerReg: number;
  /** Width of one register in bits: 64 for f64 operands, 32 otherwise. */
  readonly regBits: 32 | 64;
  /** The kernel-IR register type of the operand's registers (ir/kernel.ts, MmaOp):
   * f32, s32 and f64 elements in registers of their own type, packed 16-, 8-, 4-
   * and 1-bit elements and tf32 in untyped b32 registers. */
  readonly regType: MmaRegType;
  /**
   * Maps (lane, reg, elem) to the [row, col] of the operand tile held there.
   * Throws a RangeError when lane is not in 0..31, reg not in 0..regs-1 or elem not in
   * 0..elemsPerReg-1.
   */
  readonly coord: (lane: number, reg: number, elem: number) => readonly [number, number];
}

// ---------------------------------------------------------------------------------------------
// Fragment map builders
// ---------------------------------------------------------------------------------------------

/** Warp size: every fragment map covers exactly 32 lanes. */
export const WARP = 32;

function checkArgs(
  what: string,
  lane: number,
  reg: number,
  elem: number,
  regs: number,
  elemsPerReg: number,
): void {
  if (!Number.isInteger(lane) || lane < 0 || lane >= WARP) {
    throw new RangeError(`${what}: lane ${lane} out of range 0..${WARP - 1}`);
  }
  if (!Number.isInteger(reg) || reg < 0 || reg >= regs) {
    throw new RangeError(`${what}: reg ${reg} out of range 0..${regs - 1}`);
  }
  if (!Number.isInteger(elem) || elem < 0 || elem >= elemsPerReg) {
    throw new RangeError(`${what}: elem ${elem} out of range 0..${elemsPerReg - 1}`);
  }
}

export function regBitsOf(dtype: MmaDtype): 32 | 64 {
  return dtype === "f64" ? 64 : 32;
}

/** The register type of operands of element type `dtype` (see {@link FragmentMap.regType}). */
function regTypeOf(dtype: MmaDtype): MmaRegType {
  return dtype === "f64" || dtype === "f32" || dtype === "s32" ? dtype : "b32";
}

function elemsPerRegOf(dtype: MmaDtype): number {
  return regBitsOf(dtype) / MMA_DTYPE_BITS[dtype];
}

function makeMap(
  operand: MmaOperand,
  dtype: MmaDtype,
  rows: number,
  cols: number,
  fn: (g: number, t: number, reg: number, elem: number, epr: number) => readonly [number, number],
): FragmentMap {
  const elemsPerReg = elemsPerRegOf(dtype);
  const regs = (rows * cols) / (WARP * elemsPerReg);
  const what = `${operand.toUpperCase()} ${rows}x${cols} ${dtype}`;
  const coord = (lane: number, reg: number, elem: number): readonly [number, number] => {
    checkArgs(what, lane, reg, elem, regs, elemsPerReg);
    return fn(lane >> 2, lane & 3, reg, elem, elemsPerReg);
  };
  return Object.freeze({
    operand,
    dtype,
    rows,
    cols,
    regs,
    elemsPerReg,
    regBits: regBitsOf(dtype),
    regType: regTypeOf(dtype),
    coord,
  });
}

/**
 * Multiplicand A (M x K, M = 16 or 8).
 *
 * All m16n8k* A layouts in the PTX ISA follow one pattern once written per register: with
 * e = elemsPerReg, each register holds e consecutive K-elements of one row:
 *   row = groupID + 8 * (reg % (M / 8))
 *   col = threadID_in_group * e + elem + 4 * e * floor(reg / (M / 8))
 * i.e. for M = 16 registers alternate between the upper and lower 8 rows first, then step
 * by one "K chunk" of 4 * e columns; for M = 8 only the K chunk steps. Checked against each section:
 *   - m16n8k16 f16/bf16 (e=2): a0,a1 row g; a2,a3 row g+8; a4..a7 the same, cols + 8.
 *   - m16n8k8 f16/bf16 (e=2): a0,a1 row g; a2,a3 row g+8; col 2*t + (i & 1).
 *   - m16n8k8 tf32 (e=1): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4).
 *   - m16n8k4 tf32 (e=1): a0 (g, t), a1 (g+8, t).
 *   - m16n8k16 s8 (e=4): a0..a3 row g, a4..a7 row g+8, col 4*t + (i & 3).
 *   - m16n8k32 s8 (e=4): as k16, then a8..a15 with cols + 16.
 *   - m16n8k32 s4 (e=8): a0..a7 row g, a8..a15 row g+8, col 8*t + (i & 7).
 *   - m16n8k64 s4 (e=8): as k32, then a16..a31 with cols + 32.
 *   - m16n8k128 b1 (e=32): a0..a31 row g, a32..a63 row g+8, col 32*t + (i & 31).
 *   - m16n8k256 b1 (e=32): as k128, then a64..a127 with cols + 128.
 *   - m8n8k4 f64 (e=1, one 64-bit register): a0 (g, t).
 */
export function fragA(dtype: MmaDtype, m: number, k: number): FragmentMap {
  const rowBlocks = m / 8;
  return makeMap("a", dtype, m, k, (g, t, reg, elem, e) => [
    g + 8 * (reg % rowBlocks),
    t * e + elem + 4 * e * Math.floor(reg / rowBlocks),
  ]);
}

/**
 * Multiplicand B (K x N, N = 8).
 *
 * Each register holds e = elemsPerReg consecutive K-elements of column groupID:
 *   row = threadID_in_group * e + elem + 4 * e * reg
 *   col = groupID
 * Checked against: m16n8k16 f16 (b0,b1 rows 2t+i; b2,b3 rows 2t+i+8), m16n8k8 f16
 * (b0,b1), m16n8k8 tf32 (b0 row t, b1 row t+4), m16n8k4 tf32 (b0 row t), m16n8k16 s8
 * (b0..b3 rows 4t+i), m16n8k32 s8 (b4..b7 rows + 16), m16n8k32/k64 s4 (8t+i, + 32),
 * m16n8k128/k256 b1 (32t+i, + 128), m8n8k4 f64 (b0 row t).
 */
export function fragB(dtype: MmaDtype, k: number, n: number): FragmentMap {
  return makeMap("b", dtype, k, n, (g, t, reg, elem, e) => [t * e + elem + 4 * e * reg, g]);
}

/**
 * Accumulator C/D (M x N, N = 8).
 *
 * Flattening the accumulator elements as c_i with i = reg * elemsPerReg + elem:
 *   row = groupID + 8 * (i >> 1)
 *   col = threadID_in_group * 2 + (i & 1)
 * Checked against: m16n8k* f32/s32 (c0,c1 row g; c2,c3 row g+8; col 2t + (i & 1)),
 * m16n8k* f16 (two .f16x2 registers: c0,c1 in reg 0, c2,c3 in reg 1, same coordinates),
 * m8n8k4 f64 (c0,c1 row g, col 2t + i).
 */
export function fragC(dtype: MmaDtype, m: number, n: number): FragmentMap {
  return makeMap("c", dtype, m, n, (g, t, reg, elem, e) => {
    const i = reg * e + elem;
    return [g + 8 * (i >> 1), t * 2 + (i & 1)];
  });
}
