/**
 * bench/llm.ts (`deno task bench --gpu --shapes llm`, issue 22) without a GPU:
 * the table's rows against the issue's definition, the floor against the
 * figures ../shared/ANCHORS.md published for the same shapes (4.3 TB/s copy,
 * 634 TFLOPS mma.sync), the shares and the targets' verdicts, the series
 * length, the options, the report on made-up rows, and the no-driver exit.
 * Real timing needs a device.
 */

import assert from "node:assert/strict";
import { LLM_SHAPES } from "../bench/llm_shapes.ts";
import { runWithoutDriver } from "./_cli.ts";
import { holdMs, parseLlmArgs, selectedProblems, seriesLaunches } from "../bench/llm.ts";
import {
  floorShare,
  type LlmFloor,
  llmFloor,
  type LlmProblem,
  llmReport,
  type LlmRow,
  type LlmRunInfo,
  llmTarget,
  problemBytes,
  progressLine,
  type SideFigures,
  targetVerdict,
} from "../bench/llm_report.ts";

/** Issue 22's rows, written out from its text: (type, M, N, K). */
function issueRows(): string[] {
  const nk = [[4096, 4096], [14336, 4096], [4096, 14336]];
  const rows: string[] = [];
  for (const [n, k] of nk) {
    for (const t of ["f16", "bf16"]) {
      for (const m of [1, 16, 64, 128, 256, 1024]) rows.push(`${t} ${m} ${n} ${k}`);
    }
    for (const m of [16, 128]) rows.push(`s8 ${m} ${n} ${k}`);
  }
  return rows;
}

Deno.test("LLM_SHAPES: the 42 (type, shape) rows of issue 22, each once", () => {
  const got = LLM_SHAPES.flatMap((s) => s.types.map((t) => `${t} ${s.M} ${s.N} ${s.K}`));
  assert.equal(got.length, 3 * 6 * 2 + 3 * 2);
  assert.equal(new Set(got).size, got.length);
  assert.deepEqual([...got].sort(), issueRows().sort());
  // One entry per shape: the types of a shape are listed together.
  const shapes = LLM_SHAPES.map((s) => `${s.M}x${s.N}x${s.K}`);
  assert.equal(new Set(shapes).size, shapes.length);
});

const COPY = 4.3e12, MMA = 634e12;

/** A report's table: its header's cells, the line under it, and the cells of a row by its start. */
function table(text: string) {
  const lines = text.split("\n");
  const at = lines.findIndex((l) => l.startsWith("| type |"));
  return {
    header: lines[at]!.split(" | "),
    separator: lines[at + 1]!,
    row: (start: string) => lines.find((l) => l.startsWith(start))!.split(" | "),
  };
}

Deno.test("llmFloor: ANCHORS.md's floors for the same shapes (4.3 TB/s, 634 TFLOPS)", () => {
  // M, N, K, floor µs and bound as ANCHORS.md's memory-bound table prints them.
  const table: [number, number, number, string, "HBM" | "mma"][] = [
    [16, 4096, 4096, "7.9", "HBM"],
    [16, 14336, 4096, "27.4", "HBM"],
    [64, 4096, 4096, "8.0", "HBM"],
    [128, 4096, 4096, "8.3", "HBM"],
    [256, 14336, 4096, "47.4", "mma"],
    [1024, 4096, 4096, "54.2", "mma"],
  ];
  for (const [M, N, K, us, bound] of table) {
    const f = llmFloor("f16", { M, N, K }, COPY, MMA);
    assert.equal(f.us.toFixed(1), us, `${M}x${N}x${K}`);
    assert.equal(f.bound, bound, `${M}x${N}x${K}`);
    assert.equal(f.us, Math.max(f.hbmUs, f.mmaUs));
  }
  // The parts: 2·M·N·K operations; A, B and D once.
  const f = llmFloor("bf16", { M: 128, N: 14336, K: 4096 }, COPY, MMA);
  assert.ok(Math.abs(f.mmaUs - (2 * 128 * 14336 * 4096) / MMA * 1e6) < 1e-9);
  assert.equal(problemBytes("bf16", { M: 128, N: 14336, K: 4096 }), 122_159_104);
});

Deno.test("llmFloor: s8 moves 1-byte A and B and a 4-byte D; the bound follows the ceiling", () => {
  const p = { M: 128, N: 14336, K: 4096 };
  // 128·4096 + 4096·14336 bytes of operands, 128·14336·4 of s32 output.
  assert.equal(problemBytes("s8", p), 524_288 + 58_720_256 + 7_340_032);
  const burst = llmFloor("s8", p, COPY, 1268e12);
  assert.equal(burst.bound, "HBM");
  assert.equal(burst.us.toFixed(2), "15.48");
  // Under a ceiling that makes the FLOPs slower than the bytes, mma bounds it.
  const slow = llmFloor("s8", p, COPY, 900e12);
  assert.equal(slow.bound, "mma");
  assert.equal(slow.us.toFixed(2), "16.70");
  // An unknown ceiling leaves the floor unknown rather than HBM-bound.
  assert.ok(Number.isNaN(llmFloor("s8", p, COPY, NaN).us));
});

Deno.test("floorShare: ANCHORS.md's shares of the floor, and no share for a missing time", () => {
  // floor shape, measured µs, share as printed (gemmc and cuBLAS columns).
  const cases: [number, number, number, number, string][] = [
    [16, 4096, 4096, 20.4, "0.39"],
    [16, 14336, 4096, 33.5, "0.82"],
    [16, 14336, 4096, 32.8, "0.84"],
    [128, 4096, 4096, 29.8, "0.28"],
    [256, 14336, 4096, 72.9, "0.65"],
    [256, 14336, 4096, 49.5, "0.96"],
    [1024, 4096, 4096, 49.4, "1.10"],
  ];
  for (const [M, N, K, us, share] of cases) {
    const f = llmFloor("f16", { M, N, K }, COPY, MMA);
    assert.equal(floorShare(f.us, us).toFixed(2), share, `${M}x${N}x${K} at ${us} µs`);
  }
  for (const bad of [NaN, 0, -3, Infinity]) assert.ok(Number.isNaN(floorShare(7.9, bad)));
  assert.ok(Number.isNaN(floorShare(NaN, 20)));
});

Deno.test("llmTarget and targetVerdict: issue 22's targets per row", () => {
  let t85 = 0, t75 = 0, none = 0;
  for (const s of LLM_SHAPES) {
    for (const _ of s.types) {
      const t = llmTarget(s);
      if (t === 0.85) t85++;
      else if (t === 0.75) t75++;
      else if (t === null) none++;
      else assert.fail(`unexpected target ${t}`);
    }
  }
  // 0.85: M in {1, 16, 64} x 2 (N, K) x 2 16-bit types, plus s8 M = 16 x 2.
  assert.equal(t85, 3 * 2 * 2 + 2);
  // 0.75: M in {128, 256} x 3 (N, K) x 2 types, plus s8 M = 128 x 3.
  assert.equal(t75, 2 * 3 * 2 + 3);
  assert.equal(t85 + t75 + none, 42);
  assert.equal(llmTarget({ M: 64, N: 4096, K: 14336 }), null, "the down-projection at M <= 64");
  assert.equal(llmTarget({ M: 1024, N: 4096, K: 4096 }), null);
  assert.equal(llmTarget({ M: 256, N: 4096, K: 14336 }), 0.75);
  assert.equal(llmTarget({ M: 128, N: 4096, K: 8192 }), null, "not one of the table's (N, K)");

  // Verdicts on shares computed from floors and times.
  const f = llmFloor("f16", { M: 16, N: 14336, K: 4096 }, COPY, MMA);
  assert.equal(targetVerdict(floorShare(f.us, 30.0), 0.85), "met"); // 27.45 / 30 = 0.915
  assert.equal(targetVerdict(floorShare(f.us, 33.5), 0.85), "MISSED"); // 0.82
  assert.equal(targetVerdict(0.85, 0.85), "met", "the target itself is met");
  assert.equal(targetVerdict(0.7499, 0.75), "MISSED");
  assert.equal(targetVerdict(NaN, 0.75), "MISSED", "a failed or untimed row misses");
  assert.equal(targetVerdict(0.99, null), null);
});

Deno.test("seriesLaunches and holdMs: >= 20 launches lasting >= 2 ms (to 2000); hold = 2x queueing", () => {
  assert.equal(seriesLaunches(5), 400);
  assert.equal(seriesLaunches(40), 50);
  assert.equal(seriesLaunches(100), 20);
  assert.equal(seriesLaunches(300), 20);
  assert.equal(seriesLaunches(0.5), 2000);
  assert.equal(seriesLaunches(NaN), 2000);
  for (let us = 1; us <= 1000; us *= 1.37) {
    const L = seriesLaunches(us);
    assert.ok(L >= 20 && L <= 2000, `${us}`);
    assert.ok(L * us >= 2000, `${L} launches of ${us} µs last 2 ms`);
    assert.ok(L === 20 || (L - 1) * us < 2000, `${L} is the least such`);
  }
  assert.equal(holdMs(6, 250), 3);
  assert.equal(holdMs(1, 20), 0.05);
});

Deno.test("parseLlmArgs and selectedProblems: types, M, cuBLAS, target, errors", () => {
  const all = parseLlmArgs([]);
  assert.ok(typeof all === "object");
  assert.deepEqual(
    [all.types, all.m, all.cublas, all.target, all.pdl],
    [["f16", "bf16", "s8"], null, true, "sm80", false],
  );
  const pdl = parseLlmArgs(["--target", "sm90", "--pdl", "--m", "16"]);
  assert.ok(typeof pdl === "object");
  assert.deepEqual([pdl.pdl, pdl.pdlEarly, pdl.target, pdl.m], [true, false, "sm90", [16]]);
  const early = parseLlmArgs(["--target", "sm90", "--pdl-early"]);
  assert.ok(typeof early === "object");
  assert.deepEqual([early.pdl, early.pdlEarly], [true, true]);
  const last = parseLlmArgs(["--target", "sm90", "--pdl-last-copy"]);
  assert.ok(typeof last === "object");
  assert.deepEqual([last.pdl, last.pdlEarly, last.pdlLastCopy], [true, false, true]);
  const both = parseLlmArgs(["--pdl-early", "--pdl-last-copy"]);
  assert.ok(typeof both === "object");
  assert.deepEqual([both.pdl, both.pdlEarly, both.pdlLastCopy], [true, true, true]);
  const sm90 = parseLlmArgs(["--target", "sm90"]);
  assert.ok(typeof sm90 === "object");
  assert.equal(sm90.target, "sm90");
  assert.match(String(parseLlmArgs(["--target", "sm70"])), /^Unknown target "sm70" in --target/);
  assert.equal(selectedProblems(all).length, 42);
  const s8 = parseLlmArgs(["--types", "s8", "--no-cublas", "--shapes", "llm"]);
  assert.ok(typeof s8 === "object");
  assert.equal(s8.cublas, false);
  assert.deepEqual(
    selectedProblems(s8).map((r) => `${r.type} ${r.p.M}`).sort(),
    ["s8 128", "s8 128", "s8 128", "s8 16", "s8 16", "s8 16"],
  );
  const m = parseLlmArgs(["--m", "128,1"]);
  assert.ok(typeof m === "object");
  // M = 128: f16, bf16 and s8 at 3 (N, K); M = 1: f16 and bf16 at 3.
  assert.equal(selectedProblems(m).length, 3 * 3 + 2 * 3);
  assert.match(String(parseLlmArgs(["--types", "f16,tf32"])), /^Unknown type "tf32" in --types/);
  assert.match(String(parseLlmArgs(["--m", "16,3"])), /^Unknown M "3" in --m/);
  assert.match(String(parseLlmArgs(["--m"])), /^Unknown M "" in --m/);
  // --nk selects (N, K) pairs; --schedule is kept for every row's kernel.
  const nk = parseLlmArgs(["--types", "f16", "--nk", "4096x4096", "--schedule", "cluster 1x2"]);
  assert.ok(typeof nk === "object");
  assert.equal(nk.schedule, "cluster 1x2");
  assert.deepEqual(
    selectedProblems(nk).map((r) => `${r.p.M}x${r.p.N}x${r.p.K}`),
    [1, 16, 64, 128, 256, 1024].map((M) => `${M}x4096x4096`),
  );
  assert.match(String(parseLlmArgs(["--nk", "4096x4000"])), /^Unknown \(N, K\) "4096x4000"/);
  assert.match(String(parseLlmArgs(["--schedule", ""])), /^--schedule needs schedule lines/);
  // --sizes replaces the table's rows (off-table sizes included) for every selected type, in order.
  const sizes = parseLlmArgs(["--types", "f16,s8", "--sizes", "16x4096x1024,1x8x32"]);
  assert.ok(typeof sizes === "object");
  assert.deepEqual(
    selectedProblems(sizes).map((r) => `${r.type} ${r.p.M}x${r.p.N}x${r.p.K}`),
    ["f16 16x4096x1024", "f16 1x8x32", "s8 16x4096x1024", "s8 1x8x32"],
  );
  assert.equal(all.sizes, null);
  for (const other of ["--m", "--nk"]) {
    const both = parseLlmArgs([
      "--sizes",
      "16x4096x1024",
      other,
      other === "--m" ? "16" : "4096x4096",
    ]);
    assert.match(String(both), /^--sizes replaces the table's rows/);
  }
  for (const bad of ["16x4096", "0x8x8", "16x4096x1k", ""]) {
    assert.match(
      String(parseLlmArgs(["--sizes", bad])),
      new RegExp(`^Bad size "${bad}" in --sizes`),
    );
  }
});

/** A side's figures at the given burst and sustained µs. */
function side(burstUs: number, sustainedUs: number): SideFigures {
  return {
    burstUs,
    sustainedUs,
    launches: 100,
    holdMs: 1,
    hostUs: 5,
    burstSeriesUs: [burstUs],
    sustainedSeriesUs: [sustainedUs],
    hostPaced: 0,
    clockMHz: 1700,
  };
}

Deno.test("llmReport: times, floor, shares, ratio and verdicts; a FAILED row is not timed", () => {
  const p = { M: 16, N: 14336, K: 4096 };
  const floor = (mma: number): LlmFloor => llmFloor("f16", p, COPY, mma);
  const base = {
    type: "f16" as const,
    ...p,
    schedule: "16x128x128, warp 16x32x128, 4 stages, split_k 1",
    kernel: "k",
    sets: 2,
    registers: 128,
    floor: { burst: floor(MMA), sustained: floor(500e12) },
  };
  const ok: LlmRow = {
    ...base,
    status: "ok",
    note: "ok",
    ours: side(30, 40), // shares 27.45/30 = 0.915 (met), 27.45/40 = 0.686 (MISSED)
    cublas: side(33, 32),
  };
  const failed: LlmRow = {
    ...base,
    M: 128,
    status: "FAILED",
    note: "FAILED on 64 sampled elements",
    ours: null,
    cublas: null,
  };
  const text = llmReport(runInfo("2026-12-03", "deno task bench --gpu --shapes llm"), [ok, failed]);
  const lines = text.split("\n");
  const row = lines.find((l) => l.startsWith("| f16 | 16 |"))!;
  const cells = row.split(" | ");
  assert.equal(cells[6], "30.0 / 40.0");
  assert.equal(cells[7], "33.0 / 32.0");
  assert.equal(cells[8], "27.4 / 27.4 (HBM)");
  assert.equal(cells[9], "0.91 / 0.69");
  assert.equal(cells[10], "0.83 / 0.86");
  assert.equal(cells[11], "1.10 / 0.80");
  assert.equal(cells[12], "0.85: met / MISSED |");
  const bad = lines.find((l) => l.startsWith("| f16 | 128 |"))!.split(" | ");
  assert.deepEqual(bad.slice(5, 8), ["**FAILED**", "- / -", "- / -"]);
  assert.ok(
    text.includes("- f16 M=16 N=14336 K=4096: >= 0.85: burst 0.915 met, sustained 0.686 MISSED"),
  );
  assert.ok(text.includes("burst - MISSED, sustained - MISSED (FAILED)"));
  assert.ok(text.includes("Met: 1 of 2 in burst, 0 of 2 sustained."));
  assert.ok(text.includes("4.30 TB/s"));
});

for (
  const [what, args, prefix] of [
    [
      "bench/main.ts --gpu --shapes llm",
      ["bench/main.ts", "--gpu", "--shapes", "llm"],
      "deno task bench --gpu",
    ],
    ["bench/llm.ts", ["bench/llm.ts"], "bench --gpu --shapes llm"],
  ] as const
) {
  Deno.test(`${what} without a driver: exit 1, one sentence, nothing benchmarked`, async () => {
    const out = await runWithoutDriver(args);
    assert.equal(out.code, 1, out.stderr);
    assert.equal(out.stdout, "");
    assert.match(out.stderr, new RegExp(`^${prefix}: No CUDA driver: [^\\n]+\\n$`));
  });
}

/** A run's record on the H200 at COPY's bandwidth, f16's ceilings 634 / 500 TOPS. */
function runInfo(date: string, command: string): LlmRunInfo {
  return {
    date,
    command,
    device: "H200",
    cublas: "libcublas.so.13",
    copy: { bytes: 2 ** 30, ms: [0.5], bytesPerS: COPY },
    ceilings: { f16: { burst: 634, sustained: 500 } },
  };
}

/** An f16 row that ran, its floor from COPY and MMA in both states; its sides are the caller's. */
function okRow(p: LlmProblem, sets: number): Omit<LlmRow, "ours" | "cublas"> {
  const f = llmFloor("f16", p, COPY, MMA);
  return {
    type: "f16",
    ...p,
    schedule: "s",
    kernel: "k",
    sets,
    registers: 128,
    floor: { burst: f, sustained: f },
    status: "ok",
    note: "ok",
  };
}

Deno.test("llmReport with --pdl: ours+PDL's columns, target verdicts and Met line; without it, none", () => {
  const p = { M: 16, N: 14336, K: 4096 };
  const row: LlmRow = {
    ...okRow(p, 2),
    ours: side(33.5, 40), // 27.45/33.5 = 0.82 (MISSED), 0.69 (MISSED)
    oursPdl: side(30, 31), // 0.915 (met), 0.885 (met)
    cublas: side(33, 32),
  };
  const failed: LlmRow = {
    ...row,
    M: 64,
    status: "FAILED",
    ours: null,
    oursPdl: null,
    cublas: null,
  };
  const info = runInfo("2026-12-03", "deno task bench --gpu --shapes llm --pdl");
  const text = llmReport({ ...info, pdl: true }, [row, failed]);
  const t = table(text);
  const header = t.header;
  assert.deepEqual(header.slice(6, 14), [
    "ours µs",
    "ours+PDL µs",
    "cuBLAS µs",
    "floor µs",
    "ours/floor",
    "ours+PDL/floor",
    "cuBLAS/floor",
    "cuBLAS/ours",
  ]);
  const sep = t.separator;
  assert.equal(sep.split("|").length, header.length + 2, "one alignment per column");
  const cells = t.row("| f16 | 16 |");
  assert.equal(cells.length, header.length);
  assert.equal(cells[6], "33.5 / 40.0");
  assert.equal(cells[7], "30.0 / 31.0");
  assert.equal(cells[8], "33.0 / 32.0");
  assert.equal(cells[10], "0.82 / 0.69");
  assert.equal(cells[11], "0.91 / 0.89");
  assert.equal(cells[13], "0.99 / 0.80", "cuBLAS/ours stays ours'");
  assert.equal(cells[14], "0.85: MISSED / MISSED; +PDL: met / met |");
  const bad = t.row("| f16 | 64 |");
  assert.deepEqual(bad.slice(6, 8), ["- / -", "- / -"]);
  assert.ok(
    text.includes("- f16 M=16 N=14336 K=4096: >= 0.85: burst 0.819 MISSED, sustained 0.686 MISSED"),
  );
  assert.ok(
    text.includes(
      "- f16 M=16 N=14336 K=4096 ours+PDL: >= 0.85: burst 0.915 met, sustained 0.885 met",
    ),
  );
  assert.ok(text.includes("- f16 M=64 N=14336 K=4096 ours+PDL: >= 0.85: burst - MISSED"));
  assert.ok(text.includes("Met: 0 of 2 in burst, 0 of 2 sustained."));
  assert.ok(text.includes("Met by ours+PDL: 1 of 2 in burst, 1 of 2 sustained."));
  assert.match(text, /; ours\+PDL: L 100, hold 1\.00 ms/);
  assert.match(
    text,
    /ours\+PDL \(`--pdl`\): the same schedule compiled with the compile option `pdl`/,
  );
  assert.match(
    progressLine(row),
    /ours 33\.5 \/ 40\.0 µs, ours\+PDL 30\.0 \/ 31\.0 µs, cuBLAS 33\.0 \/ 32\.0 µs, floor 27\.4 \/ 27\.4 \(HBM\), share 0\.82 \/ 0\.69, ours\+PDL share 0\.91 \/ 0\.89$/,
  );
  // Without --pdl: the table, targets and lines of before, not a word of PDL.
  const { oursPdl: _p, ...plainRow } = row;
  const plain = llmReport(info, [plainRow]);
  assert.doesNotMatch(plain, /PDL/);
  assert.equal(
    plain.split("\n").find((l) => l.startsWith("| f16 | 16 |"))!.split(" | ").length,
    13,
  );
  assert.equal(
    progressLine(plainRow),
    "f16 16x14336x4096 [s] ok: ours 33.5 / 40.0 µs, cuBLAS 33.0 / 32.0 µs, " +
      "floor 27.4 / 27.4 (HBM), share 0.82 / 0.69",
  );
  // --pdl-early: what ours+PDL's kernel reads before its wait, beside the schedule (the compiler
  // may decline the option, so the row says what it got).
  const early = llmReport({ ...info, pdl: true, pdlEarly: true }, [
    { ...row, earlyRead: ["B"] },
    { ...row, M: 1, earlyRead: [] },
  ]);
  assert.match(early, /\| s; before the wait: B \|/);
  assert.match(early, /\| s; before the wait: none \|/);
  assert.match(
    progressLine({ ...row, earlyRead: [] }),
    /^f16 16x14336x4096 \[s; before the wait: none\] ok/,
  );
});

Deno.test("bench/main.ts --pdl without --shapes llm: exit 1, one sentence", async () => {
  const out = await runWithoutDriver(["bench/main.ts", "--gpu", "--pdl"]);
  assert.equal(out.code, 1, out.stderr);
  assert.equal(out.stdout, "");
  assert.equal(out.stderr, "deno task bench --pdl: only with --gpu --shapes llm (bench/llm.ts)\n");
});

/** A row at M = 16, N = K = 4096 with ours, cuBLAS and the copy timed (`--copy`, `--read`). */
function copiedRow(): LlmRow {
  return {
    ...okRow({ M: 16, N: 4096, K: 4096 }, 4),
    ours: side(12.6, 12.7),
    cublas: side(13.5, 13.6),
    copy: side(10.4, 10.6),
  };
}

Deno.test("llmReport with --copy: the copy's time and share beside cuBLAS's; without it, none", () => {
  const row = copiedRow();
  const info = runInfo("2026-12-06", "deno task bench --gpu --shapes llm --copy");
  const text = llmReport({ ...info, copySide: true }, [row, { ...row, M: 64, copy: null }]);
  const t = table(text);
  const header = t.header;
  assert.deepEqual(header.slice(6, 13), [
    "ours µs",
    "cuBLAS µs",
    "copy µs",
    "floor µs",
    "ours/floor",
    "cuBLAS/floor",
    "copy/floor",
  ]);
  assert.equal(t.separator.split("|").length, header.length + 2);
  const cells = t.row("| f16 | 16 |");
  assert.equal(cells.length, header.length);
  const floorUs = row.floor.burst.us;
  assert.equal(cells[8], "10.4 / 10.6");
  assert.equal(cells[12], `${(floorUs / 10.4).toFixed(2)} / ${(floorUs / 10.6).toFixed(2)}`);
  assert.equal(cells[13], `${(13.5 / 12.6).toFixed(2)} / ${(13.6 / 12.7).toFixed(2)}`);
  const none = t.row("| f16 | 64 |");
  assert.deepEqual([none[8], none[12]], ["- / -", "- / -"]);
  assert.match(text, /copy \(`--copy`\): one cuMemcpyDtoD a launch moving the row's bytes/);
  assert.match(text, /; copy: L 100, hold 1\.00 ms/);
  assert.match(progressLine(row), /cuBLAS 13\.5 \/ 13\.6 µs, copy 10\.4 \/ 10\.6 µs, floor /);
  assert.match(progressLine(row), /, copy share \d\.\d\d \/ \d\.\d\d$/);
  // Without --copy: not a word of it.
  const { copy: _c, ...plainRow } = row;
  const plain = llmReport({ ...info, command: "deno task bench --gpu --shapes llm" }, [plainRow]);
  assert.doesNotMatch(plain, /copy µs|copy\/floor|--copy/);
  assert.doesNotMatch(progressLine(plainRow), /copy/);
});

for (const flag of ["--copy", "--read"] as const) {
  const key = flag === "--copy" ? "copy" : "read";
  Deno.test(`parseLlmArgs: ${flag}, off by default; bench/main.ts takes it only with the table`, async () => {
    const on = parseLlmArgs([flag]), off = parseLlmArgs([]);
    assert.ok(typeof on === "object" && on[key]);
    assert.ok(typeof off === "object" && !off[key]);
    const out = await runWithoutDriver(["bench/main.ts", "--gpu", flag]);
    assert.equal(out.code, 1, out.stderr);
    assert.equal(
      out.stderr,
      `deno task bench ${flag}: only with --gpu --shapes llm (bench/llm.ts)\n`,
    );
  });
}

Deno.test("llmReport with --copy --read: the read's time and share after the copy's; without it, none", () => {
  const row: LlmRow = { ...copiedRow(), read: side(11.1, 11.3) };
  const info = runInfo("2026-12-07", "deno task bench --gpu --shapes llm --copy --read");
  const text = llmReport({ ...info, copySide: true, readSide: true }, [row, {
    ...row,
    M: 64,
    read: null,
  }]);
  const t = table(text);
  const header = t.header;
  assert.deepEqual(header.slice(8, 15), [
    "copy µs",
    "read µs",
    "floor µs",
    "ours/floor",
    "cuBLAS/floor",
    "copy/floor",
    "read/floor",
  ]);
  const cells = t.row("| f16 | 16 |");
  assert.equal(cells.length, header.length);
  const floorUs = row.floor.burst.us;
  assert.equal(cells[9], "11.1 / 11.3");
  assert.equal(cells[14], `${(floorUs / 11.1).toFixed(2)} / ${(floorUs / 11.3).toFixed(2)}`);
  const none = t.row("| f16 | 64 |");
  assert.deepEqual([none[8], none[9], none[14]], ["10.4 / 10.6", "- / -", "- / -"]);
  assert.match(text, /read \(`--read`\): a streaming kernel a launch \(bench\/stream_read\.ts/);
  assert.match(text, /; read: L 100, hold 1\.00 ms/);
  assert.match(progressLine(row), /copy 10\.4 \/ 10\.6 µs, read 11\.1 \/ 11\.3 µs, floor /);
  assert.match(
    progressLine(row),
    /, copy share \d\.\d\d \/ \d\.\d\d, read share \d\.\d\d \/ \d\.\d\d$/,
  );
  // Without --read: not a word of it.
  const { read: _r, ...copyRow } = row;
  const plain = llmReport({
    ...info,
    command: "deno task bench --gpu --shapes llm --copy",
    copySide: true,
  }, [copyRow]);
  assert.doesNotMatch(plain, /read µs|read\/floor|--read/);
  assert.doesNotMatch(progressLine(copyRow), /read/);
});
