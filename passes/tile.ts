/**
 * `gemm-tile`: the threadblock tile, the rasterisation swizzle, split-K, and
 * which dimensions may leave partial tiles.
 *
 * Defaults per type start from CUTLASS's Ampere recommendations (TF32/BF16
 * 128x128x32, FP16 128x256x32, INT8 128x256x64, FP64 64x64x16, INT4
 * 128x256x128, B1 128x256x512) and shrink M or N when a compile-time size is
 * small, so that a skinny problem does not compute mostly padding.
 *
 * @module
 */

import type { DimRef, GemmKernel, Shape3, TilePlan } from "../ir/gemm.ts";
import type { Dtype } from "../ir/dtype.ts";
import { type GemmPass, scheduleError } from "./pass.ts";

/**
 * The default threadblock tile for an MMA operand type.
 *
 * @param t The type the MMA consumes (`math.mmaA`).
 * @returns M x N x K.
 */
export function defaultThreadblock(t: Dtype): Shape3 {
  switch (t) {
    case "f16":
      return { m: 128, n: 256, k: 32 };
    case "bf16":
    case "tf32":
    case "f32":
      return { m: 128, n: 128, k: 32 };
    case "f64":
      return { m: 64, n: 64, k: 16 };
    case "s8":
    case "u8":
      return { m: 128, n: 256, k: 64 };
    case "s4":
    case "u4":
      return { m: 128, n: 256, k: 128 };
    case "b1":
      return { m: 128, n: 256, k: 512 };
    default:
      throw new Error(`No default tile for "${t}"`);
  }
}

function constOf(d: DimRef): number | null {
  return d.kind === "const" ? d.value : null;
}

function shrink(tile: number, size: number | null, min: number): number {
  if (size === null) return tile;
  let t = tile;
  while (t > min && size <= t / 2) t /= 2;
  return t;
}

/** The pass. */
export const tilePass: GemmPass = {
  name: "gemm-tile",
  title: "Tile",
  summary: "Choose the threadblock tile, rasterisation swizzle and split-K; plan partial tiles",
  run(k: GemmKernel): GemmKernel {
    const p = k.problem;
    let tb = k.schedule.threadblock;
    if (tb === undefined) {
      const d = defaultThreadblock(k.math.mmaA);
      const minM = k.math.mmaA === "f64" ? 32 : 64;
      tb = {
        m: shrink(d.m, constOf(p.m), minM),
        n: shrink(d.n, constOf(p.n), minM),
        k: d.k,
      };
    }
    for (const [ax, v] of [["M", tb.m], ["N", tb.n], ["K", tb.k]] as const) {
      if ((v & (v - 1)) !== 0) {
        scheduleError(
          k,
          "threadblock",
          "E0209",
          `Threadblock ${tb.m}x${tb.n}x${tb.k}: the ${ax} extent ${v} is not a power of two`,
        );
      }
    }
    if (tb.m < 16 || tb.n < 8) {
      scheduleError(
        k,
        "threadblock",
        "E0209",
        `Threadblock ${tb.m}x${tb.n}x${tb.k} is smaller than one MMA (16x8)`,
      );
    }
    const swizzle = k.schedule.swizzle ?? 1;
    const splitK = k.schedule.splitK ?? 1;
    if (splitK > 1) {
      const kc = constOf(p.k);
      if (kc !== null && Math.ceil(kc / tb.k) < splitK) {
        scheduleError(
          k,
          "split_k",
          "E0207",
          `split_k ${splitK} exceeds the ${
            Math.ceil(kc / tb.k)
          } k-tiles of K=${kc} (tile K ${tb.k})`,
        );
      }
      scheduleError(
        k,
        "split_k",
        "E0212",
        `split_k ${splitK} is not implemented yet: the lowering computes each tile's full K (split_k 1)`,
      );
    }
    const partial = (d: DimRef, t: number) => d.kind === "sym" || d.value % t !== 0;
    const tile: TilePlan = {
      threadblock: tb,
      swizzle,
      splitK,
      partial: { m: partial(p.m, tb.m), n: partial(p.n, tb.n), k: partial(p.k, tb.k) },
    };
    return {
      ...k,
      schedule: { ...k.schedule, threadblock: tb, swizzle, splitK },
      plan: { ...k.plan, tile },
    };
  },
};
