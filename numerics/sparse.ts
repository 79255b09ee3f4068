/**
 * Structured-sparse A operands on the host (DESIGN §6.3, issue 21): compress a
 * dense matrix that has the pattern `mma.sp` needs into its kept values and
 * metadata, prune a dense matrix to that pattern, expand a compressed matrix
 * back, and the byte sizes a launcher allocates.
 *
 * ## The pattern, per element type
 *
 * The PTX ISA (9.7.14.6.1, "Sparse matrix storage", the section of the
 * `mma.sp` / `mma.sp::ordered_metadata` instructions) defines one granularity
 * per type. Along K, every row of A is cut into aligned *groups*; in each group
 * only some *units* may be nonzero:
 *
 * | dtype             | group (elements of K) | unit              | units kept | kept elements |
 * | ----------------- | --------------------- | ----------------- | ---------- | ------------- |
 * | f16, bf16, s8, u8 | 4                     | 1 element         | 2 of 4     | 2             |
 * | f32, tf32         | 2                     | 1 element         | 1 of 2     | 1             |
 * | s4, u4            | 8                     | 2 elements (pair) | 2 of 4     | 4             |
 *
 * So every type keeps half of K: the kept values of a row are `cols / 2`
 * elements. Note the 4-bit types: the ISA makes them *pairwise* 4:8 sparse (a
 * pair of adjacent elements is kept or dropped as a whole), not 2:4 over single
 * elements (DESIGN §6.3's "at most 2 nonzeros in every aligned group of 4"
 * is the rule of the 16- and 8-bit types); a pair counts as nonzero when
 * either of its elements is.
 *
 * ## Canonical metadata (the layout {@link compressSparse} writes)
 *
 * Each group has one 4-bit *nibble*, two 2-bit indices: bits 0-1 hold `i0`,
 * bits 2-3 hold `i1`, with `i0 < i1` (the ordered form that both `mma.sp` and
 * `mma.sp::ordered_metadata` accept; the ISA leaves equal indices undefined):
 *
 * - f16, bf16, s8, u8: `i0`, `i1` are the kept elements' indices in the group
 *   (0..3). Kept indices (0, 3) give `0b1100`, (1, 2) give `0b1001`.
 * - s4, u4: `i0`, `i1` are the kept *pairs'* indices in the group of 8
 *   (0..3; pair `p` is elements `2p` and `2p + 1`).
 * - f32, tf32: the ISA's 4-bit index of a 2-wide chunk, for which it defines
 *   only two values: element 0 kept is `0b0100`, element 1 kept is `0b1110`
 *   (read as two 2-bit indices they name the 16-bit halves of the kept
 *   32-bit element: halves 0 and 1, or 2 and 3).
 *
 * Nibbles are packed into little-endian u32 words row by row: a row (of the
 * `batch * rows` rows, batch first) takes `w = ceil((cols / group) / 8)`
 * words ({@link sparseMetaWordsPerRow}); the nibble of group `g` of row `r`
 * is bits `4 * (g % 8)` .. `4 * (g % 8) + 3` of word `r * w + floor(g / 8)`
 * (group 0 in the least significant bits: the order in which CUTLASS's host
 * reference, `uncompress` in cutlass/util/host_uncompress.h, reads its
 * metadata before the kernel-specific reorder; it also decodes tf32's
 * `0b0100` / `0b1110` and the 4-bit types' pair indices as above). The
 * unused nibbles at the end of a row's last word hold `0b0100`, a meaningful
 * value for every type, so a kernel that reads whole words never hands the
 * tensor core an undefined index. This module needs K to be a multiple of the
 * group only; a kernel will also want K a multiple of its `mma.sp` K (and the
 * metadata rows whole words). As bytes (what a launcher uploads): `new Uint8Array(meta.buffer)` on
 * a little-endian host, {@link sparseMetaBytes} of them.
 *
 * ## Kept values
 *
 * `[batch, rows, cols / 2]` row-major, encoded exactly as `encodeTensor`
 * (harness/device_tensor.ts) stores `dtype` (f16/bf16 rounded to nearest even,
 * 4-bit types packed two a byte, lowest index in the low nibble). Within a
 * group the kept units appear in increasing index order, groups in K order.
 *
 * A group with fewer nonzero units than it keeps still names distinct
 * indices: the kept units are its nonzero units plus its lowest-index zero
 * units, as many as needed, in increasing order (an all-zero f16 group keeps
 * (0, 1), `0b0100`; one nonzero at 3 keeps (0, 3); an all-zero tf32 chunk
 * keeps element 0). A value is zero when its stored form is zero (`-0`
 * included; a float that rounds to zero in `dtype` counts as zero; NaN is
 * nonzero).
 *
 * ## Reordered layouts: in the kernel, not in the buffer
 *
 * CUTLASS and cuSPARSELt ask the user for metadata reordered on the host
 * (interleaved rows, column swizzles) so that each thread's `mma.sp` metadata
 * register is one wide load. gemmc keeps the user's buffer canonical (the one
 * layout this module writes, {@link SparseMetaLayout} `"canonical"` in every
 * {@link SparseCompressed}) and reorders on the way into shared memory: the
 * main loop reads each k-tile's canonical words into registers and stores
 * them as *packets*, one word a lane that is its metadata register for one or
 * more k-steps (ir/mma_sparse.ts `metaPacket`, passes/lower/sparse.ts). The
 * reorder costs a few ALU operations a thread a k-tile; what it saves is the
 * per-warp assembly next to the MMAs (bench/NOTES.md 55, 58).
 *
 * ## Batches
 *
 * `opts.batch` (default 1) treats `values` as `[batch, rows, cols]`. Rows are
 * independent, so a batched matrix is laid out exactly like `batch * rows`
 * rows; the option only adds the batch index to reported positions.
 *
 * @module
 */

import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import { decodeTensor, encodeTensor, type HostArray } from "../harness/device_tensor.ts";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "./rounding.ts";
import { Rng } from "./random.ts";

/** The element types a sparse A may have (DESIGN §6.3). */
export type SparseDtype = "f16" | "bf16" | "f32" | "tf32" | "s8" | "u8" | "s4" | "u4";

/**
 * Every {@link SparseDtype}.
 *
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { SPARSE_DTYPES } from "./sparse.ts";
 * ok(SPARSE_DTYPES.includes("s4") && !SPARSE_DTYPES.includes("f64" as never));
 * ```
 */
export const SPARSE_DTYPES: readonly SparseDtype[] = Object.freeze(
  ["f16", "bf16", "f32", "tf32", "s8", "u8", "s4", "u4"] as const,
);

/**
 * Whether an element type may be a sparse A.
 *
 * @param t The element type's name.
 * @returns True for one of {@link SPARSE_DTYPES}.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { isSparseDtype } from "./sparse.ts";
 * ok(isSparseDtype("bf16") && !isSparseDtype("f64") && !isSparseDtype("b1"));
 * ```
 */
export function isSparseDtype(t: string): t is SparseDtype {
  return (SPARSE_DTYPES as readonly string[]).includes(t);
}

/** The metadata layouts this module writes; see the module's "Reordered layouts". */
export type SparseMetaLayout = "canonical";

/** The sparsity granularity of one element type (the module's table). */
export interface SparseGroup {
  /** Elements of K per group (one metadata nibble each): 4, 2 (f32/tf32) or 8 (s4/u4). */
  readonly elements: number;
  /** Elements per unit the indices count: 1, or 2 for s4/u4 (pairs). */
  readonly unit: number;
  /** Units kept per group: 2, or 1 for f32/tf32. */
  readonly keptUnits: number;
}

const GROUP_2_4: SparseGroup = Object.freeze({ elements: 4, unit: 1, keptUnits: 2 });
const GROUP_1_2: SparseGroup = Object.freeze({ elements: 2, unit: 1, keptUnits: 1 });
const GROUP_4_8_PAIRS: SparseGroup = Object.freeze({ elements: 8, unit: 2, keptUnits: 2 });

/** The nibble in unused positions of a row's last metadata word (meaningful for every type). */
const PAD_NIBBLE = 0b0100;

/**
 * The sparsity granularity of `dtype` (PTX ISA 9.7.14.6.1).
 *
 * @param dtype A sparse element type.
 * @returns Group size, unit size and units kept.
 * @throws {RangeError} For a type that cannot be sparse.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { sparseGroup } from "./sparse.ts";
 * deepEqual(sparseGroup("f16"), { elements: 4, unit: 1, keptUnits: 2 });
 * deepEqual(sparseGroup("tf32"), { elements: 2, unit: 1, keptUnits: 1 });
 * deepEqual(sparseGroup("s4"), { elements: 8, unit: 2, keptUnits: 2 });
 * ```
 */
export function sparseGroup(dtype: Dtype | string): SparseGroup {
  switch (dtype) {
    case "f16":
    case "bf16":
    case "s8":
    case "u8":
      return GROUP_2_4;
    case "f32":
    case "tf32":
      return GROUP_1_2;
    case "s4":
    case "u4":
      return GROUP_4_8_PAIRS;
  }
  throw new RangeError(
    `${dtype} cannot be a sparse operand; mma.sp takes ${SPARSE_DTYPES.join(", ")}`,
  );
}

/** A short name of the pattern, for messages. */
function patternName(dtype: string): string {
  const g = sparseGroup(dtype);
  if (g.unit === 2) return `4:8 in pairs (at most 2 nonzero pairs in every aligned group of 8)`;
  if (g.keptUnits === 1) return `1:2 (at most 1 nonzero in every aligned pair)`;
  return `2:4 (at most 2 nonzeros in every aligned group of 4)`;
}

/** Checks sizes and returns the group; throws RangeError. */
function checkShape(dtype: string, rows: number, cols: number, batch: number): SparseGroup {
  const g = sparseGroup(dtype);
  for (const [name, v] of [["rows", rows], ["cols", cols], ["batch", batch]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new RangeError(`${name} must be a non-negative integer, not ${v}`);
    }
  }
  if (cols % g.elements !== 0) {
    throw new RangeError(
      `K (cols) = ${cols} is not a multiple of ${g.elements}, the ${dtype} sparse group ` +
        `(${patternName(dtype)})`,
    );
  }
  return g;
}

/**
 * Metadata words per row in the canonical layout: `ceil((cols / group) / 8)`.
 *
 * @param cols K, a multiple of the group size.
 * @param dtype A sparse element type.
 * @returns u32 words per row.
 * @throws {RangeError} For a bad type or K.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sparseMetaWordsPerRow } from "./sparse.ts";
 * equal(sparseMetaWordsPerRow(32, "f16"), 1); // 8 groups of 4
 * equal(sparseMetaWordsPerRow(40, "f16"), 2); // 10 groups: the second word is padded
 * equal(sparseMetaWordsPerRow(16, "tf32"), 1); // 8 pairs
 * equal(sparseMetaWordsPerRow(64, "s4"), 1); // 8 groups of 8
 * ```
 */
export function sparseMetaWordsPerRow(cols: number, dtype: Dtype | string): number {
  const g = checkShape(dtype, 1, cols, 1);
  return Math.ceil(cols / g.elements / 8);
}

/**
 * Bytes of canonical metadata for a `[batch, rows, cols]` sparse A (the
 * `A_meta` buffer): `batch * rows * sparseMetaWordsPerRow(cols) * 4`.
 *
 * @param rows M.
 * @param cols K (dense), a multiple of the group size.
 * @param dtype A sparse element type.
 * @param batch Batch count (default 1).
 * @returns The byte size.
 * @throws {RangeError} For a bad type or size.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sparseMetaBytes } from "./sparse.ts";
 * equal(sparseMetaBytes(128, 64, "f16"), 128 * 2 * 4);
 * ```
 */
export function sparseMetaBytes(
  rows: number,
  cols: number,
  dtype: Dtype | string,
  batch = 1,
): number {
  checkShape(dtype, rows, cols, batch);
  return batch * rows * sparseMetaWordsPerRow(cols, dtype) * 4;
}

/**
 * Bytes of the kept values of a `[batch, rows, cols]` sparse A (A's buffer,
 * `[batch, rows, cols / 2]` elements as `dtype` is stored).
 *
 * @param rows M.
 * @param cols K (dense), a multiple of the group size.
 * @param dtype A sparse element type.
 * @param batch Batch count (default 1).
 * @returns The byte size.
 * @throws {RangeError} For a bad type or size.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sparseValueBytes } from "./sparse.ts";
 * equal(sparseValueBytes(128, 64, "f16"), 128 * 32 * 2);
 * equal(sparseValueBytes(16, 64, "s4"), 16 * 32 / 2);
 * ```
 */
export function sparseValueBytes(
  rows: number,
  cols: number,
  dtype: Dtype | string,
  batch = 1,
): number {
  checkShape(dtype, rows, cols, batch);
  return (batch * rows * (cols / 2) * DTYPE_INFO[dtype as SparseDtype].bits) / 8;
}

/**
 * Where the nibble of group `group` of row `row` lies in canonical metadata.
 *
 * @param cols K (dense).
 * @param dtype A sparse element type.
 * @param row The row, counting all rows of all batches (`b * rows + m`).
 * @param group The group along K (`k / group size`).
 * @returns The u32 word's index and the nibble's bit shift in it.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { sparseMetaPosition } from "./sparse.ts";
 * deepEqual(sparseMetaPosition(40, "f16", 3, 9), { word: 3 * 2 + 1, shift: 4 });
 * ```
 */
export function sparseMetaPosition(
  cols: number,
  dtype: Dtype | string,
  row: number,
  group: number,
): { word: number; shift: number } {
  const w = sparseMetaWordsPerRow(cols, dtype);
  return { word: row * w + (group >>> 3), shift: 4 * (group & 7) };
}

/** One aligned group that breaks the pattern. */
export interface SparseViolation {
  /** The batch index (0 without a batch). */
  readonly batch: number;
  /** The row (M index) within its batch. */
  readonly row: number;
  /** The group along K (its first column is `group * sparseGroup(dtype).elements`). */
  readonly group: number;
  /** The group's first column (K index). */
  readonly col: number;
  /** Nonzero units in the group (elements; pairs for s4/u4). */
  readonly nonzeros: number;
}

/** What {@link checkSparsePattern} finds. */
export interface SparsePatternReport {
  /** True when every group has the pattern. */
  readonly ok: boolean;
  /** Groups that break the pattern. */
  readonly count: number;
  /** The first of them, in storage order (at most `opts.limit`, default 8). */
  readonly first: readonly SparseViolation[];
}

/**
 * Thrown by {@link compressSparse} (without `prune`) when the matrix breaks
 * the pattern; the message names the pattern, the count and the first
 * positions.
 */
export class SparsePatternError extends Error {
  /** The element type. */
  readonly dtype: SparseDtype;
  /** Groups that break the pattern. */
  readonly count: number;
  /** The first of them, in storage order. */
  readonly violations: readonly SparseViolation[];
  /**
   * An error for the groups a check found.
   *
   * @param dtype The element type.
   * @param report What the check found.
   */
  constructor(dtype: SparseDtype, report: SparsePatternReport) {
    const unit = sparseGroup(dtype).unit === 2 ? "nonzero pairs" : "nonzeros";
    const where = report.first.map((v) =>
      `${v.batch ? `batch ${v.batch} ` : ""}row ${v.row} group ${v.group} ` +
      `(cols ${v.col}..${v.col + sparseGroup(dtype).elements - 1}): ${v.nonzeros} ${unit}`
    );
    super(
      `A (${dtype}) breaks the sparse pattern ${patternName(dtype)} along K in ` +
        `${report.count} group${report.count === 1 ? "" : "s"}; first: ${where.join("; ")}` +
        (report.count > report.first.length ? "; ..." : "") +
        ` (prune: true keeps the largest magnitudes instead)`,
    );
    this.name = "SparsePatternError";
    this.dtype = dtype;
    this.count = report.count;
    this.violations = report.first;
  }
}

/** Options of {@link checkSparsePattern}, {@link compressSparse} and {@link pruneSparse}. */
export interface SparseShapeOptions {
  /** Batch count: `values` is `[batch, rows, cols]` (default 1). */
  readonly batch?: number;
}

/** Options of {@link checkSparsePattern}. */
export interface SparseCheckOptions extends SparseShapeOptions {
  /** Violations to list (default 8). */
  readonly limit?: number;
}

/** Options of {@link compressSparse}. */
export interface SparseCompressOptions extends SparseShapeOptions {
  /**
   * Prune to the pattern instead of refusing a matrix that breaks it: each
   * group keeps its largest-magnitude units (as stored in `dtype`; a pair's
   * magnitude is the sum of its two; NaN ranks highest; ties go to the lower
   * index), the rest become zero. Default false.
   */
  readonly prune?: boolean;
}

/** A compressed sparse A: what a launcher uploads, and its shape. */
export interface SparseCompressed {
  /** The element type. */
  readonly dtype: SparseDtype;
  /** Batch count. */
  readonly batch: number;
  /** M. */
  readonly rows: number;
  /** K of the dense matrix. */
  readonly cols: number;
  /** Kept values, `[batch, rows, cols / 2]` encoded as `dtype` is stored ({@link sparseValueBytes}). */
  readonly values: Uint8Array;
  /** Canonical metadata ({@link sparseMetaBytes} bytes). */
  readonly meta: Uint32Array;
  /** The metadata's layout. */
  readonly metaLayout: SparseMetaLayout;
  /** Nonzero elements that pruning set to zero (0 without `prune`). */
  readonly pruned: number;
}

/** A value as `dtype` stores it (integers validated by the caller). */
function storedValue(dtype: SparseDtype): (v: number) => number {
  switch (dtype) {
    case "f16":
      return (v) => f16BitsToF32(f32ToF16Bits(v));
    case "bf16":
      return (v) => bf16BitsToF32(f32ToBf16Bits(v));
    case "f32":
    case "tf32":
      return Math.fround;
    default:
      return (v) => v;
  }
}

/** Throws RangeError unless every value fits an integer `dtype` (the encoder's rule). */
function checkIntegers(values: ArrayLike<number>, dtype: SparseDtype, cols: number): void {
  const info = DTYPE_INFO[dtype];
  if (info.float) return;
  const lo = info.signed ? -(2 ** (info.bits - 1)) : 0;
  const hi = info.signed ? 2 ** (info.bits - 1) - 1 : 2 ** info.bits - 1;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!Number.isInteger(v) || v < lo || v > hi) {
      const r = cols === 0 ? 0 : Math.floor(i / cols);
      throw new RangeError(
        `Element ${i} (row ${r}, col ${i - r * cols}) is ${v}: not a ${dtype} ` +
          `(an integer in ${lo}..${hi})`,
      );
    }
  }
}

/** Validates the arguments shared by the dense-side functions. */
function prepare(
  values: ArrayLike<number>,
  dtype: Dtype | string,
  rows: number,
  cols: number,
  batch: number,
): SparseGroup {
  const g = checkShape(dtype, rows, cols, batch);
  const n = batch * rows * cols;
  if (values.length !== n) {
    throw new RangeError(
      `${values.length} values given for ${batch > 1 ? `${batch} x ` : ""}${rows} x ${cols} ` +
        `(${n} expected)`,
    );
  }
  checkIntegers(values, dtype as SparseDtype, cols);
  return g;
}

/**
 * The nonzero-unit mask of one group: bit `u` set when unit `u` holds a
 * nonzero stored value.
 */
function nonzeroMask(
  stored: Float64Array,
  base: number,
  g: SparseGroup,
): number {
  const units = g.elements / g.unit;
  let mask = 0;
  for (let u = 0; u < units; u++) {
    for (let e = 0; e < g.unit; e++) {
      if (stored[base + u * g.unit + e] !== 0) {
        mask |= 1 << u;
        break;
      }
    }
  }
  return mask;
}

/** Set bits of a small mask. */
function popcount(m: number): number {
  let c = 0;
  for (; m; m &= m - 1) c++;
  return c;
}

/** The values as stored, one f64 each. */
function storedAll(values: ArrayLike<number>, dtype: SparseDtype): Float64Array {
  const f = storedValue(dtype);
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = f(values[i]!);
  return out;
}

/**
 * Finds the groups of a dense `[batch, rows, cols]` row-major matrix that
 * break `dtype`'s sparse pattern (zero as stored; see the module).
 *
 * @param values The dense elements.
 * @param dtype A sparse element type.
 * @param rows M.
 * @param cols K, a multiple of the group size.
 * @param opts `batch`, and `limit` (violations to list, default 8).
 * @returns Whether it has the pattern, how many groups break it and the first of them.
 * @throws {RangeError} For a bad type, size or integer value.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { checkSparsePattern } from "./sparse.ts";
 * const r = checkSparsePattern([1, 2, 3, 0, 0, 5, 0, 6], "f16", 1, 8);
 * equal(r.count, 1);
 * deepEqual(r.first[0], { batch: 0, row: 0, group: 0, col: 0, nonzeros: 3 });
 * ```
 */
export function checkSparsePattern(
  values: ArrayLike<number>,
  dtype: Dtype | string,
  rows: number,
  cols: number,
  opts: SparseCheckOptions = {},
): SparsePatternReport {
  const batch = opts.batch ?? 1;
  const limit = opts.limit ?? 8;
  const g = prepare(values, dtype, rows, cols, batch);
  const stored = storedAll(values, dtype as SparseDtype);
  const groups = cols / g.elements;
  const first: SparseViolation[] = [];
  let count = 0;
  for (let r = 0; r < batch * rows; r++) {
    for (let q = 0; q < groups; q++) {
      const nz = popcount(nonzeroMask(stored, r * cols + q * g.elements, g));
      if (nz <= g.keptUnits) continue;
      count++;
      if (first.length < limit) {
        first.push({
          batch: Math.floor(r / rows),
          row: r % rows,
          group: q,
          col: q * g.elements,
          nonzeros: nz,
        });
      }
    }
  }
  return { ok: count === 0, count, first };
}

/** The magnitude pruning ranks a unit by (NaN highest). */
function unitMagnitude(stored: Float64Array, at: number, unit: number): number {
  let m = 0;
  for (let e = 0; e < unit; e++) {
    const v = Math.abs(stored[at + e]!);
    m += Number.isNaN(v) ? Infinity : v;
  }
  return m;
}

/**
 * Prunes a dense `[batch, rows, cols]` row-major matrix to `dtype`'s sparse
 * pattern: in every group the largest-magnitude units stay (magnitudes as
 * stored in `dtype`; a pair's is the sum of its two; NaN ranks highest; ties
 * go to the lower index), the others become 0. A matrix that has the pattern
 * comes back unchanged (as given, not rounded).
 *
 * @param values The dense elements.
 * @param dtype A sparse element type.
 * @param rows M.
 * @param cols K, a multiple of the group size.
 * @param opts `batch`.
 * @returns The pruned dense matrix (the values as given, unrounded) and how
 *   many nonzero elements were set to zero.
 * @throws {RangeError} For a bad type, size or integer value.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { pruneSparse } from "./sparse.ts";
 * // Three magnitudes of 3: the two lower indices stay.
 * const p = pruneSparse([3, 1, -3, 3], "f16", 1, 4);
 * deepEqual([...p.values], [3, 0, -3, 0]);
 * equal(p.zeroed, 2);
 * ```
 */
export function pruneSparse(
  values: ArrayLike<number>,
  dtype: Dtype | string,
  rows: number,
  cols: number,
  opts: SparseShapeOptions = {},
): { values: Float64Array; zeroed: number } {
  const batch = opts.batch ?? 1;
  const g = prepare(values, dtype, rows, cols, batch);
  const stored = storedAll(values, dtype as SparseDtype);
  const out = Float64Array.from(values);
  const units = g.elements / g.unit;
  const order: number[] = [];
  const mags: number[] = [];
  let zeroed = 0;
  for (let base = 0; base < out.length; base += g.elements) {
    order.length = 0;
    mags.length = 0;
    for (let u = 0; u < units; u++) {
      order.push(u);
      mags.push(unitMagnitude(stored, base + u * g.unit, g.unit));
    }
    // Largest magnitude first, the lower index first among equals.
    order.sort((a, b) => (mags[b]! - mags[a]!) || a - b);
    for (let k = g.keptUnits; k < units; k++) {
      const at = base + order[k]! * g.unit;
      for (let e = 0; e < g.unit; e++) {
        if (stored[at + e] !== 0) zeroed++;
        out[at + e] = 0;
      }
    }
  }
  return { values: out, zeroed };
}

/** The kept units of a group from its nonzero mask: the nonzeros, then the lowest zeros. */
function keptUnits(mask: number, g: SparseGroup): number[] {
  const units = g.elements / g.unit;
  const kept: number[] = [];
  let fill = g.keptUnits - popcount(mask);
  for (let u = 0; u < units; u++) {
    if (mask & (1 << u)) kept.push(u);
    else if (fill > 0) {
      kept.push(u);
      fill--;
    }
  }
  return kept;
}

/** A group's nibble from its kept units (in increasing order). */
function encodeNibble(kept: readonly number[], g: SparseGroup): number {
  if (g.keptUnits === 1) return kept[0] === 0 ? 0b0100 : 0b1110;
  return kept[0]! | (kept[1]! << 2);
}

/** A group's kept units from its nibble, or null for a value that is not meaningful. */
function decodeNibble(n: number, g: SparseGroup): number[] | null {
  if (g.keptUnits === 1) return n === 0b0100 ? [0] : n === 0b1110 ? [1] : null;
  const i0 = n & 3;
  const i1 = n >>> 2;
  return i0 < i1 ? [i0, i1] : null;
}

/**
 * Compresses a dense `[batch, rows, cols]` row-major sparse A into its kept
 * values and canonical metadata (the module's format). Without `prune` the
 * matrix must have the pattern; with `prune: true` it is first pruned to it
 * ({@link pruneSparse}) and `pruned` counts the nonzero elements dropped.
 *
 * @param values The dense elements (integers in range for integer types).
 * @param dtype A sparse element type.
 * @param rows M.
 * @param cols K, a multiple of the group size (4; 2 for f32/tf32; 8 for s4/u4).
 * @param opts `prune`, `batch`.
 * @returns The kept values (encoded), the metadata and the shape.
 * @throws {SparsePatternError} Without `prune`, when a group has too many
 *   nonzeros (the error lists the first positions and the count).
 * @throws {RangeError} For a bad type, size or integer value.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { compressSparse, decompressSparse } from "./sparse.ts";
 * // One f16 row of 8: kept indices (0, 3) and (1, 2).
 * const c = compressSparse([1.5, 0, 0, -2, 0, 3, 4, 0], "f16", 1, 8);
 * equal(c.meta[0], 0x4444449c); // 0b1100, 0b1001, then padding 0b0100
 * equal([...decompressSparse(c, "f16", 1, 8)].join(), "1.5,0,0,-2,0,3,4,0");
 * ```
 */
export function compressSparse(
  values: ArrayLike<number>,
  dtype: Dtype | string,
  rows: number,
  cols: number,
  opts: SparseCompressOptions = {},
): SparseCompressed {
  const batch = opts.batch ?? 1;
  const g = prepare(values, dtype, rows, cols, batch);
  const t = dtype as SparseDtype;
  let dense: ArrayLike<number> = values;
  let pruned = 0;
  if (opts.prune) {
    const p = pruneSparse(values, t, rows, cols, { batch });
    dense = p.values;
    pruned = p.zeroed;
  } else {
    const report = checkSparsePattern(values, t, rows, cols, { batch });
    if (!report.ok) throw new SparsePatternError(t, report);
  }
  const stored = storedAll(dense, t);
  const allRows = batch * rows;
  const groups = cols / g.elements;
  const wpr = Math.ceil(groups / 8);
  const meta = new Uint32Array(allRows * wpr);
  const kept = new Float64Array((allRows * cols) / 2);
  let k = 0;
  for (let r = 0; r < allRows; r++) {
    for (let w = 0; w < wpr; w++) {
      let word = 0;
      for (let j = 0; j < 8; j++) {
        const q = w * 8 + j;
        let nib = PAD_NIBBLE;
        if (q < groups) {
          const base = r * cols + q * g.elements;
          const units = keptUnits(nonzeroMask(stored, base, g), g);
          nib = encodeNibble(units, g);
          for (const u of units) {
            for (let e = 0; e < g.unit; e++) kept[k++] = dense[base + u * g.unit + e]!;
          }
        }
        word |= nib << (4 * j);
      }
      meta[r * wpr + w] = word >>> 0;
    }
  }
  return {
    dtype: t,
    batch,
    rows,
    cols,
    values: encodeTensor(kept, t),
    meta,
    metaLayout: "canonical",
    pruned,
  };
}

/**
 * Expands a compressed sparse A (kept values and canonical metadata) back
 * into the dense `[batch, rows, cols]` row-major matrix: the exact inverse of
 * {@link compressSparse} for a matrix that had the pattern (each element as
 * `dtype` stores it; dropped positions are +0).
 *
 * @param compressed The kept values' bytes and the metadata (a
 *   {@link SparseCompressed}, or buffers downloaded from a device).
 * @param dtype A sparse element type.
 * @param rows M.
 * @param cols K of the dense matrix.
 * @param opts `batch`.
 * @returns The dense elements, typed as `decodeTensor` returns `dtype`.
 * @throws {RangeError} For a bad type or size, buffers that are too short, or
 *   a metadata nibble that is not meaningful for `dtype`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { decompressSparse } from "./sparse.ts";
 * // tf32, one row of 4: element 1 of the first pair (0b1110), element 0 of the second (0b0100).
 * const values = new Uint8Array(new Float32Array([2.5, -1]).buffer);
 * const dense = decompressSparse({ values, meta: new Uint32Array([0x4444444e]) }, "tf32", 1, 4);
 * equal([...dense].join(), "0,2.5,-1,0");
 * ```
 */
export function decompressSparse(
  compressed: { readonly values: Uint8Array; readonly meta: Uint32Array },
  dtype: Dtype | string,
  rows: number,
  cols: number,
  opts: SparseShapeOptions = {},
): HostArray {
  const batch = opts.batch ?? 1;
  const g = checkShape(dtype, rows, cols, batch);
  const t = dtype as SparseDtype;
  const allRows = batch * rows;
  const groups = cols / g.elements;
  const wpr = Math.ceil(groups / 8);
  if (compressed.meta.length < allRows * wpr) {
    throw new RangeError(
      `the metadata holds ${compressed.meta.length} words; ${allRows * wpr} expected ` +
        `(${allRows} rows x ${wpr})`,
    );
  }
  const kept = decodeTensor(compressed.values, t, (allRows * cols) / 2);
  const Ctor = kept.constructor as new (n: number) => HostArray;
  const out = new Ctor(allRows * cols);
  let k = 0;
  for (let r = 0; r < allRows; r++) {
    for (let q = 0; q < groups; q++) {
      const nib = (compressed.meta[r * wpr + (q >>> 3)]! >>> (4 * (q & 7))) & 0xf;
      const units = decodeNibble(nib, g);
      if (units === null) {
        throw new RangeError(
          `metadata of row ${r % rows}${batch > 1 ? ` (batch ${Math.floor(r / rows)})` : ""}, ` +
            `group ${q}: 0b${nib.toString(2).padStart(4, "0")} is not a meaningful ${t} index`,
        );
      }
      const base = r * cols + q * g.elements;
      for (const u of units) {
        for (let e = 0; e < g.unit; e++) out[base + u * g.unit + e] = kept[k++]!;
      }
    }
  }
  return out;
}

/** Options of {@link randomSparse}. */
export interface RandomSparseOptions extends SparseShapeOptions {
  /** The generator's seed (default 1). */
  readonly seed?: number;
}

/** A random nonzero value of `dtype` that is not ±1 as stored. */
function randomNonzero(rng: Rng, dtype: SparseDtype): number {
  const info = DTYPE_INFO[dtype];
  const store = storedValue(dtype);
  for (;;) {
    let v: number;
    if (info.float) v = (rng.next() < 0.5 ? -1 : 1) * (0.0625 + rng.next() * 4);
    else {
      const lo = info.signed ? -(2 ** (info.bits - 1)) : 0;
      v = rng.int(lo, 2 ** (info.bits - (info.signed ? 1 : 0)) - 1);
    }
    const s = store(v);
    if (s !== 0 && Math.abs(s) !== 1) return v;
  }
}

/**
 * A random dense `[batch, rows, cols]` row-major matrix with `dtype`'s
 * pattern: every group has exactly as many nonzero units as it keeps, at
 * random positions, with random values (never 0 or ±1 as stored; floats of
 * magnitude 1/16..4 with either sign, integers over the type's range).
 * Deterministic for a seed (numerics/random.ts).
 *
 * @param dtype A sparse element type.
 * @param rows M.
 * @param cols K, a multiple of the group size.
 * @param opts `seed` (default 1), `batch`.
 * @returns The dense elements (the values as drawn, not rounded to `dtype`).
 * @throws {RangeError} For a bad type or size.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { checkSparsePattern, randomSparse } from "./sparse.ts";
 * const a = randomSparse("bf16", 4, 16, { seed: 7 });
 * ok(checkSparsePattern(a, "bf16", 4, 16).ok);
 * ok(a.filter((v) => v !== 0).length === 32);
 * ```
 */
export function randomSparse(
  dtype: Dtype | string,
  rows: number,
  cols: number,
  opts: RandomSparseOptions = {},
): Float64Array {
  const batch = opts.batch ?? 1;
  const g = checkShape(dtype, rows, cols, batch);
  const t = dtype as SparseDtype;
  const rng = new Rng(opts.seed ?? 1);
  const out = new Float64Array(batch * rows * cols);
  const units = g.elements / g.unit;
  for (let base = 0; base < out.length; base += g.elements) {
    // A random subset of keptUnits units: a partial Fisher-Yates shuffle.
    const perm = Array.from({ length: units }, (_, i) => i);
    for (let i = 0; i < g.keptUnits; i++) {
      const j = rng.int(i, units - 1);
      [perm[i], perm[j]] = [perm[j]!, perm[i]!];
    }
    for (let i = 0; i < g.keptUnits; i++) {
      for (let e = 0; e < g.unit; e++) out[base + perm[i]! * g.unit + e] = randomNonzero(rng, t);
    }
  }
  return out;
}
