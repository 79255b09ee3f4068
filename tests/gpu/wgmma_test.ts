/**
 * sm90's warpgroup MMA kernels (passes/wgmma.ts, issue 23) on the GPU: `gemm run --target
 * sm90 --check sim` for every wgmma type at sizes that are not tile multiples, with
 * epilogues that read C and a bias, and with split-K, agrees with the reference and the
 * simulator (integers bit for bit); so does `gemm run --target sm90 --groups` for grouped
 * programs of each type (tiny, empty, odd and multi-tile problems in one launch). Each
 * program is first checked to compile to wgmma.
 * Listed as skipped without a CUDA driver (or on a GPU older than sm_90).
 *
 * @module
 */

import assert from "node:assert/strict";
import { Cuda, cudaAvailable } from "../../backends/cuda/driver.ts";
import { compile } from "../../compiler.ts";
import { gemmWithEnv } from "../_cli.ts";
import { WGMMA_CASES, WGMMA_GROUPED_CASES } from "../testdata/wgmma_cases.ts";

const CUDA = cudaAvailable();
/** sm_90a code runs only on sm_90 itself. */
const HOPPER = CUDA.ok && (() => {
  using cuda = Cuda.open();
  return cuda.device.arch === "sm_90";
})();
const SKIP = HOPPER ? "" : CUDA.ok ? " (skipped: not an sm_90 GPU)" : " (skipped: no CUDA driver)";

for (const c of WGMMA_CASES) {
  Deno.test({
    name: `wgmma ${c.name} (${c.size}): gemm run --target sm90 agrees with the reference and ` +
      `the simulator${SKIP}`,
    ignore: !HOPPER,
    fn: async () => {
      const r = compile(c.src, { target: "sm90" });
      assert.ok(r.ok, JSON.stringify(r.diagnostics));
      assert.notEqual(r.kernels[0]!.planned.plan.mma!.wgmma, undefined);
      const dir = Deno.makeTempDirSync();
      const file = `${dir}/wg.gemm`;
      Deno.writeTextFileSync(file, c.src);
      const out = await gemmWithEnv(
        ["run", file, "--target", "sm90", "--size", c.size, "--check", "sim", "--iters", "3"],
        {},
      );
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.match(out.stdout, /AGREES with the reference and the simulator/);
    },
  });
}

for (const c of WGMMA_GROUPED_CASES) {
  Deno.test({
    name: `wgmma ${c.name}: gemm run --target sm90 --groups agrees for every problem${SKIP}`,
    ignore: !HOPPER,
    fn: async () => {
      const r = compile(c.src, { target: "sm90" });
      assert.ok(r.ok, JSON.stringify(r.diagnostics));
      assert.notEqual(r.kernels[0]!.planned.plan.mma!.wgmma, undefined);
      const dir = Deno.makeTempDirSync();
      const file = `${dir}/wg.gemm`;
      Deno.writeTextFileSync(file, c.src);
      const out = await gemmWithEnv(
        ["run", file, "--target", "sm90", "--groups", c.groups, "--check", "sim", "--iters", "2"],
        {},
      );
      assert.equal(out.code, 0, out.stdout + out.stderr);
      const n = c.groups.split(";").length;
      assert.match(
        out.stdout,
        new RegExp(`AGREES \\(${n} problems\\) with the reference and the simulator`),
      );
      // Integer outputs: every problem identical to the simulator's.
      if (/D: s32/.test(c.src)) assert.match(out.stdout, /simulator: identical/);
    },
  });
}
