/**
 * Numerics of gemmc: the single place that defines how the CPU simulator and
 * the reference (harness/) convert, round, pack and compare numbers.
 *
 * Files: `rounding.ts` (bit casts, f16 / bf16 / tf32 conversions, rounding of
 * doubles), `packing.ts` (sub-word integer operands), `scalar.ts` (integer and
 * PTX scalar instructions), `fma.ts` (correctly rounded FMA), `approx.ts`
 * (activations and approximate instructions), `ulp.ts` (ulp distances and
 * sizes), `fp8.ts` (sm90's e4m3 / e5m2), `fp8_acc.ts` (their wgmma accumulation);
 * `_bits.ts` holds their shared internal helpers.
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
 * ## Accumulation model for fp8 wgmma (`.e4m3` / `.e5m2` inputs, f32 accumulator)
 *
 * sm90's 8-bit float rows (`wgmma ... k32 .f32.e4m3|e5m2.e4m3|e5m2`) do not accumulate in
 * full f32. The DeepSeek-V3 technical report (§3.3.2, "Increasing Accumulation Precision")
 * measured the accumulation of FP8 GEMM on H800 tensor cores to retain "around 14 bits"
 * (a maximum relative error of nearly 2% at K = 4096, without promotion to CUDA cores), and
 * SageAttention2 found the accumulator of `mma.f32.f8.f8.f32` to be FP22: 1 sign, 8 exponent
 * and 13 mantissa bits. The simulator models that (`fp8_acc.ts`):
 *
 * 1. Each operand byte is decoded exactly (`fp8.ts`); each product is exact in f64.
 * 2. Per instruction (K = 32) and output element, the exact sum of the accumulator and the
 *    32 products is truncated toward zero to 14 significant bits in f32's exponent range
 *    ({@link truncFp22}), and that value (an f32) is the new accumulator. No other rounding.
 *
 * Which bits the hardware drops inside one instruction (alignment of the products to the
 * largest exponent, where it truncates) is not documented; this is a model of the precision
 * (the accumulator after each instruction carries 14 bits), not a bit-exact one. Its error:
 * each instruction loses less than 2^-13 of its partial sum, so after K / 32 instructions
 * the accumulator is within `ceil(K / 32) * 2^-13 * Σ|a_k b_k|` of the exact dot product;
 * the reference (harness/reference.ts) adds that term for 8-bit float operands. On the
 * H200, an e4m3 x e4m3 GEMM with K = 8192 measured a largest error of 0.0085 of the largest
 * output (bf16 out): consistent with that bound (2^-5 of Σ|a_k b_k|, itself at least 0.031
 * of the element's magnitude), and well above the bf16 rounding that an f32 accumulation
 * would leave. An fp8 row with an f16 accumulator (not emitted by the compiler)
 * is modelled as the f16 rows above.
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

export * from "./rounding.ts";
export * from "./packing.ts";
export * from "./scalar.ts";
export * from "./approx.ts";
export * from "./ulp.ts";
export * from "./fma.ts";
export { fp8ToNumber, numberToFp8 } from "./fp8.ts";
export { FP8_ACC_BITS, fp8AccumulateTruncated, truncFp22 } from "./fp8_acc.ts";
