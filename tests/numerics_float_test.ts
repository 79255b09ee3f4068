import assert from "node:assert/strict";
import {
  bf16BitsToF32,
  bitsF32,
  f16BitsToF32,
  f32Bits,
  f32ToBf16Bits,
  f32ToF16Bits,
  f32ToTf32Rna,
  roundBf16,
  roundF16,
  tf32Truncate,
} from "../numerics/mod.ts";
import {
  f32FromBits,
  hex,
  randomF32,
  refBf16Bits,
  refF16Bits,
  rng,
  slowBf16Value,
  slowF16Value,
} from "./_numerics.ts";

// ---------------------------------------------------------------------------
// f32 bit casts
// ---------------------------------------------------------------------------

Deno.test("f32Bits / bitsF32", () => {
  assert.equal(f32Bits(1), 0x3f800000);
  assert.equal(f32Bits(-2), 0xc0000000);
  assert.equal(f32Bits(-0), 0x80000000);
  assert.equal(f32Bits(0), 0);
  assert.equal(f32Bits(Infinity), 0x7f800000);
  assert.equal(f32Bits(0.1), 0x3dcccccd); // rounds via fround
  assert.equal(bitsF32(0x3f800000), 1);
  assert.equal(bitsF32(0xff800000), -Infinity);
  assert.equal(bitsF32(-0x80000000), -0); // signed input accepted
  assert.ok(Object.is(bitsF32(0x80000000), -0));
  assert.ok(Number.isNaN(bitsF32(0x7fc00000)));
  assert.equal(bitsF32(1), 2 ** -149);
  const next = rng(1);
  for (let i = 0; i < 10000; i++) {
    const u = next();
    if ((u & 0x7fffffff) > 0x7f800000) continue;
    assert.equal(f32Bits(bitsF32(u)), u);
  }
});

// ---------------------------------------------------------------------------
// f16
// ---------------------------------------------------------------------------

Deno.test("f32ToF16Bits: known bit patterns", () => {
  const cases: [number, number][] = [
    [1, 0x3c00],
    [-1, 0xbc00],
    [2, 0x4000],
    [0.5, 0x3800],
    [65504, 0x7bff],
    [65519.99, 0x7bff],
    [65520, 0x7c00],
    [-65520, 0xfc00],
    [1e10, 0x7c00],
    [2 ** -14, 0x0400],
    [2 ** -24, 0x0001],
    [2 ** -25, 0x0000], // tie to even
    [-(2 ** -25), 0x8000],
    [3 * 2 ** -26, 0x0001],
    [3 * 2 ** -25, 0x0002], // 1.5 units: tie to even (2)
    [5 * 2 ** -25, 0x0002], // 2.5 units: tie to even (2)
    [2 ** -25 + 2 ** -40, 0x0001],
    [2 ** -14 - 2 ** -25, 0x0400], // 1023.5 units: tie to even -> smallest normal
    [2 ** -149, 0x0000],
    [0, 0x0000],
    [-0, 0x8000],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
    [NaN, 0x7fff],
    [1 + 2 ** -11, 0x3c00], // tie, even
    [1 + 3 * 2 ** -11, 0x3c02], // tie, odd -> up
    [1 + 2 ** -11 + 2 ** -23, 0x3c01],
    [0.1, 0x2e66],
    [-3.14159, 0xc248],
  ];
  for (const [x, bits] of cases) {
    assert.equal(hex(f32ToF16Bits(x)), hex(bits), `f32ToF16Bits(${x})`);
  }
  assert.equal(f32ToF16Bits(bitsF32(0xffc00001)), 0x7fff); // negative NaN -> canonical
});

Deno.test("f32ToF16Bits: no double rounding from f64 input", () => {
  // 1 + 2^-11 + 2^-30 is above the f16 tie, but fround takes it to the tie
  // first: the conversion is documented to act on the f32 value.
  const x = 1 + 2 ** -11 + 2 ** -30;
  assert.equal(f32ToF16Bits(x), f32ToF16Bits(Math.fround(x)));
  assert.equal(f32ToF16Bits(x), 0x3c00);
  // ...whereas roundF16 rounds the double directly.
  assert.equal(roundF16(x), 1 + 2 ** -10);
});

Deno.test("f16BitsToF32: known values", () => {
  assert.equal(f16BitsToF32(0x3c00), 1);
  assert.equal(f16BitsToF32(0x7bff), 65504);
  assert.equal(f16BitsToF32(0x0001), 2 ** -24);
  assert.equal(f16BitsToF32(0x03ff), 1023 * 2 ** -24);
  assert.equal(f16BitsToF32(0x0400), 2 ** -14);
  assert.equal(f16BitsToF32(0x7c00), Infinity);
  assert.equal(f16BitsToF32(0xfc00), -Infinity);
  assert.ok(Object.is(f16BitsToF32(0x8000), -0));
  assert.ok(Number.isNaN(f16BitsToF32(0x7e00)));
  assert.ok(Number.isNaN(f16BitsToF32(0x7fff)));
});

Deno.test("f16: exhaustive round trip of all 65536 bit patterns", () => {
  for (let h = 0; h < 65536; h++) {
    const v = f16BitsToF32(h);
    const slow = slowF16Value(h);
    const isNaN = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
    if (isNaN) {
      assert.ok(Number.isNaN(v), hex(h));
      assert.equal(f32ToF16Bits(v), 0x7fff);
      continue;
    }
    assert.ok(Object.is(v, slow), `value of ${hex(h)}: ${v} vs ${slow}`);
    assert.equal(Math.fround(v), v, `${hex(h)} exact in f32`);
    const back = f32ToF16Bits(v);
    if (back !== h) assert.fail(`round trip ${hex(h)} -> ${v} -> ${hex(back)}`);
    assert.ok(Object.is(roundF16(v), v));
  }
});

Deno.test("f32ToF16Bits: randomized against nearest-candidate reference", () => {
  const next = rng(0x16);
  for (let i = 0; i < 200000; i++) {
    const x = randomF32(next);
    const got = f32ToF16Bits(x);
    const want = refF16Bits(x);
    if (got !== want) {
      assert.fail(`f32ToF16Bits(${x} = ${hex(f32Bits(x))}) = ${hex(got)}, want ${hex(want)}`);
    }
  }
  // All f32 values near every f16 midpoint (ties and their neighbours).
  for (let h = 0; h < 0x7c00; h++) {
    const mid = (slowF16Value(h) + (h === 0x7bff ? 65536 : slowF16Value(h + 1))) / 2;
    const mb = f32Bits(mid);
    assert.equal(bitsF32(mb), mid); // midpoints are exact f32 values
    for (let d = -2; d <= 2; d++) {
      const x = bitsF32(mb + d);
      for (const s of [x, -x]) {
        const got = f32ToF16Bits(s);
        const want = refF16Bits(s);
        if (got !== want) assert.fail(`f32ToF16Bits(${s}) = ${hex(got)}, want ${hex(want)}`);
      }
    }
  }
});

Deno.test("roundF16: f32 inputs agree with the bit path; f64 inputs round once", () => {
  const next = rng(0xf16);
  for (let i = 0; i < 100000; i++) {
    const x = randomF32(next);
    const want = f16BitsToF32(f32ToF16Bits(x));
    const got = roundF16(x);
    if (Number.isNaN(x)) assert.ok(Number.isNaN(got));
    else if (!Object.is(got, want)) assert.fail(`roundF16(${x}) = ${got}, want ${want}`);
  }
  for (let i = 0; i < 100000; i++) {
    // random doubles with 53-bit significands around the f16 range
    const m = 1 + (next() * 2 ** 32 + next()) * 2 ** -64;
    const x = (next() & 1 ? -1 : 1) * m * 2 ** ((next() % 50) - 30);
    const want = f16BitsToF32(refF16Bits(x));
    const got = roundF16(x);
    if (!Object.is(got, want)) assert.fail(`roundF16(${x}) = ${got}, want ${want}`);
  }
  assert.ok(Object.is(roundF16(-0), -0));
  assert.ok(Object.is(roundF16(-1e-30), -0));
  assert.equal(roundF16(65519.999999), 65504);
  assert.equal(roundF16(65520), Infinity);
  assert.equal(roundF16(-1e300), -Infinity);
  assert.equal(roundF16(5e-324), 0);
  assert.equal(roundF16(2 ** -25 + 2 ** -60), 2 ** -24);
  assert.ok(Number.isNaN(roundF16(NaN)));
});

// ---------------------------------------------------------------------------
// bf16
// ---------------------------------------------------------------------------

Deno.test("f32ToBf16Bits: known bit patterns", () => {
  const cases: [number, number][] = [
    [1, 0x3f80],
    [-2, 0xc000],
    [bitsF32(0x3f808000), 0x3f80], // tie -> even
    [bitsF32(0x3f818000), 0x3f82], // tie -> even (up)
    [bitsF32(0x3f808001), 0x3f81],
    [bitsF32(0x3f807fff), 0x3f80],
    [bitsF32(0x7f7fffff), 0x7f80], // max f32 rounds to inf
    [bitsF32(0x7f7f7fff), 0x7f7f],
    [bitsF32(0x00000001), 0x0000],
    [bitsF32(0x00008000), 0x0000], // subnormal tie -> even
    [bitsF32(0x00018000), 0x0002],
    [0, 0],
    [-0, 0x8000],
    [Infinity, 0x7f80],
    [-Infinity, 0xff80],
    [NaN, 0x7fff],
    [bitsF32(0xff800001), 0x7fff],
  ];
  for (const [x, bits] of cases) {
    assert.equal(hex(f32ToBf16Bits(x)), hex(bits), `f32ToBf16Bits(${hex(f32Bits(x))})`);
  }
});

Deno.test("bf16: exhaustive round trip and randomized reference", () => {
  for (let h = 0; h < 65536; h++) {
    const v = bf16BitsToF32(h);
    if ((h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0) {
      assert.ok(Number.isNaN(v));
      assert.equal(f32ToBf16Bits(v), 0x7fff);
      continue;
    }
    assert.ok(Object.is(v, slowBf16Value(h)));
    assert.equal(f32ToBf16Bits(v), h, hex(h));
    assert.ok(Object.is(roundBf16(v), v));
  }
  const next = rng(0xbf);
  for (let i = 0; i < 100000; i++) {
    const x = f32FromBits(next());
    const want = refBf16Bits(x);
    assert.equal(f32ToBf16Bits(x), want);
    if (!Number.isNaN(x)) assert.ok(Object.is(roundBf16(x), bf16BitsToF32(want)));
  }
  // f64 inputs: single rounding
  assert.equal(roundBf16(1 + 2 ** -8), 1);
  assert.equal(roundBf16(1 + 2 ** -8 + 2 ** -40), 1 + 2 ** -7);
  assert.equal(roundBf16(3.14159), 3.140625);
  assert.equal(roundBf16(3.4e38), Infinity);
  assert.equal(roundBf16(-(2 - 2 ** -8) * 2 ** 127), -Infinity);
  assert.equal(roundBf16((2 - 2 ** -7) * 2 ** 127), (2 - 2 ** -7) * 2 ** 127);
  assert.equal(roundBf16(2 ** -134 + 2 ** -170), 2 ** -133);
  assert.equal(roundBf16(2 ** -134), 0);
});

// ---------------------------------------------------------------------------
// tf32
// ---------------------------------------------------------------------------

function refTf32Rna(x: number): number {
  if (!Number.isFinite(x)) return x;
  const u = f32Bits(x);
  const sign = u & 0x80000000;
  const magLo = (u & 0x7fffe000) >>> 0;
  const lo = bitsF32(magLo);
  const hi = bitsF32(magLo + 0x2000);
  const a = Math.abs(x);
  const r = a - lo < hi - a ? magLo : magLo + 0x2000; // ties away from zero
  return bitsF32((sign | r) >>> 0);
}

Deno.test("f32ToTf32Rna: ties away from zero", () => {
  const bitCases: [number, number][] = [
    [0x3f800000, 0x3f800000],
    [0x3f801000, 0x3f802000], // tie -> away
    [0xbf801000, 0xbf802000], // negative tie -> away (more negative)
    [0x3f803000, 0x3f804000], // tie at odd -> away (not even)
    [0x3f800fff, 0x3f800000],
    [0x3f801001, 0x3f802000],
    [0x3fffffff, 0x40000000], // carry into exponent
    [0x7f7fffff, 0x7f800000], // rounds up to inf
    [0x00001000, 0x00002000], // subnormal tie
    [0x80000000, 0x80000000],
    [0x7f800000, 0x7f800000],
    [0xff800000, 0xff800000],
  ];
  for (const [inBits, outBits] of bitCases) {
    assert.equal(hex(f32Bits(f32ToTf32Rna(bitsF32(inBits)))), hex(outBits), hex(inBits));
  }
  assert.ok(Number.isNaN(f32ToTf32Rna(NaN)));
  const next = rng(0x7f32);
  for (let i = 0; i < 100000; i++) {
    const x = f32FromBits(next());
    if (Number.isNaN(x)) continue;
    const got = f32ToTf32Rna(x);
    assert.ok(Object.is(got, refTf32Rna(x)), `rna ${hex(f32Bits(x))}`);
    if (Number.isFinite(got)) assert.equal(f32Bits(got) & 0x1fff, 0);
  }
});

Deno.test("tf32Truncate keeps the top 19 bits", () => {
  assert.equal(f32Bits(tf32Truncate(bitsF32(0x3f801fff))), 0x3f800000);
  assert.equal(f32Bits(tf32Truncate(bitsF32(0xbf803fff))), 0xbf802000);
  assert.equal(f32Bits(tf32Truncate(bitsF32(0x7f7fffff))), 0x7f7fe000);
  assert.equal(tf32Truncate(1), 1);
  assert.equal(tf32Truncate(-Infinity), -Infinity);
  assert.ok(Object.is(tf32Truncate(bitsF32(0x80001fff)), -0));
  assert.ok(Number.isNaN(tf32Truncate(NaN)));
  const next = rng(0x19);
  for (let i = 0; i < 10000; i++) {
    const u = next();
    if ((u & 0x7fffffff) > 0x7f800000) continue;
    assert.equal(f32Bits(tf32Truncate(bitsF32(u))), (u & 0xffffe000) >>> 0);
  }
});
