/**
 * `deno task bench --fp8`: gemmc's 8-bit float GEMM on sm90 (issue 23) against
 * `torch._scaled_mm`, in the same run.
 *
 * For `e4m3` (A and B e4m3; bench/kernels/e4m3.gemm) and `e4m3_e5m2` (B e5m2;
 * bench/kernels/e4m3_e5m2.gemm), A `[M, K]` row-major, B `[K, N]` column-major,
 * D `[M, N]` bf16 row-major, `D = bf16(sa * sb * A @ B)` with per-tensor f32
 * scales ({@link FP8_SCALES}: 0.5 and 0.25, powers of two whose product is not
 * 1, so that a dropped scale fails the check), at 8192³, 4096³ and an odd
 * 5008³ (5000 rounded up to a multiple of 16, the least `torch._scaled_mm`
 * takes; not a multiple of 32, so the last tile is partial in M, N and K):
 *
 * 1. gemmc's kernel, compiled for sm90 at its default schedule for the problem
 *    (the sizes as hints and the device's SM count: bench/gpu_bench.ts
 *    `compileSource`), loaded with random inputs (uniform in [-1, 1) rounded
 *    to the format; several sets rotated so that L2 does not flatter:
 *    `load`), launched once on poisoned D and checked against the reference on
 *    sampled rows and columns (`verify`), then timed in the house's two states
 *    (bench/gpu_measure.ts, bench/NOTES.md 26): burst (3 rounds after 1 s
 *    rests) and sustained (after 1.5 s of load), with the SM clock read beside
 *    10 more launches (`clockDuring`) and nvidia-smi's clock and power over the
 *    sustained series. A kernel that does not compile, load or launch is a
 *    recorded row, not a crash.
 * 2. Once our context is closed, the peer (bench/peers/fp8_peers.py):
 *    `torch._scaled_mm(A, B, scale_a, scale_b, out_dtype=torch.bfloat16)` on
 *    the same shapes, layouts, formats and scales, checked against a float64
 *    reference, timed the same two ways; and the same with
 *    `use_fast_accum=True` (no target: gemmc, like it, keeps the sums in the
 *    wgmma accumulator throughout K).
 *
 * Prints the table (per type, shape and state: gemmc's TFLOP/s, the peer's,
 * the ratio) and the target (issue 23: e4m3 8192³ at >= 0.9x
 * `torch._scaled_mm` in both states), and writes `bench/results/fp8-DATE.md`
 * ({@link fp8Report}; a new file when one exists) with the raw figures beside
 * it as JSON.
 *
 * `deno run -A bench/fp8.ts [--types e4m3,e4m3_e5m2] [--shapes 8192,4096,odd]
 * [--no-peers] [--out DIR] [--dry]`; `--dry` compiles the kernels for an H200
 * (132 SMs; `--sms N`) and prints the plan and the peer's, with no GPU. Without
 * a driver it says so on stderr and exits 1.
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import { Cuda, cudaAvailable, type DeviceBuffer } from "../backends/cuda/driver.ts";
import { median } from "../harness/timing.ts";
import { ClockProbe } from "./clock_probe.ts";
import { clockDuring, ClockSampler, timeBurst, timeIt, timeSustained } from "./gpu_measure.ts";
import { compileSource, load, verify, withSchedule } from "./gpu_bench.ts";
import type { Problem } from "./gpu_report.ts";
import { freshResultPath, resultDate, RESULTS_DIR } from "./results.ts";

/** The benchmark's types: A e4m3, and B e4m3 or e5m2. */
export type Fp8BenchType = "e4m3" | "e4m3_e5m2";

/** Every {@link Fp8BenchType}, in the report's order. */
export const FP8_BENCH_TYPES: readonly Fp8BenchType[] = ["e4m3", "e4m3_e5m2"];

/** The measurement states, in the report's order. */
export const FP8_STATES = ["burst", "sustained"] as const;

/** A measurement state. */
export type Fp8State = (typeof FP8_STATES)[number];

/** The default problems: 8192³, 4096³ and the odd 5008³ (a multiple of 16, not of 32). */
export const FP8_PROBLEMS: readonly Problem[] = [
  { shape: "8192", M: 8192, N: 8192, K: 8192 },
  { shape: "4096", M: 4096, N: 4096, K: 4096 },
  { shape: "odd", M: 5008, N: 5008, K: 5008 },
];

/** The per-tensor scales both gemmc and the peer are given. */
export const FP8_SCALES: Readonly<{ sa: number; sb: number }> = { sa: 0.5, sb: 0.25 };

/** Issue 23's target: this type at this cube, at least `ratio` of `torch._scaled_mm`. */
export const FP8_TARGET = { type: "e4m3", size: 8192, ratio: 0.9 } as const;

/** One of gemmc's kernels at one problem. */
export interface Fp8Row {
  readonly type: Fp8BenchType;
  readonly shape: string;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  /**
   * `ok`: compiled, checked and timed; `check failed`: timed, but its output
   * disagrees with the reference; `compile failed`: the compiler refused it;
   * `error`: loading, launching or timing failed (`note` says which).
   */
  readonly status: "ok" | "check failed" | "compile failed" | "error";
  /** The check's summary, or the diagnostics, or the error. */
  readonly note: string;
  /** The planned kernel, e.g. `128x256x128, 3 stages, wg.m64n256k32.e4m3.f32, grid 132`. */
  readonly schedule: string | null;
  /** Median ms per state; null where not measured. */
  readonly ms: Readonly<Record<Fp8State, number | null>>;
  /** Each burst round's median (ms). */
  readonly burstRounds: readonly number[];
  /** The SM clock (MHz) beside 10 launches after the sustained series (bench/clock_probe.ts). */
  readonly clockMHz: number | null;
  /** nvidia-smi's median SM clock (MHz) and power (W) over the sustained series. */
  readonly smClockMHz: number | null;
  readonly powerW: number | null;
  /** Registers a thread, as the driver reports them. */
  readonly registers: number | null;
  /** When the sustained series ran (ms since the epoch), for nvidia-smi's samples. */
  readonly window: readonly [number, number] | null;
}

/** One of the peer script's records (bench/peers/fp8_peers.py, RECORD_KEYS), as read. */
export interface Fp8PeerRecord {
  readonly dtype: string;
  readonly variant: "default" | "fast_accum";
  readonly state: Fp8State;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly status: string;
  readonly reason: string | null;
  readonly op: string | null;
  readonly ok: boolean | null;
  readonly max_rel_err: number | null;
  readonly bound_ratio: number | null;
  readonly ms: number | null;
  readonly tflops: number | null;
  readonly torch: string | null;
  readonly cuda: string | null;
  readonly device: string | null;
}

/** Each key of {@link Fp8PeerRecord}, no other (the type sees to both). */
const PEER_READ: Readonly<Record<keyof Fp8PeerRecord, 0>> = {
  dtype: 0,
  variant: 0,
  state: 0,
  M: 0,
  N: 0,
  K: 0,
  status: 0,
  reason: 0,
  op: 0,
  ok: 0,
  max_rel_err: 0,
  bound_ratio: 0,
  ms: 0,
  tflops: 0,
  torch: 0,
  cuda: 0,
  device: 0,
};

/** The record keys this module reads (tests/fp8_peers_test.ts checks the script's records). */
export const FP8_PEER_RECORD_KEYS = Object.keys(PEER_READ) as readonly (keyof Fp8PeerRecord)[];

// ---------------------------------------------------------------- the report

/** A number to `d` decimals, `-` where absent or not finite. */
function fx(v: number | null | undefined, d: number): string {
  return v == null || !Number.isFinite(v) ? "-" : v.toFixed(d);
}

/** TFLOP/s of a time (ms) at M, N, K; null where there is none. */
function rate(p: { M: number; N: number; K: number }, ms: number | null | undefined) {
  return ms == null || !Number.isFinite(ms) || ms <= 0 ? null : 2 * p.M * p.N * p.K / ms / 1e9;
}

/** The peer's record of a row's type, sizes, state and variant, if any. */
function peerOf(
  peers: readonly Fp8PeerRecord[],
  r: Fp8Row,
  state: Fp8State,
  variant: Fp8PeerRecord["variant"],
): Fp8PeerRecord | undefined {
  return peers.find((x) =>
    x.dtype === r.type && x.M === r.M && x.N === r.N && x.K === r.K && x.state === state &&
    x.variant === variant
  );
}

/** The peer's TFLOP/s of a record that ran (a failed check marked), or `-`. */
function peerCell(x: Fp8PeerRecord | undefined): string {
  if (x === undefined || x.tflops === null) return "-";
  return `${x.tflops.toFixed(1)}${x.status === "failed" ? " (check failed)" : ""}`;
}

/** gemmc's TFLOP/s over the peer's (above 1: gemmc faster), or null where either is missing. */
function ratioOf(ours: number | null, x: Fp8PeerRecord | undefined): number | null {
  return ours === null || x === undefined || x.tflops === null || x.tflops <= 0
    ? null
    : ours / x.tflops;
}

/**
 * The table: per type, shape and state, gemmc's TFLOP/s, `torch._scaled_mm`'s
 * (default and `use_fast_accum=True`) and the ratios (above 1: gemmc faster).
 *
 * @param rows gemmc's rows.
 * @param peers The peer's records (any; matched by type, sizes, state and variant).
 * @returns A markdown table.
 * @example
 * ```ts
 * import { match } from "node:assert/strict";
 * import { fp8Table } from "./fp8.ts";
 * const row = {
 *   type: "e4m3" as const, shape: "8192", M: 8192, N: 8192, K: 8192, status: "ok" as const,
 *   note: "check ok", schedule: null, ms: { burst: 0.7, sustained: 0.8 }, burstRounds: [],
 *   clockMHz: null, smClockMHz: null, powerW: null, registers: null, window: null,
 * };
 * match(fp8Table([row], []), /\| e4m3 \| 8192³ \| burst \| 1570\.7 \| - \| - \| - \| - \|/);
 * ```
 */
export function fp8Table(rows: readonly Fp8Row[], peers: readonly Fp8PeerRecord[]): string {
  const lines = [
    "| type | shape | state | gemmc TFLOP/s | torch._scaled_mm TFLOP/s | gemmc / torch | " +
    "_scaled_mm fast_accum TFLOP/s | gemmc / fast_accum |",
    "| ---- | ----- | ----- | ------------: | -----------------------: | ------------: | " +
    "----------------------------: | -----------------: |",
  ];
  for (const r of rows) {
    const shape = r.M === r.N && r.N === r.K ? `${r.M}³` : `${r.M}x${r.N}x${r.K}`;
    for (const s of FP8_STATES) {
      const ours = rate(r, r.ms[s]);
      const d = peerOf(peers, r, s, "default"), f = peerOf(peers, r, s, "fast_accum");
      const mark = r.status === "check failed" && ours !== null ? " (check failed)" : "";
      lines.push(
        `| ${r.type} | ${shape} | ${s} | ${fx(ours, 1)}${mark} | ${peerCell(d)} | ${
          fx(ratioOf(ours, d), 3)
        } | ${peerCell(f)} | ${fx(ratioOf(ours, f), 3)} |`,
      );
    }
  }
  return lines.join("\n");
}

/**
 * The target lines: issue 23's (`e4m3 8192^3: >= 0.9x torch._scaled_mm in both
 * states: met` or `MISSED`, or `not measured` and why), then the ratio to
 * `use_fast_accum=True`, which has no target.
 *
 * @param rows gemmc's rows.
 * @param peers The peer's records.
 * @returns The lines.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { fp8Targets } from "./fp8.ts";
 * equal(fp8Targets([], [])[0], "e4m3 8192^3: >= 0.9x torch._scaled_mm in both states: " +
 *   "not measured (no gemmc e4m3 8192³ row)");
 * ```
 */
export function fp8Targets(rows: readonly Fp8Row[], peers: readonly Fp8PeerRecord[]): string[] {
  const { type, size, ratio } = FP8_TARGET;
  const head = `${type} ${size}^3: >= ${ratio}x torch._scaled_mm in both states`;
  const r = rows.find((x) => x.type === type && x.M === size && x.N === size && x.K === size);
  if (r === undefined) return [`${head}: not measured (no gemmc ${type} ${size}³ row)`];
  const got = FP8_STATES.map((s) => ({
    s,
    x: ratioOf(rate(r, r.ms[s]), peerOf(peers, r, s, "default")),
  }));
  const missing = got.filter((g) => g.x === null);
  if (missing.length > 0) {
    const x = peerOf(peers, r, missing[0]!.s, "default");
    const why = rate(r, r.ms[missing[0]!.s]) === null
      ? `gemmc: ${r.status}: ${r.note}`
      : x === undefined
      ? "no torch._scaled_mm record"
      : `torch._scaled_mm: ${x.status}${x.reason === null ? "" : `: ${x.reason}`}`;
    return [`${head}: not measured (${missing.map((g) => g.s).join(", ")}: ${why})`];
  }
  const figs = got.map((g) => `${g.s} ${g.x!.toFixed(3)}x`).join(", ");
  const notes = [
    ...(r.status === "check failed" ? ["gemmc's output failed its check"] : []),
    ...(FP8_STATES.some((s) => peerOf(peers, r, s, "default")?.status === "failed")
      ? ["torch's output failed its check"]
      : []),
  ];
  const met = r.status === "ok" && got.every((g) => g.x! >= ratio);
  const lines = [`${head}: ${met ? "met" : "MISSED"} (${[figs, ...notes].join("; ")})`];
  const fast = FP8_STATES.map((s) =>
    [s, ratioOf(rate(r, r.ms[s]), peerOf(peers, r, s, "fast_accum"))] as const
  );
  if (fast.some(([, x]) => x !== null)) {
    lines.push(
      `${type} ${size}^3 against torch._scaled_mm(use_fast_accum=True), no target: ${
        fast.map(([s, x]) => `${s} ${fx(x, 3)}x`).join(", ")
      }`,
    );
  }
  return lines;
}

/** What {@link fp8Report} writes up. */
export interface Fp8ReportInput {
  /** The command line that ran the benchmark. */
  readonly command: string;
  /** The GPU's name and SM count. */
  readonly device: string;
  /** The date, `YYYY-MM-DD`. */
  readonly date: string;
  readonly rows: readonly Fp8Row[];
  readonly peers: readonly Fp8PeerRecord[];
  /** Why there are no peer figures (not installed, failed, skipped), or null. */
  readonly peersNote: string | null;
}

/**
 * The markdown report: the table, the targets, each kernel's line (status,
 * schedule, check, clocks) and the peer's lines.
 *
 * @param input The figures.
 * @returns The report (ends with a newline).
 * @example
 * ```ts
 * import { match } from "node:assert/strict";
 * import { fp8Report } from "./fp8.ts";
 * const text = fp8Report({
 *   command: "deno task bench --fp8", device: "GPU", date: "2026-12-04", rows: [], peers: [],
 *   peersNote: "peers skipped (--no-peers)",
 * });
 * match(text, /^# 8-bit float GEMM against torch._scaled_mm \(2026-12-04\)\n/);
 * match(text, /\n- peers skipped \(--no-peers\)\n/);
 * ```
 */
export function fp8Report(input: Fp8ReportInput): string {
  const { sa, sb } = FP8_SCALES;
  const lines = [
    `# 8-bit float GEMM against torch._scaled_mm (${input.date})`,
    "",
    `\`${input.command}\` on ${input.device}. A [M, K] row e4m3, B [K, N] col (e4m3, or e5m2 ` +
    `for e4m3_e5m2), D [M, N] row bf16 = bf16(sa·sb·A·B), sa = ${sa}, sb = ${sb}; inputs ` +
    "uniform in [-1, 1) rounded to the format; gemmc compiled for sm90 at its default " +
    "schedule. TFLOP/s: 2·M·N·K / time. Burst: 3 rounds after 1 s rests; sustained: after " +
    "1.5 s of load (bench/gpu_measure.ts; the peer: bench/peers/fp8_peers.py, the same). " +
    "5008: 5000 rounded up to a multiple of 16, which torch._scaled_mm needs.",
    "",
    fp8Table(input.rows, input.peers),
    "",
    "## Targets",
    "",
    ...fp8Targets(input.rows, input.peers).map((l) => `- ${l}`),
    "",
    "## gemmc's kernels",
    "",
  ];
  for (const r of input.rows) {
    lines.push(
      `- ${r.type} ${r.M}x${r.N}x${r.K}: ${r.status}${
        r.schedule === null ? "" : ` [${r.schedule}]`
      }: ${r.note.replace(/\s*\n\s*/g, " ")}; burst ${fx(r.ms.burst, 4)} ms (rounds ${
        r.burstRounds.map((x) => x.toFixed(4)).join(", ") || "-"
      }), sustained ${fx(r.ms.sustained, 4)} ms at ${fx(r.clockMHz, 0)} MHz (probe), ` +
        `nvidia-smi ${fx(r.smClockMHz, 0)} MHz / ${fx(r.powerW, 0)} W, ${
          r.registers ?? "-"
        } registers`,
    );
  }
  lines.push("", "## torch._scaled_mm", "");
  if (input.peersNote !== null) lines.push(`- ${input.peersNote}`);
  const env = input.peers.find((x) => x.torch !== null);
  if (env !== undefined) {
    lines.push(`- torch ${env.torch} (CUDA ${env.cuda ?? "?"}) on ${env.device ?? "?"}`);
  }
  for (const x of input.peers) {
    const check = x.ok === null
      ? "not checked"
      : `check ${x.ok ? "ok" : "FAILED"} (error/bound ${fx(x.bound_ratio, 3)}, max error ${
        x.max_rel_err === null ? "-" : x.max_rel_err.toExponential(2)
      } of the largest output)`;
    lines.push(
      `- ${x.dtype} ${x.M}x${x.N}x${x.K} ${x.variant} ${x.state}: ${x.status}` +
        (x.status === "unsupported"
          ? `: ${x.reason ?? "?"}`
          : `, ${fx(x.ms, 4)} ms, ${fx(x.tflops, 1)} TFLOP/s, ${check}`),
    );
  }
  lines.push(
    "",
    "Ratios above 1: gemmc is faster. Target: issue 23 (e4m3 8192³ at >= 0.9x " +
      "torch._scaled_mm, burst and sustained). use_fast_accum=True has no target: gemmc, like " +
      "it, keeps the sums in the wgmma accumulator throughout K.",
    "",
  );
  return lines.join("\n");
}

// ---------------------------------------------------------------- the GPU side

/** The options of {@link fp8BenchMain}. */
export interface Fp8BenchOptions {
  readonly types?: readonly Fp8BenchType[];
  readonly problems?: readonly Problem[];
  /** Run the PyTorch peer (default true). */
  readonly peers?: boolean;
  /** Where the record goes (default `bench/results/`). */
  readonly outDir?: string;
  /** Compile and print the plan only; no GPU. */
  readonly dry?: boolean;
  /** The SM count `--dry` compiles for (default 132, an H200's). */
  readonly sms?: number;
  /** Schedule lines, `;`-separated, for every kernel (`--schedule "cluster 2"`): a variant
   * against the peer in the same run. */
  readonly schedule?: string;
}

/** The benchmark kernel's source of a type (bench/kernels/TYPE.gemm). */
export function fp8Source(t: Fp8BenchType): string {
  return Deno.readTextFileSync(new URL(`./kernels/${t}.gemm`, import.meta.url));
}

/** Compiles a type's kernel for sm90 at problem `p` for a device of `sms` SMs. */
export function compileFp8(
  t: Fp8BenchType,
  p: Problem,
  sms: number,
  schedule?: string,
): CompiledKernel {
  const src = schedule === undefined ? fp8Source(t) : withSchedule(fp8Source(t), schedule);
  return compileSource(src, `bench/kernels/${t}.gemm`, p, sms, "sm90");
}

/** A compiled kernel's plan: `128x256x128, 3 stages, wg.m64n256k32.e4m3.f32, grid 132`. */
function scheduleText(ck: CompiledKernel): string {
  const p = ck.planned.plan;
  const tb = p.tile?.threadblock;
  const g = ck.kernel.grid;
  const cluster = ck.kernel.cluster === undefined ? "" : `, cluster ${ck.kernel.cluster}`;
  const grid = g.persistent !== undefined
    ? `persistent ${g.persistent.blocks}${cluster}`
    : "grid by tiles";
  return `${tb === undefined ? "?" : `${tb.m}x${tb.n}x${tb.k}`}, ${p.pipeline?.stages ?? "?"} ` +
    `stages, ${p.mma?.wgmma ?? "?"}, ${grid}`;
}

/** The first line of an error. */
function errText(e: unknown): string {
  const s = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return s.split("\n")[0]!.slice(0, 400);
}

const NO_MS: Readonly<Record<Fp8State, number | null>> = { burst: null, sustained: null };

/** A row that was not timed. */
function failedRow(
  t: Fp8BenchType,
  p: Problem,
  status: Fp8Row["status"],
  note: string,
  schedule: string | null,
): Fp8Row {
  return {
    type: t,
    shape: p.shape,
    M: p.M,
    N: p.N,
    K: p.K,
    status,
    note,
    schedule,
    ms: NO_MS,
    burstRounds: [],
    clockMHz: null,
    smClockMHz: null,
    powerW: null,
    registers: null,
    window: null,
  };
}

/** Compiles, loads, checks and times one kernel; never throws (a failure is its row). */
function benchOne(
  cuda: Cuda,
  probe: ClockProbe,
  t: Fp8BenchType,
  p: Problem,
  lines?: string,
): Fp8Row {
  let ck: CompiledKernel;
  try {
    ck = compileFp8(t, p, cuda.device.multiprocessors, lines);
  } catch (e) {
    return failedRow(t, p, "compile failed", errText(e), null);
  }
  const schedule = scheduleText(ck);
  const sizes = { M: p.M, N: p.N, K: p.K };
  const bufs: DeviceBuffer[] = [];
  try {
    const scalars = new Map([["sa", FP8_SCALES.sa], ["sb", FP8_SCALES.sb]]);
    const k = load(cuda, ck, sizes, bufs, scalars);
    const check = verify(cuda, ck, sizes, k);
    const c = check.comparison;
    const note = `${c.ok ? "check ok" : "check FAILED"} on ${c.elements} sampled elements ` +
      `(${c.overBound} over bound, worst error/bound ${c.worstRatio.toFixed(3)}, ` +
      `rel. Frobenius ${c.relFrobenius.toExponential(2)})`;
    const sets = k.argSets.length;
    const ours = (i: number) => cuda.launch(k.fn, k.config, k.argSets[i % sets]!);
    const burst = timeBurst(cuda, ours, timeIt(cuda, ours, 1, 2));
    const t0 = Date.now();
    const sustained = timeSustained(cuda, ours, burst.ms);
    const t1 = Date.now();
    const clockMHz = clockDuring(probe, ours, sustained);
    const registers = k.fn.attributes().registers;
    k.mod.unload();
    return {
      ...failedRow(t, p, c.ok ? "ok" : "check failed", note, schedule),
      ms: { burst: burst.ms, sustained },
      burstRounds: burst.rounds,
      clockMHz: Number.isFinite(clockMHz) ? clockMHz : null,
      registers,
      window: [t0, t1],
    };
  } catch (e) {
    return failedRow(t, p, "error", errText(e), schedule);
  } finally {
    for (const b of bufs) {
      try {
        b.free();
      } catch {
        // the context's close releases it
      }
    }
  }
}

/** One line of a row as it is measured. */
function rowLine(r: Fp8Row): string {
  return `${r.type} ${r.M}x${r.N}x${r.K}: ${r.status}: ${r.note}; burst ${
    fx(rate(r, r.ms.burst), 1)
  } TFLOP/s, sustained ${fx(rate(r, r.ms.sustained), 1)} TFLOP/s at ${fx(r.clockMHz, 0)} MHz`;
}

/** The peer script's arguments for these problems and types (before OUT.jsonl). */
export function fp8PeerArgs(
  problems: readonly Problem[],
  types: readonly Fp8BenchType[],
): string[] {
  return [
    new URL("peers/fp8_peers.py", import.meta.url).pathname,
    "--shapes",
    problems.map((p) => `${p.M}x${p.N}x${p.K}`).join(","),
    "--dtypes",
    types.join(","),
    "--scale-a",
    `${FP8_SCALES.sa}`,
    "--scale-b",
    `${FP8_SCALES.sb}`,
  ];
}

/** Runs the peer script; its records, or why there are none. */
function runPeers(
  problems: readonly Problem[],
  types: readonly Fp8BenchType[],
): { records: Fp8PeerRecord[]; note: string | null } {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc-fp8-" });
  const output = `${dir}/out.jsonl`;
  let note: string | null = null;
  try {
    const r = new Deno.Command("python3", { args: [...fp8PeerArgs(problems, types), output] })
      .outputSync();
    console.log(new TextDecoder().decode(r.stdout));
    if (!r.success) {
      const err = new TextDecoder().decode(r.stderr).trim().split("\n").slice(-3).join(" / ");
      note = `peer exited ${r.code}: ${err}`;
      console.error(`fp8 peer failed: ${err}`);
    }
  } catch (e) {
    note = `peer not run: ${errText(e)}`;
  }
  let records: Fp8PeerRecord[] = [];
  try {
    records = Deno.readTextFileSync(output).split("\n").filter((l) => l.trim() !== "").map((l) =>
      JSON.parse(l) as Fp8PeerRecord
    );
  } catch {
    // none written: the note says why
  }
  Deno.removeSync(dir, { recursive: true });
  return { records, note };
}

/** `--dry`: each kernel's plan for a device of `sms` SMs, and the peer's plan. */
function fp8Dry(
  types: readonly Fp8BenchType[],
  problems: readonly Problem[],
  sms: number,
  schedule?: string,
): boolean {
  console.log(`# --dry: the kernels compiled for sm90 with ${sms} SMs; nothing runs`);
  let ok = true;
  for (const t of types) {
    for (const p of problems) {
      try {
        const ck = compileFp8(t, p, sms, schedule);
        console.log(`${t} ${p.M}x${p.N}x${p.K}: ${scheduleText(ck)}`);
      } catch (e) {
        ok = false;
        console.log(`${t} ${p.M}x${p.N}x${p.K}: compile failed: ${errText(e)}`);
      }
    }
  }
  try {
    const args = [...fp8PeerArgs(problems, types), "--dry", "/dev/null"];
    const r = new Deno.Command("python3", { args }).outputSync();
    const out = new TextDecoder().decode(r.stdout).split("\n");
    const recs = out.filter((l) => l.startsWith("{")).length;
    console.log(`# the peer (python3 ${args.slice(0, -2).join(" ")}):`);
    for (const l of out.filter((l) => l !== "" && !l.startsWith("{"))) console.log(l);
    console.log(`# ${recs} peer records planned`);
    if (!r.success) {
      ok = false;
      console.error(new TextDecoder().decode(r.stderr).trim());
    }
  } catch (e) {
    console.log(`# the peer's plan: not shown (${errText(e)})`);
  }
  return ok;
}

/** Fills each row's nvidia-smi clock and power from the samples inside its sustained window. */
function withSamples(rows: Fp8Row[], samples: readonly [number, number, number][]): void {
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (r.window === null) continue;
    const w = r.window;
    const inWin = samples.filter(([t]) => t >= w[0] - 50 && t <= w[1] + 50);
    if (inWin.length === 0) continue;
    rows[i] = {
      ...r,
      smClockMHz: median(inWin.map(([, v]) => v)),
      powerW: median(inWin.map(([, , p]) => p)),
    };
  }
}

/**
 * Runs the fp8 benchmark and records it.
 *
 * @param command The command line, for the record.
 * @param options Types, problems, peers, where the record goes, `--dry`.
 * @returns False without a driver, or when one of gemmc's kernels did not compile, run or
 *   pass its check (the record is written all the same); `--dry`: whether every kernel
 *   compiled and the peer's plan was accepted.
 */
export async function fp8BenchMain(
  command: string,
  options: Fp8BenchOptions = {},
): Promise<boolean> {
  const types = options.types ?? FP8_BENCH_TYPES;
  const problems = options.problems ?? FP8_PROBLEMS;
  if (options.dry === true) return fp8Dry(types, problems, options.sms ?? 132, options.schedule);
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.error(`bench --fp8: ${avail.why}`);
    return false;
  }
  const rows: Fp8Row[] = [];
  const sampler = new ClockSampler();
  let device = "?";
  {
    const cuda = Cuda.open();
    const probe = new ClockProbe(cuda);
    try {
      const dev = cuda.device;
      device = `${dev.name} (${dev.arch}, ${dev.multiprocessors} SMs)`;
      console.log(`# ${device}, driver ${dev.driverVersionText}`);
      for (const t of types) {
        for (const p of problems) {
          const row = benchOne(cuda, probe, t, p, options.schedule);
          rows.push(row);
          console.log(rowLine(row));
        }
      }
    } finally {
      probe.close();
      cuda.close();
    }
  }
  withSamples(rows, await sampler.stop());
  // The peer, in the same run, once our context is closed (its own process and context).
  let peers: Fp8PeerRecord[] = [];
  let peersNote: string | null = "peers skipped (--no-peers)";
  if (options.peers !== false) ({ records: peers, note: peersNote } = runPeers(problems, types));
  const date = resultDate();
  const text = fp8Report({ command, device, date, rows, peers, peersNote });
  console.log(text);
  const path = freshResultPath(options.outDir ?? RESULTS_DIR, `fp8-${date}`, ".md");
  Deno.writeTextFileSync(path, text);
  Deno.writeTextFileSync(
    path.replace(/\.md$/, ".json"),
    JSON.stringify({ command, device, date, scales: FP8_SCALES, rows, peers, peersNote }, null, 2),
  );
  console.log(`Recorded in ${path}.`);
  return rows.every((r) => r.status === "ok");
}

/**
 * Parses the command line: `--types e4m3,e4m3_e5m2`, `--shapes 8192,4096,odd`
 * (`odd` is 5008³; any other size S is S³, a positive multiple of 16),
 * `--no-peers`, `--out DIR`, `--dry`, `--sms N` (with `--dry`), `--schedule LINES`.
 *
 * @param args The arguments.
 * @returns The options, or an error message.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { parseFp8Args } from "./fp8.ts";
 * deepEqual(parseFp8Args(["--shapes", "odd,2048", "--no-peers"]), {
 *   problems: [
 *     { shape: "odd", M: 5008, N: 5008, K: 5008 },
 *     { shape: "2048", M: 2048, N: 2048, K: 2048 },
 *   ],
 *   peers: false,
 * });
 * equal(typeof parseFp8Args(["--shapes", "5000"]), "string");
 * ```
 */
export function parseFp8Args(args: readonly string[]): Fp8BenchOptions | string {
  const out: {
    types?: Fp8BenchType[];
    problems?: Problem[];
    peers?: boolean;
    outDir?: string;
    dry?: boolean;
    sms?: number;
    schedule?: string;
  } = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--no-peers") out.peers = false;
    else if (a === "--dry") out.dry = true;
    else if (a === "--schedule") {
      const l = args[++i];
      if (l === undefined || l.trim() === "") return "--schedule needs schedule lines";
      out.schedule = l;
    } else if (a === "--out") {
      const d = args[++i];
      if (d === undefined || d === "") return "--out needs a folder";
      out.outDir = d;
    } else if (a === "--sms") {
      const v = Number(args[++i]);
      if (!Number.isInteger(v) || v <= 0) return `--sms needs a positive integer, got ${args[i]}`;
      out.sms = v;
    } else if (a === "--types") {
      const ts = (args[++i] ?? "").split(",").filter((x) => x !== "");
      const bad = ts.filter((x) => !FP8_BENCH_TYPES.includes(x as Fp8BenchType));
      if (ts.length === 0 || bad.length > 0 || new Set(ts).size !== ts.length) {
        return `--types takes a list of distinct ${FP8_BENCH_TYPES.join(", ")}; got ${args[i]}`;
      }
      out.types = ts as Fp8BenchType[];
    } else if (a === "--shapes") {
      const ps: Problem[] = [];
      for (const s of (args[++i] ?? "").split(",").filter((x) => x !== "")) {
        const known = FP8_PROBLEMS.find((p) => p.shape === s);
        const n = Number(s);
        if (known !== undefined) ps.push(known);
        else if (Number.isInteger(n) && n > 0 && n % 16 === 0) {
          ps.push({ shape: s, M: n, N: n, K: n });
        } else {
          return `--shapes: ${s} is not odd nor a positive multiple of 16 (torch._scaled_mm's rule)`;
        }
      }
      if (ps.length === 0 || new Set(ps.map((p) => p.M)).size !== ps.length) {
        return `--shapes takes a list of distinct sizes; got ${args[i]}`;
      }
      out.problems = ps;
    } else return `unknown argument ${a}`;
  }
  return out;
}

if (import.meta.main) {
  const opts = parseFp8Args(Deno.args);
  if (typeof opts === "string") {
    console.error(`bench/fp8.ts: ${opts}`);
    Deno.exit(2);
  }
  if (!await fp8BenchMain(["deno run -A bench/fp8.ts", ...Deno.args].join(" "), opts)) {
    Deno.exit(1);
  }
}
