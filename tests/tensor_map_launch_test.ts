/**
 * The launchers' tensor-map plumbing without a driver (backends/cuda/tensor_map.ts,
 * params.ts, launch.ts, bind.ts; sm90's TMA, docs/ARCHITECTURE.md §3.4): where the maps may
 * stand in the ABI, the 128-byte slots at 64-byte aligned addresses, the rule's violations
 * named before anything is encoded, a driver without `cuTensorMapEncodeTiled` refused by
 * name. The maps reaching a driver: tests/gpu/testdata/fake_tmap_check.ts.
 */

import assert from "node:assert/strict";
import { packKernelParams } from "../backends/cuda/params.ts";
import {
  tensorMapParams,
  tensorMapProblem,
  withoutTensorMaps,
} from "../backends/cuda/tensor_map.ts";
import { kernelArgs } from "../backends/cuda/launch.ts";
import { LaunchBinder } from "../backends/cuda/bind.ts";
import { launchContract } from "../backends/ptx/contract.ts";
import type { Driver } from "../backends/cuda/symbols.ts";
import type { TensorMapArgs } from "../ir/tensor_map.ts";
import { compiledTmaKernel } from "./_tensor_map_manifests.ts";

const ck = compiledTmaKernel("tma");

Deno.test("tensor maps come last, each of a tensor of the kernel", () => {
  assert.deepEqual(tensorMapParams(ck.manifest).map((m) => [m.param, m.name, m.spec.tensor]), [
    [6, "A_tmap", "A"],
    [7, "B_tmap", "B"],
  ]);
  const params = ck.manifest.params;
  const early = { ...ck.manifest, params: [params[6]!, ...params.slice(0, 6), params[7]!] };
  assert.throws(() => tensorMapParams(early), /parameter "A" comes after tensor map "A_tmap"/);
  const stray = {
    ...ck.manifest,
    params: [...params.slice(0, 6), { ...params[6]!, tmap: { ...params[6]!.tmap!, tensor: "X" } }],
  };
  assert.throws(() => tensorMapParams(stray), /tensor map "A_tmap" maps "X", not a tensor of it/);
  const bare = withoutTensorMaps(ck.manifest);
  assert.deepEqual(bare.params.map((p) => p.name), ["A", "B", "D", "M", "K", "N"]);
  // Every other parameter keeps its index in the contract.
  assert.deepEqual(launchContract(bare).dims.map((d) => d.param), [3, 4, 5]);
});

Deno.test("packKernelParams: a map's 128 bytes at a 64-byte aligned slot, others 8 bytes", () => {
  for (let lead = 0; lead < 10; lead++) {
    const map = new Uint8Array(128).map((_, i) => i + 1);
    const p = packKernelParams([
      ...Array.from({ length: lead }, (_, i) => ({ type: "u32" as const, value: i })),
      { type: "tmap", tensor: "A", value: map },
      { type: "u64", value: 7n },
      { type: "tmap", tensor: "B", value: map },
    ]);
    const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(p.values)));
    p.offsets.forEach((o, i) => assert.equal(p.pointers[i], base + BigInt(o)));
    for (const i of [lead, lead + 2]) {
      assert.equal(p.pointers[i]! % 64n, 0n, `map ${i} after ${lead}`);
      assert.deepEqual(new Uint8Array(p.values, p.offsets[i]!, 128), map);
    }
    assert.equal(p.offsets[lead + 1], p.offsets[lead]! + 128);
    assert.equal(new DataView(p.values).getBigUint64(p.offsets[lead + 1]!, true), 7n);
    for (let i = 0; i < lead; i++) assert.equal(p.offsets[i], 8 * i);
  }
  assert.throws(
    () => packKernelParams([{ type: "tmap", tensor: "A", value: new Uint8Array(64) }]),
    /the tensor map of A has 64 bytes, not 128/,
  );
  const args = {} as TensorMapArgs;
  assert.throws(
    () => packKernelParams([{ type: "tmap", tensor: "A", value: args }]),
    /the tensor map of A needs an encoder/,
  );
  // With an encoder: called with the map's arguments, its tensor and its aligned slot.
  const seen: [TensorMapArgs, string, bigint][] = [];
  const p = packKernelParams([{ type: "u32", value: 1 }, {
    type: "tmap",
    tensor: "A",
    value: args,
  }], (a, t, dst) => {
    seen.push([a, t, BigInt(Deno.UnsafePointer.value(dst))]);
  });
  assert.deepEqual(seen, [[args, "A", p.pointers[1]!]]);
});

Deno.test("kernelArgs: maps as their rule at the tensor's address and the sizes", () => {
  const tensors = new Map([["A", 0x10000n], ["B", 0x20000n], ["D", 0x30000n]]);
  const args = kernelArgs(ck.manifest, tensors, { M: 300, N: 520, K: 200 }, new Map());
  const maps = args.filter((a) => a.type === "tmap");
  assert.deepEqual(maps.map((a) => a.tensor), ["A", "B"]);
  const a = maps[0]!.value as TensorMapArgs;
  assert.deepEqual([a.address, a.globalDim, a.globalStrides], [0x10000n, [200, 300], [400]]);
  assert.throws(
    () =>
      kernelArgs(
        ck.manifest,
        new Map([...tensors, ["A", 0x10008n]]),
        { M: 1, N: 1, K: 8 },
        new Map(),
      ),
    /Tensor map of A: address 0x10008 is not 16-byte aligned$/,
  );
});

Deno.test("LaunchBinder: a broken rule is a violation, and nothing is encoded", () => {
  const encoded: string[] = [];
  const b = new LaunchBinder(
    ck.manifest,
    launchContract(withoutTensorMaps(ck.manifest)),
    null,
    (_a, t) => {
      encoded.push(t);
    },
  );
  const bufs = { A: 0x10000n, B: 0x20000n, D: 0x30000n };
  assert.deepEqual(b.bind(bufs, { M: 64, N: 64, K: 0 }, {}), [
    "Tensor map of A: extent 0 of dimension 0 is not 1 .. 2^32",
    "Tensor map of B: extent 0 of dimension 0 is not 1 .. 2^32",
  ]);
  assert.deepEqual(encoded, []);
  assert.equal(b.bind(bufs, { M: 64, N: 64, K: 64 }, {}), null);
  assert.deepEqual(encoded, ["A", "B"]);
  assert.equal(b.bind(bufs, { M: 64, N: 64, K: 64 }, {}), null);
  assert.deepEqual(encoded, ["A", "B"], "unchanged inputs: nothing encoded again");
  assert.equal(b.bind({ ...bufs, B: 0x40000n }, { M: 64, N: 64, K: 64 }, {}), null);
  assert.deepEqual(encoded, ["A", "B", "B"]);
  assert.throws(
    () => new LaunchBinder(ck.manifest, launchContract(withoutTensorMaps(ck.manifest)), null),
    /has tensor maps: its binder needs an encoder/,
  );
});

Deno.test("a driver without cuTensorMapEncodeTiled: a kernel with maps is refused by name", () => {
  const old = { path: "/old/libcuda.so.1", cuTensorMapEncodeTiled: null } as unknown as Driver;
  assert.equal(
    tensorMapProblem(old, ck.manifest),
    'Kernel "tma": the tensor map of tensor "A" needs cuTensorMapEncodeTiled, which the CUDA ' +
      "driver /old/libcuda.so.1 lacks (CUDA 12.0 or newer is needed for sm90's TMA kernels)",
  );
  assert.equal(tensorMapProblem(old, withoutTensorMaps(ck.manifest)), null);
  const fine = { path: "x", cuTensorMapEncodeTiled: () => 0 } as unknown as Driver;
  assert.equal(tensorMapProblem(fine, ck.manifest), null);
});
