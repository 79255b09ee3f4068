/**
 * The source limits, checked by one linear scan before the parser runs: the
 * parser and the checker recurse once per level of nesting and once per
 * operator of a left-leaning sum, so an expression past these limits would
 * exhaust the stack instead of producing a diagnostic; an identifier past
 * its limit would make every later pass slow; and a name outside ASCII
 * cannot become a PTX identifier.
 *
 * @module
 */

import { type Diagnostic, diagnostic } from "./diagnostics.ts";

/** The most levels of parentheses (grouping or call) an expression may nest. */
export const MAX_NESTING = 64;

/** The most `+`, `-` and `*` one kernel may hold (its statement's terms and signs). */
export const MAX_OPERATORS = 256;

/** The longest identifier, in characters. */
export const MAX_IDENTIFIER = 255;

/** An identifier as the grammar reads it (a letter of any script or `_`, then letters, digits, `_`). */
const IDENT = /[\p{L}_][\p{L}0-9_]*/uy;
/** A number, so that an exponent's sign is not an operator and its `e` not a name. */
const NUMBER = /[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * Checks the source limits.
 *
 * @param text The source.
 * @param file The file name used in diagnostics.
 * @returns An `E0002` diagnostic at the first token over a limit, an `E0003`
 *   at the first identifier outside ASCII, or null.
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
    const word = match(IDENT, text, i) ?? match(NUMBER, text, i);
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
      return diagnostic(
        "E0002",
        `Expression too long: more than ${MAX_OPERATORS} operators (+, -, *) in one kernel`,
        src,
        { start: i, end: i + 1 },
      );
    }
    i++;
  }
  return null;
}

/** The match of a sticky pattern at `at`, or null. */
function match(re: RegExp, text: string, at: number): string | null {
  re.lastIndex = at;
  return re.exec(text)?.[0] ?? null;
}
