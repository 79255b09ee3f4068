/**
 * The GEMM IR: a checked GEMM (problem, math, epilogue) together with its
 * schedule, possibly partial. The DSL checker produces it; the passes in
 * `passes/` complete the schedule; the lowering turns it into the kernel IR.
 *
 * Every node is readonly. Spans point into the kernel's source so that
 * diagnostics raised by later passes can quote the line they concern.
 *
 * The schedule's types are in ir/gemm_schedule.ts, the plan's in ir/gemm_plan.ts; this module
 * re-exports both, so that every type of the GEMM IR can be imported from here.
 *
 * @module
 */

import type { Target } from "./target.ts";
import { type Dtype, DTYPE_INFO } from "./dtype.ts";
import type { ComputeType, EpilogueFnOfArity } from "./epilogue.ts";
import type { Schedule, ScheduleKey } from "./gemm_schedule.ts";
import type { Plan } from "./gemm_plan.ts";
export type { Dtype } from "./dtype.ts";
export type { ComputeType } from "./epilogue.ts";
export * from "./gemm_schedule.ts";
export * from "./gemm_plan.ts";

/** A half-open range of character offsets into a source text. */
export interface Span {
  /** Offset of the first character. */
  readonly start: number;
  /** Offset just past the last character. */
  readonly end: number;
}

/** A dimension: a runtime size passed to the kernel, or a compile-time constant. */
export type DimRef =
  | { readonly kind: "sym"; readonly name: string }
  | { readonly kind: "const"; readonly value: number };

/** Storage order of a matrix. In a normalised operand view `row` means the
 * second logical dimension is contiguous (K for A, N for B, N for C/D). */
export type Layout = "row" | "col";

/** What a tensor is to the GEMM. `A_meta`: the metadata of a structured-sparse A
 * (DESIGN §6.3; see {@link TensorParam.sparse}). */
export type Role = "A" | "B" | "C" | "D" | "bias" | "A_meta";

/** A tensor parameter, as declared. */
export interface TensorParam {
  /** The parameter's tag. */
  readonly kind: "tensor";
  /** The tensor's name. */
  readonly name: string;
  /** The element type. */
  readonly dtype: Dtype;
  /** Declared dimensions, in declaration order (batch first when rank 3). */
  readonly dims: readonly DimRef[];
  /** Declared layout of the last two dimensions (`row`: last contiguous). */
  readonly layout: Layout;
  /** Guaranteed alignment of every row/column start, in elements. */
  readonly align: number;
  /**
   * The declared strides in elements (`strides(...)`, DESIGN §6.1): every dimension's
   * but the contiguous one's, outermost first (a matrix: its line stride; a batched
   * matrix: the batch stride, then the line stride; a batched vector: the batch
   * stride). A `sym` names a kernel dimension or a stride parameter
   * ({@link GemmKernel.strides}). Absent: dense, as in version 1.
   */
  readonly strides?: readonly DimRef[];
  /**
   * A structured-sparse A (`A: f16[M, K] row sparse`, DESIGN §6.3, issue 21): only on
   * the A operand, K contiguous. `dims` stay the logical (dense) `[batch?, M, K]`;
   * the buffer holds the kept values, `[batch?, M, K / 2]` in the declared layout
   * (numerics/sparse.ts `sparseValueBytes`), and `align` counts in those rows. The
   * metadata is the next parameter ({@link sparseMetaParam}). Absent: dense.
   */
  readonly sparse?: true;
  /** What the tensor is to the GEMM. */
  readonly role: Role;
  /** The declaration in the source (of an `A_meta` parameter: A's word `sparse`). */
  readonly span: Span;
}

/** A scalar parameter. */
export interface ScalarParam {
  /** The parameter's tag. */
  readonly kind: "scalar";
  /** The scalar's name. */
  readonly name: string;
  /** The scalar's type. */
  readonly dtype: Dtype;
  /** The declared default value (null: none). */
  readonly default: number | null;
  /** The declaration in the source. */
  readonly span: Span;
}

/**
 * A kernel parameter in declaration order.
 *
 * A sparse A ({@link TensorParam.sparse}) is followed at once by its metadata: a
 * `TensorParam` of role `A_meta` named `<A>_meta` (a `.u64` address in the ABI, so
 * the order is A, A_meta, then the other tensors as declared). Its element type is
 * A's (the type whose pattern the metadata encodes: it fixes the group,
 * numerics/sparse.ts `sparseGroup`), its `dims` and `layout` A's (logical
 * `[batch?, M, K]`, K the contiguous one), its `align` 1 (not meaningful), and its storage not `dims` x `dtype` but the canonical
 * metadata of numerics/sparse.ts: u32 words, `sparseMetaBytes(M, K, dtype, batch)`
 * bytes (harness/tensor.ts `tensorShape` knows both). No u32 {@link Dtype} exists to
 * name the words, and the dims in words (`ceil(K / group / 8)`) are no {@link DimRef}.
 */
export type Param = TensorParam | ScalarParam;

/** How the GEMM sees one matrix tensor: which tensor, its normalised layout,
 * and whether it has the batch dimension (absent: broadcast over the batch). */
export interface MatrixView {
  /** The tensor's name. */
  readonly tensor: string;
  /** The normalised layout (see {@link Layout}). */
  readonly layout: Layout;
  /** Whether the tensor has the batch dimension. */
  readonly batched: boolean;
}

/** The user's index names of a {@link Problem}'s dimensions (`D[m, n] = A[m, k] ...`). */
export interface ProblemIndices {
  /** The index along M. */
  readonly m: string;
  /** The index along N. */
  readonly n: string;
  /** The summed index, along K. */
  readonly k: string;
  /** The batch index (null: no batch). */
  readonly batch: string | null;
}

/** The problem: sizes, roles and the normalised operand layouts. */
export interface Problem {
  /** The rows of D (and of A). */
  readonly m: DimRef;
  /** The columns of D (and of B). */
  readonly n: DimRef;
  /** The contraction dimension. */
  readonly k: DimRef;
  /** The batch dimension (null: no batch). */
  readonly batch: DimRef | null;
  /** The user's index names for m, n, k and the batch. */
  readonly indices: ProblemIndices;
  /** Operand A, M x K. */
  readonly a: MatrixView;
  /** Operand B, K x N. */
  readonly b: MatrixView;
  /** The output D, M x N. */
  readonly d: MatrixView;
}

/** How the main loop computes. */
export type MathMode =
  /** Tensor-core `mma.sync` on the operand types (f32 operands rounded to tf32). */
  | "tensor"
  /** f32 operands split into big + small tf32 parts, three MMAs each. */
  | "3xtf32"
  /** CUDA-core FMA, no tensor cores. */
  | "simt";

/** The main loop's types. */
export interface MathSpec {
  /** Operand element types as stored. */
  readonly a: Dtype;
  /** Operand B's element type as stored. */
  readonly b: Dtype;
  /** The types the MMA instruction consumes (`tf32` for f32 operands). */
  readonly mmaA: Dtype;
  /** The type the MMA instruction consumes for B. */
  readonly mmaB: Dtype;
  /** The accumulator type. */
  readonly acc: Dtype;
  /** How the main loop computes. */
  readonly mode: MathMode;
  /** The product: multiply-add, or a binary `popc` of `and` / `xor`. */
  readonly op: "mul" | "and.popc" | "xor.popc";
}

/** An elementwise epilogue expression over the accumulator. The functions of
 * the `unary`, `binary` and `clamp` nodes are the rows of the table in
 * ir/epilogue.ts; ir/epilogue_expr.ts builds, visits and rewrites the nodes. */
export type EpilogueExpr =
  | { readonly op: "acc" }
  | { readonly op: "const"; readonly value: number }
  | { readonly op: "scalar"; readonly name: string }
  | {
    readonly op: "load";
    readonly tensor: string;
    /** Varies with the output row (m), the column (n), the batch. */
    readonly rows: boolean;
    readonly cols: boolean;
    readonly batched: boolean;
  }
  | {
    readonly op: "unary";
    readonly fn: EpilogueFnOfArity<1>;
    readonly x: EpilogueExpr;
  }
  | {
    readonly op: "binary";
    readonly fn: EpilogueFnOfArity<2>;
    readonly a: EpilogueExpr;
    readonly b: EpilogueExpr;
  }
  | {
    readonly op: "clamp";
    readonly x: EpilogueExpr;
    readonly lo: EpilogueExpr;
    readonly hi: EpilogueExpr;
  }
  | { readonly op: "cast"; readonly to: Dtype; readonly x: EpilogueExpr };

/** The epilogue: computed per output element, then converted to D's type. */
export interface Epilogue {
  /** The type the epilogue computes in. */
  readonly compute: ComputeType;
  /** The expression, over the accumulator. */
  readonly expr: EpilogueExpr;
  /** Layouts of the epilogue tensors that are indexed by both m and n. */
  readonly views: readonly MatrixView[];
}

/** A compile target (the table is ir/target.ts). */
export type { Target };

/** The source a {@link GemmKernel}'s spans point into. */
export interface GemmSource {
  /** The file's name, as given to the compiler. */
  readonly file: string;
  /** The whole source text. */
  readonly text: string;
}

/** One kernel in the GEMM IR. */
export interface GemmKernel {
  /** The node's tag. */
  readonly kind: "gemm";
  /** The kernel's name. */
  readonly name: string;
  /** The compile target. */
  readonly target: Target;
  /** Tensors and scalars, in declaration order. */
  readonly params: readonly Param[];
  /** Runtime dimensions, in order of first appearance in the declarations. */
  readonly dims: readonly string[];
  /** `grouped` (DESIGN §6.2): one launch runs a table of problems, each with its own
   * dims, tensor addresses and strides; scalars shared. Absent: an ordinary kernel. */
  readonly grouped?: true;
  /** Runtime stride parameters (`strides(lda)` where `lda` is no dimension), in order
   * of first appearance: `.u64` kernel parameters after the dims. Absent: none. */
  readonly strides?: readonly string[];
  /** Sizes, roles and operand layouts. */
  readonly problem: Problem;
  /** The main loop's types. */
  readonly math: MathSpec;
  /** The epilogue. */
  readonly epilogue: Epilogue;
  /** The schedule as given (possibly partial). */
  readonly schedule: Schedule;
  /** What the passes decided so far. */
  readonly plan: Plan;
  /** Expected runtime sizes, by dimension name: they shape the default
   * schedule (tile size for skinny problems, swizzle) as compile-time sizes
   * would, but the kernel stays correct for any size. */
  readonly sizeHints?: Readonly<Record<string, number>>;
  /** The SM count of the GPU the kernel is for: with known or hinted M and N
   * the default tile weighs the waves of blocks on that many SMs (default:
   * the target's `defaultSms`, ir/target.ts). */
  readonly sms?: number;
  /** True: programmatic dependent launch's instructions, on targets with `griddepcontrol`
   * (compile option `pdl`; ir/kernel_sm90.ts `GridDepOp`). */
  readonly pdl?: true;
  /** With `pdl`: the kernel's input tensors the previous grid does not write (compile option
   * `pdlEarly`), whose loads may start before `griddepcontrol.wait`. */
  readonly pdlEarly?: readonly string[];
  /** With `pdl`: `last-copy` moves the mma.sync main loop's `griddepcontrol.launch_dependents`
   * from after its drain to right after its last copy is issued (compile option `pdlTrigger`;
   * an experiment, bench/NOTES.md 93). Absent: after the drain. */
  readonly pdlTrigger?: "last-copy";
  /** Where each given schedule line is, for diagnostics raised by passes. */
  readonly scheduleSpans: Readonly<Partial<Record<ScheduleKey, Span>>>;
  /** The kernel's name in `kernel NAME`: where a diagnostic without a schedule line points. */
  readonly nameSpan: Span;
  /** The whole kernel in the source. */
  readonly span: Span;
  /** The file name and source the spans point into. */
  readonly source: GemmSource;
}

/** The names of a grouped kernel's first two parameters (DESIGN §6.2): the problem
 * table's address (`.u64`) and the problem count (`.u32`). */
export const GROUP_PARAMS = Object.freeze({ table: "group_table", count: "group_count" });

/**
 * Throws on a value that a `switch` should never reach; its parameter type
 * `never` makes the compiler prove that every case is handled.
 *
 * @param x The impossible value.
 * @returns Never returns.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { unreachable } from "./gemm.ts";
 * type T = "a";
 * const f = (t: T) => { switch (t) { case "a": return 1; default: return unreachable(t); } };
 * equal(f("a"), 1);
 * ```
 */
export function unreachable(x: never): never {
  throw new Error(`Unreachable: ${JSON.stringify(x)}`);
}

/**
 * The metadata parameter of a kernel's sparse A (role `A_meta`, right after A), or
 * null for a dense kernel.
 *
 * @param k The kernel.
 * @returns The parameter, whose `span` is A's word `sparse`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { sparseMetaParam } from "./gemm.ts";
 * const k = check("kernel k { A: f16[M, K] sparse\n B: f16[K, N] col\n D: f32[M, N]\n" +
 *   " D[m, n] = A[m, k] * B[k, n] }").kernels[0]!;
 * equal(sparseMetaParam(k)?.name, "A_meta");
 * equal(k.params.map((p) => p.name).join(), "A,A_meta,B,D");
 * ```
 */
export function sparseMetaParam(k: GemmKernel): TensorParam | null {
  const p = k.params.find((q) => q.kind === "tensor" && q.role === "A_meta");
  return p === undefined ? null : p as TensorParam;
}

/**
 * The name of a sparse A's metadata parameter (DESIGN §6.3).
 *
 * @param a The name of A.
 * @returns `<a>_meta`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sparseMetaName } from "./gemm.ts";
 * equal(sparseMetaName("X"), "X_meta");
 * ```
 */
export function sparseMetaName(a: string): string {
  return `${a}_meta`;
}

/**
 * The view of operand A or B.
 *
 * @param k The kernel.
 * @param role The operand.
 * @returns `k.problem.a` or `k.problem.b`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { operandView } from "./gemm.ts";
 * const k = check("kernel k { X: f16[M, K] row\n Y: f16[K, N] col\n D: f32[M, N]\n" +
 *   " D[m, n] = X[m, k] * Y[k, n] }").kernels[0]!;
 * equal(operandView(k, "B").tensor, "Y");
 * ```
 */
export function operandView(k: GemmKernel, role: "A" | "B"): MatrixView {
  return role === "A" ? k.problem.a : k.problem.b;
}

/**
 * A tensor parameter by name.
 *
 * @param k The kernel.
 * @param name The tensor's name.
 * @returns The parameter; throws if there is none (a verifier bug).
 */
export function tensorParam(k: GemmKernel, name: string): TensorParam {
  const p = k.params.find((q) => q.name === name);
  if (p === undefined || p.kind !== "tensor") throw new Error(`No tensor named "${name}"`);
  return p;
}

/**
 * Whether an operand is aligned to less than 4 bytes, so that its tiles are
 * copied synchronously, one element per load and store (no cp.async).
 *
 * @param k The kernel.
 * @returns True when A or B needs synchronous copies.
 */
export function hasSyncCopies(k: GemmKernel): boolean {
  return [k.problem.a.tensor, k.problem.b.tensor].some((n) => {
    const t = k.params.find((q) => q.name === n);
    return t !== undefined && t.kind === "tensor" && t.align * DTYPE_INFO[t.dtype].bits < 32;
  });
}

/**
 * A dimension's size when it is known at compile time or expected (a size
 * hint): such sizes shape the defaults.
 *
 * @param k The kernel.
 * @param d The dimension.
 * @returns Its size, or null.
 */
export function knownSize(k: GemmKernel, d: DimRef): number | null {
  return d.kind === "const" ? d.value : k.sizeHints?.[d.name] ?? null;
}
