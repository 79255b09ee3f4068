/**
 * sm90's default wgmma tiles over known sizes beyond the skinny rule (passes/tile_sm90.ts
 * `wgmmaFallback`, issue 22/23): 128x256 wherever its grid fills more than half the SMs
 * (`WGMMA_WAVE_FILL`, bench/NOTES.md 82, 84), else 128x128 where a wave of those fills them, else the
 * sm80 target's tile; one wave of 128x128 over one wave of the default where it fills 15/16 of the
 * SMs (`WGMMA_FULL_WAVE`, NOTES 85); 16-bit types on 128x224 where its waves pay (`WAVE_TILES_WGMMA`, NOTES 83),
 * which simulates in agreement on a persistent clustered grid at sizes that are no tile multiples.
 *
 * @module
 */

import assert from "node:assert/strict";
import { compile } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { BENCH, hinted } from "./_skinny.ts";

Deno.test("sm90: 16-bit types take 128x224 wgmma tiles where their waves fill the SMs enough better, and it simulates", () => {
  const tile = (type: string, M: number, N: number, K: number) => {
    const t = hinted(BENCH(type), { M, N, K }, "sm90").planned.schedule.threadblock!;
    return `${t.m}x${t.n}x${t.k}`;
  };
  // 5000³: 7 waves of 920 tiles against 7 of 800; 1024x14336: 4 of 512 against 4 of 448.
  assert.equal(tile("f16", 5000, 5000, 5000), "128x224x64");
  assert.equal(tile("bf16", 1024, 14336, 4096), "128x224x64");
  // 8192³ (18 waves against 16), 4096³ and 1024x4096 (2 waves against one) keep 128x256.
  assert.equal(tile("f16", 8192, 8192, 8192), "128x256x64");
  assert.equal(tile("f16", 4096, 4096, 4096), "128x256x64");
  assert.equal(tile("f16", 1024, 4096, 4096), "128x256x64");
  // tf32 keeps its default.
  const tf32 = Deno.readTextFileSync(new URL("../bench/kernels/tf32.gemm", import.meta.url));
  const t = hinted(tf32, { M: 5000, N: 5000, K: 5000 }, "sm90").planned.schedule.threadblock!;
  assert.deepEqual(t, { m: 128, n: 256, k: 32 });
  const chosen = hinted(BENCH("f16"), { M: 5000, N: 5000, K: 5000 }, "sm90").planned;
  assert.equal(chosen.plan.pipeline!.tma?.cluster, 2);
  assert.equal(chosen.plan.staging?.readLanes, 32);
  // That kernel (persistent, on clusters of 2, staged: rows of 28 vectors read by 32 lanes) on
  // 4 SMs, so that blocks take several tiles, at sizes that are no tile multiples (5 x 3 tiles,
  // K not a k-tile multiple).
  const r = compile(
    BENCH("f16", "  schedule {\n    threadblock 128x224x64\n    cluster 2\n  }\n"),
    {
      file: "sk.gemm",
      sizeHints: { M: 5000, N: 5000, K: 5000 },
      sms: 4,
      target: "sm90",
    },
  );
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  assert.equal(ck.planned.plan.staging?.readLanes, 32);
  const rep = simulateGemm(ck, { M: 520, N: 472, K: 136 }, { seed: 83 });
  assert.equal(rep.sim.hazardCount, 0);
  assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
});

Deno.test("sm90: a grid of 128x256 wgmma tiles of at most half the SMs takes 128x128 ones, else the sm80 target's tile", () => {
  // M = 1024, N = 4096: 128 tiles of 128x256, kept.
  const full = hinted(BENCH("f16"), { M: 1024, N: 4096, K: 4096 }, "sm90").planned;
  assert.deepEqual(full.schedule.threadblock, { m: 128, n: 256, k: 64 });
  assert.equal(full.plan.tile!.wgmma, true);
  // That kernel at sizes that are no tile multiples, K not a k-tile multiple.
  const rep = simulateGemm(hinted(BENCH("f16"), { M: 1024, N: 4096, K: 4096 }, "sm90"), {
    M: 133,
    N: 264,
    K: 200,
  }, { seed: 82 });
  assert.equal(rep.sim.hazardCount, 0);
  assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
  // M = 896, N = 4096: 112 tiles of 128x256 (224 of 128x128 would take two waves), kept; M =
  // 640, N = 3584: 70 of them, 80 of 128x224, which its wave rule prefers.
  const tile = (M: number, N: number) =>
    hinted(BENCH("f16"), { M, N, K: 4096 }, "sm90").planned.schedule.threadblock;
  assert.deepEqual(tile(896, 4096), { m: 128, n: 256, k: 64 });
  assert.deepEqual(tile(640, 3584), { m: 128, n: 224, k: 64 });
  // M = 768, N = 2816: 66 tiles of 128x256, half the SMs, and 132 of 128x128.
  const narrow = hinted(BENCH("f16"), { M: 768, N: 2816, K: 4096 }, "sm90").planned;
  assert.deepEqual(narrow.schedule.threadblock, { m: 128, n: 128, k: 64 });
  assert.equal(narrow.plan.tile!.wgmma, true);
  // M = 512, N = K = 4096: 64 tiles of 128x256 (half the SMs), 128 of 128x128 (one wave).
  assert.deepEqual(tile(512, 4096), { m: 128, n: 128, k: 64 });
  // One wave of 128x128 that fills 15/16 of the SMs over one wave of the default that fills
  // fewer (WGMMA_FULL_WAVE, NOTES 85): s8 at 512x4096, 128 blocks against 76 of 128x224; at 640
  // rows 128x128 takes two waves and 128x224 stays. f16 at 512x4224: 132 against 68 of 128x256.
  const s8 = (M: number, N: number) =>
    hinted(BENCH("s8"), { M, N, K: 4096 }, "sm90").planned.schedule.threadblock;
  assert.deepEqual(s8(512, 4096), { m: 128, n: 128, k: 128 });
  assert.deepEqual(s8(640, 4096), { m: 128, n: 224, k: 128 });
  assert.deepEqual(tile(512, 4224), { m: 128, n: 128, k: 64 });
  // M = 512, N = 2048 (64 tiles of 128x128 and 128 of 128x64, neither a skinny grid): the sm80
  // target's tile and split.
  const hints = { M: 512, N: 2048, K: 4096 };
  const sm90 = hinted(BENCH("bf16"), hints, "sm90").planned;
  const sm80 = hinted(BENCH("bf16"), hints).planned;
  assert.equal(sm90.plan.tile!.wgmma, undefined);
  assert.deepEqual(
    [sm90.schedule.threadblock, sm90.schedule.splitK],
    [sm80.schedule.threadblock, sm80.schedule.splitK],
  );
});
