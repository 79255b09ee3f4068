/**
 * Running on the GPU through the CUDA driver (backends/cuda, harness/run_gemm.ts,
 * `gemm run`).
 *
 * Where a CUDA driver loads, every example (each kernel of each file) runs on
 * the GPU at a size that is a multiple of its tile and at one that is not,
 * and must agree with the reference GEMM; integer outputs must also be
 * identical to the simulator on the same inputs, and float outputs are
 * compared with it in ulps. Where none loads these tests are listed as
 * ignored, "(skipped: no CUDA driver)".
 *
 * Everywhere: the no-driver path (one sentence, exit 1), checks that run
 * before any driver call, the checking machinery itself (sampled reference,
 * partial simulation) on simulator outputs, and the FFI plumbing against a
 * fake libcuda built from testdata/fake_libcuda.c (when a C compiler exists).
 */

import assert from "node:assert/strict";
import { runFakeDriverCheck } from "./_fake_driver.ts";
import { compile, type CompiledKernel } from "../../compiler.ts";
import { runGemm } from "../../harness/run_gemm.ts";
import { cudaAvailable } from "../../backends/cuda/driver.ts";
import {
  chooseBlocks,
  chooseReferenceSample,
  referenceCheck,
  simAgreement,
  unwrittenCount,
} from "../../harness/checks.ts";
import { simulateGemm } from "../../harness/simulate_gemm.ts";
import { randomArgs } from "../../harness/inputs.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { tensorParam } from "../../ir/gemm.ts";
import { gridFor } from "../../ir/kernel.ts";
import { gemmWithEnv } from "../_cli.ts";

const ROOT = new URL("../../", import.meta.url);
const EXAMPLES = new URL("examples/", ROOT);

function exampleFiles(): string[] {
  return [...Deno.readDirSync(EXAMPLES)]
    .filter((e) => e.isFile && e.name.endsWith(".gemm"))
    .map((e) => e.name)
    .sort();
}

function compileExample(file: string): CompiledKernel[] {
  const r = compile(Deno.readTextFileSync(new URL(file, EXAMPLES)), { file });
  assert.ok(r.ok, `${file}: ${r.diagnostics.map((d) => d.message).join("; ")}`);
  return [...r.kernels];
}

function example(file: string, kernel?: string): CompiledKernel {
  const ks = compileExample(file);
  const k = kernel === undefined ? ks[0] : ks.find((x) => x.name === kernel);
  assert.ok(k !== undefined, `${file}: no kernel ${kernel}`);
  return k;
}

const gemm = (args: string[], env: Record<string, string> = {}) => gemmWithEnv(args, env);

const CUDA = cudaAvailable();
const SKIP = CUDA.ok ? "" : " (skipped: no CUDA driver)";

/** A GPU test: runs where the driver loads, listed as skipped elsewhere. */
function gpuTest(name: string, fn: () => void | Promise<void>): void {
  Deno.test({ name: `${name}${SKIP}`, ignore: !CUDA.ok, fn });
}

// ---------------------------------------------------------------------------------------------
// Everywhere
// ---------------------------------------------------------------------------------------------

Deno.test("cudaAvailable never throws and says why in one sentence", () => {
  const r = cudaAvailable();
  if (r.ok) return;
  assert.match(r.why, /^No (usable )?CUDA (driver|device): /);
  assert.match(r.why, /`gemm simulate` runs the same kernel on the CPU$/);
  assert.doesNotMatch(r.why, /\n/);
});

Deno.test("gemm run without a driver: one sentence on stderr, exit 1", async () => {
  const r = await gemm(
    ["run", "examples/hgemm.gemm", "--size", "M=64,N=64,K=64"],
    { GEMMC_LIBCUDA: "/nonexistent/libcuda.so.1" },
  );
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stdout, "");
  assert.match(
    r.stderr,
    /^gemm: No CUDA driver: \/nonexistent\/libcuda\.so\.1 could not be loaded \([^\n]+\); `gemm simulate` runs the same kernel on the CPU\n$/,
  );
});

Deno.test("gemm run on this machine: exit 1 with the sentence, or exit 0 on a GPU", async () => {
  const r = await gemm(["run", "examples/hgemm.gemm", "--size", "M=64,N=64,K=64"]);
  if (!CUDA.ok) {
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr, `gemm: ${CUDA.why}\n`);
    assert.equal(r.stdout, "");
  } else {
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /hgemm: AGREES with the reference/);
  }
});

Deno.test("gemm run: bad usage is exit 2 before any driver call", async () => {
  const cases: [string[], RegExp][] = [
    [["run", "examples/hgemm.gemm"], /--size is required/],
    [["run", "examples/hgemm.gemm", "--size", "M=64,N=64,K=64", "--check", "gpu"], /--check/],
    [["run", "examples/hgemm.gemm", "--size", "M=64,N=64,K=64", "--iters", "x"], /--iters/],
    [["run", "examples/b1_and.gemm", "--size", "M=64,N=64,K=64"], /declares align 128/],
  ];
  for (const [args, says] of cases) {
    const r = await gemm(args, { GEMMC_LIBCUDA: "/nonexistent/libcuda.so.1" });
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, says);
    assert.doesNotMatch(r.stderr, /CUDA driver|^\s+at /m);
  }
});

Deno.test("alignment violations and short buffers are raised before any CUDA call", () => {
  let opened = 0;
  const cuda = () => {
    opened++;
    throw new Error("the driver was touched");
  };
  const b1 = example("b1_and.gemm");
  assert.throws(
    () => runGemm(b1, { M: 64, N: 64, K: 64 }, { cuda }),
    /Tensor "A" declares align 128 but its leading dimension K=64/,
  );
  const h = example("hgemm.gemm");
  const sizes = { M: 64, N: 64, K: 64 };
  const args = randomArgs(h.gemm, sizes, 1);
  args.tensors.set("B", new Uint8Array(10));
  assert.throws(
    () => runGemm(h, sizes, { cuda, args }),
    /Buffer of tensor "B" holds 10 bytes; the sizes need 8192/,
  );
  assert.throws(() => runGemm(h, { M: 0, N: 64, K: 64 }, { cuda }), /empty grid/);
  assert.throws(() => runGemm(h, { M: 64, N: 64 }, { cuda }), /No size for dimension "K"/);
  // bad_inputs/api_runtime.ts: a NaN scalar, given or in the arguments, and an unknown check.
  assert.throws(
    () => runGemm(h, sizes, { cuda, scalars: { alpha: NaN } }),
    /Scalar "alpha" is NaN: a finite f32 is needed/,
  );
  const nan = randomArgs(h.gemm, sizes, 1);
  nan.scalars.set("alpha", Infinity);
  assert.throws(() => runGemm(h, sizes, { cuda, args: nan }), /Scalar "alpha" is Infinity/);
  const check = "bogus" as unknown as "ref";
  assert.throws(() => runGemm(h, sizes, { cuda, check }), /Option check must be ref, sim, none/);
  assert.equal(opened, 0);
});

Deno.test("the sampled reference agrees with the full one, and catches a wrong element", () => {
  const ck = example("hgemm.gemm");
  const sizes = { M: 80, N: 72, K: 64 };
  const rep = simulateGemm(ck, sizes, { seed: 3, hazards: false });
  assert.ok(rep.ok);
  const sample = chooseReferenceSample(ck.gemm, sizes, 12 * 10 * 64, 3, { m: 128, n: 256 });
  assert.ok(sample !== null);
  const rows = sample.get("M")!;
  const cols = sample.get("N")!;
  assert.ok(rows.includes(0) && rows.includes(79) && cols.includes(0) && cols.includes(71));
  assert.ok(rows.length * cols.length * 64 <= 12 * 10 * 64);
  const full = referenceCheck(ck.gemm, rep.args, rep.output, null);
  const part = referenceCheck(ck.gemm, rep.args, rep.output, sample);
  assert.ok(full.comparison.ok && part.comparison.ok);
  assert.equal(part.elements, rows.length * cols.length);
  assert.deepEqual(part.sampled, {
    M: { chosen: rows.length, of: 80 },
    N: { chosen: cols.length, of: 72 },
  });
  // Corrupt one sampled element: the sample must see it, at its full coordinates.
  const bad = rep.output.slice();
  const r = rows[1]!;
  const c = cols[2]!;
  new DataView(bad.buffer).setFloat32((r * 72 + c) * 4, 1e6, true);
  const caught = referenceCheck(ck.gemm, rep.args, bad, sample);
  assert.equal(caught.comparison.overBound, 1);
  assert.deepEqual(caught.first?.coords, [r, c]);
  assert.equal(caught.first?.index, r * 72 + c);
});

Deno.test("a partial simulation compares only what its blocks wrote; narrow integers too", () => {
  // u8 output: the poison byte is a legal result, so coverage needs the second poison.
  const ck = example("u8_gemm.gemm");
  const sizes = { M: 300, N: 260, K: 64 };
  const rep = simulateGemm(ck, sizes, { seed: 5, hazards: false });
  assert.ok(rep.ok);
  const grid = gridFor(ck.kernel.grid, sizes);
  const plan = ck.kernel.grid;
  const blocks = chooseBlocks(plan, grid, 64, plan.tileM * plan.tileN * 64 * 2, 5, sizes);
  assert.ok(blocks !== null && blocks.length === 2 * grid[2]);
  const same = simAgreement(ck.gemm, ck.kernel, grid, rep.args, rep.output, { blocks });
  assert.equal(same.blocks, blocks.length);
  assert.ok(same.compared > 0 && same.compared < 300 * 260);
  assert.equal(same.differing, 0);
  assert.ok(same.identical);
  assert.equal(same.maxUlp, null);
  // The last tile (partial in both dimensions) is among the blocks: its corner element counts.
  const bad = rep.output.slice();
  bad[299 * 260 + 259] = (bad[299 * 260 + 259]! + 1) & 0xff;
  const diff = simAgreement(ck.gemm, ck.kernel, grid, rep.args, bad, { blocks, hazards: false });
  assert.equal(diff.differing, 1);
  assert.deepEqual(diff.first?.coords, [299, 259]);
  assert.equal(unwrittenCount("u8", bad), null, "u8 poison is a legal value");
});

Deno.test("float outputs: the simulator comparison reports ulps of the output type", () => {
  const ck = example("hgemm_f16acc.gemm");
  const sizes = { M: 64, N: 64, K: 32 };
  const rep = simulateGemm(ck, sizes, { seed: 9, hazards: false });
  const grid = gridFor(ck.kernel.grid, sizes);
  const same = simAgreement(ck.gemm, ck.kernel, grid, rep.args, rep.output, { hazards: false });
  assert.ok(same.identical && same.maxUlp === 0 && same.compared === 64 * 64);
  assert.equal(same.maxAbsDiff, 0);
  const bad = rep.output.slice();
  const dv = new DataView(bad.buffer);
  dv.setUint16(2 * 100, dv.getUint16(2 * 100, true) + 3, true);
  const d = simAgreement(ck.gemm, ck.kernel, grid, rep.args, bad, { hazards: false });
  assert.equal(d.maxUlp, 3);
  assert.equal(d.differing, 1);
  assert.ok(d.maxAbsDiff! > 0 && d.ulpsAtScale! > 0 && d.ulpsAtScale! <= 3);
  assert.equal(unwrittenCount("f16", rep.output), 0);
  const d2 = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  assert.ok(DTYPE_INFO[d2.dtype].float);
});

Deno.test("the FFI bindings against a fake libcuda (C), end to end", async (t) => {
  await runFakeDriverCheck(t, "fake_driver_check.ts");
});

// ---------------------------------------------------------------------------------------------
// On the GPU
// ---------------------------------------------------------------------------------------------

/** Sizes legal for every example: K a multiple of 128 (b1), N of 8, M of 4. */
const ODD = { M: 100, N: 72, K: 384, L: 2 };
const TILED = { M: 256, N: 256, K: 256, L: 2 };

/** Grouped examples run over a list of problems (`--groups`), not one size: tests/grouped_test.ts. */
const isGrouped = (file: string) =>
  /^\s*kernel\s+\w+\s+grouped\b/m.test(Deno.readTextFileSync(new URL(file, EXAMPLES)));

for (const file of exampleFiles().filter((f) => !isGrouped(f))) {
  gpuTest(`${file} on the GPU agrees with the reference and the simulator`, () => {
    for (const ck of compileExample(file)) {
      for (const sizes of [TILED, ODD]) {
        const rep = runGemm(ck, sizes, { seed: 7, iters: 2, warmup: 1, check: "sim" });
        const where = `${ck.name} at ${JSON.stringify(rep.sizes)}`;
        const ref = rep.reference!;
        assert.ok(
          ref.comparison.ok,
          `${where}: ${ref.comparison.overBound} elements over the bound; first ${
            JSON.stringify(ref.first)
          }`,
        );
        assert.equal(rep.unwritten ?? 0, 0, `${where}: unwritten elements`);
        const sim = rep.sim!;
        assert.equal(sim.blocks, sim.totalBlocks, `${where}: the whole grid simulated`);
        assert.equal(sim.hazardCount, 0, `${where}: hazards`);
        if (sim.maxUlp === null) {
          assert.equal(
            sim.differing,
            0,
            `${where}: differs from the simulator: ${JSON.stringify(sim.first)}`,
          );
        }
        assert.ok(rep.ok, where);
        assert.ok(rep.timing !== null && rep.timing.medianMs > 0);
      }
    }
  });
}

gpuTest("align 1 at odd sizes on the GPU", () => {
  const ck = example("align1.gemm");
  for (const sizes of [{ M: 33, N: 17, K: 9 }, { M: 1, N: 1, K: 1 }, { M: 130, N: 259, K: 67 }]) {
    const rep = runGemm(ck, sizes, { seed: 11, iters: 0, check: "sim" });
    assert.ok(rep.ok, `${JSON.stringify(sizes)}: ${JSON.stringify(rep.reference?.first)}`);
  }
});

gpuTest("tanh and exp epilogues on the GPU agree with the reference and the simulator", () => {
  // tanh.approx.f32 and ex2.approx.f32 (ir/epilogue.ts): within the reference's 2^-10 relative
  // tolerance of the exact functions; the simulator's f32 evaluation, compared in ulps, differs
  // from the GPU's approximations only by their error (reported, not bounded here).
  const kernels = [
    ["f16", "f16", "f16(tanh(A[m, k] * B[k, n] + bias[n]))"],
    ["bf16", "bf16", "bf16(exp(0.125 * A[m, k] * B[k, n]))"],
    ["f32", "f32", "tanh(A[m, k] * B[k, n]) * exp(bias[n])"],
    ["f64", "f64", "exp(tanh(A[m, k] * B[k, n]))"],
    // No integer output: the GPU's approximations may round an s8 result to the other side of a
    // tie from the simulator's, which runGemm's check counts as a difference.
  ];
  for (const [ab, d, stmt] of kernels) {
    const r = compile(
      `kernel epi_${ab} {
  A: ${ab}[M, K] row
  B: ${ab}[K, N] col
  ${stmt!.includes("bias") ? "bias: f32[N]" : ""}
  D: ${d}[M, N] row
  D[m, n] = ${stmt}
}`,
      { file: "epi.gemm" },
    );
    assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
    const ck = r.kernels[0]!;
    for (const sizes of [TILED, ODD]) {
      const rep = runGemm(ck, sizes, { seed: 23, iters: 0, check: "sim" });
      const where = `${ck.name} at ${JSON.stringify(rep.sizes)}`;
      const ref = rep.reference!;
      assert.ok(ref.comparison.ok, `${where}: ${JSON.stringify(ref.first)}`);
      assert.equal(rep.unwritten ?? 0, 0, `${where}: unwritten elements`);
      assert.equal(rep.sim!.hazardCount, 0, `${where}: hazards`);
      assert.equal(rep.sim!.blocks, rep.sim!.totalBlocks, `${where}: the whole grid simulated`);
      assert.ok(rep.ok, where);
    }
  }
});

gpuTest(
  "SIMT f32 in every layout on the GPU: transposed tiles, vector loads, bit-identical",
  () => {
    // Row-major A and column-major B are K-contiguous: stored transposed in shared memory
    // (align 1: 4-byte cp.async; align 4: through registers where A is transposed); the others
    // are copied by cp.async. fma.rn.f32 in one fixed order: the GPU and the simulator agree
    // bit for bit.
    const layouts = [["row", "col"], ["col", "row"], ["col", "col"], ["row", "row"]];
    for (const [[a, b], align] of layouts.flatMap((l) => [[l, 1], [l, 4]] as const)) {
      const r = compile(
        `kernel simt_${a}_${b} {
  A: f32[M, K] ${a} align ${align}
  B: f32[K, N] ${b} align ${align}
  C: f32[M, N] row align ${align}
  D: f32[M, N] row align ${align}
  D[m, n] = A[m, k] * B[k, n] + C[m, n]
  schedule {
    math f32
  }
}`,
        { file: "simt.gemm" },
      );
      assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
      const ck = r.kernels[0]!;
      const pipe = ck.planned.plan.pipeline!;
      assert.equal(pipe.a.transpose === true, a === "row");
      assert.equal(pipe.a.viaRegisters === true, a === "row" && align === 4);
      const ragged = align === 1 ? { M: 133, N: 70, K: 37 } : { M: 132, N: 68, K: 36 };
      for (const sizes of [TILED, ragged]) {
        const rep = runGemm(ck, sizes, { seed: 5, iters: 1, warmup: 1, check: "sim" });
        const where = `${ck.name} at ${JSON.stringify(rep.sizes)}`;
        assert.ok(
          rep.reference!.comparison.ok,
          `${where}: ${JSON.stringify(rep.reference!.first)}`,
        );
        assert.equal(rep.sim!.hazardCount, 0, where);
        assert.equal(rep.sim!.differing, 0, `${where}: ${JSON.stringify(rep.sim!.first)}`);
        assert.ok(rep.ok, where);
      }
    }
  },
);

gpuTest(
  "f32 operands at the benchmark's hinted defaults on the GPU: SIMT split-K and 128x64, 3xtf32",
  () => {
    // The schedules `deno task bench --gpu` gets for f32 and 3xtf32 (sizes as hints, 132 SMs):
    // SIMT split 4 at M=128, N=K=8192; SIMT 128x64 at 5000^3 (wave-aware); 3xtf32 128x64.
    // Run at smaller ragged sizes: the kernels are correct for any size.
    const cases: [string, Record<string, number>, string][] = [
      ["f32", { M: 128, N: 8192, K: 8192 }, "128x128x8 split 4"],
      ["f32", { M: 5000, N: 5000, K: 5000 }, "128x64x8 split 1"],
      ["3xtf32", { M: 5000, N: 5000, K: 5000 }, "128x64x32 split 1"],
    ];
    for (const [file, hints, want] of cases) {
      const src = Deno.readTextFileSync(
        new URL(`../../bench/kernels/${file}.gemm`, import.meta.url),
      );
      const r = compile(src, { file: `${file}.gemm`, sizeHints: hints, sms: 132 });
      assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
      const ck = r.kernels[0]!;
      const t = ck.planned.plan.tile!;
      const tb = t.threadblock;
      assert.equal(`${tb.m}x${tb.n}x${tb.k} split ${t.splitK}`, want);
      for (const sizes of [{ M: 140, N: 200, K: 1000 }, { M: 256, N: 128, K: 512 }]) {
        const rep = runGemm(ck, sizes, { seed: 13, iters: 1, warmup: 1, check: "sim" });
        const where = `${file} (${want}) at ${JSON.stringify(rep.sizes)}`;
        assert.ok(
          rep.reference!.comparison.ok,
          `${where}: ${JSON.stringify(rep.reference!.first)}`,
        );
        assert.equal(rep.unwritten ?? 0, 0, `${where}: unwritten elements`);
        assert.equal(rep.sim!.hazardCount, 0, where);
        if (rep.sim!.maxUlp === null) {
          assert.equal(rep.sim!.differing, 0, `${where}: ${JSON.stringify(rep.sim!.first)}`);
        }
        assert.ok(rep.ok, where);
      }
    }
  },
);

gpuTest("gemm run --check sim end to end on the GPU", async () => {
  const r = await gemm([
    "run",
    "examples/s8_gemm.gemm",
    "--size",
    "M=256,N=128,K=128",
    "--check",
    "sim",
    "--iters",
    "3",
  ]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /s8_gemm: AGREES with the reference and the simulator/);
  assert.match(r.stdout, /simulator \(\d+ of \d+ blocks, \d+ elements\): identical/);
  assert.match(r.stdout, /TOPS/);
});
