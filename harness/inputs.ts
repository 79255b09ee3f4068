/**
 * Random inputs and poisoned outputs for a launch, from a seed.
 *
 * Inputs are never zeros or all-ones: floats uniform in [-1, 1) (then
 * rounded to the type), integers uniform over a range that keeps sums away
 * from saturation, b1 fair coin flips. Outputs are filled with a poison
 * pattern (NaN bits for floats, 0x5a bytes for integers) so that an unwritten
 * element fails the comparison.
 *
 * @module
 */

import type { GemmKernel, TensorParam } from "../ir/gemm.ts";
import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import { forEachInView, sparseExtents, tensorShape, writeElem } from "./tensor.ts";
import { intRange, Rng } from "../numerics/random.ts";
import { compressSparse, randomSparse } from "../numerics/sparse_compress.ts";

/**
 * Fills a tensor with random values of its type; a strided view's gaps (storage
 * its elements do not cover) with the poison of {@link poison}.
 *
 * @param t The parameter.
 * @param sizes Runtime sizes.
 * @param rng The generator.
 * @returns The storage.
 */
export function randomTensor(
  t: TensorParam,
  sizes: Readonly<Record<string, number>>,
  rng: Rng,
): Uint8Array {
  const sh = tensorShape(t, sizes);
  const bytes = new Uint8Array(sh.bytes);
  const info = DTYPE_INFO[t.dtype];
  const [lo, hi] = info.float ? [0, 0] : intRange(t.dtype);
  const draw = (i: number) =>
    writeElem(bytes, t.dtype, i, info.float ? rng.next() * 2 - 1 : rng.int(lo, hi));
  if (sh.dense) {
    for (let i = 0; i < sh.elements; i++) draw(i);
    return bytes;
  }
  // A strided view (DESIGN §6.1): the gaps poisoned, so that a kernel reading
  // outside its view fails the comparison; only the view drawn.
  poison(bytes, info.float);
  forEachInView(sh, draw);
  return bytes;
}

/**
 * Poisons an output: every byte 0xff for floats (NaN in every float type),
 * 0x5a for integers.
 *
 * @param bytes The storage.
 * @param float Whether the element type is a float.
 */
export function poison(bytes: Uint8Array, float: boolean): void {
  bytes.fill(float ? 0xff : 0x5a);
}

/**
 * A random structured-sparse A (DESIGN §6.3): a dense matrix with its type's
 * pattern (numerics/sparse_compress.ts `randomSparse`: exactly the kept units nonzero, at
 * random positions, values never 0 or ±1), compressed into the two buffers the
 * kernel takes.
 *
 * @param a The sparse A (`sparse: true`).
 * @param sizes Runtime sizes; K must be a multiple of the type's group.
 * @param rng The generator (one draw: the seed of `randomSparse`).
 * @returns The kept values (A's buffer) and the canonical metadata's bytes (`A_meta`'s).
 * @throws {RangeError} For a K that is not a multiple of the group.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { Rng } from "../numerics/random.ts";
 * import { sparseMetaBytes, sparseValueBytes } from "../numerics/sparse.ts";
 * import { randomSparseOperand } from "./inputs.ts";
 * const k = check("kernel k { A: f16[M, K] sparse\n B: f16[K, N] col\n D: f32[M, N]\n" +
 *   " D[m, n] = A[m, k] * B[k, n] }").kernels[0]!;
 * const a = k.params[0]!;
 * if (a.kind !== "tensor") throw new Error("A is a tensor");
 * const { values, meta } = randomSparseOperand(a, { M: 5, N: 3, K: 40 }, new Rng(1));
 * equal(values.length, sparseValueBytes(5, 40, "f16"));
 * equal(meta.length, sparseMetaBytes(5, 40, "f16"));
 * ```
 */
export function randomSparseOperand(
  a: TensorParam,
  sizes: Readonly<Record<string, number>>,
  rng: Rng,
): { values: Uint8Array; meta: Uint8Array } {
  const { batch, rows, cols } = sparseExtents(a, sizes);
  const seed = rng.int(1, 2 ** 31 - 1);
  const dense = randomSparse(a.dtype, rows, cols, { seed, batch });
  const c = compressSparse(dense, a.dtype, rows, cols, { batch });
  return {
    values: c.values,
    meta: new Uint8Array(c.meta.buffer, c.meta.byteOffset, c.meta.byteLength),
  };
}

/** Concrete arguments of a launch: tensors as bytes, dims and scalars as numbers. */
export interface LaunchArgs {
  /** Each tensor's bytes (its storage), by parameter name. */
  readonly tensors: Map<string, Uint8Array>;
  /** Each scalar's value, by parameter name. */
  readonly scalars: Map<string, number>;
  /** Each symbolic dimension's value, by name (`M`, `N`, `K`, ...). */
  readonly sizes: Readonly<Record<string, number>>;
}

/**
 * What is wrong with a scalar's value, or null: it must be finite (an f32
 * scalar finite as an f32), and an s32 scalar a 32-bit integer.
 *
 * @param name The scalar's name.
 * @param dtype Its dtype.
 * @param v The value.
 * @returns A message, or null when the value is legal.
 * @example
 * ```ts
 * import { equal, notEqual } from "node:assert/strict";
 * import { scalarValueProblem } from "./inputs.ts";
 * notEqual(scalarValueProblem("alpha", "f32", NaN), null);
 * equal(scalarValueProblem("alpha", "f32", 1.5), null);
 * ```
 */
export function scalarValueProblem(name: string, dtype: Dtype, v: number): string | null {
  if (!Number.isFinite(dtype === "f32" ? Math.fround(v) : v)) {
    return `Scalar "${name}" is ${v}: a finite ${dtype} is needed`;
  }
  if (dtype === "s32" && !(Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31)) {
    return `Scalar "${name}" is ${v}: an s32 scalar needs a 32-bit integer`;
  }
  return null;
}

/**
 * Random arguments for a kernel: every input tensor random, the output
 * poisoned, scalars random (floats in [0.5, 1.5), s32 in [1, 3]) unless
 * given. A sparse A (DESIGN §6.3) gets a random matrix with its pattern, as its kept
 * values and its metadata ({@link randomSparseOperand}).
 *
 * @param k The kernel.
 * @param sizes Runtime sizes.
 * @param seed The seed.
 * @param scalars Scalar values that override the random ones.
 * @returns The arguments.
 * @throws {Error} For a given scalar value that is not legal ({@link scalarValueProblem}).
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { randomArgs } from "./inputs.ts";
 * const k = check("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }")
 *   .kernels[0]!;
 * const args = randomArgs(k, { M: 16, N: 8, K: 32 }, 1);
 * equal(args.tensors.get("A")?.length, 16 * 32 * 2);
 * ok(args.tensors.get("D")!.every((b) => b === 0xff)); // the output, poisoned
 * ```
 */
export function randomArgs(
  k: GemmKernel,
  sizes: Readonly<Record<string, number>>,
  seed: number,
  scalars: Readonly<Record<string, number>> = {},
): LaunchArgs {
  const rng = new Rng(seed);
  const tensors = new Map<string, Uint8Array>();
  const sv = new Map<string, number>();
  for (const p of k.params) {
    if (p.kind === "tensor") {
      if (p.role === "A_meta") continue; // drawn with its sparse A, just before it
      if (p.sparse === true) {
        const { values, meta } = randomSparseOperand(p, sizes, rng);
        tensors.set(p.name, values);
        const mp = k.params[k.params.indexOf(p) + 1];
        if (mp === undefined || mp.kind !== "tensor" || mp.role !== "A_meta") {
          throw new Error(`Sparse "${p.name}" is not followed by its metadata parameter`);
        }
        tensors.set(mp.name, meta);
      } else if (p.role === "D") {
        const bytes = new Uint8Array(tensorShape(p, sizes).bytes);
        poison(bytes, DTYPE_INFO[p.dtype].float);
        tensors.set(p.name, bytes);
      } else tensors.set(p.name, randomTensor(p, sizes, rng));
    } else {
      const given = scalars[p.name];
      const problem = given === undefined ? null : scalarValueProblem(p.name, p.dtype, given);
      if (problem !== null) throw new Error(problem);
      sv.set(
        p.name,
        given !== undefined
          ? given
          : p.dtype === "s32"
          ? rng.int(1, 3)
          : Math.fround(0.5 + rng.next()),
      );
    }
  }
  return { tensors, scalars: sv, sizes };
}
