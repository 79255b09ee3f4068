/**
 * The simulator against the reference GEMM: every example (each kernel of each
 * file) at a size that is a multiple of its threadblock tile, at sizes that are
 * not, and batched; then type, layout, epilogue and schedule combinations
 * compiled from inline sources. Each run draws fresh random inputs (a seed per
 * case), poisons the output, executes the lowered kernel IR over the whole grid
 * with the hazard checker on, and compares with the reference: no hazard, every
 * element within its bound, integers identical.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { simulateGemm, type SimulateReport } from "../harness/simulate_gemm.ts";
import { simulateGrouped } from "../harness/simulate_grouped.ts";
import { referenceGemm } from "../harness/reference.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { tensorParam } from "../ir/gemm.ts";

const EXAMPLES = new URL("../examples/", import.meta.url);

function compileSource(source: string, file: string): CompiledKernel[] {
  const r = compile(source, { file });
  assert.ok(r.ok, `${file}: ${r.diagnostics.map((d) => d.message).join("; ")}`);
  assert.ok(r.kernels.length > 0, `${file}: no kernel`);
  return [...r.kernels];
}

function exampleFiles(): string[] {
  return [...Deno.readDirSync(EXAMPLES)]
    .filter((e) => e.isFile && e.name.endsWith(".gemm"))
    .map((e) => e.name)
    .sort();
}

/** Whether the reference is exact for this kernel (integer output, integer epilogue). */
function exactKernel(ck: CompiledKernel): boolean {
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  return !DTYPE_INFO[d.dtype].float && ck.gemm.epilogue.compute === "s32";
}

function isAlign1(ck: CompiledKernel): boolean {
  return ck.gemm.params.some((p) => p.kind === "tensor" && p.align === 1 && p.role !== "A_meta");
}

/**
 * Simulates `ck` at `sizes` with `seed` and asserts agreement with the reference and no hazard.
 *
 * @returns The report, for further checks.
 */
function expectAgrees(
  ck: CompiledKernel,
  sizes: Record<string, number>,
  seed: number,
  scalars: Record<string, number> = {},
): SimulateReport {
  const rep = simulateGemm(ck, sizes, { seed, scalars });
  const where = `${ck.name} at ${JSON.stringify(rep.sizes)} seed ${seed} (grid ${rep.grid})`;
  assert.equal(
    rep.sim.hazardCount,
    0,
    `${where}: hazards\n${rep.sim.hazards.map((h) => `${h.kind} line ${h.line}: ${h.op}`)}`,
  );
  const c = rep.comparison;
  assert.ok(
    c.ok,
    `${where}: ${c.overBound} of ${c.elements} elements over the bound; first ${
      JSON.stringify(c.first)
    }; relF ${c.relFrobenius}`,
  );
  assert.equal(rep.sim.blocks, rep.grid[0] * rep.grid[1] * rep.grid[2], where);
  if (exactKernel(ck)) {
    // Integers: the reference says exact, and every element is identical.
    assert.ok(referenceGemm(ck.gemm, rep.args).exact, `${where}: reference not exact`);
    assert.equal(c.maxAbsError, 0, where);
  }
  return rep;
}

let seedCounter = 1000;
/** A different seed for every case. */
function nextSeed(): number {
  return seedCounter += 7919;
}

// ---------------------------------------------------------------------------
// Every example
// ---------------------------------------------------------------------------

for (const file of exampleFiles()) {
  const source = Deno.readTextFileSync(new URL(file, EXAMPLES));
  const kernels = compileSource(source, `examples/${file}`);
  for (const ck of kernels) {
    const tb = ck.planned.plan.tile!.threadblock;
    const stages = ck.planned.plan.pipeline!.stages;
    if (ck.kernel.group !== undefined) {
      // A grouped example: the same sizes as problems of one launch, an empty one among them.
      const seedG = nextSeed();
      Deno.test(`${file} ${ck.name}: grouped, a tile multiple, M=0 and M=80 N=72 K=256`, () => {
        const rep = simulateGrouped(ck, [
          { M: tb.m, N: tb.n, K: (stages + 1) * tb.k },
          { M: 0, N: 72, K: 256 },
          { M: 80, N: 72, K: 256 },
        ], { seed: seedG });
        assert.ok(rep.ok, JSON.stringify(rep.problems.map((p) => p.comparison.first)));
        assert.equal(rep.sim.hazardCount, 0);
        assert.ok(rep.sim.stats.mmas > 0);
      });
      continue;
    }
    const batched = ck.gemm.problem.batch !== null;
    const seedA = nextSeed();
    Deno.test(
      `${file} ${ck.name}: tile multiple M=${tb.m} N=${tb.n} K=${(stages + 1) * tb.k}`,
      () => {
        // K spans stages + 1 k-tiles so that the stage ring wraps around.
        const sizes = { M: tb.m, N: tb.n, K: (stages + 1) * tb.k, L: 2 };
        const rep = expectAgrees(ck, sizes, seedA);
        // Tensor-core kernels issue mma; SIMT (math f32) kernels issue fma (kernel-IR `mad`).
        if (ck.gemm.math.mode === "simt") assert.ok((rep.sim.stats.byKind["mad"] ?? 0) > 0);
        else assert.ok(rep.sim.stats.mmas > 0);
        // Without beta * C where the kernel has a C: beta = 0 (C must not leak in).
        if (ck.gemm.params.some((p) => p.kind === "scalar" && p.name === "beta")) {
          expectAgrees(ck, sizes, seedA + 1, { beta: 0 });
        }
      },
    );
    const seedB = nextSeed();
    Deno.test(`${file} ${ck.name}: M=80 N=72 K=256${batched ? " L=3" : ""}`, () => {
      expectAgrees(ck, { M: 80, N: 72, K: 256, L: 3 }, seedB);
    });
    if (isAlign1(ck)) {
      const seedC = nextSeed();
      Deno.test(`${file} ${ck.name}: align 1 at M=77 N=45 K=33`, () => {
        expectAgrees(ck, { M: 77, N: 45, K: 33, L: 3 }, seedC);
      });
    }
    if (batched) {
      const seedD = nextSeed();
      Deno.test(`${file} ${ck.name}: batched L=3 at M=40 N=24 K=48`, () => {
        expectAgrees(ck, { M: 40, N: 24, K: 48, L: 3 }, seedD);
      });
    }
  }
}

// ---------------------------------------------------------------------------
// Type, layout, epilogue and schedule combinations
// ---------------------------------------------------------------------------

/** A schedule block; the small tiles keep the simulation quick. */
function sched(tb: string, warp: string, ...extra: string[]): string {
  return `schedule {\n    threadblock ${tb}\n    warp ${warp}\n${
    extra.map((l) => `    ${l}\n`).join("")
  }  }`;
}
const SMALL = sched("64x64x32", "32x32x32");
const SMALL8 = sched("64x64x64", "32x32x64");

/** A kernel `k` with the given declarations, statement and schedule. */
function kernel(decls: string, stmt: string, schedule = SMALL): string {
  return `kernel k {\n${
    decls.split(";").map((d) => `  ${d.trim()}\n`).join("")
  }  ${stmt}\n  ${schedule}\n}\n`;
}

interface Combo {
  readonly name: string;
  readonly source: string;
  readonly sizes: readonly Record<string, number>[];
  /** Something the kernel IR must show (the path the combination is about). */
  readonly ir?: RegExp;
  readonly mma?: string;
  readonly fragments?: "double" | "interleaved";
  readonly scalars?: Record<string, number>;
}

const F16_MN = "A: f16[M, K] row; B: f16[K, N] col";
const ODD = { M: 80, N: 72, K: 96 };

const COMBOS: Combo[] = [
  // Operand layouts and the fragment-load paths they take.
  {
    name: "f16 A col-major, B row-major (ldmatrix.trans)",
    source: kernel(
      "A: f16[M, K] col; B: f16[K, N] row; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    sizes: [ODD, { M: 64, N: 128, K: 64 }],
    ir: /ldmatrix\.x\d\.trans/,
  },
  {
    name: "f16 both K-major and both MN-major",
    source: kernel(
      "A: f16[M, K] col; B: f16[K, N] col; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    sizes: [ODD],
    ir: /ldmatrix\.x\d\.trans/,
  },
  {
    name: "tf32 A col-major (lds path)",
    source: kernel(
      "A: f32[M, K] col; B: f32[K, N] col; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    sizes: [ODD],
    ir: /= lds\.b32/,
    mma: "m16n8k8.tf32.f32",
  },
  {
    name: "tf32 B row-major (lds path)",
    source: kernel(
      "A: f32[M, K] row; B: f32[K, N] row; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    sizes: [ODD],
    ir: /= lds\.b32/,
  },
  {
    name: "f64 col-major A and D, row-major B",
    source: kernel(
      "A: f64[M, K] col; B: f64[K, N] row; D: f64[M, N] col",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("32x32x16", "16x16x16"),
    ),
    sizes: [{ M: 70, N: 72, K: 40 }],
    mma: "m8n8k4.f64.f64",
  },
  // MMA shapes and accumulators.
  {
    name: "f16 accumulate f16",
    source: kernel(
      `${F16_MN}; D: f16[M, N]`,
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x32", "32x32x32", "accumulate f16"),
    ),
    sizes: [ODD],
    mma: "m16n8k16.f16.f16",
  },
  {
    name: "bf16 mma 16x8x8",
    source: kernel(
      "A: bf16[M, K]; B: bf16[K, N] col; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x32", "32x32x32", "mma 16x8x8"),
    ),
    sizes: [ODD],
    mma: "m16n8k8.bf16.f32",
  },
  {
    name: "tf32 mma 16x8x4",
    source: kernel(
      "A: f32[M, K]; B: f32[K, N] col; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x32", "32x32x32", "mma 16x8x4"),
    ),
    sizes: [ODD],
    mma: "m16n8k4.tf32.f32",
  },
  {
    name: "s8 mma 16x8x16",
    source: kernel(
      "A: s8[M, K]; B: s8[K, N] col; D: s32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x64", "32x32x64", "mma 16x8x16"),
    ),
    sizes: [{ M: 80, N: 72, K: 192 }],
    mma: "m16n8k16.s8.s32",
  },
  {
    name: "u8 x s8, mma 16x8x32",
    source: kernel(
      "A: u8[M, K]; B: s8[K, N] col; D: s32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      SMALL8,
    ),
    sizes: [{ M: 80, N: 72, K: 208 }],
  },
  {
    name: "s4 mma 16x8x32",
    source: kernel(
      "A: s4[M, K]; B: s4[K, N] col; D: s32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x128", "32x32x128", "mma 16x8x32"),
    ),
    sizes: [{ M: 80, N: 72, K: 384 }],
    mma: "m16n8k32.s4.s32",
  },
  {
    name: "b1 and.popc mma 16x8x128",
    source: kernel(
      "A: b1[M, K]; B: b1[K, N] col; D: s32[M, N]",
      "D[m, n] = popc(A[m, k] & B[k, n])",
      sched("64x64x512", "32x32x512", "mma 16x8x128"),
    ),
    sizes: [{ M: 80, N: 72, K: 1024 }],
    mma: "m16n8k128.b1.s32.and.popc",
  },
  {
    name: "b1 xor.popc mma 16x8x128",
    source: kernel(
      "A: b1[M, K]; B: b1[K, N] col; D: s32[M, N]",
      "D[m, n] = popc(A[m, k] ^ B[k, n])",
      sched("64x64x512", "32x32x512", "mma 16x8x128"),
    ),
    sizes: [{ M: 80, N: 72, K: 1536 }],
    mma: "m16n8k128.b1.s32.xor.popc",
  },
  {
    name: "3xtf32",
    source: kernel(
      "A: f32[M, K]; B: f32[K, N]; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x32", "32x32x32", "math 3xtf32"),
    ),
    sizes: [ODD],
  },
  // Outputs.
  {
    name: "column-major D",
    source: kernel(`${F16_MN}; D: f32[M, N] col`, "D[m, n] = A[m, k] * B[k, n]"),
    sizes: [ODD],
  },
  {
    name: "output f64",
    source: kernel(`${F16_MN}; D: f64[M, N]`, "D[m, n] = f64(A[m, k] * B[k, n])"),
    sizes: [ODD],
  },
  {
    name: "output f16, column-major",
    source: kernel(`${F16_MN}; D: f16[M, N] col`, "D[m, n] = f16(A[m, k] * B[k, n])"),
    sizes: [ODD],
  },
  {
    name: "output bf16",
    source: kernel(
      "A: bf16[M, K]; B: bf16[K, N] col; D: bf16[M, N]",
      "D[m, n] = bf16(A[m, k] * B[k, n])",
    ),
    sizes: [ODD],
  },
  {
    name: "output s32 from a float GEMM (cast)",
    source: kernel(`${F16_MN}; D: s32[M, N]`, "D[m, n] = s32(8 * A[m, k] * B[k, n])"),
    sizes: [ODD],
  },
  {
    name: "output s8 from an s8 GEMM (saturating cast)",
    source: kernel(
      "A: s8[M, K]; B: s8[K, N] col; D: s8[M, N] align 4",
      "D[m, n] = s8(A[m, k] * B[k, n])",
      SMALL8,
    ),
    sizes: [{ M: 80, N: 72, K: 192 }],
  },
  {
    name: "output u8 from a float GEMM",
    source: kernel(
      `${F16_MN}; D: u8[M, N] align 4`,
      "D[m, n] = u8(16 * A[m, k] * B[k, n] + 128)",
    ),
    sizes: [ODD],
  },
  {
    name: "output u8 from an integer GEMM, column-major",
    source: kernel(
      "A: s8[M, K]; B: s8[K, N] col; D: u8[M, N] col align 4; shift: s32",
      "D[m, n] = u8(clamp(A[m, k] * B[k, n] + shift, 0, 255))",
      SMALL8,
    ),
    sizes: [{ M: 80, N: 72, K: 128 }],
  },
  // beta * C and broadcasts.
  {
    name: "alpha, beta * C row-major (f32 C)",
    source: kernel(
      `${F16_MN}; C: f32[M, N] row; D: f32[M, N]; alpha: f32; beta: f32`,
      "D[m, n] = alpha * A[m, k] * B[k, n] + beta * C[m, n]",
    ),
    sizes: [ODD],
  },
  {
    name: "beta * C column-major (f16 C)",
    source: kernel(
      `${F16_MN}; C: f16[M, N] col; D: f32[M, N]; beta: f32`,
      "D[m, n] = A[m, k] * B[k, n] + beta * C[m, n]",
    ),
    sizes: [ODD],
  },
  {
    name: "beta = 0 (no C contribution)",
    source: kernel(
      `${F16_MN}; C: f32[M, N] row; D: f32[M, N]; beta: f32`,
      "D[m, n] = A[m, k] * B[k, n] + beta * C[m, n]",
    ),
    sizes: [ODD],
    scalars: { beta: 0 },
  },
  {
    name: "s32 C in an integer GEMM",
    source: kernel(
      "A: s8[M, K]; B: s8[K, N] col; C: s32[M, N] col; D: s32[M, N]; beta: s32",
      "D[m, n] = A[m, k] * B[k, n] + beta * C[m, n]",
      SMALL8,
    ),
    sizes: [{ M: 80, N: 72, K: 128 }],
  },
  {
    name: "f64 beta * C",
    source: kernel(
      "A: f64[M, K]; B: f64[K, N] col; C: f64[M, N] col; D: f64[M, N]; alpha: f64; beta: f64",
      "D[m, n] = alpha * A[m, k] * B[k, n] + beta * C[m, n]",
      sched("32x32x16", "16x16x16"),
    ),
    sizes: [{ M: 40, N: 36, K: 40 }],
  },
  {
    name: "bias along rows (bias[n])",
    source: kernel(
      `${F16_MN}; bias: f32[N]; D: f32[M, N]`,
      "D[m, n] = A[m, k] * B[k, n] + bias[n]",
    ),
    sizes: [ODD],
  },
  {
    name: "bias along columns (bias[m], f16)",
    source: kernel(
      `${F16_MN}; bias: f16[M]; D: f32[M, N]`,
      "D[m, n] = A[m, k] * B[k, n] + bias[m]",
    ),
    sizes: [ODD],
  },
  // Epilogue functions.
  {
    name: "relu, max, abs",
    source: kernel(`${F16_MN}; D: f32[M, N]`, "D[m, n] = max(relu(A[m, k] * B[k, n]), abs(-0.25))"),
    sizes: [ODD],
  },
  {
    name: "gelu",
    source: kernel(`${F16_MN}; D: f32[M, N]`, "D[m, n] = gelu(A[m, k] * B[k, n])"),
    sizes: [ODD],
  },
  {
    name: "sigmoid to f16",
    source: kernel(`${F16_MN}; D: f16[M, N]`, "D[m, n] = f16(sigmoid(A[m, k] * B[k, n]))"),
    sizes: [ODD],
  },
  {
    name: "silu (bf16 GEMM)",
    source: kernel(
      "A: bf16[M, K]; B: bf16[K, N] col; D: f32[M, N]",
      "D[m, n] = silu(A[m, k] * B[k, n])",
    ),
    sizes: [ODD],
  },
  // tanh and exp (ir/epilogue.ts rows): float outputs of every width, an f64
  // GEMM (evaluated in f32), an integer GEMM (float compute), several sizes.
  {
    name: "tanh with a bias to f16",
    source: kernel(
      `${F16_MN}; bias: f16[N]; D: f16[M, N]`,
      "D[m, n] = f16(tanh(A[m, k] * B[k, n] + bias[n]))",
    ),
    sizes: [ODD, { M: 64, N: 64, K: 32 }, { M: 33, N: 8, K: 200 }],
    ir: /= tanh\.f32 /,
  },
  {
    name: "exp of a scaled product to bf16 (bf16 GEMM)",
    source: kernel(
      "A: bf16[M, K]; B: bf16[K, N] col; D: bf16[M, N]; scale: f32",
      "D[m, n] = bf16(exp(scale * A[m, k] * B[k, n]))",
    ),
    sizes: [ODD, { M: 128, N: 40, K: 64 }],
    scalars: { scale: 0.25 },
    ir: /= ex2\.f32 /,
  },
  {
    name: "tanh times exp of a bias (tf32 GEMM, f32 out)",
    source: kernel(
      "A: f32[M, K]; B: f32[K, N] col; bias: f32[M]; D: f32[M, N]",
      "D[m, n] = tanh(A[m, k] * B[k, n]) * exp(bias[m])",
    ),
    sizes: [ODD, { M: 72, N: 136, K: 48 }],
    mma: "m16n8k8.tf32.f32",
  },
  {
    name: "exp(tanh) in an f64 GEMM",
    source: kernel(
      "A: f64[M, K]; B: f64[K, N] col; D: f64[M, N]",
      "D[m, n] = exp(tanh(A[m, k] * B[k, n])) - exp(-1)",
      sched("32x32x16", "16x16x16"),
    ),
    sizes: [{ M: 70, N: 72, K: 40 }],
    mma: "m8n8k4.f64.f64",
  },
  {
    name: "tanh to s8 from an s8 GEMM",
    source: kernel(
      "A: s8[M, K]; B: s8[K, N] col; D: s8[M, N] align 4",
      "D[m, n] = s8(100 * tanh(0.0001 * A[m, k] * B[k, n]))",
      SMALL8,
    ),
    sizes: [{ M: 80, N: 72, K: 192 }],
  },
  {
    name: "clamp, min, abs, unary minus",
    source: kernel(
      `${F16_MN}; D: f32[M, N]`,
      "D[m, n] = min(clamp(abs(-(A[m, k] * B[k, n])), 0.5, 3), 2.5)",
    ),
    sizes: [ODD],
  },
  {
    name: "integer min, max, abs, clamp with an s32 bias",
    source: kernel(
      "A: s8[M, K]; B: s8[K, N] col; bias: s32[N]; D: s32[M, N]",
      "D[m, n] = max(min(abs(A[m, k] * B[k, n] - bias[n]), 20000), clamp(bias[n], -5, 5))",
      SMALL8,
    ),
    sizes: [{ M: 80, N: 72, K: 192 }],
  },
  {
    name: "casts inside the epilogue",
    source: kernel(
      `${F16_MN}; D: f32[M, N]`,
      "D[m, n] = f32(f16(A[m, k] * B[k, n]) * 2) + f32(bf16(0.3))",
    ),
    sizes: [ODD],
  },
  // Alignment: narrower cp.async.
  {
    name: "align 2 f16 operands (4-byte cp.async)",
    source: kernel(
      "A: f16[M, K] align 2; B: f16[K, N] col align 2; D: f32[M, N] align 2",
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    sizes: [{ M: 78, N: 74, K: 90 }],
    ir: /cpasync\.ca\.4 /,
  },
  {
    name: "align 4 f16 operands (8-byte cp.async)",
    source: kernel(
      "A: f16[M, K] align 4; B: f16[K, N] col align 4; D: f16[M, N] align 4",
      "D[m, n] = f16(A[m, k] * B[k, n])",
    ),
    sizes: [{ M: 76, N: 68, K: 92 }],
    ir: /cpasync\.ca\.8 /,
  },
  {
    name: "align 1 tf32 (4-byte cp.async)",
    source: kernel(
      "A: f32[M, K] align 1; B: f32[K, N] col align 1; D: f32[M, N] align 1",
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    sizes: [{ M: 77, N: 45, K: 33 }],
    ir: /cpasync\.ca\.4 /,
  },
  {
    name: "align 2 f32 (8-byte cp.async)",
    source: kernel(
      "A: f32[M, K] align 2; B: f32[K, N] col align 2; D: f32[M, N] align 2",
      "D[m, n] = A[m, k] * B[k, n]",
    ),
    sizes: [{ M: 78, N: 46, K: 34 }],
    ir: /cpasync\.ca\.8 /,
  },
  {
    name: "align 1 f16, both layouts swapped",
    source: kernel(
      "A: f16[M, K] col align 1; B: f16[K, N] row align 1; D: f16[M, N] col align 1",
      "D[m, n] = f16(A[m, k] * B[k, n])",
    ),
    sizes: [{ M: 77, N: 45, K: 33 }, { M: 13, N: 7, K: 5 }],
  },
  // K edge cases.
  {
    name: "K smaller than one tile",
    source: kernel(`${F16_MN}; D: f32[M, N]`, "D[m, n] = A[m, k] * B[k, n]"),
    sizes: [{ M: 64, N: 64, K: 8 }, { M: 80, N: 72, K: 16 }],
  },
  {
    name: "K not a multiple of the tile",
    source: kernel(`${F16_MN}; D: f32[M, N]`, "D[m, n] = A[m, k] * B[k, n]"),
    sizes: [{ M: 64, N: 64, K: 72 }, { M: 80, N: 72, K: 200 }],
  },
  {
    name: "s8 K not a multiple of the tile",
    source: kernel(
      "A: s8[M, K]; B: s8[K, N] col; D: s32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      SMALL8,
    ),
    sizes: [{ M: 64, N: 64, K: 48 }, { M: 64, N: 64, K: 144 }],
  },
  // Rasterisation: N spans 3 tiles, so no swizzle group divides the grid.
  ...[2, 4, 8].map((s): Combo => ({
    name: `swizzle ${s}, N spanning 3 tiles`,
    source: kernel(
      `${F16_MN}; D: f32[M, N]`,
      "D[m, n] = A[m, k] * B[k, n]",
      sched("32x32x32", "32x32x32", `swizzle ${s}`),
    ),
    sizes: [{ M: 70, N: 88, K: 64 }],
  })),
  // Pipeline depth.
  {
    name: "stages 2",
    source: kernel(
      `${F16_MN}; D: f32[M, N]`,
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x32", "32x32x32", "stages 2"),
    ),
    sizes: [{ M: 80, N: 72, K: 160 }, { M: 64, N: 64, K: 32 }],
    ir: /wait 0\n[^]*for [^]*wait 0\n/,
  },
  {
    name: "stages 5",
    source: kernel(
      `${F16_MN}; D: f32[M, N]`,
      "D[m, n] = A[m, k] * B[k, n]",
      sched("64x64x32", "32x32x32", "stages 5"),
    ),
    sizes: [{ M: 80, N: 72, K: 224 }, { M: 64, N: 64, K: 64 }],
    ir: /wait 3\n/,
  },
  // A round of copies that only some threads make (B: 16 rows x 4 copies for
  // 128 threads): the others must copy nothing (they once zero-filled 16 bytes
  // past the tile, out of shared memory here).
  {
    name: "partial round of copies (128x16 tile, 4 warps)",
    source: kernel(
      `${F16_MN}; D: f32[M, N]`,
      "D[m, n] = A[m, k] * B[k, n]",
      sched("128x16x32", "32x16x32", "stages 3"),
    ),
    sizes: [{ M: 100, N: 40, K: 96 }],
    ir: /@%\w+ cpasync/,
  },
  // Tiles that are not powers of two, and warp tiles too large for two
  // fragment buffers (the next k-step's loads interleaved with the MMAs).
  {
    name: "f16 192x256 tile of 96x64 warps (interleaved fragments)",
    source: kernel(
      `${F16_MN}; D: f16[M, N]`,
      "D[m, n] = f16(A[m, k] * B[k, n])",
      sched("192x256x32", "96x64x32", "stages 3"),
    ),
    sizes: [{ M: 200, N: 264, K: 96 }],
    fragments: "interleaved",
  },
  {
    name: "f16 160x96 tile of 80x48 warps, runtime sizes past the tile",
    source: kernel(
      `${F16_MN}; D: f32[M, N]`,
      "D[m, n] = A[m, k] * B[k, n]",
      sched("160x96x32", "80x48x32", "stages 3"),
    ),
    sizes: [{ M: 170, N: 200, K: 64 }],
    fragments: "double",
  },
  {
    name: "tf32 96x128 tile of 96x64 warps (interleaved fragments)",
    source: kernel(
      "A: f32[M, K] row; B: f32[K, N] col; D: f32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("96x128x16", "96x64x16", "stages 3"),
    ),
    sizes: [{ M: 100, N: 136, K: 48 }],
    mma: "m16n8k8.tf32.f32",
    fragments: "interleaved",
  },
  {
    name: "s8 192x128 tile of 96x64 warps (interleaved fragments)",
    source: kernel(
      "A: s8[M, K] row; B: s8[K, N] col; D: s32[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      sched("192x128x64", "96x64x64", "stages 3"),
    ),
    sizes: [{ M: 200, N: 136, K: 128 }],
    fragments: "interleaved",
  },
  // Batched variants.
  {
    name: "batched with shared B, batch-broadcast bias[l, n]",
    source: kernel(
      "A: f16[L, M, K]; B: f16[K, N] col; bias: f32[L, N]; D: f32[L, M, N]",
      "D[l, m, n] = A[l, m, k] * B[k, n] + bias[l, n]",
    ),
    sizes: [{ M: 40, N: 24, K: 64, L: 3 }],
  },
  {
    // bad_inputs/batch_bias_col.gemm declared this vector "col", which the
    // kernel never honoured (it reads batch outermost): that is an E0117 now
    // (tests/bad_inputs_test.ts); the batched vector itself still agrees.
    name: "batched bias[l, n] with batched B",
    source: kernel(
      "A: f16[L, M, K]; B: f16[L, K, N] col; bias: f32[L, N]; D: f32[L, M, N]",
      "D[l, m, n] = A[l, m, k] * B[l, k, n] + bias[l, n]",
    ),
    sizes: [{ M: 16, N: 16, K: 16, L: 4 }],
  },
  {
    name: "batched with column-major C, bias[n] and beta",
    source: kernel(
      "A: f16[L, M, K]; B: f16[L, K, N] col; C: f32[L, M, N] col; bias: f32[N]; " +
        "D: f32[L, M, N]; beta: f32",
      "D[l, m, n] = A[l, m, k] * B[l, k, n] + beta * C[l, m, n] + bias[n]",
    ),
    sizes: [{ M: 40, N: 24, K: 64, L: 3 }],
  },
  {
    name: "batched s8",
    source: kernel(
      "A: s8[L, M, K]; B: s8[L, K, N] col; D: s32[L, M, N]",
      "D[l, m, n] = A[l, m, k] * B[l, k, n]",
      SMALL8,
    ),
    sizes: [{ M: 40, N: 24, K: 128, L: 3 }],
  },
  // Found by an independent fuzzer (/work/shared/bad_inputs).
  {
    // u8 dot products beyond f16's range: +Inf on both sides agrees.
    name: "u8 x u8 into f16 D, overflowing to Inf (bad_inputs/f16_overflow_inf_mismatch.gemm)",
    source: kernel(
      "A: u8[M, K]; B: u8[K, N] col; D: f16[M, N]",
      "D[m, n] = A[m, k] * B[k, n]",
      SMALL8,
    ),
    sizes: [{ M: 16, N: 16, K: 16 }],
  },
  {
    // The f32 epilogue rounds at |beta| while the result is tiny: the bound
    // follows the largest intermediate, not the output.
    name: "cancellation in the epilogue (bad_inputs/epilogue_cancellation_bound.gemm)",
    source: kernel(
      "A: f16[M, K]; B: f16[K, N] col; C: f32[M, N]; D: f32[M, N]; beta: f32",
      "D[m, n] = beta - (min(A[m, k] * B[k, n], C[m, n]) + beta)",
    ),
    sizes: [{ M: 64, N: 64, K: 16 }],
  },
  // Found by tests/fuzz.ts.
  {
    name: "SIMT 16x80 warps, align 1, D column-major (a shared address base below another)",
    source: kernel(
      "A: f32[M, K] row align 1; B: f32[K, N] col align 1; D: f32[M, N] col align 1",
      "D[m, n] = silu(A[m, k] * B[k, n])",
      sched("128x160x32", "16x80x32", "math f32", "stages 3"),
    ),
    sizes: [{ M: 143, N: 109, K: 41 }],
    ir: /= mad\.f32/,
  },
];

for (const combo of COMBOS) {
  const seeds = combo.sizes.map(() => nextSeed());
  Deno.test(`combination: ${combo.name}`, () => {
    const [ck] = compileSource(combo.source, `<${combo.name}>`);
    if (combo.ir !== undefined) assert.match(ck!.kernelText, combo.ir, combo.name);
    if (combo.mma !== undefined) assert.equal(ck!.planned.plan.mma?.shape, combo.mma);
    if (combo.fragments !== undefined) {
      assert.equal(ck!.planned.plan.mma?.fragments, combo.fragments);
    }
    combo.sizes.forEach((sizes, i) => expectAgrees(ck!, { ...sizes }, seeds[i]!, combo.scalars));
  });
}

Deno.test("seeds matter: two seeds draw different inputs, both agree", () => {
  const [ck] = compileSource(
    kernel(`${F16_MN}; D: f32[M, N]`, "D[m, n] = A[m, k] * B[k, n]"),
    "<seeds>",
  );
  const a = expectAgrees(ck!, ODD, 11);
  const b = expectAgrees(ck!, ODD, 12);
  assert.notDeepEqual(a.args.tensors.get("A"), b.args.tensors.get("A"));
  assert.notDeepEqual(a.output, b.output);
});

Deno.test("mod.ts exports simulate and simulateGemm", async () => {
  const api = await import("../mod.ts");
  const r = api.compile(
    kernel("A: s8[M, K]; B: s8[K, N] col; D: s32[M, N]", "D[m, n] = A[m, k] * B[k, n]", SMALL8),
  );
  assert.ok(r.ok);
  const ck = r.kernels[0]!;
  const rep: import("../mod.ts").SimulateReport = api.simulateGemm(ck, { M: 40, N: 24, K: 64 }, {
    seed: 3,
  });
  assert.ok(rep.ok && rep.comparison.maxAbsError === 0);
  const args = api.randomArgs(ck.gemm, rep.sizes, 3);
  const res: import("../mod.ts").SimResult = api.simulate(ck.kernel, {
    grid: rep.grid,
    args: api.simArgs(args),
  });
  assert.equal(res.hazardCount, 0);
  assert.deepEqual(args.tensors.get("D"), rep.output);
  assert.ok(new api.SimError("x") instanceof Error);
});
