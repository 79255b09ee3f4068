/**
 * sm90's skinny rule (passes/skinny.ts `skinnyWgmmaSchedule`, issue 22/23): 128x128 wgmma tiles
 * where the H200 measured them faster than sm80's skinny tiles (bench/NOTES.md 67), narrower
 * 128x64, 64x64 and 64x32 ones where those do not fill the SMs (NOTES 73; 64x64 on clusters of
 * 2, NOTES 76; 64x32 at M = 33-64 and s8's 64x64x128 at M = 65-128, NOTES 79), each with a
 * deep pipeline
 * (every role schedule simulated), sm80's rule elsewhere; the compiler takes the choice for hinted sizes on sm90 only; every choice simulates
 * in agreement with the reference at sizes that are no tile multiples (M = 1, 7, 33, 100; K not a
 * multiple of 64) with hazards none; and a split-K choice gives the same bytes whatever the
 * order its blocks run in.
 *
 * @module
 */

import assert from "node:assert/strict";
import { skinnyWgmmaSchedule } from "../passes/skinny.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import type { RoleSchedule } from "../backends/sim/mod.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxTarget } from "../backends/ptx/print.ts";
import { ptxasTest } from "./_ptxas.ts";
import { assertOrderFree, BENCH, hinted } from "./_skinny.ts";

function pick(M: number, N: number, K: number, bytes: 1 | 2 = 2, sms = 132): string | null {
  const c = skinnyWgmmaSchedule({ M, N, K, bytes, sms });
  if (c === null) return null;
  const t = c.threadblock;
  return `${t.m}x${t.n}x${t.k} split ${c.splitK} blocks ${c.blocks}` +
    (c.cluster !== undefined ? ` cluster ${c.cluster}` : "") + (c.persistent ? " persistent" : "");
}

Deno.test("skinny sm90: 128x128 wgmma tiles where they measured faster, else sm80's rule", () => {
  // A wide N: 112 and 224 tiles unsplit (224 on a grid of at most 132 SMs).
  assert.equal(pick(128, 14336, 4096), "128x128x64 split 1 blocks 112");
  assert.equal(pick(256, 14336, 4096), "128x128x64 split 1 blocks 132 persistent");
  assert.equal(pick(100, 14336, 4096), "128x128x64 split 1 blocks 112");
  // A long K: 64 tiles split into one wave above M = 128.
  assert.equal(pick(256, 4096, 14336), "128x128x64 split 2 blocks 128");
  // Neither: a narrower tile that fills 3/4 of the SMs in one wave (bench/NOTES.md 73), 128x64
  // above M = 128, 64x64 on clusters of 2 up to it, ahead of a split K too (NOTES 76).
  assert.equal(pick(256, 4096, 4096), "128x64x64 split 1 blocks 128");
  assert.equal(pick(200, 4096, 8000), "128x64x64 split 1 blocks 128");
  // At M = 65-128, 64x64 on clusters at every K (NOTES 92, the H200; NOTES 86's 128x32 below
  // K = 8192 was chosen on an H100).
  assert.equal(pick(128, 4096, 4096), "64x64x64 split 1 blocks 128 cluster 2");
  assert.equal(pick(100, 4096, 4096), "64x64x64 split 1 blocks 128 cluster 2");
  assert.equal(pick(65, 4096, 8191), "64x64x64 split 1 blocks 128 cluster 2");
  assert.equal(pick(128, 4096, 8192), "64x64x64 split 1 blocks 128 cluster 2");
  assert.equal(pick(128, 4096, 14336), "64x64x64 split 1 blocks 128 cluster 2");
  // Where 64x64 does not fill 3/4 of the SMs in one wave, the split still serves a long K.
  assert.equal(pick(128, 8192, 8192), "128x128x64 split 2 blocks 128");
  assert.equal(pick(128, 2048, 4096), null);
  // M = 33-64: 64x32 where its grid is one wave (bench/NOTES.md 79), at a long K too.
  assert.equal(pick(64, 4096, 4096), "64x32x64 split 1 blocks 128");
  assert.equal(pick(33, 4096, 14336), "64x32x64 split 1 blocks 128");
  // Where sm80's tiles tie or win: M <= 32; M <= 64 beyond one wave of 64x32; 8-bit; M > 256.
  assert.equal(pick(32, 4096, 4096), null);
  assert.equal(pick(16, 4096, 4096), null);
  assert.equal(pick(64, 14336, 4096), null);
  assert.equal(pick(64, 2048, 4096), null);
  // 8-bit at M = 65-128 in one wave: persistent 128x32x128 below K = 8192, 64x64x128 on
  // clusters from there (NOTES 85), else null.
  assert.equal(pick(128, 4096, 14336, 1), "64x64x128 split 1 blocks 128 cluster 2");
  assert.equal(pick(128, 4096, 8191, 1), "128x32x128 split 1 blocks 128 persistent");
  assert.equal(pick(128, 4096, 8192, 1), "64x64x128 split 1 blocks 128 cluster 2");
  assert.equal(pick(100, 4096, 4096, 1), "128x32x128 split 1 blocks 128 persistent");
  assert.equal(pick(65, 4096, 4096, 1), "128x32x128 split 1 blocks 128 persistent");
  assert.equal(pick(128, 14336, 4096, 1), null);
  assert.equal(pick(64, 4096, 4096, 1), null);
  assert.equal(pick(256, 4096, 4096, 1), null);
  assert.equal(pick(512, 14336, 4096), null);
  assert.equal(pick(128, 1024, 14336), null);
  // Fewer SMs: the same tiles fill them.
  assert.equal(pick(128, 2048, 2048, 2, 16), "128x128x64 split 1 blocks 16");
});

Deno.test("skinny sm90: the compiler takes the choice for hinted sizes on sm90, TMA-fed; sm80 keeps its rule", () => {
  const wide = { M: 128, N: 14336, K: 4096 };
  const sm90 = hinted(BENCH("f16"), wide, "sm90").planned;
  assert.deepEqual(sm90.schedule.threadblock, { m: 128, n: 128, k: 64 });
  assert.equal(sm90.plan.tile!.wgmma, true);
  assert.equal(sm90.plan.tile!.skinny, undefined);
  assert.notEqual(sm90.plan.pipeline!.tma, undefined);
  assert.equal(sm90.plan.pipeline!.tma!.persistent, undefined);
  // 224 tiles on 132 SMs: a persistent grid.
  const tall = hinted(BENCH("f16"), { M: 256, N: 14336, K: 4096 }, "sm90");
  assert.notEqual(tall.planned.plan.pipeline!.tma!.persistent, undefined);
  assert.deepEqual(tall.kernel.grid.persistent, { blocks: 132 });
  const sm80 = hinted(BENCH("f16"), wide).planned;
  assert.equal(sm80.plan.tile!.wgmma, undefined);
  assert.notEqual(sm80.plan.tile!.skinny, undefined);
  // At M = 32, N = K = 4096 sm90 takes sm80's skinny tile (mma.sync, assembled for sm_90a).
  const square = hinted(BENCH("bf16"), { M: 32, N: 4096, K: 4096 }, "sm90").planned;
  assert.equal(square.plan.tile!.wgmma, undefined);
  assert.equal(square.plan.tile!.deepPipeline, undefined);
  assert.deepEqual(square.schedule.threadblock, { m: 64, n: 64, k: 128 });
  // sm90's skinny tiles take all the shared memory: 128x128x64 is 32 KiB a stage and 16 bytes
  // of barriers, 7 of them in 227 KiB (4 without the deep pipeline).
  assert.equal(sm90.plan.tile!.deepPipeline, true);
  assert.equal(sm90.plan.pipeline!.stages, 7);
});

/** Hints that make the sm90 rule choose each of its schedules. */
const CHOICES: readonly { hints: Record<string, number>; type: string; epilogue?: true }[] = [
  { hints: { M: 128, N: 14336, K: 4096 }, type: "f16" },
  { hints: { M: 256, N: 14336, K: 4096 }, type: "bf16", epilogue: true },
  { hints: { M: 128, N: 4096, K: 14336 }, type: "bf16" },
  { hints: { M: 256, N: 4096, K: 14336 }, type: "f16", epilogue: true },
  { hints: { M: 256, N: 4096, K: 4096 }, type: "f16" },
  { hints: { M: 128, N: 4096, K: 4096 }, type: "bf16", epilogue: true },
  { hints: { M: 64, N: 4096, K: 4096 }, type: "f16", epilogue: true },
  { hints: { M: 48, N: 4096, K: 14336 }, type: "bf16" },
  { hints: { M: 128, N: 4096, K: 14336 }, type: "s8", epilogue: true },
];

let seed = 4100;
for (const c of CHOICES) {
  const ck = hinted(BENCH(c.type, c.epilogue ? " " : ""), c.hints, "sm90");
  const s = ck.planned.schedule;
  const tag = `${s.threadblock!.m}x${s.threadblock!.n}x${s.threadblock!.k} split ${s.splitK}` +
    (ck.kernel.cluster !== undefined ? ` cluster ${ck.kernel.cluster}` : "");
  for (const M of [1, 7, 33, 100]) {
    Deno.test(`skinny sm90 ${c.type} ${tag}${c.epilogue ? " + bias, relu" : ""}: simulates in agreement at M=${M}`, () => {
      assert.equal(ck.planned.plan.tile!.wgmma, true);
      assert.equal(ck.planned.plan.tile!.deepPipeline, true);
      // K not a k-tile multiple (a multiple of 16: s8's alignment), long enough for every split
      // to get k-tiles; N not one of 128.
      const K = s.threadblock!.k * 2 * (s.splitK ?? 1) + 48;
      const rep = simulateGemm(ck, { M, N: 128 + 24, K }, { seed: seed += 7 });
      assert.equal(
        rep.sim.hazardCount,
        0,
        rep.sim.hazards.slice(0, 3).map((h) => `${h.kind}: ${h.op}: ${h.message}`).join("\n"),
      );
      assert.ok(
        rep.comparison.ok,
        `${rep.comparison.overBound} over the bound, first ${JSON.stringify(rep.comparison.first)}`,
      );
    });
  }
}

/** Each deep pipeline (every choice of the rule) under every role schedule: the producer may
 * run up to all its stages ahead, so the ring is exercised where it wraps (K of more k-tiles
 * than stages) and where it never fills (fewer k-tiles than stages). */
const SCHEDULES: readonly RoleSchedule[] = ["producer-first", "consumer-first", "alternate"];
for (const c of CHOICES) {
  const ck = hinted(BENCH(c.type, c.epilogue ? " " : ""), c.hints, "sm90");
  const s = ck.planned.schedule;
  const stages = ck.planned.plan.pipeline!.stages;
  const tb = s.threadblock!;
  const tag = `${tb.m}x${tb.n}x${tb.k} split ${s.splitK}, ${stages} stages`;
  Deno.test(`skinny sm90 ${c.type} ${tag}: deep ring agrees under every role schedule`, () => {
    const split = s.splitK ?? 1;
    for (const kTiles of [3, stages + 5]) {
      const K = tb.k * kTiles * split - 32;
      for (const schedule of SCHEDULES) {
        const rep = simulateGemm(ck, { M: 33, N: 2 * tb.n + 8, K }, { seed: seed += 3, schedule });
        const what = `K=${K} ${schedule}`;
        assert.equal(rep.sim.hazardCount, 0, `${what}: ${rep.sim.hazards[0]?.message}`);
        assert.ok(rep.comparison.ok, `${what}: ${JSON.stringify(rep.comparison.first)}`);
      }
    }
  });
}

ptxasTest(
  "skinny sm90: ptxas -arch=sm_90a assembles every choice without spills",
  async (ptxas) => {
    for (const c of CHOICES) {
      const ck = hinted(BENCH(c.type, c.epilogue ? " " : ""), c.hints, "sm90");
      const res = await runPtxas(ck.ptx, { arch: ptxTarget(ck.kernel.target), ptxasPath: ptxas });
      assert.ok(res.ok, res.log);
      const sp = res.kernels[0]!;
      assert.equal(sp.spillStoreBytes + sp.spillLoadBytes, 0, JSON.stringify(c.hints));
    }
  },
);

Deno.test("skinny sm90: a split-K choice writes the same bytes whatever the order of its blocks", () => {
  const ck = hinted(BENCH("f16"), { M: 256, N: 4096, K: 14336 }, "sm90");
  assert.equal(ck.planned.schedule.splitK, 2);
  assertOrderFree(ck, { M: 33, N: 152, K: 2 * 2 * 64 + 40 }, 9);
});
