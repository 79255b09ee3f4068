/**
 * Ablation kernels for finding where a GEMM kernel's time goes (METHOD.md:
 * time variants that leave one stage out and take differences). From each
 * benchmark kernel (bench/kernels/TYPE.gemm, default schedule, or the
 * schedule lines given) it writes, next to the real kernel:
 *
 * - `copy`: only the global→shared pipeline (cp.async, commit, wait, barriers);
 *   every ldmatrix and mma removed. Its time is the memory side's floor.
 * - `math`: every cp.async removed (commit, wait and barriers kept); the
 *   fragments come from whatever shared memory holds. Its time is the
 *   shared-memory→tensor-core side's floor.
 * - `nostore`: the real kernel whose global stores never happen (guarded by
 *   a predicate false at run time, so nothing becomes dead code): the cost of
 *   writing D.
 *
 * Both compute wrong results on purpose: they are diagnostics, timed by
 * bench/research/gpu_quick.py (whose check then says FAIL), never benchmark results.
 *
 * usage: deno run -A bench/research/ablate.ts OUT_DIR TYPE[:TAG:SCHEDULE;LINES] ...
 *
 * @module
 */

import { compile, ptxModule } from "../../compiler.ts";
import type { Kernel, Op, Reg } from "../../ir/kernel.ts";
import { imm } from "../../ir/builder.ts";
import { kernelManifest } from "../../backends/ptx/manifest.ts";
import { printPtx } from "../../backends/ptx/print.ts";
import { PTX_OPTIONS } from "../../compiler.ts";

type Ablation = "copy" | "math" | "nostore";

function strip(body: readonly Op[], drop: (o: Op) => boolean): Op[] {
  const out: Op[] = [];
  for (const o of body) {
    if (drop(o)) continue;
    if (o.op === "for") out.push({ ...o, body: strip(o.body, drop) });
    else if (o.op === "if") {
      out.push({ ...o, then: strip(o.then, drop), otherwise: strip(o.otherwise, drop) });
    } else out.push(o);
  }
  return out;
}

/** Every global store guarded by a predicate that is false at run time (M is
 * never 0xffffffff), so that nothing is written but nothing is dead code. */
function noStores(k: Kernel, name: string): Kernel {
  const never: Reg = { kind: "reg", id: k.regs.length, type: "pred", name: "never" };
  const m = k.body.find((o): o is Extract<Op, { op: "param" }> =>
    o.op === "param" && o.name === "M"
  );
  if (m === undefined) throw new Error("nostore: the kernel has no parameter M");
  const setp: Op = { op: "setp", cmp: "eq", type: "u32", dst: never, a: m.dst, b: imm(0xffffffff) };
  const guard = (body: readonly Op[]): Op[] =>
    body.map((o): Op => {
      if (o.op === "stg") return { ...o, guard: { pred: never, negate: false } };
      if (o.op === "for") return { ...o, body: guard(o.body) };
      if (o.op === "if") return { ...o, then: guard(o.then), otherwise: guard(o.otherwise) };
      return o;
    });
  const i = k.body.indexOf(m) + 1;
  const body = guard(k.body);
  body.splice(i, 0, setp);
  return { ...k, name, regs: [...k.regs, never], body };
}

/** The kernel with one side of the main loop removed, or its stores (see the module doc). */
export function ablate(k: Kernel, which: Ablation, name: string): Kernel {
  if (which === "nostore") return noStores(k, name);
  const drop = which === "copy"
    ? (o: Op) => o.op === "mma" || o.op === "ldmatrix"
    : (o: Op) => o.op === "cpasync";
  // Removing the math frees registers; keep the real kernel's one block per
  // SM (by shared memory) so that only the removed work differs.
  const dynamicSmemBytes = which === "copy"
    ? Math.max(k.dynamicSmemBytes, 116 * 1024)
    : k.dynamicSmemBytes;
  return { ...k, name, dynamicSmemBytes, body: strip(k.body, drop) };
}

if (import.meta.main) {
  const [out, ...specs] = Deno.args;
  if (out === undefined || specs.length === 0) {
    console.error(
      "usage: deno run -A bench/research/ablate.ts OUT_DIR TYPE[:TAG:SCHEDULE;LINES] ...",
    );
    Deno.exit(2);
  }
  Deno.mkdirSync(out, { recursive: true });
  for (const spec of specs) {
    const [typ, tag = "default", sched] = spec.split(":");
    let src = Deno.readTextFileSync(`bench/kernels/${typ}.gemm`);
    if (sched !== undefined) {
      const lines = sched.split(";").map((l) => `    ${l.trim()}`).join("\n");
      src = src.replace(/\}\s*$/, `  schedule {\n${lines}\n  }\n}\n`);
    }
    const r = compile(src, { file: `${typ}.gemm` });
    if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("\n"));
    const ck = r.kernels[0]!;
    const write = (name: string, kernel: Kernel, ptx: string) => {
      Deno.writeTextFileSync(`${out}/${name}.ptx`, ptx);
      const manifest = { ...kernelManifest(ck.gemm, kernel), entry: kernel.name };
      Deno.writeTextFileSync(`${out}/${name}.json`, JSON.stringify({ kernels: [manifest] }));
    };
    const base = `var_${typ}_${tag}`;
    write(base, ck.kernel, ptxModule(r.kernels));
    for (const a of ["copy", "math", "nostore"] as const) {
      const name = `${base}_abl${a}`;
      const k = ablate(ck.kernel, a, name);
      write(name, k, printPtx([k], PTX_OPTIONS));
    }
    console.log(`${base}: real, copy-only, math-only, no stores`);
  }
}
