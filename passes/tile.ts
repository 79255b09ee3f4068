/**
 * `gemm-tile`: the threadblock tile, the rasterisation swizzle, split-K, and
 * which dimensions may leave partial tiles.
 *
 * Defaults per type start from CUTLASS's Ampere recommendations (TF32/BF16
 * 128x128x32, FP16 128x256x32, INT8 128x256x64, FP64 64x64x16, INT4
 * 128x256x128, B1 128x256x512), changed where measurements on the H200 said
 * so (BF16 128x256x32, TF32 128x256x16; see {@link defaultThreadblock}), and
 * shrink M or N when a compile-time size is small, so that a skinny problem
 * does not compute mostly padding.
 *
 * @module
 */

import type { DimRef, GemmKernel, Shape3, TilePlan } from "../ir/gemm.ts";
import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import { WORKSPACE_PARAM } from "../ir/kernel.ts";

/**
 * The default threadblock tile for an MMA operand type.
 *
 * @param t The type the MMA consumes (`math.mmaA`).
 * @returns M x N x K.
 */
export function defaultThreadblock(t: Dtype): Shape3 {
  switch (t) {
    case "f16":
    case "bf16":
      // Measured on the H200 (bench/results/2026-11-29-h200-variants1.txt): 128x256x32
      // beats 128x128x32 by 10-20% for both 16-bit types at 4096^3 and 8192^3.
      return { m: 128, n: 256, k: 32 };
    case "tf32":
    case "f32":
      // Same run: 128x256x16 with 5 stages beat 128x128x32 (244 vs 201 TFLOPS at 8192^3).
      return { m: 128, n: 256, k: 16 };
    case "f64":
      return { m: 64, n: 64, k: 16 };
    case "s8":
    case "u8":
      return { m: 128, n: 256, k: 64 };
    case "s4":
    case "u4":
      return { m: 128, n: 256, k: 128 };
    case "b1":
      return { m: 128, n: 256, k: 512 };
    default:
      throw new Error(`No default tile for "${t}"`);
  }
}

/**
 * The default rasterisation group: 8 (CUTLASS's identity swizzle with
 * groups of 8 tile columns, which kept more of A and B in L2 on the H200:
 * +2% at 8192^3, +14% at 4096^3 for f16), fewer when a compile-time N has
 * fewer tile columns.
 *
 * @param tilesN Tile columns when N is a compile-time size, else null.
 * @returns 1, 2, 4 or 8.
 */
export function defaultSwizzle(tilesN: number | null): number {
  if (tilesN === null) return 8;
  let s = 1;
  while (s < 8 && s < tilesN) s *= 2;
  return s;
}

/**
 * Whether an operand is aligned to less than 4 bytes, so that its tiles are
 * copied synchronously, one element per load and store (no cp.async).
 *
 * @param k The kernel.
 * @returns True when A or B needs synchronous copies.
 */
export function hasSyncCopies(k: GemmKernel): boolean {
  return [k.problem.a.tensor, k.problem.b.tensor].some((n) => {
    const t = k.params.find((q) => q.name === n);
    return t !== undefined && t.kind === "tensor" && t.align * DTYPE_INFO[t.dtype].bits < 32;
  });
}

/** Blocks a default tile should give at least, when the sizes are known:
 * the SM count of an A100, the chip sm_80 was made for. */
export const MIN_BLOCKS = 108;

/** The SM count the default tile assumes when the compile options give
 * none: an A100's. */
export const DEFAULT_SMS = 108;

/**
 * Tiles {@link waveAwareTile} weighs against the 128x256 default (16-bit and
 * tf32 MMAs; warps of 80x64, 64x80, 96x64 or 64x96, with interleaved
 * fragment loads), each with its speed per tile-time relative to 128x256:
 * measured on the H200 by alternating launches of the two kernels (same
 * power state; bench/NOTES.md 16): 160x256 and 256x160 +2.0-2.6% at 8192^3
 * although they waste 1.4% more of the waves, so 1.035; 192x256 and 256x192
 * 1.01.
 */
type WaveTile = { readonly m: number; readonly n: number; readonly speed: number };
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

/**
 * The default split-K for a known (or hinted) problem whose default tiles
 * leave most SMs idle: split K over about as many blocks as fill the SMs
 * once (at most 8), when each split keeps at least 32 k-tiles. Measured on
 * the H200 at M=128, N=K=8192 (bench/NOTES.md 19, alternating launches):
 * 128x256 tiles with split_k 4 against the small-grid tile 128x64 with 8
 * warps: tf32 +44%, bf16 +5%, f16 +3%; s8 -7% (so s8 keeps the small-grid
 * tile); split_k 8 (two blocks per SM's worth) -23% for f16. Skinny 16-bit
 * TN problems whose 128x64 grid fills the SMs take a deep 128x64 tile
 * instead (`deep16` in the pass; bench/NOTES.md 30).
 *
 * @param tiles Output tiles of the default tile.
 * @param kTiles k-tiles of K.
 * @param sms SMs of the GPU.
 * @returns split_k (1: none).
 */
export function defaultSplitK(tiles: number, kTiles: number, sms: number): number {
  if (2 * tiles > sms) return 1;
  const s = Math.min(8, Math.floor(sms / tiles), Math.floor(kTiles / 32));
  return s >= 2 ? s : 1;
}

/**
 * Whether a 16-bit GEMM's operands are both K-contiguous with rows that do
 * not start on 32-byte sectors (K * 2 bytes not a multiple of 32): then each
 * 64-byte row of a 32-deep k-tile touches three sectors half the time
 * instead of two. A 64-deep k-tile (3 stages) halves that waste: on the
 * H200 at 5000^3 (rows of 10000 bytes) +5% for f16 and +7% for bf16 under
 * one power state, while at K=5008 (aligned rows) it loses 1.3%
 * (bench/NOTES.md 22). Measured for A row-major and B column-major only;
 * other types and layouts keep their k-tile (a shortcut).
 */
export function misalignedRows(k: GemmKernel, K: number): boolean {
  const t = k.math.mmaA;
  if (t !== "f16" && t !== "bf16") return false;
  const kContig = k.problem.a.layout === "row" && k.problem.b.layout === "col";
  return kContig && (K * 2) % 32 !== 0;
}

/**
 * An operand whose M (A) or N (B) side is contiguous in memory is copied into
 * shared memory in rows of the tile's M (N) extent, and the copies and the
 * swizzle find their row and column with shifts and masks: that extent must
 * be a power of two (160- and 192-wide tiles are for K-contiguous operands).
 *
 * @returns Null when the tile fits, else the diagnostic's message.
 */
export function mnContiguousPow2(k: GemmKernel, tm: number, tn: number): string | null {
  const pow2 = (v: number) => (v & (v - 1)) === 0;
  for (
    const [ax, v, contiguous, op] of [
      ["M", tm, k.problem.a.layout === "col", k.problem.a.tensor],
      ["N", tn, k.problem.b.layout === "row", k.problem.b.tensor],
    ] as const
  ) {
    if (contiguous && !pow2(v)) {
      return `Threadblock ${tm}x${tn}: ${op} is ${ax}-contiguous, so the tile's ${ax} extent ` +
        `${v} must be a power of two (only K-contiguous operands take tiles such as 160 or 192)`;
    }
  }
  return null;
}

function shrink(tile: number, size: number | null, min: number): number {
  if (size === null) return tile;
  let t = tile;
  while (t > min && size <= t / 2) t /= 2;
  return t;
}

/** The pass. */
export const tilePass: GemmPass = {
  name: "gemm-tile",
  title: "Tile",
  summary: "Choose the threadblock tile, rasterisation swizzle and split-K; plan partial tiles",
  run(k: GemmKernel): GemmKernel {
    const p = k.problem;
    // Sizes known at compile time, or expected (size hints): they shape the defaults.
    const constOf = (d: DimRef): number | null =>
      d.kind === "const" ? d.value : k.sizeHints?.[d.name] ?? null;
    let tb = k.schedule.threadblock;
    let smallGrid = false;
    let autoSplitK = 1;
    if (tb === undefined) {
      // 3xtf32 needs twice the fragment registers: a 128x64 tile of 4 warps of 64x32 (two
      // blocks an SM) ran +1.5% over 128x128 (8 such warps, one block an SM) at 4096^3 and
      // +7.5% at 5000^3 on the H200 (bench/NOTES.md 43); 32 deep (4 stages, half the
      // barriers per MMA) +3.4% at 4096^3 and +3.5% at 8192^3 over 16 deep (NOTES 47).
      // Operands aligned to less than 4 bytes are copied synchronously, one
      // element per load and store (no cp.async): a 128x128 tile keeps the
      // copies per thread (and their registers) in bounds.
      const syncCopy = hasSyncCopies(k);
      // SIMT f32 (math f32): CUTLASS's sgemm tile.
      const d = k.math.mode === "simt"
        ? { m: 128, n: 128, k: 8 }
        : k.math.mode === "3xtf32"
        ? { m: 128, n: 64, k: 32 }
        : syncCopy
        ? { m: 128, n: 128, k: defaultThreadblock(k.math.mmaA).k }
        : defaultThreadblock(k.math.mmaA);
      const minM = k.math.mmaA === "f64" ? 32 : 64;
      const mc = constOf(p.m);
      const nc = constOf(p.n);
      const kc = constOf(p.k);
      // Tensor-core MMAs fed by cp.async: what the size-driven choices below apply to.
      const asyncTensor = !syncCopy && k.math.mode === "tensor";
      const is16 = k.math.mmaA === "f16" || k.math.mmaA === "bf16";
      tb = { m: shrink(d.m, mc, minM), n: shrink(d.n, nc, minM), k: d.k };
      // With both sizes known, keep at least one block per SM of an A100
      // (108): halve the larger side of the tile while the grid is smaller,
      // down to 64 (skinny problems such as M=128, N=K=8192).
      const blocks = (t: Shape3) =>
        mc === null || nc === null ? Infinity : Math.ceil(mc / t.m) * Math.ceil(nc / t.n);
      let shrunk = tb;
      while (blocks(shrunk) < MIN_BLOCKS && (shrunk.m > minM || shrunk.n > minM)) {
        shrunk = shrunk.n >= shrunk.m && shrunk.n > minM
          ? { ...shrunk, n: shrunk.n / 2 }
          : { ...shrunk, m: shrunk.m / 2 };
      }
      // A skinny 16-bit problem (K-contiguous A and B) with a long K whose
      // tile shrinks to 128x64 or 64x128 with a grid that fills the SMs
      // streams its K-contiguous rows from DRAM: a 128-deep k-tile (256
      // bytes of each row per stage, 3 stages) with 4 warps of 64x32 beat
      // split_k 4 of 128x256 by 6.7% (f16) and 5.6% (bf16) at M=128,
      // N=K=8192 on the H200, each kernel timed alone (bench/NOTES.md 30).
      // Measured at that shape and layout only (a shortcut).
      const deep16 = mc !== null && nc !== null && kc !== null && asyncTensor && is16 &&
        k.problem.a.layout === "row" && k.problem.b.layout === "col" &&
        kc >= 16 * 4 * d.k && shrunk.m * shrunk.n === 128 * 64 && blocks(shrunk) >= MIN_BLOCKS;
      // Few tiles and a long K (skinny problems): split K rather than shrink
      // the tile (tf32 and other 16-bit problems, f32 accumulators; defaultSplitK).
      // SIMT f32 too: its shrunk 128x64 tile has 4 warps, one block an SM at
      // M=128, N=K=8192, and ran at 0.43 of cuBLAS's f32 GEMM on the H200;
      // 128x128 tiles split 4 ways 0.81, 8 ways 0.82, 128x64 split 2 ways
      // 0.69 (bench/NOTES.md 43). Its 128x128 tile runs two blocks an SM
      // (Lowering.minBlocksPerSm), so the split fills twice the SMs: a
      // shortcut where the lowering keeps one block (operands aligned below
      // 16 bytes; nn, whose B alone is copied by 4-byte cp.async), which then
      // gets twice the split it would need.
      const simt = k.math.mode === "simt" && !syncCopy;
      if (
        mc !== null && nc !== null && kc !== null && k.schedule.splitK === undefined &&
        ((asyncTensor && k.math.acc === "f32" && !deep16 &&
          (is16 || k.math.mmaA === "tf32")) || simt)
      ) {
        const tiles = Math.ceil(mc / tb.m) * Math.ceil(nc / tb.n);
        const slots = (k.sms ?? DEFAULT_SMS) * (simt ? 2 : 1);
        autoSplitK = defaultSplitK(tiles, Math.ceil(kc / tb.k), slots);
        // SIMT: at most 4 ways. The last split's reduction of 8 spilled 8-12 bytes at the
        // 128 registers of two blocks an SM (tests/ptxas_sweep.ts), and split 8 measured no
        // faster than 4 (39.5 against 39.1 TFLOPS at M=128, N=K=8192).
        if (simt) autoSplitK = Math.min(4, autoSplitK);
      }
      if (autoSplitK === 1) tb = shrunk;
      const smallerTile = tb.m * tb.n < d.m * d.n;
      // A shrunk 8-bit tile with a long K is latency-bound on its loads:
      // a 256-deep k-tile (3 stages, 144 KB) keeps 4x the bytes in flight.
      // M=128, N=K=8192 s8 on the H200, alternating launches: 400 -> 595
      // TOPS (1.49; 128-deep with 5 stages 1.46; bench/NOTES.md 23).
      // Measured at that shape only (a shortcut).
      const deep8 = kc !== null && asyncTensor &&
        (k.math.mmaA === "s8" || k.math.mmaA === "u8") && smallerTile && kc >= 16 * 4 * d.k;
      // A shrunk 16-bit tile (about one block per SM, each with a long K)
      // is latency-bound: a 64-deep k-tile halves the barriers and doubles
      // the bytes in flight per stage (with 32x32 warps, gemm-warp): M=128,
      // N=K=8192 f16 went from 0.29 to 0.40 of the ceiling on the H200
      // (bench/NOTES.md 11). tf32 and s8 measured no gain.
      smallGrid = !deep16 && asyncTensor && is16 && smallerTile;
      if (deep16 || deep8) tb = { ...tb, k: 4 * d.k };
      else if (smallGrid) tb = { ...tb, k: 2 * tb.k };
      else if (
        autoSplitK === 1 && mc !== null && nc !== null && asyncTensor &&
        tb.m === d.m && tb.n === d.n
      ) {
        const a = k.math.mmaA;
        const table = a === "f16" || a === "bf16" || a === "tf32"
          ? WAVE_TILES
          : a === "s8" || a === "u8"
          ? WAVE_TILES_8BIT
          : [];
        // Only tiles whose M (N) extent is a power of two where A (B) is
        // M- (N-) contiguous (mnContiguousPow2).
        const fits = (t: WaveTile) => mnContiguousPow2(k, t.m, t.n) === null;
        tb = waveAwareTile(tb, mc, nc, k.sms ?? DEFAULT_SMS, table.filter(fits));
      } else if (
        autoSplitK === 1 && mc !== null && nc !== null && simt && tb.m === d.m && tb.n === d.n
      ) {
        // Two blocks an SM (Lowering.minBlocksPerSm): twice the SMs' slots.
        tb = waveAwareTile(tb, mc, nc, 2 * (k.sms ?? DEFAULT_SMS), WAVE_TILES_SIMT);
      }
      if (
        !smallGrid && kc !== null && asyncTensor &&
        misalignedRows(k, kc) && tb.k === 32
      ) tb = { ...tb, k: 64 };
    }
    // K is a power of two (the k-loop counts tiles with a shift). M and N
    // may be any multiple of 16 and 8: 192x256 tiles of 96x64 warps read
    // fewer shared-memory and L2 bytes per MMA than any power-of-two tile
    // whose accumulators fit (bench/NOTES.md 14); the warp pass checks that
    // warps divide them.
    if ((tb.k & (tb.k - 1)) !== 0) {
      scheduleError(
        k,
        "threadblock",
        "E0209",
        `Threadblock ${tb.m}x${tb.n}x${tb.k}: the K extent ${tb.k} is not a power of two`,
      );
    }
    if (tb.m < 16 || tb.n < 8) {
      scheduleError(
        k,
        "threadblock",
        "E0209",
        `Threadblock ${tb.m}x${tb.n}x${tb.k} is smaller than one MMA (16x8)`,
      );
    }
    const notPow2 = mnContiguousPow2(k, tb.m, tb.n);
    if (notPow2 !== null) scheduleError(k, "threadblock", "E0209", notPow2);
    for (const [ax, v, q] of [["M", tb.m, 16], ["N", tb.n, 8]] as const) {
      if (v % q !== 0) {
        scheduleError(
          k,
          "threadblock",
          "E0209",
          `Threadblock ${tb.m}x${tb.n}x${tb.k}: the ${ax} extent ${v} is not a multiple of ${q}`,
        );
      }
    }
    const nConst = constOf(p.n);
    const swizzle = k.schedule.swizzle ??
      defaultSwizzle(nConst === null ? null : Math.ceil(nConst / tb.n));
    const splitK = k.schedule.splitK ?? autoSplitK;
    if (splitK > 1) {
      // A declared K only: a hinted K may differ at run time, and splits
      // without k-tiles add zeros.
      const kc = p.k.kind === "const" ? p.k.value : null;
      if (kc !== null && Math.ceil(kc / tb.k) < splitK) {
        scheduleError(
          k,
          "split_k",
          "E0207",
          `"split_k ${splitK}" exceeds the ${
            Math.ceil(kc / tb.k)
          } k-tiles of K=${kc} (tile K ${tb.k})`,
        );
      }
      if (k.params.some((q) => q.name === WORKSPACE_PARAM) || k.dims.includes(WORKSPACE_PARAM)) {
        scheduleError(
          k,
          "split_k",
          "E0212",
          `"split_k ${splitK}" adds a parameter named "${WORKSPACE_PARAM}": rename the kernel's "${WORKSPACE_PARAM}"`,
        );
      }
    }
    const partial = (d: DimRef, t: number) => d.kind === "sym" || d.value % t !== 0;
    const tile: TilePlan = {
      threadblock: tb,
      swizzle,
      splitK,
      partial: { m: partial(p.m, tb.m), n: partial(p.n, tb.n), k: partial(p.k, tb.k) },
      ...(smallGrid ? { smallGrid: true as const } : {}),
    };
    return {
      ...k,
      schedule: { ...k.schedule, threadblock: tb, swizzle, splitK },
      plan: { ...k.plan, tile },
    };
  },
};
