/**
 * Runtime sizes from the command line: `M=80,N=72,K=256,L=3`. Names are the
 * kernel's dimension names; `M`, `N`, `K` and `L` also name the dimensions
 * that play those roles (rows, columns, the summed dimension, the batch)
 * whatever the kernel calls them, so one `--size` works for every example.
 *
 * @module
 */

import type { DimRef, GemmKernel, TensorParam } from "../ir/gemm.ts";
import { type Dtype, DTYPE_INFO, minAlign } from "../ir/dtype.ts";
import { dimValue } from "./tensor.ts";
import { LIMITS } from "../dsl/limits.ts";

/** The largest runtime size (dsl/limits.ts; the launch contract's MAX_DIM is the same value). */
const MAX_SIZE = LIMITS.runtimeSize.value;

/**
 * Parses `NAME=V,NAME=V`.
 *
 * @param text The option's value.
 * @returns The sizes by name; throws on malformed input.
 */
export function parseSizes(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of text.split(",")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([0-9]+)\s*$/.exec(part);
    if (m === null) throw new Error(`Malformed size "${part}": expected NAME=VALUE`);
    const v = Number(m[2]);
    if (v > MAX_SIZE) {
      throw new Error(
        `Size ${m[1]}=${m[2]} is out of range: a size is an integer in 0..${MAX_SIZE}`,
      );
    }
    out[m[1]!] = v;
  }
  return out;
}

/**
 * Resolves sizes for a kernel: every runtime dimension gets a value, from its
 * own name or from its role's letter.
 *
 * @param k The kernel.
 * @param given Sizes by name.
 * @returns Sizes by the kernel's dimension names; throws naming what is missing.
 */
export function resolveSizes(
  k: GemmKernel,
  given: Readonly<Record<string, number>>,
): Record<string, number> {
  const roles: [string, GemmKernel["problem"]["m"] | null][] = [
    ["M", k.problem.m],
    ["N", k.problem.n],
    ["K", k.problem.k],
    ["L", k.problem.batch],
  ];
  const out: Record<string, number> = {};
  for (const d of k.dims) {
    let v = given[d];
    if (v === undefined) {
      const role = roles.find(([, r]) => r !== null && r.kind === "sym" && r.name === d);
      if (role !== undefined) v = given[role[0]];
    }
    if (v === undefined) {
      throw new Error(
        `No size for dimension "${d}" of kernel "${k.name}": give ${d}=... in --size`,
      );
    }
    if (!Number.isInteger(v) || v < 0 || v > MAX_SIZE) {
      throw new Error(`Size ${d}=${v} is out of range: a size is an integer in 0..${MAX_SIZE}`);
    }
    out[d] = v;
  }
  // Stride parameters (DESIGN §6.1): given like dims, else their dense value.
  for (const st of k.strides ?? []) {
    const v = given[st] ?? denseStride(k, st, { ...given, ...out });
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new Error(`Stride ${st}=${v} is out of range: a stride is an integer >= 0`);
    }
    out[st] = v;
  }
  return out;
}

/** Whether the GEMM reads a tensor as a matrix (A, B, D, or an epilogue matrix). */
function isMatrix(k: GemmKernel, name: string): boolean {
  const p = k.problem;
  return [p.a, p.b, p.d, ...k.epilogue.views].some((v) => v.tensor === name);
}

/** A strided tensor's extents: the contiguous one, the lines (a matrix's other one). */
function extents(
  k: GemmKernel,
  t: TensorParam,
  sizes: Readonly<Record<string, number>>,
): { contiguous: number; lines: number; matrix: boolean } {
  const dims = t.dims.map((d) => dimValue(d, sizes));
  const r = dims.length;
  const matrix = isMatrix(k, t.name);
  if (!matrix) return { contiguous: dims[r - 1]!, lines: 1, matrix };
  const row = t.layout === "row";
  return {
    contiguous: row ? dims[r - 1]! : dims[r - 2]!,
    lines: row ? dims[r - 2]! : dims[r - 1]!,
    matrix,
  };
}

/**
 * A stride parameter's dense value, from its first use: a line stride's is the
 * contiguous extent, a batch stride's one batch's extent (lines x line stride).
 */
function denseStride(k: GemmKernel, name: string, sizes: Readonly<Record<string, number>>): number {
  for (const t of k.params) {
    if (t.kind !== "tensor" || t.strides === undefined) continue;
    const j = t.strides.findIndex((d) => d.kind === "sym" && d.name === name);
    if (j < 0) continue;
    const { contiguous, lines, matrix } = extents(k, t, sizes);
    if (!matrix) return contiguous;
    if (j === t.strides.length - 1) return contiguous;
    const ld = t.strides[t.strides.length - 1]!;
    const ldV = ld.kind === "const" ? ld.value : sizes[ld.name] ?? denseStride(k, ld.name, sizes);
    return lines * ldV;
  }
  throw new Error(`No tensor uses stride "${name}"`);
}

/**
 * Checks the strides of strided tensors at runtime sizes (DESIGN §6.1): a line stride
 * of at least the contiguous extent, a batch stride of at least one batch's extent or
 * 0 (inputs only), each a multiple of the alignment and of whole bytes.
 *
 * @param k The kernel.
 * @param sizes Sizes and stride values by name.
 * @returns A message per violation, naming the tensor, the stride and its value.
 */
export function strideViolations(
  k: GemmKernel,
  sizes: Readonly<Record<string, number>>,
): string[] {
  const bad: string[] = [];
  for (const t of k.params) {
    if (t.kind !== "tensor" || t.strides === undefined) continue;
    const { contiguous, lines, matrix } = extents(k, t, sizes);
    const bits = DTYPE_INFO[t.dtype].bits;
    const val = (d: DimRef) => dimValue(d, sizes);
    const label = (d: DimRef) => d.kind === "const" ? String(d.value) : `${d.name}=${val(d)}`;
    for (const d of t.strides) {
      const v = val(d);
      if ((v * bits) % 8 !== 0) {
        bad.push(`Stride ${label(d)} of "${t.name}" is not a whole number of bytes of ${t.dtype}`);
      } else if (v % t.align !== 0) {
        bad.push(`Stride ${label(d)} of "${t.name}" is not a multiple of its alignment ${t.align}`);
      }
    }
    const ld = matrix ? t.strides[t.strides.length - 1]! : null;
    if (ld !== null && val(ld) < contiguous) {
      bad.push(
        `Stride ${label(ld)} of "${t.name}" is less than its contiguous extent ${contiguous}`,
      );
    }
    const batched = matrix ? t.strides.length === 2 : t.strides.length === 1;
    if (!batched) continue;
    const sb = t.strides[0]!;
    const need = lines * (ld === null ? contiguous : val(ld));
    if (val(sb) === 0 && t.role === "D") {
      bad.push(
        `Batch stride ${label(sb)} of output "${t.name}": every batch would write one matrix`,
      );
    } else if (val(sb) !== 0 && val(sb) < need) {
      bad.push(
        `Batch stride ${label(sb)} of "${t.name}" is less than one batch's extent ${need} ` +
          `(0 broadcasts one to every batch)`,
      );
    }
  }
  return bad;
}

/**
 * Checks that sizes honour every tensor's declared alignment: the stride
 * between rows (or columns) must be a multiple of `align` elements; and the
 * strided tensors' rules ({@link strideViolations}), first.
 *
 * @param k The kernel.
 * @param sizes Sizes by dimension name.
 * @returns A message per violation (empty when all hold).
 */
export function alignmentViolations(
  k: GemmKernel,
  sizes: Readonly<Record<string, number>>,
): string[] {
  const bad: string[] = strideViolations(k, sizes);
  for (const p of k.params) {
    if (p.kind !== "tensor" || p.dims.length < 2 || p.role === "A_meta") continue;
    const dims = p.dims.slice(-2);
    const contiguous = p.layout === "row" ? dims[1]! : dims[0]!;
    const full = contiguous.kind === "const" ? contiguous.value : sizes[contiguous.name]!;
    // A sparse A's rows hold the kept values: half of K (DESIGN §6.3).
    const v = p.sparse === true ? full / 2 : full;
    if (v % p.align !== 0) {
      const dim = contiguous.kind === "const" ? String(full) : `${contiguous.name}=${full}`;
      const name = p.sparse === true ? `(the kept values, ${dim} / 2 = ${v})` : dim;
      bad.push(
        `Tensor "${p.name}" declares align ${p.align} but its leading dimension ${name} is not ` +
          `a multiple of ${p.align}: ${alignAdvice(p.dtype, v)}`,
      );
    }
  }
  return bad;
}

/**
 * What to do about a size that breaks a declared alignment: declare the
 * type's smallest alignment (`align 1`, but `align 2` for 4-bit types and
 * `align 8` for b1: a whole byte, ir/dtype.ts) where the size is a multiple
 * of it; otherwise only another size will do.
 */
function alignAdvice(dtype: Dtype, size: number): string {
  const least = minAlign(dtype);
  if (size % least !== 0) {
    return `pick a size that is, or declare "align ${least}" (${dtype} rows are whole bytes) ` +
      `and a multiple of ${least}`;
  }
  const any = least === 1 ? "any size" : `any multiple of ${least}`;
  return `declare "align ${least}" (${any}) or pick a size that is`;
}

/**
 * Parses a `--groups` list: problems separated by `;`, each `M=..,N=..,K=..`.
 *
 * @param text The list.
 * @param parse Parses one problem's sizes (the CLI's `--size` parser).
 * @returns Each problem's sizes.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { parseGroups, parseSizes } from "./sizes.ts";
 * deepEqual(parseGroups("M=8,N=16,K=32; M=0,N=16,K=32", parseSizes),
 *   [{ M: 8, N: 16, K: 32 }, { M: 0, N: 16, K: 32 }]);
 * ```
 */
export function parseGroups(
  text: string,
  parse: (s: string) => Record<string, number>,
): Record<string, number>[] {
  const parts = text.split(";").map((s) => s.trim());
  if (parts.some((s) => s === "")) {
    throw new Error(`Bad --groups "${text}": problems are "M=..,N=..,K=.." separated by ";"`);
  }
  return parts.map((s) => parse(s));
}
