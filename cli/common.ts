/**
 * What several commands share: the option rows they have in common (their
 * help text where it differs per command is a parameter), reading the
 * source, parsing `--target`, `--size`, `--sms`, `--scalar` and counts, the
 * compile options they give, the compile's diagnostics, and the hazard lines
 * of a report.
 *
 * @module
 */

import {
  compile,
  type CompiledKernel,
  type CompileOptions,
  type CompileResult,
  formatDiagnostics,
} from "../compiler.ts";
import { parseTarget, type Target, targetChoices, targetList } from "../ir/target.ts";
import { parseGroups, parseSizes } from "../harness/sizes.ts";
import type { Hazard } from "../backends/sim/mod.ts";
import { type CliIO, type OptionSpec, UsageError } from "./options.ts";
import { LIMITS } from "../dsl/limits.ts";
import { earlyDecisions } from "../passes/lower/early.ts";

/** `--target`, its values from the target table. */
export const TARGET_OPTION = {
  name: "target",
  type: "string",
  value: targetChoices(),
  help: "Override the schedule's target",
} as const satisfies OptionSpec;

/**
 * `--pdl` of `compile` and `simulate`: the compile option `pdl` (programmatic dependent
 * launch's instructions on sm90). `run` has its own, which also launches that way.
 */
export const PDL_COMPILE_OPTION = {
  name: "pdl",
  type: "boolean",
  help: "Compile with programmatic dependent launch (sm90: griddepcontrol.wait before\n" +
    "the first global access, B's first k-tiles asked of the L2 before it,\n" +
    "griddepcontrol.launch_dependents after the main loop; other targets: nothing)",
} as const satisfies OptionSpec;

/**
 * `--pdl-early` of `compile`, `simulate` and `run`: the compile option `pdlEarly` (tensors the
 * previous grid does not write, read before the wait).
 */
export const PDL_EARLY_OPTION = {
  name: "pdl-early",
  type: "string",
  value: "NAMES",
  help: "With --pdl: these input tensors (comma-separated, e.g. an LLM's weights) are not\n" +
    "written by the grid a launch depends on, so their loads may start before\n" +
    "griddepcontrol.wait (sm90 TMA kernels fill their first stages with those whose\n" +
    "box is at least a quarter of a stage; cp.async kernels copy them first unless\n" +
    "their copies stream with evict_first; a note names each one declined and why).\n" +
    "A promise: a tensor the previous grid writes would be read stale",
} as const satisfies OptionSpec;

/**
 * `--pdl-trigger` of `compile`, `simulate` and `run`: the compile option `pdlTrigger` (where the
 * mma.sync main loop lets the next grid start).
 */
export const PDL_TRIGGER_OPTION = {
  name: "pdl-trigger",
  type: "string",
  value: "WHERE",
  help: "With --pdl: where the mma.sync main loop lets the next grid start: drain (the\n" +
    "default: after its drain) or last-copy (right after its last copy; an experiment,\n" +
    "bench/NOTES.md 93: it lost 0.1-0.4 µs on an H100, NOTES 94)",
} as const satisfies OptionSpec;

/** `--size`, for `simulate` and `run`. */
export const SIZE_OPTION = {
  name: "size",
  type: "string",
  value: "SIZES",
  help: "Runtime sizes: dimension names, or M, N, K, L for the roles\n" +
    "(not needed when the source fixes every size)",
} as const satisfies OptionSpec;

/** `--groups`, for `simulate` and `run` of a grouped kernel (DESIGN §6.2). */
export const GROUPS_OPTION = {
  name: "groups",
  type: "string",
  value: "LIST",
  help: 'A grouped kernel\'s problems: sizes as in --size, problems separated by ";"\n' +
    "(a size may be 0: that problem does nothing)",
} as const satisfies OptionSpec;

/** `--seed`, for `simulate` and `run`. */
export const SEED_OPTION = {
  name: "seed",
  type: "string",
  default: "1",
  value: "N",
  help: "Seed of the random inputs (default {default})",
} as const satisfies OptionSpec;

/** `--scalar`, for `simulate` and `run`. */
export const SCALAR_OPTION = {
  name: "scalar",
  type: "string",
  value: "VALUES",
  help: "Scalar values, e.g. alpha=1.5,beta=0.5 (default: random)",
} as const satisfies OptionSpec;

/** `--json`, for `simulate` and `run`. */
export const JSON_OPTION = {
  name: "json",
  type: "boolean",
  help: "Print the reports as JSON",
} as const satisfies OptionSpec;

/** The `--tune` help of `simulate` and `run`. */
export const TUNE_HELP = "Choose the default schedule for these sizes (as compile-time sizes\n" +
  "would: smaller tiles for small or skinny problems)";

/**
 * `--kernel NAME` with a command's help text.
 *
 * @param help The help text.
 * @returns The row.
 */
export function kernelOption<H extends string>(help: H) {
  return { name: "kernel", type: "string", value: "NAME", help } as const satisfies OptionSpec;
}

/**
 * `--tune` with a command's help text.
 *
 * @param help The help text.
 * @returns The row.
 */
export function tuneOption<H extends string>(help: H) {
  return { name: "tune", type: "boolean", help } as const satisfies OptionSpec;
}

/**
 * `--sms N`; its default is stated by the command (an A100's, the device's).
 *
 * @param byDefault What the help says the default is.
 * @returns The row.
 */
export function smsOption(byDefault: string) {
  return {
    name: "sms",
    type: "string",
    value: "N",
    help: "With --tune: the GPU's SM count, which the tile choice weighs\n" +
      `waves of blocks against (${byDefault})`,
  } as const satisfies OptionSpec;
}

/**
 * `--no-hazards` with a command's help text.
 *
 * @param help The help text.
 * @returns The row.
 */
export function noHazardsOption<H extends string>(help: H) {
  return { name: "no-hazards", type: "boolean", help } as const satisfies OptionSpec;
}

/**
 * The `--target` option's value (`sm80`, or its PTX spelling `sm_80`).
 *
 * @param v The option's text, if given.
 * @returns The target, or undefined when not given.
 */
export function targetOf(v: string | undefined): Target | undefined {
  if (v === undefined) return undefined;
  const t = parseTarget(v);
  if (t === null) throw new UsageError(`Unknown target "${v}": expected ${targetList()}`);
  return t;
}

/**
 * Reads a source file; a missing or unreadable file is a usage error.
 *
 * @param io Where to read.
 * @param file The path.
 * @returns The text.
 */
export function readSource(io: CliIO, file: string): string {
  try {
    return io.readFile(file);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message;
    throw new UsageError(`Cannot read "${file}": ${why}`);
  }
}

/**
 * Writes an output file; a failure (a missing directory, a directory, a
 * full device) is a usage error naming the file and the reason.
 *
 * @param io Where to write.
 * @param file The path.
 * @param text The contents: text, or bytes.
 */
export function writeOutput(io: CliIO, file: string, text: string | Uint8Array): void {
  try {
    io.writeFile(file, text);
  } catch (e) {
    // Deno's message: "No such file or directory (os error 2): writefile '...'".
    const msg = (e as Error).message.replace(/ \(os error \d+\)/, "").split(":")[0]!;
    const why = e instanceof Deno.errors.NotFound
      ? "no such directory"
      : msg.charAt(0).toLowerCase() + msg.slice(1);
    throw new UsageError(`Cannot write "${file}": ${why}`);
  }
}

/**
 * The `--sms` option: a positive integer, or undefined when not given.
 *
 * @param text The option's text, if given.
 * @returns The SM count.
 */
export function parseSms(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const sms = Number(text);
  if (!(Number.isInteger(sms) && sms > 0 && sms <= LIMITS.runtimeSize.value)) {
    throw new UsageError(
      `Malformed --sms "${text}": a positive integer, at most ${LIMITS.runtimeSize.value}`,
    );
  }
  return sms;
}

/**
 * A count option (`--iters`, `--warmup`, `--input-sets`).
 *
 * @param name The option's name.
 * @param v Its text.
 * @returns The count.
 */
export function nonNegative(name: string, v: string): number {
  const n = Number(v);
  if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(n)) {
    throw new UsageError(`Malformed --${name} "${v}": expected a non-negative integer`);
  }
  return n;
}

/**
 * The `--scalar` option: `NAME=NUMBER,...`.
 *
 * @param text The option's text, if given.
 * @returns The values by name (empty when not given).
 */
export function parseScalars(text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (text === undefined) return out;
  for (const part of text.split(",")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(-?[0-9.eE+-]+)\s*$/.exec(part);
    if (m === null || !Number.isFinite(Number(m[2]))) {
      throw new UsageError(`Malformed --scalar "${part}": expected NAME=NUMBER`);
    }
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

/**
 * The hazard lines of a simulator report (none when there is none).
 *
 * @param count The number of hazards.
 * @param hazards The hazards kept.
 * @returns The lines.
 */
export function hazardLines(count: number, hazards: readonly Hazard[]): string[] {
  if (count === 0) return [];
  return [
    `  hazards: ${count}`,
    ...hazards.map((h) => `    ${h.kind}: ${h.message} at line ${h.line}: ${h.op}`),
  ];
}

/**
 * Sizes for a report: `M=64, N=48`, or what stands for none.
 *
 * @param sizes The sizes by name.
 * @returns The text.
 */
export function sizesText(sizes: Readonly<Record<string, number>>): string {
  const parts = Object.entries(sizes).map(([k, v]) => `${k}=${v}`);
  return parts.length === 0 ? "every size fixed in the source" : parts.join(", ");
}

/**
 * The `--groups` option: problems `M=..,N=..,K=..` separated by `;`; sizes may be 0
 * (an empty problem of a grouped launch does nothing).
 *
 * @param text The option's text.
 * @returns Each problem's sizes.
 */
export function groupsOf(text: string): Record<string, number>[] {
  try {
    return parseGroups(text, parseSizes);
  } catch (e) {
    throw new UsageError(`--groups: ${(e as Error).message}`);
  }
}

/**
 * The `--size` option: `M=..,N=..,K=..`; a malformed one, or a zero, is a usage error.
 *
 * @param text The option's text.
 * @returns The sizes by name.
 */
export function sizesOf(text: string): Record<string, number> {
  let sizes: Record<string, number>;
  try {
    sizes = parseSizes(text);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // An empty problem launches no block: nothing to compile a grid for, simulate or run.
  const zero = Object.entries(sizes).find(([, v]) => v === 0);
  if (zero !== undefined) {
    throw new UsageError(`--size ${zero[0]}=0: every size must be at least 1`);
  }
  return sizes;
}

/**
 * {@link compile}, whose refusal of an option's value (the API's TypeError `Option ...`: a
 * `--pdl-early` name that is no input tensor, a `--pdl-trigger` out of range or without `--pdl`)
 * is a usage error here, in the flags' names.
 *
 * @param text The source.
 * @param options The compiler's options.
 * @returns The result.
 */
export function compileForCli(text: string, options: CompileOptions): CompileResult {
  try {
    return compile(text, options);
  } catch (e) {
    if (!(e instanceof TypeError) || !e.message.startsWith("Option ")) throw e;
    throw new UsageError(
      e.message.replace(/^Option pdlEarly/, "--pdl-early")
        .replace(/^Option pdlTrigger/, "--pdl-trigger")
        .replace(/ needs pdl /, " needs --pdl "),
    );
  }
}

/** `--pdl-early`'s names, refused without `--pdl` or empty. */
function earlyNames(c: CompileChoice): string[] {
  if (c.pdl !== true) throw new UsageError("--pdl-early needs --pdl");
  const names = c.pdlEarly!.split(",").map((n) => n.trim());
  if (names.some((n) => n === "")) throw new UsageError(`Malformed --pdl-early "${c.pdlEarly}"`);
  return names;
}

/** The options of a command that choose what {@link compileOptions} compiles. */
export interface CompileChoice {
  readonly target: Target | undefined;
  readonly kernel: string | undefined;
  /** The `--tune` sizes (undefined without `--tune`). */
  readonly sizeHints: Record<string, number> | undefined;
  readonly sms: number | undefined;
  /** `--pdl`: compile with programmatic dependent launch (undefined or false: without). */
  readonly pdl?: boolean | undefined;
  /** `--pdl-early NAMES` (undefined: none). */
  readonly pdlEarly?: string | undefined;
  /** `--pdl-trigger WHERE` (undefined: the default, `drain`). */
  readonly pdlTrigger?: string | undefined;
}

/**
 * The compiler's options for a file and a command's choices (only those given).
 *
 * @param file The file name.
 * @param c The target, kernel, tuning sizes and SM count, where given.
 * @returns The options.
 */
export function compileOptions(file: string, c: CompileChoice): CompileOptions {
  return {
    file,
    ...(c.target !== undefined ? { target: c.target } : {}),
    ...(c.kernel !== undefined ? { kernel: c.kernel } : {}),
    ...(c.sizeHints !== undefined ? { sizeHints: c.sizeHints } : {}),
    ...(c.sms !== undefined ? { sms: c.sms } : {}),
    ...(c.pdl === true ? { pdl: true } : {}),
    ...(c.pdlEarly !== undefined ? { pdlEarly: earlyNames(c) } : {}),
    // As given: the compiler refuses a value out of range or one without pdl (compileForCli).
    ...(c.pdlTrigger !== undefined
      ? { pdlTrigger: c.pdlTrigger as NonNullable<CompileOptions["pdlTrigger"]> }
      : {}),
  };
}

/**
 * The kernels a compile gave, or null after printing its diagnostics; no
 * kernel at all (none of the `--kernel` name) is a usage error.
 *
 * @param r The compile's result.
 * @param file The file name.
 * @param text The file's text.
 * @param kernel The `--kernel` option, if given.
 * @param io Where to print the diagnostics.
 * @returns The kernels, or null when the input had errors (exit code 1). A `--pdl-early` name a
 *   kernel still reads after its wait is a note on stderr, with why (passes/lower/early.ts).
 */
export function compiledKernels(
  r: CompileResult,
  file: string,
  text: string,
  kernel: string | undefined,
  io: CliIO,
): readonly CompiledKernel[] | null {
  if (!r.ok) {
    io.err(formatDiagnostics(r.diagnostics, text));
    return null;
  }
  if (r.kernels.length === 0) {
    throw new UsageError(
      kernel !== undefined ? `No kernel named "${kernel}" in "${file}"` : `No kernel in "${file}"`,
    );
  }
  for (const k of r.kernels) {
    for (const d of earlyDecisions(k.planned).filter((d) => !d.early)) {
      io.err(
        `gemm: note: --pdl-early ${d.tensor}: kernel ${k.name} reads it as without the ` +
          `option: ${d.why}\n`,
      );
    }
  }
  return r.kernels;
}
