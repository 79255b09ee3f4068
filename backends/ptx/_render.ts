/**
 * Rendering the simple (non-structured) kernel-IR operations: one renderer per
 * operation, each filling a template of `OP_TEMPLATES` (_tables.ts).
 *
 * @module
 */

import type { Kernel, KernelParam, Op, Reg } from "../../ir/kernel.ts";
import { regName } from "../../ir/print_kernel.ts";
import { MMA_SHAPES, type MmaShape } from "../../ir/mma_table.ts";
import { unreachable } from "../../ir/gemm.ts";
import {
  BIN_PTX,
  classOf,
  CVT_PTX,
  HALF_TMP,
  IMM_OF_REG,
  MAD_PTX,
  MMA_OPERAND_REGS,
  OP_TEMPLATES,
  PtxError,
  REG_BITS,
  REG_PTX,
  type RegClass,
  SREG_PTX,
  UN_PTX,
} from "./_tables.ts";
import {
  addr,
  classOfMnemonic,
  expect,
  fillAfter,
  fits,
  fitsAll,
  immText,
  memOperands,
  NO_HOLES,
  opd,
  regList,
  uniformVector,
} from "./_operands.ts";

/** The state of printing one entry's body. */
export interface Ctx {
  readonly kernel: Kernel;
  readonly params: ReadonlyMap<string, KernelParam>;
  /** The body's text so far (every line ends in `\n`). */
  text: string;
  /** What starts the current operation's lines: the indentation and any guard. */
  pre: string;
  labels: number;
  loops: number;
  halfTmp: boolean;
  divergent: boolean;
}

type Simple = Exclude<Op, { op: "for" | "if" }>;
type Renderers = { readonly [K in Simple["op"]]: (o: Extract<Op, { op: K }>, cx: Ctx) => void };

/** Appends one instruction line: {@link Ctx.pre}, the filled template, `;`. */
export function put(cx: Ctx, tpl: string, holes: Readonly<Record<string, string>>): void {
  cx.text = fillAfter(cx.text + cx.pre, tpl, holes) + ";\n";
}

/** Appends one line without the `;` (a comment). */
export function putLine(cx: Ctx, tpl: string, holes: Readonly<Record<string, string>>): void {
  cx.text = fillAfter(cx.text + cx.pre, tpl, holes) + "\n";
}

/** The PTX name of a kernel parameter (`param_NAME`: no clash with PTX keywords). */
export function paramSymbol(p: KernelParam): string {
  return `param_${p.name}`;
}

const MMA_BY_NAME: ReadonlyMap<string, MmaShape> = new Map(MMA_SHAPES.map((s) => [s.name, s]));

/** The renderer of each simple operation (one template fill each, after its checks). */
export const RENDER: Renderers = {
  param(o, cx) {
    const p = cx.params.get(o.name);
    if (p === undefined) {
      throw new PtxError(`Unknown parameter "${o.name}"`);
    }
    const d = regName(o.dst);
    expect(`parameter "${p.name}"`, classOf(p.ptx), o.dst);
    put(cx, OP_TEMPLATES.param, { t: p.ptx, d, name: paramSymbol(p) });
    if (p.kind === "tensor") put(cx, OP_TEMPLATES.cvta, { d });
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
  cpasync(o, cx) {
    if (o.cache === "cg" && o.bytes !== 16) {
      throw new PtxError(`cp.async.cg copies 16 bytes, not ${o.bytes}`);
    }
    expect("cp.async shared address", "i32", o.dst);
    expect("cp.async global address", "u64", o.src);
    expect("cp.async source size", "i32", o.srcBytes);
    put(cx, OP_TEMPLATES.cpasync, {
      cache: o.cache,
      hint: o.prefetch === undefined ? "" : `.L2::${o.prefetch}B`,
      dst: addr(o.dst, o.dstOffset),
      src: regName(o.src),
      bytes: String(o.bytes),
      n: opd(o.srcBytes, "u32"),
    });
  },
  prefetch(o, cx) {
    expect("prefetch address", "u64", o.addr);
    put(cx, OP_TEMPLATES.prefetch, {
      evict: o.evictLast === true ? "::evict_last" : "",
      addr: regName(o.addr),
    });
  },
  commit: (_o, cx) => put(cx, OP_TEMPLATES.commit, NO_HOLES),
  wait(o, cx) {
    if (!Number.isSafeInteger(o.n) || o.n < 0) {
      throw new PtxError(`cp.async.wait_group ${o.n}: the count must be a non-negative integer`);
    }
    put(cx, OP_TEMPLATES.wait, { n: String(o.n) });
  },
  bar(_o, cx) {
    if (cx.divergent) {
      throw new PtxError("bar.sync inside a non-uniform if");
    }
    put(cx, OP_TEMPLATES.bar, NO_HOLES);
  },
  ldmatrix(o, cx) {
    if (o.dst.length !== o.num) {
      throw new PtxError(`ldmatrix.x${o.num} with ${o.dst.length} destination registers`);
    }
    if (!fitsAll("b32", o.dst)) expect("ldmatrix", "b32", ...o.dst);
    uniformVector("ldmatrix", o.dst);
    expect("ldmatrix address", "i32", o.addr);
    put(cx, OP_TEMPLATES.ldmatrix, {
      num: String(o.num),
      trans: o.trans ? ".trans" : "",
      d: regList(o.dst),
      addr: addr(o.addr, o.offset),
    });
  },
  lds(o, cx) {
    expect("ld.shared address", "i32", o.addr);
    const m = memOperands("ld.shared", o.width, o.dst);
    put(cx, OP_TEMPLATES.lds, { v: m.v, w: m.w, d: m.list, addr: addr(o.addr, o.offset) });
  },
  sts(o, cx) {
    expect("st.shared address", "i32", o.addr);
    const m = memOperands("st.shared", o.width, o.src);
    put(cx, OP_TEMPLATES.sts, { v: m.v, w: m.w, a: m.list, addr: addr(o.addr, o.offset) });
  },
  ldg(o, cx) {
    expect("ld.global address", "u64", o.addr);
    const m = memOperands("ld.global", o.width, o.dst);
    put(cx, OP_TEMPLATES.ldg, {
      cache: o.cache === "cg" ? ".cg" : "",
      v: m.v,
      w: m.w,
      d: m.list,
      addr: addr(o.addr, o.offset),
    });
  },
  atom(o, cx) {
    expect("atom.global address", "u64", o.addr);
    expect("atom.global.add.u32", "i32", o.dst, o.b);
    put(cx, OP_TEMPLATES.atom, {
      d: regName(o.dst),
      addr: addr(o.addr, o.offset),
      b: opd(o.b, "u32"),
    });
  },
  fence(_o, cx) {
    put(cx, OP_TEMPLATES.fence, NO_HOLES);
  },
  stg(o, cx) {
    expect("st.global address", "u64", o.addr);
    const m = memOperands("st.global", o.width, o.src);
    put(cx, OP_TEMPLATES.stg, { v: m.v, w: m.w, a: m.list, addr: addr(o.addr, o.offset) });
  },
  mma(o, cx) {
    const row = MMA_BY_NAME.get(o.shape);
    if (row === undefined) throw new PtxError(`Unknown mma shape "${o.shape}"`);
    const acc = MMA_OPERAND_REGS[row.c.regType];
    put(cx, OP_TEMPLATES.mma, {
      mn: row.ptx,
      d: mmaFrag(row, "d", o.d, row.c.regs, acc),
      a: mmaFrag(row, "a", o.a, row.a.regs, MMA_OPERAND_REGS[row.a.regType]),
      b: mmaFrag(row, "b", o.b, row.b.regs, MMA_OPERAND_REGS[row.b.regType]),
      c: mmaFrag(row, "c", o.c, row.c.regs, acc),
    });
  },
  comment: (o, cx) => putLine(cx, OP_TEMPLATES.comment, { text: o.text.replace(/[\r\n]+/g, " ") }),
};

/** One `mma` fragment operand, `{%b1, %b2, ...}`, checked against the shape. */
export function mmaFrag(
  row: MmaShape,
  what: string,
  rs: readonly Reg[],
  regs: number,
  cls: RegClass,
): string {
  if (rs.length !== regs) {
    throw new PtxError(`mma ${row.name}: ${what} has ${rs.length} registers, not ${regs}`);
  }
  if (!fitsAll(cls, rs)) expect(`mma ${row.name} ${what}`, cls, ...rs);
  return regList(rs);
}

/** {@link RENDER} by operation, through one call site per operation (a table lookup
 * and one shared call site would be megamorphic, and this is the printer's inner loop). */
export function render(o: Simple, cx: Ctx): void {
  switch (o.op) {
    case "param":
      return RENDER.param(o, cx);
    case "sreg":
      return RENDER.sreg(o, cx);
    case "mov":
      return RENDER.mov(o, cx);
    case "smembase":
      return RENDER.smembase(o, cx);
    case "bin":
      return RENDER.bin(o, cx);
    case "mad":
      return RENDER.mad(o, cx);
    case "mulwide":
      return RENDER.mulwide(o, cx);
    case "un":
      return RENDER.un(o, cx);
    case "setp":
      return RENDER.setp(o, cx);
    case "selp":
      return RENDER.selp(o, cx);
    case "cvt":
      return RENDER.cvt(o, cx);
    case "pack":
      return RENDER.pack(o, cx);
    case "unpack":
      return RENDER.unpack(o, cx);
    case "cpasync":
      return RENDER.cpasync(o, cx);
    case "prefetch":
      return RENDER.prefetch(o, cx);
    case "commit":
      return RENDER.commit(o, cx);
    case "wait":
      return RENDER.wait(o, cx);
    case "bar":
      return RENDER.bar(o, cx);
    case "ldmatrix":
      return RENDER.ldmatrix(o, cx);
    case "lds":
      return RENDER.lds(o, cx);
    case "sts":
      return RENDER.sts(o, cx);
    case "ldg":
      return RENDER.ldg(o, cx);
    case "stg":
      return RENDER.stg(o, cx);
    case "atom":
      return RENDER.atom(o, cx);
    case "fence":
      return RENDER.fence(o, cx);
    case "mma":
      return RENDER.mma(o, cx);
    case "comment":
      return RENDER.comment(o, cx);
    default:
      return unreachable(o);
  }
}
