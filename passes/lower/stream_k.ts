/**
 * Stream-K for sm90's persistent warp-specialized kernels (issue 22, `plan.pipeline.tma
 * .persistent.streamK`; passes/wgmma.ts `wgmmaStreamK`). With T output tiles (every batch's),
 * P blocks (`nctaid.x`) and kt k-tiles a tile, q = T / P and r = T % P:
 *
 * - r = 0 (or T < P): every block takes whole tiles b, b + P, ... (data-parallel);
 * - else the first (q - 1) P tiles are taken whole in that order, and the k-tiles of the last
 *   P + r tiles, I = (P + r) kt of them, are shared out: block b gets `[s(b), s(b + 1))`, s(b)
 *   = floor(b I / P), cut at tile boundaries into parts.
 *
 * Every share holds at least kt k-tiles (I / P >= kt), so a shared-out tile spans at most
 * two shares: its two parts come from blocks b and b + 1. Each part stores its accumulators
 * in the tile's workspace record (slot 0 for the part with k-tile 0, slot 1 for the other,
 * passes/workspace.ts `STREAM_K_PARTS`) and counts itself in; the part that arrives second
 * sums slot 0 and slot 1 in that order (the same result whichever block is last) and runs
 * the epilogue; the counter goes back to 0 for the next launch (split_k.ts `arriveLast`, as
 * split-K does). No block waits for another: the grid need not be resident at once, and the
 * simulator runs its blocks one after the other.
 *
 * Shortcuts: only the TMA-fed warp-specialized kernels (no Stream-K for sm80's mma.sync or
 * sm90's cp.async pipelines); the shared-out region is always P + r tiles (CUTLASS's hybrid
 * with one data-parallel wave less), not tuned per shape; a part writes and reads its
 * partials through L2 even where it is the last.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import type { LowerContext } from "./context.ts";
import { b64 } from "./context.ts";
import { kTileSpan } from "./main_loop.ts";
import { arriveLast, storePartial, sumTile } from "./split_k.ts";
import * as ir from "../../ir/builder.ts";

/** The tiles of a block and how to find unit i: the units' count, and the origin of each
 * part of {@link streamKUnits}. */
export interface StreamKUnit {
  /** The output tile (0 .. T - 1, every batch's in the rasterised order). */
  readonly tile: Reg;
  /** Its first k-tile and k-tile count in this part. */
  readonly start: Reg;
  readonly count: Reg;
  /** Whether this part is the whole tile (u32 0 / 1), its slot (0: it holds k-tile 0, else
   * 1) and the tile's workspace record (its index among the shared-out tiles). */
  readonly whole: Reg;
  readonly index: Reg;
  readonly record: Reg;
}

/**
 * The block's share of the grid's work: the count of its units (whole tiles, then parts of
 * the shared-out tiles), and an emitter of unit i (each role computes it again where it
 * needs it, so that nothing is held across the main loop).
 *
 * @param cx The lowering's context.
 * @param tiles Every batch's output tiles, T (u32).
 * @param K The problem's K (its k-tiles `ceil(K / tile K)`; K > 0).
 * @returns The count and the emitter.
 */
export function streamKUnits(
  cx: LowerContext,
  tiles: Reg,
  K: Operand,
): { count: Reg; at: (i: Reg) => StreamKUnit } {
  const u = (a: Operand, op: "add" | "sub" | "mul" | "div" | "min" | "max", c: Operand) =>
    cx.bin(op, "u32", a, c);
  const geometry = () => {
    const bx = cx.b.readSreg("ctaid.x", "skb");
    const P = cx.b.readSreg("nctaid.x", "skp");
    const whole = kTileSpan(cx, K, null).kCount;
    const kt = whole.kind === "imm" ? cx.mov("u32", whole) : whole;
    const q = u(tiles, "div", P);
    const r = u(tiles, "sub", u(q, "mul", P));
    // Shared out: P + r tiles where r > 0 and q >= 1 (T >= P), else none.
    const some = cx.bin(
      "and",
      "pred",
      cx.setp("ne", "u32", r, imm(0)),
      cx.setp("ne", "u32", q, imm(0)),
    );
    const skTiles = cx.b.reg("u32", "sktiles");
    cx.b.emit(ir.selp("u32", skTiles, u(P, "add", r), imm(0), some));
    const dpTiles = u(tiles, "sub", skTiles);
    // Whole tiles b, b + P, ... below dpTiles (b < P: no underflow).
    const dpCount = u(u(u(dpTiles, "add", P), "sub", imm(1)), "sub", bx);
    const dp = u(dpCount, "div", P);
    // The share [s(b), s(b + 1)) of I = skTiles kt k-tiles: s(b) = b L + floor(b rem / P).
    const I = u(skTiles, "mul", kt);
    const L = u(I, "div", P);
    const rem = u(I, "sub", u(L, "mul", P));
    const shareStart = (x: Operand) => u(u(x, "mul", L), "add", u(u(x, "mul", rem), "div", P));
    const s = shareStart(bx);
    const e = shareStart(u(bx, "add", imm(1)));
    return { bx, P, kt, dpTiles, dp, s, e, some };
  };
  const g = geometry();
  // The shared-out tiles this share touches: u0 .. u1 (none without a shared-out region).
  const u0 = u(g.s, "div", g.kt);
  const u1 = u(u(u(g.e, "max", imm(1)), "sub", imm(1)), "div", g.kt);
  const parts = cx.b.reg("u32", "skparts");
  cx.b.emit(ir.selp("u32", parts, u(u(u1, "sub", u0), "add", imm(1)), imm(0), g.some));
  const count = u(g.dp, "add", parts);
  const at = (i: Reg): StreamKUnit => {
    const h = geometry();
    const isDp = cx.setp("lt", "u32", i, h.dp);
    // A whole tile: b + i P.
    const dpTile = u(h.bx, "add", u(i, "mul", h.P));
    // A part: shared-out tile ts = s / kt + (i - dp), cut to the share.
    const ts = u(u(h.s, "div", h.kt), "add", u(i, "sub", h.dp));
    const first = u(ts, "mul", h.kt);
    const lo = u(h.s, "max", first);
    const hi = u(h.e, "min", u(first, "add", h.kt));
    const sel = (name: string, dp: Operand, sk: Operand) => {
      const r = cx.b.reg("u32", name);
      cx.b.emit(ir.selp("u32", r, dp, sk, isDp));
      return r;
    };
    const tile = sel("sktile", dpTile, u(h.dpTiles, "add", ts));
    const start = sel("skstart", imm(0), u(lo, "sub", first));
    const count = sel("skcount", h.kt, u(hi, "sub", lo));
    const whole = cx.b.reg("u32", "skwhole");
    cx.b.emit(ir.selp("u32", whole, imm(1), imm(0), cx.setp("eq", "u32", count, h.kt)));
    const index = cx.b.reg("u32", "skslot");
    cx.b.emit(ir.selp("u32", index, imm(0), imm(1), cx.setp("eq", "u32", start, imm(0))));
    return { tile, start, count, whole, index, record: ts };
  };
  return { count, at };
}

/**
 * What a consumer does with a Stream-K part's accumulators: a whole tile runs the epilogue
 * from them; a part stores them in its slot of the tile's record and counts itself in, and
 * the part that arrives second adds the other part's sums to its own, each accumulator tile
 * right before the epilogue uses it (as split-K's last split loads its sums: few registers
 * live at once), and runs the epilogue; the other part ends.
 *
 * @param cx The lowering's context (a Stream-K plan).
 * @param acc The accumulators.
 * @param part Emits the part's whole flag, slot and record (twice: for the test, and again
 *   for the store: not held across the test).
 * @param flagWord Emits the address of the shared word that broadcasts "last".
 * @param epilogue Emits the tile's epilogue from `acc`; `before(i, j)` (the second part's)
 *   completes accumulator tile (i, j)'s sums first.
 */
export function streamKFinish(
  cx: LowerContext,
  acc: Reg[][][],
  part: () => { readonly whole: Reg; readonly index: Reg; readonly record: Reg },
  flagWord: () => Reg,
  epilogue: (before?: (i: number, j: number) => void) => void,
): void {
  const b = cx.b;
  const ws = cx.k.plan.workspace!;
  const flat = acc.flat(2);
  const perChunk = ws.chunkBytes / ws.accBytes;
  b.if(cx.setp("ne", "u32", part().whole, imm(0)), true, () => epilogue(), () => {
    b.emit(ir.comment("Stream-K: a part of a shared-out tile"));
    const p = part();
    const { rec, tid } = storePartial(cx, flat, p.index, p.record);
    // The other part's partial (record + header + other slot), for thread 0 to share through
    // the flag's shared words: no register holds it across the epilogue (with vectors along
    // M and N the 16-bit staged epilogue spilled for two registers held).
    const other = cx.mulImm(cx.bin("sub", "u32", imm(1), p.index), ws.partialBytes);
    const share = cx.bin(
      "add",
      "u64",
      cx.bin("add", "u64", rec, imm(ws.headerBytes)),
      b64(cx, other),
    );
    const flag = flagWord();
    const last = arriveLast(cx, rec, tid, flag, 2, share);
    b.if(last, true, () => {
      // The part still holds its own sums: it adds the other part's to them, each
      // accumulator tile right before the epilogue uses it (own + other: the same bits
      // whichever part is last, addition being commutative).
      const width = ws.accBytes === 8 ? "b64" : "b32";
      epilogue((i, j) => {
        const shared = b.reg("u64", "skother");
        b.emit(ir.lds("b64", [shared], flagWord(), 8));
        const base = cx.bin(
          "add",
          "u64",
          shared,
          b64(cx, cx.mulImm(cx.features.get("tid")!, ws.chunkBytes)),
        );
        // Part 0 of the sum is this part's own chunk (already in the registers).
        sumTile(cx, acc, i, j, (s, c, dst) => {
          const own = flat.slice(c * perChunk, (c + 1) * perChunk);
          if (s === 0) own.forEach((r, e) => dst[e] !== r && b.emit(ir.mov(dst[e]!, r)));
          else b.emit(ir.ldg(width, dst, base, c * cx.threads * ws.chunkBytes, undefined, "cg"));
        }, 2);
      });
    });
  });
}
