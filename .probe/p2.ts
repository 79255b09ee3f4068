import { check, formatDiagnostics } from "../compiler.ts";
import { printGemm } from "../ir/print_gemm.ts";
const base = "kernel k {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  D: f32[M, N]\n  D[m, n] = A[m, k] * B[k, n]\n";
for (const s of Deno.args) {
  const src = s.includes("kernel") ? s.replaceAll("\\n", "\n") : base + s.replaceAll("\\n", "\n") + "\n}\n";
  const r = check(src, { file: "p.gemm" });
  console.log("#", JSON.stringify(s));
  if (r.diagnostics.length) console.log(formatDiagnostics(r.diagnostics, src));
  for (const k of r.kernels) console.log(printGemm(k));
}
