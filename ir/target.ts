/**
 * The compile targets: every fact about a GPU architecture that the compiler
 * uses, one row a target. The checker, the passes, the PTX printer, the
 * manifest, the CLI and the simulator read this table; adding a target is one
 * row plus what is new about it (DESIGN.md §6 names sm_90 as the next).
 *
 * Skeleton written before the target table's work (issue 18, item 1): the
 * name, the PTX spelling and the parser are final; the rest of the facts move
 * here from the sites that state them today.
 *
 * @module
 */

/** One compile target's facts. */
export interface TargetInfo {
  /** The DSL and API spelling (`target sm80`). */
  readonly name: string;
  /** The PTX `.target` and ptxas `-arch` spelling. */
  readonly ptx: string;
}

/** Every target, by name. The order is the CLI's and the help's. */
export const TARGETS = Object.freeze(
  {
    sm80: Object.freeze({ name: "sm80", ptx: "sm_80" }),
    sm86: Object.freeze({ name: "sm86", ptx: "sm_86" }),
  } as const satisfies Record<string, TargetInfo>,
);

/** A compile target's name. */
export type Target = keyof typeof TARGETS;

/** The targets' names, in table order. */
export const TARGET_NAMES: readonly Target[] = Object.freeze(Object.keys(TARGETS) as Target[]);

/**
 * The facts of one target.
 *
 * @param t The target's name.
 * @returns Its row of {@link TARGETS}.
 * @example
 * ```ts
 * import { targetInfo } from "./target.ts";
 * console.assert(targetInfo("sm86").ptx === "sm_86");
 * ```
 */
export function targetInfo(t: Target): (typeof TARGETS)[Target] {
  return TARGETS[t];
}

/**
 * Reads a target as a user writes it: the DSL name (`sm80`) or the PTX one
 * (`sm_80`).
 *
 * @param text The spelling.
 * @returns The target, or null when no row has that name.
 * @example
 * ```ts
 * import { parseTarget } from "./target.ts";
 * console.assert(parseTarget("sm_86") === "sm86");
 * console.assert(parseTarget("sm70") === null);
 * ```
 */
export function parseTarget(text: string): Target | null {
  for (const t of TARGET_NAMES) {
    if (TARGETS[t].name === text || TARGETS[t].ptx === text) return t;
  }
  return null;
}

/** The targets' names joined for a message: `sm80 or sm86`. */
export function targetList(sep = " or "): string {
  return TARGET_NAMES.length <= 2
    ? TARGET_NAMES.join(sep)
    : `${TARGET_NAMES.slice(0, -1).join(", ")}${sep}${TARGET_NAMES.at(-1)}`;
}
