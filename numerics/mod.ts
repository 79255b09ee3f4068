/**
 * Numerics of the gemmc PTX simulator: the single place that defines how the
 * CPU simulator converts, rounds, packs and compares numbers.
 *
 * All functions are small, allocation-free (bit casts go through shared
 * module-level typed-array scratch views) and deterministic. Floating-point
 * values are plain JS numbers; an "f32 value" is a number `x` with
 * `Math.fround(x) === x`. Register contents (bit patterns) are plain numbers
 * holding an unsigned 32-bit integer (`0 <= r < 2**32`) unless stated
 * otherwise; 16-bit formats (f16, bf16) are numbers in `0..0xffff`.
 *
 * ## Conversions
 *
 * - f32 -> f16 / bf16 use round-to-nearest-even on the f32 *bit pattern* with
 *   integer arithmetic (like `cvt.rn.f16.f32` / `cvt.rn.bf16.f32`), so there
 *   is no double-rounding through a JS double path. NaN becomes the canonical
 *   NaN `0x7fff`.
 * - `cvt.rna.tf32.f32` is {@link f32ToTf32Rna} (nearest, ties away from zero);
 *   {@link tf32Truncate} is what a tf32 MMA reads from a raw f32 register.
 * - {@link roundF16} / {@link roundBf16} round an arbitrary f64 value to the
 *   nearest representable value once (no intermediate f32 rounding).
 *
 * ## Accumulation model for floating-point MMA (f16 / bf16 / tf32 inputs)
 *
 * The simulator computes `D = A*B + C` for one output element as follows:
 *
 * 1. Each input element is first converted to its input format (f16, bf16 or
 *    tf32) and then widened exactly to a double.
 * 2. Each product `a_i * b_i` is computed in f64. This is *exact*: the
 *    significands have at most 11 (f16), 8 (bf16) or 11 (tf32) bits, so a
 *    product has at most 22 bits, and the exponent range fits in f64.
 * 3. The k products and the f32 accumulator `c` are summed in f64 (in
 *    ascending k order, accumulator first) and the sum is rounded *once* to
 *    f32 with round-to-nearest-even (`Math.fround`). For the k of sm_80 MMA
 *    shapes (k <= 16) the f64 sum is exact unless the terms span more than
 *    about 30 binades, and otherwise its error is far below the final f32
 *    rounding (barring massive cancellation), so this is essentially "exact
 *    dot product, rounded once".
 * 4. With an f16 accumulator (`m16n8k*.f16.f16`) the accumulator is widened
 *    exactly and the same f64 sum is rounded once, directly to f16
 *    ({@link roundF16}, round to nearest even).
 * 5. A tf32 operand register that holds raw f32 bits is read through
 *    {@link tf32Truncate} (its low 13 mantissa bits ignored).
 *
 * Real tensor cores do not do this: they align products to the largest
 * exponent, truncate the shifted-out bits and round (or truncate) the
 * intermediate sum differently, and may flush some subnormals. The simulator's
 * result is therefore a *reference*, not a bit-exact model of the hardware;
 * the error bound between the two is stated by the comparison module, not
 * here.
 *
 * ## Accumulation model for f64 MMA (`mma.sync.m8n8k4.f64`)
 *
 * f64 MMA is modelled as a chain of fused multiply-adds in k order:
 * `d = fma(a_k, b_k, ... fma(a_0, b_0, c))`, each step correctly rounded.
 * JavaScript has no fused multiply-add and a plain `a*b + c` rounds twice, so
 * {@link fmaF64} implements a correctly rounded FMA with Veltkamp splitting,
 * Dekker's TwoProduct, TwoSum and round-to-odd (Boldo & Melquiond), with an
 * exact BigInt fallback for operands near the ends of the exponent range.
 *
 * ## Integer helpers
 *
 * Packed 8-bit, 4-bit and 1-bit operands use PTX's layout: element 0 lives in
 * the least significant bits of the 32-bit register.
 *
 * @module
 */

// ---------------------------------------------------------------------------
// Shared scratch views for bit casts (allocation-free after module load).
// ---------------------------------------------------------------------------

const scratch = new ArrayBuffer(8);
const f32View = new Float32Array(scratch, 0, 1);
const u32View = new Uint32Array(scratch, 0, 2);
const f64View = new Float64Array(scratch, 0, 1);

/** Index of the low / high 32-bit word of a float64 in {@link u32View}. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;

function hiWord(x: number): number {
  f64View[0] = x;
  return u32View[HI]!;
}

function loWord(x: number): number {
  f64View[0] = x;
  return u32View[LO]!;
}

function fromWords(hi: number, lo: number): number {
  u32View[HI] = hi;
  u32View[LO] = lo;
  return f64View[0]!;
}

/** Exact `2**k` for an integer `k` in the normal f64 exponent range [-1022, 1023]. */
function pow2(k: number): number {
  return fromWords((k + 1023) << 20 >>> 0, 0);
}

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

/** floor(log2(|x|)) for finite nonzero x (f64 subnormals included). */
function exponentOf(x: number): number {
  const e = (hiWord(x) >>> 20) & 0x7ff;
  if (e !== 0) return e - 1023;
  return ((hiWord(x * 18446744073709551616) >>> 20) & 0x7ff) - 1023 - 64; // * 2^64
}

/** Round a non-negative double to an integer, ties to even (exact for q < 2^52). */
function rintEven(q: number): number {
  const f = Math.floor(q);
  const d = q - f;
  if (d > 0.5 || (d === 0.5 && f % 2 !== 0)) return f + 1;
  return f;
}

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

// ---------------------------------------------------------------------------
// Integer packing
// ---------------------------------------------------------------------------

/**
 * Pack four 8-bit integers into one 32-bit register (`a` in bits 0..7, `d` in
 * bits 24..31). Each argument is reduced to its low 8 bits, so signed values
 * in -128..127 and unsigned values in 0..255 both work. Returns an unsigned
 * 32-bit number.
 *
 * @example
 * ```ts
 * packS8x4(1, -1, 0, -128); // 0x8000ff01
 * ```
 */
export function packS8x4(a: number, b: number, c: number, d: number): number {
  return ((a & 0xff) | ((b & 0xff) << 8) | ((c & 0xff) << 16) | ((d & 0xff) << 24)) >>> 0;
}

/**
 * Signed 8-bit element `i` (0..3, element 0 in the low byte) of a register.
 *
 * @example
 * ```ts
 * unpackS8(0x8000ff01, 1); // -1
 * ```
 */
export function unpackS8(reg: number, i: number): number {
  return (reg << (24 - 8 * i)) >> 24;
}

/**
 * Unsigned 8-bit element `i` (0..3, element 0 in the low byte) of a register.
 *
 * @example
 * ```ts
 * unpackU8(0x8000ff01, 1); // 255
 * ```
 */
export function unpackU8(reg: number, i: number): number {
  return (reg >>> (8 * i)) & 0xff;
}

/**
 * Signed 4-bit element `i` (0..7, element 0 in the lowest nibble) of a
 * register, sign-extended to -8..7.
 *
 * @example
 * ```ts
 * unpackS4(0x000000f7, 0); // 7
 * unpackS4(0x000000f7, 1); // -1
 * ```
 */
export function unpackS4(reg: number, i: number): number {
  return (reg << (28 - 4 * i)) >> 28;
}

/**
 * Unsigned 4-bit element `i` (0..7, element 0 in the lowest nibble) of a
 * register.
 *
 * @example
 * ```ts
 * unpackU4(0x000000f7, 1); // 15
 * ```
 */
export function unpackU4(reg: number, i: number): number {
  return (reg >>> (4 * i)) & 0xf;
}

/**
 * Bit `i` (0..31, bit 0 least significant) of a register, as 0 or 1. This is
 * the element order of `.b1` MMA operands.
 *
 * @example
 * ```ts
 * bitOf(0b100, 2); // 1
 * ```
 */
export function bitOf(reg: number, i: number): number {
  return (reg >>> i) & 1;
}

/**
 * Pack `values.length * bits <= 32` elements of `bits` bits each (1, 2, 4, 8
 * or 16) into one 32-bit register, element 0 in the least significant bits.
 * Each value is reduced to its low `bits` bits (two's complement for negative
 * values). Returns an unsigned 32-bit number.
 *
 * @throws {RangeError} if `bits` is unsupported or the values do not fit.
 * @example
 * ```ts
 * packSubByte([1, 0, 1, 1], 1); // 0b1101
 * packSubByte([-1, 2], 4); // 0x2f
 * ```
 */
export function packSubByte(values: ArrayLike<number>, bits: number): number {
  if (bits !== 1 && bits !== 2 && bits !== 4 && bits !== 8 && bits !== 16) {
    throw new RangeError(`packSubByte: unsupported element width ${bits}`);
  }
  const n = values.length;
  if (n * bits > 32) {
    throw new RangeError(`packSubByte: ${n} x ${bits}-bit elements do not fit in 32 bits`);
  }
  const mask = (1 << bits) - 1;
  let r = 0;
  for (let i = 0; i < n; i++) r |= (values[i]! & mask) << (i * bits);
  return r >>> 0;
}

/**
 * Pack up to eight 4-bit elements (s4 or u4) into one register, element 0 in
 * the lowest nibble. Same as `packSubByte(values, 4)`.
 *
 * @example
 * ```ts
 * packNibbles([7, -1]); // 0xf7
 * ```
 */
export function packNibbles(values: ArrayLike<number>): number {
  return packSubByte(values, 4);
}

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

// ---------------------------------------------------------------------------
// Activation functions (reference definitions)
// ---------------------------------------------------------------------------
//
// NOTE: these are the *reference* definitions used to check results: the
// input is rounded to f32, the formula is evaluated in f64 with the JS Math
// library (V8's fdlibm ports, deterministic across platforms) and the result
// is rounded once to f32. The PTX backend may implement them with approximate
// instructions (`tanh.approx.f32`, `ex2.approx.f32`, `rcp.approx.f32`, ...),
// so PTX results can differ by a few ulp. The simulator will later model the
// exact PTX instruction sequence; until then, compare epilogue outputs with a
// tolerance rather than bit-exactly.

/**
 * Reference ReLU in f32: `max(x, 0)` with the semantics of PTX `max.f32`
 * (non-`.NaN` form): NaN gives 0, and -0 gives +0.
 *
 * @example
 * ```ts
 * relu(-2); // 0
 * relu(1.5); // 1.5
 * ```
 */
export function relu(x: number): number {
  return x > 0 ? Math.fround(x) : 0;
}

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

/**
 * Reference GELU (tanh approximation) in f32:
 * `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, with `x` rounded to f32,
 * evaluated in f64, rounded once to f32. `gelu(-Infinity)` is -0 (the limit).
 *
 * @example
 * ```ts
 * gelu(0); // 0
 * gelu(1); // 0.8411920070648193 (f32)
 * ```
 */
export function gelu(x: number): number {
  const v = Math.fround(x);
  if (v === -Infinity) return -0;
  const t = Math.tanh(SQRT_2_OVER_PI * (v + 0.044715 * v * v * v));
  return Math.fround(0.5 * v * (1 + t));
}

/**
 * Reference logistic sigmoid in f32: `1 / (1 + exp(-x))`, with `x` rounded to
 * f32, evaluated in f64, rounded once to f32.
 *
 * @example
 * ```ts
 * sigmoid(0); // 0.5
 * ```
 */
export function sigmoid(x: number): number {
  const v = Math.fround(x);
  return Math.fround(1 / (1 + Math.exp(-v)));
}

/**
 * Reference SiLU (swish) in f32: `x * sigmoid(x)` = `x / (1 + exp(-x))`, with
 * `x` rounded to f32, evaluated in f64, rounded once to f32.
 * `silu(-Infinity)` is -0 (the limit).
 *
 * @example
 * ```ts
 * silu(0); // 0
 * silu(1); // 0.7310585975646973 (f32)
 * ```
 */
export function silu(x: number): number {
  const v = Math.fround(x);
  if (v === -Infinity) return -0;
  return Math.fround(v / (1 + Math.exp(-v)));
}

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

// ---------------------------------------------------------------------------
// Scalar instructions of the kernel IR (used by the simulator's interpreter)
// ---------------------------------------------------------------------------

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
 * import { fmaF32 } from "./mod.ts";
 * const a = 1 + 2 ** -12;
 * console.assert(fmaF32(a, a, -1) === 2 ** -11 + 2 ** -24); // a*a - 1 exactly
 * ```
 */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b;
  if (!Number.isFinite(p) || !Number.isFinite(c)) return Math.fround(p + c);
  return Math.fround(addRoundToOdd(p, c));
}

/**
 * PTX `cvt.rni.sat.s32.f32` / `cvt.rni.sat.s32.f64`: round to the nearest
 * integer, ties to even, saturate to the s32 range; NaN gives 0.
 *
 * @param x A number.
 * @returns An s32 value.
 * @example
 * ```ts
 * import { rniSatS32 } from "./mod.ts";
 * console.assert(rniSatS32(2.5) === 2 && rniSatS32(-1.5) === -2 && rniSatS32(1e10) === 2147483647);
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
 * import { minPtx } from "./mod.ts";
 * console.assert(minPtx(NaN, 3) === 3 && Object.is(minPtx(0, -0), -0));
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
 * import { maxPtx } from "./mod.ts";
 * console.assert(maxPtx(2, NaN) === 2 && Object.is(maxPtx(-0, 0), 0));
 * ```
 */
export function maxPtx(a: number, b: number): number {
  if (a !== a) return b;
  if (b !== b) return a;
  if (a === b) return a === 0 && (1 / a > 0 || 1 / b > 0) ? 0 : a;
  return a > b ? a : b;
}

/**
 * The simulator's `ex2.approx.f32`: `2^x` evaluated in f64 and rounded once to
 * f32. The GPU's approximate instruction has a documented maximum relative
 * error of about 2 ulp (PTX ISA, `ex2`), so GPU results may differ from this
 * by a few ulp; compare epilogue results that use it with a tolerance.
 *
 * @param x An f32 value.
 * @returns An f32 value.
 * @example
 * ```ts
 * import { ex2Approx } from "./mod.ts";
 * console.assert(ex2Approx(3) === 8 && ex2Approx(-Infinity) === 0);
 * ```
 */
export function ex2Approx(x: number): number {
  return Math.fround(Math.pow(2, x));
}

/**
 * The simulator's `rcp.approx.f32`: `1 / x` rounded once to f32 (correctly
 * rounded). The GPU's approximate reciprocal has a maximum error of about
 * 1 ulp, so results may differ from this by an ulp.
 *
 * @param x An f32 value.
 * @returns An f32 value.
 * @example
 * ```ts
 * import { rcpApprox } from "./mod.ts";
 * console.assert(rcpApprox(4) === 0.25 && rcpApprox(0) === Infinity);
 * ```
 */
export function rcpApprox(x: number): number {
  return Math.fround(1 / x);
}

/**
 * The simulator's `tanh.approx.f32`: `Math.tanh` in f64 rounded once to f32.
 * The GPU's approximate tanh has a maximum relative error of about 2^-11
 * (PTX ISA, `tanh`), i.e. it may differ from this by many f32 ulp, so
 * compare results that use it with a tolerance of that size.
 *
 * @param x An f32 value.
 * @returns An f32 value.
 * @example
 * ```ts
 * import { tanhApprox } from "./mod.ts";
 * console.assert(tanhApprox(0) === 0 && tanhApprox(Infinity) === 1);
 * ```
 */
export function tanhApprox(x: number): number {
  return Math.fround(Math.tanh(x));
}
