/**
 * The `gemm` command line's dispatch: the command table, the overview help
 * (generated from it) and the exit codes: 0 success, 1 diagnostics in the
 * input, 2 bad usage, 3 an internal error (a compiler bug; never a stack
 * trace for bad input).
 *
 * @module
 */

import { TARGET_NAMES, targetInfo } from "../ir/target.ts";
import { CHECK } from "./check.ts";
import { COMPILE } from "./compile.ts";
import { SIMULATE } from "./simulate.ts";
import { RUN } from "./run.ts";
import { type CliIO, type Command, oneOf, UsageError } from "./options.ts";

/** Every command, in the order the overview lists them. */
export const COMMANDS: readonly Command[] = [CHECK, COMPILE, SIMULATE, RUN];

/** The column where a command's summary starts in the overview. */
const COMMAND_WIDTH = 20;

/**
 * The overview printed by `gemm --help` (and, with exit code 2, by `gemm`).
 *
 * @returns The text.
 */
export function mainHelp(): string {
  const targets = TARGET_NAMES.map((t) => targetInfo(t).ptx).join(", ");
  const rows = COMMANDS.map((c) =>
    `  ${`${c.name} ${c.args}`.padEnd(COMMAND_WIDTH - 1)} ${c.summary}\n`
  ).join("");
  return `gemm: a GEMM compiler for NVIDIA Ampere (${targets})

Usage: gemm <command> [options]

Commands:
${rows}
Run "gemm <command> --help" for a command's options.
Exit codes: 0 success, 1 errors in the input, 2 bad usage, 3 internal error.
`;
}

/**
 * Runs the CLI.
 *
 * @param args The arguments after the program name.
 * @param io Where to read and write.
 * @returns The exit code.
 */
export async function main(args: readonly string[], io: CliIO): Promise<number> {
  const [cmd, ...rest] = args;
  try {
    if (cmd === undefined || cmd === "-h" || cmd === "--help" || cmd === "help") {
      io.out(mainHelp());
      return cmd === undefined ? 2 : 0;
    }
    const c = COMMANDS.find((x) => x.name === cmd);
    if (c === undefined) {
      throw new UsageError(
        `Unknown command "${cmd}": expected ${oneOf(COMMANDS.map((x) => x.name))}`,
      );
    }
    return await c.run(rest, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`gemm: ${e.message}\n`);
      return 2;
    }
    if (e instanceof TypeError && "code" in e && String(e.code).startsWith("ERR_PARSE_ARGS")) {
      io.err(`gemm: ${e.message}\n`);
      return 2;
    }
    io.err(`gemm: internal error: ${(e as Error).message}\n`);
    return 3;
  }
}
