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
import { compile, type CompiledKernel } from "../../compiler.ts";
import { gemmWithEnv } from "../_cli.ts";
import {
  CLUSTER_CASES,
  CLUSTER_N_CASES,
  PINGPONG_CASES,
  STREAM_K_CASES,
  type StreamKCase,
  WGMMA_CASES,
  WGMMA_GROUPED_CASES,
} from "../testdata/wgmma_cases.ts";
import { runGemm } from "../../harness/run_gemm.ts";

const CUDA = cudaAvailable();
/** sm_90a code runs only on sm_90 itself. */
const HOPPER = CUDA.ok && (() => {
  using cuda = Cuda.open();
  return cuda.device.arch === "sm_90";
})();
const SKIP = HOPPER ? "" : CUDA.ok ? " (skipped: not an sm_90 GPU)" : " (skipped: no CUDA driver)";

/** Compiles `src` for sm90 (checking it runs wgmma), writes it out, and runs `gemm run
 * --target sm90` on it with `args` (`--check sim` and the iterations included). */
async function runSm90(src: string, args: readonly string[]) {
  const r = compile(src, { target: "sm90" });
  assert.ok(r.ok, JSON.stringify(r.diagnostics));
  assert.notEqual(r.kernels[0]!.planned.plan.mma!.wgmma, undefined);
  const file = `${Deno.makeTempDirSync()}/wg.gemm`;
  Deno.writeTextFileSync(file, src);
  const out = await gemmWithEnv(["run", file, "--target", "sm90", ...args, "--check", "sim"], {});
  assert.equal(out.code, 0, out.stdout + out.stderr);
  return out;
}

for (const c of WGMMA_CASES) {
  Deno.test({
    name: `wgmma ${c.name} (${c.size}): gemm run --target sm90 agrees with the reference and ` +
      `the simulator${SKIP}`,
    ignore: !HOPPER,
    fn: async () => {
      const out = await runSm90(c.src, ["--size", c.size, "--iters", "3"]);
      assert.match(out.stdout, /AGREES with the reference and the simulator/);
    },
  });
}

for (const c of WGMMA_GROUPED_CASES) {
  Deno.test({
    name: `wgmma ${c.name}: gemm run --target sm90 --groups agrees for every problem${SKIP}`,
    ignore: !HOPPER,
    fn: async () => {
      const out = await runSm90(c.src, ["--groups", c.groups, "--iters", "2"]);
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

/**
 * A persistent-kernel case on the GPU: compiled for sm90 on the case's SMs, `plan` checks its
 * plan, then it runs twice and agrees with the reference and the simulator (integer D bit for
 * bit); `grid` checks the launch's grid.
 */
function persistentCase(
  name: string,
  c: StreamKCase,
  plan: (ck: CompiledKernel) => void,
  grid: (g: readonly number[]) => void,
): void {
  Deno.test({
    name: `${name} ${c.name}: agrees with the reference and the simulator${SKIP}`,
    ignore: !HOPPER,
    fn: () => {
      const r = compile(c.src, { target: "sm90", sms: c.sms });
      assert.ok(r.ok, JSON.stringify(r.diagnostics));
      const ck = r.kernels[0]!;
      plan(ck);
      using cuda = Cuda.open();
      const rep = runGemm(ck, c.sizes, { seed: 9, check: "sim", iters: 2, cuda });
      grid(rep.grid);
      assert.ok(rep.ok, JSON.stringify({ ref: rep.reference, sim: rep.sim }).slice(0, 600));
      if (!/D: (bf16|f16|f32)/.test(c.src)) assert.equal(rep.sim!.differing, 0);
    },
  });
}

const tma = (ck: CompiledKernel) => ck.planned.plan.pipeline!.tma!;
for (const c of STREAM_K_CASES) {
  persistentCase(
    "stream-K",
    c,
    (ck) => assert.notEqual(tma(ck).persistent!.streamK, undefined),
    (g) => assert.deepEqual(g, [Math.min(c.sms, g[0]!), 1, 1]),
  );
}
for (
  const [c, shape] of [
    ...CLUSTER_CASES.map((c) => [c, "2"] as const),
    ...CLUSTER_N_CASES.map((c) => [c, "1x2"] as const),
  ]
) {
  persistentCase(
    `cluster ${shape}`,
    c,
    (ck) => assert.equal(ck.kernel.cluster, 2),
    (g) => assert.equal(g[0]! % 2, 0),
  );
}
for (const c of PINGPONG_CASES) {
  persistentCase(
    "pingpong",
    c,
    (ck) => assert.notEqual(tma(ck).persistent!.pingPong, undefined),
    () => {},
  );
}

/** A persistent kernel of type `t` with schedule line `sched` on 132 SMs at 2000x2104x1000: it
 * agrees with the reference, fills the grid, and writes the same bytes in two runs. */
function sameBytesTwice(t: string, sched: string): void {
  const src = `kernel k {\n  A: ${t}[M, K] row\n  B: ${t}[K, N] col\n  D: ${t}[M, N] row\n` +
    `  D[m, n] = ${t}(A[m, k] * B[k, n])\n  schedule { ${sched} }\n}\n`;
  const r = compile(src, { target: "sm90", sms: 132 });
  assert.ok(r.ok);
  const ck = r.kernels[0]!;
  using cuda = Cuda.open();
  const sizes = { M: 2000, N: 2104, K: 1000 };
  const a = runGemm(ck, sizes, { seed: 4, iters: 3, cuda });
  const b = runGemm(ck, sizes, { seed: 4, iters: 5, cuda });
  assert.deepEqual(a.grid, [132, 1, 1]);
  assert.ok(a.ok && b.ok, JSON.stringify(a.reference));
  assert.deepEqual(a.output, b.output);
}

Deno.test({
  name:
    `cluster 2 on 132 SMs: f16 2000x2104x1000 (8 x 9 units) agrees, the same bytes twice${SKIP}`,
  ignore: !HOPPER,
  fn: () => sameBytesTwice("f16", "cluster 2"),
});

Deno.test({
  name: `stream-K on 132 SMs: bf16 2000x2104x1000 (144 tiles) agrees, the same bytes twice${SKIP}`,
  ignore: !HOPPER,
  fn: () => sameBytesTwice("bf16", "scheduler stream_k"),
});
