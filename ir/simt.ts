/**
 * The SIMT "instruction" of `math f32`: one warp-wide outer-product step of
 * depth 1 over a cell of the warp tile, written as a row of the MMA table
 * would be (a synthetic {@link MmaShape}) so that the lowering's fragment
 * loads, accumulators and epilogue serve it as they serve an MMA's tiles. No
 * tensor cores.
 *
 * Lane `l` (g = l >> 2 of 8, tig = l & 3 of 4) owns a TM x TN micro-tile of
 * the warp tile (TM = warpM / 8, TN = warpN / 4), interleaved in runs of `vA`
 * rows and `vB` columns (4, or the largest power of two dividing TM, TN): the
 * cell is 8·vA x 4·vB, the lane's part of it vA x vB at rows `g·vA + i` and
 * columns `tig·vB + j`, and the warp tile holds (TM / vA) x (TN / vB) cells.
 * Per k and cell a lane loads vA values of A and vB of B from shared memory
 * and issues vA·vB `fma.rn.f32`. A run is one vector load (`ld.shared.v4`)
 * where the operand's tile is M- or N-contiguous in shared memory, and the
 * lanes of one load read consecutive 16-byte chunks (128 bytes for A, 64 for
 * B): no bank conflicts. (A lane-contiguous micro-tile, rows `g·TM + i`,
 * would put B's 4-lane runs 64 bytes apart: 2-way conflicts for 16-byte
 * loads; and one cell per warp made the epilogue's batches of loads, which
 * go by cells, a whole warp tile deep: 64 loads ahead spilled.)
 *
 * @module
 */

import type { FragmentMap, MmaShape } from "./mma_table.ts";

/** The name prefix of SIMT plans (`plan.mma.shape`). */
export const SIMT_PREFIX = "simt.f32";

/** The run of a micro-tile side of `t` registers: 4, 2 or 1, whichever divides it. */
function runOf(t: number): number {
  return t % 4 === 0 ? 4 : t % 2 === 0 ? 2 : 1;
}

/**
 * The synthetic shape of a SIMT warp tile's cell.
 *
 * @param warpM The warp tile's M (a multiple of 8).
 * @param warpN The warp tile's N (a multiple of 4).
 * @returns The cell's shape (m = 8·vA, n = 4·vB, k = 1), named
 *   `simt.f32.TMxTN` by the lane's whole micro-tile.
 */
export function simtShape(warpM: number, warpN: number): MmaShape {
  if (warpM % 8 !== 0 || warpN % 4 !== 0) {
    throw new Error(`SIMT warp tile ${warpM}x${warpN}: M must be a multiple of 8, N of 4`);
  }
  const TM = warpM / 8;
  const TN = warpN / 4;
  const vA = runOf(TM);
  const vB = runOf(TN);
  const m = 8 * vA;
  const n = 4 * vB;
  const map = (
    operand: "a" | "b" | "c",
    rows: number,
    cols: number,
    regs: number,
    coord: (l: number, r: number) => readonly [number, number],
  ): FragmentMap => ({
    operand,
    dtype: "f32",
    rows,
    cols,
    regs,
    elemsPerReg: 1,
    regBits: 32,
    regType: "f32",
    coord: (lane: number, reg: number, elem: number) => {
      if (lane < 0 || lane > 31 || reg < 0 || reg >= regs || elem !== 0) {
        throw new RangeError(`SIMT fragment: lane ${lane}, reg ${reg}, elem ${elem}`);
      }
      return coord(lane, reg);
    },
  });
  return {
    name: `${SIMT_PREFIX}.${TM}x${TN}`,
    m,
    n,
    k: 1,
    aType: "f32",
    bType: "f32",
    cType: "f32",
    satfinite: false,
    a: map("a", m, 1, vA, (l, r) => [(l >> 2) * vA + r, 0]),
    b: map("b", 1, n, vB, (l, r) => [0, (l & 3) * vB + r]),
    c: map(
      "c",
      m,
      n,
      vA * vB,
      (l, r) => [(l >> 2) * vA + Math.floor(r / vB), (l & 3) * vB + (r % vB)],
    ),
    ptx: "fma.rn.f32",
    regBits: 32,
  };
}
