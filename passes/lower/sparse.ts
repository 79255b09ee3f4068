/**
 * A structured-sparse A in the main loop (DESIGN §6.3, issue 21): the kept values'
 * copies (an ordinary K-contiguous operand of half the K), the metadata's copies into
 * its own shared-memory tile (ir/gemm.ts `MetaSmem`) and each tile row's metadata
 * register.
 *
 * The tile holds *packets* (ir/mma_sparse.ts `metaPacket`): 32 words, one a lane, each
 * the lane's metadata register for `steps` k-steps (k-step q read with selector q). So
 * a warp loads a tile row's register with one conflict-free `ld.shared.b32` every
 * `steps` k-steps (f16: every two, the m16n8k32 row's selectors 0 and 1), and nothing
 * is assembled next to the MMAs; bench/NOTES.md 55 measured the per-k-step assembly
 * from canonical words (two loads and 3-5 shifts a register) on the critical path.
 *
 * The user's buffer stays canonical (numerics/sparse.ts): the packets are built on the
 * way in. For a k-tile, each thread reads the two canonical words of rows g and g + 8 of
 * one 16-row block (`ld.global`, predicated, `0x44444444` outside the matrix), and, a
 * few k-steps later, joins their 16-bit halves into the four packet words of lanes
 * 4g .. 4g + 3 and stores them with one `st.shared.v4` (8-bit types: the words as they
 * are). The load is issued with the k-tile's `cp.async` copies and the store placed
 * before the barrier that ends the iteration, so the global latency is spent under
 * the MMAs; the stage it writes was freed by the previous iteration's barrier, as a
 * `cp.async` copy's is.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { type MetaSmem, sparseMetaParam, tensorParam } from "../../ir/gemm.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import {
  isSparseShape,
  type MetaHalf,
  type MetaPacket,
  metaPacket,
  type SparseMmaShape,
} from "../../ir/mma_sparse.ts";
import { b64, bytesOfElems, log2, type LowerContext } from "./context.ts";
import type { CopyOperand } from "./copies.ts";
import * as ir from "../../ir/builder.ts";

/** The `mma.sp` row a sparse kernel's context plans, or null for a dense one. */
export function sparseShape(cx: LowerContext): SparseMmaShape | null {
  return isSparseShape(cx.shape) ? cx.shape : null;
}

/** Batch stride of a sparse A's buffer (kept values or metadata) as bytes of one batch. */
function batchBase(cx: LowerContext, name: string, rowBytes: Operand, M: Operand, bz: Reg): Reg {
  const base = cx.params.get(name)!;
  const t = tensorParam(cx.k, name);
  if (t.dims.length < 3) return base;
  const perBatch = M.kind === "imm" && rowBytes.kind === "imm"
    ? imm(M.value * rowBytes.value)
    : cx.bin("mul", "u64", b64(cx, M), rowBytes);
  return cx.bin("add", "u64", base, cx.bin("mul", "u64", b64(cx, bz), perBatch));
}

/**
 * The kept values of a sparse A as a copy operand: `[M, K/2]` row-major, a k-tile of
 * `tileK / 2` columns (the copies' k indices and bounds count kept values: the caller
 * passes them {@link keptRemaining}).
 *
 * @param cx The lowering's context.
 * @param m0 The tile's first row.
 * @param M The problem's M.
 * @param K The problem's K.
 * @param bz The batch index.
 * @returns The operand.
 */
export function keptValuesOperand(
  cx: LowerContext,
  m0: Reg,
  M: Operand,
  K: Operand,
  bz: Reg,
): CopyOperand {
  const k = cx.k;
  const a = tensorParam(k, k.problem.a.tensor);
  const kept: Operand = K.kind === "imm" ? imm(K.value / 2) : cx.bin("shr", "u32", K, imm(1));
  const bits = DTYPE_INFO[a.dtype].bits;
  const rowBytes = kept.kind === "imm"
    ? imm((kept.value * bits) / 8)
    : bytesOfElems(cx, b64(cx, kept), bits);
  return {
    view: k.problem.a,
    p: k.plan.pipeline!.a,
    x0: m0,
    outerSize: M,
    line: {
      base: batchBase(cx, a.name, rowBytes, M, bz),
      ldElems: kept,
      tileK: k.plan.tile!.threadblock.k / 2,
    },
  };
}

/** `kRem` (K left from a k-tile's start, s32) in kept values: half of it. */
export function keptRemaining(cx: LowerContext, kRem: Reg): Reg {
  return cx.bin("shr", "s32", kRem, imm(1));
}

/** The metadata copies of one thread, as {@link metaCopySetup} plans them. */
export interface MetaCopies {
  readonly meta: MetaSmem;
  readonly packet: MetaPacket;
  /** Global address of row g's first word of this thread's packet, round 0 (advanced a
   * k-tile at a time). */
  readonly ptr: Reg;
  /** Bytes of a row of canonical words (row g to row g + 1). */
  readonly ld: Operand;
  /** Rows between round j and j + 1. */
  readonly dRows: number;
  /** Shared address (stage 0) of round 0's four packet words. */
  readonly dst: Reg;
  /** M minus round 0's row g (s32). */
  readonly rowRem: Reg;
  /** The first of the packet's two words in the k-tile (s32). */
  readonly word: Reg;
  /** Per round, false for a thread past the tile in a partial round. */
  readonly valid: readonly (Reg | null)[];
  /** `0x44444444`, the word outside the matrix. */
  readonly fill: Reg;
}

/** A k-tile's canonical words in registers, from {@link loadMetaWords} to {@link storeMetaWords}. */
export interface MetaWords {
  /** The stage's shared address of round 0. */
  readonly dst: Reg;
  /** Per round: row g's two words, then row g + 8's. */
  readonly words: readonly (readonly Reg[])[];
}

/**
 * Sets up a sparse A's metadata copies. Thread `tid` builds, each round, the packet
 * words of lanes 4g .. 4g + 3 (g = tid & 7) of packet `(tid >> 3) % packets` of block
 * `tid / (8 * packets)` (plus the round's blocks), which lie at byte `16 * tid` of the
 * stage: the stores of a warp are 512 consecutive bytes.
 *
 * @param cx The lowering's context.
 * @param m0 The tile's first row.
 * @param M The problem's M.
 * @param K The problem's K.
 * @param bz The batch index.
 * @param smem The shared memory's base.
 * @returns The plan.
 */
export function metaCopySetup(
  cx: LowerContext,
  m0: Reg,
  M: Operand,
  K: Operand,
  bz: Reg,
  smem: Reg,
): MetaCopies {
  const meta = cx.k.plan.pipeline!.meta!;
  const packet = metaPacket(sparseShape(cx)!);
  const param = sparseMetaParam(cx.k)!;
  const T = cx.threads;
  const perBlock = 8 * meta.packets;
  if ((meta.packets & (meta.packets - 1)) !== 0 || T % perBlock !== 0) {
    throw new Error(
      `lower-kernel: ${meta.packets} metadata packets a block do not divide ${T} threads`,
    );
  }
  const tid = cx.features.get("tid")!;
  const g = cx.bin("and", "u32", tid, imm(7));
  const pk = cx.bin("and", "u32", cx.bin("shr", "u32", tid, imm(3)), imm(meta.packets - 1));
  const blk = cx.bin("shr", "u32", tid, imm(log2(perBlock)));
  // Bytes of a row of words: ceil(K / kPerWord) * 4.
  const ld: Operand = K.kind === "imm" ? imm(Math.ceil(K.value / meta.kPerWord) * 4) : b64(
    cx,
    cx.bin(
      "shl",
      "u32",
      cx.bin(
        "shr",
        "u32",
        cx.bin("add", "u32", K, imm(meta.kPerWord - 1)),
        imm(log2(meta.kPerWord)),
      ),
      imm(2),
    ),
  );
  const base = batchBase(cx, param.name, ld, M, bz);
  const gRow = cx.bin("add", "u32", cx.bin("add", "u32", m0, cx.mulImm(blk, 16)), g);
  const off = cx.bin("add", "u64", cx.mulU64(gRow, ld), b64(cx, cx.mulImm(pk, 8)));
  const ptr = cx.bin("add", "u64", base, off, "metaptr");
  const dst = cx.bin("add", "u32", smem, imm(meta.offset));
  const rowRem = cx.bin("sub", "s32", cx.s32Of(M), cx.s32Of(gRow), "metarem");
  const word = cx.s32Of(cx.mulImm(pk, 2));
  const total = meta.blocks * perBlock;
  const valid: (Reg | null)[] = [];
  for (let j = 0; j * T < total; j++) {
    valid.push(
      (j + 1) * T <= total ? null : cx.setp("lt", "u32", tid, imm(total - j * T)),
    );
  }
  const fill = cx.mov("b32", imm(0x44444444), "metafill");
  return {
    meta,
    packet,
    ptr,
    ld,
    dRows: (T / perBlock) * 16,
    dst: cx.bin("add", "u32", dst, cx.mulImm(tid, 16)),
    rowRem,
    word,
    valid,
    fill,
  };
}

/** `p + k * ld` bytes: an immediate offset where `ld` is one, else a new address. */
function rowsAhead(cx: LowerContext, p: Reg, ld: Operand, rows: number): [Reg, number] {
  if (ld.kind === "imm") return [p, rows * ld.value];
  return rows === 0 ? [p, 0] : [cx.bin("add", "u64", p, cx.bin("mul", "u64", ld, imm(rows))), 0];
}

/**
 * Loads a k-tile's canonical metadata words (those of rows g and g + 8 for this
 * thread's packet) into registers, `0x44444444` where a word lies past M or past its
 * row, and moves the pointer a k-tile on. {@link storeMetaWords} stores them.
 *
 * @param cx The lowering's context.
 * @param c The plan.
 * @param stage The stage they are for.
 * @param kRem K left from the k-tile's first element (s32; may be negative).
 * @returns The words and their stage's address.
 */
export function loadMetaWords(cx: LowerContext, c: MetaCopies, stage: Reg, kRem: Reg): MetaWords {
  const b = cx.b;
  const { meta } = c;
  // Words left in the row from the k-tile's first: ceil(kRem / kPerWord), none once kRem <= 0.
  const wordsLeft = cx.bin(
    "shr",
    "s32",
    cx.bin("add", "s32", kRem, imm(meta.kPerWord - 1)),
    imm(log2(meta.kPerWord)),
  );
  const kOk = [
    cx.setp("lt", "s32", c.word, wordsLeft),
    cx.setp("lt", "s32", cx.bin("add", "s32", c.word, imm(1)), wordsLeft),
  ];
  const dst = cx.bin("add", "u32", c.dst, cx.bin("mul", "u32", stage, imm(meta.stageBytes)));
  // The words belong to A: they carry A's cache policy (`cache_a`) where it has one.
  const policy = cx.cachePolicy("A");
  const words = c.valid.map((valid, j) =>
    [0, 8].flatMap((r) => {
      const rows = j * c.dRows + r;
      const rowOk = cx.and(valid, cx.setp("lt", "s32", imm(rows), c.rowRem))!;
      const [p, o] = rowsAhead(cx, c.ptr, c.ld, rows);
      return kOk.map((k, x) => {
        const w = cx.mov("b32", c.fill);
        b.emit(ir.ldg("b32", [w], p, o + 4 * x, ir.when(cx.and(rowOk, k)!), undefined, policy));
        return w;
      });
    })
  );
  b.emit(ir.bin("add", "u64", c.ptr, c.ptr, imm(meta.packets * 8)));
  return { dst, words };
}

/**
 * Joins loaded canonical words into packet words (ir/mma_sparse.ts `MetaPacket.halves`:
 * 16-bit halves of rows g and g + 8; a whole word where a lane's word is one) and stores
 * each round's four with one `st.shared.v4`.
 *
 * @param cx The lowering's context.
 * @param c The plan.
 * @param w The words {@link loadMetaWords} loaded.
 */
export function storeMetaWords(cx: LowerContext, c: MetaCopies, w: MetaWords): void {
  w.words.forEach((ws, j) => {
    const src = (h: MetaHalf) => ws[(h.row === 0 ? 0 : 2) + (h.half >> 1)]!;
    const lanes = c.packet.halves.map(([lo, hi]) => {
      const l = src(lo);
      const h = src(hi);
      if (l === h && (lo.half & 1) === 0 && hi.half === lo.half + 1) return l;
      const low = (lo.half & 1) === 0
        ? cx.bin("and", "b32", l, imm(0xffff))
        : cx.bin("shr", "b32", l, imm(16));
      const high = (hi.half & 1) === 0
        ? cx.bin("shl", "b32", h, imm(16))
        : cx.bin("and", "b32", h, imm(0xffff0000));
      return cx.bin("or", "b32", low, high);
    });
    cx.b.emit(ir.sts("b32", lanes, w.dst, j * cx.threads * 16, ir.when(c.valid[j]!)));
  });
}

/** Moves the metadata pointer `tiles` k-tiles ahead (a split's first k-tile). */
export function skipMetaTiles(cx: LowerContext, c: MetaCopies, tiles: Reg): void {
  const off = cx.bin("mul", "u64", b64(cx, tiles), imm(c.meta.packets * 8));
  cx.b.emit(ir.bin("add", "u64", c.ptr, c.ptr, off));
}

/** What the metadata registers' loads need, as {@link metaFragSetup} plans them. */
export interface MetaFrags {
  readonly meta: MetaSmem;
  readonly packet: MetaPacket;
  /** This lane's word of the warp's first block, packet 0, stage 0 (byte address). */
  readonly addr: Reg;
}

/**
 * Plans the metadata registers' loads: this lane's word in the warp's first 16-row block.
 *
 * @param cx The lowering's context.
 * @param smem The shared memory's base.
 * @returns The plan.
 */
export function metaFragSetup(cx: LowerContext, smem: Reg): MetaFrags {
  const meta = cx.k.plan.pipeline!.meta!;
  const wp = cx.k.plan.warp!;
  const lane = cx.bin(
    "add",
    "u32",
    cx.mulImm(cx.features.get("g")!, 16),
    cx.mulImm(cx.features.get("tig")!, 4),
  );
  const block = cx.mulImm(cx.features.get("wm")!, (wp.warp.m / 16) * meta.packets * 128);
  const addr = cx.bin("add", "u32", cx.bin("add", "u32", smem, imm(meta.offset)), block);
  return { meta, packet: metaPacket(sparseShape(cx)!), addr: cx.bin("add", "u32", addr, lane) };
}

/**
 * Loads packet `packet` of the k-tile into the metadata registers, one per tile row of
 * the warp tile, from stage `readStage`.
 *
 * @param cx The lowering's context.
 * @param f The plan.
 * @param regs The registers (b32), by tile row.
 * @param packet The packet within the k-tile.
 * @param readStage The stage index read.
 */
export function loadMeta(
  cx: LowerContext,
  f: MetaFrags,
  regs: readonly Reg[],
  packet: number,
  readStage: Reg,
): void {
  const { meta } = f;
  const a = cx.bin("add", "u32", f.addr, cx.bin("mul", "u32", readStage, imm(meta.stageBytes)));
  regs.forEach((dst, i) => {
    cx.b.emit(ir.lds("b32", [dst], a, (i * meta.packets + packet) * 128));
  });
}

/** A sparse A's metadata registers across the k-steps of the main loop. */
export interface MetaSteps {
  /** The registers (by tile row) and selector of k-step `kk`. */
  at(kk: number): { readonly regs: readonly Reg[]; readonly selector: number };
  /** Where k-step kk's loads go: loads the packet k-step kk + 1 begins, if it begins one. */
  next(kk: number, readStage: Reg): void;
  /** After k-step kk's MMAs. */
  after(kk: number): void;
}

/**
 * The metadata registers of the main loop: two sets, one packet each; k-step kk reads
 * packet `floor(kk / steps)` with selector `kk % steps`, and the next packet loads into
 * the other set a k-step before it is read. With one packet a k-tile the next tile's
 * packet loads into the second set and moves into the first after the last MMAs (a
 * `mov` a tile row, which ptxas folds). Loads packet 0 of the first stage now.
 *
 * @param cx The lowering's context.
 * @param f The plan.
 * @param mTiles Tile rows of the warp tile.
 * @param kSteps k-steps a k-tile.
 * @param readStage The stage index read.
 * @returns The registers' schedule.
 */
export function metaSteps(
  cx: LowerContext,
  f: MetaFrags,
  mTiles: number,
  kSteps: number,
  readStage: Reg,
): MetaSteps {
  const Q = f.packet.steps;
  const perTile = kSteps / Q;
  if (!Number.isInteger(perTile)) {
    throw new Error(`lower-kernel: ${kSteps} k-steps a tile are no whole metadata packets of ${Q}`);
  }
  const sets = [0, 1].map((x) =>
    Array.from({ length: mTiles }, (_, i) => cx.b.reg("b32", `meta${x}_${i}`))
  );
  const setOf = (packet: number) => perTile === 1 ? sets[0]! : sets[packet % 2]!;
  loadMeta(cx, f, sets[0]!, 0, readStage);
  return {
    at: (kk) => ({ regs: setOf(Math.floor(kk / Q)), selector: kk % Q }),
    next: (kk, stage) => {
      if ((kk + 1) % Q !== 0) return;
      const packet = ((kk + 1) % kSteps) / Q;
      loadMeta(cx, f, perTile === 1 ? sets[1]! : setOf(packet), packet, stage);
    },
    after: (kk) => {
      if (perTile !== 1 || kk !== kSteps - 1) return;
      sets[0]!.forEach((r, i) => cx.b.emit(ir.mov(r, sets[1]![i]!)));
    },
  };
}
