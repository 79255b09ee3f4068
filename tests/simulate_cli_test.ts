/**
 * `gemm simulate` end to end, as a user runs it (`deno run -A cli.ts simulate
 * ...` from the repository root): every example agrees with the reference at
 * sizes that are not multiples of the tile (batched with L=3), the align-1
 * example at M=77 N=45 K=33, `--json` parses, `--seed` changes the inputs, and
 * bad sizes are usage errors (exit 2, one line, no stack trace).
 */

import assert from "node:assert/strict";
import { assertNoStackTrace, gemm, gemmAll, type Run } from "./_cli.ts";
import { examples, isGroupedExample } from "./_examples.ts";

const ROOT_PATH = new URL("../", import.meta.url).pathname;

/** Example files, as paths from the repository root; grouped ones take --groups, not --size
 * (tests/grouped_test.ts runs them). */
function exampleFiles(): string[] {
  return examples().filter((n) => !isGroupedExample(n)).map((n) => `examples/${n}.gemm`);
}

/** Kernel names declared in a file. */
function kernelNames(file: string): string[] {
  const text = Deno.readTextFileSync(`${ROOT_PATH}${file}`);
  return [...text.matchAll(/^\s*kernel\s+([A-Za-z_][A-Za-z0-9_]*)/gm)].map((m) => m[1]!);
}

Deno.test("simulate: every example agrees at M=80,N=72,K=256(,L=3); align 1 at M=77,N=45,K=33", async () => {
  const files = exampleFiles();
  const align1 = files.filter((f) => /\balign 1\b/.test(Deno.readTextFileSync(`${ROOT_PATH}${f}`)));
  assert.ok(align1.length > 0, "no align-1 example");
  const cases = [
    // L only for batched kernels: a size no kernel of the file has is a usage error.
    ...files.map((f) => [
      f,
      /\[L, /.test(Deno.readTextFileSync(`${ROOT_PATH}${f}`))
        ? "M=80,N=72,K=256,L=3"
        : "M=80,N=72,K=256",
    ]),
    ...align1.map((f) => [f, "M=77,N=45,K=33"]),
  ];
  const runs = await gemmAll(cases.map(([f, s]) => ["simulate", f!, "--size", s!]));
  cases.forEach(([file, size], i) => {
    const r = runs[i]!;
    const what = `simulate ${file} --size ${size}`;
    assertNoStackTrace(r, what);
    assert.equal(r.code, 0, `${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
    assert.equal(r.stderr, "", what);
    for (const name of kernelNames(file!)) {
      assert.match(r.stdout, new RegExp(`^${name}: AGREES with the reference \\(`, "m"), what);
    }
    const verdicts = r.stdout.split("\n").filter((l) => /^\S+: /.test(l));
    assert.equal(verdicts.length, kernelNames(file!).length, `${what}\n${r.stdout}`);
    assert.match(r.stdout, /^ {2}hazards: none$/m, what);
    assert.match(r.stdout, / 0 of \d+ elements over the bound/, what);
  });
});

Deno.test("simulate --json: parses, one report per kernel, agreeing, with statistics", async () => {
  const [r, two] = await gemmAll([
    ["simulate", "examples/s8_gemm.gemm", "--size", "M=80,N=72,K=256", "--json"],
    ["simulate", "examples/two_kernels.gemm", "--size", "M=40,N=24,K=64", "--json"],
  ]);
  assert.equal(r!.code, 0, r!.stderr);
  const j = JSON.parse(r!.stdout);
  assert.equal(j.reports.length, 1);
  const rep = j.reports[0];
  assert.equal(rep.kernel, "s8_gemm");
  assert.deepEqual(rep.sizes, { M: 80, K: 256, N: 72 });
  assert.equal(rep.agree, true);
  assert.equal(rep.elements, 80 * 72);
  assert.equal(rep.overBound, 0);
  assert.equal(rep.maxAbsError, 0); // integers: identical
  assert.equal(rep.hazardCount, 0);
  assert.deepEqual(rep.hazards, []);
  assert.equal(rep.grid.length, 3);
  assert.ok(rep.stats.mmas > 0 && rep.stats.byKind.mma === rep.stats.mmas);
  assert.ok(rep.stats.globalBytesRead > 0 && rep.stats.globalBytesWritten >= 80 * 72 * 4);
  assert.equal(two!.code, 0, two!.stderr);
  const j2 = JSON.parse(two!.stdout);
  assert.deepEqual(j2.reports.map((x: { kernel: string }) => x.kernel), ["proj_gelu", "gate_silu"]);
  assert.ok(j2.reports.every((x: { agree: boolean }) => x.agree));
});

Deno.test("simulate --seed: the same seed repeats, another seed draws other inputs", async () => {
  const args = (seed: string) => [
    "simulate",
    "examples/tf32_gemm.gemm",
    "--size",
    "M=40,N=24,K=64",
    "--json",
    "--seed",
    seed,
  ];
  const [a, b, c] = await gemmAll([args("5"), args("5"), args("6")]);
  for (const r of [a!, b!, c!]) assert.equal(r.code, 0, r.stderr);
  const fig = (r: Run) => {
    const x = JSON.parse(r.stdout).reports[0];
    return [x.relFrobenius, x.maxAbsError, x.worstRatio];
  };
  assert.deepEqual(fig(a!), fig(b!));
  assert.notDeepEqual(fig(a!), fig(c!));
});

Deno.test("simulate: a size that breaks a tensor's alignment exits 2 with a one-line message", async () => {
  // u8_gemm's D is `align 4`: N=70 breaks D alone.
  const [one, two] = await gemmAll([
    ["simulate", "examples/u8_gemm.gemm", "--size", "M=80,N=70,K=256"],
    // hgemm's A and B are K-contiguous with align 8: K=33 breaks both.
    ["simulate", "examples/hgemm.gemm", "--size", "M=80,N=72,K=33"],
  ]);
  for (const [r, tensor] of [[one!, "D"], [two!, "A"]] as const) {
    assertNoStackTrace(r, "alignment");
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /^gemm: /);
    assert.match(r.stderr.split("\n")[0]!, new RegExp(`Tensor "${tensor}" declares align \\d+`));
  }
  assert.match(one!.stderr, /^gemm: [^\n]*N=70 is not a multiple of 4[^\n]*\n$/);
});

Deno.test("simulate: missing or malformed --size, a missing file, an unknown kernel exit 2", async () => {
  const cases: [string[], RegExp][] = [
    [["simulate", "examples/hgemm.gemm"], /--size/],
    [["simulate", "examples/hgemm.gemm", "--size", "M=80,N=72"], /No size for dimension "K"/],
    [["simulate", "examples/hgemm.gemm", "--size", "M=80;N=72"], /Malformed size/],
    [["simulate", "examples/nope.gemm", "--size", "M=8,N=8,K=8"], /nope\.gemm/],
    [["simulate", "examples/two_kernels.gemm", "--kernel", "zz", "--size", "M=8,N=8,K=8"], /zz/],
    [["simulate", "examples/hgemm.gemm", "--size", "M=8,N=8,K=8", "--seed", "x"], /seed/],
    // Refused before anything is allocated (bad_inputs: an allocation failure, an unbounded run).
    [
      ["simulate", "examples/hgemm.gemm", "--size", "M=2147483647,N=8,K=16"],
      /too large.*--max-work/,
    ],
    [["simulate", "examples/hgemm.gemm", "--size", "M=16384,N=16384,K=64"], /limit of 2147483648/],
    [["simulate", "examples/hgemm.gemm", "--size", "M=64,N=64,K=64", "--max-work", "1000"], /1000/],
    [
      ["simulate", "examples/hgemm.gemm", "--size", "M=8,N=8,K=8", "--max-work", "lots"],
      /max-work/,
    ],
  ];
  const runs = await gemmAll(cases.map(([a]) => a));
  cases.forEach(([a, says], i) => {
    const r = runs[i]!;
    const what = a.join(" ");
    assertNoStackTrace(r, what);
    assert.equal(r.code, 2, `${what}: exit ${r.code}\n${r.stderr}`);
    assert.equal(r.stdout, "", what);
    assert.match(r.stderr, /^gemm: [^\n]+\n$/, `${what}: ${JSON.stringify(r.stderr)}`);
    assert.match(r.stderr, says, what);
  });
});

Deno.test("simulate --max-work N admits work up to N: 64^3 (274432) under 300000 runs", async () => {
  const r = await gemm(
    "simulate",
    "examples/hgemm.gemm",
    "--size",
    "M=64,N=64,K=64",
    "--max-work",
    "300000",
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^hgemm: AGREES/m);
});

Deno.test("simulate --kernel picks one kernel of a file", async () => {
  const r = await gemm(
    "simulate",
    "examples/two_kernels.gemm",
    "--kernel",
    "gate_silu",
    "--size",
    "M=40,N=24,K=64",
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^gate_silu: AGREES/m);
  assert.doesNotMatch(r.stdout, /proj_gelu/);
});
