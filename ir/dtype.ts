/**
 * Element types of gemmc and their facts, as data.
 *
 * @module
 */

/** Every element type the DSL knows (README.md, The DSL). */
export type Dtype =
  | "f64"
  | "f32"
  | "tf32"
  | "f16"
  | "bf16"
  | "e4m3"
  | "e5m2"
  | "s32"
  | "s8"
  | "u8"
  | "s4"
  | "u4"
  | "b1";

/** Facts about one element type. */
export interface DtypeInfo {
  /** Storage width in bits (tf32 is stored as 32-bit f32). */
  readonly bits: number;
  /** Floating-point type. */
  readonly float: boolean;
  /** Signed integer type (false for floats, unsigned and b1). */
  readonly signed: boolean;
  /** The PTX type a scalar parameter of this type is passed as, if it may be a scalar. */
  readonly ptxParam: "f64" | "f32" | "s32" | "u32" | null;
}

/** The table of element types, frozen. */
export const DTYPE_INFO: Readonly<Record<Dtype, DtypeInfo>> = Object.freeze(
  {
    f64: Object.freeze({ bits: 64, float: true, signed: false, ptxParam: "f64" }),
    f32: Object.freeze({ bits: 32, float: true, signed: false, ptxParam: "f32" }),
    tf32: Object.freeze({ bits: 32, float: true, signed: false, ptxParam: "f32" }),
    f16: Object.freeze({ bits: 16, float: true, signed: false, ptxParam: "f32" }),
    bf16: Object.freeze({ bits: 16, float: true, signed: false, ptxParam: "f32" }),
    // sm90's 8-bit floats (OCP FP8: E4M3, no infinities, and E5M2): operands only.
    e4m3: Object.freeze({ bits: 8, float: true, signed: false, ptxParam: null }),
    e5m2: Object.freeze({ bits: 8, float: true, signed: false, ptxParam: null }),
    s32: Object.freeze({ bits: 32, float: false, signed: true, ptxParam: "s32" }),
    s8: Object.freeze({ bits: 8, float: false, signed: true, ptxParam: "s32" }),
    u8: Object.freeze({ bits: 8, float: false, signed: false, ptxParam: "u32" }),
    s4: Object.freeze({ bits: 4, float: false, signed: true, ptxParam: "s32" }),
    u4: Object.freeze({ bits: 4, float: false, signed: false, ptxParam: "u32" }),
    b1: Object.freeze({ bits: 1, float: false, signed: false, ptxParam: "u32" }),
  } as const,
);

/**
 * All dtypes in the order the README (The DSL) lists them.
 *
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { DTYPES } from "./dtype.ts";
 * ok(DTYPES.includes("bf16") && DTYPES.includes("s4"));
 * ```
 */
export const DTYPES: readonly Dtype[] = Object.freeze(
  [
    "f64",
    "f32",
    "tf32",
    "f16",
    "bf16",
    "e4m3",
    "e5m2",
    "s32",
    "s8",
    "u8",
    "s4",
    "u4",
    "b1",
  ] as const,
);

/**
 * Whether a string names a dtype.
 *
 * @param s The candidate name.
 * @returns True for one of {@link DTYPES}.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { isDtype } from "./dtype.ts";
 * ok(isDtype("bf16"));
 * ok(!isDtype("f8"));
 * ```
 */
export function isDtype(s: string): s is Dtype {
  return (DTYPES as readonly string[]).includes(s);
}

/**
 * The default alignment of a tensor of this type, in elements: 16 bytes, the
 * widest vector a cp.async or a global load moves (README.md, The DSL).
 *
 * @param t The element type.
 * @returns 128 / bits.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { defaultAlign } from "./dtype.ts";
 * equal(defaultAlign("f16"), 8);
 * ```
 */
export function defaultAlign(t: Dtype): number {
  return 128 / DTYPE_INFO[t].bits;
}

/**
 * The smallest alignment a tensor of this type may declare, in elements: a
 * whole byte (rows start at byte addresses), so 8 for b1, 2 for the 4-bit
 * types and 1 for the rest. The checker refuses a smaller `align`, and the
 * advice for sizes that break an alignment names this one.
 *
 * @param t The element type.
 * @returns max(1, 8 / bits).
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { minAlign } from "./dtype.ts";
 * equal(minAlign("b1"), 8);
 * equal(minAlign("s4"), 2);
 * equal(minAlign("f16"), 1);
 * ```
 */
export function minAlign(t: Dtype): number {
  return Math.max(1, 8 / DTYPE_INFO[t].bits);
}

/**
 * Whether a type is one of sm90's 8-bit floats (`e4m3`, `e5m2`).
 *
 * @param t The element type.
 * @returns True for e4m3 and e5m2.
 */
export function isFp8(t: Dtype): t is "e4m3" | "e5m2" {
  return t === "e4m3" || t === "e5m2";
}
