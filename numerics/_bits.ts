/**
 * Internal bit-level helpers of the numerics module: shared typed-array
 * scratch views for allocation-free bit casts, the words of a float64, exact
 * powers of two, a double's binary exponent and round-half-even to an integer.
 * Not re-exported by `mod.ts`.
 *
 * @module
 */

// ---------------------------------------------------------------------------
// Shared scratch views for bit casts (allocation-free after module load).
// ---------------------------------------------------------------------------

const scratch = new ArrayBuffer(8);
export const f32View = new Float32Array(scratch, 0, 1);
export const u32View = new Uint32Array(scratch, 0, 2);
export const f64View = new Float64Array(scratch, 0, 1);

/** Index of the low / high 32-bit word of a float64 in {@link u32View}. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
export const LO = LITTLE_ENDIAN ? 0 : 1;
export const HI = LITTLE_ENDIAN ? 1 : 0;

export function hiWord(x: number): number {
  f64View[0] = x;
  return u32View[HI]!;
}

export function loWord(x: number): number {
  f64View[0] = x;
  return u32View[LO]!;
}

export function fromWords(hi: number, lo: number): number {
  u32View[HI] = hi;
  u32View[LO] = lo;
  return f64View[0]!;
}

/** Exact `2**k` for an integer `k` in the normal f64 exponent range [-1022, 1023]. */
export function pow2(k: number): number {
  return fromWords((k + 1023) << 20 >>> 0, 0);
}

/** floor(log2(|x|)) for finite nonzero x (f64 subnormals included). */
export function exponentOf(x: number): number {
  const e = (hiWord(x) >>> 20) & 0x7ff;
  if (e !== 0) return e - 1023;
  return ((hiWord(x * 18446744073709551616) >>> 20) & 0x7ff) - 1023 - 64; // * 2^64
}

/** Round a non-negative double to an integer, ties to even (exact for q < 2^52). */
export function rintEven(q: number): number {
  const f = Math.floor(q);
  const d = q - f;
  if (d > 0.5 || (d === 0.5 && f % 2 !== 0)) return f + 1;
  return f;
}
