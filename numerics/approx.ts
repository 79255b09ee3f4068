/**
 * Activation functions and approximate instructions: the reference
 * definitions of the epilogue's activations and the simulator's
 * `ex2.approx` / `rcp.approx` / `tanh.approx`.
 *
 * @module
 */

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
 * import { equal } from "node:assert/strict";
 * import { ex2Approx } from "./mod.ts";
 * equal(ex2Approx(3), 8);
 * equal(ex2Approx(-Infinity), 0);
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
 * import { equal } from "node:assert/strict";
 * import { rcpApprox } from "./mod.ts";
 * equal(rcpApprox(4), 0.25);
 * equal(rcpApprox(0), Infinity);
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
 * import { equal } from "node:assert/strict";
 * import { tanhApprox } from "./mod.ts";
 * equal(tanhApprox(0), 0);
 * equal(tanhApprox(Infinity), 1);
 * ```
 */
export function tanhApprox(x: number): number {
  return Math.fround(Math.tanh(x));
}
