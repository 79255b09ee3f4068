/**
 * The math of the contraction: which operand types multiply (the legal MMA
 * type combinations), the accumulator (its default, or the schedule's
 * `accumulate`), the mode (tensor cores, 3xTF32 or SIMT, from `math`), and the
 * operation (a product, or `popc` of `&` / `^`).
 *
 * @module
 */

import type { TensorDeclAst } from "../ast.ts";
import type { MathMode, MathSpec } from "../../ir/gemm.ts";
import { type Dtype, isFp8 } from "../../ir/dtype.ts";
import { cover, fail, type Product, type Src } from "./scope.ts";
import type { ScheduleInfo } from "./schedule.ts";

const LEGAL_COMBOS = "f16 x f16 (accumulate f32 or f16), bf16 x bf16, f32|tf32 x f32|tf32, " +
  "f64 x f64, e4m3|e5m2 x e4m3|e5m2 (sm90), s8|u8 x s8|u8, s4|u4 x s4|u4, b1 x b1 (with popc)";

const isF32 = (t: Dtype) => t === "f32" || t === "tf32";
const isI8 = (t: Dtype) => t === "s8" || t === "u8";
const isI4 = (t: Dtype) => t === "s4" || t === "u4";

/** The default accumulator and the legal ones for the operand types, or why they are illegal. */
function accumulators(
  ta: Dtype,
  tb: Dtype,
  popc: boolean,
): { acc: Dtype; legal: readonly Dtype[] } | string {
  if (popc) {
    if (ta !== "b1" || tb !== "b1") return " for popc (it takes b1 operands)";
    return { acc: "s32", legal: ["s32"] };
  }
  if (ta === "b1" || tb === "b1") return " (b1 operands need popc(A & B) or popc(A ^ B))";
  if (ta === "f16" && tb === "f16") return { acc: "f32", legal: ["f32", "f16"] };
  if (ta === "bf16" && tb === "bf16") return { acc: "f32", legal: ["f32"] };
  if (isF32(ta) && isF32(tb)) return { acc: "f32", legal: ["f32"] };
  if (ta === "f64" && tb === "f64") return { acc: "f64", legal: ["f64"] };
  // sm90's 8-bit floats, in any pair; f32 accumulation (wgmma's f16 one is not offered).
  if (isFp8(ta) && isFp8(tb)) return { acc: "f32", legal: ["f32"] };
  if ((isI8(ta) && isI8(tb)) || (isI4(ta) && isI4(tb))) return { acc: "s32", legal: ["s32"] };
  return "";
}

/**
 * Decides the math of a contraction of `a` by `b`.
 *
 * @param src The source the spans point into.
 * @param a The A operand's declaration.
 * @param b The B operand's declaration.
 * @param main The contraction's product chain.
 * @param sched The schedule block's `math` and `accumulate` lines.
 * @returns The math spec.
 * @throws {DiagnosticError} E0109 for illegal operand types, E0113 for an
 *   illegal accumulator, E0123 for `math` on operands other than f32.
 */
export function checkMath(
  src: Src,
  a: TensorDeclAst,
  b: TensorDeclAst,
  main: Product,
  sched: ScheduleInfo,
): MathSpec {
  const ta = a.dtype;
  const tb = b.dtype;
  const span = main.root.kind === "popc" ? main.root.span : cover(
    main.factors.find((f) => f.kind === "access" && f.tensor.text === a.name.text)!.span,
    main.factors.find((f) => f.kind === "access" && f.tensor.text === b.name.text)!.span,
  );
  const popc = main.root.kind === "popc" ? main.root.op : null;
  const legal = accumulators(ta, tb, popc !== null);
  if (typeof legal === "string") {
    fail(
      src,
      "E0109",
      `Illegal operand types "${ta}" x "${tb}"${legal}: legal are ${LEGAL_COMBOS}`,
      span,
    );
  }
  let acc = legal.acc;
  if (sched.accumulate !== undefined) {
    const want = sched.accumulate.value;
    if (!legal.legal.includes(want)) {
      fail(
        src,
        "E0113",
        `Cannot accumulate in "${want}" with "${ta}" x "${tb}" operands: legal is ${
          legal.legal.join(" or ")
        }${want === "f16" ? " (f16 accumulation needs f16 operands)" : ""}`,
        sched.accumulate.span,
      );
    }
    acc = want;
  }
  let mode: MathMode = "tensor";
  if (sched.math !== undefined) {
    if (!isF32(ta) || !isF32(tb)) {
      fail(
        src,
        "E0123",
        `"math ${sched.math.value}" applies to f32 operands only; these are "${ta}" x "${tb}"`,
        sched.math.span,
      );
    }
    mode = sched.math.value === "tf32"
      ? "tensor"
      : sched.math.value === "3xtf32"
      ? "3xtf32"
      : "simt";
  }
  return {
    a: ta,
    b: tb,
    mmaA: isF32(ta) && mode !== "simt" ? "tf32" : ta,
    mmaB: isF32(tb) && mode !== "simt" ? "tf32" : tb,
    acc,
    mode,
    op: popc === "&" ? "and.popc" : popc === "^" ? "xor.popc" : "mul",
  };
}
