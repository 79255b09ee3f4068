/**
 * The limits gemmc sets where the input has no natural one, in one table
 * ({@link LIMITS}; the README's "Limits" section lists the same rows, and a
 * test holds the two equal). Each is refused with a message that names the
 * limit and its value. The source limits are checked here, by one linear
 * scan before the parser runs: the parser and the checker recurse once per
 * level of nesting and once per operator of a left-leaning sum, so an
 * expression past these limits would exhaust the stack instead of producing
 * a diagnostic; an identifier or a file past its limit would make every later
 * pass slow; and a name outside ASCII cannot become a PTX identifier. The
 * others are checked where their value is read (named in `where`).
 *
 * @module
 */

import { type Diagnostic, diagnostic } from "./diagnostics.ts";
import type { Span } from "../ir/gemm.ts";

/** One limit: its value, its unit, what it bounds, and where and how it is refused. */
export interface Limit {
  /** The largest value accepted. */
  readonly value: number;
  /** What the value counts. */
  readonly unit: string;
  /** What it bounds. */
  readonly what: string;
  /** Where it is checked, and what a value over it gets. */
  readonly refused: string;
}

/** The names of {@link LIMITS}' rows. */
export type LimitName =
  | "sourceLength"
  | "nesting"
  | "operators"
  | "identifier"
  | "splitK"
  | "runtimeSize"
  | "simulationWork";

/**
 * Every limit gemmc sets, by name.
 *
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { LIMITS } from "./limits.ts";
 * ok(LIMITS.splitK.value === 64 && LIMITS.nesting.unit === "levels");
 * ```
 */
export const LIMITS: Readonly<Record<LimitName, Limit>> = Object.freeze({
  sourceLength: {
    value: 262_144,
    unit: "characters",
    what: "the length of one source text",
    refused: "E0002 at the first character past it (dsl/limits.ts, before parsing)",
  },
  nesting: {
    value: 64,
    unit: "levels",
    what: "parentheses (grouping or call) nested in one expression",
    refused: "E0002 at the first parenthesis past it (dsl/limits.ts)",
  },
  operators: {
    value: 128,
    unit: "operators",
    what: "`+`, `-`, `*` and function calls in one kernel (terms, signs and calls)",
    refused: "E0002 at the first operator past it (dsl/limits.ts)",
  },
  identifier: {
    value: 255,
    unit: "characters",
    what: "the length of one identifier or number",
    refused: "E0002 at the identifier (dsl/limits.ts)",
  },
  splitK: {
    value: 64,
    unit: "splits",
    what: "`split_k` in a schedule",
    refused: "E0112 at the value (dsl/check/schedule.ts)",
  },
  runtimeSize: {
    value: 2 ** 31 - 1,
    unit: "elements",
    what: "one runtime dimension (M, N, K, L or a named one) given to simulate or run",
    refused:
      "simulate/run: exit 2 naming the size (harness/sizes.ts; the launch contract's MAX_DIM)",
  },
  simulationWork: {
    value: 2 ** 31,
    unit: "multiply-adds and elements",
    what: "the work of one simulation, L·M·N·K plus every tensor's elements",
    refused: "simulate: exit 2 before allocating; raise it with --max-work (API: maxWork)",
  },
});

/** The most levels of parentheses (grouping or call) an expression may nest. */
export const MAX_NESTING: number = LIMITS.nesting.value;

/** The most `+`, `-`, `*` and calls one kernel may hold: the epilogue is unrolled over every
 * accumulator of a thread, so its compile time grows with them (at 128: about 0.5 s on an idle
 * machine, 1-1.5 s on a loaded one; at 256 it was 2.3 s, and a tree of 1023 `max` calls, which
 * no `+ - *` limit saw, 3.7 s). */
export const MAX_OPERATORS: number = LIMITS.operators.value;

/** The longest identifier, in characters. */
export const MAX_IDENTIFIER: number = LIMITS.identifier.value;

/** The longest source text, in characters. */
export const MAX_SOURCE_LENGTH: number = LIMITS.sourceLength.value;

/** An identifier as the grammar reads it (a letter of any script or `_`, then letters, digits, `_`). */
const IDENT = /[\p{L}_][\p{L}0-9_]*/uy;
/** What makes an identifier a call: an opening parenthesis after it. */
const CALL = /\s*\(/y;
/** A number, so that an exponent's sign is not an operator and its `e` not a name. */
const NUMBER = /[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * Checks the source limits.
 *
 * @param text The source.
 * @param file The file name used in diagnostics.
 * @returns An `E0002` diagnostic at the first token over a limit, an `E0003`
 *   at the first identifier outside ASCII, an `E0001` at a carriage return
 *   without a line feed, or null.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { checkSourceLimits } from "./limits.ts";
 * equal(checkSourceLimits("kernel k { D[m, n] = ((x)) }", "k.gemm"), null);
 * equal(checkSourceLimits("(".repeat(65), "k.gemm")?.code, "E0002");
 * ```
 */
export function checkSourceLimits(text: string, file: string): Diagnostic | null {
  const src = { file, text };
  if (text.length > MAX_SOURCE_LENGTH) {
    return diagnostic(
      "E0002",
      `Source too long: ${text.length} characters exceed the limit of ${MAX_SOURCE_LENGTH}`,
      src,
      { start: MAX_SOURCE_LENGTH, end: MAX_SOURCE_LENGTH + 1 },
    );
  }
  // A carriage return ends a line only before a line feed (CRLF): alone (old
  // Mac line endings) it would leave every `//` comment running to the end of
  // the file, which then compiles to nothing.
  const cr = /\r(?!\n)/.exec(text);
  if (cr !== null) {
    return diagnostic(
      "E0001",
      "A carriage return without a line feed: lines end in LF or CRLF",
      src,
      { start: cr.index, end: cr.index + 1 },
    );
  }
  let depth = 0;
  let operators = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === "/" && text[i + 1] === "/") {
      const nl = text.indexOf("\n", i);
      i = nl === -1 ? text.length : nl;
      continue;
    }
    const ident = match(IDENT, text, i);
    const word = ident ?? match(NUMBER, text, i);
    if (word !== null) {
      const span = { start: i, end: i + word.length };
      if (word.length > MAX_IDENTIFIER) {
        return diagnostic(
          "E0002",
          `Identifier too long: ${word.length} characters exceed the limit of ${MAX_IDENTIFIER}`,
          src,
          { start: i, end: i + MAX_IDENTIFIER },
        );
      }
      // deno-lint-ignore no-control-regex
      if (/[^\x00-\x7f]/.test(word)) {
        return diagnostic(
          "E0003",
          `Identifier "${word}" is not ASCII: names become PTX identifiers ` +
            "(letters A-Z and a-z, digits and _)",
          src,
          span,
        );
      }
      if (word === "kernel") operators = 0;
      if (ident !== null && match(CALL, text, i + word.length) !== null) {
        if (++operators > MAX_OPERATORS) return tooLong(src, span);
      }
      i += word.length;
      continue;
    }
    if (ch === "(" && ++depth > MAX_NESTING) {
      return diagnostic(
        "E0002",
        `Expression nested too deeply: more than ${MAX_NESTING} levels of parentheses`,
        src,
        { start: i, end: i + 1 },
      );
    }
    if (ch === ")") depth = Math.max(0, depth - 1);
    if ((ch === "+" || ch === "-" || ch === "*") && ++operators > MAX_OPERATORS) {
      return tooLong(src, { start: i, end: i + 1 });
    }
    i++;
  }
  return null;
}

/** The E0002 of the operator (or call) past {@link MAX_OPERATORS}. */
function tooLong(src: { file: string; text: string }, span: Span): Diagnostic {
  return diagnostic(
    "E0002",
    `Expression too long: more than ${MAX_OPERATORS} operators (+, -, *) and calls in one kernel`,
    src,
    span,
  );
}

/** The match of a sticky pattern at `at`, or null. */
function match(re: RegExp, text: string, at: number): string | null {
  re.lastIndex = at;
  return re.exec(text)?.[0] ?? null;
}
