/**
 * Timing launches with CUDA events, and the median the harness and the
 * benchmarks report: `warmup` untimed launches, then each timed launch
 * between two events of its own.
 *
 * @module
 */

import type { Cuda, CudaEvent } from "../backends/cuda/driver.ts";

/**
 * The median (the mean of the middle two for an even count).
 *
 * @param xs The values; at least one.
 * @returns Their median.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { median } from "./timing.ts";
 * equal(median([3, 1, 2, 10]), 2.5);
 * ```
 */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 === 1 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

/**
 * Runs `launch(0..warmup-1)` untimed and synchronises, then times
 * `launch(0..iters-1)`, each between two events; the events are destroyed
 * on every path.
 *
 * @param cuda The context.
 * @param launch Launches once; `i` counts from 0 in each of the two series.
 * @param warmup Untimed launches.
 * @param iters Timed launches; at least one.
 * @returns Each timed launch's time (ms), in order.
 */
export function timeLaunches(
  cuda: Cuda,
  launch: (i: number) => void,
  warmup: number,
  iters: number,
): number[] {
  for (let i = 0; i < warmup; i++) launch(i);
  cuda.synchronize();
  return withEvents(cuda, 2 * iters, (ev) => {
    for (let i = 0; i < iters; i++) {
      ev[2 * i]!.record();
      launch(i);
      ev[2 * i + 1]!.record();
    }
    ev[2 * iters - 1]!.synchronize();
    return Array.from({ length: iters }, (_, i) => ev[2 * i + 1]!.elapsedSince(ev[2 * i]!));
  });
}

/**
 * Runs `fn` on `n` fresh events and destroys them on every path; a failure to
 * destroy one is raised only when `fn` itself succeeded (after a kernel fault
 * every release fails).
 *
 * @param cuda The context.
 * @param n Events to create.
 * @param fn What to time with them.
 * @returns What `fn` returns.
 */
export function withEvents<T>(cuda: Cuda, n: number, fn: (ev: readonly CudaEvent[]) => T): T {
  const ev: CudaEvent[] = [];
  let out: { value: T } | null = null;
  let failure: unknown = null;
  try {
    for (let i = 0; i < n; i++) ev.push(cuda.createEvent());
    out = { value: fn(ev) };
  } catch (e) {
    failure = e;
  }
  for (const e of ev) {
    try {
      e.destroy();
    } catch (err) {
      failure ??= err;
    }
  }
  if (failure !== null || out === null) throw failure;
  return out.value;
}
