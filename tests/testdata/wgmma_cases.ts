/**
 * Programs that sm90 runs on warpgroup MMAs (passes/wgmma.ts), one per wgmma type and
 * feature, at sizes that are not tile multiples: the GPU test (tests/gpu/wgmma_test.ts)
 * runs them at `size`, the simulator test (tests/wgmma_test.ts) at `simSize`.
 *
 * @module
 */

/** One program. */
export interface WgmmaCase {
  readonly name: string;
  readonly src: string;
  /** The GPU test's sizes (`gemm run --size`). */
  readonly size: string;
  /** The simulator's sizes (smaller: every block is simulated). */
  readonly simSize: Readonly<Record<string, number>>;
}

/** The programs: `D = alpha * A B + beta * C + bias`, relu, cast; s8 to s32 sums. */
export const WGMMA_CASES: readonly WgmmaCase[] = [
  {
    name: "e4m3 x e5m2 with per-row and per-column scales, bf16 out (fp8)",
    src: `kernel wg_fp8_rows {
  A: e4m3[M, K] row
  B: e5m2[K, N] col
  sa: f32[M]
  sb: f32[N]
  D: bf16[M, N] row
  D[m, n] = bf16(sa[m] * sb[n] * A[m, k] * B[k, n])
}`,
    size: "M=300,N=520,K=400",
    simSize: { M: 70, N: 264, K: 272 },
  },
  {
    name: "e4m3 x e4m3 with a per-tensor scale, f16 out (fp8)",
    src: `kernel wg_fp8 {
  A: e4m3[M, K] row
  B: e4m3[K, N] col
  D: f16[M, N] row
  scale: f32 = 0.5
  D[m, n] = f16(scale * A[m, k] * B[k, n])
}`,
    size: "M=264,N=296,K=528",
    simSize: { M: 130, N: 40, K: 144 },
  },
  {
    name: "f16 operands aligned to 8 bytes (the cp.async pipeline, no tensor map)",
    src: `kernel wg_f16_a8 {
  A: f16[M, K] row align 4
  B: f16[K, N] col align 4
  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}`,
    size: "M=200,N=300,K=260",
    simSize: { M: 130, N: 264, K: 204 },
  },
  {
    name: "bf16 batched views with runtime strides (3-D tensor maps), B broadcast",
    src: `kernel wg_views {
  A: bf16[Bt, M, K] row strides(sa, lda)
  B: bf16[K, N] col strides(ldb)
  D: f32[Bt, M, N] row
  D[b, m, n] = A[b, m, k] * B[k, n]
}`,
    size: "Bt=3,M=200,N=300,K=264,sa=60000,lda=272,ldb=280",
    simSize: { Bt: 2, M: 70, N: 264, K: 136, sa: 10240, lda: 144, ldb: 152 },
  },
  {
    name: "f16 -> f32 acc, C and bias, f16 out",
    src: `kernel wg_f16 {
  A: f16[M, K] row
  B: f16[K, N] col
  C: f16[M, N] row
  bias: f32[N]
  D: f16[M, N] row
  alpha: f32 = 1.0
  beta: f32 = 0.0
  D[m, n] = f16(relu(alpha * A[m, k] * B[k, n] + beta * C[m, n] + bias[n]))
}`,
    size: "M=200,N=600,K=264",
    simSize: { M: 130, N: 264, K: 200 },
  },
  {
    name: "f16 -> f16 acc",
    src: `kernel wg_h {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f16[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule { accumulate f16 }
}`,
    size: "M=130,N=264,K=136",
    simSize: { M: 70, N: 264, K: 136 },
  },
  {
    name:
      "f16 -> f16 with a per-column bias on 128x224 tiles (staged rows of 28 vectors, 32 lanes)",
    src: `kernel wg_h224 {
  A: f16[M, K] row
  B: f16[K, N] col
  bias: f32[N]
  D: f16[M, N] row
  D[m, n] = f16(A[m, k] * B[k, n] + bias[n])
  schedule { threadblock 128x224x64 }
}`,
    size: "M=300,N=680,K=392",
    simSize: { M: 136, N: 456, K: 136 },
  },
  {
    name: "bf16 -> f32 acc, f32 out",
    src: `kernel wg_bf16 {
  A: bf16[M, K] row
  B: bf16[K, N] col
  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}`,
    size: "M=333,N=520,K=1000",
    simSize: { M: 133, N: 24, K: 72 },
  },
  {
    name: "tf32",
    src: `kernel wg_tf32 {
  A: f32[M, K] row
  B: f32[K, N] col
  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule { math tf32 }
}`,
    size: "M=190,N=252,K=100",
    simSize: { M: 66, N: 260, K: 100 },
  },
  {
    name: "s8 -> s32",
    src: `kernel wg_s8 {
  A: s8[M, K] row
  B: s8[K, N] col
  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}`,
    size: "M=150,N=400,K=528",
    simSize: { M: 90, N: 200, K: 272 },
  },
  {
    name: "u8 -> s32, split-K 3",
    src: `kernel wg_u8 {
  A: u8[M, K] row
  B: u8[K, N] col
  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule { split_k 3 }
}`,
    size: "M=128,N=192,K=1040",
    simSize: { M: 64, N: 188, K: 528 },
  },
  {
    name: "f16, one warpgroup of 64x128, split-K 2",
    src: `kernel wg_small {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule {
    threadblock 64x128x64
    mma 64x128x16
    stages 3
    split_k 2
  }
}`,
    size: "M=100,N=300,K=520",
    simSize: { M: 70, N: 136, K: 264 },
  },
];

/** One grouped program (DESIGN §6.2) that sm90 runs on warpgroup MMAs by cp.async (a grouped
 * kernel's operands have no tensor map: each problem's addresses are in its table entry). */
export interface WgmmaGroupedCase {
  readonly name: string;
  readonly src: string;
  /** The GPU test's problems (`gemm run --groups`): tiny, empty, odd, several tiles. */
  readonly groups: string;
  /** The simulator's problems. */
  readonly simGroups: readonly Readonly<Record<string, number>>[];
}

/** The grouped programs: each type's wgmma row, a fused epilogue, strided views, fp8. */
export const WGMMA_GROUPED_CASES: readonly WgmmaGroupedCase[] = [
  {
    name: "grouped bf16 experts, C, bias and relu, bf16 out",
    src: `kernel wg_moe grouped {
  X: bf16[M, K] row
  W: bf16[K, N] col
  C: bf16[M, N] row
  bias: f32[N]
  Y: bf16[M, N] row
  alpha: f32 = 1.0
  beta: f32 = 0.5
  Y[m, n] = bf16(relu(alpha * X[m, k] * W[k, n] + beta * C[m, n] + bias[n]))
}`,
    groups: "M=1,N=8,K=8;M=0,N=264,K=136;M=300,N=520,K=264;M=7,N=40,K=72;M=129,N=256,K=1000",
    simGroups: [{ M: 1, N: 8, K: 8 }, { M: 0, N: 40, K: 64 }, { M: 130, N: 264, K: 144 }, {
      M: 9,
      N: 0,
      K: 32,
    }, { M: 65, N: 72, K: 48 }],
  },
  {
    name: "grouped f16 -> f32 with per-problem strides",
    src: `kernel wg_views grouped {
  A: f16[M, K] row strides(lda)
  B: f16[K, N] col strides(ldb)
  D: f32[M, N] row strides(ldd)
  D[m, n] = A[m, k] * B[k, n]
}`,
    groups: "M=200,N=300,K=264,lda=272,ldb=280,ldd=304;M=0,N=8,K=8,lda=8,ldb=8,ldd=8;" +
      "M=5,N=16,K=40,lda=48,ldb=40,ldd=20",
    simGroups: [{ M: 70, N: 264, K: 136, lda: 144, ldb: 152, ldd: 268 }, {
      M: 3,
      N: 8,
      K: 8,
      lda: 16,
      ldb: 8,
      ldd: 12,
    }],
  },
  {
    name: "grouped tf32",
    src: `kernel wg_tf32 grouped {
  A: f32[M, K] row
  B: f32[K, N] col
  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
  schedule { math tf32 }
}`,
    groups: "M=190,N=252,K=100;M=0,N=4,K=4;M=1,N=4,K=4;M=66,N=260,K=36",
    simGroups: [{ M: 66, N: 260, K: 100 }, { M: 1, N: 4, K: 4 }, { M: 0, N: 8, K: 8 }],
  },
  {
    name: "grouped s8 -> s32",
    src: `kernel wg_s8 grouped {
  A: s8[M, K] row
  B: s8[K, N] col
  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}`,
    groups: "M=150,N=400,K=528;M=0,N=16,K=16;M=1,N=4,K=16;M=77,N=228,K=144",
    simGroups: [{ M: 90, N: 232, K: 272 }, { M: 1, N: 4, K: 16 }, { M: 0, N: 16, K: 16 }, {
      M: 5,
      N: 12,
      K: 0,
    }],
  },
  {
    name: "grouped e4m3 x e5m2 with a per-tensor scale, bf16 out (fp8)",
    src: `kernel wg_fp8 grouped {
  A: e4m3[M, K] row
  B: e5m2[K, N] col
  D: bf16[M, N] row
  scale: f32 = 0.25
  D[m, n] = bf16(scale * A[m, k] * B[k, n])
}`,
    groups: "M=264,N=296,K=528;M=0,N=16,K=16;M=3,N=8,K=16;M=130,N=40,K=144",
    simGroups: [{ M: 130, N: 40, K: 144 }, { M: 3, N: 8, K: 16 }, { M: 0, N: 16, K: 16 }],
  },
];

const GEMM = (a: string, d: string, stmt = "D[m, n] = A[m, k] * B[k, n]", sched = SK) =>
  `kernel sk {\n  A: ${a}[M, K] row\n  B: ${a}[K, N] col\n  D: ${d}[M, N] row\n  ${stmt}\n` +
  `${sched === "" ? "" : `  schedule {\n    ${sched}\n  }\n`}}\n`;

/** A bf16 program with every epilogue input (C, bias, relu, alpha, beta) under `sched`. */
const EPILOGUE_GEMM = (sched: string) =>
  `kernel sk {\n  A: bf16[M, K] row\n  B: bf16[K, N] col\n  C: bf16[M, N] row\n` +
  `  bias: f32[N]\n  D: bf16[M, N] row\n  alpha: f32 = 1.0\n  beta: f32 = 0.5\n` +
  `  D[m, n] = bf16(relu(alpha * A[m, k] * B[k, n] + beta * C[m, n] + bias[n]))\n` +
  `  schedule { ${sched} }\n}\n`;

/** An e4m3 -> bf16 program with a scale under `sched`. */
const E4M3_GEMM = (sched: string) =>
  `kernel sk {\n  A: e4m3[M, K] row\n  B: e4m3[K, N] col\n  D: bf16[M, N] row\n` +
  `  s: f32 = 0.5\n  D[m, n] = bf16(s * A[m, k] * B[k, n])\n  schedule { ${sched} }\n}\n`;

/** The schedule line of a Stream-K program. */
const SK = "scheduler stream_k";

/** A Stream-K program (passes/lower/stream_k.ts) compiled for a persistent grid of `sms`
 * blocks, at sizes whose tiles are shared out (or, for two, are not). */
export interface StreamKCase {
  readonly name: string;
  readonly src: string;
  readonly sms: number;
  readonly sizes: Readonly<Record<string, number>>;
}

/** A case: its name, source, blocks and sizes M, N, K. */
const sk = (name: string, src: string, sms: number, M: number, N: number, K: number) => ({
  name,
  src,
  sms,
  sizes: { M, N, K },
});

/** Tiles of 128x256 (8-bit: 128x224): T tiles over `sms` blocks. */
export const STREAM_K_CASES: readonly StreamKCase[] = [
  // 3 x 3 = 9 tiles on 4 blocks: 4 whole, 5 shared out (9 k-tiles each).
  sk("f16 -> f32, 9 tiles on 4", GEMM("f16", "f32"), 4, 300, 600, 520),
  // f16 D: the staged epilogue; K not a k-tile multiple.
  sk(
    "f16 -> f16, 7 tiles on 3",
    GEMM("f16", "f16", "D[m, n] = f16(A[m, k] * B[k, n])"),
    3,
    900,
    200,
    200,
  ),
  // Exactly a multiple: no tile shared out.
  sk("bf16, 8 tiles on 4", GEMM("bf16", "f32"), 4, 256, 1000, 136),
  // Fewer tiles than blocks: a grid of the tiles, none shared out.
  sk("bf16, 2 tiles on 5", GEMM("bf16", "f32"), 5, 200, 100, 72),
  sk(
    "bf16 with C, bias and relu, 6 tiles on 4",
    EPILOGUE_GEMM(SK),
    4,
    130,
    1400,
    264,
  ),
  sk("tf32, 5 tiles on 3", GEMM("f32", "f32", undefined, `math tf32\n    ${SK}`), 3, 640, 100, 200),
  sk("s8 -> s32, 6 tiles on 4", GEMM("s8", "s32"), 4, 300, 400, 1040),
  sk(
    "e4m3 -> bf16, 5 tiles on 4",
    E4M3_GEMM(SK),
    4,
    640,
    200,
    528,
  ),
];

/** The schedule line of a clustered program. */
const CL = "cluster 2";

/** Clusters of 2 (passes/lower/wgmma_ws.ts, issue 23) on a persistent grid of `sms` blocks:
 * tile rows odd and even (a cluster's second tile below the last row), fewer units than
 * clusters, an odd SM count, every epilogue path. Tiles of 128x256 (8-bit: 128x224). */
export const CLUSTER_CASES: readonly StreamKCase[] = [
  // 3 tile rows (2 units, the second's lower tile past M) x 3 columns on 2 clusters.
  sk("f16 -> f32, 6 units on 2 clusters", GEMM("f16", "f32", undefined, CL), 4, 300, 600, 520),
  // f16 D: the staged epilogue; K not a k-tile multiple; 3 SMs: one cluster.
  sk(
    "f16 -> f16, 7 tile rows on 1 cluster",
    GEMM("f16", "f16", "D[m, n] = f16(A[m, k] * B[k, n])", CL),
    3,
    900,
    200,
    200,
  ),
  sk(
    "bf16 with C, bias and relu, 6 units on 3 clusters",
    EPILOGUE_GEMM(CL),
    6,
    130,
    1400,
    264,
  ),
  sk(
    "tf32, 3 units on 2 clusters",
    GEMM("f32", "f32", undefined, `math tf32\n    ${CL}`),
    4,
    640,
    100,
    200,
  ),
  sk("s8 -> s32, 4 units on 2 clusters", GEMM("s8", "s32", undefined, CL), 4, 300, 400, 1040),
  sk(
    "e4m3 -> bf16, 3 units on 2 clusters",
    E4M3_GEMM(CL),
    4,
    640,
    200,
    528,
  ),
  // Batched views with runtime strides: 3-D maps of A, B broadcast (its 2-D map's half box).
  {
    name: "bf16 batched views, B broadcast, 3 batches of 4 units on 2 clusters",
    src:
      `kernel cl {\n  A: bf16[Bt, M, K] row strides(sa, lda)\n  B: bf16[K, N] col strides(ldb)\n` +
      `  D: f32[Bt, M, N] row\n  D[b, m, n] = A[b, m, k] * B[k, n]\n  schedule { ${CL} }\n}\n`,
    sms: 4,
    sizes: { Bt: 3, M: 300, N: 264, K: 136, sa: 45000, lda: 144, ldb: 152 },
  },
  // Both operands batched: B's 3-D map with the half box.
  {
    name: "f16 batched A and B, 3 batches on 2 clusters",
    src: `kernel cl {\n  A: f16[Bt, M, K] row\n  B: f16[Bt, K, N] col\n  D: f16[Bt, M, N] row\n` +
      `  D[b, m, n] = f16(A[b, m, k] * B[b, k, n])\n  schedule { ${CL} }\n}\n`,
    sms: 4,
    sizes: { Bt: 3, M: 130, N: 296, K: 136 },
  },
  // One row: the cluster's second CTA has no tile of its own, and runs for its peer.
  sk("bf16, M = 1, one unit on 2 clusters", GEMM("bf16", "f32", undefined, CL), 4, 1, 264, 136),
];

const CLN = "cluster 1x2";

/** Clusters of 2 along N (A multicast; `cluster 1x2`): as {@link CLUSTER_CASES} with the roles
 * of M and N swapped (tile columns odd, a cluster's second tile right of the last column). */
export const CLUSTER_N_CASES: readonly StreamKCase[] = [
  // 3 tile columns (2 units a row, the second's right tile past N) x 3 rows on 2 clusters.
  sk("f16 -> f32, 6 units on 2 clusters", GEMM("f16", "f32", undefined, CLN), 4, 300, 600, 520),
  // f16 D: the staged epilogue; K not a k-tile multiple; 3 SMs: one cluster.
  sk(
    "f16 -> f16, 4 tile columns on 1 cluster",
    GEMM("f16", "f16", "D[m, n] = f16(A[m, k] * B[k, n])", CLN),
    3,
    200,
    904,
    200,
  ),
  sk(
    "bf16 with C, bias and relu, 6 units on 3 clusters",
    EPILOGUE_GEMM(CLN),
    6,
    264,
    1400,
    136,
  ),
  sk(
    "tf32, 3 units on 2 clusters",
    GEMM("f32", "f32", undefined, `math tf32\n    ${CLN}`),
    4,
    100,
    1400,
    200,
  ),
  sk("s8 -> s32, 4 units on 2 clusters", GEMM("s8", "s32", undefined, CLN), 4, 400, 300, 1040),
  sk("e4m3 -> bf16, 3 units on 2 clusters", E4M3_GEMM(CLN), 4, 200, 1304, 528),
  // Batched views with runtime strides: 3-D maps of A (its half box), B broadcast.
  {
    name: "bf16 batched views, B broadcast, 3 batches of 4 units on 2 clusters",
    src:
      `kernel cl {\n  A: bf16[Bt, M, K] row strides(sa, lda)\n  B: bf16[K, N] col strides(ldb)\n` +
      `  D: f32[Bt, M, N] row\n  D[b, m, n] = A[b, m, k] * B[k, n]\n  schedule { ${CLN} }\n}\n`,
    sms: 4,
    sizes: { Bt: 3, M: 200, N: 904, K: 136, sa: 30000, lda: 144, ldb: 152 },
  },
  // One column: the cluster's second CTA has no tile of its own, and runs for its peer.
  sk("bf16, N = 8, one unit on 2 clusters", GEMM("bf16", "f32", undefined, CLN), 4, 264, 8, 136),
];

/** Ping-pong (`scheduler pingpong`, passes/lower/wgmma_ws.ts): two consumer warpgroups on
 * alternate tiles of a persistent block, every tile one warpgroup's (64 rows): blocks of an
 * odd and an even tile count, a block of one tile (the second warpgroup idle), every epilogue
 * path, clusters, batched maps. */
const PP = (tb: string, extra = "") =>
  `threadblock ${tb}\n    scheduler pingpong${extra === "" ? "" : `\n    ${extra}`}`;

export const PINGPONG_CASES: readonly StreamKCase[] = [
  // 5 x 3 tiles of 64x256 on 4 blocks: 4, 4, 4 and 3 tiles.
  sk(
    "f16 -> f16, 15 tiles on 4 blocks",
    GEMM("f16", "f16", "D[m, n] = f16(A[m, k] * B[k, n])", PP("64x256x64")),
    4,
    300,
    600,
    200,
  ),
  sk(
    "f16 -> f32, K not a k-tile multiple",
    GEMM("f16", "f32", undefined, PP("64x256x64")),
    3,
    200,
    520,
    136,
  ),
  sk("bf16 with C, bias and relu, 64x128 tiles", EPILOGUE_GEMM(PP("64x128x64")), 5, 130, 1000, 264),
  sk(
    "tf32, 64x128 tiles",
    GEMM("f32", "f32", undefined, `math tf32\n    ${PP("64x128x32")}`),
    4,
    250,
    300,
    200,
  ),
  sk("s8 -> s32, 64x224 tiles", GEMM("s8", "s32", undefined, PP("64x224x128")), 4, 200, 600, 1040),
  sk(
    "f16 on clusters of 2",
    GEMM("f16", "f32", undefined, PP("64x256x64", "cluster 2")),
    4,
    300,
    600,
    200,
  ),
  sk(
    "bf16, one tile: the second warpgroup idle",
    GEMM("bf16", "f32", undefined, PP("64x256x64")),
    8,
    64,
    256,
    136,
  ),
  {
    name: "f16 batched A and B, 3 batches",
    src: `kernel pp {\n  A: f16[Bt, M, K] row\n  B: f16[Bt, K, N] col\n  D: f16[Bt, M, N] row\n` +
      `  D[b, m, n] = f16(A[b, m, k] * B[b, k, n])\n  schedule {\n    ${PP("64x128x64")}\n  }\n}\n`,
    sms: 4,
    sizes: { Bt: 3, M: 130, N: 296, K: 136 },
  },
];
