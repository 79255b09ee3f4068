/**
 * The epilogue that stages D through shared memory (decided by
 * passes/epilogue_staging.ts `stagingPlan`, built by passes/lower/epilogue_staged.ts): which kernels stage and which stay direct, that the staged
 * ones agree with the reference in the simulator on random inputs at sizes
 * with partial tiles (no hazard, integers exact), and that the staging's
 * shared stores and loads are free of bank conflicts by the simulator's counter; an 8-bit D
 * in 8-byte warp rows (a skinny tile's) is staged through 16-byte strides on every target.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { referenceGemm } from "../harness/reference.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { tensorParam } from "../ir/gemm.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { ptxTarget } from "../backends/ptx/print.ts";
import { readExample } from "./_examples.ts";
import { hinted } from "./_skinny.ts";

function kernel(decls: string[], stmt: string, schedule: string[] = []): CompiledKernel {
  const src = `kernel k {\n  ${decls.join("\n  ")}\n  ${stmt}\n  schedule {\n    ${
    schedule.join("\n    ")
  }\n  }\n}\n`;
  const r = compile(src, { file: "staged.gemm" });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/** The epilogue's part of the kernel IR text. */
function epilogueText(ck: CompiledKernel): string {
  const parts = ck.kernelText.split("// epilogue");
  assert.equal(parts.length, 2, "one epilogue");
  return parts[1]!;
}

const SMALL = ["threadblock 64x64x32", "warp 32x32x32", "stages 3"];

interface Case {
  readonly name: string;
  readonly ck: () => CompiledKernel;
  readonly sizes: Record<string, number>;
  /** The staged global store: width and vector length, as the kernel IR prints it. */
  readonly store: RegExp;
}

/** A global store of `n` 32-bit words, as the kernel IR prints it: 16, 8 or 4 bytes a lane. */
function stgB32(n: number): RegExp {
  return new RegExp(`stg\\.b32 \\[[^\\]]+\\], \\{${Array(n).fill("[^,}]+").join(", ")}\\}`);
}

/** Rows whose vector count does not divide 32 (read back by lanes rounded up to a power of
 * two, the rest idle; `StagingPlan.readLanes`): 96-wide warp tiles on sm80, 224-wide on sm90. */
function wideCases(): Case[] {
  const ab = ["A: f16[M, K] row", "B: f16[K, N] col"];
  const w96 = ["threadblock 64x192x32", "warp 32x96x32", "stages 3"];
  const c = (
    name: string,
    decls: string[],
    stmt: string,
    schedule: string[],
    sizes: Record<string, number>,
    words: number,
  ): Case => ({
    name,
    ck: () => kernel([...ab, ...decls, "D: f16[M, N] row"], stmt, schedule),
    sizes,
    store: stgB32(words),
  });
  return [
    c(
      "f16 -> f16, 96-wide warp tiles: rows of 12 vectors read by 16 lanes, 4 idle",
      ["bias: f16[N]"],
      "D[m, n] = f16(A[m, k] * B[k, n] + bias[n])",
      w96,
      { M: 72, N: 200, K: 72 },
      4,
    ),
    c(
      "f16 reading C, 96-wide warp tiles: raw rows of 24 vectors read by 32 lanes, 8 idle",
      ["C: f16[M, N] row", "beta: f32 = 0.75"],
      "D[m, n] = f16(A[m, k] * B[k, n] + beta * C[m, n])",
      w96,
      { M: 72, N: 200, K: 72 },
      2,
    ),
    c(
      "sm90 f16 -> f16 on 128x224 wgmma tiles: rows of 28 vectors read by 32 lanes, 4 idle",
      [],
      "D[m, n] = f16(A[m, k] * B[k, n])",
      ["target sm90", "threadblock 128x224x64"],
      { M: 136, N: 456, K: 136 },
      4,
    ),
  ];
}

const CASES: Case[] = [
  {
    name: "f16 -> f16 (the benchmark's kernel, default schedule)",
    ck: () =>
      kernel(
        ["A: f16[M, K] row", "B: f16[K, N] col", "D: f16[M, N] row"],
        "D[m, n] = f16(A[m, k] * B[k, n])",
      ),
    sizes: { M: 136, N: 264, K: 96 },
    store: stgB32(4),
  },
  {
    name: "bf16 -> bf16, B row-major, small tile",
    ck: () =>
      kernel(
        ["A: bf16[M, K] row", "B: bf16[K, N] row", "D: bf16[M, N] row"],
        "D[m, n] = bf16(A[m, k] * B[k, n])",
        SMALL,
      ),
    sizes: { M: 72, N: 104, K: 80 },
    store: stgB32(4),
  },
  {
    name: "tf32 -> f16, column-major A",
    ck: () =>
      kernel(
        ["A: f32[M, K] col", "B: f32[K, N] col", "D: f16[M, N] row"],
        "D[m, n] = f16(A[m, k] * B[k, n])",
        SMALL,
      ),
    sizes: { M: 68, N: 88, K: 40 },
    store: stgB32(4),
  },
  {
    name: "s8 -> s8, saturated, 16-byte rows",
    ck: () =>
      kernel(
        ["A: s8[M, K] row", "B: s8[K, N] col", "D: s8[M, N] row"],
        "D[m, n] = s8(A[m, k] * B[k, n])",
        ["threadblock 64x64x64", "warp 32x32x64", "stages 3"],
      ),
    sizes: { M: 80, N: 96, K: 192 },
    // 32-byte warp-tile rows: 16-byte vectors.
    store: stgB32(4),
  },
  {
    name: "u8 with a per-row bias and a clamp, align 4 (whole-tile chunks)",
    ck: () =>
      kernel(
        ["A: s8[M, K] row", "B: s8[K, N] col", "bias: s32[M]", "D: u8[M, N] row align 4"],
        "D[m, n] = u8(clamp(A[m, k] * B[k, n] + bias[m], 0, 255))",
        ["threadblock 64x64x64", "warp 32x32x64", "stages 3"],
      ),
    sizes: { M: 70, N: 68, K: 64 },
    store: stgB32(1),
  },
  {
    name: "f16 with f16 accumulators, per-column bias and relu",
    ck: () =>
      kernel(
        ["A: f16[M, K] row", "B: f16[K, N] col", "bias: f16[N]", "D: f16[M, N] row"],
        "D[m, n] = f16(relu(A[m, k] * B[k, n] + bias[n]))",
        [...SMALL, "accumulate f16"],
      ),
    sizes: { M: 96, N: 72, K: 64 },
    store: stgB32(4),
  },
  {
    name: "u4 -> s8, saturated, default schedule",
    ck: () =>
      kernel(
        ["A: u4[M, K] row", "B: u4[K, N] col", "D: s8[M, N] row"],
        "D[m, n] = s8(A[m, k] * B[k, n])",
      ),
    sizes: { M: 136, N: 272, K: 256 },
    store: stgB32(4),
  },
  {
    name: "f16 -> f16 reading C (f16) with alpha and beta: raw accumulators staged",
    ck: () =>
      kernel(
        [
          "A: f16[M, K] row",
          "B: f16[K, N] col",
          "C: f16[M, N] row",
          "D: f16[M, N] row",
          "alpha: f32 = 1.5",
          "beta: f32 = -0.5",
        ],
        "D[m, n] = f16(alpha * A[m, k] * B[k, n] + beta * C[m, n])",
      ),
    sizes: { M: 136, N: 264, K: 96 },
    store: stgB32(2),
  },
  {
    name: "s8 -> s8 reading C (s32) and a per-column bias: raw s32 staged, bytes packed",
    ck: () =>
      kernel(
        [
          "A: s8[M, K] row",
          "B: s8[K, N] col",
          "C: s32[M, N] row",
          "bias: s32[N]",
          "D: s8[M, N] row align 4",
        ],
        "D[m, n] = s8(A[m, k] * B[k, n] + C[m, n] + bias[n])",
        ["threadblock 64x64x64", "warp 32x32x64", "stages 3"],
      ),
    sizes: { M: 70, N: 76, K: 128 },
    store: stgB32(1),
  },
  {
    name: "batched bf16 -> bf16 with split-K (the last split stages)",
    ck: () =>
      kernel(
        ["A: bf16[L, M, K] row", "B: bf16[L, K, N] col", "D: bf16[L, M, N] row"],
        "D[l, m, n] = bf16(A[l, m, k] * B[l, k, n])",
        [...SMALL, "split_k 3"],
      ),
    sizes: { L: 2, M: 72, N: 80, K: 224 },
    store: stgB32(4),
  },
  ...wideCases(),
  {
    name: "u8 -> u8 on 64x56 warp tiles: 56-byte rows of 14 4-byte vectors read by 16 lanes",
    ck: () =>
      kernel(
        ["A: u8[M, K] row", "B: s8[K, N] col", "D: u8[M, N] row align 4"],
        "D[m, n] = u8(clamp(A[m, k] * B[k, n], 0, 255))",
        ["threadblock 128x112x128", "warp 64x56x128", "stages 3"],
      ),
    sizes: { M: 136, N: 124, K: 160 },
    store: stgB32(1),
  },
];

for (const c of CASES) {
  Deno.test(`staged epilogue: ${c.name} agrees, no hazard, no bank conflict`, () => {
    const ck = c.ck();
    const epi = epilogueText(ck);
    assert.match(epi, /sts\./, "the epilogue stages");
    assert.match(epi, /lds\./);
    assert.match(epi, c.store);
    const rep = simulateGemm(ck, c.sizes, { seed: 77 });
    assert.deepEqual(rep.sim.hazards.map((h) => `${h.kind} ${h.line}: ${h.op}`), []);
    assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
    const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
    if (!DTYPE_INFO[d.dtype].float && ck.gemm.epilogue.compute === "s32") {
      assert.ok(referenceGemm(ck.gemm, rep.args).exact);
      assert.equal(rep.comparison.maxAbsError, 0);
    }
    // Only the staging (and split-K's one-word flag) stores to shared memory.
    const sts = rep.sim.stats.banks.sts;
    assert.ok(sts.requests > 0);
    assert.equal(sts.wavefronts, sts.ideal, "staging stores conflict-free");
    // The main loop reads fragments with ldmatrix only here; the rest is the staging.
    // Warp-tile rows of 128 bytes or more: conflict-free. Narrower rows (the
    // 32-wide warp tiles here) have no padding that suits both the fragment
    // writes and the row reads; the pad chosen costs the reads at most twice
    // the ideal.
    const m = ck.planned.plan.mma!;
    if (m.aLoad !== "lds" && m.bLoad !== "lds") {
      const lds = rep.sim.stats.banks.lds;
      const rowBytes = ck.planned.plan.warp!.warp.n * DTYPE_INFO[d.dtype].bits / 8;
      if (rowBytes >= 128) assert.equal(lds.wavefronts, lds.ideal, "staging loads conflict-free");
      else assert.ok(lds.wavefronts <= 2 * lds.ideal, `${lds.wavefronts} vs ${lds.ideal}`);
    }
  });
}

Deno.test("staged epilogue: column-major D or C, align 1, C with D aligned to 2, and 32/64-bit D stay direct", () => {
  const direct = [
    kernel(
      ["A: f16[M, K] row", "B: f16[K, N] col", "C: f32[M, N] row", "D: f32[M, N] row"],
      "D[m, n] = A[m, k] * B[k, n] + C[m, n]",
    ),
    // Raw staging stores 4 elements a lane: D aligned to 2 stays direct.
    kernel(
      ["A: f16[M, K] row", "B: f16[K, N] col", "C: f16[M, N] row", "D: f16[M, N] row align 2"],
      "D[m, n] = f16(A[m, k] * B[k, n] + C[m, n])",
    ),
    kernel(
      ["A: f16[M, K] row", "B: f16[K, N] col", "D: f16[M, N] col"],
      "D[m, n] = f16(A[m, k] * B[k, n])",
    ),
    // A column-major C: read in the fragment layout, in whole sectors
    // (bench/NOTES.md 37); along D's rows it would read 8 bytes a sector.
    kernel(
      [
        "A: bf16[M, K] row",
        "B: bf16[K, N] col",
        "C: f32[M, N] col",
        "bias: f32[M]",
        "D: bf16[M, N] row",
      ],
      "D[m, n] = bf16(relu(A[m, k] * B[k, n] + C[m, n] + bias[m]))",
      SMALL,
    ),
    kernel(
      ["A: f16[M, K] row align 1", "B: f16[K, N] col align 1", "D: f16[M, N] row align 1"],
      "D[m, n] = f16(A[m, k] * B[k, n])",
    ),
    // 32- and 64-bit outputs: the direct pairs (8 or 16 bytes a lane) fill 32-byte sectors.
    kernel(
      ["A: f64[M, K] row", "B: f64[K, N] col", "D: f64[M, N] row"],
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    kernel(
      ["A: s8[M, K] row", "B: s8[K, N] col", "D: s32[M, N] row"],
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    kernel(
      ["A: f32[M, K] row", "B: f32[K, N] col", "D: f32[M, N] row"],
      "D[m, n] = A[m, k] * B[k, n]",
    ),
  ];
  for (const ck of direct) {
    const epi = epilogueText(ck);
    assert.doesNotMatch(epi, /sts\./);
    assert.doesNotMatch(epi, /\bbar\b/);
  }
  const rep = simulateGemm(direct[3]!, { M: 76, N: 72, K: 64 }, { seed: 77 });
  assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
});

/** The staging the kernel IR names: tile rows a chunk, of how many, and bytes a warp. */
function staging(ck: CompiledKernel): { tiles: number; of: number; bytes: number } {
  const m =
    /staged through shared memory \([^)]*\): (\d+) of (\d+) accumulator-tile rows a chunk, (\d+) bytes a warp/
      .exec(ck.kernelText);
  assert.ok(m !== null, "no staging comment");
  return { tiles: Number(m[1]), of: Number(m[2]), bytes: Number(m[3]) };
}

Deno.test("staged epilogue: a bias along M alone takes whole-tile chunks, one along N one row", () => {
  const decls = (
    v: string,
  ) => ["A: f16[M, K] row", "B: f16[K, N] col", `bias: f32[${v}]`, "D: f16[M, N] row"];
  const byM = kernel(decls("M"), "D[m, n] = f16(A[m, k] * B[k, n] + bias[m])");
  const byN = kernel(decls("N"), "D[m, n] = f16(A[m, k] * B[k, n] + bias[n])");
  const both = kernel(
    ["A: f16[M, K] row", "B: f16[K, N] col", "r: f32[M]", "c: f32[N]", "D: f16[M, N] row"],
    "D[m, n] = f16(A[m, k] * B[k, n] * r[m] + c[n])",
  );
  assert.match(epilogueText(byM), /\(D's elements\): 4 of 4 accumulator-tile rows a chunk/);
  assert.match(epilogueText(byN), /\(D's elements\): 1 of 4 accumulator-tile rows a chunk/);
  assert.match(epilogueText(both), /\(D's elements\): 1 of 4 accumulator-tile rows a chunk/);
  for (const ck of [byM, byN, both]) {
    const rep = simulateGemm(ck, { M: 136, N: 264, K: 64 }, { seed: 21 });
    assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
  }
});

Deno.test("staged epilogue: the regions fit in the pipeline's shared memory, in chunks where they must", () => {
  for (const c of CASES) {
    const ck = c.ck();
    const st = staging(ck);
    const warps = ck.planned.plan.warp!.threads / 32;
    assert.ok(st.tiles >= 1 && st.tiles <= st.of, c.name);
    assert.ok(warps * st.bytes <= ck.kernel.dynamicSmemBytes, c.name);
  }
  // f16 D of the default 128x256 tile with 2 stages (48 KB): 8 warps x 64
  // rows of 144 bytes do not fit, 32 rows do. Two chunks, a barrier between
  // them, and the result still agrees.
  const ck = kernel(
    ["A: f16[M, K] row", "B: f16[K, N] col", "D: f16[M, N] row"],
    "D[m, n] = f16(A[m, k] * B[k, n])",
    ["threadblock 128x256x32", "warp 64x64x32", "stages 2"],
  );
  const st = staging(ck);
  assert.deepEqual([st.tiles, st.of], [2, 4]);
  assert.ok(8 * st.bytes <= ck.kernel.dynamicSmemBytes, "the regions fit");
  assert.ok(16 * st.bytes > ck.kernel.dynamicSmemBytes, "twice the rows would not");
  assert.equal((epilogueText(ck).match(/^\s*bar$/gm) ?? []).length, 4); // first, 2 per chunk but the last
  const rep = simulateGemm(ck, { M: 136, N: 264, K: 96 }, { seed: 5 });
  assert.deepEqual(rep.sim.hazards, []);
  assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
});

// A sweep of hints over the examples and inline bias programs found the first
// staged version spilling 16-40 bytes at these sizes: one bias load per
// element, all hoisted above the chunk's shared stores. Each row's or
// column's element is now loaded once.
ptxasTest(
  "staged epilogue: bias epilogues assemble without spills at the sizes that spilled",
  async (ptxas) => {
    const cases: [string, Record<string, number>, number][] = [
      [
        Deno.readTextFileSync(new URL("../examples/fused_bias_relu.gemm", import.meta.url)),
        { Tokens: 3000, Out: 200, In: 9000 },
        132,
      ],
      [
        Deno.readTextFileSync(new URL("../examples/two_kernels.gemm", import.meta.url)),
        { M: 4096, N: 4096, K: 4096 },
        108,
      ],
      [
        "kernel k {\n  A: bf16[M, K] col\n  B: bf16[K, N] col\n  bias: f32[N]\n  D: bf16[M, N] row\n" +
        "  D[m, n] = bf16(relu(A[m, k] * B[k, n] + bias[n]))\n}\n",
        { M: 3000, N: 200, K: 9000 },
        132,
      ],
    ];
    for (const [src, sizeHints, sms] of cases) {
      const r = compile(src, { file: "staged.gemm", sizeHints, sms });
      assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
      for (const ck of r.kernels) {
        if (!/sts\./.test(epilogueText(ck))) continue;
        const p = await runPtxas(ck.ptx, { arch: ptxTarget(ck.kernel.target), ptxasPath: ptxas });
        assert.ok(p.ok, p.log);
        const k = p.kernels[0]!;
        assert.equal(
          k.spillStoreBytes + k.spillLoadBytes + k.stackFrameBytes,
          0,
          `${ck.name} spills`,
        );
      }
    }
  },
);

for (const target of ["sm80", "sm86", "sm90"] as const) {
  for (const hints of [{ M: 16, N: 4096, K: 4096 }, { M: 1, N: 4096, K: 14336 }]) {
    const at = `${target} at M=${hints.M}, N=${hints.N}, K=${hints.K}`;
    Deno.test(`staged epilogue: an 8-bit D in 8-byte warp rows stages through 16-byte strides (${at})`, () => {
      // u8 D on 16x8 warp tiles: 8-byte rows, once staged with an 8-byte stride that the GEMM
      // IR verifier refused (an internal error for M <= 16 on 132 SMs, every target).
      const ck = hinted(readExample("u8_gemm").text, hints, target);
      assert.equal(ck.planned.plan.warp!.warp.n, 8);
      const st = ck.planned.plan.staging;
      assert.ok(st !== undefined && st !== null, "staged");
      assert.equal(st.stride % 16, 0);
      for (const M of [1, 7, 33]) {
        const rep = simulateGemm(ck, { M, N: 72, K: 208 }, { seed: 4300 + M });
        assert.equal(rep.sim.hazardCount, 0);
        assert.ok(rep.comparison.ok, `M=${M}: ${rep.comparison.overBound} over the bound`);
      }
    });
  }
}
