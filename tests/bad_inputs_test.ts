/**
 * Every input of `tests/testdata/bad_inputs/` (found by an independent fuzzer
 * of the API and the CLI at 49e1d47; README.txt there says what each did then:
 * exit 3, out of memory, a hang, a wrong position or a false verdict) ends now
 * in a diagnostic at the right place, an exit 2 naming the problem, or the
 * right answer. One table, one test per row: the file, the command form, the
 * exit code and what the output must hold.
 *
 * The `.sh` scripts become the CLI arguments they ran; the `api_*.ts.txt`
 * scripts (kept as text: they are not lint-clean) become in-process calls of
 * {@link API}.
 */

import assert from "node:assert/strict";
import { gemm } from "./_cli.ts";
import { compile } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { randomArgs } from "../harness/inputs.ts";
import { runGemm } from "../harness/run_gemm.ts";
import type { DiagnosticCode } from "../dsl/diagnostics.ts";

const DIR = "tests/testdata/bad_inputs";
const ROOT = new URL("../", import.meta.url);

/** How a row runs its file. */
type Form =
  | "check" // gemm check FILE
  | "compile" // gemm compile FILE --emit ptx
  | "simulate" // gemm simulate FILE ARGS...
  | "cli" // gemm ARGS... (the file is a script that ran these)
  | "api"; // API[ARGS[0]](), in process; its message is the output

/** One bad input, and what it must give now. */
interface Row {
  readonly file: string;
  readonly form: Form;
  readonly args?: readonly string[];
  /** The exit code (for `api`, 2: it must throw; 0: it must return). */
  readonly exit: number;
  /** The diagnostic's code, line and column, where there is one. */
  readonly at?: readonly [DiagnosticCode, number, number];
  /** A fragment the output (stderr and stdout, or the thrown message) must hold. */
  readonly fragment: string;
}

const HGEMM = "examples/hgemm.gemm";
const SIZES = { M: 16, N: 16, K: 32 };

/** The in-process calls of the `api_*` scripts. */
const API: Readonly<Record<string, () => unknown>> = {
  // sm90 became a target (issue 23): the script's call now compiles, for sm_90a.
  "target sm90": () => {
    const r = compile(Deno.readTextFileSync(new URL(HGEMM, ROOT)), { target: "sm90" });
    if (!r.ok || !r.kernels[0]!.ptx.includes(".target sm_90a")) throw new Error("not sm_90a");
  },
  "simulate M=2^31-1": () => simulateGemm(hgemm(), { M: 2 ** 31 - 1, N: 8, K: 16 }),
  "simulate alpha=NaN": () => simulateGemm(hgemm(), SIZES, { scalars: { alpha: NaN } }),
  "run with alpha=NaN": () => {
    const ck = hgemm();
    const args = randomArgs(ck.gemm, SIZES, 1);
    args.scalars.set("alpha", NaN);
    return runGemm(ck, SIZES, { cuda: unreachableDriver, args, iters: 0 });
  },
  "run with check bogus": () =>
    runGemm(hgemm(), SIZES, { cuda: unreachableDriver, check: "bogus" as "ref", iters: 0 }),
  "simulate maxWork NaN": () => simulateGemm(hgemm(), SIZES, { maxWork: NaN }),
  "compile sms NaN": () => compile(Deno.readTextFileSync(new URL(HGEMM, ROOT)), { sms: NaN }),
  "compile size hint -1": () =>
    compile(Deno.readTextFileSync(new URL(HGEMM, ROOT)), { sizeHints: { M: -1 } }),
};

const ROWS: readonly Row[] = [
  { file: "popc_in_epilogue.gemm", form: "check", exit: 1, at: ["E0116", 6, 33], fragment: "popc" },
  { file: "deep_parens_300.gemm", form: "check", exit: 1, at: ["E0002", 5, 77], fragment: "64" },
  { file: "deep_relu_200.gemm", form: "check", exit: 1, at: ["E0002", 5, 337], fragment: "64" },
  { file: "deep_neg_1000.gemm", form: "check", exit: 1, at: ["E0002", 5, 141], fragment: "128" },
  { file: "long_sum_3000.gemm", form: "check", exit: 1, at: ["E0002", 5, 539], fragment: "128" },
  {
    file: "split_k_4294967297.gemm",
    form: "check",
    exit: 1,
    at: ["E0112", 7, 13],
    fragment: "limit of 64",
  },
  {
    file: "unicode_kernel_name.gemm",
    form: "compile",
    exit: 1,
    at: ["E0003", 1, 8],
    fragment: "not ASCII",
  },
  {
    file: "s32_literal_overflow.gemm",
    form: "compile",
    exit: 1,
    at: ["E0124", 5, 33],
    fragment: "2147483647",
  },
  { file: "split_k_huge.gemm", form: "compile", exit: 1, at: ["E0112", 7, 13], fragment: "64" },
  { file: "split_k_oom.gemm", form: "check", exit: 1, at: ["E0112", 7, 13], fragment: "64" },
  {
    file: "slow_long_identifier.sh",
    form: "check",
    exit: 1,
    // The 2,000,000-character source is past the source length limit first,
    // at character 262144 (line 4 starts at offset 45).
    at: ["E0002", 4, 262144 - 45 + 1],
    fragment: "limit of 262144",
  },
  {
    file: "simulate_unbounded_size.sh",
    form: "cli",
    args: ["simulate", HGEMM, "--size", "M=16384,N=16384,K=64"],
    exit: 2,
    fragment: "exceed the limit of 2147483648",
  },
  {
    file: "kernel_name_in_comment.gemm",
    form: "check",
    exit: 1,
    at: ["E0202", 2, 3],
    fragment: "not divisible",
  },
  {
    file: "simulate_size_2147483647.sh",
    form: "cli",
    args: ["simulate", HGEMM, "--size", "M=2147483647,N=8,K=16"],
    exit: 2,
    fragment: "exceed the limit of 2147483648",
  },
  {
    file: "compile_output_missing_dir.sh",
    form: "cli",
    args: ["compile", HGEMM, "--emit", "ptx", "-o", "/nonexistent/dir/out.ptx"],
    exit: 2,
    fragment: 'Cannot write "/nonexistent/dir/out.ptx"',
  },
  {
    file: "compile_output_missing_dir.sh",
    form: "cli",
    args: ["compile", HGEMM, "--emit", "ptx", "-o", "/"],
    exit: 2,
    fragment: 'Cannot write "/"',
  },
  {
    file: "batch_bias_col.gemm",
    form: "check",
    exit: 1,
    at: ["E0117", 4, 19],
    fragment: "batched vector",
  },
  {
    file: "epilogue_cancellation_bound.gemm",
    form: "simulate",
    args: ["--size", "M=64,N=64,K=16"],
    exit: 0,
    fragment: "AGREES",
  },
  {
    file: "f16_overflow_inf_mismatch.gemm",
    form: "simulate",
    args: ["--size", "M=16,N=16,K=16"],
    exit: 0,
    fragment: "AGREES",
  },
  { file: "inf_literal.gemm", form: "check", exit: 1, at: ["E0124", 5, 13], fragment: "finite" },
  {
    file: "api_target_sm90.ts.txt",
    form: "api",
    args: ["target sm90"],
    exit: 0,
    fragment: "returned",
  },
  // The CLI's side of the API script's scalars: --scalar out of its dtype is exit 2.
  ...([
    [HGEMM, "alpha=-1e39", 'Scalar "alpha" is -1e+39: a finite f32 is needed'],
    [HGEMM, "alpha=1e999", 'Malformed --scalar "alpha=1e999"'],
    ["examples/u8_gemm.gemm", "shift=4294967297", "an s32 scalar needs a 32-bit integer"],
    ["examples/u8_gemm.gemm", "shift=1.5", "an s32 scalar needs a 32-bit integer"],
  ] as const).map(([program, scalar, fragment]): Row => ({
    file: "api_runtime.ts.txt",
    form: "cli",
    args: ["simulate", program, "--size", "M=16,N=16,K=32", "--scalar", scalar],
    exit: 2,
    fragment,
  })),
  ...([
    ["simulate M=2^31-1", "exceed the limit of 2147483648"],
    ["simulate alpha=NaN", 'Scalar "alpha" is NaN'],
    ["run with alpha=NaN", 'Scalar "alpha" is NaN'],
    ["run with check bogus", 'must be ref, sim, none, got "bogus"'],
    ["simulate maxWork NaN", "TypeError: Option maxWork"],
    ["compile sms NaN", "TypeError: Option sms"],
    ["compile size hint -1", "TypeError: Size hint M=-1"],
  ] as const).map(([call, fragment]): Row => ({
    file: "api_runtime.ts.txt",
    form: "api",
    args: [call],
    exit: 2,
    fragment,
  })),
];

function hgemm() {
  const r = compile(Deno.readTextFileSync(new URL(HGEMM, ROOT)), { file: HGEMM });
  assert.ok(r.ok);
  return r.kernels[0]!;
}

/** A driver that fails the test if anything reaches it. */
function unreachableDriver(): never {
  throw new Error("driver reached");
}

/** The program of `slow_long_identifier.sh`: an output named by 1,000,000 characters. */
function longIdentifierProgram(): string {
  const n = "D" + "x".repeat(1_000_000);
  return `kernel k {\n  A: f16[M, K]\n  B: f16[K, N] col\n  ${n}: f32[M, N]\n` +
    `  ${n}[m, n] = A[m, k] * B[k, n]\n}\n`;
}

/** Runs a row: its exit code and its output. */
async function run(row: Row): Promise<{ exit: number; out: string; file: string }> {
  let file = `${DIR}/${row.file}`;
  if (row.form === "api") {
    try {
      API[row.args![0]!]!();
      return { exit: 0, out: "returned", file };
    } catch (e) {
      return { exit: 2, out: `${(e as Error).name}: ${(e as Error).message}`, file };
    }
  }
  if (row.file.endsWith(".sh") && row.form !== "cli") {
    file = await Deno.makeTempFile({ suffix: ".gemm" });
    await Deno.writeTextFile(file, longIdentifierProgram());
  }
  const args = row.form === "check"
    ? ["check", file]
    : row.form === "compile"
    ? ["compile", file, "--emit", "ptx"]
    : row.form === "simulate"
    ? ["simulate", file, ...row.args!]
    : [...row.args!];
  const r = await gemm(...args);
  if (file !== `${DIR}/${row.file}`) await Deno.remove(file);
  return { exit: r.code, out: r.stderr + r.stdout, file };
}

for (const row of ROWS) {
  const what = row.form === "api" || row.form === "cli"
    ? row.args!.join(" ")
    : [row.form, ...(row.args ?? [])].join(" ");
  Deno.test(`bad input ${row.file}: ${what}`, async () => {
    const r = await run(row);
    assert.equal(r.exit, row.exit, r.out);
    assert.ok(r.out.includes(row.fragment), `want "${row.fragment}" in:\n${r.out.slice(0, 2000)}`);
    assert.doesNotMatch(r.out, /internal error/);
    if (row.at !== undefined) {
      const [code, line, col] = row.at;
      assert.ok(
        r.out.includes(`${r.file}:${line}:${col}: error[${code}]`),
        `want ${r.file}:${line}:${col}: error[${code}] in:\n${r.out.slice(0, 2000)}`,
      );
    }
  });
}

Deno.test("bad inputs: every file of the folder has a row", () => {
  const files = [...Deno.readDirSync(new URL(`../${DIR}`, import.meta.url))]
    .map((e) => e.name).filter((n) => n !== "README.txt").sort();
  assert.deepEqual([...new Set(ROWS.map((r) => r.file))].sort(), files);
});
