/**
 * The GEMM IR: a checked GEMM (problem, math, epilogue) together with its
 * schedule, possibly partial. The DSL checker produces it; the passes in
 * `passes/` complete the schedule; the lowering turns it into the kernel IR.
 *
 * Every node is readonly. Spans point into the kernel's source so that
 * diagnostics raised by later passes can quote the line they concern.
 *
 * @module
 */

import type { CachePolicy } from "./cache_policy.ts";
import type { Target } from "./target.ts";
import { type Dtype, DTYPE_INFO } from "./dtype.ts";
import type { ComputeType, EpilogueFnOfArity } from "./epilogue.ts";
export type { Dtype } from "./dtype.ts";
export type { ComputeType } from "./epilogue.ts";

/** A half-open range of character offsets into a source text. */
export interface Span {
  /** Offset of the first character. */
  readonly start: number;
  /** Offset just past the last character. */
  readonly end: number;
}

/** A dimension: a runtime size passed to the kernel, or a compile-time constant. */
export type DimRef =
  | { readonly kind: "sym"; readonly name: string }
  | { readonly kind: "const"; readonly value: number };

/** Storage order of a matrix. In a normalised operand view `row` means the
 * second logical dimension is contiguous (K for A, N for B, N for C/D). */
export type Layout = "row" | "col";

/** What a tensor is to the GEMM. `A_meta`: the metadata of a structured-sparse A
 * (DESIGN §6.3; see {@link TensorParam.sparse}). */
export type Role = "A" | "B" | "C" | "D" | "bias" | "A_meta";

/** A tensor parameter, as declared. */
export interface TensorParam {
  /** The parameter's tag. */
  readonly kind: "tensor";
  /** The tensor's name. */
  readonly name: string;
  /** The element type. */
  readonly dtype: Dtype;
  /** Declared dimensions, in declaration order (batch first when rank 3). */
  readonly dims: readonly DimRef[];
  /** Declared layout of the last two dimensions (`row`: last contiguous). */
  readonly layout: Layout;
  /** Guaranteed alignment of every row/column start, in elements. */
  readonly align: number;
  /**
   * The declared strides in elements (`strides(...)`, DESIGN §6.1): every dimension's
   * but the contiguous one's, outermost first (a matrix: its line stride; a batched
   * matrix: the batch stride, then the line stride; a batched vector: the batch
   * stride). A `sym` names a kernel dimension or a stride parameter
   * ({@link GemmKernel.strides}). Absent: dense, as in version 1.
   */
  readonly strides?: readonly DimRef[];
  /**
   * A structured-sparse A (`A: f16[M, K] row sparse`, DESIGN §6.3, issue 21): only on
   * the A operand, K contiguous. `dims` stay the logical (dense) `[batch?, M, K]`;
   * the buffer holds the kept values, `[batch?, M, K / 2]` in the declared layout
   * (numerics/sparse.ts `sparseValueBytes`), and `align` counts in those rows. The
   * metadata is the next parameter ({@link sparseMetaParam}). Absent: dense.
   */
  readonly sparse?: true;
  /** What the tensor is to the GEMM. */
  readonly role: Role;
  /** The declaration in the source (of an `A_meta` parameter: A's word `sparse`). */
  readonly span: Span;
}

/** A scalar parameter. */
export interface ScalarParam {
  /** The parameter's tag. */
  readonly kind: "scalar";
  /** The scalar's name. */
  readonly name: string;
  /** The scalar's type. */
  readonly dtype: Dtype;
  /** The declared default value (null: none). */
  readonly default: number | null;
  /** The declaration in the source. */
  readonly span: Span;
}

/**
 * A kernel parameter in declaration order.
 *
 * A sparse A ({@link TensorParam.sparse}) is followed at once by its metadata: a
 * `TensorParam` of role `A_meta` named `<A>_meta` (a `.u64` address in the ABI, so
 * the order is A, A_meta, then the other tensors as declared). Its element type is
 * A's (the type whose pattern the metadata encodes: it fixes the group,
 * numerics/sparse.ts `sparseGroup`), its `dims` and `layout` A's (logical
 * `[batch?, M, K]`, K the contiguous one), its `align` 1 (not meaningful), and its storage not `dims` x `dtype` but the canonical
 * metadata of numerics/sparse.ts: u32 words, `sparseMetaBytes(M, K, dtype, batch)`
 * bytes (harness/tensor.ts `tensorShape` knows both). No u32 {@link Dtype} exists to
 * name the words, and the dims in words (`ceil(K / group / 8)`) are no {@link DimRef}.
 */
export type Param = TensorParam | ScalarParam;

/** How the GEMM sees one matrix tensor: which tensor, its normalised layout,
 * and whether it has the batch dimension (absent: broadcast over the batch). */
export interface MatrixView {
  /** The tensor's name. */
  readonly tensor: string;
  /** The normalised layout (see {@link Layout}). */
  readonly layout: Layout;
  /** Whether the tensor has the batch dimension. */
  readonly batched: boolean;
}

/** The user's index names of a {@link Problem}'s dimensions (`D[m, n] = A[m, k] ...`). */
export interface ProblemIndices {
  /** The index along M. */
  readonly m: string;
  /** The index along N. */
  readonly n: string;
  /** The summed index, along K. */
  readonly k: string;
  /** The batch index (null: no batch). */
  readonly batch: string | null;
}

/** The problem: sizes, roles and the normalised operand layouts. */
export interface Problem {
  /** The rows of D (and of A). */
  readonly m: DimRef;
  /** The columns of D (and of B). */
  readonly n: DimRef;
  /** The contraction dimension. */
  readonly k: DimRef;
  /** The batch dimension (null: no batch). */
  readonly batch: DimRef | null;
  /** The user's index names for m, n, k and the batch. */
  readonly indices: ProblemIndices;
  /** Operand A, M x K. */
  readonly a: MatrixView;
  /** Operand B, K x N. */
  readonly b: MatrixView;
  /** The output D, M x N. */
  readonly d: MatrixView;
}

/** How the main loop computes. */
export type MathMode =
  /** Tensor-core `mma.sync` on the operand types (f32 operands rounded to tf32). */
  | "tensor"
  /** f32 operands split into big + small tf32 parts, three MMAs each. */
  | "3xtf32"
  /** CUDA-core FMA, no tensor cores. */
  | "simt";

/** The main loop's types. */
export interface MathSpec {
  /** Operand element types as stored. */
  readonly a: Dtype;
  /** Operand B's element type as stored. */
  readonly b: Dtype;
  /** The types the MMA instruction consumes (`tf32` for f32 operands). */
  readonly mmaA: Dtype;
  /** The type the MMA instruction consumes for B. */
  readonly mmaB: Dtype;
  /** The accumulator type. */
  readonly acc: Dtype;
  /** How the main loop computes. */
  readonly mode: MathMode;
  /** The product: multiply-add, or a binary `popc` of `and` / `xor`. */
  readonly op: "mul" | "and.popc" | "xor.popc";
}

/** An elementwise epilogue expression over the accumulator. The functions of
 * the `unary`, `binary` and `clamp` nodes are the rows of the table in
 * ir/epilogue.ts; ir/epilogue_expr.ts builds, visits and rewrites the nodes. */
export type EpilogueExpr =
  | { readonly op: "acc" }
  | { readonly op: "const"; readonly value: number }
  | { readonly op: "scalar"; readonly name: string }
  | {
    readonly op: "load";
    readonly tensor: string;
    /** Varies with the output row (m), the column (n), the batch. */
    readonly rows: boolean;
    readonly cols: boolean;
    readonly batched: boolean;
  }
  | {
    readonly op: "unary";
    readonly fn: EpilogueFnOfArity<1>;
    readonly x: EpilogueExpr;
  }
  | {
    readonly op: "binary";
    readonly fn: EpilogueFnOfArity<2>;
    readonly a: EpilogueExpr;
    readonly b: EpilogueExpr;
  }
  | {
    readonly op: "clamp";
    readonly x: EpilogueExpr;
    readonly lo: EpilogueExpr;
    readonly hi: EpilogueExpr;
  }
  | { readonly op: "cast"; readonly to: Dtype; readonly x: EpilogueExpr };

/** The epilogue: computed per output element, then converted to D's type. */
export interface Epilogue {
  /** The type the epilogue computes in. */
  readonly compute: ComputeType;
  /** The expression, over the accumulator. */
  readonly expr: EpilogueExpr;
  /** Layouts of the epilogue tensors that are indexed by both m and n. */
  readonly views: readonly MatrixView[];
}

/** An M x N x K shape. */
export interface Shape3 {
  /** Rows (along M). */
  readonly m: number;
  /** Columns (along N). */
  readonly n: number;
  /** Depth (along K). */
  readonly k: number;
}

/** A compile target (the table is ir/target.ts). */
export type { Target };

/** Keys of the schedule block that remain schedule settings in the IR
 * (`math` and `accumulate` become part of {@link MathSpec}). */
export type ScheduleKey =
  | "threadblock"
  | "warp"
  | "mma"
  | "stages"
  | "swizzle"
  | "split_k"
  | "scheduler"
  | "cluster"
  | "cache_a"
  | "cache_b"
  | "math"
  | "accumulate"
  | "target";

/** The schedule as far as it is known: given by the user, or chosen by passes. */
export interface Schedule {
  /** The threadblock tile (`threadblock` key). */
  readonly threadblock?: Shape3;
  /** The warp tile (`warp` key). */
  readonly warp?: Shape3;
  /** The MMA instruction's shape (`mma` key). */
  readonly mma?: Shape3;
  /** Pipeline stages (`stages` key). */
  readonly stages?: number;
  /** Threadblock swizzle (`swizzle` key). */
  readonly swizzle?: number;
  /** K-splits (`split_k` key; 1: no split). */
  readonly splitK?: number;
  /** How a warp-specialized sm90 kernel's blocks take tiles (`scheduler` key; passes/wgmma.ts
   * `wgmmaPersistent`): `tiles` one block a tile, `persistent` one block an SM looping over
   * whole tiles, `stream_k` persistent with the last tiles' k-loops shared out evenly,
   * `pingpong` persistent with two consumer warpgroups that take the block's tiles in turn
   * (one's epilogue beside the other's main loop; the threadblock tile is one warpgroup's). */
  readonly scheduler?: Scheduler;
  /** CTAs per thread-block cluster (`cluster` key; passes/wgmma.ts `wgmmaCluster`): 1, or 2 for
   * a persistent warp-specialized sm90 kernel whose two CTAs take vertically adjacent tiles and
   * load B's box once for both (TMA multicast, each CTA half of it). */
  readonly cluster?: number;
  /** Along which dimension a cluster's CTAs lie (`cluster 1x2`: `n`; absent: `m`, as `cluster 2`
   * and `2x1`): along N they take horizontally adjacent tiles and load A's box once for both. */
  readonly clusterAxis?: ClusterAxis;
  /** The L2 eviction priority of operand A's global -> shared copies (`cache_a` key;
   * ir/cache_policy.ts `CACHE_POLICIES`): every `cp.async`, TMA box and 16-byte `ld.global` of A carries it;
   * the synchronous 1- and 2-byte copies of an A aligned to less than 4 bytes, and a sparse A's
   * metadata words, carry none (passes/lower/cache_hints.ts). Absent: no hint at all. */
  readonly cacheA?: CachePolicy;
  /** The L2 eviction priority of operand B's global -> shared copies (`cache_b` key), as
   * {@link cacheA}'s of A. */
  readonly cacheB?: CachePolicy;
}

/** The schedule key of each operand's {@link CachePolicy} (ir/cache_policy.ts), and its field
 * of {@link Schedule}. */
export const CACHE_KEYS: Readonly<
  Record<"A" | "B", { readonly key: ScheduleKey; readonly field: "cacheA" | "cacheB" }>
> = Object.freeze({
  A: Object.freeze({ key: "cache_a", field: "cacheA" }),
  B: Object.freeze({ key: "cache_b", field: "cacheB" }),
});

/** Along which dimension of the tile grid a thread-block cluster's CTAs lie: `m` (they share
 * B's columns, multicast) or `n` (they share A's rows). */
export type ClusterAxis = "m" | "n";

/** The values of the `cluster` schedule key: CTAs a cluster and their axis (`MxN`: CTAs along
 * M by along N). */
export const CLUSTER_SHAPES: Readonly<
  Record<string, { readonly ctas: number; readonly axis: ClusterAxis }>
> = Object.freeze({
  "1": { ctas: 1, axis: "m" },
  "2": { ctas: 2, axis: "m" },
  "2x1": { ctas: 2, axis: "m" },
  "1x2": { ctas: 2, axis: "n" },
});

/** The values of the `scheduler` schedule key. */
export type Scheduler = "tiles" | "persistent" | "stream_k" | "pingpong";

/** {@link Scheduler}'s values, as the checker accepts them. */
export const SCHEDULERS: readonly Scheduler[] = Object.freeze([
  "tiles",
  "persistent",
  "stream_k",
  "pingpong",
]);

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

/** The source a {@link GemmKernel}'s spans point into. */
export interface GemmSource {
  /** The file's name, as given to the compiler. */
  readonly file: string;
  /** The whole source text. */
  readonly text: string;
}

/** One kernel in the GEMM IR. */
export interface GemmKernel {
  /** The node's tag. */
  readonly kind: "gemm";
  /** The kernel's name. */
  readonly name: string;
  /** The compile target. */
  readonly target: Target;
  /** Tensors and scalars, in declaration order. */
  readonly params: readonly Param[];
  /** Runtime dimensions, in order of first appearance in the declarations. */
  readonly dims: readonly string[];
  /** `grouped` (DESIGN §6.2): one launch runs a table of problems, each with its own
   * dims, tensor addresses and strides; scalars shared. Absent: an ordinary kernel. */
  readonly grouped?: true;
  /** Runtime stride parameters (`strides(lda)` where `lda` is no dimension), in order
   * of first appearance: `.u64` kernel parameters after the dims. Absent: none. */
  readonly strides?: readonly string[];
  /** Sizes, roles and operand layouts. */
  readonly problem: Problem;
  /** The main loop's types. */
  readonly math: MathSpec;
  /** The epilogue. */
  readonly epilogue: Epilogue;
  /** The schedule as given (possibly partial). */
  readonly schedule: Schedule;
  /** What the passes decided so far. */
  readonly plan: Plan;
  /** Expected runtime sizes, by dimension name: they shape the default
   * schedule (tile size for skinny problems, swizzle) as compile-time sizes
   * would, but the kernel stays correct for any size. */
  readonly sizeHints?: Readonly<Record<string, number>>;
  /** The SM count of the GPU the kernel is for: with known or hinted M and N
   * the default tile weighs the waves of blocks on that many SMs (default:
   * the target's `defaultSms`, ir/target.ts). */
  readonly sms?: number;
  /** True: programmatic dependent launch's instructions, on targets with `griddepcontrol`
   * (compile option `pdl`; ir/kernel_sm90.ts `GridDepOp`). */
  readonly pdl?: true;
  /** With `pdl`: the kernel's input tensors the previous grid does not write (compile option
   * `pdlEarly`), whose loads may start before `griddepcontrol.wait`. */
  readonly pdlEarly?: readonly string[];
  /** Where each given schedule line is, for diagnostics raised by passes. */
  readonly scheduleSpans: Readonly<Partial<Record<ScheduleKey, Span>>>;
  /** The kernel's name in `kernel NAME`: where a diagnostic without a schedule line points. */
  readonly nameSpan: Span;
  /** The whole kernel in the source. */
  readonly span: Span;
  /** The file name and source the spans point into. */
  readonly source: GemmSource;
}

/** The names of a grouped kernel's first two parameters (DESIGN §6.2): the problem
 * table's address (`.u64`) and the problem count (`.u32`). */
export const GROUP_PARAMS = Object.freeze({ table: "group_table", count: "group_count" });

/**
 * Throws on a value that a `switch` should never reach; its parameter type
 * `never` makes the compiler prove that every case is handled.
 *
 * @param x The impossible value.
 * @returns Never returns.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { unreachable } from "./gemm.ts";
 * type T = "a";
 * const f = (t: T) => { switch (t) { case "a": return 1; default: return unreachable(t); } };
 * equal(f("a"), 1);
 * ```
 */
export function unreachable(x: never): never {
  throw new Error(`Unreachable: ${JSON.stringify(x)}`);
}

/**
 * The metadata parameter of a kernel's sparse A (role `A_meta`, right after A), or
 * null for a dense kernel.
 *
 * @param k The kernel.
 * @returns The parameter, whose `span` is A's word `sparse`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { sparseMetaParam } from "./gemm.ts";
 * const k = check("kernel k { A: f16[M, K] sparse\n B: f16[K, N] col\n D: f32[M, N]\n" +
 *   " D[m, n] = A[m, k] * B[k, n] }").kernels[0]!;
 * equal(sparseMetaParam(k)?.name, "A_meta");
 * equal(k.params.map((p) => p.name).join(), "A,A_meta,B,D");
 * ```
 */
export function sparseMetaParam(k: GemmKernel): TensorParam | null {
  const p = k.params.find((q) => q.kind === "tensor" && q.role === "A_meta");
  return p === undefined ? null : p as TensorParam;
}

/**
 * The name of a sparse A's metadata parameter (DESIGN §6.3).
 *
 * @param a The name of A.
 * @returns `<a>_meta`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sparseMetaName } from "./gemm.ts";
 * equal(sparseMetaName("X"), "X_meta");
 * ```
 */
export function sparseMetaName(a: string): string {
  return `${a}_meta`;
}

/**
 * The view of operand A or B.
 *
 * @param k The kernel.
 * @param role The operand.
 * @returns `k.problem.a` or `k.problem.b`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { operandView } from "./gemm.ts";
 * const k = check("kernel k { X: f16[M, K] row\n Y: f16[K, N] col\n D: f32[M, N]\n" +
 *   " D[m, n] = X[m, k] * Y[k, n] }").kernels[0]!;
 * equal(operandView(k, "B").tensor, "Y");
 * ```
 */
export function operandView(k: GemmKernel, role: "A" | "B"): MatrixView {
  return role === "A" ? k.problem.a : k.problem.b;
}

/**
 * A tensor parameter by name.
 *
 * @param k The kernel.
 * @param name The tensor's name.
 * @returns The parameter; throws if there is none (a verifier bug).
 */
export function tensorParam(k: GemmKernel, name: string): TensorParam {
  const p = k.params.find((q) => q.name === name);
  if (p === undefined || p.kind !== "tensor") throw new Error(`No tensor named "${name}"`);
  return p;
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

/**
 * A dimension's size when it is known at compile time or expected (a size
 * hint): such sizes shape the defaults.
 *
 * @param k The kernel.
 * @param d The dimension.
 * @returns Its size, or null.
 */
export function knownSize(k: GemmKernel, d: DimRef): number | null {
  return d.kind === "const" ? d.value : k.sizeHints?.[d.name] ?? null;
}
