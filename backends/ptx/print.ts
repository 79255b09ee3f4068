/**
 * The PTX printer: kernel IR (ir/kernel.ts) to one PTX module for a target of
 * ir/target.ts (`sm_80`, `sm_86`). It adds no semantics of its own (DESIGN.md §1): every instruction
 * it prints is the meaning of one kernel-IR operation, as written in the
 * tables below (operation → PTX template), and the simulator executes the
 * very same operations.
 *
 * What the printer adds beyond the operations, all of it plumbing:
 * - the module header, the shared-memory symbol and the entry signatures;
 * - register declarations (`.reg .TYPE %prefix<N>;`, names as
 *   {@link regName} gives them, so that the PTX and the kernel-IR text agree);
 * - branches and labels for `for` and `if`, with one scratch predicate
 *   `%tp0` for loop tests (declared only where a loop exists);
 * - for `cvt` from f16/bf16 of an immediate, a `mov.b16` of the bits into a
 *   scratch `%th0` first, as ptxas takes no immediate source there.
 *
 * Malformed IR (an operation/type pair PTX has no instruction for, a vector
 * width PTX lacks, a fragment of the wrong size) throws a {@link PtxError};
 * the printer never guesses.
 *
 * @module
 */

import type {
  BinOp,
  CvtKind,
  ForOp,
  Guard,
  IfOp,
  Imm,
  Kernel,
  KernelParam,
  MemWidth,
  Op,
  Operand,
  Reg,
  RegType,
  SpecialReg,
  UnOp,
} from "../../ir/kernel.ts";
import { opRegs, walkOps } from "../../ir/kernel.ts";
import { printBody, regName } from "../../ir/print_kernel.ts";
import { MMA_SHAPES, type MmaRegType, type MmaShape } from "../../ir/mma_table.ts";
import { unreachable } from "../../ir/gemm.ts";
import { type PtxTarget, type Target, targetInfo } from "../../ir/target.ts";

/** The symbol of the dynamic shared-memory buffer (`smembase` takes its address). */
export const SMEM_SYMBOL = "gemmc_smem";

/** The scratch predicate the printer uses for loop tests (not an IR register). */
export const LOOP_PRED = "%tp0";

/** The scratch b16 register through which the printer passes an immediate to a
 * conversion from f16/bf16: ptxas accepts no immediate there (not an IR register). */
export const HALF_TMP = "%th0";

/** A kernel IR that the printer cannot render (an IR bug, never a user error). */
export class PtxError extends Error {
  /**
   * @param message What is wrong, naming the kernel and the operation.
   */
  constructor(message: string) {
    super(message);
    this.name = "PtxError";
  }
}

// ---------------------------------------------------------------------------------------------
// Tables: the whole mapping from kernel-IR operations to PTX
// ---------------------------------------------------------------------------------------------

/** How an immediate operand is written in a given position: its PTX type. */
export type ImmType = "pred" | "u8" | "b16" | "u32" | "s32" | "b32" | "u64" | "f32" | "f64";

/** PTX type of the `.reg` declaration of each register type. */
export const REG_PTX: Readonly<Record<RegType, string>> = Object.freeze({
  pred: "pred",
  b16: "b16",
  b32: "b32",
  u32: "u32",
  s32: "s32",
  f32: "f32",
  u64: "u64",
  f64: "f64",
});

/** Size of each register type in bits (pred counts as 1). */
const REG_BITS: Readonly<Record<RegType, number>> = Object.freeze({
  pred: 1,
  b16: 16,
  b32: 32,
  u32: 32,
  s32: 32,
  f32: 32,
  u64: 64,
  f64: 64,
});

/** Classes of PTX operands by the register types ptxas accepts for them. */
export type RegClass = "pred" | "b16" | "b32" | "i32" | "x32" | "f32" | "u64" | "b64" | "f64";

/**
 * The register types PTX accepts for an operand of each class (its relaxed
 * type checking, as ptxas 13 applies it): a `.bN` operand takes any register
 * of N bits, `.u32`/`.s32` any 32-bit integer or bit register, `.f32` an f32 or
 * b32 register. `x32` is a `.b32` that must be a b32 register: the `mma`
 * A/B fragments, f16x2 accumulators and the result of `cvt.rna.tf32.f32`
 * (ptxas rejects u32/s32/f32 registers there with "Arguments mismatch").
 */
export const REG_CLASS: Readonly<Record<RegClass, readonly RegType[]>> = Object.freeze({
  pred: ["pred"],
  b16: ["b16"],
  b32: ["b32", "u32", "s32", "f32"],
  i32: ["u32", "s32", "b32"],
  x32: ["b32"],
  f32: ["f32", "b32"],
  u64: ["u64"],
  b64: ["u64", "f64"],
  f64: ["f64"],
});

/** The class of an operand of PTX type `t` (the last part of a mnemonic). */
function classOf(t: string): RegClass {
  switch (t) {
    case "u32":
    case "s32":
      return "i32";
    case "pred":
    case "b16":
    case "b32":
    case "f32":
    case "u64":
    case "b64":
    case "f64":
      return t;
    default:
      throw new Error(`No register class for PTX type "${t}"`);
  }
}

/** Special registers: `mov.u32 %r, %SREG`. */
export const SREG_PTX: Readonly<Record<SpecialReg, string>> = Object.freeze({
  "tid.x": "%tid.x",
  "ctaid.x": "%ctaid.x",
  "ctaid.y": "%ctaid.y",
  "ctaid.z": "%ctaid.z",
  "nctaid.x": "%nctaid.x",
  "nctaid.y": "%nctaid.y",
  "nctaid.z": "%nctaid.z",
  "laneid": "%laneid",
});

type BinType = BinOp["type"];

/**
 * {@link BinOp} mnemonics by function and type; a missing entry has no PTX
 * instruction (and is an IR error). Floats carry `.rn` explicitly: it is the
 * IR's rounding, and an explicit rounding mode also forbids ptxas from
 * contracting a `mul` and an `add` into an `fma` (which would round once
 * where the simulator rounds twice). Shifts take their amount as `u32`.
 */
export const BIN_PTX: Readonly<Record<BinOp["fn"], Readonly<Partial<Record<BinType, string>>>>> =
  Object.freeze({
    add: { u32: "add.u32", s32: "add.s32", u64: "add.u64", f32: "add.rn.f32", f64: "add.rn.f64" },
    sub: { u32: "sub.u32", s32: "sub.s32", u64: "sub.u64", f32: "sub.rn.f32", f64: "sub.rn.f64" },
    mul: {
      u32: "mul.lo.u32",
      s32: "mul.lo.s32",
      u64: "mul.lo.u64",
      f32: "mul.rn.f32",
      f64: "mul.rn.f64",
    },
    // Integer division truncates; float division is IEEE (`.rn`), both as the IR says.
    div: { u32: "div.u32", s32: "div.s32", u64: "div.u64", f32: "div.rn.f32", f64: "div.rn.f64" },
    rem: { u32: "rem.u32", s32: "rem.s32", u64: "rem.u64" },
    // PTX min/max on floats return the number when the other operand is NaN.
    min: { u32: "min.u32", s32: "min.s32", u64: "min.u64", f32: "min.f32", f64: "min.f64" },
    max: { u32: "max.u32", s32: "max.s32", u64: "max.u64", f32: "max.f32", f64: "max.f64" },
    shl: { u32: "shl.b32", s32: "shl.b32", b32: "shl.b32", u64: "shl.b64" },
    // Logical for u32/u64/b32, arithmetic for s32.
    shr: { u32: "shr.u32", s32: "shr.s32", b32: "shr.b32", u64: "shr.u64" },
    and: { u32: "and.b32", s32: "and.b32", b32: "and.b32", u64: "and.b64", pred: "and.pred" },
    or: { u32: "or.b32", s32: "or.b32", b32: "or.b32", u64: "or.b64", pred: "or.pred" },
    xor: { u32: "xor.b32", s32: "xor.b32", b32: "xor.b32", u64: "xor.b64", pred: "xor.pred" },
    addsat: { s32: "add.sat.s32" },
  });

/** `mad` mnemonics: `mad.lo` (wrapping) for integers, `fma.rn` (one rounding) for floats. */
export const MAD_PTX: Readonly<Record<"u32" | "s32" | "u64" | "f32" | "f64", string>> = Object
  .freeze({
    u32: "mad.lo.u32",
    s32: "mad.lo.s32",
    u64: "mad.lo.u64",
    f32: "fma.rn.f32",
    f64: "fma.rn.f64",
  });

/**
 * {@link UnOp} mnemonics by function and type. `ex2`, `rcp` and `tanh` are
 * the approximate PTX instructions the IR names (`.approx.f32`, without
 * `.ftz`: subnormals are kept); `neg` of a u32 is the two's complement
 * (`neg.s32`, the same bits).
 */
export const UN_PTX: Readonly<Record<UnOp["fn"], Readonly<Partial<Record<UnOp["type"], string>>>>> =
  Object.freeze({
    neg: { s32: "neg.s32", u32: "neg.s32", f32: "neg.f32", f64: "neg.f64" },
    abs: { s32: "abs.s32", f32: "abs.f32", f64: "abs.f64" },
    not: { b32: "not.b32", u32: "not.b32", s32: "not.b32", pred: "not.pred" },
    ex2: { f32: "ex2.approx.f32" },
    rcp: { f32: "rcp.approx.f32" },
    tanh: { f32: "tanh.approx.f32" },
    popc: { b32: "popc.b32", u32: "popc.b32" },
  });

/** One conversion: a template over `$d` (destination) and `$a` (source), the
 * PTX type an immediate source is written in, and the register classes of both sides. */
export interface CvtRule {
  readonly tpl: string;
  readonly src: ImmType;
  readonly srcRegs: RegClass;
  readonly dstRegs: RegClass;
  /** An immediate source goes through {@link HALF_TMP} (ptxas rejects `cvt.f32.f16 %f, 15360`
   * with "Arguments mismatch", whatever the literal's form). */
  readonly immViaHalf: boolean;
}

function cvtRule(tpl: string, src: ImmType, srcRegs: RegClass, dstRegs: RegClass): CvtRule {
  return Object.freeze({ tpl, src, srcRegs, dstRegs, immViaHalf: srcRegs === "b16" });
}

/**
 * Every {@link CvtKind} as exactly one PTX instruction (the IR's list, in order):
 * - `f32.f16`, `f32.bf16`, `f64.f32`: exact widenings; PTX forbids a rounding
 *   modifier on them. `cvt.f32.bf16` needs PTX 7.1 and sm_80 (the `.ftz`
 *   form would need sm_90; it is not used).
 * - `f16.f32`, `bf16.f32`, `f32.f64`: round to nearest even (`.rn`).
 * - `tf32.f32`: round to nearest, ties away (`cvt.rna.tf32.f32`, sm_80, into a `.b32`).
 * - `f32.s32`, `f64.s32`: `.rn` (PTX requires a rounding mode on int → float;
 *   s32 → f64 is exact anyway).
 * - `s32.f32`, `s32.f64`: `.rni` (nearest even) with `.sat` (PTX clamps and
 *   sends NaN to 0).
 * - `s8.s32`, `u8.s32`: `cvt.sat.{s8,u8}.s32` into a 32-bit register (PTX
 *   sign-/zero-extends the 8-bit result; the IR reads only the low 8 bits).
 * - `u64.u32`: zero extension.
 * - The six bit moves: `mov.b32`.
 */
export const CVT_PTX: Readonly<Record<CvtKind, CvtRule>> = Object.freeze({
  "f32.f16": cvtRule("cvt.f32.f16 $d, $a", "b16", "b16", "f32"),
  "f32.bf16": cvtRule("cvt.f32.bf16 $d, $a", "b16", "b16", "f32"),
  "f16.f32": cvtRule("cvt.rn.f16.f32 $d, $a", "f32", "f32", "b16"),
  "bf16.f32": cvtRule("cvt.rn.bf16.f32 $d, $a", "f32", "f32", "b16"),
  "tf32.f32": cvtRule("cvt.rna.tf32.f32 $d, $a", "f32", "f32", "x32"),
  "f64.f32": cvtRule("cvt.f64.f32 $d, $a", "f32", "f32", "f64"),
  "f32.f64": cvtRule("cvt.rn.f32.f64 $d, $a", "f64", "f64", "f32"),
  "f32.s32": cvtRule("cvt.rn.f32.s32 $d, $a", "s32", "i32", "f32"),
  "f64.s32": cvtRule("cvt.rn.f64.s32 $d, $a", "s32", "i32", "f64"),
  "s32.f32": cvtRule("cvt.rni.sat.s32.f32 $d, $a", "f32", "f32", "i32"),
  "s32.f64": cvtRule("cvt.rni.sat.s32.f64 $d, $a", "f64", "f64", "i32"),
  "s8.s32": cvtRule("cvt.sat.s8.s32 $d, $a", "s32", "i32", "i32"),
  "u8.s32": cvtRule("cvt.sat.u8.s32 $d, $a", "s32", "i32", "i32"),
  "u64.u32": cvtRule("cvt.u64.u32 $d, $a", "u32", "i32", "u64"),
  "b32.f32": cvtRule("mov.b32 $d, $a", "f32", "b32", "b32"),
  "f32.b32": cvtRule("mov.b32 $d, $a", "b32", "b32", "b32"),
  "b32.u32": cvtRule("mov.b32 $d, $a", "u32", "b32", "b32"),
  "u32.b32": cvtRule("mov.b32 $d, $a", "b32", "b32", "b32"),
  "s32.b32": cvtRule("mov.b32 $d, $a", "b32", "b32", "b32"),
  "b32.s32": cvtRule("mov.b32 $d, $a", "s32", "b32", "b32"),
});

/** One memory width: the PTX type suffix, the registers it moves, how an
 * immediate store operand is written, and the vector lengths PTX allows on sm_80
 * (at most 128 bits: no `.v4.b64`). */
export interface MemRule {
  readonly ptx: string;
  readonly regs: RegClass;
  readonly imm: ImmType;
  readonly vec: readonly number[];
}

/** {@link MemWidth} to PTX: `b8` is `.u8` (loads zero-extend into a 32-bit register). */
export const MEM_PTX: Readonly<Record<MemWidth, MemRule>> = Object.freeze({
  b8: Object.freeze({ ptx: "u8", regs: "i32", imm: "u8", vec: Object.freeze([1, 2, 4]) }),
  b16: Object.freeze({ ptx: "b16", regs: "b16", imm: "b16", vec: Object.freeze([1, 2, 4]) }),
  b32: Object.freeze({ ptx: "b32", regs: "b32", imm: "b32", vec: Object.freeze([1, 2, 4]) }),
  b64: Object.freeze({ ptx: "b64", regs: "b64", imm: "u64", vec: Object.freeze([1, 2]) }),
});

const VEC: Readonly<Record<number, string>> = Object.freeze({ 1: "", 2: ".v2", 4: ".v4" });

/** Immediate type of a `mov`/`setp`/... operand of a register type. */
const IMM_OF_REG: Readonly<Record<RegType, ImmType>> = Object.freeze({
  pred: "pred",
  b16: "b16",
  b32: "b32",
  u32: "u32",
  s32: "s32",
  f32: "f32",
  u64: "u64",
  f64: "f64",
});

/** Templates of the simple (non-structured) operations, over `$name` holes. */
export const OP_TEMPLATES = Object.freeze({
  param: "ld.param.$t $d, [$name]",
  cvta: "cvta.to.global.u64 $d, $d",
  sreg: "mov.u32 $d, $sreg",
  mov: "mov.$t $d, $a",
  smembase: `mov.u32 $d, ${SMEM_SYMBOL}`,
  bin: "$mn $d, $a, $b",
  mad: "$mn $d, $a, $b, $c",
  mulwide: "mul.wide.u32 $d, $a, $b",
  un: "$mn $d, $a",
  setp: "setp.$cmp.$t $d, $a, $b",
  selp: "selp.$t $d, $a, $b, $p",
  pack: "mov.b32 $d, {$lo, $hi}",
  unpack: "mov.b32 {$lo, $hi}, $a",
  cpasync: "cp.async.$cache.shared.global$hint [$dst], [$src], $bytes, $n",
  prefetch: "prefetch.global.L2$evict [$addr]",
  commit: "cp.async.commit_group",
  wait: "cp.async.wait_group $n",
  bar: "bar.sync 0",
  ldmatrix: "ldmatrix.sync.aligned.m8n8.x$num$trans.shared.b16 $d, [$addr]",
  lds: "ld.shared$v.$w $d, [$addr]",
  sts: "st.shared$v.$w [$addr], $a",
  ldg: "ld.global$cache$v.$w $d, [$addr]",
  atom: "atom.global.add.u32 $d, [$addr], $b",
  fence: "fence.acq_rel.gpu",
  stg: "st.global$v.$w [$addr], $a",
  mma: "$mn $d, $a, $b, $c",
  comment: "// $text",
  // Structured control flow.
  forInit: "mov.u32 $iv, $from",
  forEnter: `setp.ge.u32 ${LOOP_PRED}, $iv, $to`,
  forSkip: `@${LOOP_PRED} bra.uni $label`,
  forStep: "add.u32 $iv, $iv, $step",
  forTest: `setp.lt.u32 ${LOOP_PRED}, $iv, $to`,
  forBack: `@${LOOP_PRED} bra.uni $label`,
  branch: "bra$uni $label",
  branchIf: "@$not$p bra$uni $label",
  ret: "ret",
});

/** Registers of `mma` fragments by the table's register type (ir/mma_table.ts,
 * `FragmentMap.regType`): b32 operands (packed and tf32 elements, f16x2
 * accumulators) in b32 registers, f32 accumulators in f32 (or b32), s32 in any
 * 32-bit integer register, f64 in f64 (ir/kernel.ts, MmaOp). */
export const MMA_OPERAND_REGS: Readonly<Record<MmaRegType, RegClass>> = Object.freeze({
  b32: "x32",
  f32: "f32",
  s32: "i32",
  f64: "f64",
});

const MMA_BY_NAME: ReadonlyMap<string, MmaShape> = new Map(MMA_SHAPES.map((s) => [s.name, s]));

// ---------------------------------------------------------------------------------------------
// Operands
// ---------------------------------------------------------------------------------------------

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
function fillAfter(text: string, tpl: string, holes: Readonly<Record<string, string>>): string {
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
const NO_HOLES: Readonly<Record<string, string>> = Object.freeze({});

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
 * import { immText } from "./print.ts";
 * console.assert(immText(1, "f32") === "0f3F800000");
 * console.assert(immText(-1, "u32") === "4294967295");
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

function opd(o: Operand, type: ImmType): string {
  return o.kind === "reg" ? regName(o) : immText(o.value, type);
}

function vec(xs: readonly string[]): string {
  return xs.length === 1 ? xs[0]! : `{${xs.join(", ")}}`;
}

function addr(r: Reg, offset: number): string {
  if (!Number.isSafeInteger(offset)) throw new PtxError(`Bad address offset ${offset}`);
  return offset === 0 ? regName(r) : `${regName(r)}+${offset}`;
}

function guardText(g: Guard | undefined): string {
  return g === undefined ? "" : `@${g.negate ? "!" : ""}${regName(g.pred)} `;
}

// ---------------------------------------------------------------------------------------------
// Rendering the simple operations
// ---------------------------------------------------------------------------------------------

interface Ctx {
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
function put(cx: Ctx, tpl: string, holes: Readonly<Record<string, string>>): void {
  cx.text = fillAfter(cx.text + cx.pre, tpl, holes) + ";\n";
}

/** Appends one line without the `;` (a comment). */
function putLine(cx: Ctx, tpl: string, holes: Readonly<Record<string, string>>): void {
  cx.text = fillAfter(cx.text + cx.pre, tpl, holes) + "\n";
}

/** Checks that register operands fit their PTX operand class (immediates always do). */
function expect(what: string, cls: RegClass, ...xs: readonly Operand[]): void {
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
function fits(cls: RegClass, x: Operand): boolean {
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
function fitsAll(cls: RegClass, xs: readonly Operand[]): boolean {
  for (let i = 0; i < xs.length; i++) if (!fits(cls, xs[i]!)) return false;
  return true;
}

const MNEMONIC_CLASS = new Map<string, RegClass>();

/** The class of the operands of a mnemonic, from its last part (`add.rn.f32` → f32). */
function classOfMnemonic(mn: string): RegClass {
  let c = MNEMONIC_CLASS.get(mn);
  if (c === undefined) {
    c = classOf(mn.slice(mn.lastIndexOf(".") + 1));
    MNEMONIC_CLASS.set(mn, c);
  }
  return c;
}

/** Registers as a PTX vector operand: `{%r1, %r2}`. */
function regList(rs: readonly Reg[]): string {
  let s = "{";
  for (let i = 0; i < rs.length; i++) s += i === 0 ? regName(rs[i]!) : ", " + regName(rs[i]!);
  return s + "}";
}

function memOperands(
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
function uniformVector(what: string, xs: readonly Operand[], width?: MemWidth): boolean {
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

const RENDER: Renderers = {
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
function mmaFrag(
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
function render(o: Simple, cx: Ctx): void {
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

// ---------------------------------------------------------------------------------------------
// Bodies and structured control flow
// ---------------------------------------------------------------------------------------------

/** `e` with the kernel and the operation named, when it is a {@link PtxError}. */
function locatedError(cx: Ctx, where: () => string, e: unknown): unknown {
  if (!(e instanceof PtxError)) return e;
  return new PtxError(`Kernel "${cx.kernel.name}": ${e.message}: at "${where()}"`);
}

/** Runs `f`, naming the kernel and the operation in any {@link PtxError} it throws. */
function located<T>(cx: Ctx, where: () => string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw locatedError(cx, where, e);
  }
}

/** The kernel-IR text of one simple operation (for error messages). */
function opText(o: Op): string {
  const text: string[] = [];
  printBody([o], "", text);
  return text.join(" ");
}

function emitBody(body: readonly Op[], cx: Ctx, indent: string): void {
  // No closure here captures `o`: that would allocate a context per operation.
  for (const o of body) {
    switch (o.op) {
      case "for":
        emitFor(o, cx, indent);
        break;
      case "if":
        emitIf(o, cx, indent);
        break;
      case "comment":
        cx.pre = indent;
        RENDER.comment(o, cx);
        break;
      default: {
        const g = "guard" in o ? o.guard : undefined;
        try {
          if (g !== undefined) expect("guard", "pred", g.pred);
          cx.pre = g === undefined ? indent : indent + guardText(g);
          render(o, cx);
        } catch (e) {
          throw opError(cx, o, e);
        }
      }
    }
  }
}

/** {@link locatedError} for a simple operation. */
function opError(cx: Ctx, o: Op, e: unknown): unknown {
  return locatedError(cx, () => opText(o), e);
}

function label(cx: Ctx, n: number): void {
  cx.text += `$L_${n}:\n`;
}

function emitFor(o: ForOp, cx: Ctx, indent: string): void {
  const iv = regName(o.iv);
  const ir = (x: Operand) => (x.kind === "reg" ? regName(x) : String(x.value));
  const head = () => `for ${iv} = ${ir(o.from)} to ${ir(o.to)} step ${o.step}`;
  const [from, to, step] = located(cx, head, () => {
    expect("for", "i32", o.iv, o.from, o.to);
    if (!Number.isSafeInteger(o.step) || o.step <= 0) {
      throw new PtxError(`step ${o.step} is not a positive integer`);
    }
    return [opd(o.from, "u32"), opd(o.to, "u32"), immText(o.step, "u32")];
  });
  cx.loops++;
  const top = cx.labels++;
  const end = cx.labels++;
  cx.text += `${indent}// for ${iv} = ${from} to ${to} step ${step}\n`;
  cx.pre = indent;
  put(cx, OP_TEMPLATES.forInit, { iv, from });
  // A zero trip count skips the body; constant bounds need no run-time test.
  if (o.from.kind === "reg" || o.to.kind === "reg") {
    put(cx, OP_TEMPLATES.forEnter, { iv, to });
    put(cx, OP_TEMPLATES.forSkip, { label: `$L_${end}` });
  } else if (Number(from) >= Number(to)) {
    put(cx, OP_TEMPLATES.branch, { uni: ".uni", label: `$L_${end}` });
  }
  label(cx, top);
  emitBody(o.body, cx, indent + "  ");
  cx.pre = indent;
  put(cx, OP_TEMPLATES.forStep, { iv, step });
  put(cx, OP_TEMPLATES.forTest, { iv, to });
  put(cx, OP_TEMPLATES.forBack, { label: `$L_${top}` });
  label(cx, end);
}

function emitIf(o: IfOp, cx: Ctx, indent: string): void {
  const other = cx.labels++;
  const end = o.otherwise.length > 0 ? cx.labels++ : other;
  const uni = o.uniform ? ".uni" : "";
  const cond = `${o.negate ? "!" : ""}${regName(o.cond)}`;
  located(cx, () => `if ${cond}`, () => expect("if", "pred", o.cond));
  cx.text += `${indent}// if${o.uniform ? ".uniform" : ""} ${cond}\n`;
  // Branch around the then-part when the condition fails.
  cx.pre = indent;
  put(cx, OP_TEMPLATES.branchIf, {
    not: o.negate ? "" : "!",
    p: regName(o.cond),
    uni,
    label: `$L_${other}`,
  });
  const outer = cx.divergent;
  cx.divergent = outer || !o.uniform;
  emitBody(o.then, cx, indent + "  ");
  if (o.otherwise.length > 0) {
    cx.pre = indent;
    put(cx, OP_TEMPLATES.branch, { uni, label: `$L_${end}` });
    label(cx, other);
    cx.text += `${indent}// else\n`;
    emitBody(o.otherwise, cx, indent + "  ");
  }
  cx.divergent = outer;
  label(cx, end);
}

// ---------------------------------------------------------------------------------------------
// Entries and the module
// ---------------------------------------------------------------------------------------------

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The PTX name of a kernel parameter (`param_NAME`: no clash with PTX keywords). */
function paramSymbol(p: KernelParam): string {
  return `param_${p.name}`;
}

const PARAM_PTX: Readonly<Record<KernelParam["kind"], readonly KernelParam["ptx"][]>> = Object
  .freeze({
    tensor: ["u64"],
    dim: ["u32"],
    scalar: ["u32", "s32", "f32", "f64", "u64"],
  });

function regPrefix(r: Reg): string {
  return regName(r).slice(1).replace(/\d+$/, "");
}

/** `.reg` declarations for every register the kernel lists or uses, by prefix. */
function regDecls(k: Kernel): string[] {
  // Register ids are small integers in practice: the type seen for each id in an array.
  const typeById: RegType[] = [];
  const max = new Map<RegType, number>();
  const note = (r: Reg) => {
    const id = r.id;
    if (!Number.isSafeInteger(id) || id < 0) {
      throw new PtxError(`Bad register id ${id} in kernel "${k.name}"`);
    }
    const seen = typeById[id];
    if (seen !== undefined && seen !== r.type) {
      throw new PtxError(`Register id ${id} is both ${seen} and ${r.type} in kernel "${k.name}"`);
    }
    // The map ends with the type of every id's last note (the same type, as checked above).
    if (seen === undefined) {
      typeById[id] = r.type;
      const m = max.get(r.type);
      if (m === undefined || id > m) max.set(r.type, id);
    }
  };
  k.regs.forEach(note);
  walkOps(k.body, (o) => {
    const { reads, writes } = opRegs(o);
    reads.forEach(note);
    writes.forEach(note);
  });
  const out: string[] = [];
  for (const t of Object.keys(REG_PTX) as RegType[]) {
    const m = max.get(t);
    if (m === undefined) continue;
    const prefix = regPrefix({ kind: "reg", id: 0, type: t });
    out.push(`.reg .${REG_PTX[t]} %${prefix}<${m + 1}>;`);
  }
  return out;
}

/** Options of {@link printPtx}. */
export interface PrintPtxOptions {
  /**
   * Emit `.minnctapersm N` after `.maxntid` (off by default). A performance
   * hint only: with `.maxntid` alone, ptxas 13 for sm_80 may squeeze a kernel
   * that has to spill anyway into 32 registers (aiming at full occupancy);
   * `.minnctapersm 1` lets it use up to 65536 / threads registers instead.
   */
  readonly minBlocksPerSm?: number;
}

/** Appends the lines of one `.entry` to `out`. */
function printEntry(k: Kernel, opts: PrintPtxOptions, out: string[]): void {
  if (!IDENT.test(k.name)) throw new PtxError(`Kernel name "${k.name}" is not a PTX identifier`);
  const own = k.minBlocksPerSm;
  const target = targetInfo(k.target);
  if (
    own !== undefined &&
    (!Number.isInteger(own) || own < 1 || own * k.threads > target.maxThreadsPerSm)
  ) {
    throw new PtxError(`Kernel "${k.name}": ${own} blocks of ${k.threads} threads per SM`);
  }
  // The kernel's own occupancy, or the module's floor, whichever is higher.
  const minBlocks = own === undefined
    ? opts.minBlocksPerSm
    : Math.max(own, opts.minBlocksPerSm ?? 1);
  const most = target.maxThreadsPerBlock;
  if (!Number.isInteger(k.threads) || k.threads < 1 || k.threads > most) {
    throw new PtxError(`Kernel "${k.name}": ${k.threads} threads per block is not 1..${most}`);
  }
  const params = new Map<string, KernelParam>();
  for (const p of k.params) {
    if (!IDENT.test(p.name)) {
      throw new PtxError(`Parameter "${p.name}" of kernel "${k.name}" is not a PTX identifier`);
    }
    if (params.has(p.name)) {
      throw new PtxError(`Duplicate parameter "${p.name}" in kernel "${k.name}"`);
    }
    if (!PARAM_PTX[p.kind].includes(p.ptx)) {
      throw new PtxError(`Parameter "${p.name}": a ${p.kind} is not passed as .${p.ptx}`);
    }
    params.set(p.name, p);
  }
  const cx: Ctx = {
    kernel: k,
    params,
    text: "",
    pre: "",
    labels: 0,
    loops: 0,
    halfTmp: false,
    divergent: false,
  };
  emitBody(k.body, cx, "  ");
  const decls = regDecls(k);
  if (cx.loops > 0) decls.push(`.reg .pred %tp<1>; // scratch: loop tests`);
  if (cx.halfTmp) decls.push(`.reg .b16 %th<1>; // scratch: f16/bf16 immediates`);
  const sig = k.params.map((p, i) =>
    `  .param .${p.ptx} ${paramSymbol(p)}${i + 1 < k.params.length ? "," : ""}`
  );
  out.push(
    `// ${k.name}: ${k.threads} threads, ${k.dynamicSmemBytes} bytes of dynamic shared memory`,
    `.visible .entry ${k.name}(`,
    ...sig,
    ")",
    `.maxntid ${k.threads}, 1, 1`,
    ...(minBlocks === undefined ? [] : [`.minnctapersm ${minBlocks}`]),
    "{",
    ...decls.map((d) => `  ${d}`),
    "",
  );
  // The body (every line ending in a newline) and the `ret`, as one line of the module.
  out.push(`${cx.text}  ${OP_TEMPLATES.ret};`, "}");
}

/**
 * The PTX target of a gemmc target (its row's `ptx`, ir/target.ts).
 *
 * @param t `sm80` or `sm86`.
 * @returns `sm_80` or `sm_86`.
 * @example
 * ```ts
 * import { ptxTarget } from "./print.ts";
 * console.assert(ptxTarget("sm86") === "sm_86");
 * ```
 */
export function ptxTarget(t: Target): PtxTarget {
  return targetInfo(t).ptx;
}

/**
 * Prints kernels as one PTX module: the header (`.version 8.0`, the kernels'
 * common `.target`, `.address_size 64`), the dynamic shared-memory symbol
 * `gemmc_smem`, and one `.visible .entry` per kernel, its parameters in the
 * kernel's order (named `param_NAME`), `.maxntid THREADS, 1, 1`, its register
 * declarations and its body.
 *
 * @param kernels The kernels; they must share one target and have distinct names.
 * @param opts Performance hints for ptxas (none by default).
 * @returns The PTX text, ending in a newline.
 * @throws {PtxError} When the kernels are empty, disagree on the target, or an
 * operation has no PTX form.
 * @example
 * ```ts
 * import { printPtx } from "./print.ts";
 * const ptx = printPtx([{
 *   kind: "kernel", name: "nop", target: "sm80", params: [], threads: 32,
 *   dynamicSmemBytes: 0, regs: [], body: [],
 *   grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
 * }]);
 * console.assert(ptx.includes(".visible .entry nop("));
 * ```
 */
export function printPtx(kernels: readonly Kernel[], opts: PrintPtxOptions = {}): string {
  const mb = opts.minBlocksPerSm;
  if (mb !== undefined && (!Number.isInteger(mb) || mb < 1)) {
    throw new PtxError(`Bad minBlocksPerSm ${mb}: a positive integer`);
  }
  const first = kernels[0];
  if (first === undefined) throw new PtxError("Cannot print a PTX module without kernels");
  const names = new Set<string>();
  for (const k of kernels) {
    if (k.target !== first.target) {
      throw new PtxError(
        `Kernels of one module must share a target: "${first.name}" is ${first.target}, "${k.name}" is ${k.target}`,
      );
    }
    if (names.has(k.name)) throw new PtxError(`Duplicate kernel name "${k.name}"`);
    names.add(k.name);
  }
  const out = [
    "//",
    "// Generated by gemmc from the kernel IR.",
    "//",
    "",
    `.version ${targetInfo(first.target).ptxVersion}`,
    `.target ${ptxTarget(first.target)}`,
    ".address_size 64",
    "",
    `.extern .shared .align 128 .b8 ${SMEM_SYMBOL}[];`,
  ];
  for (const k of kernels) {
    out.push("");
    printEntry(k, opts, out);
  }
  return out.join("\n") + "\n";
}
