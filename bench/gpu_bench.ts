/**
 * `deno task bench --gpu`: gemmc's kernels against cuBLAS and the mma.sync
 * ceiling, in one process on one GPU.
 *
 * For f16 (f32 accumulation), bf16, tf32, s8 and f64, and for f32 operands
 * with f32 accuracy (`math f32` on the CUDA cores, `math 3xtf32` on the
 * tensor cores; both against cuBLAS's true-f32 GEMM), at 4096³, 8192³, a
 * skinny shape (M=128, N=K=8192) and an odd one (M=N=K=5000): our kernel at
 * its default schedule for the problem (compiled with the sizes as hints),
 * checked against the reference on sampled rows and columns of the same
 * run's output (a result counts only if it agrees), then timed in two
 * states of the card (bench/NOTES.md 26): *burst*, the median of the
 * launches of 3 short series (each after a 1 s rest, at most
 * ~40 ms of launches: the H200 holds its boost clock for the first ~80 ms of
 * full load after a rest), and *sustained*, the median of 20 launches after
 * 1.5 s of continuous load (the clock the 700 W cap settles at), both
 * rotating among several input sets (so that L2 does not flatter); cuBLAS
 * (`cublasGemmEx`) on the same buffers, timed the same two ways; the
 * ceiling measured on the spot by bench/mma_peak.ts (mma.sync; for `f32`
 * independent `fma.rn.f32`; for `3xtf32` the tf32 ceiling over 3) three ways: a
 * short burst with fixed operands (as ../shared/ANCHORS.md measures it, and
 * what the targets of issue 7 are stated against), the same with random
 * operands, and random operands sustained (1.5 s of load, then 20 timed
 * launches). After each sustained series, 10 more launches run with
 * bench/clock_probe.ts beside them (a second stream), which reads the SM
 * clock they ran at: on the H200 the 8192³ f16/bf16/tf32 GEMMs run into the
 * 700 W cap and the clock drops to ~1.5–1.7 GHz, which nvidia-smi does not
 * show (bench/NOTES.md 8, 12). Prints a table (burst: TFLOPS, ratio to
 * cuBLAS and to the burst ceiling; sustained: the same against the sustained
 * ceiling, and per clock cycle), the targets met or missed (bench/gpu_report.ts
 * `printTargets`: issue 7's or, on sm90, issue 23's at 8192³ in each state, issue 22's at
 * 5000³), and writes `bench/results/<date>-<gpu>.csv`.
 *
 * @module
 */

import { freshResultPath, resultDate, RESULTS_DIR } from "./results.ts";
import { compile, type CompiledKernel } from "../compiler.ts";
import {
  Cuda,
  cudaAvailable,
  type CudaFunction,
  type CudaModule,
  DEFAULT_DYNAMIC_SMEM_LIMIT,
  type DeviceBuffer,
  type KernelArg,
  type LaunchConfig,
} from "../backends/cuda/driver.ts";
import { kernelArgs } from "../backends/cuda/launch.ts";
import { kernelManifest } from "../backends/ptx/manifest.ts";
import { workspaceArgs } from "../harness/workspace.ts";
import { chooseReferenceSample, type ReferenceCheck, referenceCheck } from "../harness/checks.ts";
import type { LaunchArgs } from "../harness/inputs.ts";
import { tensorShape } from "../harness/tensor.ts";
import { f32ToF16Bits, numberToFp8 } from "../numerics/mod.ts";
import { tensorParam } from "../ir/gemm.ts";
import { type BlasType, Cublas } from "./cublas.ts";
import { ClockProbe } from "./clock_probe.ts";
import {
  type Ceiling,
  ceilings,
  clockDuring,
  ClockSampler,
  timeBurst,
  timeIt,
  timeSustained,
} from "./gpu_measure.ts";
import { type BenchRow, csvOf, printTargets, type Problem, rowLine } from "./gpu_report.ts";
import { median } from "../harness/timing.ts";
import { type Target, TARGET_NAMES } from "../ir/target.ts";

const PROBLEMS: readonly Problem[] = [
  { shape: "4096", M: 4096, N: 4096, K: 4096 },
  { shape: "8192", M: 8192, N: 8192, K: 8192 },
  { shape: "skinny", M: 128, N: 8192, K: 8192 },
  { shape: "odd", M: 5000, N: 5000, K: 5000 },
];

/**
 * The problems `--shapes` names: the named ones of {@link PROBLEMS}, a size S for S³ (shape "S"),
 * or `MxNxK` (shape "MxNxK"); every named problem where the option is absent.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * deepEqual(problemsFor(["odd", "3072", "256x4096x1024"]), [
 *   { shape: "odd", M: 5000, N: 5000, K: 5000 },
 *   { shape: "3072", M: 3072, N: 3072, K: 3072 },
 *   { shape: "256x4096x1024", M: 256, N: 4096, K: 1024 },
 * ]);
 * ```
 * @param shapes The option's items, or undefined.
 * @returns The problems, in the option's order.
 */
export function problemsFor(shapes: readonly string[] | undefined): Problem[] {
  if (shapes === undefined) return [...PROBLEMS];
  return shapes.map((s) => {
    const named = PROBLEMS.find((p) => p.shape === s);
    if (named !== undefined) return named;
    const dims = s.split("x").map(Number);
    const ok = (dims.length === 1 || dims.length === 3) &&
      dims.every((d) => Number.isInteger(d) && d > 0);
    if (!ok) {
      throw new Error(
        `--shapes ${s}: expected ${PROBLEMS.map((p) => p.shape).join(", ")}, a size S or MxNxK`,
      );
    }
    const [M, N, K] = dims.length === 1 ? [dims[0], dims[0], dims[0]] : dims;
    return { shape: s, M: M!, N: N!, K: K! };
  });
}

const TYPES: readonly BlasType[] = ["f16", "bf16", "tf32", "s8", "f64", "f32", "3xtf32"];

/** The benchmark kernel's source file, per type (s8 at 5000 needs 8-byte alignment). */
function sourceFor(t: BlasType, p: Problem, schedule?: string): string {
  const file = t === "s8" && p.K % 16 !== 0 ? "s8_align8" : t;
  const src = Deno.readTextFileSync(new URL(`./kernels/${file}.gemm`, import.meta.url));
  return schedule === undefined ? src : withSchedule(src, schedule);
}

/**
 * A benchmark kernel's source with schedule lines of its own (`--schedule`): a `schedule`
 * block before the kernel's closing brace.
 *
 * @param src The kernel's source (one kernel, no schedule block).
 * @param lines Schedule lines, `;`-separated (`"cluster 2; stages 4"`).
 * @returns The source.
 */
export function withSchedule(src: string, lines: string): string {
  const end = src.lastIndexOf("}");
  const body = lines.split(";").map((l) => `    ${l.trim()}`).join("\n");
  return `${src.slice(0, end)}  schedule {\n${body}\n  }\n}\n`;
}

/** A fast xorshift generator for filling large inputs. */
function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** Random bytes of a tensor: floats uniform in [-1, 1), integers over their range. */
function fill(dtype: string, elements: number, seed: number): Uint8Array {
  const r = xorshift(seed);
  const u = () => r() / 4294967296 * 2 - 1;
  switch (dtype) {
    case "f16": {
      const a = new Uint16Array(elements);
      for (let i = 0; i < elements; i++) a[i] = f32ToF16Bits(u());
      return new Uint8Array(a.buffer);
    }
    case "bf16": {
      const a = new Uint16Array(elements);
      const f = new Float32Array(1);
      const b = new Uint32Array(f.buffer);
      for (let i = 0; i < elements; i++) {
        f[0] = u();
        a[i] = b[0]! >>> 16; // truncation: a valid bf16 value
      }
      return new Uint8Array(a.buffer);
    }
    case "f32":
    case "tf32": {
      const a = new Float32Array(elements);
      for (let i = 0; i < elements; i++) a[i] = u();
      return new Uint8Array(a.buffer);
    }
    case "f64": {
      const a = new Float64Array(elements);
      for (let i = 0; i < elements; i++) a[i] = u();
      return new Uint8Array(a.buffer);
    }
    case "e4m3":
    case "e5m2": {
      // Through a table of [-1, 1) in steps of 2^-11 (each step's midpoint rounded to the
      // format): 64M elements of an 8192² operand in well under a second.
      const table = Uint8Array.from(
        { length: 4096 },
        (_, i) => numberToFp8((i + 0.5) / 2048 - 1, dtype),
      );
      const a = new Uint8Array(elements);
      for (let i = 0; i < elements; i++) a[i] = table[r() >>> 20]!;
      return a;
    }
    case "s8": {
      const a = new Uint32Array(Math.ceil(elements / 4));
      for (let i = 0; i < a.length; i++) a[i] = r();
      return new Uint8Array(a.buffer, 0, elements);
    }
    default:
      throw new Error(`No filler for ${dtype}`);
  }
}

/** CUTLASS-style kernel name, e.g. `s16816gemm_f16_128x256_32x4_tn_align8` (`_splitk4`,
 * `_cluster2` where the schedule has them). */
export function cutlassName(ck: CompiledKernel, t: BlasType): string {
  const p = ck.planned.plan;
  const mma = p.mma!;
  const tb = p.tile!.threadblock;
  const a = tensorParam(ck.gemm, ck.gemm.problem.a.tensor);
  const shape = `${mma.instr.m}${mma.instr.n}${mma.instr.k}`;
  const prefix = ck.gemm.math.mode === "simt"
    ? "sgemm"
    : ck.gemm.math.mode === "3xtf32"
    ? `s${shape}gemm_3xtf32`
    : t === "f64"
    ? `d${shape}gemm`
    : t === "s8"
    ? `i${shape}gemm_s8`
    : t === "tf32"
    ? `s${shape}tf32gemm`
    : `s${shape}gemm_${t}`;
  const la = ck.gemm.problem.a.layout === "row" ? "t" : "n";
  const lb = ck.gemm.problem.b.layout === "col" ? "n" : "t";
  const sk = p.tile!.splitK > 1 ? `_splitk${p.tile!.splitK}` : "";
  const cl = (p.pipeline!.tma?.cluster ?? 1) > 1 ? `_cluster${p.pipeline!.tma!.cluster}` : "";
  return `${prefix}_${tb.m}x${tb.n}_${tb.k}x${
    p.pipeline!.stages
  }_${la}${lb}_align${a.align}${sk}${cl}`;
}

/**
 * How a benchmark compiles ours+PDL's kernel ({@link compileSource}'s `pdl`): `true` with the
 * compile option `pdl` alone; the object adds `pdlEarly` for B (`early`) and/or
 * `pdlTrigger: "last-copy"` (`lastCopy`), which combine.
 */
export type PdlCompile = boolean | { readonly early?: boolean; readonly lastCopy?: boolean };

/**
 * A benchmark kernel from its source at problem `p`, at the default schedule a
 * user gets with `gemm run --tune --sms N`: the sizes as hints and the device's
 * SM count (tile shrinking, wave-aware tiles; the persistent grid of sm90).
 *
 * @param source The kernel's source (its first kernel is taken).
 * @param file The file name its diagnostics name.
 * @param p The problem (its sizes are the hints).
 * @param sms The device's SM count.
 * @param target The compile target (default: the kernel's own, sm80).
 * @param pdl Compile with programmatic dependent launch's instructions (the compile option
 *   `pdl`; default false); `{ early: true }`: also with the compile option `pdlEarly` for B (the
 *   weights, which no kernel of the benchmark writes), whose loads then start before the wait;
 *   `{ lastCopy: true }`: also with the compile option `pdlTrigger: "last-copy"` (the mma.sync
 *   loop lets the next grid start after its last copy, not after its drain); both together.
 * @returns The compiled kernel.
 * @throws {Error} With the diagnostics when it does not compile.
 */
export function compileSource(
  source: string,
  file: string,
  p: Problem,
  sms: number,
  target?: Target,
  pdl: PdlCompile = false,
): CompiledKernel {
  const r = compile(source, {
    file,
    sizeHints: { M: p.M, N: p.N, K: p.K },
    sms,
    ...(target === undefined ? {} : { target }),
    ...(pdl !== false ? { pdl: true } : {}),
    ...(typeof pdl === "object" && pdl.early === true ? { pdlEarly: ["B"] } : {}),
    ...(typeof pdl === "object" && pdl.lastCopy === true
      ? { pdlTrigger: "last-copy" as const }
      : {}),
  });
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/**
 * Our kernel for type `t` at problem `p`, at the default schedule a user
 * gets with `gemm run --tune --sms N`: the sizes as hints and the device's SM
 * count (tile shrinking, wave-aware tiles).
 */
export function compileFor(
  cuda: Cuda,
  t: BlasType,
  p: Problem,
  target?: Target,
  pdl: PdlCompile = false,
  schedule?: string,
): CompiledKernel {
  const sms = cuda.device.multiprocessors;
  return compileSource(sourceFor(t, p, schedule), `bench_${t}.gemm`, p, sms, target, pdl);
}

/** A kernel loaded, with its inputs on the device in several sets. */
export interface Loaded {
  readonly fn: CudaFunction;
  readonly mod: CudaModule;
  readonly config: LaunchConfig;
  /** The kernel's arguments for each input set. */
  readonly argSets: readonly KernelArg[][];
  readonly aBufs: readonly DeviceBuffer[];
  readonly bBufs: readonly DeviceBuffer[];
  /** D, poisoned before the first launch. */
  readonly dBuf: DeviceBuffer;
  /** cuBLAS's output. */
  readonly cBuf: DeviceBuffer;
  /** A and B of set 0 on the host. */
  readonly host: { readonly A: Uint8Array; readonly B: Uint8Array };
  /** The scalars every launch passes (those given, else the declared defaults). */
  readonly scalars: ReadonlyMap<string, number>;
}

/**
 * Uploads enough input sets that they do not fit in L2 together (60 MB on
 * the H200), each set the same bytes rotated by s*4096 (cheap, not
 * identical), and loads the kernel. Every buffer goes into `bufs`. Each scalar
 * parameter takes its value in `scalars`, else its declared default (one with
 * neither is an error).
 */
export function load(
  cuda: Cuda,
  ck: CompiledKernel,
  sizes: Readonly<Record<string, number>>,
  bufs: DeviceBuffer[],
  scalars: ReadonlyMap<string, number> = new Map(),
): Loaded {
  const sc = new Map<string, number>();
  for (const q of ck.gemm.params) {
    if (q.kind !== "scalar") continue;
    const v = scalars.get(q.name) ?? q.default;
    if (v === null) throw new Error(`No value for scalar "${q.name}" (it has no default)`);
    sc.set(q.name, v);
  }
  const manifest = kernelManifest(ck.gemm, ck.kernel, sizes);
  const A = tensorShape(tensorParam(ck.gemm, "A"), sizes);
  const B = tensorShape(tensorParam(ck.gemm, "B"), sizes);
  const D = tensorParam(ck.gemm, "D");
  const bytesD = tensorShape(D, sizes).bytes;
  const sets = Math.max(2, Math.min(8, Math.ceil((3 * 60e6) / (A.bytes + B.bytes))));
  const host = {
    A: fill(tensorParam(ck.gemm, "A").dtype, A.elements, 11),
    B: fill(tensorParam(ck.gemm, "B").dtype, B.elements, 23),
  };
  const alloc = (n: number) => {
    const b = cuda.alloc(n);
    bufs.push(b);
    return b;
  };
  const rot = (x: Uint8Array, s: number) => {
    const k = (s * 4096) % x.length;
    const y = new Uint8Array(x.length);
    y.set(x.subarray(k));
    y.set(x.subarray(0, k), x.length - k);
    return y;
  };
  const aBufs = Array.from({ length: sets }, () => alloc(A.bytes));
  const bBufs = Array.from({ length: sets }, () => alloc(B.bytes));
  for (let s = 0; s < sets; s++) {
    aBufs[s]!.upload(s === 0 ? host.A : rot(host.A, s));
    bBufs[s]!.upload(s === 0 ? host.B : rot(host.B, s));
  }
  const dBuf = alloc(bytesD);
  const cBuf = alloc(bytesD);
  poisonOutput(ck, dBuf);
  const { mod, fn } = loadFunction(cuda, ck);
  const config = {
    grid: manifest.grid!,
    block: manifest.block,
    dynamicSmemBytes: manifest.dynamicSmemBytes,
  };
  // split-K: one zeroed workspace shared by every launch (each leaves it zeroed).
  const ws = [...workspaceArgs(ck.kernel, sizes)].map(([n, bytes]): [string, bigint] => {
    const w = alloc(bytes.length);
    w.upload(bytes);
    return [n, w.ptr];
  });
  const argSets = Array.from({ length: sets }, (_, s) =>
    kernelArgs(
      manifest,
      new Map([["A", aBufs[s]!.ptr], ["B", bBufs[s]!.ptr], ["D", dBuf.ptr], ...ws]),
      sizes,
      sc,
    ));
  return { fn, mod, config, argSets, aBufs, bBufs, dBuf, cBuf, host, scalars: sc };
}

/**
 * Poisons D's buffer before a check: every byte 0xff (a NaN in every float type), 0x5a for
 * s32 (no value a GEMM of small random integers gives), so an element left unwritten shows.
 *
 * @param ck The kernel whose D the buffer holds.
 * @param dBuf The buffer.
 */
export function poisonOutput(ck: CompiledKernel, dBuf: DeviceBuffer): void {
  dBuf.fill(tensorParam(ck.gemm, "D").dtype === "s32" ? 0x5a : 0xff);
}

/**
 * A compiled kernel's module and function, loaded, its dynamic shared memory allowed.
 *
 * @param cuda The context.
 * @param ck The kernel.
 * @returns The module (the caller unloads it) and the function.
 */
export function loadFunction(
  cuda: Cuda,
  ck: CompiledKernel,
): { mod: CudaModule; fn: CudaFunction } {
  const manifest = kernelManifest(ck.gemm, ck.kernel);
  const mod = cuda.loadModule(ck.ptx);
  const fn = mod.getFunction(manifest.entry);
  if (manifest.dynamicSmemBytes > DEFAULT_DYNAMIC_SMEM_LIMIT) {
    fn.setMaxDynamicSharedBytes(manifest.dynamicSmemBytes);
  }
  return { mod, fn };
}

/** Launches set 0 once and checks D against the reference on sampled rows and columns. */
export function verify(
  cuda: Cuda,
  ck: CompiledKernel,
  sizes: Readonly<Record<string, number>>,
  k: Loaded,
): ReferenceCheck {
  cuda.launch(k.fn, k.config, k.argSets[0]!);
  cuda.synchronize();
  const out = k.dBuf.download();
  const launchArgs: LaunchArgs = {
    tensors: new Map([["A", k.host.A], ["B", k.host.B], ["D", out]]),
    scalars: new Map(k.scalars),
    sizes,
  };
  const sample = chooseReferenceSample(ck.gemm, sizes, 2 ** 24, 7, {
    m: ck.kernel.grid.tileM,
    n: ck.kernel.grid.tileN,
  });
  return referenceCheck(ck.gemm, launchArgs, out, sample);
}

function benchOne(
  cuda: Cuda,
  blas: Cublas,
  probe: ClockProbe,
  t: BlasType,
  p: Problem,
  ceiling: Ceiling,
  target?: Target,
  schedule?: string,
): BenchRow {
  const ck = compileFor(cuda, t, p, target, false, schedule);
  const sizes = { M: p.M, N: p.N, K: p.K };
  const bufs: DeviceBuffer[] = [];
  try {
    const k = load(cuda, ck, sizes, bufs);
    const check = verify(cuda, ck, sizes, k);
    const sets = k.argSets.length;
    const ops = 2 * p.M * p.N * p.K;
    const ours = (i: number) => cuda.launch(k.fn, k.config, k.argSets[i % sets]!);
    const theirs = (i: number) =>
      blas.gemmTN(t, p.M, p.N, p.K, k.aBufs[i % sets]!.ptr, k.bBufs[i % sets]!.ptr, k.cBuf.ptr);
    const burst = timeBurst(cuda, ours, timeIt(cuda, ours, 1, 2));
    const burstBlas = timeBurst(cuda, theirs, timeIt(cuda, theirs, 1, 2));
    const t0 = Date.now();
    const ms = timeSustained(cuda, ours, burst.ms);
    const t1 = Date.now();
    const clockOurs = clockDuring(probe, ours, ms);
    const msBlas = timeSustained(cuda, theirs, burstBlas.ms);
    const clockBlas = clockDuring(probe, theirs, msBlas);
    const rate = (x: number) => ops / (x * 1e-3) / 1e12;
    const attrs = k.fn.attributes();
    k.mod.unload();
    return {
      type: t,
      shape: p.shape,
      M: p.M,
      N: p.N,
      K: p.K,
      kernel: cutlassName(ck, t),
      verified: check.comparison.ok,
      relError: check.comparison.relFrobenius,
      ours: rate(burst.ms),
      cublas: rate(burstBlas.ms),
      oursRounds: burst.rounds.map(rate),
      oursSustained: rate(ms),
      cublasSustained: rate(msBlas),
      ceiling,
      clockOurs,
      clockBlas,
      smClockMHz: null,
      powerW: null,
      window: [t0, t1],
      registers: attrs.registers,
    };
  } finally {
    for (const b of bufs) b.free();
  }
}

/**
 * Runs the benchmark.
 *
 * @param args `--types f16,s8`, `--shapes 4096,8192,skinny,odd` (or any size S, for S³, or
 *   `MxNxK`: {@link problemsFor}), `--out DIR`, `--target sm90`
 *   (the compile target; default: the kernels' own, sm80), `--schedule "cluster 2"` (schedule
 *   lines, `;`-separated, for every kernel: a variant against cuBLAS in the same run).
 */
export async function main(args: readonly string[] = Deno.args): Promise<void> {
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const types = (opt("--types")?.split(",") ?? TYPES) as BlasType[];
  const shapes = opt("--shapes")?.split(",");
  const targetOpt = opt("--target");
  if (targetOpt !== undefined && !(TARGET_NAMES as readonly string[]).includes(targetOpt)) {
    throw new Error(`--target ${targetOpt}: expected ${TARGET_NAMES.join(", ")}`);
  }
  const target = targetOpt as Target | undefined;
  const schedule = opt("--schedule");
  const problems = problemsFor(shapes);
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.error(`GPU benchmark: ${avail.why}`);
    Deno.exitCode = 1;
    return;
  }
  const cuda = Cuda.open();
  const blas = Cublas.open();
  const rows: BenchRow[] = [];
  const sampler = new ClockSampler();
  const probe = new ClockProbe(cuda);
  try {
    const dev = cuda.device;
    console.log(
      `# ${dev.name} (${dev.arch}, ${dev.multiprocessors} SMs), driver ${dev.driverVersionText}, ${blas.path}`,
    );
    if (target !== undefined) console.log(`# compile target ${target}`);
    if (schedule !== undefined) console.log(`# schedule lines: ${schedule}`);
    const ceil = ceilings(cuda, probe);
    console.log(
      `# mma.sync ceiling, TOPS@MHz (burst, fixed operands | burst, random | sustained, random): ${
        [...ceil].map(([t, c]) =>
          `${t} ${c.fixed.toFixed(0)}@${c.fixedClock.toFixed(0)} | ${c.random.toFixed(0)}@${
            c.randomClock.toFixed(0)
          } | ${c.sustained.toFixed(0)}@${c.sustainedClock.toFixed(0)}`
        ).join(", ")
      }`,
    );
    for (const t of types) {
      for (const p of problems) {
        let row: BenchRow;
        try {
          const c = ceil.get(t) ?? {
            fixed: NaN,
            fixedClock: NaN,
            random: NaN,
            randomClock: NaN,
            sustained: NaN,
            sustainedClock: NaN,
          };
          row = benchOne(cuda, blas, probe, t, p, c, target, schedule);
        } catch (e) {
          console.log(`${t} ${p.shape}: ERROR ${(e as Error).message}`);
          continue;
        }
        rows.push(row);
        console.log(rowLine(row));
      }
    }
    printTargets(rows, target);
  } finally {
    probe.close();
    blas.close();
    cuda.close();
  }
  const samples = await sampler.stop();
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    const inWin = samples.filter(([t]) => t >= r.window[0] - 50 && t <= r.window[1] + 50);
    rows[i] = {
      ...r,
      smClockMHz: inWin.length > 0 ? median(inWin.map(([, v]) => v)) : null,
      powerW: inWin.length > 0 ? median(inWin.map(([, , w]) => w)) : null,
    };
  }
  if (samples.length > 0) {
    console.log(
      `# nvidia-smi during our sustained launches (MHz/W): ${
        rows.map((r) => `${r.smClockMHz ?? "?"}/${r.powerW?.toFixed(0) ?? "?"}`).join(", ")
      }`,
    );
  }
  const date = resultDate();
  const gpu = cuda.device.name.replace(/^NVIDIA\s+/, "").toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const csv = csvOf(rows, cuda.device, date);
  // A new file: a record already there (committed) is never rewritten.
  const path = freshResultPath(opt("--out") ?? RESULTS_DIR, `${date}-${gpu}`, ".csv");
  Deno.writeTextFileSync(path, csv);
  console.log(`wrote ${path}`);
}

if (import.meta.main) await main();
