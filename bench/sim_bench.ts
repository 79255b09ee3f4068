/**
 * The simulator benchmark (issue 5): simulate a 256x256x256 f16 GEMM,
 * examples/hgemm.gemm at its default schedule, over the whole grid; report
 * the seconds the simulation takes (median of 3 runs after one warm-up run,
 * with the hazard checker on and off) and the simulated MMAs per second.
 * Target: <= 2 s with hazards on, on the project's 2-core machine.
 *
 * Run: `deno run -A bench/sim_bench.ts [--no-record]`; it prints a table and
 * writes `bench/results/sim-YYYY-MM-DD.md` (date, machine, Deno version,
 * command) unless `--no-record`. `deno task bench` runs it too.
 *
 * The timed span is the simulator alone (`simulateGemm`'s `seconds`): the
 * random inputs and the reference GEMM are outside it. Every timed run is also
 * checked against the reference, so a fast wrong simulator cannot pass.
 *
 * @module
 */

import { freshResultPath, resultDate, RESULTS_DIR } from "./results.ts";
import { compile } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { median } from "../harness/timing.ts";

/** The target: seconds for the whole 256^3 grid with hazards on. */
export const SIM_TARGET_SECONDS = 2;

/** One configuration's figures. */
export interface SimBenchRow {
  readonly hazards: boolean;
  /** Seconds of each timed run. */
  readonly runs: readonly number[];
  readonly median: number;
  readonly mmas: number;
  readonly mmasPerSecond: number;
  readonly warpInstructions: number;
}

/** The benchmark's result. */
export interface SimBenchResult {
  readonly example: string;
  readonly kernel: string;
  readonly sizes: Readonly<Record<string, number>>;
  readonly grid: readonly [number, number, number];
  readonly activeBlocks: number;
  readonly schedule: string;
  readonly rows: readonly SimBenchRow[];
}

/**
 * Runs the simulator benchmark.
 *
 * @param options `repeats` timed runs per configuration (default 3), after one warm-up.
 * @returns The figures.
 */
export function runSimBench(options: { repeats?: number } = {}): SimBenchResult {
  const repeats = options.repeats ?? 3;
  const file = "examples/hgemm.gemm";
  const source = Deno.readTextFileSync(new URL(`../${file}`, import.meta.url));
  const r = compile(source, { file });
  if (!r.ok) throw new Error(`${file} does not compile`);
  const ck = r.kernels[0]!;
  const sizes = { M: 256, N: 256, K: 256 };
  const tile = ck.planned.plan.tile!.threadblock;
  const pipe = ck.planned.plan.pipeline!;
  const rows: SimBenchRow[] = [];
  let grid: readonly [number, number, number] = [0, 0, 0];
  for (const hazards of [true, false]) {
    const runs: number[] = [];
    let mmas = 0;
    let warpInstructions = 0;
    for (let i = 0; i <= repeats; i++) {
      const rep = simulateGemm(ck, sizes, { seed: 100 + i, hazards });
      if (!rep.ok) {
        throw new Error(
          `simulation disagrees with the reference (hazards ${hazards}): ${
            JSON.stringify(rep.comparison.first)
          }, ${rep.sim.hazardCount} hazards`,
        );
      }
      grid = rep.grid;
      mmas = rep.sim.stats.mmas;
      warpInstructions = rep.sim.stats.warpInstructions;
      if (i > 0) runs.push(rep.seconds); // run 0 warms up
    }
    const med = median(runs);
    rows.push({ hazards, runs, median: med, mmas, mmasPerSecond: mmas / med, warpInstructions });
  }
  return {
    example: file,
    kernel: ck.name,
    sizes,
    grid,
    activeBlocks: Math.ceil(sizes.M / tile.m) * Math.ceil(sizes.N / tile.n),
    schedule: `threadblock ${tile.m}x${tile.n}x${tile.k}, ${ck.kernel.threads} threads, ` +
      `mma ${ck.planned.plan.mma?.shape}, stages ${pipe.stages}, swizzle ${
        ck.planned.plan.tile!.swizzle
      }`,
    rows,
  };
}

/** The machine, as the record states it. */
export interface MachineInfo {
  readonly nproc: string;
  readonly cpu: string;
  readonly deno: string;
}

async function commandOutput(cmd: string, args: string[]): Promise<string | null> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "null" }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  } catch {
    return null;
  }
}

/**
 * `nproc`, the CPU model from /proc/cpuinfo, and Deno's version. /proc/cpuinfo
 * is read through `grep` because Deno reads /proc files only with --allow-all.
 */
export async function machineInfo(): Promise<MachineInfo> {
  const nproc = await commandOutput("nproc", []) ?? String(navigator.hardwareConcurrency);
  const line = await commandOutput("grep", ["-m1", "^model name", "/proc/cpuinfo"]);
  const cpu = line === null ? "unknown" : line.replace(/^model name\s*:\s*/, "");
  return { nproc, cpu, deno: `${Deno.version.deno} (V8 ${Deno.version.v8})` };
}

/** The result as a Markdown table (also what the terminal shows). */
export function simBenchTable(r: SimBenchResult): string {
  const lines = [
    `| hazards | median s | runs (s) | MMAs | MMAs/s | warp-instructions | target <= ${SIM_TARGET_SECONDS} s |`,
    "| ------- | -------: | -------- | ---: | -----: | ----------------: | ------------ |",
  ];
  for (const row of r.rows) {
    lines.push(
      `| ${row.hazards ? "on" : "off"} | ${row.median.toFixed(3)} | ${
        row.runs.map((x) => x.toFixed(3)).join(", ")
      } | ${row.mmas} | ${
        Math.round(row.mmasPerSecond).toLocaleString("en-US")
      } | ${row.warpInstructions} | ${row.median <= SIM_TARGET_SECONDS ? "met" : "MISSED"} |`,
    );
  }
  return lines.join("\n");
}

/**
 * The record written to `bench/results/sim-DATE.md`.
 *
 * @param r The figures.
 * @param m The machine.
 * @param date `YYYY-MM-DD`.
 * @param command The command that produced it.
 */
export function simBenchRecord(
  r: SimBenchResult,
  m: MachineInfo,
  date: string,
  command: string,
): string {
  const sz = Object.entries(r.sizes).map(([k, v]) => `${k}=${v}`).join(", ");
  return `# Simulator benchmark, ${date}

\`${r.example}\` (kernel \`${r.kernel}\`, f16 x f16 -> f32) at ${sz}, default schedule, whole grid.

- Schedule: ${r.schedule}
- Grid: ${
    r.grid.join("x")
  } (${r.activeBlocks} blocks compute a tile; the others exit at the rasterisation check)
- Timing: the simulator alone (\`simulateGemm\`'s \`seconds\`; inputs and the reference are outside),
  median of ${r.rows[0]?.runs.length} runs after one warm-up run
- Checked: every run agrees with the reference GEMM, with no hazard
- Target: <= ${SIM_TARGET_SECONDS} s with hazards on
- Date: ${date}
- Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}
- Deno: ${m.deno}
- Command: \`${command}\`

${simBenchTable(r)}
`;
}

/**
 * Runs the benchmark, prints the table and writes the record.
 *
 * @param record Whether to write `bench/results/sim-DATE.md` (`sim-DATE-2.md`, ... when taken).
 * @param command The command line to record.
 * @returns The figures.
 */
export async function simBenchMain(record: boolean, command: string): Promise<SimBenchResult> {
  const r = runSimBench();
  console.log(
    `Simulator: ${r.example} (${r.kernel}) at ${
      Object.entries(r.sizes).map(([k, v]) => `${k}=${v}`).join(",")
    }, grid ${r.grid.join("x")}, ${r.schedule}`,
  );
  console.log(simBenchTable(r));
  if (record) {
    const date = resultDate();
    // A new file: a record already there (committed) is never rewritten.
    const path = freshResultPath(RESULTS_DIR, `sim-${date}`, ".md");
    Deno.writeTextFileSync(path, simBenchRecord(r, await machineInfo(), date, command));
    // Formatted as `deno fmt --check` (CI) wants it; best effort.
    await commandOutput(Deno.execPath(), ["fmt", "--quiet", path]);
    console.log(`Recorded in bench/results/${path.slice(path.lastIndexOf("/") + 1)}`);
  }
  return r;
}

if (import.meta.main) {
  await simBenchMain(
    !Deno.args.includes("--no-record"),
    ["deno run -A bench/sim_bench.ts", ...Deno.args].join(" "),
  );
}
