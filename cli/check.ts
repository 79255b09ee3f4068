/**
 * `gemm check FILE...`: parses and checks each file through the whole
 * pipeline and prints every diagnostic.
 *
 * @module
 */

import { compile, formatDiagnostics } from "../compiler.ts";
import { type Target, targetChoices } from "../ir/target.ts";
import { compileOptions, readSource, TARGET_OPTION, targetOf } from "./common.ts";
import {
  type CliIO,
  type Command,
  command,
  HELP_OPTION,
  type OptionValues,
  UsageError,
} from "./options.ts";

const OPTIONS = [TARGET_OPTION, HELP_OPTION] as const;

/** Checks one file: 0 clean, 1 diagnostics, 2 unreadable or no kernel (said on stderr). */
function checkFile(file: string, target: Target | undefined, io: CliIO): number {
  let text: string;
  try {
    text = readSource(io, file);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(`gemm: ${e.message}\n`);
    return 2;
  }
  // The whole pipeline, so that schedule diagnostics (E02xx, raised by the passes) are
  // reported too; nothing is printed but diagnostics.
  const r = compile(
    text,
    compileOptions(file, { target, kernel: undefined, sizeHints: undefined, sms: undefined }),
  );
  const diagnostics = r.diagnostics;
  if (diagnostics.length > 0) {
    io.err(formatDiagnostics(diagnostics, text));
    return 1;
  }
  if (r.kernels.length + r.diagnostics.length === 0) {
    io.err(`gemm: No kernel in "${file}"\n`);
    return 2;
  }
  return 0;
}

function run(values: OptionValues<typeof OPTIONS>, positionals: string[], io: CliIO): number {
  if (positionals.length === 0) throw new UsageError("check: no input file");
  const target = targetOf(values.target);
  // Every file, even after one that cannot be read; the worst outcome is the exit code.
  return Math.max(0, ...positionals.map((file) => checkFile(file, target, io)));
}

/** The `check` command. */
export const CHECK: Command = command({
  name: "check",
  args: "FILE...",
  summary: "Check DSL files and print diagnostics",
  usage: `check FILE... [--target ${targetChoices()}]`,
  about: `Parses and checks each file, and runs the passes so that schedules that cannot be
honoured are reported too; prints every diagnostic as
FILE:LINE:COL: error[CODE]: message, with the source line and a caret.
Every file is checked, even after one that cannot be read. Exits 0 when every
file is clean, 1 when one has errors, 2 when one cannot be read or holds no
kernel.
`,
  options: OPTIONS,
  notes: "",
  run,
});
