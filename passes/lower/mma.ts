/**
 * The MMAs of one k-step: tensor-core MMAs (serpentine over the warp tile), the three
 * MMAs of 3xtf32 with their k-tile sums, and the SIMT outer product.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Reg } from "../../ir/kernel.ts";
import type { LowerContext } from "./context.ts";
import * as ir from "../../ir/builder.ts";

/**
 * 3xtf32's k-tile sums, made with the accumulators (main_loop.ts) and
 * carried by `mmas` across the k-steps of each k-tile.
 */
export interface KTileSums {
  /** An accumulator tile of zeros: the C of each k-tile's first MMA. */
  readonly zero: readonly Reg[];
  /** Per accumulator tile, the running sum of the current k-tile's products
   * (set at k-step 0, added to the accumulator at the last). */
  readonly sums: Reg[][][];
}

/**
 * The MMAs of k-step `kk` of a k-tile, rows of the warp tile in order and
 * columns serpentine (a B fragment is reused across the turn). `after(i,
 * j, rowDone)` runs after each plain tensor MMA (the interleaved fragment
 * loads hook in there).
 *
 * @param cx The lowering's context.
 * @param acc The accumulators.
 * @param aFr A's fragments of the k-step.
 * @param bFr B's fragments of the k-step.
 * @param kk The k-step.
 * @param kTile 3xtf32: the k-tile sums (null otherwise).
 * @param after Runs after each plain tensor MMA.
 * @param meta A sparse A's metadata registers of the k-step, one a tile row, and the
 *   `mma.sp` sparsity selector they are read with; or null.
 */
export function mmas(
  cx: LowerContext,
  acc: Reg[][][],
  aFr: Reg[][],
  bFr: Reg[][],
  kk: number,
  kTile: KTileSums | null,
  after?: (i: number, j: number, rowDone: boolean) => void,
  meta: { readonly regs: readonly Reg[]; readonly selector: number } | null = null,
): void {
  const b = cx.b;
  const mode = cx.k.math.mode;
  if (mode === "simt") {
    // One k of the outer product, cell by cell: c[x] += a[x / vB] * b[x % vB] (fma.rn.f32).
    for (let i = 0; i < acc.length; i++) {
      for (let j = 0; j < acc[i]!.length; j++) {
        const a = aFr[i]!;
        const bb = bFr[j]!;
        const vB = bb.length;
        acc[i]![j]!.forEach((r, x) => {
          b.emit(ir.mad("f32", r, a[Math.floor(x / vB)]!, bb[x % vB]!, r));
        });
      }
    }
    return;
  }
  // 3xtf32: x = big + small. big is x with its low 13 mantissa bits cleared,
  // which is what a tf32 MMA reads of x itself: x is passed as big. small =
  // x - big (exact in f32) is passed raw too: the MMA reads its top 11
  // significant bits. Two instructions a register; rounding both with
  // cvt.rna.tf32 took five and measured 0.78 of the speed for an error 0.83
  // as large (bench/NOTES.md 41).
  const split = (regs: Reg[]): { big: Reg[]; small: Reg[] } => {
    const big: Reg[] = [];
    const small: Reg[] = [];
    for (const r of regs) {
      const f = b.reg("f32");
      b.emit(ir.cvt("f32.b32", f, r));
      const hi = cx.bin("and", "b32", r, imm(0xffffe000));
      const hiF = b.reg("f32");
      b.emit(ir.cvt("f32.b32", hiF, hi));
      const rest = cx.bin("sub", "f32", f, hiF);
      const lo = b.reg("b32");
      b.emit(ir.cvt("b32.f32", lo, rest));
      big.push(r);
      small.push(lo);
    }
    return { big, small };
  };
  const aS = mode === "3xtf32" ? aFr.map(split) : null;
  const bS = mode === "3xtf32" ? bFr.map(split) : null;
  for (let i = 0; i < acc.length; i++) {
    const row = acc[i]!;
    for (let jj = 0; jj < row.length; jj++) {
      const j = i % 2 === 0 ? jj : row.length - 1 - jj; // serpentine
      const c = row[j]!;
      if (aS !== null && bS !== null && kTile !== null) {
        // The k-tile's products summed from zero (its k-steps' three MMAs
        // chained), then added to the accumulator with add.rn.f32: the
        // tensor cores' adders truncate, and chained onto the growing
        // accumulator that truncation biased the sum (relative error 2.9e-5
        // at K=4096 on the H200 against f32's 1.2e-6; bench/NOTES.md 41).
        const A = aS[i]!;
        const B = bS[j]!;
        const first = kk === 0;
        const t = first ? c.map(() => b.reg("f32")) : kTile.sums[i]![j]!;
        (kTile.sums[i] ??= [])[j] = t;
        let from: readonly Reg[] = first ? kTile.zero : t;
        for (const [x, y] of [[A.small, B.big], [A.big, B.small], [A.big, B.big]] as const) {
          b.emit(ir.mma(cx.shape.name, t, x, y, from));
          from = t;
        }
        if (kk === cx.k.plan.mma!.kSteps - 1) {
          c.forEach((r, q) => b.emit(ir.bin("add", "f32", r, r, t[q]!)));
        }
      } else {
        const sp = meta === null
          ? undefined
          : { meta: meta.regs[i]!, selector: meta.selector, ordered: true };
        b.emit(ir.mma(cx.shape.name, c, aFr[i]!, bFr[j]!, c, sp));
        after?.(i, j, jj === row.length - 1);
      }
    }
  }
}
