/**
 * The parser: DSL source text to {@link ProgramAst}, or a syntax diagnostic.
 * The grammar is `gemm.ohm` beside this file.
 *
 * @module
 */

// The one npm dependency, named here rather than through deno.json's import
// map, so that a script in any folder imports mod.ts with no configuration
// (tests/package_test.ts).
// deno-lint-ignore no-import-prefix
import * as ohm from "npm:ohm-js@17.5.0";
import grammarSource from "./gemm.ohm" with { type: "text" };
import type {
  AccessAst,
  DimAst,
  ExprAst,
  Ident,
  ItemAst,
  KernelAst,
  ProgramAst,
  ScheduleLineAst,
} from "./ast.ts";
import type { Dtype, Span } from "../ir/gemm.ts";
import { type Diagnostic, diagnostic } from "./diagnostics.ts";
import { checkSourceLimits } from "./limits.ts";
import { didYouMean } from "./suggest.ts";
import { DTYPES } from "../ir/dtype.ts";
import { blockText, failingBlock, kernelBlocks, MAX_RECOVERED_BLOCKS } from "./resync.ts";

/** The Ohm grammar of the DSL, built once. */
export const gemmGrammar: ohm.Grammar = ohm.grammar(grammarSource);

function span(node: ohm.Node): Span {
  return { start: node.source.startIdx, end: node.source.endIdx };
}

function ident(node: ohm.Node): Ident {
  return { text: node.sourceString, span: span(node) };
}

/** The ASTs of an iteration's children (`Kernel*`; a list's `asIteration()`), in order. */
function asts<T>(iter: ohm.Node): T[] {
  return iter.children.map((c) => c["ast"]() as T);
}

const semantics = gemmGrammar.createSemantics();
semantics.addOperation<unknown>("ast", {
  Program(kernels, _end) {
    return {
      kind: "program",
      kernels: asts(kernels),
      span: span(this),
    } satisfies ProgramAst;
  },
  Kernel(_kw, name, grouped, _open, items, _close) {
    const g = grouped.children[0];
    return {
      kind: "kernel",
      name: ident(name),
      grouped: g === undefined ? null : span(g),
      items: asts(items),
      span: span(this),
    } satisfies KernelAst;
  },
  TensorDecl(name, _colon, dtype, _lb, dims, _rb, layout, sparse, strides, align) {
    const l = layout.children[0];
    const sp = sparse.children[0];
    const st = strides.children[0];
    const a = align.children[0];
    return {
      kind: "tensorDecl",
      name: ident(name),
      dtype: dtype.sourceString as Dtype,
      dtypeSpan: span(dtype),
      dims: asts(dims.asIteration()),
      layout: l === undefined ? null : { value: l.sourceString as "row" | "col", span: span(l) },
      sparse: sp === undefined ? null : span(sp),
      strides: st === undefined ? null : st["ast"](),
      align: a === undefined ? null : a["ast"](),
      span: span(this),
    } satisfies ItemAst;
  },
  DimSpec_symbolic(name) {
    return { kind: "sym", name: name.sourceString, span: span(this) } satisfies DimAst;
  },
  DimSpec_literal(lit) {
    return { kind: "const", value: Number(lit.sourceString), span: span(this) } satisfies DimAst;
  },
  StridesSpec(_kw, _lp, values, _rp) {
    return { values: asts(values.asIteration()), span: span(this) };
  },
  AlignSpec(_kw, n) {
    return { value: Number(n.sourceString), span: span(n) };
  },
  ScalarDecl(name, _colon, dtype, dflt) {
    const d = dflt.children[0];
    return {
      kind: "scalarDecl",
      name: ident(name),
      dtype: dtype.sourceString as Dtype,
      dtypeSpan: span(dtype),
      default: d === undefined ? null : d["ast"](),
      span: span(this),
    } satisfies ItemAst;
  },
  ScalarDefault(_eq, n) {
    const text = n.sourceString.replace(/\s+/g, "");
    return { value: Number(text), text, span: span(n) };
  },
  Statement(target, _eq, expr) {
    return {
      kind: "statement",
      target: target["ast"](),
      expr: expr["ast"](),
      span: span(this),
    } satisfies ItemAst;
  },
  Access(name, _lb, indices, _rb) {
    return {
      kind: "access",
      tensor: ident(name),
      indices: indices.asIteration().children.map(ident),
      span: span(this),
    } satisfies AccessAst;
  },
  AddExpr_add(lhs, _op, rhs) {
    return binary("+", lhs, rhs, span(this));
  },
  AddExpr_sub(lhs, _op, rhs) {
    return binary("-", lhs, rhs, span(this));
  },
  MulExpr_mul(lhs, _op, rhs) {
    return binary("*", lhs, rhs, span(this));
  },
  UnaryExpr_neg(_minus, operand) {
    return { kind: "neg", operand: operand["ast"](), span: span(this) } satisfies ExprAst;
  },
  Primary_paren(_lp, inner, _rp) {
    return { kind: "paren", inner: inner["ast"](), span: span(this) } satisfies ExprAst;
  },
  Primary_number(n) {
    return { kind: "number", value: Number(n.sourceString), text: n.sourceString, span: span(n) };
  },
  Primary_name(n) {
    return { kind: "name", name: ident(n), span: span(n) } satisfies ExprAst;
  },
  Popc(_kw, _lp, lhs, op, rhs, _rp) {
    return {
      kind: "popc",
      op: op.sourceString as "&" | "^",
      lhs: lhs["ast"](),
      rhs: rhs["ast"](),
      span: span(this),
    } satisfies ExprAst;
  },
  Call(callee, _lp, args, _rp) {
    return {
      kind: "call",
      callee: ident(callee),
      args: asts(args.asIteration()),
      span: span(this),
    } satisfies ExprAst;
  },
  Schedule(_kw, _lb, lines, _rb) {
    return {
      kind: "schedule",
      lines: asts(lines),
      span: span(this),
    } satisfies ItemAst;
  },
  scheduleLine(key, _space, value) {
    return {
      key: ident(key),
      value: { text: value.sourceString, span: span(value) },
      span: span(this),
    } satisfies ScheduleLineAst;
  },
});

function binary(op: "+" | "-" | "*", lhs: ohm.Node, rhs: ohm.Node, s: Span): ExprAst {
  return { kind: "binary", op, lhs: lhs["ast"](), rhs: rhs["ast"](), span: s };
}

/**
 * The result of parsing: an AST, or the syntax diagnostics and the kernels
 * that parsed despite them.
 */
export type ParseResult =
  | { readonly ok: true; readonly ast: ProgramAst }
  | {
    readonly ok: false;
    readonly diagnostics: readonly Diagnostic[];
    /**
     * After a syntax error, the kernels of the other blocks that parsed on
     * their own (dsl/resync.ts), for the checker; absent for a source limit.
     */
    readonly partial?: ProgramAst;
  };

/**
 * Parses DSL source text.
 *
 * @param text The source.
 * @param file The file name used in diagnostics.
 * @returns The AST; or an `E0001` syntax diagnostic at the furthest point the parser reached,
 *   then those of the other kernel blocks parsed on their own, with the kernels that parsed
 *   (dsl/resync.ts); or one `E0002`/`E0003` of the source limits, checked first
 *   (dsl/limits.ts).
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { parseProgram } from "./parse.ts";
 * const r = parseProgram("kernel k { A: f16[M, K] }", "k.gemm");
 * ok(r.ok);
 * const bad = parseProgram("kernel a { A: f16[M }\nkernel b { }", "k.gemm");
 * ok(!bad.ok && bad.partial?.kernels[0]?.name.text === "b");
 * ```
 */
export function parseProgram(text: string, file: string): ParseResult {
  const over = checkSourceLimits(text, file);
  if (over !== null) return { ok: false, diagnostics: [over] };
  // A byte order mark reads as a space (offsets, so spans, stay those of the source).
  const src = text.startsWith("\uFEFF") ? " " + text.slice(1) : text;
  const m = gemmGrammar.match(src);
  if (!m.failed()) return { ok: true, ast: semantics(m)["ast"]() as ProgramAst };
  const diagnostics = [syntaxError(m, src, file)];
  const kernels: KernelAst[] = [];
  const blocks = kernelBlocks(src);
  const failing = failingBlock(blocks, m.getRightmostFailurePosition());
  blocks.forEach((b, i) => {
    if (i === failing || i > failing + MAX_RECOVERED_BLOCKS) return;
    const bt = blockText(src, b);
    const bm = gemmGrammar.match(bt);
    // A block that runs out before its end runs into the next block's `kernel`.
    const next = i + 1 < blocks.length ? '"kernel"' : "end of input";
    if (bm.failed()) diagnostics.push(syntaxError(bm, bt, file, next));
    else kernels.push(...(semantics(bm)["ast"]() as ProgramAst).kernels);
  });
  diagnostics.sort((a, b) => a.span.start - b.span.start);
  return {
    ok: false,
    diagnostics,
    partial: { kind: "program", kernels, span: { start: 0, end: src.length } },
  };
}

/**
 * The `E0001` diagnostic of a failed match; `next` is what follows the text
 * (the end of input, or the next kernel block's `kernel`).
 */
function syntaxError(
  m: ohm.FailedMatchResult,
  text: string,
  file: string,
  next = "end of input",
): Diagnostic {
  // Ohm drops the failed `kernel` at a point where `Kernel*` stopped (a "fluffy" failure),
  // but wherever the end of input may come, so may another kernel.
  const expected = m.getExpectedText() === "end of input"
    ? `end of input or "kernel"`
    : m.getExpectedText();
  const failure = m.getRightmostFailurePosition();
  const pos = errorPosition(text, failure, expected, next !== "end of input");
  const found = failure >= text.length && (next === "end of input" || pos === failure)
    ? next
    : pos !== failure
    ? "end of line"
    : describeFound(text, pos);
  const message = `Expected ${expected}, found ${found}${dtypeSuggestion(expected, text, pos)}`;
  const end = pos >= text.length
    ? pos + (next === "end of input" ? 0 : "kernel".length)
    : pos + Math.max(1, tokenLength(text, pos));
  return diagnostic("E0001", message, { file, text }, { start: pos, end });
}

/**
 * Where to report a syntax error. Ohm fails after skipping whitespace and
 * comments, so a `]` missing at the end of a line would be reported at the
 * start of the next one; report it right after the last token instead
 * ("found end of line"). But where a new item, line or kernel could start at
 * the failure (a `}` or the end of input is among the expected), the token
 * there is itself the problem: keep it (also at the end of a kernel block
 * when `more` text, the next block's `kernel`, follows: dsl/resync.ts).
 */
function errorPosition(text: string, failure: number, expected: string, more = false): number {
  const canStartThere = expected.includes(`"}"`) || expected.includes("end of input");
  if ((failure < text.length || more) && canStartThere) return failure;
  let p = Math.min(failure, text.length);
  for (;;) {
    while (p > 0 && /\s/.test(text[p - 1] ?? "")) p--;
    // The DSL has no string literals, so a `//` before `p` on its line starts a comment.
    const comment = text.indexOf("//", text.lastIndexOf("\n", p - 1) + 1);
    if (comment === -1 || comment >= p) break;
    p = comment;
  }
  return text.slice(p, failure).includes("\n") ? p : failure;
}

/** `; did you mean "f16"?` where a dtype was expected and a word near one was found. */
function dtypeSuggestion(expected: string, text: string, pos: number): string {
  if (!expected.startsWith("a dtype")) return "";
  const word = /^[A-Za-z0-9_]+/.exec(text.slice(pos));
  return word === null ? "" : didYouMean(word[0], DTYPES);
}

function tokenLength(text: string, pos: number): number {
  const word = /^[A-Za-z0-9_.]+/.exec(text.slice(pos));
  return word ? word[0].length : 1;
}

function describeFound(text: string, pos: number): string {
  if (pos >= text.length) return "end of input";
  const ch = text[pos] ?? "";
  if (ch === "\n" || ch === "\r") return "end of line";
  const len = tokenLength(text, pos);
  return `"${text.slice(pos, pos + len)}"`;
}
