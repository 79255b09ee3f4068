/**
 * Distances in units in the last place (f32, f16, f64) and the size of one
 * ulp of a float dtype, used by the reference's error bounds and the
 * comparisons of GPU and simulator outputs.
 *
 * @module
 */

import type { Dtype } from "../ir/dtype.ts";
import { f32View, u32View } from "./_bits.ts";

// ---------------------------------------------------------------------------
// ULP distances
// ---------------------------------------------------------------------------

/**
 * Distance in units in the last place between two f32 values (both are
 * rounded to f32 first): the number of f32 values you step over going from
 * one to the other, using the ordered integer representation (so +0 and -0
 * are 0 apart, the smallest subnormals `±2^-149` are 2 apart, and the largest
 * finite value is 1 from infinity). If both are NaN the distance is 0; if
 * exactly one is NaN it is `Infinity`.
 *
 * @example
 * ```ts
 * import { bitsF32, ulpDistanceF32 } from "./mod.ts";
 * ulpDistanceF32(1, bitsF32(0x3f800001)); // 1
 * ulpDistanceF32(-0, 0); // 0
 * ```
 */
export function ulpDistanceF32(a: number, b: number): number {
  const an = a !== a;
  const bn = b !== b;
  if (an || bn) return an && bn ? 0 : Infinity;
  f32View[0] = a;
  const ua = u32View[0]!;
  f32View[0] = b;
  const ub = u32View[0]!;
  const ka = ua >= 0x80000000 ? -(ua & 0x7fffffff) : ua;
  const kb = ub >= 0x80000000 ? -(ub & 0x7fffffff) : ub;
  return Math.abs(ka - kb);
}

/**
 * Distance in units in the last place between two f16 values given as bit
 * patterns, via the ordered integer representation (as
 * {@link ulpDistanceF32}): both NaN gives 0, exactly one NaN gives `Infinity`.
 *
 * @example
 * ```ts
 * ulpDistanceF16(0x3c00, 0x3c01); // 1
 * ulpDistanceF16(0x0001, 0x8001); // 2
 * ```
 */
export function ulpDistanceF16(hBitsA: number, hBitsB: number): number {
  const a = hBitsA & 0xffff;
  const b = hBitsB & 0xffff;
  const an = (a & 0x7fff) > 0x7c00;
  const bn = (b & 0x7fff) > 0x7c00;
  if (an || bn) return an && bn ? 0 : Infinity;
  const ka = a & 0x8000 ? -(a & 0x7fff) : a;
  const kb = b & 0x8000 ? -(b & 0x7fff) : b;
  return Math.abs(ka - kb);
}

/** Scratch for {@link ulpDistanceF64}: two f64 slots, reused by every call. */
const F64_PAIR = new DataView(new ArrayBuffer(16));

/**
 * The ordered-integer distance of two f64 bit patterns (units in the last
 * place); NaN is 0 from NaN and infinitely far from anything else.
 *
 * @param a An f64 value.
 * @param b An f64 value.
 * @returns The distance.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { ulpDistanceF64 } from "./mod.ts";
 * equal(ulpDistanceF64(1, 1 + 2 ** -52), 1);
 * ```
 */
export function ulpDistanceF64(a: number, b: number): number {
  if (a !== a || b !== b) return a !== a && b !== b ? 0 : Infinity;
  const dv = F64_PAIR;
  dv.setFloat64(0, a, true);
  dv.setFloat64(8, b, true);
  const ord = (x: bigint) => (x < 0n ? -(x & 0x7fffffffffffffffn) : x);
  const d = ord(dv.getBigInt64(0, true)) - ord(dv.getBigInt64(8, true));
  return Number(d < 0n ? -d : d);
}

/**
 * One ulp of |x| in a float dtype (at least the smallest normal's: below it,
 * the ulp of the smallest normal); types other than f16, bf16 and f64 are
 * measured as f32.
 *
 * @param x The value.
 * @param t The type.
 * @returns The ulp.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { ulpOf } from "./mod.ts";
 * equal(ulpOf(1, "f16"), 2 ** -10);
 * equal(ulpOf(-3, "f32"), 2 ** -22);
 * ```
 */
export function ulpOf(x: number, t: Dtype): number {
  const a = Math.abs(x);
  const bits = t === "f16" ? 10 : t === "bf16" ? 7 : t === "f64" ? 52 : 23;
  const minExp = t === "f16" ? -14 : t === "bf16" ? -126 : t === "f64" ? -1022 : -126;
  const e = a === 0 ? minExp : Math.max(minExp, Math.floor(Math.log2(a)));
  return 2 ** (e - bits);
}
