/**
 * Run by tests/gpu/launch_test.ts as `deno test` in a child process with `GEMMC_LIBCUDA`
 * pointing at the fake driver built from fake_libcuda.c. Drives the Deno launch paths of a
 * kernel with TMA tensor maps (sm90, §3.4; hgemm with A_tmap and B_tmap,
 * tests/_tensor_map_manifests.ts) against the fake, whose `cuTensorMapEncodeTiled` validates
 * as the driver does and writes a map recording its arguments, and whose launch refuses a map
 * it did not encode: each launch's maps are checked field by field against ir/tensor_map.ts
 * `tensorMapArgs`; maps are encoded again only when their inputs change; a broken rule and
 * a refused encode name the tensor, and nothing is launched.
 */

import assert from "node:assert/strict";
import { Cuda, CudaError } from "../../../backends/cuda/driver.ts";
import { LaunchError, loadKernel } from "../../../backends/cuda/kernel.ts";
import { kernelArgs } from "../../../backends/cuda/launch.ts";
import { gridFor } from "../../../ir/kernel.ts";
import { tensorMapArgs } from "../../../ir/tensor_map.ts";
import type { CompiledKernel } from "../../../compiler.ts";
import {
  compiledTmaKernel,
  expectedMapRecord,
  FAKE_MAP_MAGIC,
  fakeMapRecord,
  hgemmTensorMapKernel,
  looselyAligned,
  refusedMapKernel,
} from "../../_tensor_map_manifests.ts";

const LIB = Deno.env.get("GEMMC_LIBCUDA")!;
const fake = Deno.dlopen(LIB, {
  fake_stats: { parameters: ["buffer"], result: "i32" },
  fake_last_launch: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
  fake_last_map: { parameters: ["i32", "buffer"], result: "i32" },
  fake_map_stats: { parameters: ["buffer"], result: "i32" },
});

function launches(): number {
  const s = new BigInt64Array(10);
  fake.symbols.fake_stats(s);
  return Number(s[4]);
}

/** Maps encoded so far, and launches the fake refused for a map it did not encode. */
function mapStats(): { encoded: number; refused: number } {
  const s = new BigInt64Array(2);
  fake.symbols.fake_map_stats(s);
  return { encoded: Number(s[0]), refused: Number(s[1]) };
}

/** The last launch's parameters: types and bits (a map's bits: its global address). */
function lastParams(): { types: string[]; bits: bigint[] } {
  const geo = new Uint32Array(7);
  const bits = new BigUint64Array(64);
  const types = new Uint8Array(64 * 8);
  const n = fake.symbols.fake_last_launch(geo, bits, types);
  const dec = new TextDecoder();
  return {
    types: Array.from(
      { length: n },
      (_, i) => dec.decode(types.subarray(8 * i, 8 * i + 8)).replace(/\0.*$/, ""),
    ),
    bits: [...bits.subarray(0, n)],
  };
}

/** The fake's record of the map the last launch got in parameter `i` (fake_libcuda.c). */
function lastMap(i: number) {
  const b = new Uint8Array(128);
  assert.equal(fake.symbols.fake_last_map(i, b), 1, `parameter ${i} is no tensor map`);
  return fakeMapRecord(b);
}

/** Checks every map of the last launch against the rule at these addresses and sizes. */
function checkMaps(
  ck: CompiledKernel,
  bufs: Readonly<Record<string, { ptr: bigint }>>,
  sizes: Readonly<Record<string, number>>,
): void {
  const { types, bits } = lastParams();
  assert.equal(types.length, ck.manifest.params.length);
  ck.manifest.params.forEach((p, i) => {
    if (p.kind !== "tensormap") return;
    assert.equal(types[i], "tmap", p.name);
    const rec = lastMap(i);
    assert.equal(rec.magic, FAKE_MAP_MAGIC, p.name);
    const a = tensorMapArgs(p.tmap!, bufs[p.tmap!.tensor]!.ptr, sizes);
    assert.deepEqual(rec.map, expectedMapRecord(a), p.name);
    assert.equal(bits[i], bufs[p.tmap!.tensor]!.ptr);
  });
}

const tmapIndex = (ck: CompiledKernel, tensor: string) =>
  ck.manifest.params.findIndex((p) => p.kind === "tensormap" && p.tmap!.tensor === tensor);

Deno.test("loadKernel: each launch's tensor maps are the rule's, encoded when their inputs change", () => {
  const ck = hgemmTensorMapKernel();
  assert.ok(ck.ptx.includes(".param .align 64 .b8 param_A_tmap[128]"), "the PTX declares the map");
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const sets = [0, 1].map(() => ({
    A: cuda.alloc(256 * 128 * 2),
    B: cuda.alloc(128 * 264 * 2),
    C: cuda.alloc(256 * 264 * 4),
    D: cuda.alloc(256 * 264 * 4),
  }));
  const s0 = mapStats();
  const sizes = { M: 200, N: 264, K: 128 };
  k.launch(sets[0]!, sizes);
  const { bits } = lastParams();
  const dims = ck.manifest.params.filter((p) => p.kind === "dim");
  assert.deepEqual(bits.slice(0, 4), [
    sets[0]!.A.ptr,
    sets[0]!.B.ptr,
    sets[0]!.C.ptr,
    sets[0]!.D.ptr,
  ]);
  assert.deepEqual(bits.slice(4, 4 + dims.length), dims.map((p) => BigInt(sizes[p.name as "M"])));
  checkMaps(ck, sets[0]!, sizes);
  const maps = ck.manifest.params.filter((p) => p.kind === "tensormap").length;
  assert.equal(mapStats().encoded, s0.encoded + maps);
  // The same launch again: the maps in their slots are still right; none is encoded.
  k.launch(sets[0]!, sizes);
  assert.equal(mapStats().encoded, s0.encoded + maps);
  checkMaps(ck, sets[0]!, sizes);
  // Another M: A's map (its extents name M) is encoded again, B's is not.
  const fewer = { ...sizes, M: 64 };
  const serialB = lastMap(tmapIndex(ck, "B")).serial;
  k.launch(sets[0]!, fewer);
  checkMaps(ck, sets[0]!, fewer);
  assert.equal(mapStats().encoded, s0.encoded + maps + 1);
  assert.equal(lastMap(tmapIndex(ck, "B")).serial, serialB, "B's map kept");
  // Other buffers: both maps follow their tensors.
  k.launch(sets[1]!, fewer);
  checkMaps(ck, sets[1]!, fewer);
  assert.equal(mapStats().encoded, s0.encoded + 2 * maps + 1);
  assert.equal(mapStats().refused, 0, "every map the fake received was one it encoded");
  assert.equal(k.launches, 4);
});

Deno.test("Cuda.launch with kernelArgs (bench/gpu_bench.ts's path): maps encoded once a set", () => {
  const ck = hgemmTensorMapKernel();
  using cuda = Cuda.open();
  const mod = cuda.loadModule(ck.ptx);
  const fn = mod.getFunction(ck.manifest.entry);
  fn.setMaxDynamicSharedBytes(ck.manifest.dynamicSmemBytes);
  const bufs = {
    A: cuda.alloc(128 * 64 * 2),
    B: cuda.alloc(64 * 256 * 2),
    C: cuda.alloc(128 * 256 * 4),
    D: cuda.alloc(128 * 256 * 4),
  };
  const sizes = { M: 128, N: 256, K: 64 };
  const addrs = new Map(Object.entries(bufs).map(([n, b]) => [n, b.ptr]));
  const scalars = new Map([["alpha", 1], ["beta", 0]]);
  const args = kernelArgs(ck.manifest, addrs, sizes, scalars);
  assert.deepEqual(args.filter((a) => a.type === "tmap").map((a) => a.tensor), ["A", "B"]);
  const config = {
    grid: gridFor(ck.kernel.grid, sizes),
    block: ck.manifest.block,
    dynamicSmemBytes: ck.manifest.dynamicSmemBytes,
  };
  const s0 = mapStats();
  cuda.launch(fn, config, args);
  checkMaps(ck, bufs, sizes);
  cuda.launch(fn, config, args);
  checkMaps(ck, bufs, sizes);
  assert.equal(mapStats().encoded, s0.encoded + 2, "encoded once for the set");
  assert.equal(mapStats().refused, 0);
  // A broken rule surfaces in kernelArgs, naming the tensor (K = 0: an extent of 0).
  assert.throws(
    () => kernelArgs(ck.manifest, addrs, { ...sizes, K: 0 }, scalars),
    /Tensor map of A: extent 0 of dimension 0 is not 1 \.\. 2\^32/,
  );
});

Deno.test("a broken tensor-map rule is a LaunchError naming the tensor; nothing launched", () => {
  const ck = looselyAligned(hgemmTensorMapKernel());
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const A = cuda.alloc(128 * 64 * 2 + 64);
  const bufs = { A: A.ptr + 4n, B: cuda.alloc(64 * 256 * 2), C: cuda.alloc(128 * 256 * 4) };
  const D = cuda.alloc(128 * 256 * 4);
  const n0 = launches();
  const e0 = mapStats().encoded;
  assert.throws(
    () => k.launch({ ...bufs, D }, { M: 128, N: 256, K: 64 }),
    (e: unknown) =>
      e instanceof LaunchError &&
      e.violations.some((v) =>
        v === `Tensor map of A: address 0x${(A.ptr + 4n).toString(16)} is not 16-byte aligned`
      ),
  );
  // K = 0 passes the contract (no output dimension) but not the map's extents.
  assert.throws(
    () => k.launch({ ...bufs, A, D }, { M: 128, N: 256, K: 0 }),
    (e: unknown) =>
      e instanceof LaunchError &&
      e.violations.includes("Tensor map of A: extent 0 of dimension 0 is not 1 .. 2^32"),
  );
  assert.equal(launches(), n0, "nothing launched");
  assert.equal(mapStats().encoded, e0, "nothing encoded");
  assert.equal(k.launches, 0);
});

Deno.test("a map the driver refuses is a CudaError naming the tensor; nothing launched", () => {
  // No swizzle and a box row of 8 bytes: the driver asks for a multiple of 16 (the rule does not).
  const ck = refusedMapKernel("hgemm_noswz");
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const bufs = {
    A: cuda.alloc(128 * 64 * 2),
    B: cuda.alloc(64 * 256 * 2),
    C: cuda.alloc(128 * 256 * 4),
    D: cuda.alloc(128 * 256 * 4),
  };
  const n0 = launches();
  assert.throws(
    () => k.launch(bufs, { M: 128, N: 256, K: 64 }),
    (e: unknown) =>
      e instanceof CudaError && e.fn === "cuTensorMapEncodeTiled" &&
      e.errorName === "CUDA_ERROR_INVALID_VALUE" && /tensor map of tensor "A"/.test(e.message) &&
      /box \[4,128\], swizzle 0 bytes/.test(e.message),
  );
  assert.equal(launches(), n0);
  // The failed map is not taken for encoded: the next launch tries again (and fails again).
  assert.throws(() => k.launch(bufs, { M: 128, N: 256, K: 64 }), CudaError);
  assert.equal(launches(), n0);
});

Deno.test("a kernel the sm90 lowering gives tensor maps launches with them (loadKernel)", () => {
  const ck = compiledTmaKernel("tma");
  assert.deepEqual(
    ck.manifest.params.map((p) => p.name),
    ["A", "B", "D", "M", "K", "N", "A_tmap", "B_tmap"],
  );
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  const [M, N, K] = [300, 520, 200];
  const bufs = { A: cuda.alloc(M * K * 2), B: cuda.alloc(K * N * 2), D: cuda.alloc(M * N * 4) };
  const refused = mapStats().refused;
  k.launch(bufs, { M, N, K });
  checkMaps(ck, bufs, { M, N, K });
  assert.equal(mapStats().refused, refused);
  assert.equal(k.launches, 1);
});
