/**
 * `gemm compile FILE`: compiles a DSL file and prints (or writes) one stage:
 * GEMM IR, kernel IR, PTX or the launch manifest; optionally dumps the IR
 * after a pass and assembles the PTX with ptxas.
 *
 * @module
 */

import { compile, type CompiledKernel, ptxModule } from "../compiler.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import { CUBIN_ARCHS, findPtxas, formatPtxasReport, runPtxas } from "../backends/ptx/ptxas.ts";
import { AOT_EMITS, type EmitRow } from "./compile_aot.ts";
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

/** Every `--emit` value, in the help's order; the first is the default. */
const EMITS: readonly EmitRow[] = [
  {
    name: "ir",
    help: "ir (GEMM IR; the default)",
    binary: false,
    emit: (kernels) => kernels.map((k) => k.gemmText).join("\n"),
  },
  {
    name: "kernel-ir",
    help: "kernel-ir",
    binary: false,
    emit: (kernels) => kernels.map((k) => k.kernelText).join("\n"),
  },
  { name: "ptx", help: "ptx", binary: false, emit: (kernels) => ptxModule(kernels) },
  {
    name: "json",
    help: "json",
    binary: false,
    emit: (kernels, ctx) => manifests(kernels, ctx.sizes),
  },
  ...AOT_EMITS,
];

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
function stageOptions(values: Values): { emit: EmitRow; dumpAfter: string | undefined } {
  const emit = EMITS.find((e) => e.name === values.emit);
  if (emit === undefined) {
    throw new UsageError(
      `Unknown --emit "${values.emit}": expected ${EMITS.map((e) => e.name).join(", ")}`,
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

/** `--emit json`: the manifests, with the concrete grid when sizes are given. */
function manifests(
  kernels: readonly CompiledKernel[],
  sizes: Record<string, number> | undefined,
): string {
  const ms = kernels.map((k) => {
    if (sizes === undefined) return k.manifest;
    let resolved: Record<string, number>;
    try {
      resolved = resolveSizes(k.gemm, sizes);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    return kernelManifest(k.gemm, k.kernel, resolved);
  });
  return JSON.stringify({ kernels: ms }, null, 2) + "\n";
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
  const output = await emit.emit(kernels, {
    sizes,
    arch: values.arch,
    ptxasPath: values["ptxas-path"],
    source: file,
  });
  if (values.output !== undefined) writeOutput(io, values.output, output);
  else if (typeof output === "string") io.out(output);
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
