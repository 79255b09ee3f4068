/**
 * Runtime sizes from the command line: `M=80,N=72,K=256,L=3`. Names are the
 * kernel's dimension names; `M`, `N`, `K` and `L` also name the dimensions
 * that play those roles (rows, columns, the summed dimension, the batch)
 * whatever the kernel calls them, so one `--size` works for every example.
 *
 * @module
 */

import type { GemmKernel } from "../ir/gemm.ts";
import { type Dtype, minAlign } from "../ir/dtype.ts";
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
  return out;
}

/**
 * Checks that sizes honour every tensor's declared alignment: the stride
 * between rows (or columns) must be a multiple of `align` elements.
 *
 * @param k The kernel.
 * @param sizes Sizes by dimension name.
 * @returns A message per violation (empty when all hold).
 */
export function alignmentViolations(
  k: GemmKernel,
  sizes: Readonly<Record<string, number>>,
): string[] {
  const bad: string[] = [];
  for (const p of k.params) {
    if (p.kind !== "tensor" || p.dims.length < 2) continue;
    const dims = p.dims.slice(-2);
    const contiguous = p.layout === "row" ? dims[1]! : dims[0]!;
    const v = contiguous.kind === "const" ? contiguous.value : sizes[contiguous.name]!;
    if (v % p.align !== 0) {
      const name = contiguous.kind === "const" ? String(v) : `${contiguous.name}=${v}`;
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
