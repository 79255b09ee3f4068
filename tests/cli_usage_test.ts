/**
 * The CLI says what it does (issue 19, item 5), in process through
 * `main` (cli/main.ts) with the real files, and as a subprocess where the
 * environment matters (no CUDA driver): `compile --tune` prints the schedule
 * it chose; names `--size` and `--scalar` do not know, sizes fixed in the
 * source, zero sizes, a `--size` no stage uses, a missing `--ptxas-path`
 * are usage errors; `compile --emit json --size` checks alignments as
 * `simulate` does; kernels with every size fixed need no `--size`; `check`
 * reads every file and says "No kernel" for an empty one.
 *
 * @module
 */

import assert from "node:assert/strict";
import { main } from "../cli/main.ts";
import type { CliIO } from "../cli/options.ts";
import { compile } from "../compiler.ts";
import { printSchedule } from "../ir/print_gemm.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import { gemmWithEnv } from "./_cli.ts";

const ROOT_PATH = new URL("../", import.meta.url).pathname;

/** What an in-process run printed. */
interface Ran {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Runs `gemm ARGS...` in process, paths relative to the repository root. */
async function gemm(...args: string[]): Promise<Ran> {
  let out = "";
  let err = "";
  const at = (p: string) => p.startsWith("/") ? p : ROOT_PATH + p;
  const io: CliIO = {
    out: (s) => out += s,
    err: (s) => err += s,
    readFile: (p) => Deno.readTextFileSync(at(p)),
    writeFile: (p, t) =>
      typeof t === "string" ? Deno.writeTextFileSync(at(p), t) : Deno.writeFileSync(at(p), t),
  };
  const code = await main(args, io);
  return { code, out, err };
}

/** A usage error: exit 2, nothing on stdout, one line `gemm: ...` saying `says`. */
function assertUsage(r: Ran, says: RegExp, what: string): void {
  assert.equal(r.code, 2, `${what}: exit ${r.code}\n${r.err}`);
  assert.equal(r.out, "", what);
  assert.match(r.err, /^gemm: [^\n]+\n$/, what);
  assert.match(r.err, says, what);
}

Deno.test("compile --tune --size prints the schedule it chose, the library's, no dashes", async () => {
  const sizes = { M: 96, N: 2048, K: 512 };
  const arg = Object.entries(sizes).map(([k, v]) => `${k}=${v}`).join(",");
  for (const file of ["examples/dgemm.gemm", "examples/s8_gemm.gemm"]) {
    const r = await gemm("compile", file, "--tune", "--size", arg);
    assert.equal(r.code, 0, r.err);
    const line = r.out.split("\n").find((l) => l.startsWith("  schedule "));
    assert.ok(line !== undefined, r.out);
    assert.doesNotMatch(line, /\s-(,|$)/, `${file}: ${line}`);
    const lib = compile(Deno.readTextFileSync(ROOT_PATH + file), { file, sizeHints: sizes });
    assert.ok(lib.ok);
    assert.equal(line, `  schedule ${printSchedule(lib.kernels[0]!.planned.schedule)}`);
    // Without --tune the IR is the source's: the schedule is left to the passes.
    const plain = await gemm("compile", file);
    assert.match(plain.out, /^ {2}schedule threadblock -, warp -/m);
  }
});

Deno.test("--size and --scalar names no kernel knows are usage errors, with a suggestion", async () => {
  const cases: [string[], RegExp][] = [
    [
      ["simulate", "examples/hgemm.gemm", "--size", "M=64,N=64,K=64,Q=2"],
      /--size Q: no kernel has a dimension "Q": expected M, K or N$/m,
    ],
    [
      ["simulate", "examples/hgemm.gemm", "--size", "M=64,N=64,KK=64"],
      /--size KK: .*; did you mean "K"\?/,
    ],
    [
      ["compile", "examples/hgemm.gemm", "--emit", "json", "--size", "M=64,N=64,K=64,L=2"],
      /--size L: no kernel has a dimension "L"/,
    ],
    [
      ["compile", "examples/hgemm.gemm", "--tune", "--size", "M=64,NN=64,K=64"],
      /--size NN: .*did you mean "N"/,
    ],
    [
      ["simulate", "examples/hgemm.gemm", "--size", "M=64,N=64,K=64", "--scalar", "aplha=2"],
      /--scalar aplha: no kernel has a scalar "aplha": expected alpha or beta; did you mean "alpha"\?/,
    ],
    [
      ["simulate", "examples/s8_gemm.gemm", "--size", "M=64,N=64,K=64", "--scalar", "alpha=2"],
      /--scalar alpha: .*the kernels take none/,
    ],
  ];
  for (const [args, says] of cases) assertUsage(await gemm(...args), says, args.join(" "));
  // A name one kernel of the file knows is fine for the file.
  const two = await gemm("simulate", "examples/batched.gemm", "--size", "M=16,N=16,K=16,L=2");
  assert.equal(two.code, 0, two.err);
});

Deno.test("a --size for a dimension fixed in the source is a usage error", async () => {
  for (const cmd of [["simulate"], ["compile", "--emit", "json"]]) {
    assertUsage(
      await gemm(...cmd, "tests/testdata/fixed_sizes.gemm", "--size", "M=64"),
      /--size M: kernel "fixed_sizes" fixes M at 64 in the source; leave it out of --size/,
      cmd.join(" "),
    );
  }
});

Deno.test("--size M=0 is a usage error for every command that takes sizes", async () => {
  const cases = [
    ["simulate", "examples/hgemm.gemm", "--size", "M=0,N=64,K=64"],
    ["compile", "examples/hgemm.gemm", "--emit", "json", "--size", "M=64,N=64,K=0"],
    ["compile", "examples/hgemm.gemm", "--tune", "--size", "M=64,N=0,K=64"],
  ];
  for (const args of cases) {
    assertUsage(await gemm(...args), /--size [MNK]=0: every size must be at least 1/, args[1]!);
  }
});

Deno.test("compile --size: json checks alignments as simulate does; stages without sizes refuse it", async () => {
  const bad = ["examples/hgemm.gemm", "--size", "M=64,N=64,K=60"];
  const json = await gemm("compile", ...bad, "--emit", "json");
  const sim = await gemm("simulate", ...bad);
  assertUsage(json, /Tensor "A" declares align 8 but its leading dimension K=60/, "json");
  assertUsage(sim, /Tensor "A" declares align 8 but its leading dimension K=60/, "simulate");
  assert.equal(json.err, sim.err);
  // The same sizes with --tune only choose the schedule: the kernel is correct for any size.
  const tuned = await gemm("compile", ...bad, "--tune", "--emit", "ptx");
  assert.equal(tuned.code, 0, tuned.err);
  for (const emit of ["ir", "kernel-ir", "ptx"]) {
    assertUsage(
      await gemm("compile", "examples/hgemm.gemm", "--emit", emit, "--size", "M=64,N=64,K=64"),
      new RegExp(`--size applies to --emit json and to --tune; --emit ${emit} takes no sizes`),
      emit,
    );
  }
  const good = await gemm(
    "compile",
    "examples/hgemm.gemm",
    "--emit",
    "json",
    "--size",
    "M=64,N=64,K=64",
  );
  assert.equal(good.code, 0, good.err);
  const lib = compile(Deno.readTextFileSync(ROOT_PATH + "examples/hgemm.gemm")).kernels[0]!;
  assert.deepEqual(
    JSON.parse(good.out).kernels[0],
    JSON.parse(JSON.stringify(kernelManifest(lib.gemm, lib.kernel, { M: 64, N: 64, K: 64 }))),
  );
});

Deno.test("compile --ptxas-path that does not exist: exit 2, no fall-back to the PATH", async () => {
  const r = await gemm("compile", "examples/hgemm.gemm", "--ptxas-path", "/nonexistent/ptxas");
  assertUsage(r, /--ptxas-path "\/nonexistent\/ptxas": no such file/, "ptxas-path");
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_cli_" });
  try {
    assertUsage(
      await gemm("compile", "examples/hgemm.gemm", "--ptxas", "--ptxas-path", dir),
      /no such file/,
      "a directory",
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a kernel whose sizes are all fixed simulates without --size; others still need it", async () => {
  const r = await gemm("simulate", "tests/testdata/fixed_sizes.gemm", "--seed", "7");
  assert.equal(r.code, 0, r.err);
  assert.match(
    r.out,
    /^fixed_sizes: AGREES with the reference \(every size fixed in the source; grid 1x1x1; /,
  );
  assert.match(r.out, /error: 0 of 3072 elements over the bound/);
  const json = await gemm("compile", "tests/testdata/fixed_sizes.gemm", "--emit", "json");
  assert.equal(json.code, 0, json.err);
  assertUsage(
    await gemm("simulate", "examples/hgemm.gemm"),
    /simulate: --size is required: kernel "hgemm" has runtime dimensions M, K, N/,
    "hgemm",
  );
});

Deno.test("run without --size on a fixed kernel goes as far as the driver", async () => {
  const none = { GEMMC_LIBCUDA: "/nonexistent/libcuda.so.1" };
  const r = await gemmWithEnv(["run", "tests/testdata/fixed_sizes.gemm"], none);
  // Past every usage check: the missing driver (exit 1) is what stops it.
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /^gemm: No CUDA driver: /);
  const sized = await gemmWithEnv(["run", "examples/hgemm.gemm"], none);
  assert.equal(sized.code, 2, sized.stderr);
  assert.match(sized.stderr, /--size is required/);
});

Deno.test("check: an empty file says No kernel; every file is checked even after a missing one", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_cli_" });
  try {
    const empty = `${dir}/empty.gemm`;
    Deno.writeTextFileSync(empty, "// only a comment\n");
    const alone = await gemm("check", empty);
    assert.deepEqual(alone, { code: 2, out: "", err: `gemm: No kernel in "${empty}"\n` });
    const compiled = await gemm("compile", empty);
    assert.equal(compiled.err, alone.err);
    const r = await gemm(
      "check",
      `${dir}/missing.gemm`,
      "examples/hgemm.gemm",
      "tests/testdata/bad/E0101_unknown_tensor.gemm",
      empty,
    );
    assert.equal(r.code, 2);
    assert.equal(r.out, "");
    const golden = Deno.readTextFileSync(
      ROOT_PATH + "tests/golden/diagnostics/E0101_unknown_tensor.txt",
    );
    assert.equal(
      r.err,
      `gemm: Cannot read "${dir}/missing.gemm": no such file\n` + golden +
        `gemm: No kernel in "${empty}"\n`,
    );
    // Diagnostics alone: exit 1.
    const one = await gemm(
      "check",
      "examples/hgemm.gemm",
      "tests/testdata/bad/E0101_unknown_tensor.gemm",
    );
    assert.equal(one.code, 1);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("--pdl-early: without --pdl, empty names, an output or no tensor are usage errors", async () => {
  const file = "examples/bf16_gemm.gemm";
  const cases: [string[], RegExp][] = [
    [["--pdl-early", "W"], /--pdl-early needs --pdl/],
    [["--pdl", "--pdl-early", "W,"], /Malformed --pdl-early "W,"/],
    [["--pdl", "--pdl-early", "Y"], /--pdl-early: "Y" is a kernel's output/],
    [["--pdl", "--pdl-early", "Wt"], /--pdl-early: "Wt" is no input tensor/],
  ];
  for (const cmd of ["compile", "simulate"]) {
    for (const [args, says] of cases) {
      const size = cmd === "simulate" ? ["--size", "Rows=7,Cols=40,Inner=24"] : [];
      const r = await gemm(cmd, file, "--target", "sm90", ...size, ...args);
      assertUsage(r, says, `${cmd} ${args.join(" ")}`);
    }
  }
  // Named right, the kernel reads W before its wait and simulates with no hazard.
  const ok = await gemm(
    "simulate",
    file,
    "--target",
    "sm90",
    "--size",
    "Rows=7,Cols=40,Inner=24",
    "--pdl",
    "--pdl-early",
    "W",
  );
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out, /hazards: none/);
  assert.doesNotMatch(ok.err, /note/);
});

Deno.test("--pdl-trigger: last-copy moves the trigger before the drain; misuses are usage errors", async () => {
  const file = "examples/bf16_gemm.gemm";
  const decode = ["--tune", "--sms", "132", "--size", "Rows=16,Cols=4096,Inner=4096"];
  for (const cmd of ["compile", "simulate"]) {
    const size = cmd === "simulate" ? ["--size", "Rows=7,Cols=40,Inner=24"] : [];
    for (
      const [args, says] of [
        [["--pdl-trigger", "last-copy"], /--pdl-trigger needs --pdl/],
        [
          ["--pdl", "--pdl-trigger", "soon"],
          /--pdl-trigger must be "drain" or "last-copy", got soon/,
        ],
      ] as const
    ) {
      const r = await gemm(cmd, file, "--target", "sm90", ...size, ...args);
      assertUsage(r, says, `${cmd} ${args.join(" ")}`);
    }
  }
  const at = async (...extra: string[]) => {
    const r = await gemm("compile", file, "--target", "sm90", ...decode, "--pdl", ...extra);
    assert.equal(r.code, 0, r.err);
    return r.out.split("\n").map((l) => l.trim());
  };
  const drainOrder = (ptx: string[]): [number, number] => [
    ptx.indexOf("griddepcontrol.launch_dependents;"),
    ptx.lastIndexOf("cp.async.wait_group 0;"),
  ];
  const [dLaunch, dDrain] = drainOrder(await at("--emit", "ptx"));
  assert.ok(dLaunch > dDrain && dDrain > 0, `${dLaunch} ${dDrain}`);
  const [lLaunch, lDrain] = drainOrder(await at("--emit", "ptx", "--pdl-trigger", "last-copy"));
  assert.ok(lLaunch > 0 && lLaunch < lDrain, `${lLaunch} ${lDrain}`);
  assert.deepEqual(
    await at("--emit", "ptx", "--pdl-trigger", "drain"),
    await at("--emit", "ptx"),
  );
});

Deno.test("--pdl-early: a name the kernel still reads after its wait is a note, with why", async () => {
  const compileAt = (target: string, ...extra: string[]) =>
    gemm("compile", "examples/bf16_gemm.gemm", "--target", target, "--emit", "json", ...extra);
  const tune = (
    rows: number,
  ) => ["--tune", "--sms", "132", "--size", `Rows=${rows},Cols=4096,Inner=4096`];
  // s8's 128x32x128 at M = 128: B's box a fifth of the stage (passes/lower/early.ts).
  const fifth = await gemm(
    "compile",
    "examples/s8_gemm.gemm",
    "--target",
    "sm90",
    "--emit",
    "json",
    "--pdl",
    "--pdl-early",
    "B",
    "--tune",
    "--sms",
    "132",
    "--size",
    "M=128,N=4096,K=4096",
  );
  assert.equal(fifth.code, 0, fifth.err);
  assert.match(
    fifth.err,
    /note: --pdl-early B: kernel \w+ reads it as without the option: its box is 0\.20 of a stage, under the 0\.25/,
  );
  const third = await compileAt("sm90", "--pdl", "--pdl-early", "W", ...tune(64));
  assert.equal(third.code, 0, third.err);
  assert.equal(third.err, "");
  const streamed = await compileAt("sm90", "--pdl", "--pdl-early", "W", ...tune(16));
  assert.equal(streamed.code, 0, streamed.err);
  assert.match(streamed.err, /note: --pdl-early W: .*its copies stream with evict_first/);
  const sm80 = await compileAt("sm80", "--pdl", "--pdl-early", "W");
  assert.match(sm80.err, /note: --pdl-early W: .*sm80 has no griddepcontrol/);
  const moe = await gemm(
    "compile",
    "examples/moe.gemm",
    "--target",
    "sm90",
    "--pdl",
    "--pdl-early",
    "W",
  );
  assert.equal(moe.code, 0, moe.err);
  assert.match(
    moe.err,
    /note: --pdl-early W: .*a grouped kernel reads its problem table, and so every input, after the wait/,
  );
});
