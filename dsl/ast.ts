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
  readonly kind: "program";
  readonly kernels: readonly KernelAst[];
  readonly span: Span;
}

/** One `kernel NAME { ... }` block, its items in source order. */
export interface KernelAst {
  readonly kind: "kernel";
  readonly name: Ident;
  readonly items: readonly ItemAst[];
  readonly span: Span;
}

/** An item of a kernel body. */
export type ItemAst = TensorDeclAst | ScalarDeclAst | StatementAst | ScheduleAst;

/** An identifier with its span. */
export interface Ident {
  readonly text: string;
  readonly span: Span;
}

/** A declared dimension: a runtime size (`M`) or a compile-time one (`64`). */
export type DimAst =
  | { readonly kind: "sym"; readonly name: string; readonly span: Span }
  | { readonly kind: "const"; readonly value: number; readonly span: Span };

/** `A: f16[M, K] row align 8`. */
export interface TensorDeclAst {
  readonly kind: "tensorDecl";
  readonly name: Ident;
  readonly dtype: Dtype;
  readonly dtypeSpan: Span;
  readonly dims: readonly DimAst[];
  readonly layout: { readonly value: "row" | "col"; readonly span: Span } | null;
  readonly align: { readonly value: number; readonly span: Span } | null;
  readonly span: Span;
}

/** `alpha: f32 = 1.0`. */
export interface ScalarDeclAst {
  readonly kind: "scalarDecl";
  readonly name: Ident;
  readonly dtype: Dtype;
  readonly dtypeSpan: Span;
  readonly default: { readonly value: number; readonly text: string; readonly span: Span } | null;
  readonly span: Span;
}

/** `D[m, n] = expr`. */
export interface StatementAst {
  readonly kind: "statement";
  readonly target: AccessAst;
  readonly expr: ExprAst;
  readonly span: Span;
}

/** A tensor access `A[m, k]`. */
export interface AccessAst {
  readonly kind: "access";
  readonly tensor: Ident;
  readonly indices: readonly Ident[];
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
  readonly kind: "schedule";
  readonly lines: readonly ScheduleLineAst[];
  readonly span: Span;
}

/** One `key value` line of a schedule block. */
export interface ScheduleLineAst {
  readonly key: Ident;
  readonly value: { readonly text: string; readonly span: Span };
  readonly span: Span;
}
