/**
 * Operands of the PTX printer: templates and their holes, immediates, register
 * lists, addresses and guards, and the checks that an operand fits the PTX
 * class of its position.
 *
 * @module
 */

import type { Guard, Imm, MemWidth, Operand, Reg } from "../../ir/kernel.ts";
import { regName } from "../../ir/print_kernel.ts";
import {
  classOf,
  type ImmType,
  MEM_PTX,
  PtxError,
  REG_CLASS,
  type RegClass,
  VEC,
} from "./_tables.ts";

/** A template split at its `$name` holes: `lits[0] hole[0] lits[1] ... lits[n]`. */
interface CompiledTemplate {
  readonly lits: readonly string[];
  readonly holes: readonly string[];
}

/** Templates split once (the tables are fixed; printing is on the compile path). */
const COMPILED = new Map<string, CompiledTemplate>();

function compileTemplate(tpl: string): CompiledTemplate {
  const lits: string[] = [];
  const holes: string[] = [];
  const re = /\$(\w+)/g;
  let last = 0;
  for (let m = re.exec(tpl); m !== null; m = re.exec(tpl)) {
    lits.push(tpl.slice(last, m.index));
    holes.push(m[1]!);
    last = m.index + m[0].length;
  }
  lits.push(tpl.slice(last));
  const c = { lits, holes };
  COMPILED.set(tpl, c);
  return c;
}

/**
 * `text` followed by a template with its `$name` holes filled (every hole
 * must have a value). The printer appends everything to one string, which V8
 * keeps as a rope and flattens once at the end: far cheaper than joining an
 * array of thousands of pieces or of lines.
 */
export function fillAfter(
  text: string,
  tpl: string,
  holes: Readonly<Record<string, string>>,
): string {
  const c = COMPILED.get(tpl) ?? compileTemplate(tpl);
  const { lits, holes: names } = c;
  let s = text + lits[0]!;
  for (let i = 0; i < names.length; i++) {
    const v = holes[names[i]!];
    if (v === undefined) throw new Error(`PTX template "${tpl}": no value for "$${names[i]}"`);
    s += v;
    s += lits[i + 1]!;
  }
  return s;
}

/** A template without holes. */
export const NO_HOLES: Readonly<Record<string, string>> = Object.freeze({});

const SCRATCH = new DataView(new ArrayBuffer(8));

function hex(n: bigint | number, digits: number): string {
  return n.toString(16).toUpperCase().padStart(digits, "0");
}

/** Integer immediates by type: the width (values from -2^(bits-1) to 2^bits - 1
 * are accepted) and whether the value is printed signed. Negative values in
 * unsigned and bit types are printed as their two's complement, so the bits are
 * exactly the IR's. */
const INT_IMM: Readonly<Partial<Record<ImmType, { bits: number; signed: boolean }>>> = Object
  .freeze({
    u8: { bits: 8, signed: false },
    b16: { bits: 16, signed: false },
    u32: { bits: 32, signed: false },
    b32: { bits: 32, signed: false },
    s32: { bits: 32, signed: true },
    u64: { bits: 64, signed: false },
  });

/**
 * The PTX text of an immediate: integers in decimal (two's complement for a
 * negative value in an unsigned or bit type), `f32` as `0fXXXXXXXX` (the value
 * rounded to f32 with `Math.fround`, nearest even), `f64` as `0dXXXXXXXXXXXXXXXX`
 * (exact), predicates as 0 or 1.
 *
 * @param value The immediate.
 * @param type The PTX type of the operand position.
 * @returns The literal.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { immText } from "./print.ts";
 * equal(immText(1, "f32"), "0f3F800000");
 * equal(immText(-1, "u32"), "4294967295");
 * ```
 */
export function immText(value: number, type: ImmType): string {
  if (type === "f32") {
    SCRATCH.setFloat32(0, value);
    return `0f${hex(SCRATCH.getUint32(0), 8)}`;
  }
  if (type === "f64") {
    SCRATCH.setFloat64(0, value);
    return `0d${hex(SCRATCH.getBigUint64(0), 16)}`;
  }
  if (type === "pred") {
    if (value !== 0 && value !== 1) {
      throw new PtxError(`Bad predicate immediate: ${value} is not 0 or 1`);
    }
    return String(value);
  }
  const info = INT_IMM[type]!;
  if (!Number.isSafeInteger(value)) {
    throw new PtxError(`Bad ${type} immediate: ${value} is not an exact integer`);
  }
  if (info.bits <= 32) {
    // Exact in doubles: the same as the BigInt arithmetic below, without BigInts.
    const span = 2 ** info.bits;
    if (value < -(span / 2) || value >= span) {
      throw new PtxError(`Bad ${type} immediate: ${value} does not fit in ${info.bits} bits`);
    }
    if (info.signed) return String(value >= span / 2 ? value - span : value);
    return String(value < 0 ? value + span : value);
  }
  const big = BigInt(value);
  const span = 1n << BigInt(info.bits);
  const lo = -(span >> 1n);
  if (big < lo || big >= span) {
    throw new PtxError(`Bad ${type} immediate: ${value} does not fit in ${info.bits} bits`);
  }
  if (info.signed) return String(big >= span >> 1n ? big - span : big);
  return String(big < 0n ? big + span : big);
}

/** An operand: a register's name or an immediate written as `type`. */
export function opd(o: Operand, type: ImmType): string {
  return o.kind === "reg" ? regName(o) : immText(o.value, type);
}

function vec(xs: readonly string[]): string {
  return xs.length === 1 ? xs[0]! : `{${xs.join(", ")}}`;
}

/** A PTX address `[reg+offset]`'s inside: `%r1` or `%r1+16`. */
export function addr(r: Reg, offset: number): string {
  if (!Number.isSafeInteger(offset)) throw new PtxError(`Bad address offset ${offset}`);
  return offset === 0 ? regName(r) : `${regName(r)}+${offset}`;
}

/** The guard prefix of an instruction (`@%p1 `, `@!%p1 `), or nothing. */
export function guardText(g: Guard | undefined): string {
  return g === undefined ? "" : `@${g.negate ? "!" : ""}${regName(g.pred)} `;
}

/** Checks that register operands fit their PTX operand class (immediates always do). */
export function expect(what: string, cls: RegClass, ...xs: readonly Operand[]): void {
  const ok = REG_CLASS[cls];
  for (const x of xs) {
    if (x.kind === "reg" && !ok.includes(x.type)) {
      throw new PtxError(
        `${what}: register ${regName(x)} is ${x.type}, PTX takes ${ok.join(" or ")} here`,
      );
    }
  }
}

/** Whether a register operand fits class `cls` (immediates always do): {@link expect}
 * without building its message, for the operations printed most. */
export function fits(cls: RegClass, x: Operand): boolean {
  return x.kind !== "reg" || CLASS_HAS[cls][x.type] === true;
}

/** {@link REG_CLASS} as sets: `CLASS_HAS[cls][type]` is true when `cls` takes `type`. */
const CLASS_HAS: Readonly<Record<RegClass, Readonly<Record<string, true>>>> = (() => {
  const out = {} as Record<RegClass, Record<string, true>>;
  for (const cls of Object.keys(REG_CLASS) as RegClass[]) {
    // No prototype: a malformed type such as "toString" is in no class.
    const set = Object.create(null) as Record<string, true>;
    for (const t of REG_CLASS[cls]) set[t] = true;
    out[cls] = set;
  }
  return out;
})();

/** Whether every operand of `xs` {@link fits} class `cls`. */
export function fitsAll(cls: RegClass, xs: readonly Operand[]): boolean {
  for (let i = 0; i < xs.length; i++) if (!fits(cls, xs[i]!)) return false;
  return true;
}

const MNEMONIC_CLASS = new Map<string, RegClass>();

/** The class of the operands of a mnemonic, from its last part (`add.rn.f32` → f32). */
export function classOfMnemonic(mn: string): RegClass {
  let c = MNEMONIC_CLASS.get(mn);
  if (c === undefined) {
    c = classOf(mn.slice(mn.lastIndexOf(".") + 1));
    MNEMONIC_CLASS.set(mn, c);
  }
  return c;
}

/** Registers as a PTX vector operand: `{%r1, %r2}`. */
export function regList(rs: readonly Reg[]): string {
  let s = "{";
  for (let i = 0; i < rs.length; i++) s += i === 0 ? regName(rs[i]!) : ", " + regName(rs[i]!);
  return s + "}";
}

/** The vector suffix, width and operand list of a memory access of `regs`, checked
 * against the width's register class and allowed vector lengths. */
export function memOperands(
  what: string,
  width: MemWidth,
  regs: readonly Operand[],
): { v: string; w: string; list: string } {
  const rule = MEM_PTX[width];
  if (!rule.vec.includes(regs.length)) {
    throw new PtxError(
      `${what}.${width}: ${regs.length} registers (PTX allows ${rule.vec.join(", ")})`,
    );
  }
  if (!fitsAll(rule.regs, regs)) expect(`${what}.${width}`, rule.regs, ...regs);
  const floats = uniformVector(what, regs, width);
  // Beside float registers an integer literal is "a different type": write the
  // same bits as a float literal.
  const im = (x: Imm): string => {
    const t = immText(x.value, rule.imm);
    if (!floats) return t;
    return width === "b64"
      ? `0d${hex(BigInt.asUintN(64, BigInt(t)), 16)}`
      : `0f${hex(Number(t), 8)}`;
  };
  const list = regs.length === 1
    ? (regs[0]!.kind === "reg" ? regName(regs[0]!) : im(regs[0]!))
    : vec(regs.map((r) => (r.kind === "reg" ? regName(r) : im(r))));
  return { v: VEC[regs.length]!, w: rule.ptx, list };
}

/**
 * Checks that a vector does not mix float (f32/f64) and integer (u32/s32/u64)
 * registers: ptxas rejects that in `ld`, `st` and `ldmatrix` ("Vector with
 * elements of different types are not allowed"); b32 registers go with either.
 *
 * @returns Whether the vector holds a float register.
 */
export function uniformVector(what: string, xs: readonly Operand[], width?: MemWidth): boolean {
  let f: Reg | undefined;
  let i: Reg | undefined;
  for (const x of xs) {
    if (x.kind !== "reg") continue;
    if (f === undefined && (x.type === "f32" || x.type === "f64")) f = x;
    if (i === undefined && (x.type === "u32" || x.type === "s32" || x.type === "u64")) i = x;
  }
  if (xs.length > 1 && f !== undefined && i !== undefined) {
    throw new PtxError(
      `${width === undefined ? what : `${what}.${width}`}: a vector mixes ${f.type} register ${
        regName(f)
      } and ${i.type} register ${regName(i)}`,
    );
  }
  return f !== undefined;
}
