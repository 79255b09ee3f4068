import assert from "node:assert/strict";
import { compile } from "../compiler.ts";
import { simulateGemm } from "../backends/simulate_gemm.ts";

const SRC = Deno.readTextFileSync(new URL("../examples/hgemm_f16acc.gemm", import.meta.url));

Deno.test("size hints choose a smaller default tile for a skinny problem, still correct", () => {
  const plain = compile(SRC, { file: "hgemm_f16acc.gemm" });
  const tuned = compile(SRC, {
    file: "hgemm_f16acc.gemm",
    sizeHints: { M: 128, N: 2048, K: 256 },
  });
  assert.ok(plain.ok && tuned.ok);
  const tb = (r: typeof plain) => r.kernels[0]!.planned.plan.tile!.threadblock;
  assert.deepEqual([tb(plain).m, tb(plain).n], [128, 256]);
  // 128x256 tiles give 8 blocks; the hints shrink the tile until the grid fills more SMs.
  assert.deepEqual([tb(tuned).m, tb(tuned).n], [64, 64]);
  assert.equal(tuned.kernels[0]!.planned.plan.warp!.threads, 128);
  // The hinted kernel is correct at other sizes too: hints shape the schedule only.
  for (const sizes of [{ M: 128, N: 2048, K: 256 }, { M: 77, N: 40, K: 96 }]) {
    const rep = simulateGemm(tuned.kernels[0]!, sizes, { seed: 5 });
    assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
  }
});
