/**
 * bench/timeline.ts: the instrumentation of a kernel's PTX (what it adds, where, and that ptxas
 * assembles it), and the summary of a series of block records. The GPU side (the traced series)
 * is a research run (bench/NOTES.md 95); nothing here needs a GPU.
 */

import assert from "node:assert/strict";
import { compile } from "../compiler.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import {
  type BlockRecord,
  blockRecords,
  instrumentPtx,
  summarizeTimeline,
  TIMELINE_PARAM,
  TIMELINE_SLOT_BYTES,
} from "../bench/timeline.ts";
import { STREAM_READ_PTX } from "../bench/stream_read.ts";
import {
  parseSliceVariants,
  SLICE_READ_PTX,
  sliceLabel,
  sliceReadPtx,
} from "../bench/slice_read.ts";
import { ptxasTest } from "./_ptxas.ts";

const KERNELS = new URL("../bench/kernels/", import.meta.url);

/** The llm table's f16 kernel at a decode size, compiled with PDL for sm90. */
function decodeKernel(M: number) {
  const src = Deno.readTextFileSync(new URL("f16.gemm", KERNELS));
  const r = compile(src, {
    file: "bench/kernels/f16.gemm",
    target: "sm90",
    pdl: true,
    sizeHints: { M, N: 4096, K: 4096 },
    sms: 132,
  });
  assert.ok(r.ok, JSON.stringify(r.diagnostics));
  return r.kernels[0]!;
}

/** The points a PTX text records, in order (their comments). */
const points = (ptx: string) => [...ptx.matchAll(/gemmc timeline: (\w+)/g)].map((m) => m[1]);

/** The points each decode kernel records: the mma.sync loop at M = 16 its `loop` after its
 * prologue, the warp-specialized wgmma kernel at M = 128 (whose consumers trigger right after
 * their wait) at its first `wgmma.fence`, and its `setup` after the cluster barrier that follows
 * its mbarrier inits (before the wait: NOTES 98). */
const DECODE_POINTS: Readonly<Record<number, readonly string[]>> = {
  16: ["start", "wait", "loop", "trigger", "epilogue", "end"],
  128: ["start", "setup", "wait", "trigger", "loop", "epilogue", "end"],
};

for (const M of [16, 128]) {
  Deno.test(`instrumentPtx: the decode kernel at M = ${M}: a parameter, its records in order`, () => {
    const ck = decodeKernel(M);
    const out = instrumentPtx(ck.ptx);
    // The parameter is the entry's last.
    const params = out.slice(out.indexOf(".entry"), out.indexOf(")"));
    assert.match(params, new RegExp(`\\.param \\.u64 ${TIMELINE_PARAM}\\s*$`));
    const want = DECODE_POINTS[M]!;
    assert.equal(
      out.split(TIMELINE_PARAM).length - 1,
      1 + want.length,
      "the declaration, a load each",
    );
    assert.deepEqual(points(out), want);
    // start comes before the first instruction of the body, end right before ret.
    const body = out.slice(out.indexOf("{", out.indexOf(")")));
    const firstOp = body.split("\n").slice(1).find((l) => !/^\s*(\.reg|\/\/|$)/.test(l))!;
    assert.match(firstOp, /gemmc timeline: start/);
    assert.match(out, /gemmc timeline: end[\s\S]*?GEMMC_TL_SKIP_\d+:\n\s*}\n\s*ret;/);
    // Nothing else changed: removing the records and the parameter gives the kernel back.
    const stripped = out
      .replace(/ {2}\{ \/\/ gemmc timeline[\s\S]*?GEMMC_TL_SKIP_\d+:\n {2}}\n/g, "")
      .replace(`,\n  .param .u64 ${TIMELINE_PARAM}`, "");
    assert.equal(stripped, ck.ptx);
  });

  ptxasTest(
    `instrumentPtx: the decode kernel at M = ${M} assembles without spills`,
    async (ptxas) => {
      const r = await runPtxas(instrumentPtx(decodeKernel(M).ptx), {
        arch: "sm_90a",
        ptxasPath: ptxas,
      });
      assert.ok(r.ok, r.log);
      for (const k of r.kernels) assert.equal(k.spillStoreBytes + k.spillLoadBytes, 0, k.name);
      // The records inside the consumers' code cost the wgmmas nothing.
      assert.doesNotMatch(r.log, /wgmma[\s\S]*serialized/i);
    },
  );
}

ptxasTest("instrumentPtx: the streaming read kernel (start and end) assembles", async (ptxas) => {
  const out = instrumentPtx(STREAM_READ_PTX);
  assert.deepEqual(points(out), ["start", "end"]);
  const r = await runPtxas(out, { arch: "sm_80", ptxasPath: ptxas });
  assert.ok(r.ok, r.log);
});

ptxasTest(
  "the slice-read kernel assembles, plain and instrumented, spilling nothing",
  async (ptxas) => {
    for (const ptx of [SLICE_READ_PTX, instrumentPtx(SLICE_READ_PTX), sliceReadPtx(2)]) {
      const r = await runPtxas(ptx, { arch: "sm_80", ptxasPath: ptxas });
      assert.ok(r.ok, r.log);
      assert.doesNotMatch(r.log, /[1-9]\d* bytes spill/);
    }
  },
);

Deno.test("parseSliceVariants: G:R[:FLAGS], G dividing 32, and the labels", () => {
  const vs = parseSliceVariants("32:0, 8:0:a,1:7:ea,4:1:s");
  const no = { a: false, evictFirst: false, shallow: false };
  assert.deepEqual(vs, [
    { group: 32, rotate: 0, ...no },
    { group: 8, rotate: 0, ...no, a: true },
    { group: 1, rotate: 7, ...no, a: true, evictFirst: true },
    { group: 4, rotate: 1, ...no, shallow: true },
  ]);
  assert.deepEqual(vs.map(sliceLabel), ["32:0", "8:0:a", "1:7:ae", "4:1:s"]);
  for (const bad of ["3:0", "0:1", "8", "8:-1", "8:x", "64:0", "8:0:b", "8:0:", "8:0:aa"]) {
    assert.throws(() => parseSliceVariants(bad), /G:R/, bad);
  }
});

Deno.test("instrumentPtx: refuses two entries and a predicated ret", () => {
  const one = ".visible .entry k(\n  .param .u64 a\n)\n{\n  .reg .b32 %r<2>;\n  ret;\n}\n";
  assert.throws(() => instrumentPtx(one + one.replace("entry k", "entry j")), /2 \.entry/);
  assert.throws(() => instrumentPtx(one.replace("  ret;", "  @%p1 ret;\n  ret;")), /predicated/);
  // An entry without parameters gets the one parameter.
  const none = instrumentPtx(".visible .entry k()\n{\n  ret;\n}\n");
  assert.match(none, new RegExp(`\\.entry k\\(\\.param \\.u64 ${TIMELINE_PARAM}\\)`));
});

Deno.test("blockRecords: reads a block's slot as the records write it", () => {
  const buf = new Uint8Array(2 * TIMELINE_SLOT_BYTES);
  const v = new DataView(buf.buffer);
  const o = TIMELINE_SLOT_BYTES;
  // Seven points: ns from 0, cycles from 56, the SM at 112.
  const ns = [101n, 202n, 303n, 404n, 505n, 606n, 707n] as const;
  const cycles = [5n, 6n, 7n, 8n, 9n, 10n, 11n] as const;
  ns.forEach((x, i) => v.setBigUint64(o + 8 * i, x, true));
  cycles.forEach((x, i) => v.setBigUint64(o + 56 + 8 * i, x, true));
  v.setUint32(o + 112, 77, true);
  const [b0, b1] = blockRecords(buf, 2);
  assert.deepEqual(b0!.ns, [0n, 0n, 0n, 0n, 0n, 0n, 0n]);
  assert.deepEqual(b1, { ns, cycles, sm: 77 });
});

/**
 * A synthetic series: launch i's block b on SM b starts at 10000 i + 100 b ns, waits until
 * 10000 i + 2000, starts its k-loop 300 ns after that, triggers 6000 ns after the wait, reaches
 * its epilogue 200 ns after the trigger, and ends 500 + 100 b ns after its trigger (the last block
 * at 10000 i + 8800); its set-up passes 700 ns after its start; 2 cycles a ns.
 */
function series(launches: number, blocks: number): BlockRecord[][] {
  return Array.from({ length: launches }, (_, i) =>
    Array.from({ length: blocks }, (_, b) => {
      const start = 10000 * i + 100 * b;
      const wait = 10000 * i + 2000;
      const trigger = wait + 6000;
      const end = trigger + 500 + 100 * b;
      const at = (x: number) => BigInt(x + 1_000_000);
      const ns = [
        at(start),
        at(wait),
        at(trigger),
        at(end),
        at(wait + 300),
        at(trigger + 200),
        at(start + 700),
      ] as const;
      const cycles = [
        2n * ns[0],
        2n * ns[1],
        2n * ns[2],
        2n * ns[3],
        2n * ns[4],
        2n * ns[5],
        2n * ns[6],
      ] as const;
      return { ns, cycles, sm: b };
    }));
}

Deno.test("summarizeTimeline: the figures of a known series", () => {
  const s = summarizeTimeline(series(5, 4));
  assert.equal(s.launches, 5);
  assert.equal(s.blocks, 4);
  assert.equal(s.periodUs, 10);
  // The last end 8800 ns after the first start: span 8.8, gap 10 - 8.8.
  assert.ok(Math.abs(s.spanUs - 8.8) < 1e-9, String(s.spanUs));
  assert.ok(Math.abs(s.gapUs - 1.2) < 1e-9, String(s.gapUs));
  assert.ok(Math.abs(s.startSkewUs - 0.3) < 1e-9);
  assert.ok(Math.abs(s.endSkewUs - 0.3) < 1e-9);
  // This launch's release (10000 i + 2000) after the previous launch's last end (10000 i - 1200).
  assert.ok(Math.abs(s.waitAfterPrevEndUs! - 3.2) < 1e-9, String(s.waitAfterPrevEndUs));
  // This launch's first start (10000 i) after the previous launch's last trigger (10000 i - 2000).
  assert.ok(Math.abs(s.startAfterPrevTriggerUs! - 2) < 1e-9, String(s.startAfterPrevTriggerUs));
  // A block's wait: 2000 - 100 b, median over b = 0..3: 1850.
  assert.ok(Math.abs(s.blockWaitUs! - 1.85) < 1e-9);
  assert.equal(s.blockLoopUs, 6);
  assert.ok(Math.abs(s.blockEpilogueUs! - 0.65) < 1e-9);
  // The prologue 300 ns after the wait, the k-loop to 200 ns after the trigger, the rest 300 + 100 b.
  assert.ok(Math.abs(s.blockPrologueUs! - 0.3) < 1e-9, String(s.blockPrologueUs));
  assert.ok(Math.abs(s.blockKLoopUs! - 5.9) < 1e-9, String(s.blockKLoopUs));
  assert.ok(Math.abs(s.blockAfterLoopUs! - 0.45) < 1e-9, String(s.blockAfterLoopUs));
  assert.ok(Math.abs(s.blockSetupUs! - 0.7) < 1e-9, String(s.blockSetupUs));
  assert.ok(Math.abs(s.blockUs - 8.5) < 1e-9);
  assert.ok(Math.abs(s.blockMaxUs - 8.5) < 1e-9);
  assert.equal(s.timerStepNs, 100);
  assert.equal(s.clockMHz, 2000);
  assert.equal(s.blocksPerSmMax, 1);
});

Deno.test("summarizeTimeline: blocks sharing an SM, no wait, and refusals", () => {
  const l = series(4, 4).map((bs) =>
    bs.map((b) => ({ ...b, ns: [b.ns[0], 0n, 0n, b.ns[3], 0n, 0n, 0n] as const, sm: 0 }))
  );
  const s = summarizeTimeline(l);
  assert.equal(s.waitAfterPrevEndUs, null);
  assert.equal(s.blockLoopUs, null);
  assert.equal(s.startAfterPrevTriggerUs, null);
  assert.deepEqual(
    [s.blockPrologueUs, s.blockKLoopUs, s.blockAfterLoopUs, s.blockSetupUs],
    [null, null, null, null],
  );
  assert.equal(s.blocksPerSmMax, 4);
  const missing = series(4, 2);
  missing[2]![1] = { ...missing[2]![1]!, ns: [missing[2]![1]!.ns[0], 0n, 0n, 0n, 0n, 0n, 0n] };
  assert.throws(() => summarizeTimeline(missing), /launch 2 has a block without its start or end/);
  assert.throws(() => summarizeTimeline(series(2, 2)), /fewer than 3/);
});
