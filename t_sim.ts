import { compile } from "./compiler.ts";
import { simulate } from "./backends/sim/mod.ts";
import { randomArgs } from "./backends/ref/inputs.ts";
import { referenceGemm } from "./backends/ref/reference.ts";
import { compareOutput } from "./backends/ref/compare.ts";
import { gridFor } from "./ir/kernel.ts";
const [file, ...rest] = Deno.args;
const sizes: Record<string, number> = {};
for (const kv of (rest[0] ?? "M=80,N=72,K=256").split(",")) {
  const [k, v] = kv.split("=");
  sizes[k!] = Number(v);
}
const r = compile(Deno.readTextFileSync(file!), { file });
if (!r.ok) {
  console.log(r.diagnostics);
  Deno.exit(1);
}
for (const ck of r.kernels) {
  const args = randomArgs(ck.gemm, sizes, 1);
  const sargs: Record<string, any> = {};
  for (const [n, b] of args.tensors) sargs[n] = { bytes: b };
  for (const [n, v] of args.scalars) sargs[n] = v;
  for (const d of ck.gemm.dims) sargs[d] = sizes[d];
  const grid = gridFor(ck.kernel.grid, sizes);
  const t0 = performance.now();
  let res;
  try {
    res = simulate(ck.kernel, { grid, args: sargs });
  } catch (e) {
    console.log(ck.name, "SIM ERROR", (e as Error).message.slice(0, 600));
    continue;
  }
  const t1 = performance.now();
  const ref = referenceGemm(ck.gemm, args);
  const d = ck.gemm.params.find((p) => p.kind === "tensor" && p.role === "D")!;
  const cmp = compareOutput(args.tensors.get(d.name)!, d.dtype, ref);
  console.log(
    ck.name,
    grid,
    `${(t1 - t0).toFixed(0)}ms`,
    cmp.ok ? "AGREE" : "MISMATCH",
    cmp.overBound,
    "/",
    cmp.elements,
    "relF",
    cmp.relFrobenius.toExponential(2),
    "worst",
    cmp.worstRatio.toFixed(3),
    cmp.first,
    "hazards",
    res.hazards.length,
    res.hazards.slice(0, 2).map((h) => h.kind + ": " + h.message),
  );
}
