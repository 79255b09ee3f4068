/**
 * Structured-sparse A on the GPU (DESIGN §6.3, issue 21): a kernel of every sparse
 * type (epilogues, sizes that are not tile multiples, literal and runtime K), each
 * smaller `mma.sp` shape, split-K and a batch, run through `runGemm` on random
 * sparse inputs (kept values and canonical metadata, harness/inputs.ts) with D
 * poisoned. Each must agree with the reference (the decompressed A's product), write
 * every element of D, and agree with the simulator on the whole grid (integers bit
 * for bit). On an sm_90 GPU, the sm90 kernels compiled with `pdl` that read A (with its
 * metadata), B or both before their wait (compile option `pdlEarly`). Where no CUDA driver loads
 * these tests are listed as ignored, "(skipped: no CUDA driver)"; the sm90 ones elsewhere too.
 */

import assert from "node:assert/strict";
import { compile, type CompileOptions } from "../../compiler.ts";
import { runGemm } from "../../harness/run_gemm.ts";
import { Cuda, cudaAvailable } from "../../backends/cuda/driver.ts";
import { program, sparseSizes, TYPES } from "../_sparse.ts";

const CUDA = cudaAvailable();
const SKIP = CUDA.ok ? "" : " (skipped: no CUDA driver)";

/** A GPU test: runs where the driver loads, listed as skipped elsewhere. */
function gpuTest(name: string, fn: () => void | Promise<void>): void {
  Deno.test({ name: `${name}${SKIP}`, ignore: !CUDA.ok, fn });
}

function runAndCheck(
  src: string,
  sizes: Record<string, number>,
  integer: boolean,
  options: CompileOptions = {},
): void {
  const r = compile(src, { file: "sparse.gemm", ...options });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  const rep = runGemm(ck, sizes, { seed: 21, iters: 0, check: "sim", scalars: { alpha: 0.75 } });
  const where = `${ck.name} at ${JSON.stringify(rep.sizes)}`;
  const ref = rep.reference!;
  assert.ok(
    ref.comparison.ok,
    `${where}: ${ref.comparison.overBound} over the bound; first ${JSON.stringify(ref.first)}`,
  );
  assert.equal(rep.unwritten ?? 0, 0, `${where}: unwritten elements`);
  const sim = rep.sim!;
  assert.equal(sim.blocks, sim.totalBlocks, `${where}: the whole grid simulated`);
  assert.equal(sim.hazardCount, 0, `${where}: hazards`);
  if (integer) assert.ok(sim.identical, `${where}: not bit-identical to the simulator`);
  assert.ok(rep.ok, `${where}: not ok`);
}

for (const [a, d, K] of TYPES) {
  gpuTest(`sparse on the GPU: ${a} -> ${d}, K ${K}, epilogue`, () => {
    runAndCheck(program(`gpu_${a}`, a, d, K), sparseSizes(a, K), d === "s32");
  });
}

const SCHEDULES: readonly (readonly [string, string, string, string])[] = [
  ["f16", "f32", "96", "threadblock 64x64x64\n    warp 32x32x64\n    mma 16x8x16"],
  ["f32", "f32", "80", "threadblock 64x64x32\n    warp 32x32x32\n    mma 16x8x8"],
  ["s8", "s32", "192", "threadblock 64x128x64\n    warp 32x64x64\n    mma 16x8x32"],
  ["s4", "s32", "384", "threadblock 64x64x128\n    warp 32x32x128\n    mma 16x8x64"],
  ["bf16", "f32", "1024", "split_k 3"],
];

for (const [a, d, K, sched] of SCHEDULES) {
  gpuTest(`sparse on the GPU: ${a}, ${sched.split("\n").at(-1)!.trim()}`, () => {
    const src = program(`gpus_${a}`, a, d, K, `  schedule {\n    ${sched}\n  }\n`);
    runAndCheck(src, { M: 70, N: 100 }, d === "s32");
  });
}

gpuTest("sparse on the GPU: batched f16, runtime K", () => {
  const src = "kernel batched {\n  A: f16[L, M, K] row sparse\n  B: f16[L, K, N] col\n" +
    "  D: f32[L, M, N]\n  D[l, m, n] = A[l, m, k] * B[l, k, n]\n}\n";
  runAndCheck(src, { L: 3, M: 130, N: 72, K: 208 }, false);
});

/** sm90's kernels (sm_90a) run only on sm_90 itself. */
const HOPPER = CUDA.ok && (() => {
  using cuda = Cuda.open();
  return cuda.device.arch === "sm_90";
})();

// The compile option pdlEarly (passes/lower/early.ts): the named operand (A's kept values with
// its metadata words, or B) copied before griddepcontrol.wait. One launch (no grid before
// it, so the wait returns at once): the early copies' bounds and stages against the reference
// and the simulator, odd sizes (M, N past the tile, K past the k-tile).
for (const early of [["A"], ["B"], ["A", "B"]]) {
  Deno.test({
    name: `sparse on the GPU: sm90 f16 with pdl, ${early.join(" and ")} before the wait` +
      (HOPPER ? "" : CUDA.ok ? " (skipped: not an sm_90 GPU)" : SKIP),
    ignore: !HOPPER,
    fn: () => {
      const src = program("gpu_early", "f16", "f32", "208");
      runAndCheck(src, { M: 70, N: 100 }, false, {
        target: "sm90",
        sms: 132,
        pdl: true,
        pdlEarly: early,
      });
    },
  });
}
