/**
 * Scalar integer and PTX instructions of the kernel IR as the simulator's
 * interpreter executes them: s32 saturation, saturating add, population
 * count, `cvt.rni.sat.s32`, and PTX `min` / `max` (NaN handling). The f32 FMA
 * is in `fma.ts`.
 *
 * @module
 */

// ---------------------------------------------------------------------------
// Integer arithmetic
// ---------------------------------------------------------------------------

const S32_MAX = 2147483647;
const S32_MIN = -2147483648;

/**
 * Saturate a JS number to the signed 32-bit range [-2^31, 2^31 - 1].
 * Non-integers are truncated toward zero first; NaN gives 0 (the PTX
 * convention for saturating conversions); infinities saturate.
 *
 * @example
 * ```ts
 * satS32(2 ** 40); // 2147483647
 * satS32(-3.7); // -3
 * ```
 */
export function satS32(x: number): number {
  if (x !== x) return 0;
  if (x >= S32_MAX) return S32_MAX;
  if (x <= S32_MIN) return S32_MIN;
  return Math.trunc(x) | 0;
}

/**
 * Saturating signed 32-bit addition, like PTX `add.sat.s32`. Inputs are s32
 * values; their sum is exact in a double before saturation.
 *
 * @example
 * ```ts
 * addSatS32(2147483647, 1); // 2147483647
 * addSatS32(-5, 3); // -2
 * ```
 */
export function addSatS32(a: number, b: number): number {
  return satS32(a + b);
}

/**
 * Population count of the low 32 bits of `x`, like PTX `popc.b32`.
 *
 * @example
 * ```ts
 * popc32(0xffffffff); // 32
 * popc32(0b1011); // 3
 * ```
 */
export function popc32(x: number): number {
  let v = x | 0;
  v = v - ((v >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  v = (v + (v >>> 4)) & 0x0f0f0f0f;
  return Math.imul(v, 0x01010101) >>> 24;
}

/**
 * PTX `cvt.rni.sat.s32.f32` / `cvt.rni.sat.s32.f64`: round to the nearest
 * integer, ties to even, saturate to the s32 range; NaN gives 0.
 *
 * @param x A number.
 * @returns An s32 value.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { rniSatS32 } from "./mod.ts";
 * equal(rniSatS32(2.5), 2);
 * equal(rniSatS32(-1.5), -2);
 * equal(rniSatS32(1e10), 2147483647);
 * ```
 */
export function rniSatS32(x: number): number {
  if (x !== x) return 0;
  if (x >= S32_MAX) return S32_MAX;
  if (x <= S32_MIN) return S32_MIN;
  let r = Math.round(x); // ties toward +infinity
  if (r - x === 0.5 && (r & 1) !== 0) r -= 1; // ties to even instead
  return r | 0;
}

/**
 * PTX `min.f32` / `min.f64` (no `.NaN` qualifier): a NaN operand loses to a
 * number (NaN only when both are NaN), and -0 counts as less than +0.
 *
 * @param a A number.
 * @param b A number.
 * @returns The smaller.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { minPtx } from "./mod.ts";
 * equal(minPtx(NaN, 3), 3);
 * ok(Object.is(minPtx(0, -0), -0));
 * ```
 */
export function minPtx(a: number, b: number): number {
  if (a !== a) return b;
  if (b !== b) return a;
  if (a === b) return a === 0 && (1 / a < 0 || 1 / b < 0) ? -0 : a;
  return a < b ? a : b;
}

/**
 * PTX `max.f32` / `max.f64` (no `.NaN` qualifier): a NaN operand loses to a
 * number, and +0 counts as greater than -0.
 *
 * @param a A number.
 * @param b A number.
 * @returns The larger.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { maxPtx } from "./mod.ts";
 * equal(maxPtx(2, NaN), 2);
 * ok(Object.is(maxPtx(-0, 0), 0));
 * ```
 */
export function maxPtx(a: number, b: number): number {
  if (a !== a) return b;
  if (b !== b) return a;
  if (a === b) return a === 0 && (1 / a > 0 || 1 / b > 0) ? 0 : a;
  return a > b ? a : b;
}
