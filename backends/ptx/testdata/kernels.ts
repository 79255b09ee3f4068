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
        b.emit({ op: "selp", type: "u32", dst: v, a: imm(1), b: imm(0), p: r });
        b.emit({ op: "stg", width: "b8", src: [v], addr: this.base, offset: off });
        return;
      }
      case "b16":
        b.emit({ op: "stg", width: "b16", src: [r], addr: this.base, offset: off });
        return;
      case "u64":
      case "f64":
        b.emit({ op: "stg", width: "b64", src: [r], addr: this.base, offset: off });
        return;
      default:
        b.emit({ op: "stg", width: "b32", src: [r], addr: this.base, offset: off });
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
  const out = b.reg("u64", "out");
  b.emit({ op: "param", dst: out, name: "out" });
  const sink = new Sink(b, out);
  const m = b.reg("u32", "M");
  b.emit({ op: "param", dst: m, name: "M" });
  const alpha = b.reg("f32", "alpha");
  b.emit({ op: "param", dst: alpha, name: "alpha" });
  const beta = b.reg("f64", "beta");
  b.emit({ op: "param", dst: beta, name: "beta" });
  const shift = b.reg("s32", "shift");
  b.emit({ op: "param", dst: shift, name: "shift" });
  const sregs = SREGS.map((s) => {
    const r = b.reg("u32", s);
    b.emit({ op: "sreg", dst: r, sreg: s });
    return r;
  });
  const smem = b.reg("u32", "smem");
  b.emit({ op: "smembase", dst: smem });
  [m, shift, ...sregs, smem].forEach((r) => sink.keep(r));

  // A value of each type that depends on the thread (so that nothing is constant).
  const tid = sregs[0]!;
  const vals = {} as Record<RegType, Reg>;
  const p0 = b.reg("pred", "p0");
  b.emit({ op: "setp", cmp: "lt", type: "u32", dst: p0, a: tid, b: m });
  vals.pred = p0;
  vals.u32 = b.reg("u32");
  b.emit({ op: "bin", fn: "add", type: "u32", dst: vals.u32, a: tid, b: m });
  vals.s32 = b.reg("s32");
  b.emit({ op: "bin", fn: "sub", type: "s32", dst: vals.s32, a: shift, b: tid });
  vals.b32 = b.reg("b32");
  b.emit({ op: "bin", fn: "xor", type: "b32", dst: vals.b32, a: vals.u32, b: imm(SAMPLE.b32) });
  vals.f32 = b.reg("f32");
  b.emit({ op: "cvt", kind: "f32.s32", dst: vals.f32, src: vals.s32 });
  vals.f64 = b.reg("f64");
  b.emit({ op: "cvt", kind: "f64.s32", dst: vals.f64, src: vals.s32 });
  vals.u64 = b.reg("u64");
  b.emit({ op: "mulwide", dst: vals.u64, a: vals.u32, b: imm(SAMPLE.u32) });
  vals.b16 = b.reg("b16");
  b.emit({ op: "cvt", kind: "f16.f32", dst: vals.b16, src: vals.f32 });

  // mov: an immediate and a register of every type, and a bit move across types.
  for (const t of Object.keys(SAMPLE) as RegType[]) {
    const r = b.reg(t);
    b.emit({ op: "mov", dst: r, src: imm(SAMPLE[t]) });
    sink.keep(r);
    const s = b.reg(t);
    b.emit({ op: "mov", dst: s, src: vals[t] });
    sink.keep(s);
  }
  const bits = b.reg("f32");
  b.emit({ op: "mov", dst: bits, src: vals.b32 });
  sink.keep(bits);

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
      b.emit({ op: "bin", fn: fn as BinOp["fn"], type, dst, a, b: y });
      sink.keep(dst);
      flip = !flip;
    }
  }
  for (const type of ["u32", "s32", "u64", "f32", "f64"] as const) {
    const dst = b.reg(type);
    b.emit({ op: "mad", type, dst, a: vals[type], b: imm(SAMPLE[type]), c: vals[type] });
    sink.keep(dst);
  }
  const fma = b.reg("f32");
  b.emit({ op: "mad", type: "f32", dst: fma, a: alpha, b: vals.f32, c: imm(0.5) });
  const fmad = b.reg("f64");
  b.emit({ op: "mad", type: "f64", dst: fmad, a: beta, b: vals.f64, c: imm(-0.25) });
  sink.keep(fma);
  sink.keep(fmad);
  const wide = b.reg("u64");
  b.emit({ op: "mulwide", dst: wide, a: tid, b: m });
  sink.keep(wide);

  for (const [fn, row] of Object.entries(UN_PTX)) {
    for (const type of Object.keys(row) as UnOp["type"][]) {
      const dst = b.reg(type);
      b.emit({ op: "un", fn: fn as UnOp["fn"], type, dst, src: vals[type] });
      sink.keep(dst);
    }
  }
  const ex = b.reg("f32");
  b.emit({ op: "un", fn: "ex2", type: "f32", dst: ex, src: imm(0.5) });
  sink.keep(ex);

  const cmps: readonly SetpOp["cmp"][] = ["lt", "le", "gt", "ge", "eq", "ne"];
  for (const type of ["u32", "s32", "u64", "f32", "f64"] as const) {
    for (const cmp of cmps) {
      const p = b.reg("pred");
      b.emit({ op: "setp", cmp, type, dst: p, a: vals[type], b: imm(SAMPLE[type]) });
      sink.keep(p);
    }
  }
  for (const type of ["u32", "s32", "b32", "f32", "f64", "u64"] as const) {
    const dst = b.reg(type);
    b.emit({ op: "selp", type, dst, a: vals[type], b: imm(SAMPLE[type]), p: p0 });
    sink.keep(dst);
  }

  for (const kind of Object.keys(CVT_PTX) as CvtKind[]) {
    const [dt, st] = CVT_TYPES[kind];
    const d = b.reg(dt);
    b.emit({ op: "cvt", kind, dst: d, src: vals[st] });
    sink.keep(d);
    const e = b.reg(dt);
    b.emit({ op: "cvt", kind, dst: e, src: imm(SAMPLE[st]) });
    sink.keep(e);
  }

  const hi = b.reg("b16");
  b.emit({ op: "cvt", kind: "bf16.f32", dst: hi, src: alpha });
  const packed = b.reg("b32");
  b.emit({ op: "pack", dst: packed, lo: vals.b16, hi });
  sink.keep(packed);
  const lo2 = b.reg("b16");
  const hi2 = b.reg("b16");
  b.emit({ op: "unpack", lo: lo2, hi: hi2, src: vals.b32 });
  sink.keep(lo2);
  sink.keep(hi2);
  return kernel("ops_registers", target, params, 128, 0, b);
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
  const out = b.reg("u64", "out");
  b.emit({ op: "param", dst: out, name: "out" });
  const src = b.reg("u64", "src");
  b.emit({ op: "param", dst: src, name: "src" });
  const k = b.reg("u32", "K");
  b.emit({ op: "param", dst: k, name: "K" });
  const tid = b.reg("u32", "tid");
  b.emit({ op: "sreg", dst: tid, sreg: "tid.x" });
  const smem = b.reg("u32", "smem");
  b.emit({ op: "smembase", dst: smem });
  b.emit({ op: "comment", text: "per-thread addresses: 16 bytes of shared memory, 32 of out" });
  const soff = b.reg("u32");
  b.emit({ op: "mad", type: "u32", dst: soff, a: tid, b: imm(16), c: smem });
  const goff = b.reg("u64");
  b.emit({ op: "mulwide", dst: goff, a: tid, b: imm(32) });
  const gsrc = b.reg("u64");
  b.emit({ op: "bin", fn: "add", type: "u64", dst: gsrc, a: src, b: goff });
  const gout = b.reg("u64");
  b.emit({ op: "bin", fn: "add", type: "u64", dst: gout, a: out, b: goff });
  const inb = b.reg("pred", "inb");
  b.emit({ op: "setp", cmp: "lt", type: "u32", dst: inb, a: tid, b: k });
  const nbytes = b.reg("u32");
  b.emit({ op: "selp", type: "u32", dst: nbytes, a: imm(16), b: imm(0), p: inb });

  const kt = b.reg("u32", "kt");
  b.for(kt, imm(0), k, 1, () => {
    b.emit({ op: "comment", text: "stage a tile with cp.async" });
    b.emit({
      op: "cpasync",
      cache: "cg",
      bytes: 16,
      dst: soff,
      dstOffset: 0,
      src: gsrc,
      srcBytes: nbytes,
    });
    b.emit({
      op: "cpasync",
      cache: "ca",
      bytes: 8,
      dst: soff,
      dstOffset: 4096,
      src: gsrc,
      srcBytes: imm(8),
      guard: { pred: inb, negate: false },
    });
    b.emit({
      op: "cpasync",
      cache: "ca",
      bytes: 4,
      dst: soff,
      dstOffset: 8192,
      src: gsrc,
      srcBytes: imm(0),
      guard: { pred: inb, negate: true },
    });
    b.emit({
      op: "cpasync",
      cache: "ca",
      bytes: 16,
      dst: soff,
      dstOffset: 12288,
      src: gsrc,
      srcBytes: nbytes,
    });
    b.emit({ op: "prefetch", addr: gsrc, guard: { pred: inb, negate: false } });
    b.emit({ op: "prefetch", addr: gsrc, evictLast: true });
    b.emit({ op: "commit" });
    b.emit({ op: "wait", n: 1 });
    b.emit({ op: "wait", n: 0 });
    b.emit({ op: "bar" });
    const last = b.reg("pred");
    b.emit({ op: "setp", cmp: "eq", type: "u32", dst: last, a: kt, b: imm(0) });
    b.if(last, true, () => {
      // ldmatrix, every form.
      let slot = 0;
      for (const num of [1, 2, 4] as const) {
        for (const trans of [false, true]) {
          const dst = Array.from({ length: num }, () => b.reg("b32"));
          b.emit({ op: "ldmatrix", num, trans, dst, addr: soff, offset: trans ? 512 : 0 });
          const sum = b.reg("u32");
          b.emit({ op: "mov", dst: sum, src: imm(0) });
          for (const r of dst) {
            b.emit({ op: "bin", fn: "xor", type: "u32", dst: sum, a: sum, b: r });
          }
          b.emit({ op: "stg", width: "b32", src: [sum], addr: gout, offset: 4 * slot++ });
        }
      }
      b.emit({ op: "bar" });
    }, () => {
      b.emit({ op: "comment", text: "later tiles: nothing" });
    });
  });

  // Every width and vector length through shared and global memory, guarded
  // both ways, inside a non-uniform conditional nested in a loop. Each thread
  // reads and writes its own 1 KiB of `src` and `out` and its own 16 bytes of
  // shared memory.
  const region = b.reg("u64");
  b.emit({ op: "mulwide", dst: region, a: tid, b: imm(1024) });
  const gin = b.reg("u64");
  b.emit({ op: "bin", fn: "add", type: "u64", dst: gin, a: src, b: region });
  const gmine = b.reg("u64");
  b.emit({ op: "bin", fn: "add", type: "u64", dst: gmine, a: out, b: region });
  b.emit({ op: "bin", fn: "add", type: "u64", dst: gmine, a: gmine, b: imm(4096) });
  const rep = b.reg("u32", "rep");
  b.for(rep, imm(0), imm(2), 1, () => {
    const acc = b.reg("u32");
    b.emit({ op: "mov", dst: acc, src: rep });
    const q = b.reg("u32");
    b.for(q, imm(0), imm(3), 1, () => {
      b.emit({ op: "mad", type: "u32", dst: acc, a: acc, b: imm(3), c: q });
    });
    b.emit({ op: "stg", width: "b32", src: [acc], addr: gmine, offset: 768 });
    const odd = b.reg("pred");
    const lane = b.reg("u32");
    b.emit({ op: "bin", fn: "and", type: "u32", dst: lane, a: tid, b: imm(1) });
    b.emit({ op: "setp", cmp: "ne", type: "u32", dst: odd, a: lane, b: imm(0) });
    b.if(odd, false, () => {
      let off = 0;
      for (const width of ["b8", "b16", "b32", "b64"] as const) {
        for (const n of MEM_PTX[width].vec) {
          const g = { pred: inb, negate: n === 2 };
          const rs = memRegs(b, width, n);
          for (const r of rs) b.emit({ op: "mov", dst: r, src: imm(0) });
          b.emit({ op: "ldg", width, dst: rs, addr: gin, offset: off, guard: g });
          b.emit({ op: "sts", width, src: rs, addr: soff, offset: 0 });
          const back = memRegs(b, width, n);
          b.emit({ op: "lds", width, dst: back, addr: soff, offset: 0, guard: g });
          b.emit({ op: "stg", width, src: back, addr: gmine, offset: off, guard: g });
          off += 64;
        }
      }
      // Immediate store operands.
      b.emit({ op: "sts", width: "b32", src: [imm(SAMPLE.b32), tid], addr: soff, offset: 0 });
      b.emit({ op: "stg", width: "b16", src: [imm(SAMPLE.b16)], addr: gmine, offset: off });
    });
  });

  // An atomic add (register and immediate operands, one guarded) on a word of
  // the thread's own region, a fence, and an L2-only load of the result.
  b.emit({ op: "stg", width: "b32", src: [tid], addr: gmine, offset: 960 });
  b.emit({ op: "fence" });
  const old = b.reg("u32");
  b.emit({
    op: "atom",
    dst: old,
    addr: gmine,
    offset: 960,
    b: tid,
    guard: { pred: inb, negate: false },
  });
  const old2 = b.reg("u32");
  b.emit({ op: "atom", dst: old2, addr: gmine, offset: 960, b: imm(7) });
  b.emit({ op: "fence" });
  const cg = b.reg("u32");
  b.emit({ op: "ldg", width: "b32", dst: [cg], addr: gmine, offset: 960, cache: "cg" });
  b.emit({ op: "stg", width: "b32", src: [old, old2], addr: gmine, offset: 968 });
  b.emit({ op: "stg", width: "b32", src: [cg], addr: gmine, offset: 976 });

  // A loop that never runs and a loop inside a uniform conditional.
  const never = b.reg("u32");
  b.for(never, imm(4), imm(4), 1, () => {
    b.emit({ op: "stg", width: "b32", src: [never], addr: gout, offset: 24 });
  });
  const big = b.reg("pred");
  b.emit({ op: "setp", cmp: "gt", type: "u32", dst: big, a: k, b: imm(8) });
  b.if(
    big,
    true,
    () => {
      const j = b.reg("u32");
      b.for(j, tid, k, 128, () => {
        b.emit({ op: "stg", width: "b32", src: [j], addr: gout, offset: 28 });
      });
    },
    undefined,
    true,
  );
  return kernel("ops_memory", target, params, 128, 16384, b);
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
  const out = b.reg("u64", "out");
  b.emit({ op: "param", dst: out, name: "out" });
  const lane = b.reg("u32", "lane");
  b.emit({ op: "sreg", dst: lane, sreg: "laneid" });
  const smem = b.reg("u32", "smem");
  b.emit({ op: "smembase", dst: smem });
  b.emit({ op: "comment", text: `${row.name}: ${row.ptx}` });
  const accType: RegType = row.cType === "f64"
    ? "f64"
    : row.cType === "f32"
    ? "f32"
    : row.cType === "s32"
    ? "s32"
    : "b32";
  const opType: RegType = row.regBits === 64 ? "f64" : "b32";
  const width: MemWidth = row.regBits === 64 ? "b64" : "b32";
  const bytes = row.regBits / 8;
  const maxVec = Math.max(...MEM_PTX[width].vec);
  let base = 0;
  const load = (regs: number, type: RegType): Reg[] => {
    const rs = Array.from({ length: regs }, () => b.reg(type));
    const stride = regs * bytes;
    const a = b.reg("u32");
    b.emit({ op: "mad", type: "u32", dst: a, a: lane, b: imm(stride), c: smem });
    let off = base;
    for (const part of chunks(rs, maxVec)) {
      b.emit({ op: "lds", width, dst: part, addr: a, offset: off });
      off += part.length * bytes;
    }
    base += 32 * stride;
    return rs;
  };
  const a = load(row.a.regs, opType);
  const bf = load(row.b.regs, opType);
  const c = load(row.c.regs, accType);
  const d = accType === "f32" ? c : Array.from({ length: row.c.regs }, () => b.reg(accType));
  b.emit({ op: "mma", shape: row.name, d, a, b: bf, c });
  const off = b.reg("u64");
  b.emit({ op: "mulwide", dst: off, a: lane, b: imm(row.c.regs * bytes) });
  const at = b.reg("u64");
  b.emit({ op: "bin", fn: "add", type: "u64", dst: at, a: out, b: off });
  let o = 0;
  for (const part of chunks(d, maxVec)) {
    b.emit({ op: "stg", width, src: part, addr: at, offset: o });
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
  const x = b.reg("u64", "x");
  const y = b.reg("u64", "y");
  const n = b.reg("u32", "N");
  const a = b.reg("f32", "a");
  b.emit({ op: "param", dst: x, name: "x" });
  b.emit({ op: "param", dst: y, name: "y" });
  b.emit({ op: "param", dst: n, name: "N" });
  b.emit({ op: "param", dst: a, name: "a" });
  const tid = b.reg("u32", "tid");
  b.emit({ op: "sreg", dst: tid, sreg: "tid.x" });
  const cta = b.reg("u32", "cta");
  b.emit({ op: "sreg", dst: cta, sreg: "ctaid.x" });
  const first = b.reg("u32", "first");
  b.emit({ op: "mad", type: "u32", dst: first, a: cta, b: imm(512), c: tid });
  const j = b.reg("u32", "j");
  b.for(j, imm(0), imm(4), 1, () => {
    b.emit({ op: "comment", text: "i = first + 128 j" });
    const i = b.reg("u32", "i");
    b.emit({ op: "mad", type: "u32", dst: i, a: j, b: imm(128), c: first });
    const ok = b.reg("pred", "ok");
    b.emit({ op: "setp", cmp: "lt", type: "u32", dst: ok, a: i, b: n });
    const off = b.reg("u64");
    b.emit({ op: "mulwide", dst: off, a: i, b: imm(4) });
    const px = b.reg("u64");
    b.emit({ op: "bin", fn: "add", type: "u64", dst: px, a: x, b: off });
    const py = b.reg("u64");
    b.emit({ op: "bin", fn: "add", type: "u64", dst: py, a: y, b: off });
    const xv = b.reg("f32", "xv");
    const yv = b.reg("f32", "yv");
    b.emit({ op: "mov", dst: xv, src: imm(0) });
    b.emit({ op: "mov", dst: yv, src: imm(0) });
    const g = { pred: ok, negate: false };
    b.emit({ op: "ldg", width: "b32", dst: [xv], addr: px, offset: 0, guard: g });
    b.emit({ op: "ldg", width: "b32", dst: [yv], addr: py, offset: 0, guard: g });
    const r = b.reg("f32", "r");
    b.emit({ op: "mad", type: "f32", dst: r, a, b: xv, c: yv });
    b.emit({ op: "stg", width: "b32", src: [r], addr: py, offset: 0, guard: g });
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
  const out = b.reg("u64", "out");
  b.emit({ op: "param", dst: out, name: "out" });
  const sink = new Sink(b, out);
  const smem = b.reg("b32", "smem");
  b.emit({ op: "smembase", dst: smem });
  const lane = b.reg("s32", "lane");
  b.emit({ op: "sreg", dst: lane, sreg: "laneid" });
  const g = b.reg("u64");
  b.emit({ op: "mulwide", dst: g, a: lane, b: smem });
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
      b.emit({ op: "lds", width, dst: [r], addr: smem, offset: off });
      b.emit({ op: "stg", width, src: [r], addr: out, offset: off });
      off += 8;
    }
  }
  const i32 = { u32: b.reg("u32"), s32: b.reg("s32"), b32: b.reg("b32") };
  const f32 = { f32: b.reg("f32"), b32: b.reg("b32") };
  for (const r of [...Object.values(i32), ...Object.values(f32)]) {
    b.emit({ op: "lds", width: "b32", dst: [r], addr: smem, offset: 0 });
  }
  for (const t of ["u32", "s32"] as const) {
    const d = b.reg(t === "u32" ? "b32" : "u32");
    b.emit({ op: "bin", fn: "add", type: t, dst: d, a: i32.s32, b: i32.b32 });
    b.emit({ op: "mad", type: t, dst: d, a: i32.b32, b: i32.u32, c: d });
    b.emit({ op: "bin", fn: "shl", type: t, dst: d, a: d, b: i32.s32 });
    sink.keep(d);
  }
  const fb = b.reg("b32");
  b.emit({ op: "bin", fn: "add", type: "f32", dst: fb, a: f32.b32, b: f32.f32 });
  b.emit({ op: "mad", type: "f32", dst: fb, a: fb, b: f32.b32, c: imm(1) });
  b.emit({ op: "un", fn: "neg", type: "f32", dst: fb, src: fb });
  sink.keep(fb);
  const xf = b.reg("f32");
  b.emit({ op: "bin", fn: "and", type: "b32", dst: xf, a: f32.f32, b: i32.s32 });
  sink.keep(xf);
  const pc = b.reg("s32");
  b.emit({ op: "un", fn: "popc", type: "b32", dst: pc, src: i32.u32 });
  sink.keep(pc);
  const p = b.reg("pred");
  b.emit({ op: "setp", cmp: "lt", type: "f32", dst: p, a: f32.b32, b: imm(2) });
  b.emit({ op: "setp", cmp: "ge", type: "s32", dst: p, a: i32.u32, b: i32.b32 });
  const sel = b.reg("b32");
  b.emit({ op: "selp", type: "f32", dst: sel, a: f32.b32, b: f32.f32, p });
  sink.keep(sel);
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
    b.emit({ op: "cvt", kind, dst: d, src });
    sink.keep(d);
  }
  const h = b.reg("b16");
  b.emit({ op: "cvt", kind: "f16.f32", dst: h, src: f32.f32 });
  const wide = b.reg("b32");
  b.emit({ op: "cvt", kind: "f32.f16", dst: wide, src: h });
  sink.keep(wide);
  const pf = b.reg("f32");
  b.emit({ op: "pack", dst: pf, lo: h, hi: h });
  sink.keep(pf);
  const lo = b.reg("b16");
  const hi = b.reg("b16");
  b.emit({ op: "unpack", lo, hi, src: i32.u32 });
  sink.keep(lo);
  sink.keep(hi);
  const lm = [b.reg("u32"), b.reg("s32"), b.reg("b32"), b.reg("u32")];
  b.emit({ op: "ldmatrix", num: 4, trans: false, dst: lm, addr: smem, offset: 0 });
  lm.forEach((r) => sink.keep(r));
  // Vectors: b32 registers go with float and integer ones; immediates beside floats.
  const vf = [b.reg("f32"), b.reg("b32")];
  b.emit({ op: "lds", width: "b32", dst: vf, addr: smem, offset: 0 });
  b.emit({ op: "sts", width: "b32", src: [vf[0]!, imm(0x3f800000)], addr: smem, offset: 0 });
  b.emit({
    op: "sts",
    width: "b32",
    src: [imm(-1), vf[1]!, vf[0]!, imm(7)],
    addr: smem,
    offset: 0,
  });
  const vd = b.reg("f64");
  b.emit({ op: "lds", width: "b64", dst: [vd], addr: smem, offset: 0 });
  b.emit({ op: "stg", width: "b64", src: [imm(-2), vd], addr: out, offset: 0 });
  const vi = [b.reg("u32"), b.reg("b32"), b.reg("s32"), b.reg("u32")];
  b.emit({ op: "lds", width: "b32", dst: vi, addr: smem, offset: 0 });
  b.emit({ op: "stg", width: "b32", src: [...vi.slice(0, 3), imm(-5)], addr: out, offset: 0 });
  // Accumulators in b32 (f32 rows) and u32/b32 (s32 rows).
  const frag = (n: number, t: RegType) => Array.from({ length: n }, () => b.reg(t));
  const a = frag(4, "b32");
  const bb = frag(2, "b32");
  b.emit({ op: "lds", width: "b32", dst: a, addr: smem, offset: 0 });
  b.emit({ op: "lds", width: "b32", dst: bb, addr: smem, offset: 16 });
  const cf = frag(4, "b32");
  b.emit({ op: "lds", width: "b32", dst: cf, addr: smem, offset: 32 });
  b.emit({ op: "mma", shape: "m16n8k16.f16.f32", d: cf, a, b: bb, c: cf });
  const ci = [b.reg("u32"), b.reg("b32"), b.reg("s32"), b.reg("u32")];
  b.emit({ op: "lds", width: "b32", dst: ci, addr: smem, offset: 48 });
  b.emit({ op: "mma", shape: "m16n8k32.s8.s32", d: ci, a, b: bb, c: ci });
  [...cf, ...ci].forEach((r) => sink.keep(r));
  return kernel("ops_register_classes", target, [OUT], 32, 64, b);
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
