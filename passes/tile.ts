/**
 * `gemm-tile`: the threadblock tile, the rasterisation swizzle, split-K, and
 * which dimensions may leave partial tiles.
 *
 * Defaults per type start from CUTLASS's Ampere recommendations (TF32/BF16
 * 128x128x32, FP16 128x256x32, INT8 128x256x64, FP64 64x64x16, INT4
 * 128x256x128, B1 128x256x512), changed where measurements on the H200 said
 * so (BF16 128x256x32, TF32 128x256x16; see {@link defaultThreadblock}), and
 * shrink M or N when a compile-time size is small, so that a skinny problem
 * does not compute mostly padding.
 *
 * @module
 */

import type { DimRef, GemmKernel, Shape3, TilePlan } from "../ir/gemm.ts";
import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
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
    case "bf16":
      // Measured on the H200 (bench/results/2026-11-29-h200-variants1.txt): 128x256x32
      // beats 128x128x32 by 10-20% for both 16-bit types at 4096^3 and 8192^3.
      return { m: 128, n: 256, k: 32 };
    case "tf32":
    case "f32":
      // Same run: 128x256x16 with 5 stages beat 128x128x32 (244 vs 201 TFLOPS at 8192^3).
      return { m: 128, n: 256, k: 16 };
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

/**
 * The default rasterisation group: 8 (CUTLASS's identity swizzle with
 * groups of 8 tile columns, which kept more of A and B in L2 on the H200:
 * +2% at 8192^3, +14% at 4096^3 for f16), fewer when a compile-time N has
 * fewer tile columns.
 *
 * @param tilesN Tile columns when N is a compile-time size, else null.
 * @returns 1, 2, 4 or 8.
 */
export function defaultSwizzle(tilesN: number | null): number {
  if (tilesN === null) return 8;
  let s = 1;
  while (s < 8 && s < tilesN) s *= 2;
  return s;
}

/**
 * Whether an operand is aligned to less than 4 bytes, so that its tiles are
 * copied synchronously, one element per load and store (no cp.async).
 *
 * @param k The kernel.
 * @returns True when A or B needs synchronous copies.
 */
export function hasSyncCopies(k: GemmKernel): boolean {
  return [k.problem.a.tensor, k.problem.b.tensor].some((n) => {
    const t = k.params.find((q) => q.name === n);
    return t !== undefined && t.kind === "tensor" && t.align * DTYPE_INFO[t.dtype].bits < 32;
  });
}

/** Blocks a default tile should give at least, when the sizes are known:
 * the SM count of an A100, the chip sm_80 was made for. */
export const MIN_BLOCKS = 108;

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
    // Sizes known at compile time, or expected (size hints): they shape the defaults.
    const constOf = (d: DimRef): number | null =>
      d.kind === "const" ? d.value : k.sizeHints?.[d.name] ?? null;
    let tb = k.schedule.threadblock;
    let smallGrid = false;
    if (tb === undefined) {
      // 3xtf32 needs twice the fragment registers: a 128x128 tile keeps 8 warps of 64x32.
      // Operands aligned to less than 4 bytes are copied synchronously, one
      // element per load and store (no cp.async): a 128x128 tile keeps the
      // copies per thread (and their registers) in bounds.
      const syncCopy = hasSyncCopies(k);
      // SIMT f32 (math f32): CUTLASS's sgemm tile.
      const d = k.math.mode === "simt"
        ? { m: 128, n: 128, k: 8 }
        : k.math.mode === "3xtf32"
        ? { m: 128, n: 128, k: 16 }
        : syncCopy
        ? { m: 128, n: 128, k: defaultThreadblock(k.math.mmaA).k }
        : defaultThreadblock(k.math.mmaA);
      const minM = k.math.mmaA === "f64" ? 32 : 64;
      tb = {
        m: shrink(d.m, constOf(p.m), minM),
        n: shrink(d.n, constOf(p.n), minM),
        k: d.k,
      };
      // With both sizes known, keep at least one block per SM of an A100
      // (108): halve the larger side of the tile while the grid is smaller,
      // down to 64 (skinny problems such as M=128, N=K=8192).
      const mc = constOf(p.m);
      const nc = constOf(p.n);
      if (mc !== null && nc !== null) {
        const blocks = (t: Shape3) => Math.ceil(mc / t.m) * Math.ceil(nc / t.n);
        while (blocks(tb) < MIN_BLOCKS && (tb.m > minM || tb.n > minM)) {
          tb = tb.n >= tb.m && tb.n > minM ? { ...tb, n: tb.n / 2 } : { ...tb, m: tb.m / 2 };
        }
      }
      // A shrunk 16-bit tile (about one block per SM, each with a long K)
      // is latency-bound: a 64-deep k-tile halves the barriers and doubles
      // the bytes in flight per stage (with 32x32 warps, gemm-warp): M=128,
      // N=K=8192 f16 went from 0.29 to 0.40 of the ceiling on the H200
      // (bench/NOTES.md 11). tf32 and s8 measured no gain.
      smallGrid = !syncCopy && k.math.mode === "tensor" &&
        (k.math.mmaA === "f16" || k.math.mmaA === "bf16") && tb.m * tb.n < d.m * d.n;
      if (smallGrid) tb = { ...tb, k: 2 * tb.k };
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
    const nConst = constOf(p.n);
    const swizzle = k.schedule.swizzle ??
      defaultSwizzle(nConst === null ? null : Math.ceil(nConst / tb.n));
    const splitK = k.schedule.splitK ?? 1;
    if (splitK > 1) {
      const kc = constOf(p.k);
      if (kc !== null && Math.ceil(kc / tb.k) < splitK) {
        scheduleError(
          k,
          "split_k",
          "E0207",
          `"split_k ${splitK}" exceeds the ${
            Math.ceil(kc / tb.k)
          } k-tiles of K=${kc} (tile K ${tb.k})`,
        );
      }
      scheduleError(
        k,
        "split_k",
        "E0212",
        `"split_k ${splitK}" is not implemented yet: the lowering computes each tile's full K (split_k 1)`,
      );
    }
    const partial = (d: DimRef, t: number) => d.kind === "sym" || d.value % t !== 0;
    const tile: TilePlan = {
      threadblock: tb,
      swizzle,
      splitK,
      partial: { m: partial(p.m, tb.m), n: partial(p.n, tb.n), k: partial(p.k, tb.k) },
      ...(smallGrid ? { smallGrid: true as const } : {}),
    };
    return {
      ...k,
      schedule: { ...k.schedule, threadblock: tb, swizzle, splitK },
      plan: { ...k.plan, tile },
    };
  },
};
