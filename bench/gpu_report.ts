/**
 * What bench/gpu_bench.ts reports: one {@link BenchRow} per type and shape,
 * the line printed for it, the targets of issues 7, 22 and 23 met or missed, and the
 * CSV written to `bench/results/`.
 *
 * @module
 */

import type { BlasType } from "./cublas.ts";
import type { Ceiling } from "./gpu_measure.ts";
import type { DeviceInfo } from "../backends/cuda/driver.ts";

/** A problem of the benchmark: its name and sizes. */
export interface Problem {
  readonly shape: string;
  readonly M: number;
  readonly N: number;
  readonly K: number;
}

/** One row of the results. */
export interface BenchRow extends Problem {
  readonly type: BlasType;
  readonly kernel: string;
  readonly verified: boolean;
  readonly relError: number;
  /** Burst rate (TFLOPS or TOPS; {@link timeBurst}). */
  readonly ours: number;
  readonly cublas: number;
  /** Our burst rate in each round (each round's median). */
  readonly oursRounds: readonly number[];
  /** Sustained rate ({@link timeSustained}). */
  readonly oursSustained: number;
  readonly cublasSustained: number;
  readonly ceiling: Ceiling;
  /** SM clock read by bench/clock_probe.ts beside 10 launches after our sustained ones. */
  readonly clockOurs: number;
  /** The same after cuBLAS's sustained launches. */
  readonly clockBlas: number;
  /** Median SM clock sampled while our kernel ran sustained (nvidia-smi). */
  readonly smClockMHz: number | null;
  /** Median power draw sampled while our kernel ran sustained (nvidia-smi), W. */
  readonly powerW: number | null;
  /** Wall-clock window of our sustained launches, load included (ms since the epoch). */
  readonly window: readonly [number, number];
  readonly registers: number;
}

/** Our sustained rate over the (fixed-operand) ceiling's, each per SM clock cycle as the probe read it. */
export function perClock(r: BenchRow): number {
  return (r.oursSustained / r.clockOurs) / (r.ceiling.fixed / r.ceiling.fixedClock);
}

/** Issue 7's targets at 8192³: the least ratio to the ceiling measured in the same run. */
const TARGETS: Readonly<Record<string, number>> = {
  f16: 0.75,
  bf16: 0.75,
  tf32: 0.75,
  s8: 0.75,
  f64: 0.95,
};

/** The rows the 8192³ targets are stated for: by their sizes, so that `--shapes 8192x8192x8192`
 * is judged as the named shape `8192` is. */
function isCube8192(r: Problem): boolean {
  return r.M === 8192 && r.N === 8192 && r.K === 8192;
}

/** `met` where a verified row's ratio reaches `least`, else `MISSED`. */
function verdict(r: BenchRow, ratio: number, least: number): "met" | "MISSED" {
  return r.verified && ratio >= least ? "met" : "MISSED";
}

/**
 * Prints each target the run's rows are stated for, met or missed: at 8192³, issue 7's ratios to
 * the ceiling (sm80, sm86) or issue 23's to cuBLAS (sm90), in both states of the card; at 5000³,
 * issue 22's f16 share of the burst ceiling ({@link ODD_TARGET}).
 */
export function printTargets(rows: readonly BenchRow[], target?: string): void {
  if (target === "sm90") printHopperTargets(rows);
  else printCeilingTargets(rows);
  printOddTarget(rows);
}

/** {@link printTargets} at 8192³ for sm80 and sm86: issue 7's ratios to the ceiling. */
function printCeilingTargets(rows: readonly BenchRow[]): void {
  console.log(
    "# targets at 8192³ (ratio to the ceiling of this run; burst: the burst/fixed ceiling, " +
      "as ../shared/ANCHORS.md measures it; sustained: the sustained/random one)",
  );
  for (const r of rows.filter(isCube8192)) {
    const target = TARGETS[r.type];
    if (target === undefined) continue;
    const burst = r.ours / r.ceiling.fixed;
    const sustained = r.oursSustained / r.ceiling.sustained;
    console.log(
      `#   ${r.type.padEnd(5)} target ${target.toFixed(2)}: burst ${burst.toFixed(3)} ${
        verdict(r, burst, target)
      }, sustained ${sustained.toFixed(3)} ${verdict(r, sustained, target)}${
        r.verified ? "" : " (not verified)"
      }`,
    );
  }
}

/** Issue 23's targets at 8192³: the ratio to cuBLAS of the same run, in both states. */
const HOPPER_TARGETS: Readonly<Record<string, number>> = {
  f16: 1.0,
  bf16: 1.0,
  tf32: 0.95,
  s8: 0.95,
};

/** {@link printTargets} for `--target sm90`: issue 23's ratios to cuBLAS at 8192³. */
function printHopperTargets(rows: readonly BenchRow[]): void {
  console.log("# issue 23 targets at 8192³ (ratio to cuBLAS of the same run, burst and sustained)");
  for (const r of rows.filter(isCube8192)) {
    const target = HOPPER_TARGETS[r.type];
    if (target === undefined) continue;
    const burst = r.ours / r.cublas;
    const sustained = r.oursSustained / r.cublasSustained;
    console.log(
      `#   ${r.type.padEnd(5)} target ${target.toFixed(2)}x cuBLAS: burst ${burst.toFixed(3)} ${
        verdict(r, burst, target)
      }, sustained ${sustained.toFixed(3)} ${verdict(r, sustained, target)}`,
    );
  }
}

/** Issue 22's target at 5000³ (the shape `odd`): f16 at this share of the burst ceiling (the
 * mma.sync ceiling with fixed operands, as ../shared/ANCHORS.md measures it). */
const ODD_TARGET = { type: "f16", size: 5000, least: 0.78 } as const;

/** {@link printTargets} at 5000³: issue 22's f16 share of the burst ceiling, where the run has it. */
function printOddTarget(rows: readonly BenchRow[]): void {
  const { type, size, least } = ODD_TARGET;
  const r = rows.find((x) => x.type === type && x.M === size && x.N === size && x.K === size);
  if (r === undefined) return;
  const burst = r.ours / r.ceiling.fixed;
  console.log(
    `# issue 22 target at ${size}³: ${type} >= ${least} of the burst ceiling: ${burst.toFixed(3)} ${
      verdict(r, burst, least)
    }${r.verified ? "" : " (not verified)"}`,
  );
}

/**
 * The line printed for a row: the kernel, verified or not, and the burst and
 * sustained rates against cuBLAS and the ceiling.
 *
 * @param row The row.
 * @returns The line.
 */
export function rowLine(row: BenchRow): string {
  return (
    `${row.type.padEnd(5)} ${`${row.M}x${row.N}x${row.K}`.padEnd(16)} ${row.kernel.padEnd(46)} ` +
    `${row.verified ? "verified" : "WRONG   "}  burst: ours ${
      row.ours.toFixed(1).padStart(7)
    } cuBLAS ${row.cublas.toFixed(1).padStart(7)} ratio ${
      (row.ours / row.cublas).toFixed(2)
    } of ceiling ${(row.ours / row.ceiling.fixed).toFixed(2)}  |  sustained: ours ${
      row.oursSustained.toFixed(1).padStart(7)
    } cuBLAS ${row.cublasSustained.toFixed(1).padStart(7)} ratio ${
      (row.oursSustained / row.cublasSustained).toFixed(2)
    } of ceiling ${(row.oursSustained / row.ceiling.sustained).toFixed(2)} at ${
      row.clockOurs.toFixed(0)
    } MHz, per clock ${perClock(row).toFixed(2)}  (${row.registers} regs; burst rounds ${
      row.oursRounds.map((x) => x.toFixed(0)).join("/")
    })`
  );
}

/**
 * The CSV of `bench/results/`: its header and one line a row.
 *
 * @param rows The rows.
 * @param device The GPU.
 * @param date `YYYY-MM-DD`.
 * @returns The file's text.
 */
export function csvOf(rows: readonly BenchRow[], device: DeviceInfo, date: string): string {
  return [
    "date,gpu,driver,type,shape,M,N,K,kernel,verified,rel_error,ours_tflops,cublas_tflops,ceiling_tflops,ratio_cublas,ratio_ceiling,sm_clock_mhz,registers," +
    "ceiling_random_tflops,ceiling_sustained_tflops,ratio_ceiling_sustained,clock_ours_mhz,clock_cublas_mhz," +
    "clock_ceiling_mhz,clock_sustained_mhz,ratio_ceiling_per_clock,power_w," +
    "ours_sustained_tflops,cublas_sustained_tflops,ratio_cublas_sustained,ours_burst_rounds_tflops",
    ...rows.map((r) =>
      [
        date,
        device.name,
        device.driverVersionText,
        r.type,
        r.shape,
        r.M,
        r.N,
        r.K,
        r.kernel,
        r.verified,
        r.relError.toExponential(2),
        r.ours.toFixed(1),
        r.cublas.toFixed(1),
        r.ceiling.fixed.toFixed(1),
        (r.ours / r.cublas).toFixed(3),
        (r.ours / r.ceiling.fixed).toFixed(3),
        r.smClockMHz ?? "",
        r.registers,
        r.ceiling.random.toFixed(1),
        r.ceiling.sustained.toFixed(1),
        (r.oursSustained / r.ceiling.sustained).toFixed(3),
        r.clockOurs.toFixed(0),
        r.clockBlas.toFixed(0),
        r.ceiling.fixedClock.toFixed(0),
        r.ceiling.sustainedClock.toFixed(0),
        perClock(r).toFixed(3),
        r.powerW?.toFixed(0) ?? "",
        r.oursSustained.toFixed(1),
        r.cublasSustained.toFixed(1),
        (r.oursSustained / r.cublasSustained).toFixed(3),
        r.oursRounds.map((x) => x.toFixed(1)).join(" "),
      ].join(",")
    ),
  ].join("\n") + "\n";
}
