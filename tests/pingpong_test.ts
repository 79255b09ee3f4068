/**
 * Ping-pong consumers on sm90 (`scheduler pingpong`, passes/wgmma.ts `wgmmaPingPong`,
 * passes/lower/wgmma_ws.ts, issue 23): two consumer warpgroups of a persistent block take its
 * tiles in turn, each tile one warpgroup's (64 rows).
 *
 * - the plan and the kernel: 384 threads (two consumer warpgroups and the producer's),
 *   setmaxnreg 24 / 240, two turn barriers after the stages' and a staging region for each
 *   warpgroup; one named barrier each (1 and 2) in the PTX; ptxas for sm_90a takes f16, bf16,
 *   tf32 and s8 without spills;
 * - refusals: a tile of two warpgroups, sm80, split-K (E0213);
 * - simulated (tests/testdata/wgmma_cases.ts `PINGPONG_CASES`: blocks of odd and even tile
 *   counts, one tile, every epilogue path, clusters, batched maps) under three role schedules:
 *   agrees with the reference (integers exactly), no hazards;
 * - a mutant without the turn waits (a warpgroup may wait on a stage a phase ahead) is caught.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics } from "../compiler.ts";
import { SimError, simulate } from "../backends/sim/mod.ts";
import { gridFor, type Kernel } from "../ir/kernel.ts";
import { tensorParam } from "../ir/gemm.ts";
import { randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { compareOutput } from "../harness/compare.ts";
import { simArgs } from "../harness/simulate_gemm.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { assertAgreesUnderRoles } from "./_role_sims.ts";
import { editOps } from "./_edit_ops.ts";
import { PINGPONG_CASES } from "./testdata/wgmma_cases.ts";

function compiled(src: string, sms = 132): CompiledKernel {
  const r = compile(src, { file: "pp.gemm", target: "sm90", sms });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  return r.kernels[0]!;
}

const PP = "threadblock 64x256x64; scheduler pingpong";

/** A TN f16 GEMM with schedule lines (`;`-separated). */
const GEMM = (sched: string) =>
  `kernel pp {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  D: f16[M, N] row\n` +
  `  D[m, n] = f16(A[m, k] * B[k, n])\n  schedule {\n${
    sched.split(";").map((l) => `    ${l.trim()}\n`).join("")
  }  }\n}\n`;

Deno.test("pingpong: 384 threads, 24 / 240 registers, two turn barriers, a staging region each", () => {
  const ck = compiled(GEMM(PP));
  assert.equal(ck.kernel.threads, 384);
  const tma = ck.planned.plan.pipeline!.tma!;
  assert.deepEqual([tma.producerRegs, tma.consumerRegs], [24, 240]);
  const pp = tma.persistent!.pingPong!;
  const pipe = ck.planned.plan.pipeline!;
  // The turn barriers right after the stages' (16 bytes), the staging 128-byte aligned after.
  assert.equal(pp.turnOffset, tma.barrierOffset + 16 * pipe.stages);
  assert.ok(tma.persistent!.stagingOffset >= pp.turnOffset + 16);
  assert.equal(pp.stagingBytes % 128, 0);
  assert.ok(pipe.smemBytes <= 232448, `${pipe.smemBytes}`);
  assert.ok(pipe.smemBytes >= tma.persistent!.stagingOffset + 2 * 64 * 256 * 2);
  assert.match(ck.ptx, /bar\.sync 1, 128;/);
  assert.match(ck.ptx, /bar\.sync 2, 128;/);
  assert.match(ck.ptx, /\.maxntid 384, 1, 1/);
});

Deno.test("pingpong: without a threadblock, the default tile's width one warpgroup tall", () => {
  for (const hints of [undefined, { M: 8192, N: 8192, K: 8192 }, { M: 256, N: 4096, K: 4096 }]) {
    const r = compile(GEMM("scheduler pingpong"), {
      file: "pp.gemm",
      target: "sm90",
      sms: 132,
      ...(hints ? { sizeHints: hints } : {}),
    });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, GEMM("scheduler pingpong")));
    const ck = r.kernels[0]!;
    assert.deepEqual(ck.planned.schedule.threadblock, { m: 64, n: 256, k: 64 });
    assert.notEqual(ck.planned.plan.pipeline!.tma!.persistent!.pingPong, undefined);
  }
});

Deno.test("pingpong: refused where the kernel cannot have it (E0213)", () => {
  const codes = (src: string, target: "sm80" | "sm90" = "sm90") =>
    compile(src, { file: "pp.gemm", target, sms: 132 }).diagnostics.map((d) => d.code);
  const two = compile(GEMM("threadblock 128x256x64; scheduler pingpong"), {
    target: "sm90",
  }).diagnostics;
  assert.deepEqual(two.map((d) => d.code), ["E0213"]);
  assert.match(two[0]!.message, /"scheduler pingpong" needs a threadblock tile of one warpgroup/);
  assert.deepEqual(codes(GEMM(PP), "sm80"), ["E0213"]);
  assert.deepEqual(codes(GEMM(`${PP}; split_k 2`)), ["E0213"]);
});

ptxasTest(
  "pingpong: ptxas -arch=sm_90a takes f16, bf16, tf32 and s8 without spills",
  async (ptxas) => {
    for (const c of PINGPONG_CASES) {
      const ck = compiled(c.src, c.sms);
      const r = await runPtxas(ck.ptx, { ptxasPath: ptxas, arch: "sm_90a" });
      assert.ok(r.ok, `${c.name}: ${r.log}`);
      assert.match(r.log, /0 bytes spill stores, 0 bytes spill loads/, `${c.name}: ${r.log}`);
    }
  },
);

for (const c of PINGPONG_CASES) {
  Deno.test(`pingpong ${c.name}: simulated, agrees with the reference, no hazards`, () => {
    const ck = compiled(c.src, c.sms);
    assert.notEqual(ck.planned.plan.pipeline!.tma!.persistent!.pingPong, undefined);
    assertAgreesUnderRoles(ck, c.sizes, 23, ["producer-first", "consumer-first", "alternate"]);
  });
}

Deno.test("pingpong with pdl (griddepcontrol): simulated, agrees, no hazards", () => {
  const src = GEMM("threadblock 64x128x64; scheduler pingpong");
  const r = compile(src, { file: "pp.gemm", target: "sm90", sms: 3, pdl: true });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  const ck = r.kernels[0]!;
  assert.match(ck.ptx, /griddepcontrol\.wait/);
  assertAgreesUnderRoles(ck, { M: 200, N: 400, K: 200 }, 29, [
    "producer-first",
    "consumer-first",
    "alternate",
  ]);
});

Deno.test("pingpong mutant: without the turn waits a warpgroup runs a phase ahead -> caught", () => {
  const c = PINGPONG_CASES[0]!;
  const ck = compiled(c.src, c.sms);
  // The turn barriers are the only mbarriers waited on at an address right after the stages'.
  const turns = ck.planned.plan.pipeline!.tma!.persistent!.pingPong!.turnOffset;
  // The turn barriers' addresses: `smem + turnOffset (+ 8)`; drop every wait on one.
  const turnRegs = new Set<number>();
  editOps(ck.kernel, (o) => {
    const t = o.op === "bin" && o.fn === "add" && o.b.kind === "imm" ? o.b.value : -1;
    if (t === turns || t === turns + 8) turnRegs.add((o as { dst: { id: number } }).dst.id);
    return null;
  });
  let dropped = 0;
  const noTurns: Kernel = editOps(ck.kernel, (o) => {
    if (o.op !== "mbarwait" || !turnRegs.has(o.addr.id)) return null;
    dropped++;
    return [];
  });
  assert.equal(dropped, 2, "one turn wait in each warpgroup's program");
  const args = randomArgs(ck.gemm, c.sizes, 5, {});
  const outcomes = (["producer-first", "consumer-first", "alternate"] as const).map((schedule) => {
    try {
      const res = simulate(noTurns, {
        grid: gridFor(noTurns.grid, c.sizes, c.sms),
        args: simArgs(args),
      }, {
        schedule,
      });
      const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
      const cmp = compareOutput(args.tensors.get(d.name)!, d.dtype, referenceGemm(ck.gemm, args));
      return cmp.ok && res.hazards.length === 0 ? "passed" : "caught";
    } catch (e) {
      if (!(e instanceof SimError)) throw e;
      return "caught";
    }
  });
  assert.ok(outcomes.includes("caught"), outcomes.join());
});
