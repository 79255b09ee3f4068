/**
 * The launch contract: what every launcher of a compiled kernel must check
 * before it launches, derived from the launch manifest alone
 * (docs/ARCHITECTURE.md §3). It is the one table behind the three launchers:
 * the Deno launch API checks it directly ({@link launchViolations}); the C
 * and Python artefacts print the same rules in their own language from the
 * same {@link LaunchContract}. A rule added here reaches all three.
 *
 * The rules, for sizes `S`, tensor addresses and scalar values:
 * - every runtime dimension is an integer in `0 ..` {@link MAX_DIM};
 * - every runtime stride (DESIGN.md §6.1; its value by name in the same
 *   sizes record, the dense value when left out: {@link withStrideDefaults})
 *   is an integer in `0 ..` {@link MAX_STRIDE};
 * - the grid is at least 1 on every axis (M, N and the batch at least 1);
 * - a rank-2 or rank-3 tensor's contiguous extent is a multiple of its
 *   declared `align` (so every row or column start stays aligned): the
 *   dimension its layout makes contiguous for A, B, C and D, the last one for
 *   a batched vector (role `bias`, stored batch outermost);
 * - a strided tensor's ({@link TensorView}) matrix stride is at least its
 *   contiguous extent; its batch stride at least rows x the matrix stride
 *   (an input's may be 0: one matrix for every batch; an output's never);
 *   every stride a multiple of the declared `align` (row starts stay aligned);
 * - every tensor's address is a multiple of {@link ContractTensor.alignBytes}
 *   (and not 0);
 * - where a buffer's length is known, it holds {@link tensorBytes} bytes
 *   (with strides, from its first element to its last);
 * - the output's bytes (first to last element) do not overlap an input's,
 *   except C at D's very address with D's strides (in place, which the kernel
 *   supports: each element of C is read by the thread that writes it in D,
 *   first);
 * - every scalar is finite in its dtype; an `s32` scalar is a 32-bit integer;
 * - a split-K kernel gets a workspace of {@link contractWorkspaceBytes} bytes,
 *   zeroed before its first launch (each launch leaves its tiles' arrival
 *   counters at 0, all a next launch needs).
 *
 * @module
 */

import { type Dtype, DTYPE_INFO } from "../../ir/dtype.ts";
import { gridFor, type GridPlan, workspaceBytes } from "../../ir/kernel.ts";
import type { KernelManifest } from "./manifest.ts";

/** The largest runtime dimension a launcher accepts (the kernels index with signed 32-bit math). */
export const MAX_DIM = 2 ** 31 - 1;

/**
 * The largest runtime stride a launcher accepts, in elements (`2^63 - 1`, the
 * `.u64` parameter read as a signed 64-bit offset). As a JavaScript number
 * it rounds up to `2^63`, so {@link launchViolations} asks for `v < 2^63`.
 */
export const MAX_STRIDE = 2n ** 63n - 1n;

/** The alignment, in bytes, every launcher asks of a split-K workspace it is given. */
export const WORKSPACE_ALIGN_BYTES = 16;

/**
 * The roles whose declared layout orders their storage (the matrix operands).
 * A batched vector (`bias: f32[L, N]`, role `bias`) is stored batch outermost
 * with N contiguous whatever layout it declares (harness/tensor.ts
 * `tensorShape`, the lowering's `vectorBase`), so its contiguous extent is
 * always its last dimension.
 */
const MATRIX_ROLES: ReadonlySet<string> = new Set(["A", "B", "C", "D"]);

/** One tensor parameter as a launcher must check it. */
export interface ContractTensor {
  /** The parameter's name. */
  readonly name: string;
  /** Its position among the entry's parameters. */
  readonly param: number;
  /** Its element type. */
  readonly dtype: Dtype;
  /** Bits per element (sub-byte types are packed). */
  readonly bits: number;
  /** Declared dimensions: names of runtime dimensions or constants. */
  readonly shape: readonly (string | number)[];
  /** Declared layout of the last two dimensions. */
  readonly layout: "row" | "col";
  /** The role (`A`, `B`, `C`, `D`, `bias`, ...). */
  readonly role: string;
  /** Whether the kernel writes it (the output D). */
  readonly output: boolean;
  /** Declared alignment of every row or column start, in elements. */
  readonly alignElems: number;
  /** The address must be a multiple of this many bytes. */
  readonly alignBytes: number;
  /**
   * The contiguous dimension, which must be a multiple of `alignElems` (rank 2
   * and 3; for a batched bias always the last), else null.
   */
  readonly leading: string | number | null;
  /**
   * The declared strides as the manifest gives them (outermost first; see
   * `ManifestParam.strides`); absent: dense.
   */
  readonly strides?: readonly (string | number)[];
  /** How its elements lie ({@link tensorView}); absent: derived on demand. */
  readonly view?: TensorView | null;
  /**
   * A sparse A's buffer (manifest `sparse`, DESIGN §6.3): the kept values (the contiguous
   * K halved; `alignElems` counts kept values) or the metadata (u32 words, `ceil(K /
   * kPerWord)` a row; `bits` 32). Absent: dense.
   */
  readonly sparse?: { readonly storage: "values" | "metadata"; readonly kPerWord: number };
}

/**
 * A rank-2 or rank-3 tensor's storage as batch x rows x contiguous extent,
 * with the strides between batches and between rows (DESIGN.md §6.1). Every
 * entry is a runtime name (a dimension or a stride parameter) or a constant;
 * a null stride is the dense value. Element `(b, r, c)` lies at
 * `b * batchStride + r * matrixStride + c`.
 */
export interface TensorView {
  /** The batch dimension, or null (no batch). */
  readonly batch: string | number | null;
  /** The dimension across rows (of the storage order), or null (a batched vector: one row). */
  readonly rows: string | number | null;
  /** The contiguous dimension (the tensor's `leading`). */
  readonly contiguous: string | number;
  /** The stride between batches, or null: dense (`rows x matrixStride`) or no batch. */
  readonly batchStride: string | number | null;
  /** The stride between rows, or null: dense (the contiguous extent) or no rows. */
  readonly matrixStride: string | number | null;
}

/** A runtime stride parameter (DESIGN.md §6.1): a `.u64` count of elements. */
export interface ContractStride {
  /** The parameter's name. */
  readonly name: string;
  /** Its position among the entry's parameters. */
  readonly param: number;
}

/** A scalar parameter as a launcher must check it. */
export interface ContractScalar {
  /** The parameter's name. */
  readonly name: string;
  /** Its position among the entry's parameters. */
  readonly param: number;
  /** Its dtype (`f32`, `f64`, `s32`). */
  readonly dtype: string;
  /** Its PTX parameter type. */
  readonly ptx: "f32" | "f64" | "s32";
  /** The declared default, or null when the caller must give it. */
  readonly default: number | null;
}

/** A runtime dimension. */
export interface ContractDim {
  /** The dimension's name. */
  readonly name: string;
  /** Its position among the entry's parameters. */
  readonly param: number;
}

/** Everything a launcher checks and computes, from the manifest. */
export interface LaunchContract {
  /** The kernel's name. */
  readonly name: string;
  /** The PTX entry. */
  readonly entry: string;
  /** Threads per block. */
  readonly block: readonly [number, number, number];
  /** Dynamic shared memory per block, bytes (raise the limit above 48 KB). */
  readonly dynamicSmemBytes: number;
  /** How the grid follows from the sizes. */
  readonly gridPlan: GridPlan;
  /** Tensors, in parameter order. */
  readonly tensors: readonly ContractTensor[];
  /** Runtime dimensions, in parameter order. */
  readonly dims: readonly ContractDim[];
  /** Runtime strides, in parameter order (after the dims). */
  readonly strides: readonly ContractStride[];
  /** Scalars, in parameter order. */
  readonly scalars: readonly ContractScalar[];
  /** The split-K workspace parameter, or null. */
  readonly workspace: {
    readonly name: string;
    readonly param: number;
    readonly bytesPerTile: number;
  } | null;
  /** Compiled with programmatic dependent launch: the input tensors it reads before its
   * `griddepcontrol.wait` (manifest.ts `ManifestPdl`); null: compiled without `pdl`. */
  readonly pdl: { readonly early: readonly string[] } | null;
}

/**
 * The contract of a kernel, from its manifest.
 *
 * @param m The launch manifest.
 * @returns The contract.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { kernelManifest } from "./manifest.ts";
 * import { launchContract } from "./contract.ts";
 * const ck = compile(`kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n] }`).kernels[0]!;
 * const c = launchContract(kernelManifest(ck.gemm, ck.kernel));
 * ok(c.tensors[0]!.alignBytes === 16 && c.tensors[0]!.leading === "K");
 * ```
 */
export function launchContract(m: KernelManifest): LaunchContract {
  const tensors: ContractTensor[] = [];
  const dims: ContractDim[] = [];
  const strides: ContractStride[] = [];
  const scalars: ContractScalar[] = [];
  let workspace: LaunchContract["workspace"] = null;
  m.params.forEach((p, param) => {
    if (p.kind === "dim") dims.push({ name: p.name, param });
    else if (p.kind === "stride") strides.push({ name: p.name, param });
    else if (p.kind === "tensormap") return; // built by the launcher (ARCHITECTURE §3.4)
    else if (p.kind === "scalar") {
      if (p.ptx === "u64" || p.ptx === "u32" || p.ptx === "tmap") {
        throw new Error(`Scalar "${p.name}" is .${p.ptx}`);
      }
      scalars.push({
        name: p.name,
        param,
        dtype: p.dtype ?? p.ptx,
        ptx: p.ptx,
        default: p.default ?? null,
      });
    } else if (p.role === "workspace") {
      workspace = { name: p.name, param, bytesPerTile: m.workspace?.bytesPerTile ?? 0 };
    } else {
      const dtype = p.dtype as Dtype;
      const metadata = p.sparse?.storage === "metadata";
      const bits = metadata ? 32 : DTYPE_INFO[dtype].bits;
      const shape = p.shape ?? [];
      const layout = p.layout ?? "row";
      const alignElems = p.align ?? 1;
      const mat = shape.slice(-2);
      const role = p.role ?? "";
      const t: ContractTensor = {
        name: p.name,
        param,
        dtype,
        bits,
        shape,
        layout,
        role,
        output: role === "D",
        alignElems,
        alignBytes: Math.max(1, (alignElems * bits) / 8),
        leading: mat.length !== 2
          ? null
          : MATRIX_ROLES.has(role) && layout === "col"
          ? mat[0]!
          : mat[1]!,
        ...(p.strides !== undefined ? { strides: p.strides } : {}),
        ...(p.sparse !== undefined
          ? { sparse: { storage: p.sparse.storage, kPerWord: p.sparse.kPerWord } }
          : {}),
      };
      tensors.push({ ...t, view: tensorView(t) });
    }
  });
  return {
    name: m.name,
    entry: m.entry,
    block: m.block,
    dynamicSmemBytes: m.dynamicSmemBytes,
    gridPlan: m.gridPlan,
    tensors,
    dims,
    strides,
    scalars,
    workspace,
    pdl: m.pdl ?? null,
  };
}

/** A dimension's value: a constant, or the runtime size by name. */
function dimOf(d: string | number, sizes: Readonly<Record<string, number>>): number {
  return typeof d === "number" ? d : sizes[d] ?? NaN;
}

/**
 * A tensor's storage as a {@link TensorView} (rank 2 or 3), from its shape,
 * layout, role and declared strides; null for other ranks (dense vectors).
 *
 * @param t The tensor.
 * @returns Its view, or null.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { tensorView } from "./contract.ts";
 * const t = { name: "W", param: 1, dtype: "f16", bits: 16, shape: ["L", "K", "N"],
 *   layout: "col", role: "B", output: false, alignElems: 8, alignBytes: 16, leading: "K",
 *   strides: [0, "ldw"] } as const;
 * deepEqual(tensorView(t), { batch: "L", rows: "N", contiguous: "K", batchStride: 0,
 *   matrixStride: "ldw" });
 * ```
 */
export function tensorView(t: ContractTensor): TensorView | null {
  if (t.view !== undefined) return t.view;
  const rank = t.shape.length;
  const s = t.strides;
  if (t.leading === null || rank < 2 || rank > 3) {
    if (s !== undefined) throw new Error(`Tensor "${t.name}" of rank ${rank} cannot have strides`);
    return null;
  }
  if (s !== undefined && s.length !== rank - 1) {
    throw new Error(`Tensor "${t.name}" of rank ${rank} declares ${s.length} strides`);
  }
  if (rank === 2 && !MATRIX_ROLES.has(t.role)) {
    // A batched vector (bias: [L, N]): one row per batch.
    const batchStride = s?.[0] ?? null;
    return {
      batch: t.shape[0]!,
      rows: null,
      contiguous: t.leading,
      batchStride,
      matrixStride: null,
    };
  }
  const colMajor = MATRIX_ROLES.has(t.role) && t.layout === "col";
  return {
    batch: rank === 3 ? t.shape[0]! : null,
    rows: t.shape[rank - (colMajor ? 1 : 2)]!,
    contiguous: t.leading,
    batchStride: rank === 3 ? s?.[0] ?? null : null,
    matrixStride: s?.[rank - 2] ?? null,
  };
}

/** A view's extents and strides at some sizes (strides left out: dense). */
interface ViewValues {
  readonly batch: number;
  readonly rows: number;
  readonly contiguous: number;
  readonly batchStride: number;
  readonly matrixStride: number;
}

function viewValues(v: TensorView, sizes: Readonly<Record<string, number>>): ViewValues {
  const contiguous = dimOf(v.contiguous, sizes);
  const rows = v.rows === null ? 1 : dimOf(v.rows, sizes);
  const ms = v.matrixStride === null ? undefined : strideOf(v.matrixStride, sizes);
  const matrixStride = ms ?? contiguous;
  const bs = v.batchStride === null ? undefined : strideOf(v.batchStride, sizes);
  return {
    batch: v.batch === null ? 1 : dimOf(v.batch, sizes),
    rows,
    contiguous,
    batchStride: bs ?? rows * matrixStride,
    matrixStride,
  };
}

/** A stride's value: a constant, or by name (undefined: not given). */
function strideOf(d: string | number, sizes: Readonly<Record<string, number>>): number | undefined {
  return typeof d === "number" ? d : sizes[d];
}

/** Elements from a view's first to its last, plus one (0 when empty). */
function viewElements(v: ViewValues): number {
  if (v.batch === 0 || v.rows === 0 || v.contiguous === 0) return 0;
  return (v.batch - 1) * v.batchStride + (v.rows - 1) * v.matrixStride + v.contiguous;
}

/**
 * The sizes with a value for every stride parameter: those given, and for
 * each left out its dense value where it first appears (the contiguous
 * extent for a matrix stride, rows x the matrix stride for a batch stride),
 * as `gemm simulate` and the launchers take it. The same record when the
 * kernel has no stride parameter or every one is given.
 *
 * @param c The contract.
 * @param sizes Runtime sizes and strides by name.
 * @returns The sizes with every stride.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { withStrideDefaults } from "./contract.ts";
 * const A = { name: "A", param: 0, dtype: "f16", bits: 16, shape: ["M", "K"], layout: "row",
 *   role: "A", output: false, alignElems: 8, alignBytes: 16, leading: "K", strides: ["lda"] } as const;
 * const c = { name: "k", entry: "k", block: [128, 1, 1], dynamicSmemBytes: 0,
 *   gridPlan: { m: "M", n: "N", batch: null, tileM: 64, tileN: 64, swizzle: 1, splitK: 1 },
 *   tensors: [A], dims: [], strides: [{ name: "lda", param: 3 }], scalars: [],
 *   workspace: null, pdl: null } as const;
 * ok(withStrideDefaults(c, { M: 4, K: 24 }).lda === 24);
 * ```
 */
export function withStrideDefaults(
  c: LaunchContract,
  sizes: Readonly<Record<string, number>>,
): Readonly<Record<string, number>> {
  let out: Record<string, number> | null = null;
  for (const s of c.strides) {
    if (sizes[s.name] === undefined) out = { ...sizes };
  }
  if (out === null) return sizes;
  for (const t of c.tensors) {
    const v = tensorView(t);
    if (v === null) continue;
    const contiguous = dimOf(v.contiguous, out);
    if (typeof v.matrixStride === "string" && out[v.matrixStride] === undefined) {
      out[v.matrixStride] = contiguous;
    }
    if (typeof v.batchStride === "string" && out[v.batchStride] === undefined) {
      const rows = v.rows === null ? 1 : dimOf(v.rows, out);
      const ms = v.matrixStride === null ? contiguous : strideOf(v.matrixStride, out)!;
      out[v.batchStride] = rows * ms;
    }
  }
  return out;
}

/**
 * A tensor's size in bytes at the given sizes (packed: `ceil(elements * bits / 8)`).
 * A strided tensor's elements run from its first to its last:
 * `(L-1)·batchStride + (rows-1)·matrixStride + contiguous extent` (a batch
 * stride of 0 reads one matrix), its stride values by name in `sizes` (one
 * left out: this tensor's dense value).
 *
 * @param t The tensor.
 * @param sizes Runtime sizes (and strides) by name.
 * @returns Its bytes.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { tensorBytes } from "./contract.ts";
 * const t = { name: "A", param: 0, dtype: "s4", bits: 4, shape: ["M", "K"], layout: "row",
 *   role: "A", output: false, alignElems: 32, alignBytes: 16, leading: "K" } as const;
 * ok(tensorBytes(t, { M: 3, K: 64 }) === 96);
 * ```
 */
export function tensorBytes(t: ContractTensor, sizes: Readonly<Record<string, number>>): number {
  if (t.strides !== undefined) {
    const v = tensorView(t)!;
    return Math.ceil((viewElements(viewValues(v, sizes)) * t.bits) / 8);
  }
  let elements = 1;
  // A sparse A is row-major: its stored extent is the last dimension's (by position:
  // `A: f16[K, K] row sparse` halves only the second K).
  const last = t.shape.length - 1;
  t.shape.forEach((d, i) => {
    elements *= i === last && t.sparse !== undefined
      ? storedExtent(t, dimOf(d, sizes))
      : dimOf(d, sizes);
  });
  return Math.ceil((elements * t.bits) / 8);
}

/**
 * A tensor's contiguous extent as stored: a sparse A's kept values hold half of K, its
 * metadata `ceil(K / kPerWord)` words; any other tensor's is the dimension itself.
 *
 * @param t The tensor.
 * @param leading The value of its contiguous dimension.
 * @returns The stored extent, in elements of `t.bits`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { storedExtent } from "./contract.ts";
 * const t = { name: "A_meta", param: 1, dtype: "f16", bits: 32, shape: ["M", "K"], layout: "row",
 *   role: "A_meta", output: false, alignElems: 1, alignBytes: 4, leading: "K",
 *   sparse: { storage: "metadata", kPerWord: 32 } } as const;
 * equal(storedExtent(t, 200), 7);
 * equal(storedExtent({ ...t, sparse: { storage: "values", kPerWord: 32 } }, 200), 100);
 * ```
 */
export function storedExtent(t: ContractTensor, leading: number): number {
  if (t.sparse === undefined) return leading;
  return t.sparse.storage === "values" ? leading / 2 : Math.ceil(leading / t.sparse.kPerWord);
}

/**
 * The grid at the given sizes.
 *
 * @param c The contract.
 * @param sizes Runtime sizes by dimension name.
 * @returns `[x, y, z]`.
 */
export function contractGrid(
  c: LaunchContract,
  sizes: Readonly<Record<string, number>>,
): [number, number, number] {
  return gridFor(c.gridPlan, sizes);
}

/**
 * The split-K workspace's bytes at the given sizes (0 without split-K).
 *
 * @param c The contract.
 * @param sizes Runtime sizes by dimension name.
 * @returns Bytes.
 */
export function contractWorkspaceBytes(
  c: LaunchContract,
  sizes: Readonly<Record<string, number>>,
): number {
  return c.workspace === null ? 0 : workspaceBytes(c.gridPlan, sizes);
}

/** A tensor argument as a launcher sees it: its address, and its length where known. */
export interface TensorBinding {
  /** The device address. */
  readonly address: bigint;
  /** The buffer's length in bytes from `address` on, when known. */
  readonly bytes?: number | undefined;
}

/**
 * Every way a launch breaks the contract (empty when it may launch). Checks
 * the sizes, the alignments, the tensors' addresses and lengths, overlaps of
 * the output with inputs, and the scalars; names the tensor, dimension or
 * scalar and the value in each message.
 *
 * @param c The contract.
 * @param sizes Runtime sizes by dimension name, and stride values by stride
 *   parameter name (one left out takes its dense value: {@link withStrideDefaults}).
 * @param tensors Tensor bindings by name.
 * @param scalars Scalar values by name (every scalar, defaults already applied).
 * @param workspace The split-K workspace given by the caller, if any: checked
 *   for its alignment ({@link WORKSPACE_ALIGN_BYTES}), its length and overlaps
 *   with the tensors. A launcher that allocates its own passes nothing.
 * @returns One message per problem.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { kernelManifest } from "./manifest.ts";
 * import { launchContract, launchViolations } from "./contract.ts";
 * const ck = compile(`kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n] }`).kernels[0]!;
 * const c = launchContract(kernelManifest(ck.gemm, ck.kernel));
 * const t = new Map([["A", { address: 0x1000n }], ["B", { address: 0x2008n }],
 *   ["D", { address: 0x9000n }]]);
 * const bad = launchViolations(c, { M: 64, N: 64, K: 60 }, t, new Map());
 * ok(bad.length === 3); // K=60 breaks A's and B's align 8; B's address is off 16 bytes
 * ```
 */
export function launchViolations(
  c: LaunchContract,
  sizes: Readonly<Record<string, number>>,
  tensors: ReadonlyMap<string, TensorBinding>,
  scalars: ReadonlyMap<string, number>,
  workspace?: TensorBinding,
): string[] {
  const bad: string[] = [];
  const { sizesOk, sz } = sizeViolations(c, sizes, bad);
  // Launchers call this once per launch: numbers where an address is a safe
  // integer (every real device address is), no closures (backends/cuda/bind.ts).
  const ranges: Range[] = [];
  for (const t of c.tensors) {
    if (sizesOk && t.leading !== null) {
      const full = dimOf(t.leading, sizes);
      const v = storedExtent(t, full);
      if (v % t.alignElems !== 0) {
        const dim = typeof t.leading === "number" ? String(full) : `${t.leading}=${full}`;
        const name = t.sparse === undefined ? dim : `(the kept values, ${dim} / 2 = ${v})`;
        bad.push(
          `Tensor "${t.name}" declares align ${t.alignElems} but its leading dimension ${name} ` +
            `is not a multiple of ${t.alignElems}`,
        );
      }
    }
    if (sizesOk && t.strides !== undefined) strideViolations(t, sz, bad);
    const b = tensors.get(t.name);
    if (b === undefined) {
      bad.push(`No device buffer for tensor "${t.name}"`);
      continue;
    }
    if (b.address === 0n) bad.push(`Tensor "${t.name}" has a null address`);
    else if (!aligned(b.address, t.alignBytes)) {
      bad.push(
        `Tensor "${t.name}" at 0x${b.address.toString(16)} is not aligned to ${t.alignBytes} ` +
          `bytes (align ${t.alignElems} of ${t.dtype})`,
      );
    }
    if (!sizesOk) continue;
    const need = tensorBytes(t, sz);
    if (b.bytes !== undefined && b.bytes < need) {
      bad.push(`Buffer of tensor "${t.name}" holds ${b.bytes} bytes; the sizes need ${need}`);
    }
    ranges.push(range(t, b.address, need));
  }
  overlapViolations(ranges, sz, bad);
  if (workspace !== undefined) {
    bad.push(...workspaceViolations(c, sizes, sizesOk, workspace, ranges));
  }
  for (const s of c.scalars) {
    const v = scalars.get(s.name);
    if (v === undefined) bad.push(`No value for scalar "${s.name}"`);
    else if (typeof v !== "number" || !Number.isFinite(s.ptx === "f32" ? Math.fround(v) : v)) {
      bad.push(`Scalar "${s.name}" is ${v}: a finite ${s.dtype} is needed`);
    } else if (s.ptx === "s32" && !(Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31)) {
      bad.push(`Scalar "${s.name}" is ${v}: an s32 scalar needs a 32-bit integer`);
    }
  }
  return bad;
}

/** {@link launchViolations}' checks of the dims (each given, in range, a grid of at least one
 * block) and the strides (in range), pushed onto `bad`; `sz` has every stride where all are
 * valid (`sizesOk`). */
function sizeViolations(
  c: LaunchContract,
  sizes: Readonly<Record<string, number>>,
  bad: string[],
): { sizesOk: boolean; sz: Readonly<Record<string, number>> } {
  let sizesOk = true;
  for (const d of c.dims) {
    const v = sizes[d.name];
    if (v === undefined) {
      bad.push(`Kernel "${c.name}": no size for dimension "${d.name}"`);
      sizesOk = false;
    } else if (!Number.isInteger(v) || v < 0 || v > MAX_DIM) {
      bad.push(`Kernel "${c.name}": size ${d.name}=${v} is not an integer in 0..${MAX_DIM}`);
      sizesOk = false;
    }
  }
  if (sizesOk) {
    const grid = contractGrid(c, sizes);
    if (grid.some((g) => g < 1)) {
      bad.push(
        `Kernel "${c.name}": the sizes give an empty grid [${grid.join(", ")}]: ` +
          "every output dimension must be at least 1",
      );
    }
  }
  // Strides (DESIGN.md §6.1): the values given, and those left out dense.
  let sz = sizes;
  for (const s of c.strides) {
    const v = sizes[s.name];
    if (v !== undefined && !(Number.isInteger(v) && v >= 0 && v < 2 ** 63)) {
      bad.push(`Kernel "${c.name}": stride ${s.name}=${v} is not an integer in 0..${MAX_STRIDE}`);
      sz = NO_SIZES;
    }
  }
  if (sz === NO_SIZES) sizesOk = false;
  else if (sizesOk && c.strides.length > 0) sz = withStrideDefaults(c, sizes);
  return { sizesOk, sz };
}

/** An output's bytes overlapping an input's (but C that is D itself, in place), pushed onto
 * `bad`. */
function overlapViolations(
  ranges: readonly Range[],
  sz: Readonly<Record<string, number>>,
  bad: string[],
): void {
  for (const o of ranges) {
    if (!o.t.output) continue;
    for (const i of ranges) {
      if (i.t.output) continue;
      const inPlace = i.t.role === "C" && !(i.lo < o.lo) && !(o.lo < i.lo) &&
        sameStrides(i.t, o.t, sz);
      if (!inPlace && o.lo < i.hi && i.lo < o.hi && o.hi > o.lo && i.hi > i.lo) {
        bad.push(
          `Output "${o.t.name}" overlaps input "${i.t.name}"` +
            (i.t.role === "C" ? " (C may only be D itself, at the same address)" : ""),
        );
      }
    }
  }
}

/** A marker: some stride is out of range. */
const NO_SIZES: Readonly<Record<string, number>> = {};

/** A stride or extent as messages name it: `lda=1040`, or a constant alone. */
function label(d: string | number, v: number): string {
  return typeof d === "number" ? String(v) : `${d}=${v}`;
}

/** A strided tensor's broken stride rules (DESIGN.md §6.1), at valid sizes and strides. */
function strideViolations(
  t: ContractTensor,
  sizes: Readonly<Record<string, number>>,
  bad: string[],
): void {
  const v = tensorView(t)!;
  const x = viewValues(v, sizes);
  const a = t.alignElems;
  if (v.matrixStride !== null) {
    const ms = label(v.matrixStride, x.matrixStride);
    if (x.matrixStride < x.contiguous) {
      bad.push(
        `Tensor "${t.name}" has matrix stride ${ms}, less than its contiguous extent ` +
          label(v.contiguous, x.contiguous),
      );
    }
    if (x.matrixStride % a !== 0) {
      bad.push(
        `Tensor "${t.name}" declares align ${a} but its matrix stride ${ms} is not a multiple of ${a}`,
      );
    }
  }
  if (v.batchStride !== null) {
    const bs = label(v.batchStride, x.batchStride);
    const need = x.rows * x.matrixStride;
    if (x.batchStride < need && (x.batchStride !== 0 || t.output)) {
      const what = v.rows === null ? "its row length" : "rows x matrix stride";
      bad.push(
        `Tensor "${t.name}" has batch stride ${bs}; ` +
          (t.output ? `an output's must be at least ${need}` : `it must be 0 or at least ${need}`) +
          ` (${what})`,
      );
    }
    if (x.batchStride % a !== 0) {
      bad.push(
        `Tensor "${t.name}" declares align ${a} but its batch stride ${bs} is not a multiple of ${a}`,
      );
    }
  }
}

/** Whether C (at D's address) lies as D does: both dense, or the same strides. */
function sameStrides(
  c: ContractTensor,
  d: ContractTensor,
  sizes: Readonly<Record<string, number>>,
): boolean {
  if (c.strides === undefined && d.strides === undefined) return true;
  const cv = tensorView(c), dv = tensorView(d);
  if (cv === null || dv === null) return cv === dv;
  const x = viewValues(cv, sizes), y = viewValues(dv, sizes);
  return x.matrixStride === y.matrixStride && (x.batch <= 1 || x.batchStride === y.batchStride);
}

/**
 * A buffer's bytes `[lo, hi)`: numbers where both ends are safe integers,
 * else bigints (JavaScript compares a number with a bigint exactly).
 */
interface Range<T = ContractTensor> {
  readonly t: T;
  readonly lo: number | bigint;
  readonly hi: number | bigint;
}

function range<T>(t: T, address: bigint, bytes: number): Range<T> {
  const lo = Number(address);
  const hi = lo + bytes;
  return Number.isSafeInteger(hi) ? { t, lo, hi } : { t, lo: address, hi: address + BigInt(bytes) };
}

/** Whether an address is a multiple of `bytes` (as numbers where exact). */
function aligned(address: bigint, bytes: number): boolean {
  const a = Number(address);
  return Number.isSafeInteger(a) ? a % bytes === 0 : address % BigInt(bytes) === 0n;
}

/** The split-K workspace's problems: none wanted, misaligned, too short, overlapping a tensor. */
function workspaceViolations(
  c: LaunchContract,
  sizes: Readonly<Record<string, number>>,
  sizesOk: boolean,
  w: TensorBinding,
  ranges: readonly Range[],
): string[] {
  if (c.workspace === null) return [`Kernel "${c.name}" has no split-K workspace to give`];
  const bad: string[] = [];
  if (w.address === 0n) bad.push(`The split-K workspace has a null address`);
  else if (!aligned(w.address, WORKSPACE_ALIGN_BYTES)) {
    bad.push(
      `The split-K workspace at 0x${w.address.toString(16)} is not aligned to ` +
        `${WORKSPACE_ALIGN_BYTES} bytes`,
    );
  }
  if (!sizesOk) return bad;
  const need = contractWorkspaceBytes(c, sizes);
  if (w.bytes !== undefined && w.bytes < need) {
    bad.push(`The split-K workspace holds ${w.bytes} bytes; the sizes need ${need}`);
  }
  const wr = range(null, w.address, w.bytes ?? need);
  for (const r of ranges) {
    if (wr.hi > wr.lo && r.hi > r.lo && wr.lo < r.hi && r.lo < wr.hi) {
      bad.push(`The split-K workspace overlaps tensor "${r.t.name}"`);
    }
  }
  return bad;
}
