/**
 * `gemm check FILE...`: parses and checks each file through the whole
 * pipeline and prints every diagnostic.
 *
 * @module
 */

import { compile, formatDiagnostics } from "../compiler.ts";
import { targetList } from "../ir/target.ts";
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

function run(values: OptionValues<typeof OPTIONS>, positionals: string[], io: CliIO): number {
  if (positionals.length === 0) throw new UsageError("check: no input file");
  const target = targetOf(values.target);
  let bad = false;
  for (const file of positionals) {
    const text = readSource(io, file);
    // The whole pipeline, so that schedule diagnostics (E02xx, raised by the passes) are
    // reported too; nothing is printed but diagnostics.
    const r = compile(
      text,
      compileOptions(file, { target, kernel: undefined, sizeHints: undefined, sms: undefined }),
    );
    if (r.diagnostics.length > 0) {
      bad = true;
      io.err(formatDiagnostics(r.diagnostics, text));
    }
  }
  return bad ? 1 : 0;
}

/** The `check` command. */
export const CHECK: Command = command({
  name: "check",
  args: "FILE...",
  summary: "Check DSL files and print diagnostics",
  usage: `check FILE... [--target ${targetList("|")}]`,
  about: `Parses and checks each file, and runs the passes so that schedules that cannot be
honoured are reported too; prints every diagnostic as
FILE:LINE:COL: error[CODE]: message, with the source line and a caret.
Exits 0 when every file is clean, 1 otherwise.
`,
  options: OPTIONS,
  notes: "",
  run,
});
