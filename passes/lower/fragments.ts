/**
 * Fragment loads from shared memory: the plan of every load of a warp tile (ldmatrix,
 * ldmatrix.trans, or ld.shared runs) and their emission, whole or interleaved with the MMAs.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import type { FragmentLoad, OperandSmem } from "../../ir/gemm.ts";
import type { Reg } from "../../ir/kernel.ts";
import type { MmaShape } from "../../ir/mma_table.ts";
import { isSparseShape } from "../../ir/mma_sparse.ts";
import { type Affine, groupRecipes, laneAffine, scaleAffine, type SmemRecipe } from "./affine.ts";
import type { Feature, LowerContext } from "./context.ts";
import * as ir from "../../ir/builder.ts";

interface FragInstr {
  /** The tile for `lds` (its registers consecutive); -1 for ldmatrix groups (regs are flat indices). */
  readonly tile: number;
  readonly kk: number;
  readonly regs: readonly number[];
  readonly num: number;
  readonly trans: boolean;
  readonly recipe: SmemRecipe;
}

/** Every fragment load of an operand's warp tile, as {@link fragSetup} plans them. */
export interface FragPlan {
  readonly instrs: readonly FragInstr[];
  readonly bases: readonly { base: Reg; offset: number }[];
  readonly regBits: 32 | 64;
  readonly regsPerTile: number;
  readonly load: "ldmatrix" | "ldmatrix.trans" | "lds";
}

/**
 * Fragment registers that one `ld.shared` (`.v2`/`.v4`) can load together:
 * runs of 4 (else 2) consecutive registers that sit at consecutive elements
 * along a contiguous outer dimension, at the same k, the run's first element
 * aligned to the run's bytes for every lane and warp (so that a 16-byte run
 * is one swizzle chunk). The SIMT micro-tiles are laid out for this
 * (ir/simt.ts); the tensor-core fragments that come by `ld.shared` (f64,
 * M/N-contiguous tf32) have no such runs and load one register at a time.
 *
 * @param fitted Per register, its (outer, k) position affine in (g, tig).
 * @param regBits The register width.
 * @param contiguous The operand tile's contiguous dimension.
 * @param strides Other steps the outer position takes (warp and tile origins).
 * @returns The registers of each load, in order.
 */
export function ldsRuns(
  fitted: readonly (readonly [Affine, Affine])[],
  regBits: number,
  contiguous: "k" | "outer",
  strides: readonly number[],
): number[][] {
  const runs: number[][] = [];
  const same = (a: Affine, b: Affine) =>
    a.terms.length === b.terms.length &&
    a.terms.every(([f, c], i) => f === b.terms[i]![0] && c === b.terms[i]![1]);
  const fits = (r: number, n: number): boolean => {
    if (contiguous !== "outer" || regBits !== 32 || r + n > fitted.length) return false;
    const [o0, k0] = fitted[r]!;
    if (o0.c % n !== 0 || o0.terms.some(([, c]) => c % n !== 0)) return false;
    if (strides.some((s) => s % n !== 0)) return false;
    for (let i = 1; i < n; i++) {
      const [o, kk] = fitted[r + i]!;
      if (o.c !== o0.c + i || !same(o, o0) || kk.c !== k0.c || !same(kk, k0)) return false;
    }
    return true;
  };
  for (let r = 0; r < fitted.length;) {
    const n = fits(r, 4) ? 4 : fits(r, 2) ? 2 : 1;
    runs.push(Array.from({ length: n }, (_, i) => r + i));
    r += n;
  }
  return runs;
}

/** An operand's fragment geometry in its warp tile (see {@link fragGeometry}). */
interface FragGeometry {
  readonly role: "A" | "B";
  readonly frag: MmaShape["a"];
  /** Bits of one element. */
  readonly bits: number;
  /** Rows (A) or columns (B) of one MMA tile, and MMA tiles in the warp tile. */
  readonly tileOuter: number;
  readonly tiles: number;
  /** Rows (A) or columns (B) of the warp tile. */
  readonly warpOuter: number;
  /** Elements of the tile along K that one k-step reads (a sparse A's kept values: half the MMA's K). */
  readonly kStep: number;
  /** (outer, k) of a fragment element, in the warp tile, for lane/reg/elem. */
  readonly at: (lane: number, reg: number, elem: number) => [number, number];
  /** Converts (outer, kElem) plus the warp's origin into an smem (row, byte) recipe. */
  readonly toRecipe: (outer: Affine, kE: Affine) => SmemRecipe;
}

/**
 * An operand's fragment geometry.
 *
 * @param cx The lowering's context.
 * @param role Which operand.
 * @param p The operand's shared-memory tile.
 * @returns The geometry.
 */
function fragGeometry(cx: LowerContext, role: "A" | "B", p: OperandSmem): FragGeometry {
  const wp = cx.k.plan.warp!;
  const frag = role === "A" ? cx.shape.a : cx.shape.b;
  const bits = DTYPE_INFO[role === "A" ? cx.k.math.a : cx.k.math.b].bits;
  const tileOuter = role === "A" ? cx.shape.m : cx.shape.n;
  const tiles = role === "A" ? wp.warp.m / cx.shape.m : wp.warp.n / cx.shape.n;
  const warpFeat: Feature = role === "A" ? "wm" : "wn";
  const warpOuter = role === "A" ? wp.warp.m : wp.warp.n;
  const kStep = role === "A" && isSparseShape(cx.shape) ? cx.shape.k / 2 : cx.shape.k;
  const at = (lane: number, reg: number, elem: number): [number, number] => {
    const [r, c] = frag.coord(lane, reg, elem);
    return role === "A" ? [r, c] : [c, r];
  };
  const toRecipe = (outer: Affine, kE: Affine): SmemRecipe => {
    const o: Affine = { c: outer.c, terms: [...outer.terms, [warpFeat, warpOuter]] };
    return p.contiguous === "k"
      ? { row: o, byte: scaleAffine(kE, bits / 8) }
      : { row: kE, byte: scaleAffine(o, bits / 8) };
  };
  return { role, frag, bits, tileOuter, tiles, warpOuter, kStep, at, toRecipe };
}

/**
 * Plans every fragment load of a warp tile: per (tile, k-step) instruction,
 * its recipe.
 *
 * @param cx The lowering's context.
 * @param role Which operand.
 * @param p The operand's shared-memory tile.
 * @param load How fragments are loaded.
 * @param smem The shared memory's base.
 * @returns The plan, with the base registers of its addresses (emitted).
 */
export function fragSetup(
  cx: LowerContext,
  role: "A" | "B",
  p: OperandSmem,
  load: FragmentLoad,
  smem: Reg,
): FragPlan {
  // A wgmma reads its tiles itself (passes/lower/wgmma.ts): a compiler bug to get here.
  if (load === "wgmma") throw new Error("lower-kernel: a wgmma tile has no fragment loads");
  const g = fragGeometry(cx, role, p);
  const instrs = load === "lds"
    ? ldsInstrs(cx, g, p)
    : ldmatrixInstrs(cx, g, load === "ldmatrix.trans");
  const bases = groupRecipes(cx, p, instrs.map((i) => i.recipe), smem);
  return { instrs, bases, regBits: g.frag.regBits, regsPerTile: g.frag.regs, load };
}

/**
 * The ld.shared loads of an operand's fragments: runs of registers
 * ({@link ldsRuns}) per tile and k-step.
 *
 * @param cx The lowering's context.
 * @param g The operand's fragment geometry.
 * @param p The operand's shared-memory tile.
 * @returns The loads.
 */
function ldsInstrs(cx: LowerContext, g: FragGeometry, p: OperandSmem): FragInstr[] {
  const { role, frag, tileOuter, tiles, warpOuter, at, toRecipe } = g;
  const mp = cx.k.plan.mma!;
  const instrs: FragInstr[] = [];
  // (outer, k) of each register, affine in g and tig; the same for every tile and k-step.
  const what = `Fragment map of ${cx.shape.name} ${role}`;
  const fitted: [Affine, Affine][] = Array.from(
    { length: frag.regs },
    (
      _,
      r,
    ) => [laneAffine((l) => at(l, r, 0)[0], what), laneAffine((l) => at(l, r, 0)[1], what)],
  );
  const runs = ldsRuns(fitted, frag.regBits, p.contiguous, [warpOuter, tileOuter]);
  for (let t = 0; t < tiles; t++) {
    for (let kk = 0; kk < mp.kSteps; kk++) {
      for (const run of runs) {
        const [outer, kE] = fitted[run[0]!]!;
        instrs.push({
          tile: t,
          kk,
          regs: run,
          num: run.length,
          trans: false,
          recipe: toRecipe(
            { c: outer.c + t * tileOuter, terms: outer.terms },
            { c: kE.c + kk * g.kStep, terms: kE.terms },
          ),
        });
      }
    }
  }
  return instrs;
}

/**
 * The ldmatrix loads of an operand's fragments: each register one 8x8 b16
 * matrix, checked against what ldmatrix delivers, grouped four (else two or
 * one) to an instruction per k-step.
 *
 * @param cx The lowering's context.
 * @param g The operand's fragment geometry.
 * @param trans Whether the matrices are transposed.
 * @returns The loads.
 */
function ldmatrixInstrs(cx: LowerContext, g: FragGeometry, trans: boolean): FragInstr[] {
  const { frag, tileOuter, tiles, at, toRecipe } = g;
  const mp = cx.k.plan.mma!;
  const instrs: FragInstr[] = [];
  // Each register is one 8x8 b16 matrix; find the (outer, k) origin of each.
  const originOf = (r: number): [number, number] => {
    let o = Infinity;
    let kk = Infinity;
    for (let l = 0; l < 32; l++) {
      for (let e = 0; e < frag.elemsPerReg; e++) {
        const [a, c] = at(l, r, e);
        o = Math.min(o, a);
        kk = Math.min(kk, c);
      }
    }
    return [o, kk];
  };
  // Memoised: the grouping below asks again for every tile and k-step.
  const origins: [number, number][] = [];
  const origin = (r: number): [number, number] => (origins[r] ??= originOf(r));
  checkLdmatrix(cx, g, origin, trans);
  // Group matrices into x4 (or x2/x1) instructions: all (tile, reg) of one k-step.
  for (let kk = 0; kk < mp.kSteps; kk++) {
    const mats: { tile: number; reg: number; o: number; k: number }[] = [];
    for (let t = 0; t < tiles; t++) {
      for (let r = 0; r < frag.regs; r++) {
        const [o0, k0] = origin(r);
        mats.push({ tile: t, reg: r, o: o0 + t * tileOuter, k: k0 + kk * g.kStep });
      }
    }
    for (let i = 0; i < mats.length;) {
      const num = mats.length - i >= 4 ? 4 : mats.length - i >= 2 ? 2 : 1;
      const group = mats.slice(i, i + num);
      i += num;
      // Lane l addresses row (l & 7) of matrix (l >> 3) % num.
      const pick = (bit: 0 | 1, f: (m: { o: number; k: number }) => number): number => {
        const m0 = group[0]!;
        const m1 = group[bit === 0 ? 1 : 2];
        return m1 === undefined ? 0 : f(m1) - f(m0);
      };
      // Check affine in (lane8, lane16) bits.
      const g0 = group[0]!;
      const dO8 = num >= 2 ? pick(0, (m) => m.o) : 0;
      const dK8 = num >= 2 ? pick(0, (m) => m.k) : 0;
      const dO16 = num === 4 ? pick(1, (m) => m.o) : 0;
      const dK16 = num === 4 ? pick(1, (m) => m.k) : 0;
      if (num === 4) {
        const g3 = group[3]!;
        if (g3.o !== g0.o + dO8 + dO16 || g3.k !== g0.k + dK8 + dK16) {
          throw new Error("ldmatrix matrices are not affine in the lane bits");
        }
      }
      const outer: Affine = trans
        ? { c: g0.o, terms: [["lane8", dO8], ["lane16", dO16]] }
        : { c: g0.o, terms: [["lane7", 1], ["lane8", dO8], ["lane16", dO16]] };
      const kE: Affine = trans
        ? { c: g0.k, terms: [["lane7", 1], ["lane8", dK8], ["lane16", dK16]] }
        : { c: g0.k, terms: [["lane8", dK8], ["lane16", dK16]] };
      instrs.push({
        tile: -1,
        kk,
        regs: group.map((m) => m.tile * frag.regs + m.reg),
        num,
        trans,
        recipe: toRecipe(outer, kE),
      });
    }
  }
  return instrs;
}

/**
 * Checks that ldmatrix (or ldmatrix.trans) delivers exactly each fragment
 * register of the operand.
 *
 * @param cx The lowering's context.
 * @param g The operand's fragment geometry.
 * @param origin Each register's matrix origin (outer, k).
 * @param trans Whether transposed.
 */
function checkLdmatrix(
  cx: LowerContext,
  g: FragGeometry,
  origin: (r: number) => [number, number],
  trans: boolean,
): void {
  const { role, frag, bits, at } = g;
  for (let r = 0; r < frag.regs; r++) {
    const [o0, k0] = origin(r);
    for (let l = 0; l < 32; l++) {
      for (let e = 0; e < frag.elemsPerReg; e++) {
        const [o, kEl] = at(l, r, e);
        // Position in the 8x8 b16 matrix as stored.
        const bitInRow = (kEl - k0) * bits; // along k
        if (!trans) {
          const storedRow = o - o0;
          const b16col = Math.floor(bitInRow / 16);
          const ok = storedRow === l >> 2 && Math.floor(b16col / 2) === (l & 3) &&
            (bitInRow % 32) === e * bits;
          if (!ok) {
            throw new Error(
              `ldmatrix does not produce the ${cx.shape.name} ${role} fragment`,
            );
          }
        } else {
          // Stored rows are k, columns outer (16-bit types only).
          const ok = bits === 16 && (kEl - k0) === 2 * (l & 3) + e && o - o0 === l >> 2;
          if (!ok) {
            throw new Error(
              `ldmatrix.trans does not produce the ${cx.shape.name} ${role} fragment`,
            );
          }
        }
      }
    }
  }
}

/**
 * The loads of k-step kk's fragments as a function that emits, each time
 * it is called, those not yet emitted whose tiles all pass `ready` (every
 * load at once: `fragLoader(...)(() => true)`).
 */
export function fragLoader(
  cx: LowerContext,
  f: FragPlan,
  buf: Reg[][],
  kk: number,
  readStage: Reg,
  p: OperandSmem,
): (ready: (tile: number) => boolean) => void {
  const tilesOf = (ins: FragInstr): number[] =>
    ins.tile >= 0 ? [ins.tile] : [...new Set(ins.regs.map((r) => Math.floor(r / f.regsPerTile)))];
  const pending = f.instrs.map((ins, i) => [ins, i] as const).filter(([ins]) => ins.kk === kk);
  let stageOff: Reg | null = null;
  const bases = new Map<Reg, Reg>();
  return (ready) => {
    for (let n = 0; n < pending.length;) {
      const [ins, i] = pending[n]!;
      if (!tilesOf(ins).every(ready)) {
        n++;
        continue;
      }
      pending.splice(n, 1);
      stageOff ??= cx.bin("mul", "u32", readStage, imm(p.stageBytes));
      emitFragLoad(cx, f, buf, ins, i, stageOff, bases);
    }
  };
}

function emitFragLoad(
  cx: LowerContext,
  f: FragPlan,
  buf: Reg[][],
  ins: FragInstr,
  i: number,
  stageOff: Reg,
  bases: Map<Reg, Reg>,
): void {
  const { base, offset } = f.bases[i]!;
  let addr = bases.get(base);
  if (addr === undefined) {
    addr = cx.bin("add", "u32", base, stageOff);
    bases.set(base, addr);
  }
  if (f.load === "lds") {
    const dst = ins.regs.map((r) => buf[ins.tile]![r]!);
    cx.b.emit(ir.lds(f.regBits === 64 ? "b64" : "b32", dst, addr, offset));
  } else {
    const flat = buf.flat();
    cx.b.emit(
      ir.ldmatrix(ins.num as 1 | 2 | 4, ins.trans, ins.regs.map((r) => flat[r]!), addr, offset),
    );
  }
}
