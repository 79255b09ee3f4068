/**
 * Runs a compiled grouped GEMM (DESIGN §6.2, `gemm run --groups`) on the GPU through the CUDA
 * driver and checks it, as harness/run_gemm.ts does one GEMM: every problem's sizes checked
 * before the driver is touched, random inputs, poisoned outputs, one grouped launch through
 * the launch API (backends/cuda/grouped.ts), each problem's output compared with the
 * reference and, on request, with the simulator, then the launch timed.
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import { type TensorParam, tensorParam } from "../ir/gemm.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { type LaunchArgs, randomArgs } from "./inputs.ts";
import { tensorShape } from "./tensor.ts";
import { alignmentViolations, resolveSizes } from "./sizes.ts";
import {
  Cuda,
  type DeviceBuffer,
  type DeviceInfo,
  type FunctionAttributes,
  type JitInfo,
} from "../backends/cuda/driver.ts";
import { loadKernel } from "../backends/cuda/kernel.ts";
import { timeLaunches } from "./timing.ts";
import { compareOutput, type Comparison } from "./compare.ts";
import { referenceGemm } from "./reference.ts";
import { type ProblemReport, simulateGrouped } from "./simulate_grouped.ts";
import { simulationWork } from "./simulate_gemm.ts";
import { elementDistance } from "./checks.ts";
import {
  count,
  type Held,
  problemOps,
  release,
  RUN_CHECKS,
  type RunCheck,
  type RunTiming,
  runTiming,
  writtenCounts,
} from "./run_gemm.ts";

/** Options of {@link runGrouped}. */
export interface GroupedRunOptions {
  /** Seed of the random inputs (default 1; problem i draws with `seed + 7919 i`, as `gemm simulate`). */
  readonly seed?: number;
  /** Scalar values, shared by every problem (default: random, drawn with problem 0). */
  readonly scalars?: Readonly<Record<string, number>>;
  /** `ref` (default): the reference GEMM; `sim`: also the simulator; `none`: neither. */
  readonly check?: RunCheck;
  /** Timed launches (default 20; 0: no timing). */
  readonly iters?: number;
  /** Untimed launches before them (default 3). */
  readonly warmup?: number;
  /** Blocks of the persistent grid at most (default: the resident blocks). */
  readonly blocks?: number;
  /** Check shared-memory hazards in the simulator (default true). */
  readonly hazards?: boolean;
  /** With `sim`: the most simulation work (multiply-adds and elements) allowed (default 2^27). */
  readonly simMaxWork?: number;
  /** The driver, as {@link RunOptions.cuda}. */
  readonly cuda?: Cuda | (() => Cuda);
  /** Make the warm-up and timed launches programmatic dependent launches, as {@link RunOptions.pdl}. */
  readonly pdl?: boolean;
}

/** One problem of a {@link runGrouped}. */
export interface GroupedProblemRun {
  /** Its sizes. */
  readonly sizes: Readonly<Record<string, number>>;
  /** Its output tiles. */
  readonly tiles: number;
  /** D's elements still poisoned (null where the type cannot tell). */
  readonly unwritten: number | null;
  /** Elements of a strided D's gaps the launch wrote (must be 0). */
  readonly gapWrites: number;
  /** Its output against the reference (null when not asked for). */
  readonly reference: Comparison | null;
  /**
   * Its output against the simulator's of the same grouped launch (null when
   * not asked for): elements compared and differing, the largest ulp
   * difference for floats (null for integers, which must be identical).
   */
  readonly sim: {
    readonly compared: number;
    readonly differing: number;
    readonly maxUlp: number | null;
  } | null;
  /** Written, agreeing with the reference, and (integers) identical to the simulator. */
  readonly ok: boolean;
  /** Its inputs. */
  readonly args: LaunchArgs;
  /** D's bytes as the GPU wrote them. */
  readonly output: Uint8Array;
}

/** What {@link runGrouped} returns. */
export interface GroupedRunReport {
  /** The kernel's name. */
  readonly kernel: string;
  /** The PTX entry. */
  readonly entry: string;
  /** The persistent grid launched. */
  readonly grid: readonly [number, number, number];
  /** The output tiles of every problem. */
  readonly totalTiles: number;
  /** The block, in threads. */
  readonly block: readonly [number, number, number];
  /** Dynamic shared memory per block. */
  readonly dynamicSmemBytes: number;
  /** The device. */
  readonly device: DeviceInfo;
  /** Registers and the like. */
  readonly function: FunctionAttributes;
  /** The JIT's log and time. */
  readonly jit: JitInfo;
  /** Each problem's result. */
  readonly problems: readonly GroupedProblemRun[];
  /** The simulator's hazards (null without `sim`). */
  readonly simHazards: number | null;
  /** Timings of the whole launch (null when not asked for). */
  readonly timing: RunTiming | null;
  /** Every problem ok, and no hazard. */
  readonly ok: boolean;
}

/**
 * Checks a grouped run without the GPU: every problem's sizes resolved and
 * aligned (a zero size is legal); with `sim`, the simulation within its limit.
 *
 * @param ck The compiled kernel (grouped).
 * @param given Each problem's sizes by dimension name or role letter.
 * @param simMaxWork With `sim`: the limit of the simulation's work (else null).
 * @returns Each problem's resolved sizes.
 * @throws {Error} Naming every problem's faults by index.
 * @example
 * ```ts
 * import { deepEqual, throws } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { checkGroupedRun } from "./run_grouped.ts";
 * const ck = compile("kernel e grouped { X: f16[M, K] row\n W: f16[K, N] col\n Y: f32[M, N] row\n" +
 *   " Y[m, n] = X[m, k] * W[k, n] }").kernels[0]!;
 * deepEqual(checkGroupedRun(ck, [{ M: 0, N: 8, K: 16 }], null), [{ M: 0, N: 8, K: 16 }]);
 * throws(() => checkGroupedRun(ck, [{ M: 1, N: 8, K: 16 }, { M: 1, N: 8, K: 12 }], null), /Problem 1/);
 * ```
 */
export function checkGroupedRun(
  ck: CompiledKernel,
  given: readonly Readonly<Record<string, number>>[],
  simMaxWork: number | null,
): Record<string, number>[] {
  if (ck.kernel.group === undefined) {
    throw new Error(`Kernel "${ck.name}" is not grouped: run it with --size, not --groups`);
  }
  const bad: string[] = [];
  const all = given.map((g, i) => {
    try {
      const sizes = resolveSizes(ck.gemm, g);
      for (const v of alignmentViolations(ck.gemm, sizes)) bad.push(`Problem ${i}: ${v}`);
      return sizes;
    } catch (e) {
      bad.push(`Problem ${i}: ${(e as Error).message}`);
      return {};
    }
  });
  if (bad.length === 0 && simMaxWork !== null) {
    const work = all.reduce((w, s) => w + simulationWork(ck, s), 0);
    if (work > simMaxWork) {
      bad.push(
        `Simulating the problems takes ${work} multiply-adds and elements, over the limit of ` +
          `${simMaxWork}: check them with the reference alone (--check ref)`,
      );
    }
  }
  if (bad.length > 0) throw new Error(bad.join("; "));
  return all;
}

/**
 * Runs a grouped kernel (DESIGN §6.2) on the GPU over a list of problems:
 * each problem gets its own random inputs and poisoned output (the scalars
 * are shared: drawn with problem 0), one grouped launch
 * (`LoadedKernel.groupedLaunch`) runs them all, and each problem's output is
 * compared with the reference and, with `check: "sim"`, with the simulator's
 * run of the same grouped launch on the same inputs (integers identical).
 *
 * @param ck The compiled kernel (grouped).
 * @param given Each problem's sizes by dimension name or role letter.
 * @param options Seed, scalars, checks, timing, grid blocks, the driver.
 * @returns The report.
 * @throws {Error} For sizes that do not fit, before any driver call.
 * @throws {CudaUnavailableError} When no driver can be used.
 * @throws {CudaError} When a driver call fails.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { cudaAvailable } from "../backends/cuda/driver.ts";
 * import { runGrouped } from "./run_grouped.ts";
 * const ck = compile("kernel e grouped { X: f16[M, K] row\n W: f16[K, N] col\n Y: f32[M, N] row\n" +
 *   " Y[m, n] = X[m, k] * W[k, n] }").kernels[0]!;
 * // Without a driver (CI) there is nothing to run; with one, a checked grouped launch.
 * if (cudaAvailable().ok) {
 *   const rep = runGrouped(ck, [{ M: 100, N: 64, K: 32 }, { M: 0, N: 64, K: 32 }], { iters: 0 });
 *   ok(rep.ok && rep.problems[1]!.tiles === 0);
 * }
 * ```
 */
export function runGrouped(
  ck: CompiledKernel,
  given: readonly Readonly<Record<string, number>>[],
  options: GroupedRunOptions = {},
): GroupedRunReport {
  const check = options.check ?? "ref";
  if (!RUN_CHECKS.includes(check)) {
    throw new RangeError(`Option check must be ${RUN_CHECKS.join(", ")}, got "${check}"`);
  }
  const all = checkGroupedRun(ck, given, check === "sim" ? options.simMaxWork ?? 2 ** 27 : null);
  const iters = count("iters", options.iters, 20, 0);
  const warmup = count("warmup", options.warmup, 3, 0);
  const seed = options.seed ?? 1;
  // As simulateGrouped draws them: problem i with seed + 7919 i, the scalars with problem 0.
  const args: LaunchArgs[] = [];
  for (const [i, sizes] of all.entries()) {
    const scalars = i === 0 ? options.scalars ?? {} : Object.fromEntries(args[0]!.scalars);
    args.push(randomArgs(ck.gemm, sizes, seed + 7919 * i, scalars));
  }
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  const { gpu, device } = launchGrouped(ck, all, args, options, warmup, iters);

  // The checks, on the CPU.
  const sim = check === "sim"
    ? simulateGrouped(ck, all, {
      seed,
      ...(options.scalars !== undefined ? { scalars: options.scalars } : {}),
      hazards: options.hazards ?? true,
      maxWork: Infinity,
    })
    : null;
  const intOut = !DTYPE_INFO[d.dtype].float;
  const problems = args.map((a, i): GroupedProblemRun => {
    const sizes = all[i]!;
    const output = gpu!.outputs[i]!;
    const { unwritten, gapWrites } = writtenCounts(d, sizes, output);
    const reference = check === "none"
      ? null
      : compareOutput(output, d.dtype, referenceGemm(ck.gemm, a));
    const agreement = sim === null ? null : simAgreement(d, sizes, a, output, sim.problems[i]!, i);
    const ok = (unwritten ?? 0) === 0 && gapWrites === 0 &&
      (reference === null || reference.ok) &&
      (agreement === null || !intOut || agreement.differing === 0);
    return {
      sizes,
      tiles: gpu!.tiles[i]!,
      unwritten,
      gapWrites,
      reference,
      sim: agreement,
      ok,
      args: a,
      output,
    };
  });
  const timing = gpu.samplesMs === null ? null : runTiming(
    ck,
    all.reduce((s, sz) => s + problemOps(ck, sz), 0),
    gpu.samplesMs,
    { warmup, iters, inputSets: 1, pdl: options.pdl === true },
  );
  const simHazards = sim === null ? null : sim.sim.hazardCount;
  return {
    kernel: ck.name,
    entry: ck.manifest.entry,
    grid: gpu.grid,
    totalTiles: gpu.totalTiles,
    block: ck.manifest.block,
    dynamicSmemBytes: ck.manifest.dynamicSmemBytes,
    device,
    function: gpu.fnAttrs,
    jit: gpu.jit,
    problems,
    simHazards,
    timing,
    ok: problems.every((p) => p.ok) && (simHazards ?? 0) === 0,
  };
}

/** What the GPU gave for a grouped run: each problem's D, the launch and the timing samples. */
interface GroupedGpuRun {
  readonly outputs: Uint8Array[];
  readonly grid: readonly [number, number, number];
  readonly totalTiles: number;
  readonly tiles: readonly number[];
  readonly fnAttrs: FunctionAttributes;
  readonly jit: JitInfo;
  readonly samplesMs: number[] | null;
}

/**
 * The GPU side of {@link runGrouped}: loads the kernel, uploads every problem's inputs, launches
 * once, reads each D back, then times `iters` launches after `warmup`; frees what it took (and
 * the context it opened) whatever happens.
 */
function launchGrouped(
  ck: CompiledKernel,
  all: readonly Readonly<Record<string, number>>[],
  args: readonly LaunchArgs[],
  options: GroupedRunOptions,
  warmup: number,
  iters: number,
): { gpu: GroupedGpuRun; device: DeviceInfo } {
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  const owned = typeof options.cuda !== "object";
  const cuda = typeof options.cuda === "object"
    ? options.cuda
    : (options.cuda ?? (() => Cuda.open()))();
  const held: Held = { buffers: [], kernel: null };
  let failure: unknown = null;
  let gpu: GroupedGpuRun | null = null;
  try {
    const kernel = held.kernel = loadKernel(ck, { cuda });
    const fnAttrs = kernel.function.attributes();
    const bufs = args.map((a) => {
      const m: Record<string, DeviceBuffer> = {};
      for (const [n, bytes] of a.tensors) {
        const b = cuda.alloc(bytes.byteLength);
        held.buffers.push(b);
        b.upload(bytes);
        m[n] = b;
      }
      return m;
    });
    const dims = (sizes: Readonly<Record<string, number>>) =>
      Object.fromEntries(
        ck.manifest.group!.problem.filter((p) => p.kind === "dim" || p.kind === "stride")
          .map((p) => [p.name, sizes[p.name]!]),
      );
    using g = kernel.groupedLaunch(
      bufs.map((buffers, i) => ({ buffers, sizes: dims(all[i]!) })),
      {
        scalars: Object.fromEntries(args[0]?.scalars ?? []),
        ...(options.blocks !== undefined ? { blocks: options.blocks } : {}),
      },
    );
    g.launch();
    cuda.synchronize();
    const outputs = bufs.map((m, i) =>
      m[d.name]!.download(new Uint8Array(args[i]!.tensors.get(d.name)!.byteLength))
    );
    const timed = options.pdl === true ? { pdl: true } : {};
    const samplesMs = iters > 0 ? timeLaunches(cuda, () => g.launch(timed), warmup, iters) : null;
    gpu = {
      outputs,
      grid: g.grid,
      totalTiles: g.totalTiles,
      tiles: g.tiles,
      fnAttrs,
      jit: kernel.module.jit,
      samplesMs,
    };
  } catch (e) {
    failure = e;
  }
  const device = cuda.device;
  failure = release(held, owned ? cuda : null, failure);
  if (failure !== null || gpu === null) throw failure;
  return { gpu, device };
}

/**
 * How problem `i`'s D from the GPU compares with the simulator's, element by element (integers
 * must be identical; floats: the largest ulp distance), after checking that both ran on the
 * same inputs.
 */
function simAgreement(
  d: TensorParam,
  sizes: Readonly<Record<string, number>>,
  a: LaunchArgs,
  output: Uint8Array,
  sp: ProblemReport,
  i: number,
): NonNullable<GroupedProblemRun["sim"]> {
  for (const [n, bytes] of a.tensors) {
    if (n === d.name) continue;
    const theirs = sp.args.tensors.get(n);
    if (theirs === undefined || !sameBytes(theirs, bytes)) {
      throw new Error(`Internal: the simulator's inputs of problem ${i} differ ("${n}")`);
    }
  }
  const elements = tensorShape(d, sizes).elements;
  let differing = 0;
  let maxUlp = 0;
  for (let e = 0; e < elements; e++) {
    const dist = elementDistance(d.dtype, output, sp.output, e);
    if (dist !== 0) {
      differing++;
      if (dist > maxUlp || Number.isNaN(dist)) maxUlp = dist;
    }
  }
  return { compared: elements, differing, maxUlp: DTYPE_INFO[d.dtype].float ? maxUlp : null };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
