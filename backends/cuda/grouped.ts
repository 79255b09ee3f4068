/**
 * Launching a grouped kernel (DESIGN §6.2) from Deno: a list of problems of
 * the kernel's form, each checked as an ordinary launch of that form would be
 * (backends/ptx/contract.ts, on the problem-form contract built from the
 * manifest's `group.problem`), written into the problem table
 * (backends/ptx/group_table.ts `groupTable`), uploaded once to a device buffer
 * the launch owns, and launched on a persistent grid
 * (`[min(all tiles, resident blocks), 1, 1]`) as often as wanted with no host
 * work beyond `cuLaunchKernel`. {@link moeProblems} builds the problems of the
 * mixture-of-experts form (PyTorch's grouped matrix multiply with `offs`).
 *
 * `LoadedKernel.groupedLaunch` (backends/cuda/kernel.ts) is the entry point.
 *
 * @module
 */

import {
  type LaunchContract,
  launchContract,
  launchViolations,
  type TensorBinding,
  tensorBytes,
  withStrideDefaults,
} from "../ptx/contract.ts";
import type { KernelManifest, ManifestParam } from "../ptx/manifest.ts";
import { groupTable } from "../ptx/group_table.ts";
import { groupedGrid, problemTiles } from "../../ir/kernel.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import {
  bufferBinding,
  type BufferRef,
  type LaunchBuffers,
  LaunchError,
  type LaunchSizes,
  list,
} from "./bind.ts";
import { type KernelArg, packKernelParams } from "./params.ts";
import { type CudaStream, DeviceBuffer } from "./resources.ts";
import type { Driver } from "./symbols.ts";
import { check } from "./errors.ts";
import { launchPacked } from "./launch.ts";

/** One problem of a grouped launch: its tensors and its sizes (as an ordinary launch's). */
export interface GroupedProblem {
  /** Device buffers (or raw addresses) by tensor name; one a problem never reads may be left out. */
  readonly buffers: LaunchBuffers;
  /** Sizes by dimension name, strides by stride name (one left out: dense). */
  readonly sizes: LaunchSizes;
}

/** Options of `LoadedKernel.groupedLaunch`. */
export interface GroupedLaunchOptions {
  /** Scalar values by name, shared by every problem; one not given takes its default. */
  readonly scalars?: Readonly<Record<string, number>>;
  /**
   * Blocks of the persistent grid at most (default: the blocks that run at
   * once: SMs x the occupancy the driver reports, SMs x 1 without it).
   */
  readonly blocks?: number;
  /** The stream of {@link GroupedLaunch.launch} when it is given none (default: the default stream). */
  readonly stream?: CudaStream;
}

/** What a grouped launch needs of its loaded kernel (backends/cuda/kernel.ts). */
export interface GroupedHost {
  /** The kernel's manifest (grouped). */
  readonly manifest: KernelManifest;
  /** The driver. */
  readonly driver: Driver;
  /** The `CUfunction`. */
  readonly fn: Deno.PointerValue;
  /** Allocates device memory of the kernel's context. */
  alloc(bytes: number): DeviceBuffer;
  /** Waits for the context's work. */
  synchronize(): void;
  /** Whether the kernel and its context are still open. */
  isOpen(): boolean;
  /** Counts one launch of the kernel. */
  launched(): void;
  /** Blocks that run at once on the device. */
  residentBlocks(): number;
  /** Called by {@link GroupedLaunch.close}. */
  closed(l: GroupedLaunch): void;
}

/**
 * The contract of one problem of a grouped kernel: the ordinary kernel's
 * (tensors, dims, strides of `manifest.group.problem`) without the scalars
 * (shared: checked once) and with a grid that is never empty (a problem with a
 * zero dimension is legal: it has no tile).
 *
 * @param m A grouped kernel's manifest.
 * @returns The contract.
 * @throws {Error} For a manifest without `group`.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { problemContract } from "./grouped.ts";
 * const ck = compile(`kernel e grouped { X: bf16[M, K] row  W: bf16[K, N] col  Y: bf16[M, N] row
 *   Y[m, n] = X[m, k] * W[k, n] }`).kernels[0]!;
 * const c = problemContract(ck.manifest);
 * deepEqual(c.tensors.map((t) => t.name), ["X", "W", "Y"]);
 * deepEqual(c.dims.map((d) => d.name).sort(), ["K", "M", "N"]);
 * ```
 */
export function problemContract(m: KernelManifest): LaunchContract {
  const g = m.group;
  if (g === undefined) throw new Error(`Kernel "${m.name}" is not grouped`);
  const { group: _g, workspace: _w, ...rest } = m;
  const c = launchContract({ ...rest, params: g.problem });
  return { ...c, scalars: [], gridPlan: { ...c.gridPlan, m: 1, n: 1, batch: null, splitK: 1 } };
}

/** The scalars' contract of a grouped kernel: its scalar parameters alone. */
function scalarContract(m: KernelManifest): LaunchContract {
  const scalars = m.params.filter((p) => p.kind === "scalar");
  const { group: _g, workspace: _w, ...rest } = m;
  const c = launchContract({ ...rest, params: scalars });
  return { ...c, gridPlan: { ...c.gridPlan, m: 1, n: 1, batch: null, splitK: 1 } };
}

/** A built grouped launch, before the driver: the table and the arguments. */
export interface GroupedPlan {
  /** The table's bytes and the tiles of every problem. */
  readonly table: Uint8Array;
  /** The output tiles of every problem. */
  readonly totalTiles: number;
  /** Each problem's tiles. */
  readonly tiles: readonly number[];
  /** Each problem's sizes with every stride (the table's values). */
  readonly sizes: readonly Readonly<Record<string, number>>[];
  /** Every scalar's value (defaults applied). */
  readonly scalars: ReadonlyMap<string, number>;
}

/**
 * Checks every problem of a grouped launch as an ordinary launch of the
 * kernel's form (sizes, alignments, addresses, buffer lengths, overlaps; a
 * problem with a zero dimension is legal, and a tensor it never reads may be
 * left out or given as `0n`), the shared scalars once, and across problems:
 * no problem's output may overlap another problem's input or output (the
 * problems run at once; span-based, so conservative for interleaved strided
 * views). Then writes the table. Pure: no driver call.
 *
 * @param m The grouped kernel's manifest.
 * @param problems The problems, in order.
 * @param scalars Scalar values by name (defaults apply).
 * @returns The table and what it was built from.
 * @throws {LaunchError} Listing every problem, each message prefixed with `Problem i:`.
 * @example
 * ```ts
 * import { equal, throws } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { planGroupedLaunch } from "./grouped.ts";
 * import { LaunchError } from "./bind.ts";
 * const ck = compile(`kernel e grouped { X: bf16[M, K] row  W: bf16[K, N] col  Y: bf16[M, N] row
 *   Y[m, n] = X[m, k] * W[k, n] }`).kernels[0]!;
 * const at = (n: number) => BigInt(n) << 24n;
 * const p = planGroupedLaunch(ck.manifest, [
 *   { buffers: { X: at(1), W: at(2), Y: at(3) }, sizes: { M: 100, N: 64, K: 32 } },
 *   { buffers: {}, sizes: { M: 0, N: 64, K: 32 } }, // no tile: no buffer needed
 * ], {});
 * equal(p.tiles[1], 0);
 * equal(p.table.length, 2 * ck.manifest.group!.entryBytes);
 * throws(() => planGroupedLaunch(ck.manifest, [
 *   { buffers: { X: at(1), W: at(2), Y: at(3) }, sizes: { M: 8, N: 64, K: 30 } }], {}), LaunchError);
 * ```
 */
export function planGroupedLaunch(
  m: KernelManifest,
  problems: readonly GroupedProblem[],
  scalars: Readonly<Record<string, number>>,
): GroupedPlan {
  const c = problemContract(m);
  const bad: string[] = [];
  const all: Readonly<Record<string, number>>[] = [];
  const addresses: Record<string, bigint>[] = [];
  const spans: Span[] = [];
  if (!Array.isArray(problems)) {
    throw new TypeError(`Kernel "${m.name}": the problems must be an array`);
  }
  for (const [i, p] of problems.entries()) {
    const one = checkProblem(m, c, i, p);
    bad.push(...one.bad);
    spans.push(...one.spans);
    all.push(one.sizes);
    addresses.push(one.addresses);
  }
  bad.push(...crossProblemOverlaps(spans));
  const values = groupedScalars(m, scalars, bad);
  if (bad.length > 0) throw new LaunchError(m.name, bad);
  let t: ReturnType<typeof groupTable>;
  try {
    t = groupTable(
      m.group!,
      m.gridPlan,
      all.map((sizes, i) => ({ sizes, addresses: addresses[i]! })),
    );
  } catch (e) {
    throw new LaunchError(m.name, [(e as Error).message]);
  }
  return {
    table: t.bytes,
    totalTiles: t.totalTiles,
    tiles: all.map((s) => problemTiles(m.gridPlan, s)),
    sizes: all,
    scalars: values,
  };
}

/** One problem of a grouped launch checked as an ordinary launch of the kernel's form would be
 * ({@link planGroupedLaunch}): its sizes with every stride, its table addresses (0 for a tensor
 * it does not read), the spans of its tensors, and what is wrong, each prefixed `Problem i:`. */
function checkProblem(
  m: KernelManifest,
  c: LaunchContract,
  i: number,
  p: GroupedProblem,
): {
  sizes: Readonly<Record<string, number>>;
  addresses: Record<string, bigint>;
  spans: Span[];
  bad: string[];
} {
  const bad: string[] = [];
  const spans: Span[] = [];
  const known = new Set(c.tensors.map((t) => t.name));
  const dimNames = new Set([...c.dims, ...c.strides].map((d) => d.name));
  const at = (s: string) => `Problem ${i}: ${s}`;
  const buffers: LaunchBuffers = p?.buffers ?? {};
  const sizes: LaunchSizes = p?.sizes ?? {};
  // Zero tiles (M or N is 0): the kernel reads nothing of the problem.
  const dimsOk = c.dims.every((d) => Number.isInteger(sizes[d.name]) && sizes[d.name]! >= 0);
  const tiles = dimsOk ? problemTiles(m.gridPlan, sizes) : NaN;
  const sz = dimsOk ? withStrideDefaults(c, sizes) : sizes;
  const bindings = new Map<string, TensorBinding>();
  const addr: Record<string, bigint> = {};
  c.tensors.forEach((t, ti) => {
    const v = buffers[t.name];
    const needed = !(tiles === 0 || (dimsOk && tensorBytes(t, sz) === 0));
    if ((v === undefined || v === 0n) && !needed) {
      // Not read: a stand-in for the checks (aligned, far from the others), 0 in the table.
      bindings.set(t.name, { address: BigInt(ti + 1) << 44n, bytes: undefined });
      addr[t.name] = 0n;
      return;
    }
    if (v === undefined) return; // the contract names it
    const b = bufferBinding(v, t.name);
    if (typeof b === "string") {
      bad.push(at(b));
      bindings.set(t.name, { address: BigInt(ti + 1) << 44n, bytes: undefined });
      return;
    }
    bindings.set(t.name, b);
    addr[t.name] = b.address;
  });
  for (const n of Object.keys(buffers)) {
    if (!known.has(n)) {
      bad.push(at(`Kernel "${m.name}" has no tensor "${n}" (it has ${list(known)})`));
    }
  }
  for (const n of Object.keys(sizes)) {
    if (!dimNames.has(n)) {
      bad.push(at(
        `Kernel "${m.name}" has no runtime dimension or stride "${n}"` +
          (dimNames.size === 0 ? " (its sizes are all fixed)" : ` (it has ${list(dimNames)})`),
      ));
    }
  }
  const own = launchViolations(c, sizes, bindings, new Map());
  for (const v of own) bad.push(at(v));
  if (own.length === 0 && tiles > 0) {
    for (const t of c.tensors) {
      const lo = addr[t.name] ?? 0n;
      const n = BigInt(tensorBytes(t, sz));
      if (lo !== 0n && n > 0n) {
        spans.push({ lo, hi: lo + n, problem: i, name: t.name, output: t.output });
      }
    }
  }
  return { sizes: sz, addresses: addr, spans, bad };
}

/** A grouped launch's scalar values (given, else the DSL defaults), checked once for all the
 * problems; what is wrong is pushed onto `bad`. */
function groupedScalars(
  m: KernelManifest,
  scalars: Readonly<Record<string, number>>,
  bad: string[],
): Map<string, number> {
  const sc = scalarContract(m);
  const values = new Map<string, number>();
  for (const s of sc.scalars) {
    const v = scalars[s.name] ?? s.default ?? undefined;
    if (v !== undefined) values.set(s.name, v);
  }
  const scalarNames = new Set(sc.scalars.map((s) => s.name));
  for (const n of Object.keys(scalars)) {
    if (!scalarNames.has(n)) {
      bad.push(
        `Kernel "${m.name}" has no scalar "${n}"` +
          (scalarNames.size === 0 ? "" : ` (it has ${list(scalarNames)})`),
      );
    }
  }
  bad.push(...launchViolations(sc, {}, new Map(), values));
  return values;
}

/** The bytes a problem's tensor spans (from its address to the end of its view). */
interface Span {
  readonly lo: bigint;
  readonly hi: bigint;
  readonly problem: number;
  readonly name: string;
  readonly output: boolean;
}

/**
 * Outputs of one problem that overlap an output or an input of another: the
 * problems of one launch run in any order and at once, so such a launch races
 * (within a problem the ordinary contract's rules apply). Span-based, so
 * conservative for strided views that interleave. The outputs are sorted by
 * start once; each tensor meets only the outputs that start before its end and
 * not so early that even the longest output would end before its start.
 *
 * @param spans Every problem's tensors.
 * @returns The messages, at most 8 (and a count of the rest).
 */
function crossProblemOverlaps(spans: readonly Span[]): string[] {
  const outs = spans.filter((x) => x.output).sort((
    a,
    b,
  ) => (a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0));
  let longest = 0n;
  for (const o of outs) if (o.hi - o.lo > longest) longest = o.hi - o.lo;
  const found: string[] = [];
  for (const x of spans) {
    // k: the first output starting at or after x's end.
    let k = outs.length;
    for (let lo = 0; lo < k;) {
      const mid = (lo + k) >> 1;
      if (outs[mid]!.lo < x.hi) lo = mid + 1;
      else k = mid;
    }
    for (let j = k - 1; j >= 0; j--) {
      const o = outs[j]!;
      if (o.lo + longest <= x.lo) break;
      // Another problem's, reaching x; two outputs reported once (from the later problem).
      if (o.hi <= x.lo || o.problem === x.problem || (x.output && o.problem > x.problem)) continue;
      found.push(
        `Problem ${o.problem}'s output "${o.name}" overlaps problem ${x.problem}'s ` +
          `${x.output ? "output" : "input"} "${x.name}": the problems of a launch run at once`,
      );
    }
  }
  return found.length <= 8 ? found : [...found.slice(0, 8), `... and ${found.length - 8} more`];
}

/** The kernel arguments of a grouped launch: the table, the count, the scalars. */
function groupedArgs(
  m: KernelManifest,
  table: bigint,
  count: number,
  scalars: ReadonlyMap<string, number>,
): KernelArg[] {
  return m.params.map((p: ManifestParam): KernelArg => {
    switch (p.kind) {
      case "table":
        return { type: "u64", value: table };
      case "count":
        return { type: "u32", value: count };
      case "scalar": {
        if (p.ptx !== "f32" && p.ptx !== "f64" && p.ptx !== "s32") {
          throw new Error(`Scalar "${p.name}" is .${p.ptx}`);
        }
        return { type: p.ptx, value: scalars.get(p.name)! };
      }
      default:
        throw new Error(
          `Grouped kernel "${m.name}" has an unexpected ${p.kind} parameter "${p.name}"`,
        );
    }
  });
}

/**
 * One grouped launch of a loaded kernel: its problems checked, its table on
 * the device (owned: freed by {@link GroupedLaunch.close}, the kernel's close
 * or the context's), its persistent grid chosen; {@link GroupedLaunch.launch}
 * launches it, as often as wanted. Zero problems: {@link GroupedLaunch.launch}
 * launches nothing (the grid reads `[0, 1, 1]`, no table is allocated).
 * Made by `LoadedKernel.groupedLaunch`.
 */
export class GroupedLaunch {
  /** The persistent grid: `[min(totalTiles, resident blocks), 1, 1]` (`[0, 1, 1]`: no problem). */
  readonly grid: readonly [number, number, number];
  /** The output tiles of every problem. */
  readonly totalTiles: number;
  /** Each problem's output tiles. */
  readonly tiles: readonly number[];
  /** The number of problems. */
  readonly count: number;
  /** The table's size in bytes (`count * group.entryBytes`). */
  readonly tableBytes: number;
  /** The table on the device (null: no problem). The launch owns it: do not free it. */
  readonly table: DeviceBuffer | null;
  readonly #host: GroupedHost;
  readonly #stream: CudaStream | undefined;
  readonly #block: readonly [number, number, number];
  readonly #smem: number;
  /** The packed arguments: `pointers` point into `values`, so both live as long as the launch. */
  readonly #params: ReturnType<typeof packKernelParams>;
  #launches = 0;
  #open = true;

  /** @internal Use `LoadedKernel.groupedLaunch`. */
  constructor(
    host: GroupedHost,
    problems: readonly GroupedProblem[],
    options: GroupedLaunchOptions = {},
  ) {
    const m = host.manifest;
    const blocks = options.blocks;
    if (blocks !== undefined && !(Number.isInteger(blocks) && blocks >= 1 && blocks < 2 ** 31)) {
      throw new RangeError(`Option blocks must be an integer of at least 1, got ${blocks}`);
    }
    const plan = planGroupedLaunch(m, problems, options.scalars ?? {});
    this.#host = host;
    this.#stream = options.stream;
    this.#block = m.block;
    this.#smem = m.dynamicSmemBytes;
    this.count = problems.length;
    this.totalTiles = plan.totalTiles;
    this.tiles = plan.tiles;
    this.tableBytes = plan.table.byteLength;
    this.grid = this.count === 0
      ? [0, 1, 1]
      : groupedGrid(plan.totalTiles, blocks ?? host.residentBlocks());
    let table: DeviceBuffer | null = null;
    if (this.count > 0) {
      table = host.alloc(plan.table.byteLength);
      try {
        table.upload(plan.table);
      } catch (e) {
        table.free();
        throw e;
      }
    }
    this.table = table;
    this.#params = packKernelParams(groupedArgs(m, table?.ptr ?? 0n, this.count, plan.scalars));
  }

  /** Launches so far (each that reached `cuLaunchKernel` and succeeded). */
  get launches(): number {
    return this.#launches;
  }

  /**
   * Launches the kernel over every problem, asynchronously (nothing with no
   * problem). The tensors must stay alive until the launches finish.
   *
   * @param options The stream (default: the one given to `groupedLaunch`, else the default
   *   stream); `pdl`: a programmatic dependent launch, as `LoadedKernel.launch`'s `pdl`
   *   (backends/cuda/bind.ts `LaunchOptions.pdl`; default false).
   * @throws {CudaError} When the driver refuses the launch.
   * @throws {Error} With `pdl`, when the driver lacks `cuLaunchKernelEx` (nothing launched).
   */
  launch(options: { readonly stream?: CudaStream; readonly pdl?: boolean } = {}): void {
    if (!this.#open || !this.#host.isOpen()) {
      throw new Error(
        `Grouped launch of kernel "${this.#host.manifest.name}" used after its close ` +
          "or its kernel's or context's",
      );
    }
    if (this.count === 0) return;
    const s = options.stream ?? this.#stream;
    launchPacked(
      this.#host.driver,
      this.#host.fn,
      this.grid,
      this.#block,
      this.#smem,
      s === undefined ? null : s.handle,
      this.#params.pointers,
      `${this.#host.manifest.name} grouped`,
      options.pdl === true,
    );
    this.#launches++;
    this.#host.launched();
  }

  /**
   * Waits for the context's work when it was launched, then frees the table
   * (idempotent).
   */
  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#host.closed(this);
    const t = this.table;
    if (t === null || t.freed) return;
    if (this.#launches > 0 && this.#host.isOpen()) this.#host.synchronize();
    t.free();
  }

  /** `using g = k.groupedLaunch(...)` closes it at the end of the scope. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/** The mixture-of-experts form of a grouped launch ({@link moeProblems}). */
export interface MoeOperands {
  /** A: every token's row, sorted by expert, packed `[T, K]` row-major (T = the last `offs`). */
  readonly a: BufferRef;
  /**
   * B: every expert's weight, `[E, K, N]` dense, each expert's `N x K` elements
   * contiguous in the kernel's B layout (col-major B: PyTorch's `[E, N, K]`).
   */
  readonly b: BufferRef;
  /** D: `[T, N]` row-major, the rows as A's. */
  readonly d: BufferRef;
  /** `offs[g]`: the end row of expert g (cumulative, PyTorch's `offs`); E = its length. */
  readonly offs: ArrayLike<number>;
  /** N and K, by the kernel's dimension names or the role letters `N`, `K` (not needed when fixed). */
  readonly sizes: LaunchSizes;
}

/** A tensor's dims as the manifest gives them. */
function dimsOf(p: ManifestParam): readonly (string | number)[] {
  return p.shape ?? [];
}

/** A grouped kernel's A, B and D and their dimensions, checked for the mixture-of-experts form
 * ({@link moeProblems}): only A, B and D, dense, A and D row-major matrices, M a runtime size. */
function moeForm(manifest: KernelManifest): {
  A: ManifestParam;
  B: ManifestParam;
  D: ManifestParam;
  mDim: string;
  kDim: string | number;
  nDim: string | number;
} {
  const name = manifest.name;
  const g = manifest.group;
  if (g === undefined) {
    throw new Error(
      `Kernel "${name}" is not grouped: the mixture-of-experts form needs a grouped kernel`,
    );
  }
  const tensors = g.problem.filter((p) => p.kind === "tensor");
  const role = (r: string) => tensors.find((p) => p.role === r);
  const others = tensors.filter((p) => p.role !== "A" && p.role !== "B" && p.role !== "D");
  if (others.length > 0) {
    throw new Error(
      `Kernel "${name}" has tensors beyond A, B and D (${
        others.map((p) => `"${p.name}"`).join(", ")
      }): ` +
        "the mixture-of-experts form takes one packed A, one batched B and one packed D",
    );
  }
  const A = role("A"), B = role("B"), D = role("D");
  if (A === undefined || B === undefined || D === undefined) {
    throw new Error(`Kernel "${name}" lacks an A, B or D tensor`);
  }
  const strided = tensors.filter((p) => p.strides !== undefined);
  if (strided.length > 0 || g.problem.some((p) => p.kind === "stride")) {
    throw new Error(
      `Kernel "${name}" declares strides (${strided.map((p) => `"${p.name}"`).join(", ")}): ` +
        "the mixture-of-experts form needs dense tensors",
    );
  }
  for (const t of [A, D]) {
    if (t.layout !== "row" || dimsOf(t).length !== 2) {
      throw new Error(
        `Tensor "${t.name}" (${t.role}) is ${t.layout ?? "?"}-major: the mixture-of-experts form ` +
          "packs A and D row-major, the experts' rows one after another",
      );
    }
  }
  if (dimsOf(B).length !== 2) throw new Error(`Tensor "${B.name}" (B) is not a matrix`);
  const [mDim, kDim] = dimsOf(A) as [string | number, string | number];
  const nDim = dimsOf(D)[1]!;
  if (typeof mDim !== "string") {
    throw new Error(`Kernel "${name}" fixes M = ${mDim}: the experts' rows need a runtime M`);
  }
  return { A, B, D, mDim, kDim, nDim };
}

/**
 * The problems of a mixture-of-experts launch (PyTorch's grouped matrix
 * multiply with `offs`): problem g multiplies expert g's rows of A
 * (`offs[g-1] .. offs[g]`, `offs[-1] = 0`) by expert g's matrix of B into the
 * same rows of D. Addresses are bigints; an expert with no row is a problem
 * with M = 0 (no tile). The kernel's form must have only A, B and D, dense,
 * with A and D row-major.
 *
 * @param manifest The grouped kernel's manifest.
 * @param o The packed operands, `offs` and the sizes.
 * @returns One problem per expert, in order.
 * @throws {Error} For another form of kernel, bad `offs`, or buffers shorter than the views.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { moeProblems } from "./grouped.ts";
 * const ck = compile(`kernel e grouped { X: bf16[M, K] row  W: bf16[K, N] col  Y: bf16[M, N] row
 *   Y[m, n] = X[m, k] * W[k, n] }`).kernels[0]!;
 * const ps = moeProblems(ck.manifest,
 *   { a: 1n << 32n, b: 2n << 32n, d: 3n << 32n, offs: [5, 5, 12], sizes: { N: 64, K: 32 } });
 * equal(ps.length, 3);
 * equal(ps[1]!.sizes.M, 0);
 * equal(ps[2]!.buffers.X, (1n << 32n) + 5n * 32n * 2n); // row 5 of X
 * equal(ps[2]!.buffers.W, (2n << 32n) + 2n * 64n * 32n * 2n); // expert 2's matrix
 * ```
 */
export function moeProblems(manifest: KernelManifest, o: MoeOperands): GroupedProblem[] {
  const name = manifest.name;
  const { A, B, D, mDim, kDim, nDim } = moeForm(manifest);
  const runtime = new Set(
    manifest.group!.problem.filter((p) => p.kind === "dim").map((p) => p.name),
  );
  const value = (d: string | number, letter: string): number => {
    if (typeof d === "number") return d;
    const v = o.sizes[d] ?? (runtime.has(letter) && letter !== d ? undefined : o.sizes[letter]);
    if (v === undefined) {
      throw new Error(`No size for dimension "${d}" (${letter}) of kernel "${name}"`);
    }
    if (!Number.isInteger(v) || v < 0) {
      throw new Error(`Size ${d}=${v} is not an integer of at least 0`);
    }
    return v;
  };
  const K = value(kDim, "K");
  const N = value(nDim, "N");
  for (const n of Object.keys(o.sizes)) {
    const ok = n === kDim || n === nDim || ((n === "K" || n === "N") && !runtime.has(n));
    if (!ok) {
      throw new Error(
        `Kernel "${name}": the sizes give "${n}"; the mixture-of-experts form takes N and K`,
      );
    }
  }
  const offs = Array.from(o.offs as ArrayLike<number>);
  let prev = 0;
  for (const [i, v] of offs.entries()) {
    if (!Number.isSafeInteger(v) || v < prev) {
      throw new Error(
        `offs[${i}] = ${v}: offs must be non-decreasing integers from 0 (the end row of each expert)`,
      );
    }
    prev = v;
  }
  const T = prev;
  const bits = (t: ManifestParam) => BigInt(DTYPE_INFO[t.dtype as keyof typeof DTYPE_INFO].bits);
  const bytesAt = (t: ManifestParam, elements: number): bigint => {
    const b = BigInt(elements) * bits(t);
    if (b % 8n !== 0n) {
      throw new Error(`Tensor "${t.name}": ${elements} elements of ${t.dtype} are not whole bytes`);
    }
    return b / 8n;
  };
  const E = offs.length;
  const cover = (v: BufferRef, t: ManifestParam, elements: number, what: string) => {
    if (v instanceof DeviceBuffer) {
      const need = bytesAt(t, elements);
      if (BigInt(v.bytes) < need) {
        throw new Error(
          `Buffer of tensor "${t.name}" (${t.role}) holds ${v.bytes} bytes; ${what} needs ${need}`,
        );
      }
    }
  };
  cover(o.a, A, T * K, `[${T}, ${K}] (${T} rows)`);
  cover(o.b, B, E * N * K, `[${E}, ${K}, ${N}] (${E} experts)`);
  cover(o.d, D, T * N, `[${T}, ${N}] (${T} rows)`);
  const base = (v: BufferRef, t: ManifestParam): bigint => {
    if (typeof v === "bigint") return v;
    if (v instanceof DeviceBuffer) return v.ptr;
    throw new Error(`Tensor "${t.name}": a DeviceBuffer or a bigint device address is needed`);
  };
  const a0 = base(o.a, A), b0 = base(o.b, B), d0 = base(o.d, D);
  const sizesOf = (m: number): Record<string, number> => {
    const s: Record<string, number> = { [mDim]: m };
    if (typeof nDim === "string") s[nDim] = N;
    if (typeof kDim === "string") s[kDim] = K;
    return s;
  };
  return offs.map((end, i): GroupedProblem => {
    const start = i === 0 ? 0 : offs[i - 1]!;
    return {
      buffers: {
        [A.name]: a0 + bytesAt(A, start * K),
        [B.name]: b0 + bytesAt(B, i * N * K),
        [D.name]: d0 + bytesAt(D, start * N),
      },
      sizes: sizesOf(end - start),
    };
  });
}

/**
 * Blocks of a kernel that run at once on the device: SMs x the occupancy the
 * driver reports (`cuOccupancyMaxActiveBlocksPerMultiprocessor`), SMs x 1
 * without it or when it reports none.
 *
 * @param driver The driver.
 * @param fn The `CUfunction`.
 * @param threads Threads per block.
 * @param smem Dynamic shared memory per block.
 * @param sms The device's SMs.
 * @returns The blocks.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import type { Driver } from "./symbols.ts";
 * import { residentBlocks } from "./grouped.ts";
 * // A driver without the occupancy call: one block per SM.
 * const d = { cuOccupancyMaxActiveBlocksPerMultiprocessor: null } as unknown as Driver;
 * equal(residentBlocks(d, null, 128, 0, 132), 132);
 * ```
 */
export function residentBlocks(
  driver: Driver,
  fn: Deno.PointerValue,
  threads: number,
  smem: number,
  sms: number,
): number {
  const occ = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor;
  let per = 1;
  if (occ !== null) {
    const out = new Int32Array(new ArrayBuffer(4));
    check(
      driver,
      "cuOccupancyMaxActiveBlocksPerMultiprocessor",
      occ(out, fn, threads, BigInt(smem)),
    );
    per = Math.max(1, out[0]!);
  }
  return Math.max(1, sms) * per;
}
