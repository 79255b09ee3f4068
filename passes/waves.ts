/**
 * Tile shapes weighed by how well their waves fill the SMs (passes/tile.ts): each type's
 * candidates against its default tile, with the speed per tile-time measured for each, and the
 * choice among them for a known (or hinted) M x N.
 *
 * @module
 */

import type { Shape3 } from "../ir/gemm.ts";

/**
 * Tiles {@link waveAwareTile} weighs against the 128x256 default (16-bit and
 * tf32 MMAs; warps of 80x64, 64x80, 96x64 or 64x96, with interleaved
 * fragment loads), each with its speed per tile-time relative to 128x256:
 * measured on the H200 by alternating launches of the two kernels (same
 * power state; bench/NOTES.md 16): 160x256 and 256x160 +2.0-2.6% at 8192^3
 * although they waste 1.4% more of the waves, so 1.035; 192x256 and 256x192
 * 1.01.
 */
export type WaveTile = { readonly m: number; readonly n: number; readonly speed: number };
export const WAVE_TILES: readonly WaveTile[] = [
  { m: 160, n: 256, speed: 1.035 },
  { m: 256, n: 160, speed: 1.035 },
  { m: 192, n: 256, speed: 1.01 },
  { m: 256, n: 192, speed: 1.01 },
];

/**
 * The same for 8-bit MMAs (s8, u8): 160x256 (80x64 warps) ran at 1.004 of
 * 128x256 at 8192^3 under one power state (bench/NOTES.md 18), so speed 1;
 * 192x256 lost 3.5% (entry 14) and 256x160 was not measured: left out.
 */
export const WAVE_TILES_8BIT: readonly WaveTile[] = [{ m: 160, n: 256, speed: 1 }];

/**
 * The same for SIMT f32 (`math f32`) against its 128x128 default, on twice
 * the SMs' slots (two blocks an SM): 128x64 (4 warps) ran at 0.956 of it at
 * 4096^3, where both fill their waves alike, and took 5000^3 from 0.74 to
 * 0.84 of cuBLAS's f32 GEMM (7 waves of 128x128 for 6.06 worth;
 * bench/NOTES.md 43); at 5000^3 128x64 is faster in the other layouts too
 * (nt 1.114, nn 1.076, tt 1.083, alternating launches; NOTES 46). The
 * slots are counted as two blocks an SM also where the lowering keeps one
 * (B alone transposed by 4-byte cp.async; a shortcut).
 */
export const WAVE_TILES_SIMT: readonly WaveTile[] = [{ m: 128, n: 64, speed: 0.956 }];

/**
 * The same for sm90's 16-bit wgmma tiles against their 128x256 default (passes/tile_sm90.ts `wgmmaFallback`):
 * 128x224, whose rows of 28 vectors the staged epilogue reads back by 32 lanes
 * (`StagingPlan.readLanes`). Measured on an H100 with cuBLAS in the run (bench/NOTES.md 83, f16
 * burst): 606 against 593 TFLOP/s at 5000³ and 694 against 658 at 1024x14336x4096, where the
 * waves alone would give 14% (7 waves of 920 tiles against 7 of 800, 4 of 512 against 4 of 448):
 * so a tile-time of 128x224 does 0.89-0.92 of 128x256's work, speed 0.9. At 8192³ (18 waves
 * against 16) that keeps 128x256. bf16 measured the same in one call (NOTES 84, against 128x256
 * on clusters of 2): 5000³ 602 / 581 against 599 / 555 burst / sustained, 1024x14336x4096 700 /
 * 625 against 663 / 594. tf32 and the 8-bit types keep their defaults.
 */
export const WAVE_TILES_WGMMA: readonly WaveTile[] = [{ m: 128, n: 224, speed: 0.9 }];

/**
 * The fraction of the SMs' tile-time that computes the problem, for M x N
 * in tiles of tm x tn on `sms` SMs running one block each: partial tiles and
 * the idle SMs of the last wave are the waste.
 */
export function waveUse(m: number, n: number, tm: number, tn: number, sms: number): number {
  const tiles = Math.ceil(m / tm) * Math.ceil(n / tn);
  return (m * n) / (Math.ceil(tiles / sms) * sms * tm * tn);
}

/**
 * The default tile for a known (or hinted) M x N: the one among 128x256 and
 * {@link WAVE_TILES} with the most work per tile-time over the waves (its
 * wave use times its speed), 128x256 unless another is 1% ahead. On the
 * H200's 132 SMs: 8192^3 160x256, 5000^3 160x256 (7 waves of 128x256
 * against 5), 4096^3 and 6144^3 128x256 (192x256 ties at 6144^3).
 */
export function waveAwareTile(
  tb: Shape3,
  m: number,
  n: number,
  sms: number,
  tiles: readonly WaveTile[] = WAVE_TILES,
): Shape3 {
  let best = tb;
  let bestScore = waveUse(m, n, tb.m, tb.n, sms) * 1.01;
  for (const t of tiles) {
    const score = waveUse(m, n, t.m, t.n, sms) * t.speed;
    if (score > bestScore) {
      best = { m: t.m, n: t.n, k: tb.k };
      bestScore = score;
    }
  }
  return best;
}
