/**
 * sm90's thread-block clusters in the simulator (ir/kernel.ts `Kernel.cluster`): a cluster
 * of N CTAs runs as one machine "block" of N CTAs side by side. CTA r's threads are the
 * machine's threads `[r P, r P + T)` (T = `kernel.threads`, P = T rounded up to a whole
 * warpgroup, so that no warp or warpgroup straddles two CTAs; the padding threads never
 * run), and its shared memory is the machine's bytes `[r SS, r SS + S)` (S =
 * `kernel.dynamicSmemBytes`, SS = S rounded up to 1024 bytes, so that every CTA's window has
 * the alignment of the first; the gaps are out of bounds). `smembase` gives CTA r's thread
 * `r SS`, so every shared address a thread computes lies in its own CTA's window, and the
 * simulator checks that it does: a plain shared access outside it is a SimError (a lowering
 * bug). Only the cluster operations reach another CTA's window, at the same offset: a
 * multicast TMA copy (_tma.ts) and a remote `mbararrive` (_mbarrier.ts).
 *
 * The CTAs of a cluster run in lockstep like the warps of a CTA, but the concurrent roles of
 * a warp-specialized kernel (_roles.ts) run one coroutine per role and CTA, so that one CTA
 * can lag another. `bar` and named barriers count per CTA; `bar` with `cluster` orders the
 * whole cluster and is what publishes a CTA's mbarrier initialisations to its peers: a
 * remote arrival or multicast completion on a barrier no cluster barrier has published
 * since its `mbarinit` is a SimError (the peer may not have initialised it yet).
 *
 * Shortcuts: uniform control flow outside the roles (a loop's trip count, a uniform `if`)
 * must be uniform over the whole cluster, not only per CTA; a CTA cannot exit early while a
 * peer still writes its shared memory (every role of every CTA finishes before the code after
 * the roles runs, so that bug cannot show); the hazard tracker's barrier epochs are
 * cluster-wide (a `bar` of one CTA orders the others' warps too, as a named barrier already
 * orders every warp of a block); race messages may name a warp by its number modulo 32.
 *
 * @module
 */

import type { Kernel } from "../../ir/kernel.ts";
import { WARPGROUP_THREADS } from "../../ir/wgmma_table.ts";
import type { Machine, Mask, OpInfo, Run } from "./_machine.ts";
import { type BlockCoord, SimError } from "./types.ts";

/** Threads of a warpgroup (a CTA's threads are padded to a multiple of it). */
const WG = WARPGROUP_THREADS;

/** Bytes a CTA's shared window is aligned to. */
const WINDOW_ALIGN = 1024;

/** Most CTAs a cluster may have (16 with the non-portable size on sm90). */
const MAX_CLUSTER = 16;

/** The machine's layout of a cluster (for a kernel without clusters: N = 1, P = T, SS = S). */
export interface ClusterShape {
  /** CTAs per cluster. */
  readonly N: number;
  /** Threads of a CTA (`kernel.threads`). */
  readonly T: number;
  /** The machine threads between consecutive CTAs' first threads. */
  readonly P: number;
  /** Shared bytes of a CTA (`kernel.dynamicSmemBytes`). */
  readonly S: number;
  /** The machine's shared bytes between consecutive CTAs' windows. */
  readonly SS: number;
}

/**
 * The cluster layout of a kernel, checked.
 *
 * @param kernel The kernel.
 * @returns Its layout.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { clusterShape } from "./_cluster.ts";
 * deepEqual(clusterShape({ cluster: 2, threads: 96, dynamicSmemBytes: 5000 }), {
 *   N: 2, T: 96, P: 128, S: 5000, SS: 5120,
 * });
 * ```
 */
export function clusterShape(
  kernel: Pick<Kernel, "cluster" | "threads" | "dynamicSmemBytes">,
): ClusterShape {
  const N = kernel.cluster ?? 1;
  if (!Number.isInteger(N) || N < 1 || N > MAX_CLUSTER) {
    throw new SimError(`Bad cluster size ${N} (1 to ${MAX_CLUSTER} CTAs)`);
  }
  const T = kernel.threads;
  const S = kernel.dynamicSmemBytes;
  if (N === 1) return { N, T, P: T, S, SS: S };
  return {
    N,
    T,
    P: Math.ceil(T / WG) * WG,
    S,
    SS: Math.ceil(S / WINDOW_ALIGN) * WINDOW_ALIGN,
  };
}

/**
 * The clusters a launch runs, each by its first CTA, in launch order: every cluster of the
 * grid, or those holding a block `blocks` lists (each once).
 *
 * @param grid The grid (its x a multiple of `n`).
 * @param n CTAs per cluster.
 * @param blocks The blocks asked for, or null for all.
 * @returns The clusters' first blocks.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { clusterStarts } from "./_cluster.ts";
 * deepEqual(clusterStarts([4, 1, 1], 2, [[3, 0, 0], [2, 0, 0], [0, 0, 0]]), [[2, 0, 0], [0, 0, 0]]);
 * ```
 */
export function clusterStarts(
  grid: readonly [number, number, number],
  n: number,
  blocks: readonly BlockCoord[] | null,
): BlockCoord[] {
  if (grid[0] % n !== 0) {
    throw new SimError(`The grid's x (${grid[0]}) is not a multiple of the cluster size ${n}`);
  }
  const out: BlockCoord[] = [];
  if (blocks === null) {
    for (let z = 0; z < grid[2]; z++) {
      for (let y = 0; y < grid[1]; y++) {
        for (let x = 0; x < grid[0]; x += n) out.push([x, y, z]);
      }
    }
    return out;
  }
  const seen = new Set<string>();
  for (const [x, y, z] of blocks) {
    const c: BlockCoord = [x - (x % n), y, z];
    const key = c.join(",");
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(c);
  }
  return out;
}

/**
 * The root mask of a cluster machine: the CTAs' real threads (not the padding).
 *
 * @param c The layout.
 * @returns The mask's lanes and its warps.
 */
export function clusterRoot(c: ClusterShape): { m: Uint8Array; warps: number } {
  const m = new Uint8Array(c.N * c.P);
  for (let r = 0; r < c.N; r++) m.fill(1, r * c.P, r * c.P + c.T);
  return { m, warps: c.N * Math.ceil(c.T / 32) };
}

/**
 * Splits a mask by CTA: mask `r` of the result holds the lanes of CTA `r` that `from` holds.
 *
 * @param M The machine.
 * @returns The masks (filled by `fill`) and the function that fills them from `from`.
 */
export function perCtaMasks(M: Machine): { masks: Mask[]; fill: (from: Mask) => void } {
  const { N, P } = M.cl;
  const masks: Mask[] = Array.from({ length: N }, () => ({
    m: new Uint8Array(M.T),
    warps: 0,
    root: false,
  }));
  const fill = (from: Mask) => {
    const src = from.m;
    for (let r = 0; r < N; r++) {
      const k = masks[r]!;
      const m = k.m;
      let warps = 0;
      for (let w = r * P; w < (r + 1) * P; w += 32) {
        let on = 0;
        for (let t = w; t < w + 32; t++) {
          m[t] = src[t]!;
          on |= src[t]!;
        }
        warps += on;
      }
      k.warps = warps;
    }
  };
  return { masks, fill };
}

/**
 * The shared address of `a` (an address in the window of thread `t`'s CTA) in the window of
 * the cluster's CTA of rank `q`; raises for a rank outside the cluster.
 *
 * @param M The machine.
 * @param idx The operation.
 * @param t The thread.
 * @param a The address in its own window (checked by the caller).
 * @param q The target CTA's rank.
 * @param what The operation, for the message.
 * @returns The address in CTA `q`'s window.
 */
export function remoteAddress(
  M: Machine,
  idx: number,
  t: number,
  a: number,
  q: number,
  what: string,
): number {
  const { N, P, SS } = M.cl;
  if (!(Number.isInteger(q) && q >= 0 && q < N)) {
    M.fail(idx, t, `${what} names CTA rank ${q}, outside the cluster of ${N} CTAs`);
  }
  return a + (q - Math.floor(t / P)) * SS;
}

/**
 * `bar` with `cluster` (ir/kernel_memory.ts BarOp): a barrier over every thread of the
 * cluster (reached in lockstep under uniform control flow); it publishes every live mbarrier
 * to the cluster's other CTAs and starts a new hazard epoch.
 *
 * @param M The machine.
 * @param info The operation.
 * @param mask Its lanes (the whole cluster).
 * @returns The run.
 */
export function compileClusterBar(M: Machine, info: OpInfo, mask: Mask): Run {
  const idx = info.index;
  return () => {
    const mb = M.mb;
    if (mb !== null) mb.published.fill(true);
    M.hz.epoch++;
    M.counts[idx]! += mask.warps;
  };
}

/**
 * The CTA rank of a hazard's first occurrence in a cluster machine: by its shared address
 * (the window it lies in), else by its first warp.
 *
 * @param c The layout.
 * @param warps The warps involved.
 * @param address The shared address, or null.
 * @returns The rank.
 */
export function hazardRank(c: ClusterShape, warps: readonly number[], address: number | null) {
  if (address !== null) return Math.min(c.N - 1, Math.floor(address / c.SS));
  if (warps.length > 0) return Math.min(c.N - 1, Math.floor((warps[0]! * 32) / c.P));
  return 0;
}
