/**
 * sm90's warpgroup MMA kernels (passes/wgmma.ts, passes/lower/wgmma.ts; issue 23):
 *
 * - which programs the passes put on wgmma, and the plan they get (tile, warps, stages,
 *   the wait depth, the instruction rows), and the diagnostics of an `mma 64xNxK` that
 *   cannot be one;
 * - each program of tests/testdata/wgmma_cases.ts simulated at sizes that are not tile
 *   multiples agrees with the reference (integers identical), hazards none;
 * - every example compiles for sm90 and its simulation agrees, hazards none;
 * - the PTX: descriptors, the 1024-byte aligned shared symbol, ptxas -arch=sm_90a clean
 *   with no spills at the defaults;
 * - the kernel-IR verifier refuses wgmma ops on sm80 and in partial warpgroups.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { simulateGrouped } from "../harness/simulate_grouped.ts";
import { referenceGemm } from "../harness/reference.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { tensorParam } from "../ir/gemm.ts";
import { gridFor, type Kernel, type Op } from "../ir/kernel.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { WGMMA_CASES, WGMMA_GROUPED_CASES } from "./testdata/wgmma_cases.ts";

function compileFor(src: string, target: "sm80" | "sm90" = "sm90"): CompiledKernel {
  const r = compile(src, { file: "wg.gemm", target });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  return r.kernels[0]!;
}

const F16 = (sched = "", b = "col", align = "") =>
  `kernel h {\n  A: f16[M, K] row${align}\n  B: f16[K, N] ${b}${align}\n  D: f32[M, N] row\n` +
  `  D[m, n] = A[m, k] * B[k, n]\n${sched === "" ? "" : `  schedule {\n    ${sched}\n  }\n`}}\n`;

/** Operands aligned to 8 bytes only: no tensor map, the cp.async pipeline. */
const ALIGN8 = " align 4";

Deno.test("wgmma: the default f16 plan on sm90 is warp-specialized: TMA, two consumer warpgroups of 64x256, 4 stages", () => {
  const ck = compileFor(F16());
  const p = ck.planned.plan;
  assert.deepEqual(p.tile!.threadblock, { m: 128, n: 256, k: 64 });
  assert.equal(p.tile!.wgmma, true);
  assert.deepEqual([p.warp!.warpsM, p.warp!.warpsN, p.warp!.threads], [8, 1, 256]);
  assert.deepEqual(p.warp!.warp, { m: 16, n: 256, k: 64 });
  assert.equal(p.pipeline!.stages, 4);
  // Persistent: its staging region (unused: an f32 D stores directly) after the barriers
  // (Stream-K only when asked: tests/stream_k_test.ts).
  assert.deepEqual(p.pipeline!.tma, {
    barrierOffset: 4 * 49152,
    producerThreads: 128,
    producerRegs: 24,
    consumerRegs: 240,
    persistent: { stagingOffset: 4 * 49152 + 128 },
  });
  assert.deepEqual(ck.kernel.grid.persistent, { blocks: 132 });
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 8192, N: 8192, K: 64 }), [132, 1, 1]);
  assert.deepEqual(gridFor(ck.kernel.grid, { M: 300, N: 300, K: 64 }, 114), [6, 1, 1]);
  assert.equal(ck.kernel.threads, 384);
  assert.equal(ck.kernel.dynamicSmemBytes, 4 * 49152 + 64);
  assert.deepEqual(
    ck.kernel.params.filter((q) => q.kind === "tensormap").map((q) => [q.name, q.tmap!.box]),
    [["A_tmap", [64, 128]], ["B_tmap", [64, 256]]],
  );
  assert.match(ck.ptx, /cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier/);
  assert.match(ck.ptx, /setmaxnreg\.dec\.sync\.aligned\.u32 24;/);
  assert.match(ck.ptx, /setmaxnreg\.inc\.sync\.aligned\.u32 240;/);
  assert.match(ck.ptx, /mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%r\d+\], 49152;/);
  assert.doesNotMatch(ck.ptx, /cp\.async\.ca|cp\.async\.cg|fence\.proxy\.async/);
  assert.match(ck.ptx, /wgmma\.wait_group\.sync\.aligned 1;/);
});

Deno.test("wgmma: a persistent kernel's 16-bit D is staged in a region of its own: 3 stages", () => {
  const src = F16().replace("D: f32[M, N] row", "D: f16[M, N] row").replace(
    "D[m, n] = A[m, k] * B[k, n]",
    "D[m, n] = f16(A[m, k] * B[k, n])",
  );
  const ck = compileFor(src);
  const p = ck.planned.plan;
  assert.equal(p.pipeline!.stages, 3);
  const off = p.pipeline!.tma!.persistent!.stagingOffset;
  assert.equal(off, Math.ceil((3 * (49152 + 16)) / 128) * 128);
  assert.notEqual(p.staging, null);
  assert.equal(ck.kernel.dynamicSmemBytes, off + 8 * p.staging!.regionBytes);
  assert.ok(ck.kernel.dynamicSmemBytes <= 232448);
  // A split-K kernel is not persistent.
  const split = compileFor(F16("split_k 3"));
  assert.equal(split.planned.plan.pipeline!.tma!.persistent, undefined);
  assert.equal(split.kernel.grid.persistent, undefined);
});

Deno.test("wgmma: operands aligned below 16 bytes keep the cp.async pipeline, 4 stages", () => {
  const ck = compileFor(F16("", "col", ALIGN8));
  const p = ck.planned.plan;
  assert.deepEqual(p.tile!.threadblock, { m: 128, n: 256, k: 64 });
  assert.equal(p.pipeline!.tma, undefined);
  assert.equal(ck.kernel.threads, 256);
  assert.deepEqual([p.pipeline!.stages, p.pipeline!.waitDepth], [4, 1]);
  assert.equal(p.mma!.wgmma, "wg.m64n256k16.f16.f32");
  assert.equal(p.mma!.shape, "m16n8k16.f16.f32");
  assert.deepEqual([p.mma!.aLoad, p.mma!.bLoad, p.mma!.kSteps], ["wgmma", "wgmma", 4]);
  const ops: Op["op"][] = [];
  const walk = (b: readonly Op[]) => {
    for (const o of b) {
      ops.push(o.op);
      if (o.op === "for") walk(o.body);
      if (o.op === "if") (walk(o.then), walk(o.otherwise));
    }
  };
  walk(ck.kernel.body);
  assert.equal(ops.filter((o) => o === "wgmma").length, 4);
  assert.equal(ops.filter((o) => o === "mma" || o === "ldmatrix").length, 0);
  assert.match(ck.ptx, /\.extern \.shared \.align 1024 \.b8/);
  assert.match(ck.ptx, /wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16/);
  assert.match(ck.ptx, /fence\.proxy\.async\.shared::cta/);
  assert.match(ck.ptx, /wgmma\.wait_group\.sync\.aligned 1;/);
});

Deno.test("wgmma: the programs that keep mma.sync on sm90, and every program on sm80", () => {
  const sync = [
    F16("", "row"), // B N-contiguous
    F16("warp 64x64x32"), // a warp tile asks for mma.sync
    F16("mma 16x8x16"),
    F16("threadblock 128x128x32"), // K of 64 bytes, not one 128-byte row
  ];
  for (const src of sync) {
    const ck = compileFor(src);
    assert.equal(ck.planned.plan.mma!.wgmma, undefined, src);
    assert.doesNotMatch(ck.ptx, /wgmma/, src);
  }
  assert.equal(compileFor(F16(), "sm80").planned.plan.mma!.wgmma, undefined);
  // A problem too small for a wave of 128x256 tiles keeps the mma.sync tiles.
  const small = compile(F16(), { target: "sm90", sizeHints: { M: 256, N: 256, K: 4096 } });
  assert.ok(small.ok);
  assert.equal(small.kernels[0]!.planned.plan.mma!.wgmma, undefined);
});

Deno.test("wgmma: a schedule's mma 64xNxK picks the row, or says why it cannot", () => {
  const ck = compileFor(
    F16("threadblock 128x128x64\n    mma 64x128x16\n    stages 5", "col", ALIGN8),
  );
  assert.equal(ck.planned.plan.mma!.wgmma, "wg.m64n128k16.f16.f32");
  assert.equal(ck.planned.plan.pipeline!.waitDepth, 2);
  for (
    const [src, target] of [
      [F16("mma 64x256x16"), "sm80"],
      [F16("threadblock 128x256x32\n    mma 64x256x16"), "sm90"],
      [F16("threadblock 128x256x64\n    mma 64x128x16"), "sm90"],
    ] as const
  ) {
    const r = compile(src, { target });
    assert.ok(!r.ok, src);
    assert.match(r.diagnostics[0]!.message, /E0203|warpgroup MMA/, src);
  }
  const two = compile(F16("threadblock 128x256x64\n    stages 2", "col", ALIGN8), {
    target: "sm90",
  });
  assert.ok(!two.ok);
  assert.match(
    two.diagnostics[0]!.message,
    /cp\.async pipeline feeding wgmma needs at least 3 stages/,
  );
  const one = compile(F16("threadblock 128x256x64\n    stages 1"), { target: "sm90" });
  assert.ok(!one.ok);
  assert.match(one.diagnostics[0]!.message, /TMA pipeline feeding wgmma needs at least 2 stages/);
  assert.equal(
    compileFor(F16("threadblock 128x256x64\n    stages 2")).planned.plan.pipeline!.stages,
    2,
  );
});

Deno.test("wgmma: 8-bit floats take 128x256x128 wgmma tiles at any size, any pair of formats", () => {
  const src = (a: string, b: string) =>
    `kernel f8 {\n  A: ${a}[M, K] row\n  B: ${b}[K, N] col\n  D: f32[M, N] row\n` +
    `  D[m, n] = A[m, k] * B[k, n]\n}\n`;
  for (const [a, b] of [["e4m3", "e4m3"], ["e4m3", "e5m2"], ["e5m2", "e4m3"], ["e5m2", "e5m2"]]) {
    // Small enough that a 16-bit program would keep mma.sync: 8-bit floats have none.
    const r = compile(src(a!, b!), { target: "sm90", sizeHints: { M: 64, N: 64, K: 256 } });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, src(a!, b!)));
    const p = r.kernels[0]!.planned.plan;
    assert.deepEqual(p.tile!.threadblock, { m: 128, n: 256, k: 128 });
    // Row names spell one type when A's and B's are the same (ir/wgmma_table.ts).
    assert.equal(p.mma!.wgmma, `wg.m64n256k32.${a === b ? a : `${a}.${b}`}.f32`);
    assert.equal(p.mma!.kSteps, 4);
    assert.notEqual(p.pipeline!.tma, undefined);
    assert.match(r.kernels[0]!.ptx, new RegExp(`m64n256k32\\.f32\\.${a}\\.${b} `));
  }
});

/** Whether the reference is exact for this kernel (integer output). */
function exact(ck: CompiledKernel): boolean {
  return !DTYPE_INFO[tensorParam(ck.gemm, ck.gemm.problem.d.tensor).dtype].float;
}

let seed = 2300;
for (const c of WGMMA_CASES) {
  Deno.test(`wgmma ${c.name}: the simulation at ${JSON.stringify(c.simSize)} agrees, no hazards`, () => {
    const ck = compileFor(c.src);
    assert.notEqual(ck.planned.plan.mma!.wgmma, undefined);
    const rep = simulateGemm(ck, c.simSize, { seed: seed += 101 });
    assert.equal(
      rep.sim.hazardCount,
      0,
      rep.sim.hazards.map((h) => `${h.kind} line ${h.line}: ${h.op}: ${h.message}`).join("\n"),
    );
    const cmp = rep.comparison;
    assert.ok(
      cmp.ok,
      `${cmp.overBound} of ${cmp.elements} over the bound; ${JSON.stringify(cmp.first)}`,
    );
    if (exact(ck)) {
      assert.ok(referenceGemm(ck.gemm, rep.args).exact);
      assert.equal(cmp.maxAbsError, 0);
    }
  });
}

for (const c of WGMMA_GROUPED_CASES) {
  Deno.test(`wgmma ${c.name}: every problem of one launch agrees, no hazards`, () => {
    const ck = compileFor(c.src);
    const p = ck.planned.plan;
    assert.notEqual(p.mma!.wgmma, undefined);
    // The table's addresses have no tensor map: every thread copies by cp.async; the grid is
    // the grouped kernel's persistent one; no half-height plan for wgmma tiles.
    assert.equal(p.pipeline!.tma, undefined);
    assert.equal(p.short ?? null, null);
    assert.equal(ck.kernel.threads, 256);
    assert.match(ck.ptx, /wgmma\.mma_async/);
    assert.match(ck.ptx, /cp\.async\.cg\.shared\.global/);
    const rep = simulateGrouped(ck, c.simGroups, { seed: seed += 101 });
    assert.equal(rep.sim.hazardCount, 0, JSON.stringify(rep.sim.hazards[0]));
    for (const [i, q] of rep.problems.entries()) {
      assert.ok(
        q.ok,
        `problem ${i} ${JSON.stringify(q.sizes)}: ${JSON.stringify(q.comparison.first)}`,
      );
      assert.equal(q.gapWrites, 0);
      if (exact(ck) && q.comparison.elements > 0) assert.equal(q.comparison.maxAbsError, 0);
    }
    assert.ok(rep.ok);
  });
}

ptxasTest("wgmma: every case assembles for sm_90a without spills", async () => {
  for (const c of [...WGMMA_CASES, ...WGMMA_GROUPED_CASES]) {
    const ck = compileFor(c.src);
    const r = await runPtxas(ck.ptx, { arch: "sm_90a" });
    assert.ok(r.ok, `${c.name}: ${r.log}`);
    for (const k of r.kernels) {
      assert.deepEqual([k.spillStoreBytes, k.spillLoadBytes], [0, 0], c.name);
    }
  }
});

/** The same kernel IR claiming another target or thread count. */
function withTarget(k: Kernel, target: Kernel["target"], threads = k.threads): Kernel {
  return { ...k, target, threads };
}

Deno.test("wgmma: the kernel-IR verifier refuses wgmma on sm80 and in partial warpgroups", () => {
  const ck = compileFor(F16());
  verifyKernel(ck.kernel);
  assert.throws(() => verifyKernel(withTarget(ck.kernel, "sm80")), /needs sm90/);
  assert.throws(() => verifyKernel(withTarget(ck.kernel, "sm90", 224)), /whole warpgroups/);
});

const EXAMPLES = new URL("../examples/", import.meta.url);
const exampleFiles = [...Deno.readDirSync(EXAMPLES)]
  .filter((e) => e.isFile && e.name.endsWith(".gemm"))
  .map((e) => e.name)
  .sort();

for (const file of exampleFiles) {
  Deno.test(`sm90: examples/${file} compiles and its simulation at M=80 N=72 K=256 agrees`, () => {
    const src = Deno.readTextFileSync(new URL(file, EXAMPLES));
    const r = compile(src, { file, target: "sm90" });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
    for (const ck of r.kernels) {
      if (ck.kernel.group !== undefined) {
        // Grouped kernels run wgmma by cp.async on sm90: one launch of three problems, an
        // empty one among them.
        assert.notEqual(ck.planned.plan.mma!.wgmma, undefined, ck.name);
        assert.equal(ck.planned.plan.pipeline!.tma, undefined, ck.name);
        const problems = [{ M: 80, N: 72, K: 256 }, { M: 0, N: 72, K: 256 }, {
          M: 33,
          N: 8,
          K: 64,
        }];
        const g = simulateGrouped(ck, problems, { seed: seed += 13 });
        assert.ok(g.ok && g.sim.hazardCount === 0, `${ck.name}: grouped`);
        continue;
      }
      const rep = simulateGemm(ck, { M: 80, N: 72, K: 256, L: 2 }, { seed: seed += 13 });
      assert.equal(rep.sim.hazardCount, 0, `${ck.name}: ${rep.sim.hazards[0]?.message}`);
      assert.ok(rep.comparison.ok, `${ck.name}: ${JSON.stringify(rep.comparison.first)}`);
    }
  });
}

ptxasTest(
  "wgmma: three consumer warpgroups of 64x256 keep the cp.async pipeline and assemble; of 64x128 take TMA",
  async () => {
    // 192x256 with the producer is 512 threads of 128 registers, too few beside 128 accumulators
    // (ptxas C7602 on the H200, bench/NOTES.md 67); 192x128 needs 64 and takes the TMA pipeline.
    for (const [tb, tma] of [["192x256x64", false], ["192x128x64", true]] as const) {
      const ck = compileFor(F16(`threadblock ${tb}`));
      assert.equal(ck.planned.plan.pipeline!.tma !== undefined, tma, tb);
      assert.equal(ck.kernel.threads, tma ? 512 : 384, tb);
      const r = await runPtxas(ck.ptx, { arch: "sm_90a" });
      assert.ok(r.ok, `${tb}: ${r.log}`);
      for (const k of r.kernels) {
        assert.deepEqual([k.spillStoreBytes, k.spillLoadBytes], [0, 0], tb);
      }
    }
  },
);

ptxasTest(
  "sm90: a default tile split along K keeps mma.sync where its warpgroup row would be 256 wide (it spilled), and assembles without spills",
  async (ptxas) => {
    const src = Deno.readTextFileSync(new URL("../examples/strided.gemm", import.meta.url));
    const hints = { M: 1, N: 4096, K: 4096, L: 2 };
    const r = compile(src, { file: "strided.gemm", target: "sm90", sms: 132, sizeHints: hints });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
    const ck = r.kernels.find((k) => k.gemm.name === "broadcast_weight")!;
    const p = ck.planned;
    assert.deepEqual([p.schedule.threadblock!.n, p.schedule.splitK], [256, 4]);
    assert.equal(p.plan.tile!.wgmma, undefined);
    const res = await runPtxas(ck.ptx, { ptxasPath: ptxas, arch: "sm_90a" });
    assert.match(res.log, /0 bytes spill stores, 0 bytes spill loads/, res.log);
    // A given tile is the user's: it keeps wgmma.
    const given = src.replace(
      "Y[b, m, n] = bf16(X[b, m, k] * W[b, k, n] + bias[b, n])",
      "Y[b, m, n] = bf16(X[b, m, k] * W[b, k, n] + bias[b, n])\n" +
        "  schedule { threadblock 64x256x64\n split_k 4 }",
    );
    const g = compile(given, { file: "g.gemm", target: "sm90", sms: 132, sizeHints: hints });
    assert.ok(g.ok, formatDiagnostics(g.diagnostics, given));
    assert.equal(
      g.kernels.find((k) => k.gemm.name === "broadcast_weight")!.planned.plan.tile!.wgmma,
      true,
    );
  },
);
