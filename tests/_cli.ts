/**
 * Running the `gemm` CLI as a subprocess, for the end-to-end tests.
 *
 * @module
 */

import assert from "node:assert/strict";

const ROOT_PATH = new URL("../", import.meta.url).pathname;
const dec = new TextDecoder();

/** What a CLI run returned. */
export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `deno run -A cli.ts ARGS...` from the repository root.
 *
 * @param args The CLI arguments.
 * @returns Exit code, stdout and stderr.
 */
export function gemm(...args: string[]): Promise<Run> {
  return gemmWithEnv(args, {});
}

/**
 * {@link gemm} with environment variables added. Deno's own "Download URL"
 * lines (printed when its package cache is cold, as on a fresh machine) are
 * dropped from stderr: the tests check what gemm prints.
 *
 * @param args The CLI arguments.
 * @param env Environment variables to add.
 * @returns Exit code, stdout and stderr.
 */
export function gemmWithEnv(args: string[], env: Record<string, string>): Promise<Run> {
  return denoRun(["cli.ts", ...args], env);
}

/** `deno run -A ARGS...` from the repository root, Deno's download lines dropped. */
async function denoRun(args: readonly string[], env: Record<string, string>): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    cwd: ROOT_PATH,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = dec.decode(out.stderr).replace(/^Download https?:\/\/\S+\n/gm, "");
  return { code: out.code, stdout: dec.decode(out.stdout), stderr };
}

/**
 * Runs `deno run -A ARGS...` from the repository root with a libcuda that does
 * not exist (`GEMMC_LIBCUDA`): how the benchmarks behave on a machine without a
 * driver. Deno's "Download URL" lines are dropped from stderr.
 *
 * @param args The script and its arguments.
 * @returns Exit code, stdout and stderr.
 */
export function runWithoutDriver(args: readonly string[]): Promise<Run> {
  return denoRun(args, { GEMMC_LIBCUDA: "/nonexistent/libcuda.so.1" });
}

/**
 * Runs many invocations, `width` at a time.
 *
 * @param argLists One argument list per run.
 * @param width Runs at once.
 * @returns The runs, in order.
 */
export async function gemmAll(argLists: string[][], width = 4): Promise<Run[]> {
  const results: Run[] = new Array(argLists.length);
  let next = 0;
  const worker = async () => {
    while (next < argLists.length) {
      const i = next++;
      results[i] = await gemm(...argLists[i]!);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

/**
 * Asserts that a run printed no stack trace and no internal error.
 *
 * @param r The run.
 * @param what What it was, for the message.
 */
export function assertNoStackTrace(r: Run, what: string): void {
  const all = r.stdout + r.stderr;
  assert.doesNotMatch(all, /^\s+at /m, `${what}: a stack trace\n${all}`);
  assert.doesNotMatch(all, /Stack backtrace|Uncaught|gemm: internal error/, `${what}\n${all}`);
}
