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
 * - the grid is at least 1 on every axis (M, N and the batch at least 1);
 * - a rank-2 or rank-3 tensor's contiguous extent is a multiple of its
 *   declared `align` (so every row or column start stays aligned): the
 *   dimension its layout makes contiguous for A, B, C and D, the last one for
 *   a batched vector (role `bias`, stored batch outermost);
 * - every tensor's address is a multiple of {@link ContractTensor.alignBytes}
 *   (and not 0);
 * - where a buffer's length is known, it holds {@link tensorBytes} bytes;
 * - the output does not overlap an input, except C at D's very address (in
 *   place, which the kernel supports: each element of C is read by the thread
 *   that writes it in D, first);
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
  /** Scalars, in parameter order. */
  readonly scalars: readonly ContractScalar[];
  /** The split-K workspace parameter, or null. */
  readonly workspace: {
    readonly name: string;
    readonly param: number;
    readonly bytesPerTile: number;
  } | null;
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
  const scalars: ContractScalar[] = [];
  let workspace: LaunchContract["workspace"] = null;
  m.params.forEach((p, param) => {
    if (p.kind === "dim") dims.push({ name: p.name, param });
    else if (p.kind === "scalar") {
      if (p.ptx === "u64" || p.ptx === "u32") throw new Error(`Scalar "${p.name}" is .${p.ptx}`);
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
      const bits = DTYPE_INFO[dtype].bits;
      const shape = p.shape ?? [];
      const layout = p.layout ?? "row";
      const alignElems = p.align ?? 1;
      const mat = shape.slice(-2);
      const role = p.role ?? "";
      tensors.push({
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
      });
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
    scalars,
    workspace,
  };
}

/** A dimension's value: a constant, or the runtime size by name. */
function dimOf(d: string | number, sizes: Readonly<Record<string, number>>): number {
  return typeof d === "number" ? d : sizes[d] ?? NaN;
}

/**
 * A tensor's size in bytes at the given sizes (packed: `ceil(elements * bits / 8)`).
 *
 * @param t The tensor.
 * @param sizes Runtime sizes by dimension name.
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
  let elements = 1;
  for (const d of t.shape) elements *= dimOf(d, sizes);
  return Math.ceil((elements * t.bits) / 8);
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
 * @param sizes Runtime sizes by dimension name.
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
  // Launchers call this once per launch: numbers where an address is a safe
  // integer (every real device address is), no closures (backends/cuda/bind.ts).
  const ranges: Range[] = [];
  for (const t of c.tensors) {
    if (sizesOk && t.leading !== null) {
      const v = dimOf(t.leading, sizes);
      if (v % t.alignElems !== 0) {
        const name = typeof t.leading === "number" ? String(v) : `${t.leading}=${v}`;
        bad.push(
          `Tensor "${t.name}" declares align ${t.alignElems} but its leading dimension ${name} ` +
            `is not a multiple of ${t.alignElems}`,
        );
      }
    }
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
    const need = tensorBytes(t, sizes);
    if (b.bytes !== undefined && b.bytes < need) {
      bad.push(`Buffer of tensor "${t.name}" holds ${b.bytes} bytes; the sizes need ${need}`);
    }
    ranges.push(range(t, b.address, need));
  }
  for (const o of ranges) {
    if (!o.t.output) continue;
    for (const i of ranges) {
      if (i.t.output) continue;
      const inPlace = i.t.role === "C" && !(i.lo < o.lo) && !(o.lo < i.lo);
      if (!inPlace && o.lo < i.hi && i.lo < o.hi && o.hi > o.lo && i.hi > i.lo) {
        bad.push(
          `Output "${o.t.name}" overlaps input "${i.t.name}"` +
            (i.t.role === "C" ? " (C may only be D itself, at the same address)" : ""),
        );
      }
    }
  }
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
