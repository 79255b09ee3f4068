/**
 * Split-K in the kernel: the reduction by the block that arrives last, in the
 * workspace record that gemm-workspace laid out (`plan.workspace`, see
 * passes/workspace.ts).
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { Reg } from "../../ir/kernel.ts";
import { b64, type LowerContext } from "./context.ts";
import * as ir from "../../ir/builder.ts";

/**
 * Split-K, in the kernel (no second launch): every block stores its partial
 * accumulators into its tile's workspace record and counts itself in with an
 * atomic add; the block that arrives last sums the split_k partials in split
 * order (so the result does not depend on the order of arrival), resets the
 * counter to 0 for the next launch, and runs the epilogue (`then`), which
 * calls `sum(i, j)` to load accumulator tile (i, j)'s sums just before it
 * uses them. The others end. Partials are raw accumulators: f32, f64, s32
 * (summed with saturation, as the integer MMAs accumulate), or f16x2 (the
 * halves summed in f32 and rounded to f16 once).
 */
export function splitKReduce(
  cx: LowerContext,
  acc: Reg[][][],
  split: Reg,
  tileLin: Reg,
  smem: Reg,
  then: (sum: (i: number, j: number) => void) => void,
  prefetch: (() => void) | null = null,
): void {
  const b = cx.b;
  const ws = cx.k.plan.workspace!;
  const flat = acc.flat(2);
  const perChunk = ws.chunkBytes / ws.accBytes;
  if (acc[0]![0]!.length % perChunk !== 0) {
    throw new Error("lower-kernel: an accumulator tile is not whole 16-byte chunks");
  }
  const { rec, tid, part0 } = storePartial(cx, flat, split, tileLin);
  const isLast = arriveLast(cx, rec, tid, smem);
  b.if(isLast, true, () => {
    b.emit(ir.fence());
    // The last split alone reads C: its tile into L2 while the partial sums load.
    prefetch?.();
    const width = ws.accBytes === 8 ? "b64" : "b32";
    const load = (s: number, c: number, dst: Reg[]) =>
      b.emit(
        ir.ldg(
          width,
          dst,
          part0,
          s * ws.partialBytes + c * cx.threads * ws.chunkBytes,
          undefined,
          "cg",
        ),
      );
    // The sums of one accumulator tile, loaded by the epilogue right before
    // it stores that tile: few registers live at once.
    then((i, j) => sumTile(cx, acc, i, j, load));
  });
}

/**
 * Stores this block's partial accumulators into its split's place in its
 * tile's workspace record, chunk-major (see `WorkspacePlan` in ir/gemm.ts).
 *
 * @param cx The lowering's context.
 * @param flat The accumulator registers, in tile-row, tile-column, register order.
 * @param split This block's split.
 * @param tileLin The output tile's linear index.
 * @returns The record's address, the thread index and this thread's first
 *   chunk of split 0.
 */
export function storePartial(
  cx: LowerContext,
  flat: readonly Reg[],
  split: Reg,
  tileLin: Reg,
): { rec: Reg; tid: Reg; part0: Reg } {
  const ws = cx.k.plan.workspace!;
  const perChunk = ws.chunkBytes / ws.accBytes;
  const width = ws.accBytes === 8 ? "b64" : "b32";
  const S = (ws.perTile - ws.headerBytes) / ws.partialBytes;
  cx.b.emit(ir.comment(`split-K: partial to the workspace, the last of ${S} splits reduces`));
  const { rec, tid, part0 } = partialBase(cx, tileLin);
  const own = cx.bin(
    "add",
    "u64",
    part0,
    cx.bin("mul", "u64", b64(cx, split), imm(ws.partialBytes)),
  );
  for (let c = 0; c < flat.length / perChunk; c++) {
    const src = flat.slice(c * perChunk, (c + 1) * perChunk);
    cx.b.emit(ir.stg(width, src, own, c * cx.threads * ws.chunkBytes));
  }
  return { rec, tid, part0 };
}

/**
 * Sums accumulator tile (i, j)'s chunks into its registers ({@link sumChunk} for each).
 *
 * @param cx The lowering's context.
 * @param acc The accumulators (tile row, tile column, register).
 * @param i The tile row.
 * @param j The tile column.
 * @param load Loads part s's chunk c (the chunk's index among all of `acc`'s) into `dst`.
 * @param S The parts.
 */
export function sumTile(
  cx: LowerContext,
  acc: Reg[][][],
  i: number,
  j: number,
  load: (s: number, c: number, dst: Reg[]) => void,
  S: number = cx.k.plan.tile!.splitK,
): void {
  const ws = cx.k.plan.workspace!;
  const perChunk = ws.chunkBytes / ws.accBytes;
  const flat = acc.flat(2);
  const tileRegs = acc[0]![0]!.length;
  const first = ((i * acc[0]!.length + j) * tileRegs) / perChunk;
  for (let c = first; c < first + tileRegs / perChunk; c++) {
    sumChunk(cx, flat.slice(c * perChunk, (c + 1) * perChunk), (s, dst) => load(s, c, dst), S);
  }
}

/**
 * A tile's workspace record and this thread's first chunk of part 0 in it.
 *
 * @param cx The lowering's context.
 * @param tileLin The tile's record index.
 * @returns The record's address, the thread index and the chunk's address.
 */
export function partialBase(cx: LowerContext, tileLin: Reg): { rec: Reg; tid: Reg; part0: Reg } {
  const ws = cx.k.plan.workspace!;
  const rec = cx.bin(
    "add",
    "u64",
    cx.params.get(ws.param)!,
    cx.bin("mul", "u64", b64(cx, tileLin), imm(ws.perTile)),
  );
  const tid = cx.features.get("tid")!;
  const mine = cx.bin("add", "u64", rec, b64(cx, cx.mulImm(tid, ws.chunkBytes)));
  return { rec, tid, part0: cx.bin("add", "u64", mine, imm(ws.headerBytes)) };
}

/**
 * Sums one chunk of every split's partials into `regs`, in split order: f32,
 * f64 and s32 (saturating) in place; f16x2 halves in f32, rounded to f16
 * once at the end.
 *
 * @param cx The lowering's context.
 * @param regs The chunk's accumulator registers (the sums' destination).
 * @param load Loads split s's chunk into registers.
 * @param S The parts (split_k; Stream-K's 2).
 */
export function sumChunk(
  cx: LowerContext,
  regs: Reg[],
  load: (s: number, dst: Reg[]) => void,
  S: number = cx.k.plan.tile!.splitK,
): void {
  const b = cx.b;
  if (cx.shape.cType !== "f16") {
    const addT = cx.shape.cType === "f64" ? "f64" : cx.shape.cType === "s32" ? "s32" : "f32";
    const fn = addT === "s32" ? "addsat" : "add";
    load(0, regs);
    for (let s = 1; s < S; s++) {
      const part = regs.map((r) => b.reg(r.type));
      load(s, part);
      regs.forEach((r, q) => b.emit(ir.bin(fn, addT, r, r, part[q]!)));
    }
    return;
  }
  // f16x2 (b32) accumulators: each half as f32.
  const halves = (w: Reg): Reg[] => {
    const lo = b.reg("b16");
    const hi = b.reg("b16");
    b.emit(ir.unpack(lo, hi, w));
    return [lo, hi].map((h) => {
      const x = b.reg("f32");
      b.emit(ir.cvt("f32.f16", x, h));
      return x;
    });
  };
  let sums: Reg[][] = [];
  for (let s = 0; s < S; s++) {
    const part = regs.map((r) => b.reg(r.type));
    load(s, part);
    const hs = part.map(halves);
    if (s === 0) sums = hs;
    else {
      sums.forEach((pair, q) =>
        pair.forEach((x, e) => b.emit(ir.bin("add", "f32", x, x, hs[q]![e]!)))
      );
    }
  }
  regs.forEach((r, q) => {
    const [lo, hi] = sums[q]!.map((x) => {
      const h = b.reg("b16");
      b.emit(ir.cvt("f16.f32", h, x));
      return h;
    });
    b.emit(ir.pack(r, lo!, hi!));
  });
}

/**
 * Counts this block in at its tile's workspace record and tells every thread
 * whether it was the last split to arrive (through shared memory, from
 * thread 0, which also resets the counter then).
 *
 * @param cx The lowering's context.
 * @param rec The tile's workspace record (its arrival counter first).
 * @param tid The thread index.
 * @param smem The shared word of the broadcast flag.
 * @param S The parts that arrive (split_k; Stream-K's 2).
 * @param share A u64 thread 0 also stores at `smem + 8` with the flag (Stream-K: the other
 *   part's partial), for every thread to read after the barrier.
 * @returns A predicate: this block arrived last.
 */
export function arriveLast(
  cx: LowerContext,
  rec: Reg,
  tid: Reg,
  smem: Reg,
  S: number = cx.k.plan.tile!.splitK,
  share?: Reg,
): Reg {
  const b = cx.b;
  // Release: every thread's partial before the barrier, and thread 0's
  // fence after it (cumulative over what the barrier showed it) before its
  // atomic. Acquire: thread 0's fence right after the atomic that saw the
  // others, then the barrier, as CUTLASS's semaphore does (acquire, then
  // __syncthreads); the partials are read through L2 (ld.global.cg).
  b.emit(ir.fence());
  b.emit(cx.barrier());
  const t0 = cx.setp("eq", "u32", tid, imm(0));
  b.emit(ir.fence());
  const old = cx.mov("u32", imm(0), "arrived");
  b.emit(ir.atom(old, rec, 0, imm(1), ir.when(t0)));
  b.emit(ir.fence());
  const lastT0 = cx.bin("and", "pred", t0, cx.setp("eq", "u32", old, imm(S - 1)));
  // The counter back to 0 for the next launch (every split has counted in).
  b.emit(ir.stg("b32", [imm(0)], rec, 0, ir.when(lastT0)));
  const flag = cx.b.reg("u32", "last");
  b.emit(ir.selp("u32", flag, imm(1), imm(0), lastT0));
  b.emit(ir.sts("b32", [flag], smem, 0, ir.when(t0)));
  if (share !== undefined) b.emit(ir.sts("b64", [share], smem, 8, ir.when(t0)));
  b.emit(cx.barrier());
  const got = cx.b.reg("u32", "lastall");
  b.emit(ir.lds("b32", [got], smem, 0));
  return cx.setp("ne", "u32", got, imm(0));
}
