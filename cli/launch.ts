/**
 * What `simulate` and `run` share before they launch: the positional file,
 * the sizes, seed, scalars and target options, and the compile (again for
 * another SM count when `run --tune` learns the device's).
 *
 * @module
 */

import type { CompiledKernel, CompileResult } from "../compiler.ts";
import {
  compiledKernels,
  compileForCli,
  compileOptions,
  groupsOf,
  parseScalars,
  parseSms,
  readSource,
  sizesOf,
  targetOf,
} from "./common.ts";
import { checkScalarNames, checkSizeNames, requireSizes } from "./sizes.ts";
import { type CliIO, UsageError } from "./options.ts";

/** What `simulate` and `run` share: the file, sizes, seed, scalars, and the compiled kernels. */
export interface Prepared {
  readonly cmd: "simulate" | "run";
  readonly file: string;
  readonly text: string;
  /** The `--size` values ({} without `--size`). */
  readonly sizes: Record<string, number>;
  /** Whether `--size` was given. */
  readonly sizesGiven: boolean;
  /** The `--groups` problems (null without `--groups`): for grouped kernels. */
  readonly groups: Record<string, number>[] | null;
  readonly seed: number;
  readonly scalars: Record<string, number>;
  readonly result: CompileResult;
  /** The same compile for another SM count (`run --tune` without `--sms`: the device's). */
  readonly recompile: (sms: number) => CompileResult;
}

/** The options {@link prepare} reads. */
export interface LaunchValues {
  readonly size?: string | undefined;
  readonly groups?: string | undefined;
  readonly seed?: string | undefined;
  readonly scalar?: string | undefined;
  readonly target?: string | undefined;
  readonly kernel?: string | undefined;
  readonly tune?: boolean | undefined;
  readonly sms?: string | undefined;
  readonly pdl?: boolean | undefined;
  readonly "pdl-early"?: string | undefined;
  readonly "pdl-trigger"?: string | undefined;
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
  // No --size: right for kernels whose sizes are all fixed in the source; {@link launchKernels}
  // refuses it for the others, once they are compiled.
  const sizes = values.size === undefined ? {} : sizesOf(values.size);
  const seed = Number(values.seed ?? "1");
  if (!Number.isInteger(seed)) throw new UsageError(`Malformed --seed "${values.seed}"`);
  const scalars = parseScalars(values.scalar);
  const target = targetOf(values.target);
  const sms = parseSms(values.sms);
  const text = readSource(io, file);
  const build = (sms: number | undefined) =>
    compileForCli(
      text,
      compileOptions(file, {
        target,
        kernel: values.kernel,
        sizeHints: values.tune ? sizes : undefined,
        sms,
        pdl: values.pdl,
        pdlEarly: values["pdl-early"],
        pdlTrigger: values["pdl-trigger"],
      }),
    );
  return {
    cmd,
    file,
    text,
    sizes,
    sizesGiven: values.size !== undefined,
    groups: values.groups === undefined ? null : groupsOf(values.groups),
    seed,
    scalars,
    result: build(sms),
    recompile: build,
  };
}

/**
 * The compiled kernels of a prepared launch, or null after printing the
 * diagnostics (exit code 1); checks `--size` and `--scalar` against them
 * (cli/sizes.ts): names no kernel knows, dimensions fixed in the source, and
 * no `--size` for a kernel with runtime dimensions are usage errors.
 *
 * @param p The prepared launch.
 * @param kernel The `--kernel` option, if given.
 * @param io Where to print the diagnostics.
 * @returns The kernels, or null.
 */
export function launchKernels(
  p: Prepared,
  kernel: string | undefined,
  io: CliIO,
): readonly CompiledKernel[] | null {
  const kernels = compiledKernels(p.result, p.file, p.text, kernel, io);
  if (kernels === null) return null;
  // Grouped kernels take --groups, the others --size (DESIGN §6.2).
  const grouped = kernels.filter((k) => k.gemm.grouped).map((k) => k.gemm);
  const gemms = kernels.filter((k) => !k.gemm.grouped).map((k) => k.gemm);
  if (grouped.length > 0) {
    if (p.groups === null) {
      throw new UsageError(
        `${p.cmd}: --groups is required: kernel "${grouped[0]!.name}" is grouped ` +
          '(problems such as "M=128,N=64,K=32;M=0,N=64,K=32")',
      );
    }
    for (const g of p.groups) checkSizeNames(grouped, g, "--groups");
  } else if (p.groups !== null) {
    throw new UsageError(`${p.cmd}: --groups is for grouped kernels; give --size`);
  }
  if (p.sizesGiven) checkSizeNames(gemms, p.sizes);
  else requireSizes(p.cmd, gemms);
  checkScalarNames(gemms, p.scalars);
  return kernels;
}
