/**
 * Hand-built kernel-IR programs that together use every operation, every
 * conversion, every memory width with every legal vector length, guards of
 * both polarities, nested loops and conditionals, and every row of the MMA
 * table. The PTX tests print and assemble them; they are ordinary kernels,
 * so the simulator and a GPU launcher can run them too (each writes its
 * results to its first tensor parameter, `out`, and never reads it).
 *
 * @module
 */

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
import { MMA_SHAPES, type MmaShape } from "../../../ir/mma_table.ts";
import { BIN_PTX, CVT_PTX, MEM_PTX, UN_PTX } from "../print.ts";
import * as ir from "../../../ir/builder.ts";

const GRID = Object.freeze({
  tileM: 1,
  tileN: 1,
  swizzle: 1,
  splitK: 1,
  m: 1,
  n: 1,
  batch: null,
});

function kernel(
  name: string,
  target: Target,
  params: readonly KernelParam[],
  threads: number,
  smem: number,
  b: KernelBuilder,
): Kernel {
  return {
    kind: "kernel",
    name,
    target,
    params,
    threads,
    dynamicSmemBytes: smem,
    grid: GRID,
    regs: b.regs,
    body: b.body,
  };
}

const OUT: KernelParam = { name: "out", kind: "tensor", ptx: "u64", dtype: "f32" };

/** Stores registers to consecutive 8-byte slots of `out`, keeping them live. */
class Sink {
  #slot = 0;
  constructor(readonly b: KernelBuilder, readonly base: Reg) {}

  keep(r: Reg): void {
    const off = 8 * this.#slot++;
    const b = this.b;
    switch (r.type) {
      case "pred": {
        const v = b.reg("u32");
        b.emit(ir.selp("u32", v, imm(1), imm(0), r));
        b.emit(ir.stg("b8", [v], this.base, off));
        return;
      }
      case "b16":
        b.emit(ir.stg("b16", [r], this.base, off));
        return;
      case "u64":
      case "f64":
        b.emit(ir.stg("b64", [r], this.base, off));
        return;
      default:
        b.emit(ir.stg("b32", [r], this.base, off));
    }
  }
}

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

/** A sample immediate of each register type (never zero or one, so that
 * nothing folds away trivially). */
const SAMPLE: Readonly<Record<RegType, number>> = {
  pred: 1,
  b16: 0x3c01,
  b32: 0x7f00ff01,
  u32: 4000000000,
  s32: -12345,
  f32: -1.75,
  u64: 2 ** 40 + 3,
  f64: Math.PI,
};

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
  const packed = b.reg("b32");
  b.emit(ir.pack(packed, vals.b16, hi));
  sink.keep(packed);
  const lo2 = b.reg("b16");
  const hi2 = b.reg("b16");
  b.emit(ir.unpack(lo2, hi2, vals.b32));
  sink.keep(lo2);
  sink.keep(hi2);
}

/** Registers for a memory operation of `width`, `n` of them. */
function memRegs(b: KernelBuilder, width: MemWidth, n: number): Reg[] {
  const t: RegType = width === "b16" ? "b16" : width === "b64" ? "f64" : "u32";
  return Array.from({ length: n }, () => b.reg(t));
}

/**
 * Memory and control: `cp.async` (`.ca` 4/8/16, `.cg` 16, source sizes as
 * registers and immediates, guarded), `commit`, `wait`, `bar`, `ldmatrix`
 * (x1/x2/x4, with and without `.trans`), `lds`/`sts`/`ldg`/`stg` for every
 * width and legal vector length, guards of both polarities, loops with
 * register and constant bounds (including a zero trip count), uniform and
 * non-uniform conditionals with and without `else`, nested both ways, and
 * comments.
 *
 * @param target The target.
 * @returns The kernel `ops_memory`.
 */
export function memoryOpsKernel(target: Target): Kernel {
  const b = new KernelBuilder();
  const params: KernelParam[] = [
    OUT,
    { name: "src", kind: "tensor", ptx: "u64", dtype: "f16" },
    { name: "K", kind: "dim", ptx: "u32" },
  ];
  const out = b.loadParam("u64", "out");
  const src = b.loadParam("u64", "src");
  const k = b.loadParam("u32", "K");
  const tid = b.readSreg("tid.x", "tid");
  const smem = b.reg("u32", "smem");
  b.emit(ir.smemBase(smem));
  b.emit(ir.comment("per-thread addresses: 16 bytes of shared memory, 32 of out"));
  const soff = b.reg("u32");
  b.emit(ir.mad("u32", soff, tid, imm(16), smem));
  const goff = b.reg("u64");
  b.emit(ir.mulWide(goff, tid, imm(32)));
  const gsrc = b.reg("u64");
  b.emit(ir.bin("add", "u64", gsrc, src, goff));
  const gout = b.reg("u64");
  b.emit(ir.bin("add", "u64", gout, out, goff));
  const inb = b.reg("pred", "inb");
  b.emit(ir.setp("lt", "u32", inb, tid, k));
  const nbytes = b.reg("u32");
  b.emit(ir.selp("u32", nbytes, imm(16), imm(0), inb));

  const v: MemFrame = { out, src, k, tid, soff, gsrc, gout, inb, nbytes };
  memCopyLoop(b, v);
  const gmine = memWidths(b, v);
  memAtomics(b, v, gmine);
  memLoops(b, v);
  return kernel("ops_memory", target, params, 128, 16384, b);
}

/** The registers the parts of {@link memoryOpsKernel} share. */
interface MemFrame {
  readonly out: Reg;
  readonly src: Reg;
  readonly k: Reg;
  readonly tid: Reg;
  /** This thread's 16 bytes of shared memory. */
  readonly soff: Reg;
  /** This thread's 32 bytes of `src` and of `out`. */
  readonly gsrc: Reg;
  readonly gout: Reg;
  /** Whether `tid < K`, and the cp.async source size it selects (16 or 0). */
  readonly inb: Reg;
  readonly nbytes: Reg;
}

/** The cp.async family, prefetches, barriers and every ldmatrix form, in a loop over K. */
function memCopyLoop(b: KernelBuilder, v: MemFrame): void {
  const { k, soff, gsrc, gout, inb, nbytes } = v;
  const kt = b.reg("u32", "kt");
  b.for(kt, imm(0), k, 1, () => {
    b.emit(ir.comment("stage a tile with cp.async"));
    // Both caches, every size, zero-fill by register and immediate, guards of both polarities.
    const copies = [
      { cache: "cg", bytes: 16, dstOffset: 0, srcBytes: nbytes, guard: undefined },
      { cache: "ca", bytes: 8, dstOffset: 4096, srcBytes: imm(8), guard: ir.when(inb) },
      { cache: "ca", bytes: 4, dstOffset: 8192, srcBytes: imm(0), guard: ir.when(inb, true) },
      { cache: "ca", bytes: 16, dstOffset: 12288, srcBytes: nbytes, guard: undefined },
    ] as const;
    for (const { guard, ...c } of copies) {
      b.emit(ir.cpAsync({ ...c, dst: soff, src: gsrc }, guard));
    }
    b.emit(ir.prefetch(gsrc, ir.when(inb)));
    b.emit(ir.prefetch(gsrc, undefined, true));
    b.emit(ir.commit());
    b.emit(ir.wait(1));
    b.emit(ir.wait(0));
    b.emit(ir.bar());
    const last = b.reg("pred");
    b.emit(ir.setp("eq", "u32", last, kt, imm(0)));
    b.if(last, true, () => {
      // ldmatrix, every form.
      let slot = 0;
      for (const num of [1, 2, 4] as const) {
        for (const trans of [false, true]) {
          const dst = Array.from({ length: num }, () => b.reg("b32"));
          b.emit(ir.ldmatrix(num, trans, dst, soff, trans ? 512 : 0));
          const sum = b.reg("u32");
          b.emit(ir.mov(sum, imm(0)));
          for (const r of dst) {
            b.emit(ir.bin("xor", "u32", sum, sum, r));
          }
          b.emit(ir.stg("b32", [sum], gout, 4 * slot++));
        }
      }
      b.emit(ir.bar());
    }, () => {
      b.emit(ir.comment("later tiles: nothing"));
    });
  });
}

/** Every memory width and vector length, guarded both ways, in a non-uniform if in a loop;
 * returns the register of this thread's 1 KiB of `out` past 4096 (`gmine`). */
function memWidths(b: KernelBuilder, v: MemFrame): Reg {
  const { out, src, tid, soff, inb } = v;
  // Every width and vector length through shared and global memory, guarded
  // both ways, inside a non-uniform conditional nested in a loop. Each thread
  // reads and writes its own 1 KiB of `src` and `out` and its own 16 bytes of
  // shared memory.
  const region = b.reg("u64");
  b.emit(ir.mulWide(region, tid, imm(1024)));
  const gin = b.reg("u64");
  b.emit(ir.bin("add", "u64", gin, src, region));
  const gmine = b.reg("u64");
  b.emit(ir.bin("add", "u64", gmine, out, region));
  b.emit(ir.bin("add", "u64", gmine, gmine, imm(4096)));
  const rep = b.reg("u32", "rep");
  b.for(rep, imm(0), imm(2), 1, () => {
    const acc = b.reg("u32");
    b.emit(ir.mov(acc, rep));
    const q = b.reg("u32");
    b.for(q, imm(0), imm(3), 1, () => {
      b.emit(ir.mad("u32", acc, acc, imm(3), q));
    });
    b.emit(ir.stg("b32", [acc], gmine, 768));
    const odd = b.reg("pred");
    const lane = b.reg("u32");
    b.emit(ir.bin("and", "u32", lane, tid, imm(1)));
    b.emit(ir.setp("ne", "u32", odd, lane, imm(0)));
    b.if(odd, false, () => {
      let off = 0;
      for (const width of ["b8", "b16", "b32", "b64"] as const) {
        for (const n of MEM_PTX[width].vec) {
          const g = { pred: inb, negate: n === 2 };
          const rs = memRegs(b, width, n);
          for (const r of rs) b.emit(ir.mov(r, imm(0)));
          b.emit(ir.ldg(width, rs, gin, off, g));
          b.emit(ir.sts(width, rs, soff, 0));
          const back = memRegs(b, width, n);
          b.emit(ir.lds(width, back, soff, 0, g));
          b.emit(ir.stg(width, back, gmine, off, g));
          off += 64;
        }
      }
      // Immediate store operands.
      b.emit(ir.sts("b32", [imm(SAMPLE.b32), tid], soff, 0));
      b.emit(ir.stg("b16", [imm(SAMPLE.b16)], gmine, off));
    });
  });
  return gmine;
}

/** Atomics, fences and an L2-only load. */
function memAtomics(b: KernelBuilder, v: MemFrame, gmine: Reg): void {
  const { tid, inb } = v;
  // An atomic add (register and immediate operands, one guarded) on a word of
  // the thread's own region, a fence, and an L2-only load of the result.
  b.emit(ir.stg("b32", [tid], gmine, 960));
  b.emit(ir.fence());
  const old = b.reg("u32");
  b.emit(ir.atom(old, gmine, 960, tid, ir.when(inb)));
  const old2 = b.reg("u32");
  b.emit(ir.atom(old2, gmine, 960, imm(7)));
  b.emit(ir.fence());
  const cg = b.reg("u32");
  b.emit(ir.ldg("b32", [cg], gmine, 960, undefined, "cg"));
  b.emit(ir.stg("b32", [old, old2], gmine, 968));
  b.emit(ir.stg("b32", [cg], gmine, 976));
}

/** A loop that never runs and a loop inside a uniform conditional. */
function memLoops(b: KernelBuilder, v: MemFrame): void {
  const { k, tid, gout } = v;
  // A loop that never runs and a loop inside a uniform conditional.
  const never = b.reg("u32");
  b.for(never, imm(4), imm(4), 1, () => {
    b.emit(ir.stg("b32", [never], gout, 24));
  });
  const big = b.reg("pred");
  b.emit(ir.setp("gt", "u32", big, k, imm(8)));
  b.if(
    big,
    true,
    () => {
      const j = b.reg("u32");
      b.for(j, tid, k, 128, () => {
        b.emit(ir.stg("b32", [j], gout, 28));
      });
    },
    undefined,
    true,
  );
}

function chunks<T>(xs: readonly T[], max: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length;) {
    let n = max;
    while (n > xs.length - i) n >>= 1;
    out.push(xs.slice(i, i + n));
    i += n;
  }
  return out;
}

/** The entry name of the MMA test kernel of a table row. */
export function mmaKernelName(row: MmaShape): string {
  return `mma_${row.name.replaceAll(".", "_")}`;
}

/**
 * One warp runs one MMA of a table row: each lane loads its A, B and C
 * fragments from shared memory (lane-major, `lds`), issues the `mma`, and
 * stores D to `out` (lane-major, `stg`). Rows with an f32 accumulator write
 * D over C (`d` = `c`), the others into fresh registers.
 *
 * @param row The MMA table row.
 * @param target The target.
 * @returns The kernel.
 */
export function mmaKernel(row: MmaShape, target: Target): Kernel {
  const b = new KernelBuilder();
  const out = b.loadParam("u64", "out");
  const lane = b.readSreg("laneid", "lane");
  const smem = b.reg("u32", "smem");
  b.emit(ir.smemBase(smem));
  b.emit(ir.comment(`${row.name}: ${row.ptx}`));
  const accType: RegType = row.c.regType;
  const width: MemWidth = row.regBits === 64 ? "b64" : "b32";
  const bytes = row.regBits / 8;
  const maxVec = Math.max(...MEM_PTX[width].vec);
  let base = 0;
  const load = (regs: number, type: RegType): Reg[] => {
    const rs = Array.from({ length: regs }, () => b.reg(type));
    const stride = regs * bytes;
    const a = b.reg("u32");
    b.emit(ir.mad("u32", a, lane, imm(stride), smem));
    let off = base;
    for (const part of chunks(rs, maxVec)) {
      b.emit(ir.lds(width, part, a, off));
      off += part.length * bytes;
    }
    base += 32 * stride;
    return rs;
  };
  const a = load(row.a.regs, row.a.regType);
  const bf = load(row.b.regs, row.b.regType);
  const c = load(row.c.regs, accType);
  const d = accType === "f32" ? c : Array.from({ length: row.c.regs }, () => b.reg(accType));
  b.emit(ir.mma(row.name, d, a, bf, c));
  const off = b.reg("u64");
  b.emit(ir.mulWide(off, lane, imm(row.c.regs * bytes)));
  const at = b.reg("u64");
  b.emit(ir.bin("add", "u64", at, out, off));
  let o = 0;
  for (const part of chunks(d, maxVec)) {
    b.emit(ir.stg(width, part, at, o));
    o += part.length * bytes;
  }
  return kernel(mmaKernelName(row), target, [OUT], 32, base, b);
}

/**
 * A small, readable kernel for the golden PTX snapshot: each block scales
 * and adds 512 elements, `y[i] = a * x[i] + y[i]`, in a loop of 4 steps of
 * 128 threads, with guarded loads and stores for the tail.
 *
 * @param target The target.
 * @returns The kernel `saxpy`.
 */
export function saxpyKernel(target: Target): Kernel {
  const b = new KernelBuilder();
  const params: KernelParam[] = [
    { name: "x", kind: "tensor", ptx: "u64", dtype: "f32" },
    { name: "y", kind: "tensor", ptx: "u64", dtype: "f32" },
    { name: "N", kind: "dim", ptx: "u32" },
    { name: "a", kind: "scalar", ptx: "f32", dtype: "f32" },
  ];
  const x = b.loadParam("u64", "x");
  const y = b.loadParam("u64", "y");
  const n = b.loadParam("u32", "N");
  const a = b.loadParam("f32", "a");
  const tid = b.readSreg("tid.x", "tid");
  const cta = b.readSreg("ctaid.x", "cta");
  const first = b.reg("u32", "first");
  b.emit(ir.mad("u32", first, cta, imm(512), tid));
  const j = b.reg("u32", "j");
  b.for(j, imm(0), imm(4), 1, () => {
    b.emit(ir.comment("i = first + 128 j"));
    const i = b.reg("u32", "i");
    b.emit(ir.mad("u32", i, j, imm(128), first));
    const ok = b.reg("pred", "ok");
    b.emit(ir.setp("lt", "u32", ok, i, n));
    const off = b.reg("u64");
    b.emit(ir.mulWide(off, i, imm(4)));
    const px = b.reg("u64");
    b.emit(ir.bin("add", "u64", px, x, off));
    const py = b.reg("u64");
    b.emit(ir.bin("add", "u64", py, y, off));
    const xv = b.reg("f32", "xv");
    const yv = b.reg("f32", "yv");
    b.emit(ir.mov(xv, imm(0)));
    b.emit(ir.mov(yv, imm(0)));
    const g = { pred: ok, negate: false };
    b.emit(ir.ldg("b32", [xv], px, 0, g));
    b.emit(ir.ldg("b32", [yv], py, 0, g));
    const r = b.reg("f32", "r");
    b.emit(ir.mad("f32", r, a, xv, yv));
    b.emit(ir.stg("b32", [r], py, 0, g));
  });
  return kernel("saxpy", target, params, 128, 0, b);
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
  const pf = b.reg("f32");
  b.emit(ir.pack(pf, h, h));
  sink.keep(pf);
  const lo = b.reg("b16");
  const hi = b.reg("b16");
  b.emit(ir.unpack(lo, hi, i32.u32));
  sink.keep(lo);
  sink.keep(hi);
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

/**
 * Every test kernel: the two operation kernels and one kernel per MMA table row.
 *
 * @param target The target.
 * @returns The kernels, with distinct names.
 */
export function allTestKernels(target: Target): Kernel[] {
  return [
    registerOpsKernel(target),
    registerClassKernel(target),
    memoryOpsKernel(target),
    saxpyKernel(target),
    ...MMA_SHAPES.map((r) => mmaKernel(r, target)),
  ];
}
