/**
 * The Deno launch API (backends/cuda/kernel.ts `loadKernel`, harness/device_tensor.ts).
 *
 * Everywhere (when a C compiler exists): the API end to end against the fake
 * libcuda built from testdata/fake_libcuda.c, in a child process
 * (testdata/fake_launch_check.ts), programmatic dependent launches (`pdl`:
 * cuLaunchKernelEx's configuration and attribute) included. On the GPU (listed as ignored without a
 * driver): a kernel loaded once and launched on device buffers many times
 * agrees with the reference; the f16 and bf16 helpers round-trip through
 * device memory; split-K's workspace is reused across launches and each
 * launch is correct; a launch that breaks the contract launches nothing.
 */

import assert from "node:assert/strict";
import { runFakeDriverCheck } from "./_fake_driver.ts";
import { compile, type CompiledKernel } from "../../compiler.ts";
import { Cuda, cudaAvailable, type DeviceBuffer } from "../../backends/cuda/driver.ts";
import { LaunchError, loadKernel } from "../../backends/cuda/kernel.ts";
import { downloadTensor, encodeTensor, uploadTensor } from "../../harness/device_tensor.ts";
import { referenceCheck } from "../../harness/checks.ts";
import { randomArgs } from "../../harness/inputs.ts";
import { tensorShape } from "../../harness/tensor.ts";
import { roundBf16, roundF16 } from "../../numerics/mod.ts";
import { Rng } from "../../numerics/random.ts";
import { type GemmKernel, tensorParam } from "../../ir/gemm.ts";
import type { LaunchArgs } from "../../harness/inputs.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";

const ROOT = new URL("../../", import.meta.url);
const CUDA = cudaAvailable();
const SKIP = CUDA.ok ? "" : " (skipped: no CUDA driver)";

function gpuTest(name: string, fn: () => void | Promise<void>): void {
  Deno.test({ name: `${name}${SKIP}`, ignore: !CUDA.ok, fn });
}

function example(file: string): CompiledKernel {
  const r = compile(Deno.readTextFileSync(new URL(`examples/${file}`, ROOT)), { file });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/** Random inputs (D poisoned) uploaded: the host bytes for the reference, the device buffers. */
function upload(
  cuda: Cuda,
  k: GemmKernel,
  sizes: Record<string, number>,
  seed: number,
): { args: LaunchArgs; bufs: Record<string, DeviceBuffer> } {
  const args = randomArgs(k, sizes, seed);
  const bufs: Record<string, DeviceBuffer> = {};
  for (const [n, bytes] of args.tensors) {
    bufs[n] = cuda.alloc(bytes.byteLength);
    bufs[n].upload(bytes);
  }
  return { args, bufs };
}

/** D's bytes from the device, checked against the reference on the same inputs. */
function checkD(k: GemmKernel, args: LaunchArgs, d: DeviceBuffer, where: string): void {
  const out = d.download();
  const r = referenceCheck(k, args, out, null);
  assert.ok(
    r.comparison.ok,
    `${where}: ${r.comparison.overBound} over; ${JSON.stringify(r.first)}`,
  );
}

function poisonD(k: GemmKernel, d: DeviceBuffer): void {
  const t = tensorParam(k, k.problem.d.tensor);
  d.fill(DTYPE_INFO[t.dtype].float ? 0xff : 0x5a);
}

Deno.test("the launch API against a fake libcuda (C), end to end", async (t) => {
  const out = await runFakeDriverCheck(t, "fake_launch_check.ts");
  if (out !== null) assert.match(out, /ok \| 11 passed \| 0 failed/);
});

Deno.test("tensor maps (sm90's TMA) through the launch API against a fake libcuda", async (t) => {
  const out = await runFakeDriverCheck(t, "fake_tmap_check.ts");
  if (out !== null) assert.match(out, /ok \| 5 passed \| 0 failed/);
});

gpuTest("hgemm loaded once, launched on device buffers: every launch agrees", () => {
  const ck = example("hgemm.gemm");
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const st = cuda.createStream()!;
  const rng = new Rng(31);
  for (const [i, sizes] of [{ M: 256, N: 256, K: 128 }, { M: 200, N: 136, K: 72 }].entries()) {
    const { args, bufs } = upload(cuda, ck.gemm, sizes, 100 + i);
    const alpha = Math.fround(0.5 + rng.next());
    const beta = Math.fround(-0.5 - rng.next());
    args.scalars.set("alpha", alpha).set("beta", beta);
    // Many launches; D poisoned before the last, on a stream of its own.
    for (let n = 0; n < 20; n++) k.launch(bufs, sizes, { scalars: { alpha, beta } });
    cuda.synchronize();
    poisonD(ck.gemm, bufs.D!);
    // The stream does not wait for the default stream's memset: the context does.
    cuda.synchronize();
    k.launch(bufs, sizes, { scalars: { alpha, beta }, stream: st });
    st.synchronize();
    checkD(ck.gemm, args, bufs.D!, JSON.stringify(sizes));
    // Raw device addresses.
    poisonD(ck.gemm, bufs.D!);
    const raw = Object.fromEntries(Object.entries(bufs).map(([n, b]) => [n, b.ptr]));
    k.launch(raw, sizes, { scalars: { alpha, beta } });
    cuda.synchronize();
    checkD(ck.gemm, args, bufs.D!, `${JSON.stringify(sizes)}, raw addresses`);
    for (const b of Object.values(bufs)) b.free();
  }
  assert.equal(k.launches, 44);
});

gpuTest("f16 and bf16 helpers round-trip through device memory; a kernel reads them", () => {
  using cuda = Cuda.open();
  const rng = new Rng(5);
  const xs = Float32Array.from({ length: 4096 }, () => (rng.next() * 2 - 1) * 70000);
  for (const [t, round] of [["f16", roundF16], ["bf16", roundBf16]] as const) {
    const b = uploadTensor(cuda, xs, t);
    const back = downloadTensor(b, t);
    for (let i = 0; i < xs.length; i++) assert.equal(back[i], round(xs[i]!), `${t}[${i}]`);
    b.free();
  }
  // bf16 in, bf16 out: the kernel's D decoded by the helper equals the reference's.
  const ck = example("bf16_gemm.gemm");
  using k = loadKernel(ck, { cuda });
  const sizes = { Rows: 128, Cols: 64, Inner: 96 };
  const { args, bufs } = upload(cuda, ck.gemm, sizes, 77);
  const aT = tensorParam(ck.gemm, ck.gemm.problem.a.tensor);
  const a = Float32Array.from(
    { length: tensorShape(aT, sizes).elements },
    () => rng.next() * 2 - 1,
  );
  bufs[aT.name]!.free();
  bufs[aT.name] = uploadTensor(cuda, a, aT.dtype);
  args.tensors.set(aT.name, encodeTensor(a, aT.dtype));
  k.launch(bufs, sizes, { scalars: Object.fromEntries(args.scalars) });
  cuda.synchronize();
  checkD(ck.gemm, args, bufs[ck.gemm.problem.d.tensor]!, "bf16_gemm");
});

gpuTest("split-K: the kernel's workspace is reused, launch after launch correct", () => {
  const ck = example("splitk.gemm");
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const sizes = { M: 96, N: 128, K: 2048 };
  const { args, bufs } = upload(cuda, ck.gemm, sizes, 12);
  let ws: DeviceBuffer | null = null;
  for (let i = 0; i < 5; i++) {
    poisonD(ck.gemm, bufs.D!);
    k.launch(bufs, sizes);
    cuda.synchronize();
    checkD(ck.gemm, args, bufs.D!, `launch ${i}`);
    if (i === 0) ws = k.workspace();
    assert.ok(ws !== null && k.workspace() === ws, "the same workspace");
  }
  // Every launch leaves each tile's arrival counter (a u32 at the start of its record) at 0.
  const per = ck.manifest.workspace!.bytesPerTile;
  const w = new DataView(ws!.download().buffer);
  for (let o = 0; o + per <= w.byteLength; o += per) assert.equal(w.getUint32(o, true), 0, `${o}`);
  // Bigger sizes: grown, still correct.
  const big = { M: 300, N: 256, K: 1024 };
  const b2 = upload(cuda, ck.gemm, big, 13);
  k.launch(b2.bufs, big);
  cuda.synchronize();
  checkD(ck.gemm, b2.args, b2.bufs.D!, "grown");
  assert.ok(ws!.freed && k.workspace()!.bytes > ws!.bytes);
});

gpuTest("a launch that breaks the contract launches nothing", () => {
  const ck = example("hgemm.gemm");
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const sizes = { M: 128, N: 128, K: 64 };
  const { bufs } = upload(cuda, ck.gemm, sizes, 3);
  const short = cuda.alloc(100);
  const bad: [Record<string, unknown>, Record<string, number>, Record<string, number>][] = [
    [{ ...bufs, B: short }, sizes, {}],
    [bufs, { ...sizes, K: 60 }, {}],
    [{ ...bufs, A: bufs.A!.ptr + 2n }, sizes, {}],
    [bufs, sizes, { alpha: NaN }],
    [{ ...bufs, D: bufs.A! }, sizes, {}],
  ];
  for (const [b, s, scalars] of bad) {
    assert.throws(
      () => k.launch(b as Record<string, DeviceBuffer>, s, { scalars }),
      LaunchError,
    );
  }
  cuda.synchronize();
  const d = bufs.D!.download();
  assert.ok(d.every((x) => x === 0xff), "D is still poisoned");
  assert.equal(k.launches, 0);
});
