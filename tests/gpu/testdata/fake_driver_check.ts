/**
 * Run by tests/gpu/run_test.ts as `deno test` in a child process with
 * `GEMMC_LIBCUDA` pointing at the fake driver built from fake_libcuda.c (the
 * driver is loaded once per process, so this needs a process of its own).
 * It drives the real bindings end to end against the fake and checks what
 * arrived on the C side: the kernel arguments as the ABI says, the launch
 * geometry, the JIT options and log, the dynamic shared-memory attribute,
 * and that every buffer, event, module and context reference is released,
 * on success and on failure.
 */

import assert from "node:assert/strict";
import { compile } from "../../../compiler.ts";
import { runGemm } from "../../../harness/run_gemm.ts";
import {
  Cuda,
  cudaAvailable,
  CudaError,
  JitError,
  packKernelParams,
} from "../../../backends/cuda/driver.ts";
import { runProbe } from "../../../harness/mma_probe.ts";
import { MMA_SHAPES } from "../../../ir/mma_table.ts";
import { main } from "../../../cli.ts";
import { copyLaunch } from "../../../bench/llm.ts";
import { operandBytes, problemBytes } from "../../../bench/llm_report.ts";
import {
  STREAM_READ_BLOCK,
  STREAM_READ_BLOCKS_PER_SM,
  streamRead,
} from "../../../bench/stream_read.ts";
import { Rng } from "../../../numerics/random.ts";

const LIB = Deno.env.get("GEMMC_LIBCUDA")!;
const fake = Deno.dlopen(LIB, {
  fake_stats: { parameters: ["buffer"], result: "i32" },
  fake_last_launch: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
});

function stats() {
  const s = new BigInt64Array(10);
  fake.symbols.fake_stats(s);
  const v = (i: number) => Number(s[i]!);
  return {
    allocs: v(0),
    modules: v(1),
    events: v(2),
    ctxRefs: v(3),
    launches: v(4),
    current: v(5),
    jitOpts: v(6),
    dynSmem: v(7),
    streams: v(8),
    streamLaunches: v(9),
  };
}

function lastLaunch() {
  const geo = new Uint32Array(7);
  const bits = new BigUint64Array(64);
  const types = new Uint8Array(64 * 8);
  const n = fake.symbols.fake_last_launch(geo, bits, types);
  const dec = new TextDecoder();
  return {
    grid: [...geo.subarray(0, 3)],
    block: [...geo.subarray(3, 6)],
    smem: geo[6]!,
    params: Array.from({ length: n }, (_, i) => ({
      type: dec.decode(types.subarray(8 * i, 8 * i + 8)).replace(/\0.*$/, ""),
      bits: bits[i]!,
    })),
  };
}

function released() {
  const s = stats();
  assert.equal(s.allocs, 0, "buffers left allocated");
  assert.equal(s.modules, 0, "modules left loaded");
  assert.equal(s.events, 0, "events left");
  assert.equal(s.ctxRefs, 0, "primary context still retained");
  assert.equal(s.streams, 0, "streams left");
}

Deno.test("streams: a launch on a non-blocking stream reaches the driver with it; close frees it", () => {
  const cuda = Cuda.open();
  try {
    const mod = cuda.loadModule(
      ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u32 n)\n{\n  ret;\n}\n",
    );
    const fn = mod.getFunction("k");
    const st = cuda.createStream();
    assert.ok(st !== null, "the fake has cuStreamCreate");
    const before = stats().streamLaunches;
    cuda.launch(fn, { grid: [1, 1, 1], block: [32, 1, 1], dynamicSmemBytes: 0 }, [
      { type: "u32", value: 7 },
    ], st);
    cuda.launch(fn, { grid: [1, 1, 1], block: [32, 1, 1], dynamicSmemBytes: 0 }, [
      { type: "u32", value: 7 },
    ]);
    assert.equal(
      stats().streamLaunches,
      before + 1,
      "one launch on the stream, one on the default",
    );
    assert.equal(stats().streams, 1);
  } finally {
    cuda.close();
  }
  released();
});

const ex = (f: string) => Deno.readTextFileSync(new URL(`../../../examples/${f}`, import.meta.url));

Deno.test("the fake driver loads through the real bindings", () => {
  assert.deepEqual(cudaAvailable(), { ok: true });
  const cuda = Cuda.open();
  try {
    assert.equal(cuda.device.name, "Fake GPU");
    assert.equal(cuda.device.arch, "sm_90");
    assert.equal(cuda.device.driverVersionText, "13.0");
    assert.equal(cuda.device.maxSharedPerBlockOptin, 232448);
    const b = cuda.alloc(64);
    const src = new Uint8Array(64).map((_, i) => i * 3);
    b.upload(src);
    assert.deepEqual(b.download(), src);
    b.fill(0xab);
    assert.ok(b.download().every((x) => x === 0xab));
    assert.equal(stats().allocs, 1);
  } finally {
    cuda.close();
  }
  released();
});

Deno.test("kernel arguments arrive as the manifest's PTX types, in order", () => {
  const ck = compile(ex("dgemm.gemm")).kernels[0]!;
  const rep = runGemm(ck, { M: 64, N: 64, K: 32 }, { iters: 0, check: "none" });
  const l = lastLaunch();
  assert.deepEqual(l.params.map((p) => p.type), ck.manifest.params.map((p) => p.ptx));
  assert.deepEqual(l.grid, [...rep.grid]);
  assert.deepEqual(l.block, [...rep.block]);
  assert.equal(l.smem, rep.dynamicSmemBytes);
  const ptrs = new Set<bigint>();
  ck.manifest.params.forEach((p, i) => {
    const bits = l.params[i]!.bits;
    if (p.kind === "tensor") {
      assert.notEqual(bits, 0n);
      ptrs.add(bits);
    } else if (p.kind === "dim") assert.equal(Number(bits), rep.sizes[p.name]);
    else {
      const dv = new DataView(new ArrayBuffer(8));
      dv.setBigUint64(0, bits, true);
      const v = p.ptx === "f64" ? dv.getFloat64(0, true) : dv.getFloat32(0, true);
      assert.equal(v, rep.args.scalars.get(p.name), p.name);
    }
  });
  assert.equal(ptrs.size, ck.manifest.params.filter((p) => p.kind === "tensor").length);
  // The fake runs nothing: the output is still poison, and the run says so.
  assert.equal(rep.unwritten, 64 * 64);
  assert.equal(rep.ok, false);
  assert.equal(rep.function.registers, 42);
  assert.match(rep.jit.infoLog, /Used 42 registers/);
  assert.equal(rep.jit.wallMs, 1.5);
  assert.equal(stats().jitOpts, 1, "JIT options as the driver expects them");
  released();
});

Deno.test("more than 48 KiB of dynamic shared memory is requested first", () => {
  const ck = compile(ex("hgemm.gemm")).kernels[0]!;
  assert.ok(ck.manifest.dynamicSmemBytes > 48 * 1024, "hgemm's schedule needs > 48 KiB");
  runGemm(ck, { M: 128, N: 256, K: 64 }, { iters: 2, warmup: 1, check: "none" });
  assert.equal(stats().dynSmem, ck.manifest.dynamicSmemBytes);
  assert.equal(lastLaunch().smem, ck.manifest.dynamicSmemBytes);
  released();
});

Deno.test("timing: events around each launch, rotating input sets, median", () => {
  const ck = compile(ex("s8_gemm.gemm")).kernels[0]!;
  const before = stats().launches;
  const rep = runGemm(ck, { M: 64, N: 64, K: 64 }, {
    iters: 5,
    warmup: 2,
    inputSets: 3,
    check: "ref",
  });
  assert.equal(stats().launches - before, 1 + 2 + 5);
  assert.ok(rep.timing !== null);
  assert.equal(rep.timing.medianMs, 0.25);
  assert.equal(rep.timing.inputSets, 3);
  assert.equal(rep.timing.unit, "TOPS");
  assert.equal(rep.timing.ops, 2 * 64 * 64 * 64);
  assert.ok(rep.reference !== null && !rep.reference.comparison.ok);
  released();
});

Deno.test("a JIT failure raises the JIT's log and releases everything", () => {
  const cuda = Cuda.open();
  try {
    assert.throws(
      () => cuda.loadModule("// FAKE_JIT_ERROR\n.version 8.0\n"),
      (e: unknown) =>
        e instanceof JitError && /fake error at line 7/.test(e.message) &&
        e.errorName === "CUDA_ERROR_INVALID_PTX",
    );
  } finally {
    cuda.close();
  }
  released();
});

Deno.test("driver errors name the function, the error and its description", () => {
  const cuda = Cuda.open();
  try {
    const m = cuda.loadModule(".visible .entry k(\n)\n{ ret; }\n");
    assert.throws(
      () => m.getFunction("nope"),
      (e: unknown) =>
        e instanceof CudaError && e.fn === "cuModuleGetFunction" &&
        e.message ===
          'cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (named symbol not found): "nope"',
    );
  } finally {
    cuda.close();
  }
  released();
});

Deno.test("the probe runs end to end through the driver", async () => {
  const rs = await runProbe({ mode: "gpu", shapes: [MMA_SHAPES[0]!, MMA_SHAPES[8]!] });
  // Nothing ran, so nothing agrees; but every launch went through.
  assert.equal(rs.length, 2);
  assert.ok(rs.every((r) => r.error === null && !r.ok));
  assert.equal(lastLaunch().params.length, 4);
  released();
});

Deno.test("gemm run through the driver: device line, a verdict, exit 1 on mismatch", async () => {
  let out = "";
  let err = "";
  const code = await main(
    ["run", "examples/u8_gemm.gemm", "--size", "M=32,N=32,K=64", "--iters", "2"],
    {
      out: (s) => (out += s),
      err: (s) => (err += s),
      readFile: (p) => Deno.readTextFileSync(new URL(`../../../${p}`, import.meta.url)),
      writeFile: () => {},
    },
  );
  assert.equal(code, 1, err);
  assert.match(out, /^device: Fake GPU \(sm_90, 132 SMs\), CUDA driver 13\.0/);
  assert.match(out, /u8_gemm: MISMATCH with the reference/);
  assert.match(out, /42 registers/);
  released();
});

Deno.test("gemm run --tune schedules for the device's SM count unless --sms says otherwise", async () => {
  // SIMT f32 at M=128, N=8192, K=1024: 64 tiles, two blocks an SM; split 4 on the fake's 132
  // SMs, 3 on an A100's 108 (bench/NOTES.md 43). The launch's grid z is the split.
  const run = async (...extra: string[]) => {
    let out = "";
    let err = "";
    const size = ["--size", "M=128,N=8192,K=1024"];
    const code = await main(
      [
        "run",
        "bench/kernels/f32.gemm",
        ...size,
        "--tune",
        "--check",
        "none",
        "--warmup",
        "0",
        ...extra,
      ],
      {
        out: (s) => (out += s),
        err: (s) => (err += s),
        readFile: (p) => Deno.readTextFileSync(new URL(`../../../${p}`, import.meta.url)),
        writeFile: () => {},
      },
    );
    released();
    return { code, out, err, grid: lastLaunch().grid };
  };
  const here = await run("--iters", "1");
  assert.match(
    here.out,
    /^device: Fake GPU \(sm_90, 132 SMs\), .*; --tune for its 132 SMs\n/,
    here.err,
  );
  assert.equal(here.grid[2], 4, here.out + here.err);
  const a100 = await run("--iters", "1", "--sms", "108");
  assert.doesNotMatch(a100.out, /--tune for its/);
  assert.equal(a100.grid[2], 3, a100.out + a100.err);
});

Deno.test("kernelParams point at 8-byte slots holding each value", () => {
  const p = packKernelParams([
    { type: "u64", value: 0x123456789abcn },
    { type: "f32", value: 1.5 },
    { type: "s32", value: -7 },
    { type: "f64", value: -2.25 },
  ]);
  const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(p.values)));
  assert.deepEqual([...p.pointers].map((x) => x - base), [0n, 8n, 16n, 24n]);
  const dv = new DataView(p.values);
  assert.equal(dv.getBigUint64(0, true), 0x123456789abcn);
  assert.equal(dv.getFloat32(8, true), 1.5);
  assert.equal(dv.getInt32(16, true), -7);
  assert.equal(dv.getFloat64(24, true), -2.25);
});

Deno.test("bench/llm.ts copyLaunch (--copy): half the row's bytes from B's set i into destination i", () => {
  const cuda = Cuda.open();
  const rng = new Rng(8902);
  const p = { M: 16, N: 256, K: 128 };
  const bBytes = p.N * p.K * 2;
  const hosts = Array.from(
    { length: 3 },
    () => Uint8Array.from({ length: bBytes }, () => rng.int(0, 255)),
  );
  const bBufs = hosts.map((h) => {
    const b = cuda.alloc(bBytes);
    b.upload(h);
    return b;
  });
  const bufs: ReturnType<Cuda["alloc"]>[] = [];
  try {
    const launch = copyLaunch(cuda, "f16", p, bBufs, bufs);
    assert.ok(launch !== null);
    assert.equal(bufs.length, 3, "a destination a set, freed with the row's");
    const bytes = bufs[0]!.bytes;
    assert.equal(bytes, Math.floor(problemBytes("f16", p) / 32) * 16);
    for (const i of [0, 1, 2, 4]) {
      for (const b of bufs) b.fill(0xee);
      launch(i);
      for (const [j, b] of bufs.entries()) {
        const got = new Uint8Array(bytes);
        b.download(got);
        const want = j === i % 3 ? hosts[j]!.subarray(0, bytes) : new Uint8Array(bytes).fill(0xee);
        assert.deepEqual(got, want, `launch ${i}: destination ${j}`);
      }
    }
    // Half the bytes past B's buffer (a row where B is not the largest operand): no copy side.
    assert.equal(copyLaunch(cuda, "f16", { M: 4096, N: 256, K: 128 }, bBufs, bufs), null);
    assert.equal(bufs.length, 3);
  } finally {
    for (const b of [...bBufs, ...bufs]) b.free();
    cuda.close();
  }
  released();
});

Deno.test("bench/stream_read.ts (--read): set i's A, B and destination; a kernel that does nothing fails its check", () => {
  const cuda = Cuda.open();
  const rng = new Rng(9101);
  const p = { M: 16, N: 256, K: 128 };
  const bytes = operandBytes("f16", p);
  const upload = (n: number) => {
    const b = cuda.alloc(n);
    b.upload(Uint8Array.from({ length: n }, () => rng.int(0, 255)));
    return b;
  };
  const sets = Array.from({ length: 3 }, () => ({ a: upload(bytes.a), b: upload(bytes.b) }));
  const bufs: ReturnType<Cuda["alloc"]>[] = [];
  const mods: ReturnType<Cuda["loadModule"]>[] = [];
  try {
    const r = streamRead(cuda, bytes, sets, bufs, mods);
    assert.ok(r !== null);
    assert.equal(mods.length, 1, "its module, unloaded with the row's");
    assert.equal(bufs.length, 1 + 3, "the xor word and a destination a set, freed with the row's");
    const [out, ...dsts] = bufs;
    assert.ok(dsts.every((d) => d.bytes === bytes.d));
    for (const i of [0, 1, 2, 4]) {
      r.launch(i);
      const l = lastLaunch();
      const s = sets[i % 3]!;
      assert.deepEqual(l.grid, [132 * STREAM_READ_BLOCKS_PER_SM, 1, 1]);
      assert.deepEqual(l.block, [STREAM_READ_BLOCK, 1, 1]);
      assert.equal(r.blocks, 132 * STREAM_READ_BLOCKS_PER_SM);
      assert.deepEqual(l.params.map((x) => x.bits), [
        s.a.ptr,
        BigInt(bytes.a / 16),
        s.b.ptr,
        BigInt(bytes.b / 16),
        dsts[i % 3]!.ptr,
        BigInt(bytes.d / 16),
        out!.ptr,
      ]);
    }
    // The fake runs no kernel: the xor word stays zero, the host's xor of random data is not.
    const c = r.check();
    assert.equal(c.got, 0);
    assert.notEqual(c.want, 0);
    assert.equal(c.ok, false);
    // Bytes past a set's buffer, or not 16-byte vectors: no read side, nothing allocated.
    assert.equal(streamRead(cuda, { ...bytes, b: bytes.b + 16 }, sets, bufs, mods), null);
    assert.equal(streamRead(cuda, { ...bytes, a: bytes.a - 8 }, sets, bufs, mods), null);
    assert.equal(streamRead(cuda, { ...bytes, d: 8 }, sets, bufs, mods), null);
    assert.equal(bufs.length, 4);
    assert.equal(mods.length, 1);
  } finally {
    for (const b of [...sets.flatMap((s) => [s.a, s.b]), ...bufs]) b.free();
    for (const m of mods) m.unload();
    cuda.close();
  }
  released();
});
