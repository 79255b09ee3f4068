/**
 * Programmatic dependent launch in the Python artefact (backends/aot/_python_pdl.ts), without a
 * GPU: tests/python/check_pdl.py imports the modules with check_fakes.py's fake torch, CuPy
 * and cuda-python (whose `cuLaunchKernelEx` validates the `CUlaunchConfig` and its attribute
 * and refuses anything else) and, for the sm90 module's tensor maps, the fake libcuda
 * (tests/gpu/testdata/fake_libcuda.c) through ctypes. Every call with `pdl=True` launches
 * through `cuLaunchKernelEx` with the attribute and exactly what the same call with
 * `pdl=False` gave `cuLaunchKernel`; the CuPy backend and bindings without `cuLaunchKernelEx`
 * raise a RuntimeError naming them, nothing launched or allocated. Here each recorded PDL
 * launch's grid is compared with the contract's (ordinary kernels) or the persistent grid over
 * the problems' tiles (grouped kernels). Skipped, visibly, where python3 does not run; without
 * a C compiler the sm90 module is left out (failed under CI=true).
 */

import assert from "node:assert/strict";
import { python3, pythonCheck } from "./_python.ts";
import { compile, type CompiledKernel } from "../compiler.ts";
import { pythonModule } from "../backends/aot/python.ts";
import { contractGrid, launchContract } from "../backends/ptx/contract.ts";
import { groupedGrid, problemTiles } from "../ir/grid.ts";
import { withoutTensorMaps } from "../backends/cuda/tensor_map.ts";
import { buildFakeDriver } from "./gpu/_fake_driver.ts";
import { GROUPED_ARTEFACT_SOURCE, HGEMM_CAB_SOURCE, splitKArtefactSource } from "./_programs.ts";

const PYTHON = python3(["-c", "import sys; print(sys.version_info >= (3, 6))"])?.stdout.trim() ===
  "True";
const why = PYTHON ? "" : " (skipped: no python3 >= 3.6)";
const CI = Deno.env.get("CI") === "true";

const PLAIN = `
${HGEMM_CAB_SOURCE}
${splitKArtefactSource("skinny_splitk")}
kernel s8k {
  A: s8[M, K] row
  B: s8[K, N] col
  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}
`;

function kernels(src: string, target?: "sm90"): CompiledKernel[] {
  const r = compile(src, target === undefined ? {} : { target });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return [...r.kernels];
}

/** One PDL launch as check_pdl.py records it. */
interface PdlRecord {
  kind: string;
  kernel: string;
  sizes: Record<string, number> | Record<string, number>[];
  via: string;
  attrs: [number, number][];
  grid: number[];
  block: number[];
  smem: number;
}

/** The fake cuda-python's SMs and blocks per SM (check_fakes.py FakeDriver). */
const RESIDENT = 132 * 3;

Deno.test(`Python artefact: pdl=True launches through cuLaunchKernelEx with the attribute${why}`, {
  ignore: !PYTHON,
}, async () => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_pdl_" });
  try {
    const plain = kernels(PLAIN);
    const grouped = kernels(GROUPED_ARTEFACT_SOURCE);
    const sm90 = kernels(PLAIN.split("kernel skinny_splitk")[0]! + GROUPED_ARTEFACT_SOURCE, "sm90");
    Deno.writeTextFileSync(`${dir}/plain.py`, pythonModule(plain));
    Deno.writeTextFileSync(`${dir}/grouped.py`, pythonModule(grouped));
    Deno.writeTextFileSync(`${dir}/sm90.py`, pythonModule(sm90));
    const lib = await buildFakeDriver(dir);
    if (lib === null && CI) assert.fail("no C compiler for the fake libcuda and CI=true");
    const run = pythonCheck("check_pdl.py", [dir], lib === null ? {} : { GEMMC_LIBCUDA: lib });
    assert.match(run.out, /\d+ checks passed, 0 failed/);
    const records = run.records as PdlRecord[];
    const kinds = [
      "hgemm",
      "hgemm, current stream",
      "split-K",
      "s8k, CuPy arrays",
      "grouped",
      "one problem",
      "moe",
      "gs",
    ];
    const sm90Kinds = ["sm90 hgemm", "sm90 grouped", "sm90 one problem", "sm90 moe"];
    assert.deepEqual(records.map((x) => x.kind), [...kinds, ...(lib === null ? [] : sm90Kinds)]);
    for (const rec of records) {
      const ks = rec.kind.startsWith("sm90") ? sm90 : [...plain, ...grouped];
      const k = ks.find((x) => x.name === rec.kernel)!;
      assert.equal(rec.via, "cuLaunchKernelEx", rec.kind);
      // Exactly one attribute: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, allowed.
      assert.deepEqual(rec.attrs, [[6, 1]], rec.kind);
      assert.deepEqual(rec.block, [...k.manifest.block], rec.kind);
      assert.equal(rec.smem, k.manifest.dynamicSmemBytes, rec.kind);
      const grid = Array.isArray(rec.sizes)
        ? groupedGrid(
          rec.sizes.reduce((n, s) => n + problemTiles(k.kernel.grid, s), 0),
          RESIDENT,
        )
        : contractGrid(launchContract(withoutTensorMaps(k.manifest)), rec.sizes);
      assert.deepEqual(rec.grid, grid, rec.kind);
    }
    // Every grid dimension counts: split-K's z is its 4 splits.
    assert.equal(records.find((x) => x.kind === "split-K")!.grid[2], 4);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
