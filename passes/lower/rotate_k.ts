/**
 * A rotated k-loop (schedule key `rotate_k R`, ir/gemm_schedule.ts `Schedule.rotateK`): block
 * x of the grid (x = `ctaid.x + ctaid.y`) starts its mma.sync main loop at k-tile
 * `r0 = (x * R) mod kTiles`, runs to the last k-tile and wraps around to k-tiles 0 .. r0 - 1.
 * Every block still computes each of its k-tiles once, in another order: f32 sums round
 * differently from the unrotated kernel's (integer sums do not), and a block's order is fixed, so
 * a result is the same from run to run.
 *
 * Why (bench/NOTES.md 96): in a one-wave decode grid every block reads the same k-tile of A and
 * the k-tile of B at the same offset in its own slice at the same moment; a kernel that reads B
 * as ours does and nothing else ended its last block 0.2-0.3 µs sooner at K = 4096 and 0.6-0.7 µs
 * at K = 8192 (an H100) with its k-loop rotated by 1 or 5 k-tiles a block.
 *
 * The copies' pointers start r0 k-tiles in (copies.ts `skipTiles`); after each k-tile's copies,
 * where the next tile would be past the last, they move back by `kTiles` k-tiles. Their k indices
 * are bounded by `K - t * tileK` of the rotated tile t (`kRot`: the partial last k-tile stays
 * partial wherever it falls), gated by the unrotated fetch counter (`kRem > 0`), so a fetch past
 * the block's k-tiles (the prologue's look-ahead at the end) reads nothing, as without rotation.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import { b64Op, type LowerContext } from "./context.ts";
import { type CopyPlan, copyPointers, skipTiles } from "./copies.ts";
import * as ir from "../../ir/builder.ts";

/** The rotated k-loop's fetch state ({@link kRotation}). */
export interface KRotation {
  /** `K - t * tileK` of the rotated k-tile t fetched next (s32). */
  readonly kRot: Reg;
  /** The k bound of the next fetch's copies (s32): {@link kRot} while the block has k-tiles
   * left to fetch (`kRem > 0`, the unrotated counter), else 0. */
  readonly bound: (kRem: Reg) => Reg;
  /** After a k-tile's copies of every operand: on to the next rotated k-tile, wrapping. */
  readonly advance: () => void;
}

/**
 * Sets up the rotation of a kernel whose schedule has `rotate_k` > 0 (null otherwise): moves
 * the copy plans' pointers to the block's first k-tile.
 *
 * @param cx The lowering's context.
 * @param K The problem's K.
 * @param kTiles The k-tiles of the loop (all of K's: no split-K).
 * @param plans The copy plans of A and B, every one of them.
 * @returns The fetch state, or null without rotation.
 */
export function kRotation(
  cx: LowerContext,
  K: Operand,
  kTiles: Operand,
  plans: readonly CopyPlan[],
): KRotation | null {
  const R = cx.k.schedule.rotateK ?? 0;
  if (R === 0) return null;
  const k = cx.k;
  if (k.plan.tile!.splitK > 1 || k.plan.mma!.wgmma !== undefined || k.plan.pipeline!.tma) {
    throw new Error(`lower-kernel: kernel "${k.name}": rotate_k on a loop that cannot have it`);
  }
  const tk = k.plan.tile!.threadblock.k;
  const b = cx.b;
  b.emit(ir.comment(`rotate_k ${R}: this block's k-loop starts at k-tile (x * ${R}) % kTiles`));
  const x = cx.bin("add", "u32", b.readSreg("ctaid.x"), b.readSreg("ctaid.y"));
  const r0 = cx.bin("rem", "u32", cx.mulImm(x, R), kTiles, "krot0");
  for (const c of plans) skipTiles(cx, c, r0);
  const kRot = cx.bin("sub", "s32", cx.s32Of(K), cx.s32Of(cx.mulImm(r0, tk)), "krot");
  // K's k-tiles in elements (s32), and in bytes of each plan's pointers.
  const span: Operand = kTiles.kind === "imm"
    ? imm(kTiles.value * tk)
    : cx.s32Of(cx.mulImm(kTiles, tk));
  const back = plans.map((c) =>
    kTiles.kind === "imm" && c.step.kind === "imm"
      ? imm(kTiles.value * c.step.value)
      : cx.bin("mul", "u64", b64Op(cx, kTiles), b64Op(cx, c.step), "kwrap")
  );
  return {
    kRot,
    bound: (kRem) => {
      const live = cx.setp("gt", "s32", kRem, imm(0));
      const r = b.reg("s32", "kbound");
      b.emit(ir.selp("s32", r, kRot, imm(0), live));
      return r;
    },
    advance: () => {
      b.emit(ir.bin("sub", "s32", kRot, kRot, imm(tk)));
      const wrap = cx.setp("le", "s32", kRot, imm(0));
      b.emit(ir.selp("s32", kRot, cx.bin("add", "s32", kRot, span), kRot, wrap));
      plans.forEach((c, i) => {
        for (const p of copyPointers(c)) {
          b.emit(ir.selp("u64", p, cx.bin("sub", "u64", p, back[i]!), p, wrap));
        }
      });
    },
  };
}
