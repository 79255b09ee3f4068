/**
 * Structured sparsity end to end from Deno: prune a dense weight matrix to 2:4
 * (keep the two largest magnitudes of every group of four along K), compress it
 * into its kept values and metadata, launch examples/sparse.gemm (`mma.sp`) on
 * the GPU, and check the output against the reference GEMM of the pruned matrix.
 *
 *     deno run -A examples/sparse_launch.ts [M N K]
 *
 * Without a CUDA driver it says so and exits 0 (nothing to run).
 *
 * @module
 */

import {
  compareOutput,
  compile,
  compressSparse,
  Cuda,
  cudaAvailable,
  decompressSparse,
  encodeTensor,
  loadKernel,
  referenceGemm,
  uploadTensor,
} from "../mod.ts";

const [M, N, K] = Deno.args.length === 3 ? Deno.args.map(Number) : [1024, 256, 2048];
const sizes = { M: M!, N: N!, K: K! };

const avail = cudaAvailable();
if (!avail.ok) {
  console.log(`examples/sparse_launch.ts: skipped: ${avail.why}`);
  Deno.exit(0);
}

const r = compile(Deno.readTextFileSync(new URL("sparse.gemm", import.meta.url)), {
  file: "examples/sparse.gemm",
});
if (!r.ok) throw new Error("sparse.gemm does not compile");
const ck = r.kernels[0]!;

// A dense random weight matrix, pruned and compressed in one step.
const random = (n: number) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
const dense = random(M! * K!);
const w = compressSparse(dense, "f16", M!, K!, { prune: true });
console.log(
  `pruned ${w.pruned} of ${M! * K!} weights; kept values ${w.values.byteLength} B, ` +
    `metadata ${w.meta.byteLength} B`,
);
const x = random(K! * N!);
const bias = random(M!);

using cuda = Cuda.open();
using kernel = loadKernel(ck, { cuda });
const bufs = {
  W: cuda.alloc(w.values.byteLength),
  W_meta: cuda.alloc(w.meta.byteLength),
  X: uploadTensor(cuda, x, "f16"),
  bias: uploadTensor(cuda, bias, "f32"),
  Y: cuda.alloc(M! * N! * 2),
};
bufs.W.upload(w.values);
bufs.W_meta.upload(new Uint8Array(w.meta.buffer, w.meta.byteOffset, w.meta.byteLength));
bufs.Y.fill(0xff); // NaN: an element the kernel does not write fails the check
kernel.launch(bufs, sizes);
cuda.synchronize();

// The reference multiplies the decompressed (pruned) matrix.
const args = {
  tensors: new Map([
    ["W", w.values],
    ["W_meta", new Uint8Array(w.meta.buffer, w.meta.byteOffset, w.meta.byteLength)],
    ["X", encodeTensor(x, "f16")],
    ["bias", encodeTensor(bias, "f32")],
  ]),
  scalars: new Map<string, number>(),
  sizes,
};
// Y's bytes as stored (f16), compared element by element with the reference.
const cmp = compareOutput(bufs.Y.download(), "f16", referenceGemm(ck.gemm, args));
const kept = decompressSparse(w, "f16", M!, K!).filter((v) => v !== 0).length;
console.log(`sparse_linear ${M}x${N}x${K} on ${cuda.device.name}: ${kept} nonzero weights`);
console.log(
  cmp.ok
    ? `AGREES with the reference (${cmp.elements} elements)`
    : `MISMATCH: ${cmp.overBound} of ${cmp.elements} elements over the bound`,
);
if (!cmp.ok) Deno.exit(1);
