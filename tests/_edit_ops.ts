/**
 * Rewrites a kernel's program for mutation tests: each operation anywhere in the body that `f`
 * matches is replaced by the operations it returns.
 *
 * @module
 */

import type { Kernel, Op } from "../ir/kernel.ts";

/**
 * The kernel with its operations rewritten, loops and ifs descended into.
 *
 * @param k The kernel.
 * @param f Each operation's replacement (null: unchanged, its bodies rewritten).
 * @returns The new kernel.
 */
export function editOps(k: Kernel, f: (o: Op) => Op[] | null): Kernel {
  const go = (ops: readonly Op[]): Op[] =>
    ops.flatMap((o) => {
      const r = f(o);
      if (r !== null) return r;
      if (o.op === "for") return [{ ...o, body: go(o.body) }];
      if (o.op === "if") return [{ ...o, then: go(o.then), otherwise: go(o.otherwise) }];
      return [o];
    });
  return { ...k, body: go(k.body) };
}
