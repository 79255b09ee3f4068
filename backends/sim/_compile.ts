/**
 * Compiles a kernel-IR body into closures over the machine: one closure per
 * operation, loops and conditionals as closures over their bodies, each
 * non-uniform `if` with its own pair of lane masks. In a kernel with wgmma, the
 * operations that touch a wgmma accumulator are wrapped by _wgmma.ts's hazard check. A
 * non-uniform `if` whose branches wait on mbarriers runs them as concurrent roles
 * (_roles.ts).
 *
 * @module
 */

import type { IfOp, Kernel, Op } from "../../ir/kernel.ts";
import { unreachable } from "../../ir/gemm.ts";
import { printBody } from "../../ir/print_kernel.ts";
import { compileAlu } from "./_alu.ts";
import { compileClusterBar } from "./_cluster.ts";
import { divergentSplit, loopControl, uniformCond } from "./_control.ts";
import type { Machine, Mask, OpInfo, Run } from "./_machine.ts";
import {
  compileMbarArrive,
  compileMbarFence,
  compileMbarInit,
  compileNamedBar,
  compilePlainMbarWait,
  compileSetMaxNReg,
} from "./_mbarrier.ts";
import { compileMma } from "./_mma.ts";
import {
  compileAtom,
  compileBar,
  compileCommit,
  compileCpAsync,
  compileCreatePolicy,
  compileFence,
  compileGlobal,
  compileGridDep,
  compileLdmatrix,
  compilePrefetch,
  compileShared,
  compileWait,
} from "./_ops.ts";
import { compileRoles, isRoleIf, type RoleCompiler } from "./_roles.ts";
import { compileTma, compileTmapPrefetch } from "./_tma.ts";
import { compileProxyFence, compileWgmma, compileWgSync, guardAccumulators } from "./_wgmma.ts";
import { type RoleSchedule, SimError } from "./types.ts";

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
class Compiler implements RoleCompiler {
  #next = 0;

  constructor(readonly M: Machine, readonly schedule: RoleSchedule) {}

  take(o: Op): OpInfo {
    const info = this.M.infos[this.#next++]!;
    if (info.op !== o) throw new Error("internal: operation index out of step");
    return info;
  }

  get cursor(): number {
    return this.#next;
  }

  set cursor(n: number) {
    this.#next = n;
  }

  plain(info: OpInfo, mask: Mask, uniform: boolean): Run | null {
    const r = this.op(info, mask, uniform);
    return r === null || this.M.wg === null ? r : guardAccumulators(this.M, info, mask, r);
  }

  body(ops: readonly Op[], mask: Mask, uniform: boolean): Run {
    const runs: Run[] = [];
    for (const o of ops) {
      const r = this.plain(this.take(o), mask, uniform);
      if (r !== null) runs.push(r);
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
      case "createpolicy":
        return compileCreatePolicy(M, info, mask);
      case "prefetch":
        return compilePrefetch(M, info, mask);
      case "commit":
        return compileCommit(M, info, mask);
      case "wait":
        return compileWait(M, info, mask);
      case "bar":
        if (o.named !== undefined) {
          if (o.cluster === true) {
            throw new SimError("A cluster barrier cannot be a named barrier", whereStatic(info));
          }
          return compileNamedBar(M, info, mask);
        }
        if (!uniform) {
          throw new SimError(
            "bar.sync in non-uniform control flow (inside a non-uniform if)",
            whereStatic(info),
          );
        }
        return o.cluster === true ? compileClusterBar(M, info, mask) : compileBar(M, info, mask);
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
        return this.for(info, mask, uniform);
      case "if":
        if (o.uniform) return this.uniformIf(info, o, mask, uniform);
        return isRoleIf(o) ? compileRoles(this, info, mask) : this.divergentIf(info, o, mask);
      case "comment":
        return null;
      case "mbarinit":
        return compileMbarInit(M, info, mask);
      case "mbararrive":
        return compileMbarArrive(M, info, mask);
      case "mbarwait":
        return compilePlainMbarWait(M, info, mask);
      case "mbarfence":
        return compileMbarFence(M, info, mask);
      case "tma":
        return compileTma(M, info, mask);
      case "tmapprefetch":
        return compileTmapPrefetch(M, info, mask);
      case "setmaxnreg":
        return compileSetMaxNReg(M, info, mask);
      case "griddep":
        return compileGridDep(M, info, mask);
      default:
        return unreachable(o);
    }
  }

  for(info: OpInfo, mask: Mask, uniform: boolean): Run {
    const lc = loopControl(this.M, info, mask);
    const body = this.body((info.op as { body: readonly Op[] }).body, mask, uniform);
    const { start, test, step } = lc;
    return () => {
      start();
      while (test()) {
        body();
        step();
      }
    };
  }

  uniformIf(info: OpInfo, o: IfOp, mask: Mask, uniform: boolean): Run {
    const cond = uniformCond(this.M, info, mask);
    const then = this.body(o.then, mask, uniform);
    const otherwise = this.body(o.otherwise, mask, uniform);
    return () => {
      const v = cond();
      if (v === 1) then();
      else if (v === 0) otherwise();
    };
  }

  divergentIf(info: OpInfo, o: IfOp, mask: Mask): Run {
    const sp = divergentSplit(this.M, info, mask);
    const then = this.body(o.then, sp.tm, false);
    const otherwise = this.body(o.otherwise, sp.em, false);
    const { split, tm, em } = sp;
    return () => {
      split();
      if (tm.warps > 0) then();
      if (em.warps > 0) otherwise();
    };
  }
}

/**
 * Compiles a kernel's body against a machine.
 *
 * @param M The machine (its `infos` from {@link indexOps}).
 * @param schedule How concurrent roles take turns (_roles.ts).
 * @returns The closure that runs the body for the current block.
 */
export function compileKernel(M: Machine, schedule: RoleSchedule = "producer-first"): Run {
  return new Compiler(M, schedule).body(M.kernel.body, M.rootMask, true);
}
