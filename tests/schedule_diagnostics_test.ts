/**
 * Schedule diagnostics (E02xx), raised by the passes: for every bad program
 * in `tests/testdata/schedule/<CODE>_<slug>.gemm` the exact rendered output
 * (`FILE:LINE:COL: error[CODE]: message`, the source line and the caret) is
 * kept beside it in `<CODE>_<slug>.txt`, and the CLI prints exactly that and
 * exits 1.
 *
 * Regenerate the goldens with
 * `UPDATE_GOLDEN=1 deno task test tests/schedule_diagnostics_test.ts`, then
 * read every changed one: the caret must sit under the schedule line (or the
 * declaration) that the message is about, and the numbers must be right.
 */

import assert from "node:assert/strict";
import { check, compile, formatDiagnostics } from "../compiler.ts";
import { DIAGNOSTIC_CODES, type DiagnosticCode, DiagnosticError } from "../dsl/diagnostics.ts";
import { scheduleError } from "../passes/pass.ts";
import { TARGET_NAMES, targetInfo } from "../ir/target.ts";
import { gemm, type Run } from "./_cli.ts";

const ROOT = new URL("../", import.meta.url);
const DIR = "tests/testdata/schedule";
const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

/** The one diagnostic (code, line, column) each bad program must produce. */
const EXPECTED: Readonly<Record<string, readonly [DiagnosticCode, number, number]>> = {
  E0201_threadblock_not_divisible: ["E0201", 11, 5],
  E0201_warp_k: ["E0201", 11, 5],
  E0202_kernel_name_after_comment: ["E0202", 2, 3],
  E0202_warp_not_divisible: ["E0202", 11, 5],
  E0203_no_instruction: ["E0203", 10, 5],
  E0204_smem_default_stages: ["E0204", 10, 5],
  E0204_smem_sm80: ["E0204", 11, 5],
  E0204_smem_sm86: ["E0204", 11, 5],
  E0204_smem_sm86_large_tile: ["E0204", 12, 5],
  E0205_too_many_threads: ["E0205", 11, 5],
  E0206_one_stage: ["E0206", 10, 5],
  E0207_split_k_literal_k: ["E0207", 11, 5],
  E0208_register_file: ["E0208", 11, 5],
  E0208_registers: ["E0208", 11, 5],
  E0208_simt_register_file: ["E0208", 12, 5],
  E0209_copies_per_row: ["E0209", 11, 5],
  E0209_mn_contiguous: ["E0209", 10, 5],
  E0209_not_multiple: ["E0209", 10, 5],
  E0209_not_power_of_two: ["E0209", 10, 5],
  E0209_one_k_step: ["E0209", 10, 5],
  E0209_row_bytes: ["E0209", 10, 5],
  E0209_smaller_than_mma: ["E0209", 10, 5],
  E0211_s4_row_major_b: ["E0211", 4, 3],
  E0211_s8_col_major_a: ["E0211", 3, 3],
  E0212_split_k: ["E0212", 11, 5],
  E0213_scheduler_sm80: ["E0213", 11, 5],
  E0214_cluster_sm80: ["E0214", 11, 5],
  E0215_rotate_k_cp_async_wgmma: ["E0215", 13, 5],
};

/** The messages, spelled out here too so that a reviewer sees the numbers in one place. */
const MESSAGES: Readonly<Record<string, string>> = {
  E0201_threadblock_not_divisible: "Threadblock 128x128x32 is not divisible by warp 64x96x32",
  E0201_warp_k: "Warp tile 64x64x16 must span the threadblock's K (32): warps split only M and N",
  // No warp line: at the kernel's name, not at the "k" of the comment before it.
  E0202_kernel_name_after_comment: "Warp 64x64x8 is not divisible by the instruction 16x8x16",
  E0202_warp_not_divisible: "Warp 8x64x32 is not divisible by the instruction 16x8x16",
  E0203_no_instruction:
    "No mma.sync instruction 16x8x32 for f16 x f16 -> f32: SM80 has 16x8x8, 16x8x16",
  E0204_smem_default_stages: "Shared memory over the budget: 2 stages x 65536 bytes = " +
    "131072 bytes > 101376 bytes on sm86; use a smaller threadblock tile (2 stages need " +
    "131072 bytes)",
  E0204_smem_sm80: "Shared memory over the budget: 7 stages x 24576 bytes = 172032 bytes > " +
    "166912 bytes on sm80; use stages 6 or fewer",
  E0204_smem_sm86: "Shared memory over the budget: 5 stages x 24576 bytes = 122880 bytes > " +
    "101376 bytes on sm86; use stages 4 or fewer",
  E0204_smem_sm86_large_tile: "Shared memory over the budget: 3 stages x 65536 bytes = " +
    "196608 bytes > 101376 bytes on sm86; use a smaller threadblock tile (2 stages need " +
    "131072 bytes)",
  E0205_too_many_threads: "256 warps (8192 threads) per block exceed 1024 threads: " +
    "use a larger warp tile or a smaller threadblock",
  E0206_one_stage: `"stages 1": a cp.async pipeline needs at least 2 stages`,
  E0207_split_k_literal_k: `"split_k 4" exceeds the 2 k-tiles of K=64 (tile K 32)`,
  E0208_register_file: "Estimated 232 registers x 512 threads = 118784 registers per block " +
    "exceed the 65536 of an SM: use fewer warps",
  E0208_registers: "Estimated 596 registers per thread (512 accumulators, 64 fragments in one " +
    "buffer) exceed 255: use a smaller warp tile",
  E0208_simt_register_file: "Estimated 124 registers x 1024 threads = 126976 registers per block " +
    "exceed the 65536 of an SM: use fewer warps",
  E0209_copies_per_row: "Operand A: 160 threads cannot share its tile rows of 64 copies (4 bytes " +
    "each): the thread count and the copies per row must divide one another (use a power-of-two " +
    "number of warps)",
  E0209_mn_contiguous: "Threadblock 160x256: A is M-contiguous, so the tile's M extent 160 must " +
    "be a power of two (only K-contiguous operands take tiles such as 160 or 192)",
  E0209_not_multiple: "Threadblock 100x128x32: the M extent 100 is not a multiple of 16",
  E0209_not_power_of_two: "Threadblock 128x128x48: the K extent 48 is not a power of two",
  E0209_one_k_step: "Tile K 16 holds 1 k-step of the 16x8x16 instruction: the fragment " +
    "pipeline needs at least 2 (use threadblock K 32)",
  E0209_row_bytes: `Operand A ("A", f16) has 8-byte tile rows: they must be a multiple of ` +
    "16 bytes (increase the threadblock's K)",
  E0209_smaller_than_mma: "Threadblock 8x64x32 is smaller than one MMA (16x8)",
  E0211_s4_row_major_b: `Operand B ("B", s4) must be K-contiguous (B column-major): 4-bit ` +
    "MMA fragments cannot be transposed from shared memory",
  E0211_s8_col_major_a: `Operand A ("A", s8) must be K-contiguous (A row-major): 8-bit ` +
    "MMA fragments cannot be transposed from shared memory",
  E0212_split_k: `"split_k 2" adds a parameter named "workspace": rename the kernel's "workspace"`,
  E0213_scheduler_sm80: `"scheduler stream_k" needs a warp-specialized sm90 kernel (target ` +
    "sm90, TMA-fed wgmma: K-contiguous operands aligned to 16 bytes), not grouped and without " +
    "split_k",
  E0214_cluster_sm80: `"cluster 2" needs a persistent warp-specialized sm90 kernel (target sm90, ` +
    "TMA-fed wgmma, without split_k or scheduler stream_k or tiles) whose threadblock N halves " +
    "into multiples of 8",
  E0215_rotate_k_cp_async_wgmma: `"rotate_k 1" needs the mma.sync main loop of one dense ` +
    "problem or sm90's TMA pipeline, not a wgmma kernel fed by cp.async (no TMA)",
};

/** The pass codes; E0210 (unknown kernel) is a CLI usage error, not a diagnostic. */
const SCHEDULE_CODES = (Object.keys(DIAGNOSTIC_CODES) as DiagnosticCode[]).filter((c) =>
  c.startsWith("E02") && c !== "E0210"
);

function programs(): string[] {
  return [...Deno.readDirSync(new URL(`${DIR}/`, ROOT))]
    .filter((e) => e.isFile && e.name.endsWith(".gemm"))
    .map((e) => e.name.slice(0, -".gemm".length))
    .sort();
}

function source(name: string): { file: string; text: string } {
  const file = `${DIR}/${name}.gemm`;
  return { file, text: Deno.readTextFileSync(new URL(file, ROOT)) };
}

for (const name of programs()) {
  Deno.test(`schedule diagnostic: ${name}`, () => {
    const { file, text } = source(name);
    // The front end accepts the program: the pass pipeline is what rejects it.
    assert.deepEqual(check(text, { file }).diagnostics, []);
    const r = compile(text, { file });
    assert.equal(r.ok, false);
    assert.deepEqual(r.kernels, []);
    const out = formatDiagnostics(r.diagnostics, text);
    const golden = new URL(`${DIR}/${name}.txt`, ROOT);
    if (UPDATE) Deno.writeTextFileSync(golden, out);
    let want: string;
    try {
      want = Deno.readTextFileSync(golden);
    } catch {
      assert.fail(`No golden ${DIR}/${name}.txt: run with UPDATE_GOLDEN=1 and review it`);
    }
    assert.equal(out, want);
    const exp = EXPECTED[name];
    assert.ok(exp !== undefined, `${name} has no entry in EXPECTED`);
    assert.deepEqual(
      r.diagnostics.map((d) => [d.code, d.line, d.column]),
      [exp],
    );
    assert.ok(name.startsWith(`${exp[0]}_`), "the file name starts with its code");
    const d = r.diagnostics[0]!;
    assert.equal(d.message, MESSAGES[name]);
    assert.equal(d.file, file);
    // STYLE.md: a capital letter or a quoted value first, no final period.
    assert.match(d.message, /^[A-Z0-9"]/);
    assert.doesNotMatch(d.message, /\.$/);
  });
}

Deno.test("schedule diagnostics: every program has an expectation and a golden, and vice versa", () => {
  const names = programs();
  assert.deepEqual(names, Object.keys(EXPECTED).sort());
  assert.deepEqual(names, Object.keys(MESSAGES).sort());
  const goldens = [...Deno.readDirSync(new URL(`${DIR}/`, ROOT))]
    .filter((e) => e.name.endsWith(".txt"))
    .map((e) => e.name.slice(0, -".txt".length))
    .sort();
  assert.deepEqual(goldens, names);
});

Deno.test("schedule diagnostics: every pass code has a program", () => {
  const covered = new Set(Object.values(EXPECTED).map(([c]) => c));
  assert.deepEqual(SCHEDULE_CODES.filter((c) => !covered.has(c)), []);
});

Deno.test("schedule diagnostics: the caret is under the schedule line the message is about", () => {
  const keyOf: Readonly<Record<string, string>> = {
    E0201_threadblock_not_divisible: "warp",
    E0201_warp_k: "warp",
    E0202_warp_not_divisible: "warp",
    E0203_no_instruction: "mma",
    E0204_smem_default_stages: "threadblock",
    E0204_smem_sm80: "stages",
    E0204_smem_sm86: "stages",
    E0204_smem_sm86_large_tile: "stages",
    E0205_too_many_threads: "warp",
    E0206_one_stage: "stages",
    E0207_split_k_literal_k: "split_k",
    E0208_register_file: "warp",
    E0208_registers: "warp",
    E0208_simt_register_file: "warp",
    E0209_copies_per_row: "warp",
    E0209_mn_contiguous: "threadblock",
    E0209_not_multiple: "threadblock",
    E0209_not_power_of_two: "threadblock",
    E0209_one_k_step: "threadblock",
    E0209_row_bytes: "threadblock",
    E0209_smaller_than_mma: "threadblock",
    E0211_s4_row_major_b: "B:",
    E0211_s8_col_major_a: "A:",
    E0212_split_k: "split_k",
    E0213_scheduler_sm80: "scheduler",
    E0214_cluster_sm80: "cluster",
    E0215_rotate_k_cp_async_wgmma: "rotate_k",
  };
  // Without the schedule line concerned: the kernel's name, and only it.
  const atName: Readonly<Record<string, string>> = { E0202_kernel_name_after_comment: "k" };
  for (const name of programs()) {
    const { file, text } = source(name);
    const d = compile(text, { file }).diagnostics[0]!;
    if (atName[name] !== undefined) {
      assert.equal(text.slice(d.span.start, d.span.end), atName[name], name);
      assert.ok(!text.slice(0, d.span.start).split("\n").pop()!.includes("//"), name);
      continue;
    }
    const line = text.split("\n")[d.line - 1]!;
    const marked = line.slice(d.column - 1);
    assert.ok(marked.startsWith(keyOf[name]!), `${name}: caret at ${JSON.stringify(marked)}`);
    // The span covers the whole setting (or declaration), to the end of the line.
    assert.equal(text.slice(d.span.start, d.span.end), marked.trimEnd(), name);
  }
});

Deno.test("schedule diagnostics: the stage budget is each target's shared memory a block", () => {
  // 7 stages of 24576 bytes: over sm80's and sm86's budget; 10 over sm90's.
  const file = Deno.readTextFileSync(new URL(`${DIR}/E0204_smem_sm80.gemm`, ROOT));
  for (const t of TARGET_NAMES) {
    const stages = Math.floor(targetInfo(t).smemPerBlock / 24576) + 1;
    const text = file.replace("stages 7", `stages ${stages}`);
    const r = compile(text, { file: "t.gemm", target: t });
    assert.deepEqual(r.diagnostics.map((d) => d.code), ["E0204"], t);
    const budget = targetInfo(t).smemPerBlock;
    assert.ok(r.diagnostics[0]!.message.includes(`> ${budget} bytes on ${t}`), t);
  }
});

Deno.test("schedule diagnostics: --target sm86 turns a fitting sm80 schedule into E0204", () => {
  const text = Deno.readTextFileSync(new URL(`${DIR}/E0204_smem_sm86.gemm`, ROOT))
    .replace(/^\s*target sm86\n/m, "");
  assert.ok(compile(text, { file: "t.gemm" }).ok, "5 stages of 24576 bytes fit sm80");
  const r = compile(text, { file: "t.gemm", target: "sm86" });
  assert.deepEqual(r.diagnostics.map((d) => [d.code, d.line, d.column]), [["E0204", 11, 5]]);
  assert.match(r.diagnostics[0]!.message, /= 122880 bytes > 101376 bytes on sm86/);
});

Deno.test("schedule diagnostics: the largest stage count that fits is legal", () => {
  // The suggestion of E0204 must itself compile, on every target: the most
  // stages of 24576 bytes that fit, and one more is refused.
  for (const target of TARGET_NAMES) {
    const stages = Math.floor(targetInfo(target).smemPerBlock / 24576);
    const over = Deno.readTextFileSync(new URL(`${DIR}/E0204_smem_sm80.gemm`, ROOT))
      .replace("stages 7", `stages ${stages + 1}`);
    const refused = compile(over, { file: "t.gemm", target });
    assert.deepEqual(refused.diagnostics.map((d) => d.code), ["E0204"], target);
    assert.match(refused.diagnostics[0]!.message, new RegExp(`use stages ${stages} or fewer$`));
    const text = Deno.readTextFileSync(new URL(`${DIR}/E0204_smem_sm80.gemm`, ROOT))
      .replace("stages 7", `stages ${stages}`);
    const r = compile(text, { file: "t.gemm", target });
    assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
    assert.equal(r.kernels[0]!.planned.plan.pipeline!.smemBytes, stages * 24576);
  }
});

Deno.test("schedule diagnostics: two bad kernels in one file give two diagnostics", () => {
  const a = source("E0206_one_stage").text;
  const b = source("E0203_no_instruction").text.replace("kernel k", "kernel k2");
  const text = `${a}\n${b}`;
  const r = compile(text, { file: "two.gemm" });
  const offset = a.split("\n").length;
  assert.deepEqual(r.diagnostics.map((d) => [d.code, d.line]), [
    ["E0206", 10],
    ["E0203", 10 + offset],
  ]);
});

Deno.test("scheduleError: without the schedule line, points at the kernel's name", () => {
  const text = "kernel my_gemm {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  D: f32[M, N] row\n" +
    "  D[m, n] = A[m, k] * B[k, n]\n}\n";
  const k = check(text, { file: "t.gemm" }).kernels[0]!;
  let err: unknown;
  try {
    scheduleError(k, ["stages", "threadblock"], "E0204", "Too big");
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof DiagnosticError);
  const [d] = err.diagnostics;
  assert.deepEqual([d!.code, d!.line, d!.column], ["E0204", 1, 8]);
  assert.equal(text.slice(d!.span.start, d!.span.end), "my_gemm");
});

// ---- the CLI ------------------------------------------------------------------------------

Deno.test("schedule diagnostics: gemm compile exits 1 and prints the golden", async () => {
  const names = programs();
  const width = Math.max(2, Math.min(8, navigator.hardwareConcurrency));
  const runs: Run[] = new Array(names.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < names.length) {
      const i = next++;
      runs[i] = await gemm("compile", `${DIR}/${names[i]}.gemm`, "--emit", "kernel-ir");
    }
  }));
  names.forEach((name, i) => {
    const r = runs[i]!;
    assert.equal(r.code, 1, `${name}: exit ${r.code}\n${r.stderr}`);
    assert.equal(r.stdout, "", name);
    assert.equal(r.stderr, Deno.readTextFileSync(new URL(`${DIR}/${name}.txt`, ROOT)), name);
  });
});

Deno.test("cli: gemm check reports schedule diagnostics too (exit 1)", async () => {
  const r = await gemm("check", "tests/testdata/schedule/E0204_smem_sm80.gemm");
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /^tests\/testdata\/schedule\/E0204_smem_sm80\.gemm:\d+:\d+: error\[E0204\]/,
  );
  assert.equal(r.stdout, "");
});
