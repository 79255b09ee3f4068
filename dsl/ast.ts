/**
 * The abstract syntax tree of the gemmc DSL, as the parser produces it: no
 * name resolution, no types. Every node carries the source span it came from
 * so that the checker can point at it.
 *
 * @module
 */

import type { Dtype, Span } from "../ir/gemm.ts";

/** A whole source file: one or more kernels. */
export interface ProgramAst {
  /** The node's tag. */
  readonly kind: "program";
  /** The kernels, in source order. */
  readonly kernels: readonly KernelAst[];
  /** The whole file. */
  readonly span: Span;
}

/** One `kernel NAME { ... }` block, its items in source order. */
export interface KernelAst {
  /** The node's tag. */
  readonly kind: "kernel";
  /** The kernel's name. */
  readonly name: Ident;
  /** Where `grouped` is written after the name (DESIGN §6.2); null: an ordinary kernel. */
  readonly grouped: Span | null;
  /** Declarations, the statement and the schedule, in source order. */
  readonly items: readonly ItemAst[];
  /** From `kernel` to the closing brace. */
  readonly span: Span;
}

/** An item of a kernel body. */
export type ItemAst = TensorDeclAst | ScalarDeclAst | StatementAst | ScheduleAst;

/** An identifier with its span. */
export interface Ident {
  /** The identifier as written. */
  readonly text: string;
  /** Where it is written. */
  readonly span: Span;
}

/** A declared dimension: a runtime size (`M`) or a compile-time one (`64`). */
export type DimAst =
  | { readonly kind: "sym"; readonly name: string; readonly span: Span }
  | { readonly kind: "const"; readonly value: number; readonly span: Span };

/** `strides(sb, ld)`: in elements, every dimension's stride but the contiguous one's,
 * outermost first; each a literal or a name (a kernel dimension, or a new stride parameter). */
export interface StridesAst {
  /** The strides as written. */
  readonly values: readonly DimAst[];
  /** From `strides` to the closing parenthesis. */
  readonly span: Span;
}

/** `A: f16[M, K] row sparse align 8`. */
export interface TensorDeclAst {
  /** The node's tag. */
  readonly kind: "tensorDecl";
  /** The tensor's name. */
  readonly name: Ident;
  /** The element type. */
  readonly dtype: Dtype;
  /** Where the element type is written. */
  readonly dtypeSpan: Span;
  /** The declared dimensions, in order. */
  readonly dims: readonly DimAst[];
  /** The declared layout (`row` or `col`), if written. */
  readonly layout: { readonly value: "row" | "col"; readonly span: Span } | null;
  /** Where `sparse` is written (a structured-sparse A, DESIGN §6.3); null: dense. */
  readonly sparse: Span | null;
  /** The declared strides (`strides(sb, ld)`, DESIGN §6.1), if written. */
  readonly strides: StridesAst | null;
  /** The declared alignment in elements (`align N`), if written. */
  readonly align: { readonly value: number; readonly span: Span } | null;
  /** The whole declaration. */
  readonly span: Span;
}

/** `alpha: f32 = 1.0`. */
export interface ScalarDeclAst {
  /** The node's tag. */
  readonly kind: "scalarDecl";
  /** The scalar's name. */
  readonly name: Ident;
  /** The scalar's type. */
  readonly dtype: Dtype;
  /** Where the type is written. */
  readonly dtypeSpan: Span;
  /** The default value (`= 1.0`), its text as written, if given. */
  readonly default: { readonly value: number; readonly text: string; readonly span: Span } | null;
  /** The whole declaration. */
  readonly span: Span;
}

/** `D[m, n] = expr`. */
export interface StatementAst {
  /** The node's tag. */
  readonly kind: "statement";
  /** The output access on the left of `=`. */
  readonly target: AccessAst;
  /** The right-hand side. */
  readonly expr: ExprAst;
  /** The whole statement. */
  readonly span: Span;
}

/** A tensor access `A[m, k]`. */
export interface AccessAst {
  /** The node's tag. */
  readonly kind: "access";
  /** The tensor accessed. */
  readonly tensor: Ident;
  /** The index names, one per dimension. */
  readonly indices: readonly Ident[];
  /** From the tensor's name to the closing bracket. */
  readonly span: Span;
}

/** An expression of the right-hand side. */
export type ExprAst =
  | AccessAst
  | { readonly kind: "number"; readonly value: number; readonly text: string; readonly span: Span }
  | { readonly kind: "name"; readonly name: Ident; readonly span: Span }
  | { readonly kind: "neg"; readonly operand: ExprAst; readonly span: Span }
  | {
    readonly kind: "binary";
    readonly op: "+" | "-" | "*";
    readonly lhs: ExprAst;
    readonly rhs: ExprAst;
    readonly span: Span;
  }
  | { readonly kind: "paren"; readonly inner: ExprAst; readonly span: Span }
  | {
    readonly kind: "call";
    readonly callee: Ident;
    readonly args: readonly ExprAst[];
    readonly span: Span;
  }
  | {
    readonly kind: "popc";
    readonly op: "&" | "^";
    readonly lhs: AccessAst;
    readonly rhs: AccessAst;
    readonly span: Span;
  };

/** `schedule { ... }`. */
export interface ScheduleAst {
  /** The node's tag. */
  readonly kind: "schedule";
  /** The `key value` lines, in source order. */
  readonly lines: readonly ScheduleLineAst[];
  /** The whole block. */
  readonly span: Span;
}

/** One `key value` line of a schedule block. */
export interface ScheduleLineAst {
  /** The schedule key (`tile`, `stages`, ...). */
  readonly key: Ident;
  /** The value's text as written, and where. */
  readonly value: { readonly text: string; readonly span: Span };
  /** The whole line. */
  readonly span: Span;
}
