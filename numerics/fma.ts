/**
 * Fused multiply-add emulation: a correctly rounded f64 FMA (error-free
 * transforms with round-to-odd, an exact BigInt fallback near the ends of the
 * exponent range) and PTX `fma.rn.f32`.
 *
 * @module
 */

import { exponentOf, f64View, fromWords, HI, hiWord, LO, loWord, pow2, u32View } from "./_bits.ts";

// ---------------------------------------------------------------------------
// Correctly rounded f64 fused multiply-add
// ---------------------------------------------------------------------------

// Two-word results of the error-free transforms (module-level: no allocation).
let efHi = 0;
let efLo = 0;

/** Veltkamp splitting constant 2^27 + 1. */
const SPLITTER = 134217729;

/** Dekker TwoProduct: efHi + efLo = a * b exactly (no over/underflow assumed). */
function twoProduct(a: number, b: number): void {
  const p = a * b;
  let t = SPLITTER * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLITTER * b;
  const bh = t - (t - b);
  const bl = b - bh;
  efHi = p;
  efLo = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

/** Knuth TwoSum: efHi + efLo = a + b exactly, efHi = RN(a + b). */
function twoSum(a: number, b: number): void {
  const s = a + b;
  const bb = s - a;
  efHi = s;
  efLo = (a - (s - bb)) + (b - bb);
}

/** a + b rounded to odd (emulated with TwoSum and a one-ulp nudge). */
function addRoundToOdd(a: number, b: number): number {
  twoSum(a, b);
  const s = efHi;
  const err = efLo;
  if (err === 0) return s;
  f64View[0] = s;
  const lo = u32View[LO]!;
  if ((lo & 1) !== 0) return s; // already odd
  let hi = u32View[HI]!;
  // Move one ulp toward the exact value: magnitude up if err has s's sign.
  if ((s > 0) === (err > 0)) {
    return fromWords(hi, lo + 1); // lo is even: no carry
  }
  if (lo === 0) hi -= 1;
  return fromWords(hi, (lo - 1) >>> 0);
}

/**
 * Correctly rounded fused multiply-add in f64: `a * b + c` computed exactly
 * and rounded once to the nearest double (ties to even), like PTX `fma.rn.f64`
 * and each step of `mma.sync...f64`. A plain `a * b + c` in JS rounds twice
 * and can differ (e.g. it loses the low half of the product entirely).
 *
 * Fast path (operands comfortably inside the exponent range): Dekker's
 * TwoProduct with Veltkamp splitting, TwoSum, and Boldo & Melquiond's
 * round-to-odd emulation of FMA. Operands near overflow/underflow take an
 * exact (slower, allocating) BigInt path. Special values follow IEEE 754.
 *
 * @example
 * ```ts
 * const a = 1 + 2 ** -27;
 * fmaF64(a, a, -(1 + 2 ** -26)); // 2 ** -54 (naive a*a + c gives 0)
 * ```
 */
export function fmaF64(a: number, b: number, c: number): number {
  // Non-finite operands: IEEE semantics coincide with the naive expression,
  // except that a finite a*b must not overflow before meeting an infinite c.
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a * b + c;
  if (!Number.isFinite(c)) return c;
  if (a === 0 || b === 0) return a * b + c; // exact signed-zero product
  if (c === 0) return a * b; // nonzero exact product, rounded once
  const ea = exponentOf(a);
  const eb = exponentOf(b);
  const ec = exponentOf(c);
  const ep = ea + eb;
  // Fast-path guards: no overflow in the splits (|a|,|b| < 2^996), in the
  // product and sums (|ab|, |c| < 2^1021), and every intermediate a multiple
  // of 2^-1074 (ulp(ab) >= 2^(ep-104), ulp(c) >= 2^(ec-52)) so that gradual
  // underflow never loses bits.
  if (ea <= 995 && eb <= 995 && ep <= 1018 && ec <= 1019 && ep >= -970 && ec >= -1022) {
    twoProduct(a, b);
    const uh = efHi;
    const ul = efLo;
    twoSum(c, uh);
    const th = efHi;
    const tl = efLo;
    return th + addRoundToOdd(tl, ul);
  }
  return fmaExact(a, b, c);
}

/** Exact integer significand and exponent of a finite nonzero double: |x| = m * 2^e. */
let decM = 0n;
let decE = 0;
function decompose(x: number): void {
  const hi = hiWord(x);
  const lo = loWord(x);
  const be = (hi >>> 20) & 0x7ff;
  const frac = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (be === 0) {
    decM = frac;
    decE = -1074;
  } else {
    decM = frac | (1n << 52n);
    decE = be - 1075;
  }
}

function bitLength(n: bigint): number {
  return n.toString(2).length;
}

/** Exact `m * 2^q` for an integer m < 2^54, rounding only on final over/underflow. */
function ldexpExact(m: number, q: number): number {
  let v = m;
  let k = q;
  while (k > 1023) {
    v *= pow2(1023);
    k -= 1023;
  }
  while (k < -1022) {
    v *= pow2(-1022);
    k += 1022;
  }
  return v * pow2(k);
}

/** Slow exact FMA for finite nonzero a, b, c via BigInt arithmetic. */
function fmaExact(a: number, b: number, c: number): number {
  decompose(a);
  const ma = decM;
  const xa = decE;
  decompose(b);
  const mp = ma * decM;
  const xp = xa + decE;
  decompose(c);
  const mc = decM;
  const xc = decE;
  const sp = (a < 0) !== (b < 0) ? -1n : 1n;
  const sc = c < 0 ? -1n : 1n;
  const e0 = xp < xc ? xp : xc;
  const n = sp * (mp << BigInt(xp - e0)) + sc * (mc << BigInt(xc - e0));
  if (n === 0n) return 0; // exact cancellation: +0 in round-to-nearest
  const neg = n < 0n;
  const mag = neg ? -n : n;
  const len = bitLength(mag);
  let q = len - 1 + e0 - 52; // quantum exponent for 53 significant bits
  if (q < -1074) q = -1074; // subnormal quantum
  const s = q - e0;
  let m: number;
  if (s <= 0) {
    m = Number(mag << BigInt(-s)); // exact (< 2^53)
  } else {
    const sh = BigInt(s);
    let r = mag >> sh;
    const rem = mag & ((1n << sh) - 1n);
    const half = 1n << (sh - 1n);
    if (rem > half || (rem === half && (r & 1n) === 1n)) r += 1n;
    m = Number(r); // <= 2^53, exact
  }
  const v = ldexpExact(m, q);
  return neg ? -v : v;
}

/**
 * Correctly rounded fused multiply-add in f32, like PTX `fma.rn.f32` (and the
 * kernel IR's `mad.f32`): `a * b + c` computed exactly and rounded once to the
 * nearest f32 (ties to even). The inputs are f32 values.
 *
 * The product of two f32 values is exact in f64 (at most 48 significand bits,
 * exponents far inside the f64 range); the sum with `c` is rounded to f64 *to
 * odd* and then to f32, and rounding to odd at 53 bits followed by rounding to
 * nearest at 24 bits is a correct single rounding (Boldo & Melquiond), so
 * there is no double-rounding error.
 *
 * @param a An f32 value.
 * @param b An f32 value.
 * @param c An f32 value.
 * @returns `RN_f32(a * b + c)`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { fmaF32 } from "./mod.ts";
 * const a = 1 + 2 ** -12;
 * equal(fmaF32(a, a, -1), 2 ** -11 + 2 ** -24); // a*a - 1 exactly
 * ```
 */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b;
  if (!Number.isFinite(p) || !Number.isFinite(c)) return Math.fround(p + c);
  return Math.fround(addRoundToOdd(p, c));
}
