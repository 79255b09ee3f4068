/**
 * Running `python3` from a test: its exit code and output, or null where there is
 * no python3 (the tests then skip visibly).
 *
 * @module
 */

import assert from "node:assert/strict";

const dec = new TextDecoder();

/**
 * Runs `python3 args...` and waits.
 *
 * @param args The arguments.
 * @returns The exit code and output, or null without python3.
 */
export function python3(args: string[]): { code: number; stdout: string; stderr: string } | null {
  try {
    const r = new Deno.Command("python3", { args, stdout: "piped", stderr: "piped" }).outputSync();
    return { code: r.code, stdout: dec.decode(r.stdout), stderr: dec.decode(r.stderr) };
  } catch {
    return null;
  }
}

/**
 * Runs one of tests/python's check scripts (`python3 SCRIPT ARGS...` with `env` added), asserts
 * that it exits 0, and returns its output and the JSON of its `RECORDS ...` line.
 *
 * @param script The script's name under tests/python.
 * @param args Its arguments.
 * @param env Environment variables to add.
 * @returns The output (stdout, then stderr) and the records.
 */
export function pythonCheck(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): { out: string; records: unknown } {
  const path = new URL(`python/${script}`, import.meta.url).pathname;
  const r = new Deno.Command("python3", {
    args: [path, ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  })
    .outputSync();
  const out = dec.decode(r.stdout) + dec.decode(r.stderr);
  assert.equal(r.code, 0, out);
  const m = /^RECORDS (.*)$/m.exec(out);
  assert.ok(m !== null, `no RECORDS line: ${out}`);
  return { out, records: JSON.parse(m[1]!) };
}
