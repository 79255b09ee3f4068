/**
 * What the checker's phases share about one kernel: the source the spans
 * point into, the declarations read so far, and the index bindings; with the
 * helpers that raise a positioned diagnostic and the small facts about
 * dimensions and spans every phase uses.
 *
 * @module
 */

import type { ExprAst, ScalarDeclAst, TensorDeclAst } from "../ast.ts";
import { diagnostic, type DiagnosticCode, DiagnosticError, lineColumn } from "../diagnostics.ts";
import { callableEpilogueFns, type EpilogueFnName } from "../../ir/epilogue.ts";
import type { DimRef, Span } from "../../ir/gemm.ts";
import type { Dtype } from "../../ir/dtype.ts";
import type { DimAst } from "../ast.ts";

/** The file name and text the spans point into. */
export interface Src {
  readonly file: string;
  readonly text: string;
}

/** Where an index was first bound: the dimension it spans, of which tensor, at which span. */
export interface Binding {
  readonly dim: DimRef;
  readonly tensor: string;
  readonly span: Span;
}

/** The state of checking one kernel, filled by the declarations and the accesses. */
export interface Scope {
  readonly src: Src;
  readonly tensors: Map<string, TensorDeclAst>;
  readonly scalars: Map<string, ScalarDeclAst>;
  /** index name -> the dim it spans, and where it was first bound. */
  readonly binding: Map<string, Binding>;
}

/**
 * An empty scope for one kernel.
 *
 * @param src The source the spans point into.
 * @returns A scope with no declarations and no bindings.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { newScope } from "./scope.ts";
 * const s = newScope({ file: "k.gemm", text: "" });
 * equal(s.tensors.size, 0);
 * ```
 */
export function newScope(src: Src): Scope {
  return { src, tensors: new Map(), scalars: new Map(), binding: new Map() };
}

/** A flattened product chain: its factors and whether an odd number of minus signs wrap it. */
export interface Product {
  readonly root: ExprAst;
  readonly factors: readonly ExprAst[];
  readonly negated: boolean;
}

/** The functions the DSL calls by name (the table of ir/epilogue.ts). */
export const FUNCTIONS: readonly EpilogueFnName[] = callableEpilogueFns();

/** Types an epilogue may cast to, read, or store. */
export const EPILOGUE_DTYPES: readonly Dtype[] = ["f64", "f32", "f16", "bf16", "s32", "s8", "u8"];

/**
 * Stops checking the kernel with one diagnostic.
 *
 * @param src The source the span points into.
 * @param code The diagnostic's code.
 * @param message The message.
 * @param span Where it points.
 * @returns Never: it throws a {@link DiagnosticError}.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { fail } from "./scope.ts";
 * try {
 *   fail({ file: "k.gemm", text: "x" }, "E0101", 'Unknown name "x"', { start: 0, end: 1 });
 * } catch (e) {
 *   ok(e instanceof Error);
 * }
 * ```
 */
export function fail(src: Src, code: DiagnosticCode, message: string, span: Span): never {
  throw new DiagnosticError([diagnostic(code, message, src, span)]);
}

/**
 * The 1-based line a span starts on.
 *
 * @param src The source the span points into.
 * @param span The span.
 * @returns Its first line.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { lineOf } from "./scope.ts";
 * equal(lineOf({ file: "k", text: "a\nb" }, { start: 2, end: 3 }), 2);
 * ```
 */
export function lineOf(src: Src, span: Span): number {
  return lineColumn(src.text, span.start).line;
}

/**
 * Whether two dimensions are the same symbol or the same literal.
 *
 * @param a One dimension.
 * @param b The other.
 * @returns True when they are equal.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { dimEq } from "./scope.ts";
 * ok(dimEq({ kind: "sym", name: "M" }, { kind: "sym", name: "M" }));
 * ```
 */
export function dimEq(a: DimRef, b: DimRef): boolean {
  return a.kind === "sym"
    ? b.kind === "sym" && a.name === b.name
    : b.kind === "const" && a.value === b.value;
}

/**
 * A dimension as the source writes it.
 *
 * @param d The dimension.
 * @returns Its name or its literal.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { dimText } from "./scope.ts";
 * equal(dimText({ kind: "const", value: 64 }), "64");
 * ```
 */
export function dimText(d: DimRef): string {
  return d.kind === "sym" ? d.name : String(d.value);
}

/**
 * A declared dimension as the GEMM IR holds it (without its span).
 *
 * @param d The declared dimension.
 * @returns The dimension reference.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { toDimRef } from "./scope.ts";
 * const d = toDimRef({ kind: "sym", name: "K", span: { start: 0, end: 1 } });
 * equal(d.kind, "sym");
 * equal(d.name, "K");
 * ```
 */
export function toDimRef(d: DimAst): DimRef {
  return d.kind === "sym" ? { kind: "sym", name: d.name } : { kind: "const", value: d.value };
}

/**
 * The smallest span covering two spans.
 *
 * @param a One span.
 * @param b The other.
 * @returns Their cover.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { cover } from "./scope.ts";
 * const c = cover({ start: 4, end: 6 }, { start: 1, end: 2 });
 * equal(c.start, 1);
 * equal(c.end, 6);
 * ```
 */
export function cover(a: Span, b: Span): Span {
  return { start: Math.min(a.start, b.start), end: Math.max(a.end, b.end) };
}
