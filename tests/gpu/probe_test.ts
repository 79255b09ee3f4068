/**
 * The fragment-layout probe (harness/mma_probe.ts). On the simulator, here:
 * every MMA table row passes, and the probe catches a table row whose C/D map
 * or A map is wrong. With ptxas, the probe kernels assemble. On a GPU: every
 * row's layouts agree with the hardware, and the raw D registers equal the
 * simulator's.
 */

import assert from "node:assert/strict";
import { type FragmentMap, MMA_SHAPES, type MmaShape } from "../../ir/mma_table.ts";
import { evaluateProbe, formatProbe, probeKernel, runProbe } from "../../harness/mma_probe.ts";
import { simProbeLauncher } from "../../harness/mma_probe_common.ts";
import { cudaAvailable } from "../../backends/cuda/driver.ts";
import { printPtx } from "../../backends/ptx/print.ts";
import { findPtxas, runPtxas } from "../../backends/ptx/ptxas.ts";

const CUDA = cudaAvailable();

Deno.test("probe on the simulator: every MMA table row agrees with the table", async () => {
  const rs = await runProbe({ mode: "sim" });
  assert.equal(rs.length, MMA_SHAPES.length);
  for (const r of rs) {
    assert.ok(r.ok, `${r.shape}: ${JSON.stringify(r.cMap.mismatches)}`);
    assert.equal(r.cMap.agree, r.cMap.total);
    assert.equal(r.product.agree, r.product.total);
    assert.equal(r.simIdentical, null);
  }
  assert.match(formatProbe(rs), /All 29 MMA shapes agree with the table \(sim\)\n$/);
});

function mutate(map: FragmentMap, coord: FragmentMap["coord"]): FragmentMap {
  return { ...map, coord };
}

Deno.test("the probe catches a wrong C/D map and a wrong A map", () => {
  for (const s of [MMA_SHAPES[0]!, MMA_SHAPES.find((x) => x.aType === "s4")!]) {
    const launch = simProbeLauncher(s);
    // C/D: lanes 0 and 1 swapped.
    const badC: MmaShape = {
      ...s,
      c: mutate(s.c, (l, r, e) => s.c.coord(l === 0 ? 1 : l === 1 ? 0 : l, r, e)),
    };
    const rc = evaluateProbe(badC, "sim", launch, null, 1);
    assert.ok(!rc.ok);
    assert.equal(rc.cMap.total - rc.cMap.agree, 2 * s.c.regs * s.c.elemsPerReg);
    const m = rc.cMap.mismatches[0]!;
    // What the launch shows is the real position; the (wrong) table says the other lane's.
    assert.deepEqual(m.observed, s.c.coord(m.lane, m.reg, m.elem));
    assert.deepEqual(m.table, s.c.coord(m.lane === 0 ? 1 : 0, m.reg, m.elem));
    // A: elements 0 and 1 of register 0 swapped (two k of one row): the product breaks.
    const badA: MmaShape = {
      ...s,
      a: mutate(s.a, (l, r, e) => s.a.coord(l, r, r === 0 && e < 2 ? 1 - e : e)),
    };
    const ra = evaluateProbe(badA, "sim", launch, null, 1);
    assert.ok(!ra.ok);
    assert.ok(ra.product.agree < ra.product.total, `${s.name}: a wrong A map went unseen`);
    assert.match(formatProbe([rc, ra]), /2 of 2 MMA shapes disagree with the table/);
  }
});

Deno.test("the probe kernels assemble with ptxas for sm_80", async (t) => {
  const bin = findPtxas();
  if (bin === null) {
    await t.step({ name: "skipped: no ptxas", ignore: true, fn: () => {} });
    return;
  }
  const r = await runPtxas(printPtx(MMA_SHAPES.map(probeKernel)), {
    arch: "sm_80",
    ptxasPath: bin,
  });
  assert.ok(r.ok, r.log);
  assert.equal(r.kernels.length, MMA_SHAPES.length);
});

Deno.test({
  name: `probe on the GPU: every MMA table row agrees with the hardware${
    CUDA.ok ? "" : " (skipped: no CUDA driver)"
  }`,
  ignore: !CUDA.ok,
  fn: async () => {
    const rs = await runProbe({ mode: "gpu" });
    const bad = rs.filter((r) => !r.ok);
    assert.equal(bad.length, 0, formatProbe(rs));
    assert.ok(rs.every((r) => r.simIdentical === true));
  },
});
