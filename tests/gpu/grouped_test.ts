/**
 * Grouped launches from Deno (DESIGN §6.2; backends/cuda/grouped.ts,
 * `LoadedKernel.groupedLaunch`, harness/run_gemm.ts `runGrouped`, `gemm run --groups`).
 *
 * Everywhere (when a C compiler exists): the API end to end against the fake
 * libcuda (testdata/fake_grouped_check.ts, in a child process): the table's
 * bytes, the persistent grid, per-problem violations, the mixture-of-experts
 * addresses. On the GPU (listed as skipped without a driver): bf16 and s8
 * grouped kernels over problems of tiny, zero and odd sizes agree with the
 * reference (s8: identical to the simulator's run of the same launch), the
 * mixture-of-experts form agrees expert by expert, and `gemm run --groups`.
 */

import assert from "node:assert/strict";
import { runFakeDriverCheck } from "./_fake_driver.ts";
import { compile, type CompiledKernel } from "../../compiler.ts";
import { Cuda, cudaAvailable } from "../../backends/cuda/driver.ts";
import { loadKernel, moeProblems } from "../../backends/cuda/kernel.ts";
import { runGrouped } from "../../harness/run_grouped.ts";
import { randomArgs } from "../../harness/inputs.ts";
import { referenceGemm } from "../../harness/reference.ts";
import { compareOutput } from "../../harness/compare.ts";
import { poisonByte } from "../../harness/checks.ts";
import { Rng } from "../../numerics/random.ts";
import { gemmWithEnv } from "../_cli.ts";

const CUDA = cudaAvailable();
const SKIP = CUDA.ok ? "" : " (skipped: no CUDA driver)";

function gpuTest(name: string, fn: () => void | Promise<void>): void {
  Deno.test({ name: `${name}${SKIP}`, ignore: !CUDA.ok, fn });
}

function kernel(src: string): CompiledKernel {
  const r = compile(src);
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/** bf16, any size (align 1), alpha: odd N and K too. */
const BF16_ANY = `kernel experts grouped {
  X: bf16[M, K] row align 1
  W: bf16[K, N] col align 1
  Y: bf16[M, N] row align 1
  alpha: f32 = 1.0
  Y[m, n] = alpha * X[m, k] * W[k, n]
  schedule {
    threadblock 64x64x32
    warp 32x32x32
  }
}`;

/** DESIGN §6.2's kernel (default alignment: K and N multiples of 8). */
const BF16 = `kernel experts grouped {
  X: bf16[M, K] row
  W: bf16[K, N] col
  Y: bf16[M, N] row
  Y[m, n] = X[m, k] * W[k, n]
}`;

/** s8 x s8 -> s32: the simulator's output must be identical. */
const S8 = `kernel s8e grouped {
  A: s8[M, K] row
  B: s8[K, N] col
  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    threadblock 64x64x64
    warp 32x32x64
  }
}`;

Deno.test("grouped launches against a fake libcuda (C), end to end", async (t) => {
  const out = await runFakeDriverCheck(t, "fake_grouped_check.ts");
  if (out !== null) assert.match(out, /ok \| \d+ passed \| 0 failed/);
});

/** Random problems: tiny, zero and odd M, with N and K from `n` and `k`. */
function randomGroups(
  rng: Rng,
  count: number,
  n: () => number,
  k: () => number,
): Record<string, number>[] {
  const ms = [1, 0, 7, 129, 0, 3, 64, 65];
  return Array.from({ length: count }, (_, i) => ({
    M: i < ms.length ? ms[i]! : Math.floor(rng.next() * 100),
    N: n(),
    K: k(),
  }));
}

gpuTest("bf16 grouped kernels: every problem agrees with the reference (simulator too)", () => {
  const rng = new Rng(41);
  using cuda = Cuda.open();
  const odd = () => 1 + Math.floor(rng.next() * 90);
  for (
    const [src, n, k] of [
      [BF16_ANY, odd, odd],
      [
        BF16,
        () => 8 * (1 + Math.floor(rng.next() * 10)),
        () => 8 * (1 + Math.floor(rng.next() * 10)),
      ],
    ] as const
  ) {
    const ck = kernel(src);
    const groups = randomGroups(rng, 10, n, k);
    // A problem with K = 0 too: D = 0 (alpha times an empty sum).
    groups.push({ M: 9, N: groups[0]!.N!, K: 0 });
    const rep = runGrouped(ck, groups, { seed: 7, check: "sim", iters: 0, cuda });
    for (const [i, p] of rep.problems.entries()) {
      assert.ok(
        p.ok,
        `${ck.name} problem ${i} ${JSON.stringify(p.sizes)}: ${JSON.stringify(p.reference)} ` +
          `unwritten ${p.unwritten}`,
      );
      assert.equal(p.unwritten ?? 0, 0);
    }
    assert.ok(rep.ok);
    assert.equal(rep.simHazards, 0);
    assert.ok(rep.grid[0] >= 1 && rep.grid[0] <= rep.totalTiles);
    // Few blocks: each takes tiles of several problems.
    const few = runGrouped(ck, groups, { seed: 8, blocks: 2, iters: 0, cuda });
    assert.deepEqual(few.grid, [2, 1, 1]);
    assert.ok(few.ok, JSON.stringify(few.problems.map((p) => p.reference?.overBound)));
  }
});

gpuTest("s8 grouped kernel: every problem identical to the simulator's", () => {
  const rng = new Rng(43);
  const ck = kernel(S8);
  using cuda = Cuda.open();
  const groups = randomGroups(
    rng,
    10,
    () => 4 * (1 + Math.floor(rng.next() * 40)),
    () => 16 * (1 + Math.floor(rng.next() * 8)),
  );
  const rep = runGrouped(ck, groups, { seed: 3, check: "sim", iters: 0, cuda });
  assert.ok(rep.ok);
  for (const [i, p] of rep.problems.entries()) {
    assert.ok(p.reference!.ok, `problem ${i}`);
    assert.equal(p.sim!.differing, 0, `problem ${i}: identical to the simulator`);
    assert.equal(p.sim!.maxUlp, null);
    assert.equal(p.sim!.compared, p.sizes.M! * p.sizes.N!);
  }
});

gpuTest("the mixture-of-experts form: each expert's rows agree with the reference", () => {
  const ck = kernel(BF16);
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const [N, K] = [72, 48];
  const counts = [0, 5, 130, 0, 1, 64, 0, 17];
  const E = counts.length;
  const offs = counts.map((_, i) => counts.slice(0, i + 1).reduce((a, b) => a + b, 0));
  const T = offs[E - 1]!;
  // One problem's inputs per expert, packed: A's rows one after another, B's matrices too.
  const per = counts.map((M, g) => randomArgs(ck.gemm, { M, N, K }, 100 + g));
  const a = new Uint8Array(T * K * 2);
  const b = new Uint8Array(E * N * K * 2);
  per.forEach((args, g) => {
    a.set(args.tensors.get("X")!, (g === 0 ? 0 : offs[g - 1]!) * K * 2);
    b.set(args.tensors.get("W")!, g * N * K * 2);
  });
  const aBuf = cuda.alloc(a.byteLength);
  aBuf.upload(a);
  const bBuf = cuda.alloc(b.byteLength);
  bBuf.upload(b);
  const dBuf = cuda.alloc(T * N * 2);
  dBuf.fill(poisonByte("bf16"));
  using g = k.groupedLaunch(
    moeProblems(ck.manifest, { a: aBuf, b: bBuf, d: dBuf, offs, sizes: { N, K } }),
  );
  g.launch();
  cuda.synchronize();
  const d = dBuf.download();
  per.forEach((args, e) => {
    const start = e === 0 ? 0 : offs[e - 1]!;
    const rows = d.slice(start * N * 2, offs[e]! * N * 2);
    const c = compareOutput(rows, "bf16", referenceGemm(ck.gemm, args));
    assert.ok(c.ok, `expert ${e} (${counts[e]} rows): ${c.overBound} over`);
  });
  assert.ok(!d.every((x) => x === poisonByte("bf16")) || T === 0);
});

gpuTest("gemm run --groups: every problem checked, the simulator too", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_grouped_" });
  try {
    const file = `${dir}/s8e.gemm`;
    await Deno.writeTextFile(file, S8);
    const r = await gemmWithEnv([
      "run",
      file,
      "--groups",
      "M=77,N=64,K=32;M=0,N=64,K=32;M=1,N=8,K=16;M=130,N=132,K=64",
      "--check",
      "sim",
      "--iters",
      "2",
    ], {});
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /s8e: AGREES \(4 problems\) with the reference and the simulator/);
    assert.match(r.stdout, /problem 1 \(M=0[^)]*; 0 tiles\): agrees/);
    assert.match(r.stdout, /simulator: identical/);
    // --size for a grouped kernel is a usage error.
    const bad = await gemmWithEnv(["run", file, "--size", "M=8,N=8,K=16"], {});
    assert.equal(bad.code, 2, bad.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
