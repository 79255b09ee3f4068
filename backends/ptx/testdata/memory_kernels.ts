/**
 * The memory, control-flow and tensor-core test kernels: every memory
 * operation, width and vector length with loops and conditionals
 * ({@link memoryOpsKernel}), one kernel per MMA table row ({@link mmaKernel}),
 * and a plain `saxpy` ({@link saxpyKernel}).
 *
 * @module
 */

import * as ir from "../../../ir/builder.ts";
import { imm, KernelBuilder } from "../../../ir/builder.ts";
import type { Kernel, KernelParam, MemWidth, Reg, RegType } from "../../../ir/kernel.ts";
import type { Target } from "../../../ir/gemm.ts";
import type { MmaShape } from "../../../ir/mma_table.ts";
import { MEM_PTX } from "../print.ts";
import { kernel, memRegs, OUT, SAMPLE } from "./_fixture.ts";

/**
 * Memory and control: `cp.async` (`.ca` 4/8/16, `.cg` 16, source sizes as
 * registers and immediates, guarded, with and without a cache policy and a
 * prefetch size), `createpolicy` of every priority, an `ld.global` under a
 * cache policy, `commit`, `wait`, `bar`, `ldmatrix`
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
  const [gsrc, gout] = elementAddresses(b, tid, 32, [src, out]) as [Reg, Reg];
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
  const [evictFirst, evictLast, evictNormal] =
    (["evict_first", "evict_last", "evict_normal"] as const).map(
      (priority) => {
        const p = b.reg("u64", priority);
        b.emit(ir.createPolicy(p, priority));
        return p;
      },
    ) as [Reg, Reg, Reg];
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
    // Under a cache policy: `.L2::cache_hint` with and without the prefetch size.
    b.emit(ir.cpAsync({
      cache: "cg",
      prefetch: 128,
      bytes: 16,
      dst: soff,
      dstOffset: 14336,
      src: gsrc,
      srcBytes: nbytes,
      policy: evictFirst,
    }, ir.when(inb)));
    b.emit(ir.cpAsync({
      cache: "ca",
      bytes: 4,
      dst: soff,
      dstOffset: 14336,
      src: gsrc,
      srcBytes: imm(4),
      policy: evictLast,
    }, ir.when(inb, true)));
    const hinted = b.reg("b32");
    b.emit(ir.mov(hinted, imm(0)));
    b.emit(ir.ldg("b32", [hinted], gsrc, 4, ir.when(inb), undefined, evictNormal));
    b.emit(ir.stg("b32", [hinted], gout, 28));
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
    const [px, py] = elementAddresses(b, i, 4, [x, y]) as [Reg, Reg];
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

/** The addresses `base + index * scale` (index u32, scale in bytes) in each of `bases`. */
function elementAddresses(
  b: KernelBuilder,
  index: Reg,
  scale: number,
  bases: readonly Reg[],
): Reg[] {
  const off = b.reg("u64");
  b.emit(ir.mulWide(off, index, imm(scale)));
  return bases.map((base) => {
    const p = b.reg("u64");
    b.emit(ir.bin("add", "u64", p, base, off));
    return p;
  });
}
