/**
 * `gemm compile FILE`: compiles a DSL file and prints (or writes) one stage:
 * GEMM IR, kernel IR, PTX or the launch manifest; optionally dumps the IR
 * after a pass and assembles the PTX with ptxas.
 *
 * @module
 */

import { type CompiledKernel, ptxModule } from "../compiler.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import { CUBIN_ARCHS, findPtxas, formatPtxasReport, runPtxas } from "../backends/ptx/ptxas.ts";
import { AOT_EMITS, type EmitRow } from "./compile_aot.ts";
import { defaultSmsText, targetInfo } from "../ir/target.ts";
import { PASS_NAMES } from "../passes/pipeline_list.ts";
import { alignmentViolations, resolveSizes } from "../harness/sizes.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { checkSizeNames } from "./sizes.ts";
import { didYouMean } from "../dsl/suggest.ts";
import { explainSchedules } from "./explain.ts";
import {
  compiledKernels,
  compileForCli,
  compileOptions,
  kernelOption,
  parseSms,
  PDL_COMPILE_OPTION,
  PDL_EARLY_OPTION,
  PDL_TRIGGER_OPTION,
  readSource,
  sizesOf,
  smsOption,
  TARGET_OPTION,
  targetOf,
  tuneOption,
  writeOutput,
} from "./common.ts";
import {
  type CliIO,
  type Command,
  command,
  HELP_OPTION,
  type OptionValues,
  UsageError,
} from "./options.ts";

/**
 * Every `--emit` value, in the help's order; the first is the default. Its
 * `sizes` says what `--size` means to it without `--tune` (with `--tune` it
 * chooses the schedule, whatever the stage): `"grid"`, the launch at those
 * sizes, which must honour every declared alignment (as `simulate` and `run`
 * require); `null`, nothing, so `--size` without `--tune` is refused rather
 * than ignored.
 */
const EMITS: readonly EmitRow[] = [
  {
    name: "ir",
    help: "ir (GEMM IR; the default)",
    binary: false,
    sizes: null,
    emit: (kernels, ctx) => kernels.map((k) => gemmText(k, ctx.tuned)).join("\n"),
  },
  {
    name: "kernel-ir",
    help: "kernel-ir",
    binary: false,
    sizes: null,
    emit: (kernels) => kernels.map((k) => k.kernelText).join("\n"),
  },
  { name: "ptx", help: "ptx", binary: false, sizes: null, emit: (kernels) => ptxModule(kernels) },
  {
    name: "json",
    help: "json",
    binary: false,
    sizes: "grid",
    emit: (kernels, ctx) => manifests(kernels, ctx.sizes),
  },
  {
    name: "explain",
    help: "explain (why each kernel got its threadblock, split-K and stages: the rule and " +
      "the sizes it weighed; with --tune, for the --size sizes)",
    binary: false,
    sizes: null,
    emit: (kernels) => explainSchedules(kernels),
  },
  ...AOT_EMITS,
];
/** The stages that take `--size`, for the messages and the help. */
const GRID_EMITS = EMITS.filter((e) => e.sizes === "grid").map((e) => e.name);

/** Text broken into help lines of at most 70 characters (`\n` between them). */
function wrapped(text: string): string {
  const lines: string[] = [];
  for (const word of text.split(" ")) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + 1 + word.length <= 70) lines[last] += ` ${word}`;
    else lines.push(word);
  }
  return lines.join("\n");
}

const OPTIONS = [
  kernelOption("Compile only this kernel (default: every kernel in FILE)"),
  {
    name: "emit",
    type: "string",
    default: EMITS[0]!.name,
    value: "STAGE",
    help: wrapped(`What to print: ${EMITS.map((e) => e.help).join(", ")}`),
  },
  {
    name: "dump-after",
    type: "string",
    value: "PASS",
    help: 'Print the IR after PASS (or "all") to stderr',
  },
  TARGET_OPTION,
  {
    name: "arch",
    type: "string",
    value: "ARCH",
    help: `With --emit cubin: the GPU to assemble for (${CUBIN_ARCHS.join(", ")};\n` +
      "default: the target's)",
  },
  {
    name: "size",
    type: "string",
    value: "SIZES",
    help:
      `With --emit ${
        GRID_EMITS.join(", ")
      }: the concrete launch at these sizes (M=..,N=..,K=..),\n` +
      "which must honour the declared alignments; with --tune: the sizes to tune for",
  },
  tuneOption(
    "Choose the default schedule for the --size sizes, as run --tune and\n" +
      "simulate --tune do (the kernel stays correct for any size)",
  ),
  smsOption(`default ${defaultSmsText()}`),
  PDL_COMPILE_OPTION,
  PDL_EARLY_OPTION,
  PDL_TRIGGER_OPTION,
  {
    name: "ptxas",
    type: "boolean",
    help: "Assemble the PTX with ptxas -v and print registers, shared memory,\n" +
      "stack frame and spills per kernel (fails if ptxas rejects it)",
  },
  {
    name: "ptxas-path",
    type: "string",
    value: "PATH",
    help: "The ptxas to use (default: PATH, /usr/local/bin, /usr/local/cuda/bin)",
  },
  {
    name: "output",
    short: "o",
    type: "string",
    value: "OUT",
    help: "Write the output to OUT instead of stdout",
  },
  HELP_OPTION,
] as const;

type Values = OptionValues<typeof OPTIONS>;

/** The checked `--emit` and `--dump-after` values. */
function stageOptions(values: Values): { emit: EmitRow; dumpAfter: string | undefined } {
  const emit = EMITS.find((e) => e.name === values.emit);
  if (emit === undefined) {
    const names = EMITS.map((e) => e.name);
    throw new UsageError(
      `Unknown --emit "${values.emit}": expected ${names.join(", ")}${
        didYouMean(values.emit, names)
      }`,
    );
  }
  if (values.arch !== undefined && emit.name !== "cubin") {
    throw new UsageError("--arch is for --emit cubin");
  }
  if (emit.binary && values.output === undefined) {
    throw new UsageError(`--emit ${emit.name} writes a binary file: give -o FILE`);
  }
  const dumpAfter = values["dump-after"];
  if (dumpAfter !== undefined && dumpAfter !== "all" && !PASS_NAMES.includes(dumpAfter)) {
    throw new UsageError(
      `Unknown pass "${dumpAfter}" for --dump-after: expected all or one of ${
        PASS_NAMES.join(", ")
      }`,
    );
  }
  return { emit, dumpAfter };
}

/**
 * The `--size` sizes resolved for every kernel of a `"grid"` stage; sizes
 * that break a declared alignment are a usage error, as for `simulate`.
 */
function gridSizes(
  kernels: readonly CompiledKernel[],
  sizes: Readonly<Record<string, number>>,
): Record<string, number>[] {
  return kernels.map((k) => {
    let resolved: Record<string, number>;
    try {
      resolved = resolveSizes(k.gemm, sizes);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const bad = alignmentViolations(k.gemm, resolved);
    if (bad.length > 0) throw new UsageError(`${k.name}: ${bad.join("; ")}`);
    return resolved;
  });
}

/**
 * The GEMM IR text; after `--tune`, with the schedule the passes chose for
 * the sizes (the checked kernel's schedule is only what the source gave).
 */
function gemmText(k: CompiledKernel, tuned: boolean): string {
  return tuned ? printGemm({ ...k.gemm, schedule: k.planned.schedule }) : k.gemmText;
}

/** `--emit json`: the manifests, with the concrete grid when sizes are given. */
function manifests(
  kernels: readonly CompiledKernel[],
  sizes: Record<string, number> | undefined,
): string {
  const grids = sizes === undefined ? undefined : gridSizes(kernels, sizes);
  const ms = kernels.map((k, i) =>
    grids === undefined ? k.manifest : kernelManifest(k.gemm, k.kernel, grids[i]!)
  );
  return JSON.stringify({ kernels: ms }, null, 2) + "\n";
}

/** `--ptxas-path`: the file must exist (no fall-back to the PATH when it does not). */
function ptxasPathOf(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  let file = false;
  try {
    file = Deno.statSync(path).isFile;
  } catch {
    // Missing or unreadable: said below.
  }
  if (!file) throw new UsageError(`--ptxas-path "${path}": no such file`);
  return path;
}

/** `--ptxas`: assembles the module and prints ptxas's report (exit code 1 if it rejects it). */
async function assemble(
  kernels: readonly CompiledKernel[],
  ptxasPath: string | undefined,
  io: CliIO,
): Promise<number> {
  const bin = findPtxas(ptxasPath);
  if (bin === null) {
    throw new UsageError(
      "--ptxas: ptxas is not on the PATH nor in /usr/local/bin or /usr/local/cuda/bin; " +
        "give --ptxas-path",
    );
  }
  const arch = targetInfo(kernels[0]!.kernel.target).ptx;
  const res = await runPtxas(ptxModule(kernels), { arch, ptxasPath: bin });
  if (!res.ok) {
    io.err(`gemm: ptxas rejected the PTX for ${arch}:\n${res.log.trimEnd()}\n`);
    return 1;
  }
  // ptxas counts static shared memory only; the kernels ask for theirs at launch.
  const dynamic = new Map(kernels.map((k) => [k.manifest.entry, k.manifest.dynamicSmemBytes]));
  const lines = formatPtxasReport(res).split("\n").map((line) => {
    const bytes = dynamic.get(line.slice(0, line.indexOf(":")));
    return bytes === undefined ? line : `${line}; ${bytes} bytes dynamic shared memory at launch`;
  });
  io.out(`ptxas -arch=${arch}:\n${lines.join("\n")}\n`);
  return 0;
}

/** The checked `--size`: given only where the stage or `--tune` uses it. */
function sizesFor(values: Values, emit: EmitRow): Record<string, number> | undefined {
  if (values.size === undefined) {
    if (values.tune) throw new UsageError("compile: --tune needs --size");
    return undefined;
  }
  const sizes = sizesOf(values.size);
  if (!values.tune && emit.sizes === null) {
    throw new UsageError(
      `compile: --size applies to --emit ${GRID_EMITS.join(", ")} and to --tune; ` +
        `--emit ${emit.name} takes no sizes`,
    );
  }
  return sizes;
}

async function run(values: Values, positionals: string[], io: CliIO): Promise<number> {
  const { emit, dumpAfter } = stageOptions(values);
  const sizes = sizesFor(values, emit);
  const sms = parseSms(values.sms);
  const ptxasPath = ptxasPathOf(values["ptxas-path"]);
  const [file, ...extra] = positionals;
  if (file === undefined) throw new UsageError("compile: no input file");
  if (extra.length > 0) {
    throw new UsageError(`compile: one file at a time, got ${positionals.length}`);
  }
  const target = targetOf(values.target);
  const text = readSource(io, file);
  const r = compileForCli(text, {
    ...compileOptions(file, {
      target,
      kernel: values.kernel,
      sizeHints: values.tune ? sizes : undefined,
      sms,
      pdl: values.pdl,
      pdlEarly: values["pdl-early"],
      pdlTrigger: values["pdl-trigger"],
    }),
    ...(dumpAfter !== undefined
      ? {
        dump: (pass: string, dumpText: string) => {
          if (dumpAfter === "all" || dumpAfter === pass) io.err(dumpText + "\n");
        },
      }
      : {}),
  });
  const kernels = compiledKernels(r, file, text, values.kernel, io);
  if (kernels === null) return 1;
  if (sizes !== undefined) checkSizeNames(kernels.map((k) => k.gemm), sizes);
  const output = await emit.emit(kernels, {
    sizes: emit.sizes === null ? undefined : sizes,
    tuned: !!values.tune,
    arch: values.arch,
    ptxasPath,
    source: file,
  });
  if (values.output !== undefined) writeOutput(io, values.output, output);
  else if (typeof output === "string") io.out(output);
  if (values.ptxas || ptxasPath !== undefined) {
    return await assemble(kernels, ptxasPath, io);
  }
  return 0;
}

/** The `compile` command. */
export const COMPILE: Command = command({
  name: "compile",
  args: "FILE",
  summary: "Compile a DSL file and print the requested stage",
  usage: "compile FILE [options]",
  about: "",
  options: OPTIONS,
  notes: "",
  run,
});
