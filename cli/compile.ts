/**
 * `gemm compile FILE`: compiles a DSL file and prints (or writes) one stage:
 * GEMM IR, kernel IR, PTX or the launch manifest; optionally dumps the IR
 * after a pass and assembles the PTX with ptxas.
 *
 * @module
 */

import { compile, type CompiledKernel, ptxModule } from "../compiler.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import { findPtxas, formatPtxasReport, runPtxas } from "../backends/ptx/ptxas.ts";
import { defaultSmsText, targetInfo } from "../ir/target.ts";
import { PASS_NAMES } from "../passes/pipeline_list.ts";
import { alignmentViolations, resolveSizes } from "../harness/sizes.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { checkSizeNames } from "./sizes.ts";
import { didYouMean } from "../dsl/suggest.ts";
import {
  compiledKernels,
  compileOptions,
  kernelOption,
  parseSms,
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
 * What `--size` means to each `--emit` without `--tune` (with `--tune` it
 * chooses the schedule, whatever the stage): `"grid"`, the launch at those
 * sizes, which must honour every declared alignment (as `simulate` and `run`
 * require); `null`, nothing, so `--size` without `--tune` is refused rather
 * than ignored. A new stage adds its row here.
 */
const EMIT_SIZES = {
  ir: null,
  "kernel-ir": null,
  ptx: null,
  json: "grid",
} as const satisfies Record<string, "grid" | null>;
type Emit = keyof typeof EMIT_SIZES;
const EMITS = Object.keys(EMIT_SIZES) as Emit[];
/** The stages that take `--size`, for the messages and the help. */
const GRID_EMITS = EMITS.filter((e) => EMIT_SIZES[e] === "grid");

const OPTIONS = [
  kernelOption("Compile only this kernel (default: every kernel in FILE)"),
  {
    name: "emit",
    type: "string",
    default: "ir",
    value: "STAGE",
    help: "What to print: ir (GEMM IR; the default), kernel-ir, ptx, json",
  },
  {
    name: "dump-after",
    type: "string",
    value: "PASS",
    help: 'Print the IR after PASS (or "all") to stderr',
  },
  TARGET_OPTION,
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
function stageOptions(values: Values): { emit: Emit; dumpAfter: string | undefined } {
  const emit = values.emit as Emit;
  if (!(EMITS as readonly string[]).includes(emit)) {
    throw new UsageError(
      `Unknown --emit "${values.emit}": expected ${EMITS.join(", ")}${
        didYouMean(values.emit, EMITS)
      }`,
    );
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

/** The text of the chosen stage. */
function emitted(
  emit: Emit,
  kernels: readonly CompiledKernel[],
  sizes: Record<string, number> | undefined,
  tuned: boolean,
): string {
  switch (emit) {
    case "ir":
      return kernels.map((k) => gemmText(k, tuned)).join("\n");
    case "kernel-ir":
      return kernels.map((k) => k.kernelText).join("\n");
    case "ptx":
      return ptxModule(kernels);
    case "json": {
      const grids = sizes === undefined ? undefined : gridSizes(kernels, sizes);
      const manifests = kernels.map((k, i) =>
        grids === undefined ? k.manifest : kernelManifest(k.gemm, k.kernel, grids[i]!)
      );
      return JSON.stringify({ kernels: manifests }, null, 2) + "\n";
    }
  }
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
function sizesFor(values: Values, emit: Emit): Record<string, number> | undefined {
  if (values.size === undefined) {
    if (values.tune) throw new UsageError("compile: --tune needs --size");
    return undefined;
  }
  const sizes = sizesOf(values.size);
  if (!values.tune && EMIT_SIZES[emit] === null) {
    throw new UsageError(
      `compile: --size applies to --emit ${GRID_EMITS.join(", ")} and to --tune; ` +
        `--emit ${emit} takes no sizes`,
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
  const r = compile(text, {
    ...compileOptions(file, {
      target,
      kernel: values.kernel,
      sizeHints: values.tune ? sizes : undefined,
      sms,
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
  const output = emitted(
    emit,
    kernels,
    EMIT_SIZES[emit] === null ? undefined : sizes,
    !!values.tune,
  );
  if (values.output !== undefined) writeOutput(io, values.output, output);
  else io.out(output);
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
