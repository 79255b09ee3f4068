/**
 * The CLI end to end: `deno run -A cli.ts ...` from the repository root, as a
 * user runs it, checking exit codes, stdout and stderr exactly where the
 * output is ours, and never a stack trace.
 *
 * The golden outputs are shared with tests/diagnostics_test.ts and
 * tests/gemm_ir_test.ts: the CLI must print exactly what the library renders.
 */

import assert from "node:assert/strict";
import { assertNoStackTrace, gemm, gemmAll, type Run } from "./_cli.ts";
import { compile, ptxModule } from "../compiler.ts";
import { DEFAULT_TARGET, parseTarget, TARGET_NAMES, targetInfo } from "../ir/target.ts";

const ROOT = new URL("../", import.meta.url);
const ROOT_PATH = ROOT.pathname;

const dec = new TextDecoder();

/** A usage error: exit 2, nothing on stdout, one line on stderr starting "gemm: ". */
function assertUsageError(r: Run, what: string, says?: RegExp): void {
  assert.equal(r.code, 2, `${what}: exit ${r.code}\n${r.stderr}`);
  assert.equal(r.stdout, "", what);
  assert.match(r.stderr, /^gemm: [^\n]+\n$/, `${what}: ${JSON.stringify(r.stderr)}`);
  if (says !== undefined) assert.match(r.stderr, says, what);
  assertNoStackTrace(r, what);
}

function names(dir: string, ext: string): string[] {
  return [...Deno.readDirSync(new URL(`${dir}/`, ROOT))]
    .filter((e) => e.isFile && e.name.endsWith(ext))
    .map((e) => e.name.slice(0, -ext.length))
    .sort();
}

const EXAMPLES = names("examples", ".gemm");
const BAD = names("tests/testdata/bad", ".gemm");

function read(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

Deno.test("cli: check on every example exits 0 and prints nothing", async () => {
  const r = await gemm("check", ...EXAMPLES.map((n) => `examples/${n}.gemm`));
  assert.deepEqual(r, { code: 0, stdout: "", stderr: "" });
});

Deno.test("cli: check on each bad program exits 1 and prints exactly its diagnostics", async () => {
  const runs = await gemmAll(BAD.map((n) => ["check", `tests/testdata/bad/${n}.gemm`]));
  BAD.forEach((name, i) => {
    const r = runs[i]!;
    const file = `tests/testdata/bad/${name}.gemm`;
    assert.equal(r.code, 1, `${name}: exit ${r.code}\n${r.stderr}`);
    assert.equal(r.stdout, "", name);
    assert.equal(r.stderr, read(`tests/golden/diagnostics/${name}.txt`), name);
    // FILE:LINE:COL: error[CODE]: message, the source line, the caret; nothing else.
    const lines = r.stderr.split("\n");
    assert.equal(lines.pop(), "");
    assert.equal(lines.length % 3, 0, name);
    for (let j = 0; j < lines.length; j += 3) {
      assert.match(lines[j]!, new RegExp(`^${file}:\\d+:\\d+: error\\[E\\d{4}\\]: \\S`), name);
      assert.match(lines[j + 1]!, /^\d+ \| /, name);
      assert.match(lines[j + 2]!, /^ +\| [ \t]*\^~*$/, name);
    }
    assertNoStackTrace(r, name);
  });
});

Deno.test("cli: check on good and bad files together reports the bad and exits 1", async () => {
  const r = await gemm(
    "check",
    "examples/hgemm.gemm",
    "tests/testdata/bad/E0109_f16_bf16.gemm",
    "examples/dgemm.gemm",
    "tests/testdata/bad/E0001_bad_dtype.gemm",
  );
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.equal(
    r.stderr,
    read("tests/golden/diagnostics/E0109_f16_bf16.txt") +
      read("tests/golden/diagnostics/E0001_bad_dtype.txt"),
  );
});

Deno.test("cli: compile --emit ir prints the GEMM IR of every example", async () => {
  const runs = await gemmAll(
    EXAMPLES.map((n) => ["compile", `examples/${n}.gemm`, "--emit", "ir"]),
  );
  EXAMPLES.forEach((name, i) => {
    const r = runs[i]!;
    assert.equal(r.code, 0, `${name}: ${r.stderr}`);
    assert.equal(r.stderr, "", name);
    assert.equal(r.stdout, read(`tests/golden/ir/${name}.ir`), name);
  });
});

Deno.test("cli: compile emits the IR by default and --emit=ir is accepted", async () => {
  const golden = read("tests/golden/ir/hgemm.ir");
  const [plain, eq] = await gemmAll([
    ["compile", "examples/hgemm.gemm"],
    ["compile", "--emit=ir", "examples/hgemm.gemm"],
  ]);
  assert.deepEqual(plain, { code: 0, stdout: golden, stderr: "" });
  assert.deepEqual(eq, { code: 0, stdout: golden, stderr: "" });
});

Deno.test("cli: compile on a bad program exits 1 with its diagnostics", async () => {
  const r = await gemm("compile", "tests/testdata/bad/E0104_index_two_dims.gemm", "--emit", "ir");
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.equal(r.stderr, read("tests/golden/diagnostics/E0104_index_two_dims.txt"));
});

Deno.test("cli: compile --kernel picks one kernel; an unknown one is a usage error", async () => {
  const [one, none] = await gemmAll([
    ["compile", "examples/two_kernels.gemm", "--kernel", "gate_silu"],
    ["compile", "examples/two_kernels.gemm", "--kernel", "nope"],
  ]);
  assert.equal(one!.code, 0);
  assert.match(one!.stdout, /^gemm @gate_silu target sm80 \{\n/);
  assert.doesNotMatch(one!.stdout, /proj_gelu/);
  assert.ok(read("tests/golden/ir/two_kernels.ir").endsWith(one!.stdout));
  assertUsageError(none!, "--kernel nope", /"nope"/);
});

Deno.test("cli: compile --tune --size --sms gives the schedule run --tune would, as a library call", async () => {
  // M=128, N=K=8192 on 132 SMs: SIMT f32 splits K 4 ways (bench/NOTES.md 43).
  const args = ["--tune", "--size", "M=128,N=8192,K=8192", "--sms", "132"];
  const r = await gemm("compile", "bench/kernels/f32.gemm", ...args, "--emit", "json");
  assert.equal(r.code, 0, r.stderr);
  const [k] = JSON.parse(r.stdout).kernels;
  assert.equal(k.gridPlan.splitK, 4);
  assert.equal(k.gridPlan.tileM, 128);
  const ptx = await gemm("compile", "bench/kernels/f32.gemm", ...args, "--emit", "ptx");
  assert.equal(ptx.code, 0, ptx.stderr);
  const lib = compile(read("bench/kernels/f32.gemm"), {
    file: "bench/kernels/f32.gemm",
    sizeHints: { M: 128, N: 8192, K: 8192 },
    sms: 132,
  });
  assert.ok(lib.ok);
  assert.equal(ptx.stdout, ptxModule(lib.kernels));
  // Without --tune the sizes only shape the json grid: no split.
  const plain = await gemm(
    "compile",
    "bench/kernels/f32.gemm",
    "--size",
    "M=128,N=8192,K=8192",
    "--emit",
    "json",
  );
  assert.equal(JSON.parse(plain.stdout).kernels[0].gridPlan.splitK, 1);
  assertUsageError(
    await gemm("compile", "bench/kernels/f32.gemm", "--tune"),
    "--tune alone",
    /--tune needs --size/,
  );
  assertUsageError(
    await gemm("compile", "bench/kernels/f32.gemm", ...args.slice(0, 3), "--sms", "0"),
    "--sms 0",
    /Malformed --sms/,
  );
});

Deno.test("cli: compile --target overrides the target, by name or PTX spelling", async () => {
  const spellings = TARGET_NAMES.flatMap((t) => [t, targetInfo(t).ptx]);
  const runs = await gemmAll(
    spellings.map((s) => ["compile", "examples/hgemm.gemm", "--target", s]),
  );
  const golden = read("tests/golden/ir/hgemm.ir");
  assert.match(golden, new RegExp(` target ${DEFAULT_TARGET} `));
  runs.forEach((r, i) => {
    const want = golden.replace(`target ${DEFAULT_TARGET}`, `target ${parseTarget(spellings[i]!)}`);
    assert.deepEqual(r, { code: 0, stdout: want, stderr: "" }, spellings[i]);
  });
});

Deno.test("cli: compile -o OUT writes the file and prints nothing", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_cli_" });
  try {
    const out = `${dir}/two.ir`;
    const out2 = `${dir}/h.ir`;
    const [a, b] = await gemmAll([
      ["compile", "examples/two_kernels.gemm", "-o", out],
      ["compile", "examples/hgemm.gemm", "--emit", "ir", "--output", out2],
    ]);
    assert.deepEqual(a, { code: 0, stdout: "", stderr: "" });
    assert.deepEqual(b, { code: 0, stdout: "", stderr: "" });
    assert.equal(Deno.readTextFileSync(out), read("tests/golden/ir/two_kernels.ir"));
    assert.equal(Deno.readTextFileSync(out2), read("tests/golden/ir/hgemm.ir"));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("cli: compile -o into a missing directory, a directory or a full device exits 2, one line", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_cli_" });
  try {
    const cases: [string, RegExp][] = [
      [`${dir}/missing/out.ptx`, /no such directory/],
      [dir, /is a directory/],
      ...(Deno.build.os === "linux" ? [["/dev/full", /no space left/] as [string, RegExp]] : []),
    ];
    const runs = await gemmAll(cases.map(([o]) => ["compile", "examples/hgemm.gemm", "-o", o]));
    cases.forEach(([o, why], i) => {
      const r = runs[i]!;
      assertNoStackTrace(r, o);
      assert.equal(r.code, 2, `${o}: exit ${r.code}\n${r.stderr}`);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, new RegExp(`^gemm: Cannot write "${o}": [^\n]+\n$`));
      assert.match(r.stderr, why);
    });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("cli: later stages either work or say clearly that they are not available", async () => {
  // The PTX backend, the kernel IR and the passes are arriving: accept 0 (it works) or 2 (a
  // one-line "not available" message), never a crash.
  const cases = [
    ["compile", "examples/hgemm.gemm", "--emit", "ptx"],
    ["compile", "examples/hgemm.gemm", "--emit", "kernel-ir"],
    ["compile", "examples/hgemm.gemm", "--emit", "json"],
    ["compile", "examples/hgemm.gemm", "--dump-after", "all"],
  ];
  const runs = await gemmAll(cases);
  runs.forEach((r, i) => {
    const what = cases[i]!.join(" ");
    assert.ok(r.code === 0 || r.code === 2, `${what}: exit ${r.code}\n${r.stderr}`);
    assertNoStackTrace(r, what);
    if (r.code === 2) assertUsageError(r, what);
    else assert.notEqual(r.stdout + r.stderr, "", what);
  });
});

Deno.test("cli: bad usage exits 2 with one line and no stack trace", async () => {
  const cases: [string[], RegExp][] = [
    [["frobnicate"], /Unknown command "frobnicate"/],
    [["check"], /no input file/],
    [["compile"], /no input file/],
    [["compile", "examples/hgemm.gemm", "examples/dgemm.gemm"], /one file at a time/],
    [["compile", "examples/hgemm.gemm", "--emit", "asm"], /Unknown --emit "asm"/],
    [["compile", "examples/hgemm.gemm", "--target", "sm70"], /Unknown target "sm70"/],
    [["check", "examples/hgemm.gemm", "--target", "sm_70"], /Unknown target "sm_70"/],
    [["compile", "examples/hgemm.gemm", "--bogus"], /bogus/],
    [["check", "--emit", "ir", "examples/hgemm.gemm"], /emit/],
    [["compile", "examples/hgemm.gemm", "--kernel"], /kernel/],
  ];
  const runs = await gemmAll(cases.map(([a]) => a));
  runs.forEach((r, i) => assertUsageError(r, cases[i]![0].join(" "), cases[i]![1]));
});

Deno.test("cli: no arguments prints the help and exits 2", async () => {
  const r = await gemm();
  assert.equal(r.code, 2);
  assert.match(r.stdout, /Usage: gemm <command>/);
  assertNoStackTrace(r, "no arguments");
});

Deno.test("cli: --help for each command exits 0", async () => {
  const cases = [
    ["--help"],
    ["-h"],
    ["help"],
    ["check", "--help"],
    ["check", "-h"],
    ["compile", "--help"],
    ["compile", "-h"],
  ];
  const runs = await gemmAll(cases);
  runs.forEach((r, i) => {
    const what = cases[i]!.join(" ");
    assert.equal(r.code, 0, what);
    assert.equal(r.stderr, "", what);
    assert.match(r.stdout, /Usage: gemm /, what);
  });
  assert.match(runs[0]!.stdout, /check FILE\.\.\./);
  assert.match(runs[0]!.stdout, /compile FILE/);
  assert.match(runs[3]!.stdout, /Usage: gemm check FILE\.\.\./);
  for (const opt of ["--kernel", "--emit", "--dump-after", "--target", "-o, --output"]) {
    assert.ok(runs[5]!.stdout.includes(opt), opt);
  }
});

Deno.test("cli: a missing file exits 2 with one line", async () => {
  const [c, k] = await gemmAll([
    ["check", "examples/no_such_file.gemm"],
    ["compile", "no/such/dir/x.gemm"],
  ]);
  assertUsageError(
    c!,
    "check missing",
    /^gemm: Cannot read "examples\/no_such_file\.gemm": no such file\n$/,
  );
  assertUsageError(k!, "compile missing", /"no\/such\/dir\/x\.gemm"/);
});

Deno.test("cli: deno task gemm runs the CLI", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "gemm", "check", "examples/hgemm.gemm"],
    cwd: ROOT_PATH,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, dec.decode(out.stderr));
  assert.equal(dec.decode(out.stdout), "");
});
