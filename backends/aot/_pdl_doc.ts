/**
 * What a kernel's artefacts (the C header's comment, the Python docstring) say of launching it
 * as a programmatic dependent: whether it was compiled with `pdl` (it waits for the grid before
 * it), and which inputs it reads before that wait (`pdlEarly`, manifest.ts `ManifestPdl`).
 *
 * @module
 */

import type { LaunchContract } from "../ptx/contract.ts";

/**
 * The lines (no comment prefix, each under 90 characters) on a kernel's wait for the grid
 * before it.
 *
 * @param c The kernel's launch contract.
 * @param how How a launch asks for PDL in this artefact (`pdl=True`, `gemmc_set_pdl(1)`).
 * @returns The lines.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { pdlNotes } from "./_pdl_doc.ts";
 * const c = { pdl: { early: ["W"] } } as unknown as Parameters<typeof pdlNotes>[0];
 * ok(pdlNotes(c, "pdl=True").join(" ").includes("must not write W"));
 * ```
 */
export function pdlNotes(c: Pick<LaunchContract, "pdl">, how: string): string[] {
  if (c.pdl === null) {
    return [
      `Compiled without pdl: it does not wait for the grid before it, so after ${how} it may`,
      "read what that grid (if it lets its dependents start early) has not yet written.",
    ];
  }
  const early = c.pdl.early;
  const lines = [
    "Compiled with pdl: it waits for the grid before it (griddepcontrol.wait) before it reads",
    `or writes global memory, so with ${how} its results are those of a serialized launch.`,
  ];
  if (early.length === 0) return lines;
  const names = early.join(", ");
  return [
    ...lines.slice(0, 1),
    `or writes global memory, except that it reads ${names} before the wait (pdlEarly): after`,
    `${how} the grid before it must not write ${names}.`,
  ];
}
