/**
 * `deno task bench --sparse`: 2:4 structured-sparse A (issue 21) against the
 * dense kernel of the same type, in the same run, with PyTorch's peers.
 *
 * For f16, bf16 (f32 accumulation, out in the operand type), tf32 (f32
 * operands, `math tf32`, f32 out) and s8 (s32 out), at M = N = K = 8192 by
 * default, A `[M, K]` row-major, B `[K, N]` column-major, D `[M, N]` row-major:
 *
 * 1. A random dense matrix with the type's pattern (numerics/sparse_compress.ts
 *    `randomSparse`: 2 of each 4 along K nonzero, 1 of 2 for tf32; random
 *    values, never 0 or ±1) compressed into the sparse kernel's kept values
 *    `[M, K/2]` and `A_meta` words (`compressSparse`, the canonical layout);
 *    the dense kernel multiplies the same matrix, uncompressed (the same
 *    product). B random.
 * 2. The dense kernel (`A: t[M, K] row`) and the sparse one (`... row sparse`),
 *    each compiled at its default schedule for the problem (the sizes as
 *    hints and the device's SM count, as bench/gpu_bench.ts), loaded
 *    (backends/cuda/kernel.ts), launched once on poisoned D and checked on a
 *    sample of rows and columns against the reference ({@link sampledCheck}),
 *    then timed in the house's two states (bench/gpu_measure.ts, bench/NOTES.md
 *    26): burst (3 rounds after 1 s rests) and sustained (after 1.5 s of load),
 *    dense and sparse back to back, rotating between input sets so L2 does
 *    not flatter. A kernel that does not compile (a schedule diagnostic), load
 *    or launch is a recorded line, not a crash.
 * 3. The `mma.sp` ceiling of each type (random operands, dense-equivalent,
 *    burst and sustained, measured as bench/sparse_peak.ts does).
 * 4. The peers, in the same run once our context is closed
 *    (bench/peers/sparse_peers.py): dense `torch.mm` (cuBLAS) and
 *    `to_sparse_semi_structured(A) @ B` (cuSPARSELt on an H200), both states.
 *
 * Writes `bench/results/sparse-DATE.md` ({@link sparseReport}; a new file when
 * one exists) and the raw figures beside it as JSON. TFLOP/s are
 * dense-equivalent throughout: 2·M·N·K over the time.
 *
 * `deno run -A bench/sparse.ts [--m 8192] [--n 8192] [--k 8192]
 * [--types f16,bf16,tf32,s8] [--no-peers] [--no-ceiling] [--out DIR]` (`DIR`: where the
 * record goes instead of `bench/results/`).
 *
 * @module
 */

import { compile, type CompiledKernel } from "../compiler.ts";
import { Cuda, cudaAvailable } from "../backends/cuda/driver.ts";
import { type LoadedKernel, loadKernel } from "../backends/cuda/kernel.ts";
import type { DeviceBuffer } from "../backends/cuda/resources.ts";
import type { GemmKernel } from "../ir/gemm.ts";
import { tensorParam } from "../ir/gemm.ts";
import { compareOutput, type Comparison } from "../harness/compare.ts";
import { encodeTensor } from "../harness/device_tensor.ts";
import { poisonByte } from "../harness/checks.ts";
import { referenceGemm } from "../harness/reference.ts";
import { tensorShape } from "../harness/tensor.ts";
import { Rng } from "../numerics/random.ts";
import { compressSparse, randomSparse } from "../numerics/sparse_compress.ts";
import { type SparsePeakRow, sparsePeaks } from "./sparse_peak.ts";
import { timeBurst, timeIt, timeSustained } from "./gpu_measure.ts";
import { freshResultPath, resultDate } from "./results.ts";
import {
  fx,
  type KernelFigures,
  type PeerRecord,
  SPARSE_BENCH_TYPES,
  SPARSE_STATES,
  type SparseBenchRow,
  type SparseBenchType,
  type SparseCeiling,
  sparseReport,
  type SparseState,
} from "./sparse_report.ts";

/** The operand dtype of a type (A and B as declared) and the peer script's name for it. */
const OPERAND: Readonly<Record<SparseBenchType, { dtype: string; out: string; peer: string }>> = {
  f16: { dtype: "f16", out: "f16", peer: "f16" },
  bf16: { dtype: "bf16", out: "bf16", peer: "bf16" },
  tf32: { dtype: "f32", out: "f32", peer: "f32" },
  s8: { dtype: "s8", out: "s32", peer: "s8" },
};

/**
 * The benchmark kernel's source: the dense kernel, or the same with A sparse.
 *
 * @param t The type.
 * @param sparse Whether A is declared `sparse`.
 * @returns The source of one kernel, `bench_sparse_T` or `bench_dense_T`.
 * @example
 * ```ts
 * import { match } from "node:assert/strict";
 * import { sparseBenchSource } from "./sparse.ts";
 * match(sparseBenchSource("f16", true), /A: f16\[M, K\] row sparse\n/);
 * match(sparseBenchSource("tf32", false), /math tf32/);
 * ```
 */
export function sparseBenchSource(t: SparseBenchType, sparse: boolean): string {
  const { dtype, out } = OPERAND[t];
  const stmt = out === dtype && t !== "tf32"
    ? `D[m, n] = ${out}(A[m, k] * B[k, n])`
    : "D[m, n] = A[m, k] * B[k, n]";
  return `kernel bench_${sparse ? "sparse" : "dense"}_${t} {\n` +
    `  A: ${dtype}[M, K] row${sparse ? " sparse" : ""}\n` +
    `  B: ${dtype}[K, N] col\n  D: ${out}[M, N] row\n  ${stmt}\n` +
    (t === "tf32" ? "  schedule {\n    math tf32\n  }\n" : "") + "}\n";
}

// ---------------------------------------------------------------- the check

/**
 * Checks an output on a sample: the rows `rows` and columns `cols` of D are
 * compared (harness/compare.ts, the reference's bounds) with the reference GEMM
 * (harness/reference.ts; a sparse A through its kept values and metadata) of the
 * gathered inputs: those rows of A (and of `A_meta`), those columns of B. For
 * the benchmark's layouts only: A (and `A_meta`) row-major, B column-major, D
 * row-major, no batch, no scalars, no C.
 *
 * @param k The kernel (checked GEMM IR).
 * @param sizes M, N, K.
 * @param tensors Each input's bytes by parameter name (A, A_meta when sparse, B).
 * @param out D's bytes as the kernel wrote them.
 * @param rows Sampled rows of D (distinct, in [0, M)).
 * @param cols Sampled columns of D (distinct, in [0, N)).
 * @returns The comparison of the sampled elements.
 * @throws {Error} For a layout it does not handle.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { randomArgs } from "../harness/inputs.ts";
 * import { referenceGemm } from "../harness/reference.ts";
 * import { encodeTensor } from "../harness/device_tensor.ts";
 * import { sampledCheck, sparseBenchSource } from "./sparse.ts";
 * const k = check(sparseBenchSource("bf16", true)).kernels[0]!;
 * const sizes = { M: 24, N: 16, K: 64 };
 * const args = randomArgs(k, sizes, 5);
 * const d = encodeTensor(referenceGemm(k, args).values, "bf16");
 * const c = sampledCheck(k, sizes, args.tensors, d, [0, 7, 23], [1, 15]);
 * ok(c.ok);
 * equal(c.elements, 6);
 * ```
 */
export function sampledCheck(
  k: GemmKernel,
  sizes: { readonly M: number; readonly N: number; readonly K: number },
  tensors: ReadonlyMap<string, Uint8Array>,
  out: Uint8Array,
  rows: readonly number[],
  cols: readonly number[],
): Comparison {
  const { M, N, K } = sizes;
  const p = k.problem;
  if (
    p.batch !== null || p.a.layout !== "row" || p.b.layout !== "col" || p.d.layout !== "row" ||
    k.params.some((q) => q.kind !== "tensor" || !["A", "A_meta", "B", "D"].includes(q.role))
  ) {
    throw new Error(`sampledCheck: ${k.name} is not A row, B col, D row without batch or scalars`);
  }
  const sub = new Map<string, Uint8Array>();
  /** The `picks` slices of `bytes` cut into `count` equal slices. */
  const gather = (bytes: Uint8Array, count: number, picks: readonly number[]) => {
    const w = bytes.length / count;
    if (!Number.isInteger(w)) throw new Error(`sampledCheck: ${bytes.length} bytes / ${count}`);
    const o = new Uint8Array(w * picks.length);
    picks.forEach((r, i) => o.set(bytes.subarray(r * w, (r + 1) * w), i * w));
    return o;
  };
  let dName = "D";
  for (const q of k.params) {
    if (q.kind !== "tensor") continue;
    if (q.role === "D") {
      dName = q.name;
      continue;
    }
    const bytes = tensors.get(q.name);
    const want = tensorShape(q, sizes).bytes;
    if (bytes === undefined || bytes.length !== want) {
      throw new Error(`sampledCheck: ${q.name} has ${bytes?.length ?? "no"} bytes, not ${want}`);
    }
    sub.set(q.name, q.role === "B" ? gather(bytes, N, cols) : gather(bytes, M, rows));
  }
  const dt = tensorParam(k, dName).dtype;
  const eb = out.length / (M * N);
  const d = new Uint8Array(eb * rows.length * cols.length);
  rows.forEach((r, i) =>
    cols.forEach((c, j) =>
      d.set(out.subarray((r * N + c) * eb, (r * N + c + 1) * eb), (i * cols.length + j) * eb)
    )
  );
  const ref = referenceGemm(k, {
    tensors: sub,
    scalars: new Map(),
    sizes: { M: rows.length, N: cols.length, K },
  });
  return compareOutput(d, dt, ref);
}

/**
 * Distinct sorted indices in [0, n): the first and last, those on either side
 * of the 128 boundary, then random ones, `count` in all (all of them when n is
 * smaller).
 *
 * @param n The dimension.
 * @param count How many.
 * @param rng The generator.
 * @returns The indices.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { Rng } from "../numerics/random.ts";
 * import { samplePicks } from "./sparse.ts";
 * const p = samplePicks(8192, 40, new Rng(1));
 * equal(new Set(p).size, 40);
 * ok([0, 127, 128, 8191].every((i) => p.includes(i)));
 * ok(p.every((x, i) => i === 0 || x > p[i - 1]!));
 * equal(samplePicks(5, 40, new Rng(1)).join(), "0,1,2,3,4");
 * ```
 */
export function samplePicks(n: number, count: number, rng: Rng): number[] {
  if (count >= n) return Array.from({ length: n }, (_, i) => i);
  const s = new Set<number>();
  for (const i of [0, n - 1, 127, 128]) if (i < n && s.size < count) s.add(i);
  while (s.size < count) s.add(rng.int(0, n - 1));
  return [...s].sort((a, b) => a - b);
}

// ---------------------------------------------------------------- the GPU side

/** The options of {@link sparseBenchMain}. */
export interface SparseBenchOptions {
  readonly M?: number;
  readonly N?: number;
  readonly K?: number;
  readonly types?: readonly SparseBenchType[];
  /** Run the PyTorch peers (default true). */
  readonly peers?: boolean;
  /** Measure the `mma.sp` ceiling (default true). */
  readonly ceiling?: boolean;
  /** Where the record goes (default `bench/results/`). */
  readonly outDir?: string;
}

/** The host inputs of one type: the dense A, its compressed form, B. */
interface HostInputs {
  readonly denseA: Uint8Array;
  readonly values: Uint8Array;
  readonly meta: Uint8Array;
  readonly B: Uint8Array;
}

/** Random inputs: A with the pattern (dense and compressed), B uniform in [-1, 1) or over s8. */
function hostInputs(t: SparseBenchType, M: number, N: number, K: number): HostInputs {
  const dtype = OPERAND[t].dtype;
  const dense = randomSparse(dtype, M, K, { seed: 21 });
  const c = compressSparse(dense, dtype, M, K);
  const denseA = encodeTensor(dense, dtype as never);
  const rng = new Rng(22);
  const n = K * N;
  let B: Uint8Array;
  if (dtype === "s8") {
    B = new Uint8Array(n);
    for (let i = 0; i < n; i++) B[i] = Math.floor(rng.next() * 256);
  } else {
    const f = new Float32Array(n);
    for (let i = 0; i < n; i++) f[i] = rng.next() * 2 - 1;
    B = encodeTensor(f, dtype as never);
  }
  return {
    denseA,
    values: c.values,
    meta: new Uint8Array(c.meta.buffer, c.meta.byteOffset, c.meta.byteLength),
    B,
  };
}

/** `x` rotated left by `s * 4096` bytes (another input set: the same bytes, not identical). */
function rotate(x: Uint8Array, s: number): Uint8Array {
  if (s === 0) return x;
  const k = (s * 4096) % x.length;
  const y = new Uint8Array(x.length);
  y.set(x.subarray(k));
  y.set(x.subarray(0, k), x.length - k);
  return y;
}

/** A compiled kernel's planned schedule: `128x128x64, warp 64x64x64, 4 stages`. */
function scheduleText(ck: CompiledKernel): string {
  const s = ck.planned.schedule;
  const tb = s.threadblock, wp = s.warp;
  if (tb === undefined || wp === undefined) return "?";
  return `${tb.m}x${tb.n}x${tb.k}, warp ${wp.m}x${wp.n}x${wp.k}, ${s.stages} stages`;
}

/** The first line of an error. */
function errText(e: unknown): string {
  const s = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return s.split("\n")[0]!.slice(0, 400);
}

/** A kernel ready to time, or its failure. */
type Prepared =
  | { readonly ok: true; readonly launch: (i: number) => void; readonly fig: KernelFigures }
  | { readonly ok: false; readonly fig: KernelFigures };

const NO_MS: Readonly<Record<SparseState, number | null>> = { burst: null, sustained: null };

/**
 * Compiles, loads and checks one kernel; its buffers go into `bufs`, its
 * closer into `closers`. Never throws: a failure is its figures.
 */
function prepare(
  cuda: Cuda,
  t: SparseBenchType,
  sparse: boolean,
  sizes: { M: number; N: number; K: number },
  host: HostInputs,
  bufs: DeviceBuffer[],
  closers: (() => void)[],
): Prepared {
  const r = compile(sparseBenchSource(t, sparse), {
    file: `bench_${sparse ? "sparse" : "dense"}_${t}.gemm`,
    sizeHints: sizes,
    sms: cuda.device.multiprocessors,
  });
  if (!r.ok || r.kernels[0] === undefined) {
    const note = r.diagnostics.map((d) => `${d.code}: ${d.message}`).join("; ") ||
      "no kernel";
    return { ok: false, fig: { status: "compile failed", note, schedule: null, ms: NO_MS } };
  }
  const ck = r.kernels[0];
  const schedule = scheduleText(ck);
  try {
    const alloc = (n: number) => {
      const b = cuda.alloc(n);
      bufs.push(b);
      return b;
    };
    const inputs: [string, Uint8Array][] = sparse
      ? [["A", host.values], ["A_meta", host.meta], ["B", host.B]]
      : [["A", host.denseA], ["B", host.B]];
    const setBytes = inputs.reduce((a, [, x]) => a + x.length, 0);
    const sets = Math.max(2, Math.min(8, Math.ceil((3 * 60e6) / setBytes)));
    const D = tensorParam(ck.gemm, "D");
    const d = alloc(tensorShape(D, sizes).bytes);
    const bound: Record<string, DeviceBuffer>[] = [];
    for (let s = 0; s < sets; s++) {
      const b: Record<string, DeviceBuffer> = { D: d };
      for (const [name, x] of inputs) {
        const buf = alloc(x.length);
        buf.upload(rotate(x, s));
        b[name] = buf;
      }
      bound.push(b);
    }
    const kernel: LoadedKernel = loadKernel(ck, { cuda });
    closers.push(() => kernel.close());
    d.fill(poisonByte(D.dtype));
    kernel.launch(bound[0]!, sizes);
    cuda.synchronize();
    const out = d.download();
    const rng = new Rng(7);
    const c = sampledCheck(
      ck.gemm,
      sizes,
      new Map(inputs),
      out,
      samplePicks(sizes.M, 48, rng),
      samplePicks(sizes.N, 48, rng),
    );
    const note = `${c.ok ? "check ok" : "check FAILED"} on ${c.elements} sampled elements ` +
      `(${c.overBound} over bound, worst error/bound ${c.worstRatio.toFixed(3)}, ` +
      `rel. Frobenius ${c.relFrobenius.toExponential(2)})`;
    return {
      ok: true,
      launch: (i: number) => kernel.launch(bound[i % sets]!, sizes),
      fig: { status: c.ok ? "ok" : "check failed", note, schedule, ms: NO_MS },
    };
  } catch (e) {
    return { ok: false, fig: { status: "error", note: errText(e), schedule, ms: NO_MS } };
  }
}

/** Runs the peer script; its records, or why there are none. */
function runPeers(
  M: number,
  N: number,
  K: number,
  types: readonly SparseBenchType[],
): { records: PeerRecord[]; note: string | null } {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc-sparse-" });
  const output = `${dir}/out.jsonl`;
  const script = new URL("peers/sparse_peers.py", import.meta.url).pathname;
  const args = [
    script,
    "--m",
    `${M}`,
    "--n",
    `${N}`,
    "--k",
    `${K}`,
    "--dtypes",
    types.map((t) => OPERAND[t].peer).join(","),
    output,
  ];
  let note: string | null = null;
  try {
    const r = new Deno.Command("python3", { args }).outputSync();
    console.log(new TextDecoder().decode(r.stdout));
    if (!r.success) {
      const err = new TextDecoder().decode(r.stderr).trim().split("\n").slice(-3).join(" / ");
      note = `peers exited ${r.code}: ${err}`;
      console.error(`sparse peers failed: ${err}`);
    }
  } catch (e) {
    note = `peers not run: ${errText(e)}`;
  }
  let records: PeerRecord[] = [];
  try {
    records = Deno.readTextFileSync(output).split("\n").filter((l) => l.trim() !== "").map((l) =>
      JSON.parse(l) as PeerRecord
    );
  } catch {
    // none written: the note says why
  }
  Deno.removeSync(dir, { recursive: true });
  return { records, note };
}

/**
 * Runs the sparse benchmark and records it.
 *
 * @param command The command line, for the record.
 * @param options Sizes, types, peers, ceiling.
 * @returns False without a driver or when a kernel's check failed; a kernel that
 *   does not compile is a recorded line and does not make it false.
 */
export function sparseBenchMain(command: string, options: SparseBenchOptions = {}): boolean {
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.error(`bench --sparse: ${avail.why}`);
    return false;
  }
  const M = options.M ?? 8192, N = options.N ?? 8192, K = options.K ?? 8192;
  const types = options.types ?? SPARSE_BENCH_TYPES;
  const sizes = { M, N, K };
  const rows: SparseBenchRow[] = [];
  let device: string;
  {
    using cuda = Cuda.open();
    device = cuda.device.name;
    const ceil = options.ceiling === false
      ? new Map<SparseBenchType, SparseCeiling>()
      : sparseCeilings(cuda, types);
    for (const t of types) rows.push(sparseBenchRow(cuda, t, sizes, ceil.get(t) ?? null));
  }
  // The peers, in the same run, once our context is closed (their own process and context).
  let peersNote: string | null = "peers skipped (--no-peers)";
  if (options.peers !== false) {
    const p = runPeers(M, N, K, types);
    peersNote = p.note;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      rows[i] = { ...r, peers: p.records.filter((x) => x.dtype === OPERAND[r.type].peer) };
    }
  }
  const date = resultDate();
  const text = sparseReport({ command, device, date, M, N, K, rows, peersNote });
  console.log(text);
  const path = freshResultPath(
    options.outDir ?? new URL("results", import.meta.url).pathname,
    `sparse-${date}`,
    ".md",
  );
  Deno.writeTextFileSync(path, text);
  Deno.writeTextFileSync(
    path.replace(/\.md$/, ".json"),
    JSON.stringify({ M, N, K, rows }, null, 2),
  );
  console.log(`Recorded in ${path}.`);
  return rows.every((r) => r.dense.status !== "check failed" && r.sparse.status !== "check failed");
}

/**
 * Parses the standalone command line: `--m`, `--n`, `--k`, `--types`, `--no-peers`,
 * `--no-ceiling`, `--out DIR`.
 *
 * @param args The arguments.
 * @returns The options, or an error message.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { parseSparseArgs } from "./sparse.ts";
 * deepEqual(parseSparseArgs(["--m", "4096", "--types", "f16,s8", "--no-peers"]), {
 *   M: 4096, types: ["f16", "s8"], peers: false,
 * });
 * equal(typeof parseSparseArgs(["--types", "f64"]), "string");
 * ```
 */
export function parseSparseArgs(args: readonly string[]): SparseBenchOptions | string {
  const out: {
    M?: number;
    N?: number;
    K?: number;
    types?: SparseBenchType[];
    peers?: boolean;
    ceiling?: boolean;
    outDir?: string;
  } = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--no-peers") out.peers = false;
    else if (a === "--no-ceiling") out.ceiling = false;
    else if (a === "--out") {
      const d = args[++i];
      if (d === undefined || d === "") return "--out needs a folder";
      out.outDir = d;
    } else if (a === "--m" || a === "--n" || a === "--k") {
      const v = Number(args[++i]);
      if (!Number.isInteger(v) || v <= 0 || v % 64 !== 0) {
        return `${a} needs a positive multiple of 64, got ${args[i]}`;
      }
      out[a === "--m" ? "M" : a === "--n" ? "N" : "K"] = v;
    } else if (a === "--types") {
      const ts = (args[++i] ?? "").split(",").filter((x) => x !== "");
      const bad = ts.filter((x) => !SPARSE_BENCH_TYPES.includes(x as SparseBenchType));
      if (ts.length === 0 || bad.length > 0) {
        return `--types takes a list of ${SPARSE_BENCH_TYPES.join(", ")}; got ${args[i]}`;
      }
      out.types = ts as SparseBenchType[];
    } else return `unknown argument ${a}`;
  }
  return out;
}

/** The `mma.sp` ceilings of the types, as bench/sparse_peak.ts measures them (the plain `mma.sp`
 * only); none where that fails (said on stderr). */
function sparseCeilings(
  cuda: Cuda,
  types: readonly SparseBenchType[],
): Map<SparseBenchType, SparseCeiling> {
  try {
    const label = (r: SparsePeakRow) => `mma.sp ${r.type}`;
    const { rows } = sparsePeaks(cuda, { types, variants: ["mma.sp"], label });
    return new Map(
      rows.map((r) => [r.type as SparseBenchType, { burst: r.burst, sustained: r.sustained }]),
    );
  } catch (e) {
    console.error(`mma.sp ceiling not measured: ${errText(e)}`);
    return new Map();
  }
}

/** One type's row: its dense and sparse kernels prepared, checked and timed in both states
 * (printed as they are), their buffers and modules released after. */
function sparseBenchRow(
  cuda: Cuda,
  t: SparseBenchType,
  sizes: { M: number; N: number; K: number },
  ceiling: SparseCeiling | null,
): SparseBenchRow {
  const { M, N, K } = sizes;
  console.log(`${t}: drawing the inputs (${M}x${K} A with the pattern, ${K}x${N} B)`);
  const host = hostInputs(t, M, N, K);
  const bufs: DeviceBuffer[] = [];
  const closers: (() => void)[] = [];
  try {
    const dense = prepare(cuda, t, false, sizes, host, bufs, closers);
    const sparse = prepare(cuda, t, true, sizes, host, bufs, closers);
    const ms: Record<"dense" | "sparse", Record<SparseState, number | null>> = {
      dense: { burst: null, sustained: null },
      sparse: { burst: null, sustained: null },
    };
    const notes: Record<"dense" | "sparse", string> = { dense: "", sparse: "" };
    const timed = [["dense", dense], ["sparse", sparse]] as const;
    for (const state of SPARSE_STATES) {
      for (const [which, p] of timed) {
        if (!p.ok || notes[which] !== "") continue;
        try {
          ms[which][state] = state === "burst"
            ? timeBurst(cuda, p.launch, timeIt(cuda, p.launch, 1, 2)).ms
            : timeSustained(cuda, p.launch, ms[which].burst ?? timeIt(cuda, p.launch, 1, 2));
        } catch (e) {
          notes[which] = `; timing failed: ${errText(e)}`;
        }
      }
    }
    const fig = (which: "dense" | "sparse", p: Prepared): KernelFigures =>
      notes[which] === ""
        ? { ...p.fig, ms: ms[which] }
        : { ...p.fig, status: "error", note: p.fig.note + notes[which], ms: ms[which] };
    const row: SparseBenchRow = {
      type: t,
      dense: fig("dense", dense),
      sparse: fig("sparse", sparse),
      peers: [],
      ceiling,
    };
    for (const [which, k] of [["dense", row.dense], ["sparse", row.sparse]] as const) {
      console.log(
        `${t} ${which}: ${k.status}: ${k.note}; burst ${fx(k.ms.burst, 3)} ms, ` +
          `sustained ${fx(k.ms.sustained, 3)} ms`,
      );
    }
    return row;
  } finally {
    for (const c of closers) {
      try {
        c();
      } catch {
        // the context's close releases it
      }
    }
    for (const b of bufs) {
      try {
        b.free();
      } catch {
        // as above
      }
    }
  }
}

if (import.meta.main) {
  const opts = parseSparseArgs(Deno.args);
  if (typeof opts === "string") {
    console.error(`bench/sparse.ts: ${opts}`);
    Deno.exit(2);
  }
  if (!sparseBenchMain(["deno run -A bench/sparse.ts", ...Deno.args].join(" "), opts)) {
    Deno.exit(1);
  }
}
