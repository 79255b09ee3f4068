/**
 * A grouped kernel's persistent tile loop (DESIGN §6.2): the problem table's
 * layout, and the loop in which each block takes output tiles `blockIdx.x`,
 * `blockIdx.x + gridDim.x`, ... over the tiles of every problem in turn (the
 * problems' tiles numbered one after another, each problem's tiles M-fastest),
 * finds the problem a tile belongs to, loads that problem's sizes, tensor
 * addresses and strides from its table entry, and runs the tile as the ordinary
 * kernel would.
 *
 * The tile search is a binary search over the entries' `tiles_before` (the
 * launcher's prefix sum of tiles), from the problem of the block's previous tile
 * (tiles only grow): at most log2(count) + 1 dependent loads a tile, which L1 serves
 * after the first tiles. The rounds are the bits of the count, counted once per
 * block by a 32-step loop (the kernel IR has no `clz`).
 *
 * Addresses loaded from the table are used as global addresses as they are (a
 * device allocation's generic address is its global one, the convention CUTLASS's
 * cp.async relies on), not converted with `cvta.to.global` as parameters are.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { GemmKernel } from "../../ir/gemm.ts";
import type { GroupField, GroupLayout, Operand, Reg } from "../../ir/kernel.ts";
import { GROUP_PARAMS } from "../../ir/gemm.ts";
import type { LowerContext } from "./context.ts";
import * as ir from "../../ir/builder.ts";

/**
 * The problem-table entry of a grouped kernel: its tensors' addresses (`u64`, in
 * parameter order), its runtime strides (`u64`), its runtime dims (`u32`), then
 * `tiles_before` (`u32`); the entry padded to 8 bytes.
 *
 * @param k The checked kernel (grouped).
 * @returns The layout.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { groupLayout } from "./grouped.ts";
 * const src = "kernel e grouped { X: bf16[M, K] row\n W: bf16[K, N] col\n Y: bf16[M, N] row\n" +
 *   " Y[m, n] = X[m, k] * W[k, n] }";
 * const l = groupLayout(compile(src).kernels[0]!.gemm);
 * deepEqual(l.fields.map((f) => `${f.name}@${f.offset}`),
 *   ["X@0", "W@8", "Y@16", "M@24", "K@28", "N@32", "tiles_before@36"]);
 * equal(l.entryBytes, 40);
 * ```
 */
export function groupLayout(k: GemmKernel): GroupLayout {
  const fields: GroupField[] = [];
  let off = 0;
  const add = (name: string, kind: GroupField["kind"], ptx: "u64" | "u32") => {
    const size = ptx === "u64" ? 8 : 4;
    off = Math.ceil(off / size) * size;
    fields.push({ name, kind, offset: off, ptx });
    off += size;
  };
  for (const p of k.params) if (p.kind === "tensor") add(p.name, "tensor", "u64");
  for (const s of k.strides ?? []) add(s, "stride", "u64");
  for (const d of k.dims) add(d, "dim", "u32");
  add("tiles_before", "tiles_before", "u32");
  return { entryBytes: Math.ceil(off / 8) * 8, fields };
}

/** One tile of one problem, as {@link groupedTiles} hands it to the tile's body. */
export interface GroupTile {
  /** The tile's first row and column of D. */
  readonly m0: Reg;
  readonly n0: Reg;
  /** The problem's sizes. */
  readonly M: Operand;
  readonly N: Operand;
  readonly K: Operand;
}

/** The address of entry `g` of the table (`table + g * entryBytes`). */
function entryAddr(cx: LowerContext, table: Reg, g: Operand, entryBytes: number): Reg {
  const off = cx.b.reg("u64");
  cx.b.emit(ir.mulWide(off, g, imm(entryBytes)));
  return cx.bin("add", "u64", table, off);
}

/** Loads one `u32` field of the entry at `addr`. */
function loadU32(cx: LowerContext, addr: Reg, f: GroupField, name?: string): Reg {
  const r = cx.b.reg(f.ptx, name);
  cx.b.emit(ir.ldg(f.ptx === "u64" ? "b64" : "b32", [r], addr, f.offset));
  return r;
}

/** `ceil(x / t)` for a constant tile extent t. */
function tilesOf(cx: LowerContext, x: Operand, t: number): Operand {
  if (x.kind === "imm") return imm(Math.ceil(x.value / t));
  return cx.divRem("div", cx.bin("add", "u32", x, imm(t - 1)), t);
}

/**
 * Emits the persistent tile loop of a grouped kernel; `tile` builds one tile's
 * work (main loop and epilogue) with the problem's parameters in `cx.params`.
 *
 * @param cx The lowering's context: the table and count parameters loaded.
 * @param layout The table's layout ({@link groupLayout}).
 * @param tile Builds a tile's work.
 */
export function groupedTiles(
  cx: LowerContext,
  layout: GroupLayout,
  tile: (t: GroupTile) => void,
): void {
  const k = cx.k;
  const b = cx.b;
  const tb = k.plan.tile!.threadblock;
  const table = cx.params.get(GROUP_PARAMS.table)!;
  const count = cx.params.get(GROUP_PARAMS.count)!;
  const field = (name: string) => layout.fields.find((f) => f.name === name)!;
  const tbField = field("tiles_before");
  /** A problem's M or N: its field where it is a runtime dim, else the literal. */
  const dimAt = (addr: Reg, d: GemmKernel["problem"]["m"]): Operand =>
    d.kind === "const" ? imm(d.value) : loadU32(cx, addr, field(d.name), d.name);
  const tilesIn = (M: Operand, N: Operand): Operand => {
    const tm = tilesOf(cx, M, tb.m);
    const tn = tilesOf(cx, N, tb.n);
    if (tm.kind === "imm" && tn.kind === "imm") return imm(tm.value * tn.value);
    return cx.bin("mul", "u32", tm, tn);
  };

  // Every problem's tiles: the last entry's tiles_before plus its own tiles.
  b.emit(ir.comment("grouped: tiles of all problems, from the last entry"));
  const total = cx.mov("u32", imm(0), "total");
  b.if(cx.setp("ne", "u32", count, imm(0)), true, () => {
    const last = entryAddr(cx, table, cx.bin("sub", "u32", count, imm(1)), layout.entryBytes);
    const before = loadU32(cx, last, tbField);
    const t = tilesIn(dimAt(last, k.problem.m), dimAt(last, k.problem.n));
    b.emit(ir.bin("add", "u32", total, before, t));
  });
  // This block's tiles: blockIdx.x + i * gridDim.x below total.
  const t0 = cx.b.readSreg("ctaid.x", "bx");
  const nct = cx.b.readSreg("nctaid.x", "nbx");
  const ahead = cx.bin("sub", "u32", cx.bin("max", "u32", total, t0), t0);
  const iters = cx.bin(
    "div",
    "u32",
    cx.bin("add", "u32", ahead, cx.bin("sub", "u32", nct, imm(1))),
    nct,
    "iters",
  );
  // The search's rounds: the bits of count (each round halves the range, rounded up).
  const steps = cx.mov("u32", imm(0), "steps");
  const bit = b.reg("u32", "bit");
  b.for(bit, imm(0), imm(32), 1, () => {
    const nz = cx.setp("ne", "u32", cx.bin("shr", "u32", count, bit), imm(0));
    const one = b.reg("u32");
    b.emit(ir.selp("u32", one, imm(1), imm(0), nz));
    b.emit(ir.bin("add", "u32", steps, steps, one));
  });
  const g = cx.mov("u32", imm(0), "g");
  const i = b.reg("u32", "i");
  b.for(i, imm(0), iters, 1, () => {
    const t = b.reg("u32", "t");
    b.emit(ir.mad("u32", t, i, nct, t0));
    // The last problem whose tiles_before <= t, searched in [g, count).
    b.emit(ir.comment("grouped: find the tile's problem"));
    const hi = cx.mov("u32", count, "hi");
    const round = b.reg("u32");
    b.for(round, imm(0), steps, 1, () => {
      const span = cx.bin("sub", "u32", hi, g);
      b.if(cx.setp("gt", "u32", span, imm(1)), true, () => {
        const mid = cx.bin("add", "u32", g, cx.bin("shr", "u32", span, imm(1)));
        const before = loadU32(cx, entryAddr(cx, table, mid, layout.entryBytes), tbField);
        const q = cx.setp("le", "u32", before, t);
        b.emit(ir.selp("u32", g, mid, g, q));
        b.emit(ir.selp("u32", hi, hi, mid, q));
      });
    });
    // The problem's fields: the ordinary kernel's parameters, for this tile.
    b.emit(ir.comment("grouped: the problem's sizes, tensors and strides"));
    const e = entryAddr(cx, table, g, layout.entryBytes);
    for (const f of layout.fields) {
      if (f.kind !== "tiles_before") cx.params.set(f.name, loadU32(cx, e, f, f.name));
    }
    const local = cx.bin("sub", "u32", t, loadU32(cx, e, tbField), "local");
    const M = cx.dim(k.problem.m);
    const N = cx.dim(k.problem.n);
    const K = cx.dim(k.problem.k);
    // M-fastest within the problem: blocks running at once share B's tile columns.
    const tilesM = tilesOf(cx, M, tb.m);
    const tilesN = tilesOf(cx, N, tb.n);
    const tileM = cx.bin("rem", "u32", local, tilesM, "tileM");
    const tileN = cx.bin("div", "u32", local, tilesM, "tileN");
    // A table whose tiles_before disagree with its sizes runs no tile out of range.
    b.if(cx.setp("lt", "u32", tileN, tilesN), true, () => {
      tile({
        m0: cx.mulImm(tileM, tb.m, "m0"),
        n0: cx.mulImm(tileN, tb.n, "n0"),
        M,
        N,
        K,
      });
    });
    // The next tile's copies reuse the shared memory this tile's epilogue read.
    b.emit(ir.bar());
  });
}
