/**
 * Diagnostics as data: a stable code, a message, a span in a named source,
 * and a renderer that prints `FILE:LINE:COL: error[CODE]: message`, the source
 * line and a caret/tilde underline.
 *
 * @module
 */

import type { Span } from "../ir/gemm.ts";

/** Every diagnostic code gemmc emits, with a one-line summary. The codes are
 * stable: tests and users may rely on them.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { DIAGNOSTIC_CODES } from "./diagnostics.ts";
 * equal(DIAGNOSTIC_CODES.E0001, "syntax error");
 * ```
 */
export const DIAGNOSTIC_CODES = {
  E0001: "syntax error",
  E0002: "over a source limit (nesting, operators, identifier length)",
  E0003: "an identifier outside ASCII",
  E0101: "unknown tensor or scalar",
  E0102: "duplicate declaration",
  E0103: "rank mismatch in an access",
  E0104: "one index spans two different dimensions",
  E0105: "no contraction",
  E0106: "more than one contraction",
  E0107: "a contraction of more than two tensors",
  E0108: "an epilogue tensor indexed by a summed index",
  E0109: "illegal operand type combination",
  E0110: "unknown schedule key",
  E0111: "repeated schedule key",
  E0112: "malformed schedule value",
  E0113: "illegal accumulator type",
  E0114: "no statement, or more than one",
  E0115: "bad output access",
  E0116: "unknown function or wrong arity",
  E0117: "illegal declaration",
  E0118: "illegal use of a name",
  E0119: "illegal index use",
  E0120: "illegal epilogue type",
  E0121: "duplicate kernel name",
  E0122: "two schedule settings on one line",
  E0123: "illegal math mode",
  E0124: "literal out of range",
  E0125: "illegal stride",
  E0126: "illegal grouped kernel",
  E0127: "illegal sparse operand",
  E0128: "illegal 8-bit float",
  E0201: "threadblock tile not divisible by the warp tile",
  E0202: "warp tile not divisible by the instruction",
  E0203: "no such instruction for these types",
  E0204: "shared memory over the budget",
  E0205: "too many threads per block",
  E0206: "too few stages",
  E0207: "split-k does not divide the k-tiles",
  E0208: "register estimate over the budget",
  E0209: "illegal tile shape",
  E0210: "unknown kernel",
  E0211: "operand layout not supported for this type",
  E0212: "a name split-K needs is taken",
  E0213: "a scheduler the kernel cannot have",
  E0214: "a cluster the kernel cannot have",
  E0215: "a k-loop rotation the kernel cannot have",
} as const;
Object.freeze(DIAGNOSTIC_CODES);

/** A diagnostic code. */
export type DiagnosticCode = keyof typeof DIAGNOSTIC_CODES;

/** One diagnostic: where, what, and which stable code. */
export interface Diagnostic {
  /** The stable code (a key of {@link DIAGNOSTIC_CODES}). */
  readonly code: DiagnosticCode;
  /** The message, one sentence naming what is wrong. */
  readonly message: string;
  /** The source file's name, as given to the compiler. */
  readonly file: string;
  /** The offending source range (character offsets). */
  readonly span: Span;
  /** Line and column (1-based) of the span's start. */
  readonly line: number;
  /** The column, 1-based, of the span's start. */
  readonly column: number;
}

/**
 * Line and column (both 1-based) of an offset in a text.
 *
 * @param text The source text.
 * @param offset A character offset.
 * @returns `{ line, column }`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { lineColumn } from "./diagnostics.ts";
 * equal(lineColumn("ab\ncd", 4).line, 2);
 * ```
 */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/**
 * Builds a diagnostic, computing its line and column.
 *
 * @param code The stable code.
 * @param message The message: capital letter, no trailing period, quoted values.
 * @param source The file name and text the span points into.
 * @param span The offending range.
 * @returns The diagnostic.
 */
export function diagnostic(
  code: DiagnosticCode,
  message: string,
  source: { readonly file: string; readonly text: string },
  span: Span,
): Diagnostic {
  const { line, column } = lineColumn(source.text, span.start);
  return { code, message, file: source.file, span, line, column };
}

/**
 * Renders a diagnostic for a terminal: the header line, the source line with
 * its number, and a caret under the start with tildes under the rest of the
 * span (to the end of that line).
 *
 * @param d The diagnostic.
 * @param text The source text the span points into.
 * @returns The rendered text, ending in a newline.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { diagnostic, renderDiagnostic } from "./diagnostics.ts";
 * const src = { file: "x.gemm", text: "kernel k {\n  A: f8[M]\n}\n" };
 * const d = diagnostic("E0001", "Expected a dtype", src, { start: 16, end: 18 });
 * ok(renderDiagnostic(d, src.text).startsWith("x.gemm:2:6: error[E0001]"));
 * ```
 */
export function renderDiagnostic(d: Diagnostic, text: string): string {
  const lines = text.split("\n");
  const src = (lines[d.line - 1] ?? "").replace(/\r$/, "");
  const lineNo = String(d.line);
  const gutter = " ".repeat(lineNo.length);
  const start = d.column - 1;
  const lineEnd = src.length;
  const width = Math.max(1, Math.min(d.span.end - d.span.start, lineEnd - start));
  // Keep tabs as tabs so the caret lines up under them.
  const pad = src.slice(0, start).replace(/[^\t]/g, " ");
  const mark = "^" + "~".repeat(width - 1);
  return `${d.file}:${d.line}:${d.column}: error[${d.code}]: ${d.message}\n` +
    `${lineNo} | ${src}\n` +
    `${gutter} | ${pad}${mark}\n`;
}

/**
 * Thrown by passes that find a problem in the input; carries diagnostics.
 *
 * @example
 * ```ts
 * import { deepEqual, ok } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { DiagnosticError } from "./diagnostics.ts";
 * const r = compile("kernel k { D[m, n] = A[m, k] * B[k, n] }", { file: "k.gemm" });
 * const e = new DiagnosticError(r.diagnostics);
 * deepEqual(e.diagnostics, r.diagnostics);
 * ok(e.message.startsWith("k.gemm:1:"));
 * ```
 */
export class DiagnosticError extends Error {
  /** The diagnostics, at least one. */
  readonly diagnostics: readonly Diagnostic[];
  /**
   * The error carrying `diagnostics`; its message lists them, one a line.
   *
   * @param diagnostics At least one diagnostic.
   */
  constructor(diagnostics: readonly Diagnostic[]) {
    super(diagnostics.map((d) => `${d.file}:${d.line}:${d.column}: ${d.message}`).join("\n"));
    this.name = "DiagnosticError";
    this.diagnostics = diagnostics;
  }
}
