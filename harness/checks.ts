/**
 * Checking a GPU's output on the CPU at any size:
 *
 * - {@link referenceCheck}: against the reference GEMM. The reference is
 *   plain loops (a few million multiply-adds a second), so above a budget it
 *   runs on a sample: some rows, some columns (and batches) of the output,
 *   always the first and last and those at tile edges, the rest drawn at
 *   random. Each output element depends only on its row of A, its column of B
 *   and its own epilogue inputs, so the sampled sub-problem (the chosen rows
 *   of A, columns of B, elements of C and bias) is itself a GEMM whose
 *   reference is exactly the full one's at those elements.
 * - {@link simAgreement}: against the simulator running the same kernel IR on
 *   the same inputs, on the whole grid or a sample of blocks (corners, the
 *   blocks of the last partial tiles, the rest random): integers must be
 *   identical; for floats the largest difference in units in the last place
 *   of the output type.
 * - {@link unwrittenCount}: elements still holding the poison pattern.
 *
 * @module
 */

import type { DimRef, GemmKernel, TensorParam } from "../ir/gemm.ts";
import { tensorParam } from "../ir/gemm.ts";
import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import type { GridPlan, Kernel } from "../ir/kernel.ts";
import type { LaunchArgs } from "./inputs.ts";
import { Rng } from "../numerics/random.ts";
import { dimValue, readElem, type TensorShape, tensorShape, writeElem } from "./tensor.ts";
import { referenceGemm } from "./reference.ts";
import { compareOutput, type Comparison, type ElementMismatch } from "./compare.ts";
import { type Hazard, simulate } from "../backends/sim/mod.ts";
import { simArgs } from "./simulate_gemm.ts";
import { workspaceArgs } from "./workspace.ts";
import {
  bf16BitsToF32,
  ulpDistanceF16,
  ulpDistanceF32,
  ulpDistanceF64,
  ulpOf,
} from "../numerics/mod.ts";

/** Indices chosen along each sampled dimension, by dimension name. */
export type Sample = ReadonlyMap<string, readonly number[]>;

/**
 * The multi-index (declared order) of storage element `i` of a tensor: the
 * inverse of its shape's `index`.
 *
 * @param t The tensor (for its layout).
 * @param sh Its concrete shape.
 * @param i The storage index.
 * @returns The indices, batch first.
 */
export function coordsOf(t: TensorParam, sh: TensorShape, i: number): number[] {
  const d = sh.dims;
  if (d.length === 1) return [i];
  const d0 = d[d.length - 2]!;
  const d1 = d[d.length - 1]!;
  const per = d0 * d1;
  const b = Math.floor(i / per);
  const r = i % per;
  const mat = t.layout === "row" ? [Math.floor(r / d1), r % d1] : [r % d0, Math.floor(r / d0)];
  return d.length === 3 ? [b, ...mat] : mat;
}

/** Iterates every multi-index of `dims` (last fastest). */
function forEachIndex(dims: readonly number[], f: (ix: number[]) => void): void {
  if (dims.some((n) => n === 0)) return;
  const ix = dims.map(() => 0);
  for (;;) {
    f(ix);
    let a = dims.length - 1;
    while (a >= 0) {
      ix[a]!++;
      if (ix[a]! < dims[a]!) break;
      ix[a] = 0;
      a--;
    }
    if (a < 0) return;
  }
}

/**
 * Copies the sampled part of a tensor into a dense tensor of the sampled
 * sizes (same dtype and layout).
 *
 * @param t The tensor.
 * @param sizes Full sizes.
 * @param bytes Its storage.
 * @param sample Chosen indices per sampled dimension.
 * @returns The sub-tensor's storage and, per sub element, the full storage index.
 */
export function gatherTensor(
  t: TensorParam,
  sizes: Readonly<Record<string, number>>,
  bytes: Uint8Array,
  sample: Sample,
): { bytes: Uint8Array; fullIndex: Int32Array } {
  const full = tensorShape(t, sizes);
  const subSizes = { ...sizes };
  for (const [n, ix] of sample) subSizes[n] = ix.length;
  const sub = tensorShape(t, subSizes);
  const maps = t.dims.map((d) => (d.kind === "sym" ? sample.get(d.name) : undefined));
  const out = new Uint8Array(sub.bytes);
  const fullIndex = new Int32Array(sub.elements);
  const orig: number[] = t.dims.map(() => 0);
  forEachIndex(sub.dims, (ix) => {
    for (let a = 0; a < ix.length; a++) {
      const m = maps[a];
      orig[a] = m === undefined ? ix[a]! : m[ix[a]!]!;
    }
    const si = sub.index(ix);
    const fi = full.index(orig);
    fullIndex[si] = fi;
    // A sparse A's metadata (role A_meta) is u32 words, not elements of its dtype.
    if (t.role === "A_meta") out.set(bytes.subarray(4 * fi, 4 * fi + 4), 4 * si);
    else writeElem(out, t.dtype, si, readElem(bytes, t.dtype, fi));
  });
  return { bytes: out, fullIndex };
}

/**
 * Chooses `count` distinct indices in [0, n): the first and last, those on
 * either side of every edge of `tile` among the first two and the last,
 * then random ones; sorted.
 */
function pickIndices(n: number, count: number, tile: number, rng: Rng): number[] {
  if (count >= n) return Array.from({ length: n }, (_, i) => i);
  const s = new Set<number>();
  const lastTile = Math.floor((n - 1) / tile) * tile;
  for (const i of [0, n - 1, tile - 1, tile, lastTile - 1, lastTile, 1, n - 2]) {
    if (s.size < count && i >= 0 && i < n) s.add(i);
  }
  while (s.size < count) s.add(rng.int(0, n - 1));
  return [...s].sort((a, b) => a - b);
}

/**
 * The sample for a reference check within `maxMacs` multiply-adds, or null
 * when the whole problem fits (or cannot be sampled: the roles share a
 * dimension name, or the sizes are constants).
 *
 * @param k The kernel.
 * @param sizes Sizes by dimension name.
 * @param maxMacs The budget.
 * @param seed For the random picks.
 * @param tiles The threadblock tile (rows, columns), to include its edges.
 * @returns The sample, or null for the full check.
 */
export function chooseReferenceSample(
  k: GemmKernel,
  sizes: Readonly<Record<string, number>>,
  maxMacs: number,
  seed: number,
  tiles: { readonly m: number; readonly n: number } = { m: 128, n: 128 },
): Sample | null {
  const p = k.problem;
  const val = (d: DimRef) => dimValue(d, sizes);
  const M = val(p.m);
  const N = val(p.n);
  const K = val(p.k);
  const L = p.batch === null ? 1 : val(p.batch);
  if (M * N * K * L <= maxMacs) return null;
  const names = [p.m, p.n, p.k, ...(p.batch === null ? [] : [p.batch])]
    .map((d) => (d.kind === "sym" ? d.name : null));
  const sampleable = (d: GemmKernel["problem"]["m"]): string | null => {
    if (d.kind !== "sym") return null;
    return names.filter((x) => x === d.name).length === 1 ? d.name : null;
  };
  const mName = sampleable(p.m);
  const nName = sampleable(p.n);
  const lName = p.batch === null ? null : sampleable(p.batch);
  if (mName === null && nName === null && lName === null) return null;
  const rng = new Rng(seed ^ 0x5eed);
  const out = new Map<string, number[]>();
  let Lb = L;
  if (lName !== null && L > 2) {
    out.set(lName, [0, L - 1]);
    Lb = 2;
  }
  const rc = Math.max(1, Math.floor(maxMacs / Math.max(1, K * Lb)));
  let r = M;
  let c = N;
  if (mName !== null && nName !== null) {
    const side = Math.max(1, Math.floor(Math.sqrt(rc)));
    if (M <= side) c = Math.min(N, Math.max(1, Math.floor(rc / M)));
    else if (N <= side) r = Math.min(M, Math.max(1, Math.floor(rc / N)));
    else {
      r = side;
      c = Math.min(N, Math.max(1, Math.floor(rc / side)));
    }
  } else if (mName !== null) r = Math.min(M, Math.max(1, Math.floor(rc / N)));
  else if (nName !== null) c = Math.min(N, Math.max(1, Math.floor(rc / M)));
  if (mName !== null && r < M) out.set(mName, pickIndices(M, r, tiles.m, rng));
  if (nName !== null && c < N) out.set(nName, pickIndices(N, c, tiles.n, rng));
  return out.size === 0 ? null : out;
}

/** How much of one dimension a sampled {@link ReferenceCheck} checked. */
export interface SampledDim {
  /** Indices checked. */
  readonly chosen: number;
  /** The dimension's size. */
  readonly of: number;
}

/** An element of D over its bound, found by {@link referenceCheck}. */
export interface ReferenceMismatch extends ElementMismatch {
  /** Its multi-index (batch first, then row and column). */
  readonly coords: readonly number[];
}

/** The outcome of {@link referenceCheck}. */
export interface ReferenceCheck {
  /** The GPU's output compared with the reference GEMM. */
  readonly comparison: Comparison;
  /** Null when every element was checked; else the sampled counts per dimension. */
  readonly sampled: null | Readonly<Record<string, SampledDim>>;
  /** Elements checked. */
  readonly elements: number;
  /** The first element over its bound: full storage index, multi-index, values. */
  readonly first: null | ReferenceMismatch;
  /** Wall time of the check, in seconds. */
  readonly seconds: number;
}

/**
 * Compares an output with the reference GEMM, in full or on a sample (see the
 * module's description).
 *
 * @param k The kernel.
 * @param args The launch's inputs.
 * @param output D's bytes as the kernel wrote them.
 * @param sample From {@link chooseReferenceSample} (null: every element).
 * @returns The comparison.
 */
export function referenceCheck(
  k: GemmKernel,
  args: LaunchArgs,
  output: Uint8Array,
  sample: Sample | null,
): ReferenceCheck {
  const t0 = performance.now();
  const d = tensorParam(k, k.problem.d.tensor);
  const dShape = tensorShape(d, args.sizes);
  if (sample === null) {
    const ref = referenceGemm(k, args);
    const comparison = compareOutput(output, d.dtype, ref);
    const f = comparison.first;
    return {
      comparison,
      sampled: null,
      elements: comparison.elements,
      first: f === null
        ? null
        : { index: f.index, coords: coordsOf(d, dShape, f.index), got: f.got, want: f.want },
      seconds: (performance.now() - t0) / 1000,
    };
  }
  const subSizes: Record<string, number> = { ...args.sizes };
  for (const [n, ix] of sample) subSizes[n] = ix.length;
  const tensors = new Map<string, Uint8Array>();
  for (const p of k.params) {
    if (p.kind !== "tensor" || p.role === "D") continue;
    tensors.set(p.name, gatherTensor(p, args.sizes, args.tensors.get(p.name)!, sample).bytes);
  }
  const ref = referenceGemm(k, { tensors, scalars: args.scalars, sizes: subSizes });
  const subD = gatherTensor(d, args.sizes, output, sample);
  const comparison = compareOutput(subD.bytes, d.dtype, ref);
  const f = comparison.first;
  const sampled: Record<string, { chosen: number; of: number }> = {};
  for (const [n, ix] of sample) sampled[n] = { chosen: ix.length, of: args.sizes[n]! };
  let first: ReferenceCheck["first"] = null;
  if (f !== null) {
    const index = subD.fullIndex[f.index]!;
    first = { index, coords: coordsOf(d, dShape, index), got: f.got, want: f.want };
  }
  return {
    comparison,
    sampled,
    elements: comparison.elements,
    first,
    seconds: (performance.now() - t0) / 1000,
  };
}

/** The byte every element of an unwritten output holds (as `randomArgs` poisons). */
export function poisonByte(dtype: Dtype): number {
  return DTYPE_INFO[dtype].float ? 0xff : 0x5a;
}

/**
 * Counts output elements whose every byte still holds the poison: elements
 * the kernel never wrote. Only where the poison cannot be a result: float
 * outputs (all-ones bits is a NaN no arithmetic produces) and integers of
 * 32 bits or more (`0x5a5a5a5a` is out of reach of the inputs' ranges).
 *
 * @param dtype D's type.
 * @param bytes D's storage.
 * @returns The count, or null when the type cannot tell.
 */
export function unwrittenCount(dtype: Dtype, bytes: Uint8Array): number | null {
  const info = DTYPE_INFO[dtype];
  const w = info.bits / 8;
  if (!info.float && w < 4) return null;
  const p = poisonByte(dtype);
  let n = 0;
  for (let i = 0; i + w <= bytes.length; i += w) {
    let all = true;
    for (let j = 0; j < w; j++) {
      if (bytes[i + j] !== p) {
        all = false;
        break;
      }
    }
    if (all) n++;
  }
  return n;
}

/**
 * The distance of two output elements in units in the last place of the
 * output type (bf16 measured in bf16 ulps: its f32 distance / 2^16), or, for
 * integers, 0 when equal and 1 when not.
 *
 * @param dtype D's type.
 * @param x Storage of the first output.
 * @param y Storage of the second.
 * @param i The element.
 * @returns The distance.
 */
export function elementDistance(dtype: Dtype, x: Uint8Array, y: Uint8Array, i: number): number {
  switch (dtype) {
    case "f32":
    case "tf32":
      return ulpDistanceF32(readElem(x, dtype, i), readElem(y, dtype, i));
    case "f16":
      return ulpDistanceF16(x[2 * i]! | (x[2 * i + 1]! << 8), y[2 * i]! | (y[2 * i + 1]! << 8));
    case "bf16": {
      const a = bf16BitsToF32(x[2 * i]! | (x[2 * i + 1]! << 8));
      const b = bf16BitsToF32(y[2 * i]! | (y[2 * i + 1]! << 8));
      return ulpDistanceF32(a, b) / 65536;
    }
    case "f64":
      return ulpDistanceF64(readElem(x, dtype, i), readElem(y, dtype, i));
    default:
      return readElem(x, dtype, i) === readElem(y, dtype, i) ? 0 : 1;
  }
}

/**
 * Blocks to simulate within `maxMacs` multiply-adds (null: the whole grid):
 * the tiles at the four corners of the output, then random tiles, each with
 * every z (batch and split-K) of the grid, as block coordinates under the
 * plan's swizzle.
 *
 * @param plan The grid plan.
 * @param grid The grid.
 * @param K The summed size.
 * @param maxMacs The budget.
 * @param seed For the random picks.
 * @param dims Sizes by dimension name.
 * @returns Block coordinates, or null.
 */
export function chooseBlocks(
  plan: GridPlan,
  grid: readonly [number, number, number],
  K: number,
  maxMacs: number,
  seed: number,
  dims: Readonly<Record<string, number>>,
): [number, number, number][] | null {
  const val = (d: string | number) => typeof d === "number" ? d : dims[d]!;
  const tilesM = Math.ceil(val(plan.m) / plan.tileM);
  const tilesN = Math.ceil(val(plan.n) / plan.tileN);
  if (plan.persistent !== undefined) return persistentBlocks(plan, grid, K, maxMacs, seed, val);
  const perTile = plan.tileM * plan.tileN * Math.max(K, 1) * grid[2];
  const tiles = Math.max(1, Math.floor(maxMacs / perTile));
  if (tiles >= tilesM * tilesN) return null;
  const rng = new Rng(seed ^ 0xb10c);
  const chosen = new Set<string>();
  const add = (tm: number, tn: number) => {
    if (chosen.size < tiles) chosen.add(`${tm},${tn}`);
  };
  add(tilesM - 1, tilesN - 1);
  add(0, 0);
  add(0, tilesN - 1);
  add(tilesM - 1, 0);
  while (chosen.size < tiles) add(rng.int(0, tilesM - 1), rng.int(0, tilesN - 1));
  const sw = plan.swizzle;
  const out: [number, number, number][] = [];
  for (const key of chosen) {
    const [tm, tn] = key.split(",").map(Number) as [number, number];
    // Inverse of the lowering's rasterisation: tileM = x / sw, tileN = y * sw + x % sw.
    const x = tm * sw + (tn % sw);
    const y = Math.floor(tn / sw);
    for (let z = 0; z < grid[2]; z++) out.push([x, y, z]);
  }
  return out;
}

/** {@link chooseBlocks} for a persistent grid (`[blocks, 1, 1]`, each block looping over
 * tiles x, x + blocks, ...): the last block, the first, then random ones, as many as the
 * budget holds at the most tiles a block computes. */
function persistentBlocks(
  plan: GridPlan,
  grid: readonly [number, number, number],
  K: number,
  maxMacs: number,
  seed: number,
  val: (d: string | number) => number,
): [number, number, number][] | null {
  const batch = plan.batch === null ? 1 : val(plan.batch);
  const tiles = Math.ceil(val(plan.m) / plan.tileM) * Math.ceil(val(plan.n) / plan.tileN) * batch;
  const perBlock = Math.ceil(tiles / grid[0]) * plan.tileM * plan.tileN * Math.max(K, 1);
  const count = Math.max(1, Math.floor(maxMacs / perBlock));
  if (count >= grid[0]) return null;
  const rng = new Rng(seed ^ 0xb10c);
  const chosen = new Set<number>([grid[0] - 1, 0].slice(0, count));
  while (chosen.size < count) chosen.add(rng.int(0, grid[0] - 1));
  return [...chosen].map((x) => [x, 0, 0]);
}

/** An element of D on which the GPU and the simulator differ. */
export interface SimMismatch {
  /** Its index in D's storage. */
  readonly index: number;
  /** Its multi-index (batch first, then row and column). */
  readonly coords: readonly number[];
  /** The GPU's value. */
  readonly gpu: number;
  /** The simulator's value. */
  readonly sim: number;
}

/** The outcome of {@link simAgreement}. */
export interface SimAgreement {
  /** Blocks simulated, and the grid's total. */
  readonly blocks: number;
  /** Blocks in the grid. */
  readonly totalBlocks: number;
  /** Elements compared (those the simulated blocks wrote). */
  readonly compared: number;
  /** Elements that differ (floats: by at least one ulp). */
  readonly differing: number;
  /** Integer output: no element differs. Float output: every element has identical bits. */
  readonly identical: boolean;
  /** Floats: the largest difference in ulps of D's type; integers: null. */
  readonly maxUlp: number | null;
  /**
   * Floats: the largest |GPU - simulator| (finite values), and the same in
   * ulps of the largest |simulator| value compared (ulps near zero are tiny,
   * so {@link SimAgreement.maxUlp} is dominated by elements that cancel);
   * integers: null.
   */
  readonly maxAbsDiff: number | null;
  /**
   * Floats: {@link SimAgreement.maxAbsDiff} in ulps of the largest simulated value; integers: null.
   */
  readonly ulpsAtScale: number | null;
  /** D's element type. */
  readonly dtype: Dtype;
  /** The first differing element: storage index, multi-index, both values. */
  readonly first: null | SimMismatch;
  /** Hazard occurrences the simulator found. */
  readonly hazardCount: number;
  /** The first distinct hazards. */
  readonly hazards: readonly Hazard[];
  /** Wall time of the simulation and comparison, in seconds. */
  readonly seconds: number;
}

/** Options of {@link simAgreement}. */
export interface SimAgreementOptions {
  /** Blocks to simulate (null or absent: the whole grid). */
  readonly blocks?: readonly (readonly [number, number, number])[] | null;
  /** Check shared-memory hazards (default true). */
  readonly hazards?: boolean;
}

function simOutput(
  kernel: Kernel,
  grid: readonly [number, number, number],
  args: LaunchArgs,
  dName: string,
  poison: number,
  opts: SimAgreementOptions,
) {
  const tensors = new Map<string, Uint8Array>();
  for (const [n, b] of args.tensors) {
    tensors.set(n, n === dName ? new Uint8Array(b.length).fill(poison) : b.slice());
  }
  for (const [n, b] of workspaceArgs(kernel, args.sizes)) tensors.set(n, b);
  const res = simulate(
    kernel,
    { grid, args: simArgs({ tensors, scalars: args.scalars, sizes: args.sizes }) },
    {
      hazards: opts.hazards ?? true,
      ...(opts.blocks === null || opts.blocks === undefined ? {} : { blocks: opts.blocks }),
    },
  );
  return { res, out: tensors.get(dName)! };
}

/**
 * Runs the simulator on the same inputs (output poisoned afresh) and
 * compares the GPU's output with it, element by element, where the simulated
 * blocks wrote.
 *
 * @param k The GEMM IR kernel (for D).
 * @param kernel The kernel IR the GPU ran.
 * @param grid The grid.
 * @param args The launch's inputs (not modified).
 * @param gpu D's bytes as the GPU wrote them.
 * @param opts Blocks and hazard checking.
 * @returns The agreement.
 */
export function simAgreement(
  k: GemmKernel,
  kernel: Kernel,
  grid: readonly [number, number, number],
  args: LaunchArgs,
  gpu: Uint8Array,
  opts: SimAgreementOptions = {},
): SimAgreement {
  const t0 = performance.now();
  const d = tensorParam(k, k.problem.d.tensor);
  const sh = tensorShape(d, args.sizes);
  const info = DTYPE_INFO[d.dtype];
  const w = info.bits / 8;
  const partial = opts.blocks !== null && opts.blocks !== undefined;
  const p1 = poisonByte(d.dtype);
  const { res, out } = simOutput(kernel, grid, args, d.name, p1, opts);
  // Which elements did the simulated blocks write? Those not left all-poison;
  // where a result may legitimately equal the poison (narrow integers), a
  // second run with another poison settles it.
  let written: ((i: number) => boolean) | null = null;
  if (partial) {
    if (w < 1) throw new Error(`Cannot compare a partial simulation of a ${d.dtype} output`);
    const isAll = (b: Uint8Array, i: number, v: number) => {
      for (let j = 0; j < w; j++) if (b[i * w + j] !== v) return false;
      return true;
    };
    let out2: Uint8Array | null = null;
    if (!info.float && w < 4) {
      out2 = simOutput(kernel, grid, args, d.name, p1 ^ 0xff, { ...opts, hazards: false }).out;
    }
    written = (i) => !isAll(out, i, p1) || (out2 !== null && !isAll(out2, i, p1 ^ 0xff));
  }
  let compared = 0;
  let differing = 0;
  let bitsDiffer = 0;
  let maxUlp = 0;
  let first: SimAgreement["first"] = null;
  let maxAbsDiff = 0;
  let scale = 0;
  for (let i = 0; i < sh.elements; i++) {
    if (written !== null && !written(i)) continue;
    compared++;
    const dist = elementDistance(d.dtype, gpu, out, i);
    if (info.float) {
      const g = readElem(gpu, d.dtype, i);
      const v = readElem(out, d.dtype, i);
      if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
      if (Number.isFinite(g - v)) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(g - v));
    }
    if (w >= 1) {
      for (let j = 0; j < w; j++) {
        if (gpu[i * w + j] !== out[i * w + j]) {
          bitsDiffer++;
          break;
        }
      }
    } else if (dist !== 0) bitsDiffer++;
    if (dist !== 0) {
      differing++;
      if (dist > maxUlp || Number.isNaN(dist)) maxUlp = dist;
      if (first === null) {
        first = {
          index: i,
          coords: coordsOf(d, sh, i),
          gpu: readElem(gpu, d.dtype, i),
          sim: readElem(out, d.dtype, i),
        };
      }
    }
  }
  return {
    blocks: res.blocks,
    totalBlocks: grid[0] * grid[1] * grid[2],
    compared,
    differing,
    identical: info.float ? bitsDiffer === 0 : differing === 0,
    maxUlp: info.float ? maxUlp : null,
    maxAbsDiff: info.float ? maxAbsDiff : null,
    ulpsAtScale: info.float ? maxAbsDiff / ulpOf(scale, d.dtype) : null,
    dtype: d.dtype,
    first,
    hazardCount: res.hazardCount,
    hazards: res.hazards,
    seconds: (performance.now() - t0) / 1000,
  };
}
