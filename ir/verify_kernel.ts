/**
 * The kernel-IR verifier: operand types, barriers only in uniform control
 * flow, balanced cp.async groups, immediate shared-memory offsets inside the
 * buffer, MMA operands that match the MMA table. A failure is a compiler bug
 * and throws an `Error` naming the operation.
 *
 * Shortcut: register-held shared-memory addresses are not range-checked
 * statically; the simulator checks every access at run time.
 *
 * @module
 */

import { type Kernel, type Op, type Operand, type Reg, type RegType, walkOps } from "./kernel.ts";
import { MMA_SHAPES, type MmaShape } from "./mma_table.ts";
import { printBody } from "./print_kernel.ts";
import { unreachable } from "./gemm.ts";

function show(o: Op): string {
  const out: string[] = [];
  if (o.op === "for" || o.op === "if") return o.op;
  printBody([o], "", out);
  return out[0] ?? o.op;
}

// The verifier checks every operand of every operation of kernels of thousands of
// operations, on every compile: the lists of allowed types below are built once
// rather than as literals per check.

const ONLY = new Map<string, readonly RegType[]>();
const SHIFT = new Map<string, readonly RegType[]>();

/** The list holding type `t` alone (one frozen array per type). */
function only(t: string): readonly RegType[] {
  let l = ONLY.get(t);
  if (l === undefined) {
    l = Object.freeze([t as RegType]);
    ONLY.set(t, l);
  }
  return l;
}

/** The types of a shift amount beside operands of type `t`: u32 or `t`. */
function shiftAmount(t: string): readonly RegType[] {
  let l = SHIFT.get(t);
  if (l === undefined) {
    l = Object.freeze(["u32", t as RegType]);
    SHIFT.set(t, l);
  }
  return l;
}

const BITS32: readonly RegType[] = Object.freeze(["b32", "u32", "s32", "f32"]);
const DATA_B64: readonly RegType[] = Object.freeze(["f64", "u64"]);
const DATA_B8: readonly RegType[] = Object.freeze(["u32", "s32", "b32"]);

const CVT_REGS = new Map<string, readonly [readonly RegType[], readonly RegType[]]>();

/** The destination and source register types of a conversion kind (`"f32.f16"`). */
function cvtRegs(kind: string): readonly [readonly RegType[], readonly RegType[]] {
  let r = CVT_REGS.get(kind);
  if (r === undefined) {
    const [d, s] = kind.split(".") as [string, string];
    const regOf = (t: string): RegType =>
      t === "f16" || t === "bf16"
        ? "b16"
        : t === "tf32"
        ? "b32"
        : t === "s8" || t === "u8"
        ? "u32"
        : t as RegType;
    r = [only(regOf(d)), only(regOf(s))];
    CVT_REGS.set(kind, r);
  }
  return r;
}

/** MMA shapes by name (the first of a name, as a search of the table finds it). */
const MMA_BY_NAME: ReadonlyMap<string, MmaShape> = (() => {
  const m = new Map<string, MmaShape>();
  for (const s of MMA_SHAPES) if (!m.has(s.name)) m.set(s.name, s);
  return m;
})();

/**
 * Verifies a kernel-IR program.
 *
 * @param k The kernel.
 * @throws Error naming the first broken invariant and the operation.
 */
export function verifyKernel(k: Kernel): void {
  const fail = (o: Op, msg: string): never => {
    throw new Error(`Kernel IR verifier: kernel "${k.name}": ${msg}: ${show(o)}`);
  };
  const ids = new Set<number>();
  for (const r of k.regs) {
    if (ids.has(r.id)) throw new Error(`Kernel IR verifier: duplicate register id ${r.id}`);
    ids.add(r.id);
  }
  const params = new Map(k.params.map((p) => [p.name, p]));
  const known = (o: Op, r: Reg) => {
    const decl = k.regs[r.id];
    if (decl === undefined || decl.type !== r.type) {
      fail(o, `register %${r.id} is not declared as ${r.type}`);
    }
  };
  const is = (o: Op, x: Operand, types: readonly RegType[], what: string) => {
    if (x.kind === "imm") return;
    known(o, x);
    if (!types.includes(x.type)) fail(o, `${what} has type ${x.type}, expected ${types.join("|")}`);
  };
  const widthBytes = { b8: 1, b16: 2, b32: 4, b64: 8 } as const;
  // The register of an MMA fragment element (ir/kernel.ts, MmaOp): f64, f32 and s32
  // accumulators in registers of their type, every packed or tf32 operand in a b32.
  // Not a closure over the operation: the visitor below then needs no context per operation.
  const fragCount = (o: Op, s: MmaShape, r: readonly Reg[], n: number, w: string) => {
    if (r.length !== n) fail(o, `${w} has ${r.length} registers, ${s.name} takes ${n}`);
  };
  const inSmem = (o: Op, offset: number, bytes: number) => {
    if (offset < 0 || offset + bytes > k.dynamicSmemBytes) {
      fail(o, "offset outside shared memory");
    }
  };
  // Barriers and warp-collective operations need every thread (of the block, of the warp).
  const uniform = (o: Op, path: readonly Op[], what: string) => {
    for (const p of path) {
      if (p.op === "if" && !p.uniform) fail(o, `${what} inside non-uniform control flow`);
    }
  };
  let commits = 0;
  let waited = true;
  walkOps(k.body, (o, path) => {
    const g = "guard" in o ? o.guard : undefined;
    if (g !== undefined) is(o, g.pred, only("pred"), "guard");
    switch (o.op) {
      case "param": {
        const p = params.get(o.name);
        if (p === undefined) fail(o, `no parameter "${o.name}"`);
        is(o, o.dst, only(p!.ptx), "destination");
        return;
      }
      case "sreg":
      case "smembase":
        return is(o, o.dst, only("u32"), "destination");
      case "mov":
        return is(o, o.src, only(o.dst.type), "source");
      case "bin": {
        const t: RegType = o.type;
        is(o, o.dst, only(t), "destination");
        const shift = o.fn === "shl" || o.fn === "shr";
        is(o, o.a, only(t), "a");
        is(o, o.b, shift ? shiftAmount(t) : only(t), "b");
        if (o.fn === "div" || o.fn === "rem") {
          if (o.b.kind === "imm" && o.b.value === 0) fail(o, "division by zero");
        }
        return;
      }
      case "mad":
        is(o, o.dst, only(o.type), "destination");
        is(o, o.a, only(o.type), "a");
        is(o, o.b, only(o.type), "b");
        return is(o, o.c, only(o.type), "c");
      case "mulwide":
        is(o, o.dst, only("u64"), "destination");
        is(o, o.a, only("u32"), "a");
        return is(o, o.b, only("u32"), "b");
      case "un":
        is(o, o.dst, o.fn === "popc" ? only("u32") : only(o.type), "destination");
        return is(o, o.src, only(o.type), "source");
      case "setp":
        is(o, o.dst, only("pred"), "destination");
        is(o, o.a, only(o.type), "a");
        return is(o, o.b, only(o.type), "b");
      case "selp":
        is(o, o.dst, only(o.type), "destination");
        is(o, o.a, only(o.type), "a");
        is(o, o.b, only(o.type), "b");
        return is(o, o.p, only("pred"), "predicate");
      case "cvt": {
        const [d, s] = cvtRegs(o.kind);
        is(o, o.dst, d, "destination");
        return is(o, o.src, s, "source");
      }
      case "pack":
        is(o, o.dst, only("b32"), "destination");
        is(o, o.lo, only("b16"), "lo");
        return is(o, o.hi, only("b16"), "hi");
      case "unpack":
        is(o, o.src, only("b32"), "source");
        is(o, o.lo, only("b16"), "lo");
        return is(o, o.hi, only("b16"), "hi");
      case "cpasync":
        if (o.cache === "cg" && o.bytes !== 16) fail(o, "cp.async.cg copies 16 bytes");
        inSmem(o, o.dstOffset, o.bytes);
        is(o, o.dst, only("u32"), "destination address");
        is(o, o.src, only("u64"), "source address");
        is(o, o.srcBytes, only("u32"), "source size");
        waited = false;
        return;
      case "prefetch":
        return is(o, o.addr, only("u64"), "address");
      case "commit":
        commits++;
        return;
      case "wait":
        if (o.n < 0) fail(o, "negative wait depth");
        if (o.n === 0) waited = true;
        return;
      case "bar":
        return uniform(o, path, "barrier");
      case "ldmatrix":
        if (o.dst.length !== o.num) fail(o, `ldmatrix.x${o.num} writes ${o.num} registers`);
        inSmem(o, o.offset, 16);
        for (const r of o.dst) is(o, r, only("b32"), "destination");
        return is(o, o.addr, only("u32"), "address");
      case "lds":
      case "ldg":
      case "sts":
      case "stg": {
        const regs = o.op === "lds" || o.op === "ldg" ? o.dst : o.src;
        const n = regs.length;
        if (n !== 1 && n !== 2 && n !== 4) fail(o, "vector of 1, 2 or 4");
        const want: readonly RegType[] = o.width === "b64"
          ? DATA_B64
          : o.width === "b16"
          ? only("b16")
          : o.width === "b8"
          ? DATA_B8
          : BITS32;
        for (const r of regs) is(o, r, want, "data");
        is(o, o.addr, o.op === "lds" || o.op === "sts" ? only("u32") : only("u64"), "address");
        if (o.op === "lds" || o.op === "sts") {
          inSmem(o, o.offset, widthBytes[o.width] * regs.length);
        }
        return;
      }
      case "mma": {
        const s = MMA_BY_NAME.get(o.shape);
        if (s === undefined) fail(o, `unknown MMA shape "${o.shape}"`);
        fragCount(o, s!, o.a, s!.a.regs, "a");
        fragCount(o, s!, o.b, s!.b.regs, "b");
        fragCount(o, s!, o.c, s!.c.regs, "c");
        fragCount(o, s!, o.d, s!.c.regs, "d");
        for (const r of o.a) is(o, r, only(s!.a.regType), "a");
        for (const r of o.b) is(o, r, only(s!.b.regType), "b");
        for (const r of o.c) is(o, r, only(s!.c.regType), "c");
        for (const r of o.d) is(o, r, only(s!.c.regType), "d");
        return uniform(o, path, "warp-collective mma");
      }
      case "for":
        is(o, o.iv, only("u32"), "induction variable");
        is(o, o.from, only("u32"), "start");
        return is(o, o.to, only("u32"), "end");
      case "if":
        return is(o, o.cond, only("pred"), "condition");
      case "atom":
        is(o, o.dst, only("u32"), "destination");
        is(o, o.addr, only("u64"), "address");
        return is(o, o.b, only("u32"), "operand");
      case "fence":
      case "comment":
        return;
      default:
        return unreachable(o);
    }
  });
  if (commits > 0 && !waited) {
    throw new Error(
      `Kernel IR verifier: kernel "${k.name}": cp.async groups are not drained by a final wait 0`,
    );
  }
}
