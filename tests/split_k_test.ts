/**
 * split_k > 1 (passes/lower/split_k.ts `splitKReduce`): each block computes a range of
 * K, stores its partial accumulators in the workspace and counts itself in;
 * the last block of a tile sums the partials in split order and runs the
 * epilogue. Checked here on the simulator against the reference (every MMA
 * family with f32, f64, s32 and f16 accumulators, SIMT, batches, an epilogue,
 * splits that get no k-tile), and that the workspace comes back zeroed, that
 * the result does not depend on the order in which the splits arrive, that a
 * tile whose splits have not all run writes nothing, the default split-K for
 * skinny problems, the manifest, and that ptxas assembles the kernels
 * without spills.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { simArgs } from "../harness/simulate_gemm.ts";
import { randomArgs } from "../harness/inputs.ts";
import { type BlockCoord, gridBlocks, simulate } from "../backends/sim/mod.ts";
import { workspaceArgs, workspaceBytes } from "../harness/workspace.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import { gridFor } from "../ir/kernel.ts";
import { tensorParam } from "../ir/gemm.ts";
import { defaultSplitK } from "../passes/tile_sm80.ts";
import { findPtxas, runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxTarget } from "../backends/ptx/print.ts";

function one(source: string, opts: Parameters<typeof compile>[1] = {}): CompiledKernel {
  const r = compile(source, { file: "split_k.gemm", ...opts });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

function gemm(
  types: { a: string; b: string; d: string },
  schedule: string,
  extra = { decl: "", expr: "A[m, k] * B[k, n]", bl: "row" },
): string {
  return `kernel k {
  A: ${types.a}[M, K] row
  B: ${types.b}[K, N] ${extra.bl}
  ${extra.decl}
  D: ${types.d}[M, N] row
  D[m, n] = ${extra.expr}
  schedule {
    ${schedule.split(";").join("\n    ")}
  }
}`;
}

/** A plain product with B column-major (TN). */
const TN = { decl: "", expr: "A[m, k] * B[k, n]", bl: "col" };

const CASES: readonly {
  name: string;
  src: string;
  sizes: Record<string, number>;
}[] = [
  {
    name: "f16 -> f32, 3 splits, K not a multiple of the tile",
    src: gemm({ a: "f16", b: "f16", d: "f32" }, "threadblock 64x64x32;warp 32x32x32;split_k 3"),
    sizes: { M: 96, N: 80, K: 296 },
  },
  {
    name: "tf32 with bias and relu, 4 splits",
    src: gemm(
      { a: "f32", b: "f32", d: "f32" },
      "threadblock 64x64x16;warp 32x32x16;split_k 4",
      { decl: "bias: f32[N]", expr: "relu(A[m, k] * B[k, n] + bias[n])", bl: "col" },
    ),
    sizes: { M: 64, N: 128, K: 200 },
  },
  {
    name: "tf32, one k-tile for 4 splits (three splits add zeros)",
    src: gemm({ a: "f32", b: "f32", d: "f32" }, "threadblock 64x64x16;warp 32x32x16;split_k 4"),
    sizes: { M: 64, N: 64, K: 16 },
  },
  {
    name: "s8 -> s32, 5 splits (saturating sums)",
    src: gemm({ a: "s8", b: "s8", d: "s32" }, "threadblock 64x64x64;warp 32x32x64;split_k 5", TN),
    sizes: { M: 64, N: 64, K: 640 },
  },
  {
    name: "f64, 2 splits",
    src: gemm({ a: "f64", b: "f64", d: "f64" }, "split_k 2"),
    sizes: { M: 40, N: 72, K: 100 },
  },
  {
    name: "bf16 -> bf16, 128x256 tile of 64x64 warps, 4 splits",
    src: gemm({ a: "bf16", b: "bf16", d: "bf16" }, "threadblock 128x256x32;split_k 4", TN),
    sizes: { M: 128, N: 256, K: 512 },
  },
  {
    name: "f16 accumulators (f16x2 partials summed in f32), relu, 3 splits",
    src: gemm(
      { a: "f16", b: "f16", d: "f16" },
      "threadblock 64x64x32;warp 32x32x32;accumulate f16;split_k 3",
      { decl: "", expr: "relu(A[m, k] * B[k, n])", bl: "col" },
    ),
    sizes: { M: 96, N: 80, K: 296 },
  },
  {
    name: "f16 accumulators, 128x256 tile of 64x64 warps, 4 splits",
    src: gemm(
      { a: "f16", b: "f16", d: "f16" },
      "threadblock 128x256x32;accumulate f16;split_k 4",
      TN,
    ),
    sizes: { M: 128, N: 256, K: 512 },
  },
  {
    name: "SIMT f32, 2 splits",
    src: gemm({ a: "f32", b: "f32", d: "f32" }, "math f32;split_k 2"),
    sizes: { M: 64, N: 64, K: 40 },
  },
  {
    name: "tf32 160x256 tile (interleaved fragments), 2 splits",
    src: gemm(
      { a: "f32", b: "f32", d: "f32" },
      "threadblock 160x256x16;warp 80x64x16;split_k 2",
      TN,
    ),
    sizes: { M: 160, N: 256, K: 96 },
  },
];

CASES.forEach((c, i) => {
  Deno.test(`split-K agrees with the reference: ${c.name}`, () => {
    const ck = one(c.src);
    assert.ok(ck.kernel.grid.splitK > 1);
    const rep = simulateGemm(ck, c.sizes, { seed: 100 + i });
    assert.equal(rep.sim.hazardCount, 0, JSON.stringify(rep.sim.hazards.slice(0, 3)));
    assert.ok(
      rep.comparison.ok,
      `${c.name}: ${rep.comparison.overBound} over the bound, first ${
        JSON.stringify(rep.comparison.first)
      }`,
    );
  });
});

Deno.test("split-K: batched (the grid's z is batch x splits)", () => {
  const ck = one(`kernel k {
  A: bf16[L, M, K] row
  B: bf16[L, K, N] row
  D: bf16[L, M, N] row
  D[l, m, n] = A[l, m, k] * B[l, k, n]
  schedule {
    threadblock 128x128x32
    split_k 3
  }
}`);
  const rep = simulateGemm(ck, { L: 2, M: 130, N: 136, K: 96 }, { seed: 7 });
  assert.deepEqual(rep.grid.slice(2), [6]);
  assert.ok(rep.ok);
});

/** Runs the whole grid with the given block order; returns D and the workspace afterwards. */
function runOrdered(
  ck: CompiledKernel,
  sizes: Record<string, number>,
  order: (blocks: BlockCoord[]) => BlockCoord[],
  workspace?: Uint8Array,
) {
  const args = randomArgs(ck.gemm, sizes, 5, {});
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor).name;
  args.tensors.get(d)!.fill(0xff);
  const grid = gridFor(ck.kernel.grid, sizes);
  const blocks = gridBlocks(grid);
  const ws = workspace ?? workspaceArgs(ck.kernel, sizes).get("workspace")!;
  const res = simulate(ck.kernel, {
    grid,
    args: { ...simArgs(args), workspace: { bytes: ws } },
  }, { blocks: order(blocks) });
  return { d: args.tensors.get(d)!, ws, res };
}

const TF32 = gemm(
  { a: "f32", b: "f32", d: "f32" },
  "threadblock 64x64x16;warp 32x32x16;split_k 4",
  TN,
);
const SIZES = { M: 128, N: 64, K: 256 };

Deno.test("split-K: the workspace comes back zeroed, and serves the next launch as it is", () => {
  const ck = one(TF32);
  const first = runOrdered(ck, SIZES, (b) => b);
  const counters = (ws: Uint8Array) => {
    const per = ck.kernel.grid.workspacePerTile!;
    const out: number[] = [];
    for (let t = 0; t < ws.length / per; t++) {
      out.push(new DataView(ws.buffer, ws.byteOffset + t * per, 4).getUint32(0, true));
    }
    return out;
  };
  assert.equal(first.ws.length, workspaceBytes(ck.kernel.grid, SIZES));
  assert.deepEqual(counters(first.ws), [0, 0]);
  // The partials are there (not all zero): the counters are what is reset.
  assert.ok(first.ws.some((x) => x !== 0));
  const second = runOrdered(ck, SIZES, (b) => b, first.ws);
  assert.deepEqual(second.d, first.d);
  assert.deepEqual(counters(second.ws), [0, 0]);
});

Deno.test("split-K: the sum does not depend on the order in which the splits arrive", () => {
  const ck = one(TF32);
  const forward = runOrdered(ck, SIZES, (b) => b);
  const reverse = runOrdered(ck, SIZES, (b) => [...b].reverse());
  // Interleaved: split 2, 0, 3, 1 of every tile.
  const mixed = runOrdered(ck, SIZES, (b) => {
    const byZ = (z: number) => b.filter((x) => x[2] === z);
    return [2, 0, 3, 1].flatMap(byZ);
  });
  assert.ok(forward.d.some((x) => x !== 0xff));
  assert.deepEqual(reverse.d, forward.d);
  assert.deepEqual(mixed.d, forward.d);
});

Deno.test("split-K: a tile writes D only when all its splits have run", () => {
  const ck = one(TF32);
  const some = runOrdered(ck, SIZES, (b) => b.filter((x) => x[2] !== 2));
  assert.ok(some.d.every((x) => x === 0xff), "D written before every split arrived");
  const [x, y] = gridFor(ck.kernel.grid, SIZES);
  assert.equal(some.res.blocks, x * y * 3);
});

Deno.test("split-K defaults: skinny problems with known sizes split K (tf32; f16, bf16 unless a deep 128x64 tile fills the SMs)", () => {
  assert.equal(defaultSplitK(32, 256, 132), 4);
  assert.equal(defaultSplitK(32, 256, 108), 3);
  assert.equal(defaultSplitK(2, 4096, 132), 8);
  assert.equal(defaultSplitK(32, 64, 132), 2); // 32 k-tiles per split at least
  assert.equal(defaultSplitK(32, 63, 132), 1);
  assert.equal(defaultSplitK(67, 1024, 132), 1); // half the SMs busy already
  const plan = (t: string, sms: number, acc = "", N = 8192, M = 128) => {
    const src = Deno.readTextFileSync(new URL(`../bench/kernels/${t}.gemm`, import.meta.url))
      .replace("D[m, n] =", `${acc}D[m, n] =`);
    const ck = one(src, { sizeHints: { M, N, K: 8192 }, sms });
    const tile = ck.planned.plan.tile!;
    return `${tile.threadblock.m}x${tile.threadblock.n} split ${tile.splitK}`;
  };
  // 16-bit at M=256, N=4096, K=8192: 128 blocks of a 128-deep 128x64 tile
  // (passes/tile_sm80.ts deep16; bench/NOTES.md 30); at N=8192 the 128x256 grid of 64
  // blocks splits K. At M <= 128 the skinny schedule (passes/skinny.ts): one wave of
  // short tiles, split only where the tiles alone leave SMs idle.
  assert.equal(plan("f16", 132, "", 4096, 256), "128x64 split 1");
  assert.equal(plan("bf16", 132, "", 4096, 256), "128x64 split 1");
  assert.equal(plan("f16", 132, "", 8192, 256), "128x256 split 2");
  assert.equal(plan("bf16", 132, "", 8192, 256), "128x256 split 2");
  assert.equal(plan("f16", 132), "64x128 split 1");
  assert.equal(plan("f16", 132, "", 4096, 64), "64x64 split 2");
  assert.equal(plan("tf32", 132), "128x256 split 4");
  assert.equal(plan("tf32", 108), "128x256 split 3");
  // s8 measured slower with split-K: it keeps the small-grid tile.
  assert.equal(plan("s8", 132), "128x64 split 1");
  assert.equal(plan("f64", 132), "64x64 split 1");
  // Large problems do not split.
  const big = one(
    Deno.readTextFileSync(new URL("../bench/kernels/f16.gemm", import.meta.url)),
    { sizeHints: { M: 4096, N: 4096, K: 4096 }, sms: 132 },
  );
  assert.equal(big.planned.plan.tile!.splitK, 1);
  assert.equal(big.kernel.params.some((p) => p.name === "workspace"), false);
});

Deno.test("split-K: the manifest names the workspace and its size", () => {
  const ck = one(TF32);
  const m = kernelManifest(ck.gemm, ck.kernel, SIZES);
  const last = m.params.at(-1)!;
  assert.deepEqual(last, {
    name: "workspace",
    kind: "tensor",
    ptx: "u64",
    dtype: "u8",
    role: "workspace",
  });
  // 2 tiles, each a 128-byte header and 4 partials of 128 threads x 32 f32.
  assert.deepEqual(m.workspace, {
    param: "workspace",
    bytesPerTile: 128 + 4 * 128 * 32 * 4,
    bytes: 2 * (128 + 4 * 128 * 32 * 4),
  });
  assert.deepEqual(m.grid, [16, 1, 4]);
  const plain = one(gemm({ a: "f16", b: "f16", d: "f32" }, "threadblock 64x64x32"));
  assert.equal(kernelManifest(plain.gemm, plain.kernel).workspace, undefined);
});

Deno.test("split-K: a tensor named workspace is a diagnostic", () => {
  const named = compile(
    gemm({ a: "f16", b: "f16", d: "f32" }, "split_k 2", {
      decl: "workspace: f32[N]",
      expr: "A[m, k] * B[k, n] + workspace[n]",
      bl: "row",
    }),
  );
  assert.equal(named.ok, false);
  assert.equal(named.diagnostics[0]!.code, "E0212");
  assert.match(named.diagnostics[0]!.message, /parameter named "workspace"/);
});

const PTXAS = findPtxas();
Deno.test({
  name: "split-K: ptxas assembles the skinny defaults without spills" +
    (PTXAS === null && Deno.env.get("CI") !== "true" ? " (skipped: no ptxas)" : ""),
  ignore: PTXAS === null && Deno.env.get("CI") !== "true",
  fn: async () => {
    assert.ok(PTXAS !== null, "ptxas not found and CI=true");
    const cases = [["f16", 64, 4096, 2], ["bf16", 256, 8192, 2], ["tf32", 128, 8192, 4]] as const;
    for (const [t, M, N, split] of cases) {
      const src = Deno.readTextFileSync(new URL(`../bench/kernels/${t}.gemm`, import.meta.url));
      const ck = one(src, { sizeHints: { M, N, K: 8192 }, sms: 132 });
      assert.equal(ck.kernel.grid.splitK, split);
      const r = await runPtxas(ck.ptx, { arch: ptxTarget(ck.kernel.target), ptxasPath: PTXAS });
      assert.ok(r.ok, r.log);
      const k = r.kernels[0]!;
      assert.equal(k.spillStoreBytes + k.spillLoadBytes, 0, `${t}: spills`);
      assert.match(ck.ptx, /atom\.global\.add\.u32/);
      assert.match(ck.ptx, /fence\.acq_rel\.gpu/);
      assert.match(ck.ptx, /ld\.global\.cg/);
    }
  },
});

Deno.test("split-K: a hinted K smaller than the splits is no error (splits without k-tiles add zeros)", () => {
  // E0207 is for a declared K only: hints may differ from the run-time size.
  const src = Deno.readTextFileSync(new URL("../examples/splitk.gemm", import.meta.url));
  const r = compile(src, { file: "splitk.gemm", sizeHints: { M: 128, N: 4096, K: 64 }, sms: 132 });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  assert.equal(ck.kernel.grid.splitK, 4);
  for (const K of [64, 32, 1000]) {
    const rep = simulateGemm(ck, { M: 72, N: 80, K }, { seed: 41 + K });
    assert.ok(rep.ok, `K=${K}: ${JSON.stringify(rep.comparison.first)}`);
  }
});
