// The simulator's thread-block clusters (backends/sim/_cluster.ts): the special registers of
// each CTA of a cluster, `options.blocks` running whole clusters, and a cluster of 2 CTAs
// sharing operand A by multicast TMA copies and releasing stages on each other's barriers,
// checked element-wise against a CPU reference under every schedule; then its mutants (a
// release of the local barrier only, no cluster barrier after the init, ranks outside the
// cluster, a read of the peer's shared memory, a wrong parity), each caught. Last, the
// compiler's own cluster kernel (schedule key `cluster 2`, passes/lower/wgmma_ws.ts) agrees
// with the reference under every schedule, and its mutants are caught.

import assert from "node:assert/strict";
import * as ir from "../ir/builder.ts";
import { imm } from "../ir/builder.ts";
import { gridFor, type Kernel } from "../ir/kernel.ts";
import { tensorParam } from "../ir/gemm.ts";
import { compile } from "../compiler.ts";
import { randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { compareOutput } from "../harness/compare.ts";
import { simArgs } from "../harness/simulate_gemm.ts";
import {
  type RoleSchedule,
  SimError,
  type SimOptions,
  type SimResult,
  simulate,
} from "../backends/sim/mod.ts";
import {
  CLUSTER_RING,
  type ClusterMutant,
  clusterRingKernel,
  Emitter,
  randInt,
  rng,
} from "../backends/sim/_test_kernels.ts";
import { editOps } from "./_edit_ops.ts";

const SCHEDULES: readonly RoleSchedule[] = [
  "producer-first",
  "consumer-first",
  "alternate",
  "rank-first",
];

// ---------------------------------------------------------------------------
// Special registers per CTA
// ---------------------------------------------------------------------------

/** Threads per CTA: not a multiple of 32 or 128 (the machine pads each CTA). */
const SREG_THREADS = 40;
const SREG_SMEM = 3000;

/** Each thread writes (ctaid.x, ctaid.y, cluster_ctarank, tid.x, smembase) at its global
 * index, and stores its tid.x into its own CTA's shared memory and reads it back. */
function sregKernel(cluster: number): Kernel {
  const e = new Emitter();
  const out = e.param("out");
  const tid = e.tid();
  const bx = e.readSreg("ctaid.x");
  const by = e.readSreg("ctaid.y");
  const nx = e.readSreg("nctaid.x");
  const rank = e.readSreg("cluster_ctarank");
  const smem = e.reg("u32");
  e.emit(ir.smemBase(smem));
  const sa = e.reg("u32");
  e.emit(ir.mad("u32", sa, tid, imm(4), smem));
  e.emit(ir.sts("b32", [tid], sa, 0));
  const back = e.reg("b32");
  e.emit(ir.lds("b32", [back], sa, 0));
  const blk = e.reg("u32");
  e.emit(ir.mad("u32", blk, by, nx, bx));
  const g = e.reg("u32");
  e.emit(ir.mad("u32", g, blk, imm(SREG_THREADS), tid));
  const p = e.addr(out, g, 24);
  e.emit(ir.stg("b32", [bx, by], p, 0));
  e.emit(ir.stg("b32", [rank, tid], p, 8));
  e.emit(ir.stg("b32", [smem, back], p, 16));
  return {
    kind: "kernel",
    name: "cluster_sregs",
    target: "sm90",
    params: [{ name: "out", kind: "tensor", ptx: "u64" }],
    threads: SREG_THREADS,
    dynamicSmemBytes: SREG_SMEM,
    cluster,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: e.regs,
    body: e.body,
  };
}

function runSregs(cluster: number, grid: [number, number, number], options: SimOptions = {}) {
  const n = grid[0] * grid[1] * SREG_THREADS;
  const out = new Uint32Array(n * 6).fill(0xdeadbeef);
  const res = simulate(sregKernel(cluster), {
    grid,
    args: { out: { bytes: new Uint8Array(out.buffer) } },
  }, options);
  return { out, res };
}

/** The row a thread of block (x, y) must write. */
function sregRow(cluster: number, x: number, y: number, t: number): number[] {
  const r = x % cluster;
  return [x, y, r, t, r * 3072, t];
}

Deno.test("cluster of 4: ctaid.x, cluster_ctarank, tid.x and smembase per CTA", () => {
  const grid: [number, number, number] = [8, 2, 1];
  const { out, res } = runSregs(4, grid);
  assert.equal(res.blocks, 16);
  assert.deepEqual(res.hazards, []);
  for (let y = 0; y < 2; y++) {
    for (let x = 0; x < 8; x++) {
      for (let t = 0; t < SREG_THREADS; t++) {
        const i = (y * 8 + x) * SREG_THREADS + t;
        assert.deepEqual(
          [...out.subarray(i * 6, i * 6 + 6)],
          sregRow(4, x, y, t),
          `${x},${y},${t}`,
        );
      }
    }
  }
  // The warps of a CTA: 2 a CTA (the padding's never run).
  assert.equal(res.stats.byKind["sts"], 16 * 2);
});

Deno.test("cluster: options.blocks runs each listed block's whole cluster, once", () => {
  const grid: [number, number, number] = [6, 2, 1];
  const { out, res } = runSregs(2, grid, { blocks: [[3, 1, 0], [2, 1, 0], [0, 0, 0]] });
  assert.equal(res.blocks, 4);
  const ran = new Set(["2,1", "3,1", "0,0", "1,0"]);
  for (let y = 0; y < 2; y++) {
    for (let x = 0; x < 6; x++) {
      for (let t = 0; t < SREG_THREADS; t++) {
        const i = (y * 6 + x) * SREG_THREADS + t;
        const row = [...out.subarray(i * 6, i * 6 + 6)];
        if (ran.has(`${x},${y}`)) assert.deepEqual(row, sregRow(2, x, y, t), `${x},${y},${t}`);
        else assert.deepEqual(row, Array(6).fill(0xdeadbeef), `${x},${y},${t}`);
      }
    }
  }
});

Deno.test("cluster: a grid whose x is not a multiple of the cluster is an error", () => {
  assert.throws(
    () => runSregs(4, [6, 1, 1]),
    /grid's x \(6\) is not a multiple of the cluster size 4/,
  );
});

Deno.test("cluster: a kernel without clusters still reads rank 0 and smembase 0", () => {
  const { out, res } = runSregs(1, [3, 1, 1]);
  assert.equal(res.blocks, 3);
  for (let x = 0; x < 3; x++) {
    for (let t = 0; t < SREG_THREADS; t++) {
      const i = x * SREG_THREADS + t;
      assert.deepEqual([...out.subarray(i * 6, i * 6 + 6)], [x, 0, 0, t, 0, t]);
    }
  }
});

// ---------------------------------------------------------------------------
// A cluster ring: multicast A, own B, remote releases
// ---------------------------------------------------------------------------

interface RingRun {
  readonly res: SimResult;
  /** D's elements that differ from the reference. */
  readonly bad: number;
}

/** Runs {@link clusterRingKernel} on random u32 A (K x 32) and B (gx K x 32) and compares D
 * (gx x 2 x 32) with the reference, element by element. */
function runRing(
  k: Kernel,
  gx: number,
  K: number,
  seed: number,
  options: SimOptions = {},
): RingRun {
  const { cols, rows } = CLUSTER_RING;
  const r = rng(seed);
  const a = new Uint32Array(K * cols).map(() => randInt(r, 1, 100000));
  const b = new Uint32Array(gx * K * cols).map(() => randInt(r, 1, 100000));
  const d = new Uint32Array(gx * 2 * cols).fill(0x7fbadbad);
  const res = simulate(k, {
    grid: [gx, 1, 1],
    args: {
      A: { bytes: new Uint8Array(a.buffer) },
      B: { bytes: new Uint8Array(b.buffer) },
      D: { bytes: new Uint8Array(d.buffer) },
      K,
      KB: gx * K,
    },
  }, { maxHazards: 100, ...options });
  let bad = 0;
  for (let x = 0; x < gx; x++) {
    for (let w = 0; w < 2; w++) {
      for (let c = 0; c < cols; c++) {
        let acc = 0;
        for (let kk = 0; kk < K; kk++) {
          if (Math.floor((kk % rows) / (rows / 2)) !== w) continue;
          acc = (acc + Math.imul(a[kk * cols + c]!, b[(x * K + kk) * cols + c]!)) >>> 0;
        }
        if (d[(x * 2 + w) * cols + c] !== acc) bad++;
      }
    }
  }
  return { res, bad };
}

Deno.test("cluster ring (2 CTAs, multicast A, remote releases): agrees, no hazards, every schedule", () => {
  const k = clusterRingKernel();
  for (const schedule of SCHEDULES) {
    for (const [gx, K] of [[2, 48], [4, 16], [2, 8]] as const) {
      const { res, bad } = runRing(k, gx, K, 11 + gx + K, { schedule });
      const what = `${schedule} gx=${gx} K=${K}`;
      assert.deepEqual(res.hazards.map((h) => `${h.kind}: ${h.message}`), [], what);
      assert.equal(bad, 0, what);
      assert.equal(res.blocks, gx);
      // Per CTA and k-tile: one multicast A half (landing twice) and one B box.
      const kt = K / CLUSTER_RING.rows;
      assert.equal(res.stats.tmaCopies, 2 * gx * kt, what);
      assert.equal(res.stats.tmaBytes, gx * kt * 2 * 1024, what);
      assert.equal(res.stats.globalBytesRead, gx * kt * (512 + 1024), what);
    }
  }
});

/** Runs a mutant under every schedule: each run's hazard kinds, or its error's message. */
function outcomes(m: ClusterMutant, gx = 2, K = 48): string[] {
  const k = clusterRingKernel(m);
  return SCHEDULES.map((schedule) => {
    try {
      const { res, bad } = runRing(k, gx, K, 5, { schedule });
      const kinds = [...new Set(res.hazards.map((h) => h.kind))].sort().join(",");
      return `${schedule}: hazards [${kinds}] bad ${bad}`;
    } catch (e) {
      if (!(e instanceof SimError)) throw e;
      return `${schedule}: error ${e.message}`;
    }
  });
}

Deno.test("cluster ring mutant: consumers release only their own CTA's stage -> the peer's producer overwrites it", () => {
  const o = outcomes("local-release");
  // Under producer-first CTA 0's producer refills stage 0 of CTA 1 before CTA 1's consumers
  // waited for it.
  assert.match(o[0]!, /^producer-first: (hazards \[.*tma-overwrite.*\]|error )/, o.join("\n"));
  const r = runRing(clusterRingKernel("local-release"), 2, 48, 5);
  const h = r.res.hazards.find((x) => x.kind === "tma-overwrite")!;
  assert.match(h.message, /in CTA rank 1 of the cluster/);
  assert.deepEqual(h.block, [1, 0, 0]);
});

Deno.test("cluster ring mutant: no cluster barrier after the init -> a multicast reaches an unpublished barrier", () => {
  for (const s of outcomes("no-cluster-bar")) {
    assert.match(
      s,
      /error cp\.async\.bulk\.tensor multicast from CTA rank (\d) reaches the mbarrier at shared 0x(1000|2400) of CTA rank (?!\1)\d .* whose mbarrier\.init no cluster barrier .*, block \(\d, 0, 0\), warp 2, lane 0$/,
    );
  }
});

Deno.test("cluster ring mutants: a multicast mask or a remote arrival beyond the cluster", () => {
  for (const s of outcomes("mask-too-wide")) {
    assert.match(s, /error Multicast mask 7 names no CTA or a rank outside the cluster of 2/);
  }
  for (const s of outcomes("arrive-rank-2")) {
    assert.match(
      s,
      /error mbarrier\.arrive names CTA rank 2, outside the cluster of 2 CTAs: .*block \([01], 0, 0\), warp [01], lane 0$/,
    );
  }
});

Deno.test("cluster ring mutant: a consumer's ld.shared of the peer's shared memory is an error", () => {
  for (const s of outcomes("peer-read")) {
    assert.match(
      s,
      /error Out-of-bounds shared load: 4 bytes at shared address 0x\w+, outside the thread's CTA's shared memory \[0x(0|1400), 0x(1020|2420)\) \(CTA rank [01] of a cluster of 2\)/,
    );
  }
});

Deno.test("cluster ring mutant: the consumers' parity flipped -> deadlock naming the CTA, or a stray count", () => {
  const o = outcomes("wrong-parity");
  // Producer-first: the consumers read early, then wait for a phase that never comes.
  assert.match(
    o[0]!,
    /^producer-first: error Deadlock: .*in threads 0\.\.63 of CTA rank \d waits for the phase of parity \d of the mbarrier at shared 0x\w+ of CTA rank \d/,
  );
  for (const s of o) {
    assert.match(
      s,
      /error (Deadlock: .* of CTA rank \d waits|More transaction bytes completed than expected: .*hazards so far: tma-before-wait)/,
    );
  }
});

// ---------------------------------------------------------------------------
// The compiler's cluster kernel
// ---------------------------------------------------------------------------

const CLUSTER_SRC = `kernel cl {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f32[M, N] row
  D[m, n] = f32(A[m, k] * B[k, n])
  schedule {
    cluster 2
  }
}
`;

/** The persistent sm90 kernel with clusters of 2 (B's box multicast), for 4 SMs. */
function compiledCluster() {
  const r = compile(CLUSTER_SRC, { file: "cl.gemm", target: "sm90", sms: 4 });
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  assert.equal(ck.kernel.cluster, 2);
  return ck;
}

const edit = editOps;

const SIZES = { M: 300, N: 260, K: 136 };

/** Simulates `k` (the compiled kernel or a mutant) on random inputs: its result and whether D
 * agrees with the reference, or the SimError's message. */
function runCompiled(k: Kernel, schedule: RoleSchedule) {
  const ck = compiledCluster();
  const args = randomArgs(ck.gemm, SIZES, 3, {});
  try {
    const res = simulate(k, { grid: gridFor(k.grid, SIZES, 4), args: simArgs(args) }, {
      schedule,
    });
    const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
    const cmp = compareOutput(args.tensors.get(d.name)!, d.dtype, referenceGemm(ck.gemm, args));
    return { res, ok: cmp.ok, error: null };
  } catch (e) {
    if (!(e instanceof SimError)) throw e;
    return { res: null, ok: false, error: e.message };
  }
}

Deno.test("compiled cluster 2 kernel (multicast B): agrees, no hazards, every schedule", () => {
  const ck = compiledCluster();
  for (const schedule of SCHEDULES) {
    const r = runCompiled(ck.kernel, schedule);
    assert.equal(r.error, null, schedule);
    assert.deepEqual(r.res!.hazards.map((h) => `${h.kind}: ${h.message}`), [], schedule);
    assert.ok(r.ok, schedule);
    assert.equal(r.res!.blocks, 4);
  }
});

Deno.test("compiled cluster 2 kernel mutants: releases made local, cluster barriers made CTA barriers", () => {
  const ck = compiledCluster();
  // Each remote release becomes a local one: a CTA's consumers alone complete its empty
  // barrier, and its producer refills the peer's stage too early.
  const local = edit(ck.kernel, (o) => {
    if (o.op !== "mbararrive" || o.cta === undefined) return null;
    const { cta: _, ...rest } = o;
    return [rest];
  });
  const lr = runCompiled(local, "producer-first");
  assert.ok(lr.res!.hazards.some((h) => h.kind === "tma-overwrite"), JSON.stringify(lr));
  assert.ok(!lr.ok);
  const noBar = edit(ck.kernel, (o) => o.op === "bar" && o.cluster === true ? [ir.bar()] : null);
  for (const schedule of SCHEDULES) {
    assert.match(
      runCompiled(noBar, schedule).error ?? "",
      /^cp\.async\.bulk\.tensor multicast from CTA rank \d reaches the mbarrier .* whose mbarrier\.init no cluster barrier/,
    );
  }
});

Deno.test("setmaxnreg: asks beyond the registers a CTA was launched with are an error (they would wait forever); the compiled asks fit", () => {
  const ck = compiledCluster();
  const asks = (k: Kernel) => {
    const out: string[] = [];
    editOps(k, (o) => {
      if (o.op === "setmaxnreg") out.push(`${o.action} ${o.regs}`);
      return null;
    });
    return out;
  };
  assert.deepEqual(asks(ck.kernel), ["dec 24", "inc 240"]);
  // 24 x 128 + 248 x 256 = 66560 > 168 x 384 = 64512.
  const greedy = edit(
    ck.kernel,
    (o) => o.op === "setmaxnreg" && o.action === "inc" ? [{ ...o, regs: 248 }] : null,
  );
  // 40 x 128 + 240 x 256 = 66560 too: the producer keeps more than the consumers leave it.
  const keeper = edit(
    ck.kernel,
    (o) => o.op === "setmaxnreg" && o.action === "dec" ? [{ ...o, regs: 40 }] : null,
  );
  for (const k of [greedy, keeper]) {
    for (const schedule of SCHEDULES) {
      assert.match(
        runCompiled(k, schedule).error ?? "",
        /^setmaxnreg asks 66560 registers for the warpgroups of CTA \d, more than the 64512 their block of 384 threads holds \(168 a thread\)/,
        schedule,
      );
    }
  }
});
