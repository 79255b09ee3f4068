/**
 * The checker: from the AST to checked GEMM IR kernels ({@link GemmKernel}),
 * or positioned diagnostics. It finds the contraction and the roles M, N, K
 * and batch from the structure of the statement, whatever the index names;
 * normalises operand layouts; decides the MMA type combination and the
 * accumulator; types the epilogue; reads the schedule block.
 *
 * Each kernel stops at its first error (so that one mistake gives one
 * diagnostic, never a cascade); other kernels of the file are still checked.
 *
 * The phases live in dsl/check/: `scope.ts` (the state one kernel's phases
 * share, and the diagnostic helper), `declarations.ts`, `schedule.ts`,
 * `walk.ts` (resolving and walking the right-hand side), `contraction.ts`
 * (the output, the contraction, the roles, the views), `math.ts`,
 * `epilogue.ts`, and `kernel.ts`, which runs them in order.
 *
 * @module
 */

import type { KernelAst, ProgramAst } from "./ast.ts";
import { type Diagnostic, diagnostic, DiagnosticError, lineColumn } from "./diagnostics.ts";
import type { GemmKernel, Target } from "../ir/gemm.ts";
import type { Src } from "./check/scope.ts";
import { checkKernel } from "./check/kernel.ts";

export { SCHEDULE_KEYS } from "./check/schedule.ts";

/** Options of the checker. */
export interface CheckOptions {
  /** Overrides the schedule's `target` line. */
  readonly target?: Target;
}

/** Checked kernels, and the diagnostics of the kernels that failed. */
export interface CheckResult {
  /** The kernels that checked, in source order. */
  readonly kernels: readonly GemmKernel[];
  /** The diagnostics of the kernels that did not. */
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * Checks a parsed program.
 *
 * @param ast The program's AST.
 * @param source The file name and text the spans point into.
 * @param options Checker options.
 * @returns The kernels that checked, and the diagnostics of those that did not.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { parseProgram } from "./parse.ts";
 * import { checkProgram } from "./check.ts";
 * const text = "kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n" +
 *   " D[m, n] = A[m, k] * B[k, n] }";
 * const r = parseProgram(text, "k.gemm");
 * if (r.ok) equal(checkProgram(r.ast, { file: "k.gemm", text }).kernels.length, 1);
 * ```
 */
export function checkProgram(
  ast: ProgramAst,
  source: Src,
  options: CheckOptions = {},
): CheckResult {
  const kernels: GemmKernel[] = [];
  const diagnostics: Diagnostic[] = [];
  const seen = new Map<string, KernelAst>();
  for (const k of ast.kernels) {
    const prev = seen.get(k.name.text);
    if (prev !== undefined) {
      const { line } = lineColumn(source.text, prev.name.span.start);
      diagnostics.push(
        diagnostic(
          "E0121",
          `Duplicate kernel name "${k.name.text}": first defined at line ${line}`,
          source,
          k.name.span,
        ),
      );
      continue;
    }
    seen.set(k.name.text, k);
    try {
      kernels.push(checkKernel(k, source, options.target));
    } catch (e) {
      if (e instanceof DiagnosticError) diagnostics.push(...e.diagnostics);
      else throw e;
    }
  }
  return { kernels, diagnostics };
}
