/**
 * `gemm-warp`: the warp tile, the number of warps and threads, and which
 * sub-tile each warp computes. Default warp tile 64x64 (32x32 for f64) on the
 * M x N face, clipped to the threadblock; the warp's K is the tile's K.
 *
 * @module
 */

import type { GemmKernel, Shape3, WarpPlan } from "../ir/gemm.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import { hasSyncCopies } from "../ir/gemm.ts";
import { targetInfo } from "../ir/target.ts";

/** The pass. */
export const warpPass: GemmPass = {
  name: "gemm-warp",
  title: "WarpPartition",
  summary: "Partition the threadblock tile among warps; fix the thread count",
  run(k: GemmKernel): GemmKernel {
    const tb = k.plan.tile!.threadblock;
    // A wgmma tile (passes/wgmma.ts): warp w takes 16 rows of its warpgroup's 64, every column.
    const wgmma = k.plan.tile!.wgmma ? { m: 16, n: tb.n, k: tb.k } : undefined;
    // The skinny schedule's warp tile (passes/skinny.ts), else the general default.
    let warp: Shape3 = wgmma ?? k.schedule.warp ?? k.plan.tile!.skinny?.warp ?? (() => {
      // 64x64 (CUTLASS's Ampere default); f64 32x32; 3xtf32 64x32, since the
      // split operands (big and small parts) need twice the fragment registers.
      // The wave-aware tiles' 160- and 192-wide sides (passes/waves.ts) split
      // in two warps along that side (80 or 96 rows or columns each).
      // A side above 64 that neither 64 nor 32 divides (80, 112, 144: user
      // tiles) takes the largest multiple of 16 up to 64 that divides it.
      const half = (t: number) => {
        if (t % 64 === 0) return 64;
        if (t % 32 === 0) return t / 2;
        if (t < 64) return 64;
        let d = 64;
        while (d >= 16 && t % d !== 0) d -= 16;
        return d >= 16 ? d : t;
      };
      const dm = k.math.mmaA === "f64" ? 32 : half(tb.m);
      // Synchronous copies (operands aligned below 4 bytes) hold their data in
      // registers too: 64x32 warps (202 registers for align-1 f16, no spills).
      const dn = k.math.mmaA === "f64" || k.math.mode === "3xtf32" || hasSyncCopies(k)
        ? 32
        : half(tb.n);
      // SIMT: 8 x 8 a lane (8 x 4 lanes), CUTLASS's sgemm thread tile; 4 x 16
      // (32x64) measured 1-17% slower on the H200 (bench/NOTES.md 40).
      const w = k.math.mode === "simt"
        ? { m: Math.min(64, tb.m), n: Math.min(32, tb.n), k: tb.k }
        : { m: Math.min(dm, tb.m), n: Math.min(dn, tb.n), k: tb.k };
      // A 192-wide side in 64-wide warps would make 12 warps of 192x256,
      // more than the register file holds at ~232 registers each with 32-bit
      // accumulators (E0208).
      if (k.math.mode !== "simt" && k.math.acc !== "f16" && (tb.m / w.m) * (tb.n / w.n) > 8) {
        if (tb.m === 192 && w.m === 64) w.m = 96;
        else if (tb.n === 192 && w.n === 64) w.n = 96;
      }
      // Small tiles: keep at least 4 warps (halving the warp tile down to 32)
      // so that the SM has warps to switch between; 8 for a shrunk 16-bit
      // tile (bench/NOTES.md 11).
      const minWarps = k.plan.tile!.smallGrid ? 8 : 4;
      // Halving keeps a side a multiple of 16 that divides the tile.
      const halves = (v: number, t: number) => v > 32 && (v / 2) % 16 === 0 && t % (v / 2) === 0;
      while ((tb.m / w.m) * (tb.n / w.n) < minWarps) {
        if (w.n >= w.m && halves(w.n, tb.n)) w.n /= 2;
        else if (halves(w.m, tb.m)) w.m /= 2;
        else if (halves(w.n, tb.n)) w.n /= 2;
        else break;
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
    const most = targetInfo(k.target).maxThreadsPerBlock;
    if (threads > most) {
      scheduleError(
        k,
        ["warp", "threadblock"],
        "E0205",
        `${warpsM * warpsN} warps (${threads} threads) per block exceed ${most} threads: ` +
          `use a larger warp tile or a smaller threadblock`,
      );
    }
    warp = { ...warp };
    const plan: WarpPlan = { warp, warpsM, warpsN, threads };
    return { ...k, schedule: { ...k.schedule, warp }, plan: { ...k.plan, warp: plan } };
  },
};
