/**
 * The kernel IR's factories for sm90's operations (ir/kernel_sm90.ts): warpgroup MMA and its
 * fences, commits and waits, the async-proxy fence, mbarriers, TMA tensor loads, `setmaxnreg` and
 * `griddepcontrol`. ir/builder.ts re-exports them, so that code that builds programs imports
 * every factory from there; they are apart to keep each file near a reader's length.
 *
 * @module
 */

import type {
  GridDepOp,
  Guard,
  MbarArriveOp,
  MbarFenceOp,
  MbarInitOp,
  MbarWaitOp,
  Operand,
  ProxyFenceOp,
  Reg,
  SetMaxNRegOp,
  TmaLoadOp,
  TmapPrefetchOp,
  WgCommitOp,
  WgFenceOp,
  WgmmaOp,
  WgWaitOp,
} from "./kernel.ts";

/**
 * A warpgroup MMA (ir/kernel.ts, WgmmaOp): `d (+)= A * B`, A and B read from shared memory.
 *
 * @param shape The wgmma table row.
 * @param d The accumulators.
 * @param a A's tile address (u32, shared).
 * @param b B's tile address (u32, shared).
 * @param scaleD 1: accumulate into `d`; 0: overwrite it.
 * @returns The operation.
 */
export function wgmma(shape: string, d: readonly Reg[], a: Reg, b: Reg, scaleD: 0 | 1): WgmmaOp {
  return { op: "wgmma", shape, d, a, b, scaleD };
}

/**
 * `wgmma.fence.sync.aligned`.
 *
 * @returns The operation.
 */
export function wgFence(): WgFenceOp {
  return { op: "wgfence" };
}

/**
 * `wgmma.commit_group.sync.aligned`.
 *
 * @returns The operation.
 */
export function wgCommit(): WgCommitOp {
  return { op: "wgcommit" };
}

/**
 * `wgmma.wait_group.sync.aligned n`.
 *
 * @param n The groups that may stay pending.
 * @returns The operation.
 */
export function wgWait(n: number): WgWaitOp {
  return { op: "wgwait", n };
}

/**
 * `fence.proxy.async.shared::cta`.
 *
 * @returns The operation.
 */
export function proxyFence(): ProxyFenceOp {
  return { op: "proxyfence" };
}

/**
 * `mbarrier.init` of the barrier at `addr` for `count` arrivals a phase.
 *
 * @param addr The barrier's shared address (u32).
 * @param count Arrivals a phase expects.
 * @returns The operation.
 */
export function mbarInit(addr: Reg, count: number): MbarInitOp {
  return { op: "mbarinit", addr, count };
}

/**
 * An arrival on the barrier at `addr`, after raising its phase's transaction bytes by `tx`.
 *
 * @param addr The barrier's shared address (u32).
 * @param tx Transaction bytes the phase also waits for (absent: none).
 * @param guard The lanes that arrive (absent: all).
 * @param cta The cluster rank of the CTA whose barrier at `addr`'s offset receives the
 *   arrival (absent: the executing CTA's).
 * @returns The operation.
 */
export function mbarArrive(addr: Reg, tx?: number, guard?: Guard, cta?: Operand): MbarArriveOp {
  return {
    op: "mbararrive",
    addr,
    ...(tx === undefined ? {} : { tx }),
    ...(guard === undefined ? {} : { guard }),
    ...(cta === undefined ? {} : { cta }),
  };
}

/**
 * Waits for the phase of parity `parity` of the barrier at `addr` to complete.
 *
 * @param addr The barrier's shared address (u32).
 * @param parity The parity (u32 0 or 1).
 * @returns The operation.
 */
export function mbarWait(addr: Reg, parity: Operand): MbarWaitOp {
  return { op: "mbarwait", addr, parity };
}

/**
 * `fence.mbarrier_init.release.cluster`.
 *
 * @returns The operation.
 */
export function mbarFence(): MbarFenceOp {
  return { op: "mbarfence" };
}

/**
 * A TMA copy of the box at `coords` of tensor map `map` to `dst`, completing on `bar`.
 *
 * @param dst The box's shared address (u32).
 * @param map The `tensormap` parameter.
 * @param coords The box's origin, innermost first.
 * @param bar The barrier's shared address (u32).
 * @param multicast The cluster's CTAs that receive the box, a bit a rank (absent: this CTA).
 * @param policy A cache-eviction policy register (u64, ir/builder.ts `createPolicy`), if any.
 * @returns The operation.
 */
export function tmaLoad(
  dst: Reg,
  map: string,
  coords: readonly Operand[],
  bar: Reg,
  multicast?: number,
  policy?: Reg,
): TmaLoadOp {
  return {
    op: "tma",
    dst,
    map,
    coords,
    bar,
    ...(multicast === undefined ? {} : { multicast }),
    ...(policy === undefined ? {} : { policy }),
  };
}

/**
 * `prefetch.tensormap` of a tensor map parameter (ir/kernel_sm90.ts, TmapPrefetchOp).
 *
 * @param map The `tensormap` parameter's name.
 * @returns The operation.
 */
export function tmapPrefetch(map: string): TmapPrefetchOp {
  return { op: "tmapprefetch", map };
}

/**
 * `setmaxnreg.{inc,dec}.sync.aligned.u32 regs`.
 *
 * @param action Raise or lower.
 * @param regs The registers per thread.
 * @returns The operation.
 */
export function setMaxNReg(action: "inc" | "dec", regs: number): SetMaxNRegOp {
  return { op: "setmaxnreg", action, regs };
}

/**
 * `griddepcontrol.wait` or `griddepcontrol.launch_dependents` (see {@link GridDepOp}).
 *
 * @param action `wait` or `launch`.
 * @param early A wait's tensors read before it (compile option `pdlEarly`).
 * @returns The operation.
 */
export function gridDep(action: "wait" | "launch", early?: readonly string[]): GridDepOp {
  return { op: "griddep", action, ...(early !== undefined && early.length > 0 ? { early } : {}) };
}
