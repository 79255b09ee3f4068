/**
 * The Deno launch API in one script: compile hgemm, load it once, launch it
 * 1,000 times on device buffers holding random inputs, check the output
 * against the reference GEMM and print the timing.
 *
 *     deno run -A examples/launch.ts [M N K]
 *
 * Without a CUDA driver it says so and exits 0 (nothing to run).
 *
 * @module
 */

import {
  compareOutput,
  compile,
  Cuda,
  cudaAvailable,
  downloadTensor,
  encodeTensor,
  loadKernel,
  referenceGemm,
  uploadTensor,
} from "../mod.ts";

const LAUNCHES = 1000;
const [M, N, K] = Deno.args.length === 3 ? Deno.args.map(Number) : [512, 512, 256];
const sizes = { M: M!, N: N!, K: K! };

const avail = cudaAvailable();
if (!avail.ok) {
  console.log(`examples/launch.ts: skipped: ${avail.why}`);
  Deno.exit(0);
}

const r = compile(Deno.readTextFileSync(new URL("hgemm.gemm", import.meta.url)), {
  file: "examples/hgemm.gemm",
});
if (!r.ok) throw new Error("hgemm does not compile");
const ck = r.kernels[0]!;

// Random inputs in [-1, 1) (hgemm: A row-major M x K, B column-major K x N, C and D row-major).
const random = (n: number) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
const host = { A: random(M! * K!), B: random(K! * N!), C: random(M! * N!) };
const alpha = Math.fround(0.5 + Math.random());
const beta = Math.fround(-0.25 - Math.random() / 2);

using cuda = Cuda.open();
const t0 = performance.now();
using kernel = loadKernel(ck, { cuda });
const loadMs = performance.now() - t0;
const bufs = {
  A: uploadTensor(cuda, host.A, "f16"),
  B: uploadTensor(cuda, host.B, "f16"),
  C: uploadTensor(cuda, host.C, "f32"),
  D: cuda.alloc(M! * N! * 4),
};
bufs.D.fill(0xff); // NaN: an element the kernel does not write fails the check

const start = cuda.createEvent();
const end = cuda.createEvent();
kernel.launch(bufs, sizes, { scalars: { alpha, beta } }); // warm-up
cuda.synchronize();
start.record();
const h0 = performance.now();
for (let i = 0; i < LAUNCHES; i++) kernel.launch(bufs, sizes, { scalars: { alpha, beta } });
const hostMs = performance.now() - h0;
end.record();
end.synchronize();
const gpuMs = end.elapsedSince(start);

const d = downloadTensor(bufs.D, "f32");
const args = {
  tensors: new Map([
    ["A", encodeTensor(host.A, "f16")],
    ["B", encodeTensor(host.B, "f16")],
    ["C", encodeTensor(host.C, "f32")],
  ]),
  scalars: new Map([["alpha", alpha], ["beta", beta]]),
  sizes,
};
const cmp = compareOutput(new Uint8Array(d.buffer), "f32", referenceGemm(ck.gemm, args));
const flops = 2 * M! * N! * K!;
console.log(`hgemm ${M}x${N}x${K} on ${cuda.device.name}: loaded once in ${loadMs.toFixed(1)} ms`);
console.log(
  `${LAUNCHES} launches: ${(hostMs * 1000 / LAUNCHES).toFixed(2)} µs/launch on the host, ` +
    `${(gpuMs * 1000 / LAUNCHES).toFixed(2)} µs/launch on the GPU ` +
    `(${(flops * LAUNCHES / (gpuMs * 1e-3) / 1e12).toFixed(1)} TFLOP/s)`,
);
console.log(
  cmp.ok
    ? `AGREES with the reference (${cmp.elements} elements)`
    : `MISMATCH: ${cmp.overBound} of ${cmp.elements} elements over the bound`,
);
if (!cmp.ok) Deno.exit(1);
