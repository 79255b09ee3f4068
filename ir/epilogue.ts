/**
 * The epilogue functions and operators, as one table: a row per function with
 * everything each stage needs to know about it. The checker reads the names,
 * arities and typing rules; the GEMM IR printer reads the spellings; the
 * lowering calls the kernel-IR builders; the reference (harness/reference.ts)
 * evaluates the exact semantics and widens its tolerance by the error bounds.
 *
 * Adding a function is one row here plus its tests: a row of arity 1 becomes a
 * `unary` node of the GEMM IR, arity 2 a `binary` node, and the one row of
 * arity 3 (`clamp`) the `clamp` node (ir/epilogue_expr.ts builds them).
 *
 * The builders are generic over the register type so that this table depends
 * on no other module: the lowering passes an {@link EpilogueEmitter} that
 * emits kernel IR, the tests pass emitters that record or evaluate.
 *
 * @module
 */

/** Epilogue arithmetic type: every epilogue value is computed in it. */
export type ComputeType = "f32" | "f64" | "s32";

/** The binary kernel-IR instructions a builder may emit (`bin`). */
export type EmitBinFn = "add" | "sub" | "mul" | "min" | "max";

/** The unary kernel-IR instructions a builder may emit (`un`); `ex2`, `rcp`
 * and `tanh` are the approximate f32 instructions of {@link APPROX}. */
export type EmitUnFn = "neg" | "abs" | ApproxFn;

/** The approximate PTX instructions (`ex2.approx.f32`, ...). */
export type ApproxFn = "ex2" | "rcp" | "tanh";

/**
 * What a kernel-IR builder may emit. Operands are registers or immediates
 * (plain numbers); each method returns the new destination register.
 */
export interface EpilogueEmitter<R> {
  /**
   * `dst = a fn b` in type `t` (kernel-IR `bin`).
   *
   * @param fn The function.
   * @param t The type it computes in.
   * @param a The first operand.
   * @param b The second operand.
   * @returns The destination register.
   */
  bin(fn: EmitBinFn, t: ComputeType, a: R | number, b: R | number): R;
  /**
   * `dst = fn(x)` in type `t` (kernel-IR `un`).
   *
   * @param fn The function.
   * @param t The type it computes in.
   * @param x The operand.
   * @returns The destination register.
   */
  un(fn: EmitUnFn, t: ComputeType, x: R): R;
  /**
   * `dst = a * b + c` in f32 (kernel-IR `mad`).
   *
   * @param a The first factor.
   * @param b The second factor.
   * @param c The addend.
   * @returns The destination register.
   */
  mad(a: R | number, b: R | number, c: R | number): R;
  /**
   * `x` converted from one compute type to another (kernel-IR `cvt`).
   *
   * @param x The value.
   * @param from Its compute type.
   * @param to The compute type wanted.
   * @returns The destination register.
   */
  convert(x: R, from: ComputeType, to: ComputeType): R;
}

/**
 * The approximate instructions: their largest relative error on the GPU (PTX
 * ISA 8.x, `ex2`, `rcp`, `tanh`) and the function in numerics/approx.ts
 * that the simulator evaluates each with (backends/sim/_alu.ts dispatches `un`
 * to it; tests/epilogue_table_test.ts checks that the name is a function there
 * and evaluates every row's builder with it).
 */
export const APPROX: Readonly<
  Record<ApproxFn, { readonly relError: number; readonly sim: string }>
> = Object.freeze({
  ex2: { relError: 2 ** -22, sim: "ex2Approx" },
  rcp: { relError: 2 ** -23, sim: "rcpApprox" },
  tanh: { relError: 2 ** -10.987, sim: "tanhApprox" },
});

/** How a function is written in the DSL and in the printed GEMM IR. */
export type Spelling =
  /** `name(a, b, ...)`: a function the DSL calls by name. */
  | { readonly kind: "call" }
  /** `-x`, printed `-(x)`. */
  | { readonly kind: "prefix"; readonly symbol: "-" }
  /** `a + b`, printed `(a + b)`. */
  | { readonly kind: "infix"; readonly symbol: "+" | "-" | "*" };

/** One row of the table. `R` is the builder's register type. */
export interface EpilogueFnRow {
  /** The number of arguments. */
  readonly arity: 1 | 2 | 3;
  /** How the function is written. */
  readonly spelling: Spelling;
  /**
   * The typing rule. `any`: defined in every compute type (f32, f64, s32),
   * returning the same type. `float`: a floating-point function; it makes the
   * epilogue's compute type float (f32, or f64 with f64 accumulators) even in
   * an integer GEMM, and is evaluated in f32 with the approximate
   * instructions, its value converted back to f64 in an f64 epilogue.
   */
  readonly domain: "any" | "float";
  /**
   * Emits the function's kernel IR in compute type `c` and returns its value.
   * Each argument is a thunk that emits the argument's own instructions: the
   * builder calls each once, in an order it chooses, so that the instruction
   * order is the builder's to fix.
   */
  readonly build: <R>(em: EpilogueEmitter<R>, args: readonly (() => R)[], c: ComputeType) => R;
  /**
   * The simulator's semantics: the approximate instructions the builder
   * emits (each evaluated by the simulator with {@link APPROX}'s function);
   * every other instruction is exact IEEE arithmetic, rounded per instruction.
   */
  readonly approx: readonly ApproxFn[];
  /** The exact mathematical value in compute type `c` (f64 arithmetic for
   * float types, wrapping s32 arithmetic for s32). */
  readonly reference: (args: readonly number[], c: ComputeType) => number;
  /** The reference's tolerance for the function: a kernel's value may differ
   * by `bound * max(1, |value|)` beyond the accumulator's own error (0: exact
   * up to the rounding of the arithmetic). */
  readonly bound: number;
}

/** The tolerance of the approximate f32 functions: tanh.approx's 2^-10.99 and
 * the f32 arithmetic around it (ex2/rcp alone are far better, 2^-21). */
const APPROX_BOUND = 2 ** -10;

/** Wraps an s32 result; float results pass unchanged. */
const wrap = (x: number, c: ComputeType) => (c === "s32" ? x | 0 : x);

/** `body` evaluated in f32: the argument converted in, the value back out. */
function inF32<R>(em: EpilogueEmitter<R>, x: R, c: ComputeType, body: (v: R) => R): R {
  const xf = c === "f32" ? x : em.convert(x, c, "f32");
  const r = body(xf);
  return c === "f32" ? r : em.convert(r, "f32", c);
}

/** 1 / (1 + 2^(-v log2(e))), in f32. */
function sigmoidF32<R>(em: EpilogueEmitter<R>, v: R): R {
  const t = em.bin("mul", "f32", v, -Math.LOG2E);
  const ex = em.un("ex2", "f32", t);
  const den = em.bin("add", "f32", ex, 1);
  return em.un("rcp", "f32", den);
}

/** A row for an instruction that exists in every compute type. */
function exactBinary(
  fn: EmitBinFn,
  spelling: Spelling,
  reference: (a: number, b: number, c: ComputeType) => number,
): EpilogueFnRow & { readonly arity: 2 } {
  return {
    arity: 2,
    spelling,
    domain: "any",
    build: (em, [a, b], c) => em.bin(fn, c, a!(), b!()),
    approx: [],
    reference: ([a, b], c) => reference(a!, b!, c),
    bound: 0,
  };
}

/** A float-only function of one argument, built in f32 by `body`. */
function floatUnary(
  approx: readonly ApproxFn[],
  body: <R>(em: EpilogueEmitter<R>, x: R) => R,
  reference: (x: number) => number,
): EpilogueFnRow & { readonly arity: 1 } {
  return {
    arity: 1,
    spelling: { kind: "call" },
    domain: "float",
    build: (em, [x], c) => inF32(em, x!(), c, (v) => body(em, v)),
    approx,
    reference: ([x]) => reference(x!),
    bound: APPROX_BOUND,
  };
}

const CALL: Spelling = { kind: "call" };

/**
 * The names of the table and their arities, in table order: a new function
 * is a line here and its row in {@link EPILOGUE_FNS} (whose type holds the
 * two to each other). The GEMM IR's node types read the arities.
 */
export interface EpilogueArities {
  /** `relu(x)`: max(x, 0). */
  readonly relu: 1;
  /** `gelu(x)`: x·Φ(x) (tanh approximation). */
  readonly gelu: 1;
  /** `sigmoid(x)`: 1 / (1 + e^-x). */
  readonly sigmoid: 1;
  /** `silu(x)`: x·sigmoid(x). */
  readonly silu: 1;
  /** `tanh(x)`. */
  readonly tanh: 1;
  /** `exp(x)`: e^x. */
  readonly exp: 1;
  /** `abs(x)`: |x|. */
  readonly abs: 1;
  /** `min(a, b)`. */
  readonly min: 2;
  /** `max(a, b)`. */
  readonly max: 2;
  /** `clamp(x, lo, hi)`: min(max(x, lo), hi). */
  readonly clamp: 3;
  /** `-x`. */
  readonly neg: 1;
  /** `a + b`. */
  readonly add: 2;
  /** `a - b`. */
  readonly sub: 2;
  /** `a * b`. */
  readonly mul: 2;
}

/** Every name of the table. */
export type EpilogueFnName = keyof EpilogueArities;

/** The names of the table's rows of arity `n`. */
export type EpilogueFnOfArity<N extends 1 | 2 | 3> = {
  [K in EpilogueFnName]: EpilogueArities[K] extends N ? K : never;
}[EpilogueFnName];

/**
 * The table: every epilogue function and operator. The order of the `call`
 * rows is the order the checker lists them in ("expected one of ...").
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { EPILOGUE_FNS } from "./epilogue.ts";
 * equal(EPILOGUE_FNS.clamp.arity, 3);
 * equal(EPILOGUE_FNS.relu.spelling.kind, "call");
 * ```
 */
export const EPILOGUE_FNS: {
  readonly [K in EpilogueFnName]: EpilogueFnRow & { readonly arity: EpilogueArities[K] };
} = Object.freeze(
  {
    relu: {
      arity: 1,
      spelling: CALL,
      domain: "any",
      build: (em, [x], c) => em.bin("max", c, x!(), 0),
      approx: [],
      reference: ([x]) => Math.max(x!, 0),
      bound: 0,
    },
    gelu: floatUnary(["tanh"], (em, x) => {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const x2 = em.bin("mul", "f32", x, x);
      const inner = em.mad(x2, 0.044715, 1); // 1 + 0.044715 x^2
      const u = em.bin("mul", "f32", em.bin("mul", "f32", x, inner), Math.sqrt(2 / Math.PI));
      const th = em.un("tanh", "f32", u);
      const half = em.bin("mul", "f32", x, 0.5);
      return em.mad(half, th, half);
    }, (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)))),
    sigmoid: floatUnary(["ex2", "rcp"], sigmoidF32, (x) => 1 / (1 + Math.exp(-x))),
    silu: floatUnary(
      ["ex2", "rcp"],
      (em, x) => em.bin("mul", "f32", x, sigmoidF32(em, x)),
      (x) => x / (1 + Math.exp(-x)),
    ),
    tanh: floatUnary(["tanh"], (em, x) => em.un("tanh", "f32", x), Math.tanh),
    exp: floatUnary(
      ["ex2"],
      (em, x) => em.un("ex2", "f32", em.bin("mul", "f32", x, Math.LOG2E)),
      Math.exp,
    ),
    abs: {
      arity: 1,
      spelling: CALL,
      domain: "any",
      build: (em, [x], c) => em.un("abs", c, x!()),
      approx: [],
      reference: ([x], c) => wrap(Math.abs(x!), c),
      bound: 0,
    },
    min: exactBinary("min", CALL, (a, b) => Math.min(a, b)),
    max: exactBinary("max", CALL, (a, b) => Math.max(a, b)),
    clamp: {
      arity: 3,
      spelling: CALL,
      domain: "any",
      // Today's order: x, lo, the max, then hi, the min.
      build: (em, [x, lo, hi], c) => em.bin("min", c, em.bin("max", c, x!(), lo!()), hi!()),
      approx: [],
      reference: ([x, lo, hi]) => Math.min(Math.max(x!, lo!), hi!),
      bound: 0,
    },
    neg: {
      arity: 1,
      spelling: { kind: "prefix", symbol: "-" },
      domain: "any",
      build: (em, [x], c) => em.un("neg", c, x!()),
      approx: [],
      reference: ([x], c) => wrap(-x!, c),
      bound: 0,
    },
    add: exactBinary("add", { kind: "infix", symbol: "+" }, (a, b, c) => wrap(a + b, c)),
    sub: exactBinary("sub", { kind: "infix", symbol: "-" }, (a, b, c) => wrap(a - b, c)),
    mul: exactBinary(
      "mul",
      { kind: "infix", symbol: "*" },
      (a, b, c) => (c === "s32" ? Math.imul(a, b) : a * b),
    ),
  },
);

/**
 * The row of a name, or undefined when the table has none.
 *
 * @param name A function or operator name.
 * @returns Its row.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { epilogueFn } from "./epilogue.ts";
 * equal(epilogueFn("clamp")?.arity, 3);
 * equal(epilogueFn("nope"), undefined);
 * ```
 */
export function epilogueFn(name: string): EpilogueFnRow | undefined {
  return Object.hasOwn(EPILOGUE_FNS, name) ? EPILOGUE_FNS[name as EpilogueFnName] : undefined;
}

/**
 * The names the DSL calls, in table order: the rows spelt as a call.
 *
 * @returns The names, e.g. `relu`, `gelu`, ..., `clamp`.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { callableEpilogueFns } from "./epilogue.ts";
 * ok(callableEpilogueFns().includes("tanh"));
 * ok(!callableEpilogueFns().includes("add"));
 * ```
 */
export function callableEpilogueFns(): readonly EpilogueFnName[] {
  return (Object.keys(EPILOGUE_FNS) as EpilogueFnName[]).filter((n) =>
    EPILOGUE_FNS[n].spelling.kind === "call"
  );
}
