/**
 * Thread-block clusters on sm90 (schedule key `cluster 2`, passes/wgmma.ts `wgmmaCluster`,
 * passes/lower/wgmma_ws.ts, issue 23):
 *
 * - the plan and the kernel: a persistent warp-specialized kernel with `cluster 2` has
 *   `tma.cluster` 2, B's tensor map box half as tall, `Kernel.cluster` 2 and the grid's
 *   cluster rule (ir/grid.ts `gridFor`: units of 2 tiles along M, 2 CTAs each, an even grid);
 * - the PTX: `.reqnctapercluster 2, 1, 1`, B's copy multicast to both CTAs, A's not, the
 *   releases on both CTAs' empty barriers (`mapa`), two cluster barriers; ptxas for sm_90a
 *   takes it without spills;
 * - `cluster 1x2` (pairs along N, A multicast): A's box half as tall, B's whole, units of 2 tiles
 *   along N in the grid, A's copy multicast; simulated over tests/testdata/wgmma_cases.ts
 *   `CLUSTER_N_CASES` (odd tile columns, a unit whose second tile lies right of N);
 * - refusals: `cluster 3` is E0112; `cluster 2` on sm80, with one block a tile, with split-K
 *   or with Stream-K is E0214; `cluster 1` is the kernel without one;
 * - simulated (tests/testdata/wgmma_cases.ts `CLUSTER_CASES`: odd tile rows, a unit whose second
 *   tile lies past M, every epilogue path, f16, bf16, tf32, s8 and e4m3) under three role
 *   schedules: agrees with the reference (integers exactly), no hazards. The simulator's own
 *   cluster tests, mutants included, are tests/sim_cluster_test.ts.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import { gridFor } from "../ir/kernel.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { assertAgreesUnderRoles } from "./_role_sims.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { CLUSTER_CASES, CLUSTER_N_CASES } from "./testdata/wgmma_cases.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { tmaConsumerRegs } from "../passes/wgmma.ts";

/** A TN GEMM with schedule lines (`;`-separated). */
export const CLUSTER_GEMM = (t: string, d: string, sched: string, epi = "") =>
  `kernel cl {\n  A: ${t}[M, K] row\n  B: ${t}[K, N] col\n${epi === "" ? "" : "  bias: f32[N]\n"}` +
  `  D: ${d}[M, N] row\n  D[m, n] = ${
    epi === "" ? `${d}(A[m, k] * B[k, n])` : `${d}(relu(A[m, k] * B[k, n] + bias[n]))`
  }\n  schedule {\n${sched.split(";").map((l) => `    ${l.trim()}\n`).join("")}  }\n}\n`;

function compiled(src: string, target = "sm90" as const): CompiledKernel {
  const r = compile(src, { file: "cl.gemm", target, sms: 132 });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  return r.kernels[0]!;
}

Deno.test("cluster 2: the plan, B's half box, the kernel's cluster and its grid", () => {
  const ck = compiled(CLUSTER_GEMM("f16", "f16", "cluster 2"));
  const tma = ck.planned.plan.pipeline!.tma!;
  assert.equal(tma.cluster, 2);
  assert.notEqual(tma.persistent, undefined);
  assert.equal(ck.kernel.cluster, 2);
  const tb = ck.planned.plan.tile!.threadblock;
  const box = (t: string) => ck.kernel.params.find((p) => p.tmap?.tensor === t)!.tmap!.box;
  assert.deepEqual(box("A"), [tb.k, tb.m]);
  assert.deepEqual(box("B"), [tb.k, tb.n / 2]);
  assert.equal(ck.kernel.grid.persistent?.cluster, 2);
  assert.deepEqual(ck.manifest.cluster, [2, 1, 1]);
  // 3 tiles along M are 2 units; N = 520: 3 columns of 256; 6 units of 2 CTAs.
  assert.equal(tb.m, 128);
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 300, N: 520, K: 64 }), [12, 1, 1]);
  // More units than SMs: 66 clusters of 2 (an odd SM count rounds down).
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 8192, N: 8192, K: 64 }), [132, 1, 1]);
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 8192, N: 8192, K: 64 }, 133), [132, 1, 1]);
  // One tile: one unit, still both CTAs of the cluster.
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 1, N: 1, K: 64 }), [2, 1, 1]);
  // cluster 1 is the kernel without one.
  const one = compiled(CLUSTER_GEMM("f16", "f16", "cluster 1"));
  assert.equal(one.kernel.cluster, undefined);
  assert.equal(one.manifest.cluster, undefined);
  assert.equal(one.planned.plan.pipeline!.tma!.cluster, undefined);
  assert.doesNotMatch(one.ptx, /reqnctapercluster|multicast|mapa|barrier\.cluster/);
});

Deno.test("cluster 1x2: A's half box, units along N, A's copy multicast", () => {
  const ck = compiled(CLUSTER_GEMM("f16", "f16", "cluster 1x2"));
  const tma = ck.planned.plan.pipeline!.tma!;
  assert.equal(tma.cluster, 2);
  assert.equal(tma.clusterAxis, "n");
  assert.equal(ck.kernel.cluster, 2);
  const tb = ck.planned.plan.tile!.threadblock;
  const box = (t: string) => ck.kernel.params.find((p) => p.tmap?.tensor === t)!.tmap!.box;
  assert.deepEqual(box("A"), [tb.k, tb.m / 2]);
  assert.deepEqual(box("B"), [tb.k, tb.n]);
  assert.equal(ck.kernel.grid.persistent?.clusterAxis, "n");
  assert.deepEqual(ck.manifest.cluster, [2, 1, 1]);
  // M = 300: 3 tile rows; N = 520: 3 columns of 256, 2 units a row; 6 units of 2 CTAs.
  assert.deepEqual([tb.m, tb.n], [128, 256]);
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 300, N: 520, K: 64 }), [12, 1, 1]);
  // Along M the same sizes are 2 x 3 units.
  const m = compiled(CLUSTER_GEMM("f16", "f16", "cluster 2x1"));
  assert.equal(m.planned.plan.pipeline!.tma!.clusterAxis, undefined);
  assert.deepEqual(gridFor(m.kernel.grid, { M: 300, N: 1000, K: 64 }), [16, 1, 1]);
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 300, N: 1000, K: 64 }), [12, 1, 1]);
  const copies = ck.ptx.split("\n").filter((l) => l.includes("cp.async.bulk.tensor"));
  assert.equal(copies.length, 2, copies.join("\n"));
  const multicast = copies.filter((l) => l.includes(".multicast::cluster"));
  assert.equal(multicast.length, 1);
  assert.match(printGemm(ck.planned), /cluster 1x2/);
});

Deno.test("cluster 2: the PTX multicasts B, releases both CTAs' stages, brackets the roles", () => {
  const ck = compiled(CLUSTER_GEMM("bf16", "bf16", "cluster 2"));
  assert.match(ck.ptx, /\.reqnctapercluster 2, 1, 1/);
  const copies = ck.ptx.split("\n").filter((l) => l.includes("cp.async.bulk.tensor"));
  assert.equal(copies.length, 2, copies.join("\n"));
  assert.equal(copies.filter((l) => l.includes(".multicast::cluster")).length, 1);
  assert.match(ck.ptx, /mov\.b16 %tmk, 3;/);
  // Each release: an arrival on the stage's barrier of rank 0 and of rank 1.
  assert.match(ck.ptx, /mapa\.shared::cluster\.u32 %mbr, %r\d+, 0;/);
  assert.match(ck.ptx, /mapa\.shared::cluster\.u32 %mbr, %r\d+, 1;/);
  assert.match(ck.ptx, /mbarrier\.arrive\.shared::cluster\.b64 _, \[%mbr\]/);
  assert.equal(ck.ptx.match(/barrier\.cluster\.arrive\.release\.aligned/g)?.length, 2);
  assert.equal(ck.ptx.match(/barrier\.cluster\.wait\.acquire\.aligned/g)?.length, 2);
  assert.match(ck.ptx, /%cluster_ctarank/);
});

ptxasTest(
  "cluster 2 and 1x2: ptxas -arch=sm_90a takes f16, bf16, tf32, s8 and the batched cases without spills",
  async (ptxas) => {
    const srcs = [["f16", "f16"], ["bf16", "f32"], ["f32", "f32"], ["s8", "s32"]].flatMap((
      [t, d],
    ) => [CLUSTER_GEMM(t!, d!, "cluster 2", "bias"), CLUSTER_GEMM(t!, d!, "cluster 2")]);
    // tf32 without an epilogue spilled 8 bytes at 232 consumer registers (NOTES 78); the
    // batched cases' producers spilled at 24 producer registers.
    for (const src of [...srcs, ...[...CLUSTER_CASES, ...CLUSTER_N_CASES].map((c) => c.src)]) {
      const ck = compiled(src);
      assert.equal(ck.kernel.cluster, 2, src);
      const r = await runPtxas(ck.ptx, { ptxasPath: ptxas, arch: "sm_90a" });
      assert.ok(r.ok, `${src}: ${r.log}`);
      assert.match(r.log, /0 bytes spill stores, 0 bytes spill loads/, `${src}: ${r.log}`);
    }
  },
);

Deno.test("setmaxnreg: 24 / 240 registers beside two consumer warpgroups, 40 / 232 when batched; never more than the block was launched with", () => {
  const regs = (src: string) => {
    const t = compiled(src).planned.plan.pipeline!.tma!;
    return [t.producerRegs, t.consumerRegs];
  };
  assert.deepEqual(regs(CLUSTER_GEMM("f32", "f32", "cluster 2")), [24, 240]);
  const batched = CLUSTER_CASES.find((c) => /batched A and B/.test(c.name))!;
  assert.deepEqual(regs(batched.src), [40, 232]);
  // The block's registers: ptxas gives a 384-thread block 168 a thread (64512 in all), a
  // 256-thread one 256 (65536). At a producer of 32, the whole register file over the
  // consumers (240) would ask more than the 384-thread block holds.
  const holds = { 256: 64512, 128: 65536 } as const;
  for (const consumers of [256, 128] as const) {
    for (const producer of [24, 32, 40, 48]) {
      const c = tmaConsumerRegs("sm90", consumers, producer);
      const what = `${consumers} consumers, producer ${producer}: ${c}`;
      assert.ok(c % 8 === 0 && c <= 256, what);
      assert.ok(producer * 128 + c * consumers <= holds[consumers], what);
      assert.ok(producer * 128 + (c + 8) * consumers > holds[consumers] || c === 256, what);
    }
  }
  assert.equal(tmaConsumerRegs("sm90", 256, 32), 232);
});

Deno.test("cluster: refused where the kernel cannot have one (E0112, E0214)", () => {
  const codes = (src: string, target: "sm80" | "sm90" = "sm90") =>
    compile(src, { file: "cl.gemm", target, sms: 132 }).diagnostics.map((d) => d.code);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 3")), ["E0112"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 0")), ["E0112"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 2x2")), ["E0112"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 1x2"), "sm80"), ["E0214"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 1x2; split_k 2")), ["E0214"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 2"), "sm80"), ["E0214"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 2; scheduler tiles")), ["E0214"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 2; scheduler stream_k")), ["E0214"]);
  assert.deepEqual(codes(CLUSTER_GEMM("f16", "f16", "cluster 2; split_k 2")), ["E0214"]);
  const msg = compile(CLUSTER_GEMM("f16", "f16", "cluster 2"), { target: "sm80" }).diagnostics[0]!;
  assert.match(msg.message, /"cluster 2" needs a persistent warp-specialized sm90 kernel/);
  const n = compile(CLUSTER_GEMM("f16", "f16", "cluster 1x2"), { target: "sm80" }).diagnostics[0]!;
  assert.match(n.message, /"cluster 1x2" needs .* threadblock M halves into multiples of 8/);
});

for (
  const [c, shape] of [
    ...CLUSTER_CASES.map((c) => [c, "2"] as const),
    ...CLUSTER_N_CASES.map((c) => [c, "1x2"] as const),
  ]
) {
  Deno.test(`cluster ${shape} ${c.name}: simulated, agrees with the reference, no hazards`, () => {
    const r = compile(c.src, { file: "cl.gemm", target: "sm90", sms: c.sms });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, c.src));
    const ck = r.kernels[0]!;
    assert.equal(ck.kernel.cluster, 2);
    assert.equal(ck.planned.plan.pipeline!.tma!.clusterAxis, shape === "1x2" ? "n" : undefined);
    assertAgreesUnderRoles(ck, c.sizes, 17, ["producer-first", "consumer-first", "rank-first"]);
  });
}

Deno.test("cluster: the default is 2 for persistent f16, bf16, tf32 and s8 problems of 8 tile rows and 3 tiles a block", () => {
  const cl = (t: string, d: string, sched: string, hints?: Record<string, number>) => {
    const src = CLUSTER_GEMM(t, d, sched === "" ? "target sm90" : `target sm90; ${sched}`);
    const r = compile(src, { file: "cl.gemm", sms: 132, ...(hints ? { sizeHints: hints } : {}) });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
    return r.kernels[0]!.kernel.cluster ?? 1;
  };
  const big = { M: 8192, N: 8192, K: 8192 };
  assert.equal(cl("f16", "f16", "", big), 2);
  assert.equal(cl("bf16", "f32", "", big), 2);
  assert.equal(cl("f32", "f32", "", big), 2); // tf32
  assert.equal(cl("s8", "s32", "", big), 2);
  assert.equal(cl("f16", "f16", ""), 1); // unknown sizes
  assert.equal(cl("f16", "f16", "", { M: 512, N: 65536, K: 4096 }), 1); // 4 tile rows
  assert.equal(cl("f16", "f16", "scheduler stream_k", big), 1);
  assert.equal(cl("f16", "f16", "cluster 1", big), 1);
  // Made persistent for the cluster from 3 tiles a block (6.1 and 3.9 of 128x256); below, one
  // block a tile (2.2).
  assert.equal(cl("f16", "f16", "", { M: 5000, N: 5000, K: 5000 }), 2);
  assert.equal(cl("f16", "f16", "", { M: 4096, N: 4096, K: 4096 }), 2);
  assert.equal(cl("f16", "f16", "", { M: 3072, N: 3072, K: 3072 }), 1);
  // The skinny rule's 64x64 tiles at M = 65-128 ask for clusters themselves (2 tile rows).
  assert.equal(cl("f16", "f16", "", { M: 128, N: 4096, K: 14336 }), 2);
});

Deno.test("cluster: `cluster 1` keeps one block a tile where the default clusters only for a persistent grid", () => {
  const src = CLUSTER_GEMM("f16", "f16", "target sm90; cluster 1");
  const r = compile(src, { file: "cl.gemm", sms: 132, sizeHints: { M: 5000, N: 5000, K: 5000 } });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  assert.equal(r.kernels[0]!.kernel.grid.persistent, undefined);
});

Deno.test("cluster 2 with pdl (griddepcontrol): simulated, agrees, no hazards", () => {
  const src = CLUSTER_GEMM("f16", "f16", "cluster 2");
  const r = compile(src, { file: "cl.gemm", target: "sm90", sms: 4, pdl: true });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  const ck = r.kernels[0]!;
  assert.equal(ck.kernel.cluster, 2);
  assert.match(ck.ptx, /griddepcontrol\.wait/);
  for (const schedule of ["producer-first", "rank-first"] as const) {
    const rep = simulateGemm(ck, { M: 300, N: 600, K: 200 }, { seed: 5, schedule });
    assert.equal(rep.sim.hazardCount, 0, `${schedule}: ${JSON.stringify(rep.sim.hazards[0])}`);
    assert.ok(rep.comparison.ok, `${schedule}: ${rep.comparison.overBound} over`);
  }
});
