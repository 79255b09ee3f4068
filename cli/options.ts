/**
 * The CLI's option tables: one row per option (name, short flag, type,
 * default, value name, help text). The same table builds `node:util`
 * `parseArgs`'s configuration ({@link parseConfig}) and prints the help
 * ({@link optionsHelp}, {@link commandHelp}), so the two cannot drift apart.
 * Also the command type, the usage error and the I/O the commands write to.
 *
 * @module
 */

import { parseArgs } from "node:util";

/** Where the CLI writes; replaced in tests. */
export interface CliIO {
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
  readonly readFile: (path: string) => string;
  readonly writeFile: (path: string, data: string | Uint8Array) => void;
}

/** Bad usage: printed as one line `gemm: MESSAGE`, exit code 2. */
export class UsageError extends Error {}

/** One option of a command. */
export interface OptionSpec {
  /** The long name, without `--`. */
  readonly name: string;
  /** The one-letter short flag, without `-`. */
  readonly short?: string;
  readonly type: "string" | "boolean";
  /** The value when the option is not given (string options only). */
  readonly default?: string;
  /** The value's name in the help (`--size SIZES`); string options only. */
  readonly value?: string;
  /**
   * The help text; `\n` starts a continuation line and `{default}` stands
   * for {@link OptionSpec.default}.
   */
  readonly help: string;
}

/**
 * The parsed values of an option table: booleans may be undefined, strings
 * with a default are always set.
 */
export type OptionValues<T extends readonly OptionSpec[]> = {
  [S in T[number] as S["name"]]: S["type"] extends "boolean" ? boolean | undefined
    : S extends { readonly default: string } ? string
    : string | undefined;
};

/** `-h, --help`, the last row of every command's table. */
export const HELP_OPTION = {
  name: "help",
  short: "h",
  type: "boolean",
  help: "This help",
} as const satisfies OptionSpec;

/** The `parseArgs` option configuration of a table. */
export type ParseConfig = Record<
  string,
  { type: "string" | "boolean"; short?: string; default?: string }
>;

/**
 * Builds `node:util` `parseArgs`'s `options` from a table.
 *
 * @param specs The table.
 * @returns The configuration.
 */
export function parseConfig(specs: readonly OptionSpec[]): ParseConfig {
  const out: ParseConfig = {};
  for (const s of specs) {
    out[s.name] = {
      type: s.type,
      ...(s.short !== undefined ? { short: s.short } : {}),
      ...(s.default !== undefined ? { default: s.default } : {}),
    };
  }
  return out;
}

/**
 * Parses a command's arguments with its table (positionals allowed).
 * Unknown options and missing values throw `parseArgs`'s own `TypeError`s.
 *
 * @param args The arguments after the command.
 * @param specs The command's table.
 * @returns The values by option name, and the positionals.
 */
export function parseOptions<const T extends readonly OptionSpec[]>(
  args: readonly string[],
  specs: T,
): { values: OptionValues<T>; positionals: string[] } {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: parseConfig(specs),
  });
  return { values: values as OptionValues<T>, positionals };
}

/** The column where an option's help text starts (after two spaces of indent). */
const FLAG_WIDTH = 21;

/**
 * The help lines of a table: the flags (`-o, --output OUT`) in a column,
 * then the help text, continuation lines under it.
 *
 * @param specs The table.
 * @returns The lines, each ending in a newline.
 */
export function optionsHelp(specs: readonly OptionSpec[]): string {
  const pad = " ".repeat(2 + FLAG_WIDTH);
  return specs.map((s) => {
    const flag = `${s.short !== undefined ? `-${s.short}, ` : ""}--${s.name}${
      s.value !== undefined ? ` ${s.value}` : ""
    }`;
    const [first, ...more] = s.help.replaceAll("{default}", s.default ?? "").split("\n");
    // A flag wider than the column keeps two spaces before its text.
    const head = `  ${flag.padEnd(FLAG_WIDTH - 1)}${
      flag.length < FLAG_WIDTH - 1 ? " " : "  "
    }${first}`;
    return [head, ...more.map((l) => pad + l)].join("\n") + "\n";
  }).join("");
}

/** One `gemm` command: its help and what it runs. */
export interface Command {
  readonly name: string;
  /** The arguments in the overview (`FILE...`). */
  readonly args: string;
  /** One line for the overview of `gemm --help`. */
  readonly summary: string;
  /** What follows `Usage: gemm ` in the command's help. */
  readonly usage: string;
  /** The paragraphs between the usage line and the options ("" for none). */
  readonly about: string;
  readonly options: readonly OptionSpec[];
  /** The paragraph after the options (exit codes; "" for none). */
  readonly notes: string;
  /**
   * Runs the command.
   *
   * @param args The arguments after the command's name.
   * @param io Where to read and write.
   * @returns The exit code.
   */
  readonly run: (args: readonly string[], io: CliIO) => number | Promise<number>;
}

/** A command as written: its run takes the parsed options of its own table. */
export interface CommandDef<T extends readonly OptionSpec[]>
  extends Omit<Command, "options" | "run"> {
  readonly options: T;
  /**
   * Runs the command (not called for `--help`).
   *
   * @param values The parsed options.
   * @param positionals The positional arguments.
   * @param io Where to read and write.
   * @returns The exit code.
   */
  readonly run: (
    values: OptionValues<T>,
    positionals: string[],
    io: CliIO,
  ) => number | Promise<number>;
}

/**
 * A command from its definition: its run parses the arguments with the
 * command's table and answers `--help` with {@link commandHelp}, so that no
 * command does either itself.
 *
 * @param def The command's help, table, and run over parsed options.
 * @returns The command.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { command, HELP_OPTION } from "./options.ts";
 * const out: string[] = [];
 * const hello = command({
 *   name: "hello", args: "", summary: "Greets", usage: "hello", about: "", notes: "",
 *   options: [HELP_OPTION] as const,
 *   run: () => 0,
 * });
 * const io = { out: (s: string) => out.push(s), err: () => {}, readFile: () => "", writeFile: () => {} };
 * await hello.run(["--help"], io);
 * ok(out[0]!.startsWith("Usage: gemm hello"));
 * ```
 */
export function command<const T extends readonly OptionSpec[]>(def: CommandDef<T>): Command {
  const c: Command = {
    ...def,
    run: (args, io) => {
      const { values, positionals } = parseOptions(args, def.options);
      if ((values as { help?: boolean }).help) {
        io.out(commandHelp(c));
        return 0;
      }
      return def.run(values, positionals, io);
    },
  };
  return c;
}

/**
 * A command's `--help` text: the usage line, the about paragraphs, the
 * option table and the notes.
 *
 * @param c The command.
 * @returns The text.
 */
export function commandHelp(c: Command): string {
  return [
    `Usage: gemm ${c.usage}\n`,
    ...(c.about !== "" ? [c.about] : []),
    `Options:\n${optionsHelp(c.options)}`,
    ...(c.notes !== "" ? [c.notes] : []),
  ].join("\n");
}

/**
 * Words as an English alternative: `a, b or c`.
 *
 * @param words The words.
 * @returns The list.
 */
export function oneOf(words: readonly string[]): string {
  return words.length <= 1 ? words.join("") : `${words.slice(0, -1).join(", ")} or ${words.at(-1)}`;
}
