/**
 * Runs a compiled GEMM on the GPU through the CUDA driver and checks it:
 * sizes and alignments are checked before anything touches the driver;
 * inputs are random (never zeros) and the output poisoned; the kernel is
 * loaded once and launched on the inputs' device buffers through the launch
 * API (backends/cuda/kernel.ts `loadKernel`, which checks every launch
 * against the contract and keeps the split-K workspace); the output is compared with the reference GEMM (in full, or
 * on sampled rows and columns above a budget) and, on request, with the
 * simulator running the same kernel IR on the same inputs (integers:
 * identical; floats: the largest ulp difference); then the kernel is timed
 * (warm-up launches, then the median of timed launches, each between two
 * events).
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import { gridFor } from "../ir/kernel.ts";
import { type DimRef, type TensorParam, tensorParam } from "../ir/gemm.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { type LaunchArgs, randomArgs, scalarValueProblem } from "./inputs.ts";
import { dimValue, forEachInView, tensorShape } from "./tensor.ts";
import { alignmentViolations, resolveSizes } from "./sizes.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import {
  Cuda,
  type DeviceBuffer,
  type DeviceInfo,
  type FunctionAttributes,
  type JitInfo,
} from "../backends/cuda/driver.ts";
import { type LoadedKernel, loadKernel } from "../backends/cuda/kernel.ts";
import { median, timeLaunches } from "./timing.ts";
import {
  chooseBlocks,
  chooseReferenceSample,
  poisonByte,
  type ReferenceCheck,
  referenceCheck,
  type SimAgreement,
  simAgreement,
  unwrittenCount,
} from "./checks.ts";

/** What to compare the GPU's output with. */
export type RunCheck = "ref" | "sim" | "none";

/** Every {@link RunCheck}, for validating the option. */
export const RUN_CHECKS: readonly string[] = ["ref", "sim", "none"] satisfies RunCheck[];

/** Options of {@link runGemm}. */
export interface RunOptions {
  /** Seed of the random inputs (default 1). */
  readonly seed?: number;
  /** Timed launches (default 20; 0: no timing). */
  readonly iters?: number;
  /** Untimed launches before them (default 3). */
  readonly warmup?: number;
  /** `ref` (default): the reference GEMM; `sim`: also the simulator; `none`: neither. */
  readonly check?: RunCheck;
  /** Copies of the inputs the timed launches rotate among, so that they miss in L2 (default 1). */
  readonly inputSets?: number;
  /** Scalar values (default: random, as `gemm simulate`). */
  readonly scalars?: Readonly<Record<string, number>>;
  /** Inputs to use instead of random ones (their buffers are checked against the sizes). */
  readonly args?: LaunchArgs;
  /** Above this many multiply-adds the reference runs on sampled rows and columns (default 2^26). */
  readonly refMaxMacs?: number;
  /** Above this many multiply-adds the simulator runs a sample of blocks (default 2^27). */
  readonly simMaxMacs?: number;
  /** Check shared-memory hazards in the simulator (default true). */
  readonly hazards?: boolean;
  /**
   * The driver: an open handle (left open), or a function opening one
   * (called only after every check on the sizes has passed; the handle is
   * closed at the end). Default: {@link Cuda.open}.
   */
  readonly cuda?: Cuda | (() => Cuda);
  /**
   * Make the warm-up and timed launches programmatic dependent launches (backends/cuda/bind.ts
   * `LaunchOptions.pdl`); the checked launch is an ordinary one. Default false.
   */
  readonly pdl?: boolean;
}

/** Launch timings. */
export interface RunTiming {
  /** Untimed launches before the timed ones. */
  readonly warmup: number;
  /** Timed launches. */
  readonly iters: number;
  /** Distinct input sets the timed launches rotate through. */
  readonly inputSets: number;
  /** Each timed launch (ms), in order. */
  readonly samplesMs: readonly number[];
  /** The median launch time (ms). */
  readonly medianMs: number;
  /** The fastest launch (ms). */
  readonly minMs: number;
  /** The slowest launch (ms). */
  readonly maxMs: number;
  /** 2·M·N·K·L operations. */
  readonly ops: number;
  /** ops / median, in 10^12 per second. */
  readonly rate: number;
  /** `TFLOP/s` for float operands, `TOPS` for integer and b1 operands. */
  readonly unit: "TFLOP/s" | "TOPS";
  /** True when the warm-up and timed launches were programmatic dependent launches (`pdl`). */
  readonly pdl?: boolean;
}

/** What {@link runGemm} returns. */
export interface RunReport {
  /** The kernel's name. */
  readonly kernel: string;
  /** The PTX entry launched. */
  readonly entry: string;
  /** The value of every symbolic dimension. */
  readonly sizes: Readonly<Record<string, number>>;
  /** The grid `[x, y, z]` launched, in blocks. */
  readonly grid: readonly [number, number, number];
  /** The block `[x, y, z]`, in threads. */
  readonly block: readonly [number, number, number];
  /** Dynamic shared memory per block, in bytes. */
  readonly dynamicSmemBytes: number;
  /** The device it ran on. */
  readonly device: DeviceInfo;
  /** Registers, local memory (spills) and the like, from the driver. */
  readonly function: FunctionAttributes;
  /** The JIT's log and time. */
  readonly jit: JitInfo;
  /** D's elements still poisoned after the launch (null where the type cannot tell). */
  readonly unwritten: number | null;
  /** Elements of a strided D's gaps the launch wrote (DESIGN §6.1; must be 0). */
  readonly gapWrites: number;
  /** The check against the reference GEMM (null when not asked for). */
  readonly reference: ReferenceCheck | null;
  /** The agreement with the simulator (null when not asked for). */
  readonly sim: SimAgreement | null;
  /** Launch timings (null when not asked for). */
  readonly timing: RunTiming | null;
  /**
   * Nothing unwritten, agreement with the reference (when checked), and with
   * `sim`: no hazard and, for integer outputs, identical to the simulator.
   */
  readonly ok: boolean;
  /** D's bytes as the GPU wrote them (first launch). */
  readonly output: Uint8Array;
  /** The inputs the kernel ran on. */
  readonly args: LaunchArgs;
}

interface GpuPhase {
  readonly output: Uint8Array;
  readonly fnAttrs: FunctionAttributes;
  readonly jit: JitInfo;
  readonly timing: RunTiming | null;
}

/** A count option's value (`dflt` when absent): an integer of at least `min`, else a RangeError naming it. */
export function count(name: string, v: number | undefined, dflt: number, min: number): number {
  const x = v ?? dflt;
  if (!Number.isInteger(x) || x < min) {
    throw new RangeError(`Option ${name} must be an integer of at least ${min}, got ${x}`);
  }
  return x;
}

/**
 * Checks everything about a run that needs no GPU, in the order a launch
 * would meet it: sizes (every dimension given, in range), alignments, given
 * buffers large enough, given scalars legal (finite; s32 a 32-bit integer).
 * Throws one Error listing every problem.
 *
 * @param ck The compiled kernel.
 * @param given Sizes by dimension name or role letter.
 * @param args Given inputs, if any.
 * @returns The resolved sizes.
 * @example
 * ```ts
 * import { deepEqual, throws } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { checkRun } from "./run_gemm.ts";
 * const ck = compile("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }")
 *   .kernels[0]!;
 * deepEqual(checkRun(ck, { M: 64, N: 64, K: 64 }), { M: 64, N: 64, K: 64 });
 * throws(() => checkRun(ck, { M: 64, N: 64 })); // K missing
 * ```
 */
export function checkRun(
  ck: CompiledKernel,
  given: Readonly<Record<string, number>>,
  args?: LaunchArgs,
): Record<string, number> {
  const sizes = resolveSizes(ck.gemm, given);
  const bad = alignmentViolations(ck.gemm, sizes);
  const grid = gridFor(ck.kernel.grid, sizes);
  if (grid.some((g) => g < 1)) {
    bad.push(
      `Kernel "${ck.name}": the sizes give an empty grid [${grid.join(", ")}]: ` +
        "every output dimension must be at least 1",
    );
  }
  if (args !== undefined) {
    for (const p of ck.gemm.params) {
      if (p.kind === "tensor") {
        const need = tensorShape(p, sizes).bytes;
        const b = args.tensors.get(p.name);
        if (b === undefined) bad.push(`No buffer for tensor "${p.name}"`);
        else if (b.byteLength < need) {
          bad.push(
            `Buffer of tensor "${p.name}" holds ${b.byteLength} bytes; the sizes need ${need}`,
          );
        }
      } else {
        const v = args.scalars.get(p.name);
        const problem = v === undefined
          ? `No value for scalar "${p.name}"`
          : scalarValueProblem(p.name, p.dtype, v);
        if (problem !== null) bad.push(problem);
      }
    }
    for (const [n, v] of Object.entries(sizes)) {
      if (args.sizes[n] !== v) {
        bad.push(`The given inputs were made for ${n}=${args.sizes[n]}, not ${n}=${v}`);
      }
    }
  }
  if (bad.length > 0) throw new Error(bad.join("; "));
  return sizes;
}

/**
 * Runs one compiled kernel on the GPU, checks and times it.
 *
 * @param ck The compiled kernel.
 * @param given Sizes by dimension name or role letter (M, N, K, L).
 * @param options Seed, timing, what to check against, the driver.
 * @returns The report.
 * @throws {Error} For sizes, alignments or buffers that do not fit, before any driver call.
 * @throws {CudaUnavailableError} When no driver can be used.
 * @throws {JitError} With the JIT's log when it rejects the PTX.
 * @throws {CudaError} When a driver call fails (a launch fault included).
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { cudaAvailable } from "../backends/cuda/driver.ts";
 * import { runGemm } from "./run_gemm.ts";
 * const ck = compile("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }")
 *   .kernels[0]!;
 * // Without a driver (CI) there is nothing to run; with one, a checked launch.
 * if (cudaAvailable().ok) {
 *   const rep = runGemm(ck, { M: 256, N: 128, K: 64 }, { iters: 0 });
 *   ok(rep.ok && rep.unwritten === 0 && rep.reference?.comparison.ok);
 * }
 * ```
 */
export function runGemm(
  ck: CompiledKernel,
  given: Readonly<Record<string, number>>,
  options: RunOptions = {},
): RunReport {
  // 1. Everything that needs no GPU.
  const sizes = checkRun(ck, given, options.args);
  const seed = options.seed ?? 1;
  const counts = {
    iters: count("iters", options.iters, 20, 0),
    warmup: count("warmup", options.warmup, 3, 0),
    inputSets: count("inputSets", options.inputSets, 1, 1),
    pdl: options.pdl === true,
  };
  const check = options.check ?? "ref";
  if (!RUN_CHECKS.includes(check)) {
    throw new RangeError(`Option check must be ${RUN_CHECKS.join(", ")}, got "${check}"`);
  }
  const args = options.args ?? randomArgs(ck.gemm, sizes, seed, options.scalars ?? {});
  const manifest = kernelManifest(ck.gemm, ck.kernel, sizes);

  // 2. The GPU.
  const owned = typeof options.cuda !== "object";
  const cuda = typeof options.cuda === "object"
    ? options.cuda
    : (options.cuda ?? (() => Cuda.open()))();
  const held: Held = { buffers: [], kernel: null };
  let phase: GpuPhase | null = null;
  let failure: unknown = null;
  try {
    phase = gpuPhase(cuda, ck, sizes, args, counts, held);
  } catch (e) {
    failure = e;
  }
  failure = release(held, owned ? cuda : null, failure);
  if (failure !== null || phase === null) throw failure;
  const { output, fnAttrs, jit, timing } = phase;

  // 3. The checks, on the CPU.
  const grid = manifest.grid!;
  const checks = cpuChecks(ck, sizes, grid, args, output, options, check);
  return {
    kernel: ck.name,
    entry: manifest.entry,
    sizes,
    grid,
    block: manifest.block,
    dynamicSmemBytes: manifest.dynamicSmemBytes,
    device: cuda.device,
    function: fnAttrs,
    jit,
    ...checks,
    timing,
    output,
    args,
  };
}

/** What a run allocated on the device: released by {@link runGemm} whatever happened. */
export interface Held {
  readonly buffers: DeviceBuffer[];
  kernel: LoadedKernel | null;
}

/**
 * Releases what a run made, whatever happened: its buffers, its kernel, then the
 * context when the run opened it. A release failure is kept only when the run itself
 * succeeded.
 *
 * @param held What the run holds.
 * @param owned The context, when the run opened it; null otherwise.
 * @param failure The run's failure, or null.
 * @returns The failure to raise, or null.
 */
export function release(held: Held, owned: Cuda | null, failure: unknown): unknown {
  const attempt = (f: () => void) => {
    try {
      f();
    } catch (e) {
      failure ??= e;
    }
  };
  for (const b of held.buffers) attempt(() => b.free());
  const k = held.kernel;
  if (k !== null) attempt(() => k.close());
  if (owned !== null) attempt(() => owned.close());
  return failure;
}

/** The launch counts of a run, checked, and whether its timed launches are PDL launches. */
export interface Counts {
  readonly iters: number;
  readonly warmup: number;
  readonly inputSets: number;
  readonly pdl: boolean;
}

/**
 * Loads the kernel ({@link loadKernel}), uploads the inputs, launches once
 * (D's bytes come back) and, unless `iters` is 0, times the launches. The
 * loaded kernel checks every launch against the contract and keeps the
 * split-K workspace.
 */
function gpuPhase(
  cuda: Cuda,
  ck: CompiledKernel,
  sizes: Readonly<Record<string, number>>,
  args: LaunchArgs,
  counts: Counts,
  held: Held,
): GpuPhase {
  const kernel = held.kernel = loadKernel(ck, { cuda });
  const fnAttrs = kernel.function.attributes();
  const nSets = counts.iters > 0 ? counts.inputSets : 1;
  const { sets, dBuf } = uploadSets(cuda, ck, args, nSets, held);
  const options = { scalars: Object.fromEntries(args.scalars) };
  // The contract's own dimension names (resolveSizes may know a GEMM dimension no parameter has).
  const dims = Object.fromEntries(
    ck.manifest.params.filter((p) => p.kind === "dim" || p.kind === "stride").map((
      p,
    ) => [p.name, sizes[p.name]!]),
  );
  kernel.launch(sets[0]!, dims, options);
  cuda.synchronize();
  const output = dBuf.download();
  const jit = kernel.module.jit;
  if (counts.iters === 0) return { output, fnAttrs, jit, timing: null };
  const timed = counts.pdl ? { ...options, pdl: true } : options;
  const launch = (i: number) => kernel.launch(sets[i % sets.length]!, dims, timed);
  const samplesMs = timeLaunches(cuda, launch, counts.warmup, counts.iters);
  const timing = runTiming(ck, problemOps(ck, sizes), samplesMs, {
    ...counts,
    inputSets: sets.length,
  });
  return { output, fnAttrs, jit, timing };
}

/**
 * Uploads the inputs: set 0 holds every tensor (D poisoned); sets 1.. copy
 * the inputs and share D.
 *
 * @returns The buffers of each set by tensor name, and D's buffer.
 */
function uploadSets(
  cuda: Cuda,
  ck: CompiledKernel,
  args: LaunchArgs,
  nSets: number,
  held: Held,
): { sets: Record<string, DeviceBuffer>[]; dBuf: DeviceBuffer } {
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  const alloc = (bytes: Uint8Array) => {
    const b = cuda.alloc(bytes.byteLength);
    held.buffers.push(b);
    b.upload(bytes);
    return b;
  };
  const set0: Record<string, DeviceBuffer> = {};
  for (const [n, bytes] of args.tensors) set0[n] = alloc(bytes);
  const dBuf = set0[d.name]!;
  const sets = [set0];
  for (let s = 1; s < nSets; s++) {
    const m: Record<string, DeviceBuffer> = {};
    for (const [n, bytes] of args.tensors) m[n] = n === d.name ? dBuf : alloc(bytes);
    sets.push(m);
  }
  return { sets, dBuf };
}

/** A problem's operations: 2 M N K, times the batch. */
export function problemOps(ck: CompiledKernel, sizes: Readonly<Record<string, number>>): number {
  const p = ck.gemm.problem;
  const dim = (x: DimRef) => dimValue(x, sizes);
  return 2 * dim(p.m) * dim(p.n) * dim(p.k) * (p.batch === null ? 1 : dim(p.batch));
}

/** The timing of a run of `ops` operations a launch from its samples: median, extremes and the
 * rate (also a grouped run's, harness/run_grouped.ts, with every problem's operations). */
export function runTiming(
  ck: CompiledKernel,
  ops: number,
  samplesMs: readonly number[],
  counts: Counts,
): RunTiming {
  const med = median(samplesMs);
  return {
    warmup: counts.warmup,
    iters: counts.iters,
    inputSets: counts.inputSets,
    samplesMs,
    medianMs: med,
    minMs: Math.min(...samplesMs),
    maxMs: Math.max(...samplesMs),
    ops,
    rate: ops / (med * 1e-3) / 1e12,
    unit: DTYPE_INFO[ck.gemm.math.a].float ? "TFLOP/s" : "TOPS",
    ...(counts.pdl ? { pdl: true } : {}),
  };
}

/** The checks of the GPU's output on the CPU, and the verdict of {@link RunReport.ok}. */
function cpuChecks(
  ck: CompiledKernel,
  sizes: Readonly<Record<string, number>>,
  grid: readonly [number, number, number],
  args: LaunchArgs,
  output: Uint8Array,
  options: RunOptions,
  check: RunCheck,
): Pick<RunReport, "unwritten" | "gapWrites" | "reference" | "sim" | "ok"> {
  const seed = options.seed ?? 1;
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  const { unwritten, gapWrites } = writtenCounts(d, sizes, output);
  let reference: ReferenceCheck | null = null;
  let sim: SimAgreement | null = null;
  // Shortcut: a strided kernel's reference is not sampled (gatherTensor packs dense
  // sub-tensors, which the strides would misread); it is computed whole.
  const strided = ck.gemm.params.some((p) => p.kind === "tensor" && p.strides !== undefined);
  if (check !== "none") {
    const sample = strided ? null : chooseReferenceSample(
      ck.gemm,
      sizes,
      options.refMaxMacs ?? 2 ** 26,
      seed,
      { m: ck.kernel.grid.tileM, n: ck.kernel.grid.tileN },
    );
    reference = referenceCheck(ck.gemm, args, output, sample);
  }
  if (check === "sim") {
    const p = ck.gemm.problem;
    const K = dimValue(p.k, sizes);
    const blocks = chooseBlocks(
      ck.kernel.grid,
      grid,
      K,
      options.simMaxMacs ?? 2 ** 27,
      seed,
      sizes,
    );
    sim = simAgreement(ck.gemm, ck.kernel, grid, args, output, {
      blocks,
      hazards: options.hazards ?? true,
    });
  }
  const intOut = !DTYPE_INFO[d.dtype].float;
  const ok = (unwritten ?? 0) === 0 && gapWrites === 0 &&
    (reference === null || reference.comparison.ok) &&
    (sim === null || (sim.hazardCount === 0 && (!intOut || sim.differing === 0)));
  return { unwritten, gapWrites, reference, sim, ok };
}

/**
 * D's elements still poisoned ({@link unwrittenCount}) and, for a strided D (DESIGN
 * §6.1), the elements of its gaps the kernel wrote (every gap byte must keep the poison).
 */
export function writtenCounts(
  d: TensorParam,
  sizes: Readonly<Record<string, number>>,
  output: Uint8Array,
): { unwritten: number | null; gapWrites: number } {
  const sh = tensorShape(d, sizes);
  if (sh.dense) return { unwritten: unwrittenCount(d.dtype, output), gapWrites: 0 };
  const w = DTYPE_INFO[d.dtype].bits / 8;
  const inView = new Uint8Array(sh.elements);
  forEachInView(sh, (i) => inView[i] = 1);
  const view: number[] = [];
  let gapWrites = 0;
  const p = poisonByte(d.dtype);
  for (let i = 0; i < sh.elements; i++) {
    if (inView[i] === 1) view.push(i);
    else if (!output.subarray(i * w, i * w + w).every((b) => b === p)) gapWrites++;
  }
  const packed = new Uint8Array(view.length * w);
  view.forEach((i, j) => packed.set(output.subarray(i * w, i * w + w), j * w));
  return { unwritten: unwrittenCount(d.dtype, packed), gapWrites };
}
