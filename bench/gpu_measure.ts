/**
 * How bench/gpu_bench.ts measures the card (bench/NOTES.md 26): launches
 * timed in a burst after a rest and sustained under load, the SM clock read
 * beside them (bench/clock_probe.ts) and sampled by nvidia-smi, and the
 * mma.sync / fma ceilings measured on the spot (bench/mma_peak.ts); and for
 * the short kernels of bench/llm.ts, back-to-back series of launches between
 * one pair of events, in the same two states ({@link timeBurstSeries},
 * {@link timeSustainedSeries}).
 *
 * @module
 */

import type { Cuda, CudaFunction } from "../backends/cuda/driver.ts";
import { median, timeLaunches, withEvents } from "../harness/timing.ts";
import { printPtx } from "../backends/ptx/print.ts";
import {
  ffmaKernel,
  ffmaOps,
  PEAK_SHAPES,
  PEAK_THREADS,
  peakKernel,
  type PeakOperands,
  peakOps,
} from "./mma_peak.ts";
import type { ClockProbe } from "./clock_probe.ts";

/**
 * Samples the SM clock and the power draw every 50 ms with nvidia-smi in the
 * background. nvidia-smi writes to a file, not a pipe: the benchmark blocks
 * the thread (synchronous FFI, rests), so nothing would drain a pipe, and
 * nvidia-smi stopped once its 64 KiB were full (bench/NOTES.md 26).
 */
export class ClockSampler {
  readonly #child: Deno.ChildProcess | null;
  readonly #file: string;

  constructor() {
    let child: Deno.ChildProcess | null = null;
    this.#file = Deno.makeTempFileSync({ prefix: "gemmc-smi-", suffix: ".csv" });
    try {
      // The instantaneous power where the driver has it: `power.draw` is a
      // one-second average on recent drivers, which hides 60 ms bursts.
      const instant = new Deno.Command("nvidia-smi", {
        args: ["--query-gpu=power.draw.instant", "--format=csv,noheader,nounits"],
        stdout: "piped",
        stderr: "null",
      }).outputSync();
      const ok = instant.success && /^\s*[\d.]+\s*$/.test(new TextDecoder().decode(instant.stdout));
      child = new Deno.Command("nvidia-smi", {
        args: [
          `--query-gpu=timestamp,clocks.sm,${ok ? "power.draw.instant" : "power.draw"}`,
          "--format=csv,noheader,nounits",
          "-lms",
          "50",
          "-f",
          this.#file,
        ],
        stdout: "null",
        stderr: "null",
      }).spawn();
    } catch {
      child = null;
    }
    this.#child = child;
  }

  /** Stops sampling; returns (time in ms since the epoch, MHz, W) triples. */
  async stop(): Promise<[number, number, number][]> {
    if (this.#child === null) {
      Deno.removeSync(this.#file);
      return [];
    }
    try {
      this.#child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await this.#child.status;
    const text = Deno.readTextFileSync(this.#file);
    Deno.removeSync(this.#file);
    const out: [number, number, number][] = [];
    for (const line of text.split("\n")) {
      const m = /^(\d+)\/(\d+)\/(\d+) (\d+):(\d+):(\d+)\.(\d+),\s*(\d+),\s*([\d.]+)/.exec(
        line.trim(),
      );
      if (m === null) continue;
      const t = Date.UTC(
        +m[1]!,
        +m[2]! - 1,
        +m[3]!,
        +m[4]!,
        +m[5]!,
        +m[6]!,
        +m[7]!.padEnd(3, "0").slice(0, 3),
      );
      out.push([t, +m[8]!, +m[9]!]);
    }
    return out;
  }
}

/**
 * Times `launch` with events: `warmup` untimed, median of `iters` (ms).
 *
 * @param cuda The context.
 * @param launch Launches once.
 * @param warmup Untimed launches.
 * @param iters Timed launches.
 * @returns The median (ms).
 */
export function timeIt(
  cuda: Cuda,
  launch: (i: number) => void,
  warmup: number,
  iters: number,
): number {
  return median(timeLaunches(cuda, launch, warmup, iters));
}

/**
 * How the card is measured (bench/NOTES.md 26). After a rest the H200 runs
 * full tensor-core load at its boost clock for ~80 ms; then the 700 W cap
 * pulls the clock down to where it stays. A series that straddles the step
 * (the benchmark's old 25 launches of a 4 ms tf32 kernel) lands on either
 * side of it from one run to the next, so each state is timed on its own.
 */
const BURST = { rounds: 3, restMs: 1000, windowMs: 40, minIters: 3, maxIters: 20 } as const;
const SUSTAINED = { loadMs: 1500, iters: 20 } as const;

/** A burst measurement: the median of all launches, and each round's median (ms). */
export interface Burst {
  readonly ms: number;
  readonly rounds: readonly number[];
}

/**
 * Burst: {@link BURST}.rounds series, each after a rest, of as many launches
 * (about `estMs` each) as fit in {@link BURST}.windowMs, after 1–2 warm-up
 * launches; the median over all their launches.
 */
export function timeBurst(cuda: Cuda, launch: (i: number) => void, estMs: number): Burst {
  const iters = Math.max(
    BURST.minIters,
    Math.min(BURST.maxIters, Math.floor(BURST.windowMs / estMs)),
  );
  const warm = estMs > 5 ? 1 : 2;
  const all: number[] = [];
  const rounds: number[] = [];
  for (let r = 0; r < BURST.rounds; r++) {
    sleepMs(BURST.restMs);
    const ms = timeLaunches(cuda, (i) => launch(i + r * iters), warm, iters);
    all.push(...ms);
    rounds.push(median(ms));
  }
  return { ms: median(all), rounds };
}

/**
 * Loads the card: `launch(0..n-1)` for about {@link SUSTAINED}.loadMs, `n` from
 * `estMs` a launch, stopping early when the host has spent that long queueing
 * (launches the host queues more slowly than the GPU runs them). Not
 * synchronised: what follows queues behind the load.
 *
 * @returns The launches queued.
 */
function loadCard(launch: (i: number) => void, estMs: number): number {
  const n = Math.ceil(SUSTAINED.loadMs / estMs);
  const t0 = performance.now();
  let i = 0;
  for (; i < n; i++) {
    launch(i);
    if (i % 256 === 255 && performance.now() - t0 >= SUSTAINED.loadMs) break;
  }
  return i;
}

/**
 * A back-to-back series (bench/llm.ts, issue 22): {@link Series.launches}
 * launches queued between one pair of events, for kernels so short that one
 * launch's overhead dominates per-launch event timing.
 */
export interface Series {
  /** Launches once; `i` counts on from series to series of one measurement. */
  readonly launch: (i: number) => void;
  /** Launches per series. */
  readonly launches: number;
  /** Queued before each series' start event (bench/llm.ts: a hold kernel, so that the
   * host has queued the whole series before the GPU reaches its first launch). */
  readonly before?: () => void;
}

/** One series' figures. */
export interface SeriesTime {
  /** GPU time per launch (ms): the events' interval over the launches. */
  readonly ms: number;
  /** Host time (ms) to queue the launches and the end event, `before` not included. */
  readonly hostMs: number;
}

/** A measurement of several series: the median and each series' figures. */
export interface SeriesMeasurement {
  /** The median over the series of the time per launch (ms). */
  readonly ms: number;
  readonly series: readonly SeriesTime[];
}

/**
 * Times one back-to-back series: `s.before`, the start event, `s.launches`
 * launches (`first`, `first + 1`, ...), the end event; the events are
 * destroyed on every path.
 */
export function timeSeries(cuda: Cuda, s: Series, first = 0): SeriesTime {
  return withEvents(cuda, 2, (ev) => {
    s.before?.();
    const t0 = performance.now();
    ev[0]!.record();
    for (let i = 0; i < s.launches; i++) s.launch(first + i);
    ev[1]!.record();
    const hostMs = performance.now() - t0;
    ev[1]!.synchronize();
    return { ms: ev[1]!.elapsedSince(ev[0]!) / s.launches, hostMs };
  });
}

/**
 * Back-to-back series per state (issue 22): 3 burst rounds (each after a rest,
 * as {@link BURST} has 3 short series), 5 sustained series after the load.
 */
const SERIES = { burstRounds: BURST.rounds, sustainedCount: 5, warmup: 2 } as const;

/**
 * Burst, in back-to-back series: {@link SERIES}.burstRounds rounds, each
 * after a {@link BURST}.restMs rest, in which every series of `all` runs once
 * (after {@link SERIES}.warmup untimed launches), the order rotated from
 * round to round. The series share the rest: each lasts a few ms, well inside
 * the ~80 ms the card holds its boost clock after one (bench/NOTES.md 26).
 *
 * @returns Per series of `all`, the median over the rounds.
 */
export function timeBurstSeries(
  cuda: Cuda,
  all: readonly Series[],
  rounds: number = SERIES.burstRounds,
): SeriesMeasurement[] {
  const got: SeriesTime[][] = all.map(() => []);
  for (let r = 0; r < rounds; r++) {
    sleepMs(BURST.restMs);
    for (let j = 0; j < all.length; j++) {
      const at = (j + r) % all.length;
      const s = all[at]!;
      const first = r * (s.launches + SERIES.warmup);
      for (let w = 0; w < SERIES.warmup; w++) s.launch(first + w);
      got[at]!.push(timeSeries(cuda, s, first + SERIES.warmup));
    }
  }
  return got.map((series) => ({ ms: median(series.map((t) => t.ms)), series }));
}

/** Sustained: {@link SUSTAINED}.loadMs of launches, then the median of {@link SUSTAINED}.iters (ms). */
export function timeSustained(cuda: Cuda, launch: (i: number) => void, estMs: number): number {
  loadCard(launch, estMs);
  return timeIt(cuda, launch, 0, SUSTAINED.iters);
}

/**
 * Sustained, in back-to-back series: {@link SUSTAINED}.loadMs of `s`'s
 * launches, then the median of `count` series of `s` ({@link timeSeries}).
 */
export function timeSustainedSeries(
  cuda: Cuda,
  s: Series,
  estMs: number,
  count: number = SERIES.sustainedCount,
): SeriesMeasurement {
  const loaded = loadCard(s.launch, estMs);
  const times = Array.from(
    { length: count },
    (_, k) => timeSeries(cuda, s, loaded + k * s.launches),
  );
  return { ms: median(times.map((t) => t.ms)), series: times };
}

/** Launches after a timed series, during which the clock probe runs beside them. */
const PROBE_LAUNCHES = 10;

/**
 * The SM clock (MHz) while `launch` runs {@link PROBE_LAUNCHES} more times
 * (each about `ms`), read by the probe beside them (bench/clock_probe.ts).
 */
export function clockDuring(probe: ClockProbe, launch: (i: number) => void, ms: number): number {
  return probe.during(() => {
    for (let i = 0; i < PROBE_LAUNCHES; i++) launch(i);
  }, 0.8 * PROBE_LAUNCHES * ms * 1e6);
}

/** One type's mma.sync ceilings (TOPS) and the SM clock (MHz) each ran at. */
export interface Ceiling {
  /** Operands fixed per thread: the ceiling as ../shared/ANCHORS.md measures it. */
  readonly fixed: number;
  readonly fixedClock: number;
  /** Random operands rotated across MMAs, same short burst. */
  readonly random: number;
  readonly randomClock: number;
  /** Random operands after {@link SUSTAINED}.loadMs of load (launches of about
   * 2.7 ms): the ceiling under the card's power cap, against which the
   * sustained GEMM rates are taken. */
  readonly sustained: number;
  readonly sustainedClock: number;
}

/** Blocks the thread for `ms` (a rest for the card between measurements). */
function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * The ceilings per type: mma.sync for the tensor-core types, `fma.rn.f32`
 * for `f32` (math f32 runs on the CUDA cores), and for `3xtf32` the tf32
 * ceiling over 3 (three MMAs a product). Given `types`, only those (each
 * measurement of a type takes ~3 s: its sustained figure loads the card).
 */
export function ceilings(
  cuda: Cuda,
  probe: ClockProbe,
  types?: readonly string[],
): Map<string, Ceiling> {
  const out = new Map<string, Ceiling>();
  const wanted = (t: string) =>
    types === undefined || types.includes(t) || (t === "tf32" && types.includes("3xtf32"));
  const kinds = [
    ...Object.entries(PEAK_SHAPES).map(([t, s]) => ({
      t,
      make: (o: PeakOperands) => peakKernel(s, undefined, o),
      ops: (blocks: number, iters: number) => peakOps(s, blocks, iters),
      iters: 2048,
    })),
    { t: "f32", make: ffmaKernel, ops: ffmaOps, iters: 4096 },
  ].filter((k) => wanted(k.t));
  const kernels = kinds.flatMap((k) =>
    (["fixed", "random"] as const).map((o) => [k, o, k.make(o)] as const)
  );
  const mod = cuda.loadModule(printPtx(kernels.map((k) => k[2]), { minBlocksPerSm: 1 }));
  const blocks = cuda.device.multiprocessors * 4;
  const buf = cuda.alloc(blocks * PEAK_THREADS * 8);
  const got = new Map<string, [number, number]>();
  const measure = (fn: CudaFunction, ops: number, iters: number, sustained: boolean) => {
    const launch = () =>
      cuda.launch(
        fn,
        { grid: [blocks, 1, 1], block: [PEAK_THREADS, 1, 1], dynamicSmemBytes: 0 },
        [
          { type: "u64", value: buf.ptr },
          { type: "u32", value: iters },
        ],
      );
    const ms = sustained
      ? timeSustained(cuda, launch, timeIt(cuda, launch, 1, 2))
      : timeIt(cuda, launch, 2, 5);
    return [ops / (ms * 1e-3) / 1e12, clockDuring(probe, launch, ms)] as [number, number];
  };
  for (const [k, o, kernel] of kernels) {
    const fn = mod.getFunction(kernel.name);
    got.set(`${k.t} ${o}`, measure(fn, k.ops(blocks, k.iters), k.iters, false));
    if (o === "random") {
      got.set(`${k.t} sustained`, measure(fn, k.ops(blocks, 3 * k.iters), 3 * k.iters, true));
      sleepMs(1000);
    }
  }
  for (const { t } of kinds) {
    const [fixed, fixedClock] = got.get(`${t} fixed`)!;
    const [random, randomClock] = got.get(`${t} random`)!;
    const [sustained, sustainedClock] = got.get(`${t} sustained`)!;
    out.set(t, { fixed, fixedClock, random, randomClock, sustained, sustainedClock });
  }
  const tf = out.get("tf32");
  if (tf !== undefined) {
    out.set("3xtf32", {
      ...tf,
      fixed: tf.fixed / 3,
      random: tf.random / 3,
      sustained: tf.sustained / 3,
    });
  }
  buf.free();
  mod.unload();
  return out;
}
