/**
 * Writes the kernels of the skinny-shape sweep (issue 22) into OUT for
 * bench/research/llm/sweep.py: for each type and LLM shape, the benchmark kernel
 * compiled as the compiler chooses it today (sizes as hints, 132 SMs:
 * `def_<type>_<M>x<N>x<K>`), and every schedule of variants.txt
 * (`var_<type>_<tag>`, runtime sizes). A list of the shapes goes to OUT/shapes.txt.
 *
 * usage: deno run -A bench/research/llm/gen.ts OUT
 *   TYPES (environment): comma-separated types (default f16)
 *   VARIANTS (environment): the variant list beside this file (default variants.txt)
 *
 * @module
 */
import { compile, ptxModule } from "../../../compiler.ts";
import { LLM_SHAPES } from "../../llm_shapes.ts";
import { writeKernelFiles } from "../_kernel_files.ts";

const out: string = Deno.args[0] ?? (() => {
  console.error("usage: deno run -A bench/research/llm/gen.ts OUT");
  Deno.exit(2);
})();
const here = new URL(".", import.meta.url);
const types = (Deno.env.get("TYPES") ?? "f16").split(",");
Deno.mkdirSync(out, { recursive: true });

function write(name: string, src: string, hints?: Record<string, number>): void {
  const r = compile(src, {
    file: `${name}.gemm`,
    sms: 132,
    ...(hints === undefined ? {} : { sizeHints: hints }),
  });
  if (!r.ok) {
    console.log(`skip ${name}: ${r.diagnostics.map((d) => d.message).join("; ")}`);
    return;
  }
  writeKernelFiles(out, name, ptxModule(r.kernels), r.kernels[0]!.manifest);
  const sch = r.kernels[0]!.planned.schedule;
  const tb = sch.threadblock!;
  console.log(`${name}: ${tb.m}x${tb.n}x${tb.k} stages ${sch.stages} split_k ${sch.splitK}`);
}

const shapes: string[] = [];
for (const t of types) {
  const base = Deno.readTextFileSync(new URL(`../../kernels/${t}.gemm`, here));
  for (const s of LLM_SHAPES.filter((s) => s.types.includes(t))) {
    const name = `def_${t}_${s.M}x${s.N}x${s.K}`;
    write(name, base.replace(/^kernel \w+/m, `kernel ${name}`), { M: s.M, N: s.N, K: s.K });
    shapes.push(`${t} ${s.M} ${s.N} ${s.K}`);
  }
  const list = Deno.env.get("VARIANTS") ?? "variants.txt";
  for (const line of Deno.readTextFileSync(new URL(list, here)).split("\n")) {
    const [typ, tag, ...rest] = line.trim().split(/\s+/);
    if (typ !== t || tag === undefined) continue;
    const sched = rest.join(" ").split(";").map((l) => `    ${l.trim()}`).join("\n");
    const name = `var_${t}_${tag}`;
    const src = base.replace(/^kernel \w+/m, `kernel ${name}`).replace(
      /\}\s*$/,
      `  schedule {\n${sched}\n  }\n}\n`,
    );
    write(name, src);
  }
}
Deno.writeTextFileSync(`${out}/shapes.txt`, shapes.join("\n") + "\n");
