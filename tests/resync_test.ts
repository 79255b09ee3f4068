/**
 * Recovery after a syntax error (dsl/resync.ts): the other kernels of the
 * file are still parsed, at their own positions, and checked, so a syntax
 * error in one kernel hides none of the other kernels' diagnostics.
 *
 * @module
 */

import assert from "node:assert/strict";
import { blockText, failingBlock, kernelBlocks } from "../dsl/resync.ts";
import { parseProgram } from "../dsl/parse.ts";
import { check, compile, formatDiagnostics } from "../compiler.ts";
import { Rng } from "../numerics/random.ts";

const ROOT = new URL("../", import.meta.url);

/** A seeded generator: numerics/random.ts's mulberry32 as a function. */
function rng(seed: number): () => number {
  const g = new Rng(seed);
  return () => g.next();
}

Deno.test("kernelBlocks cuts at the keyword only: not in comments, not inside a name", () => {
  const text = "// a kernel here\nkernel my_kernel { }\n  kernel\tkernels { } // kernel\n";
  const blocks = kernelBlocks(text);
  assert.deepEqual(blocks.map((b) => text.slice(b.start, b.end)), [
    "// a kernel here\n",
    "kernel my_kernel { }\n  ",
    "kernel\tkernels { } // kernel\n",
  ]);
  assert.equal(failingBlock(blocks, 0), 0);
  // At a block's `kernel`: the block before ran short (a missing `}`).
  assert.equal(failingBlock(blocks, blocks[2]!.start), 1);
  assert.equal(failingBlock(blocks, blocks[2]!.start + 1), 2);
  const bt = blockText(text, blocks[1]!);
  assert.equal(bt.length, blocks[1]!.end);
  assert.equal(bt.split("\n").length, text.slice(0, blocks[1]!.end).split("\n").length);
});

Deno.test("a syntax error in one kernel hides neither the others' syntax nor their checker errors", () => {
  const text = [
    "kernel a {", //              1
    "  A: f16[M, K] row", //      2
    "  B: f16[K, N col", //       3: syntax
    "  D: f32[M, N] row",
    "  D[m, n] = A[m, k] * B[k, n]",
    "}",
    "// kernel in a comment: not a block",
    "kernel b {", //              8
    "  A: f16[M, K] row",
    "  B: f16[K, N] col",
    "  D: f32[M, N] row",
    "  D[m, n] = A[m, k] * Bq[k, n]", // 12: E0101
    "", //                        13: b's `}` missing: the next `kernel` is found
    "kernel c {", //              14
    "  A: f16[M, K] row",
    "  B: f16[K, N] col",
    "  D: f32[M, N] row",
    "  D[m, n] = A[m, k] * B[k, n]",
    "  schedule {",
    "    stages 1", //            20: E0206 (a pass)
    "  }",
    "}",
    "kernel d {", //              23
    "  D[m, n] = A[m, k] *", //   24: syntax at the end of the line
    "}",
  ].join("\n") + "\n";
  const r = compile(text, { file: "x.gemm" });
  assert.equal(r.ok, false);
  assert.deepEqual(
    r.diagnostics.map((d) => [d.code, d.line, d.column]),
    [["E0001", 3, 15], ["E0001", 14, 1], ["E0206", 20, 5], ["E0001", 24, 22]],
  );
  assert.match(r.diagnostics[1]!.message, /^Expected "}", .*found "kernel"$/);
  assert.match(r.diagnostics[3]!.message, /found end of line$/);
  // Rendered against the source: the carets are under the right text.
  const shown = formatDiagnostics(r.diagnostics, text);
  assert.match(
    shown,
    /^x\.gemm:3:15: error\[E0001\]: .*\n3 \| {3}B: f16\[K, N col\n {2}\| {15}\^~~$/m,
  );
  assert.match(shown, /^20 \| {5}stages 1\n {3}\| {5}\^~~~~~~~$/m);
  // b is the block that ran short: its E0101 waits for its syntax to be fixed.
  const fixed = compile(text.replace("Bq[k, n]\n\n", "Bq[k, n]\n}\n"), { file: "x.gemm" });
  assert.deepEqual(
    fixed.diagnostics.map((d) => [d.code, d.line]),
    [["E0001", 3], ["E0101", 12], ["E0206", 20], ["E0001", 24]],
  );
});

Deno.test("recovered kernels are exactly those of the intact source, positions included", () => {
  const files = ["two_kernels", "hgemm", "s8_gemm", "fused_bias_relu", "batched"];
  const whole = files.map((f) => Deno.readTextFileSync(new URL(`examples/${f}.gemm`, ROOT)))
    .join("\n");
  const good = parseProgram(whole, "all.gemm");
  assert.ok(good.ok);
  const kernels = good.ast.kernels;
  assert.equal(kernels.length, files.length + 1);
  const next = rng(5);
  for (let trial = 0; trial < 40; trial++) {
    // Break one kernel with a character of the same length, so offsets stay.
    const victim = Math.floor(next() * kernels.length);
    const k = kernels[victim]!;
    const body = whole.indexOf("{", k.span.start) + 1;
    const at = body + Math.floor(next() * (k.span.end - 1 - body));
    if (/\s/.test(whole[at]!)) continue;
    const broken = whole.slice(0, at) + "@" + whole.slice(at + 1);
    const r = parseProgram(broken, "all.gemm");
    assert.equal(r.ok, false, `trial ${trial}`);
    if (r.ok) continue;
    assert.equal(r.diagnostics.length, 1, `trial ${trial}: ${r.diagnostics[0]?.message}`);
    assert.equal(r.diagnostics[0]!.code, "E0001");
    assert.ok(r.diagnostics[0]!.span.start <= at, `trial ${trial}`);
    assert.deepEqual(r.partial?.kernels, kernels.filter((_, i) => i !== victim), `trial ${trial}`);
  }
});

Deno.test("a source over a limit recovers nothing; garbage before the first kernel loses no kernel", () => {
  const kernel = Deno.readTextFileSync(new URL("examples/hgemm.gemm", ROOT));
  const r = parseProgram("garbage\n" + kernel, "g.gemm");
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.diagnostics.length, 1);
  assert.equal(r.diagnostics[0]!.line, 1);
  assert.deepEqual(r.partial?.kernels.map((k) => k.name.text), ["hgemm"]);
  const deep = parseProgram(`kernel a { D[m] = ${"(".repeat(100)}x }\n${kernel}`, "d.gemm");
  assert.equal(deep.ok, false);
  if (!deep.ok) assert.equal(deep.partial, undefined);
});

Deno.test("random edits of a multi-kernel file: diagnostics, never a crash, spans inside the source", () => {
  const files = ["two_kernels", "splitk", "b1_xor", "tanh_exp"];
  const whole = files.map((f) => Deno.readTextFileSync(new URL(`examples/${f}.gemm`, ROOT)))
    .join("\n");
  const next = rng(1919);
  const pieces = ["kernel", "}", "{", "[", "]", ",", "(", ")", "//", "\n", "x", "f16", "*", "="];
  for (let trial = 0; trial < 80; trial++) {
    let text = whole;
    for (let e = 1 + Math.floor(next() * 3); e > 0; e--) {
      const at = Math.floor(next() * text.length);
      const cut = Math.floor(next() * 4);
      const put = next() < 0.6 ? pieces[Math.floor(next() * pieces.length)]! : "";
      text = text.slice(0, at) + put + text.slice(at + cut);
    }
    // The front end only (parse, recovery, checker): the passes are not what is tested.
    const r = check(text, { file: "f.gemm" });
    const lines = text.split("\n");
    for (const d of r.diagnostics) {
      assert.ok(d.span.start >= 0 && d.span.start <= text.length, `${trial}: ${d.message}`);
      assert.ok(d.line >= 1 && d.line <= lines.length, `${trial}: ${d.message}`);
      assert.ok(d.column >= 1 && d.column <= lines[d.line - 1]!.length + 1, `${trial}`);
    }
    const starts = r.diagnostics.map((d) => d.span.start);
    assert.deepEqual(starts, [...starts].sort((a, b) => a - b), `${trial}: source order`);
    if (r.diagnostics.length === 0) assert.ok(r.kernels.length > 0);
  }
});
