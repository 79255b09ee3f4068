/**
 * The shared-memory bank model: how many wavefronts a warp-wide access
 * takes. The simulator counts conflicts with it (backends/sim), and the
 * pass gemm-epilogue-staging picks the padding of the epilogue's staging
 * layout with it (passes/epilogue_staging.ts `stagingPlan`), so the layout is
 * conflict-free by the very counter the tests read.
 *
 * @module
 */

/** Wavefronts an access took, and how many a conflict-free one would take. */
export interface WavefrontTally {
  wavefronts: number;
  ideal: number;
}

const COUNT = new Int32Array(32);
const WORDS = new Int32Array(32 * 128);

/**
 * Adds the wavefronts of one warp-level shared access to `into`: lanes
 * `0..n-1` of `addrs` (negative: an inactive lane) each access `bytes` bytes.
 * The warp is served in phases of 128 bytes' worth of lanes (32 lanes for
 * accesses of 4 bytes or less, 16 for 8 bytes, 8 for 16 bytes); a phase
 * needs as many wavefronts as the most distinct 4-byte words any one of the
 * 32 banks holds (lanes sharing a word are served together), and ideally
 * `ceil(distinct words / 32)`.
 */
export function tallyWavefronts(
  addrs: ArrayLike<number>,
  n: number,
  bytes: number,
  into: WavefrontTally,
): void {
  const per = bytes >= 16 ? 8 : bytes === 8 ? 16 : 32;
  for (let p = 0; p < n; p += per) {
    COUNT.fill(0);
    let distinct = 0;
    let worst = 0;
    const end = Math.min(n, p + per);
    for (let l = p; l < end; l++) {
      const a = addrs[l]!;
      if (a < 0) continue;
      const w1 = (a + bytes - 1) >> 2;
      for (let w = a >> 2; w <= w1; w++) {
        const b = w & 31;
        const c = COUNT[b]!;
        let seen = false;
        for (let i = 0; i < c; i++) {
          if (WORDS[b * 128 + i] === w) {
            seen = true;
            break;
          }
        }
        if (seen) continue;
        WORDS[b * 128 + c] = w;
        COUNT[b] = c + 1;
        distinct++;
        if (c + 1 > worst) worst = c + 1;
      }
    }
    if (distinct > 0) {
      into.wavefronts += worst;
      into.ideal += Math.ceil(distinct / 32);
    }
  }
}
