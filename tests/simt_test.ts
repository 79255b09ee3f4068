import assert from "node:assert/strict";
import { compile } from "../compiler.ts";
import { simulateGemm } from "../backends/simulate_gemm.ts";
import { simtShape } from "../ir/simt.ts";

function kernel(a: string, b: string, d: string, epilogue: string, sched = "") {
  const r = compile(
    `kernel simt {
  A: f32[M, K] ${a}
  B: f32[K, N] ${b}
${epilogue.includes("bias") ? "  bias: f32[N]\n" : ""}  D: ${d}[M, N] row
  alpha: f32 = 1.0
  D[m, n] = ${epilogue}
  schedule {
    math f32
${sched}  }
}`,
    { file: "simt.gemm" },
  );
  assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
  return r.kernels[0]!;
}

Deno.test("SIMT shape: cells of 8 x 4 lanes tile the warp tile, every element once", () => {
  const s = simtShape(32, 64); // a 4 x 16 micro-tile a lane, in runs of 4 x 4
  assert.equal(s.name, "simt.f32.4x16");
  assert.deepEqual([s.m, s.n, s.a.regs, s.b.regs, s.c.regs], [32, 16, 4, 4, 16]);
  const seen = new Set<string>();
  for (let ti = 0; ti < 32 / s.m; ti++) {
    for (let tj = 0; tj < 64 / s.n; tj++) {
      for (let l = 0; l < 32; l++) {
        for (let r = 0; r < s.c.regs; r++) {
          const [row, col] = s.c.coord(l, r, 0);
          seen.add(`${ti * s.m + row},${tj * s.n + col}`);
        }
      }
    }
  }
  assert.equal(seen.size, 32 * 64);
  // Lane 5 (g 1, tig 1), register 6: row 1 * 4 + 1, column 1 * 4 + 2 of the cell.
  assert.deepEqual(s.c.coord(5, 6, 0), [5, 6]);
  // Runs of 2 where 4 does not divide the micro-tile (16 x 24: 2 x 6 a lane).
  const odd = simtShape(16, 24);
  assert.deepEqual([odd.m, odd.n, odd.c.regs], [16, 8, 4]);
  assert.throws(() => simtShape(20, 64));
});

Deno.test("SIMT: M- and N-contiguous tiles load a run in one ld.shared.v4; two blocks an SM", () => {
  const nt = kernel("col", "row", "f32", "A[m, k] * B[k, n]");
  // Per k-step a warp loads 1 vector of A and 4 of B (4 x 16 micro-tile): 8 k-steps in the
  // loop body, and the first k-step's fragments once more before the loop.
  const vecs = (t: string) => (t.match(/ld\.shared\.v4\.b32/g) ?? []).length;
  const scalars = (t: string) => (t.match(/ld\.shared\.b32/g) ?? []).length;
  assert.equal(vecs(nt.ptx), 5 * (8 + 1));
  assert.equal(scalars(nt.ptx), 0);
  assert.match(nt.ptx, /\.minnctapersm 2\n/);
  assert.match(nt.kernelText, /, 2 blocks per SM\n/);
  // K-contiguous tiles (row-major A, column-major B) load one register at a time.
  const tn = kernel("row", "col", "f32", "A[m, k] * B[k, n]");
  assert.equal(vecs(tn.ptx), 0);
  assert.equal(scalars(tn.ptx), (4 + 16) * (8 + 1));
});

Deno.test("math f32 lowers to fma.rn.f32 from shared memory, no mma", () => {
  const k = kernel("row", "col", "f32", "A[m, k] * B[k, n]");
  assert.equal(k.planned.plan.mma!.shape, "simt.f32.4x16");
  assert.match(k.kernelText, /= mad\.f32 /);
  assert.doesNotMatch(k.kernelText, /= mma /);
  assert.match(k.ptx, /fma\.rn\.f32/);
  assert.doesNotMatch(k.ptx, /mma\.sync/);
});

Deno.test("SIMT agrees with the reference for every layout, sizes on and off the tile", () => {
  const cases: [string, string, string, string, Record<string, number>][] = [
    ["row", "col", "f32", "A[m, k] * B[k, n]", { M: 128, N: 128, K: 64 }],
    ["col", "row", "f32", "alpha * A[m, k] * B[k, n] + bias[n]", { M: 76, N: 52, K: 44 }],
    ["row", "row", "f16", "f16(relu(A[m, k] * B[k, n]))", { M: 130, N: 40, K: 24 }],
    ["col", "col", "bf16", "bf16(A[m, k] * B[k, n] - bias[n])", { M: 64, N: 200, K: 20 }],
  ];
  let seed = 1;
  for (const [a, b, d, e, sizes] of cases) {
    const rep = simulateGemm(kernel(a, b, d, e), sizes, { seed: seed++ });
    assert.ok(rep.ok, `${a}/${b}/${d} ${JSON.stringify(rep.comparison.first)}`);
    assert.equal(rep.sim.hazardCount, 0);
  }
  // A smaller schedule: threadblock 64x64x16, warp 32x32.
  const small = kernel(
    "row",
    "col",
    "f32",
    "A[m, k] * B[k, n]",
    "    threadblock 64x64x16\n    warp 32x32x16\n",
  );
  assert.equal(small.planned.plan.mma!.shape, "simt.f32.4x8");
  assert.ok(simulateGemm(small, { M: 100, N: 92, K: 80 }, { seed: 9 }).ok);
});
