/**
 * The PTX of real kernels: every example (each of its kernels) and a set of
 * type/layout/epilogue combinations beyond the examples assemble with
 * `ptxas` for sm_80 and sm_86, with no spills and no stack frame at the
 * default schedules; golden PTX snapshots of two examples; and
 * `gemm compile --ptxas` on the command line.
 *
 * Without ptxas these tests are skipped, visibly ("(skipped: no ptxas)"),
 * except under `CI=true`, where a missing ptxas is a failure.
 *
 * ptxas takes about a second per kernel, so every assembly of this file is
 * started, a few at a time, by the first test that needs one, and each test
 * waits for its own (the tests therefore turn off Deno's op sanitizer).
 *
 * Regenerate the snapshots with
 * `UPDATE_GOLDEN=1 deno task test tests/ptx_examples_test.ts` and read the diff.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, formatDiagnostics, ptxModule } from "../compiler.ts";
import { type PtxasResult, runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { ptxTarget } from "../backends/ptx/print.ts";
import type { Target } from "../ir/gemm.ts";
import { type PtxTarget, TARGET_NAMES, targetInfo } from "../ir/target.ts";
import { gemm } from "./_cli.ts";
import { examples, ROOT } from "./_examples.ts";

const UPDATE = Deno.env.get("UPDATE_GOLDEN") === "1";
/** The targets' PTX spellings, for test names: `sm_80 and sm_86`. */
const ARCHS = TARGET_NAMES.map(ptxTarget).join(" and ");

// ---- what to assemble ------------------------------------------------------------------------

function compileOk(text: string, file: string, target: Target): CompiledKernel[] {
  const r = compile(text, { file, target });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, text));
  assert.ok(r.kernels.length >= 1);
  return [...r.kernels];
}

/** A combination beyond the examples: a program, and what its plan must show. */
interface Combo {
  readonly name: string;
  readonly text: string;
  /** A fact of the compiled kernel that makes the combination what it claims to be. */
  readonly check: (k: CompiledKernel) => void;
}

function kernelOf(
  decls: readonly string[],
  stmt: string,
  schedule: readonly string[] = [],
): string {
  return `kernel k {\n${decls.map((d) => `  ${d}\n`).join("")}\n  ${stmt}\n` +
    (schedule.length > 0
      ? `\n  schedule {\n${schedule.map((l) => `    ${l}\n`).join("")}  }\n`
      : "") +
    "}\n";
}

const loads = (k: CompiledKernel) => `${k.planned.plan.mma!.aLoad}/${k.planned.plan.mma!.bLoad}`;
const mmaRow = (k: CompiledKernel) => k.planned.plan.mma!.shape;
const has = (k: CompiledKernel, re: RegExp) => assert.match(k.kernelText, re);

const GEMM = "D[m, n] = A[m, k] * B[k, n]";

const COMBOS: readonly Combo[] = [
  {
    name: "f16 A col-major, B row-major (ldmatrix.trans)",
    text: kernelOf(["A: f16[M, K] col", "B: f16[K, N] row", "D: f32[M, N] row"], GEMM),
    check: (k) => {
      assert.equal(loads(k), "ldmatrix.trans/ldmatrix.trans");
      has(k, /= ldmatrix\.x\d\.trans /);
    },
  },
  {
    name: "tf32 A col-major (ld.shared)",
    text: kernelOf(["A: f32[M, K] col", "B: f32[K, N] col", "D: f32[M, N] row"], GEMM),
    check: (k) => {
      assert.equal(loads(k), "lds/ldmatrix");
      has(k, /= lds\.b32 /);
    },
  },
  {
    name: "tf32 B row-major (ld.shared), mma 16x8x4",
    text: kernelOf(
      ["A: f32[M, K] row", "B: f32[K, N] row", "D: f32[M, N] row"],
      GEMM,
      ["mma 16x8x4"],
    ),
    check: (k) => {
      assert.equal(loads(k), "ldmatrix/lds");
      assert.equal(mmaRow(k), "m16n8k4.tf32.f32");
    },
  },
  {
    name: "bf16 mma 16x8x8",
    text: kernelOf(
      ["A: bf16[M, K] row", "B: bf16[K, N] col", "D: bf16[M, N] row"],
      GEMM,
      ["mma 16x8x8"],
    ),
    check: (k) => assert.equal(mmaRow(k), "m16n8k8.bf16.f32"),
  },
  {
    name: "f16 mma 16x8x8",
    text: kernelOf(
      ["A: f16[M, K] row", "B: f16[K, N] col", "D: f32[M, N] row"],
      GEMM,
      ["mma 16x8x8"],
    ),
    check: (k) => assert.equal(mmaRow(k), "m16n8k8.f16.f32"),
  },
  {
    name: "s8 mma 16x8x16, s8 output",
    text: kernelOf(
      ["A: s8[M, K] row", "B: s8[K, N] col", "D: s8[M, N] row align 4"],
      "D[m, n] = s8(A[m, k] * B[k, n])",
      ["mma 16x8x16"],
    ),
    check: (k) => {
      assert.equal(mmaRow(k), "m16n8k16.s8.s32");
      // Saturated to [-128, 127], staged a byte at a time, stored 4 bytes (align 4) at a time.
      has(k, /= max\.s32 %s\d+, -128\n.*= min\.s32 %s\d+, 127\n/);
      has(k, /sts\.b8 /);
      has(k, /stg\.b32 /);
    },
  },
  {
    name: "s4 mma 16x8x32",
    text: kernelOf(
      ["A: s4[M, K] row", "B: s4[K, N] col", "D: s32[M, N] row"],
      GEMM,
      ["mma 16x8x32"],
    ),
    check: (k) => assert.equal(mmaRow(k), "m16n8k32.s4.s32"),
  },
  {
    name: "u4 x s4 (mixed signedness)",
    text: kernelOf(["A: u4[M, K] row", "B: s4[K, N] col", "D: s32[M, N] row"], GEMM),
    check: (k) => assert.equal(mmaRow(k), "m16n8k64.u4.s4.s32"),
  },
  {
    name: "b1 mma 16x8x128 (xor)",
    text: kernelOf(
      ["A: b1[M, K] row", "B: b1[K, N] col", "D: s32[M, N] row"],
      "D[m, n] = popc(A[m, k] ^ B[k, n])",
      ["mma 16x8x128"],
    ),
    check: (k) => assert.equal(mmaRow(k), "m16n8k128.b1.s32.xor.popc"),
  },
  {
    name: "f16 accumulate f16, f16 output with alpha and beta * C",
    text: kernelOf(
      [
        "A: f16[M, K] row",
        "B: f16[K, N] col",
        "C: f16[M, N] row",
        "D: f16[M, N] row",
        "alpha: f32 = 1.0",
        "beta: f32 = 0.5",
      ],
      "D[m, n] = f16(alpha * A[m, k] * B[k, n] + beta * C[m, n])",
      ["accumulate f16"],
    ),
    check: (k) => {
      assert.equal(mmaRow(k), "m16n8k16.f16.f16");
      has(k, /cvt\.f16\.f32 /);
    },
  },
  {
    name: "f64 output from f32 (tf32) operands",
    text: kernelOf(
      ["A: f32[M, K] row", "B: f32[K, N] col", "D: f64[M, N] row"],
      "D[m, n] = f64(A[m, k] * B[k, n])",
    ),
    check: (k) => has(k, /cvt\.f64\.f32 /),
  },
  {
    name: "f32 output from f64 operands",
    text: kernelOf(
      ["A: f64[M, K] row", "B: f64[K, N] col", "D: f32[M, N] row"],
      "D[m, n] = f32(A[m, k] * B[k, n])",
    ),
    check: (k) => has(k, /cvt\.f32\.f64 /),
  },
  {
    name: "bf16 output from f16 operands, with gelu",
    text: kernelOf(
      ["A: f16[M, K] row", "B: f16[K, N] col", "D: bf16[M, N] row"],
      "D[m, n] = bf16(gelu(A[m, k] * B[k, n]))",
    ),
    check: (k) => has(k, /cvt\.bf16\.f32 /),
  },
  {
    name: "f64 GEMM with tanh and exp (evaluated in f32, converted back)",
    text: kernelOf(
      ["A: f64[M, K] row", "B: f64[K, N] col", "D: f64[M, N] row"],
      "D[m, n] = exp(tanh(A[m, k] * B[k, n]))",
    ),
    check: (k) => {
      // In f32 between conversions: tanh, then exp as 2^(x log2(e)).
      has(k, /= cvt\.f32\.f64 %fd\d+\n.*= tanh\.f32 %f\d+\n.*= cvt\.f64\.f32 %f\d+\n/);
      has(k, /= mul\.f32 %f\d+, 1\.44269\d*\n.*= ex2\.f32 %f\d+\n.*= cvt\.f64\.f32 /);
    },
  },
  {
    name: "s8 GEMM with tanh to s8 (float compute)",
    text: kernelOf(
      ["A: s8[M, K] row", "B: s8[K, N] col", "D: s8[M, N] row align 4"],
      "D[m, n] = s8(127 * tanh(0.01 * A[m, k] * B[k, n]))",
    ),
    check: (k) => {
      assert.equal(k.gemm.epilogue.compute, "f32");
      has(k, /= tanh\.f32 /);
    },
  },
  {
    name: "s32 output from f16 operands",
    text: kernelOf(
      ["A: f16[M, K] row", "B: f16[K, N] col", "D: s32[M, N] row"],
      "D[m, n] = s32(A[m, k] * B[k, n])",
    ),
    check: (k) => has(k, /cvt\.s32\.f32 /),
  },
  {
    name: "u8 output from s8 operands, clamp and a per-row bias",
    text: kernelOf(
      ["A: s8[M, K] row", "B: s8[K, N] col", "bias: s32[M]", "D: u8[M, N] row align 4"],
      "D[m, n] = u8(clamp(A[m, k] * B[k, n] + bias[m], 0, 255))",
    ),
    check: (k) => {
      has(k, /= max\.s32 %s\d+, 0\n.*= min\.s32 %s\d+, 255\n/);
      // Staged through shared memory, except sm90's 128x224 wgmma tile: a warp row of 224
      // bytes is 56 vectors of D's 4 bytes, more than the staged epilogue's 32, so it stores
      // a byte at a time (a shortcut of issue 23).
      if (k.planned.plan.mma!.wgmma === undefined) {
        has(k, /sts\.b8 /);
        has(k, /stg\.b32 /);
      } else has(k, /stg\.b8 /);
    },
  },
  {
    name: "f16 output from f32 (tf32) operands, sigmoid, min and abs",
    text: kernelOf(
      ["A: f32[M, K] row", "B: f32[K, N] col", "D: f16[M, N] row"],
      "D[m, n] = f16(min(abs(sigmoid(A[m, k] * B[k, n])), 0.75))",
    ),
    check: (k) => has(k, /cvt\.f16\.f32 /),
  },
  {
    name: "column-major D and C",
    text: kernelOf(
      [
        "A: f16[M, K] row",
        "B: f16[K, N] col",
        "C: f32[M, N] col",
        "D: f32[M, N] col",
        "beta: f32 = 1.0",
      ],
      "D[m, n] = A[m, k] * B[k, n] + beta * C[m, n]",
    ),
    check: (k) => assert.equal(k.planned.problem.d.layout, "col"),
  },
  {
    name: "batched A and D with a broadcast (unbatched) B",
    text: kernelOf(
      ["A: f16[L, M, K] row", "B: f16[K, N] col", "D: f32[L, M, N] row"],
      "D[l, m, n] = A[l, m, k] * B[k, n]",
    ),
    check: (k) => {
      assert.equal(k.planned.problem.a.batched, true);
      assert.equal(k.planned.problem.b.batched, false);
      assert.equal(k.kernel.grid.batch, "L");
    },
  },
  {
    name: "align 4 / align 2 f16 operands (cp.async of 8 and 4 bytes)",
    text: kernelOf(
      ["A: f16[M, K] row align 4", "B: f16[K, N] col align 2", "D: f32[M, N] row align 2"],
      GEMM,
    ),
    check: (k) => {
      has(k, /cpasync\.ca\.8 /);
      has(k, /cpasync\.ca\.4 /);
    },
  },
  {
    name: "align 1 s8 operands (synchronous byte copies)",
    text: kernelOf(
      ["A: s8[M, K] row align 1", "B: s8[K, N] col align 1", "D: s32[M, N] row align 1"],
      GEMM,
    ),
    check: (k) => {
      assert.equal(k.planned.plan.pipeline!.a.async, false);
      has(k, /sts\.b8 /);
    },
  },
  {
    name: "f64 col-major A and row-major B (ld.shared)",
    text: kernelOf(["A: f64[M, K] col", "B: f64[K, N] row", "D: f64[M, N] row"], GEMM),
    check: (k) => assert.equal(loads(k), "lds/lds"),
  },
  {
    name: "L2 cache hints on both operands (cp.async; sm90: TMA)",
    text: kernelOf(
      ["A: f16[M, K] row", "B: f16[K, N] col", "D: f32[M, N] row"],
      GEMM,
      ["cache_a evict_last", "cache_b evict_first"],
    ),
    check: (k) => {
      assert.equal(k.ptx.match(/createpolicy\.fractional\.L2::evict_last\.b64 /g)?.length, 1);
      assert.equal(k.ptx.match(/createpolicy\.fractional\.L2::evict_first\.b64 /g)?.length, 1);
      has(
        k,
        k.kernel.target === "sm90" ? /tma\.L2::cache_hint / : /cpasync\.cg\.16\.L2::cache_hint/,
      );
    },
  },
  {
    name: "L2 cache hint on a SIMT A transposed through registers (ld.global)",
    text: kernelOf(
      ["A: f32[M, K] row", "B: f32[K, N] col", "D: f32[M, N] row"],
      GEMM,
      ["math f32", "cache_a evict_first"],
    ),
    check: (k) => {
      has(k, /= ldg\.L2::cache_hint\.b32 /);
      assert.doesNotMatch(k.kernelText, /cpasync[^\n]*cache_hint/);
    },
  },
];

// ---- the assembly pool -----------------------------------------------------------------------

interface Job {
  readonly key: string;
  readonly ptx: string;
  readonly arch: PtxTarget;
  resolve: (r: PtxasResult) => void;
  reject: (e: unknown) => void;
  readonly result: Promise<PtxasResult>;
}

/** Every assembly of this file, by key (`EXAMPLE/KERNEL/TARGET`, `combo:NAME/TARGET`). */
function allJobs(): Map<string, Job> {
  const jobs = new Map<string, Job>();
  const add = (key: string, k: CompiledKernel, target: Target) => {
    let resolve!: (r: PtxasResult) => void;
    let reject!: (e: unknown) => void;
    const result = new Promise<PtxasResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    jobs.set(key, { key, ptx: k.ptx, arch: ptxTarget(target), resolve, reject, result });
  };
  for (const name of examples()) {
    const file = `examples/${name}.gemm`;
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    for (const target of TARGET_NAMES) {
      for (const k of compile(text, { file, target }).kernels) {
        add(`${name}/${k.name}/${target}`, k, target);
      }
    }
  }
  for (const c of COMBOS) {
    for (const target of TARGET_NAMES) {
      const k = compile(c.text, { file: `${c.name}.gemm`, target }).kernels[0];
      if (k !== undefined) add(`combo:${c.name}/${target}`, k, target); // Else its own test fails.
    }
  }
  return jobs;
}

let jobs: Map<string, Job> | undefined;
/** Jobs not yet started, in the order of the tests. */
const queue: Job[] = [];

/**
 * The ptxas results of some assemblies. The first call starts a pool that
 * runs every assembly of this file, a few at a time; the jobs asked for jump
 * the queue.
 */
async function assembled(ptxas: string, keys: readonly string[]): Promise<PtxasResult[]> {
  const first = jobs === undefined;
  if (jobs === undefined) {
    jobs = allJobs();
    queue.push(...jobs.values());
  }
  const mine = keys.map((key) => {
    const job = jobs!.get(key);
    assert.ok(job !== undefined, `no assembly for ${key}`);
    return job;
  });
  const waiting = mine.filter((j) => queue.includes(j));
  queue.splice(0, queue.length, ...waiting, ...queue.filter((j) => !waiting.includes(j)));
  if (first) {
    const width = Math.max(2, Math.min(8, navigator.hardwareConcurrency));
    const worker = async () => {
      for (let j = queue.shift(); j !== undefined; j = queue.shift()) {
        try {
          j.resolve(await runPtxas(j.ptx, { arch: j.arch, ptxasPath: ptxas }));
        } catch (e) {
          j.reject(e);
        }
      }
    };
    for (let i = 0; i < width; i++) worker();
  }
  return await Promise.all(mine.map((j) => j.result));
}

/** Accepted, one entry of that name, no spills, no stack frame, at most 255 registers. */
function assertClean(r: PtxasResult, entry: string, what: string): void {
  assert.ok(r.ok, `${what}: ptxas rejected it:\n${r.log}`);
  assert.deepEqual(r.kernels.map((k) => k.name), [entry], what);
  const k = r.kernels[0]!;
  assert.ok(k.registers > 0 && k.registers <= 255, `${what}: ${k.registers} registers`);
  assert.equal(k.spillStoreBytes, 0, `${what}: ${k.spillStoreBytes} bytes spill stores`);
  assert.equal(k.spillLoadBytes, 0, `${what}: ${k.spillLoadBytes} bytes spill loads`);
  assert.equal(k.stackFrameBytes, 0, `${what}: ${k.stackFrameBytes} bytes stack frame`);
  // The only shared memory is the dynamic buffer, which ptxas does not count.
  assert.equal(k.sharedBytes, 0, what);
}

// ---- every example -------------------------------------------------------------------------

for (const name of examples()) {
  ptxasTest(
    `ptxas: examples/${name}.gemm assembles for ${ARCHS} without spills`,
    async (ptxas) => {
      const file = `examples/${name}.gemm`;
      const text = Deno.readTextFileSync(new URL(file, ROOT));
      const kernels = TARGET_NAMES.flatMap((target) =>
        compileOk(text, file, target).map((k) => ({ key: `${name}/${k.name}/${target}`, k }))
      );
      const results = await assembled(ptxas, kernels.map((x) => x.key));
      kernels.forEach(({ key, k }, i) => assertClean(results[i]!, k.name, key));
    },
  );
}

// ---- combinations beyond the examples -------------------------------------------------------

for (const c of COMBOS) {
  Deno.test(`combination compiles and is what it claims: ${c.name}`, () => {
    for (const target of TARGET_NAMES) {
      const [k] = compileOk(c.text, `${c.name}.gemm`, target);
      c.check(k!);
    }
  });
  ptxasTest(`ptxas: ${c.name}: ${ARCHS} without spills`, async (ptxas) => {
    const keys = TARGET_NAMES.map((target) => `combo:${c.name}/${target}`);
    const results = await assembled(ptxas, keys);
    keys.forEach((key, i) => assertClean(results[i]!, "k", key));
  });
}

Deno.test("combinations: every one is distinct", () => {
  const texts = new Set(COMBOS.map((c) => c.text));
  assert.equal(texts.size, COMBOS.length);
  // Every MMA row the combinations and examples use, as a reviewer's checklist.
  const rows = new Set<string>();
  for (const c of COMBOS) rows.add(mmaRow(compileOk(c.text, "c.gemm", "sm80")[0]!));
  for (const name of examples()) {
    const file = `examples/${name}.gemm`;
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    for (const k of compileOk(text, file, "sm80")) rows.add(mmaRow(k));
  }
  for (
    const want of [
      "m16n8k16.f16.f32",
      "m16n8k16.f16.f16",
      "m16n8k8.f16.f32",
      "m16n8k16.bf16.f32",
      "m16n8k8.bf16.f32",
      "m16n8k8.tf32.f32",
      "m16n8k4.tf32.f32",
      "m8n8k4.f64.f64",
      "m16n8k32.s8.s32",
      "m16n8k16.s8.s32",
      "m16n8k32.u8.s8.s32",
      "m16n8k64.s4.s32",
      "m16n8k32.s4.s32",
      "m16n8k64.u4.s32",
      "m16n8k256.b1.s32.and.popc",
      "m16n8k256.b1.s32.xor.popc",
      "m16n8k128.b1.s32.xor.popc",
    ]
  ) {
    assert.ok(rows.has(want), `no kernel uses ${want}`);
  }
});

// ---- golden PTX snapshots --------------------------------------------------------------------

const SNAPSHOTS = ["hgemm", "s8_gemm"] as const;

for (const name of SNAPSHOTS) {
  Deno.test(`golden PTX: examples/${name}.gemm (sm_80)`, () => {
    const file = `examples/${name}.gemm`;
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    const ptx = ptxModule(compileOk(text, file, "sm80"));
    const golden = new URL(`tests/golden/ptx_examples/${name}.ptx`, ROOT);
    if (UPDATE) {
      Deno.mkdirSync(new URL("tests/golden/ptx_examples/", ROOT), { recursive: true });
      Deno.writeTextFileSync(golden, ptx);
    }
    let want: string;
    try {
      want = Deno.readTextFileSync(golden);
    } catch {
      assert.fail(`No golden tests/golden/ptx_examples/${name}.ptx: run with UPDATE_GOLDEN=1`);
    }
    assert.equal(ptx, want);
    // Every target prints its own target line (and what that changes in the plan, if anything).
    for (const t of TARGET_NAMES) {
      const each = ptxModule(compileOk(text, file, t));
      assert.match(each, new RegExp(`^\\.target ${ptxTarget(t)}$`, "m"), t);
      assert.match(
        each,
        new RegExp(`^\\.version ${targetInfo(t).ptxVersion.replace(".", "\\.")}$`, "m"),
      );
    }
  });
}

Deno.test("golden PTX: one per snapshot, none stale", () => {
  const files = [...Deno.readDirSync(new URL("tests/golden/ptx_examples/", ROOT))]
    .map((e) => e.name).sort();
  assert.deepEqual(files, SNAPSHOTS.map((n) => `${n}.ptx`).sort());
});

// ---- the CLI -------------------------------------------------------------------------------

Deno.test("cli: gemm compile --emit ptx prints the golden module", async () => {
  const r = await gemm("compile", "examples/s8_gemm.gemm", "--emit", "ptx");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
  assert.equal(
    r.stdout,
    Deno.readTextFileSync(new URL("tests/golden/ptx_examples/s8_gemm.ptx", ROOT)),
  );
});

ptxasTest(
  "cli: gemm compile examples/hgemm.gemm --ptxas prints registers and no spills",
  async () => {
    const r = await gemm("compile", "examples/hgemm.gemm", "--ptxas", "-o", "/dev/null");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    const m =
      /^ptxas -arch=sm_80:\nhgemm: \d+ registers, 0 bytes shared, 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads; (\d+) bytes dynamic shared memory at launch\n$/
        .exec(r.stdout);
    assert.ok(m !== null, r.stdout);
    // ptxas counts static shared memory only: the kernel asks for its own at launch.
    const lib = compile(Deno.readTextFileSync(new URL("examples/hgemm.gemm", ROOT)));
    assert.equal(Number(m[1]), lib.kernels[0]!.manifest.dynamicSmemBytes);
    assert.ok(Number(m[1]) > 0);
  },
);

ptxasTest("cli: gemm compile --ptxas --target sm86 reports every kernel of a file", async () => {
  const r = await gemm(
    "compile",
    "examples/two_kernels.gemm",
    "--emit",
    "ptx",
    "-o",
    "/dev/null",
    "--ptxas",
    "--target",
    "sm86",
  );
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split("\n");
  assert.equal(lines[0], "ptxas -arch=sm_86:");
  assert.deepEqual(lines.slice(1).map((l) => l.split(":")[0]), ["proj_gelu", "gate_silu"]);
  for (const l of lines.slice(1)) assert.match(l, / registers, .* 0 bytes spill stores, /);
});
