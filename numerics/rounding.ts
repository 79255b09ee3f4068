/**
 * Conversions and rounding: f32 bit casts, f16 / bf16 / tf32 conversions on
 * bit patterns, rounding of arbitrary doubles to f16 / bf16 (once, no
 * intermediate f32), rounding to a float dtype and half-even rounding to an
 * integer (the reference's conversions).
 *
 * @module
 */

import { fp8ToNumber, numberToFp8 } from "./fp8.ts";
import type { Dtype } from "../ir/dtype.ts";
import { exponentOf, f32View, pow2, rintEven, u32View } from "./_bits.ts";

// ---------------------------------------------------------------------------
// f32 bit casts
// ---------------------------------------------------------------------------

/**
 * The IEEE binary32 bit pattern of `Math.fround(x)`, as an unsigned 32-bit
 * integer.
 *
 * @example
 * ```ts
 * f32Bits(1); // 0x3f800000
 * f32Bits(-0); // 0x80000000
 * ```
 */
export function f32Bits(x: number): number {
  f32View[0] = x;
  return u32View[0]!;
}

/**
 * The f32 value whose bit pattern is the low 32 bits of `u` (signed or
 * unsigned input both accepted).
 *
 * @example
 * ```ts
 * bitsF32(0x3f800000); // 1
 * bitsF32(0xff800000); // -Infinity
 * ```
 */
export function bitsF32(u: number): number {
  u32View[0] = u;
  return f32View[0]!;
}

// ---------------------------------------------------------------------------
// f16
// ---------------------------------------------------------------------------

/**
 * Convert to IEEE binary16 bits with round-to-nearest-even, exactly like PTX
 * `cvt.rn.f16.f32`.
 *
 * The input is first rounded to f32 (`Math.fround`); the conversion then works
 * on the f32 bit pattern with integer arithmetic, so there is no double
 * rounding. Handles f16 subnormals (smallest `2**-24` = `0x0001`), overflow
 * (any value `>= 65520` in magnitude rounds to infinity, `0x7c00`/`0xfc00`),
 * signed zero, and f32 subnormals (which all round to a signed zero).
 *
 * NaN: the PTX ISA specifies a canonical NaN result for NaN inputs of
 * `cvt` to f16; on NVIDIA hardware `cvt.rn.f16.f32` of any NaN yields
 * `0x7fff`, which is what this returns (the NaN's sign and payload are
 * dropped).
 *
 * @example
 * ```ts
 * f32ToF16Bits(1); // 0x3c00
 * f32ToF16Bits(65504); // 0x7bff (max finite)
 * f32ToF16Bits(65520); // 0x7c00 (+inf)
 * f32ToF16Bits(2 ** -25); // 0x0000 (tie to even)
 * ```
 */
export function f32ToF16Bits(x: number): number {
  f32View[0] = x;
  const u = u32View[0]!;
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  const mant = u & 0x7fffff;
  if (exp === 0xff) return mant !== 0 ? 0x7fff : sign | 0x7c00;
  const e = exp - 127; // unbiased exponent (f32 subnormals: exp 0 -> below range anyway)
  if (e > 15) return sign | 0x7c00;
  if (e >= -14) {
    // Normal f16 range: drop 13 mantissa bits with RNE. A carry out of the
    // mantissa correctly bumps the exponent (and 30 -> 31 gives infinity).
    let r = ((e + 15) << 10) | (mant >>> 13);
    const rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem === 0x1000 && (r & 1) !== 0)) r += 1;
    return sign | r;
  }
  // f16 subnormal range: value = m * 2^(e-23) = (m >> shift) units of 2^-24.
  if (exp === 0) return sign; // f32 zero / subnormal (< 2^-126): rounds to zero
  const shift = -e - 1; // 14 for e = -15, 24 for e = -25
  if (shift > 24) return sign; // < 2^-25: below half the smallest subnormal
  const m = mant | 0x800000;
  let r = m >>> shift;
  const rem = m & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  if (rem > half || (rem === half && (r & 1) !== 0)) r += 1;
  return sign | r; // r may reach 0x400 = smallest normal, which is correct
}

/**
 * The exact f32 (and f64) value of IEEE binary16 bits `h` (low 16 bits used).
 * Every f16 value, subnormals included, is exactly representable in f32.
 *
 * @example
 * ```ts
 * f16BitsToF32(0x3c00); // 1
 * f16BitsToF32(0x0001); // 2 ** -24
 * f16BitsToF32(0xfc00); // -Infinity
 * ```
 */
export function f16BitsToF32(h: number): number {
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  const neg = (h & 0x8000) !== 0;
  let v: number;
  if (exp === 0) v = mant * 5.9604644775390625e-8; // mant * 2^-24
  else if (exp === 0x1f) v = mant === 0 ? Infinity : NaN;
  else v = (mant | 0x400) * pow2(exp - 25);
  return neg ? -v : v;
}

// ---------------------------------------------------------------------------
// bf16
// ---------------------------------------------------------------------------

/**
 * Convert to bfloat16 bits with round-to-nearest-even, like PTX
 * `cvt.rn.bf16.f32`: the upper 16 bits of the f32 pattern, rounded. The input
 * is first rounded to f32. Overflow rounds to infinity; NaN becomes the
 * canonical NaN `0x7fff`.
 *
 * @example
 * ```ts
 * f32ToBf16Bits(1); // 0x3f80
 * f32ToBf16Bits(bitsF32(0x3f808000)); // 0x3f80 (tie, even)
 * f32ToBf16Bits(bitsF32(0x3f818000)); // 0x3f82 (tie, up to even)
 * ```
 */
export function f32ToBf16Bits(x: number): number {
  f32View[0] = x;
  const u = u32View[0]!;
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fff;
  // u + 0x7fff + lsb < 2^32 for every non-NaN u, so no wrap-around.
  return (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
}

/**
 * The exact f32 value of bfloat16 bits `h` (low 16 bits used).
 *
 * @example
 * ```ts
 * bf16BitsToF32(0x3f80); // 1
 * bf16BitsToF32(0xc000); // -2
 * ```
 */
export function bf16BitsToF32(h: number): number {
  u32View[0] = (h & 0xffff) << 16;
  return f32View[0]!;
}

// ---------------------------------------------------------------------------
// tf32
// ---------------------------------------------------------------------------

/**
 * PTX `cvt.rna.tf32.f32`: round an f32 value to tf32 precision (10 explicit
 * mantissa bits) with round-to-nearest, ties *away from zero*. The result is
 * returned as an f32 value whose low 13 mantissa bits are zero. Infinities
 * and NaN are returned unchanged; finite values just below the f32 maximum
 * round up to infinity.
 *
 * @example
 * ```ts
 * f32ToTf32Rna(1); // 1
 * f32Bits(f32ToTf32Rna(bitsF32(0x3f801000))); // 0x3f802000 (tie, away from zero)
 * ```
 */
export function f32ToTf32Rna(x: number): number {
  f32View[0] = x;
  const u = u32View[0]!;
  if ((u & 0x7f800000) === 0x7f800000) return f32View[0]!; // inf / NaN
  // Adding half an ulp to the magnitude bits and truncating = ties away.
  u32View[0] = ((u + 0x1000) & 0xffffe000) >>> 0;
  return f32View[0]!;
}

/**
 * What a tf32 `mma` reads when its operand register holds raw f32 bits (no
 * `cvt.rna.tf32.f32` first): the top 19 bits are kept and the low 13 mantissa
 * bits ignored, i.e. truncation toward zero. NaN inputs stay NaN (the JS value
 * carries no payload, so the "payload only in the low bits" case cannot arise).
 *
 * @example
 * ```ts
 * f32Bits(tf32Truncate(bitsF32(0x3f801fff))); // 0x3f800000
 * ```
 */
export function tf32Truncate(x: number): number {
  if (x !== x) return NaN;
  f32View[0] = x;
  u32View[0] = u32View[0]! & 0xffffe000;
  return f32View[0]!;
}

// ---------------------------------------------------------------------------
// Rounding of arbitrary doubles to narrow formats
// ---------------------------------------------------------------------------

/**
 * Round |x| (finite, nonzero) to a binary format with `p` significand bits
 * and minimum normal exponent `eMin`; values >= `overflow` become infinity.
 */
function roundToFormat(x: number, p: number, eMin: number, overflow: number): number {
  const a = Math.abs(x);
  if (a >= overflow) return x > 0 ? Infinity : -Infinity;
  const e = exponentOf(a);
  const qe = (e > eMin ? e : eMin) - (p - 1);
  const r = rintEven(a * pow2(-qe)) * pow2(qe);
  return x < 0 ? -r : r;
}

/**
 * Round a number (f32 or f64 value) to the nearest IEEE binary16 value with
 * round-to-nearest-even, returned as a number. The rounding is done once,
 * directly from the double, so an f64 input is *not* double-rounded through
 * f32. For f32 inputs this equals `f16BitsToF32(f32ToF16Bits(x))`. Magnitudes
 * `>= 65520` give infinity; signed zero and NaN are preserved.
 *
 * @example
 * ```ts
 * roundF16(1 + 2 ** -11); // 1 (tie to even)
 * roundF16(1 + 2 ** -11 + 2 ** -40); // 1 + 2 ** -10 (no double rounding)
 * ```
 */
export function roundF16(x: number): number {
  if (x === 0 || x !== x || x === Infinity || x === -Infinity) return x;
  return roundToFormat(x, 11, -14, 65520);
}

/** (2 - 2^-8) * 2^127: the bf16 overflow threshold (midpoint max-finite/2^128). */
const BF16_OVERFLOW = (2 - 2 ** -8) * 2 ** 127;

/**
 * Round a number (f32 or f64 value) to the nearest bfloat16 value with
 * round-to-nearest-even, returned as a number; rounded once, directly from the
 * double. For f32 inputs this equals `bf16BitsToF32(f32ToBf16Bits(x))`.
 * Signed zero and NaN are preserved; overflow gives infinity.
 *
 * @example
 * ```ts
 * roundBf16(1 + 2 ** -8); // 1 (tie to even)
 * roundBf16(3.14159); // 3.140625
 * ```
 */
export function roundBf16(x: number): number {
  if (x === 0 || x !== x || x === Infinity || x === -Infinity) return x;
  return roundToFormat(x, 8, -126, BF16_OVERFLOW);
}

/**
 * Rounds a double to a float dtype once, to nearest even (f16 / bf16 with
 * {@link roundF16} / {@link roundBf16}, f32 and tf32 to f32); f64 and integer
 * types leave it unchanged.
 *
 * @param x The value.
 * @param t The type.
 * @returns The rounded value.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { roundToDtype } from "./mod.ts";
 * equal(roundToDtype(1 + 2 ** -11, "f16"), 1);
 * ```
 */
export function roundToDtype(x: number, t: Dtype): number {
  switch (t) {
    case "f16":
      return roundF16(x);
    case "bf16":
      return roundBf16(x);
    case "f32":
    case "tf32":
      return Math.fround(x);
    case "e4m3":
    case "e5m2":
      return fp8ToNumber(numberToFp8(x, t), t);
    default:
      return x;
  }
}

/**
 * Rounds to the nearest integer, ties to even (like `cvt.rni`, without
 * saturation).
 *
 * @param x The value.
 * @returns The integer.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { roundHalfEven } from "./mod.ts";
 * equal(roundHalfEven(2.5), 2);
 * equal(roundHalfEven(-3.5), -4);
 * ```
 */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
