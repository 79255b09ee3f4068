/**
 * The accumulation model of sm90's 8-bit float warpgroup MMAs (`wgmma .e4m3 / .e5m2` with an
 * f32 accumulator; numerics/mod.ts, "Accumulation model for fp8 wgmma"): each instruction's
 * exact sum `C + Σ_k a_k b_k` truncated toward zero to 14 significant bits (1 sign, 8 exponent,
 * 13 mantissa bits: "FP22"), then held in the f32 accumulator register (exactly).
 *
 * Exactness: every product of two 8-bit floats is a multiple of 2^-32 below 2^32 in magnitude
 * (e5m2's smallest subnormal is 2^-16, its largest value 57344 < 2^16), so a product's integer
 * part (`Math.trunc`) and its fraction (a multiple of 2^-32 below 1) are each summed exactly in
 * f64 over one instruction's K = 32 (below 2^37, and 37 bits of 2^-32);
 * {@link fp8AccumulateTruncated} then adds the accumulator and
 * truncates the exact sum, with a BigInt fallback when the f64 additions would round.
 *
 * @module
 */

import { f64View, HI, LO, u32View } from "./_bits.ts";

/** Significant bits the fp8 wgmma model keeps of each instruction's sum (FP22: e8m13). */
export const FP8_ACC_BITS = 14;

/** 2^-126, the smallest normal f32: below it the grid is the f32 subnormals' 2^-139 for 13
 * mantissa bits. */
const MIN_NORMAL = 2 ** -126;

/**
 * Truncates a number toward zero to the FP22 grid: 14 significant bits in f32's exponent range
 * (below 2^-126 a fixed step of 2^-139). Zeros, infinities and NaN are returned unchanged.
 *
 * @param x The value (a double).
 * @returns The nearest FP22 value not larger in magnitude.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { truncFp22 } from "./fp8_acc.ts";
 * equal(truncFp22(1 + 2 ** -13), 1 + 2 ** -13);
 * equal(truncFp22(1 + 2 ** -14), 1);
 * equal(truncFp22(-(2 - 2 ** -20)), -(2 - 2 ** -13));
 * ```
 */
export function truncFp22(x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  if (Math.abs(x) < MIN_NORMAL) return Math.trunc(x * 2 ** 139) * 2 ** -139;
  f64View[0] = x;
  u32View[LO] = 0;
  // The high word: sign, 11 exponent bits, the top 20 mantissa bits; keep 13 of those.
  u32View[HI] = (u32View[HI]! & 0xffffff80) >>> 0;
  return f64View[0]!;
}

/** a + b - s for s = fl(a + b) (Knuth's TwoSum): the exact rounding error. */
function twoSumErr(a: number, b: number, s: number): number {
  const bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

/** `x * 2^149` as a BigInt, exact for a multiple of 2^-149 (any f32, the split sums). */
function scaled(x: number): bigint {
  return BigInt(x * 2 ** 149);
}

/** The FP22 truncation of the exact `c + hi + lo`, through BigInt (every term a multiple of
 * 2^-149). */
function slowTruncated(c: number, hi: number, lo: number): number {
  const X = scaled(c) + scaled(hi) + scaled(lo);
  if (X === 0n) return 0;
  const neg = X < 0n;
  const m = neg ? -X : X;
  const n = m.toString(2).length;
  // 14 significant bits, and at most 2^-139 (scaled: 2^10) below the f32 normals.
  const shift = Math.max(n - FP8_ACC_BITS, 10);
  const v = Number(m >> BigInt(shift)) * 2 ** (shift - 149);
  return neg ? -v : v;
}

/**
 * One fp8 wgmma step of an accumulator element: the exact `c + hi + lo` truncated toward zero
 * to FP22 ({@link truncFp22}), where `hi` and `lo` are the exact sums of the instruction's
 * products' integer parts (`Math.trunc(p)`) and fractions (`p - Math.trunc(p)`). The f64 additions are
 * checked with TwoSum; when one rounds, the sum is redone exactly in BigInt. An infinite or
 * NaN term gives the IEEE sum of the terms (infinity, or NaN).
 *
 * @param c The accumulator (an f32 value).
 * @param hi The sum of the products' integer parts (an integer below 2^37 in magnitude).
 * @param lo The sum of the products' fractions (a multiple of 2^-32 below 32 in magnitude).
 * @returns The new accumulator value (an f32 value on the FP22 grid, or infinite, or NaN).
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { fp8AccumulateTruncated } from "./fp8_acc.ts";
 * // 57344^2 + 2^-32: the tiny term is truncated away; minus it, one FP22 step below.
 * equal(fp8AccumulateTruncated(0, 57344 * 57344, 2 ** -32), 57344 * 57344);
 * equal(fp8AccumulateTruncated(0, 57344 * 57344, -(2 ** -32)), 57344 * 57344 - 2 ** 18);
 * ```
 */
export function fp8AccumulateTruncated(c: number, hi: number, lo: number): number {
  if (!Number.isFinite(hi) || !Number.isFinite(lo) || !Number.isFinite(c)) {
    // An infinite product makes its fraction NaN (inf - inf): the IEEE sum is in c + hi.
    return Number.isNaN(hi) ? NaN : c + hi;
  }
  const li = Math.trunc(lo);
  const h = hi + li;
  const l = lo - li;
  const s = h + l;
  const t = s + c;
  if (twoSumErr(h, l, s) !== 0 || twoSumErr(s, c, t) !== 0) return slowTruncated(c, h, l);
  return truncFp22(t);
}
