/**
 * The lowering's context: one value, created once per kernel by `lowerToKernel`, that
 * every phase receives (the kernel, its MMA shape, the builder, the parameter and index
 * registers); the small emitters every phase uses; tensor base addresses.
 *
 * @module
 */

import { imm, KernelBuilder } from "../../ir/builder.ts";
import { type Dtype, DTYPE_INFO } from "../../ir/dtype.ts";
import type { DimRef, GemmKernel, MatrixView, TensorParam } from "../../ir/gemm.ts";
import { CACHE_KEYS, operandView, sparseMetaParam } from "../../ir/gemm.ts";
import type { BinFn, Op, Operand, Reg, RegType } from "../../ir/kernel.ts";
import type { MmaShape } from "../../ir/mma_table.ts";
import { plannedShape } from "../mma.ts";
import { earlyDecisions, waitsForGrid } from "./early.ts";
import { carriesCacheHint } from "./cache_hints.ts";
import * as ir from "../../ir/builder.ts";

/** The base-2 logarithm of a power of two (an error for any other number). */
export function log2(x: number): number {
  const l = Math.round(Math.log2(x));
  if (2 ** l !== x) throw new Error(`Not a power of two: ${x}`);
  return l;
}

/** Per-thread index features that addresses are affine in. */
export type Feature =
  | "lane7"
  | "lane8"
  | "lane16"
  | "g"
  | "tig"
  | "wm"
  | "wn"
  | "warp"
  | "tidHi"
  | "tidLo"
  | "tid";

/**
 * The lowering's context: created once per kernel by `lowerToKernel` and
 * passed to every phase. Most fields are fixed at construction; those that
 * the phases fill in say who writes them.
 */
export class LowerContext {
  /** The kernel-IR builder every phase emits into. */
  readonly b: KernelBuilder;
  /** The planned GEMM IR kernel being lowered. */
  readonly k: GemmKernel;
  /** The MMA shape of the plan (a tensor-core row of the MMA table, or the SIMT micro-tile). */
  readonly shape: MmaShape;
  /** Threads per block. */
  readonly threads: number;
  /** Each kernel parameter's register, by name: written by `buildKernel` (kernel.ts), first. */
  readonly params: Map<string, Reg>;
  /** f32 registers that hold `cvt.f32(h)` of a 16-bit float h: written by `castTo`
   * and read by `convertOut` (epilogue_expr.ts), which then rounds h itself, not its
   * widening. It stays a side table keyed by register (not a returned value): the
   * expression's value reaches `convertOut` as a bare register through the epilogue
   * function table's builders and the direct and staged paths, which would all have
   * to carry it. */
  readonly narrowed: Map<Reg, { readonly to: Dtype; readonly h: Reg; readonly widen: Op }>;
  /** The register of each index feature: `buildKernel` writes the lane and warp
   * features, `copySetup` (copies.ts) `tidHi` and `tidLo` for the operand it sets up
   * (read by `emitAffine` (affine.ts) for that operand's recipes, so they stay here:
   * every recipe's features are looked up by name). */
  readonly features: Map<Feature, Reg>;

  /** Each operand's L2 cache-eviction policy register (schedule keys `cache_a`, `cache_b`):
   * written once a kernel by {@link emitCachePolicies}, read by the operand's copies (shared
   * with variants and roles). */
  readonly policies: Map<"A" | "B", Reg>;

  /** Programmatic dependent launch (ir/kernel_sm90.ts `GridDepOp`): whether the kernel has it,
   * and whether its `griddep.wait` and `griddep.launch` have been emitted (once a kernel each;
   * shared with variants). */
  readonly gridDep: { readonly on: boolean; waited: boolean; launched: boolean };

  /**
   * @param k The planned kernel.
   * @param parent A context whose builder, parameters and narrowed registers this one
   *   shares, and whose features it starts from (see {@link LowerContext.variant}).
   */
  constructor(k: GemmKernel, parent?: LowerContext, namedBarrier?: number) {
    this.k = k;
    this.gridDep = parent?.gridDep ??
      {
        on: waitsForGrid(k),
        waited: false,
        launched: false,
      };
    this.shape = plannedShape(k);
    this.threads = k.plan.warp!.threads;
    this.b = parent?.b ?? new KernelBuilder();
    this.params = parent?.params ?? new Map();
    this.narrowed = parent?.narrowed ?? new Map();
    this.policies = parent?.policies ?? new Map();
    this.features = new Map(parent?.features ?? []);
    this.namedBarrier = namedBarrier ?? parent?.namedBarrier ?? 1;
  }

  /**
   * Emits `griddep.wait` where the kernel has programmatic dependent launch and no wait is
   * emitted yet: each kernel builder calls it before the first global access of any thread
   * (the simulator reports one that comes first: `global-before-griddep-wait`).
   *
   * @param again Emit it even where one is emitted already (one a role: {@link gridWaitInRole}).
   */
  gridWait(again = false): void {
    if (!this.gridDep.on || (this.gridDep.waited && !again)) return;
    this.gridDep.waited = true;
    this.b.emit(ir.comment("programmatic dependent launch: the previous grid's memory from here"));
    this.b.emit(ir.gridDep("wait", this.earlyTensors()));
  }

  /**
   * Emits one `createpolicy` for each operand whose schedule asks for an L2 eviction priority
   * (`cache_a`, `cache_b`) and whose copies carry it (cache_hints.ts `carriesCacheHint`), once a
   * kernel, before any copy and outside every loop: the kernel's builders call it after the
   * parameters. Nothing for a schedule without them.
   */
  emitCachePolicies(): void {
    for (const role of ["A", "B"] as const) {
      const priority = this.k.schedule[CACHE_KEYS[role].field];
      if (priority === undefined || this.policies.has(role)) continue;
      if (!carriesCacheHint(this.k, role)) continue;
      const dst = this.b.reg("u64", `policy${role}`);
      this.b.emit(ir.createPolicy(dst, priority));
      this.policies.set(role, dst);
    }
  }

  /**
   * The L2 cache-eviction policy register of operand A's or B's copies, or undefined where the
   * schedule asks for none or its copies carry none.
   *
   * @param role The operand.
   * @returns Its policy register ({@link emitCachePolicies}).
   * @throws Error where the schedule asks for one that is not emitted (a lowering bug).
   */
  cachePolicy(role: "A" | "B"): Reg | undefined {
    const r = this.policies.get(role);
    if (r === undefined && carriesCacheHint(this.k, role)) {
      throw new Error(
        `lower-kernel: kernel "${this.k.name}": ${role}'s cache policy is not emitted`,
      );
    }
    return r;
  }

  /**
   * The operands whose tensors the kernel reads before its `griddep.wait`: those the compile
   * option `pdlEarly` names where {@link earlyDecisions} (early.ts) reads them early.
   */
  earlyOperands(): readonly ("A" | "B")[] {
    return earlyDecisions(this.k).filter((d) => d.early).map((d) => d.role);
  }

  /**
   * The tensor parameters the kernel reads before its `griddep.wait` ({@link earlyOperands}'
   * tensors; a sparse A's metadata travels with its kept values): the wait's `early` list, which
   * the simulator checks each read before the wait against and the manifest's `pdl.early` copies.
   */
  earlyTensors(): string[] {
    const roles = this.earlyOperands();
    const meta = roles.includes("A") ? sparseMetaParam(this.k) : null;
    return [
      ...new Set(roles.map((r) => this.operandTensor(r))),
      ...(meta === null ? [] : [meta.name]),
    ];
  }

  /** The tensor parameter of operand A or B. */
  operandTensor(role: "A" | "B"): string {
    return operandView(this.k, role).tensor;
  }

  /**
   * Emits one role's `griddep.wait` and `griddep.launch` in a warp-specialized kernel whose
   * operands are read early ({@link earlyOperands}): its producer issues their first boxes
   * before its wait, so each role waits on its own, before its own first global access.
   */
  gridWaitInRole(): void {
    this.gridWait(true);
    this.gridLaunch(true);
  }

  /**
   * A warp-specialized kernel's wait and trigger before its roles split: emitted here where no
   * operand is read early, else by each role ({@link gridWaitInRole}, wgmma_ws.ts).
   */
  gridWaitBeforeRoles(): void {
    if (this.earlyOperands().length > 0) return;
    this.gridWait();
    this.gridLaunch();
  }

  /**
   * Emits `griddep.launch` where the kernel has programmatic dependent launch and none is
   * emitted yet: the next grid may start once every block has run it. Not at the kernel's
   * start: measured on an H100 (bench/NOTES.md 71), a trigger there let the blocks of the next
   * grids (of kernels whose blocks fit three to an SM) settle beside the running grid's and
   * fetch their first k-tiles while it still streamed its own, and the decode rows took 1-2 µs
   * longer. The mma.sync and cp.async wgmma main loops trigger after their drain (the next
   * grid's prologue overlaps the epilogue and the last blocks); the TMA, persistent and grouped
   * kernels right after their wait (one grid ahead at most).
   *
   * @param again Emit it even where one is emitted already (one a role: {@link gridWaitInRole}).
   */
  gridLaunch(again = false): void {
    if (!this.gridDep.on || (this.gridDep.launched && !again)) return;
    this.gridDep.launched = true;
    this.b.emit(ir.gridDep("launch"));
  }

  /**
   * A context for the same kernel under another plan (a grouped kernel's short
   * tiles, `plan.short`): it emits into the same builder and sees the same
   * parameters; its features start as a copy of this one's (the caller sets the warp
   * features of the other layout).
   *
   * @param plan The other plan.
   * @returns The context.
   */
  variant(plan: GemmKernel["plan"]): LowerContext {
    return new LowerContext({ ...this.k, plan }, this);
  }

  /**
   * A context for one role of a warp-specialized kernel that syncs on a named barrier of its
   * own (a ping-pong kernel's consumer warpgroup, wgmma_ws.ts): the same kernel, builder and
   * parameters; its features start as a copy of this one's (the caller sets the role's thread
   * and warp indices), so this context's stay as they are.
   *
   * @param namedBarrier The role's named barrier ({@link barrier}).
   * @returns The context.
   */
  role(namedBarrier: number): LowerContext {
    return new LowerContext(this.k, this, namedBarrier);
  }

  bin(
    fn: BinFn,
    type: "u32" | "s32" | "u64" | "b32" | "pred" | "f32" | "f64",
    a: Operand,
    b: Operand,
    name?: string,
  ): Reg {
    const rt: RegType = type === "b32" ? "b32" : type;
    const dst = this.b.reg(rt, name);
    this.b.emit(ir.bin(fn, type, dst, a, b));
    return dst;
  }

  /**
   * The barrier of the threads that run the tile's MMAs and epilogue: the block's (`bar.sync
   * 0`), or in a warp-specialized kernel (`plan.pipeline.tma`) named barrier 1 of the
   * consumer warpgroups, whose code the producer warpgroup does not run ({@link namedBarrier}
   * in a ping-pong kernel's).
   *
   * @returns The operation.
   */
  barrier(): Op {
    return this.k.plan.pipeline?.tma === undefined
      ? ir.bar()
      : ir.namedBar(this.namedBarrier, this.threads);
  }

  /** The named barrier {@link barrier} uses in a warp-specialized kernel: 1, or in a ping-pong
   * kernel's consumer warpgroup w, 1 + w ({@link role}). */
  readonly namedBarrier: number;

  u32(v: number | Reg): Operand {
    return typeof v === "number" ? imm(v) : v;
  }

  setp(
    cmp: "lt" | "le" | "gt" | "ge" | "eq" | "ne",
    type: "u32" | "s32" | "u64" | "f32" | "f64",
    a: Operand,
    b: Operand,
  ): Reg {
    const dst = this.b.reg("pred");
    this.b.emit(ir.setp(cmp, type, dst, a, b));
    return dst;
  }

  and(p: Reg | null, q: Reg | null): Reg | null {
    if (p === null) return q;
    if (q === null) return p;
    return this.bin("and", "pred", p, q);
  }

  mov(type: RegType, v: Operand, name?: string): Reg {
    const dst = this.b.reg(type, name);
    this.b.emit(ir.mov(dst, v));
    return dst;
  }

  /** A dimension's value: an immediate for a constant, else its parameter. */
  dim(d: { kind: "sym"; name: string } | { kind: "const"; value: number }): Operand {
    return d.kind === "const" ? imm(d.value) : this.params.get(d.name)!;
  }

  /** `x / d` or `x % d` for a constant d: a shift or mask when d is a power of two. */
  divRem(fn: "div" | "rem", x: Reg, d: number, name?: string): Reg {
    if ((d & (d - 1)) === 0) {
      return fn === "div"
        ? this.bin("shr", "u32", x, imm(log2(d)), name)
        : this.bin("and", "u32", x, imm(d - 1), name);
    }
    return this.bin(fn, "u32", x, imm(d), name);
  }

  /** `x * c` for a constant c: a shift when c is a power of two. */
  mulImm(x: Reg, c: number, name?: string): Reg {
    return (c & (c - 1)) === 0
      ? this.bin("shl", "u32", x, imm(log2(c)), name)
      : this.bin("mul", "u32", x, imm(c), name);
  }

  /** A u32 operand's bits as an s32 register (two bit moves; free in PTX). */
  s32Of(o: Operand, name?: string): Reg {
    const dst = this.b.reg("s32", name);
    if (o.kind === "imm") {
      this.b.emit(ir.mov(dst, o));
      return dst;
    }
    const bits = this.b.reg("b32");
    this.b.emit(ir.cvt("b32.u32", bits, o));
    this.b.emit(ir.cvt("s32.b32", dst, bits));
    return dst;
  }

  mulU64(a: Operand, ldBytes: Operand): Operand {
    if (a.kind === "imm" && ldBytes.kind === "imm") return imm(a.value * ldBytes.value);
    const a64 = a.kind === "imm" ? a : b64(this, a);
    return this.bin("mul", "u64", a64, ldBytes);
  }
}

/** Zero-extends a u32 register to u64. */
export function b64(l: LowerContext, v: Operand): Operand & Reg {
  if (v.kind === "imm") throw new Error("b64 of an immediate");
  if (v.type === "u64") return v;
  const r = l.b.reg("u64");
  l.b.emit(ir.cvt("u64.u32", r, v));
  return r;
}

/** An immediate as it is, a register zero-extended to u64 (see {@link b64}). */
export function b64Op(l: LowerContext, v: Operand): Operand {
  return v.kind === "imm" ? v : b64(l, v);
}

/** Element count (u64 or imm) to bytes: `n * bits / 8`. */
export function bytesOfElems(
  l: LowerContext,
  n: Operand,
  bits: number,
): Operand & (Reg | { kind: "imm"; value: number }) {
  if (n.kind === "imm") return imm((n.value * bits) / 8);
  if (bits >= 8) {
    const m = bits / 8;
    return m === 1 ? n : l.bin("shl", "u64", n, imm(log2(m)));
  }
  return l.bin("shr", "u64", n, imm(log2(8 / bits)));
}

/** Base address of a matrix tensor with the batch offset applied. */
export function tensorBase(cx: LowerContext, view: MatrixView, t: TensorParam, bz: Reg): Reg {
  const base = cx.params.get(t.name)!;
  if (!view.batched) return base;
  return vectorBase(cx, t, bz);
}

/** A declared stride's value in elements: an immediate for a literal, else its
 * parameter (a dimension's `.u32` or a stride's `.u64`). */
function strideOperand(cx: LowerContext, d: DimRef): Operand {
  return d.kind === "const" ? imm(d.value) : cx.params.get(d.name)!;
}

/**
 * A matrix tensor's line stride in elements where it declares `strides(...)` (the last
 * one, DESIGN §6.1); null for a dense tensor, whose callers keep their dense extent (so
 * that dense kernels lower exactly as before).
 *
 * @param cx The lowering's context.
 * @param t The tensor.
 * @returns The stride (an immediate, or a `.u32`/`.u64` parameter), or null.
 */
export function lineStride(cx: LowerContext, t: TensorParam): Operand | null {
  if (t.strides === undefined) return null;
  return strideOperand(cx, t.strides[t.strides.length - 1]!);
}

/** Base of a batched tensor (any rank): base + bz * (elements per batch) * bytes; a
 * strided tensor's elements per batch are its batch stride (0: every batch the same). */
export function vectorBase(cx: LowerContext, t: TensorParam, bz: Reg): Reg {
  const base = cx.params.get(t.name)!;
  if (t.strides !== undefined) {
    const sb = strideOperand(cx, t.strides[0]!);
    if (sb.kind === "imm" && sb.value === 0) return base;
    const bytes = bytesOfElems(cx, sb.kind === "imm" ? sb : b64(cx, sb), DTYPE_INFO[t.dtype].bits);
    return cx.bin("add", "u64", base, cx.mulU64(bz, bytes) as Reg);
  }
  let stride: Operand = imm(1);
  for (const d of t.dims.slice(1)) {
    const v: Operand = d.kind === "const" ? imm(d.value) : b64(cx, cx.params.get(d.name)!);
    stride = stride.kind === "imm" && v.kind === "imm"
      ? imm(stride.value * v.value)
      : cx.bin("mul", "u64", stride, v);
  }
  const bytes = bytesOfElems(cx, stride, DTYPE_INFO[t.dtype].bits);
  const off = cx.bin("mul", "u64", b64(cx, bz), bytes);
  return cx.bin("add", "u64", base, off);
}
