import assert from "node:assert/strict";
import { check } from "../compiler.ts";

function aligns(src: string): Record<string, number> {
  const r = check(src, { file: "lit.gemm" });
  assert.deepEqual(r.diagnostics, []);
  const out: Record<string, number> = {};
  for (const p of r.kernels[0]!.params) if (p.kind === "tensor") out[p.name] = p.align;
  return out;
}

Deno.test("default alignment follows a literal contiguous dimension", () => {
  // 5000 = 8 * 625: s8 rows start on 8-byte boundaries, not 16.
  assert.deepEqual(
    aligns(`kernel k {
      A: s8[5000, 5000] row
      B: s8[5000, 5000] col
      D: s32[5000, 5000] row
      D[m, n] = A[m, k] * B[k, n] }`),
    { A: 8, B: 8, D: 4 },
  );
  // 100 = 4 * 25: f16 rows on 8-byte boundaries (align 4); a col-major B's contiguous dim is K.
  assert.deepEqual(
    aligns(`kernel k {
      A: f16[M, 100] row
      B: f16[100, N] col
      D: f32[M, N] row
      D[m, n] = A[m, k] * B[k, n] }`),
    { A: 4, B: 4, D: 4 },
  );
  // A symbolic or 16-byte-multiple literal keeps the 16-byte default; an explicit align wins.
  assert.deepEqual(
    aligns(`kernel k {
      A: f16[M, 64] row
      B: f16[64, 100] col align 2
      D: f32[M, 100] row
      D[m, n] = A[m, k] * B[k, n] }`),
    { A: 8, B: 2, D: 4 },
  );
});
