/**
 * Register-to-register operations, compiled to JavaScript: for each operation
 * the simulator writes one small loop over the block's threads, specialised on
 * its types, operands and guard, and compiles it with `new Function` (cached by
 * source text, so equal operations share compiled code). A register is a
 * typed array of `threads` lanes; the store into it does the wrap-around
 * (Uint32Array, Int32Array) or the rounding to f32 (Float32Array, round to
 * nearest even) that the operation's type asks for.
 *
 * Every semantic below is the kernel IR's (ir/kernel.ts), lane by lane.
 *
 * @module
 */

import type {
  AluOp,
  BinOp,
  CvtKind,
  Operand,
  Reg,
  RegType,
  SregOp,
  UnOp,
} from "../../ir/kernel.ts";
import {
  bf16BitsToF32,
  ex2Approx,
  f16BitsToF32,
  f32Bits,
  f32ToBf16Bits,
  f32ToF16Bits,
  f32ToTf32Rna,
  fmaF32,
  fmaF64,
  maxPtx,
  minPtx,
  popc32,
  rcpApprox,
  rniSatS32,
  tanhApprox,
} from "../../numerics/mod.ts";
import type { Machine, Mask, OpInfo, RegArray, Run } from "./_machine.ts";
import { SimError } from "./types.ts";

/** Exact value of every f16 bit pattern. */
export const F16_VALUES: Float64Array = (() => {
  const t = new Float64Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16BitsToF32(h);
  return t;
})();

const P32 = 4294967296;

function u64Split(a: number): [number, number] {
  const hi = Math.floor(a / P32);
  return [hi >>> 0, (a - hi * P32) >>> 0];
}

/** Helpers the generated code calls, as `H.name`. */
const HELPERS = Object.freeze({
  F16: F16_VALUES,
  bf16: bf16BitsToF32,
  toF16: f32ToF16Bits,
  toBf16: f32ToBf16Bits,
  tf32: f32ToTf32Rna,
  rni: rniSatS32,
  fmaF32,
  fmaF64,
  min: minPtx,
  max: maxPtx,
  popc: popc32,
  ex2: ex2Approx,
  rcp: rcpApprox,
  tanh: tanhApprox,
  u64and(a: number, b: number): number {
    const [ah, al] = u64Split(a);
    const [bh, bl] = u64Split(b);
    return ((ah & bh) >>> 0) * P32 + ((al & bl) >>> 0);
  },
  u64or(a: number, b: number): number {
    const [ah, al] = u64Split(a);
    const [bh, bl] = u64Split(b);
    return ((ah | bh) >>> 0) * P32 + ((al | bl) >>> 0);
  },
  u64xor(a: number, b: number): number {
    const [ah, al] = u64Split(a);
    const [bh, bl] = u64Split(b);
    return ((ah ^ bh) >>> 0) * P32 + ((al ^ bl) >>> 0);
  },
  u64div(a: number, b: number): number {
    let q = Math.floor(a / b);
    if (q * b > a) q--;
    else if ((q + 1) * b <= a) q++;
    return q;
  },
});

type Factory = (...args: unknown[]) => Run;

const FACTORIES = new Map<string, Factory>();

/** Collects the arrays and constants a generated loop closes over. */
class Gen {
  readonly names: string[] = [];
  readonly values: unknown[] = [];
  readonly pre: string[] = [];

  constructor(readonly M: Machine, readonly info: OpInfo) {}

  /** A name for a value the loop uses. */
  bind(v: unknown): string {
    const n = `x${this.names.length}`;
    this.names.push(n);
    this.values.push(v);
    return n;
  }

  /** `name[t]` of a register's view. */
  reg(r: Reg, as: RegType): string {
    return `${this.bind(this.M.view(r, as, this.info.index))}[t]`;
  }

  /** An operand read as `as`: a register view or a literal. */
  opd(o: Operand, as: RegType): string {
    if (o.kind === "reg") return this.reg(o, as);
    return literal(o.value, as, this.info);
  }

  /** Hoists `const NAME = EXPR;` before the loop. */
  hoist(expr: string): string {
    const n = `c${this.pre.length}`;
    this.pre.push(`const ${n} = ${expr};`);
    return n;
  }
}

function num(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "(-Infinity)";
  if (Object.is(v, -0)) return "(-0)";
  return v < 0 ? `(${v})` : String(v);
}

function literal(v: number, as: RegType, info: OpInfo): string {
  const bad = () => {
    throw new SimError(`Immediate ${v} is not a valid ${as}`, whereStatic(info));
  };
  switch (as) {
    case "f32":
      return num(Math.fround(v));
    case "f64":
      return num(v);
    case "pred":
      return v !== 0 ? "1" : "0";
    case "u64":
      if (!Number.isInteger(v) || v < 0 || v > 2 ** 53) bad();
      return num(v);
    case "b16":
      if (!Number.isInteger(v)) return String(f32ToF16Bits(v));
      return String(v & 0xffff);
    case "b32":
      if (!Number.isInteger(v)) return String(f32Bits(v));
      return String(v >>> 0);
    case "u32":
      if (!Number.isInteger(v)) bad();
      return String(v >>> 0);
    case "s32":
      if (!Number.isInteger(v)) bad();
      return num(v | 0);
  }
}

function whereStatic(info: OpInfo) {
  return { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null };
}

function bad(info: OpInfo, msg: string): never {
  throw new SimError(msg, whereStatic(info));
}

const U64_CHECK = "if (!(r >= 0 && r <= 9007199254740991)) M.u64Fail(I, t, r);";

/** The lane statement of a binary operation, with `a` and `b` in scope. */
function binStmt(o: BinOp, info: OpInfo, d: string): string {
  const f = o.fn;
  if (f === "addsat" && o.type !== "s32") bad(info, `"addsat" is defined on s32 only`);
  switch (o.type) {
    case "u32":
    case "s32": {
      const s = o.type === "s32";
      const e: Record<BinOp["fn"], string> = {
        add: "a + b",
        sub: "a - b",
        mul: "Math.imul(a, b)",
        div: "b === 0 ? M.divZero(I, t) : Math.trunc(a / b)",
        rem: "b === 0 ? M.divZero(I, t) : a % b",
        min: "a < b ? a : b",
        max: "a > b ? a : b",
        shl: "b >= 32 ? 0 : a << b",
        shr: s ? "a >> (b >= 32 ? 31 : b)" : "b >= 32 ? 0 : a >>> b",
        and: "a & b",
        or: "a | b",
        xor: "a ^ b",
        addsat: "Math.max(-2147483648, Math.min(2147483647, a + b))",
      };
      return `${d}[t] = ${e[f]};`;
    }
    case "b32": {
      const e: Partial<Record<BinOp["fn"], string>> = {
        shl: "b >= 32 ? 0 : a << b",
        shr: "b >= 32 ? 0 : a >>> b",
        and: "a & b",
        or: "a | b",
        xor: "a ^ b",
      };
      const x = e[f];
      if (x === undefined) bad(info, `"${f}" is not defined on b32 (bit operations only)`);
      return `${d}[t] = ${x};`;
    }
    case "pred": {
      const e: Partial<Record<BinOp["fn"], string>> = { and: "a & b", or: "a | b", xor: "a ^ b" };
      const x = e[f];
      if (x === undefined) bad(info, `"${f}" is not defined on pred`);
      return `${d}[t] = ${x};`;
    }
    case "u64": {
      const e: Record<BinOp["fn"], string> = {
        add: "a + b",
        sub: "a - b",
        mul: "a * b",
        div: "b === 0 ? M.divZero(I, t) : H.u64div(a, b)",
        rem: "b === 0 ? M.divZero(I, t) : a % b",
        min: "a < b ? a : b",
        max: "a > b ? a : b",
        shl: "b >= 64 ? 0 : a * 2 ** b",
        shr: "b >= 64 ? 0 : Math.floor(a / 2 ** b)",
        and: "H.u64and(a, b)",
        or: "H.u64or(a, b)",
        xor: "H.u64xor(a, b)",
        addsat: "",
      };
      return `const r = ${e[f]}; ${U64_CHECK} ${d}[t] = r;`;
    }
    case "f32":
    case "f64": {
      const e: Partial<Record<BinOp["fn"], string>> = {
        add: "a + b",
        sub: "a - b",
        mul: "a * b",
        div: "a / b",
        min: "H.min(a, b)",
        max: "H.max(a, b)",
      };
      const x = e[f];
      if (x === undefined) bad(info, `"${f}" is not defined on ${o.type}`);
      // f32: a + b etc. in f64 and one rounding by the Float32Array store is the
      // correctly rounded f32 result (53 >= 2 * 24 + 2 bits).
      return `${d}[t] = ${x};`;
    }
  }
}

function unStmt(o: UnOp, info: OpInfo, d: string): string {
  const ty = o.type;
  const isF = ty === "f32" || ty === "f64";
  const isInt = ty === "u32" || ty === "s32";
  switch (o.fn) {
    case "neg":
      if (!isF && !isInt) bad(info, `neg is not defined on ${ty}`);
      return `${d}[t] = -a;`;
    case "abs":
      if (!isF && ty !== "s32") bad(info, `abs is not defined on ${ty}`);
      return `${d}[t] = Math.abs(a);`;
    case "not":
      if (ty === "pred") return `${d}[t] = a ^ 1;`;
      if (isF) bad(info, `not is not defined on ${ty}`);
      return `${d}[t] = ~a;`;
    case "ex2":
    case "rcp":
    case "tanh":
      if (ty !== "f32") bad(info, `${o.fn}.approx is defined on f32 only`);
      return `${d}[t] = H.${o.fn}(a);`;
    case "popc":
      if (ty !== "b32" && ty !== "u32") bad(info, "popc is defined on b32/u32 only");
      return `${d}[t] = H.popc(a);`;
  }
}

/** `[source type, destination type, expression of a]` of each conversion. */
const CVT: Readonly<Record<CvtKind, readonly [RegType, RegType, string]>> = {
  "f32.f16": ["b16", "f32", "H.F16[a]"],
  "f32.bf16": ["b16", "f32", "H.bf16(a)"],
  "f16.f32": ["f32", "b16", "H.toF16(a)"],
  "bf16.f32": ["f32", "b16", "H.toBf16(a)"],
  // The f32 view of the b32 destination: tf32 bits are an f32 with zero low bits.
  "tf32.f32": ["f32", "f32", "H.tf32(a)"],
  "f64.f32": ["f32", "f64", "a"],
  "f32.f64": ["f64", "f32", "a"],
  "f32.s32": ["s32", "f32", "a"],
  "f64.s32": ["s32", "f64", "a"],
  "s32.f32": ["f32", "s32", "H.rni(a)"],
  "s32.f64": ["f64", "s32", "H.rni(a)"],
  // Saturated, then sign-extended to the 32-bit register (low 8 bits meaningful).
  "s8.s32": ["s32", "u32", "a < -128 ? -128 : a > 127 ? 127 : a"],
  "u8.s32": ["s32", "u32", "a < 0 ? 0 : a > 255 ? 255 : a"],
  "u64.u32": ["u32", "u64", "a"],
  "b32.f32": ["u32", "u32", "a"],
  "f32.b32": ["u32", "u32", "a"],
  "b32.u32": ["u32", "u32", "a"],
  "u32.b32": ["u32", "u32", "a"],
  "s32.b32": ["u32", "u32", "a"],
  "b32.s32": ["u32", "u32", "a"],
};

const PARAM_TYPE: Readonly<Record<string, RegType>> = {
  u64: "u64",
  u32: "u32",
  s32: "s32",
  f32: "f32",
  f64: "f64",
};

/** The statement of one lane, with the registers and constants bound in `g`. */
function laneStmt(g: Gen, o: AluOp): string {
  const M = g.M;
  const info = g.info;
  const dst = (r: Reg, as: RegType) => g.bind(M.view(r, as, info.index));
  switch (o.op) {
    case "param": {
      const p = M.kernel.params.find((q) => q.name === o.name);
      if (p === undefined) bad(info, `No kernel parameter "${o.name}"`);
      const v = M.paramValues.get(o.name)!;
      return `${dst(o.dst, PARAM_TYPE[p.ptx]!)}[t] = ${g.bind(v)};`;
    }
    case "sreg": {
      // A cluster kernel's thread t is thread t % P of the cluster's CTA of rank t / P
      // (_cluster.ts); an ordinary kernel's, thread t of the block.
      const { N, P } = M.cl;
      const rank = N === 1 ? "0" : `((t / ${P}) | 0)`;
      const e: Record<SregOp["sreg"], string> = {
        "tid.x": N === 1 ? "t" : `(t % ${P})`,
        laneid: "t & 31",
        "ctaid.x": N === 1 ? g.hoist("M.bx") : `${g.hoist("M.bx")} + ${rank}`,
        "ctaid.y": g.hoist("M.by"),
        "ctaid.z": g.hoist("M.bz"),
        "nctaid.x": g.hoist("M.grid[0]"),
        "nctaid.y": g.hoist("M.grid[1]"),
        "nctaid.z": g.hoist("M.grid[2]"),
        "cluster_ctarank": rank,
      };
      return `${dst(o.dst, "u32")}[t] = ${e[o.sreg]};`;
    }
    case "smembase":
      // A cluster kernel's CTA r: its window of the machine's shared memory (_cluster.ts).
      return M.cl.N === 1
        ? `${dst(o.dst, "u32")}[t] = 0;`
        : `${dst(o.dst, "u32")}[t] = ((t / ${M.cl.P}) | 0) * ${M.cl.SS};`;
    case "mov":
      return `${dst(o.dst, o.dst.type)}[t] = ${g.opd(o.src, o.dst.type)};`;
    case "bin": {
      const shift = o.fn === "shl" || o.fn === "shr";
      const bt: RegType = shift ? "u32" : o.type;
      const a = g.opd(o.a, o.type);
      const b = g.opd(o.b, bt);
      const d = dst(o.dst, o.type);
      return `const a = ${a}, b = ${b}; ${binStmt(o, info, d)}`;
    }
    case "mad": {
      const a = g.opd(o.a, o.type);
      const b = g.opd(o.b, o.type);
      const c = g.opd(o.c, o.type);
      const d = dst(o.dst, o.type);
      const e = o.type === "f32"
        ? `${d}[t] = H.fmaF32(a, b, c);`
        : o.type === "f64"
        ? `${d}[t] = H.fmaF64(a, b, c);`
        : o.type === "u64"
        ? `const r = a * b + c; ${U64_CHECK} ${d}[t] = r;`
        : `${d}[t] = Math.imul(a, b) + c;`;
      return `const a = ${a}, b = ${b}, c = ${c}; ${e}`;
    }
    case "mulwide": {
      const a = g.opd(o.a, "u32");
      const b = g.opd(o.b, "u32");
      return `const r = ${a} * ${b}; ${U64_CHECK} ${dst(o.dst, "u64")}[t] = r;`;
    }
    case "un": {
      const a = g.opd(o.src, o.type);
      const d = dst(o.dst, o.fn === "popc" ? "u32" : o.type);
      return `const a = ${a}; ${unStmt(o, info, d)}`;
    }
    case "setp": {
      const a = g.opd(o.a, o.type);
      const b = g.opd(o.b, o.type);
      const isF = o.type === "f32" || o.type === "f64";
      const ops = { lt: "<", le: "<=", gt: ">", ge: ">=", eq: "===", ne: "!==" } as const;
      const cmp = isF && o.cmp === "ne" ? "a === a && b === b && a !== b" : `a ${ops[o.cmp]} b`;
      return `const a = ${a}, b = ${b}; ${dst(o.dst, "pred")}[t] = ${cmp} ? 1 : 0;`;
    }
    case "selp": {
      const a = g.opd(o.a, o.type);
      const b = g.opd(o.b, o.type);
      const p = g.reg(o.p, "pred");
      return `${dst(o.dst, o.type)}[t] = ${p} !== 0 ? ${a} : ${b};`;
    }
    case "cvt": {
      const [st, dt, e] = CVT[o.kind];
      const a = g.opd(o.src, st);
      return `const a = ${a}; ${dst(o.dst, dt)}[t] = ${e};`;
    }
    case "pack": {
      const lo = g.reg(o.lo, "b16");
      const hi = g.reg(o.hi, "b16");
      return `${dst(o.dst, "u32")}[t] = (${hi} << 16) | ${lo};`;
    }
    case "unpack": {
      const s = g.reg(o.src, "u32");
      const lo = dst(o.lo, "b16");
      const hi = dst(o.hi, "b16");
      return `const s = ${s}; ${lo}[t] = s & 0xffff; ${hi}[t] = s >>> 16;`;
    }
  }
}

/**
 * Compiles a register-to-register operation into a closure over the machine.
 *
 * @param M The machine.
 * @param info The operation.
 * @param mask The lanes it runs for.
 * @returns The closure.
 */
export function compileAlu(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as AluOp;
  const g = new Gen(M, info);
  const stmt = laneStmt(g, o);
  const checks: string[] = [];
  if (!mask.root) checks.push("if (m[t] === 0) continue;");
  let guard: RegArray | null = null;
  if (o.guard !== undefined) {
    guard = M.view(o.guard.pred, "pred", info.index);
    checks.push(o.guard.negate ? "if (g[t] !== 0) continue;" : "if (g[t] === 0) continue;");
  }
  const src = `"use strict";
return function run() {
  ${g.pre.join(" ")}
  for (let t = 0; t < T; t++) {
    ${checks.join(" ")}
    ${stmt}
  }
  C[I] += MK.warps;
};`;
  const params = ["T", "MK", "m", "g", "C", "I", "M", "H", ...g.names];
  const key = `${params.join(",")}\n${src}`;
  let f = FACTORIES.get(key);
  if (f === undefined) {
    f = new Function(...params, src) as Factory;
    FACTORIES.set(key, f);
  }
  return f(M.T, mask, mask.m, guard, M.counts, info.index, M, HELPERS, ...g.values);
}
