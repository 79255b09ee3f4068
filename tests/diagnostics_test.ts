/**
 * Diagnostics: for every bad program in `tests/testdata/bad/<CODE>_<slug>.gemm`,
 * the exact rendered output (`FILE:LINE:COL: error[CODE]: message`, the source
 * line and the caret) is kept in `tests/golden/diagnostics/<CODE>_<slug>.txt`.
 *
 * Regenerate the goldens with `UPDATE_GOLDEN=1 deno task test tests/diagnostics_test.ts`,
 * then read every changed one: the caret must sit under the offending text.
 */

import assert from "node:assert/strict";
import { check, formatDiagnostics } from "../compiler.ts";
import {
  diagnostic,
  DIAGNOSTIC_CODES,
  type DiagnosticCode,
  lineColumn,
  renderDiagnostic,
} from "../dsl/diagnostics.ts";

const BAD_DIR = "tests/testdata/bad";
const GOLDEN_DIR = "tests/golden/diagnostics";
const ROOT = new URL("../", import.meta.url);
const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

/** Every diagnostic (code, line, column) each bad program must produce, in order. */
const EXPECTED: Readonly<Record<string, readonly (readonly [DiagnosticCode, number, number])[]>> = {
  E0001_bad_dtype: [["E0001", 3, 6]],
  E0001_missing_brace: [["E0001", 6, 30]],
  E0001_missing_bracket: [["E0001", 2, 15]],
  E0001_schedule_no_value: [["E0001", 7, 11]],
  E0002_deep_calls: [["E0002", 5, 337]],
  E0002_deep_parens: [["E0002", 5, 77]],
  E0002_deep_unary_minus: [["E0002", 5, 141]],
  E0002_long_identifier: [["E0002", 4, 3]],
  E0002_long_sum: [["E0002", 5, 539]],
  E0003_unicode_kernel_name: [["E0003", 1, 8]],
  E0101_two_bad_kernels: [["E0101", 6, 23], ["E0111", 23, 5]],
  E0101_unknown_scalar: [["E0101", 6, 41]],
  E0101_unknown_tensor: [["E0101", 5, 23]],
  E0101_unknown_tensor_in_epilogue: [["E0101", 8, 42]],
  E0102_duplicate_declaration: [["E0102", 4, 3]],
  E0102_duplicate_tensor: [["E0102", 5, 3]],
  E0103_rank_mismatch: [["E0103", 5, 23]],
  E0103_rank_mismatch_output: [["E0103", 5, 3]],
  E0104_index_two_dims: [["E0104", 5, 25]],
  E0104_index_two_dims_epilogue: [["E0104", 7, 38]],
  E0105_no_contraction: [["E0105", 5, 13]],
  E0105_sum_alone: [["E0105", 5, 13]],
  E0106_two_contractions: [["E0106", 7, 33]],
  E0107_three_tensors: [["E0107", 6, 33]],
  E0108_epilogue_summed_index: [["E0108", 6, 33]],
  E0109_b1_without_popc: [["E0109", 5, 13]],
  E0109_f16_bf16: [["E0109", 5, 13]],
  E0109_mixed_int_widths: [["E0109", 5, 13]],
  E0109_popc_on_f16: [["E0109", 5, 13]],
  E0110_unknown_schedule_key: [["E0110", 7, 5]],
  E0111_repeated_cache_key: [["E0111", 9, 5]],
  E0111_repeated_schedule_key: [["E0111", 9, 5]],
  E0112_bad_cache_policy: [["E0112", 7, 13]],
  E0112_bad_math: [["E0112", 7, 10]],
  E0112_bad_stages: [["E0112", 7, 12]],
  E0112_bad_swizzle: [["E0112", 7, 13]],
  E0112_bad_target: [["E0112", 7, 12]],
  E0112_malformed_shape: [["E0112", 7, 17]],
  E0112_split_k_2_32_plus_1: [["E0112", 7, 13]],
  E0112_split_k_huge: [["E0112", 7, 13]],
  E0112_zero_extent: [["E0112", 7, 10]],
  E0113_accumulate_f16: [["E0113", 7, 16]],
  E0113_accumulate_f16_on_f32: [["E0113", 7, 16]],
  E0113_accumulate_s32_on_f16: [["E0113", 7, 16]],
  E0114_no_statement: [["E0114", 1, 8]],
  E0114_two_statements: [["E0114", 6, 3]],
  E0115_output_index_missing: [["E0115", 5, 13]],
  E0115_scalar_output: [["E0115", 5, 3]],
  E0115_vector_output: [["E0115", 5, 3]],
  E0116_cast_to_s4: [["E0116", 5, 13]],
  E0116_popc_in_epilogue: [["E0116", 6, 33]],
  E0116_unknown_function: [["E0116", 5, 13]],
  E0116_wrong_arity: [["E0116", 5, 13]],
  E0117_align_sub_byte: [["E0117", 2, 25]],
  E0117_align_too_large: [["E0117", 2, 26]],
  E0117_bad_align: [["E0117", 2, 26]],
  E0117_col_vector: [["E0117", 4, 16]],
  E0117_rank_four: [["E0117", 2, 3]],
  E0117_s32_default: [["E0117", 5, 16]],
  E0117_scalar_dtype: [["E0117", 5, 10]],
  E0117_unused_tensor: [["E0117", 4, 3]],
  E0117_zero_dim: [["E0117", 2, 13]],
  E0118_output_read: [["E0118", 5, 33]],
  E0118_same_tensor_twice: [["E0118", 5, 23]],
  E0118_scalar_indexed: [["E0118", 6, 33]],
  E0118_tensor_without_index: [["E0118", 6, 33]],
  E0118_two_index_orders: [["E0118", 6, 43]],
  E0118_two_roles: [["E0118", 6, 33]],
  E0118_stride_names_scalar: [["E0118", 2, 28]],
  E0119_batch_not_first: [["E0119", 5, 16]],
  E0119_both_output_indices: [["E0119", 5, 13]],
  E0119_repeated_index: [["E0119", 5, 18]],
  E0119_summed_in_one_operand: [["E0119", 5, 18]],
  E0119_two_summed_indices: [["E0119", 5, 13]],
  E0120_epilogue_dtype: [["E0120", 6, 33]],
  E0120_output_dtype: [["E0120", 4, 6]],
  E0121_duplicate_kernel: [["E0121", 8, 8]],
  E0122_two_settings_one_line: [["E0122", 7, 14]],
  E0123_math_on_f16: [["E0123", 7, 10]],
  E0123_math_on_s8: [["E0123", 7, 10]],
  E0124_infinite_literal: [["E0124", 5, 13]],
  E0124_infinite_scalar_default: [["E0124", 5, 16]],
  E0124_s32_literal_overflow: [["E0124", 5, 33]],
  E0125_batch_stride_overlap: [["E0125", 2, 33]],
  E0125_line_stride_below_extent: [["E0125", 2, 29]],
  E0125_output_batch_stride_zero: [["E0125", 4, 31]],
  E0125_stride_count: [["E0125", 2, 20]],
  E0125_stride_misaligned: [["E0125", 2, 28]],
  E0125_sub_byte_stride: [["E0125", 2, 27]],
  E0126_grouped_batch: [["E0126", 5, 5]],
  E0126_grouped_name: [["E0126", 4, 3]],
  E0126_grouped_split_k: [["E0126", 7, 5]],
  E0126_grouped_swizzle: [["E0126", 7, 5]],
  E0127_sparse_b: [["E0127", 3, 20]],
  E0127_sparse_f64: [["E0127", 2, 6]],
  E0127_sparse_literal_k: [["E0127", 2, 12]],
  E0127_sparse_m_contiguous: [["E0127", 2, 16]],
  E0127_sparse_meta_name: [["E0127", 4, 3]],
  E0127_sparse_strides: [["E0127", 2, 28]],
  E0127_sparse_3xtf32: [["E0127", 2, 20]],
  E0127_sparse_grouped: [["E0127", 2, 20]],
  E0128_fp8_m_contiguous: [["E0128", 3, 6]],
  E0128_fp8_output: [["E0128", 5, 6]],
  E0128_fp8_sm80: [["E0128", 3, 6]],
};

/** The checker's codes (E01xx) and the syntax error; E02xx belong to the passes. */
const FRONT_END_CODES = (Object.keys(DIAGNOSTIC_CODES) as DiagnosticCode[]).filter((c) =>
  c === "E0001" || c.startsWith("E01")
);

function badPrograms(): string[] {
  return [...Deno.readDirSync(new URL(`${BAD_DIR}/`, ROOT))]
    .filter((e) => e.isFile && e.name.endsWith(".gemm"))
    .map((e) => e.name.slice(0, -".gemm".length))
    .sort();
}

/** Renders a bad program's diagnostics, naming it by its path from the repository root. */
function render(name: string): { text: string; out: string; codes: string[] } {
  const file = `${BAD_DIR}/${name}.gemm`;
  const text = Deno.readTextFileSync(new URL(file, ROOT));
  const r = check(text, { file });
  assert.equal(r.kernels.length + r.diagnostics.length > 0, true);
  return {
    text,
    out: formatDiagnostics(r.diagnostics, text),
    codes: r.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`),
  };
}

for (const name of badPrograms()) {
  Deno.test(`diagnostics golden: ${name}`, () => {
    const { out, codes } = render(name);
    const goldenUrl = new URL(`${GOLDEN_DIR}/${name}.txt`, ROOT);
    if (UPDATE) {
      Deno.mkdirSync(new URL(`${GOLDEN_DIR}/`, ROOT), { recursive: true });
      Deno.writeTextFileSync(goldenUrl, out);
    }
    let golden: string;
    try {
      golden = Deno.readTextFileSync(goldenUrl);
    } catch {
      assert.fail(`No golden ${GOLDEN_DIR}/${name}.txt: run with UPDATE_GOLDEN=1 and review it`);
    }
    assert.equal(out, golden);
    const want = EXPECTED[name];
    assert.ok(want !== undefined, `${name} has no entry in EXPECTED`);
    assert.deepEqual(codes, want.map(([c, l, col]) => `${c} ${l}:${col}`));
    assert.ok(name.startsWith(`${want[0]![0]}_`), "the file name starts with its first code");
  });
}

Deno.test("diagnostics: every bad program has an expectation and vice versa", () => {
  assert.deepEqual(badPrograms(), Object.keys(EXPECTED).sort());
});

Deno.test("diagnostics: every front-end code has a golden", () => {
  const covered = new Set(Object.values(EXPECTED).flatMap((ds) => ds.map(([c]) => c)));
  const missing = FRONT_END_CODES.filter((c) => !covered.has(c));
  assert.deepEqual(missing, []);
});

Deno.test("diagnostics: every golden has a bad program", () => {
  const names = new Set(badPrograms());
  for (const e of Deno.readDirSync(new URL(`${GOLDEN_DIR}/`, ROOT))) {
    assert.ok(names.has(e.name.replace(/\.txt$/, "")), `stale golden ${e.name}`);
  }
});

Deno.test("diagnostics: the header, source line and caret agree with the span", () => {
  for (const name of badPrograms()) {
    const file = `${BAD_DIR}/${name}.gemm`;
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    const r = check(text, { file });
    for (const d of r.diagnostics) {
      assert.deepEqual(lineColumn(text, d.span.start), { line: d.line, column: d.column });
      const [header, srcLine, caretLine, ...rest] = renderDiagnostic(d, text).split("\n");
      assert.deepEqual(rest, [""], "three lines and a final newline");
      assert.equal(header, `${file}:${d.line}:${d.column}: error[${d.code}]: ${d.message}`);
      const gutter = `${d.line} | `;
      assert.equal(srcLine, gutter + text.split("\n")[d.line - 1]);
      // The caret is in the source line's column, and the marked text is the span's start.
      const caret = caretLine!.indexOf("^");
      assert.equal(caret - gutter.length + 1, d.column, name);
      const marked = caretLine!.slice(caret).length;
      const onLine = text.slice(d.span.start, d.span.end).split("\n")[0]!;
      assert.equal(marked, Math.max(1, onLine.length), name);
      // Messages read as STYLE.md asks: a capital letter (or a quoted name), no final period.
      assert.match(d.message, /^[A-Z"]/);
      assert.doesNotMatch(d.message, /\.$/);
    }
  }
});

Deno.test("diagnostics: the illegal type combination lists the legal ones", () => {
  const { out } = render("E0109_f16_bf16");
  for (
    const legal of [
      "f16 x f16 (accumulate f32 or f16)",
      "bf16 x bf16",
      "f32|tf32 x f32|tf32",
      "f64 x f64",
      "s8|u8 x s8|u8",
      "s4|u4 x s4|u4",
      "b1 x b1 (with popc)",
    ]
  ) {
    assert.ok(out.includes(legal), legal);
  }
});

Deno.test("diagnostics: other kernels of a file are still checked", () => {
  const text = Deno.readTextFileSync(new URL(`${BAD_DIR}/E0101_two_bad_kernels.gemm`, ROOT));
  const r = check(text);
  assert.deepEqual(r.kernels.map((k) => k.name), ["fine"]);
  assert.deepEqual(r.diagnostics.map((d) => d.code), ["E0101", "E0111"]);
});

Deno.test("diagnostics: file name defaults to <input>", () => {
  const r = check("kernel k {\n  A: f8[M]\n}\n");
  assert.equal(r.diagnostics[0]?.file, "<input>");
  assert.ok(
    formatDiagnostics(r.diagnostics, "kernel k {\n  A: f8[M]\n}\n").startsWith("<input>:2:6:"),
  );
});

Deno.test("renderDiagnostic: a tab before the span keeps the caret aligned", () => {
  const text = "kernel k {\n\tA: f8[M]\n}\n";
  const d = diagnostic("E0001", "Expected a dtype", { file: "t.gemm", text }, {
    start: 15,
    end: 17,
  });
  assert.equal(
    renderDiagnostic(d, text),
    "t.gemm:2:5: error[E0001]: Expected a dtype\n2 | \tA: f8[M]\n  | \t   ^~\n",
  );
});

Deno.test("renderDiagnostic: a span over several lines is underlined to its first line's end", () => {
  const text = "kernel k {\n  A: f16[M]\n}\n";
  const d = diagnostic("E0114", "No statement", { file: "t.gemm", text }, {
    start: 0,
    end: text.length,
  });
  assert.equal(
    renderDiagnostic(d, text),
    "t.gemm:1:1: error[E0114]: No statement\n1 | kernel k {\n  | ^~~~~~~~~~\n",
  );
});

Deno.test("renderDiagnostic: CRLF sources, wide line numbers, an empty span", () => {
  const text = "\r\n".repeat(11) + "  x y\r\n";
  const d = diagnostic("E0001", "Expected a kernel", { file: "t.gemm", text }, {
    start: 24,
    end: 24,
  });
  assert.equal(
    renderDiagnostic(d, text),
    "t.gemm:12:3: error[E0001]: Expected a kernel\n12 |   x y\n   |   ^\n",
  );
});

Deno.test("renderDiagnostic: a span at the end of input", () => {
  const text = "kernel k {";
  const d = diagnostic("E0001", 'Expected "}", found end of input', { file: "t.gemm", text }, {
    start: 10,
    end: 10,
  });
  assert.equal(
    renderDiagnostic(d, text),
    't.gemm:1:11: error[E0001]: Expected "}", found end of input\n1 | kernel k {\n  |           ^\n',
  );
});
