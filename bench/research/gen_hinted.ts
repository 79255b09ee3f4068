/**
 * Writes the benchmark's default kernels, compiled as bench/gpu_bench.ts
 * compiles them (the sizes as hints, 132 SMs), as
 * `var_<kernel>_<M>x<N>x<K>_<tag>.{ptx,json}` into OUT for the Python probes
 * (bench/research/gpu_quick.py, ab_probe.py, sustained_probe.py). Run it once with the
 * compiler of the old commit (ROOT: a checkout of it) and once with this one,
 * with different tags, into one folder to compare a compiler change kernel
 * for kernel.
 *
 * usage: deno run -A bench/research/gen_hinted.ts OUT TAG [ROOT]
 *   ROOT: the checkout whose compiler to use (default: this one). The kernels
 *     are this checkout's: bench/kernels/NAME.gemm or bench/research/probes/NAME.gemm.
 *   KERNELS (environment): comma-separated names (default f16,bf16,tf32,s8)
 *   SHAPES (environment): comma-separated MxNxK (default 4096³, 8192³ and
 *     128x8192x8192)
 */
import { existsSync } from "node:fs";
import type { CompileOptions, CompileResult } from "../../compiler.ts";
import { writeKernelFiles } from "./_kernel_files.ts";

const [out, tag, root = new URL("../..", import.meta.url).pathname] = Deno.args;
if (out === undefined || tag === undefined) {
  console.error("usage: deno run -A bench/research/gen_hinted.ts OUT TAG [ROOT]");
  Deno.exit(2);
}
const here = new URL(".", import.meta.url).pathname;
const { compile, ptxModule } = await import(`${root}/compiler.ts`) as {
  compile: (src: string, o: CompileOptions) => CompileResult;
  ptxModule: (ks: unknown) => string;
};
const kernels = (Deno.env.get("KERNELS") ?? "f16,bf16,tf32,s8").split(",");
const shapes = (Deno.env.get("SHAPES") ?? "4096x4096x4096,8192x8192x8192,128x8192x8192")
  .split(",").map((s) => s.split("x").map(Number));
Deno.mkdirSync(out, { recursive: true });
for (const t of kernels) {
  const file = [`${here}../kernels/${t}.gemm`, `${here}probes/${t}.gemm`].find(existsSync);
  if (file === undefined) {
    throw new Error(`no bench/kernels/${t}.gemm or bench/research/probes/${t}.gemm`);
  }
  for (const [M, N, K] of shapes) {
    const name = `var_${t}_${M}x${N}x${K}_${tag}`;
    const src = Deno.readTextFileSync(file).replace(/^kernel \w+/m, `kernel ${name}`);
    const r = compile(src, { file: `${name}.gemm`, sizeHints: { M: M!, N: N!, K: K! }, sms: 132 });
    if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
    writeKernelFiles(out, name, ptxModule(r.kernels), r.kernels[0]!.manifest);
  }
}
