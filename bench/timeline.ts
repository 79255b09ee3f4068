/**
 * Where a launch's time goes, block by block (issue 22: the ~2-4 µs our skinny rows pay over
 * the floor at N = K = 4096, bench/NOTES.md 90-95). A kernel's PTX is instrumented
 * ({@link instrumentPtx}): thread (0,0,0) of every block stores `%globaltimer` and `%clock64`
 * at up to seven points (its start; after `griddepcontrol.wait`; after
 * `griddepcontrol.launch_dependents`, the end of the main loop in our PDL kernels; before its
 * `ret`; where the k-loop starts after the prologue and where the epilogue starts; in sm90's
 * pipelines, after the barrier that closes their mbarrier set-up) and its `%smid` into a slot of
 * its own of a trace buffer, one buffer region a launch. A back-to-back series of launches then
 * shows, launch by launch ({@link summarizeTimeline}): the grid's span from its first block's
 * start to its last block's end, the gap to the next grid's first block (negative where PDL
 * overlaps them), the skew of the blocks' starts and ends, the wait's release after the previous
 * grid's end, and each block's prologue, k-loop and epilogue, and the set-up from its start.
 *
 * `%globaltimer` is a global nanosecond clock whose update step the hardware chooses (the
 * summary reports the step it saw: the smallest nonzero difference between a launch's
 * timestamps); `%clock64` counts the SM's cycles, exact within a block, and the two together
 * give each SM's clock rate.
 *
 * `deno run -A bench/timeline.ts [--type f16|bf16|s8] [--size MxNxK] [--target sm80|sm86|sm90]
 * [--schedule "LINES"] [--launches N] [--rounds R] [--read] [--slices G:R[:ae],..] [--pdl-last-copy]
 * [--out FILE]`:
 * ours (the llm table's kernel, compiled with `--pdl` and launched both ways: the ordinary launch
 * leaves `griddepcontrol` without effect), and with `--read` the streaming kernel of the same
 * bytes (bench/stream_read.ts), and with `--slices` the research kernel that reads B as ours
 * does, its columns in groups of G and its k-loop rotated by R, with A read too (a) and B's
 * copies evicting first (e) (bench/slice_read.ts), each
 * checked once and then traced. A research instrument: the
 * stores add one 128-byte line a block and a timer read a point to thread 0; nothing of the benchmark
 * or CI runs it on a GPU (tests/timeline_test.ts tests the instrumentation and the summary).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { Cuda, cudaAvailable, type CudaModule, type KernelArg } from "../backends/cuda/driver.ts";
import type { DeviceBuffer } from "../backends/cuda/resources.ts";
import type { CompiledKernel } from "../compiler.ts";
import { isTargetName } from "../ir/target.ts";
import type { Target } from "../ir/gemm.ts";
import { median } from "../harness/timing.ts";
import { ClockProbe } from "./clock_probe.ts";
import { compileFor, load, loadFunction, poisonOutput, verify } from "./gpu_bench.ts";
import { LLM_TYPES, type LlmProblem, type LlmType, operandBytes } from "./llm_report.ts";
import { STREAM_READ_BLOCKS_PER_SM, streamRead } from "./stream_read.ts";
import {
  parseSliceVariants,
  SLICE_COLS,
  sliceLabel,
  sliceRead,
  type SliceVariant,
} from "./slice_read.ts";
import { parseSize } from "./llm.ts";

/**
 * The points a block records, in slot order: start, wait, trigger and end (see
 * {@link instrumentPtx}), then `loop` (the prologue's copies issued and waited for: the k-loop
 * begins) and `epilogue` (the main loop drained), where the kernel's PTX has the lowering's
 * comments for them, and `setup` (an mbarrier pipeline's barriers initialized and the block's or
 * cluster's barrier after them passed) where it has them.
 */
export const TIMELINE_POINTS = [
  "start",
  "wait",
  "trigger",
  "end",
  "loop",
  "epilogue",
  "setup",
] as const;
/** One of {@link TIMELINE_POINTS}. */
export type TimelinePoint = typeof TIMELINE_POINTS[number];

/**
 * Bytes of a block's slot: a `%globaltimer` value a point (u64, from 0), a `%clock64` value a
 * point (u64, from {@link CYCLES_AT}), `%smid` (u32, at {@link SM_AT}); the rest pads the slot to
 * a 128-byte line.
 */
export const TIMELINE_SLOT_BYTES = 128;
/** Where a slot's `%clock64` values and its `%smid` are. */
const CYCLES_AT = 8 * TIMELINE_POINTS.length, SM_AT = 2 * CYCLES_AT;

/** The trace buffer's parameter, appended to the entry's. */
export const TIMELINE_PARAM = "gemmc_timeline";

/** The PTX that records point `k` (an index of {@link TIMELINE_POINTS}) for thread (0,0,0) of the
 * block; `n` makes labels unique. */
function recordPoint(k: number, n: number): string {
  const skip = `GEMMC_TL_SKIP_${n}`;
  return [
    `  { // gemmc timeline: ${TIMELINE_POINTS[k]}`,
    "  .reg .pred %gtl_p;",
    "  .reg .b32 %gtl_r<5>;",
    "  .reg .b64 %gtl_d<4>;",
    "  mov.u32 %gtl_r0, %tid.x;",
    "  mov.u32 %gtl_r1, %tid.y;",
    "  or.b32 %gtl_r0, %gtl_r0, %gtl_r1;",
    "  mov.u32 %gtl_r1, %tid.z;",
    "  or.b32 %gtl_r0, %gtl_r0, %gtl_r1;",
    "  setp.ne.u32 %gtl_p, %gtl_r0, 0;",
    `  @%gtl_p bra ${skip};`,
    "  mov.u64 %gtl_d0, %globaltimer;",
    "  mov.u64 %gtl_d1, %clock64;",
    // The block's linear index: (ctaid.z * nctaid.y + ctaid.y) * nctaid.x + ctaid.x.
    "  mov.u32 %gtl_r1, %ctaid.z;",
    "  mov.u32 %gtl_r2, %nctaid.y;",
    "  mov.u32 %gtl_r3, %ctaid.y;",
    "  mad.lo.u32 %gtl_r1, %gtl_r1, %gtl_r2, %gtl_r3;",
    "  mov.u32 %gtl_r2, %nctaid.x;",
    "  mov.u32 %gtl_r3, %ctaid.x;",
    "  mad.lo.u32 %gtl_r1, %gtl_r1, %gtl_r2, %gtl_r3;",
    `  ld.param.u64 %gtl_d2, [${TIMELINE_PARAM}];`,
    "  cvta.to.global.u64 %gtl_d2, %gtl_d2;",
    `  mul.wide.u32 %gtl_d3, %gtl_r1, ${TIMELINE_SLOT_BYTES};`,
    "  add.u64 %gtl_d2, %gtl_d2, %gtl_d3;",
    `  st.global.u64 [%gtl_d2+${8 * k}], %gtl_d0;`,
    `  st.global.u64 [%gtl_d2+${CYCLES_AT + 8 * k}], %gtl_d1;`,
    ...(k === 0
      ? ["  mov.u32 %gtl_r4, %smid;", `  st.global.u32 [%gtl_d2+${SM_AT}], %gtl_r4;`]
      : []),
    `${skip}:`,
    "  }",
  ].join("\n");
}

/**
 * `ptx` (one `.entry`) with the timeline's records: a `.u64` parameter {@link TIMELINE_PARAM}
 * appended to the entry's (the trace region of the launch: {@link TIMELINE_SLOT_BYTES} a block,
 * zero-filled by the caller), `start` after the body's declarations, `wait` and `trigger` after
 * each `griddepcontrol.wait` / `griddepcontrol.launch_dependents`, `end` before each `ret` or
 * `exit`; `loop` before the first `// for` comment after the `// prologue` one (in a kernel
 * without a prologue, sm90's warp-specialized one, before its first `wgmma.fence`: the
 * consumers' first k-tile has landed), and `epilogue` before the first `// epilogue` comment (the
 * kernel IR's comments, backends/ptx prints them; a kernel without them records neither); `setup`
 * after the first `barrier.cluster.wait` or `bar.sync` that follows an `mbarrier.init` (sm90's
 * pipelines: the set-up that every block runs before its first copy). Throws on a module
 * of more than one entry, or a predicated `ret` / `exit` (its record would need the predicate
 * too).
 */
export function instrumentPtx(ptx: string): string {
  const entries = ptx.match(/^\s*(\.visible\s+)?\.entry\s/gm) ?? [];
  if (entries.length !== 1) {
    throw new Error(`instrumentPtx: ${entries.length} .entry in the module, not one`);
  }
  const lines = ptx.split("\n");
  const entry = lines.findIndex((l) => /\.entry\s/.test(l));
  // The parameter list: from the entry's "(" to its ")".
  let close = entry;
  while (close < lines.length && !lines[close]!.includes(")")) close++;
  if (close === lines.length) throw new Error("instrumentPtx: the entry's parameters do not end");
  const param = `.param .u64 ${TIMELINE_PARAM}`;
  if (/\(\s*\)/.test(lines[close]!)) {
    lines[close] = lines[close]!.replace(/\(\s*\)/, `(${param})`);
  } else if (close === entry) {
    lines[close] = lines[close]!.replace(/\)/, `, ${param})`);
  } else {
    // The last parameter ends on the line before ")" (or on ")"'s line itself).
    const own = lines[close]!.trim().startsWith(")") ? close - 1 : close;
    lines[own] = own === close
      ? lines[own]!.replace(/\s*\)/, `,\n  ${param})`)
      : `${lines[own]!.replace(/\s*$/, "")},\n  ${param}`;
  }
  let body = close + 1;
  while (body < lines.length && lines[body]!.trim() !== "{") body++;
  if (body === lines.length) throw new Error("instrumentPtx: no body after the entry");
  let decl = body + 1;
  while (decl < lines.length && /^\s*(\.reg|\.shared|\.local|\/\/|$)/.test(lines[decl]!)) decl++;
  const out: string[] = [...lines.slice(0, decl)];
  let n = 0;
  out.push(recordPoint(0, n++));
  let prologue = false, loop = false, epilogue = false, inits = false, setup = false;
  for (const line of lines.slice(decl)) {
    const t = line.trim();
    if (/^\/\/ prologue\b/.test(t)) prologue = true;
    // The k-loop's start: after the prologue's copies (mma.sync), or in a warp-specialized
    // kernel, whose consumers have no prologue, at their first k-tile's landing (its first
    // wgmma.fence follows the wait on the stage's full barrier).
    const tmaLoop = !prologue && /^wgmma\.fence\b/.test(t);
    if (!loop && ((prologue && /^\/\/ for\b/.test(t)) || tmaLoop)) {
      out.push(recordPoint(4, n++));
      loop = true;
    }
    if (!epilogue && /^\/\/ epilogue\b/.test(t)) {
      out.push(recordPoint(5, n++));
      epilogue = true;
    }
    if (/^@!?%\w+\s+(ret|exit)\s*;/.test(t)) {
      throw new Error(`instrumentPtx: a predicated "${t}" (its record would need the predicate)`);
    }
    if (/^(ret|exit)\s*;/.test(t)) out.push(recordPoint(3, n++));
    out.push(line);
    if (/^griddepcontrol\.wait\s*;/.test(t)) out.push(recordPoint(1, n++));
    if (/^mbarrier\.init\b/.test(t) || /^@%\w+\s+mbarrier\.init\b/.test(t)) inits = true;
    if (inits && !setup && /^(barrier\.cluster\.wait|bar\.sync|barrier\.sync)\b/.test(t)) {
      out.push(recordPoint(6, n++));
      setup = true;
    }
    if (/^griddepcontrol\.launch_dependents\s*;/.test(t)) out.push(recordPoint(2, n++));
  }
  return out.join("\n");
}

/** One block's records in one launch, by {@link TIMELINE_POINTS}' index: ns of `%globaltimer` (0
 * where not recorded), cycles. */
export interface BlockRecord {
  readonly ns: PointValues;
  readonly cycles: PointValues;
  readonly sm: number;
}

/** A value a point of {@link TIMELINE_POINTS}, in its order (as many). */
export type PointValues = readonly [bigint, bigint, bigint, bigint, bigint, bigint, bigint];

/** The records of `blocks` blocks of one launch from its trace region. */
export function blockRecords(region: Uint8Array, blocks: number): BlockRecord[] {
  const v = new DataView(region.buffer, region.byteOffset, region.byteLength);
  return Array.from({ length: blocks }, (_, b) => {
    const o = b * TIMELINE_SLOT_BYTES;
    const u = (i: number) => v.getBigUint64(o + 8 * i, true);
    const at = (base: number): PointValues => {
      const [a, b, c, d, e, f, g] = TIMELINE_POINTS.map((_, k) => u(base / 8 + k));
      return [a!, b!, c!, d!, e!, f!, g!];
    };
    return { ns: at(0), cycles: at(CYCLES_AT), sm: v.getUint32(o + SM_AT, true) };
  });
}

/** A series' timeline, µs (medians over its launches; see {@link summarizeTimeline}). */
export interface TimelineSummary {
  readonly launches: number;
  readonly blocks: number;
  /** First block's start to the next launch's first block's start. */
  readonly periodUs: number;
  /** First block's start to last block's end. */
  readonly spanUs: number;
  /** Last block's end to the next launch's first block's start (negative: they overlap). */
  readonly gapUs: number;
  /** Last block's start less the first's. */
  readonly startSkewUs: number;
  /** Last block's end less the first's. */
  readonly endSkewUs: number;
  /** The previous launch's last block's end to this launch's first wait's release (null: no
   * `wait` recorded). */
  readonly waitAfterPrevEndUs: number | null;
  /** The previous launch's last trigger to this launch's first block's start (null: no
   * trigger recorded): what the next grid's launch takes once every block has let it go. */
  readonly startAfterPrevTriggerUs: number | null;
  /** A block's start to its wait's release (null: no wait). */
  readonly blockWaitUs: number | null;
  /** A block's main loop: from its wait (else its start) to its trigger (null: no trigger). */
  readonly blockLoopUs: number | null;
  /** A block's trigger to its end (null: no trigger). */
  readonly blockEpilogueUs: number | null;
  /** A block's prologue: from its wait (else its start) to its k-loop's start (null: no `loop`
   * point). */
  readonly blockPrologueUs: number | null;
  /** A block's k-loop: from its start to the epilogue's (null: no `loop` or `epilogue` point). */
  readonly blockKLoopUs: number | null;
  /** A block's epilogue: from its start to the block's end (null: no `epilogue` point). */
  readonly blockAfterLoopUs: number | null;
  /** A block's start to its set-up's barrier passed (null: no `setup` point). */
  readonly blockSetupUs: number | null;
  /** A block's start to its end. */
  readonly blockUs: number;
  /** The slowest block's start to end. */
  readonly blockMaxUs: number;
  /** The smallest nonzero step between two `%globaltimer` values of a launch (ns). */
  readonly timerStepNs: number;
  /** The SM clock the blocks ran at: their cycles over their ns, start to end (MHz). */
  readonly clockMHz: number;
  /** Blocks an SM ran at once at most, over the launch (from `%smid`). */
  readonly blocksPerSmMax: number;
}

const us = (ns: bigint | number) => Number(ns) / 1e3;
const med = (xs: number[]) => (xs.length === 0 ? NaN : median(xs));

/**
 * The summary of a series: `launches[i]` the blocks of launch i in order. Launches whose blocks
 * did not all record their start and end are refused (a kernel that skipped its records, or a
 * region not written).
 */
export function summarizeTimeline(launches: readonly (readonly BlockRecord[])[]): TimelineSummary {
  if (launches.length < 3) throw new Error("summarizeTimeline: fewer than 3 launches");
  for (const [i, l] of launches.entries()) {
    if (l.length === 0 || l.some((b) => b.ns[0] === 0n || b.ns[3] === 0n)) {
      throw new Error(`summarizeTimeline: launch ${i} has a block without its start or end`);
    }
  }
  // Used only for points every block recorded (start and end always; wait and trigger where
  // `has` says so), so no zero (not recorded) enters a minimum.
  const first = (l: readonly BlockRecord[], k: number) =>
    l.reduce((m, b) => (b.ns[k]! < m ? b.ns[k]! : m), l[0]!.ns[k]!);
  const last = (l: readonly BlockRecord[], k: number) =>
    l.reduce((m, b) => (b.ns[k]! > m ? b.ns[k]! : m), 0n);
  const has = (k: number) => launches.every((l) => l.every((b) => b.ns[k] !== 0n));
  const [hasWait, hasTrigger, hasLoop, hasEpilogue, hasSetup] = [1, 2, 4, 5, 6].map(has);
  const per = (f: (l: readonly BlockRecord[], i: number) => number, from = 0, to = 0) =>
    med(launches.slice(from, launches.length - to).map((l, i) => f(l, i + from)));
  const next = (i: number) => launches[i + 1]!;
  const prev = (i: number) => launches[i - 1]!;
  const blockMed = (f: (b: BlockRecord) => number) => per((l) => med(l.map(f)));
  let step = Infinity;
  for (const l of launches) {
    const ts = [...new Set(l.flatMap((b) => b.ns.filter((t) => t !== 0n)))].sort((a, b) =>
      a < b ? -1 : 1
    );
    for (let i = 1; i < ts.length; i++) step = Math.min(step, Number(ts[i]! - ts[i - 1]!));
  }
  const mhz = med(
    launches.flatMap((l) =>
      l.map((b) => Number(b.cycles[3] - b.cycles[0]) / Number(b.ns[3] - b.ns[0]) * 1e3)
        .filter(Number.isFinite)
    ),
  );
  let perSm = 0;
  for (const l of launches) {
    const bySm = new Map<number, BlockRecord[]>();
    for (const b of l) bySm.set(b.sm, [...(bySm.get(b.sm) ?? []), b]);
    for (const bs of bySm.values()) {
      for (const b of bs) {
        const live = bs.filter((o) => o.ns[0] <= b.ns[0] && b.ns[0] < o.ns[3]).length;
        perSm = Math.max(perSm, live);
      }
    }
  }
  return {
    launches: launches.length,
    blocks: launches[0]!.length,
    periodUs: per((l, i) => us(first(next(i), 0) - first(l, 0)), 0, 1),
    spanUs: per((l) => us(last(l, 3) - first(l, 0))),
    gapUs: per((l, i) => us(first(next(i), 0) - last(l, 3)), 0, 1),
    startSkewUs: per((l) => us(last(l, 0) - first(l, 0))),
    endSkewUs: per((l) => us(last(l, 3) - first(l, 3))),
    waitAfterPrevEndUs: hasWait ? per((l, i) => us(first(l, 1) - last(prev(i), 3)), 1) : null,
    startAfterPrevTriggerUs: hasTrigger
      ? per((l, i) => us(first(l, 0) - last(prev(i), 2)), 1)
      : null,
    blockWaitUs: hasWait ? blockMed((b) => us(b.ns[1] - b.ns[0])) : null,
    blockLoopUs: hasTrigger ? blockMed((b) => us(b.ns[2] - b.ns[hasWait ? 1 : 0])) : null,
    blockEpilogueUs: hasTrigger ? blockMed((b) => us(b.ns[3] - b.ns[2])) : null,
    blockPrologueUs: hasLoop ? blockMed((b) => us(b.ns[4] - b.ns[hasWait ? 1 : 0])) : null,
    blockKLoopUs: hasLoop && hasEpilogue ? blockMed((b) => us(b.ns[5] - b.ns[4])) : null,
    blockAfterLoopUs: hasEpilogue ? blockMed((b) => us(b.ns[3] - b.ns[5])) : null,
    blockSetupUs: hasSetup ? blockMed((b) => us(b.ns[6] - b.ns[0])) : null,
    blockUs: blockMed((b) => us(b.ns[3] - b.ns[0])),
    blockMaxUs: per((l) => Math.max(...l.map((b) => us(b.ns[3] - b.ns[0])))),
    timerStepNs: step,
    clockMHz: mhz,
    blocksPerSmMax: perSm,
  };
}

/** The summary as one line a series. */
export function timelineLine(label: string, s: TimelineSummary): string {
  const f = (x: number | null) => (x === null ? "-" : x.toFixed(2));
  return `${label}: period ${f(s.periodUs)} µs, span ${f(s.spanUs)}, gap ${f(s.gapUs)}, ` +
    `start skew ${f(s.startSkewUs)}, end skew ${f(s.endSkewUs)}, wait after prev end ` +
    `${f(s.waitAfterPrevEndUs)}, start after prev trigger ${
      f(s.startAfterPrevTriggerUs)
    }; a block: wait ${f(s.blockWaitUs)}, loop ${f(s.blockLoopUs)}, ` +
    `epilogue ${f(s.blockEpilogueUs)}, all ${f(s.blockUs)} (max ${f(s.blockMaxUs)}); prologue ` +
    `${f(s.blockPrologueUs)}, k-loop ${f(s.blockKLoopUs)}, from the epilogue ${
      f(s.blockAfterLoopUs)
    }, set-up ${f(s.blockSetupUs)}; ` +
    `${s.blocks} blocks, <= ${s.blocksPerSmMax} an SM; timer step ${s.timerStepNs} ns, ` +
    `${s.clockMHz.toFixed(0)} MHz`;
}

/** A traced side: launch i of the series writes region i of `trace`. */
interface TracedSide {
  readonly label: string;
  readonly blocks: number;
  readonly launch: (i: number, region: KernelArg) => void;
}

/** Runs `rounds` series of `launches` of each side behind a hold, and summarizes each. */
function traceSides(
  cuda: Cuda,
  probe: ClockProbe,
  sides: readonly TracedSide[],
  launches: number,
  rounds: number,
  bufs: DeviceBuffer[],
) {
  const out: {
    label: string;
    round: number;
    summary: TimelineSummary;
    /** The last round's blocks, launch by launch: [SM, start, wait, trigger, end, loop,
     * epilogue] (NOTES 95-96's records have the first five), ns from the series' first start
     * (-1: not recorded). */
    raw?: number[][][];
  }[] = [];
  for (const s of sides) {
    const bytes = s.blocks * TIMELINE_SLOT_BYTES;
    const trace = cuda.alloc(bytes * launches);
    bufs.push(trace);
    const region = (i: number): KernelArg => ({
      type: "u64",
      value: trace.ptr + BigInt(i * bytes),
    });
    for (let w = 0; w < 3; w++) s.launch(w, region(w % launches));
    for (let r = 0; r < rounds; r++) {
      trace.fill(0);
      cuda.synchronize();
      probe.hold(1);
      for (let i = 0; i < launches; i++) s.launch(i, region(i));
      cuda.synchronize();
      const all = trace.download();
      const ls = Array.from(
        { length: launches },
        (_, i) => blockRecords(all.subarray(i * bytes, (i + 1) * bytes), s.blocks),
      );
      const summary = summarizeTimeline(ls);
      console.log(timelineLine(`${s.label} round ${r}`, summary));
      const t0 = ls.flat().reduce((m, b) => (b.ns[0] < m ? b.ns[0] : m), ls[0]![0]!.ns[0]);
      const raw = r < rounds - 1 ? {} : {
        raw: ls.map((l) =>
          l.map((b) => [b.sm, ...b.ns.map((t) => (t === 0n ? -1 : Number(t - t0)))])
        ),
      };
      out.push({ label: s.label, round: r, summary, ...raw });
    }
  }
  return out;
}

/** `ck` with its PTX instrumented, loaded. */
function loadTraced(cuda: Cuda, ck: CompiledKernel, mods: CudaModule[]) {
  const l = loadFunction(cuda, { ...ck, ptx: instrumentPtx(ck.ptx) });
  mods.push(l.mod);
  return l.fn;
}

/** The options of `deno run -A bench/timeline.ts` (see the module's doc). */
interface TimelineOptions {
  readonly type: LlmType;
  readonly size: string;
  readonly p: LlmProblem;
  readonly target: Target;
  readonly schedule: string | undefined;
  readonly launches: number;
  readonly rounds: number;
  readonly read: boolean;
  readonly slices: readonly SliceVariant[];
  readonly lastCopy: boolean;
  readonly out: string | undefined;
}

function parseTimelineArgs(args: string[]): TimelineOptions {
  const { values: o } = parseArgs({
    args,
    options: {
      type: { type: "string", default: "f16" },
      size: { type: "string", default: "16x4096x4096" },
      target: { type: "string", default: "sm90" },
      schedule: { type: "string" },
      launches: { type: "string", default: "40" },
      rounds: { type: "string", default: "3" },
      read: { type: "boolean", default: false },
      slices: { type: "string" },
      "pdl-last-copy": { type: "boolean", default: false },
      out: { type: "string" },
    },
  });
  const type = o.type as LlmType;
  const p = parseSize(o.size);
  const [launches, rounds] = [Number(o.launches), Number(o.rounds)];
  if (!LLM_TYPES.includes(type) || p === null) {
    throw new Error(`bench/timeline.ts: --type ${o.type} --size ${o.size}`);
  }
  if (!isTargetName(o.target)) throw new Error(`bench/timeline.ts: --target ${o.target}`);
  if (!(Number.isInteger(launches) && launches >= 3 && Number.isInteger(rounds) && rounds >= 1)) {
    throw new Error(`bench/timeline.ts: --launches ${o.launches} (>= 3) --rounds ${o.rounds}`);
  }
  return {
    type,
    size: o.size,
    p,
    target: o.target as Target,
    schedule: o.schedule,
    launches,
    rounds,
    read: o.read,
    slices: o.slices === undefined ? [] : parseSliceVariants(o.slices),
    lastCopy: o["pdl-last-copy"],
    out: o.out,
  };
}

/**
 * Ours, compiled with PDL (the same schedule as without it), instrumented, loaded on the llm
 * table's input sets and checked against the reference, as two sides: launched the ordinary way
 * and as programmatic dependent launches. `k` keeps the input sets (the read side uses them).
 */
function oursTraced(cuda: Cuda, o: TimelineOptions, bufs: DeviceBuffer[], mods: CudaModule[]) {
  const shape = { shape: o.size, ...o.p };
  const ck = compileFor(cuda, o.type, shape, o.target, false, o.schedule);
  const ckPdl = compileFor(
    cuda,
    o.type,
    shape,
    o.target,
    o.lastCopy ? { lastCopy: true } : true,
    o.schedule,
  );
  const sizes = { M: o.p.M, N: o.p.N, K: o.p.K };
  const k = load(cuda, ck, sizes, bufs);
  mods.push(k.mod);
  const sets = k.argSets.length;
  const fn = loadTraced(cuda, ck, mods);
  const fnPdl = loadTraced(cuda, ckPdl, mods);
  const blocks = k.config.grid[0] * k.config.grid[1] * k.config.grid[2];
  // Each instrumented kernel is checked once against the reference (its extra parameter
  // pointing at a scratch region) before it is traced.
  const scratch = cuda.alloc(blocks * TIMELINE_SLOT_BYTES);
  bufs.push(scratch);
  const scratchArg: KernelArg = { type: "u64", value: scratch.ptr };
  for (const [label, f] of [["ours", fn], ["ours+PDL", fnPdl]] as const) {
    poisonOutput(ck, k.dBuf);
    const c = verify(cuda, ck, sizes, {
      ...k,
      fn: f,
      argSets: [[...k.argSets[0]!, scratchArg], ...k.argSets.slice(1)],
    });
    console.log(
      `# ${label} instrumented: ${c.comparison.ok ? "ok" : "FAILED"} on ` +
        `${c.elements} sampled elements`,
    );
    if (!c.comparison.ok) throw new Error(`${label}: the instrumented kernel disagrees`);
  }
  const sides: TracedSide[] = [
    {
      label: "ours",
      blocks,
      launch: (i, r) => cuda.launch(fn, k.config, [...k.argSets[i % sets]!, r]),
    },
    {
      label: "ours+PDL",
      blocks,
      launch: (i, r) =>
        cuda.launch(fnPdl, k.config, [...k.argSets[i % sets]!, r], undefined, { pdl: true }),
    },
  ];
  return { name: ck.kernel.name, k, sides };
}

/** The streaming read kernel of the row's bytes (bench/stream_read.ts), instrumented and
 * checked, over `k`'s input sets. */
function readTraced(
  cuda: Cuda,
  o: TimelineOptions,
  k: { aBufs: readonly DeviceBuffer[]; bBufs: readonly DeviceBuffer[] },
  bufs: DeviceBuffer[],
  mods: CudaModule[],
): TracedSide {
  const sets = k.aBufs.map((a, i) => ({ a, b: k.bBufs[i]! }));
  const scratch = cuda.alloc(
    cuda.device.multiprocessors * STREAM_READ_BLOCKS_PER_SM * TIMELINE_SLOT_BYTES,
  );
  bufs.push(scratch);
  const r = streamRead(cuda, operandBytes(o.type, o.p), sets, bufs, mods, {
    instrument: instrumentPtx,
    checkArgs: [{ type: "u64", value: scratch.ptr }],
  });
  if (r === null) throw new Error("--read: the row's bytes are not 16-byte vectors");
  const c = r.check();
  console.log(`# read instrumented: ${c.ok ? "ok" : "FAILED"}`);
  if (!c.ok) throw new Error("the instrumented read kernel disagrees");
  return { label: "read", blocks: r.blocks, launch: (i, reg) => r.launch(i, [reg]) };
}

/** The slice-read kernel (bench/slice_read.ts) of each variant over `k`'s B sets, instrumented
 * and checked. */
function slicesTraced(
  cuda: Cuda,
  o: TimelineOptions,
  k: { aBufs: readonly DeviceBuffer[]; bBufs: readonly DeviceBuffer[] },
  bufs: DeviceBuffer[],
  mods: CudaModule[],
): TracedSide[] {
  const sets = k.bBufs.map((b, i) => ({ a: k.aBufs[i]!, b }));
  const shape = { n: o.p.N, colBytes: operandBytes(o.type, o.p).b / o.p.N };
  const scratch = cuda.alloc((o.p.N / SLICE_COLS) * TIMELINE_SLOT_BYTES);
  bufs.push(scratch);
  return o.slices.map((v) => {
    const label = `slices ${sliceLabel(v)}`;
    const r = sliceRead(cuda, shape, v, sets, { bufs, mods }, instrumentPtx);
    if (r === null) throw new Error(`--slices: N = ${o.p.N}, K = ${o.p.K} do not fit the kernel`);
    const c = r.check([{ type: "u64", value: scratch.ptr }]);
    console.log(
      `# ${label} instrumented: ${c.ok ? "ok" : "FAILED"} (B's xor ${c.got} against ${c.want}; ` +
        `${c.badBlocks} blocks' A disagree)`,
    );
    if (!c.ok) throw new Error(`${label}: the instrumented kernel disagrees`);
    return { label, blocks: r.blocks, launch: (i, reg) => r.launch(i, [reg]) };
  });
}

function main(args: string[]): void {
  const o = parseTimelineArgs(args);
  const avail = cudaAvailable();
  if (!avail.ok) throw new Error(`bench/timeline.ts: ${avail.why}`);
  using cuda = Cuda.open();
  const bufs: DeviceBuffer[] = [];
  const mods: CudaModule[] = [];
  const probe = new ClockProbe(cuda);
  const dev = cuda.device;
  try {
    console.log(
      `# ${dev.name} (${dev.multiprocessors} SMs, driver ${dev.driverVersionText}); ` +
        `${o.type} ${o.size}, target ${o.target}`,
    );
    const ours = oursTraced(cuda, o, bufs, mods);
    console.log(`# kernel ${ours.name}`);
    const sides = [
      ...ours.sides,
      ...(o.read ? [readTraced(cuda, o, ours.k, bufs, mods)] : []),
      ...slicesTraced(cuda, o, ours.k, bufs, mods),
    ];
    const results = traceSides(cuda, probe, sides, o.launches, o.rounds, bufs);
    if (o.out !== undefined) {
      const { type, size, target } = o;
      Deno.writeTextFileSync(
        o.out,
        JSON.stringify({ device: dev.name, type, size, target, results }) + "\n",
      );
    }
  } finally {
    probe.close();
    for (const b of bufs) b.free();
    for (const m of mods) m.unload();
  }
}

if (import.meta.main) main(Deno.args);
