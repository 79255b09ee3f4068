/**
 * The epilogue's memory accesses: loads of C and of vectors (issued ahead or at their
 * use), element and row addresses, the L2 prefetch of C's tile, and the guarded store of
 * results.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { type Dtype, DTYPE_INFO } from "../../ir/dtype.ts";
import {
  type EpilogueExpr,
  type MatrixView,
  type TensorParam,
  tensorParam,
} from "../../ir/gemm.ts";
import type { MemWidth, Operand, Reg, RegType } from "../../ir/kernel.ts";
import type { ComputeType } from "../../ir/epilogue.ts";
import {
  b64,
  b64Op,
  bytesOfElems,
  lineStride,
  log2,
  type LowerContext,
  tensorBase,
} from "./context.ts";
import { loadedToCompute, pack } from "./epilogue_expr.ts";
import { alongRow as alongRowOf } from "../epilogue_staging.ts";
import * as ir from "../../ir/builder.ts";

/** An epilogue tensor: its base address (batch offset applied), parameter and matrix view. */
export interface EpiTensor {
  readonly base: Reg;
  readonly t: TensorParam;
  readonly view: MatrixView | null;
}

/** Bytes of an L2 cache line, the unit `prefetch.global.L2` asks for. */
const L2_LINE = 128;

/**
 * How many k-tiles before the end of the main loop an epilogue that reads a
 * matrix prefetches its tile into L2: 256 elements of K (8 k-tiles of 32),
 * some microseconds of a large tile's main loop, more than a DRAM access
 * takes under load, and short enough that the lines are still in L2 when the
 * epilogue reads them (bench/NOTES.md 34).
 */
export function prefetchAhead(tileK: number): number {
  return Math.max(2, Math.ceil(256 / tileK));
}

/**
 * L2 prefetches of the block's tile of every matrix the epilogue reads (C),
 * as a function that emits them, or null when it reads none. The tile is
 * cut into runs along the matrix's contiguous dimension (tile rows of a
 * row-major C) and each run into 128-byte lines, plus the line of its last
 * byte (a run need not start on a line); the block's threads take the
 * pieces in turn, each under the bounds guard of the piece's first element,
 * so no address lies outside C.
 */
export function epiPrefetch(
  cx: LowerContext,
  m0: Reg,
  n0: Reg,
  M: Operand,
  N: Operand,
  bz: Reg,
): (() => void) | null {
  const k = cx.k;
  const views = k.epilogue.views;
  if (views.length === 0) return null;
  const tb = k.plan.tile!.threadblock;
  const b = cx.b;
  return () => {
    b.emit(ir.comment("L2 prefetch of the epilogue's matrices"));
    const tid = cx.features.get("tid")!;
    for (const v of views) {
      const t = tensorParam(k, v.tensor);
      const bits = DTYPE_INFO[t.dtype].bits;
      const rowMajor = v.layout === "row";
      const runs = rowMajor ? tb.m : tb.n;
      const runElems = rowMajor ? tb.n : tb.m;
      const runBytes = Math.ceil((runElems * bits) / 8);
      const lines = Math.ceil(runBytes / L2_LINE);
      const pieces = lines + 1;
      const total = runs * pieces;
      const base = tensorBase(cx, v, t, bz);
      for (let i = 0; i * cx.threads < total; i++) {
        const idx = i === 0 ? tid : cx.bin("add", "u32", tid, imm(i * cx.threads));
        const run = cx.divRem("div", idx, pieces);
        const piece = cx.divRem("rem", idx, pieces);
        // The piece's first byte in its run: line `piece`, the last piece at the run's end.
        const byte = cx.bin(
          "min",
          "u32",
          cx.mulImm(piece, L2_LINE),
          imm(runBytes - 1),
        );
        const elem = cx.bin("shr", "u32", cx.mulImm(byte, 8), imm(log2(bits)));
        const row = cx.bin("add", "u32", m0, rowMajor ? run : elem);
        const col = cx.bin("add", "u32", n0, rowMajor ? elem : run);
        let ok = cx.bin(
          "and",
          "pred",
          cx.setp("lt", "u32", row, M),
          cx.setp("lt", "u32", col, N),
        );
        if ((i + 1) * cx.threads > total) {
          ok = cx.bin("and", "pred", ok, cx.setp("lt", "u32", idx, imm(total)));
        }
        const ld = lineStride(cx, t) ?? (rowMajor ? N : M);
        const elemIdx = globalAddr(cx, base, row, col, ld, rowMajor, bits / 8);
        b.emit(ir.prefetch(elemIdx, ir.when(ok)));
      }
    }
  };
}

/** D's element (row, col) as a global address. */
export function globalAddr(
  cx: LowerContext,
  base: Reg,
  row: Reg,
  col: Reg,
  ld: Operand,
  rowMajor: boolean,
  bytes: number,
): Reg {
  const line = rowMajor ? row : col;
  const inLine = rowMajor ? col : row;
  const lineOff = cx.mulU64(line, b64Op(cx, ld));
  const idx = cx.bin("add", "u64", lineOff, b64(cx, inLine));
  return cx.bin("add", "u64", base, bytesOfElems(cx, idx, bytes * 8));
}

/**
 * Issues the load of `n` consecutive elements (1, 2 or 4) along a row of an
 * epilogue tensor at (row, col), guarded by `ok` (0 where it is false), and
 * returns a function that converts them to compute values. The conversions
 * are emitted at its first call, where the values are used: an epilogue
 * issues the loads of a batch of elements first (see `epilogue`), and ptxas
 * cannot move a load of C above a store to D (they may be the same memory).
 * n > 1 needs {@link alongRow}.
 */
export function loadAhead(
  cx: LowerContext,
  e: Extract<EpilogueExpr, { op: "load" }>,
  info: EpiTensor,
  row: Reg,
  col: Reg,
  ok: Reg | null,
  n: 1 | 2 | 4,
  c: ComputeType,
): () => Reg[] {
  const b = cx.b;
  const t = info.t;
  const bits = DTYPE_INFO[t.dtype].bits;
  const addr = elemAddr(cx, e, info, row, col);
  // 16-bit elements in pairs, one 32-bit word each; else one register an element.
  const paired = bits === 16 && n > 1;
  const width: MemWidth = paired
    ? "b32"
    : bits === 64
    ? "b64"
    : bits === 16
    ? "b16"
    : bits === 8
    ? "b8"
    : "b32";
  const rt: RegType = paired
    ? "b32"
    : bits === 64
    ? "f64"
    : bits === 16
    ? "b16"
    : bits === 8
    ? "u32"
    : t.dtype === "f32"
    ? "f32"
    : "s32";
  const ws = Array.from({ length: paired ? n / 2 : n }, () => cx.mov(rt, imm(0)));
  b.emit(ir.ldg(width, ws, addr, 0, ir.when(ok)));
  let vals: Reg[] | null = null;
  return () => {
    if (vals !== null) return vals;
    const vs = !paired ? ws : ws.flatMap((w) => {
      const lo = b.reg("b16");
      const hi = b.reg("b16");
      b.emit(ir.unpack(lo, hi, w));
      return [lo, hi];
    });
    vals = vs.map((v) => loadedToCompute(cx, v, t.dtype, c));
    return vals;
  };
}

/** One element of an epilogue tensor as a compute value, loaded where it is used. */
export function loadElem(
  cx: LowerContext,
  e: Extract<EpilogueExpr, { op: "load" }>,
  info: EpiTensor,
  row: Reg,
  col: Reg,
  ok: Reg | null,
  c: ComputeType,
): Reg {
  return loadAhead(cx, e, info, row, col, ok, 1, c)()[0]!;
}

/** Whether {@link loadAhead} can load `n` elements of a row of this epilogue
 * tensor at once: a row-major matrix aligned to n elements or more, 16- or
 * 32-bit (64-bit: pairs). */
export function alongRow(info: EpiTensor, n: number): boolean {
  return alongRowOf(info.t, info.view, n);
}

/** The global address of an epilogue tensor's element at (row, col). */
function elemAddr(
  cx: LowerContext,
  e: Extract<EpilogueExpr, { op: "load" }>,
  info: EpiTensor,
  row: Reg,
  col: Reg,
): Reg {
  let idx: Operand;
  if (e.rows && e.cols) {
    const v = info.view!;
    const M = cx.dim(cx.k.problem.m);
    const N = cx.dim(cx.k.problem.n);
    const line = v.layout === "row" ? row : col;
    const inLine = v.layout === "row" ? col : row;
    const ld = lineStride(cx, info.t) ?? (v.layout === "row" ? N : M);
    const lo = cx.mulU64(line, b64Op(cx, ld));
    idx = cx.bin("add", "u64", lo, b64(cx, inLine));
  } else {
    idx = b64(cx, e.rows ? row : e.cols ? col : cx.mov("u32", imm(0)));
  }
  const off = bytesOfElems(cx, idx, DTYPE_INFO[info.t.dtype].bits);
  return cx.bin("add", "u64", info.base, off);
}

/**
 * Stores one element of D's type, or a pair of column-adjacent ones (packed
 * into 32 bits for 16-bit types), to global (`stg`, guarded by `ok`) or
 * shared memory (`sts`).
 */
export function store(
  cx: LowerContext,
  op: "stg" | "sts",
  addr: Reg,
  offset: number,
  vs: Reg[],
  t: Dtype,
  ok: Reg | null,
): void {
  const b = cx.b;
  let src = vs;
  let width: MemWidth = t === "f64"
    ? "b64"
    : t === "f16" || t === "bf16"
    ? "b16"
    : t === "s8" || t === "u8"
    ? "b8"
    : "b32";
  if (vs.length === 2 && width === "b16") {
    src = [pack(cx, vs[0]!, vs[1]!)];
    width = "b32";
  }
  const guard = ir.when(ok);
  b.emit(
    op === "stg"
      ? ir.stg(width, src, addr, offset, guard)
      : ir.sts(width, src, addr, offset, guard),
  );
}
