/**
 * `gemm simulate FILE --size ...`: runs the compiled kernel IR on the CPU
 * over the whole grid, compares it with the reference GEMM and reports
 * hazards and statistics.
 *
 * @module
 */

import { SIM_WORK_LIMIT, simulateGemm, type SimulateReport } from "../harness/simulate_gemm.ts";
import { SimError } from "../backends/sim/mod.ts";
import { type GroupedReport, simulateGrouped } from "../harness/simulate_grouped.ts";
import { defaultSmsText } from "../ir/target.ts";
import {
  GROUPS_OPTION,
  hazardLines,
  JSON_OPTION,
  kernelOption,
  noHazardsOption,
  nonNegative,
  PDL_COMPILE_OPTION,
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
import { launchKernels, prepare } from "./launch.ts";
import {
  type CliIO,
  type Command,
  command,
  HELP_OPTION,
  type OptionValues,
  UsageError,
} from "./options.ts";

const OPTIONS = [
  SIZE_OPTION,
  GROUPS_OPTION,
  kernelOption("Simulate only this kernel"),
  SEED_OPTION,
  SCALAR_OPTION,
  TARGET_OPTION,
  noHazardsOption("Skip the hazard checker (faster)"),
  tuneOption(TUNE_HELP),
  smsOption(`default ${defaultSmsText()}`),
  PDL_COMPILE_OPTION,
  PDL_EARLY_OPTION,
  PDL_TRIGGER_OPTION,
  {
    name: "max-work",
    type: "string",
    default: String(SIM_WORK_LIMIT),
    value: "N",
    help: "Refuse sizes whose multiply-adds plus tensor elements exceed N (default {default})",
  },
  JSON_OPTION,
  HELP_OPTION,
] as const;

function fmtStats(r: Pick<SimulateReport, "sim">): string[] {
  const st = r.sim.stats;
  const kinds = Object.entries(st.byKind).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`).join(", ");
  const bank = (n: string, b: { wavefronts: number; ideal: number; requests: number }) =>
    `${n} ${b.wavefronts}/${b.ideal}`;
  // TMA (sm90's bulk tensor copies and their mbarriers): only for a kernel that uses them.
  const tma = st.tmaCopies > 0 || st.mbarrierBlocked > 0
    ? [
      `  tma: ${st.tmaCopies} copies, ${st.tmaBytes} B to shared memory; ` +
      `${st.mbarrierBlocked} mbarrier waits blocked`,
    ]
    : [];
  return [
    `  stats: ${st.warpInstructions} warp-instructions (${kinds})`,
    `  memory: global read ${st.globalBytesRead} B, written ${st.globalBytesWritten} B; ` +
    `shared read ${st.sharedBytesRead} B, written ${st.sharedBytesWritten} B; ${st.mmas} mma` +
    (st.l2Prefetches > 0 ? `; ${st.l2Prefetches} L2 prefetches` : ""),
    ...tma,
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

/** The JSON record of one report. */
function reportJson(rep: SimulateReport): unknown {
  const c = rep.comparison;
  return {
    kernel: rep.kernel,
    sizes: rep.sizes,
    grid: rep.grid,
    seconds: rep.seconds,
    ...comparisonJson(c),
    hazards: rep.sim.hazards,
    hazardCount: rep.sim.hazardCount,
    stats: rep.sim.stats,
  };
}

/** The comparison's fields of a JSON record. */
function comparisonJson(c: SimulateReport["comparison"]) {
  return {
    agree: c.ok,
    elements: c.elements,
    overBound: c.overBound,
    relFrobenius: c.relFrobenius,
    worstRatio: c.worstRatio,
    maxAbsError: c.maxAbsError,
  };
}

/** The JSON record of a grouped kernel's report. */
function groupedJson(rep: GroupedReport): unknown {
  return {
    kernel: rep.kernel,
    grid: rep.grid,
    totalTiles: rep.totalTiles,
    seconds: rep.seconds,
    agree: rep.ok,
    problems: rep.problems.map((p) => ({
      sizes: p.sizes,
      tiles: p.tiles,
      ...comparisonJson(p.comparison),
      gapWrites: p.gapWrites,
    })),
    hazards: rep.sim.hazards,
    hazardCount: rep.sim.hazardCount,
    stats: rep.sim.stats,
  };
}

/** The error line of a comparison. */
function errorLine(c: SimulateReport["comparison"]): string {
  return `${c.overBound} of ${c.elements} elements over the bound; relative Frobenius ${
    c.relFrobenius.toExponential(2)
  }; worst error/bound ${c.worstRatio.toFixed(3)}; max |error| ${c.maxAbsError.toExponential(2)}`;
}

/** The text report of a grouped kernel: one line per problem. */
function groupedLines(name: string, rep: GroupedReport): string[] {
  const bad = rep.problems.filter((p) => !p.ok).length;
  const verdict = bad > 0
    ? `MISMATCH in ${bad} of ${rep.problems.length} problems with`
    : rep.sim.hazardCount > 0
    ? "HAZARDS, every problem agrees with"
    : `AGREES (${rep.problems.length} problems) with`;
  const lines = [
    `${name}: ${verdict} the reference (${rep.totalTiles} tiles; persistent grid ${
      rep.grid.join("x")
    }; ${rep.seconds.toFixed(2)} s simulated)`,
  ];
  for (const [i, p] of rep.problems.entries()) {
    const c = p.comparison;
    lines.push(
      `  problem ${i} (${sizesText(p.sizes)}; ${p.tiles} tiles): ${p.ok ? "agrees" : "MISMATCH"}; ${
        errorLine(c)
      }${p.gapWrites > 0 ? `; ${p.gapWrites} writes outside D's view` : ""}`,
    );
    lines.push(...firstMismatch(c, "    "));
  }
  return [...lines, ...simTail(rep)];
}

/** The line of a comparison's first mismatch, if any. */
function firstMismatch(c: SimulateReport["comparison"], indent: string): string[] {
  return c.first === null ? [] : [
    `${indent}first mismatch: element ${c.first.index}: got ${c.first.got}, want ${c.first.want}`,
  ];
}

/** The hazard and statistics lines that end every report. */
function simTail(rep: Pick<SimulateReport, "sim">): string[] {
  return [
    ...(rep.sim.hazardCount === 0
      ? ["  hazards: none"]
      : hazardLines(rep.sim.hazardCount, rep.sim.hazards)),
    ...fmtStats(rep),
  ];
}

/** The text report of one kernel. */
function reportLines(name: string, rep: SimulateReport): string[] {
  const c = rep.comparison;
  const sz = sizesText(rep.sizes);
  const verdict = !c.ok
    ? "MISMATCH with"
    : rep.sim.hazardCount > 0
    ? "HAZARDS, output agrees with"
    : "AGREES with";
  const lines = [
    `${name}: ${verdict} the reference (${sz}; grid ${rep.grid.join("x")}; ${
      rep.seconds.toFixed(2)
    } s simulated)`,
    `  error: ${errorLine(c)}`,
    ...firstMismatch(c, "  "),
  ];
  return [...lines, ...simTail(rep)];
}

function run(values: OptionValues<typeof OPTIONS>, positionals: string[], io: CliIO): number {
  const prepared = prepare("simulate", positionals, values, io);
  const { sizes, seed, scalars } = prepared;
  const maxWork = nonNegative("max-work", values["max-work"]);
  const kernels = launchKernels(prepared, values.kernel, io);
  if (kernels === null) return 1;
  let ok = true;
  const reports: unknown[] = [];
  for (const ck of kernels) {
    let rep: SimulateReport | GroupedReport;
    const opts = { seed, scalars, hazards: !values["no-hazards"], maxWork };
    try {
      rep = ck.kernel.group !== undefined
        ? simulateGrouped(ck, prepared.groups!, opts)
        : simulateGemm(ck, sizes, opts);
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
    if ("problems" in rep) {
      if (values.json) reports.push(groupedJson(rep));
      else io.out(groupedLines(ck.name, rep).join("\n") + "\n");
    } else if (values.json) reports.push(reportJson(rep));
    else io.out(reportLines(ck.name, rep).join("\n") + "\n");
  }
  if (values.json) io.out(JSON.stringify({ reports }, null, 2) + "\n");
  return ok ? 0 : 1;
}

/** The `simulate` command. */
export const SIMULATE: Command = command({
  name: "simulate",
  args: "FILE",
  summary: "Run the compiled kernel IR on the CPU and check it",
  usage: 'simulate FILE [--size M=..,N=..,K=..[,L=..] | --groups "M=..,N=..,K=..;..."] [options]',
  about: `Compiles FILE, fills the inputs with random values (never zeros), poisons the
output, runs the kernel IR on the CPU over the whole grid, and compares the
output with a reference GEMM (integers: identical; floats: within a bound per
element, see harness/reference.ts). Also reports shared-memory hazards
and statistics. A grouped kernel runs every problem of --groups in one launch
(each with its own inputs) and each is checked.
`,
  options: OPTIONS,
  notes: "Exit codes: 0 agreement and no hazard, 1 mismatch, hazard or errors in the input.\n",
  run,
});
