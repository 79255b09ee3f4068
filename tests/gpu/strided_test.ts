/**
 * Strided views on the GPU (../shared/DESIGN.md §6.1): strided and batch-strided
 * kernels (B broadcast by batch stride 0) of several operand types, run through
 * `runGemm` on random inputs whose gaps are poisoned, at sizes that are not tile
 * multiples with non-dense strides. Each must agree with the reference, write
 * every element of D's view and none of its gaps, and agree with the simulator
 * on the whole grid (integers bit for bit). Where no CUDA driver loads these
 * tests are listed as ignored, "(skipped: no CUDA driver)".
 */

import assert from "node:assert/strict";
import { compile } from "../../compiler.ts";
import { runGemm } from "../../harness/run_gemm.ts";
import { cudaAvailable } from "../../backends/cuda/driver.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { FAMILIES, program, stridedSizes } from "../_strided.ts";

const CUDA = cudaAvailable();
const SKIP = CUDA.ok ? "" : " (skipped: no CUDA driver)";

/** A GPU test: runs where the driver loads, listed as skipped elsewhere. */
function gpuTest(name: string, fn: () => void | Promise<void>): void {
  Deno.test({ name: `${name}${SKIP}`, ignore: !CUDA.ok, fn });
}

for (const name of ["f16", "bf16", "tf32", "f64", "s8", "u4", "b1"]) {
  const f = FAMILIES[name]!;
  for (const batched of [false, true]) {
    gpuTest(`strided on the GPU: ${name}${batched ? ", batched, B broadcast" : ""}`, () => {
      const r = compile(program(f, batched), { file: "strided.gemm" });
      assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
      const ck = r.kernels[0]!;
      const rep = runGemm(ck, stridedSizes(f, batched), { seed: 11, iters: 0, check: "sim" });
      const where = `${ck.name} at ${JSON.stringify(rep.sizes)}`;
      const ref = rep.reference!;
      assert.ok(
        ref.comparison.ok,
        `${where}: ${ref.comparison.overBound} elements over the bound; first ${
          JSON.stringify(ref.first)
        }`,
      );
      assert.equal(rep.unwritten ?? 0, 0, `${where}: unwritten elements`);
      assert.equal(rep.gapWrites, 0, `${where}: writes outside D's view`);
      const sim = rep.sim!;
      assert.equal(sim.blocks, sim.totalBlocks, `${where}: the whole grid simulated`);
      assert.equal(sim.hazardCount, 0, `${where}: hazards`);
      if (!DTYPE_INFO[f.d].float) assert.ok(sim.identical, `${where}: not bit-identical`);
      assert.ok(rep.ok, `${where}: not ok`);
    });
  }
}
