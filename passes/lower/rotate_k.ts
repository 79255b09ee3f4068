/**
 * A rotated k-loop (schedule key `rotate_k R`, ir/gemm_schedule.ts `Schedule.rotateK`): block
 * x of the grid (x = `ctaid.x + ctaid.y`) starts its mma.sync main loop at the k-tile
 * `r0 = (x * R) mod count` of its k-tiles (all of K's, or with split-K its split's `[start,
 * start + count)`), runs to the last and wraps around to the first. Every block still computes
 * each of its k-tiles once, in another order: f32 sums round differently from the unrotated
 * kernel's (integer sums do not), and a block's order is fixed, so a result is the same from run
 * to run (split-K's partial sums too, summed in split order as before).
 *
 * Why (bench/NOTES.md 96): in a one-wave decode grid every block reads the same k-tile of A and
 * the k-tile of B at the same offset in its own slice at the same moment; a kernel that reads B
 * as ours does and nothing else ended its last block 0.2-0.3 µs sooner at K = 4096 and 0.6-0.7 µs
 * at K = 8192 (an H100) with its k-loop rotated by 1 or 5 k-tiles a block.
 *
 * The copies' pointers start r0 k-tiles in (copies.ts `skipTiles`, after the split's own skip);
 * after each k-tile's copies, where the next tile would be the span's end, they move back by
 * `count` k-tiles. Their k indices are bounded by `K - t * tileK` of the rotated tile t (`kRot`:
 * the partial last k-tile stays partial wherever it falls), gated by the unrotated fetch counter
 * (`kRem > 0`), so a fetch past the block's k-tiles (the prologue's look-ahead at the end) reads
 * nothing, as without rotation. A split of no k-tiles (split-K's last, where the splits outnumber
 * them) fetches nothing either way. The copies a kernel issues before its PDL wait (`pdlEarly`,
 * copies.ts `copiesBeforeWait`) take the block's first rotated k-tiles the same way
 * ({@link KRotation.early}), their pointers moved back at the wrap there, so the prologue's
 * copies of the other operand move back only its own ({@link KRotation.advance}'s roles).
 *
 * sm90's warp-specialized kernels (TMA, wgmma_ws.ts) rotate in their producer alone
 * ({@link tmaKSequence}): the box of the j-th k-tile it copies is at k-tile `(j + r0) mod count`
 * of the tile's span, and the consumers take the stages in the order they fill. The tensor map's
 * bounds zero the part of a partial k-tile past K wherever it falls, so no bound moves with it.
 * There x is the tile's place, `m0 / rows + n0 / cols` with a cluster's unit as the rows (or
 * columns), so that a cluster's CTAs, which copy slices of one box into each other, copy the same
 * k-tile, and a persistent block's tiles each rotate by their own. No default rotates a TMA
 * pipeline: `rotate_k 1` lost on every row measured (an H100, bench/NOTES.md 97, N = K = 4096: f16
 * M = 64 0.4 µs with PDL, M = 128 1.1 µs, s8 M = 128 1-2 µs, M = 256 5 µs; a block's k-loop grew,
 * and at M = 128 the blocks' ends spread twice as far).
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import { b64Op, type LowerContext } from "./context.ts";
import { type CopyPlan, copyPointers, type RotatedFetch, skipTiles } from "./copies.ts";
import * as ir from "../../ir/builder.ts";

/** The rotated k-loop's fetch state ({@link kRotation}). */
export interface KRotation extends RotatedFetch {
  /** The k bound of the next fetch's copies (s32): {@link kRot} while the block has k-tiles
   * left to fetch (`kRem > 0`, the unrotated counter), else 0. */
  readonly bound: (kRem: Reg) => Reg;
  /** After a k-tile's copies of the operands `roles` (default both): on to the next rotated
   * k-tile, wrapping; only those operands' pointers move back at the wrap (the others', copied
   * before the wait, wrapped then: {@link RotatedFetch.early}). */
  readonly advance: (roles?: readonly ("A" | "B")[]) => void;
}

/**
 * Sets up the rotation of a kernel whose schedule has `rotate_k` > 0 (null otherwise): moves
 * the copy plans' pointers to the block's first k-tile.
 *
 * @param cx The lowering's context.
 * @param K The problem's K.
 * @param span The block's k-tiles: the first (null: 0; the copy plans' pointers are there) and
 *   the count (kTileSpan's).
 * @param plans The copy plans of A and of B.
 * @returns The fetch state, or null without rotation.
 */
export function kRotation(
  cx: LowerContext,
  K: Operand,
  span: { readonly start: Reg | null; readonly count: Operand },
  plans: readonly [a: CopyPlan, b: CopyPlan],
): KRotation | null {
  const R = cx.k.schedule.rotateK ?? 0;
  if (R === 0) return null;
  const k = cx.k;
  if (k.plan.mma!.wgmma !== undefined || k.plan.pipeline!.tma) {
    throw new Error(`lower-kernel: kernel "${k.name}": rotate_k on a loop that cannot have it`);
  }
  const tk = k.plan.tile!.threadblock.k;
  const b = cx.b;
  const { start, count } = span;
  b.emit(ir.comment(`rotate_k ${R}: this block's k-loop starts at k-tile (x * ${R}) % count`));
  const x = cx.bin("add", "u32", b.readSreg("ctaid.x"), b.readSreg("ctaid.y"));
  const r0 = firstKTile(cx, x, R, count);
  for (const c of plans) skipTiles(cx, c, r0);
  // K - t * tileK of the span's first tile, of the rotated first tile, and of the span's end.
  const kFirst = start === null
    ? cx.s32Of(K)
    : cx.bin("sub", "s32", cx.s32Of(K), cx.s32Of(cx.mulImm(start, tk)));
  const kRot = cx.bin("sub", "s32", kFirst, cx.s32Of(cx.mulImm(r0, tk)), "krot");
  const spanK: Operand = count.kind === "imm"
    ? imm(count.value * tk)
    : cx.s32Of(cx.mulImm(count, tk));
  const kEnd = cx.bin("sub", "s32", kFirst, spanK, "kend");
  const back = plans.map((c) =>
    count.kind === "imm" && c.step.kind === "imm"
      ? imm(count.value * c.step.value)
      : cx.bin("mul", "u64", b64Op(cx, count), b64Op(cx, c.step), "kwrap")
  );
  const ROLES = ["A", "B"] as const;
  /** `K - t * tileK` in `kr` (a rotated k-tile's) gated by `kRem > 0`. */
  const boundOf = (kr: Reg, kRem: Reg) => {
    const live = cx.setp("gt", "s32", kRem, imm(0));
    const r = b.reg("s32", "kbound");
    b.emit(ir.selp("s32", r, kr, imm(0), live));
    return r;
  };
  /** `kr` on to the next rotated k-tile; the pointers of `roles` back at the wrap. */
  const step = (kr: Reg, roles: readonly ("A" | "B")[]) => {
    b.emit(ir.bin("sub", "s32", kr, kr, imm(tk)));
    const wrap = cx.setp("le", "s32", kr, kEnd);
    b.emit(ir.selp("s32", kr, cx.bin("add", "s32", kr, spanK), kr, wrap));
    plans.forEach((c, i) => {
      if (!roles.includes(ROLES[i]!)) return;
      for (const p of copyPointers(c)) {
        b.emit(ir.selp("u64", p, cx.bin("sub", "u64", p, back[i]!), p, wrap));
      }
    });
  };
  return {
    kRot,
    bound: (kRem) => boundOf(kRot, kRem),
    advance: (roles = ROLES) => step(kRot, roles),
    early: (roles) => {
      // The early k-tiles' own rotated k, from the block's first.
      const kr = cx.mov("s32", kRot, "krotearly");
      return { bound: (kRem) => boundOf(kr, kRem), next: () => step(kr, roles) };
    },
  };
}

/** `(x * R) mod count`, the rotated loop's first k-tile; a span of no k-tiles rotates by 0. */
function firstKTile(cx: LowerContext, x: Reg, R: number, count: Operand): Reg {
  const modulus = count.kind === "imm"
    ? imm(Math.max(count.value, 1))
    : cx.bin("max", "u32", count, imm(1));
  return cx.bin("rem", "u32", cx.mulImm(x, R), modulus, "krot0");
}

/** The k of the boxes a TMA producer copies next, and how it moves on ({@link tmaKSequence}). */
export interface TmaKSequence {
  /** The k (u32, elements) of the next k-tile's boxes. */
  readonly k0: Reg;
  /** Emits the move to the next k-tile: `tileK` on, back by the span at its end if rotated. */
  readonly next: () => void;
}

/**
 * The k-tiles of one tile in the order a warp-specialized producer (wgmma_ws.ts) copies them:
 * the span's `[start, start + count)` from the first, or with `rotate_k R` from the k-tile
 * `(x * R) mod count`, wrapping to the span's first after its last (x: the tile's place,
 * `m0 / rows + n0 / cols`, a cluster's unit counted as one; see the module's text).
 *
 * @param cx The lowering's context (a TMA plan).
 * @param o The tile's first row and column.
 * @param start The span's first k-tile (null: 0).
 * @param count The span's k-tiles.
 * @returns The sequence's state.
 */
export function tmaKSequence(
  cx: LowerContext,
  o: { readonly m0: Reg; readonly n0: Reg },
  start: Reg | null,
  count: Operand,
): TmaKSequence {
  const k = cx.k;
  const b = cx.b;
  const tb = k.plan.tile!.threadblock;
  const tk = tb.k;
  const first = start === null ? cx.mov("u32", imm(0), "pk") : cx.mulImm(start, tk, "pk");
  const R = k.schedule.rotateK ?? 0;
  const step = () => b.emit(ir.bin("add", "u32", first, first, imm(tk)));
  if (R === 0) return { k0: first, next: step };
  const tma = k.plan.pipeline!.tma!;
  const C = tma.cluster ?? 1;
  const [rows, cols] = tma.clusterAxis === "n" ? [tb.m, tb.n * C] : [tb.m * C, tb.n];
  b.emit(ir.comment(`rotate_k ${R}: the producer starts at k-tile (x * ${R}) % count`));
  const x = cx.bin("add", "u32", cx.divRem("div", o.m0, rows), cx.divRem("div", o.n0, cols));
  const r0 = firstKTile(cx, x, R, count);
  const spanK: Operand = count.kind === "imm" ? imm(count.value * tk) : cx.mulImm(count, tk);
  const end = cx.bin("add", "u32", first, spanK, "pkend");
  b.emit(ir.bin("add", "u32", first, first, cx.mulImm(r0, tk)));
  return {
    k0: first,
    next: () => {
      step();
      const wrap = cx.setp("ge", "u32", first, end);
      b.emit(ir.selp("u32", first, cx.bin("sub", "u32", first, spanK), first, wrap));
    },
  };
}
