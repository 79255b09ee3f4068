/**
 * Rendering the register operations (parameters, special registers, moves,
 * arithmetic, comparisons, conversions, packing) and comments: each checks its
 * operands' classes and fills one template of `OP_TEMPLATES` (_tables.ts).
 *
 * @module
 */

import type { KernelParam } from "../../ir/kernel.ts";
import { regName } from "../../ir/print_kernel.ts";
import {
  BIN_PTX,
  classOf,
  CVT_PTX,
  HALF_TMP,
  IMM_OF_REG,
  MAD_PTX,
  OP_TEMPLATES,
  PtxError,
  REG_BITS,
  REG_PTX,
  SREG_PTX,
  UN_PTX,
} from "./_tables.ts";
import { classOfMnemonic, expect, fits, immText, opd } from "./_operands.ts";
import { put, putLine, type Renderers } from "./_context.ts";

/** The PTX name of a kernel parameter (`param_NAME`: no clash with PTX keywords). */
export function paramSymbol(p: KernelParam): string {
  return `param_${p.name}`;
}

/** The operations rendered here. */
export type RegOpName =
  | "param"
  | "sreg"
  | "mov"
  | "smembase"
  | "bin"
  | "mad"
  | "mulwide"
  | "un"
  | "setp"
  | "selp"
  | "cvt"
  | "pack"
  | "unpack"
  | "comment";

/** The renderer of each register operation and of comments. */
export const REG_RENDER: Renderers<RegOpName> = {
  param(o, cx) {
    const p = cx.params.get(o.name);
    if (p === undefined) {
      throw new PtxError(`Unknown parameter "${o.name}"`);
    }
    const d = regName(o.dst);
    expect(`parameter "${p.name}"`, classOf(p.ptx), o.dst);
    put(cx, OP_TEMPLATES.param, { t: p.ptx, d, name: paramSymbol(p) });
    if (p.kind === "tensor" || p.kind === "table") put(cx, OP_TEMPLATES.cvta, { d });
  },
  sreg(o, cx) {
    expect("sreg", "i32", o.dst);
    put(cx, OP_TEMPLATES.sreg, { d: regName(o.dst), sreg: SREG_PTX[o.sreg] });
  },
  mov(o, cx) {
    // A register source of another type of the same size moves its bits (`mov.bN`).
    const t = o.src.kind === "reg" && o.src.type !== o.dst.type && o.dst.type !== "pred"
      ? `b${REG_BITS[o.dst.type]}`
      : REG_PTX[o.dst.type];
    if (
      o.src.kind === "reg" &&
      (REG_BITS[o.src.type] !== REG_BITS[o.dst.type] ||
        (o.src.type === "pred") !== (o.dst.type === "pred"))
    ) {
      throw new PtxError(`mov: ${o.src.type} register ${regName(o.src)} into ${o.dst.type}`);
    }
    put(cx, OP_TEMPLATES.mov, { t, d: regName(o.dst), a: opd(o.src, IMM_OF_REG[o.dst.type]) });
  },
  smembase(o, cx) {
    expect("smembase", "i32", o.dst);
    put(cx, OP_TEMPLATES.smembase, { d: regName(o.dst) });
  },
  bin(o, cx) {
    const mn = BIN_PTX[o.fn][o.type];
    if (mn === undefined) throw new PtxError(`No PTX instruction for bin ${o.fn}.${o.type}`);
    const shift = o.fn === "shl" || o.fn === "shr";
    const bType = shift ? "u32" : o.type;
    const cls = classOfMnemonic(mn);
    if (!fits(cls, o.dst) || !fits(cls, o.a)) expect(mn, cls, o.dst, o.a);
    const bCls = shift ? "i32" : cls;
    if (!fits(bCls, o.b)) expect(`${mn} ${shift ? "shift amount" : "operand b"}`, bCls, o.b);
    put(cx, OP_TEMPLATES.bin, {
      mn,
      d: regName(o.dst),
      a: opd(o.a, o.type),
      b: opd(o.b, bType),
    });
  },
  mad(o, cx) {
    const mn = MAD_PTX[o.type];
    const cls = classOfMnemonic(mn);
    if (!fits(cls, o.dst) || !fits(cls, o.a) || !fits(cls, o.b) || !fits(cls, o.c)) {
      expect(mn, cls, o.dst, o.a, o.b, o.c);
    }
    put(cx, OP_TEMPLATES.mad, {
      mn,
      d: regName(o.dst),
      a: opd(o.a, o.type),
      b: opd(o.b, o.type),
      c: opd(o.c, o.type),
    });
  },
  mulwide(o, cx) {
    expect("mul.wide.u32", "u64", o.dst);
    expect("mul.wide.u32", "i32", o.a, o.b);
    put(cx, OP_TEMPLATES.mulwide, { d: regName(o.dst), a: opd(o.a, "u32"), b: opd(o.b, "u32") });
  },
  un(o, cx) {
    const mn = UN_PTX[o.fn][o.type];
    if (mn === undefined) throw new PtxError(`No PTX instruction for un ${o.fn}.${o.type}`);
    expect(mn, classOfMnemonic(mn), o.src);
    expect(mn, o.fn === "popc" ? "i32" : classOfMnemonic(mn), o.dst);
    put(cx, OP_TEMPLATES.un, { mn, d: regName(o.dst), a: opd(o.src, o.type) });
  },
  setp(o, cx) {
    expect("setp", "pred", o.dst);
    const cls = classOf(o.type);
    if (!fits(cls, o.a) || !fits(cls, o.b)) expect(`setp.${o.cmp}.${o.type}`, cls, o.a, o.b);
    put(cx, OP_TEMPLATES.setp, {
      cmp: o.cmp,
      t: o.type,
      d: regName(o.dst),
      a: opd(o.a, o.type),
      b: opd(o.b, o.type),
    });
  },
  selp(o, cx) {
    const cls = classOf(o.type);
    if (!fits(cls, o.dst) || !fits(cls, o.a) || !fits(cls, o.b)) {
      expect(`selp.${o.type}`, cls, o.dst, o.a, o.b);
    }
    expect("selp predicate", "pred", o.p);
    put(cx, OP_TEMPLATES.selp, {
      t: o.type,
      d: regName(o.dst),
      a: opd(o.a, o.type),
      b: opd(o.b, o.type),
      p: regName(o.p),
    });
  },
  cvt(o, cx) {
    const rule = CVT_PTX[o.kind];
    if (!fits(rule.srcRegs, o.src)) expect(`cvt.${o.kind} source`, rule.srcRegs, o.src);
    if (!fits(rule.dstRegs, o.dst)) expect(`cvt.${o.kind} destination`, rule.dstRegs, o.dst);
    if (o.src.kind === "imm" && rule.immViaHalf) {
      cx.halfTmp = true;
      put(cx, OP_TEMPLATES.mov, { t: "b16", d: HALF_TMP, a: immText(o.src.value, "b16") });
      put(cx, rule.tpl, { d: regName(o.dst), a: HALF_TMP });
      return;
    }
    put(cx, rule.tpl, { d: regName(o.dst), a: opd(o.src, rule.src) });
  },
  pack(o, cx) {
    expect("pack", "b32", o.dst);
    expect("pack", "b16", o.lo, o.hi);
    put(cx, OP_TEMPLATES.pack, { d: regName(o.dst), lo: regName(o.lo), hi: regName(o.hi) });
  },
  unpack(o, cx) {
    expect("unpack", "b32", o.src);
    expect("unpack", "b16", o.lo, o.hi);
    put(cx, OP_TEMPLATES.unpack, { lo: regName(o.lo), hi: regName(o.hi), a: regName(o.src) });
  },
  comment: (o, cx) => putLine(cx, OP_TEMPLATES.comment, { text: o.text.replace(/[\r\n]+/g, " ") }),
};
