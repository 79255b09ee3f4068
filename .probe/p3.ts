import { parseProgram } from "../dsl/parse.ts";
import { renderDiagnostic } from "../dsl/diagnostics.ts";
const progs: string[] = [
  "kernel {\n}",
  "kernel k\n  A: f16[M]\n}",
  "kernel k {\n  A f16[M, K]\n}",
  "kernel k {\n  A: f16[M, K\n}",
  "kernel k {\n  A: f16[]\n}",
  "kernel k {\n  A: f16[M,]\n}",
  "kernel k {\n  A: f16[M, K] diag\n}",
  "kernel k {\n  A: f16[M, K] row align\n}",
  "kernel k {\n  A: f16[M, K] row align x\n}",
  "kernel k {\n  A: f16[M, 6.4]\n}",
  "kernel k {\n  alpha: f32 = \n}",
  "kernel k {\n  alpha: f32 = 1.\n}",
  "kernel k {\n  alpha: f32 = .5\n}",
  "kernel k {\n  alpha: f32 = 1e\n}",
  "kernel k {\n  D[m, n] = A[m, k] * \n}",
  "kernel k {\n  D[m, n] = A[m, k] * B[k, n\n}",
  "kernel k {\n  D[m, n] = (A[m, k] * B[k, n]\n}",
  "kernel k {\n  D[m, n] = A[m, k] / B[k, n]\n}",
  "kernel k {\n  D[m, n] = A[m, k] ** B[k, n]\n}",
  "kernel k {\n  D[m, n] = popc(A[m, k] | B[k, n])\n}",
  "kernel k {\n  D[m, n] = popc(A[m, k] * B[k, n])\n}",
  "kernel k {\n  D[m, n] = A[m, k] & B[k, n]\n}",
  "kernel k {\n  D[] = A[m, k]\n}",
  "kernel k {\n  D = A[m, k]\n}",
  "kernel k {\n  D[m, n] == A[m, k]\n}",
  "kernel k {\n  schedule\n}",
  "kernel k {\n  schedule {\n    stages 3\n}",
  "kernel k {\n  schedule {\n    128x128x32\n  }\n}",
  "kernel k {\n  schedule {\n    threadblock 128x128x32,\n  }\n}",
  "kernel row {\n}",
  "kernel k {\n  row: f16[M]\n}",
  "kernel k {\n  A: f16[M, K] /* c */\n}",
  "kernel k {\n}\n}",
  "kernel k {\n  A: f16[M, K] row col\n}",
  "kernel k {\n  A: f16[M, K] align 8 row\n}",
  "kernel k {\n  D[m, n] = relu(A[m, k] * B[k, n]\n}",
  "kernel k {\n  D[m, n] = clamp(x,, 1)\n}",
  "kernel k {\n  D[m, n] = A[m, k] * B[k, n] +\n}",
  "kernel k {\n  D[m, n] = 1.5.2\n}",
  "kernel k { A: f16[M, K] } kernel",
  "kernel 1k {\n}",
  "kernel k {\n  A: F16[M, K]\n}",
  "kernel k {\n  A: f16(M, K)\n}",
];
for (const p of progs) {
  const r = parseProgram(p, "x.gemm");
  console.log("#", JSON.stringify(p));
  if (r.ok) console.log("ACCEPTED");
  else console.log(renderDiagnostic(r.diagnostics[0]!, p));
}
