/**
 * The launch manifest (docs/ARCHITECTURE.md §3): what a launcher needs to run a
 * compiled kernel. `gemm compile --emit json` prints it; the API returns it
 * as data, with the grid as a function of the runtime sizes.
 *
 * @module
 */

import type { GemmKernel } from "../../ir/gemm.ts";
import { sparseGroup } from "../../numerics/sparse.ts";
import { type PtxTarget, targetInfo } from "../../ir/target.ts";
import {
  gridFor,
  type GridPlan,
  gridWaitEarly,
  type GroupField,
  type Kernel,
  type KernelParam,
  workspaceBytes,
  workspaceParams,
} from "../../ir/kernel.ts";
import type { TensorMapSpec } from "../../ir/tensor_map.ts";

/**
 * What an entry parameter is: a tensor's address (`.u64`), a runtime
 * dimension (`.u32`), a runtime stride (`.u64`, in elements; after the dims,
 * before the scalars) or a scalar; a grouped kernel's problem table (`.u64`) and
 * problem count (`.u32`, DESIGN §6.2); on sm90 a TMA tensor map (`ptx` "tmap": 128 bytes
 * by value, after every other parameter, built by the launcher by its `tmap` rule,
 * ir/tensor_map.ts).
 */
export type ParamKind = KernelParam["kind"];

/** One parameter of the entry point, in ABI order. */
export interface ManifestParam {
  /** The parameter's name in the source (tensors, dims, strides, scalars) or the workspace's name. */
  readonly name: string;
  /** What the parameter is (see {@link ParamKind}). */
  readonly kind: ParamKind;
  /** The PTX type of the parameter (`u64` for addresses, `tmap` for a tensor map). */
  readonly ptx: KernelParam["ptx"];
  /** A tensor map's rule (ir/tensor_map.ts `TensorMapSpec`): the tensor it maps, its element
   * type, extents and strides as products of dims, strides and constants (innermost first),
   * the box and the swizzle. The launcher calls `cuTensorMapEncodeTiled` with them. */
  readonly tmap?: TensorMapSpec;
  /** The element type, for tensors and scalars (`u8` for a workspace). */
  readonly dtype?: string;
  /** Declared dimensions (names or constants), for tensors. */
  readonly shape?: readonly (string | number)[];
  /** The storage order, for tensors. */
  readonly layout?: "row" | "col";
  /**
   * A tensor's declared strides in elements (DESIGN.md §6.1), outermost first:
   * one for a matrix (between rows of a row-major, columns of a col-major
   * one), two for a batched matrix (`[batch, matrix]`), one for a batched
   * vector (the batch stride). Each a literal or a name (a dimension's or a
   * stride parameter's). Absent: dense.
   */
  readonly strides?: readonly (string | number)[];
  /** Alignment in elements, for tensors. */
  readonly align?: number;
  /**
   * The tensor's role (`a`, `b`, `c`, `out`, `epilogue`, ...); `workspace` for a split-K workspace.
   */
  readonly role?: string;
  /** A scalar's declared default value (null: none), for scalars. */
  readonly default?: number | null;
  /**
   * A structured-sparse A's storage (DESIGN §6.3): `values`, the kept values, `shape` with
   * its contiguous K halved (`[batch?, M, K/2]`, `align` counting kept values); `metadata`
   * (the `A_meta` parameter, `dtype` A's), the canonical metadata of numerics/sparse.ts:
   * little-endian u32 words, `[batch?, M, ceil(K / kPerWord)]` row-major, one 4-bit nibble
   * a group of `group` elements of K (bits 0-1 the first kept index, bits 2-3 the second,
   * increasing; tf32 0b0100 / 0b1110; s4/u4 pair indices), the unused nibbles of a row's
   * last word 0b0100. Absent: dense.
   */
  readonly sparse?: {
    readonly storage: "values" | "metadata";
    readonly group: number;
    readonly kPerWord: number;
  };
}

/** The split-K workspace of a {@link KernelManifest}. */
export interface ManifestWorkspace {
  /** The workspace parameter's name (the last parameter). */
  readonly param: string;
  /** Bytes per output tile. */
  readonly bytesPerTile: number;
  /** Bytes at the manifest's sizes, when sizes were given. */
  readonly bytes?: number;
}

/** The manifest of one kernel. */
export interface KernelManifest {
  /** The kernel's name in the source. */
  readonly name: string;
  /** The PTX `.entry` name. */
  readonly entry: string;
  /** The PTX target the module was printed for. */
  readonly target: PtxTarget;
  /** The entry point's parameters, in ABI order. */
  readonly params: readonly ManifestParam[];
  /** The thread block's shape `[x, y, z]`. */
  readonly block: readonly [number, number, number];
  /** A kernel on thread-block clusters: their shape in blocks `[x, y, z]` (the PTX's
   * `.reqnctapercluster`, so an ordinary launch forms them; the grid's x is a multiple of x).
   * Absent: no clusters. */
  readonly cluster?: readonly [number, number, number];
  /** Dynamic shared memory a block requests, in bytes. */
  readonly dynamicSmemBytes: number;
  /** How the grid follows from the sizes (see {@link gridFor}). */
  readonly gridPlan: GridPlan;
  /** The concrete grid, when sizes were given. */
  readonly grid?: readonly [number, number, number];
  /**
   * split_k > 1: the workspace parameter (the last, a `.u64` "tensor" of
   * role "workspace"): `bytesPerTile` per output tile (`bytes` at the given
   * sizes). Zero it before the first launch; every launch leaves it zeroed,
   * so launches in one stream may share it (concurrent ones may not).
   */
  readonly workspace?: ManifestWorkspace;
  /** A grouped kernel's problem table (DESIGN §6.2); absent: an ordinary kernel. */
  readonly group?: ManifestGroup;
  /** Compiled with programmatic dependent launch (compile option `pdl`, sm90): the kernel
   * waits for the grid it depends on (`griddepcontrol.wait`) before it reads, and lets the next
   * grid start after its main loop. Launched the ordinary way it runs as any other kernel.
   * Absent: no wait (another target, or compiled without `pdl`). */
  readonly pdl?: ManifestPdl;
}

/** What a kernel compiled with `pdl` asks of the grid it depends on ({@link KernelManifest}). */
export interface ManifestPdl {
  /** The input tensors it reads before its wait (compile option `pdlEarly`): a launch as a
   * programmatic dependent promises that the grid it depends on does not write them (it may
   * still be running). Empty: nothing is read before the wait. */
  readonly early: readonly string[];
}

/**
 * A grouped kernel's problem table: the table parameter points at `count`
 * entries of `entryBytes` bytes, back to back (8-byte aligned); each entry holds
 * one problem's fields (little-endian). `problem` describes each problem as the
 * parameters of the ordinary kernel would (tensors with their shapes, layouts,
 * strides and alignment; dims; strides), so a launcher checks every problem as it
 * would an ordinary launch. `tiles_before` is the number of output tiles
 * (`ceil(M / tileM) * ceil(N / tileN)`, `gridPlan`'s tile) of the problems before
 * the entry; the grid is persistent: `[min(all tiles, resident blocks), 1, 1]`.
 */
export interface ManifestGroup {
  /** Bytes per entry. */
  readonly entryBytes: number;
  /** Each field's name, kind, byte offset and PTX type. */
  readonly fields: readonly GroupField[];
  /** One problem's parameters, as the ordinary kernel would take them. */
  readonly problem: readonly ManifestParam[];
}

/**
 * Builds the manifest of a compiled kernel.
 *
 * @param gemm The checked GEMM IR kernel (for declarations).
 * @param kernel The kernel IR (for the ABI, block and shared memory).
 * @param sizes Runtime sizes, to include the concrete grid.
 * @returns The manifest.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { kernelManifest } from "./manifest.ts";
 * const r = compile("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * const { gemm, kernel } = r.kernels[0]!;
 * const m = kernelManifest(gemm, kernel, { M: 256, N: 256, K: 64 });
 * equal(m.entry, "k");
 * deepEqual(m.params.map((p) => p.name), ["A", "B", "D", "M", "K", "N"]); // dims: first use
 * equal(m.grid?.length, 3);
 * ```
 */
export function kernelManifest(
  gemm: GemmKernel,
  kernel: Kernel,
  sizes?: Readonly<Record<string, number>>,
): KernelManifest {
  const ws = workspaceParams(kernel);
  const params: ManifestParam[] = kernel.params.map((p) => manifestParam(gemm, p, ws));
  const group = kernel.group === undefined ? undefined : {
    entryBytes: kernel.group.entryBytes,
    fields: kernel.group.fields,
    problem: kernel.group.fields.flatMap((f) =>
      f.kind === "tiles_before" ? [] : [manifestParam(gemm, { ...f, kind: f.kind }, ws)]
    ),
  };
  return {
    name: gemm.name,
    entry: kernel.name,
    target: targetInfo(kernel.target).ptx,
    params,
    block: [kernel.threads, 1, 1],
    ...((kernel.cluster ?? 1) > 1 ? { cluster: [kernel.cluster!, 1, 1] as const } : {}),
    dynamicSmemBytes: kernel.dynamicSmemBytes,
    gridPlan: kernel.grid,
    ...(sizes !== undefined && group === undefined ? { grid: gridFor(kernel.grid, sizes) } : {}),
    ...(ws.length > 0
      ? {
        workspace: {
          param: ws[0]!,
          bytesPerTile: kernel.grid.workspacePerTile!,
          ...(sizes !== undefined ? { bytes: workspaceBytes(kernel.grid, sizes) } : {}),
        },
      }
      : {}),
    ...(group !== undefined ? { group } : {}),
    ...pdlOf(kernel),
  };
}

/** A kernel's {@link ManifestPdl}, from its `griddepcontrol.wait` operations (none: `{}`). */
function pdlOf(kernel: Kernel): { pdl?: ManifestPdl } {
  const early = gridWaitEarly(kernel.body);
  return early === null ? {} : { pdl: { early } };
}

/** The manifest's description of a sparse A's buffer (ManifestParam.sparse). */
function sparseStorage(
  storage: "values" | "metadata",
  dtype: string,
): NonNullable<ManifestParam["sparse"]> {
  const group = sparseGroup(dtype).elements;
  return { storage, group, kPerWord: 8 * group };
}

/** One parameter's manifest entry: declarations for tensors and scalars. */
function manifestParam(
  gemm: GemmKernel,
  p: Pick<KernelParam, "name" | "kind" | "ptx" | "tmap">,
  ws: readonly string[],
): ManifestParam {
  const decl = gemm.params.find((q) => q.name === p.name);
  if (p.kind === "tensor" && decl?.kind === "tensor") {
    return {
      name: p.name,
      kind: p.kind,
      ptx: p.ptx,
      dtype: decl.dtype,
      shape: decl.dims.map((d) => d.kind === "sym" ? d.name : d.value),
      ...(decl.strides !== undefined
        ? { strides: decl.strides.map((d) => d.kind === "sym" ? d.name : d.value) }
        : {}),
      layout: decl.layout,
      align: decl.align,
      role: decl.role,
      ...(decl.sparse === true || decl.role === "A_meta"
        ? { sparse: sparseStorage(decl.role === "A_meta" ? "metadata" : "values", decl.dtype) }
        : {}),
    };
  }
  if (p.kind === "scalar" && decl?.kind === "scalar") {
    return { name: p.name, kind: p.kind, ptx: p.ptx, dtype: decl.dtype, default: decl.default };
  }
  if (p.tmap !== undefined) return { name: p.name, kind: p.kind, ptx: p.ptx, tmap: p.tmap };
  if (ws.includes(p.name)) {
    return { name: p.name, kind: p.kind, ptx: p.ptx, dtype: "u8", role: "workspace" };
  }
  return { name: p.name, kind: p.kind, ptx: p.ptx };
}
