/**
 * Walking and rewriting a kernel IR body in tests (mutants of lowered kernels).
 *
 * @module
 */

import type { Op } from "../ir/kernel.ts";

/** Every operation of a body, depth first. */
export function allOps(body: readonly Op[]): Op[] {
  return body.flatMap((o) =>
    o.op === "for"
      ? [o, ...allOps(o.body)]
      : o.op === "if"
      ? [o, ...allOps(o.then), ...allOps(o.otherwise)]
      : [o]
  );
}

/** The body with every operation passed through `f` (null drops it), depth first. */
export function mapOps(body: readonly Op[], f: (o: Op) => Op | null): Op[] {
  const out: Op[] = [];
  for (const o of body) {
    const x = o.op === "for"
      ? { ...o, body: mapOps(o.body, f) }
      : o.op === "if"
      ? { ...o, then: mapOps(o.then, f), otherwise: mapOps(o.otherwise, f) }
      : o;
    const y = f(x);
    if (y !== null) out.push(y);
  }
  return out;
}
