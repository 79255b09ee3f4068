/** Helpers of the numerics tests (tests/numerics_test.ts, tests/numerics_float_test.ts):
 * slow, independent references of the formats, deliberately not the module under test. */
import { rng as uniform } from "../backends/sim/_test_kernels.ts";

/** Deterministic uint32 generator: the test kernels' mulberry32, scaled back to integers. */
export function rng(seed: number): () => number {
  const r = uniform(seed);
  return () => r() * 4294967296;
}

const dv = new DataView(new ArrayBuffer(8));

export function f32FromBits(u: number): number {
  dv.setUint32(0, u >>> 0);
  return dv.getFloat32(0);
}

export function f64Bits(x: number): bigint {
  dv.setFloat64(0, x);
  return dv.getBigUint64(0);
}

export function f64FromBits(b: bigint): number {
  dv.setBigUint64(0, b);
  return dv.getFloat64(0);
}

export function hex(n: number): string {
  return "0x" + n.toString(16);
}

/** Slow value of f16 bits by the textbook formula (no bit tricks). */
export function slowF16Value(h: number): number {
  const s = (h & 0x8000) ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * Math.pow(2, -24);
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * Math.pow(2, e - 15);
}

/**
 * Nearest-candidate reference rounding of any double `x` to a format whose
 * positive finite values are `value(0..maxBits)` in increasing order, with
 * `infBits` the +infinity pattern (treated as the next value `2^(emax+1)` for
 * the overflow midpoint). Ties go to the even bit pattern. Midpoints of
 * neighbouring values of a narrow format are exact doubles, so every
 * comparison is exact.
 */
export function refRound(
  x: number,
  value: (bits: number) => number,
  maxBits: number,
  infBits: number,
  infValue: number,
): number {
  const sign = x < 0 || Object.is(x, -0) ? 1 << 15 : 0;
  const a = Math.abs(x);
  let lo = 0;
  let hi = maxBits;
  if (a >= value(maxBits)) {
    lo = maxBits;
  } else {
    // largest bits with value(bits) <= a
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (value(mid) <= a) lo = mid;
      else hi = mid - 1;
    }
  }
  const next = lo + 1;
  const vlo = value(lo);
  const vnext = lo === maxBits ? infValue : value(next);
  const nextBits = lo === maxBits ? infBits : next;
  const mid = (vlo + vnext) / 2;
  let r: number;
  if (a < mid) r = lo;
  else if (a > mid) r = nextBits;
  else r = (lo & 1) === 0 ? lo : nextBits;
  return sign | r;
}

export function refF16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7fff;
  if (x === Infinity) return 0x7c00;
  if (x === -Infinity) return 0xfc00;
  return refRound(x, slowF16Value, 0x7bff, 0x7c00, 65536);
}

export function slowBf16Value(h: number): number {
  return f32FromBits(h << 16);
}

export function refBf16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7fff;
  if (x === Infinity) return 0x7f80;
  if (x === -Infinity) return 0xff80;
  return refRound(x, slowBf16Value, 0x7f7f, 0x7f80, 2 ** 128);
}

/** Random f32 value: half uniform bit patterns, half in/near the f16 range. */
export function randomF32(next: () => number): number {
  const r = next();
  if (r & 1) return f32FromBits(next());
  const exp = 95 + (next() % 60); // 2^-32 .. 2^27
  return f32FromBits(((r & 0x80000000) | (exp << 23) | (next() & 0x7fffff)) >>> 0);
}
