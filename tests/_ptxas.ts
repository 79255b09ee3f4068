/**
 * Tests that need ptxas: run where it is found (PATH, /usr/local/bin,
 * /usr/local/cuda/bin), skipped visibly ("(skipped: no ptxas)") where it is
 * not, and failed where it is not under `CI=true`.
 *
 * @module
 */

import { findPtxas } from "../backends/ptx/ptxas.ts";

const PTXAS = findPtxas();
const CI = Deno.env.get("CI") === "true";

/** A test that needs ptxas; `fn` gets its path. */
export function ptxasTest(name: string, fn: (ptxas: string) => Promise<void>): void {
  if (PTXAS !== null) {
    Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn: () => fn(PTXAS) });
  } else if (CI) {
    Deno.test(name, () => {
      throw new Error("ptxas not found (PATH, /usr/local/bin, /usr/local/cuda/bin) and CI=true");
    });
  } else {
    Deno.test({ name: `${name} (skipped: no ptxas)`, ignore: true, fn: () => {} });
  }
}
