/**
 * Runs a check file of tests/gpu/testdata/ in a child `deno test` against the
 * fake libcuda (testdata/fake_libcuda.c, built with the first C compiler
 * found), as `GEMMC_LIBCUDA`: how the launch paths are tested where there is
 * no GPU. Without a C compiler the step is reported as skipped.
 *
 * @module
 */

import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const dec = new TextDecoder();

/** The first C compiler on the PATH, or undefined. */
export function cCompiler(): string | undefined {
  return ["cc", "gcc", "clang"].find((c) => {
    try {
      return new Deno.Command(c, { args: ["--version"], stdout: "null", stderr: "null" })
        .outputSync().success;
    } catch {
      return false;
    }
  });
}

/**
 * Builds the fake driver into `dir` with the first C compiler found.
 *
 * @param dir The directory.
 * @returns The library's path, or null when no C compiler exists.
 */
export async function buildFakeDriver(dir: string): Promise<string | null> {
  const cc = cCompiler();
  if (cc === undefined) return null;
  const lib = `${dir}/libfakecuda.so`;
  const src = new URL("testdata/fake_libcuda.c", import.meta.url).pathname;
  const built = await new Deno.Command(cc, {
    args: ["-shared", "-fPIC", "-O1", "-o", lib, src],
    stderr: "piped",
  }).output();
  assert.ok(built.success, dec.decode(built.stderr));
  return lib;
}

/**
 * Runs `deno ARGS` in the repository with the fake driver as libcuda.
 *
 * @param lib The fake driver ({@link buildFakeDriver}).
 * @param args Deno's arguments (`run -A bench/x.ts ...`, `test -A ...`).
 * @returns The exit code and the child's stdout and stderr.
 */
export async function runWithFakeDriver(
  lib: string,
  args: readonly string[],
): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: [...args],
    cwd: ROOT.pathname,
    env: { NO_COLOR: "1", GEMMC_LIBCUDA: lib },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

/**
 * Builds the fake driver and runs `tests/gpu/testdata/<check>` against it;
 * fails the test with the child's output unless it succeeds.
 *
 * @returns The child's stdout and stderr, or null when no C compiler exists.
 */
export async function runFakeDriverCheck(
  t: Deno.TestContext,
  check: string,
): Promise<string | null> {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_fake_cuda_" });
  try {
    const lib = await buildFakeDriver(dir);
    if (lib === null) {
      await t.step({ name: "skipped: no C compiler", ignore: true, fn: () => {} });
      return null;
    }
    const { code, out } = await runWithFakeDriver(lib, [
      "test",
      "-A",
      `tests/gpu/testdata/${check}`,
    ]);
    assert.equal(code, 0, out);
    return out;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
