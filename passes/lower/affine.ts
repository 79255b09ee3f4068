/**
 * Per-thread affine recipes (an address as a constant plus multiples of lane, warp and
 * thread features) and the swizzled shared-memory offsets of operand tiles, with the
 * sharing of base registers between recipes a constant apart.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { type OperandSmem, unreachable } from "../../ir/gemm.ts";
import type { Operand, Reg } from "../../ir/kernel.ts";
import { type Feature, log2, type LowerContext } from "./context.ts";
import * as ir from "../../ir/builder.ts";

/** An affine recipe: value = c + sum(coef * feature). */
export interface Affine {
  readonly c: number;
  readonly terms: readonly (readonly [Feature, number])[];
}

/** An affine recipe's coefficient of feature `f`. */
export function termOf(a: Affine, f: Feature): number {
  return a.terms.find(([g]) => g === f)?.[1] ?? 0;
}

/** `s * a`. */
export function scaleAffine(a: Affine, s: number): Affine {
  return { c: a.c * s, terms: a.terms.map(([f, c]) => [f, c * s]) };
}

/**
 * A per-lane quantity as `c + cg * g + ct * tig` (g = lane >> 2, tig = lane &
 * 3), as every MMA and SIMT fragment map is.
 *
 * @param f The quantity of each lane.
 * @param what What it is, for the error where it is not affine.
 * @returns The affine form.
 */
export function laneAffine(f: (lane: number) => number, what: string): Affine {
  const c0 = f(0);
  const cg = f(4) - c0;
  const ct = f(1) - c0;
  for (let l = 0; l < 32; l++) {
    if (f(l) !== c0 + cg * (l >> 2) + ct * (l & 3)) {
      throw new Error(`${what} is not affine in (g, tig)`);
    }
  }
  return { c: c0, terms: [["g", cg], ["tig", ct]] };
}

/** A shared-memory location recipe: (row, byte in row) of an operand tile. */
export interface SmemRecipe {
  readonly row: Affine;
  readonly byte: Affine;
}

/** The swizzled, stage-relative byte offset of (row, byte) in an operand tile. */
export function swizzleOffset(p: OperandSmem, row: number, byte: number): number {
  const rowChunks = p.rowBytes / 16;
  const linear = row * rowChunks + (byte >> 4);
  const phys = linear ^ (((linear >> p.swizzleShift) * p.swizzleScale) & 7);
  return p.offset + phys * 16 + (byte & 15);
}

/** The most distinct feature tuples {@link groupRecipes} tells apart by table. */
const MAX_THREAD_KEYS = 4096;

/**
 * The value of an index feature on one thread.
 *
 * @param cx The lowering's context.
 * @param f The feature.
 * @param tid The thread.
 * @param lineCopies The copies per line of the operand whose copies use
 *   `tidHi` (`tid / lineCopies`) and `tidLo` (`tid % lineCopies`); 0 where
 *   no recipe uses them.
 * @returns Its value.
 */
function featureValue(cx: LowerContext, f: Feature, tid: number, lineCopies: number): number {
  const lane = tid & 31;
  const warp = tid >> 5;
  const wp = cx.k.plan.warp!;
  switch (f) {
    case "lane7":
      return lane & 7;
    case "lane8":
      return (lane >> 3) & 1;
    case "lane16":
      return (lane >> 4) & 1;
    case "g":
      return lane >> 2;
    case "tig":
      return lane & 3;
    case "wm":
      return warp % wp.warpsM;
    case "wn":
      return Math.floor(warp / wp.warpsM);
    case "warp":
      return warp;
    case "tidHi":
    case "tidLo":
      if (lineCopies === 0) throw new Error(`lower-kernel: a recipe uses ${f} outside the copies`);
      return f === "tidHi" ? tid >> log2(lineCopies) : tid & (lineCopies - 1);
    case "tid":
      return tid;
    default:
      return unreachable(f);
  }
}

/** Emits `a` for this thread as a u32 register. */
export function emitAffine(cx: LowerContext, a: Affine): Operand {
  let acc: Operand | null = null;
  for (const [f, c] of a.terms) {
    if (c === 0) continue;
    const fr = cx.features.get(f)!;
    if (acc === null) {
      acc = c === 1 ? fr : cx.bin("mul", "u32", fr, imm(c));
    } else {
      const dst = cx.b.reg("u32");
      cx.b.emit(ir.mad("u32", dst, fr, imm(c), acc));
      acc = dst;
    }
  }
  if (acc === null) return imm(a.c);
  return a.c === 0 ? acc : cx.bin("add", "u32", acc, imm(a.c));
}

/** Emits the swizzled offset of a recipe: a u32 register. */
function emitSwizzled(cx: LowerContext, p: OperandSmem, r: SmemRecipe): Reg {
  const row = emitAffine(cx, r.row);
  const byte = emitAffine(cx, r.byte);
  const rowChunks = p.rowBytes / 16;
  const chunk = byte.kind === "imm" ? imm(byte.value >> 4) : cx.bin("shr", "u32", byte, imm(4));
  const linear = cx.b.reg("u32");
  cx.b.emit(ir.mad("u32", linear, row, imm(rowChunks), chunk));
  const hi0 = cx.bin("shr", "u32", linear, imm(p.swizzleShift));
  const hi = p.swizzleScale === 1 ? hi0 : cx.bin("shl", "u32", hi0, imm(log2(p.swizzleScale)));
  const m = cx.bin("and", "u32", hi, imm(7));
  const phys = cx.bin("xor", "u32", linear, m);
  const off = cx.bin("shl", "u32", phys, imm(4));
  const inChunk: Operand = byte.kind === "imm"
    ? imm(byte.value & 15)
    : cx.bin("and", "u32", byte, imm(15));
  const withIn = inChunk.kind === "imm" && inChunk.value === 0
    ? off
    : cx.bin("add", "u32", off, inChunk);
  return cx.bin("add", "u32", withIn, imm(p.offset), "smemoff");
}

/**
 * The features' values on every thread and the threads that tell every
 * distinct tuple of those values apart (the first such thread of each:
 * thread 0 comes first); every other thread repeats one of these. Beyond
 * {@link MAX_THREAD_KEYS} tuples, every thread.
 *
 * @param cx The lowering's context.
 * @param features The features the recipes use.
 * @param lineCopies See {@link featureValue}.
 * @returns Each feature's value by thread, and the threads to evaluate.
 */
function distinctThreads(
  cx: LowerContext,
  features: Iterable<Feature>,
  lineCopies: number,
): { cols: Map<Feature, Int32Array>; tids: number[] } {
  const threads = cx.threads;
  const cols = new Map<Feature, Int32Array>();
  const key = new Int32Array(threads);
  let keys = 1;
  for (const f of features) {
    if (cols.has(f)) continue;
    const col = new Int32Array(threads);
    let lo = Infinity;
    let hi = -Infinity;
    for (let t = 0; t < threads; t++) {
      const v = featureValue(cx, f, t, lineCopies);
      col[t] = v;
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
    cols.set(f, col);
    const span = hi - lo + 1;
    keys *= span;
    if (keys <= MAX_THREAD_KEYS) {
      for (let t = 0; t < threads; t++) key[t] = key[t]! * span + (col[t]! - lo);
    }
  }
  const tids: number[] = [];
  if (keys <= MAX_THREAD_KEYS) {
    const seen = new Uint8Array(keys);
    for (let t = 0; t < threads; t++) {
      if (seen[key[t]!] === 0) {
        seen[key[t]!] = 1;
        tids.push(t);
      }
    }
  } else {
    for (let t = 0; t < threads; t++) tids.push(t);
  }
  return { cols, tids };
}

/**
 * Shares base registers between recipes whose offsets differ by one
 * constant for every thread: returns, per recipe, a base register and an
 * immediate offset.
 *
 * @param cx The lowering's context.
 * @param p The operand's shared-memory layout.
 * @param recipes The recipes.
 * @param smemBase The shared memory's base.
 * @param lineCopies See {@link featureValue} (0: the recipes use neither `tidHi` nor `tidLo`).
 * @returns Per recipe, its base register and offset.
 */
export function groupRecipes(
  cx: LowerContext,
  p: OperandSmem,
  recipes: readonly SmemRecipe[],
  smemBase: Reg,
  lineCopies = 0,
): { base: Reg; offset: number }[] {
  // The offsets are functions of the features the recipes use, so they are
  // evaluated on one thread per distinct tuple of those features' values.
  // (Evaluating every term of every recipe for every thread was most of the
  // lowering's time for SIMT kernels, with their many recipes.)
  const used = recipes.flatMap((r) => [...r.row.terms, ...r.byte.terms].map(([f]) => f));
  const { cols, tids } = distinctThreads(cx, used, lineCopies);
  const n = tids.length;
  // A recipe's affine parts are evaluated as their constant plus the sum of
  // their terms, kept per distinct list of terms (recipes differ mostly in
  // the constant). The values are small integers or multiples of 1/8, so
  // the sums are exact in any order.
  const sums: { terms: Affine["terms"]; sum: Float64Array }[] = [];
  const termSum = (terms: Affine["terms"]): Float64Array => {
    for (const e of sums) {
      if (
        e.terms.length === terms.length &&
        e.terms.every(([f, c], j) => f === terms[j]![0] && c === terms[j]![1])
      ) {
        return e.sum;
      }
    }
    const sum = new Float64Array(n);
    for (const [f, c] of terms) {
      if (c === 0) continue;
      const col = cols.get(f)!;
      for (let i = 0; i < n; i++) sum[i]! += c * col[tids[i]!]!;
    }
    sums.push({ terms, sum });
    return sum;
  };
  const offs = new Int32Array(recipes.length * n);
  recipes.forEach((r, i) => {
    const rowC = r.row.c;
    const byteC = r.byte.c;
    const rows = termSum(r.row.terms);
    const bytes = termSum(r.byte.terms);
    for (let t = 0; t < n; t++) {
      offs[i * n + t] = swizzleOffset(p, rowC + rows[t]!, byteC + bytes[t]!);
    }
  });
  const reps: { at: number; base: Reg }[] = [];
  return recipes.map((r, i) => {
    const at = i * n;
    for (const rep of reps) {
      const d = offs[at]! - offs[rep.at]!;
      let same = true;
      for (let t = 1; t < n && same; t++) same = offs[at + t]! - offs[rep.at + t]! === d;
      // The same base, a constant apart; a negative offset is not an
      // address form the kernel IR takes (found by tests/fuzz.ts: a SIMT
      // warp 16x80 orders its recipes so that a later one lies below).
      if (same && d >= 0) return { base: rep.base, offset: d };
    }
    const off = emitSwizzled(cx, p, r);
    const base = cx.bin("add", "u32", smemBase, off, "sbase");
    reps.push({ at, base });
    return { base, offset: 0 };
  });
}
