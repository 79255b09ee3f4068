/**
 * Integer packing: 8-, 4- and 1-bit operands in 32-bit registers in PTX's
 * layout (element 0 in the least significant bits).
 *
 * @module
 */

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
