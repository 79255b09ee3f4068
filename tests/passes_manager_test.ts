/**
 * The pass manager (names, order, purity, dumps), golden dumps after every pass for three
 * examples, `--emit kernel-ir` for every example on every target, and the CLI's
 * `--emit kernel-ir` and `--dump-after`.
 *
 * The dump goldens (tests/golden/dumps/NAME.txt) keep every GEMM-IR dump
 * whole and the kernel-IR dump's first lines only, so that they stay
 * reviewable. Regenerate them with
 * `UPDATE_GOLDEN=1 deno task test tests/passes_manager_test.ts` and read the diff.
 */

import assert from "node:assert/strict";
import { check, compile, formatDiagnostics } from "../compiler.ts";
import { verifyGemm } from "../ir/verify_gemm.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printGemm } from "../ir/print_gemm.ts";
import { printKernel } from "../ir/print_kernel.ts";
import { dumpHeader } from "../passes/pass.ts";
import { GEMM_PASSES, LOWER_PASS, PASS_NAMES, runPipeline } from "../passes/pipeline_list.ts";
import { TARGET_NAMES, targetInfo, targetList } from "../ir/target.ts";
import { gemm } from "./_cli.ts";
import { examples, readExample, ROOT } from "./_examples.ts";

const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";

// ---- the pass manager -----------------------------------------------------------------------

Deno.test("pass manager: one ordered list of kebab-case passes with summaries", () => {
  assert.deepEqual(PASS_NAMES, [
    "gemm-tile",
    "gemm-warp",
    "gemm-pipeline",
    "gemm-mma",
    "gemm-fragment-load",
    "gemm-occupancy",
    "gemm-workspace",
    "gemm-epilogue-staging",
    "gemm-short-tile",
    "lower-kernel",
  ]);
  assert.deepEqual(GEMM_PASSES.map((p) => p.title), [
    "Tile",
    "WarpPartition",
    "StagePipeline",
    "MmaSelect",
    "FragmentLoad",
    "Occupancy",
    "SplitKWorkspace",
    "EpilogueStaging",
    "ShortTile",
  ]);
  for (const p of [...GEMM_PASSES, LOWER_PASS]) {
    assert.match(p.name, /^[a-z]+(-[a-z]+)*$/);
    assert.ok(p.summary.length > 10 && !p.summary.endsWith("."), p.name);
  }
  assert.equal(
    dumpHeader("Tile", "gemm-tile"),
    "// -----// IR Dump After Tile (gemm-tile) //----- //",
  );
});

function deepFreeze<T>(x: T): T {
  if (typeof x === "object" && x !== null && !Object.isFrozen(x)) {
    Object.freeze(x);
    for (const v of Object.values(x)) deepFreeze(v);
  }
  return x;
}

Deno.test("pass manager: each pass is a pure function that adds its part of the plan", () => {
  const { file, text } = readExample("hgemm");
  const k0 = check(text, { file }).kernels[0]!;
  assert.deepEqual(k0.plan, {});
  const before = JSON.stringify(k0);
  let k = deepFreeze(k0);
  const added: string[][] = [];
  for (const p of GEMM_PASSES) {
    const next = p.run(k);
    verifyGemm(next);
    added.push(Object.keys(next.plan).filter((key) => !(key in k.plan)));
    // Running a pass twice on the same input gives the same output.
    assert.deepEqual(p.run(k), next, p.name);
    k = deepFreeze(next);
  }
  assert.deepEqual(added, [
    ["tile"],
    ["warp"],
    ["pipeline"],
    ["instruction"],
    ["mma"],
    ["occupancy"],
    ["workspace"],
    ["staging"],
    ["short"],
  ]);
  assert.equal(JSON.stringify(k0), before, "the input is untouched");
  // The pipeline gives the same as the passes one by one.
  const r = runPipeline(k0);
  assert.deepEqual(r.gemm, k);
  verifyKernel(r.kernel);
});

Deno.test("pass manager: a pass out of order is an error, not a wrong plan", () => {
  const { file, text } = readExample("s8_gemm");
  const k = check(text, { file }).kernels[0]!;
  assert.throws(() => GEMM_PASSES[1]!.run(k));
});

Deno.test("pass manager: the dump hook sees every pass in order, header first", () => {
  const { file, text } = readExample("dgemm");
  const seen: [string, string][] = [];
  const r = compile(text, { file, dump: (pass, t) => seen.push([pass, t]) });
  assert.ok(r.ok);
  assert.deepEqual(seen.map(([p]) => p), PASS_NAMES);
  const titles = [...GEMM_PASSES.map((p) => p.title), LOWER_PASS.title];
  seen.forEach(([p, t], i) => {
    assert.ok(t.startsWith(dumpHeader(titles[i]!, p) + "\n"), p);
  });
  // The last GEMM-IR dump is the planned kernel; the lowering's is the kernel IR.
  const ck = r.kernels[0]!;
  const last = GEMM_PASSES.at(-1)!;
  assert.equal(
    seen[GEMM_PASSES.length - 1]![1],
    `${dumpHeader(last.title, last.name)}\n${printGemm(ck.planned)}`,
  );
  assert.equal(
    seen[GEMM_PASSES.length]![1],
    `${dumpHeader("LowerToKernelIR", "lower-kernel")}\n${ck.kernelText}`,
  );
});

// ---- golden dumps -----------------------------------------------------------------------

/** Lines of the kernel IR a dump golden keeps. */
const KERNEL_IR_LINES = 60;

/** `--dump-after all` as a golden: GEMM-IR dumps whole, the kernel-IR dump cut. */
function dumpGolden(name: string): string {
  const { file, text } = readExample(name);
  const parts: string[] = [];
  const r = compile(text, {
    file,
    dump: (pass, t) => {
      if (pass !== LOWER_PASS.name) {
        parts.push(t);
        return;
      }
      const lines = t.split("\n");
      // The header line, then the kernel IR's first lines.
      parts.push(
        lines.slice(0, 1 + KERNEL_IR_LINES).join("\n") +
          `\n// ... (kernel IR cut after ${KERNEL_IR_LINES} lines: see --emit kernel-ir)\n`,
      );
    },
  });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  return parts.join("\n");
}

const DUMPS = ["hgemm", "dgemm", "s8_gemm"] as const;

for (const name of DUMPS) {
  Deno.test(`golden dumps after each pass: examples/${name}.gemm`, () => {
    const out = dumpGolden(name);
    const golden = new URL(`tests/golden/dumps/${name}.txt`, ROOT);
    if (UPDATE) {
      Deno.mkdirSync(new URL("tests/golden/dumps/", ROOT), { recursive: true });
      Deno.writeTextFileSync(golden, out);
    }
    let want: string;
    try {
      want = Deno.readTextFileSync(golden);
    } catch {
      assert.fail(`No golden tests/golden/dumps/${name}.txt: run with UPDATE_GOLDEN=1`);
    }
    assert.equal(out, want);
    // Each of the five passes is there, in order.
    const headers = [
      ...out.matchAll(/^\/\/ -----\/\/ IR Dump After \w+ \(([\w-]+)\) \/\/----- \/\/$/gm),
    ]
      .map((m) => m[1]);
    assert.deepEqual(headers, PASS_NAMES);
  });
}

Deno.test("golden dumps: one per listed example, none stale", () => {
  const files = [...Deno.readDirSync(new URL("tests/golden/dumps/", ROOT))].map((e) => e.name)
    .sort();
  assert.deepEqual(files, DUMPS.map((n) => `${n}.txt`).sort());
});

// ---- --emit kernel-ir for every example and both targets ------------------------------------

for (const name of examples()) {
  Deno.test(`--emit kernel-ir: examples/${name}.gemm on ${targetList(" and ")}`, () => {
    const { file, text } = readExample(name);
    for (const target of TARGET_NAMES) {
      const r = compile(text, { file, target });
      assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
      assert.ok(r.kernels.length >= 1);
      for (const ck of r.kernels) {
        verifyKernel(ck.kernel);
        assert.equal(ck.kernel.target, target);
        assert.equal(ck.planned.target, target);
        assert.equal(ck.kernelText, printKernel(ck.kernel));
        assert.ok(ck.kernelText.startsWith(`kernel @${ck.name} target ${target} (`));
        assert.ok(ck.planned.plan.pipeline!.smemBytes <= targetInfo(target).smemPerBlock);
        assert.equal(ck.kernel.dynamicSmemBytes, ck.planned.plan.pipeline!.smemBytes);
        // A warp-specialized kernel's producer warpgroup comes after the plan's warps.
        const producer = ck.planned.plan.pipeline!.tma?.producerThreads ?? 0;
        assert.equal(ck.kernel.threads, ck.planned.plan.warp!.threads + producer);
        assert.ok(ck.planned.plan.mma!.regEstimate <= targetInfo(target).registersPerThread);
      }
    }
  });
}

Deno.test("cli: gemm compile --emit kernel-ir --target sm86 prints every kernel's IR", async () => {
  const { file, text } = readExample("two_kernels");
  const r = await gemm("compile", file, "--emit", "kernel-ir", "--target", "sm86");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
  const want = compile(text, { file, target: "sm86" }).kernels.map((k) => k.kernelText).join("\n");
  assert.equal(r.stdout, want);
  assert.equal([...r.stdout.matchAll(/^kernel @\w+ target sm86 /gm)].length, 2);
});

Deno.test("cli: gemm compile --dump-after all / PASS prints the dumps on stderr", async () => {
  const { file, text } = readExample("hgemm");
  const dumps: string[] = [];
  const ck = compile(text, { file, dump: (_p, t) => dumps.push(t) }).kernels[0]!;
  const [all, one] = await Promise.all([
    gemm("compile", file, "--dump-after", "all"),
    gemm("compile", file, "--dump-after", "gemm-pipeline", "--emit", "kernel-ir"),
  ]);
  assert.equal(all.code, 0, all.stderr);
  assert.equal(all.stderr, dumps.map((d) => d + "\n").join(""));
  assert.equal(all.stdout, ck.gemmText);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(one.stderr, dumps[2] + "\n");
  assert.equal(one.stdout, ck.kernelText);
});
