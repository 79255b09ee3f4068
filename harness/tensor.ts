/**
 * Dense tensors as the kernel ABI stores them (docs/ARCHITECTURE.md §3): bytes in the
 * declared layout, batch outermost, sub-byte types packed along the
 * contiguous dimension with the lowest index in the least significant bits.
 * Element codecs and index arithmetic, shared by the reference GEMM, the
 * input generator and the GPU runner.
 *
 * @module
 */

import type { DimRef, TensorParam } from "../ir/gemm.ts";
import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import {
  bf16BitsToF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  fp8ToNumber,
  numberToFp8,
} from "../numerics/mod.ts";
import { sparseMetaBytes, sparseMetaWordsPerRow, sparseValueBytes } from "../numerics/sparse.ts";

/** A tensor's concrete shape and strides (in elements). */
export interface TensorShape {
  readonly dims: readonly number[];
  /** Elements of the storage: the dense count, or a strided view's footprint (its last
   * element's index + 1; 0 for an empty view). */
  readonly elements: number;
  readonly bytes: number;
  /** Element index of a multi-index in declared dimension order. */
  readonly index: (ix: readonly number[]) => number;
  /** Whether the view covers its storage exactly (no `strides`, or dense values). */
  readonly dense: boolean;
}

/**
 * A dimension's value at runtime sizes.
 *
 * @param d The dimension.
 * @param sizes Runtime sizes by dimension name.
 * @returns Its value.
 * @throws {Error} For a symbolic dimension with no size.
 */
export function dimValue(d: DimRef, sizes: Readonly<Record<string, number>>): number {
  if (d.kind === "const") return d.value;
  const v = sizes[d.name];
  if (v === undefined) throw new Error(`Missing size for dimension "${d.name}"`);
  return v;
}

/**
 * A tensor's strides in elements at runtime sizes, outermost first, one per dimension
 * (the contiguous one's 1): the declared `strides(...)` (DESIGN §6.1; a stride
 * parameter's value comes with the sizes), else dense.
 *
 * @param t The parameter.
 * @param sizes Runtime sizes (and stride values) by name.
 * @returns The strides of `t.dims`, in declared order.
 */
export function elementStrides(
  t: TensorParam,
  sizes: Readonly<Record<string, number>>,
): number[] {
  const dims = t.dims.map((d) => dimValue(d, sizes));
  const r = dims.length;
  if (r === 1) return [1];
  // A batched vector (`bias[l, n]`, declared [L, N]) is a row-major matrix:
  // the checker refuses "col" on it (E0117), as the lowering's `vectorBase`
  // reads it batch outermost.
  const d0 = dims[r - 2]!;
  const d1 = dims[r - 1]!;
  const given = t.strides?.map((d) => dimValue(d, sizes));
  const ld = given?.[given.length - 1] ?? (t.layout === "row" ? d1 : d0);
  const mat = t.layout === "row" ? [ld, 1] : [1, ld];
  if (r === 2) return mat;
  return [given?.[0] ?? d0 * d1, ...mat];
}

/** The sizes of a sparse A, or of its metadata (DESIGN §6.3): batch, M and the dense K. */
export interface SparseExtents {
  /** The batch count (1 without a batch dimension). */
  readonly batch: number;
  /** M: the lines of A. */
  readonly rows: number;
  /** K of the dense matrix: the contiguous dimension in the declared layout. */
  readonly cols: number;
}

/**
 * The extents of a sparse A or of its `A_meta` parameter (ir/gemm.ts `Param`: both have
 * A's logical dims and layout, K the contiguous dimension) at runtime sizes.
 *
 * @param t A sparse A (`sparse: true`) or its metadata (role `A_meta`).
 * @param sizes Runtime sizes by name.
 * @returns Batch, rows (M) and cols (K).
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { sparseExtents } from "./tensor.ts";
 * const k = check("kernel k { A: f16[L, M, K] sparse\n B: f16[L, K, N] col\n D: f32[L, M, N]\n" +
 *   " D[l, m, n] = A[l, m, k] * B[l, k, n] }").kernels[0]!;
 * const a = k.params[0]!;
 * if (a.kind === "tensor") deepEqual(sparseExtents(a, { L: 2, M: 3, K: 8 }), { batch: 2, rows: 3, cols: 8 });
 * ```
 */
export function sparseExtents(
  t: TensorParam,
  sizes: Readonly<Record<string, number>>,
): SparseExtents {
  const dims = t.dims.map((d) => dimValue(d, sizes));
  const r = dims.length;
  const [d0, d1] = [dims[r - 2]!, dims[r - 1]!];
  return {
    batch: r === 3 ? dims[0]! : 1,
    rows: t.layout === "row" ? d0 : d1,
    cols: t.layout === "row" ? d1 : d0,
  };
}

/**
 * The shape of a sparse A's buffer: its kept values, the contiguous K halved
 * (`[batch?, M, K / 2]` in the declared layout), or of its metadata: canonical u32
 * words (numerics/sparse.ts), `[batch?, M, words per row]` row-major, whose
 * `elements` are words (not elements of the parameter's dtype).
 */
function sparseShape(t: TensorParam, sizes: Readonly<Record<string, number>>): TensorShape {
  const { batch, rows, cols } = sparseExtents(t, sizes);
  if (t.role === "A_meta") {
    const w = sparseMetaWordsPerRow(cols, t.dtype);
    const dims = t.dims.length === 3 ? [batch, rows, w] : [rows, w];
    const st = t.dims.length === 3 ? [rows * w, w, 1] : [w, 1];
    return {
      dims,
      elements: batch * rows * w,
      bytes: sparseMetaBytes(rows, cols, t.dtype, batch),
      index: (ix) => ix.reduce((a, v, j) => a + v * st[j]!, 0),
      dense: true,
    };
  }
  // Throws a RangeError naming the group when K is not a multiple of it.
  const bytes = sparseValueBytes(rows, cols, t.dtype, batch);
  const r = t.dims.length;
  const kAt = t.layout === "row" ? r - 1 : r - 2;
  const { sparse: _, ...dense } = t;
  const kept = tensorShape(
    { ...dense, dims: t.dims.map((d, i) => i === kAt ? { kind: "const", value: cols / 2 } : d) },
    sizes,
  );
  if (kept.bytes !== bytes) throw new Error(`Sparse "${t.name}": ${kept.bytes} != ${bytes} bytes`);
  return kept;
}

/**
 * The concrete shape of a tensor parameter for given runtime sizes. A sparse A
 * (DESIGN §6.3) has the shape of its kept values, `[batch?, M, K / 2]`
 * (`sparseValueBytes`); its `A_meta` that of its metadata words (`sparseMetaBytes`).
 *
 * @param t The parameter.
 * @param sizes Runtime sizes (and stride values) by name.
 * @returns Its shape, byte size and index function.
 * @throws {RangeError} For a sparse A (or its metadata) whose K is not a multiple of its
 *   group (numerics/sparse.ts `sparseGroup`).
 */
export function tensorShape(t: TensorParam, sizes: Readonly<Record<string, number>>): TensorShape {
  if (t.sparse === true || t.role === "A_meta") return sparseShape(t, sizes);
  const dims = t.dims.map((d) => dimValue(d, sizes));
  const count = dims.reduce((a, b) => a * b, 1);
  const bits = DTYPE_INFO[t.dtype].bits;
  const st = elementStrides(t, sizes);
  const index = (ix: readonly number[]) => {
    let i = 0;
    for (let j = 0; j < ix.length; j++) i += ix[j]! * st[j]!;
    return i;
  };
  const elements = count === 0 ? 0 : index(dims.map((d) => d - 1)) + 1;
  const bytes = Math.ceil((elements * bits) / 8);
  return { dims, elements, bytes, index, dense: elements === count };
}

/**
 * Calls `f` with the storage index of every element of a tensor's view, in
 * declared index order (the last index fastest).
 *
 * @param sh The tensor's shape.
 * @param f Called per element.
 */
export function forEachInView(sh: TensorShape, f: (i: number) => void): void {
  const r = sh.dims.length;
  const ix = new Array<number>(r).fill(0);
  if (sh.dims.some((d) => d === 0)) return;
  for (;;) {
    f(sh.index(ix));
    let j = r - 1;
    while (j >= 0 && ++ix[j]! === sh.dims[j]!) ix[j--] = 0;
    if (j < 0) return;
  }
}

/**
 * Reads element `i` (in storage order) as a number: floats as their value,
 * integers as their signed or unsigned value, b1 as 0 or 1.
 *
 * @param bytes The storage.
 * @param t The element type.
 * @param i The element index.
 * @returns The value.
 */
export function readElem(bytes: Uint8Array, t: Dtype, i: number): number {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (t) {
    case "f64":
      return dv.getFloat64(i * 8, true);
    case "f32":
    case "tf32":
      return dv.getFloat32(i * 4, true);
    case "f16":
      return f16BitsToF32(dv.getUint16(i * 2, true));
    case "bf16":
      return bf16BitsToF32(dv.getUint16(i * 2, true));
    case "e4m3":
    case "e5m2":
      return fp8ToNumber(bytes[i]!, t);
    case "s32":
      return dv.getInt32(i * 4, true);
    case "s8":
      return dv.getInt8(i);
    case "u8":
      return dv.getUint8(i);
    case "s4": {
      const v = (bytes[i >> 1]! >> ((i & 1) * 4)) & 15;
      return v >= 8 ? v - 16 : v;
    }
    case "u4":
      return (bytes[i >> 1]! >> ((i & 1) * 4)) & 15;
    case "b1":
      return (bytes[i >> 3]! >> (i & 7)) & 1;
  }
}

/**
 * Writes element `i` (in storage order); floats are rounded to the type
 * (round to nearest even), integers must be in range.
 *
 * @param bytes The storage.
 * @param t The element type.
 * @param i The element index.
 * @param v The value.
 */
export function writeElem(bytes: Uint8Array, t: Dtype, i: number, v: number): void {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (t) {
    case "f64":
      return dv.setFloat64(i * 8, v, true);
    case "f32":
    case "tf32":
      return dv.setFloat32(i * 4, v, true);
    case "f16":
      return dv.setUint16(i * 2, f32ToF16Bits(v), true);
    case "bf16":
      return dv.setUint16(i * 2, f32ToBf16Bits(v), true);
    case "e4m3":
    case "e5m2":
      bytes[i] = numberToFp8(v, t);
      return;
    case "s32":
      return dv.setInt32(i * 4, v, true);
    case "s8":
      return dv.setInt8(i, v);
    case "u8":
      return dv.setUint8(i, v);
    case "s4":
    case "u4": {
      const sh = (i & 1) * 4;
      bytes[i >> 1] = (bytes[i >> 1]! & ~(15 << sh)) | ((v & 15) << sh);
      return;
    }
    case "b1": {
      const sh = i & 7;
      bytes[i >> 3] = (bytes[i >> 3]! & ~(1 << sh)) | ((v & 1) << sh);
      return;
    }
  }
}
