/**
 * `gemm compile --emit explain` (cli/explain.ts) and the reasons it prints (TilePlan.why,
 * PipelinePlan.stagesWhy): every example on every target, with and without size hints, compiles
 * (a default schedule is never refused) and has a reason for its tile and its stages; each of gemm-tile's rules names itself where it fires
 * (sm90's skinny rules, WGMMA_FULL_WAVE, WGMMA_WAVE_FILL and the wave-aware width, the mma.sync
 * fallback with its split, sm80's skinny table); what the schedule gives is said to be given.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import type { GemmKernel } from "../ir/gemm.ts";
import { explainSchedules } from "../cli/explain.ts";
import { examples, readExample } from "./_examples.ts";
import { gemm } from "./_cli.ts";

/** The kernel's M, N and K as hints (its symbolic dimensions only). */
function hintsOf(g: GemmKernel, M: number, N: number, K: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [d, v] of [[g.problem.m, M], [g.problem.n, N], [g.problem.k, K]] as const) {
    if (d.kind === "sym") out[d.name] = v;
  }
  return out;
}

/** The hinted sizes every example compiles at: a product over skinny, long and odd sides, and
 * the shapes that once went over a target's shared memory (a k-tile deepened past it). */
const SHAPES: readonly (readonly [number, number, number])[] = [
  ...[1, 100, 256].flatMap((M) =>
    [1024, 14336].flatMap((N) => [64, 1000, 14336].map((K) => [M, N, K] as const))
  ),
  [16, 4096, 4096],
  [128, 4096, 4096],
  [128, 8192, 8192],
  [8192, 8192, 8192],
];

Deno.test("explain: every example on every target, unhinted and at each of SHAPES, compiles and says why", () => {
  let kernels = 0;
  for (const name of examples()) {
    const { file, text } = readExample(name);
    for (const target of ["sm80", "sm86", "sm90"] as const) {
      const plain = compile(text, { file, target });
      if (!plain.ok) continue; // A type the target refuses (e4m3 on sm80): said elsewhere.
      for (const [M, N, K] of [[0, 0, 0] as const, ...SHAPES]) {
        // The default schedule is never refused at a hinted size (E0204 once, for sparse A).
        const r = M === 0 ? plain : compile(text, {
          file,
          target,
          sms: 108,
          sizeHints: hintsOf(plain.kernels[0]!.gemm, M, N, K),
        });
        assert.ok(r.ok, `${name} ${target} ${M}: ${r.diagnostics.map((d) => d.message)}`);
        for (const k of r.kernels) {
          const id = `${name} ${target} M=${M}: ${k.name}`;
          assert.ok((k.planned.plan.tile!.why ?? "").length > 0, id);
          assert.ok((k.planned.plan.pipeline!.stagesWhy ?? "").length > 0, id);
          kernels++;
        }
        const text2 = explainSchedules(r.kernels);
        assert.equal(text2.match(/^kernel /gm)?.length, r.kernels.length);
        assert.doesNotMatch(text2, /undefined|NaN|written by hand/);
      }
    }
  }
  assert.ok(kernels > 1000, `${kernels} kernels`);
});

/** The benchmark's f16 kernel, the one gemm-tile's rules were measured with. */
const F16 = Deno.readTextFileSync(new URL("../bench/kernels/f16.gemm", import.meta.url));

function at(M: number, N: number, K: number, src = F16, target = "sm90" as const): CompiledKernel {
  const r = compile(src, { target, sms: 132, sizeHints: { M, N, K } });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

Deno.test("explain: each of gemm-tile's rules names itself where it chose the tile", () => {
  const cases: [number, number, number, RegExp, RegExp][] = [
    [16, 4096, 4096, /^16x32x/, /M = 16, .*SKINNY_RULES/],
    [64, 4096, 4096, /^64x32x64$/, /WGMMA_SKINNY_NARROW's tile for M <= 64/],
    [128, 4096, 4096, /^64x64x64$/, /WGMMA_SKINNY_NARROW's tile for M <= 128: .*on clusters/],
    [128, 4096, 14336, /^64x64x64$/, /WGMMA_SKINNY_NARROW.*on clusters of 2 along M/],
    [128, 14336, 4096, /^128x128x64$/, /128x128: its 112 tiles fill 3\/4/],
    [512, 4224, 4096, /^128x128x64$/, /WGMMA_FULL_WAVE/],
    [8192, 8192, 8192, /^128x256x64$/, /2048 blocks fill more than half of 132 SMs/],
    [5000, 5000, 5000, /^128x224x64$/, /WAVE_TILES_WGMMA/],
    [200, 1024, 4096, /^128x256x32$/, /sm80 target's mma.sync tile.*split_k 4 .*defaultSplitK/],
  ];
  for (const [M, N, K, tile, why] of cases) {
    const t = at(M, N, K).planned.plan.tile!;
    const tb = t.threadblock;
    assert.match(`${tb.m}x${tb.n}x${tb.k}`, tile, `${M}x${N}x${K}`);
    assert.match(t.why!, why, `${M}x${N}x${K}`);
  }
  // Stages: the deep pipeline capped by what fits; the wgmma default capped at 8192³.
  assert.match(
    at(128, 4096, 4096).planned.plan.pipeline!.stagesWhy!,
    /deep pipeline \(DEEP_PIPELINE_STAGES\) asks for 18; 13 fit in shared memory/,
  );
  assert.match(
    at(8192, 8192, 8192).planned.plan.pipeline!.stagesWhy!,
    /wgmma default asks for 4; 3 fit/,
  );
});

Deno.test("explain: what the schedule gives is said to be given", () => {
  const src = F16.replace(
    /\}\s*$/,
    "  schedule {\n    threadblock 64x64x32\n    stages 3\n    swizzle 2\n    split_k 2\n  }\n}",
  );
  const k = at(128, 4096, 4096, src, "sm90");
  const text = explainSchedules([k]);
  assert.match(text, /threadblock 64x64x32, split_k 2: given by the schedule; split_k given/);
  assert.match(text, /stages 3: given by the schedule/);
  assert.match(text, /swizzle 2: given by the schedule/);
});

Deno.test("explain: gemm compile --emit explain prints it, with --tune for the sizes", async () => {
  const r = await gemm(
    "compile",
    "examples/bf16_gemm.gemm",
    "--target",
    "sm90",
    "--tune",
    "--sms",
    "132",
    "--size",
    "Rows=128,Cols=4096,Inner=4096",
    "--emit",
    "explain",
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^kernel \w+ \(target sm90; .*Rows=128.*132 SMs\):$/m);
  assert.match(r.stdout, /threadblock 64x64x64, split_k 1: .*WGMMA_SKINNY_NARROW/);
  assert.match(r.stdout, /runs as: wgmma 64x64x16, TMA copies by a producer warpgroup.*clusters/);
  assert.match(r.stdout, /a cluster's 2 tiles span M, so B is read once: cache_b evict_first/);
});
