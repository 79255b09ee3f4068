/**
 * Where a benchmark writes its record: a new file in `bench/results/` named
 * by what and when (`sim-2026-12-02.md`, `2026-12-02-h200.csv`), with `-2`,
 * `-3`, ... added when that name is taken, so that a run never rewrites a
 * record already there (committed ones included).
 *
 * @module
 */

/** The folder of the committed records, `bench/results/`. */
export const RESULTS_DIR: string = new URL("./results/", import.meta.url).pathname;

/**
 * Today's date as records name it (UTC, `YYYY-MM-DD`).
 *
 * @param now The time (default: now).
 * @returns The date.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { resultDate } from "./results.ts";
 * equal(resultDate(new Date("2026-12-02T23:59:00Z")), "2026-12-02");
 * ```
 */
export function resultDate(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/**
 * A path for a new record: `DIR/STEM.EXT`, or `DIR/STEM-2.EXT`, `-3`, ...
 * when that one exists. Creates the folder. The name is free when this
 * returns; two runs racing for it are not guarded against (shortcut: one
 * benchmark runs at a time).
 *
 * @param dir The folder.
 * @param stem The name without extension (`sim-2026-12-02`).
 * @param ext The extension with its dot (`.md`).
 * @returns The path.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { freshResultPath } from "./results.ts";
 * const dir = Deno.makeTempDirSync();
 * const first = freshResultPath(dir, "sim-2026-12-02", ".md");
 * Deno.writeTextFileSync(first, "run 1");
 * equal(freshResultPath(dir, "sim-2026-12-02", ".md"), `${dir}/sim-2026-12-02-2.md`);
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export function freshResultPath(dir: string, stem: string, ext: string): string {
  Deno.mkdirSync(dir, { recursive: true });
  for (let n = 1;; n++) {
    const path = `${dir.replace(/\/+$/, "")}/${stem}${n === 1 ? "" : `-${n}`}${ext}`;
    try {
      Deno.lstatSync(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return path;
      throw e;
    }
  }
}
