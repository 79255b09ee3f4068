/**
 * What `simulate` and `run` share before they launch: the positional file,
 * the sizes, seed, scalars and target options, and the compile (again for
 * another SM count when `run --tune` learns the device's).
 *
 * @module
 */

import { compile } from "../compiler.ts";
import { compileOptions, parseScalars, parseSms, readSource, sizesOf, targetOf } from "./common.ts";
import { type CliIO, UsageError } from "./options.ts";

/** What `simulate` and `run` share: the file, sizes, seed, scalars, and the compiled kernels. */
export interface Prepared {
  readonly file: string;
  readonly text: string;
  readonly sizes: Record<string, number>;
  readonly seed: number;
  readonly scalars: Record<string, number>;
  readonly result: ReturnType<typeof compile>;
  /** The same compile for another SM count (`run --tune` without `--sms`: the device's). */
  readonly recompile: (sms: number) => ReturnType<typeof compile>;
}

/** The options {@link prepare} reads. */
export interface LaunchValues {
  readonly size?: string | undefined;
  readonly seed?: string | undefined;
  readonly scalar?: string | undefined;
  readonly target?: string | undefined;
  readonly kernel?: string | undefined;
  readonly tune?: boolean | undefined;
  readonly sms?: string | undefined;
}

/**
 * Reads the positional file and the options common to `simulate` and `run`, and compiles.
 *
 * @param cmd The command, for its messages.
 * @param positionals The positional arguments.
 * @param values The parsed options.
 * @param io Where to read.
 * @returns The prepared launch.
 */
export function prepare(
  cmd: "simulate" | "run",
  positionals: readonly string[],
  values: LaunchValues,
  io: CliIO,
): Prepared {
  const [file, ...extra] = positionals;
  if (file === undefined) throw new UsageError(`${cmd}: no input file`);
  if (extra.length > 0) throw new UsageError(`${cmd}: one file at a time`);
  if (values.size === undefined) throw new UsageError(`${cmd}: --size is required`);
  const sizes = sizesOf(values.size);
  const seed = Number(values.seed ?? "1");
  if (!Number.isInteger(seed)) throw new UsageError(`Malformed --seed "${values.seed}"`);
  const scalars = parseScalars(values.scalar);
  const target = targetOf(values.target);
  const sms = parseSms(values.sms);
  const text = readSource(io, file);
  const build = (sms: number | undefined) =>
    compile(
      text,
      compileOptions(file, {
        target,
        kernel: values.kernel,
        sizeHints: values.tune ? sizes : undefined,
        sms,
      }),
    );
  return { file, text, sizes, seed, scalars, result: build(sms), recompile: build };
}
