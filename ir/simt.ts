/**
 * The SIMT "instruction" of `math f32`: one warp-wide outer-product step of
 * depth 1, written as a row of the MMA table would be (a synthetic
 * {@link MmaShape}) so that the lowering's fragment loads, accumulators and
 * epilogue serve it unchanged. Lane `l` owns a TM x TN micro-tile of the
 * warp tile at rows `(l >> 2) * TM + i` and columns `(l & 3) * TN + j`
 * (8 x 4 lanes); per k it loads TM values of A and TN of B from shared memory
 * and issues TM * TN `fma.rn.f32`. No tensor cores.
 *
 * @module
 */

import type { FragmentMap, MmaShape } from "./mma_table.ts";

/** The name prefix of SIMT plans (`plan.mma.shape`). */
export const SIMT_PREFIX = "simt.f32";

/**
 * The synthetic shape of a SIMT warp tile.
 *
 * @param warpM The warp tile's M (a multiple of 8).
 * @param warpN The warp tile's N (a multiple of 4).
 * @returns The shape: m = warpM, n = warpN, k = 1.
 */
export function simtShape(warpM: number, warpN: number): MmaShape {
  if (warpM % 8 !== 0 || warpN % 4 !== 0) {
    throw new Error(`SIMT warp tile ${warpM}x${warpN}: M must be a multiple of 8, N of 4`);
  }
  const TM = warpM / 8;
  const TN = warpN / 4;
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
    coord: (lane: number, reg: number, elem: number) => {
      if (lane < 0 || lane > 31 || reg < 0 || reg >= regs || elem !== 0) {
        throw new RangeError(`SIMT fragment: lane ${lane}, reg ${reg}, elem ${elem}`);
      }
      return coord(lane, reg);
    },
  });
  return {
    name: `${SIMT_PREFIX}.${TM}x${TN}`,
    m: warpM,
    n: warpN,
    k: 1,
    aType: "f32",
    bType: "f32",
    cType: "f32",
    satfinite: false,
    a: map("a", warpM, 1, TM, (l, r) => [(l >> 2) * TM + r, 0]),
    b: map("b", 1, warpN, TN, (l, r) => [0, (l & 3) * TN + r]),
    c: map(
      "c",
      warpM,
      warpN,
      TM * TN,
      (l, r) => [(l >> 2) * TM + Math.floor(r / TN), (l & 3) * TN + (r % TN)],
    ),
    ptx: "fma.rn.f32",
    regBits: 32,
  };
}
