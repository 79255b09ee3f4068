/**
 * The Python artefact of kernels with TMA tensor maps (sm90, docs/ARCHITECTURE.md §3.4;
 * hand-built, tests/_tensor_map_manifests.ts), without a GPU: tests/python/check_tmap.py
 * imports the module with check_fakes.py's fake torch and cuda-python and, through ctypes,
 * the fake libcuda (tests/gpu/testdata/fake_libcuda.c, built here), whose
 * `cuTensorMapEncodeTiled` validates as the driver does and records its arguments in the map.
 * Each launch's maps are compared field by field with ir/tensor_map.ts `tensorMapArgs`, at a
 * 64-byte aligned address; a broken rule gives `tensorMapArgs`' own message and launches
 * nothing; a map the driver refuses is an error naming it. Skipped, visibly, where python3 or
 * a C compiler is missing.
 */

import assert from "node:assert/strict";
import { python3 } from "./_python.ts";
import { pythonModule } from "../backends/aot/python.ts";
import type { CompiledKernel } from "../compiler.ts";
import { tensorMapArgs } from "../ir/tensor_map.ts";
import { buildFakeDriver } from "./gpu/_fake_driver.ts";
import {
  compiledTmaKernel,
  hgemmTensorMapKernel,
  looselyAligned,
  refusedMapKernel,
} from "./_tensor_map_manifests.ts";

const PYTHON = python3(["-c", "import sys; print(sys.version_info >= (3, 6))"])?.stdout.trim() ===
  "True";
const why = PYTHON ? "" : " (skipped: no python3 >= 3.6)";

/** A map as the fake records it (fake_libcuda.c), as tensorMapArgs' fields. */
function decode(hex: string) {
  const b = Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16)));
  const dv = new DataView(b.buffer);
  const rank = dv.getUint32(12, true);
  const u64 = (o: number) => Number(dv.getBigUint64(o, true));
  return {
    magic: dv.getUint32(0, true),
    dataType: dv.getUint32(8, true),
    address: dv.getBigUint64(16, true),
    globalDim: Array.from({ length: rank }, (_, d) => u64(24 + 8 * d)),
    globalStrides: Array.from({ length: rank - 1 }, (_, d) => u64(64 + 8 * d)),
    boxDim: Array.from({ length: rank }, (_, d) => dv.getUint32(96 + 4 * d, true)),
    elementStrides: [...b.subarray(116, 116 + rank)],
    flags: [...b.subarray(121, 125)], // interleave, swizzle, l2Promotion, oobFill
  };
}

/** Checks a launch's maps (the fake's records) against tensorMapArgs; returns how many. */
function checkMaps(
  ck: CompiledKernel,
  // deno-lint-ignore no-explicit-any
  launch: any,
  sizes: Record<string, number>,
): number {
  assert.equal(launch.launched, 1, JSON.stringify(launch));
  const maps = ck.manifest.params.filter((q) => q.kind === "tensormap");
  for (const p of maps) {
    const got = launch.params[p.name];
    assert.equal(got.at % 64, 0, `${p.name} at a 64-byte aligned address`);
    const a = tensorMapArgs(p.tmap!, BigInt(launch[p.tmap!.tensor]), sizes);
    assert.deepEqual(decode(got.hex), {
      magic: 0x50414d54,
      dataType: a.dataType,
      address: a.address,
      globalDim: a.globalDim,
      globalStrides: a.globalStrides,
      boxDim: a.boxDim,
      elementStrides: a.globalDim.map(() => 1),
      flags: [0, a.swizzle, a.l2Promotion, 0],
    }, `${ck.name} ${p.name}`);
  }
  return maps.length;
}

const message = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  return "";
};

Deno.test(`Python artefact: tensor maps built by the rule, passed by value${why}`, {
  ignore: !PYTHON,
}, async (t) => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_tmap_" });
  try {
    const lib = await buildFakeDriver(dir);
    if (lib === null) {
      await t.step({ name: "skipped: no C compiler", ignore: true, fn: () => {} });
      return;
    }
    const tma = hgemmTensorMapKernel("tma");
    const real = compiledTmaKernel("real");
    const kernels = [
      tma,
      looselyAligned(hgemmTensorMapKernel("loose")),
      refusedMapKernel("refused"),
      real,
    ];
    Deno.writeTextFileSync(`${dir}/tmap.py`, pythonModule(kernels));
    const py = new URL("python/check_tmap.py", import.meta.url).pathname;
    const r = new Deno.Command("python3", {
      args: [py, dir],
      env: { GEMMC_LIBCUDA: lib },
      stdout: "piped",
      stderr: "piped",
    }).outputSync();
    const dec = new TextDecoder();
    const out = dec.decode(r.stdout) + dec.decode(r.stderr);
    assert.equal(r.code, 0, out);
    const rec = JSON.parse(/^RECORDS (.*)$/m.exec(out)![1]!);
    const [M, K, N] = [200, 136, 264];
    const ok = rec.ok;
    assert.equal(checkMaps(tma, ok, { M, K, N }), 2);
    assert.equal(checkMaps(real, rec.real, { M, K, N }), 2);
    assert.equal(ok.params.A, ok.A, "the tensor's own address stays in its place");
    assert.equal(ok.params.K, K);
    const specs = tma.manifest.params.flatMap((p) => p.tmap === undefined ? [] : [p.tmap]);
    const spec = specs.find((s) => s.tensor === "A")!;
    assert.deepEqual(rec.zeroK, {
      error: "GemmcLaunchError",
      lines: specs.map((s) => message(() => tensorMapArgs(s, 0n, { M, K: 0, N }))),
      launched: 0,
    });
    assert.deepEqual(rec.misaligned.lines, [
      message(() => tensorMapArgs(spec, BigInt(rec.misaligned.A), { M, K, N })),
    ]);
    assert.match(rec.misaligned.lines[0], /^Tensor map of A: address 0x[0-9a-f]+4 is not 16-byte/);
    assert.equal(rec.misaligned.launched, 0);
    assert.equal(rec.refused.error, "RuntimeError");
    assert.equal(rec.refused.launched, 0);
    assert.match(
      rec.refused.lines[0],
      /cuTensorMapEncodeTiled failed \(CUresult 1\) for the tensor map A_tmap of tensor "A"/,
    );
    assert.match(rec.doc, /A_tmap: tensor A as float16, extents \[K, M\] \(innermost first\)/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
