/**
 * Compares a kernel's output with the reference: integers must be
 * identical; floats must lie within the per-element bound of
 * {@link referenceGemm}. Reports the relative Frobenius error, the largest
 * element error relative to its bound, and the count of elements over it.
 *
 * @module
 */

import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import { readElem } from "./tensor.ts";
import type { Reference } from "./reference.ts";

/** One output element over its bound. */
export interface ElementMismatch {
  /** Its index in D's storage. */
  readonly index: number;
  /** The kernel's value. */
  readonly got: number;
  /** The reference value. */
  readonly want: number;
}

/** The verdict of a comparison. */
export interface Comparison {
  /** Whether every element is within its bound. */
  readonly ok: boolean;
  /** The number of elements compared. */
  readonly elements: number;
  /** Elements whose error exceeds the bound (for integers: that differ). */
  readonly overBound: number;
  /** ||D - R||_F / ||R||_F (0 when R is zero). */
  readonly relFrobenius: number;
  /** max |D - R| / bound over elements with a non-zero bound. */
  readonly worstRatio: number;
  /** The largest absolute difference, max |D - R|. */
  readonly maxAbsError: number;
  /** The first offending element, if any. */
  readonly first: ElementMismatch | null;
}

/**
 * Compares an output buffer with the reference.
 *
 * @param out The kernel's output bytes (D's storage).
 * @param dtype D's element type.
 * @param ref The reference.
 * @returns The comparison.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { randomArgs } from "./inputs.ts";
 * import { referenceGemm } from "./reference.ts";
 * import { compareOutput } from "./compare.ts";
 * const k = check("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }")
 *   .kernels[0]!;
 * const ref = referenceGemm(k, randomArgs(k, { M: 16, N: 8, K: 32 }, 1));
 * const d = new Float32Array(ref.values);
 * ok(compareOutput(new Uint8Array(d.buffer), "f32", ref).ok);
 * d[5]! += 1;
 * const c = compareOutput(new Uint8Array(d.buffer), "f32", ref);
 * equal(c.overBound, 1);
 * equal(c.first?.index, 5);
 * ```
 */
export function compareOutput(out: Uint8Array, dtype: Dtype, ref: Reference): Comparison {
  let over = 0;
  let num = 0;
  let den = 0;
  let worst = 0;
  let maxAbs = 0;
  let first: Comparison["first"] = null;
  let elements = 0;
  for (let i = 0; i < ref.values.length; i++) {
    // A strided D's gaps are checked by gapWrites.
    if (ref.inView !== undefined && ref.inView[i] === 0) continue;
    elements++;
    const got = readElem(out, dtype, i);
    const want = ref.values[i]!;
    // Equal values, infinities of one sign included, differ by 0 (Inf - Inf is NaN).
    const err = got === want ? 0 : Math.abs(got - want);
    const bad = ref.exact ? got !== want : !(err <= ref.bound[i]!);
    if (bad) {
      over++;
      if (first === null) first = { index: i, got, want };
    }
    if (Number.isFinite(err)) {
      num += err * err;
      maxAbs = Math.max(maxAbs, err);
    } else num = Infinity;
    if (Number.isFinite(want)) den += want * want;
    if (ref.bound[i]! > 0 && Number.isFinite(err)) worst = Math.max(worst, err / ref.bound[i]!);
  }
  return {
    ok: over === 0,
    elements,
    overBound: over,
    relFrobenius: den === 0 ? Math.sqrt(num) : Math.sqrt(num / den),
    worstRatio: worst,
    maxAbsError: maxAbs,
    first,
  };
}

/**
 * Elements of a strided D's gaps (storage outside its view, DESIGN §6.1) that the
 * kernel wrote: every byte of a gap element must still hold the poison the output
 * was filled with.
 *
 * @param out The kernel's output bytes (D's storage).
 * @param dtype D's element type (8 bits or more).
 * @param ref The reference (its `inView`; none: no gaps, 0).
 * @param poisonByte The byte D was filled with before the run.
 * @returns The count of gap elements written.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { gapWrites } from "./compare.ts";
 * const ref = { values: new Float64Array(2), bound: new Float64Array(2), exact: true,
 *   inView: new Uint8Array([1, 0]) };
 * equal(gapWrites(new Uint8Array([7, 0x5a]), "s8", ref, 0x5a), 0);
 * equal(gapWrites(new Uint8Array([7, 3]), "s8", ref, 0x5a), 1);
 * ```
 */
export function gapWrites(
  out: Uint8Array,
  dtype: Dtype,
  ref: Reference,
  poisonByte: number,
): number {
  if (ref.inView === undefined) return 0;
  const w = DTYPE_INFO[dtype].bits / 8;
  let n = 0;
  for (let i = 0; i < ref.inView.length; i++) {
    if (ref.inView[i] !== 0) continue;
    for (let b = 0; b < w; b++) {
      if (out[i * w + b] !== poisonByte) {
        n++;
        break;
      }
    }
  }
  return n;
}
