/**
 * Writes the benchmark's default kernels, compiled as bench/gpu_bench.ts
 * compiles them (the sizes as hints, 132 SMs), as
 * `var_<type>_<M>x<N>x<K>_<tag>.{ptx,json}` into OUT for the Python probes
 * (bench/gpu_quick.py, ab_probe.py, sustained_probe.py). Run it once in a
 * worktree of the old commit and once in the new one, with different tags,
 * into one folder to compare a compiler change kernel for kernel.
 *
 * usage: deno run -A bench/gen_hinted.ts OUT TAG [ROOT]
 *   ROOT: the checkout whose bench/kernels/*.gemm to read (default: this one)
 */
import { compile, ptxModule } from "../compiler.ts";

const [out, tag, root = new URL("..", import.meta.url).pathname] = Deno.args;
if (out === undefined || tag === undefined) {
  console.error("usage: deno run -A bench/gen_hinted.ts OUT TAG [ROOT]");
  Deno.exit(2);
}
const shapes = [[4096, 4096, 4096], [8192, 8192, 8192], [128, 8192, 8192]];
Deno.mkdirSync(out, { recursive: true });
for (const t of ["f16", "bf16", "tf32", "s8"]) {
  for (const [M, N, K] of shapes) {
    const name = `var_${t}_${M}x${N}x${K}_${tag}`;
    const src = Deno.readTextFileSync(`${root}/bench/kernels/${t}.gemm`)
      .replace(`kernel bench_${t}`, `kernel ${name}`);
    const r = compile(src, { file: `${name}.gemm`, sizeHints: { M: M!, N: N!, K: K! }, sms: 132 });
    if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
    Deno.writeTextFileSync(`${out}/${name}.ptx`, ptxModule(r.kernels));
    Deno.writeTextFileSync(
      `${out}/${name}.json`,
      JSON.stringify({ kernels: [r.kernels[0]!.manifest] }, null, 2) + "\n",
    );
  }
}
