/**
 * The pass manager: a pass has a kebab-case name, a one-line summary, and is
 * a pure function from IR to IR. The verifier of the output IR runs after
 * every pass; a dump hook sees the IR after each.
 *
 * @module
 */

import {
  type Diagnostic,
  diagnostic,
  type DiagnosticCode,
  DiagnosticError,
} from "../dsl/diagnostics.ts";
import type { GemmKernel, ScheduleKey, Span } from "../ir/gemm.ts";

/** A pass over the GEMM IR. */
export interface GemmPass {
  /** Kebab-case name, as `--dump-after` takes it. */
  readonly name: string;
  /** The pass's title in dumps. */
  readonly title: string;
  /** One line: what it decides. */
  readonly summary: string;
  /** The transformation; throws {@link DiagnosticError} for bad schedules. */
  readonly run: (k: GemmKernel) => GemmKernel;
}

/**
 * The header line of a dump, MLIR style.
 *
 * @param title The pass title.
 * @param name The pass name.
 * @returns `// -----// IR Dump After Title (name) //----- //`.
 */
export function dumpHeader(title: string, name: string): string {
  return `// -----// IR Dump After ${title} (${name}) //----- //`;
}

/**
 * Raises a schedule diagnostic pointing at the schedule line of `key` when
 * the user gave one, else at the kernel name.
 *
 * @param k The kernel.
 * @param key The schedule key concerned.
 * @param code The diagnostic code.
 * @param message The message.
 * @returns Never; throws {@link DiagnosticError}.
 */
export function scheduleError(
  k: GemmKernel,
  key: ScheduleKey | readonly ScheduleKey[],
  code: DiagnosticCode,
  message: string,
): never {
  const keys = typeof key === "string" ? [key] : key;
  let span: Span | undefined;
  for (const kk of keys) {
    span = k.scheduleSpans[kk];
    if (span !== undefined) break;
  }
  // Otherwise the kernel's name: `kernel NAME`.
  const d: Diagnostic = diagnostic(code, message, k.source, span ?? k.nameSpan);
  throw new DiagnosticError([d]);
}
