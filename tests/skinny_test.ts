/**
 * The skinny schedule (passes/skinny.ts, issue 22): the rule's choices at the
 * shapes the H200 sweep measured (bench/NOTES.md 56), its limits (M above 128,
 * a wide N, the sm86 shared-memory budget, a schedule that names the stages), and
 * that every schedule it can choose simulates in agreement with the reference at
 * sizes that are no tile multiples (M = 1, 7, 33; K not a multiple of the tile's),
 * with no hazards and no bank conflicts in ldmatrix and cp.async, and that a
 * split-K choice gives the same bytes whatever the order its blocks run in.
 *
 * @module
 */

import assert from "node:assert/strict";
import { compile } from "../compiler.ts";
import { skinnySchedule } from "../passes/skinny.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxTarget } from "../backends/ptx/print.ts";
import { ptxasTest } from "./_ptxas.ts";
import { gemm } from "./_cli.ts";
import { assertOrderFree, BENCH, hinted } from "./_skinny.ts";

const H200 = { sms: 132 };

function pick(M: number, N: number, K: number, bytes: 1 | 2 = 2): string | null {
  const c = skinnySchedule({ ...H200, M, N, K, bytes });
  if (c === null) return null;
  const t = c.threadblock;
  return `${t.m}x${t.n}x${t.k} warp ${c.warp.m}x${c.warp.n} stages ${c.stages} split ${c.splitK}`;
}

Deno.test("skinny: the rule picks the sweep's fastest schedules on the H200 (NOTES 56)", () => {
  // M <= 16: one wave of 128 blocks (N = 4096; 16x32x256's 4 stages: NOTES 95, an H100; N =
  // 14336 on 16x112, where 16x128 gave 112: NOTES 101, an H100).
  assert.equal(pick(16, 4096, 4096), "16x32x256 warp 16x8 stages 4 split 1");
  assert.equal(pick(1, 4096, 4096), "16x32x256 warp 16x8 stages 4 split 1");
  assert.equal(pick(16, 14336, 4096), "16x112x128 warp 16x56 stages 4 split 1");
  // Past 132 tiles of 112 columns (N > 14784) 16x128 is again the one wave of the most blocks.
  assert.equal(pick(16, 16384, 4096), "16x128x128 warp 16x32 stages 4 split 1");
  assert.equal(pick(16, 4096, 14336), "16x64x128 warp 16x16 stages 4 split 2");
  assert.equal(pick(64, 4096, 4096), "64x64x128 warp 32x32 stages 4 split 2");
  assert.equal(pick(64, 14336, 4096), "64x128x128 warp 32x64 stages 3 split 1");
  assert.equal(pick(128, 4096, 4096), "64x64x128 warp 32x32 stages 4 split 1");
  assert.equal(pick(128, 14336, 4096), "128x128x64 warp 64x64 stages 4 split 1");
  assert.equal(pick(128, 4096, 14336), "64x128x128 warp 32x64 stages 3 split 2");
});

Deno.test("skinny: 8-bit operands take the 8-bit sweep's fastest schedules (NOTES 60)", () => {
  assert.equal(pick(16, 4096, 4096, 1), "16x32x256 warp 16x8 stages 6 split 1");
  assert.equal(pick(16, 14336, 4096, 1), "16x112x256 warp 16x56 stages 4 split 1");
  assert.equal(pick(16, 4096, 14336, 1), "16x32x256 warp 16x8 stages 6 split 1");
  assert.equal(pick(128, 4096, 4096, 1), "64x64x256 warp 32x32 stages 4 split 1");
  assert.equal(pick(128, 14336, 4096, 1), "128x112x128 warp 64x56 stages 4 split 1");
  assert.equal(pick(128, 4096, 14336, 1), "64x64x256 warp 32x32 stages 4 split 1");
  // The main benchmark's skinny s8 row keeps the general default's 128x64x256.
  assert.equal(pick(128, 8192, 8192, 1), "128x64x256 warp 64x32 stages 3 split 1");
  // No split-K for 8-bit operands: 64x64 at M = 64 stays 64 blocks.
  assert.equal(pick(64, 4096, 4096, 1), "64x64x256 warp 32x32 stages 4 split 1");
  assert.equal(pick(129, 4096, 4096, 1), null);
  // Through the compiler: hinted sizes of an s8 kernel, and none for s4.
  const tile = (t: string, d: string) => {
    const r = compile(
      `kernel q {\n  A: ${t}[M, K] row\n  B: ${t}[K, N] col\n  D: ${d}[M, N]\n` +
        `  D[m, n] = A[m, k] * B[k, n]\n}\n`,
      { sizeHints: { M: 16, N: 14336, K: 4096 }, sms: 132 },
    );
    assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
    const p = r.kernels[0]!.planned;
    return `${p.plan.tile!.threadblock.n}x${p.plan.tile!.threadblock.k}${
      p.plan.tile!.skinny ? " skinny" : ""
    }`;
  };
  assert.equal(tile("s8", "s32"), "112x256 skinny");
  assert.equal(tile("u8", "s32"), "112x256 skinny");
  assert.ok(!tile("s4", "s32").endsWith("skinny"));
});

Deno.test("skinny: no choice above M = 128 or where no candidate fits one wave", () => {
  assert.equal(pick(129, 4096, 4096), null);
  assert.equal(pick(256, 14336, 4096), null);
  // 16 x 65536: 512 tiles of the widest candidate, more than 132 SMs.
  assert.equal(pick(16, 65536, 4096), null);
  // Small N or K: outside what was measured.
  assert.equal(pick(16, 1024, 4096), null);
  assert.equal(pick(64, 4096, 1024), null);
});

Deno.test("skinny: every choice is one wave, and splits keep >= 8 k-tiles", () => {
  for (const M of [1, 5, 16, 17, 48, 64, 100, 128]) {
    for (const N of [2048, 3000, 4096, 11008, 14336]) {
      for (const K of [2048, 3000, 4096, 14336]) {
        for (const bytes of [1, 2] as const) {
          const c = skinnySchedule({ ...H200, M, N, K, bytes });
          if (c === null) continue;
          const t = c.threadblock;
          const blocks = Math.ceil(M / t.m) * Math.ceil(N / t.n) * c.splitK;
          assert.equal(blocks, c.blocks);
          assert.ok(blocks <= H200.sms, `${M}x${N}x${K}: ${blocks} blocks`);
          if (c.splitK > 1) assert.ok(Math.ceil(K / t.k) / c.splitK >= 8, `${M}x${N}x${K}`);
          assert.ok(t.m >= Math.min(M, 16) && (t.m === 16 || M > 16), `${M}: tile ${t.m}`);
        }
      }
    }
  }
});

Deno.test("skinny: gemm-pipeline caps the preferred stages by the target's shared memory", () => {
  // 64x128x128 is 48 KiB a stage: its 3 on sm80, 2 on sm86 (99 KiB a block).
  const stages = (target: "sm80" | "sm86") => {
    const r = compile(BENCH("f16"), {
      file: "sk.gemm",
      sizeHints: { M: 64, N: 14336, K: 4096 },
      sms: 132,
      target,
    });
    assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
    const p = r.kernels[0]!.planned.plan;
    assert.equal(p.tile!.skinny?.stages, 3);
    assert.deepEqual(p.tile!.threadblock, { m: 64, n: 128, k: 128 });
    return p.pipeline!.stages;
  };
  assert.equal(stages("sm80"), 3);
  assert.equal(stages("sm86"), 2);
});

Deno.test("skinny: the compiler takes the choice for hinted sizes, and names it in the plan", () => {
  const ck = hinted(BENCH("f16"), { M: 16, N: 4096, K: 4096 });
  const s = ck.planned.schedule;
  assert.deepEqual(
    [s.threadblock, s.warp, s.stages, s.splitK],
    [{ m: 16, n: 32, k: 256 }, { m: 16, n: 8, k: 256 }, 4, 1],
  );
  assert.notEqual(ck.planned.plan.tile!.skinny, undefined);
});

Deno.test("skinny: a schedule that names the stages keeps the general default", () => {
  const ck = hinted(
    BENCH("f16").replace("}\n", "  schedule {\n    stages 3\n  }\n}\n"),
    { M: 16, N: 4096, K: 4096 },
  );
  assert.equal(ck.planned.plan.tile!.skinny, undefined);
  assert.notEqual(ck.planned.schedule.threadblock!.m, 16);
});

/** Hints that make the rule choose each of its schedules (see the first test). */
const CHOICES: readonly { hints: Record<string, number>; type: string; epilogue?: true }[] = [
  { hints: { M: 16, N: 4096, K: 4096 }, type: "f16" },
  { hints: { M: 16, N: 14336, K: 4096 }, type: "bf16" },
  { hints: { M: 16, N: 4096, K: 14336 }, type: "f16", epilogue: true },
  { hints: { M: 64, N: 4096, K: 4096 }, type: "bf16" },
  { hints: { M: 64, N: 14336, K: 4096 }, type: "f16" },
  { hints: { M: 128, N: 4096, K: 4096 }, type: "f16", epilogue: true },
  { hints: { M: 128, N: 14336, K: 4096 }, type: "bf16" },
  { hints: { M: 128, N: 4096, K: 14336 }, type: "f16" },
  { hints: { M: 16, N: 4096, K: 4096 }, type: "s8" },
  { hints: { M: 16, N: 14336, K: 4096 }, type: "s8", epilogue: true },
  { hints: { M: 128, N: 14336, K: 4096 }, type: "s8" },
];

for (const c of CHOICES) {
  const ck = hinted(BENCH(c.type, c.epilogue ? " " : ""), c.hints);
  const s = ck.planned.schedule;
  const tag = `${s.threadblock!.m}x${s.threadblock!.n}x${s.threadblock!.k} split ${s.splitK}`;
  for (const M of [1, 7, 33]) {
    Deno.test(`skinny ${c.type} ${tag}${c.epilogue ? " + bias, relu" : ""}: simulates in agreement at M=${M}`, () => {
      assert.notEqual(ck.planned.plan.tile!.skinny, undefined);
      // K not a multiple of the tile's K, N not one of the tile's N; K long enough
      // for every split to get k-tiles (s8: K a multiple of its 16-element alignment).
      const K = s.threadblock!.k * 2 * (s.splitK ?? 1) + (c.type === "s8" ? 48 : 40);
      const rep = simulateGemm(ck, { M, N: s.threadblock!.n + 24, K }, { seed: 11 + M });
      assert.equal(rep.sim.hazardCount, 0, JSON.stringify(rep.sim.hazards.slice(0, 3)));
      // The main loop's shared-memory traffic is free of bank conflicts.
      const banks = rep.sim.stats.banks;
      assert.equal(banks.ldmatrix.wavefronts, banks.ldmatrix.ideal, "ldmatrix");
      assert.equal(banks.cpasync.wavefronts, banks.cpasync.ideal, "cp.async");
      assert.ok(
        rep.comparison.ok,
        `${rep.comparison.overBound} over the bound, first ${JSON.stringify(rep.comparison.first)}`,
      );
    });
  }
}

Deno.test("skinny: a split-K choice writes the same bytes whatever the order of its blocks", () => {
  const ck = hinted(BENCH("f16"), { M: 64, N: 4096, K: 4096 });
  assert.equal(ck.planned.schedule.splitK, 2);
  assertOrderFree(ck, { M: 33, N: 88, K: 2 * 2 * 128 + 40 }, 5);
});

ptxasTest(
  "skinny: ptxas assembles every choice for sm_80 and sm_86 without spills",
  async (ptxas) => {
    for (const c of CHOICES) {
      for (const target of ["sm80", "sm86"] as const) {
        const r = compile(BENCH(c.type, c.epilogue ? " " : ""), {
          file: "sk.gemm",
          sizeHints: c.hints,
          sms: 132,
          target,
        });
        assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
        const k = r.kernels[0]!;
        const res = await runPtxas(k.ptx, { arch: ptxTarget(k.kernel.target), ptxasPath: ptxas });
        assert.ok(res.ok, res.log);
        const sp = res.kernels[0]!;
        assert.equal(
          sp.spillStoreBytes + sp.spillLoadBytes,
          0,
          `${JSON.stringify(c.hints)} ${target}`,
        );
        assert.notEqual(k.planned.plan.tile!.skinny, undefined, `${target}: skinny`);
      }
    }
  },
);

Deno.test("gemm simulate --tune takes the skinny schedule at M = 1, 7, 33 and agrees, hazards none", async () => {
  const dir = Deno.makeTempDirSync();
  const file = `${dir}/sk.gemm`;
  Deno.writeTextFileSync(file, BENCH("f16"));
  // [sizes, the grid the skinny choice launches]: 16x32x256 (64 tiles, no split);
  // 64x64x128 with K split 4 (32 tiles x 4 = 128 blocks); 16x32x256 at M = 1.
  const cases = [
    ["M=7,N=2048,K=2056", [8, 8, 1]],
    ["M=33,N=2048,K=4104", [8, 4, 4]],
    ["M=1,N=2048,K=2104", [8, 8, 1]],
  ] as const;
  for (const [size, grid] of cases) {
    const r = await gemm("simulate", file, "--size", size, "--tune", "--sms", "132", "--json");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const rep = JSON.parse(r.stdout).reports[0];
    assert.deepEqual(rep.grid, grid, size);
    assert.equal(rep.agree, true, size);
    assert.equal(rep.hazardCount, 0, size);
  }
});

Deno.test("skinny: B's copies evict_first where the tile spans M (SKINNY_STREAMED_B), else no hint", () => {
  const policies = (ck: ReturnType<typeof hinted>) =>
    [...ck.ptx.matchAll(/createpolicy\.fractional\.L2::(\w+)\.b64/g)].map((m) => m[1]);
  const cacheB = (ck: ReturnType<typeof hinted>) => ck.planned.schedule.cacheB;
  // M = 16 (16x32x256: the tile spans M, each of B's bytes read by one block), every target.
  for (const target of ["sm80", "sm86", "sm90"] as const) {
    const ck = hinted(BENCH("f16"), { M: 16, N: 4096, K: 4096 }, target);
    assert.equal(cacheB(ck), "evict_first", target);
    assert.deepEqual(policies(ck), ["evict_first"], target);
    assert.match(ck.planned.plan.tile!.why ?? "", /the tile spans M, so B is read once: cache_b/);
  }
  // s8 and bf16 inherit it (inferred, not measured).
  for (const t of ["bf16", "s8"]) {
    assert.equal(cacheB(hinted(BENCH(t), { M: 16, N: 14336, K: 4096 })), "evict_first", t);
  }
  // sm90's skinny wgmma tile at M = 128 (s8's 128x32x128, TMA): spans M too.
  const wg = hinted(BENCH("s8"), { M: 128, N: 4096, K: 4096 }, "sm90");
  assert.equal(wg.planned.plan.tile!.threadblock.m, 128);
  assert.equal(cacheB(wg), "evict_first");
  assert.match(wg.ptx, /cp\.async\.bulk\.tensor[^\n]*\.L2::cache_hint/);
  // 16-bit's 64x64 on clusters of 2 along M: the cluster's two tiles span M, B's box is
  // multicast to both (read from the L2 once), so B's copies carry it and A's do not.
  const cl = hinted(BENCH("f16"), { M: 128, N: 4096, K: 4096 }, "sm90");
  assert.equal(cl.planned.plan.tile!.threadblock.m, 64);
  assert.equal(cacheB(cl), "evict_first");
  assert.match(cl.planned.plan.tile!.why ?? "", /a cluster's 2 tiles span M/);
  const tma = [...cl.ptx.matchAll(/cp\.async\.bulk\.tensor[^\n]*/g)].map((m) => m[0]);
  assert.ok(tma.some((t) => /multicast::cluster\.L2::cache_hint/.test(t)), tma.join("\n"));
  assert.ok(tma.some((t) => !/cache_hint/.test(t)), tma.join("\n"));
  // M = 200 on 128x64 tiles: two tile rows, no cluster, no hint.
  assert.equal(cacheB(hinted(BENCH("f16"), { M: 200, N: 4096, K: 4096 }, "sm90")), undefined);
  // sm80's M = 128 tile is 64 rows: two blocks read each of B's bytes, no hint.
  const two = hinted(BENCH("f16"), { M: 128, N: 4096, K: 4096 });
  assert.equal(two.planned.plan.tile!.threadblock.m, 64);
  assert.equal(cacheB(two), undefined);
  assert.deepEqual(policies(two), []);
  // Not skinny (the general default), or sizes unknown: no hint.
  assert.equal(cacheB(hinted(BENCH("f16"), { M: 8192, N: 8192, K: 8192 })), undefined);
  const r = compile(BENCH("f16"), { file: "sk.gemm" });
  assert.ok(r.ok);
  assert.equal(r.kernels[0]!.planned.schedule.cacheB, undefined);
  assert.doesNotMatch(r.kernels[0]!.ptx, /createpolicy|cache_hint/);
  // The schedule's own cache_b wins, and A gets nothing it did not ask for.
  const own = hinted(BENCH("f16", "  schedule { cache_b evict_normal }\n"), {
    M: 16,
    N: 4096,
    K: 4096,
  });
  assert.equal(cacheB(own), "evict_normal");
  assert.equal(own.planned.schedule.cacheA, undefined);
  assert.deepEqual(policies(own), ["evict_normal"]);
  assert.doesNotMatch(own.planned.plan.tile!.why ?? "", /SKINNY_STREAMED_B/);
});
