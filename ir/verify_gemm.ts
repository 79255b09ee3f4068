/**
 * The GEMM IR verifier: the invariants every pass must keep. A failure is a
 * compiler bug, not a user error, so it throws a plain `Error` naming the
 * broken invariant.
 *
 * @module
 */

import type { GemmKernel, Shape3 } from "./gemm.ts";
import { visitEpilogue } from "./epilogue_expr.ts";
import { DTYPE_INFO } from "./dtype.ts";

/**
 * Checks a GEMM IR kernel's invariants.
 *
 * @param k The kernel.
 * @throws Error naming the first broken invariant.
 */
export function verifyGemm(k: GemmKernel): void {
  const fail = (msg: string): never => {
    throw new Error(`GEMM IR verifier: kernel "${k.name}": ${msg}`);
  };
  const names = new Set<string>();
  for (const p of k.params) {
    if (names.has(p.name)) fail(`duplicate parameter "${p.name}"`);
    names.add(p.name);
    if (p.kind === "tensor") {
      if (p.dims.length < 1 || p.dims.length > 3) {
        fail(`tensor "${p.name}" has rank ${p.dims.length}`);
      }
      if (p.align < 1 || (p.align & (p.align - 1)) !== 0) {
        fail(`tensor "${p.name}" has alignment ${p.align}`);
      }
      for (const d of p.dims) {
        if (d.kind === "sym" && !k.dims.includes(d.name)) fail(`dim "${d.name}" is not listed`);
      }
    }
  }
  const tensor = (name: string) => {
    const p = k.params.find((q) => q.name === name);
    if (p === undefined || p.kind !== "tensor") return fail(`no tensor "${name}"`);
    return p;
  };
  const a = tensor(k.problem.a.tensor);
  const b = tensor(k.problem.b.tensor);
  const d = tensor(k.problem.d.tensor);
  if (a.role !== "A" || b.role !== "B" || d.role !== "D") {
    fail("operand roles disagree with the problem");
  }
  if (a.dtype !== k.math.a || b.dtype !== k.math.b) fail("math types disagree with the operands");
  if (
    k.problem.batch === null && (k.problem.a.batched || k.problem.b.batched || k.problem.d.batched)
  ) {
    fail("a batched operand in an unbatched problem");
  }
  if (k.problem.batch !== null && !k.problem.d.batched) {
    fail("the output of a batched GEMM is not batched");
  }
  const accOk = k.math.op === "mul"
    ? DTYPE_INFO[k.math.acc].float === DTYPE_INFO[k.math.a].float
    : k.math.acc === "s32";
  if (!accOk) fail(`accumulator "${k.math.acc}" does not fit "${k.math.a}" operands`);
  visitEpilogue(k.epilogue.expr, {
    scalar: (e) => {
      const p = k.params.find((q) => q.name === e.name);
      if (p === undefined || p.kind !== "scalar") {
        fail(`epilogue reads unknown scalar "${e.name}"`);
      }
    },
    load: (e) => {
      const t = tensor(e.tensor);
      if (t.role !== "C" && t.role !== "bias") {
        fail(`epilogue reads "${e.tensor}" of role ${t.role}`);
      }
      if (e.rows && e.cols && !k.epilogue.views.some((v) => v.tensor === e.tensor)) {
        fail(`epilogue matrix "${e.tensor}" has no view`);
      }
    },
  });
  const pos = (s: Shape3 | undefined, what: string) => {
    if (s !== undefined && (s.m <= 0 || s.n <= 0 || s.k <= 0)) {
      fail(`${what} has a non-positive extent`);
    }
  };
  pos(k.schedule.threadblock, "threadblock");
  pos(k.schedule.warp, "warp");
  pos(k.schedule.mma, "mma");
  for (const key of ["stages", "swizzle", "splitK"] as const) {
    const v = k.schedule[key];
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) fail(`${key} is ${v}`);
  }
}
