/**
 * sm90's default tiles beyond the skinny rule (passes/skinny.ts): the warpgroup MMA's tile
 * (passes/wgmma.ts `wgmmaDefaultTile`) where a wave of it fills more than
 * {@link WGMMA_WAVE_FILL} of the SMs (8-bit floats: at any size), 16-bit ones given the width of
 * passes/waves.ts `WAVE_TILES_WGMMA` whose waves fill the SMs better; 128x128 where one wave of it
 * fills nearly all the SMs ({@link WGMMA_FULL_WAVE}), or where the default's grid fills at most
 * that share and 128x128's more; a smaller grid falls back to the sm80 target's mma.sync tile
 * (passes/tile_sm80.ts). {@link wgmmaFallback} decides, for passes/tile.ts `defaultTile`.
 *
 * @module
 */

import type { GemmKernel, Shape3 } from "../ir/gemm.ts";
import { WAVE_TILES_WGMMA, waveAwareTile } from "./waves.ts";
import { targetInfo } from "../ir/target.ts";
import { shapeText } from "../ir/print_gemm.ts";
import { wgmmaDefaultTile, wgmmaOnly, wgmmaRowFor } from "./wgmma.ts";
import { type ChosenTile, gridBlocks, type TileContext } from "./tile_context.ts";

/**
 * The share of the SMs a grid of sm90's wgmma tiles must fill, more than, for the tile to be taken
 * ({@link wgmmaFallback}): half, for the default 128x256 and then for 128x128. Above it 128x128
 * needs two waves where 128x256 needs one, and one wave of the wide tile won (f16, K = 4096,
 * TFLOP/s burst / sustained; bench/NOTES.md 82, 84): on the H200 128 blocks (M = 1024, N = 4096)
 * 704 / 605 against 626 / 556 for 128x128; on an H100 112 blocks (M = 896) 641 / 583 against 542 /
 * 508, 96 (M = 768) 578 / 514 against 471 / 451, 80 (M = 640) 488 / 453 against 419 / 400, 70 (M
 * = 640, N = 3584) 426 / 417 against 376 / 374 (at the last three the wave rule's 128x224 ran
 * faster still: 617 / 552, 540 / 487, 476 / 457). Where 128x256 fills at most half, one wave of
 * 128x128 that fills more than half beat the sm80 target's tile (H100, M = 512, N = 4096: 128
 * blocks, 548 burst against 351 for 128x256x32 split 2). Below, the sm80 target's tile.
 */
export const WGMMA_WAVE_FILL = 1 / 2;

/**
 * The share of the SMs one wave of 128x128 must fill, at least, to be taken over a default tile
 * whose grid is also one wave but fills fewer ({@link wgmmaFallback}). Measured on an H100 (s8,
 * 512x4096x4096, TFLOP/s burst / sustained, cuBLAS in each run; bench/NOTES.md 85): 128 blocks of
 * 128x128x128 916.9 / 900.0 against 76 of the default 128x224x128, 698.1 / 712.0 (and 723.5 /
 * 870.1 against 689.6 / 715.4 in a disturbed earlier run). Where 128x128 takes two waves the wide
 * tile wins (640 rows: 813 against 680; 768: 956 against 781). Other types reach this only
 * where N / 128 is odd (M = 512, N = 4224: 68 blocks of 128x256 or 128x224 against 132 of
 * 128x128), measured there on the same H100 against the tile each replaced: f16 557.6 / 520.6
 * against 128x224's 452.7 / 432.5 (NOTES 85), bf16 554.2 / 533.4 against 128x224's 448.5 / 444.9,
 * tf32 294.6 / 278.6 against 128x256x32's 214.3 / 218.0 (NOTES 88). u8 is inferred from s8.
 */
export const WGMMA_FULL_WAVE = 15 / 16;

/**
 * sm90's warpgroup MMA (passes/wgmma.ts) where a wave of its tiles fills the SMs (more than
 * {@link WGMMA_WAVE_FILL} of them): the default tile, else 128x128 where a wave of those fills
 * more than that share; 128x128 also where both grids are one wave and 128x128's fills
 * {@link WGMMA_FULL_WAVE} of the SMs. A smaller grid keeps the mma.sync tile the sm80 target
 * chooses on the same GPU, with its minimum grid (108 blocks, measured on the H200's 132 SMs):
 * at M = 256, N = K = 4096 sm90's own minimum of 132 blocks gave 128x256x32 split 4 (32.0 µs)
 * where sm80's 128x64x128 ran 26.5 (NOTES 69; a shortcut of issue 23: no wgmma tile there).
 */
export function wgmmaFallback(
  k: GemmKernel,
  c: TileContext,
): { tile: ChosenTile } | { ctx: TileContext } {
  const tb = wgmmaDefaultTile(k);
  const narrow = { ...tb, n: 128 };
  const blocks = gridBlocks(c, tb), narrowBlocks = gridBlocks(c, narrow);
  const narrowTile = (why: string) => ({ tile: { tb: narrow, smallGrid: false, splitK: 1, why } });
  const hasNarrow = tb.n > 128 && wgmmaRowFor(k, narrow) !== null;
  const oneWaveEach = blocks <= c.sms && narrowBlocks <= c.sms;
  const def = `the ${k.math.mmaA} wgmma default ${shapeText(tb)}`;
  if (hasNarrow && oneWaveEach && narrowBlocks >= WGMMA_FULL_WAVE * c.sms && !wgmmaOnly(k)) {
    return narrowTile(
      `one wave of 128x128 (${narrowBlocks} blocks on ${c.sms} SMs) fills 15/16 of them where ` +
        `${def}'s ${blocks} blocks fill fewer (WGMMA_FULL_WAVE)`,
    );
  }
  // 8-bit floats have no mma.sync plan: wgmma tiles at any size (a shortcut: unshrunk).
  if (blocks > WGMMA_WAVE_FILL * c.sms || wgmmaOnly(k)) {
    const t = wgmmaWaveWidth(k, c, tb);
    const grid = blocks === Infinity
      ? "sizes unknown"
      : `its ${blocks} blocks fill more than half of ${c.sms} SMs (WGMMA_WAVE_FILL)`;
    const why = `${def}: ${wgmmaOnly(k) ? "8-bit floats have no mma.sync plan" : grid}` +
      (t.n !== tb.n
        ? `; ${t.m}x${t.n} wide, whose waves fill the SMs better (WAVE_TILES_WGMMA)`
        : "");
    return { tile: { tb: t, smallGrid: false, splitK: 1, why } };
  }
  if (hasNarrow && narrowBlocks > WGMMA_WAVE_FILL * c.sms) {
    return narrowTile(
      `128x128: ${def}'s ${blocks} blocks fill at most half of ${c.sms} SMs, 128x128's ` +
        `${narrowBlocks} more (WGMMA_WAVE_FILL)`,
    );
  }
  return {
    ctx: {
      ...c,
      minBlocks: targetInfo("sm80").minBlocks,
      why: `wgmma tiles would fill at most half of ${c.sms} SMs (WGMMA_WAVE_FILL): ` +
        `the sm80 target's mma.sync tile`,
    },
  };
}

/**
 * The width of sm90's default 16-bit wgmma tile over known M and N: 128x256, or a tile of
 * {@link WAVE_TILES_WGMMA} where its waves fill the SMs enough better ({@link waveAwareTile}).
 */
function wgmmaWaveWidth(k: GemmKernel, c: TileContext, tb: Shape3): Shape3 {
  const sixteen = k.math.mmaA === "f16" || k.math.mmaA === "bf16";
  if (!sixteen || tb.n !== 256 || c.mc === null || c.nc === null) return tb;
  const t = waveAwareTile(tb, c.mc, c.nc, c.sms, WAVE_TILES_WGMMA);
  return wgmmaRowFor(k, t) !== null ? t : tb;
}
