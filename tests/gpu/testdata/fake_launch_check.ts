/**
 * Run by tests/gpu/launch_test.ts as `deno test` in a child process with
 * `GEMMC_LIBCUDA` pointing at the fake driver built from fake_libcuda.c (the
 * driver loads once per process). Drives the launch API (backends/cuda/kernel.ts)
 * end to end against the fake and checks what reached the C side: the
 * arguments of each launch, nothing launched on a violation, the split-K
 * workspace allocated and zeroed once per stream and grown when needed,
 * everything released; and programmatic dependent launches (`pdl`): the
 * configuration and attribute cuLaunchKernelEx receives, cuLaunchKernel without
 * the option, the fake's own validation, a driver without the function, and
 * `runGemm` / `gemm run --pdl`.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../../../compiler.ts";
import {
  CU_LAUNCH_ATTRIBUTE_LAYOUT,
  CU_LAUNCH_CONFIG,
  Cuda,
  type CudaFunction,
  packKernelParams,
} from "../../../backends/cuda/driver.ts";
import { launchPacked, PDL_CONFIG_BYTES, writePdlConfig } from "../../../backends/cuda/launch.ts";
import { runGemm } from "../../../harness/run_gemm.ts";
import { main } from "../../../cli.ts";
import { LaunchError, loadKernel } from "../../../backends/cuda/kernel.ts";
import { downloadTensor, uploadTensor } from "../../../harness/device_tensor.ts";
import { gridFor } from "../../../ir/kernel.ts";
import { Rng } from "../../../numerics/random.ts";
import { stridedKernel } from "../../_strided_manifests.ts";
import { roundBf16, roundF16 } from "../../../numerics/mod.ts";
import { launchExStats } from "./_launch_ex_stats.ts";

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

// ---------------------------------------------------------------- programmatic dependent launch

const fakeEx = Deno.dlopen(LIB, {
  fake_launch_ex_stats: { parameters: ["buffer"], result: "i32" },
});

/** What the fake's cuLaunchKernel and cuLaunchKernelEx saw (fake_launch_ex_stats). */
const exStats = () => launchExStats((b) => fakeEx.symbols.fake_launch_ex_stats(b));

/** The last launch's grid, block and dynamic shared memory, as the fake received them. */
function geometry(): { grid: number[]; block: number[]; smem: number } {
  const geo = new Uint32Array(7);
  fake.symbols.fake_last_launch(geo, new BigUint64Array(64), new Uint8Array(64 * 8));
  return { grid: [...geo.subarray(0, 3)], block: [...geo.subarray(3, 6)], smem: geo[6]! };
}

/** cuda.h's CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, written out. */
/** A kernel of one u32 parameter that does nothing, loaded into `cuda`. */
function emptyKernel(cuda: Cuda): CudaFunction {
  return cuda.loadModule(
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u32 n)\n{\n  ret;\n}\n",
  ).getFunction("k");
}

const PDL_ATTRIBUTE_ID = 6;

Deno.test("pdl: launch(..., { pdl: true }) reaches cuLaunchKernelEx with the launch's config and the PDL attribute; without it, cuLaunchKernel", () => {
  const ck = example("hgemm.gemm");
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const st = cuda.createStream()!;
  const bufs = {
    A: cuda.alloc(256 * 64 * 2),
    B: cuda.alloc(64 * 136 * 2),
    C: cuda.alloc(256 * 136 * 4),
    D: cuda.alloc(256 * 136 * 4),
  };
  const want = (sizes: { M: number; N: number; K: number }, alpha: number) => [
    bufs.A.ptr,
    bufs.B.ptr,
    bufs.C.ptr,
    bufs.D.ptr,
    ...ck.manifest.params.filter((p) => p.kind === "dim").map((p) => BigInt(sizes[p.name as "M"])),
    f32Bits(alpha),
    f32Bits(0),
    ...gridFor(ck.kernel.grid, sizes).map(BigInt),
  ];
  const stream = BigInt(Deno.UnsafePointer.value(st.handle));
  assert.ok(stream !== 0n);
  const sizes = { M: 256, N: 136, K: 64 };
  // Without pdl (and with pdl: false): cuLaunchKernel, as before.
  let s0 = exStats();
  k.launch(bufs, sizes, { stream: st, scalars: { alpha: 0.75 } });
  k.launch(bufs, sizes, { stream: st, scalars: { alpha: 0.75 }, pdl: false });
  let s = exStats();
  assert.equal(s.plain, s0.plain + 2, "cuLaunchKernel");
  assert.equal(s.ex, s0.ex, "no cuLaunchKernelEx");
  assert.deepEqual(lastParams(), want(sizes, 0.75));
  // With pdl: cuLaunchKernelEx, one attribute, PDL allowed, on the launch's stream.
  for (const [i, sz] of [sizes, { M: 100, N: 72, K: 64 }].entries()) {
    s0 = exStats();
    k.launch(bufs, sz, { stream: st, scalars: { alpha: 1.5 + i }, pdl: true });
    s = exStats();
    assert.equal(s.ex, s0.ex + 1, "one cuLaunchKernelEx");
    assert.equal(s.pdl, s0.pdl + 1, "with programmaticStreamSerializationAllowed = 1");
    assert.equal(s.plain, s0.plain, "no cuLaunchKernel");
    assert.deepEqual(
      [s.numAttrs, s.attrId, s.attrValue, s.stream],
      [1, PDL_ATTRIBUTE_ID, 1, stream],
      "numAttrs, attribute id, value, hStream",
    );
    assert.deepEqual(geometry(), {
      grid: gridFor(ck.kernel.grid, sz),
      block: [...ck.manifest.block],
      smem: ck.manifest.dynamicSmemBytes,
    });
    assert.deepEqual(lastParams(), want(sz, 1.5 + i), "the same arguments as cuLaunchKernel's");
  }
  // The default stream: hStream null.
  k.launch(bufs, sizes, { pdl: true });
  assert.equal(exStats().stream, 0n);
  assert.equal(k.launches, 5);
  assert.equal(exStats().refused, 0);
});

Deno.test("pdl: Cuda.launch writes grid, block, shared memory and stream at cuda.h's offsets", () => {
  using cuda = Cuda.open();
  const fn = emptyKernel(cuda);
  const st = cuda.createStream()!;
  const config = { grid: [3, 5, 7], block: [64, 2, 1], dynamicSmemBytes: 1234 } as const;
  const s0 = exStats();
  cuda.launch(fn, config, [{ type: "u32", value: 9 }], st, { pdl: true });
  const s = exStats();
  assert.deepEqual([s.ex, s.pdl, s.plain], [s0.ex + 1, s0.pdl + 1, s0.plain]);
  assert.deepEqual(geometry(), { grid: [3, 5, 7], block: [64, 2, 1], smem: 1234 });
  assert.equal(s.stream, BigInt(Deno.UnsafePointer.value(st.handle)));
  assert.deepEqual(lastParams().slice(0, 1), [9n]);
  // Without the option: cuLaunchKernel.
  cuda.launch(fn, config, [{ type: "u32", value: 10 }], st);
  cuda.launch(fn, config, [{ type: "u32", value: 11 }], undefined, {});
  assert.deepEqual(
    [exStats().ex, exStats().plain],
    [s0.ex + 1, s0.plain + 2],
  );
});

Deno.test("pdl: the fake refuses another attribute id, value or a dirty union; gemmc's passes", () => {
  using cuda = Cuda.open();
  const fn = emptyKernel(cuda);
  const { pointers } = packKernelParams([{ type: "u32", value: 1 }]);
  const ex = cuda.driver.cuLaunchKernelEx!;
  const buf = new Uint8Array(new ArrayBuffer(PDL_CONFIG_BYTES));
  const v = new DataView(buf.buffer);
  const attr = CU_LAUNCH_CONFIG.SIZE;
  const cases: [string, () => void, number][] = [
    ["as written", () => {}, 0],
    ["another id", () => v.setUint32(attr + CU_LAUNCH_ATTRIBUTE_LAYOUT.ID, 7, true), 1],
    ["value 2", () => v.setInt32(attr + CU_LAUNCH_ATTRIBUTE_LAYOUT.VALUE, 2, true), 1],
    ["a byte of the union past the int", () => v.setUint8(attr + 8 + 20, 1), 1],
    ["9 attributes", () => v.setUint32(CU_LAUNCH_CONFIG.NUM_ATTRS, 9, true), 1],
    ["no list", () => v.setBigUint64(CU_LAUNCH_CONFIG.ATTRS, 0n, true), 1],
  ];
  for (const [what, spoil, code] of cases) {
    writePdlConfig(buf, [1, 1, 1], [32, 1, 1], 0, null);
    spoil();
    const s0 = exStats();
    const l0 = stats().launches;
    assert.equal(ex(buf, fn.handle, pointers, null), code, what);
    assert.equal(stats().launches, l0 + (code === 0 ? 1 : 0), what);
    assert.equal(exStats().refused, s0.refused + (code === 0 ? 0 : 1), what);
  }
});

Deno.test("pdl: a driver without cuLaunchKernelEx refuses the launch by name; nothing launched", () => {
  using cuda = Cuda.open();
  const fn = emptyKernel(cuda);
  const { pointers } = packKernelParams([{ type: "u32", value: 1 }]);
  const old = { ...cuda.driver, cuLaunchKernelEx: null };
  const l0 = stats().launches;
  assert.throws(
    () => launchPacked(old, fn.handle, [1, 1, 1], [32, 1, 1], 0, null, pointers, "k", true),
    /^Error: Cannot launch k with pdl: the CUDA driver .+ lacks cuLaunchKernelEx \(CUDA 11\.8 and later\)$/,
  );
  assert.equal(stats().launches, l0);
  // Without pdl the same driver launches.
  launchPacked(old, fn.handle, [1, 1, 1], [32, 1, 1], 0, null, pointers, "k");
  assert.equal(stats().launches, l0 + 1);
});

Deno.test("pdl: runGemm's and gemm run --pdl's warm-up and timed launches use it, the checked one not", async () => {
  const ck = example("u8_gemm.gemm");
  const sizes = { M: 32, N: 32, K: 64 };
  let s0 = exStats();
  const rep = runGemm(ck, sizes, { iters: 2, warmup: 1, pdl: true });
  let s = exStats();
  assert.deepEqual([s.plain - s0.plain, s.pdl - s0.pdl, s.ex - s0.ex], [1, 3, 3]);
  assert.equal(rep.timing!.pdl, true);
  s0 = exStats();
  const plain = runGemm(ck, sizes, { iters: 2, warmup: 1 });
  s = exStats();
  assert.deepEqual([s.plain - s0.plain, s.ex - s0.ex], [4, 0]);
  assert.equal(plain.timing!.pdl, undefined, "no pdl key without the option");
  // The CLI (in this process: the fake is its driver).
  const io = (out: string[]) => ({
    out: (x: string) => out.push(x),
    err: (x: string) => out.push(x),
    readFile: (p: string) => Deno.readTextFileSync(new URL(`../../../${p}`, import.meta.url)),
    writeFile: () => {},
  });
  const out: string[] = [];
  s0 = exStats();
  const args = ["run", "examples/u8_gemm.gemm", "--size", "M=32,N=32,K=64", "--iters", "3"];
  await main([...args, "--warmup", "2", "--pdl"], io(out));
  s = exStats();
  assert.deepEqual([s.plain - s0.plain, s.pdl - s0.pdl], [1, 5]);
  assert.match(out.join(""), /time: median [^\n]*3 launches[^\n]*; PDL\)/);
  const json: string[] = [];
  await main([...args, "--pdl", "--json"], io(json));
  assert.equal(JSON.parse(json.join("")).reports[0].timing.pdl, true);
  const help: string[] = [];
  await main(["run", "--help"], io(help));
  assert.match(
    help.join(""),
    /--pdl\s+Compile with programmatic dependent launch \(as compile --pdl\) and launch/,
  );
});
