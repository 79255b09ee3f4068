/**
 * The launch contract with strided tensors (DESIGN.md §6.1, issue 20), on
 * hand-built strided manifests (tests/_strided_manifests.ts): stride values, minimum
 * strides, alignment, buffer lengths over the real extents, overlaps, the
 * dense defaults, and the Deno binder's `.u64` stride slots.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import {
  launchContract,
  launchViolations,
  type TensorBinding,
  tensorBytes,
  withStrideDefaults,
} from "../backends/ptx/contract.ts";
import { LaunchBinder } from "../backends/cuda/bind.ts";
import { kernelArgs } from "../backends/cuda/launch.ts";
import { stridedKernel } from "./_strided_manifests.ts";
import { Rng } from "../numerics/random.ts";

function kernel(src: string): CompiledKernel {
  const r = compile(src, { file: "t.gemm" });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

const HGEMM = kernel(Deno.readTextFileSync(new URL("../examples/hgemm.gemm", import.meta.url)));
const BATCHED = kernel(
  Deno.readTextFileSync(new URL("../examples/batched.gemm", import.meta.url)),
);
const BIAS = kernel(`kernel kb {
  A: f16[L, M, K]
  B: f16[L, K, N] col
  bias: f32[L, N] align 4
  D: f32[L, M, N]
  D[l, m, n] = A[l, m, k] * B[l, k, n] + bias[l, n]
}`);

/** hgemm with lda, ldb, C and D sharing ldc. */
const S_HGEMM = stridedKernel(HGEMM, { A: ["lda"], B: ["ldb"], C: ["ldc"], D: ["ldc"] });
/** batched with a broadcast B (batch stride 0) and a literal matrix stride on D. */
const S_BATCHED = stridedKernel(BATCHED, { A: ["sa", "lda"], B: [0, "ldb"], D: ["sd", "ldd"] });
const S_BIAS = stridedKernel(BIAS, { bias: ["sbias"] });

function bindings(names: readonly string[], bytes?: number): Map<string, TensorBinding> {
  return new Map(names.map((n, i) => [n, { address: BigInt(i + 1) << 36n, bytes }]));
}

Deno.test("strided contract: stride params in ABI order after the dims, views per tensor", () => {
  const c = launchContract(S_HGEMM.manifest);
  assert.deepEqual(c.strides.map((s) => [s.name, s.param]), [["lda", 7], ["ldb", 8], [
    "ldc",
    9,
  ]]);
  assert.deepEqual(c.scalars.map((s) => s.param), [10, 11]);
  assert.deepEqual(c.tensors.map((t) => t.view?.matrixStride), ["lda", "ldb", "ldc", "ldc"]);
  assert.deepEqual(c.tensors.map((t) => t.view?.rows), ["M", "N", "M", "M"]);
  const b = launchContract(S_BATCHED.manifest).tensors;
  assert.deepEqual(b.map((t) => t.view?.batchStride), ["sa", 0, "sd"]);
  const v = launchContract(S_BIAS.manifest).tensors.find((t) => t.name === "bias")!.view!;
  assert.deepEqual(v, {
    batch: "L",
    rows: null,
    contiguous: "N",
    batchStride: "sbias",
    matrixStride: null,
  });
});

Deno.test("strided contract: good random launches pass; bytes follow the real extents", () => {
  const rng = new Rng(20);
  const c = launchContract(S_HGEMM.manifest);
  for (let i = 0; i < 50; i++) {
    const M = rng.int(1, 300), N = 8 * rng.int(1, 40), K = 8 * rng.int(1, 40);
    const s = {
      M,
      N,
      K,
      lda: K + 8 * rng.int(0, 8),
      ldb: K + 8 * rng.int(0, 8),
      ldc: N + 8 * rng.int(0, 8),
    };
    assert.deepEqual(
      launchViolations(c, s, bindings(["A", "B", "C", "D"]), new Map([["alpha", 1], ["beta", 0]])),
      [],
    );
    const A = c.tensors[0]!, B = c.tensors[1]!;
    assert.equal(tensorBytes(A, s), 2 * ((M - 1) * s.lda + K));
    assert.equal(tensorBytes(B, s), 2 * ((N - 1) * s.ldb + K));
  }
  const cb = launchContract(S_BATCHED.manifest);
  const s = { L: 3, M: 5, N: 16, K: 24, sa: 200, lda: 32, ldb: 40, sd: 104, ldd: 16 };
  const [A, B, D] = cb.tensors;
  assert.equal(tensorBytes(A!, s), 2 * (2 * 200 + 4 * 32 + 24));
  assert.equal(tensorBytes(B!, s), 2 * (15 * 40 + 24)); // batch stride 0: one matrix
  assert.equal(tensorBytes(D!, s), 2 * (2 * 104 + 4 * 16 + 16));
  assert.deepEqual(launchViolations(cb, s, bindings(["A", "B", "D"]), new Map([["alpha", 1]])), []);
});

Deno.test("strided contract: every broken stride rule named with its tensor and value", () => {
  const c = launchContract(S_HGEMM.manifest);
  const sc = new Map([["alpha", 1], ["beta", 0]]);
  const t = bindings(["A", "B", "C", "D"]);
  assert.deepEqual(launchViolations(c, { M: 64, N: 64, K: 64, lda: 60, ldb: 66, ldc: -1 }, t, sc), [
    'Kernel "hgemm": stride ldc=-1 is not an integer in 0..9223372036854775807',
  ]);
  assert.deepEqual(launchViolations(c, { M: 64, N: 64, K: 64, lda: 2 ** 63, ldb: 1.5 }, t, sc), [
    'Kernel "hgemm": stride lda=9223372036854776000 is not an integer in 0..9223372036854775807',
    'Kernel "hgemm": stride ldb=1.5 is not an integer in 0..9223372036854775807',
  ]);
  assert.deepEqual(launchViolations(c, { M: 64, N: 64, K: 64, lda: 56, ldb: 68, ldc: 64 }, t, sc), [
    'Tensor "A" has matrix stride lda=56, less than its contiguous extent K=64',
    'Tensor "B" declares align 8 but its matrix stride ldb=68 is not a multiple of 8',
  ]);
  const cb = launchContract(S_BATCHED.manifest);
  const tb = bindings(["A", "B", "D"]);
  const al = new Map([["alpha", 1]]);
  assert.deepEqual(
    launchViolations(
      cb,
      { L: 2, M: 8, N: 16, K: 16, sa: 120, lda: 16, ldb: 16, sd: 0, ldd: 16 },
      tb,
      al,
    ),
    [
      'Tensor "A" has batch stride sa=120; it must be 0 or at least 128 (rows x matrix stride)',
      'Tensor "D" has batch stride sd=0; an output\'s must be at least 128 (rows x matrix stride)',
    ],
  );
  // An input's batch stride may be 0; a batch stride keeps the alignment.
  assert.deepEqual(
    launchViolations(
      cb,
      { L: 2, M: 8, N: 16, K: 16, sa: 0, lda: 16, ldb: 16, sd: 132, ldd: 16 },
      tb,
      al,
    ),
    ['Tensor "D" declares align 8 but its batch stride sd=132 is not a multiple of 8'],
  );
  const cv = launchContract(S_BIAS.manifest);
  const tv = bindings(["A", "B", "bias", "D"]);
  assert.deepEqual(launchViolations(cv, { L: 2, M: 8, N: 16, K: 16, sbias: 12 }, tv, new Map()), [
    'Tensor "bias" has batch stride sbias=12; it must be 0 or at least 16 (its row length)',
  ]);
  assert.deepEqual(launchViolations(cv, { L: 2, M: 8, N: 16, K: 16, sbias: 0 }, tv, new Map()), []);
});

Deno.test("strided contract: left-out strides are dense; lengths and overlaps use the extents", () => {
  const c = launchContract(S_HGEMM.manifest);
  const s = withStrideDefaults(c, { M: 10, N: 24, K: 16, ldb: 40 });
  assert.deepEqual(s, { M: 10, N: 24, K: 16, ldb: 40, lda: 16, ldc: 24 });
  const cb = launchContract(S_BATCHED.manifest);
  assert.deepEqual(withStrideDefaults(cb, { L: 2, M: 8, N: 16, K: 24, lda: 32 }), {
    L: 2,
    M: 8,
    N: 16,
    K: 24,
    lda: 32,
    sa: 256,
    ldb: 24,
    sd: 128,
    ldd: 16,
  });
  const given = { M: 10, N: 24, K: 16, lda: 16, ldb: 16, ldc: 24 };
  assert.equal(withStrideDefaults(c, given), given);
  // Buffer lengths: A at lda = 40 needs 2 * (9 * 40 + 16) bytes.
  const sc = new Map([["alpha", 1], ["beta", 0]]);
  const t = bindings(["A", "B", "C", "D"], 1 << 20);
  t.set("A", { address: 1n << 36n, bytes: 2 * (9 * 40 + 16) - 1 });
  assert.deepEqual(launchViolations(c, { M: 10, N: 24, K: 16, lda: 40 }, t, sc), [
    'Buffer of tensor "A" holds 751 bytes; the sizes need 752',
  ]);
  // D a view of columns 0..23 of a 48-wide buffer, A its columns 24..: D's extent ends inside A's.
  const D = 1n << 40n;
  const t2 = bindings(["A", "B", "C", "D"]);
  t2.set("D", { address: D });
  t2.set("A", { address: D + 4n * 24n });
  assert.deepEqual(launchViolations(c, { M: 10, N: 24, K: 16, lda: 96, ldc: 48 }, t2, sc), [
    'Output "D" overlaps input "A"',
  ]);
  // Dense: D is 10 x 24 f32 = 960 bytes; A after it does not overlap.
  t2.set("A", { address: D + 960n });
  assert.deepEqual(launchViolations(c, { M: 10, N: 24, K: 16 }, t2, sc), []);
  assert.deepEqual(launchViolations(c, { M: 10, N: 24, K: 16, ldc: 32 }, t2, sc), [
    'Output "D" overlaps input "A"',
  ]);
});

Deno.test("strided contract: C in place at D's address only with D's strides", () => {
  const c = launchContract(stridedKernel(HGEMM, { A: ["lda"], C: ["ldc"], D: ["ldd"] }).manifest);
  const sc = new Map([["alpha", 1], ["beta", 0]]);
  const t = bindings(["A", "B", "C", "D"]);
  t.set("C", t.get("D")!);
  const s = { M: 10, N: 24, K: 16 };
  assert.deepEqual(launchViolations(c, { ...s, ldc: 32, ldd: 32 }, t, sc), []);
  assert.deepEqual(launchViolations(c, { ...s, ldc: 24, ldd: 32 }, t, sc), [
    'Output "D" overlaps input "C" (C may only be D itself, at the same address)',
  ]);
});

Deno.test("strided binder: stride slots are u64 in ABI order, dense when left out", () => {
  const c = launchContract(S_HGEMM.manifest);
  const b = new LaunchBinder(S_HGEMM.manifest, c, null);
  const bufs = { A: 1n << 36n, B: 2n << 36n, C: 3n << 36n, D: 4n << 36n };
  assert.equal(b.bind(bufs, { M: 64, N: 40, K: 24, lda: 1 << 20, ldc: 2 ** 21 }, {}), null);
  const dv = new DataView(b.values);
  assert.equal(dv.getBigUint64(7 * 8, true), 1n << 20n);
  assert.equal(dv.getBigUint64(8 * 8, true), 24n); // ldb: dense (K)
  assert.equal(dv.getBigUint64(9 * 8, true), 1n << 21n);
  assert.equal(dv.getUint32(4 * 8, true), 64);
  const bad = b.bind(bufs, { M: 64, N: 40, K: 24, lda: 16, ldd: 3 }, {})!;
  assert.deepEqual(bad, [
    'Tensor "A" has matrix stride lda=16, less than its contiguous extent K=24',
    'Kernel "hgemm" has no runtime dimension or stride "ldd" (it has "M", "K", "N", "lda", "ldb", "ldc")',
  ]);
  const args = kernelArgs(S_HGEMM.manifest, new Map(Object.entries(bufs)), {
    M: 64,
    N: 40,
    K: 24,
    ldb: 48,
  }, new Map([["alpha", 1], ["beta", 0]]));
  assert.deepEqual(args.slice(7, 10), [{ type: "u64", value: 24n }, { type: "u64", value: 48n }, {
    type: "u64",
    value: 40n,
  }]);
});
