/**
 * A structured-sparse A in the main loop (DESIGN §6.3, issue 21): the kept values'
 * copies (an ordinary K-contiguous operand of half the K), the metadata's copies into
 * its own shared-memory tile (ir/gemm.ts `MetaSmem`), and each k-step's metadata
 * registers, one a tile row of the warp tile, assembled from the canonical words
 * (numerics/sparse.ts) in the lane layout of the `mma.sp` row (ir/mma_sparse.ts
 * `SparseMetaMap`).
 *
 * Which words a lane needs: the row's metadata map gives, for each lane and nibble,
 * the (row, chunk) it describes. Each 16-bit half of a lane's register is four
 * consecutive chunks of one row, so a half is 16 consecutive bits of a canonical
 * row; the lowering fits the half's row and bit offset as affine functions of the
 * lane's `g = lane >> 2`, `t & 1` and `t >> 1` (t = lane & 3) and
 *   - loads the register as one word where both halves are one aligned word (the
 *     8-bit types: `ld.shared.b32`, nothing else);
 *   - else loads the two words and joins the halves by shifts and masks (the 16-bit
 *     types and tf32: rows g and g + 8 share a register; 3 ALU operations, 5 where the
 *     half depends on the lane). A `prmt` would do it in one (the kernel IR has no
 *     `prmt` yet: a shortcut) or a host-side reorder of the metadata, as CUTLASS
 *     and cuSPARSELt do, in none; the canonical layout was kept so that the buffer a
 *     user passes is the one `compressSparse` documents.
 *
 * Every lane computes an address, including those the selector leaves out (the
 * selector is 0: lanes t = 0, or t = 0 and 1, or all supply metadata); theirs are
 * the addresses their own selector would use, inside the tile.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { type MetaSmem, sparseMetaParam, tensorParam } from "../../ir/gemm.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import { isSparseShape, type SparseMmaShape } from "../../ir/mma_sparse.ts";
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
  /** Global address of this thread's copy 0 (advanced a k-tile at a time). */
  readonly ptr: Reg;
  /** Bytes between copy j and j + 1 in global memory, and rows between them. */
  readonly stride: Operand;
  readonly dRows: number;
  /** Shared address (stage 0) of copy 0. */
  readonly dst: Reg;
  /** Rows left from copy 0's row (s32), and copy 0's first word in the k-tile (s32). */
  readonly rowRem: Reg;
  readonly word: Reg;
  /** Per copy, false for a thread past the tile in a partial round. */
  readonly valid: readonly (Reg | null)[];
  /** `0x44444444`, stored in place of words outside the matrix. */
  readonly fill: Reg;
}

/**
 * Sets up a sparse A's metadata copies: each thread copies `copyBytes` of one row's
 * k-tile words per round, consecutive threads along a row.
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
  const param = sparseMetaParam(cx.k)!;
  const T = cx.threads;
  const cpr = meta.rowBytes / meta.copyBytes;
  if ((cpr & (cpr - 1)) !== 0 || T % cpr !== 0) {
    throw new Error(`lower-kernel: ${cpr} metadata copies a row do not divide ${T} threads`);
  }
  const tid = cx.features.get("tid")!;
  const row = cx.bin("shr", "u32", tid, imm(log2(cpr)));
  const col = cx.bin("and", "u32", tid, imm(cpr - 1));
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
  const gRow = cx.bin("add", "u32", m0, row);
  const off = cx.bin(
    "add",
    "u64",
    cx.mulU64(gRow, ld),
    b64(cx, cx.mulImm(col, meta.copyBytes)),
  );
  const ptr = cx.bin("add", "u64", base, off, "metaptr");
  const sOff = cx.bin(
    "add",
    "u32",
    cx.mulImm(row, meta.rowBytes),
    cx.mulImm(col, meta.copyBytes),
  );
  const dst = cx.bin("add", "u32", cx.bin("add", "u32", smem, imm(meta.offset)), sOff);
  const rowRem = cx.bin("sub", "s32", cx.s32Of(M), cx.s32Of(gRow), "metarem");
  const word = cx.s32Of(cx.mulImm(col, meta.copyBytes / 4));
  const total = meta.rows * cpr;
  const dRows = T / cpr;
  const valid: (Reg | null)[] = [];
  for (let j = 0; j * T < total; j++) {
    valid.push(
      (j + 1) * T <= total ? null : cx.setp("lt", "u32", tid, imm(total - j * T)),
    );
  }
  const fill = cx.mov("b32", imm(0x44444444), "metafill");
  const stride = ld.kind === "imm" ? imm(dRows * ld.value) : cx.bin("mul", "u64", ld, imm(dRows));
  return { meta, ptr, stride, dRows, dst, rowRem, word, valid, fill };
}

/**
 * Issues a k-tile's metadata copies into stage `stage`: `cp.async` where the words
 * lie in the matrix (row below M, word below the row's last), else a store of
 * `0x44444444`; then moves the pointer a k-tile on.
 *
 * @param cx The lowering's context.
 * @param c The plan.
 * @param stage The stage written.
 * @param kRem K left from the k-tile's first element (s32; may be negative).
 */
export function issueMetaCopies(cx: LowerContext, c: MetaCopies, stage: Reg, kRem: Reg): void {
  const b = cx.b;
  const { meta } = c;
  // Words left in the row from the k-tile's first (a multiple of kPerWord along K):
  // ceil(kRem / kPerWord), none once kRem <= 0.
  const wordsLeft = cx.bin(
    "shr",
    "s32",
    cx.bin("add", "s32", kRem, imm(meta.kPerWord - 1)),
    imm(log2(meta.kPerWord)),
  );
  const kIn = cx.setp("lt", "s32", c.word, wordsLeft);
  const kOut = cx.setp("ge", "s32", c.word, wordsLeft);
  const dst = cx.bin("add", "u32", c.dst, cx.bin("mul", "u32", stage, imm(meta.stageBytes)));
  const fillRegs = Array.from({ length: meta.copyBytes / 4 }, () => c.fill);
  c.valid.forEach((valid, j) => {
    const rows = imm(j * c.dRows);
    const inside = cx.and(valid, cx.and(cx.setp("lt", "s32", rows, c.rowRem), kIn))!;
    const out = cx.and(valid, cx.bin("or", "pred", cx.setp("ge", "s32", rows, c.rowRem), kOut))!;
    const ptr = j === 0
      ? c.ptr
      : c.stride.kind === "imm"
      ? cx.bin("add", "u64", c.ptr, imm(j * c.stride.value))
      : cx.bin("add", "u64", c.ptr, cx.bin("mul", "u64", c.stride, imm(j)));
    const dOff = j * c.dRows * meta.rowBytes;
    b.emit(ir.cpAsync(
      {
        cache: "ca",
        bytes: meta.copyBytes,
        dst,
        dstOffset: dOff,
        src: ptr,
        srcBytes: imm(meta.copyBytes),
      },
      ir.when(inside),
    ));
    b.emit(ir.sts("b32", fillRegs, dst, dOff, ir.when(out)));
  });
  b.emit(ir.bin("add", "u64", c.ptr, c.ptr, imm(meta.rowBytes)));
}

/** Moves the metadata pointer `tiles` k-tiles ahead (a split's first k-tile). */
export function skipMetaTiles(cx: LowerContext, c: MetaCopies, tiles: Reg): void {
  const off = cx.bin("mul", "u64", b64(cx, tiles), imm(c.meta.rowBytes));
  cx.b.emit(ir.bin("add", "u64", c.ptr, c.ptr, off));
}

/** A value of the lane, affine in (g, t & 1, t >> 1). */
interface LaneFit {
  readonly c: number;
  readonly g: number;
  readonly t1: number;
  readonly t2: number;
}

function fitLane(f: (lane: number) => number, what: string): LaneFit {
  const c = f(0);
  const fit = { c, g: f(4) - c, t1: f(1) - c, t2: f(2) - c };
  for (let l = 0; l < 32; l++) {
    const t = l & 3;
    if (f(l) !== c + fit.g * (l >> 2) + fit.t1 * (t & 1) + fit.t2 * (t >> 1)) {
      throw new Error(`lower-kernel: ${what} is not affine in (g, t & 1, t >> 1)`);
    }
  }
  return fit;
}

/** One 16-bit half of a lane's metadata register: its row and bit offset in the row. */
interface Half {
  readonly row: LaneFit;
  /** Bit offset in the row at k-step 0: the lane's part (a LaneFit without constant). */
  readonly bit: LaneFit;
}

/** What each k-step's metadata loads need, as {@link metaFragSetup} plans them. */
export interface MetaFrags {
  readonly shape: SparseMmaShape;
  readonly meta: MetaSmem;
  /** Per half, this thread's stage-0 byte address of its row's k-tile words. */
  readonly addr: readonly [Reg, Reg];
  /** Per half, this thread's shift (lane-dependent part; null: none). */
  readonly shift: readonly [Reg | null, Reg | null];
  readonly halves: readonly [Half, Half];
  /** Both halves are one aligned word (one `ld.shared.b32` a register). */
  readonly word: boolean;
}

/**
 * Plans the metadata registers' loads: per thread, the address of each half's row
 * (warp origin applied) and its lane-dependent shift.
 *
 * @param cx The lowering's context.
 * @param smem The shared memory's base.
 * @returns The plan.
 */
export function metaFragSetup(cx: LowerContext, smem: Reg): MetaFrags {
  const shape = sparseShape(cx)!;
  const meta = cx.k.plan.pipeline!.meta!;
  const mm = shape.meta;
  const natural = (lane: number): number =>
    mm.lanesPerGroup === 1 ? lane & 3 : mm.lanesPerGroup === 2 ? (lane & 3) >> 1 : 0;
  const halfOf = (h: number): Half => {
    const at = (lane: number, n: number) => mm.coord(lane, natural(lane), n)!;
    for (let l = 0; l < 32; l++) {
      const [r0, c0] = at(l, 4 * h);
      for (let n = 1; n < 4; n++) {
        const [r, c] = at(l, 4 * h + n);
        if (r !== r0 || c !== c0 + n) {
          throw new Error(`lower-kernel: ${shape.name} metadata half ${h} is not one row's run`);
        }
      }
    }
    return {
      row: fitLane((l) => at(l, 4 * h)[0], `${shape.name} metadata row`),
      bit: fitLane((l) => 4 * at(l, 4 * h)[1], `${shape.name} metadata bit`),
    };
  };
  const halves = [halfOf(0), halfOf(1)] as const;
  const stepBits = 4 * mm.chunks;
  for (const h of halves) {
    const laneBits = [h.bit.g, h.bit.t1, h.bit.t2];
    if (laneBits.some((x) => x % 32 !== 0) && (stepBits % 32 !== 0 || h.bit.c % 32 !== 0)) {
      throw new Error(`lower-kernel: ${shape.name} metadata halves straddle words`);
    }
  }
  const [h0, h1] = halves;
  const sameRow = (a: LaneFit, b: LaneFit) =>
    a.c === b.c && a.g === b.g && a.t1 === b.t1 && a.t2 === b.t2;
  const word = sameRow(h0.row, h1.row) && h1.bit.c === h0.bit.c + 16 &&
    sameRow({ ...h0.bit, c: 0 }, { ...h1.bit, c: 0 }) && h0.bit.c % 32 === 0 &&
    stepBits % 32 === 0 && [h0.bit.g, h0.bit.t1, h0.bit.t2].every((x) => x % 32 === 0);
  const g = cx.features.get("g")!;
  const tig = cx.features.get("tig")!;
  const t1 = cx.bin("and", "u32", tig, imm(1));
  const t2 = cx.bin("shr", "u32", tig, imm(1));
  const lanePart = (f: LaneFit, scale: number): Operand => {
    let v: Operand = imm(0);
    for (const [x, k] of [[g, f.g], [t1, f.t1], [t2, f.t2]] as const) {
      if (k === 0) continue;
      const term = cx.bin("mul", "u32", x, imm(k * scale));
      v = v.kind === "imm" ? term : cx.bin("add", "u32", v, term);
    }
    return v;
  };
  const wp = cx.k.plan.warp!;
  const warpRow = cx.bin("mul", "u32", cx.features.get("wm")!, imm(wp.warp.m));
  const tileBase = cx.bin("add", "u32", smem, imm(meta.offset));
  const addrOf = (h: Half): Reg => {
    const rowB = lanePart(h.row, meta.rowBytes);
    const wordB = wordsAligned(h) ? lanePart(h.bit, 1 / 8) : imm(0);
    let a = cx.bin("add", "u32", tileBase, cx.bin("mul", "u32", warpRow, imm(meta.rowBytes)));
    a = cx.bin("add", "u32", a, imm(h.row.c * meta.rowBytes));
    if (rowB.kind !== "imm") a = cx.bin("add", "u32", a, rowB);
    if (wordB.kind !== "imm") a = cx.bin("add", "u32", a, wordB);
    return a;
  };
  const shiftOf = (h: Half): Reg | null => {
    if (wordsAligned(h)) return null;
    const s = lanePart(h.bit, 1);
    return s.kind === "imm" ? null : s;
  };
  return {
    shape,
    meta,
    addr: [addrOf(h0), word ? addrOf(h0) : addrOf(h1)],
    shift: [shiftOf(h0), shiftOf(h1)],
    halves,
    word,
  };
}

/** Whether a half's lane-dependent bit offset is whole words (the address takes it). */
function wordsAligned(h: Half): boolean {
  return [h.bit.g, h.bit.t1, h.bit.t2].every((x) => x % 32 === 0);
}

/**
 * Loads k-step `kk`'s metadata registers, one per tile row of the warp tile, from the
 * stage `readStage`.
 *
 * @param cx The lowering's context.
 * @param f The plan.
 * @param regs The registers (b32), by tile row.
 * @param kk The k-step.
 * @param readStage The stage index read.
 */
export function loadMeta(
  cx: LowerContext,
  f: MetaFrags,
  regs: readonly Reg[],
  kk: number,
  readStage: Reg,
): void {
  const b = cx.b;
  const { meta } = f;
  const stageOff = cx.bin("mul", "u32", readStage, imm(meta.stageBytes));
  const addr = f.addr.map((a) => cx.bin("add", "u32", a, stageOff));
  const stepBits = 4 * f.shape.meta.chunks;
  regs.forEach((dst, i) => {
    const tileOff = i * f.shape.m * meta.rowBytes;
    const bitAt = (h: Half) => h.bit.c + kk * stepBits;
    if (f.word) {
      b.emit(ir.lds("b32", [dst], addr[0]!, tileOff + (bitAt(f.halves[0]) >> 5) * 4));
      return;
    }
    const parts = f.halves.map((h, x) => {
      const w = b.reg("b32");
      b.emit(ir.lds("b32", [w], addr[x]!, tileOff + (bitAt(h) >> 5) * 4));
      const c = bitAt(h) % 32;
      const lane = f.shift[x]!;
      // The half's 16 bits, moved to bits 16x..16x+15.
      if (lane === null) {
        if (x === 0) {
          return c === 0 ? cx.bin("and", "b32", w, imm(0xffff)) : cx.bin("shr", "b32", w, imm(c));
        }
        return c === 16
          ? cx.bin("and", "b32", w, imm(0xffff0000))
          : cx.bin("shl", "b32", c === 0 ? w : cx.bin("shr", "b32", w, imm(c)), imm(16));
      }
      const s = c === 0 ? lane : cx.bin("add", "u32", lane, imm(c));
      const v = cx.bin("shr", "b32", w, s);
      return x === 0 ? cx.bin("and", "b32", v, imm(0xffff)) : cx.bin("shl", "b32", v, imm(16));
    });
    b.emit(ir.bin("or", "b32", dst, parts[0]!, parts[1]!));
  });
}
