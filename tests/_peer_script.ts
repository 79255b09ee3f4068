/**
 * What the tests of the PyTorch peer scripts (bench/peers/*_peers.py) share, none of it
 * needing a GPU or torch: whether python3 (3.8 or later) and torch are there, the script's
 * schema (its RECORD_KEYS), running it with an OUT path that `--dry` and failures must leave
 * unwritten, reading the planned records of `--dry`, and random options.
 *
 * @module
 */

import assert from "node:assert/strict";
import { python3 } from "./_python.ts";

/** Whether python3 >= 3.8 is missing (the tests are then skipped, visibly). */
export const PEERS_IGNORE =
  python3(["-c", "import sys; print(sys.version_info >= (3, 8))"])?.stdout.trim() !== "True";

/** The suffix a skipped test's name gets. */
export const PEERS_WHY = PEERS_IGNORE ? " (skipped: no python3 >= 3.8)" : "";

/** Whether torch imports (a real run then does not exit 3). */
export const HAS_TORCH = !PEERS_IGNORE &&
  python3(["-c", "import importlib.util as u; print(u.find_spec('torch') is not None)"])?.stdout
      .trim() === "True";

/** The peer scripts' folder. */
export const PEERS_DIR = new URL("../bench/peers", import.meta.url).pathname;

/** One peer script. */
export interface PeerScript {
  /** Its RECORD_KEYS, read from it (empty where python3 does not run). */
  readonly schema: readonly string[];
  /** Runs it with `args` and an OUT path, which `--dry` and a failure must not write. */
  run(args: readonly string[]): { code: number; stdout: string; stderr: string };
  /** Asserts that a record has the schema's keys, in order, and every key its reader reads. */
  assertKeys(rec: Record<string, unknown>): void;
}

/**
 * The peer script `bench/peers/<module>.py`.
 *
 * @param module The module's name (`sparse_peers`, `fp8_peers`).
 * @param readKeys The keys the benchmark that reads its records reads.
 * @returns Its schema, runner and record check.
 */
export function peerScript(module: string, readKeys: readonly string[]): PeerScript {
  const script = `${PEERS_DIR}/${module}.py`;
  const schema: string[] = PEERS_IGNORE ? [] : JSON.parse(
    python3([
      "-c",
      `import json, sys; sys.path.insert(0, ${JSON.stringify(PEERS_DIR)}); import ${module}; ` +
      `print(json.dumps(${module}.RECORD_KEYS))`,
    ])?.stdout ?? "[]",
  );
  return {
    schema,
    assertKeys(rec) {
      assert.deepEqual(Object.keys(rec), schema);
      assert.deepEqual(
        readKeys.filter((k) => !(k in rec)),
        [],
        `keys the reader of ${module} reads`,
      );
    },
    run(args) {
      const dir = Deno.makeTempDirSync({ prefix: `gemmc_${module}_` });
      try {
        const r = python3([script, ...args, `${dir}/out.jsonl`]);
        assert.ok(r !== null);
        if (args.includes("--dry") || r.code !== 0) {
          assert.throws(() => Deno.statSync(`${dir}/out.jsonl`), Deno.errors.NotFound);
        }
        return r;
      } finally {
        Deno.removeSync(dir, { recursive: true });
      }
    },
  };
}

/**
 * The JSON records of a `--dry` output (the lines that start with `{`).
 *
 * @param stdout The output.
 * @returns The records.
 */
export function dryRecords(stdout: string): Record<string, unknown>[] {
  return stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}

/**
 * A random integer in [lo, hi].
 *
 * @param lo The least.
 * @param hi The largest.
 * @returns The integer.
 */
export function randInt(lo: number, hi: number): number {
  return lo + Math.floor(Math.random() * (hi - lo + 1));
}

/**
 * A random non-empty subset of `xs`, in their order.
 *
 * @param xs The items.
 * @returns The subset.
 */
export function randomSubset(xs: readonly string[]): string[] {
  const s = xs.filter(() => Math.random() < 0.5);
  return s.length > 0 ? s : [xs[randInt(0, xs.length - 1)]!];
}
