/**
 * `gemm run FILE --size ...`: loads the compiled PTX through the CUDA
 * driver, launches it, checks its output against the reference (and the
 * simulator with `--check sim`) and times it.
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import { SimError } from "../backends/sim/mod.ts";
import { checkRun, runGemm, type RunReport } from "../harness/run_gemm.ts";
import { checkGroupedRun, type GroupedRunReport, runGrouped } from "../harness/run_grouped.ts";
import { Cuda, cudaAvailable, CudaError, CudaUnavailableError } from "../backends/cuda/driver.ts";
import { requirePdl } from "../backends/cuda/launch.ts";
import {
  GROUPS_OPTION,
  hazardLines,
  JSON_OPTION,
  kernelOption,
  noHazardsOption,
  nonNegative,
  PDL_EARLY_OPTION,
  PDL_TRIGGER_OPTION,
  SCALAR_OPTION,
  SEED_OPTION,
  SIZE_OPTION,
  sizesText,
  smsOption,
  TARGET_OPTION,
  TUNE_HELP,
  tuneOption,
} from "./common.ts";
import { launchKernels, prepare, type Prepared } from "./launch.ts";
import {
  type CliIO,
  type Command,
  command,
  HELP_OPTION,
  oneOf,
  type OptionValues,
  UsageError,
} from "./options.ts";

const CHECKS = ["ref", "sim", "none"] as const;

const OPTIONS = [
  SIZE_OPTION,
  GROUPS_OPTION,
  kernelOption("Run only this kernel"),
  SEED_OPTION,
  SCALAR_OPTION,
  {
    name: "check",
    type: "string",
    default: "ref",
    value: "WHAT",
    help: "ref (default): the reference GEMM; sim: also the simulator on the\n" +
      "same inputs (integers identical, floats: largest ulp difference;\n" +
      "a sample of blocks above 2^27 multiply-adds); none: no check",
  },
  {
    name: "full-check",
    type: "boolean",
    help: "Check every element and simulate every block, at any size (slow)",
  },
  noHazardsOption("With --check sim: skip the simulator's hazard checker"),
  {
    name: "iters",
    type: "string",
    default: "20",
    value: "N",
    help: "Timed launches (default {default}; 0: no timing)",
  },
  {
    name: "warmup",
    type: "string",
    default: "3",
    value: "N",
    help: "Untimed launches before them (default {default})",
  },
  {
    name: "input-sets",
    type: "string",
    default: "1",
    value: "N",
    help: "Copies of the inputs the timed launches rotate among (default {default})",
  },
  {
    name: "pdl",
    type: "boolean",
    help: "Compile with programmatic dependent launch (as compile --pdl) and launch the\n" +
      "warm-up and timed launches that way (cuLaunchKernelEx, sm_90+): each may start\n" +
      "while the previous one finishes; sm90 kernels wait before touching global\n" +
      "memory, other targets gain nothing. The checked launch is an ordinary one",
  },
  PDL_EARLY_OPTION,
  PDL_TRIGGER_OPTION,
  TARGET_OPTION,
  tuneOption(TUNE_HELP),
  smsOption("default: the device's"),
  JSON_OPTION,
  HELP_OPTION,
] as const;

type Values = OptionValues<typeof OPTIONS>;

/** The checked `--check`, `--iters`, `--warmup` and `--input-sets`. */
function launchCounts(values: Values) {
  const check = values.check;
  if (!(CHECKS as readonly string[]).includes(check)) {
    throw new UsageError(`Unknown --check "${check}": expected ${oneOf(CHECKS)}`);
  }
  const iters = nonNegative("iters", values.iters);
  const warmup = nonNegative("warmup", values.warmup);
  const inputSets = nonNegative("input-sets", values["input-sets"]);
  if (inputSets < 1) throw new UsageError("--input-sets must be at least 1");
  return { check: check as typeof CHECKS[number], iters, warmup, inputSets };
}

/** Opens the CUDA driver, or says why not (null: exit code 1, the reason printed). */
function openCuda(io: CliIO): Cuda | null {
  const avail = cudaAvailable();
  if (!avail.ok) {
    io.err(`gemm: ${avail.why}\n`);
    return null;
  }
  try {
    return Cuda.open();
  } catch (e) {
    if (e instanceof CudaUnavailableError || e instanceof CudaError) {
      io.err(`gemm: ${e.message}\n`);
      return null;
    }
    throw e;
  }
}

function runJson(r: RunReport): unknown {
  const { output: _o, args: _a, ...rest } = r;
  return rest;
}

function runLines(r: RunReport): string[] {
  const sz = sizesText(r.sizes);
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
    lines.push(...hazardLines(sim.hazardCount, sim.hazards));
  }
  const t = r.timing;
  if (t !== null) {
    lines.push(
      `  time: median ${t.medianMs.toPrecision(4)} ms of ${t.iters} launches (min ${
        t.minMs.toPrecision(4)
      }, max ${t.maxMs.toPrecision(4)}; ${t.warmup} warm-up, ${t.inputSets} input set${
        t.inputSets === 1 ? "" : "s"
      }${t.pdl === true ? "; PDL" : ""}): ${t.rate.toPrecision(3)} ${t.unit}`,
    );
  }
  const f = r.function;
  lines.push(
    `  launch: grid ${r.grid.join("x")}, block ${r.block.join("x")}, ${r.dynamicSmemBytes} B ` +
      `dynamic shared memory; ${f.registers} registers, ${f.localBytes} B local memory per thread`,
  );
  return lines;
}

function groupedJson(r: GroupedRunReport): unknown {
  return {
    kernel: r.kernel,
    entry: r.entry,
    grid: r.grid,
    totalTiles: r.totalTiles,
    block: r.block,
    dynamicSmemBytes: r.dynamicSmemBytes,
    device: r.device,
    function: r.function,
    jit: r.jit,
    problems: r.problems.map(({ args: _a, output: _o, ...p }) => p),
    simHazards: r.simHazards,
    timing: r.timing,
    ok: r.ok,
  };
}

/** The text report of a grouped run: one line per problem (as `gemm simulate --groups`). */
function groupedLines(r: GroupedRunReport): string[] {
  const bad = r.problems.filter((p) => !p.ok).length;
  const checked = r.problems.some((p) => p.reference !== null);
  const withSim = r.simHazards !== null;
  const verdict = bad > 0
    ? `MISMATCH in ${bad} of ${r.problems.length} problems`
    : (r.simHazards ?? 0) > 0
    ? "HAZARDS in the simulator; every problem agrees"
    : !checked
    ? `RAN (${r.problems.length} problems, not checked)`
    : `AGREES (${r.problems.length} problems) with the reference${
      withSim ? " and the simulator" : ""
    }`;
  const lines = [
    `${r.kernel}: ${verdict} (${r.totalTiles} tiles; persistent grid ${r.grid.join("x")})`,
  ];
  for (const [i, p] of r.problems.entries()) {
    const parts = [`${p.ok ? "agrees" : "MISMATCH"}`];
    const c = p.reference;
    if (c !== null) {
      parts.push(
        `${c.overBound} of ${c.elements} elements over the bound; relative Frobenius ${
          c.relFrobenius.toExponential(2)
        }; worst error/bound ${c.worstRatio.toFixed(3)}`,
      );
    }
    if (p.sim !== null) {
      parts.push(
        p.sim.maxUlp === null
          ? `simulator: ${
            p.sim.differing === 0 ? "identical" : `${p.sim.differing} elements differ`
          }`
          : `simulator: ${
            p.sim.differing === 0 ? "bit-identical" : `largest difference ${p.sim.maxUlp} ulp`
          }`,
      );
    }
    if ((p.unwritten ?? 0) > 0) parts.push(`${p.unwritten} elements unwritten`);
    if (p.gapWrites > 0) parts.push(`${p.gapWrites} writes outside D's view`);
    lines.push(`  problem ${i} (${sizesText(p.sizes)}; ${p.tiles} tiles): ${parts.join("; ")}`);
    if (c !== null && c.first !== null) {
      lines.push(
        `    first mismatch: element ${c.first.index}: got ${c.first.got}, want ${c.first.want}`,
      );
    }
  }
  if (r.simHazards !== null) {
    lines.push(r.simHazards === 0 ? "  hazards: none" : `  hazards: ${r.simHazards}`);
  }
  const t = r.timing;
  if (t !== null) {
    lines.push(
      `  time: median ${t.medianMs.toPrecision(4)} ms of ${t.iters} launches (min ${
        t.minMs.toPrecision(4)
      }, max ${t.maxMs.toPrecision(4)}; ${t.warmup} warm-up${t.pdl === true ? "; PDL" : ""}): ${
        t.rate.toPrecision(3)
      } ${t.unit}`,
    );
  }
  const f = r.function;
  lines.push(
    `  launch: persistent grid ${r.grid.join("x")}, block ${r.block.join("x")}, ` +
      `${r.dynamicSmemBytes} B dynamic shared memory; ${f.registers} registers, ` +
      `${f.localBytes} B local memory per thread`,
  );
  return lines;
}

/** Runs every kernel on the open device; false when one disagrees or fails. */
function runAll(
  prepared: Prepared,
  compiled: readonly CompiledKernel[],
  values: Values,
  counts: ReturnType<typeof launchCounts>,
  cuda: Cuda,
  reports: unknown[],
  io: CliIO,
): boolean {
  let kernels = compiled;
  const dv = cuda.device;
  // --tune without --sms: the schedule for this device's SM count, not an A100's. The
  // first compile (108 SMs) served the checks before, which do not depend on the tile
  // choice (sizes against alignments); only the tile choice may differ.
  const tunedHere = values.tune === true && values.sms === undefined;
  if (tunedHere) {
    const again = prepared.recompile(dv.multiprocessors);
    if (!again.ok) throw new Error("recompiling for the device's SM count failed");
    kernels = again.kernels;
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
  let ok = true;
  for (const ck of kernels) {
    // A device or simulator failure: said on stderr, the kernel counted as failed, the rest run.
    const attempt = <T>(f: () => T): T | null => {
      try {
        return f();
      } catch (e) {
        if (!(e instanceof CudaError || e instanceof SimError)) throw e;
        io.err(`gemm: ${ck.name}: ${e.message}\n`);
        if (values.json) reports.push({ kernel: ck.name, error: e.message });
        return null;
      }
    };
    if (ck.kernel.group !== undefined) {
      const g: GroupedRunReport | null = attempt(() =>
        runGrouped(ck, prepared.groups!, {
          seed: prepared.seed,
          check: counts.check,
          iters: counts.iters,
          warmup: counts.warmup,
          scalars: prepared.scalars,
          hazards: !values["no-hazards"],
          cuda,
          ...(full ? { simMaxWork: Infinity } : {}),
          ...(values.pdl === true ? { pdl: true } : {}),
        })
      );
      ok &&= g !== null && g.ok;
      if (g === null) continue;
      if (values.json) reports.push(groupedJson(g));
      else io.out(groupedLines(g).join("\n") + "\n");
      continue;
    }
    const rep: RunReport | null = attempt(() =>
      runGemm(ck, prepared.sizes, {
        seed: prepared.seed,
        ...counts,
        scalars: prepared.scalars,
        hazards: !values["no-hazards"],
        cuda,
        ...(full ? { refMaxMacs: Infinity, simMaxMacs: Infinity } : {}),
        ...(values.pdl === true ? { pdl: true } : {}),
      })
    );
    ok &&= rep !== null && rep.ok;
    if (rep === null) continue;
    if (values.json) reports.push(runJson(rep));
    else io.out(runLines(rep).join("\n") + "\n");
  }
  return ok;
}

function run(values: Values, positionals: string[], io: CliIO): number {
  const prepared = prepare("run", positionals, values, io);
  const { sizes } = prepared;
  const counts = launchCounts(values);
  const kernels = launchKernels(prepared, values.kernel, io);
  if (kernels === null) return 1;
  // Sizes and alignments of every kernel first: nothing touches the driver before.
  for (const ck of kernels) {
    try {
      if (ck.kernel.group !== undefined) {
        const limit = counts.check !== "sim"
          ? null
          : values["full-check"] === true
          ? Infinity
          : 2 ** 27;
        checkGroupedRun(ck, prepared.groups!, limit);
      } else checkRun(ck, sizes);
    } catch (e) {
      throw new UsageError(`${ck.name}: ${(e as Error).message}`);
    }
  }
  const cuda = openCuda(io);
  if (cuda === null) return 1;
  // --pdl on a driver without cuLaunchKernelEx: its one sentence up front, before any launch.
  if (values.pdl === true && counts.iters > 0) {
    try {
      requirePdl(cuda.driver, "the timed launches");
    } catch (e) {
      io.err(`gemm: --pdl: ${(e as Error).message}\n`);
      cuda.close();
      return 1;
    }
  }
  let ok = true;
  const reports: unknown[] = [];
  try {
    ok = runAll(prepared, kernels, values, counts, cuda, reports, io);
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

/** The `run` command. */
export const RUN: Command = command({
  name: "run",
  args: "FILE",
  summary: "Run the compiled PTX on the GPU (CUDA driver), check and time it",
  usage: 'run FILE [--size M=..,N=..,K=..[,L=..] | --groups "M=..,N=..,K=..;..."] [options]',
  about: `Compiles FILE, loads the PTX through the CUDA driver (libcuda.so.1), fills the
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
sustained state. With --pdl the warm-up and timed launches are programmatic
dependent launches; each timed launch is still timed alone between two events
of its own, so the overlap of one launch with the next that PDL allows shows
in back-to-back series (deno task bench --gpu --shapes llm --pdl) rather than
here.

A grouped kernel (DESIGN §6.2) runs every problem of --groups (each with its
own random inputs; the scalars shared) in one launch on a persistent grid, and
each problem is checked (with --check sim against the simulator's run of the
same launch, which is not sampled: its work is limited unless --full-check).
`,
  options: OPTIONS,
  notes: `Exit codes: 0 every kernel agrees, 1 a mismatch, a JIT or driver failure, no CUDA
driver, or errors in the input; 2 bad usage (sizes that break an alignment included).
`,
  run,
});
