import assert from "node:assert/strict";
import {
  addSatS32,
  bf16BitsToF32,
  bitOf,
  bitsF32,
  f16BitsToF32,
  fmaF64,
  gelu,
  packNibbles,
  packS8x4,
  packSubByte,
  popc32,
  relu,
  roundBf16,
  roundF16,
  roundHalfEven,
  roundToDtype,
  satS32,
  sigmoid,
  silu,
  ulpDistanceF16,
  ulpDistanceF32,
  ulpDistanceF64,
  ulpOf,
  unpackS4,
  unpackS8,
  unpackU4,
  unpackU8,
} from "../numerics/mod.ts";
import { f32FromBits, f64Bits, f64FromBits, rng } from "./_numerics.ts";

// ---------------------------------------------------------------------------
// Integer packing
// ---------------------------------------------------------------------------

Deno.test("8-bit packing", () => {
  const r = packS8x4(1, -1, 0, -128);
  assert.equal(r, 0x8000ff01);
  assert.deepEqual([0, 1, 2, 3].map((i) => unpackS8(r, i)), [1, -1, 0, -128]);
  assert.deepEqual([0, 1, 2, 3].map((i) => unpackU8(r, i)), [1, 255, 0, 128]);
  assert.equal(packS8x4(255, 254, 127, 128), 0x807ffeff);
  const next = rng(8);
  for (let i = 0; i < 1000; i++) {
    const v = [0, 1, 2, 3].map(() => (next() % 256) - 128);
    const p = packS8x4(v[0]!, v[1]!, v[2]!, v[3]!);
    assert.ok(p >= 0 && p < 2 ** 32);
    for (let k = 0; k < 4; k++) {
      assert.equal(unpackS8(p, k), v[k]);
      assert.equal(unpackU8(p, k), v[k]! & 0xff);
    }
    assert.equal(packSubByte(v, 8), p);
  }
});

Deno.test("4-bit and 1-bit packing", () => {
  const r = packNibbles([7, -1, 0, -8, 1, 2, 3, 4]);
  assert.equal(r, 0x432180f7);
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => unpackS4(r, i)), [7, -1, 0, -8, 1, 2, 3, 4]);
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7].map((i) => unpackU4(r, i)),
    [7, 15, 0, 8, 1, 2, 3, 4],
  );
  assert.equal(packNibbles([0xf, 0xf, 0xf, 0xf, 0xf, 0xf, 0xf, 0xf]), 0xffffffff);
  assert.equal(unpackS4(0xf0000000, 7), -1);
  assert.equal(packNibbles([]), 0);
  assert.equal(packNibbles(new Int8Array([1, 2])), 0x21);

  const bits = Array.from({ length: 32 }, (_, i) => (i * 7 + 3) % 3 === 0 ? 1 : 0);
  const b = packSubByte(bits, 1);
  for (let i = 0; i < 32; i++) assert.equal(bitOf(b, i), bits[i]);
  assert.equal(packSubByte([1, 0, 1, 1], 1), 0b1101);
  assert.equal(packSubByte([3, 2, 1, 0], 2), 0b00011011);
  assert.equal(packSubByte([0xffff, 1], 16), 0x0001ffff);
  assert.equal(bitOf(0x80000000, 31), 1);
  assert.throws(() => packSubByte([1, 2, 3], 3), RangeError);
  assert.throws(() => packNibbles([0, 0, 0, 0, 0, 0, 0, 0, 0]), RangeError);
});

// ---------------------------------------------------------------------------
// Integer arithmetic
// ---------------------------------------------------------------------------

Deno.test("saturation", () => {
  assert.equal(satS32(0), 0);
  assert.equal(satS32(2 ** 31), 2147483647);
  assert.equal(satS32(2 ** 31 - 1), 2147483647);
  assert.equal(satS32(2 ** 40), 2147483647);
  assert.equal(satS32(-(2 ** 31)), -2147483648);
  assert.equal(satS32(-(2 ** 31) - 1), -2147483648);
  assert.equal(satS32(Infinity), 2147483647);
  assert.equal(satS32(-Infinity), -2147483648);
  assert.equal(satS32(NaN), 0);
  assert.equal(satS32(-3.7), -3);
  assert.equal(satS32(12345), 12345);
  assert.equal(addSatS32(2147483647, 1), 2147483647);
  assert.equal(addSatS32(-2147483648, -1), -2147483648);
  assert.equal(addSatS32(-2147483648, -2147483648), -2147483648);
  assert.equal(addSatS32(2147483647, -2147483648), -1);
  assert.equal(addSatS32(-5, 3), -2);
});

Deno.test("popc32", () => {
  assert.equal(popc32(0), 0);
  assert.equal(popc32(0xffffffff), 32);
  assert.equal(popc32(-1), 32);
  assert.equal(popc32(0x80000000), 1);
  assert.equal(popc32(0b1011), 3);
  const next = rng(0x9c);
  for (let i = 0; i < 10000; i++) {
    const x = next();
    let n = 0;
    for (let k = 0; k < 32; k++) n += Math.floor(x / 2 ** k) % 2;
    assert.equal(popc32(x), n);
  }
});

// ---------------------------------------------------------------------------
// Activations
// ---------------------------------------------------------------------------

Deno.test("activation reference definitions", () => {
  assert.equal(relu(-2), 0);
  assert.equal(relu(1.5), 1.5);
  assert.equal(relu(0.1), Math.fround(0.1));
  assert.ok(Object.is(relu(-0), 0));
  assert.equal(relu(NaN), 0);
  assert.equal(relu(Infinity), Infinity);

  assert.equal(gelu(0), 0);
  assert.equal(gelu(1), Math.fround(0.8411919906082768));
  assert.equal(gelu(Infinity), Infinity);
  assert.ok(Object.is(gelu(-Infinity), -0));
  assert.ok(Object.is(gelu(-100), -0));
  assert.equal(gelu(100), 100);
  assert.ok(Number.isNaN(gelu(NaN)));

  assert.equal(sigmoid(0), 0.5);
  assert.equal(sigmoid(Infinity), 1);
  assert.equal(sigmoid(-Infinity), 0);
  assert.equal(sigmoid(2), Math.fround(1 / (1 + Math.exp(-2))));

  assert.equal(silu(0), 0);
  assert.equal(silu(1), Math.fround(1 / (1 + Math.exp(-1))));
  assert.equal(silu(Infinity), Infinity);
  assert.ok(Object.is(silu(-Infinity), -0));

  const next = rng(0xac);
  for (let i = 0; i < 1000; i++) {
    const x = f32FromBits(next());
    for (const f of [relu, gelu, sigmoid, silu]) {
      const y = f(x);
      assert.ok(Number.isNaN(y) || Math.fround(y) === y, `${f.name}(${x}) is f32`);
    }
  }
});

// ---------------------------------------------------------------------------
// ULP distances
// ---------------------------------------------------------------------------

Deno.test("ulpDistanceF32", () => {
  assert.equal(ulpDistanceF32(1, 1), 0);
  assert.equal(ulpDistanceF32(1, bitsF32(0x3f800001)), 1);
  assert.equal(ulpDistanceF32(bitsF32(0x3f800001), 1), 1);
  assert.equal(ulpDistanceF32(-0, 0), 0);
  assert.equal(ulpDistanceF32(2 ** -149, -(2 ** -149)), 2);
  assert.equal(ulpDistanceF32(bitsF32(0x7f7fffff), Infinity), 1);
  assert.equal(ulpDistanceF32(-Infinity, Infinity), 2 * 0x7f800000);
  assert.equal(ulpDistanceF32(1, 2), 0x800000);
  assert.equal(ulpDistanceF32(NaN, NaN), 0);
  assert.equal(ulpDistanceF32(NaN, 1), Infinity);
  assert.equal(ulpDistanceF32(1, bitsF32(0x3f7fffff)), 1);
});

Deno.test("ulpDistanceF16", () => {
  assert.equal(ulpDistanceF16(0x3c00, 0x3c01), 1);
  assert.equal(ulpDistanceF16(0x0001, 0x8001), 2);
  assert.equal(ulpDistanceF16(0x0000, 0x8000), 0);
  assert.equal(ulpDistanceF16(0x7bff, 0x7c00), 1);
  assert.equal(ulpDistanceF16(0xfc00, 0x7c00), 2 * 0x7c00);
  assert.equal(ulpDistanceF16(0x7e00, 0xffff), 0);
  assert.equal(ulpDistanceF16(0x7e00, 0x3c00), Infinity);
  assert.equal(ulpDistanceF16(0x3bff, 0x3c00), 1);
});

Deno.test("ulpDistanceF64", () => {
  assert.equal(ulpDistanceF64(1, 1), 0);
  assert.equal(ulpDistanceF64(1, 1 + 2 ** -52), 1);
  assert.equal(ulpDistanceF64(1, 1 - 2 ** -53), 1);
  assert.equal(ulpDistanceF64(-0, 0), 0);
  assert.equal(ulpDistanceF64(2 ** -1074, -(2 ** -1074)), 2);
  assert.equal(ulpDistanceF64(Number.MAX_VALUE, Infinity), 1);
  assert.equal(ulpDistanceF64(NaN, NaN), 0);
  assert.equal(ulpDistanceF64(NaN, 1), Infinity);
});

Deno.test("ulpOf: the gap to the next representable value, the smallest normal's below it", () => {
  const f64Next = (x: number) => {
    const dv = new DataView(new ArrayBuffer(8));
    dv.setFloat64(0, x);
    dv.setBigUint64(0, dv.getBigUint64(0) + 1n);
    return dv.getFloat64(0);
  };
  const r = rng(7);
  for (let i = 0; i < 2000; i++) {
    // Positive normal bit patterns of each format, away from the largest binade.
    const h = 0x0400 + (r() % (0x7800 - 0x0400));
    const x16 = f16BitsToF32(h);
    assert.equal(ulpOf(x16, "f16"), f16BitsToF32(h + 1) - x16, `f16 ${h}`);
    assert.equal(ulpOf(-x16, "f16"), f16BitsToF32(h + 1) - x16, `f16 -${h}`);
    const b = 0x0080 + (r() % (0x7f00 - 0x0080));
    const xb = bf16BitsToF32(b);
    assert.equal(ulpOf(xb, "bf16"), bf16BitsToF32(b + 1) - xb, `bf16 ${b}`);
    const u = 0x00800000 + (r() % (0x7f000000 - 0x00800000));
    const x32 = bitsF32(u);
    assert.equal(ulpOf(x32, "f32"), bitsF32(u + 1) - x32, `f32 ${u}`);
    assert.equal(ulpOf(x32, "tf32"), ulpOf(x32, "f32"));
    const x64 = x32 * 2 ** ((r() % 1000) - 500);
    assert.equal(ulpOf(x64, "f64"), f64Next(x64) - x64, `f64 ${x64}`);
  }
  // Subnormals and zero: the smallest normal's ulp.
  assert.equal(ulpOf(0, "f16"), 2 ** -24);
  assert.equal(ulpOf(f16BitsToF32(0x0001), "f16"), 2 ** -24);
  assert.equal(ulpOf(0, "f32"), 2 ** -149);
  assert.equal(ulpOf(0, "bf16"), 2 ** -133);
  assert.equal(ulpOf(0, "f64"), 2 ** -1074);
});

Deno.test("roundToDtype and roundHalfEven", () => {
  const r = rng(11);
  for (let i = 0; i < 2000; i++) {
    const x = (r() / 2 ** 32 - 0.5) * 2 ** ((r() % 40) - 20);
    assert.equal(roundToDtype(x, "f16"), roundF16(x));
    assert.equal(roundToDtype(x, "bf16"), roundBf16(x));
    assert.equal(roundToDtype(x, "f32"), Math.fround(x));
    assert.equal(roundToDtype(x, "tf32"), Math.fround(x));
    assert.equal(roundToDtype(x, "f64"), x);
    assert.equal(roundToDtype(x, "s32"), x);
  }
  const ties: [number, number][] = [
    [0.5, 0],
    [1.5, 2],
    [2.5, 2],
    [-0.5, -0],
    [-1.5, -2],
    [-2.5, -2],
    [3.5, 4],
    [2 ** 52 + 1, 2 ** 52 + 1],
    [0.49999999999999994, 0],
    [1.6, 2],
    [-1.4, -1],
  ];
  for (const [x, want] of ties) assert.equal(roundHalfEven(x) + 0, want + 0, `${x}`);
});

// ---------------------------------------------------------------------------
// fmaF64
// ---------------------------------------------------------------------------

const MIN_SUB = 5e-324;
const MAX_F64 = Number.MAX_VALUE;

/** x * 2^2200 as an exact BigInt (finite x). */
function scaled(x: number): bigint {
  if (x === 0) return 0n;
  const bits = f64Bits(x);
  const be = Number((bits >> 52n) & 0x7ffn);
  const frac = bits & ((1n << 52n) - 1n);
  const m = be === 0 ? frac : frac | (1n << 52n);
  const e = (be === 0 ? -1074 : be - 1075) + 2200;
  const v = m << BigInt(e);
  return x < 0 ? -v : v;
}

function nextUp(x: number): number {
  if (x === 0) return MIN_SUB;
  const b = f64Bits(x);
  return f64FromBits(x > 0 ? b + 1n : b - 1n);
}

function nextDown(x: number): number {
  return -nextUp(-x);
}

/**
 * Asserts that `r` is the correctly rounded (nearest, ties to even) value of
 * a*b + c, by exact comparison of the true value with the midpoints between
 * `r` and its neighbours. Only for finite a, b, c.
 */
function assertCorrectlyRounded(a: number, b: number, c: number, r: number): void {
  const msg = `fmaF64(${a}, ${b}, ${c}) = ${r}`;
  // Exact a*b + c in units of 2^-2200 (the product's quantum is >= 2^-2148).
  const X = (scaled(a) * scaled(b) >> 2200n) + scaled(c);
  const A = X < 0n ? -X : X;
  const TOP = 1n << (1024n + 2200n); // 2^1024, the "value" after MAX_F64
  if (r === Infinity || r === -Infinity) {
    assert.ok(2n * A >= scaled(MAX_F64) + TOP, msg);
    assert.equal(r > 0, X > 0n, msg + " sign");
    return;
  }
  assert.ok(Number.isFinite(r), msg);
  if (r === 0) {
    assert.ok(2n * A <= scaled(MIN_SUB), msg);
    if (X !== 0n) assert.ok(Object.is(r, X > 0n ? 0 : -0), msg + " sign");
    return;
  }
  assert.equal(r > 0, X > 0n, msg + " sign");
  const m = Math.abs(r);
  const M = scaled(m);
  const lo = M + scaled(nextDown(m)); // 2 * lower midpoint
  const hi = M + (m === MAX_F64 ? TOP : scaled(nextUp(m))); // 2 * upper midpoint
  const even = (f64Bits(m) & 1n) === 0n;
  if (even) assert.ok(lo <= 2n * A && 2n * A <= hi, msg);
  else assert.ok(lo < 2n * A && 2n * A < hi, msg);
}

/** Random double with sign, binary exponent `e` in [-1074, 1023] and random low bits. */
function randomDouble(next: () => number, e: number): number {
  const frac = (BigInt(next() & 0xfffff) << 32n) | BigInt(next());
  let bits: bigint;
  if (e >= -1022) {
    bits = (BigInt(e + 1023) << 52n) | frac;
  } else {
    const top = BigInt(e + 1074); // position of the leading bit
    bits = (1n << top) | (frac & ((1n << top) - 1n));
  }
  const x = f64FromBits(bits);
  return next() & 1 ? -x : x;
}

function clampExp(e: number): number {
  return Math.max(-1074, Math.min(1023, e));
}

Deno.test("fmaF64: cases where naive a*b+c differs", () => {
  const a1 = 1 + 2 ** -27;
  assert.equal(a1 * a1 - (1 + 2 ** -26), 0);
  assert.equal(fmaF64(a1, a1, -(1 + 2 ** -26)), 2 ** -54);

  const a2 = 1 + 2 ** -52;
  const b2 = 1 - 2 ** -53;
  assert.equal(a2 * b2 - 1, 0);
  assert.equal(fmaF64(a2, b2, -1), 2 ** -53 - 2 ** -105);

  // ab = 1 + 3*2^-27 + 2^-53 is an exact f64 tie; a tiny c decides it.
  const a3 = 1 + 2 ** -26;
  const b3 = 1 + 2 ** -27;
  assert.equal(a3 * b3 + 2 ** -100, 1 + 3 * 2 ** -27);
  assert.equal(fmaF64(a3, b3, 2 ** -100), 1 + 3 * 2 ** -27 + 2 ** -52);
  assert.equal(fmaF64(a3, b3, -(2 ** -100)), 1 + 3 * 2 ** -27);
  assert.equal(fmaF64(a3, b3, 0), 1 + 3 * 2 ** -27);

  // 0.1 * 10 - 1 exposes the rounding error of the product.
  assert.equal(0.1 * 10 - 1, 0);
  assert.equal(fmaF64(0.1, 10, -1), 2 ** -54);

  // Overflow of the intermediate product.
  assert.equal(2 ** 1023 * 2 - 2 ** 1023, Infinity);
  assert.equal(fmaF64(2 ** 1023, 2, -(2 ** 1023)), 2 ** 1023);
  assert.equal(fmaF64(MAX_F64, 1, MAX_F64), Infinity);
  assert.equal(fmaF64(MAX_F64, 2, -MAX_F64), MAX_F64);
  assert.equal(fmaF64(2 ** 600, 2 ** 600, -Infinity), -Infinity);

  // Underflow and subnormal results.
  assert.equal(fmaF64(2 ** -600, 2 ** -500, 0), 0);
  assert.ok(Object.is(fmaF64(2 ** -600, -(2 ** -600), 0), -0)); // naive gives +0
  assert.equal(fmaF64(2 ** -537, 2 ** -538, 0), 0); // 2^-1075: tie -> even (0)
  assert.equal(fmaF64(2 ** -537, 2 ** -537, 0), MIN_SUB);
  assert.equal(fmaF64(3 * 2 ** -538, 2 ** -537, 0), 2 ** -1073); // 1.5 units -> 2
  assert.equal(2 ** -538 * 2 ** -537 + MIN_SUB, MIN_SUB);
  assert.equal(fmaF64(2 ** -538, 2 ** -537, MIN_SUB), 2 ** -1073); // 1.5 units -> 2
  const a4 = 2 ** -485 * (1 + 2 ** -52);
  const b4 = 2 ** -485 * (1 - 2 ** -52);
  assert.equal(a4 * b4 - 2 ** -970, 0);
  assert.ok(Object.is(fmaF64(a4, b4, -(2 ** -970)), -MIN_SUB));

  // Signed zeros and exact cancellation.
  assert.ok(Object.is(fmaF64(1, 1, -1), 0));
  assert.ok(Object.is(fmaF64(1, -0, -0), -0));
  assert.ok(Object.is(fmaF64(1, 0, -0), 0));
  assert.ok(Object.is(fmaF64(-0, -0, -0), 0));
  assert.ok(Object.is(fmaF64(0, -5, -0), -0));
  assert.equal(fmaF64(0, 5, 3), 3);

  // Special values.
  assert.ok(Number.isNaN(fmaF64(Infinity, 0, 1)));
  assert.ok(Number.isNaN(fmaF64(Infinity, 1, -Infinity)));
  assert.ok(Number.isNaN(fmaF64(NaN, 1, 1)));
  assert.ok(Number.isNaN(fmaF64(1, 1, NaN)));
  assert.equal(fmaF64(Infinity, -2, 1e308), -Infinity);
  assert.equal(fmaF64(1e300, 1e300, Infinity), Infinity);

  for (
    const [a, b, c] of [[a1, a1, -(1 + 2 ** -26)], [a3, b3, 2 ** -100], [a4, b4, -(2 ** -970)]]
  ) {
    assertCorrectlyRounded(a!, b!, c!, fmaF64(a!, b!, c!));
  }
});

Deno.test("fmaF64: randomized, verified exactly with BigInt", () => {
  const next = rng(0xf4a);
  let differsFromNaive = 0;
  const check = (a: number, b: number, c: number) => {
    if (!Number.isFinite(c)) return; // -(a*b) may overflow in the generators
    const r = fmaF64(a, b, c);
    assertCorrectlyRounded(a, b, c, r);
    if (!Object.is(r, a * b + c)) differsFromNaive++;
  };
  for (let i = 0; i < 20000; i++) {
    // moderate exponents, c comparable to the product
    const ea = (next() % 120) - 60;
    const eb = (next() % 120) - 60;
    const a = randomDouble(next, ea);
    const b = randomDouble(next, eb);
    check(a, b, randomDouble(next, clampExp(ea + eb + (next() % 120) - 60)));
    // heavy cancellation: c close to -a*b
    const p = a * b;
    const k = next() % 4;
    const c = k === 0 ? -p : k === 1 ? -nextUp(p) : k === 2 ? -nextDown(p) : -p * (1 + 2 ** -40);
    check(a, b, c);
  }
  for (let i = 0; i < 20000; i++) {
    // the whole exponent range: overflow, underflow, subnormals, fast-path edges
    const ep = (next() % 2200) - 1150;
    const ea = clampExp(Math.trunc(ep / 2) + (next() % 200) - 100);
    const eb = clampExp(ep - ea);
    const a = randomDouble(next, ea);
    const b = randomDouble(next, eb);
    const ec = clampExp(ea + eb + (next() % 240) - 120);
    check(a, b, randomDouble(next, ec));
    check(a, b, -(a * b) || randomDouble(next, ec));
  }
  for (let i = 0; i < 20000; i++) {
    // near the fast-path guards (ep ~ -970 / 1018, ec ~ -1022 / 1019, |a| ~ 2^995)
    const lowEnd = (i & 1) === 0;
    const ep = lowEnd ? -980 + (next() % 20) : 1005 + (next() % 20);
    const ea = lowEnd ? (next() % 40) - 20 - 490 : 985 + (next() % 20);
    const eb = clampExp(ep - ea);
    const a = randomDouble(next, ea);
    const b = randomDouble(next, eb);
    const ec = lowEnd ? -1030 + (next() % 60) : 1000 + (next() % 24);
    check(a, b, randomDouble(next, clampExp(ec)));
    check(a, b, -(a * b));
  }
  for (let i = 0; i < 5000; i++) {
    // uniformly random bit patterns (finite only)
    const a = f64FromBits((BigInt(next()) << 32n) | BigInt(next()));
    const b = f64FromBits((BigInt(next()) << 32n) | BigInt(next()));
    const c = f64FromBits((BigInt(next()) << 32n) | BigInt(next()));
    if (Number.isFinite(a) && Number.isFinite(b) && Number.isFinite(c)) check(a, b, c);
  }
  assert.ok(differsFromNaive > 1000, `only ${differsFromNaive} cases differ from naive`);
});
