/**
 * The schedule block: one setting a line, each key once, each value parsed
 * (shapes `MxNxK`, positive integers, the swizzle's powers of two, the
 * scheduler, the cluster, the operands' cache policies, the math mode, the
 * accumulator dtype, the target).
 *
 * @module
 */

import type { ScheduleLineAst } from "../ast.ts";
import type { Schedule, ScheduleKey, Scheduler, Shape3, Span, Target } from "../../ir/gemm.ts";
import { CLUSTER_SHAPES, SCHEDULERS } from "../../ir/gemm.ts";
import { CACHE_POLICIES, type CachePolicy } from "../../ir/cache_policy.ts";
import { type Dtype, isDtype } from "../../ir/dtype.ts";
import { isTargetName, targetList } from "../../ir/target.ts";
import { fail, lineOf, type Src } from "./scope.ts";
import { LIMITS } from "../limits.ts";
import { didYouMean } from "../suggest.ts";

/**
 * The most splits of K a schedule may ask for, checked before anything is
 * sized by it (the grid's z, the workspace, the unrolled reduction). The
 * default picks at most 8 (passes/tile_sm80.ts `defaultSplitK`); each split
 * needs a k-tile of its own, and the last block sums the partials serially.
 */
export const MAX_SPLIT_K: number = LIMITS.splitK.value;

/** The largest `rotate_k`: the rotation is computed in 32 bits as block index x rotate_k. */
export const MAX_ROTATE_K = 65535;

/** The schedule keys, in the order the README (The DSL, The schedule) lists them. */
export const SCHEDULE_KEYS: readonly ScheduleKey[] = Object.freeze(
  [
    "threadblock",
    "warp",
    "mma",
    "stages",
    "swizzle",
    "split_k",
    "scheduler",
    "cluster",
    "cache_a",
    "cache_b",
    "rotate_k",
    "math",
    "accumulate",
    "target",
  ] as const,
);

/** A `math` line's value. */
export type MathLine = "tf32" | "3xtf32" | "f32";

/** What the schedule block says, before it is split between the math and the schedule. */
export interface ScheduleInfo {
  readonly schedule: Schedule;
  readonly spans: Partial<Record<ScheduleKey, Span>>;
  readonly math?: { value: MathLine; span: Span };
  readonly accumulate?: { value: Dtype; span: Span };
  readonly target?: Target;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A {@link ScheduleInfo} being filled, line by line. */
type Draft = Omit<Mutable<ScheduleInfo>, "schedule"> & { schedule: Mutable<Schedule> };

/**
 * Reads a kernel's schedule lines.
 *
 * @param src The source the spans point into.
 * @param lines The schedule lines of the kernel, in source order.
 * @returns The schedule, the span of every key given, and the math, accumulator and target lines.
 * @throws {DiagnosticError} E0122 for two settings on one line, E0110 for an
 *   unknown key, E0111 for a repeated key, E0112 for a malformed value.
 */
export function readSchedule(src: Src, lines: readonly ScheduleLineAst[]): ScheduleInfo {
  const spans: Partial<Record<ScheduleKey, Span>> = {};
  const info: Draft = { schedule: {}, spans };
  let prevLine = -1;
  for (const l of lines) {
    const key = l.key.text;
    const line = lineOf(src, l.span);
    if (line === prevLine) {
      fail(
        src,
        "E0122",
        `One schedule setting a line: "${key}" shares line ${line} with another setting`,
        l.key.span,
      );
    }
    prevLine = line;
    if (!(SCHEDULE_KEYS as readonly string[]).includes(key)) {
      fail(
        src,
        "E0110",
        `Unknown schedule key "${key}": expected one of ${SCHEDULE_KEYS.join(", ")}${
          didYouMean(key, SCHEDULE_KEYS)
        }`,
        l.key.span,
      );
    }
    const k = key as ScheduleKey;
    const prev = spans[k];
    if (prev !== undefined) {
      fail(
        src,
        "E0111",
        `Repeated schedule key "${key}": first given at line ${lineOf(src, prev)}`,
        l.key.span,
      );
    }
    spans[k] = l.span;
    readValue(src, k, l.value.text, l.value.span, info);
  }
  return info;
}

/** Parses one value into `info` (the switch over the keys). */
function readValue(
  src: Src,
  k: ScheduleKey,
  v: string,
  vs: Span,
  info: Draft,
): void {
  const s = info.schedule;
  switch (k) {
    case "threadblock":
    case "warp":
    case "mma":
      s[k] = shape(src, k, v, vs);
      break;
    case "stages":
      s.stages = positiveInt(src, k, v, vs);
      break;
    case "swizzle": {
      const n = positiveInt(src, k, v, vs);
      if ((n & (n - 1)) !== 0 || n > 16) {
        fail(src, "E0112", `Malformed value "${v}" for "swizzle": expected 1, 2, 4, 8 or 16`, vs);
      }
      s.swizzle = n;
      break;
    }
    case "split_k": {
      const n = positiveInt(src, k, v, vs);
      if (n > MAX_SPLIT_K) {
        fail(src, "E0112", `"split_k ${v}" exceeds the limit of ${MAX_SPLIT_K} splits`, vs);
      }
      s.splitK = n;
      break;
    }
    case "scheduler":
      if (!(SCHEDULERS as readonly string[]).includes(v)) {
        fail(
          src,
          "E0112",
          `Malformed value "${v}" for "scheduler": expected ${SCHEDULERS.join(", ")}`,
          vs,
        );
      }
      s.scheduler = v as Scheduler;
      break;
    case "cluster": {
      // `2` is `2x1`: CTAs along M x along N (passes/wgmma.ts `wgmmaCluster`).
      const shape = CLUSTER_SHAPES[v];
      if (shape === undefined) {
        fail(src, "E0112", `Malformed value "${v}" for "cluster": expected 1, 2, 2x1 or 1x2`, vs);
      }
      s.cluster = shape.ctas;
      if (shape.axis === "n") s.clusterAxis = "n";
      break;
    }
    case "cache_a":
    case "cache_b":
      s[k === "cache_a" ? "cacheA" : "cacheB"] = cachePolicy(src, k, v, vs);
      break;
    case "rotate_k":
      if (!/^[0-9]+$/.test(v) || Number(v) > MAX_ROTATE_K) {
        fail(
          src,
          "E0112",
          `Malformed value "${v}" for "rotate_k": expected an integer from 0 to ${MAX_ROTATE_K}`,
          vs,
        );
      }
      s.rotateK = Number(v);
      break;
    case "math":
      if (v !== "tf32" && v !== "3xtf32" && v !== "f32") {
        fail(src, "E0112", `Malformed value "${v}" for "math": expected tf32, 3xtf32 or f32`, vs);
      }
      info.math = { value: v, span: vs };
      break;
    case "accumulate":
      if (!isDtype(v)) {
        fail(src, "E0112", `Malformed value "${v}" for "accumulate": expected a dtype`, vs);
      }
      info.accumulate = { value: v, span: vs };
      break;
    case "target":
      if (!isTargetName(v)) {
        fail(src, "E0112", `Malformed value "${v}" for "target": expected ${targetList()}`, vs);
      }
      info.target = v;
      break;
  }
}

/** A `cache_a` / `cache_b` value: one of {@link CACHE_POLICIES}, else E0112 with the nearest. */
function cachePolicy(src: Src, key: string, v: string, span: Span): CachePolicy {
  const names = Object.keys(CACHE_POLICIES);
  if (!names.includes(v)) {
    fail(
      src,
      "E0112",
      `Malformed value "${v}" for "${key}": expected ${names.slice(0, -1).join(", ")} or ${
        names.at(-1)
      }${didYouMean(v, names)}`,
      span,
    );
  }
  return v as CachePolicy;
}

function shape(src: Src, key: string, v: string, span: Span): Shape3 {
  const m = /^([0-9]+)x([0-9]+)x([0-9]+)$/.exec(v);
  if (m === null) {
    fail(
      src,
      "E0112",
      `Malformed shape "${v}" for "${key}": expected MxNxK, such as 128x128x32`,
      span,
    );
  }
  const [mm, nn, kk] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mm <= 0 || nn <= 0 || kk <= 0) {
    fail(src, "E0112", `Malformed shape "${v}" for "${key}": every extent must be positive`, span);
  }
  return { m: mm, n: nn, k: kk };
}

function positiveInt(src: Src, key: string, v: string, span: Span): number {
  if (!/^[0-9]+$/.test(v) || Number(v) <= 0) {
    fail(src, "E0112", `Malformed value "${v}" for "${key}": expected a positive integer`, span);
  }
  return Number(v);
}
