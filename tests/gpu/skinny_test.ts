/**
 * The skinny schedules (passes/skinny.ts, issue 22) on the GPU: `gemm run --tune` at odd sizes
 * that make the rule choose each family (16-row tiles with and without split-K, 16x112, 64- and
 * 128-row tiles; s8's 16x32x256, 16x112x256 and 128x112x128) agrees with the reference and the
 * simulator; a split-K choice launched again and again on the same inputs writes the same bytes
 * every time. Listed as skipped without a CUDA driver.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Cuda, cudaAvailable } from "../../backends/cuda/driver.ts";
import { loadKernel } from "../../backends/cuda/kernel.ts";
import { compile } from "../../compiler.ts";
import { referenceCheck } from "../../harness/checks.ts";
import { randomArgs } from "../../harness/inputs.ts";
import { tensorParam } from "../../ir/gemm.ts";
import { gemmWithEnv } from "../_cli.ts";

const CUDA = cudaAvailable();
const SKIP = CUDA.ok ? "" : " (skipped: no CUDA driver)";

/** The skinny kernel with a bias and a relu; s8 stores its s32 sums (bias s32). */
const SRC = (t: string) => {
  const s8 = t === "s8";
  const sum = "relu(A[m, k] * B[k, n] + bias[n])";
  return `kernel sk {
  A: ${t}[M, K] row
  B: ${t}[K, N] col
  bias: ${s8 ? "s32" : "f32"}[N]
  D: ${s8 ? "s32" : t}[M, N] row
  D[m, n] = ${s8 ? sum : `${t}(${sum})`}
}
`;
};

/** A run on the sm90 target. */
const sm90 = (type: string, size: string, expect: RegExp) =>
  ({ type, size, expect, target: "sm90" }) as const;

const RUNS: readonly { type: string; size: string; expect: RegExp; target?: "sm90" }[] = [
  { type: "f16", size: "M=7,N=4088,K=4136", expect: /16x32x256/ },
  { type: "bf16", size: "M=1,N=4096,K=14344", expect: /16x64x128/ },
  { type: "f16", size: "M=33,N=4096,K=4104", expect: /64x64x128/ },
  { type: "bf16", size: "M=100,N=14336,K=4096", expect: /128x128x64/ },
  { type: "f16", size: "M=128,N=4000,K=14336", expect: /64x128x128/ },
  { type: "s8", size: "M=9,N=4096,K=4112", expect: /16x32x256/ },
  { type: "s8", size: "M=100,N=14336,K=4096", expect: /128x112x128/ },
  // 16x112 on two warps of 16x56 where it makes more blocks in one wave than 16x128 (NOTES 101);
  // N and K short of a tile.
  { type: "f16", size: "M=9,N=14328,K=4104", expect: /16x112x128/ },
  { type: "s8", size: "M=5,N=14320,K=4112", expect: /16x112x256/ },
  // sm90's wgmma tiles (passes/skinny.ts skinnyWgmmaSchedule): unsplit at a wide N, split 4
  // at a long K; K not a multiple of 64.
  sm90("bf16", "M=100,N=14336,K=4096", /128x128x64 split 1/),
  sm90("f16", "M=200,N=14336,K=4104", /128x128x64 split 1/),
  sm90("f16", "M=200,N=2048,K=14344", /128x128x64 split 4/),
  // The narrower tiles where neither fills the SMs (bench/NOTES.md 73), deep pipelines; 64x64
  // on clusters of 2, ahead of a split K (NOTES 76).
  sm90("f16", "M=250,N=4096,K=4104", /128x64x64 split 1 cluster 1/),
  // 16-bit at M = 65-128: 64x64 on clusters of 2 at every K (NOTES 92; 128x32 below K = 8192
  // before, NOTES 86).
  sm90("bf16", "M=97,N=4072,K=4096", /64x64x64 split 1 cluster 2/),
  sm90("f16", "M=128,N=4096,K=6152", /64x64x64 split 1 cluster 2/),
  sm90("f16", "M=128,N=4000,K=14344", /64x64x64 split 1 cluster 2/),
  // M = 33-64: 64x32 in one wave (NOTES 79).
  sm90("f16", "M=50,N=4072,K=4104", /64x32x64 split 1 cluster 1/),
  sm90("bf16", "M=64,N=4096,K=14336", /64x32x64 split 1/),
  // s8 at M = 65-128: persistent 128x32x128 below K = 8192, 64x64x128 on clusters of 2 from
  // there (NOTES 79, 85); rows and columns short of a tile.
  sm90("s8", "M=100,N=4096,K=4112", /128x32x128 split 1 cluster 1/),
  sm90("s8", "M=77,N=4064,K=6160", /128x32x128 split 1 cluster 1/),
  sm90("s8", "M=100,N=4096,K=14352", /64x64x128 split 1 cluster 2/),
];

/** The run's pick at its sizes as hints on 132 SMs, checked against its `expect`. */
function checkPick(r: (typeof RUNS)[number]): void {
  const sizes = Object.fromEntries(r.size.split(",").map((kv) => kv.split("=")));
  const hints = Object.fromEntries(Object.entries(sizes).map(([k, v]) => [k, Number(v)]));
  const target = r.target ?? "sm80";
  const ck = compile(SRC(r.type), { sizeHints: hints, sms: 132, target }).kernels[0]!;
  const tb = ck.planned.schedule.threadblock!;
  const cluster = ck.kernel.cluster ?? 1;
  assert.match(
    `${tb.m}x${tb.n}x${tb.k} split ${ck.planned.schedule.splitK} cluster ${cluster}`,
    r.expect,
  );
  const plan = ck.planned.plan.tile!;
  assert.equal(r.target === undefined ? plan.skinny !== undefined : plan.wgmma === true, true);
}

// The picks without a GPU too, so that a rule change that leaves this table behind fails in CI
// (e494d92 moved M = 65-128 to 64x64 and only the H100's run of this file found two stale rows).
Deno.test("skinny GPU runs: each run's size picks the schedule it is listed for", () => {
  for (const r of RUNS) checkPick(r);
});

for (const r of RUNS) {
  Deno.test({
    name: `skinny ${r.type} ${r.size}${
      r.target === undefined ? "" : ` ${r.target}`
    }: gemm run --tune agrees with the reference and the simulator${SKIP}`,
    ignore: !CUDA.ok,
    fn: async () => {
      const dir = Deno.makeTempDirSync();
      const file = `${dir}/sk_${r.type}.gemm`;
      Deno.writeTextFileSync(file, SRC(r.type));
      const target = r.target ?? "sm80";
      checkPick(r);
      const out = await gemmWithEnv(
        [
          ...["run", file, "--size", r.size, "--tune", "--sms", "132", "--target", target],
          ...["--check", "sim", "--iters", "3"],
        ],
        {},
      );
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.match(out.stdout, /AGREES with the reference and the simulator/);
    },
  });
}

Deno.test({
  name: `skinny split-K: the same inputs give the same bytes launch after launch${SKIP}`,
  ignore: !CUDA.ok,
  fn: () => {
    const r = compile(SRC("f16"), { sizeHints: { M: 64, N: 4096, K: 4096 }, sms: 132 });
    const ck = r.kernels[0]!;
    assert.equal(ck.planned.schedule.splitK, 2);
    using cuda = Cuda.open();
    using k = loadKernel(ck, { cuda });
    const sizes = { M: 33, N: 4096, K: 4104 };
    const args = randomArgs(ck.gemm, sizes, 9);
    const bufs: Record<string, ReturnType<Cuda["alloc"]>> = {};
    for (const [n, bytes] of args.tensors) {
      bufs[n] = cuda.alloc(bytes.byteLength);
      bufs[n].upload(bytes);
    }
    const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor).name;
    let first: Uint8Array | null = null;
    for (let i = 0; i < 5; i++) {
      bufs[d]!.fill(0xff);
      k.launch(bufs, sizes);
      cuda.synchronize();
      const out = bufs[d]!.download();
      if (first === null) {
        first = out;
        const ref = referenceCheck(ck.gemm, args, out, null);
        assert.ok(ref.comparison.ok, `${ref.comparison.overBound} over the bound`);
      } else assert.deepEqual(out, first, `launch ${i}`);
    }
    for (const b of Object.values(bufs)) b.free();
  },
});
