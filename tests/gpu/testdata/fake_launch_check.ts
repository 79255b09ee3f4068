/**
 * Run by tests/gpu/launch_test.ts as `deno test` in a child process with
 * `GEMMC_LIBCUDA` pointing at the fake driver built from fake_libcuda.c (the
 * driver loads once per process). Drives the launch API (backends/cuda/kernel.ts)
 * end to end against the fake and checks what reached the C side: the
 * arguments of each launch, nothing launched on a violation, the split-K
 * workspace allocated and zeroed once per stream and grown when needed, and
 * everything released.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../../../compiler.ts";
import { Cuda } from "../../../backends/cuda/driver.ts";
import { LaunchError, loadKernel } from "../../../backends/cuda/kernel.ts";
import { downloadTensor, uploadTensor } from "../../../harness/device_tensor.ts";
import { gridFor } from "../../../ir/kernel.ts";
import { Rng } from "../../../numerics/random.ts";
import { stridedKernel } from "../../_strided_manifests.ts";
import { roundBf16, roundF16 } from "../../../numerics/mod.ts";

const LIB = Deno.env.get("GEMMC_LIBCUDA")!;
const fake = Deno.dlopen(LIB, {
  fake_stats: { parameters: ["buffer"], result: "i32" },
  fake_last_launch: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
  fake_launch_stats: { parameters: ["buffer"], result: "i32" },
});

function stats() {
  const s = new BigInt64Array(10);
  fake.symbols.fake_stats(s);
  const l = new BigInt64Array(3);
  fake.symbols.fake_launch_stats(l);
  return {
    allocs: Number(s[0]),
    modules: Number(s[1]),
    ctxRefs: Number(s[3]),
    launches: Number(s[4]),
    streams: Number(s[8]),
    memsetsAsync: Number(l[0]),
    streamSyncs: Number(l[1]),
  };
}

function lastParams(): bigint[] {
  const geo = new Uint32Array(7);
  const bits = new BigUint64Array(64);
  const n = fake.symbols.fake_last_launch(geo, bits, new Uint8Array(64 * 8));
  return [...bits.subarray(0, n), BigInt(geo[0]!), BigInt(geo[1]!), BigInt(geo[2]!)];
}

function example(file: string): CompiledKernel {
  const r = compile(Deno.readTextFileSync(new URL(`../../../examples/${file}`, import.meta.url)));
  assert.ok(r.ok);
  return r.kernels[0]!;
}

const f32Bits = (x: number) => BigInt(new Uint32Array(new Float32Array([x]).buffer)[0]!);

Deno.test("loadKernel: loaded once; each launch's arguments reach the driver as the ABI says", () => {
  const ck = example("hgemm.gemm");
  const s0 = stats();
  const cuda = Cuda.open();
  try {
    const k = loadKernel(ck, { cuda });
    assert.equal(stats().modules, s0.modules + 1);
    const rng = new Rng(4);
    const sets = [0, 1].map(() => {
      const a = cuda.alloc(256 * 64 * 2);
      const b = cuda.alloc(64 * 136 * 2);
      const c = cuda.alloc(256 * 136 * 4);
      const d = cuda.alloc(256 * 136 * 4);
      return { A: a, B: b, C: c, D: d };
    });
    for (let i = 0; i < 6; i++) {
      const set = sets[i % 2]!;
      const sizes = { M: 256 - 8 * i, N: 136, K: 64 };
      const alpha = Math.fround(rng.next() + 0.5);
      k.launch(set, sizes, { scalars: { alpha } });
      const want = [
        set.A.ptr,
        set.B.ptr,
        set.C.ptr,
        set.D.ptr,
        ...ck.manifest.params.filter((p) => p.kind === "dim").map((p) =>
          BigInt(sizes[p.name as "M"])
        ),
        f32Bits(alpha),
        f32Bits(0), // beta's default
        ...gridFor(ck.kernel.grid, sizes).map(BigInt),
      ];
      assert.deepEqual(lastParams(), want, `launch ${i}`);
    }
    assert.equal(k.launches, 6);
    assert.equal(stats().launches, s0.launches + 6);
    assert.equal(stats().modules, s0.modules + 1, "the module is loaded once");
    // Raw addresses work as well as buffers.
    const raw = Object.fromEntries(Object.entries(sets[0]!).map(([n, b]) => [n, b.ptr]));
    k.launch(raw, { M: 64, N: 64, K: 64 });
    assert.equal(lastParams()[0], sets[0]!.A.ptr);
    k.close();
    assert.equal(stats().modules, s0.modules);
  } finally {
    cuda.close();
  }
  const s = stats();
  assert.equal(s.allocs, 0);
  assert.equal(s.ctxRefs, 0);
});

Deno.test("a launch that breaks the contract reaches no driver call and lists every problem", () => {
  const ck = example("hgemm.gemm");
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const a = cuda.alloc(64 * 64 * 2);
  const b = cuda.alloc(10);
  const d = cuda.alloc(64 * 64 * 4);
  const freed = cuda.alloc(64);
  freed.free();
  const s0 = stats();
  let err: LaunchError | null = null;
  try {
    k.launch({ A: a, B: b, C: freed, D: d }, { M: 64, N: 64, K: 60 }, {
      scalars: { beta: Infinity },
    });
  } catch (e) {
    if (!(e instanceof LaunchError)) throw e;
    err = e;
  }
  assert.ok(err !== null, "no LaunchError");
  assert.equal(err.kernel, "hgemm");
  const want = [
    /Tensor "A" declares align 8 but its leading dimension K=60/,
    /Buffer of tensor "B" holds 10 bytes; the sizes need 7680/,
    /Tensor "C"'s device buffer was freed/,
    /Scalar "beta" is Infinity/,
  ];
  for (const w of want) assert.ok(err.violations.some((m) => w.test(m)), `${w}: ${err.message}`);
  assert.deepEqual(stats(), s0, "no driver call: no launch, no allocation, no memset");
  assert.equal(k.launches, 0);
});

Deno.test("split-K: one zeroed workspace per stream, reused, grown when a launch needs more", () => {
  const ck = example("splitk.gemm");
  const s0 = stats();
  const cuda = Cuda.open();
  try {
    const k = loadKernel(ck, { cuda });
    const big = { M: 512, N: 512, K: 1024 };
    const bufs = {
      A: cuda.alloc(512 * 1024 * 2),
      B: cuda.alloc(1024 * 512 * 2),
      bias: cuda.alloc(512 * 4),
      D: cuda.alloc(512 * 512 * 2),
    };
    const small = { M: 100, N: 64, K: 1024 };
    k.launch(bufs, small);
    const w0 = k.workspace();
    assert.ok(w0 !== null && w0.bytes > 0);
    assert.equal(stats().memsetsAsync, s0.memsetsAsync + 1, "zeroed once, asynchronously");
    const wsSlot = ck.manifest.params.length - 1;
    assert.equal(lastParams()[wsSlot], w0.ptr);
    for (let i = 0; i < 3; i++) k.launch(bufs, small);
    assert.equal(k.workspace(), w0, "reused");
    assert.equal(stats().memsetsAsync, s0.memsetsAsync + 1);
    // Bigger sizes: a bigger workspace, zeroed; the old one freed.
    k.launch(bufs, big);
    const w1 = k.workspace()!;
    assert.ok(w1 !== w0 && w1.bytes > w0.bytes && w0.freed);
    assert.equal(stats().memsetsAsync, s0.memsetsAsync + 2);
    assert.equal(lastParams()[wsSlot], w1.ptr);
    k.launch(bufs, small); // fits the bigger one
    assert.equal(k.workspace(), w1);
    // Another stream: a workspace of its own, zeroed on that stream; growing it waits for it.
    const st = cuda.createStream()!;
    k.launch(bufs, small, { stream: st });
    const ws = k.workspace(st)!;
    assert.ok(ws !== w1 && !w1.freed);
    assert.equal(stats().memsetsAsync, s0.memsetsAsync + 3);
    k.launch(bufs, big, { stream: st });
    assert.ok(ws.freed && k.workspace(st) !== ws);
    assert.equal(stats().streamSyncs, s0.streamSyncs + 1);
    // A workspace of the caller's: used as given, none allocated.
    const mine = cuda.alloc(w1.bytes);
    const allocs = stats().allocs;
    k.launch(bufs, big, { workspace: mine });
    assert.equal(lastParams()[wsSlot], mine.ptr);
    assert.equal(stats().allocs, allocs);
    k.close();
    assert.ok(k.workspace() === null && k.workspace(st) === null && w1.freed);
    assert.throws(() => k.launch(bufs, small), /launched after its close/);
  } finally {
    cuda.close();
  }
  const s = stats();
  assert.equal(s.allocs, 0, "every buffer freed");
  assert.equal(s.modules, s0.modules);
  assert.equal(s.streams, 0);
});

Deno.test("uploadTensor and downloadTensor round-trip f16 and bf16 through device memory", () => {
  using cuda = Cuda.open();
  const rng = new Rng(8);
  const xs = Array.from({ length: 1000 }, () => (rng.next() * 2 - 1) * 1000);
  for (const [t, round] of [["f16", roundF16], ["bf16", roundBf16]] as const) {
    const buf = uploadTensor(cuda, xs, t);
    assert.equal(buf.bytes, 2000);
    const back = downloadTensor(buf, t);
    assert.deepEqual([...back], xs.map(round));
    buf.free();
  }
});

Deno.test("a kernel whose context closed refuses to launch; its close then does nothing", () => {
  const cuda = Cuda.open();
  const k = loadKernel(example("hgemm.gemm"), { cuda });
  const bufs = {
    A: cuda.alloc(8192),
    B: cuda.alloc(8192),
    C: cuda.alloc(16384),
    D: cuda.alloc(16384),
  };
  k.launch(bufs, { M: 64, N: 64, K: 64 });
  cuda.close();
  const s0 = stats();
  assert.throws(
    () => k.launch(bufs, { M: 64, N: 64, K: 64 }),
    /launched after its close or its context's/,
  );
  k.close();
  assert.deepEqual(stats(), s0);
  assert.equal(s0.allocs, 0);
  assert.equal(s0.ctxRefs, 0);
});

Deno.test("strided hgemm (a hand-built manifest): stride values reach the driver as .u64", () => {
  const ck = stridedKernel(example("hgemm.gemm"), {
    A: ["lda"],
    B: ["ldb"],
    C: ["ldc"],
    D: ["ldc"],
  });
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const [M, N, K] = [100, 136, 64];
  const [lda, ldc] = [K + 40, N + 24];
  const A = cuda.alloc(((M - 1) * lda + K) * 2);
  const B = cuda.alloc(N * K * 2);
  const C = cuda.alloc(((M - 1) * ldc + N) * 4);
  const D = cuda.alloc(((M - 1) * ldc + N) * 4);
  k.launch({ A, B, C, D }, { M, N, K, lda, ldc }, { scalars: { alpha: 0.5 } });
  const want = [
    A.ptr,
    B.ptr,
    C.ptr,
    D.ptr,
    ...ck.manifest.params.filter((p) => p.kind === "dim").map((p) =>
      BigInt({ M, N, K }[p.name as "M"])
    ),
    BigInt(lda),
    BigInt(K), // ldb left out: dense
    BigInt(ldc),
    f32Bits(0.5),
    f32Bits(0),
    ...gridFor(ck.kernel.grid, { M, N, K }).map(BigInt),
  ];
  assert.deepEqual(lastParams(), want);
  // One element short of A's strided extent: refused, named, nothing launched.
  const s0 = stats();
  assert.throws(
    () => k.launch({ A, B, C, D }, { M, N, K, lda: lda + 8, ldc }),
    (e: unknown) =>
      e instanceof LaunchError &&
      e.violations.includes(
        `Buffer of tensor "A" holds ${A.bytes} bytes; the sizes need ${A.bytes + 8 * (M - 1) * 2}`,
      ),
  );
  assert.deepEqual(stats(), s0);
});
