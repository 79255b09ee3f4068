/**
 * The GEMM IR's plan (ir/gemm.ts `GemmKernel.plan`): what the passes of passes/ decide, one
 * record a pass (the tile, the warps, the pipeline and its shared-memory tiles, the instruction
 * and its fragment loads, the occupancy, the split-K workspace, the epilogue's staging), each
 * filled in by its pass, printed by ir/print_gemm.ts, checked by ir/verify_gemm.ts and read by the
 * lowering. ir/gemm.ts re-exports it, so that code that reads the GEMM IR imports every type from
 * there; it is apart to keep each file near a reader's length.
 *
 * @module
 */

import type { Shape3 } from "./gemm_schedule.ts";

/** Per dimension, whether a {@link TilePlan} may leave a partial tile. */
export interface PartialTiles {
  /** Along M. */
  readonly m: boolean;
  /** Along N. */
  readonly n: boolean;
  /** Along K. */
  readonly k: boolean;
}

/** Tiling decisions (pass `gemm-tile`). */
export interface TilePlan {
  /** The threadblock tile. */
  readonly threadblock: Shape3;
  /** The threadblock swizzle (1: none). */
  readonly swizzle: number;
  /** The number of K-splits (1: none). */
  readonly splitK: number;
  /** Whether each dimension may leave a partial tile (false only when the
   * size is a compile-time multiple of the tile). Partial tiles are handled
   * by predication: zero-filled copies and guarded stores. */
  readonly partial: PartialTiles;
  /** Set when gemm-tile shrank a 16-bit default tile for a small known (or
   * hinted) problem: about one block per SM with a long K, latency-bound, so
   * the k-tile is doubled and gemm-warp keeps 8 warps. */
  readonly smallGrid?: true;
  /** Why gemm-tile chose this threadblock (and its default split), in words: the rule that
   * fired, with the sizes and SMs it weighed (`gemm compile --emit explain`). Absent in a plan
   * written by hand. */
  readonly why?: string;
  /** Set when gemm-tile chose the skinny schedule of passes/skinny.ts (issue 22):
   * the warp tile gemm-warp takes and the stage count gemm-pipeline prefers (capped
   * by what fits, as every default) where the schedule gives none. */
  readonly skinny?: { readonly warp: Shape3; readonly stages: number };
  /** Set where gemm-tile chose sm90's skinny wgmma tiles (passes/skinny.ts): a one-wave grid
   * whose TMA loads are bound by the bytes each SM keeps in flight (bench/NOTES.md 73), so
   * gemm-pipeline gives the stages all the shared memory a block may have. */
  readonly deepPipeline?: true;
  /** Set when the tile runs on sm90's warpgroup MMA (passes/wgmma.ts): gemm-warp, gemm-pipeline
   * and gemm-mma then plan for wgmma. */
  readonly wgmma?: true;
  /** Set when gemm-tile's default asks for a persistent grid (sm90's skinny wgmma tiles over
   * more tiles than SMs, passes/skinny.ts); a warp-specialized kernel then has one
   * (passes/wgmma.ts `wgmmaPersistent`), any other kernel ignores it. */
  readonly persistent?: true;
  /** Set when gemm-tile's default asks for clusters of 2 (sm90's skinny 64-row wgmma tiles, whose
   * two tile rows then share each column of B, passes/skinny.ts); a warp-specialized kernel then
   * has them on a persistent grid (passes/wgmma.ts `wgmmaPersistent`, `wgmmaCluster`), any other
   * kernel ignores it. */
  readonly cluster?: 2;
}

/** Warp partitioning (pass `gemm-warp`). */
export interface WarpPlan {
  /** The warp tile. */
  readonly warp: Shape3;
  /** Warps along M and N; warp w covers rows (w % warpsM) and columns (w / warpsM). */
  readonly warpsM: number;
  /** Warps along N. */
  readonly warpsN: number;
  /** Threads per block (32 per warp). */
  readonly threads: number;
}

/** The shared-memory tile of one operand in one stage (pass `gemm-pipeline`).
 * Stored as `rows` lines of `rowBytes`, the contiguous dimension along a
 * line; 16-byte chunks are XOR-swizzled: chunk `c` of the tile (row-major
 * numbering) is stored at `c ^ (((c >> shift) * scale) & 7)`. With scale 1
 * the eight 16-byte rows an ldmatrix phase reads fall in distinct bank
 * groups; with scale 2 (tiles read by `ld.shared`, where a phase reads four
 * rows of 32 bytes) so do those. The 16-byte cp.async stores of a warp cover
 * whole 128-byte lines, conflict-free under any such permutation. */
export interface OperandSmem {
  /** `k`: K is contiguous in the tile (A row-major, B column-major); `outer`: M (or N) is. */
  readonly contiguous: "k" | "outer";
  /** Lines of the tile in one stage. */
  readonly rows: number;
  /** Bytes of one line. */
  readonly rowBytes: number;
  /** The `shift` of the chunk swizzle. */
  readonly swizzleShift: number;
  /** 1 for ldmatrix-read tiles and transposed ones, 2 for other ld.shared-read tiles (set by
   * gemm-fragment-load, which chooses the loads; 1 before it), 4 for tiles transposed
   * through registers. */
  readonly swizzleScale: 1 | 2 | 4;
  /** Offset of this operand's stage 0 in the dynamic shared buffer. */
  readonly offset: number;
  /** Bytes of one stage of this operand. */
  readonly stageBytes: number;
  /** Bytes per global->shared copy: 16/8/4 with cp.async, or 1/2 with a
   * synchronous load and store (alignments below 4 bytes). */
  readonly copyBytes: number;
  /** Whether the copies are `cp.async` (false: a load and a store). */
  readonly async: boolean;
  /** Copies per thread per stage. */
  readonly copiesPerThread: number;
  /**
   * The tile is stored transposed: K-contiguous in global memory,
   * `outer`-contiguous here (SIMT f32, whose fragments then load as
   * `ld.shared.v4` runs). Copied element by element (`cp.async` of 4 bytes,
   * consecutive threads along a global line), or {@link viaRegisters}.
   */
  readonly transpose?: boolean;
  /** Transposed through registers: 16-byte global loads along K, each stored as
   * 4 single elements to 4 rows (passes/pipeline.ts `viaRegisters`). */
  readonly viaRegisters?: boolean;
}

/**
 * A structured-sparse A's metadata tile in shared memory (DESIGN §6.3, issue 21), in
 * *packets* (ir/mma_sparse.ts `metaPacket`): 128 bytes, one word a lane, serving 16 rows
 * and 16 groups of K (two canonical words of each row); a stage is `blocks` 16-row blocks of `packets` packets each,
 * block-major and unswizzled. The canonical words (numerics/sparse.ts, the `A_meta`
 * buffer) are read from global memory into registers, joined into packet words and
 * stored a k-tile ahead (passes/lower/sparse.ts); a word past M or past the row's last
 * is `0x44444444` (every nibble `0b0100`, a defined index pair for every sparse type, so
 * the zero-filled values past K are multiplied by a legal `mma.sp`).
 */
export interface MetaSmem {
  /** 16-row blocks of the tile (the threadblock's M / 16). */
  readonly blocks: number;
  /** Packets of a block in one k-tile (`tileK / (2 * kPerWord)`). */
  readonly packets: number;
  /** Offset of stage 0 in the dynamic shared buffer. */
  readonly offset: number;
  /** Bytes of one stage (`blocks * packets * 128`). */
  readonly stageBytes: number;
  /** Words in a row of the whole matrix (`ceil(K / kPerWord)`) for a literal K, else null. */
  readonly rowWords: number | null;
  /** K elements one canonical word describes (8 groups: 32 for 2:4, 16 for tf32, 64 for s4/u4). */
  readonly kPerWord: number;
}

/** Stage pipelining (pass `gemm-pipeline`). */
export interface PipelinePlan {
  /** Pipeline stages. */
  readonly stages: number;
  /** Why that many, in words (`gemm compile --emit explain`). Absent in a plan written by hand. */
  readonly stagesWhy?: string;
  /** Operand A's shared-memory tile. */
  readonly a: OperandSmem;
  /** Operand B's shared-memory tile. */
  readonly b: OperandSmem;
  /** A sparse A's metadata tile (its stages after B's); absent for a dense A. */
  readonly meta?: MetaSmem;
  /** Dynamic shared memory of all stages, in bytes. */
  readonly smemBytes: number;
  /** The `cp.async.wait_group` depth of the steady state (stages - 2). */
  readonly waitDepth: number;
  /** sm90's warp-specialized pipeline (passes/wgmma.ts `wgmmaTma`): a producer warpgroup
   * copies the stages by TMA, and full and empty mbarriers per stage hand them to and from
   * the consumer warpgroups (the plan's warps). Absent: every thread copies by cp.async. */
  readonly tma?: TmaPipelinePlan;
}

/** A warp-specialized TMA pipeline (see {@link PipelinePlan.tma}). */
export interface TmaPipelinePlan {
  /** Byte offset of the barriers (after the stages): stage s's full barrier at 8 s, its
   * empty barrier at 8 (stages + s). */
  readonly barrierOffset: number;
  /** Threads of the producer warpgroup (after the consumers' threads). */
  readonly producerThreads: number;
  /** Registers a producer thread keeps (`setmaxnreg.dec`). */
  readonly producerRegs: number;
  /** Registers a consumer thread gets (`setmaxnreg.inc`). */
  readonly consumerRegs: number;
  /** A persistent kernel (passes/wgmma.ts `wgmmaPersistent`): a grid of at most one block
   * an SM, each looping over tiles, the ring carried from tile to tile so that the producer
   * fills the next tile's stages while the consumers run the epilogue; the epilogue's
   * staging then has a region of its own after the barriers, at `stagingOffset`. With
   * `streamK` the k-loops of the last tiles are shared out (passes/lower/stream_k.ts), and
   * a word at `flagOffset` (after the barriers) tells the consumers who sums a split tile. */
  readonly persistent?: {
    readonly stagingOffset: number;
    readonly streamK?: { readonly flagOffset: number };
    /** Ping-pong (`scheduler pingpong`, passes/wgmma.ts `wgmmaPingPong`): two consumer
     * warpgroups, each running the tile's program on alternate tiles of the block, each with
     * a staging region of its own, `stagingBytes` apart (set by gemm-epilogue-staging; 0
     * where the epilogue does not stage); their main loops take turns by the
     * two mbarriers at `turnOffset` (after the stages' barriers). */
    readonly pingPong?: { readonly stagingBytes: number; readonly turnOffset: number };
  };
  /** CTAs per cluster (2; absent: 1): the cluster's CTAs take the tiles of one column pair by
   * pair, rank r the pair's r-th tile, and each CTA copies the r-th half of the B box into both
   * CTAs (`.multicast::cluster`), so that a stage's empty barrier waits for both CTAs'
   * consumers (passes/lower/wgmma_ws.ts). With `clusterAxis` `n`: a row's pairs of tiles, and
   * halves of A's box. */
  readonly cluster?: number;
  /** The cluster's axis (`n`; absent: `m`). */
  readonly clusterAxis?: "n";
}

/** How an operand's MMA fragments come from shared memory: `ldmatrix`,
 * `ldmatrix.trans`, or `ld.shared` (`lds`); `wgmma`: none, the warpgroup MMA reads
 * the tile itself. */
export type FragmentLoad = "ldmatrix" | "ldmatrix.trans" | "lds" | "wgmma";

/** The instruction (pass `gemm-mma`); gemm-fragment-load completes it into {@link MmaPlan}. */
export interface InstructionPlan {
  /** The MMA table row (ir/mma_table.ts). */
  readonly shape: string;
  /** The instruction's M x N x K. */
  readonly instr: Shape3;
  /** k-steps per threadblock tile (tile K / instruction K). */
  readonly kSteps: number;
  /** Estimated registers per thread (accumulators + fragments + addressing). */
  readonly regEstimate: number;
  /**
   * How the next k-step's fragments are loaded. "double": all of them before
   * the current k-step's MMAs, into a second set of registers. "interleaved":
   * each fragment right after the last MMA that reads the one it replaces,
   * so that about one set is live (warp tiles whose accumulators leave no room
   * for two sets, such as 96x64 with f32 accumulators).
   */
  readonly fragments: "double" | "interleaved";
  /** sm90: the wgmma table row (ir/wgmma_table.ts) the main loop issues, from shared
   * memory; `shape` is then the m16n8 row of the same types, whose accumulator map is
   * each warp's part of the warpgroup's (passes/wgmma.ts). Absent: mma.sync. */
  readonly wgmma?: string;
}

/** The instruction and how its fragments come from shared memory (pass
 * `gemm-fragment-load`, from gemm-mma's {@link InstructionPlan}). */
export interface MmaPlan extends InstructionPlan {
  /** How A's fragments are loaded. */
  readonly aLoad: FragmentLoad;
  /** How B's fragments are loaded. */
  readonly bLoad: FragmentLoad;
}

/** Blocks per SM (pass `gemm-occupancy`). */
export interface OccupancyPlan {
  /**
   * Blocks of the kernel an SM is built to hold at once (the kernel IR's
   * `minBlocksPerSm`, PTX `.minnctapersm` when above 1): 2 caps a thread at
   * 65536 / (2 * threads) registers, 1 leaves ptxas up to 255.
   */
  readonly blocksPerSm: 1 | 2;
}

/**
 * The split-K workspace record of one output tile (pass `gemm-workspace`):
 * a header of {@link WorkspacePlan.headerBytes} (the u32 arrival counter at
 * byte 0), then one partial accumulator tile per split, each thread's
 * accumulator registers in chunks of {@link WorkspacePlan.chunkBytes} laid
 * out chunk-major (`(chunk * threads + tid) * chunkBytes`), so that a warp's
 * stores and loads are contiguous.
 */
export interface WorkspacePlan {
  /** The kernel parameter that points at the workspace (the last one). */
  readonly param: string;
  /** Bytes before the first partial: the arrival counter and padding to a line. */
  readonly headerBytes: number;
  /** Bytes per accumulator register (f64: 8, else 4: f32, s32, or f16x2). */
  readonly accBytes: 4 | 8;
  /** Bytes a thread stores at once: 16, or 8 for f16 accumulators. */
  readonly chunkBytes: number;
  /** Bytes of one split's partial accumulator tile (every thread's registers). */
  readonly partialBytes: number;
  /** Bytes of one output tile's record: header + split_k partials (GridPlan.workspacePerTile). */
  readonly perTile: number;
}

/**
 * How the epilogue stages D through shared memory (pass
 * `gemm-epilogue-staging`): each warp writes `tiles` accumulator-tile rows
 * of its fragments into its own region, then reads them back along D's rows
 * in `vecBytes` vectors.
 */
export interface StagingPlan {
  /** Accumulator-tile rows (of the MMA's M rows each) a warp stages at once. */
  readonly tiles: number;
  /** Bytes from one staged row to the next (the warp tile's row plus padding). */
  readonly stride: number;
  /** Bytes of one warp's region (warp w's starts at w * regionBytes). */
  readonly regionBytes: number;
  /** Bytes a lane reads back at once (and, staging outputs, stores to D). */
  readonly vecBytes: number;
  /** Vectors in one staged row. */
  readonly perRow: number;
  /** Lanes that read one staged row back: `perRow` rounded up to a power of two (at most 32);
   * the lanes past `perRow` idle (rows of 24 or 28 vectors: 192 or 224 16-bit columns). */
  readonly readLanes: number;
  /** Staged: D's elements ("out"), or the accumulators in the compute type ("raw"),
   * the epilogue then evaluated along D's rows (epilogues that read a matrix). */
  readonly mode: "out" | "raw";
  /** Bytes of one staged element. */
  readonly elemBytes: number;
}

/** What the passes decided, each filled in by its pass. */
export interface Plan {
  /** Tiling (pass `gemm-tile`). */
  readonly tile?: TilePlan;
  /** Warp partitioning (pass `gemm-warp`). */
  readonly warp?: WarpPlan;
  /** Stage pipelining (pass `gemm-pipeline`). */
  readonly pipeline?: PipelinePlan;
  /** gemm-mma's choice, until gemm-fragment-load replaces it by {@link Plan.mma}. */
  readonly instruction?: InstructionPlan;
  /** The instruction and its fragment loads (pass `gemm-fragment-load`). */
  readonly mma?: MmaPlan;
  /** Blocks per SM (pass `gemm-occupancy`). */
  readonly occupancy?: OccupancyPlan;
  /** Null: no workspace (split_k 1). */
  readonly workspace?: WorkspacePlan | null;
  /** Null: the epilogue stores straight from registers. */
  readonly staging?: StagingPlan | null;
  /** A grouped kernel's plan for problems with at most half the threadblock's rows:
   * the same warps over a tile half as tall (pass `gemm-short-tile`); null: none. */
  readonly short?: Plan | null;
}
