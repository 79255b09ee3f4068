/**
 * sm90's 8-bit floats (OCP FP8, as PTX's `.e4m3` and `.e5m2`): decoding every code exactly,
 * and encoding an f32 as `cvt.rn.satfinite` does (round to nearest even, finite values past
 * the largest saturate to it, NaN to the NaN code).
 *
 * - e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities; S.1111.111 is NaN;
 *   largest 448, smallest subnormal 2^-9.
 * - e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits; S.11111.00 is infinity, the other
 *   S.11111.xx NaN; largest 57344, smallest subnormal 2^-16.
 *
 * @module
 */

/** One format's fields. */
interface Fp8Format {
  readonly man: number;
  readonly bias: number;
  /** The largest finite code's magnitude bits (0x7e for e4m3, 0x7b for e5m2). */
  readonly maxCode: number;
  /** Whether exponent all-ones is infinity/NaN (e5m2) rather than ordinary (e4m3). */
  readonly ieee: boolean;
}

const FORMATS: Readonly<Record<"e4m3" | "e5m2", Fp8Format>> = {
  e4m3: { man: 3, bias: 7, maxCode: 0x7e, ieee: false },
  e5m2: { man: 2, bias: 15, maxCode: 0x7b, ieee: true },
};

function decodeWith(f: Fp8Format, code: number): number {
  const sign = code & 0x80 ? -1 : 1;
  const mag = code & 0x7f;
  const e = mag >> f.man;
  const m = mag & ((1 << f.man) - 1);
  const eMax = (1 << (7 - f.man)) - 1;
  if (f.ieee && e === eMax) return m === 0 ? sign * Infinity : NaN;
  if (!f.ieee && mag === 0x7f) return NaN;
  if (e === 0) return sign * m * 2 ** (1 - f.bias - f.man);
  return sign * (1 + m / (1 << f.man)) * 2 ** (e - f.bias);
}

/** Every code's value, by format. */
const TABLES = {
  e4m3: Float64Array.from({ length: 256 }, (_, c) => decodeWith(FORMATS.e4m3, c)),
  e5m2: Float64Array.from({ length: 256 }, (_, c) => decodeWith(FORMATS.e5m2, c)),
};

/**
 * The value of an 8-bit float code.
 *
 * @param code The byte.
 * @param t The format.
 * @returns Its value (exact).
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { fp8ToNumber } from "./fp8.ts";
 * equal(fp8ToNumber(0x7e, "e4m3"), 448);
 * equal(fp8ToNumber(0x01, "e5m2"), 2 ** -16);
 * ```
 */
export function fp8ToNumber(code: number, t: "e4m3" | "e5m2"): number {
  return TABLES[t][code & 0xff]!;
}

/**
 * Encodes a number as an 8-bit float: round to nearest even, saturating finite values (and
 * infinities) to the largest finite code, NaN to a NaN code (`cvt.rn.satfinite`).
 *
 * @param x The value.
 * @param t The format.
 * @returns The byte.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { numberToFp8 } from "./fp8.ts";
 * equal(numberToFp8(1.0625, "e4m3"), 0x38); // a tie: to the even 1
 * equal(numberToFp8(1e9, "e4m3"), 0x7e);
 * equal(numberToFp8(-3, "e5m2"), 0xc2);
 * ```
 */
export function numberToFp8(x: number, t: "e4m3" | "e5m2"): number {
  const f = FORMATS[t];
  if (Number.isNaN(x)) return 0x7f;
  const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
  const a = Math.abs(x);
  const maxVal = TABLES[t][f.maxCode]!;
  if (a >= maxVal) return sign | f.maxCode;
  const minExp = 1 - f.bias;
  let e = Math.floor(Math.log2(a));
  if (a === 0) e = minExp;
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  e = Math.max(e, minExp);
  // The value in units of the last place of its binade (subnormals: of the smallest).
  const q = a / 2 ** (e - f.man);
  let r = Math.floor(q);
  const frac = q - r;
  if (frac > 0.5 || (frac === 0.5 && (r & 1) === 1)) r++;
  // Codes are ordered by magnitude: binade e's codes start at (e - minExp) << man, and r
  // counts from there past the leading one (a carry into the next binade, or from
  // subnormals into normals, is the next code).
  const code = ((e - minExp) << f.man) + r;
  return sign | Math.min(code, f.maxCode);
}
