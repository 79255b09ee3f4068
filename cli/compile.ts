/**
 * `gemm compile FILE`: compiles a DSL file and prints (or writes) one stage:
 * GEMM IR, kernel IR, PTX or the launch manifest; optionally dumps the IR
 * after a pass and assembles the PTX with ptxas.
 *
 * @module
 */

import { compile, type CompiledKernel, ptxModule } from "../compiler.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import { pythonModule } from "../backends/aot/python.ts";
import { findPtxas, formatPtxasReport, runPtxas } from "../backends/ptx/ptxas.ts";
import { defaultSmsText, targetInfo } from "../ir/target.ts";
import { PASS_NAMES } from "../passes/pipeline_list.ts";
import { resolveSizes } from "../harness/sizes.ts";
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

const EMITS = ["ir", "kernel-ir", "ptx", "json", "py"] as const;
type Emit = typeof EMITS[number];

const OPTIONS = [
  kernelOption("Compile only this kernel (default: every kernel in FILE)"),
  {
    name: "emit",
    type: "string",
    default: "ir",
    value: "STAGE",
    help: "What to print: ir (GEMM IR; the default), kernel-ir, ptx, json,\n" +
      "py (a Python module: backends/aot/python.ts)",
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
    help: "With --emit json: the concrete grid for these sizes (M=..,N=..,K=..)",
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
    throw new UsageError(`Unknown --emit "${values.emit}": expected ${EMITS.join(", ")}`);
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

/** The text of the chosen stage. */
function emitted(
  emit: Emit,
  kernels: readonly CompiledKernel[],
  sizes: Record<string, number> | undefined,
  file: string,
): string {
  switch (emit) {
    case "ir":
      return kernels.map((k) => k.gemmText).join("\n");
    case "kernel-ir":
      return kernels.map((k) => k.kernelText).join("\n");
    case "ptx":
      return ptxModule(kernels);
    case "py":
      return pythonModule(kernels, { source: file });
    case "json": {
      const manifests = kernels.map((k) => {
        if (sizes === undefined) return k.manifest;
        let resolved: Record<string, number>;
        try {
          resolved = resolveSizes(k.gemm, sizes);
        } catch (e) {
          throw new UsageError((e as Error).message);
        }
        return kernelManifest(k.gemm, k.kernel, resolved);
      });
      return JSON.stringify({ kernels: manifests }, null, 2) + "\n";
    }
  }
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
  io.out(`ptxas -arch=${arch}:\n${formatPtxasReport(res)}\n`);
  return 0;
}

async function run(values: Values, positionals: string[], io: CliIO): Promise<number> {
  const sizes = values.size !== undefined ? sizesOf(values.size) : undefined;
  if (values.tune && sizes === undefined) throw new UsageError("compile: --tune needs --size");
  const sms = parseSms(values.sms);
  const [file, ...extra] = positionals;
  if (file === undefined) throw new UsageError("compile: no input file");
  if (extra.length > 0) {
    throw new UsageError(`compile: one file at a time, got ${positionals.length}`);
  }
  const { emit, dumpAfter } = stageOptions(values);
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
  const output = emitted(emit, kernels, sizes, file);
  if (values.output !== undefined) writeOutput(io, values.output, output);
  else io.out(output);
  if (values.ptxas || values["ptxas-path"] !== undefined) {
    return await assemble(kernels, values["ptxas-path"], io);
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
