import { check, formatDiagnostics } from "../compiler.ts";
import { printGemm } from "../ir/print_gemm.ts";
const decl = "  A: f16[M, K] row\n  B: f16[K, N] col\n  C: f32[M, N]\n  D: f32[M, N]\n  bias: f32[N]\n  alpha: f32 = -1.5e-3\n";
const stmts = [
  "D[m, n] = (A[m, k]) * B[k, n] + C[m,n] + bias[n] + alpha",
  "D[m, n] = alpha * (A[m, k]) * B[k, n] + C[m,n] + bias[n]",
  "D[m, n] = -A[m, k] * B[k, n] + C[m,n] + bias[n] + alpha",
  "D[m, n] = -(A[m, k] * B[k, n]) + C[m,n] + bias[n] * alpha",
  "D[m, n] = A[m, k] * -B[k, n] + C[m,n] - bias[n] - alpha",
  "D[m, n] = 2 * A[m, k] * 3.0 * B[k, n] * 1e2 + C[m,n] + bias[n] * alpha",
  "D[m, n] = max(min(A[m, k] * B[k, n], 6.0), abs(C[m,n])) + sigmoid(bias[n]) + alpha",
  "D[m, n] = clamp(A[m, k] * B[k, n], -1, 1) + C[m,n] + bias[n] + alpha",
  "D[m, n] = f32(A[m, k] * B[k, n]) + C[m,n] + bias[n] + alpha",
  "D[m, n] = - - A[m, k] * B[k, n] + C[m,n] + bias[n] + alpha",
];
for (const s of stmts) {
  const src = `kernel k {\n${decl}  ${s}\n}\n`;
  const r = check(src, { file: "p.gemm" });
  console.log("#", s);
  if (r.diagnostics.length) console.log(formatDiagnostics(r.diagnostics, src));
  else console.log(printGemm(r.kernels[0]!).split("\n").filter(l => /epilogue|scalar/.test(l)).join("\n"));
}
