/**
 * Strided views (../shared/DESIGN.md §6.1): the checker's forms, the ABI and
 * manifest, and the simulator against the reference for strided and
 * batch-strided programs of every operand type (batch stride 0 broadcasting B),
 * at sizes that are not tile multiples and strides that are not dense; inputs
 * with poisoned gaps, D's gaps checked untouched. Mutations: a kernel lowered
 * without the strides must fail on strided inputs, reading and writing.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { simArgs } from "../harness/simulate_gemm.ts";
import { randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { compareOutput, gapWrites } from "../harness/compare.ts";
import { resolveSizes, strideViolations } from "../harness/sizes.ts";
import { simulate } from "../backends/sim/mod.ts";
import { gridFor } from "../ir/kernel.ts";
import { tensorParam } from "../ir/gemm.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { FAMILIES, program, stridedSizes } from "./_strided.ts";
import { ptxasTest } from "./_ptxas.ts";

function one(src: string): CompiledKernel {
  const r = compile(src, { file: "strided.gemm" });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

Deno.test("strides: the IR, the ABI order and the manifest", () => {
  const ck = one(`kernel k {
  X: bf16[L, M, K] row strides(sx, ldx)
  W: bf16[L, K, N] col strides(0, ldw)
  bias: f32[L, N] strides(0)
  Y: f32[L, M, N] row strides(sy, N)
  alpha: f32
  Y[b, m, n] = alpha * X[b, m, k] * W[b, k, n] + bias[b, n]
}`);
  assert.deepEqual(ck.gemm.strides, ["sx", "ldx", "ldw", "sy"]);
  assert.deepEqual(
    ck.manifest.params.map((p) => `${p.name}:${p.kind}:${p.ptx}`),
    [
      "X:tensor:u64",
      "W:tensor:u64",
      "bias:tensor:u64",
      "Y:tensor:u64",
      "L:dim:u32",
      "M:dim:u32",
      "K:dim:u32",
      "N:dim:u32",
      "sx:stride:u64",
      "ldx:stride:u64",
      "ldw:stride:u64",
      "sy:stride:u64",
      "alpha:scalar:f32",
    ],
  );
  const strides = Object.fromEntries(ck.manifest.params.map((p) => [p.name, p.strides]));
  assert.deepEqual(strides.X, ["sx", "ldx"]);
  assert.deepEqual(strides.W, [0, "ldw"]);
  assert.deepEqual(strides.bias, [0]);
  assert.deepEqual(strides.Y, ["sy", "N"]);
  assert.equal(strides.L, undefined);
  // A dense program's manifest has no strides at all.
  const dense = one(`kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n] }`);
  assert.ok(dense.manifest.params.every((p) => p.strides === undefined && p.kind !== "stride"));
  assert.match(ck.ptx ?? "", /\.param \.u64 param_sy,\s*\.param \.f32 param_alpha/);
});

Deno.test("strides: literal strides lower the default alignment and fold", () => {
  const ck = one(`kernel k {
  A: f16[M, K] row strides(1028)
  B: f16[K, N] col
  D: f32[M, N]
  D[m, n] = A[m, k] * B[k, n]
}`);
  assert.equal(tensorParam(ck.gemm, "A").align, 4);
  assert.equal(ck.gemm.strides, undefined);
  assert.ok(!ck.manifest.params.some((p) => p.kind === "stride"));
});

Deno.test("strides: sizes take stride values, dense by default, and refuse broken rules", () => {
  const ck = one(`kernel k {
  X: f16[L, M, K] row strides(sx, ldx)
  W: f16[L, K, N] col strides(0, ldw)
  D: f32[L, M, N] row strides(sd, ldd)
  D[b, m, n] = X[b, m, k] * W[b, k, n]
}`);
  const s = resolveSizes(ck.gemm, { L: 2, M: 10, N: 12, K: 16, ldx: 24 });
  assert.deepEqual(
    [s.sx, s.ldx, s.ldw, s.sd, s.ldd],
    [10 * 24, 24, 16, 10 * 12, 12],
  );
  assert.deepEqual(strideViolations(ck.gemm, s), []);
  const bad = strideViolations(ck.gemm, { ...s, ldx: 8, sd: 0, ldw: 20 });
  assert.deepEqual(bad, [
    'Stride ldx=8 of "X" is less than its contiguous extent 16',
    'Stride ldw=20 of "W" is not a multiple of its alignment 8',
    'Batch stride sd=0 of output "D": every batch would write one matrix',
  ]);
  assert.throws(
    () => simulateGemm(ck, { L: 2, M: 10, N: 12, K: 16, sx: 100 }),
    /Batch stride sx=100 of "X" is less than one batch's extent 160/,
  );
});

for (const [name, f] of Object.entries(FAMILIES)) {
  for (const batched of [false, true]) {
    Deno.test(`strides: simulate agrees, ${name}${batched ? ", batched, B broadcast" : ""}`, () => {
      const ck = one(program(f, batched));
      const sizes = stridedSizes(f, batched);
      const rep = simulateGemm(ck, sizes, { seed: 20 + name.length + (batched ? 7 : 0) });
      assert.equal(rep.sim.hazardCount, 0, "hazards");
      assert.equal(rep.gapWrites, 0, "writes outside D's view");
      assert.ok(
        rep.comparison.ok,
        `${rep.comparison.overBound} of ${rep.comparison.elements} over the bound: ` +
          JSON.stringify(rep.comparison.first),
      );
      assert.equal(rep.comparison.elements, (batched ? 3 : 1) * sizes.M! * sizes.N!);
      assert.ok(rep.ok);
    });
  }
}

/**
 * The mutation: the same program without `strides` lowers dense addresses; run on
 * the strided program's inputs it must read the gaps (poison) or write them.
 */
function denseRun(src: string, sizes: Record<string, number>) {
  const strided = one(src);
  const dense = one(src.replace(/ strides\([^)]*\)/g, ""));
  const full = resolveSizes(strided.gemm, sizes);
  const args = randomArgs(strided.gemm, full, 5);
  simulate(dense.kernel, { grid: gridFor(dense.kernel.grid, full), args: simArgs(args) }, {
    hazards: false,
  });
  const ref = referenceGemm(strided.gemm, args);
  const d = tensorParam(strided.gemm, strided.gemm.problem.d.tensor);
  const out = args.tensors.get(d.name)!;
  return {
    cmp: compareOutput(out, d.dtype, ref),
    gaps: gapWrites(out, d.dtype, ref, DTYPE_INFO[d.dtype].float ? 0xff : 0x5a),
  };
}

Deno.test("strides mutation: a kernel that ignores A's stride reads its gaps and fails", () => {
  const src = `kernel k {
  A: s8[M, K] row strides(lda)
  B: s8[K, N] col
  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}`;
  const { cmp } = denseRun(src, { M: 40, N: 24, K: 48, lda: 80 });
  assert.ok(!cmp.ok);
  assert.ok(cmp.overBound > 100, `only ${cmp.overBound} elements differ`);
});

Deno.test("strides mutation: a kernel that ignores D's stride writes its gaps and fails", () => {
  const src = `kernel k {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f32[M, N] row strides(ldd)
  D[m, n] = A[m, k] * B[k, n]
}`;
  const { cmp, gaps } = denseRun(src, { M: 40, N: 24, K: 32, ldd: 36 });
  assert.ok(!cmp.ok);
  assert.ok(gaps > 0);
});

ptxasTest(
  "strides: ptxas accepts the strided programs of every type, sm_80 and sm_86",
  async (ptxas) => {
    const dir = await Deno.makeTempDir();
    try {
      for (const [name, f] of Object.entries(FAMILIES)) {
        for (const batched of [false, true]) {
          for (const target of ["sm80", "sm86"] as const) {
            const r = compile(program(f, batched), { file: "strided.gemm", target });
            assert.ok(r.ok, `${name}: ${r.diagnostics.map((d) => d.message).join("; ")}`);
            const file = `${dir}/${name}_${batched}_${target}.ptx`;
            await Deno.writeTextFile(file, r.kernels[0]!.ptx);
            const arch = target === "sm80" ? "sm_80" : "sm_86";
            const o = await new Deno.Command(ptxas, {
              args: [`-arch=${arch}`, file, "-o", "/dev/null"],
            })
              .output();
            assert.equal(o.code, 0, `${name} ${target}: ${new TextDecoder().decode(o.stderr)}`);
          }
        }
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("strides: simulate agrees with strided epilogue tensors (batched bias, C broadcast)", () => {
  const ck = one(`kernel k {
  A: f16[L, M, K] row strides(sa, lda)
  B: f16[L, K, N] col
  C: f32[L, M, N] row strides(0, ldc)
  bias: f32[L, N] strides(sbias)
  D: f16[L, M, N] row strides(sd, ldd)
  D[b, m, n] = f16(relu(A[b, m, k] * B[b, k, n] + C[b, m, n] + bias[b, n]))
}`);
  const sizes = {
    L: 3,
    M: 36,
    N: 40,
    K: 48,
    lda: 64,
    sa: 36 * 64 + 8,
    ldc: 44,
    sbias: 52,
    ldd: 56,
  };
  const rep = simulateGemm(ck, sizes, { seed: 9 });
  assert.equal(rep.sizes.sd, 36 * 56);
  assert.equal(rep.sim.hazardCount, 0);
  assert.equal(rep.gapWrites, 0);
  assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
  assert.equal(rep.comparison.elements, 3 * 36 * 40);
  // The same inputs through a kernel that reads bias densely must fail.
  const dense = one(ck.gemm.source.text.replace(" strides(sbias)", ""));
  const args = randomArgs(ck.gemm, resolveSizes(ck.gemm, sizes), 9);
  simulate(dense.kernel, { grid: gridFor(dense.kernel.grid, rep.sizes), args: simArgs(args) });
  const out = args.tensors.get("D")!;
  assert.ok(!compareOutput(out, "f16", referenceGemm(ck.gemm, args)).ok);
});

Deno.test("strides: split-K with a strided column-major D agrees", () => {
  const ck = one(`kernel sk {
  A: f16[M, K] row strides(lda)
  B: f16[K, N] row strides(ldb)
  D: f32[M, N] col strides(ldd)
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    split_k 2
  }
}`);
  const rep = simulateGemm(ck, { M: 40, N: 24, K: 200, lda: 216, ldb: 32, ldd: 48 }, { seed: 4 });
  assert.equal(rep.grid[2], 2);
  assert.ok(rep.ok && rep.comparison.elements === 40 * 24, JSON.stringify(rep.comparison.first));
});
