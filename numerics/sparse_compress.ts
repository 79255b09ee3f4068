/**
 * Structured-sparse A's values on the host (DESIGN §6.3, issue 21): find the
 * groups of a dense matrix that break the pattern `mma.sp` needs
 * ({@link checkSparsePattern}), prune a dense matrix to that pattern
 * ({@link pruneSparse}), compress it into its kept values and canonical
 * metadata ({@link compressSparse}), expand a compressed matrix back
 * ({@link decompressSparse}), and draw a random matrix with the pattern
 * ({@link randomSparse}). The format (each type's pattern, the metadata
 * layout, the byte sizes) is numerics/sparse.ts's, described in its module
 * documentation.
 *
 * ## The kept units of a group
 *
 * A group with fewer nonzero units than it keeps still names distinct
 * indices: the kept units are its nonzero units plus its lowest-index zero
 * units, as many as needed, in increasing order (an all-zero f16 group keeps
 * (0, 1), `0b0100`; one nonzero at 3 keeps (0, 3); an all-zero tf32 chunk
 * keeps element 0). A value is zero when its stored form is zero (`-0`
 * included; a float that rounds to zero in `dtype` counts as zero; NaN is
 * nonzero).
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
import {
  checkShape,
  patternName,
  type SparseCompressed,
  type SparseDtype,
  type SparseGroup,
  sparseGroup,
} from "./sparse.ts";

/** The nibble in unused positions of a row's last metadata word (meaningful for every type). */
const PAD_NIBBLE = 0b0100;

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
 * import { checkSparsePattern } from "./sparse_compress.ts";
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
 * import { pruneSparse } from "./sparse_compress.ts";
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
 * values and canonical metadata (numerics/sparse.ts's format). Without `prune` the
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
 * import { compressSparse, decompressSparse } from "./sparse_compress.ts";
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
 * import { decompressSparse } from "./sparse_compress.ts";
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
 * import { checkSparsePattern, randomSparse } from "./sparse_compress.ts";
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
