/**
 * The C example on the GPU (examples/c): build.sh compiles kernels.gemm into
 * one C file with `gemm compile --emit c` and main.c against it with gcc and
 * libcuda; the program runs hgemm, an s8 kernel and a split-K kernel on
 * random inputs and compares them with its CPU reference. Skipped visibly
 * without a CUDA driver (and under the fake driver, which runs no kernel).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { cudaAvailable } from "../../backends/cuda/driver.ts";

const HERE = new URL("../../examples/c/", import.meta.url).pathname;
const CUDA = cudaAvailable();
const FAKE = Deno.env.get("GEMMC_LIBCUDA") !== undefined;
const why = !CUDA.ok ? " (skipped: no CUDA driver)" : FAKE ? " (skipped: GEMMC_LIBCUDA)" : "";

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test({
  name: `examples/c: built with gcc against libcuda, hgemm, s8 and split-K agree with C${why}`,
  ignore: why !== "",
  fn: async () => {
    const out = await Deno.makeTempDir({ prefix: "gemmc_cexample_" });
    const b = await run("sh", [join(HERE, "build.sh")], {
      DENO: Deno.execPath(),
      DENO_FLAGS: "--cached-only", // the test run has every module already
      OUT: out,
    });
    assert.equal(b.code, 0, `build.sh failed:\n${b.stdout}${b.stderr}`);
    const r = await run(join(out, "gemm_example"), []);
    const all = r.stdout + r.stderr;
    assert.equal(r.code, 0, all);
    for (const k of ["hgemm", "igemm_s8", "skinny_splitk", "experts"]) {
      assert.match(r.stdout, new RegExp(`^${k} +max error \\S+ +PASS$`, "m"), all);
    }
    assert.match(r.stdout, /Tensor "A" declares align 16 but its leading dimension K=100/, all);
    assert.match(r.stdout, /^PASS$/m, all);
  },
});
