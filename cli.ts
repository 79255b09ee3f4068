/**
 * The `gemm` command line: `gemm check`, `gemm compile`. Run as
 * `deno task gemm <command> ...`.
 *
 * Exit codes: 0 success, 1 diagnostics in the input, 2 bad usage,
 * 3 an internal error (a compiler bug; never a stack trace for bad input).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { compile, type CompiledKernel, formatDiagnostics, ptxModule } from "./compiler.ts";
import { kernelManifest } from "./backends/ptx/manifest.ts";
import { findPtxas, formatPtxasReport, runPtxas } from "./backends/ptx/ptxas.ts";
import type { Target } from "./ir/gemm.ts";
import { PASS_NAMES } from "./passes/pipeline_list.ts";
import { simulateGemm, type SimulateReport } from "./harness/simulate_gemm.ts";
import { parseSizes, resolveSizes } from "./harness/sizes.ts";
import { SimError } from "./backends/sim/mod.ts";
import { checkRun, runGemm, type RunReport } from "./harness/run_gemm.ts";
import { Cuda, cudaAvailable, CudaError, CudaUnavailableError } from "./backends/cuda/driver.ts";

/** Where the CLI writes; replaced in tests. */
export interface CliIO {
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
  readonly readFile: (path: string) => string;
  readonly writeFile: (path: string, text: string) => void;
}

class UsageError extends Error {}

const MAIN_HELP = `gemm: a GEMM compiler for NVIDIA Ampere (sm_80, sm_86)

Usage: gemm <command> [options]

Commands:
  check FILE...       Check DSL files and print diagnostics
  compile FILE        Compile a DSL file and print the requested stage
  simulate FILE       Run the compiled kernel IR on the CPU and check it
  run FILE            Run the compiled PTX on the GPU (CUDA driver), check and time it

Run "gemm <command> --help" for a command's options.
Exit codes: 0 success, 1 errors in the input, 2 bad usage, 3 internal error.
`;

const CHECK_HELP = `Usage: gemm check FILE... [--target sm80|sm86]

Parses and checks each file, and runs the passes so that schedules that cannot be
honoured are reported too; prints every diagnostic as
FILE:LINE:COL: error[CODE]: message, with the source line and a caret.
Exits 0 when every file is clean, 1 otherwise.
`;

const COMPILE_HELP = `Usage: gemm compile FILE [options]

Options:
  --kernel NAME        Compile only this kernel (default: every kernel in FILE)
  --emit STAGE         What to print: ir (GEMM IR; the default), kernel-ir, ptx, json
  --dump-after PASS    Print the IR after PASS (or "all") to stderr
  --target sm80|sm86   Override the schedule's target
  --size SIZES         With --emit json: the concrete grid for these sizes (M=..,N=..,K=..)
  --tune               Choose the default schedule for the --size sizes, as run --tune and
                       simulate --tune do (the kernel stays correct for any size)
  --sms N              With --tune: the GPU's SM count, which the tile choice weighs
                       waves of blocks against (default 108, an A100)
  --ptxas              Assemble the PTX with ptxas -v and print registers, shared memory,
                       stack frame and spills per kernel (fails if ptxas rejects it)
  --ptxas-path PATH    The ptxas to use (default: PATH, /usr/local/bin, /usr/local/cuda/bin)
  -o, --output OUT     Write the output to OUT instead of stdout
  -h, --help           This help
`;

const SIMULATE_HELP = `Usage: gemm simulate FILE --size M=..,N=..,K=..[,L=..] [options]

Compiles FILE, fills the inputs with random values (never zeros), poisons the
output, runs the kernel IR on the CPU over the whole grid, and compares the
output with a reference GEMM (integers: identical; floats: within a bound per
element, see harness/reference.ts). Also reports shared-memory hazards
and statistics.

Options:
  --size SIZES         Runtime sizes: dimension names, or M, N, K, L for the roles
  --kernel NAME        Simulate only this kernel
  --seed N             Seed of the random inputs (default 1)
  --scalar VALUES      Scalar values, e.g. alpha=1.5,beta=0.5 (default: random)
  --target sm80|sm86   Override the schedule's target
  --no-hazards         Skip the hazard checker (faster)
  --tune               Choose the default schedule for these sizes (as compile-time sizes
                       would: smaller tiles for small or skinny problems)
  --sms N              With --tune: the GPU's SM count, which the tile choice weighs
                       waves of blocks against (default 108, an A100)
  --json               Print the reports as JSON
  -h, --help           This help

Exit codes: 0 agreement and no hazard, 1 mismatch, hazard or errors in the input.
`;

const RUN_HELP = `Usage: gemm run FILE --size M=..,N=..,K=..[,L=..] [options]

Compiles FILE, loads the PTX through the CUDA driver (libcuda.so.1), fills the
inputs with random values (never zeros), poisons the output, launches the
kernel and compares its output with the reference GEMM (integers: identical;
floats: within a bound per element). Above 2^26 multiply-adds the reference
runs on sampled rows and columns (first, last, tile edges, random), and every
element is still checked for being written. Then the kernel is timed: warm-up
launches, then the median of timed launches (CUDA events each). A GPU that caps
its power runs the first ~80 ms of full load after a rest at its boost clock
and then settles lower (an H200: 10-20% lower for large tensor-core GEMMs,
bench/NOTES.md 26). The default 3 + 20 launches stay inside that window for
kernels under ~3.5 ms; enough --warmup launches to fill ~1.5 s time the
sustained state.

Options:
  --size SIZES         Runtime sizes: dimension names, or M, N, K, L for the roles
  --kernel NAME        Run only this kernel
  --seed N             Seed of the random inputs (default 1)
  --scalar VALUES      Scalar values, e.g. alpha=1.5,beta=0.5 (default: random)
  --check WHAT         ref (default): the reference GEMM; sim: also the simulator on the
                       same inputs (integers identical, floats: largest ulp difference;
                       a sample of blocks above 2^27 multiply-adds); none: no check
  --full-check         Check every element and simulate every block, at any size (slow)
  --no-hazards         With --check sim: skip the simulator's hazard checker
  --iters N            Timed launches (default 20; 0: no timing)
  --warmup N           Untimed launches before them (default 3)
  --input-sets N       Copies of the inputs the timed launches rotate among (default 1)
  --target sm80|sm86   Override the schedule's target
  --tune               Choose the default schedule for these sizes (as compile-time sizes
                       would: smaller tiles for small or skinny problems)
  --sms N              With --tune: the GPU's SM count, which the tile choice weighs
                       waves of blocks against (default: the device's)
  --json               Print the reports as JSON
  -h, --help           This help

Exit codes: 0 every kernel agrees, 1 a mismatch, a JIT or driver failure, no CUDA
driver, or errors in the input; 2 bad usage (sizes that break an alignment included).
`;

const EMITS = ["ir", "kernel-ir", "ptx", "json"] as const;
type Emit = typeof EMITS[number];

function parseTarget(v: string | undefined): Target | undefined {
  if (v === undefined) return undefined;
  if (v === "sm80" || v === "sm86") return v;
  if (v === "sm_80") return "sm80";
  if (v === "sm_86") return "sm86";
  throw new UsageError(`Unknown target "${v}": expected sm80 or sm86`);
}

function readSource(io: CliIO, file: string): string {
  try {
    return io.readFile(file);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message;
    throw new UsageError(`Cannot read "${file}": ${why}`);
  }
}

function cmdCheck(args: string[], io: CliIO): number {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { target: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    io.out(CHECK_HELP);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError("check: no input file");
  const target = parseTarget(values.target);
  let bad = false;
  for (const file of positionals) {
    const text = readSource(io, file);
    // The whole pipeline, so that schedule diagnostics (E02xx, raised by the passes) are
    // reported too; nothing is printed but diagnostics.
    const r = compile(text, { file, ...(target !== undefined ? { target } : {}) });
    if (r.diagnostics.length > 0) {
      bad = true;
      io.err(formatDiagnostics(r.diagnostics, text));
    }
  }
  return bad ? 1 : 0;
}

async function cmdCompile(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      kernel: { type: "string" },
      emit: { type: "string", default: "ir" },
      "dump-after": { type: "string" },
      target: { type: "string" },
      output: { type: "string", short: "o" },
      size: { type: "string" },
      tune: { type: "boolean" },
      sms: { type: "string" },
      ptxas: { type: "boolean" },
      "ptxas-path": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    io.out(COMPILE_HELP);
    return 0;
  }
  let sizes: Record<string, number> | undefined;
  if (values.size !== undefined) {
    try {
      sizes = parseSizes(values.size);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  if (values.tune && sizes === undefined) throw new UsageError("compile: --tune needs --size");
  const sms = parseSms(values.sms);
  const [file, ...extra] = positionals;
  if (file === undefined) throw new UsageError("compile: no input file");
  if (extra.length > 0) {
    throw new UsageError(`compile: one file at a time, got ${positionals.length}`);
  }
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
  const target = parseTarget(values.target);
  const text = readSource(io, file);
  const r = compile(text, {
    file,
    ...(target !== undefined ? { target } : {}),
    ...(values.kernel !== undefined ? { kernel: values.kernel } : {}),
    ...(values.tune && sizes !== undefined ? { sizeHints: sizes } : {}),
    ...(sms !== undefined ? { sms } : {}),
    ...(dumpAfter !== undefined
      ? {
        dump: (pass: string, dumpText: string) => {
          if (dumpAfter === "all" || dumpAfter === pass) io.err(dumpText + "\n");
        },
      }
      : {}),
  });
  if (!r.ok) {
    io.err(formatDiagnostics(r.diagnostics, text));
    return 1;
  }
  if (r.kernels.length === 0) {
    throw new UsageError(
      values.kernel !== undefined
        ? `No kernel named "${values.kernel}" in "${file}"`
        : `No kernel in "${file}"`,
    );
  }
  let output: string;
  switch (emit) {
    case "ir":
      output = r.kernels.map((k: CompiledKernel) => k.gemmText).join("\n");
      break;
    case "kernel-ir":
      output = r.kernels.map((k: CompiledKernel) => k.kernelText).join("\n");
      break;
    case "ptx":
      output = ptxModule(r.kernels);
      break;
    case "json": {
      const kernels = r.kernels.map((k) => {
        if (sizes === undefined) return k.manifest;
        let resolved: Record<string, number>;
        try {
          resolved = resolveSizes(k.gemm, sizes);
        } catch (e) {
          throw new UsageError((e as Error).message);
        }
        return kernelManifest(k.gemm, k.kernel, resolved);
      });
      output = JSON.stringify({ kernels }, null, 2) + "\n";
      break;
    }
  }
  if (values.output !== undefined) io.writeFile(values.output, output);
  else io.out(output);
  if (values.ptxas || values["ptxas-path"] !== undefined) {
    const bin = findPtxas(values["ptxas-path"]);
    if (bin === null) {
      throw new UsageError(
        "--ptxas: ptxas is not on the PATH nor in /usr/local/bin or /usr/local/cuda/bin; " +
          "give --ptxas-path",
      );
    }
    const arch = r.kernels[0]!.kernel.target === "sm86" ? "sm_86" : "sm_80";
    const res = await runPtxas(ptxModule(r.kernels), { arch, ptxasPath: bin });
    if (!res.ok) {
      io.err(`gemm: ptxas rejected the PTX for ${arch}:\n${res.log.trimEnd()}\n`);
      return 1;
    }
    io.out(`ptxas -arch=${arch}:\n${formatPtxasReport(res)}\n`);
  }
  return 0;
}

function parseScalars(text: string | undefined): Record<string, number> {
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

function fmtStats(r: SimulateReport): string[] {
  const st = r.sim.stats;
  const kinds = Object.entries(st.byKind).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`).join(", ");
  const bank = (n: string, b: { wavefronts: number; ideal: number; requests: number }) =>
    `${n} ${b.wavefronts}/${b.ideal}`;
  return [
    `  stats: ${st.warpInstructions} warp-instructions (${kinds})`,
    `  memory: global read ${st.globalBytesRead} B, written ${st.globalBytesWritten} B; ` +
    `shared read ${st.sharedBytesRead} B, written ${st.sharedBytesWritten} B; ${st.mmas} mma` +
    (st.l2Prefetches > 0 ? `; ${st.l2Prefetches} L2 prefetches` : ""),
    `  shared-memory wavefronts (actual/conflict-free): ${
      [
        bank("cp.async", st.banks.cpasync),
        bank("ldmatrix", st.banks.ldmatrix),
        bank("ld.shared", st.banks.lds),
        bank("st.shared", st.banks.sts),
      ].join(", ")
    }`,
  ];
}

/** The options `simulate` and `run` share (a kernel, sizes, inputs, target, output). */
const LAUNCH_OPTIONS = {
  kernel: { type: "string" },
  size: { type: "string" },
  seed: { type: "string", default: "1" },
  scalar: { type: "string" },
  target: { type: "string" },
  "no-hazards": { type: "boolean" },
  tune: { type: "boolean" },
  sms: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

function cmdSimulate(args: string[], io: CliIO): number {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: LAUNCH_OPTIONS,
  });
  if (values.help) {
    io.out(SIMULATE_HELP);
    return 0;
  }
  const { file, text, sizes, seed, scalars, result: r } = prepare(
    "simulate",
    positionals,
    values,
    io,
  );
  if (!r.ok) {
    io.err(formatDiagnostics(r.diagnostics, text));
    return 1;
  }
  if (r.kernels.length === 0) {
    throw new UsageError(`No kernel named "${values.kernel}" in "${file}"`);
  }
  let ok = true;
  const reports: unknown[] = [];
  for (const ck of r.kernels) {
    let rep: SimulateReport;
    try {
      rep = simulateGemm(ck, sizes, { seed, scalars, hazards: !values["no-hazards"] });
    } catch (e) {
      if (e instanceof SimError) {
        io.err(`${ck.name}: simulation error: ${e.message}\n`);
        ok = false;
        continue;
      }
      if (e instanceof Error && !(e instanceof TypeError) && !(e instanceof RangeError)) {
        throw new UsageError(`${ck.name}: ${e.message}`);
      }
      throw e;
    }
    ok &&= rep.ok;
    const c = rep.comparison;
    if (values.json) {
      reports.push({
        kernel: rep.kernel,
        sizes: rep.sizes,
        grid: rep.grid,
        seconds: rep.seconds,
        agree: c.ok,
        elements: c.elements,
        overBound: c.overBound,
        relFrobenius: c.relFrobenius,
        worstRatio: c.worstRatio,
        maxAbsError: c.maxAbsError,
        hazards: rep.sim.hazards,
        hazardCount: rep.sim.hazardCount,
        stats: rep.sim.stats,
      });
      continue;
    }
    const sz = Object.entries(rep.sizes).map(([k, v]) => `${k}=${v}`).join(", ");
    const verdict = !c.ok
      ? "MISMATCH with"
      : rep.sim.hazardCount > 0
      ? "HAZARDS, output agrees with"
      : "AGREES with";
    const lines = [
      `${ck.name}: ${verdict} the reference (${sz}; grid ${rep.grid.join("x")}; ${
        rep.seconds.toFixed(2)
      } s simulated)`,
      `  error: ${c.overBound} of ${c.elements} elements over the bound; relative Frobenius ${
        c.relFrobenius.toExponential(2)
      }; worst error/bound ${c.worstRatio.toFixed(3)}; max |error| ${
        c.maxAbsError.toExponential(2)
      }`,
    ];
    if (c.first !== null) {
      lines.push(
        `  first mismatch: element ${c.first.index}: got ${c.first.got}, want ${c.first.want}`,
      );
    }
    if (rep.sim.hazardCount === 0) lines.push("  hazards: none");
    else {
      lines.push(`  hazards: ${rep.sim.hazardCount}`);
      for (const h of rep.sim.hazards) {
        lines.push(`    ${h.kind}: ${h.message} at line ${h.line}: ${h.op}`);
      }
    }
    lines.push(...fmtStats(rep));
    io.out(lines.join("\n") + "\n");
  }
  if (values.json) io.out(JSON.stringify({ reports }, null, 2) + "\n");
  return ok ? 0 : 1;
}

function nonNegative(name: string, v: string): number {
  const n = Number(v);
  if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(n)) {
    throw new UsageError(`Malformed --${name} "${v}": expected a non-negative integer`);
  }
  return n;
}

function runJson(r: RunReport): unknown {
  const { output: _o, args: _a, ...rest } = r;
  return rest;
}

function runLines(r: RunReport): string[] {
  const sz = Object.entries(r.sizes).map(([k, v]) => `${k}=${v}`).join(", ");
  const ref = r.reference;
  const sim = r.sim;
  const intOut = sim !== null && sim.maxUlp === null;
  const verdict = ref !== null && !ref.comparison.ok
    ? "MISMATCH with the reference"
    : (r.unwritten ?? 0) > 0
    ? "UNWRITTEN output elements"
    : sim !== null && intOut && sim.differing > 0
    ? `${ref === null ? "RAN" : "AGREES with the reference"}, but DIFFERS from the simulator`
    : sim !== null && sim.hazardCount > 0
    ? "HAZARDS in the simulator; the output agrees with the reference"
    : ref === null
    ? "RAN (not checked)"
    : sim !== null
    ? "AGREES with the reference and the simulator"
    : "AGREES with the reference";
  const lines = [`${r.kernel}: ${verdict} (${sz})`];
  if (ref !== null) {
    const c = ref.comparison;
    const what = ref.sampled === null
      ? "every element"
      : `sampled ${
        Object.entries(ref.sampled).map(([n, s]) => `${n} ${s.chosen} of ${s.of}`).join(", ")
      }`;
    lines.push(
      `  reference (${what}): ${c.overBound} of ${c.elements} elements over the bound; ` +
        `relative Frobenius ${c.relFrobenius.toExponential(2)}; worst error/bound ${
          c.worstRatio.toFixed(3)
        }; max |error| ${c.maxAbsError.toExponential(2)}`,
    );
    if (ref.first !== null) {
      lines.push(
        `  first mismatch: element [${ref.first.coords.join(", ")}]: got ${ref.first.got}, ` +
          `want ${ref.first.want}`,
      );
    }
  }
  if (r.unwritten !== null && r.unwritten > 0) {
    lines.push(`  unwritten: ${r.unwritten} output elements still hold the poison`);
  }
  if (sim !== null) {
    const where = `${sim.blocks} of ${sim.totalBlocks} blocks, ${sim.compared} elements`;
    const agree = sim.maxUlp === null
      ? (sim.differing === 0 ? "identical" : `${sim.differing} elements differ`)
      : sim.identical
      ? "bit-identical"
      : `largest difference ${sim.maxUlp} ulp (${sim.dtype}); ${sim.differing} elements differ; ` +
        `max |GPU - simulator| ${sim.maxAbsDiff!.toExponential(2)} = ${
          sim.ulpsAtScale!.toPrecision(3)
        } ulp of the largest |value|`;
    lines.push(`  simulator (${where}): ${agree}`);
    if (sim.first !== null && sim.differing > 0) {
      lines.push(
        `  first difference: element [${sim.first.coords.join(", ")}]: GPU ${sim.first.gpu}, ` +
          `simulator ${sim.first.sim}`,
      );
    }
    if (sim.hazardCount > 0) {
      lines.push(`  hazards: ${sim.hazardCount}`);
      for (const h of sim.hazards) {
        lines.push(`    ${h.kind}: ${h.message} at line ${h.line}: ${h.op}`);
      }
    }
  }
  const t = r.timing;
  if (t !== null) {
    lines.push(
      `  time: median ${t.medianMs.toPrecision(4)} ms of ${t.iters} launches (min ${
        t.minMs.toPrecision(4)
      }, max ${t.maxMs.toPrecision(4)}; ${t.warmup} warm-up, ${t.inputSets} input set${
        t.inputSets === 1 ? "" : "s"
      }): ${t.rate.toPrecision(3)} ${t.unit}`,
    );
  }
  const f = r.function;
  lines.push(
    `  launch: grid ${r.grid.join("x")}, block ${r.block.join("x")}, ${r.dynamicSmemBytes} B ` +
      `dynamic shared memory; ${f.registers} registers, ${f.localBytes} B local memory per thread`,
  );
  return lines;
}

function cmdRun(args: string[], io: CliIO): number {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...LAUNCH_OPTIONS,
      check: { type: "string", default: "ref" },
      "full-check": { type: "boolean" },
      iters: { type: "string", default: "20" },
      warmup: { type: "string", default: "3" },
      "input-sets": { type: "string", default: "1" },
    },
  });
  if (values.help) {
    io.out(RUN_HELP);
    return 0;
  }
  const prepared = prepare("run", positionals, values, io);
  const { file, text, sizes, seed, scalars } = prepared;
  let r = prepared.result;
  const check = values.check;
  if (check !== "ref" && check !== "sim" && check !== "none") {
    throw new UsageError(`Unknown --check "${check}": expected ref, sim or none`);
  }
  const iters = nonNegative("iters", values.iters);
  const warmup = nonNegative("warmup", values.warmup);
  const inputSets = nonNegative("input-sets", values["input-sets"]);
  if (inputSets < 1) throw new UsageError("--input-sets must be at least 1");
  if (!r.ok) {
    io.err(formatDiagnostics(r.diagnostics, text));
    return 1;
  }
  if (r.kernels.length === 0) {
    throw new UsageError(`No kernel named "${values.kernel}" in "${file}"`);
  }
  // Sizes and alignments of every kernel first: nothing touches the driver before.
  for (const ck of r.kernels) {
    try {
      checkRun(ck, sizes);
    } catch (e) {
      throw new UsageError(`${ck.name}: ${(e as Error).message}`);
    }
  }
  const avail = cudaAvailable();
  if (!avail.ok) {
    io.err(`gemm: ${avail.why}\n`);
    return 1;
  }
  let cuda: Cuda;
  try {
    cuda = Cuda.open();
  } catch (e) {
    if (e instanceof CudaUnavailableError || e instanceof CudaError) {
      io.err(`gemm: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  let ok = true;
  const reports: unknown[] = [];
  try {
    const dv = cuda.device;
    // --tune without --sms: the schedule for this device's SM count, not an A100's. The
    // first compile (108 SMs) served the checks above, which do not depend on the tile
    // choice (sizes against alignments); only the tile choice may differ.
    const tunedHere = values.tune === true && values.sms === undefined;
    if (tunedHere) {
      const again = prepared.recompile(dv.multiprocessors);
      if (!again.ok) throw new Error("recompiling for the device's SM count failed");
      r = again;
    }
    if (!values.json) {
      io.out(
        `device: ${dv.name} (${dv.arch}, ${dv.multiprocessors} SMs), CUDA driver ` +
          `${dv.driverVersionText}, ${dv.library}${
            tunedHere ? `; --tune for its ${dv.multiprocessors} SMs` : ""
          }\n`,
      );
    }
    const full = values["full-check"] === true;
    for (const ck of r.kernels) {
      let rep: RunReport;
      try {
        rep = runGemm(ck, sizes, {
          seed,
          iters,
          warmup,
          inputSets,
          check,
          scalars,
          hazards: !values["no-hazards"],
          cuda,
          ...(full ? { refMaxMacs: Infinity, simMaxMacs: Infinity } : {}),
        });
      } catch (e) {
        if (e instanceof CudaError || e instanceof SimError) {
          io.err(`gemm: ${ck.name}: ${e.message}\n`);
          ok = false;
          if (values.json) reports.push({ kernel: ck.name, error: e.message });
          continue;
        }
        throw e;
      }
      ok &&= rep.ok;
      if (values.json) reports.push(runJson(rep));
      else io.out(runLines(rep).join("\n") + "\n");
    }
  } finally {
    try {
      cuda.close();
    } catch (e) {
      io.err(`gemm: releasing the CUDA context: ${(e as Error).message}\n`);
      ok = false;
    }
  }
  if (values.json) io.out(JSON.stringify({ reports }, null, 2) + "\n");
  return ok ? 0 : 1;
}

/** The `--sms` option: a positive integer, or undefined when not given. */
function parseSms(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const sms = Number(text);
  if (!(Number.isInteger(sms) && sms > 0)) {
    throw new UsageError(`Malformed --sms "${text}": a positive integer`);
  }
  return sms;
}

/** What `simulate` and `run` share: the file, sizes, seed, scalars, and the compiled kernels. */
interface Prepared {
  readonly file: string;
  readonly text: string;
  readonly sizes: Record<string, number>;
  readonly seed: number;
  readonly scalars: Record<string, number>;
  readonly result: ReturnType<typeof compile>;
  /** The same compile for another SM count (`run --tune` without `--sms`: the device's). */
  readonly recompile: (sms: number) => ReturnType<typeof compile>;
}

/** Reads the positional file and the options common to `simulate` and `run`, and compiles. */
function prepare(
  cmd: "simulate" | "run",
  positionals: readonly string[],
  values: {
    size?: string | undefined;
    seed?: string | undefined;
    scalar?: string | undefined;
    target?: string | undefined;
    kernel?: string | undefined;
    tune?: boolean | undefined;
    sms?: string | undefined;
  },
  io: CliIO,
): Prepared {
  const [file, ...extra] = positionals;
  if (file === undefined) throw new UsageError(`${cmd}: no input file`);
  if (extra.length > 0) throw new UsageError(`${cmd}: one file at a time`);
  if (values.size === undefined) throw new UsageError(`${cmd}: --size is required`);
  let sizes: Record<string, number>;
  try {
    sizes = parseSizes(values.size);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const seed = Number(values.seed ?? "1");
  if (!Number.isInteger(seed)) throw new UsageError(`Malformed --seed "${values.seed}"`);
  const scalars = parseScalars(values.scalar);
  const target = parseTarget(values.target);
  const sms = parseSms(values.sms);
  const text = readSource(io, file);
  const build = (sms: number | undefined) =>
    compile(text, {
      file,
      ...(target !== undefined ? { target } : {}),
      ...(values.kernel !== undefined ? { kernel: values.kernel } : {}),
      ...(values.tune ? { sizeHints: sizes } : {}),
      ...(sms !== undefined ? { sms } : {}),
    });
  return { file, text, sizes, seed, scalars, result: build(sms), recompile: build };
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
    switch (cmd) {
      case undefined:
      case "-h":
      case "--help":
      case "help":
        io.out(MAIN_HELP);
        return cmd === undefined ? 2 : 0;
      case "check":
        return cmdCheck(rest, io);
      case "compile":
        return await cmdCompile(rest, io);
      case "simulate":
        return cmdSimulate(rest, io);
      case "run":
        return cmdRun(rest, io);
      default:
        throw new UsageError(
          `Unknown command "${cmd}": expected check, compile, simulate or run`,
        );
    }
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

if (import.meta.main) {
  const enc = new TextEncoder();
  // A closed pipe (`gemm ... | head`) ends the output quietly.
  const write = (f: typeof Deno.stdout, s: string) => {
    try {
      const bytes = enc.encode(s);
      let off = 0;
      while (off < bytes.length) off += f.writeSync(bytes.subarray(off));
    } catch (e) {
      if (e instanceof Deno.errors.BrokenPipe) Deno.exit(0);
      throw e;
    }
  };
  const code = await main(Deno.args, {
    out: (s) => write(Deno.stdout, s),
    err: (s) => write(Deno.stderr, s),
    readFile: (p) => Deno.readTextFileSync(p),
    writeFile: (p, t) => Deno.writeTextFileSync(p, t),
  });
  Deno.exit(code);
}
