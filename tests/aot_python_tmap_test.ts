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
import { python3, pythonCheck } from "./_python.ts";
import { pythonModule } from "../backends/aot/python.ts";
import type { CompiledKernel } from "../compiler.ts";
import { tensorMapArgs } from "../ir/tensor_map.ts";
import { gridFor } from "../ir/kernel.ts";
import { buildFakeDriver } from "./gpu/_fake_driver.ts";
import {
  compiledTmaKernel,
  expectedMapRecord,
  FAKE_MAP_MAGIC,
  fakeMapRecord,
  hgemmTensorMapKernel,
  looselyAligned,
  refusedMapKernel,
} from "./_tensor_map_manifests.ts";

const PYTHON = python3(["-c", "import sys; print(sys.version_info >= (3, 6))"])?.stdout.trim() ===
  "True";
const why = PYTHON ? "" : " (skipped: no python3 >= 3.6)";

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
    const rec = fakeMapRecord(
      Uint8Array.from(got.hex.match(/../g)!.map((h: string) => parseInt(h, 16))),
    );
    assert.equal(rec.magic, FAKE_MAP_MAGIC, `${ck.name} ${p.name}: a map the fake encoded`);
    assert.deepEqual(rec.map, expectedMapRecord(a), `${ck.name} ${p.name}`);
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
    const clustered = compiledTmaKernel("clustered", "cluster 2");
    const clusteredN = compiledTmaKernel("clusteredn", "cluster 1x2");
    const kernels = [
      tma,
      looselyAligned(hgemmTensorMapKernel("loose")),
      refusedMapKernel("refused"),
      real,
      clustered,
      clusteredN,
    ];
    Deno.writeTextFileSync(`${dir}/tmap.py`, pythonModule(kernels));
    // deno-lint-ignore no-explicit-any
    const rec = pythonCheck("check_tmap.py", [dir], { GEMMC_LIBCUDA: lib }).records as any;
    const [M, K, N] = [200, 136, 264];
    const ok = rec.ok;
    assert.equal(checkMaps(tma, ok, { M, K, N }), 2);
    assert.equal(checkMaps(real, rec.real, { M, K, N }), 2);
    // The persistent grid of the sm90 lowering's kernel: the module's rule is gridFor's.
    assert.notEqual(real.kernel.grid.persistent, undefined);
    assert.deepEqual(rec.real.grid, gridFor(real.kernel.grid, { M, K, N }));
    assert.deepEqual(ok.grid, gridFor(tma.kernel.grid, { M, K, N }));
    // On clusters of 2 (M = 300: 2 units a tile column, 2 CTAs each): B's box half as tall,
    // the grid by gridFor's cluster rule.
    assert.equal(checkMaps(clustered, rec.clustered, { M: 300, K, N }), 2);
    assert.deepEqual(rec.clustered.grid, gridFor(clustered.kernel.grid, { M: 300, K, N }));
    assert.deepEqual(rec.clustered.grid, [8, 1, 1]);
    // Along N: A's box half as tall, 3 units of the 2 tiles of a row.
    assert.equal(checkMaps(clusteredN, rec.clusteredn, { M: 300, K, N }), 2);
    assert.deepEqual(rec.clusteredn.grid, gridFor(clusteredN.kernel.grid, { M: 300, K, N }));
    assert.deepEqual(rec.clusteredn.grid, [6, 1, 1]);
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
