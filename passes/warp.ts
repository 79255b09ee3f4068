/**
 * `gemm-warp`: the warp tile, the number of warps and threads, and which
 * sub-tile each warp computes. Default warp tile 64x64 (32x32 for f64) on the
 * M x N face, clipped to the threadblock; the warp's K is the tile's K.
 *
 * @module
 */

import type { GemmKernel, Shape3, WarpPlan } from "../ir/gemm.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import { hasSyncCopies } from "./tile.ts";

/** The pass. */
export const warpPass: GemmPass = {
  name: "gemm-warp",
  title: "WarpPartition",
  summary: "Partition the threadblock tile among warps; fix the thread count",
  run(k: GemmKernel): GemmKernel {
    const tb = k.plan.tile!.threadblock;
    let warp: Shape3 = k.schedule.warp ?? (() => {
      // 64x64 (CUTLASS's Ampere default); f64 32x32; 3xtf32 64x32, since the
      // split operands (big and small parts) need twice the fragment registers.
      // Tiles that are not multiples of 64 (160, 192: passes/tile.ts) split
      // in two warps along that side (80 or 96 rows or columns each).
      const half = (t: number) => (t % 64 === 0 || t % 32 !== 0 ? 64 : t / 2);
      const dm = k.math.mmaA === "f64" ? 32 : half(tb.m);
      // Synchronous copies (operands aligned below 4 bytes) hold their data in
      // registers too: 64x32 warps (202 registers for align-1 f16, no spills).
      const dn = k.math.mmaA === "f64" || k.math.mode === "3xtf32" || hasSyncCopies(k)
        ? 32
        : half(tb.n);
      const w = k.math.mode === "simt"
        ? { m: Math.min(32, tb.m), n: Math.min(64, tb.n), k: tb.k } // 4 x 16 per thread
        : { m: Math.min(dm, tb.m), n: Math.min(dn, tb.n), k: tb.k };
      // Small tiles: keep at least 4 warps (halving the warp tile down to 32)
      // so that the SM has warps to switch between; 8 for a shrunk 16-bit
      // tile (bench/NOTES.md 11).
      const minWarps = k.plan.tile!.smallGrid ? 8 : 4;
      while ((tb.m / w.m) * (tb.n / w.n) < minWarps && (w.m > 32 || w.n > 32)) {
        if (w.n >= w.m && w.n > 32) w.n /= 2;
        else w.m /= 2;
      }
      return w;
    })();
    if (warp.k !== tb.k) {
      scheduleError(
        k,
        "warp",
        "E0201",
        `Warp tile ${warp.m}x${warp.n}x${warp.k} must span the threadblock's K (${tb.k}): ` +
          `warps split only M and N`,
      );
    }
    if (tb.m % warp.m !== 0 || tb.n % warp.n !== 0) {
      scheduleError(
        k,
        ["warp", "threadblock"],
        "E0201",
        `Threadblock ${tb.m}x${tb.n}x${tb.k} is not divisible by warp ${warp.m}x${warp.n}x${warp.k}`,
      );
    }
    const warpsM = tb.m / warp.m;
    const warpsN = tb.n / warp.n;
    const threads = warpsM * warpsN * 32;
    if (threads > 1024) {
      scheduleError(
        k,
        ["warp", "threadblock"],
        "E0205",
        `${warpsM * warpsN} warps (${threads} threads) per block exceed 1024 threads: ` +
          `use a larger warp tile or a smaller threadblock`,
      );
    }
    warp = { ...warp };
    const plan: WarpPlan = { warp, warpsM, warpsN, threads };
    return { ...k, schedule: { ...k.schedule, warp }, plan: { ...k.plan, warp: plan } };
  },
};
