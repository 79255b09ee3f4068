/**
 * A small builder for kernel-IR programs: allocates typed registers and
 * collects operations into nested bodies; and a lowercase factory for each
 * kind of operation (ir/kernel.ts), so that code that builds programs writes
 * `b.emit(bin("add", "u32", dst, a, b))` rather than the object literal.
 * A factory's parameters are the operation's fields in declaration order;
 * an optional guard is left out of the object when absent.
 *
 * @module
 */

import type {
  AtomOp,
  BarOp,
  BinFn,
  BinOp,
  CommentOp,
  CommitOp,
  CpAsyncOp,
  CreatePolicyOp,
  CvtKind,
  CvtOp,
  FenceOp,
  ForOp,
  Guard,
  IfOp,
  Imm,
  LdgOp,
  LdmatrixOp,
  LdsOp,
  MadOp,
  MemWidth,
  MmaOp,
  MovOp,
  MulWideOp,
  Op,
  Operand,
  PackOp,
  ParamOp,
  PrefetchOp,
  Reg,
  RegType,
  SelpOp,
  SetpOp,
  SmemBaseOp,
  SpecialReg,
  SregOp,
  StgOp,
  StsOp,
  UnOp,
  UnpackOp,
  WaitOp,
} from "./kernel.ts";
import type { CachePolicy } from "./cache_policy.ts";

// sm90's factories (warpgroup MMA, mbarriers, TMA, setmaxnreg, griddepcontrol), in a file of their
// own beside ir/kernel_sm90.ts's operations, are this module's too.
export * from "./builder_sm90.ts";

/**
 * An immediate operand.
 *
 * @param value The value.
 * @returns The operand.
 */
export function imm(value: number): Imm {
  return { kind: "imm", value };
}

/** `g`, as the trailing field of an operation, where there is one. */
function guarded<T extends object>(o: T, g: Guard | undefined): T & { readonly guard?: Guard } {
  return g === undefined ? o : { ...o, guard: g };
}

/**
 * A guard on predicate `pred` (`@p`, or `@!p` when negated); none for `null`.
 *
 * @param pred The predicate register, or null for no guard.
 * @param negate Whether the operation runs where `pred` is false.
 * @returns The guard, or undefined.
 */
export function when(pred: Reg | null, negate = false): Guard | undefined {
  return pred === null ? undefined : { pred, negate };
}

/**
 * `dst = ` the kernel parameter `name`.
 *
 * @param dst The destination.
 * @param name The parameter's name.
 * @returns The operation.
 */
export function param(dst: Reg, name: string): ParamOp {
  return { op: "param", dst, name };
}

/**
 * `dst = ` a special register (`%tid.x`, `%ctaid.y`, ...).
 *
 * @param dst The destination.
 * @param sreg The special register.
 * @returns The operation.
 */
export function sreg(dst: Reg, sreg: SpecialReg): SregOp {
  return { op: "sreg", dst, sreg };
}

/**
 * `dst = src`.
 *
 * @param dst The destination.
 * @param src The source.
 * @returns The operation.
 */
export function mov(dst: Reg, src: Operand): MovOp {
  return { op: "mov", dst, src };
}

/**
 * `dst = ` the shared-space address of the dynamic shared memory.
 *
 * @param dst The destination (u32).
 * @returns The operation.
 */
export function smemBase(dst: Reg): SmemBaseOp {
  return { op: "smembase", dst };
}

/**
 * `dst = a fn b` in `type`.
 *
 * @param fn The function.
 * @param type The operation's type.
 * @param dst The destination.
 * @param a The first operand.
 * @param b The second operand.
 * @returns The operation.
 */
export function bin(fn: BinFn, type: BinOp["type"], dst: Reg, a: Operand, b: Operand): BinOp {
  return { op: "bin", fn, type, dst, a, b };
}

/**
 * `dst = a * b + c` in `type`.
 *
 * @param type The operation's type.
 * @param dst The destination.
 * @param a The first factor.
 * @param b The second factor.
 * @param c The addend.
 * @returns The operation.
 */
export function mad(type: MadOp["type"], dst: Reg, a: Operand, b: Operand, c: Operand): MadOp {
  return { op: "mad", type, dst, a, b, c };
}

/**
 * `dst = a * b`, u32 factors to a u64 product.
 *
 * @param dst The destination (u64).
 * @param a The first factor.
 * @param b The second factor.
 * @returns The operation.
 */
export function mulWide(dst: Reg, a: Operand, b: Operand): MulWideOp {
  return { op: "mulwide", dst, a, b };
}

/**
 * `dst = fn(src)` in `type`.
 *
 * @param fn The function.
 * @param type The operation's type.
 * @param dst The destination.
 * @param src The operand.
 * @returns The operation.
 */
export function un(fn: UnOp["fn"], type: UnOp["type"], dst: Reg, src: Operand): UnOp {
  return { op: "un", fn, type, dst, src };
}

/**
 * `dst = a cmp b` in `type` (a predicate).
 *
 * @param cmp The comparison.
 * @param type The operands' type.
 * @param dst The destination predicate.
 * @param a The first operand.
 * @param b The second operand.
 * @returns The operation.
 */
export function setp(
  cmp: SetpOp["cmp"],
  type: SetpOp["type"],
  dst: Reg,
  a: Operand,
  b: Operand,
): SetpOp {
  return { op: "setp", cmp, type, dst, a, b };
}

/**
 * `dst = p ? a : b`.
 *
 * @param type The operands' type.
 * @param dst The destination.
 * @param a The value where `p` holds.
 * @param b The value elsewhere.
 * @param p The predicate.
 * @returns The operation.
 */
export function selp(type: SelpOp["type"], dst: Reg, a: Operand, b: Operand, p: Reg): SelpOp {
  return { op: "selp", type, dst, a, b, p };
}

/**
 * `dst = cvt(src)`, the conversion `kind` (`to.from`).
 *
 * @param kind The conversion.
 * @param dst The destination.
 * @param src The source.
 * @returns The operation.
 */
export function cvt(kind: CvtKind, dst: Reg, src: Operand): CvtOp {
  return { op: "cvt", kind, dst, src };
}

/**
 * `dst = {lo, hi}`: two 16-bit registers in one 32-bit register.
 *
 * @param dst The destination (b32).
 * @param lo The low half.
 * @param hi The high half.
 * @returns The operation.
 */
export function pack(dst: Reg, lo: Reg, hi: Reg): PackOp {
  return { op: "pack", dst, lo, hi };
}

/**
 * `{lo, hi} = src`: a 32-bit register's two halves.
 *
 * @param lo The low half's destination (b16).
 * @param hi The high half's destination (b16).
 * @param src The source (b32).
 * @returns The operation.
 */
export function unpack(lo: Reg, hi: Reg, src: Reg): UnpackOp {
  return { op: "unpack", lo, hi, src };
}

/**
 * A `cp.async` of `bytes` bytes, zero-filled past `srcBytes`.
 *
 * @param f The copy's fields (as in {@link CpAsyncOp}, without `op` and `guard`).
 * @param guard A guard, if any.
 * @returns The operation.
 */
export function cpAsync(f: Omit<CpAsyncOp, "op" | "guard">, guard?: Guard): CpAsyncOp {
  return guarded({ op: "cpasync", ...f }, guard);
}

/**
 * `createpolicy.fractional.L2::<priority>.b64 dst, 1.0`: an L2 cache-eviction policy.
 *
 * @param dst The destination (u64).
 * @param priority The eviction priority of the lines accessed under it.
 * @returns The operation.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { createPolicy, KernelBuilder } from "./builder.ts";
 * const p = new KernelBuilder().reg("u64", "policy");
 * deepEqual(createPolicy(p, "evict_first"), { op: "createpolicy", dst: p, priority: "evict_first" });
 * ```
 */
export function createPolicy(dst: Reg, priority: CachePolicy): CreatePolicyOp {
  return { op: "createpolicy", dst, priority };
}

/**
 * `prefetch.global.L2` of the line at `addr`.
 *
 * @param addr The address (u64).
 * @param guard A guard, if any.
 * @param evictLast Whether to add the `::evict_last` priority hint.
 * @returns The operation.
 */
export function prefetch(addr: Reg, guard?: Guard, evictLast = false): PrefetchOp {
  return guarded(evictLast ? { op: "prefetch", addr, evictLast } : { op: "prefetch", addr }, guard);
}

/**
 * `cp.async.commit_group`.
 *
 * @returns The operation.
 */
export function commit(): CommitOp {
  return { op: "commit" };
}

/**
 * `cp.async.wait_group n`.
 *
 * @param n The commit groups that may stay pending.
 * @returns The operation.
 */
export function wait(n: number): WaitOp {
  return { op: "wait", n };
}

/**
 * `bar.sync 0`.
 *
 * @returns The operation.
 */
export function bar(): BarOp {
  return { op: "bar" };
}

/**
 * `bar.sync id, threads`: a named barrier for the threads that reach it (ir/kernel.ts, BarOp).
 *
 * @param id The barrier (1 .. 15).
 * @param threads The threads it waits for (a multiple of 32).
 * @returns The operation.
 */
export function namedBar(id: number, threads: number): BarOp {
  return { op: "bar", named: { id, threads } };
}

/**
 * `barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned`: every thread
 * of a cluster kernel's CTAs (ir/kernel.ts, BarOp).
 *
 * @returns The operation.
 */
export function clusterBar(): BarOp {
  return { op: "bar", cluster: true };
}

/**
 * `fence.acq_rel.gpu`.
 *
 * @returns The operation.
 */
export function fence(): FenceOp {
  return { op: "fence" };
}

/**
 * `ldmatrix.sync.aligned.x{num}[.trans]` into `dst` from `addr + offset`.
 *
 * @param num Matrices loaded.
 * @param trans Whether transposed.
 * @param dst The destinations (one b32 a matrix).
 * @param addr The shared-space address (u32).
 * @param offset A byte offset.
 * @returns The operation.
 */
export function ldmatrix(
  num: LdmatrixOp["num"],
  trans: boolean,
  dst: readonly Reg[],
  addr: Reg,
  offset: number,
): LdmatrixOp {
  return { op: "ldmatrix", num, trans, dst, addr, offset };
}

/**
 * `ld.shared` of `dst.length` values of `width` (a vector when more than one).
 *
 * @param width Each value's width.
 * @param dst The destinations.
 * @param addr The shared-space address (u32).
 * @param offset A byte offset.
 * @param guard A guard, if any.
 * @returns The operation.
 */
export function lds(
  width: MemWidth,
  dst: readonly Reg[],
  addr: Reg,
  offset: number,
  guard?: Guard,
): LdsOp {
  return guarded({ op: "lds", width, dst, addr, offset }, guard);
}

/**
 * `st.shared` of `src.length` values of `width`.
 *
 * @param width Each value's width.
 * @param src The values.
 * @param addr The shared-space address (u32).
 * @param offset A byte offset.
 * @param guard A guard, if any.
 * @returns The operation.
 */
export function sts(
  width: MemWidth,
  src: readonly Operand[],
  addr: Reg,
  offset: number,
  guard?: Guard,
): StsOp {
  return guarded({ op: "sts", width, src, addr, offset }, guard);
}

/**
 * `ld.global` of `dst.length` values of `width`.
 *
 * @param width Each value's width.
 * @param dst The destinations.
 * @param addr The address (u64).
 * @param offset A byte offset.
 * @param guard A guard, if any.
 * @param cache `"cg"`: through L2 only (`ld.global.cg`).
 * @param policy A cache-eviction policy register (u64, {@link createPolicy}), if any.
 * @returns The operation.
 */
export function ldg(
  width: MemWidth,
  dst: readonly Reg[],
  addr: Reg,
  offset: number,
  guard?: Guard,
  cache?: "cg",
  policy?: Reg,
): LdgOp {
  const o: LdgOp = {
    op: "ldg",
    width,
    dst,
    addr,
    offset,
    ...(cache === undefined ? {} : { cache }),
    ...(policy === undefined ? {} : { policy }),
  };
  return guarded(o, guard);
}

/**
 * `st.global` of `src.length` values of `width`.
 *
 * @param width Each value's width.
 * @param src The values.
 * @param addr The address (u64).
 * @param offset A byte offset.
 * @param guard A guard, if any.
 * @returns The operation.
 */
export function stg(
  width: MemWidth,
  src: readonly Operand[],
  addr: Reg,
  offset: number,
  guard?: Guard,
): StgOp {
  return guarded({ op: "stg", width, src, addr, offset }, guard);
}

/**
 * `dst = atom.global.add.u32 [addr + offset], b`.
 *
 * @param dst The old value's destination.
 * @param addr The address (u64).
 * @param offset A byte offset.
 * @param b The addend.
 * @param guard A guard, if any.
 * @returns The operation.
 */
export function atom(dst: Reg, addr: Reg, offset: number, b: Operand, guard?: Guard): AtomOp {
  return guarded({ op: "atom", dst, addr, offset, b }, guard);
}

/** The sparse operands of {@link mma} for a sparse row (ir/mma_sparse.ts). */
export interface MmaSparseOperands {
  /** The lane's metadata register (b32). */
  readonly meta: Reg;
  /** The sparsity selector. */
  readonly selector: number;
  /** Print `mma.sp::ordered_metadata` (default false). */
  readonly ordered?: boolean;
}

/**
 * `d = a * b + c`, one warp-wide MMA of the shape named `shape` (ir/mma_table.ts,
 * or a sparse row "sp.*" of ir/mma_sparse.ts, which takes `sparse`).
 *
 * @param shape The MMA table row's name.
 * @param d The result fragment.
 * @param a The A fragment (compressed, for a sparse row).
 * @param b The B fragment.
 * @param c The accumulator fragment.
 * @param sparse For a sparse row: the metadata register, the selector, ordered_metadata.
 * @returns The operation.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { mma } from "./builder.ts";
 * const r = (id: number) => ({ kind: "reg" as const, id, type: "b32" as const });
 * const f = (id: number) => ({ kind: "reg" as const, id, type: "f32" as const });
 * const acc = [f(1), f(2), f(3), f(4)];
 * const op = mma("sp.m16n8k16.f16.f32", acc, [r(5), r(6)], [r(7), r(8)], acc, {
 *   meta: r(9),
 *   selector: 2,
 * });
 * equal(op.selector, 2);
 * deepEqual(Object.keys(mma("m16n8k16.f16.f32", acc, [], [], acc)), ["op", "shape", "d", "a", "b", "c"]);
 * ```
 */
export function mma(
  shape: string,
  d: readonly Reg[],
  a: readonly Reg[],
  b: readonly Reg[],
  c: readonly Reg[],
  sparse?: MmaSparseOperands,
): MmaOp {
  if (sparse === undefined) return { op: "mma", shape, d, a, b, c };
  const { meta, selector } = sparse;
  return sparse.ordered === true
    ? { op: "mma", shape, d, a, b, c, meta, selector, ordered: true }
    : { op: "mma", shape, d, a, b, c, meta, selector };
}

/**
 * A comment in the printed program.
 *
 * @param text The text.
 * @returns The operation.
 */
export function comment(text: string): CommentOp {
  return { op: "comment", text };
}

/** Builds the body of a kernel. */
export class KernelBuilder {
  readonly regs: Reg[] = [];
  #stack: Op[][] = [[]];

  /**
   * A new register.
   *
   * @param type Its type.
   * @param name A hint for readers of the IR.
   * @returns The register.
   */
  reg(type: RegType, name?: string): Reg {
    const r: Reg = name === undefined
      ? { kind: "reg", id: this.regs.length, type }
      : { kind: "reg", id: this.regs.length, type, name };
    this.regs.push(r);
    return r;
  }

  /**
   * A new register loaded from a kernel parameter: {@link reg} and {@link param} in one.
   *
   * @param type The register's type.
   * @param paramName The parameter's name.
   * @param name A hint for readers of the IR (the parameter's name by default).
   * @returns The register.
   */
  loadParam(type: RegType, paramName: string, name: string = paramName): Reg {
    const r = this.reg(type, name);
    this.emit(param(r, paramName));
    return r;
  }

  /**
   * A new u32 register holding a special register: {@link reg} and {@link sreg} in one.
   *
   * @param s The special register (`tid.x`, `ctaid.y`, ...).
   * @param name A hint for readers of the IR.
   * @returns The register.
   */
  readSreg(s: SpecialReg, name?: string): Reg {
    const r = this.reg("u32", name);
    this.emit(sreg(r, s));
    return r;
  }

  /**
   * Appends an operation to the current body.
   *
   * @param o The operation.
   */
  emit(o: Op): void {
    this.#stack[this.#stack.length - 1]!.push(o);
  }

  /**
   * Emits a loop whose body is built by `f`.
   *
   * @param iv The induction register (u32).
   * @param from Start.
   * @param to End (exclusive).
   * @param step Step.
   * @param f Builds the body.
   */
  for(iv: Reg, from: Operand, to: Operand, step: number, f: () => void): void {
    this.#stack.push([]);
    f();
    const body = this.#stack.pop()!;
    this.emit({ op: "for", iv, from, to, step, body } satisfies ForOp);
  }

  /**
   * Emits a conditional.
   *
   * @param cond The predicate.
   * @param uniform Whether the predicate is block-uniform; `"warpgroup"`: the same within
   *   each warpgroup only (IfOp's `warpgroupUniform`).
   * @param then Builds the then-branch.
   * @param otherwise Builds the else-branch.
   * @param negate Branch on `!cond`.
   */
  if(
    cond: Reg,
    uniform: boolean | "warpgroup",
    then: () => void,
    otherwise?: () => void,
    negate = false,
  ): void {
    this.#stack.push([]);
    then();
    const t = this.#stack.pop()!;
    this.#stack.push([]);
    otherwise?.();
    const e = this.#stack.pop()!;
    const o: IfOp = uniform === "warpgroup"
      ? { op: "if", cond, negate, uniform: false, warpgroupUniform: true, then: t, otherwise: e }
      : { op: "if", cond, negate, uniform, then: t, otherwise: e };
    this.emit(o);
  }

  /**
   * Takes back an operation emitted into the current body, when what it
   * computed turned out to be unused (the caller knows nothing reads it).
   *
   * @param o The operation, as emitted.
   * @returns Whether it was found (and removed).
   */
  retract(o: Op): boolean {
    const body = this.#stack[this.#stack.length - 1]!;
    const i = body.lastIndexOf(o);
    if (i < 0) return false;
    body.splice(i, 1);
    return true;
  }

  /** The finished top-level body. */
  get body(): readonly Op[] {
    if (this.#stack.length !== 1) throw new Error("KernelBuilder: unbalanced nesting");
    return this.#stack[0]!;
  }
}
