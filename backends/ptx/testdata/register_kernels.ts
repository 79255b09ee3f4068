/**
 * The register-level test kernels: every register operation of the printer's
 * tables ({@link registerOpsKernel}) and the register classes PTX accepts
 * besides the usual ones ({@link registerClassKernel}).
 *
 * @module
 */

import * as ir from "../../../ir/builder.ts";
import { imm, KernelBuilder } from "../../../ir/builder.ts";
import type {
  BinOp,
  CvtKind,
  Kernel,
  KernelParam,
  MemWidth,
  Operand,
  Reg,
  RegType,
  SetpOp,
  SpecialReg,
  UnOp,
} from "../../../ir/kernel.ts";
import type { Target } from "../../../ir/gemm.ts";
import { BIN_PTX, CVT_PTX, UN_PTX } from "../print.ts";
import { kernel, OUT, SAMPLE, Sink } from "./_fixture.ts";

const SREGS: readonly SpecialReg[] = [
  "tid.x",
  "ctaid.x",
  "ctaid.y",
  "ctaid.z",
  "nctaid.x",
  "nctaid.y",
  "nctaid.z",
  "laneid",
];

/** Source and destination register types of each conversion. */
const CVT_TYPES: Readonly<Record<CvtKind, readonly [RegType, RegType]>> = {
  "f32.f16": ["f32", "b16"],
  "f32.bf16": ["f32", "b16"],
  "f16.f32": ["b16", "f32"],
  "bf16.f32": ["b16", "f32"],
  "tf32.f32": ["b32", "f32"],
  "f64.f32": ["f64", "f32"],
  "f32.f64": ["f32", "f64"],
  "f32.s32": ["f32", "s32"],
  "f64.s32": ["f64", "s32"],
  "s32.f32": ["s32", "f32"],
  "s32.f64": ["s32", "f64"],
  "s8.s32": ["u32", "s32"],
  "u8.s32": ["u32", "s32"],
  "u64.u32": ["u64", "u32"],
  "b32.f32": ["b32", "f32"],
  "f32.b32": ["f32", "b32"],
  "b32.u32": ["b32", "u32"],
  "u32.b32": ["u32", "b32"],
  "s32.b32": ["s32", "b32"],
  "b32.s32": ["b32", "s32"],
};

/**
 * Register-level operations: parameters of every kind, special registers,
 * `mov` of every type (immediates and registers), every `bin`/`un` pair of
 * the printer's tables, `mad` of every type, `mulwide`, every `setp`
 * comparison and type, `selp` of every type, every conversion (from a
 * register and from an immediate), `pack`/`unpack`. Every result is stored.
 *
 * @param target The target.
 * @returns The kernel `ops_registers`.
 */
export function registerOpsKernel(target: Target): Kernel {
  const b = new KernelBuilder();
  const params: KernelParam[] = [
    OUT,
    { name: "M", kind: "dim", ptx: "u32" },
    { name: "alpha", kind: "scalar", ptx: "f32", dtype: "f32" },
    { name: "beta", kind: "scalar", ptx: "f64", dtype: "f64" },
    { name: "shift", kind: "scalar", ptx: "s32", dtype: "s32" },
  ];
  const out = b.loadParam("u64", "out");
  const sink = new Sink(b, out);
  const m = b.loadParam("u32", "M");
  const alpha = b.loadParam("f32", "alpha");
  const beta = b.loadParam("f64", "beta");
  const shift = b.loadParam("s32", "shift");
  const sregs = SREGS.map((s) => b.readSreg(s, s));
  const smem = b.reg("u32", "smem");
  b.emit(ir.smemBase(smem));
  [m, shift, ...sregs, smem].forEach((r) => sink.keep(r));

  const tid = sregs[0]!;
  const vals = threadValues(b, tid, m, shift);
  const v: RegFrame = { sink, vals, tid, m, alpha, beta };
  regMovs(b, v);
  regArith(b, v);
  regCompares(b, v);
  return kernel("ops_registers", target, params, 128, 0, b);
}

/** A value of each register type that depends on the thread (so that nothing is constant). */
function threadValues(b: KernelBuilder, tid: Reg, m: Reg, shift: Reg): Record<RegType, Reg> {
  const vals = {} as Record<RegType, Reg>;
  const p0 = b.reg("pred", "p0");
  b.emit(ir.setp("lt", "u32", p0, tid, m));
  vals.pred = p0;
  vals.u32 = b.reg("u32");
  b.emit(ir.bin("add", "u32", vals.u32, tid, m));
  vals.s32 = b.reg("s32");
  b.emit(ir.bin("sub", "s32", vals.s32, shift, tid));
  vals.b32 = b.reg("b32");
  b.emit(ir.bin("xor", "b32", vals.b32, vals.u32, imm(SAMPLE.b32)));
  vals.f32 = b.reg("f32");
  b.emit(ir.cvt("f32.s32", vals.f32, vals.s32));
  vals.f64 = b.reg("f64");
  b.emit(ir.cvt("f64.s32", vals.f64, vals.s32));
  vals.u64 = b.reg("u64");
  b.emit(ir.mulWide(vals.u64, vals.u32, imm(SAMPLE.u32)));
  vals.b16 = b.reg("b16");
  b.emit(ir.cvt("f16.f32", vals.b16, vals.f32));
  return vals;
}

/** What the parts of {@link registerOpsKernel} share: the values of every type, the
 * parameters and thread index they use, and where results are stored. */
interface RegFrame {
  readonly sink: Sink;
  readonly vals: Readonly<Record<RegType, Reg>>;
  readonly tid: Reg;
  readonly m: Reg;
  readonly alpha: Reg;
  readonly beta: Reg;
}

/** `mov` of every type from an immediate and a register, and a bit move across types. */
function regMovs(b: KernelBuilder, v: RegFrame): void {
  const { sink, vals } = v;
  // mov: an immediate and a register of every type, and a bit move across types.
  for (const t of Object.keys(SAMPLE) as RegType[]) {
    const r = b.reg(t);
    b.emit(ir.mov(r, imm(SAMPLE[t])));
    sink.keep(r);
    const s = b.reg(t);
    b.emit(ir.mov(s, vals[t]));
    sink.keep(s);
  }
  const bits = b.reg("f32");
  b.emit(ir.mov(bits, vals.b32));
  sink.keep(bits);
}

/** Every `bin` and `un` of the printer's tables, `mad` of every type, `mulwide`. */
function regArith(b: KernelBuilder, v: RegFrame): void {
  const { sink, vals, tid, m, alpha, beta } = v;
  // bin: every (fn, type) the printer has an instruction for; immediates on
  // alternate sides.
  let flip = false;
  for (const [fn, row] of Object.entries(BIN_PTX)) {
    for (const type of Object.keys(row) as BinOp["type"][]) {
      const dst = b.reg(type);
      const x: Operand = vals[type];
      let k: Operand = imm(type === "pred" ? 1 : SAMPLE[type]);
      const divide = fn === "div" || fn === "rem";
      const swap = flip && type !== "pred" && !divide; // never a register divisor
      if (fn === "shl" || fn === "shr") k = flip ? vals.u32 : imm(3);
      else if (divide) k = imm(type === "f32" || type === "f64" ? 3.5 : 7);
      else if (swap) k = imm(SAMPLE[type]);
      const [a, y] = swap && fn !== "shl" && fn !== "shr" ? [k, x] : [x, k];
      b.emit(ir.bin(fn as BinOp["fn"], type, dst, a, y));
      sink.keep(dst);
      flip = !flip;
    }
  }
  for (const type of ["u32", "s32", "u64", "f32", "f64"] as const) {
    const dst = b.reg(type);
    b.emit(ir.mad(type, dst, vals[type], imm(SAMPLE[type]), vals[type]));
    sink.keep(dst);
  }
  const fma = b.reg("f32");
  b.emit(ir.mad("f32", fma, alpha, vals.f32, imm(0.5)));
  const fmad = b.reg("f64");
  b.emit(ir.mad("f64", fmad, beta, vals.f64, imm(-0.25)));
  sink.keep(fma);
  sink.keep(fmad);
  const wide = b.reg("u64");
  b.emit(ir.mulWide(wide, tid, m));
  sink.keep(wide);

  for (const [fn, row] of Object.entries(UN_PTX)) {
    for (const type of Object.keys(row) as UnOp["type"][]) {
      const dst = b.reg(type);
      b.emit(ir.un(fn as UnOp["fn"], type, dst, vals[type]));
      sink.keep(dst);
    }
  }
  const ex = b.reg("f32");
  b.emit(ir.un("ex2", "f32", ex, imm(0.5)));
  sink.keep(ex);
}

/** Every `setp` comparison and type, `selp`, every conversion, `pack`/`unpack`. */
function regCompares(b: KernelBuilder, v: RegFrame): void {
  const { sink, vals, alpha } = v;
  const cmps: readonly SetpOp["cmp"][] = ["lt", "le", "gt", "ge", "eq", "ne"];
  for (const type of ["u32", "s32", "u64", "f32", "f64"] as const) {
    for (const cmp of cmps) {
      const p = b.reg("pred");
      b.emit(ir.setp(cmp, type, p, vals[type], imm(SAMPLE[type])));
      sink.keep(p);
    }
  }
  for (const type of ["u32", "s32", "b32", "f32", "f64", "u64"] as const) {
    const dst = b.reg(type);
    b.emit(ir.selp(type, dst, vals[type], imm(SAMPLE[type]), vals.pred));
    sink.keep(dst);
  }

  for (const kind of Object.keys(CVT_PTX) as CvtKind[]) {
    const [dt, st] = CVT_TYPES[kind];
    const d = b.reg(dt);
    b.emit(ir.cvt(kind, d, vals[st]));
    sink.keep(d);
    const e = b.reg(dt);
    b.emit(ir.cvt(kind, e, imm(SAMPLE[st])));
    sink.keep(e);
  }

  const hi = b.reg("b16");
  b.emit(ir.cvt("bf16.f32", hi, alpha));
  packBoth(b, sink, "b32", [vals.b16, hi], vals.b32);
}

/**
 * The register types the printer accepts besides the usual ones (its
 * `REG_CLASS` table), so that ptxas confirms them: memory widths from every
 * allowed register type, integer operations on s32/b32 registers, float
 * operations on b32 registers, conversions and bit moves across the allowed
 * types, and MMA accumulators in b32/u32 registers.
 *
 * @param target The target.
 * @returns The kernel `ops_register_classes`.
 */
export function registerClassKernel(target: Target): Kernel {
  const b = new KernelBuilder();
  const out = b.loadParam("u64", "out");
  const sink = new Sink(b, out);
  const smem = b.reg("b32", "smem");
  b.emit(ir.smemBase(smem));
  const lane = b.reg("s32", "lane");
  b.emit(ir.sreg(lane, "laneid"));
  const g = b.reg("u64");
  b.emit(ir.mulWide(g, lane, smem));
  // Memory from every register type of each width's class.
  const widths: [MemWidth, RegType[]][] = [
    ["b8", ["u32", "s32", "b32"]],
    ["b32", ["u32", "s32", "b32", "f32"]],
    ["b64", ["u64", "f64"]],
  ];
  let off = 0;
  for (const [width, types] of widths) {
    for (const t of types) {
      const r = b.reg(t);
      b.emit(ir.lds(width, [r], smem, off));
      b.emit(ir.stg(width, [r], out, off));
      off += 8;
    }
  }
  const i32 = { u32: b.reg("u32"), s32: b.reg("s32"), b32: b.reg("b32") };
  const f32 = { f32: b.reg("f32"), b32: b.reg("b32") };
  for (const r of [...Object.values(i32), ...Object.values(f32)]) {
    b.emit(ir.lds("b32", [r], smem, 0));
  }
  for (const t of ["u32", "s32"] as const) {
    const d = b.reg(t === "u32" ? "b32" : "u32");
    b.emit(ir.bin("add", t, d, i32.s32, i32.b32));
    b.emit(ir.mad(t, d, i32.b32, i32.u32, d));
    b.emit(ir.bin("shl", t, d, d, i32.s32));
    sink.keep(d);
  }
  const fb = b.reg("b32");
  b.emit(ir.bin("add", "f32", fb, f32.b32, f32.f32));
  b.emit(ir.mad("f32", fb, fb, f32.b32, imm(1)));
  b.emit(ir.un("neg", "f32", fb, fb));
  sink.keep(fb);
  const xf = b.reg("f32");
  b.emit(ir.bin("and", "b32", xf, f32.f32, i32.s32));
  sink.keep(xf);
  const pc = b.reg("s32");
  b.emit(ir.un("popc", "b32", pc, i32.u32));
  sink.keep(pc);
  const p = b.reg("pred");
  b.emit(ir.setp("lt", "f32", p, f32.b32, imm(2)));
  b.emit(ir.setp("ge", "s32", p, i32.u32, i32.b32));
  const sel = b.reg("b32");
  b.emit(ir.selp("f32", sel, f32.b32, f32.f32, p));
  sink.keep(sel);
  classConversions(b, sink, i32, f32);
  classVectors(b, sink, out, smem);
  return kernel("ops_register_classes", target, [OUT], 32, 64, b);
}

/** The 32-bit registers {@link registerClassKernel} reads from shared memory, by class. */
type I32Regs = Readonly<Record<"u32" | "s32" | "b32", Reg>>;
/** The f32-class registers of {@link registerClassKernel}. */
type F32Regs = Readonly<Record<"f32" | "b32", Reg>>;

/** Conversions, packing and unpacking across the register types PTX allows. */
function classConversions(b: KernelBuilder, sink: Sink, i32: I32Regs, f32: F32Regs): void {
  // Conversions across the allowed register types.
  const cv: [CvtKind, RegType, Reg][] = [
    ["f32.s32", "b32", i32.u32],
    ["f32.s32", "f32", i32.b32],
    ["s32.f32", "u32", f32.b32],
    ["s32.f32", "b32", f32.f32],
    ["s8.s32", "s32", i32.u32],
    ["u8.s32", "b32", i32.b32],
    ["u64.u32", "u64", i32.s32],
    ["f16.f32", "b16", f32.b32],
    ["b32.f32", "u32", f32.f32],
    ["f32.b32", "f32", i32.s32],
    ["u32.b32", "s32", f32.f32],
  ];
  for (const [kind, dt, src] of cv) {
    const d = b.reg(dt);
    b.emit(ir.cvt(kind, d, src));
    sink.keep(d);
  }
  const h = b.reg("b16");
  b.emit(ir.cvt("f16.f32", h, f32.f32));
  const wide = b.reg("b32");
  b.emit(ir.cvt("f32.f16", wide, h));
  sink.keep(wide);
  packBoth(b, sink, "f32", [h, h], i32.u32);
}

/** `ldmatrix`, vectors of mixed register types and `mma` accumulators in untyped registers. */
function classVectors(b: KernelBuilder, sink: Sink, out: Reg, smem: Reg): void {
  const lm = [b.reg("u32"), b.reg("s32"), b.reg("b32"), b.reg("u32")];
  b.emit(ir.ldmatrix(4, false, lm, smem, 0));
  lm.forEach((r) => sink.keep(r));
  // Vectors: b32 registers go with float and integer ones; immediates beside floats.
  const vf = [b.reg("f32"), b.reg("b32")];
  b.emit(ir.lds("b32", vf, smem, 0));
  b.emit(ir.sts("b32", [vf[0]!, imm(0x3f800000)], smem, 0));
  b.emit(ir.sts("b32", [imm(-1), vf[1]!, vf[0]!, imm(7)], smem, 0));
  const vd = b.reg("f64");
  b.emit(ir.lds("b64", [vd], smem, 0));
  b.emit(ir.stg("b64", [imm(-2), vd], out, 0));
  const vi = [b.reg("u32"), b.reg("b32"), b.reg("s32"), b.reg("u32")];
  b.emit(ir.lds("b32", vi, smem, 0));
  b.emit(ir.stg("b32", [...vi.slice(0, 3), imm(-5)], out, 0));
  // Accumulators in b32 (f32 rows) and u32/b32 (s32 rows).
  const frag = (n: number, t: RegType) => Array.from({ length: n }, () => b.reg(t));
  const a = frag(4, "b32");
  const bb = frag(2, "b32");
  b.emit(ir.lds("b32", a, smem, 0));
  b.emit(ir.lds("b32", bb, smem, 16));
  const cf = frag(4, "b32");
  b.emit(ir.lds("b32", cf, smem, 32));
  b.emit(ir.mma("m16n8k16.f16.f32", cf, a, bb, cf));
  const ci = [b.reg("u32"), b.reg("b32"), b.reg("s32"), b.reg("u32")];
  b.emit(ir.lds("b32", ci, smem, 48));
  b.emit(ir.mma("m16n8k32.s8.s32", ci, a, bb, ci));
  [...cf, ...ci].forEach((r) => sink.keep(r));
}

/** A `pack` of two halves into a new register of `type`, and an `unpack` of `src` into two
 * new b16 registers; every result is stored. */
function packBoth(
  b: KernelBuilder,
  sink: Sink,
  type: RegType,
  [lo, hi]: readonly [Reg, Reg],
  src: Reg,
): void {
  const packed = b.reg(type);
  b.emit(ir.pack(packed, lo, hi));
  sink.keep(packed);
  const halves = [b.reg("b16"), b.reg("b16")] as const;
  b.emit(ir.unpack(halves[0], halves[1], src));
  halves.forEach((r) => sink.keep(r));
}
