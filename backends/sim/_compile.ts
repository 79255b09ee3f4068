/**
 * Compiles a kernel-IR body into closures over the machine: one closure per
 * operation, loops and conditionals as closures over their bodies, each
 * non-uniform `if` with its own pair of lane masks. In a kernel with wgmma, the
 * operations that touch a wgmma accumulator are wrapped by _wgmma.ts's hazard check.
 *
 * @module
 */

import type { ForOp, IfOp, Kernel, Op } from "../../ir/kernel.ts";
import { unreachable } from "../../ir/gemm.ts";
import { printBody } from "../../ir/print_kernel.ts";
import { compileAlu } from "./_alu.ts";
import type { Machine, Mask, OpInfo, Run } from "./_machine.ts";
import { compileMma } from "./_mma.ts";
import {
  compileAtom,
  compileBar,
  compileCommit,
  compileCpAsync,
  compileFence,
  compileGlobal,
  compileLdmatrix,
  compilePrefetch,
  compileShared,
  compileWait,
} from "./_ops.ts";
import { compileProxyFence, compileWgmma, compileWgSync, guardAccumulators } from "./_wgmma.ts";
import { SimError } from "./types.ts";

/** Lines `printKernel` prints before the body: the signature, the launch line, `{`. */
const HEADER_LINES = 3;

/**
 * Indexes every operation of a kernel in program order (depth first, then
 * before else), with its printed line, index path and line number in
 * `printKernel(kernel)`.
 *
 * @param kernel The kernel.
 * @returns The operations.
 */
export function indexOps(kernel: Kernel): OpInfo[] {
  const infos: OpInfo[] = [];
  let line = HEADER_LINES;
  const visit = (body: readonly Op[], path: string) => {
    body.forEach((o, i) => {
      const p = path === "" ? String(i) : `${path}/${i}`;
      const out: string[] = [];
      printBody([o], "", out);
      line++;
      infos.push({ index: infos.length, op: o, text: out[0]!, path: p, line });
      if (o.op === "for") {
        visit(o.body, p);
        line++; // }
      } else if (o.op === "if") {
        visit(o.then, p);
        if (o.otherwise.length > 0) {
          line++; // } else {
          visit(o.otherwise, `${p}/else`);
        }
        line++; // }
      }
    });
  };
  visit(kernel.body, "");
  return infos;
}

function whereStatic(info: OpInfo) {
  return { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null };
}

/** Compiles bodies in the order {@link indexOps} numbered them. */
class Compiler {
  #next = 0;

  constructor(readonly M: Machine) {}

  body(ops: readonly Op[], mask: Mask, uniform: boolean): Run {
    const runs: Run[] = [];
    for (const o of ops) {
      const info = this.M.infos[this.#next++]!;
      if (info.op !== o) throw new Error("internal: operation index out of step");
      const r = this.op(info, mask, uniform);
      if (r !== null) runs.push(this.M.wg === null ? r : guardAccumulators(this.M, info, mask, r));
    }
    const n = runs.length;
    if (n === 0) return () => {};
    if (n === 1) return runs[0]!;
    return () => {
      for (let i = 0; i < n; i++) runs[i]!();
    };
  }

  op(info: OpInfo, mask: Mask, uniform: boolean): Run | null {
    const M = this.M;
    const o = info.op;
    switch (o.op) {
      case "param":
      case "sreg":
      case "mov":
      case "smembase":
      case "bin":
      case "mad":
      case "mulwide":
      case "un":
      case "setp":
      case "selp":
      case "cvt":
      case "pack":
      case "unpack":
        return compileAlu(M, info, mask);
      case "cpasync":
        return compileCpAsync(M, info, mask);
      case "prefetch":
        return compilePrefetch(M, info, mask);
      case "commit":
        return compileCommit(M, info, mask);
      case "wait":
        return compileWait(M, info, mask);
      case "bar":
        if (!uniform) {
          throw new SimError(
            "bar.sync in non-uniform control flow (inside a non-uniform if)",
            whereStatic(info),
          );
        }
        return compileBar(M, info, mask);
      case "ldmatrix":
        return compileLdmatrix(M, info, mask);
      case "lds":
        return compileShared(M, info, mask, "load");
      case "sts":
        return compileShared(M, info, mask, "store");
      case "ldg":
        return compileGlobal(M, info, mask, "load");
      case "stg":
        return compileGlobal(M, info, mask, "store");
      case "atom":
        return compileAtom(M, info, mask);
      case "fence":
        return compileFence(M, info, mask);
      case "mma":
        return compileMma(M, info, mask);
      case "wgmma":
        return compileWgmma(M, info, mask);
      case "wgfence":
      case "wgcommit":
      case "wgwait":
        return compileWgSync(M, info, mask);
      case "proxyfence":
        return compileProxyFence(M, info, mask);
      case "for":
        return this.for(info, o, mask, uniform);
      case "if":
        return o.uniform ? this.uniformIf(info, o, mask, uniform) : this.divergentIf(info, o, mask);
      case "comment":
        return null;
      default:
        return unreachable(o);
    }
  }

  for(info: OpInfo, o: ForOp, mask: Mask, uniform: boolean): Run {
    const M = this.M;
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
    const body = this.body(o.body, mask, uniform);
    const T = M.T;
    return () => {
      const m = mask.m;
      for (let t = 0; t < T; t++) if (m[t] !== 0) iv[t] = fromA === null ? fromI : fromA[t]!;
      for (;;) {
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
        if (go !== 1) break;
        body();
        for (let t = 0; t < T; t++) if (m[t] !== 0) iv[t] = iv[t]! + step;
      }
    };
  }

  uniformIf(info: OpInfo, o: IfOp, mask: Mask, uniform: boolean): Run {
    const M = this.M;
    const idx = info.index;
    const cond = M.view(o.cond, "pred", idx) as Uint8Array;
    const neg = o.negate ? 1 : 0;
    const then = this.body(o.then, mask, uniform);
    const otherwise = this.body(o.otherwise, mask, uniform);
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
      if (v === 1) then();
      else if (v === 0) otherwise();
    };
  }

  divergentIf(info: OpInfo, o: IfOp, mask: Mask): Run {
    const M = this.M;
    const cond = M.view(o.cond, "pred", info.index) as Uint8Array;
    const neg = o.negate ? 1 : 0;
    const T = M.T;
    const W = M.W;
    const tm: Mask = { m: new Uint8Array(T), warps: 0, root: false };
    const em: Mask = { m: new Uint8Array(T), warps: 0, root: false };
    const then = this.body(o.then, tm, false);
    const otherwise = this.body(o.otherwise, em, false);
    return () => {
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
      if (tw > 0) then();
      if (ew > 0) otherwise();
    };
  }
}

/**
 * Compiles a kernel's body against a machine.
 *
 * @param M The machine (its `infos` from {@link indexOps}).
 * @returns The closure that runs the body for the current block.
 */
export function compileKernel(M: Machine): Run {
  return new Compiler(M).body(M.kernel.body, M.rootMask, true);
}
