/**
 * The run-time checks and lane masks of structured control flow, shared by the plain
 * compilation of _compile.ts and the coroutines of _roles.ts: a loop's uniform trip count,
 * a uniform `if`'s condition, and a non-uniform `if`'s pair of masks (with the
 * warpgroup-uniformity check of a warpgroupUniform one). Uniformity is checked over the
 * active threads only, so a loop inside a role branch need only be uniform among its role.
 *
 * @module
 */

import type { ForOp, IfOp } from "../../ir/kernel.ts";
import type { Machine, Mask, OpInfo } from "./_machine.ts";
import { SimError } from "./types.ts";

function whereStatic(info: OpInfo) {
  return { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null };
}

/** A compiled loop header: {@link LoopControl.start} sets the induction variable,
 * {@link LoopControl.test} checks the trip is uniform and says whether to run the body,
 * {@link LoopControl.step} advances it. */
export interface LoopControl {
  readonly start: () => void;
  readonly test: () => boolean;
  readonly step: () => void;
}

/**
 * Compiles a `for` loop's header over the active lanes of `mask`.
 *
 * @param M The machine.
 * @param info The loop.
 * @param mask Its lanes.
 * @returns The header's three parts.
 */
export function loopControl(M: Machine, info: OpInfo, mask: Mask): LoopControl {
  const o = info.op as ForOp;
  const idx = info.index;
  if (!Number.isInteger(o.step) || o.step <= 0) {
    throw new SimError(`Loop step must be a positive integer, not ${o.step}`, whereStatic(info));
  }
  const iv = M.view(o.iv, "u32", idx) as Uint32Array;
  const fromA = o.from.kind === "reg" ? M.view(o.from, "u32", idx) : null;
  const toA = o.to.kind === "reg" ? M.view(o.to, "u32", idx) : null;
  const fromI = o.from.kind === "imm" ? o.from.value >>> 0 : 0;
  const toI = o.to.kind === "imm" ? o.to.value >>> 0 : 0;
  const step = o.step;
  const T = M.T;
  return {
    start: () => {
      const m = mask.m;
      for (let t = 0; t < T; t++) if (m[t] !== 0) iv[t] = fromA === null ? fromI : fromA[t]!;
    },
    test: () => {
      const m = mask.m;
      let go = -1;
      let first = -1;
      for (let t = 0; t < T; t++) {
        if (m[t] === 0) continue;
        const c = iv[t]! < (toA === null ? toI : toA[t]!) ? 1 : 0;
        if (go < 0) {
          go = c;
          first = t;
        } else if (c !== go) {
          M.fail(
            idx,
            t,
            `Loop trip count is not uniform: thread ${first} ${go ? "continues" : "stops"} at ${
              iv[first]
            } but thread ${t} ${c ? "continues" : "stops"} at ${iv[t]}`,
          );
        }
      }
      return go === 1;
    },
    step: () => {
      const m = mask.m;
      for (let t = 0; t < T; t++) if (m[t] !== 0) iv[t] = iv[t]! + step;
    },
  };
}

/**
 * Compiles a uniform `if`'s test: the condition, checked to be the same in every active lane.
 *
 * @param M The machine.
 * @param info The `if`.
 * @param mask Its lanes.
 * @returns A function giving 1 (then), 0 (otherwise) or -1 (no active lane).
 */
export function uniformCond(M: Machine, info: OpInfo, mask: Mask): () => number {
  const o = info.op as IfOp;
  const idx = info.index;
  const cond = M.view(o.cond, "pred", idx) as Uint8Array;
  const neg = o.negate ? 1 : 0;
  const T = M.T;
  return () => {
    const m = mask.m;
    let v = -1;
    let first = -1;
    for (let t = 0; t < T; t++) {
      if (m[t] === 0) continue;
      const c = cond[t]! ^ neg;
      if (v < 0) {
        v = c;
        first = t;
      } else if (c !== v) {
        M.fail(
          idx,
          t,
          `Condition of a uniform if differs across threads: ${v === 1} in thread ${first}, ${
            c === 1
          } in thread ${t}`,
        );
      }
    }
    return v;
  };
}

/** A non-uniform `if`'s masks, filled by {@link DivergentSplit.split}. */
export interface DivergentSplit {
  /** The then-branch's lanes. */
  readonly tm: Mask;
  /** The else-branch's lanes. */
  readonly em: Mask;
  /** Fills both masks from the condition over the active lanes (and, for a
   * warpgroupUniform `if`, checks the condition is the same within each warpgroup). */
  readonly split: () => void;
}

/**
 * Compiles a non-uniform `if`'s lane split.
 *
 * @param M The machine.
 * @param info The `if`.
 * @param mask Its lanes.
 * @returns The masks and the function that fills them.
 */
export function divergentSplit(M: Machine, info: OpInfo, mask: Mask): DivergentSplit {
  const o = info.op as IfOp;
  const idx = info.index;
  const cond = M.view(o.cond, "pred", idx) as Uint8Array;
  const neg = o.negate ? 1 : 0;
  const T = M.T;
  const W = M.W;
  const wgu = o.warpgroupUniform === true;
  const tm: Mask = { m: new Uint8Array(T), warps: 0, root: false };
  const em: Mask = { m: new Uint8Array(T), warps: 0, root: false };
  const split = () => {
    const m = mask.m;
    const a = tm.m;
    const b = em.m;
    let tw = 0;
    let ew = 0;
    for (let w = 0; w < W; w++) {
      let ta = 0;
      let ea = 0;
      const end = Math.min(T, w * 32 + 32);
      for (let t = w * 32; t < end; t++) {
        const on = m[t]!;
        const c = cond[t]! ^ neg;
        a[t] = on & c;
        b[t] = on & (c ^ 1);
        ta |= on & c;
        ea |= on & (c ^ 1);
      }
      tw += ta;
      ew += ea;
    }
    tm.warps = tw;
    em.warps = ew;
    if (wgu) checkWarpgroupUniform(M, idx, m, a);
  };
  return { tm, em, split };
}

/** A warpgroupUniform `if`: within each warpgroup, the active lanes agree on the condition. */
function checkWarpgroupUniform(M: Machine, idx: number, m: Uint8Array, c: Uint8Array): void {
  for (let base = 0; base < M.T; base += 128) {
    let v = -1;
    let first = -1;
    const end = Math.min(M.T, base + 128);
    for (let t = base; t < end; t++) {
      if (m[t] === 0) continue;
      if (v < 0) {
        v = c[t]!;
        first = t;
      } else if (c[t] !== v) {
        M.fail(
          idx,
          t,
          `Condition of a warpgroup-uniform if differs within warpgroup ${base / 128}: ${
            v === 1
          } in thread ${first}, ${c[t] === 1} in thread ${t}`,
        );
      }
    }
  }
}
