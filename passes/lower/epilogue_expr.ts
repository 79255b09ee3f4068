/**
 * The epilogue expression in registers: its evaluation (functions and operators
 * through the epilogue table's builders, ir/epilogue.ts), casts, the
 * conversions to and from the compute type and the packing of 16-bit results.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Dtype } from "../../ir/dtype.ts";
import { type EpilogueExpr, unreachable } from "../../ir/gemm.ts";
import type { Op, Operand, Reg, RegType } from "../../ir/kernel.ts";
import type { LowerContext } from "./context.ts";
import * as ir from "../../ir/builder.ts";
import type { ComputeType, EpilogueEmitter } from "../../ir/epilogue.ts";
import { argsOf, fnOf } from "../../ir/epilogue_expr.ts";

/** An accumulator element as the compute type. */
export function accValue(cx: LowerContext, r: Reg, elem: number, c: ComputeType): Reg {
  const b = cx.b;
  const at = cx.shape.cType;
  if (at === "f16") {
    const lo = b.reg("b16");
    const hi = b.reg("b16");
    b.emit(ir.unpack(lo, hi, r));
    const f = b.reg("f32");
    b.emit(ir.cvt("f32.f16", f, elem === 0 ? lo : hi));
    return f;
  }
  if (at === "f32" && c === "f32") return r;
  if (at === "f64" && c === "f64") return r;
  if (at === "s32" && c === "s32") return r;
  if (at === "s32" && c === "f32") {
    const f = b.reg("f32");
    b.emit(ir.cvt("f32.s32", f, r));
    return f;
  }
  if (at === "s32" && c === "f64") {
    const f = b.reg("f64");
    b.emit(ir.cvt("f64.s32", f, r));
    return f;
  }
  throw new Error(`No conversion from accumulator ${at} to compute ${c}`);
}

/** Converts a value of type `from` into the compute type. */
function toCompute(cx: LowerContext, v: Reg, from: RegType, c: ComputeType): Reg {
  if (from === c) return v;
  const b = cx.b;
  const dst = b.reg(c);
  const kinds: Record<
    string,
    "f64.f32" | "f32.f64" | "f32.s32" | "f64.s32" | "s32.f32" | "s32.f64"
  > = {
    "f32>f64": "f64.f32",
    "f64>f32": "f32.f64",
    "s32>f32": "f32.s32",
    "s32>f64": "f64.s32",
    "f32>s32": "s32.f32",
    "f64>s32": "s32.f64",
  };
  const kind = kinds[`${from}>${c}`];
  if (kind === undefined) throw new Error(`No conversion ${from} -> ${c}`);
  b.emit(ir.cvt(kind, dst, v));
  return dst;
}

/** The epilogue expression of one accumulator value, in the compute type;
 * `load` gives the value of each tensor element it reads. Functions and
 * operators emit their instructions by the table's builders (ir/epilogue.ts). */
export function evalEpilogue(
  cx: LowerContext,
  e: EpilogueExpr,
  accV: Reg,
  c: ComputeType,
  load: (e: Extract<EpilogueExpr, { op: "load" }>) => Reg,
): Reg {
  const ev = (x: EpilogueExpr) => evalEpilogue(cx, x, accV, c, load);
  const constant = (v: number): Reg => cx.mov(c, imm(v));
  switch (e.op) {
    case "acc":
      return accV;
    case "const":
      return constant(e.value);
    case "scalar": {
      const r = cx.params.get(e.name)!;
      return toCompute(cx, r, r.type, c);
    }
    case "load":
      return load(e);
    case "unary":
    case "binary":
    case "clamp": {
      const args = argsOf(e).map((x) => () => ev(x));
      return fnOf(e)!.row.build(epilogueEmitter(cx), args, c);
    }
    case "cast":
      return castTo(cx, ev(e.x), c, e.to);
    default:
      return unreachable(e);
  }
}

/** The kernel-IR emitter the epilogue table's builders emit through (ir/epilogue.ts). */
function epilogueEmitter(cx: LowerContext): EpilogueEmitter<Reg> {
  const b = cx.b;
  const op = (v: Reg | number): Operand => (typeof v === "number" ? imm(v) : v);
  return {
    bin: (fn, t, x, y) => cx.bin(fn, t, op(x), op(y)),
    un: (fn, t, x) => {
      const dst = b.reg(t);
      b.emit(ir.un(fn, t, dst, x));
      return dst;
    },
    mad: (x, y, z) => {
      const dst = b.reg("f32");
      b.emit(ir.mad("f32", dst, op(x), op(y), op(z)));
      return dst;
    },
    convert: (x, from, to) => toCompute(cx, x, from, to),
  };
}

/** Rounds a compute value to `to` and back (a cast inside the epilogue). */
function castTo(cx: LowerContext, x: Reg, c: ComputeType, to: Dtype): Reg {
  const b = cx.b;
  if (to === c) return x;
  if (to === "f16" || to === "bf16") {
    const xf = c === "f32" ? x : toCompute(cx, x, c, "f32");
    const h = b.reg("b16");
    b.emit(ir.cvt(to === "f16" ? "f16.f32" : "bf16.f32", h, xf));
    const back = b.reg("f32");
    const widen: Op = {
      op: "cvt",
      kind: to === "f16" ? "f32.f16" : "f32.bf16",
      dst: back,
      src: h,
    };
    b.emit(widen);
    if (c === "f32") cx.narrowed.set(back, { to, h, widen });
    return c === "f32" ? back : toCompute(cx, back, "f32", c);
  }
  if (to === "f32") {
    const xf = toCompute(cx, x, c, "f32");
    return toCompute(cx, xf, "f32", c);
  }
  if (to === "f64") return x; // f64 holds every f32 and s32 value exactly
  // Integer casts: round to s32 (saturating), then clamp to the type's range.
  const xi = c === "s32" ? x : toCompute(cx, x, c, "s32");
  const [lo, hi] = to === "s8" ? [-128, 127] : to === "u8" ? [0, 255] : [null, null];
  const clamped = lo === null
    ? xi
    : cx.bin("min", "s32", cx.bin("max", "s32", xi, imm(lo)), imm(hi!));
  return c === "s32" ? clamped : toCompute(cx, clamped, "s32", c);
}

/** A compute value converted to D's type, in the register type the store takes. */
export function convertOut(cx: LowerContext, v: Reg, c: ComputeType, out: Dtype): Reg {
  const b = cx.b;
  switch (out) {
    case "f32":
      return toCompute(cx, v, c, "f32");
    case "f64":
      return toCompute(cx, v, c, "f64");
    case "f16":
    case "bf16": {
      // `out(x)` of a value that is already `cvt.f32(h)` with h of type
      // `out`: h itself (the round trip is exact), as in D = f16(A * B).
      // The widening is then unread (v was the expression's value): taken back.
      const n = c === "f32" ? cx.narrowed.get(v) : undefined;
      if (n !== undefined && n.to === out) {
        cx.b.retract(n.widen);
        cx.narrowed.delete(v);
        return n.h;
      }
      const f = toCompute(cx, v, c, "f32");
      const h = b.reg("b16");
      b.emit(ir.cvt(out === "f16" ? "f16.f32" : "bf16.f32", h, f));
      return h;
    }
    case "s32":
      return toCompute(cx, v, c, "s32");
    case "s8":
    case "u8": {
      const i = toCompute(cx, v, c, "s32");
      const [lo, hi] = out === "s8" ? [-128, 127] : [0, 255];
      return cx.bin("min", "s32", cx.bin("max", "s32", i, imm(lo)), imm(hi));
    }
    default:
      throw new Error(`Unsupported output type "${out}"`);
  }
}

/** Two 16-bit values in one 32-bit register, `lo` in the low half. */
export function pack(cx: LowerContext, lo: Reg, hi: Reg): Reg {
  const w = cx.b.reg("b32");
  cx.b.emit(ir.pack(w, lo, hi));
  return w;
}

/** Packs 4 consecutive elements of an 8- or 16-bit D type into 32-bit words, element 0 lowest. */
export function packOut(cx: LowerContext, vs: Reg[], t: Dtype): Reg[] {
  if (t === "f16" || t === "bf16") return [pack(cx, vs[0]!, vs[1]!), pack(cx, vs[2]!, vs[3]!)];
  // s8/u8: clamped s32 values; their low bytes, shifted into place.
  let w: Reg | null = null;
  vs.forEach((v, i) => {
    const byte = cx.bin("and", "s32", v, imm(255));
    const at = i === 0 ? byte : cx.bin("shl", "s32", byte, imm(8 * i));
    w = w === null ? at : cx.bin("or", "s32", w, at);
  });
  return [w!];
}

/** A loaded epilogue tensor element (its register as loaded) as a compute value. */
export function loadedToCompute(
  cx: LowerContext,
  v: Reg,
  dtype: Dtype,
  c: ComputeType,
): Reg {
  const b = cx.b;
  switch (dtype) {
    case "f16":
    case "bf16": {
      const f = b.reg("f32");
      b.emit(ir.cvt(dtype === "f16" ? "f32.f16" : "f32.bf16", f, v));
      return toCompute(cx, f, "f32", c);
    }
    case "f32":
    case "f64":
    case "s32":
      return toCompute(cx, v, v.type, c);
    case "s8": {
      // Sign-extend the low byte: (v << 24) >> 24 (arithmetic).
      const sh = cx.bin("shl", "s32", cx.s32Of(v), imm(24));
      const ext = cx.bin("shr", "s32", sh, imm(24));
      return toCompute(cx, ext, "s32", c);
    }
    case "u8":
      return toCompute(cx, cx.s32Of(v), "s32", c);
    default:
      throw new Error(`Unsupported epilogue tensor type "${dtype}"`);
  }
}
