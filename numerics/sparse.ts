/**
 * Structured-sparse A operands on the host (DESIGN §6.3, issue 21): the format
 * `mma.sp` needs, without touching values. The element types a sparse A may
 * have, each type's pattern ({@link sparseGroup}), the canonical metadata
 * layout and where a group's nibble lies in it ({@link sparseMetaPosition}),
 * the byte sizes a launcher allocates ({@link sparseValueBytes},
 * {@link sparseMetaBytes}) and the shape of a compressed A
 * ({@link SparseCompressed}): what the compiler and the launchers read.
 * Checking, pruning, compressing and expanding dense values, and random
 * matrices with the pattern, are numerics/sparse_compress.ts.
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
 * ## Canonical metadata (the layout `compressSparse` writes)
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
 * ## Reordered layouts: in the kernel, not in the buffer
 *
 * CUTLASS and cuSPARSELt ask the user for metadata reordered on the host
 * (interleaved rows, column swizzles) so that each thread's `mma.sp` metadata
 * register is one wide load. gemmc keeps the user's buffer canonical (the one
 * layout numerics/sparse_compress.ts writes, {@link SparseMetaLayout}
 * `"canonical"` in every {@link SparseCompressed}) and reorders on the way into
 * shared memory: the main loop reads each k-tile's canonical words into
 * registers and stores them as *packets*, one word a lane that is its metadata
 * register for one or more k-steps (ir/mma_sparse.ts `metaPacket`,
 * passes/lower/sparse.ts). The reorder costs a few ALU operations a thread a
 * k-tile; what it saves is the per-warp assembly next to the MMAs
 * (bench/NOTES.md 55, 58).
 *
 * @module
 */

import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";

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

/** The metadata layouts gemmc writes; see the module's "Reordered layouts". */
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

/** A short name of the pattern, for messages (numerics/sparse_compress.ts's too). */
export function patternName(dtype: string): string {
  const g = sparseGroup(dtype);
  if (g.unit === 2) return `4:8 in pairs (at most 2 nonzero pairs in every aligned group of 8)`;
  if (g.keptUnits === 1) return `1:2 (at most 1 nonzero in every aligned pair)`;
  return `2:4 (at most 2 nonzeros in every aligned group of 4)`;
}

/** Checks sizes and returns the group; throws RangeError (numerics/sparse_compress.ts's too). */
export function checkShape(dtype: string, rows: number, cols: number, batch: number): SparseGroup {
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
