/**
 * The skinny-shape benchmark's arithmetic and record (bench/llm.ts runs it):
 * the bytes and FLOPs of a problem, its floor, the share of the floor a time
 * reaches, issue 22's targets and their verdicts, the row types, and the
 * markdown record. Pure functions: tests/llm_bench_test.ts checks them
 * without a GPU.
 *
 * @module
 */

import { LLM_NK } from "./llm_shapes.ts";

/** The types of the table. */
export type LlmType = "f16" | "bf16" | "s8";

/** Every {@link LlmType}, in the table's order. */
export const LLM_TYPES: readonly LlmType[] = ["f16", "bf16", "s8"];

/** One problem of the table. */
export interface LlmProblem {
  readonly M: number;
  readonly N: number;
  readonly K: number;
}

/** Bytes per element of A (and B) and of D, per type. */
const ELEMENT_BYTES: Readonly<Record<LlmType, { readonly ab: number; readonly d: number }>> = {
  f16: { ab: 2, d: 2 },
  bf16: { ab: 2, d: 2 },
  s8: { ab: 1, d: 4 },
};

/** The bytes of each operand of a problem: A [M, K], B [K, N] and D [M, N]. */
export function operandBytes(t: LlmType, p: LlmProblem): { a: number; b: number; d: number } {
  const e = ELEMENT_BYTES[t];
  return { a: p.M * p.K * e.ab, b: p.K * p.N * e.ab, d: p.M * p.N * e.d };
}

/**
 * The bytes a GEMM must move at least: A, B and D once each.
 *
 * @param t The type.
 * @param p The problem.
 * @returns Bytes.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { problemBytes } from "./llm_report.ts";
 * equal(problemBytes("s8", { M: 2, N: 3, K: 4 }), 2 * 4 + 4 * 3 + 2 * 3 * 4);
 * ```
 */
export function problemBytes(t: LlmType, p: LlmProblem): number {
  const o = operandBytes(t, p);
  return o.a + o.b + o.d;
}

/** A floor: the least time a GEMM can take, and what bounds it. */
export interface LlmFloor {
  /** The larger of {@link LlmFloor.hbmUs} and {@link LlmFloor.mmaUs} (µs). */
  readonly us: number;
  readonly bound: "HBM" | "mma";
  /** The bytes of A, B and D once at the copy bandwidth (µs). */
  readonly hbmUs: number;
  /** The FLOPs (2·M·N·K) at the mma.sync ceiling (µs). */
  readonly mmaUs: number;
}

/**
 * The floor of a problem: the larger of its bytes (A + B + D once) at the copy
 * bandwidth and its operations at the mma.sync ceiling.
 *
 * @param t The type.
 * @param p The problem.
 * @param copyBytesPerS The device-to-device copy bandwidth, bytes read + written a second.
 * @param mmaOpsPerS The mma.sync ceiling, operations (2 a multiply-add) a second.
 * @returns The floor.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { llmFloor } from "./llm_report.ts";
 * const f = llmFloor("f16", { M: 1, N: 8, K: 4 }, 1e6, 1e6);
 * equal(f.hbmUs, (1 * 4 + 4 * 8 + 8) * 2); // 88 bytes at 1 byte a µs
 * equal(f.bound, "HBM");
 * ```
 */
export function llmFloor(
  t: LlmType,
  p: LlmProblem,
  copyBytesPerS: number,
  mmaOpsPerS: number,
): LlmFloor {
  const hbmUs = (problemBytes(t, p) / copyBytesPerS) * 1e6;
  const mmaUs = ((2 * p.M * p.N * p.K) / mmaOpsPerS) * 1e6;
  const us = Math.max(hbmUs, mmaUs);
  return { us, bound: mmaUs > hbmUs ? "mma" : "HBM", hbmUs, mmaUs };
}

/**
 * The share of the floor a measured time reaches: floor / measured (1 is the
 * limit); NaN when either is not a positive finite time.
 *
 * @param floorUs The floor (µs).
 * @param measuredUs The measured time (µs).
 * @returns The share.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { floorShare } from "./llm_report.ts";
 * equal(floorShare(5, 20), 0.25);
 * ```
 */
export function floorShare(floorUs: number, measuredUs: number): number {
  const ok = (x: number) => Number.isFinite(x) && x > 0;
  return ok(floorUs) && ok(measuredUs) ? floorUs / measuredUs : NaN;
}

/** (N, K) pairs whose small-M rows (M <= 64) have the 0.85 target. */
const NK_085: readonly (readonly [number, number])[] = [[4096, 4096], [14336, 4096]];

/**
 * Issue 22's target for a problem, as a share of the floor: 0.85 for M <= 64
 * at (N, K) = (4096, 4096) and (14336, 4096); 0.75 for M = 128 and 256 at the
 * table's three (N, K); null where the issue sets none.
 *
 * @param p The problem.
 * @returns The least share of the floor, or null.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { llmTarget } from "./llm_report.ts";
 * equal(llmTarget({ M: 16, N: 14336, K: 4096 }), 0.85);
 * equal(llmTarget({ M: 16, N: 4096, K: 14336 }), null);
 * ```
 */
export function llmTarget(p: LlmProblem): number | null {
  const at = (pairs: readonly (readonly [number, number])[]) =>
    pairs.some(([n, k]) => n === p.N && k === p.K);
  if (p.M <= 64 && at(NK_085)) return 0.85;
  if ((p.M === 128 || p.M === 256) && at(LLM_NK)) return 0.75;
  return null;
}

/**
 * A target's verdict: `met` when the share reaches it, `MISSED` when not or
 * when there is no share (the row failed or was not timed), null without a target.
 *
 * @param share The share of the floor.
 * @param target The target, or null.
 * @returns The verdict.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { targetVerdict } from "./llm_report.ts";
 * equal(targetVerdict(0.8, 0.75), "met");
 * equal(targetVerdict(NaN, 0.75), "MISSED");
 * ```
 */
export function targetVerdict(share: number, target: number | null): "met" | "MISSED" | null {
  if (target === null) return null;
  return Number.isFinite(share) && share >= target ? "met" : "MISSED";
}

/** One side of a row (ours or cuBLAS): its series and their figures. */
export interface SideFigures {
  /** Burst: the median of the series' time per launch (µs). */
  readonly burstUs: number;
  /** Sustained: the same after 1.5 s of load (µs). */
  readonly sustainedUs: number;
  /** Launches per series (bench/llm.ts `seriesLaunches`). */
  readonly launches: number;
  /** The hold before each series (ms; bench/llm.ts `holdMs`). */
  readonly holdMs: number;
  /** Host time to queue one launch, measured before the series (µs). */
  readonly hostUs: number;
  readonly burstSeriesUs: readonly number[];
  readonly sustainedSeriesUs: readonly number[];
  /** Series whose queueing outlasted the hold by more than half their own time. */
  readonly hostPaced: number;
  /** The SM clock beside one more series after the sustained ones (MHz). */
  readonly clockMHz: number;
}

/** One row of the table. */
export interface LlmRow extends LlmProblem {
  readonly type: LlmType;
  /** `ok`: checked and timed; `FAILED`: the check failed (not timed); `ERROR`: it did not run. */
  readonly status: "ok" | "FAILED" | "ERROR";
  /** The check's outcome, or the error. */
  readonly note: string;
  /** The schedule the compiler chose (bench/llm.ts `scheduleText`). */
  readonly schedule: string;
  /**
   * `--pdl-early`: the tensors ours+PDL's kernel reads before its wait, as its manifest says (the
   * compiler may decline the option: passes/lower/early.ts); absent without `--pdl-early`.
   */
  readonly earlyRead?: readonly string[];
  /** The CUTLASS-style name (bench/gpu_bench.ts). */
  readonly kernel: string;
  /** Input sets rotated among. */
  readonly sets: number;
  readonly registers: number;
  readonly ours: SideFigures | null;
  /**
   * Ours again, every launch of its series a programmatic dependent launch (`--pdl`:
   * `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`); null
   * when the row did not run, absent without `--pdl`.
   */
  readonly oursPdl?: SideFigures | null;
  readonly cublas: SideFigures | null;
  /**
   * `--copy`: a `cuMemcpyDtoD` launch moving the row's bytes (half read, half written), timed as
   * the other sides: what one launch of those bytes reaches. Null when the row did not run,
   * absent without `--copy`.
   */
  readonly copy?: SideFigures | null;
  /**
   * `--read`: a streaming kernel moving the row's bytes (A and B read, D's written; bench/stream_read.ts),
   * timed as the other sides: what one kernel launch of those bytes reaches. Null when the row did
   * not run or the kernel's check failed, absent without `--read`.
   */
  readonly read?: SideFigures | null;
  /** The floor in each state (the mma.sync ceiling of that state). */
  readonly floor: { readonly burst: LlmFloor; readonly sustained: LlmFloor };
}

/** The copy bandwidth's measurement: bytes copied each time, the times, bytes read + written a second. */
export interface CopyBandwidth {
  readonly bytes: number;
  readonly ms: readonly number[];
  readonly bytesPerS: number;
}

/** What the report says about the run besides its rows. */
export interface LlmRunInfo {
  readonly date: string;
  readonly command: string;
  /** The GPU, its SMs and driver, in words. */
  readonly device: string;
  /** cuBLAS's library, or why it did not run. */
  readonly cublas: string;
  /** The target our kernels were compiled for (absent in records before it was a flag: sm80). */
  readonly target?: string;
  /** True with `--pdl`: the rows have ours+PDL figures ({@link LlmRow.oursPdl}); else absent. */
  readonly pdl?: boolean;
  /** True with `--pdl-early`: ours+PDL's kernel reads B (the weights) before its wait. */
  readonly pdlEarly?: boolean;
  /** `last-copy` with `--pdl-last-copy`: ours+PDL's kernel lets the next grid start after its
   * last copy (the compile option `pdlTrigger`). */
  readonly pdlTrigger?: "last-copy";
  /** `--schedule`'s lines, every kernel compiled with them (absent: the defaults). */
  readonly schedule?: string;
  /** True with `--copy`: the rows have the copy's figures ({@link LlmRow.copy}); else absent. */
  readonly copySide?: boolean;
  /** True with `--read`: the rows have the streaming kernel's figures ({@link LlmRow.read}); else absent. */
  readonly readSide?: boolean;
  readonly copy: CopyBandwidth;
  /** Per type, the mma.sync ceiling (TOPS) in each state. */
  readonly ceilings: Readonly<
    Record<string, { readonly burst: number; readonly sustained: number }>
  >;
}

/** A number or `-`. */
function fmt(x: number | undefined, digits: number): string {
  return x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits);
}

/** A state of the card. */
type State = "burst" | "sustained";

/** A side's time in a state (µs; NaN when it did not run). */
function timeOf(s: SideFigures | null, st: State): number {
  return s === null ? NaN : st === "burst" ? s.burstUs : s.sustainedUs;
}

/** A side's share of the row's floor in a state. */
function shareOf(r: LlmRow, s: SideFigures | null, st: State): number {
  return floorShare(r.floor[st].us, timeOf(s, st));
}

/** A row's target verdicts for a side: `met / MISSED` (burst / sustained). */
function verdicts(r: LlmRow, s: SideFigures | null, target: number): string {
  const v = (st: State) => targetVerdict(shareOf(r, s, st), target);
  return `${v("burst")} / ${v("sustained")}`;
}

/** The optional sides a table shows: ours+PDL (`--pdl`), the copy (`--copy`) and the read (`--read`). */
interface Columns {
  readonly pdl: boolean;
  readonly copy: boolean;
  readonly read: boolean;
}

/** The named cells of one row ({@link rowCells} orders them as {@link headerLines}). */
function namedCells(r: LlmRow, c: Columns) {
  const o = r.ours, p = r.oursPdl ?? null, b = r.cublas, f = r.floor;
  const cp = r.copy ?? null, rd = r.read ?? null;
  const both = (x: (st: State) => number, d: number) =>
    `${fmt(x("burst"), d)} / ${fmt(x("sustained"), d)}`;
  const floorCell = f.burst.bound === f.sustained.bound
    ? `${both((st) => f[st].us, 1)} (${f.burst.bound})`
    : `${fmt(f.burst.us, 1)} (${f.burst.bound}) / ${fmt(f.sustained.us, 1)} (${f.sustained.bound})`;
  const target = llmTarget(r);
  const targetCell = target === null
    ? "-"
    : `${target}: ${verdicts(r, o, target)}${c.pdl ? `; +PDL: ${verdicts(r, p, target)}` : ""}`;
  return {
    ours: both((st) => timeOf(o, st), 1),
    oursPdl: both((st) => timeOf(p, st), 1),
    cublas: both((st) => timeOf(b, st), 1),
    copy: both((st) => timeOf(cp, st), 1),
    read: both((st) => timeOf(rd, st), 1),
    floor: floorCell,
    oursShare: both((st) => shareOf(r, o, st), 2),
    oursPdlShare: both((st) => shareOf(r, p, st), 2),
    cublasShare: both((st) => shareOf(r, b, st), 2),
    copyShare: both((st) => shareOf(r, cp, st), 2),
    readShare: both((st) => shareOf(r, rd, st), 2),
    ratio: both((st) => timeOf(b, st) / timeOf(o, st), 2),
    target: targetCell,
  };
}

/** The cells {@link namedCells} gives a row. */
type Cells = ReturnType<typeof namedCells>;

/**
 * The table's columns in order: the name, whether it is left-aligned, which option shows it
 * (absent: always shown), and the cell of a row. ours+PDL's time follows ours and its share
 * ours'; the copy's and the read's times follow cuBLAS's and their shares cuBLAS's.
 */
const COLUMNS: readonly {
  readonly name: string;
  readonly left?: true;
  readonly when?: keyof Columns;
  readonly cell: (r: LlmRow, n: Cells) => string;
}[] = [
  { name: "type", left: true, cell: (r) => r.type },
  { name: "M", cell: (r) => `${r.M}` },
  { name: "N", cell: (r) => `${r.N}` },
  { name: "K", cell: (r) => `${r.K}` },
  { name: "schedule", left: true, cell: (r) => r.schedule + earlyText(r) },
  { name: "check", left: true, cell: (r) => (r.status === "ok" ? "ok" : `**${r.status}**`) },
  { name: "ours µs", cell: (_, n) => n.ours },
  { name: "ours+PDL µs", when: "pdl", cell: (_, n) => n.oursPdl },
  { name: "cuBLAS µs", cell: (_, n) => n.cublas },
  { name: "copy µs", when: "copy", cell: (_, n) => n.copy },
  { name: "read µs", when: "read", cell: (_, n) => n.read },
  { name: "floor µs", cell: (_, n) => n.floor },
  { name: "ours/floor", cell: (_, n) => n.oursShare },
  { name: "ours+PDL/floor", when: "pdl", cell: (_, n) => n.oursPdlShare },
  { name: "cuBLAS/floor", cell: (_, n) => n.cublasShare },
  { name: "copy/floor", when: "copy", cell: (_, n) => n.copyShare },
  { name: "read/floor", when: "read", cell: (_, n) => n.readShare },
  { name: "cuBLAS/ours", cell: (_, n) => n.ratio },
  { name: "target", left: true, cell: (_, n) => n.target },
];

/** The columns {@link Columns} shows. */
function shownColumns(c: Columns): typeof COLUMNS {
  return COLUMNS.filter((col) => col.when === undefined || c[col.when]);
}

/** The table's header and alignment lines. */
function headerLines(c: Columns): string[] {
  const cols = shownColumns(c);
  return [
    `| ${cols.map((col) => col.name).join(" | ")} |`,
    `| ${cols.map((col) => (col.left ? "---" : "---:")).join(" | ")} |`,
  ];
}

/** The cells of one row, in {@link COLUMNS}' order. */
function rowCells(r: LlmRow, c: Columns): string[] {
  const n = namedCells(r, c);
  return shownColumns(c).map((col) => col.cell(r, n));
}

/**
 * The markdown record: the run, the table, the targets and the series' notes.
 *
 * @param info The run.
 * @param rows The rows.
 * @returns The text.
 */
export function llmReport(info: LlmRunInfo, rows: readonly LlmRow[]): string {
  const pdl = info.pdl === true;
  const columns = { pdl, copy: info.copySide === true, read: info.readSide === true };
  const lines = [
    `# Skinny GEMMs of LLM inference, issue 22 (${info.date})`,
    "",
    llmMethod(info),
    "",
    ...headerLines(columns),
    ...rows.map((r) => `| ${rowCells(r, columns).join(" | ")} |`),
    "",
    "Pairs are burst / sustained.",
    "",
    "## Targets (issue 22: share of the floor)",
    "",
    ...llmTargetLines(rows, pdl),
    "",
    "## Series and checks",
    "",
    ...llmSeriesLines(rows, columns),
  ];
  return lines.join("\n") + "\n";
}

/** The paragraph of llmReport's table: the kernels, the timing protocol, the floor and PDL. */
function llmMethod(info: LlmRunInfo): string {
  const tb = (x: number) => (x / 1e12).toFixed(2);
  const pdl = info.pdl === true;
  return (
    `\`${info.command}\` on ${info.device}; cuBLAS: ${info.cublas}. A [M, K] row, B col, ` +
    "D [M, N] row (bench/kernels/*.gemm), " +
    (info.schedule === undefined
      ? "our default schedule"
      : `our kernel with the schedule lines "${info.schedule}" (--schedule)`) +
    ` (size hints, the device's SMs; target ${info.target ?? "sm80"}). ` +
    "Times: µs a launch, each the median of back-to-back series (one pair of events around " +
    "L launches, a hold kernel queued before; input sets rotated, A + B over 3x L2), burst: 3 " +
    "series, each after a 1 s rest; sustained: 5 series after 1.5 s of load. Floor: the larger " +
    "of A + B + D once " +
    `at the copy bandwidth (cuMemcpyDtoD of ${info.copy.bytes / 2 ** 30} GiB, read + write ` +
    `counted, median of ${info.copy.ms.length}: ${tb(info.copy.bytesPerS)} TB/s) and the FLOPs ` +
    "at the mma.sync ceiling of the state (TOPS burst / sustained: " +
    Object.entries(info.ceilings).map(([t, c]) =>
      `${t} ${c.burst.toFixed(0)} / ${c.sustained.toFixed(0)}`
    ).join(", ") +
    "). Share: floor / time (1 is the limit); cuBLAS/ours: cuBLAS time over ours (above 1: ours " +
    "faster)." +
    (info.copySide === true
      ? " copy (`--copy`): one cuMemcpyDtoD a launch moving the row's bytes (A + B + D, half " +
        "read from the rotated sets of B, half written to a destination of its own for each set), " +
        "timed as the other sides: " +
        "what one launch of those bytes reaches, its share the limit's practical side."
      : "") +
    (info.readSide === true
      ? " read (`--read`): a streaming kernel a launch (bench/stream_read.ts: SMs x 8 blocks of " +
        "256 threads read A and B of the rotated sets once, 16-byte loads, and write D's bytes " +
        "to a destination of their own for each set; its xor of every word read checked on the " +
        "host), timed as the other sides: what one kernel launch of those bytes reaches, with " +
        "no GEMM's work."
      : "") +
    (pdl
      ? " ours+PDL (`--pdl`): the same schedule compiled with the compile option `pdl` (on sm90 " +
        "griddepcontrol: it waits for the previous grid before touching global memory, after " +
        "asking the L2 for B's first k-tiles; other targets gain nothing), every launch of its " +
        "series a programmatic dependent launch (cuLaunchKernelEx, " +
        "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): it may start while the previous " +
        "launch finishes. Ours is compiled without them (the default)." +
        (info.pdlEarly === true
          ? " With `--pdl-early`, ours+PDL's kernel is also compiled with the compile option " +
            "`pdlEarly` for B (the weights, which the previous launch does not write): its " +
            "copies of B into the first stages start before the wait, A's after it, where the " +
            "compiler takes the option (the schedule column says what each row's kernel reads " +
            "before its wait; bench/NOTES.md 86, 94)."
          : "") +
        (info.pdlTrigger === "last-copy"
          ? " With `--pdl-last-copy`, ours+PDL's kernel is also compiled with the compile " +
            'option `pdlTrigger: "last-copy"`: its mma.sync main loop lets the next grid start ' +
            "right after it issues its last copy, not after its drain (other kernel forms " +
            "trigger where they do without it)."
          : "")
      : "")
  );
}

/** llmReport's lines of the targets: each targeted row's share against its target (ours, and
 * ours+PDL with --pdl), and how many are met. */
function llmTargetLines(rows: readonly LlmRow[], pdl: boolean): string[] {
  const lines: string[] = [];
  const targeted = rows.flatMap((r) => {
    const t = llmTarget(r);
    return t === null ? [] : [{ r, t }];
  });
  type Side = (r: LlmRow) => SideFigures | null;
  const ours: Side = (r) => r.ours, withPdl: Side = (r) => r.oursPdl ?? null;
  const share = (r: LlmRow, st: State, side: Side) => shareOf(r, side(r), st);
  const verdict = (r: LlmRow, t: number, st: State, side: Side) =>
    targetVerdict(share(r, st, side), t);
  // With --pdl, each target's line for ours, then one for ours+PDL.
  const sides: [string, Side][] = pdl ? [["", ours], [" ours+PDL", withPdl]] : [["", ours]];
  for (const { r, t } of targeted) {
    for (const [name, side] of sides) {
      lines.push(
        `- ${r.type} M=${r.M} N=${r.N} K=${r.K}${name}: >= ${t}: burst ${
          fmt(share(r, "burst", side), 3)
        } ${verdict(r, t, "burst", side)}, sustained ${fmt(share(r, "sustained", side), 3)} ` +
          `${verdict(r, t, "sustained", side)}${r.status === "ok" ? "" : ` (${r.status})`}`,
      );
    }
  }
  const met = (st: State, side: Side) =>
    targeted.filter(({ r, t }) => verdict(r, t, st, side) === "met").length;
  const n = targeted.length;
  lines.push(
    "",
    `Met: ${met("burst", ours)} of ${n} in burst, ${met("sustained", ours)} of ${n} sustained.`,
  );
  if (pdl) {
    lines.push(
      "",
      `Met by ours+PDL: ${met("burst", withPdl)} of ${n} in burst, ${
        met("sustained", withPdl)
      } of ${n} sustained.`,
    );
  }
  return lines;
}

/** llmReport's lines of each row's series (launches, hold, host pacing, clock) and check. */
function llmSeriesLines(rows: readonly LlmRow[], c: Columns): string[] {
  const lines: string[] = [];
  const side = (name: string, s: SideFigures | null) =>
    s === null
      ? ""
      : `; ${name}: L ${s.launches}, hold ${s.holdMs.toFixed(2)} ms, host ${s.hostUs.toFixed(1)} ` +
        `µs a launch, host-paced series ${s.hostPaced} of 10, ${
          s.clockMHz.toFixed(0)
        } MHz sustained`;
  for (const r of rows) {
    lines.push(
      `- ${r.type} ${r.M}x${r.N}x${r.K} (${r.kernel}, ${r.registers} registers, ${r.sets} input ` +
        `sets): ${r.note}${side("ours", r.ours)}${
          c.pdl ? side("ours+PDL", r.oursPdl ?? null) : ""
        }${side("cuBLAS", r.cublas)}${c.copy ? side("copy", r.copy ?? null) : ""}${
          c.read ? side("read", r.read ?? null) : ""
        }`,
    );
  }
  return lines;
}

/** The line printed as each row completes (with ours+PDL's, the copy's and the read's time and
 * share where the row has them). */
export function progressLine(r: LlmRow): string {
  const c = {
    pdl: r.oursPdl !== undefined,
    copy: r.copy !== undefined,
    read: r.read !== undefined,
  };
  const n = namedCells(r, c);
  return `${r.type} ${r.M}x${r.N}x${r.K} [${r.schedule}${
    earlyText(r)
  }] ${r.status}: ours ${n.ours} µs, ` +
    `${c.pdl ? `ours+PDL ${n.oursPdl} µs, ` : ""}cuBLAS ${n.cublas} µs, ` +
    `${c.copy ? `copy ${n.copy} µs, ` : ""}${c.read ? `read ${n.read} µs, ` : ""}` +
    `floor ${n.floor}, share ${n.oursShare}` +
    `${c.pdl ? `, ours+PDL share ${n.oursPdlShare}` : ""}` +
    `${c.copy ? `, copy share ${n.copyShare}` : ""}${c.read ? `, read share ${n.readShare}` : ""}` +
    `${r.status === "ok" ? "" : ` (${r.note})`}`;
}

/** A row's `earlyRead` after its schedule: `; before the wait: B` or `; before the wait: none`
 * with `--pdl-early`, nothing without it. */
function earlyText(r: LlmRow): string {
  if (r.earlyRead === undefined) return "";
  return `; before the wait: ${r.earlyRead.length === 0 ? "none" : r.earlyRead.join(", ")}`;
}
