/**
 * The Python artefact on the GPU: the modules of examples/hgemm.gemm,
 * examples/s8_gemm.gemm, examples/splitk.gemm, examples/strided.gemm and
 * examples/python/grouped.gemm (a grouped kernel, DESIGN §6.2) are generated into a
 * temporary directory and examples/python/gemm_torch.py runs them on PyTorch
 * CUDA tensors with each backend (cuda-python, CuPy), against its float64
 * reference (s8 exactly). Listed as skipped, with the reason, where no CUDA
 * driver loads, where python3 has no PyTorch with CUDA, or where a backend's
 * package does not import.
 */

import assert from "node:assert/strict";
import { compile } from "../../compiler.ts";
import { pythonModule } from "../../backends/aot/python.ts";
import { cudaAvailable } from "../../backends/cuda/driver.ts";

const ROOT = new URL("../../", import.meta.url);
const dec = new TextDecoder();

function python3(args: string[]): { code: number; out: string } {
  try {
    const r = new Deno.Command("python3", { args, stdout: "piped", stderr: "piped" }).outputSync();
    return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
  } catch (e) {
    return { code: -1, out: String(e) };
  }
}

/** Why the tests cannot run here, or null. */
function skipReason(): string | null {
  const cuda = cudaAvailable();
  if (!cuda.ok) return "no CUDA driver";
  const torch = python3([
    "-c",
    "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)",
  ]);
  if (torch.code !== 0) return "no python3 with PyTorch and CUDA";
  return null;
}

const SKIP = skipReason();

/** The import that tells whether a backend's package is installed. */
const BACKENDS = [
  [
    "cuda-python",
    "try:\n from cuda.bindings import driver\nexcept ImportError:\n from cuda import cuda",
  ],
  ["cupy", "import cupy"],
] as const;

for (const [backend, probe] of BACKENDS) {
  const missing = SKIP === null && python3(["-c", probe]).code !== 0;
  const why = SKIP ?? (missing ? `${backend} does not import` : null);
  Deno.test({
    name:
      `gemm_torch.py: hgemm, s8, split-K, strided views, grouped agree with PyTorch (${backend})` +
      (why !== null ? ` (skipped: ${why})` : ""),
    ignore: why !== null,
    fn: () => {
      const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_gpu_" });
      try {
        for (const stem of ["hgemm", "s8_gemm", "splitk", "strided"]) {
          const file = `examples/${stem}.gemm`;
          const r = compile(Deno.readTextFileSync(new URL(file, ROOT)), { file });
          assert.ok(r.ok, file);
          Deno.writeTextFileSync(`${dir}/${stem}.py`, pythonModule(r.kernels, { source: file }));
        }
        // A grouped kernel (DESIGN §6.2): gemm_torch.py runs the MoE form and a problem list.
        const grouped = "examples/python/grouped.gemm";
        const g = compile(Deno.readTextFileSync(new URL(grouped, ROOT)), { file: grouped });
        assert.ok(g.ok, grouped);
        Deno.writeTextFileSync(`${dir}/grouped.py`, pythonModule(g.kernels, { source: grouped }));
        const script = new URL("examples/python/gemm_torch.py", ROOT).pathname;
        const run = python3([script, dir, "--backend", backend]);
        console.log(run.out.trimEnd());
        assert.equal(run.code, 0, run.out);
        assert.match(run.out, new RegExp(`^backend ${backend}`, "m"));
        assert.match(run.out, /^\d+ passed, 0 failed$/m);
        assert.doesNotMatch(run.out, /^FAIL/m);
        assert.match(run.out, /^PASS {2}experts\.moe expert 7/m);
      } finally {
        Deno.removeSync(dir, { recursive: true });
      }
    },
  });
}
