/**
 * `deno task bench --gpu --shapes llm`: the skinny shapes of LLM inference
 * (issue 22, bench/llm_shapes.ts) against cuBLAS and the floor, in one process
 * on one GPU.
 *
 * For each type (f16, bf16: f32 accumulation, out in the operand type; s8: s32
 * out) and shape, A `[M, K]` row-major, B column-major, D `[M, N]` row-major
 * (bench/kernels/*.gemm):
 *
 * 1. Our kernel at its default schedule for the problem (bench/gpu_bench.ts
 *    `compileFor`: the sizes as hints, the device's SM count), loaded with as
 *    many input sets as keep A + B over 3x the 60 MB L2 (at least 2; `load`),
 *    launched once and checked on sampled rows and columns against the
 *    reference (`verify`); a row whose check fails is reported FAILED and not
 *    timed. The schedule chosen (threadblock, warp, stages, split_k) is in the row.
 * 2. Timing in back-to-back series: these kernels run 5–100 µs, where one
 *    launch's own overhead dominates per-launch event timing, so each figure is
 *    one pair of events around L launches ({@link seriesLaunches}: at least 20,
 *    enough for ~2 ms), rotating among the input sets, over L. A hold kernel
 *    (bench/clock_probe.ts `ClockProbe.hold`) is queued before each series'
 *    start event, long enough for the host to queue the whole series behind it
 *    ({@link holdMs}), so the GPU never waits for the host inside a series; a
 *    series whose queueing still outlasted the hold by more than half its own
 *    time is counted as host-paced in the record. Two states of the card
 *    (bench/gpu_measure.ts, bench/NOTES.md 26): *burst*, the median of 3 series
 *    each after a 1 s rest (ours and cuBLAS share each rest, the order
 *    alternating: a series lasts a few ms, well inside the ~80 ms the card holds
 *    its boost clock), and *sustained*, the median of 5 series after 1.5 s of
 *    continuous launches of the same kernel. The SM clock beside one more series
 *    after the sustained ones is read by bench/clock_probe.ts.
 * 3. cuBLAS (`cublasGemmEx`, bench/cublas.ts: the same buffers, TN) timed the
 *    same way in the same run (`--no-cublas`: not). With `--pdl`, the same
 *    schedule compiled with the compile option `pdl` (sm90: `griddepcontrol`)
 *    is checked too and timed the same way (ours+PDL), every launch of its
 *    series a programmatic dependent launch (`Cuda.launch`'s `pdl`:
 *    `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`),
 *    so that a launch may start while the one before it finishes (it waits,
 *    `griddepcontrol.wait`, before touching global memory; sm80's kernels have
 *    no such instruction and gain nothing): the columns "ours+PDL µs" and
 *    "ours+PDL/floor" and the targets' verdicts for it join the table, `oursPdl`
 *    the JSON rows. The checks (step 1) are ordinary launches. `--pdl-early`
 *    (implies `--pdl`): ours+PDL's kernel is also compiled with the compile
 *    option `pdlEarly` for B, the weights, which no launch of the series
 *    writes: its first stages of B are copied before the wait. `--pdl-last-copy`
 *    (implies `--pdl`; combines with `--pdl-early`): ours+PDL's kernel is also
 *    compiled with the compile option `pdlTrigger: "last-copy"` (its mma.sync
 *    main loop lets the next grid start after its last copy, not after its
 *    drain; an experiment, bench/NOTES.md 93). With `--copy`,
 *    a `cuMemcpyDtoD` launch moving the row's bytes (half read from B's rotated
 *    sets, half written to a destination a set, {@link copyLaunch}) is timed the
 *    same way as one more side: the columns "copy µs" and "copy/floor", what one
 *    launch of those bytes reaches (bench/NOTES.md 91: 0.78 of an H100's floor
 *    at N = K = 4096, where ours+PDL reaches 0.80). With `--read`, a plain
 *    streaming kernel of the same bytes (bench/stream_read.ts, checked once a
 *    row by the xor of every word it read) is a side too: "read µs" and
 *    "read/floor", what a kernel launch of those bytes reaches.
 * 4. The floor, measured in the same run: the larger of the bytes of A, B and D
 *    once at the device-to-device copy bandwidth (`cuMemcpyDtoD` of 1 GiB, read
 *    + write counted, median of 10) and the FLOPs at the mma.sync ceiling of the
 *    type (bench/gpu_measure.ts `ceilings`: burst, fixed operands, for the burst
 *    figures; sustained for the sustained ones). {@link llmFloor}.
 *
 * Prints the table (markdown; times in µs, burst / sustained), the share of
 * the floor (floor time / measured time: 1.0 is the limit) for ours and
 * cuBLAS, ours against cuBLAS (cuBLAS time / ours: above 1, ours is faster),
 * and the targets of issue 22 met or MISSED in each state (bench/llm_report.ts `llmTarget`):
 * M <= 64 at (N, K) = (4096, 4096) and (14336, 4096): >= 0.85 of the floor;
 * M = 128 and 256 at all three (N, K): >= 0.75. Writes
 * `bench/results/llm-DATE.md` (`llm-DATE-sm90.md` with `--target sm90`: our kernels compiled
 * for sm90, the wgmma tiles where passes/skinny.ts chooses them) and the raw figures beside it
 * as `.json` (new
 * files: `-2`, ... when one exists; rewritten after each row). The whole table
 * takes ~7 minutes on the H200 (~10 s a row: 3 rests, 2 loads; with 5 rests 9 rows took 117 s).
 *
 * `deno run -A bench/llm.ts [--types f16,bf16,s8] [--m 1,16,...] [--nk NxK,...] [--sizes MxNxK,...]
 * [--no-cublas] [--target sm80|sm86|sm90] [--pdl | --pdl-early | --pdl-last-copy] [--copy] [--read] [--schedule "LINES"]
 * [--out DIR]`, or `deno task bench --gpu --shapes llm [the same
 * options]`.
 *
 * @module
 */

import { Cuda, cudaAvailable, type CudaModule } from "../backends/cuda/driver.ts";
import type { DeviceBuffer } from "../backends/cuda/resources.ts";
import { check as checkCuda } from "../backends/cuda/errors.ts";
import type { CompiledKernel } from "../compiler.ts";
import type { Target } from "../ir/gemm.ts";
import { isTargetName, targetList } from "../ir/target.ts";
import { median, timeLaunches } from "../harness/timing.ts";
import { Cublas } from "./cublas.ts";
import { ClockProbe } from "./clock_probe.ts";
import { streamRead } from "./stream_read.ts";
import {
  compileFor,
  cutlassName,
  load,
  loadFunction,
  type PdlCompile,
  poisonOutput,
  verify,
} from "./gpu_bench.ts";
import {
  type Ceiling,
  ceilings,
  type Series,
  type SeriesMeasurement,
  timeBurstSeries,
  timeSeries,
  timeSustainedSeries,
} from "./gpu_measure.ts";
import { LLM_M_16BIT, LLM_M_S8, LLM_SHAPES } from "./llm_shapes.ts";
import { freshResultPath, resultDate, RESULTS_DIR } from "./results.ts";
import {
  type CopyBandwidth,
  LLM_TYPES,
  llmFloor,
  type LlmProblem,
  llmReport,
  type LlmRow,
  type LlmRunInfo,
  type LlmType,
  operandBytes,
  problemBytes,
  progressLine,
  type SideFigures,
} from "./llm_report.ts";

/** A series' length: at least {@link SERIES_MIN} launches, enough for {@link SERIES_MS}. */
const SERIES_MIN = 20;
const SERIES_MS = 2;
const SERIES_MAX = 2000;

/**
 * Launches per back-to-back series for a kernel of about `estUs`: enough to
 * last ~2 ms (50 at 40 µs), at least 20, at most 2000.
 *
 * @param estUs The time of one launch (µs).
 * @returns The series' length.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { seriesLaunches } from "./llm.ts";
 * equal(seriesLaunches(40), 50);
 * equal(seriesLaunches(500), 20);
 * ```
 */
export function seriesLaunches(estUs: number): number {
  if (!Number.isFinite(estUs) || estUs <= 0) return SERIES_MAX;
  return Math.min(SERIES_MAX, Math.max(SERIES_MIN, Math.ceil((SERIES_MS * 1e3) / estUs)));
}

/**
 * How long the hold before a series lasts (ms): twice the host's time to
 * queue it (`hostUs` a launch), at least 50 µs.
 *
 * @param hostUs Host time to queue one launch (µs).
 * @param launches The series' length.
 * @returns The hold (ms).
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { holdMs } from "./llm.ts";
 * equal(holdMs(5, 400), 4);
 * ```
 */
export function holdMs(hostUs: number, launches: number): number {
  return Math.max(0.05, (2 * hostUs * launches) / 1e3);
}

/** The options of the benchmark. */
export interface LlmOptions {
  readonly types: readonly LlmType[];
  /** The M to run; null: all. */
  readonly m: readonly number[] | null;
  readonly cublas: boolean;
  /** Where the record goes (default bench/results/). */
  readonly out: string;
  /** The target our kernels are compiled for (`--target`; default sm80, sm90's wgmma tiles
   * where passes/skinny.ts chooses them). */
  readonly target: Target;
  /**
   * `--pdl`: time our kernel compiled with the compile option `pdl` too, every launch of its
   * series a programmatic dependent launch (ours+PDL). Default false.
   */
  readonly pdl: boolean;
  /** `--pdl-early` (implies `--pdl`): ours+PDL's kernel also with the compile option `pdlEarly`
   * for B, the weights, whose first stages are then copied before the wait. Default false. */
  readonly pdlEarly: boolean;
  /** `--pdl-last-copy` (implies `--pdl`; combines with `--pdl-early`): ours+PDL's kernel also with the
   * compile option `pdlTrigger: "last-copy"` (the mma.sync loop lets the next grid start after
   * its last copy, not after its drain). Default false. */
  readonly pdlLastCopy: boolean;
  /** `--nk 4096x4096,...`: only these (N, K) of the table (null: all). */
  readonly nk: readonly string[] | null;
  /** `--sizes MxNxK,...`: these problems instead of the table's (for every selected type; not
   * with `--m` or `--nk`), e.g. a sweep of K at one M and N. Null: the table. */
  readonly sizes: readonly LlmProblem[] | null;
  /** `--copy`: time a device-to-device copy of each row's bytes as one more side ({@link copyLaunch}).
   * Default false. */
  readonly copy: boolean;
  /** `--read`: time a streaming kernel that moves each row's bytes as one more side
   * (bench/stream_read.ts). Default false. */
  readonly read: boolean;
  /** `--schedule "LINES"`: schedule lines (`;`-separated) every row's kernel is compiled with,
   * to time a schedule against the peer in the table's protocol (absent: the defaults). */
  readonly schedule?: string;
}

/**
 * Reads `--types f16,bf16,s8`, `--m 1,16,...`, `--nk NxK,...`, `--sizes MxNxK,...`, `--no-cublas`, `--target T`,
 * `--pdl`, `--pdl-early`, `--pdl-last-copy`, `--copy`, `--read`, `--schedule "LINES"`, `--out DIR`; other arguments are ignored (bench/main.ts
 * passes its own on).
 *
 * @param args The arguments.
 * @returns The options, or the sentence saying what is wrong.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { parseLlmArgs } from "./llm.ts";
 * const o = parseLlmArgs(["--types", "s8", "--m", "16", "--no-cublas", "--pdl"]);
 * equal(typeof o, "object");
 * if (typeof o === "object") deepEqual([o.types, o.m, o.cublas, o.pdl], [["s8"], [16], false, true]);
 * ```
 */
export function parseLlmArgs(args: readonly string[]): LlmOptions | string {
  const value = (name: string) => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : args[i + 1] ?? "";
  };
  const types = value("--types")?.split(",") ?? [...LLM_TYPES];
  const bad = types.find((t) => !(LLM_TYPES as readonly string[]).includes(t));
  if (bad !== undefined) {
    return `Unknown type "${bad}" in --types: expected some of ${LLM_TYPES.join(", ")}`;
  }
  const known = [...new Set([...LLM_M_16BIT, ...LLM_M_S8])].sort((x, y) => x - y);
  const m = value("--m")?.split(",") ?? null;
  const wrong = m?.find((x) => x.trim() === "" || !known.includes(Number(x)));
  if (wrong !== undefined) {
    return `Unknown M "${wrong}" in --m: the table has M = ${known.join(", ")}`;
  }
  const shapes = [...new Set(LLM_SHAPES.map((s) => `${s.N}x${s.K}`))];
  const nk = value("--nk")?.split(",") ?? null;
  const wrongNk = nk?.find((x) => !shapes.includes(x));
  if (wrongNk !== undefined) {
    return `Unknown (N, K) "${wrongNk}" in --nk: the table has ${shapes.join(", ")}`;
  }
  const sizeTexts = value("--sizes")?.split(",") ?? null;
  const sizes = sizeTexts?.map(parseSize) ?? null;
  const badSize = sizeTexts?.find((_, i) => sizes?.[i] === null);
  if (badSize !== undefined) {
    return `Bad size "${badSize}" in --sizes: expected MxNxK with positive integers, e.g. 16x4096x1024`;
  }
  if (sizes !== null && (m !== null || nk !== null)) {
    return "--sizes replaces the table's rows: --m and --nk select among the table's, not with it";
  }
  const schedule = value("--schedule");
  if (schedule === "") return "--schedule needs schedule lines";
  const out = value("--out");
  if (out === "") return "--out needs a folder";
  const target = value("--target") ?? "sm80";
  if (!isTargetName(target)) {
    return `Unknown target "${target}" in --target: expected ${targetList()}`;
  }
  return {
    types: types as LlmType[],
    m: m?.map(Number) ?? null,
    cublas: !args.includes("--no-cublas"),
    out: out ?? RESULTS_DIR,
    target,
    pdl: ["--pdl", "--pdl-early", "--pdl-last-copy"].some((f) => args.includes(f)),
    pdlEarly: args.includes("--pdl-early"),
    pdlLastCopy: args.includes("--pdl-last-copy"),
    nk,
    sizes: sizes as LlmProblem[] | null,
    copy: args.includes("--copy"),
    read: args.includes("--read"),
    ...(schedule !== undefined ? { schedule } : {}),
  };
}

/** `MxNxK` (e.g. `16x4096x1024`, positive integers) as a problem; null where it is not one. */
export function parseSize(text: string): LlmProblem | null {
  const parts = text.split("x");
  if (parts.length !== 3 || !parts.every((x) => /^[1-9][0-9]*$/.test(x))) return null;
  const [M, N, K] = parts.map(Number);
  return { M: M!, N: N!, K: K! };
}

/**
 * The rows an option set selects: type by type, then (N, K) and M as bench/llm_shapes.ts lists
 * them; with `--sizes`, those problems in their order for every type.
 */
export function selectedProblems(o: LlmOptions): { type: LlmType; p: LlmProblem }[] {
  const sizes = o.sizes;
  if (sizes !== null) return o.types.flatMap((type) => sizes.map((p) => ({ type, p })));
  return o.types.flatMap((type) =>
    LLM_SHAPES.filter((s) =>
      s.types.includes(type) && (o.m === null || o.m.includes(s.M)) &&
      (o.nk === null || o.nk.includes(`${s.N}x${s.K}`))
    ).map((s) => ({ type, p: { M: s.M, N: s.N, K: s.K } }))
  );
}

/** A compiled kernel's schedule: `64x256x64, warp 32x64x64, 4 stages, split_k 4`, and its
 * operands' L2 eviction priorities where it has them (`, cache_b evict_first`). */
export function scheduleText(ck: CompiledKernel): string {
  const s = ck.planned.schedule, plan = ck.planned.plan;
  const tb = plan.tile?.threadblock ?? s.threadblock;
  const wp = plan.warp?.warp ?? s.warp;
  if (tb === undefined || wp === undefined) return "?";
  const stages = plan.pipeline?.stages ?? s.stages ?? "?";
  const splitK = plan.tile?.splitK ?? s.splitK ?? 1;
  const cache = [["cache_a", s.cacheA], ["cache_b", s.cacheB]].filter(([, v]) => v !== undefined)
    .map(([key, v]) => `, ${key} ${v}`).join("");
  return `${tb.m}x${tb.n}x${tb.k}, warp ${wp.m}x${wp.n}x${wp.k}, ${stages} stages, ` +
    `split_k ${splitK}${cache}`;
}

const COPY_BYTES = 2 ** 30;
const COPY_RUNS = 10;

/** The device-to-device copy bandwidth: `cuMemcpyDtoD` of 1 GiB, read + write counted, median of 10. */
function copyBandwidth(cuda: Cuda): CopyBandwidth {
  const d = cuda.driver;
  const copy = d.cuMemcpyDtoD_v2;
  if (copy === null) throw new Error("The driver lacks cuMemcpyDtoD_v2: no copy bandwidth");
  const src = cuda.alloc(COPY_BYTES), dst = cuda.alloc(COPY_BYTES);
  try {
    src.fill(0x3c);
    dst.fill(0);
    const ms = timeLaunches(
      cuda,
      () => {
        checkCuda(d, "cuMemcpyDtoD_v2", copy(dst.ptr, src.ptr, BigInt(COPY_BYTES)));
      },
      2,
      COPY_RUNS,
    );
    return { bytes: COPY_BYTES, ms, bytesPerS: (2 * COPY_BYTES) / (median(ms) * 1e-3) };
  } finally {
    src.free();
    dst.free();
  }
}

/**
 * `--copy`'s side: a launch of `cuMemcpyDtoD` that moves the row's bytes (A + B + D once,
 * {@link problemBytes}), half read and half written, from the input set of B the launch
 * rotates to into a destination of its own (one a set, appended to `bufs`, freed with the
 * row's). Rotating the destinations as the GEMMs rotate their inputs keeps the copy's working
 * set (read and written) as far past the L2 as theirs: one scratch buffer written by every
 * launch could stay dirty in the L2 and never reach HBM inside a series (the first GPU run,
 * bench/NOTES.md 90, used one). What one launch of those bytes reaches, in the same series as
 * the GEMMs. Null where half the bytes exceed B's buffer (no row of the table: B is the
 * largest operand at every M of it) or the driver has no copy.
 */
export function copyLaunch(
  cuda: Cuda,
  type: LlmType,
  p: LlmProblem,
  bBufs: readonly DeviceBuffer[],
  bufs: DeviceBuffer[],
): ((i: number) => void) | null {
  const d = cuda.driver, copy = d.cuMemcpyDtoD_v2;
  const bytes = Math.floor(problemBytes(type, p) / 32) * 16;
  if (copy === null || bBufs.length === 0 || bytes > bBufs[0]!.bytes) return null;
  const dsts = bBufs.map(() => cuda.alloc(bytes));
  bufs.push(...dsts);
  return (i) => {
    const set = i % bBufs.length;
    checkCuda(d, "cuMemcpyDtoD_v2", copy(dsts[set]!.ptr, bBufs[set]!.ptr, BigInt(bytes)));
  };
}

/**
 * `--read`'s side of a row (bench/stream_read.ts): the streaming kernel over the row's input
 * sets, checked once (its xor of every word of set 0's A and B against the host's). `ok` false
 * (not timed) where the check failed or the sets do not fit it; `note` says which.
 */
function readSide(
  cuda: Cuda,
  type: LlmType,
  p: LlmProblem,
  k: { aBufs: readonly DeviceBuffer[]; bBufs: readonly DeviceBuffer[] },
  bufs: DeviceBuffer[],
  mods: CudaModule[],
): { ok: boolean; note: string; launch: (i: number) => void } {
  const skip = (why: string) => ({ ok: false, note: `not run (${why})`, launch: () => {} });
  const sets = k.aBufs.map((a, i) => ({ a, b: k.bBufs[i]! }));
  let r, c;
  try {
    r = streamRead(cuda, operandBytes(type, p), sets, bufs, mods);
    if (r === null) return skip("bytes not 16-byte vectors");
    c = r.check();
  } catch (e) {
    // The row's other sides still run: the read is a diagnostic beside them.
    return skip(e instanceof Error ? e.message : String(e));
  }
  const hex = (x: number) => `0x${x.toString(16).padStart(8, "0")}`;
  return {
    ok: c.ok,
    note: `${c.ok ? "ok" : "FAILED"} (xor ${hex(c.got)}, host ${hex(c.want)}; ${r.blocks} blocks)`,
    launch: r.launch,
  };
}

/** A side's series, from a first estimate: 2 warm-up launches, then 20 behind a 1 ms hold. */
function prepare(cuda: Cuda, probe: ClockProbe, launch: (i: number) => void) {
  for (let w = 0; w < 2; w++) launch(w);
  const est = timeSeries(cuda, { launch, launches: 20, before: () => probe.hold(1) }, 2);
  const hostUs = (est.hostMs / 20) * 1e3;
  const launches = seriesLaunches(est.ms * 1e3);
  const h = holdMs(hostUs, launches);
  const series: Series = { launch, launches, before: () => probe.hold(h) };
  return { series, estMs: est.ms, hostUs, holdMs: h };
}

/** A side's figures from its burst and sustained series. */
function figures(
  s: ReturnType<typeof prepare>,
  burst: SeriesMeasurement,
  sustained: SeriesMeasurement,
  clockMHz: number,
): SideFigures {
  const all = [...burst.series, ...sustained.series];
  const L = s.series.launches;
  return {
    burstUs: burst.ms * 1e3,
    sustainedUs: sustained.ms * 1e3,
    launches: L,
    holdMs: s.holdMs,
    hostUs: s.hostUs,
    burstSeriesUs: burst.series.map((t) => t.ms * 1e3),
    sustainedSeriesUs: sustained.series.map((t) => t.ms * 1e3),
    hostPaced: all.filter((t) => t.hostMs - s.holdMs > 0.5 * L * t.ms).length,
    clockMHz,
  };
}

/** What every row of a run shares. */
interface RunContext {
  readonly cuda: Cuda;
  readonly blas: Cublas | null;
  readonly probe: ClockProbe;
  readonly ceilings: ReadonlyMap<string, Ceiling>;
  readonly copy: CopyBandwidth;
  readonly target: Target;
  /** Time ours+PDL too (`--pdl`), with B read early (`--pdl-early`) or the trigger after the last
   * copy (`--pdl-last-copy`). */
  readonly pdl: PdlCompile;
  /** Time the copy of each row's bytes too (`--copy`). */
  readonly copySide: boolean;
  /** Time the streaming kernel of each row's bytes too (`--read`). */
  readonly readSide: boolean;
  /** `--schedule`'s lines (absent: the defaults). */
  readonly schedule?: string;
}

/** The floors of a problem in both states. */
function floors(ctx: RunContext, type: LlmType, p: LlmProblem): LlmRow["floor"] {
  const c = ctx.ceilings.get(type);
  const at = (tops: number | undefined) =>
    llmFloor(type, p, ctx.copy.bytesPerS, (tops ?? NaN) * 1e12);
  return { burst: at(c?.fixed), sustained: at(c?.sustained) };
}

/** A row's kernels loaded and checked ({@link loadChecked}). */
interface CheckedRow {
  readonly k: ReturnType<typeof load>;
  /** The PDL kernel on the same inputs (`--pdl`), else null. */
  readonly kPdl: ReturnType<typeof load> | null;
  readonly ok: boolean;
  readonly note: string;
  readonly registers: number;
}

/**
 * Loads a row's kernel (and its PDL twin) on fresh input sets and checks both against the
 * reference; the row fails if either does, and the note gives the failing one's error.
 */
function loadChecked(
  cuda: Cuda,
  ck: CompiledKernel,
  ckPdl: CompiledKernel | null,
  sizes: { M: number; N: number; K: number },
  bufs: DeviceBuffer[],
  mods: CudaModule[],
): CheckedRow {
  const k = load(cuda, ck, sizes, bufs);
  mods.push(k.mod);
  const registers = k.fn.attributes().registers;
  const checked = verify(cuda, ck, sizes, k);
  // The PDL kernel on the same inputs, checked as well (its D poisoned again first).
  const loaded = ckPdl === null ? null : loadFunction(cuda, ckPdl);
  if (loaded !== null) mods.push(loaded.mod);
  const kPdl = loaded === null ? null : { ...k, fn: loaded.fn };
  if (kPdl !== null) poisonOutput(ck, kPdl.dBuf);
  const checkedPdl = kPdl === null ? null : verify(cuda, ckPdl!, sizes, kPdl);
  const cmp = checkedPdl !== null && !checkedPdl.comparison.ok
    ? checkedPdl.comparison
    : checked.comparison;
  const note = `${cmp.ok ? "ok" : "FAILED"} on ${checked.elements} sampled elements ` +
    `(relative Frobenius error ${cmp.relFrobenius.toExponential(2)}${
      checkedPdl === null ? "" : `; the PDL kernel ${checkedPdl.comparison.ok ? "ok" : "FAILED"}`
    })`;
  return { k, kPdl, ok: cmp.ok, note, registers };
}

/** A side ready to time ({@link prepare}). */
type Prepared = ReturnType<typeof prepare>;

/** The sides of a row: ours, ours+PDL (`--pdl`), cuBLAS, the copy (`--copy`), the read (`--read`). */
interface RowSides<T> {
  readonly ours: T;
  readonly oursPdl: T | null;
  readonly cublas: T | null;
  readonly copy: T | null;
  readonly read: T | null;
}

/**
 * Times the prepared sides: one burst measurement over all of them (sharing its rests), then each
 * side's sustained series and the SM clock while it runs.
 */
function timeSides(cuda: Cuda, probe: ClockProbe, s: RowSides<Prepared>): RowSides<SideFigures> {
  const sides = [s.ours, s.oursPdl, s.cublas, s.copy, s.read].filter((x) => x !== null);
  const burst = timeBurstSeries(cuda, sides.map((x) => x.series));
  const time = (x: Prepared | null): SideFigures | null => {
    if (x === null) return null;
    const { launch, launches } = x.series;
    const sus = timeSustainedSeries(cuda, x.series, x.estMs);
    const clock = probe.during(() => {
      for (let i = 0; i < launches; i++) launch(i);
    }, 0.8 * launches * sus.ms * 1e6);
    return figures(x, burst[sides.indexOf(x)]!, sus, clock);
  };
  return {
    ours: time(s.ours)!,
    oursPdl: time(s.oursPdl),
    cublas: time(s.cublas),
    copy: time(s.copy),
    read: time(s.read),
  };
}

/** No side timed (a row that failed its check or did not run). */
const UNTIMED: RowSides<null> = { ours: null, oursPdl: null, cublas: null, copy: null, read: null };

/** A row's sides as its record holds them: an optional side's key present exactly when its
 * option is (`--pdl`, `--copy`, `--read`). */
function shownSides(ctx: RunContext, t: RowSides<SideFigures | null>) {
  return {
    ours: t.ours,
    ...(ctx.pdl ? { oursPdl: t.oursPdl } : {}),
    cublas: t.cublas,
    ...(ctx.copySide ? { copy: t.copy } : {}),
    ...(ctx.readSide ? { read: t.read } : {}),
  };
}

/** Compiles, checks and times one row (every side, both states). */
function benchRow(ctx: RunContext, type: LlmType, p: LlmProblem): LlmRow {
  const { cuda, blas, probe } = ctx;
  const shape = { shape: `${p.M}x${p.N}x${p.K}`, ...p };
  const ck = compileFor(cuda, type, shape, ctx.target, false, ctx.schedule);
  // --pdl: the same schedule compiled with programmatic dependent launch's instructions.
  const ckPdl = ctx.pdl !== false
    ? compileFor(cuda, type, shape, ctx.target, ctx.pdl, ctx.schedule)
    : null;
  if (ckPdl !== null && scheduleText(ckPdl) !== scheduleText(ck)) {
    throw new Error(`--pdl: ${scheduleText(ckPdl)} is not ${scheduleText(ck)}`);
  }
  const bufs: DeviceBuffer[] = [];
  const mods: CudaModule[] = [];
  try {
    const { k, kPdl, ok, note, registers } = loadChecked(cuda, ck, ckPdl, p, bufs, mods);
    const sets = k.argSets.length;
    const base = {
      type,
      ...p,
      schedule: scheduleText(ck),
      ...(typeof ctx.pdl === "object" && ctx.pdl.early === true && ckPdl !== null
        ? { earlyRead: ckPdl.manifest.pdl?.early ?? [] }
        : {}),
      kernel: cutlassName(ck, type),
      floor: floors(ctx, type, p),
      sets,
      registers,
    };
    if (!ok) return { ...base, status: "FAILED", note, ...shownSides(ctx, UNTIMED) };
    const reader = ctx.readSide ? readSide(cuda, type, p, k, bufs, mods) : null;
    const copyLaunches = ctx.copySide ? copyLaunch(cuda, type, p, k.bBufs, bufs) : null;
    const pdl = { pdl: true } as const;
    const timed = timeSides(cuda, probe, {
      ours: prepare(cuda, probe, (i) => cuda.launch(k.fn, k.config, k.argSets[i % sets]!)),
      oursPdl: kPdl === null ? null : prepare(
        cuda,
        probe,
        (i) => cuda.launch(kPdl.fn, k.config, k.argSets[i % sets]!, undefined, pdl),
      ),
      cublas: blas === null ? null : prepare(cuda, probe, (i) => {
        const [a, b] = [k.aBufs[i % sets]!, k.bBufs[i % sets]!];
        blas.gemmTN(type, p.M, p.N, p.K, a.ptr, b.ptr, k.cBuf.ptr);
      }),
      copy: copyLaunches === null ? null : prepare(cuda, probe, copyLaunches),
      read: reader?.ok ? prepare(cuda, probe, reader.launch) : null,
    });
    return {
      ...base,
      status: "ok",
      note: note + (reader === null ? "" : `; the read kernel ${reader.note}`),
      ...shownSides(ctx, timed),
    };
  } finally {
    for (const b of bufs) b.free();
    for (const m of mods) m.unload();
  }
}

/** cuBLAS, unless `--no-cublas` or it cannot be loaded; and what the record says of it. */
function openBlas(o: LlmOptions): { blas: Cublas | null; note: string } {
  if (!o.cublas) return { blas: null, note: "not run (--no-cublas)" };
  try {
    const blas = Cublas.open();
    return { blas, note: blas.path };
  } catch (e) {
    return { blas: null, note: `unavailable (${(e as Error).message})` };
  }
}

/** The row of a problem that did not run. */
function errorRow(ctx: RunContext, type: LlmType, p: LlmProblem, e: unknown): LlmRow {
  const message = e instanceof Error ? e.message : String(e);
  return {
    type,
    ...p,
    status: "ERROR",
    note: `ERROR ${message.replace(/\s*\n\s*/g, " ")}`,
    schedule: "?",
    kernel: "?",
    sets: 0,
    registers: 0,
    ...shownSides(ctx, UNTIMED),
    floor: floors(ctx, type, p),
  };
}

/**
 * Runs the table and records it. The record is rewritten after every row, so
 * a run stopped part way leaves the rows it finished.
 *
 * @param command The command line, for the record.
 * @param args {@link parseLlmArgs}'s arguments.
 * @returns False without a driver, on bad arguments, or when a row failed its check or did not run.
 */
export function llmBenchMain(command: string, args: readonly string[]): boolean {
  const o = parseLlmArgs(args);
  const avail = typeof o === "string" ? { ok: false as const, why: o } : cudaAvailable();
  if (typeof o === "string" || !avail.ok) {
    console.error(`bench --gpu --shapes llm: ${avail.ok ? o : avail.why}`);
    return false;
  }
  const t0 = performance.now();
  const problems = selectedProblems(o);
  using cuda = Cuda.open();
  const dev = cuda.device;
  const { blas, note } = openBlas(o);
  const device =
    `${dev.name} (${dev.arch}, ${dev.multiprocessors} SMs, driver ${dev.driverVersionText})`;
  console.log(`# ${device}; cuBLAS: ${note}; ${problems.length} rows (~12 s each)`);
  if (o.schedule !== undefined) console.log(`# --schedule: every kernel with "${o.schedule}"`);
  if (o.pdl) {
    console.log(
      `# --pdl: ours timed again as programmatic dependent launches (ours+PDL${
        (o.pdlEarly ? ", B read before the wait: --pdl-early" : "") +
        (o.pdlLastCopy ? ", the next grid started after the last copy: --pdl-last-copy" : "")
      })${
        o.target === "sm90" ? "" : `; target ${o.target} has no griddepcontrol, so it gains nothing`
      }`,
    );
  }
  const probe = new ClockProbe(cuda);
  const rows: LlmRow[] = [];
  let path = "";
  try {
    const ceil = ceilings(cuda, probe, o.types);
    const copy = copyBandwidth(cuda);
    const perType = o.types.map((t) => {
      const c = ceil.get(t);
      return [t, { burst: c?.fixed ?? NaN, sustained: c?.sustained ?? NaN }] as const;
    });
    const date = resultDate();
    const info: LlmRunInfo = {
      date,
      command,
      device,
      cublas: note,
      target: o.target,
      ...(o.pdl ? { pdl: true } : {}),
      ...(o.pdlEarly ? { pdlEarly: true } : {}),
      ...(o.pdlLastCopy ? { pdlTrigger: "last-copy" as const } : {}),
      ...(o.schedule !== undefined ? { schedule: o.schedule } : {}),
      ...(o.copy ? { copySide: true } : {}),
      ...(o.read ? { readSide: true } : {}),
      copy,
      ceilings: Object.fromEntries(perType),
    };
    console.log(
      `# copy ${(copy.bytesPerS / 1e12).toFixed(2)} TB/s; mma.sync TOPS (burst / sustained): ${
        perType.map(([t, c]) => `${t} ${c.burst.toFixed(0)} / ${c.sustained.toFixed(0)}`).join(", ")
      }`,
    );
    const suffix = o.target === "sm80" ? "" : `-${o.target}`;
    path = freshResultPath(o.out, `llm-${date}${suffix}`, ".md");
    const ctx: RunContext = {
      cuda,
      blas,
      probe,
      ceilings: ceil,
      copy,
      target: o.target,
      pdl: o.pdlEarly || o.pdlLastCopy ? { early: o.pdlEarly, lastCopy: o.pdlLastCopy } : o.pdl,
      copySide: o.copy,
      readSide: o.read,
      ...(o.schedule !== undefined ? { schedule: o.schedule } : {}),
    };
    for (const { type, p } of problems) {
      let row: LlmRow;
      try {
        row = benchRow(ctx, type, p);
      } catch (e) {
        row = errorRow(ctx, type, p, e);
      }
      rows.push(row);
      console.log(progressLine(row));
      const done = rows.length === problems.length;
      const text = llmReport(info, rows) +
        (done ? "" : `\nIncomplete: ${rows.length} of ${problems.length} rows so far.\n`);
      Deno.writeTextFileSync(path, text);
      Deno.writeTextFileSync(
        path.replace(/\.md$/, ".json"),
        JSON.stringify({ ...info, mmaSync: Object.fromEntries(ceil), rows }, null, 2) + "\n",
      );
      if (done) console.log("\n" + text);
    }
  } finally {
    probe.close();
    blas?.close();
  }
  console.log(`Recorded in ${path} (${((performance.now() - t0) / 1e3).toFixed(0)} s).`);
  return rows.every((r) => r.status === "ok");
}

if (import.meta.main) {
  if (!llmBenchMain(["deno run -A bench/llm.ts", ...Deno.args].join(" "), Deno.args)) Deno.exit(1);
}
