/**
 * The C toolchain of the C artefact's tests (tests/aot_c_test.ts, tests/aot_c_tmap_test.ts):
 * the directory of cuda.h, and a test that runs only where cc, c++ and cuda.h exist (listed
 * as skipped elsewhere; failed under CI=true).
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";

const CI = Deno.env.get("CI") === "true";

/** The directory holding cuda.h: the toolkit beside nvcc, else the usual places. */
export function cudaInclude(): string | null {
  const dirs: string[] = [];
  for (const v of ["CUDA_HOME", "CUDA_PATH"]) {
    const d = Deno.env.get(v);
    if (d !== undefined) dirs.push(join(d, "include"));
  }
  for (const p of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      const nvcc = Deno.realPathSync(join(p, "nvcc"));
      dirs.push(join(dirname(dirname(nvcc)), "include"));
      // A wrapper script (`exec /usr/local/cuda-13.0/bin/nvcc "$@"`): the toolkit it names.
      const m = /exec\s+(\S+)\/bin\/nvcc/.exec(Deno.readTextFileSync(nvcc));
      if (m !== null) dirs.push(join(m[1]!, "include"));
    } catch { /* not there, or a binary */ }
  }
  dirs.push("/usr/local/cuda/include", "/usr/include");
  return dirs.find((d) => {
    try {
      return Deno.statSync(join(d, "cuda.h")).isFile;
    } catch {
      return false;
    }
  }) ?? null;
}

/** Whether a tool runs. */
export function hasTool(name: string): boolean {
  try {
    return new Deno.Command(name, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** The directory holding cuda.h, or null. */
export const INCLUDE = cudaInclude();
/** Whether cc, c++ and cuda.h are all here. */
export const READY = INCLUDE !== null && hasTool("cc") && hasTool("c++");

/** A test of the C artefact: run where the toolchain is, else skipped visibly. */
export function cTest(name: string, fn: () => Promise<void>): void {
  if (READY) Deno.test({ name, fn });
  else if (CI) Deno.test(name, () => assert.fail("cc, c++ or cuda.h not found and CI=true"));
  else Deno.test({ name: `${name} (skipped: no cc, c++ or cuda.h)`, ignore: true, fn() {} });
}

/** Runs a command (with stdin), throwing with its output when it fails; returns its stdout. */
export async function sh(cmd: string, args: string[], stdin?: string): Promise<string> {
  const p = new Deno.Command(cmd, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = p.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await p.output();
  const dec = new TextDecoder();
  const text = dec.decode(out.stdout) + dec.decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed:\n${text}`);
  return dec.decode(out.stdout);
}
