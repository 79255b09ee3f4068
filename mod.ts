/**
 * gemmc: a GEMM compiler for NVIDIA Ampere (sm_80 / sm_86), in TypeScript.
 *
 * A GEMM is written as a small tensor expression; {@link compile} parses it
 * (Ohm grammar), checks it into the GEMM IR, runs the passes (tiling, warp
 * partitioning, multistage cp.async pipelining, MMA selection) and lowers it
 * to a thread-level kernel IR. From that one kernel IR the PTX backend prints
 * PTX and the simulator executes the same program on the CPU:
 * {@link simulateGemm} runs a compiled kernel on random inputs over its whole
 * grid and compares the output with the reference GEMM; {@link simulate} is
 * the simulator itself (any kernel-IR program, any launch).
 *
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { compile } from "./mod.ts";
 * const src = `kernel hgemm {
 *   A: f16[M, K] row
 *   B: f16[K, N] col
 *   D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n]
 * }`;
 * const r = compile(src, { file: "hgemm.gemm" });
 * ok(r.ok);
 * equal(r.kernels[0]?.planned.plan.mma?.shape, "m16n8k16.f16.f32");
 * ```
 *
 * @module
 */

export {
  check,
  compile,
  type CompiledKernel,
  type CompileOptions,
  type CompileResult,
  formatDiagnostics,
  parse,
  type SourceOptions,
} from "./compiler.ts";
export {
  type Diagnostic,
  DIAGNOSTIC_CODES,
  type DiagnosticCode,
  DiagnosticError,
  renderDiagnostic,
} from "./dsl/diagnostics.ts";
export type { ProgramAst } from "./dsl/ast.ts";
export type { CachePolicy } from "./ir/cache_policy.ts";
export type {
  ClusterAxis,
  DimRef,
  Epilogue,
  EpilogueExpr,
  GemmKernel,
  MathSpec,
  Plan,
  Problem,
  Schedule,
  Scheduler,
  Shape3,
  Target,
} from "./ir/gemm.ts";
export { type Dtype, DTYPES } from "./ir/dtype.ts";
export {
  parseTarget,
  type PtxTarget,
  TARGET_NAMES,
  type TargetInfo,
  targetInfo,
  TARGETS,
} from "./ir/target.ts";
export { printGemm } from "./ir/print_gemm.ts";
export {
  callableEpilogueFns,
  EPILOGUE_FNS,
  type EpilogueEmitter,
  type EpilogueFnName,
  type EpilogueFnRow,
} from "./ir/epilogue.ts";
export {
  type FoldActions,
  foldEpilogue,
  type RewriteActions,
  rewriteEpilogue,
  type VisitActions,
  visitEpilogue,
} from "./ir/epilogue_expr.ts";
export { gridFor, type GridPlan, type Kernel, type Op, workspaceBytes } from "./ir/kernel.ts";
export { workspaceArgs } from "./harness/workspace.ts";
export { printKernel } from "./ir/print_kernel.ts";
export { type EarlyDecision, earlyDecisions } from "./passes/lower/early.ts";
export { MMA_SHAPES, type MmaShape } from "./ir/mma_table.ts";
export { GEMM_PASSES, PASS_NAMES, runPipeline } from "./passes/pipeline_list.ts";
export {
  type KernelManifest,
  kernelManifest,
  type ManifestParam,
} from "./backends/ptx/manifest.ts";
export { type Reference, referenceGemm } from "./harness/reference.ts";
export { compareOutput, type Comparison } from "./harness/compare.ts";
export { type LaunchArgs, randomArgs } from "./harness/inputs.ts";
export {
  simArgs,
  simulateGemm,
  type SimulateOptions,
  type SimulateReport,
} from "./harness/simulate_gemm.ts";
export {
  type BankStats,
  type BlockCoord,
  describeWhere,
  type Hazard,
  type HazardKind,
  type SimArg,
  SimError,
  type SimErrorWhere,
  type SimLaunch,
  type SimOptions,
  type SimResult,
  type SimStats,
  type SimTensorArg,
  simulate,
} from "./backends/sim/mod.ts";
export {
  checkRun,
  type RunCheck,
  runGemm,
  runGemm as run,
  type RunOptions,
  type RunReport,
  type RunTiming,
} from "./harness/run_gemm.ts";
export {
  Cuda,
  cudaAvailable,
  CudaError,
  CudaUnavailableError,
  type DeviceInfo,
  type FunctionAttributes,
  JitError,
} from "./backends/cuda/driver.ts";
export { formatProbe, runProbe } from "./harness/mma_probe.ts";
export type { ProbeMetaCheck, ProbeMetaMismatch, ProbeResult } from "./harness/mma_probe_common.ts";

// doclint: the types that the exports above name in their signatures (issue 19, item 3),
// exported so that `deno doc --lint mod.ts` finds every type a caller sees.
export type { CudaLaunchOptions, LaunchConfig } from "./backends/cuda/driver.ts";
export type { KernelArg } from "./backends/cuda/params.ts";
export type { CudaEvent, OwnedHandle } from "./backends/cuda/resources.ts";
export type { ManifestPdl, ManifestWorkspace } from "./backends/ptx/manifest.ts";
export type { BankStatsByKind, RoleSchedule } from "./backends/sim/types.ts";
export { TMAP_DATA_TYPES, TMAP_SWIZZLES } from "./ir/tensor_map.ts";
export type {
  TensorMapArgs,
  TensorMapDataType,
  TensorMapFactor,
  TensorMapSpec,
  TensorMapSwizzle,
} from "./ir/tensor_map.ts";
export type {
  AccessAst,
  DimAst,
  ExprAst,
  Ident,
  ItemAst,
  KernelAst,
  ScalarDeclAst,
  ScheduleAst,
  ScheduleLineAst,
  StatementAst,
  TensorDeclAst,
} from "./dsl/ast.ts";
export type { CheckResult } from "./dsl/check.ts";
export type { ParseResult } from "./dsl/parse.ts";
export type {
  ReferenceCheck,
  ReferenceMismatch,
  SampledDim,
  SimAgreement,
  SimMismatch,
} from "./harness/checks.ts";
export type { ElementMismatch } from "./harness/compare.ts";
export type { ProbeOptions } from "./harness/mma_probe.ts";
export type {
  ProbeCount,
  ProbeMapCheck,
  ProbeMismatch,
  ProbeMode,
} from "./harness/mma_probe_common.ts";
export type {
  ApproxFn,
  ComputeType,
  EmitBinFn,
  EmitUnFn,
  EpilogueArities,
  EpilogueFnOfArity,
  Spelling,
} from "./ir/epilogue.ts";
export type { EpilogueNode, EpilogueOp } from "./ir/epilogue_expr.ts";
export type {
  FragmentLoad,
  GemmSource,
  InstructionPlan,
  Layout,
  MathMode,
  MatrixView,
  MetaSmem,
  MmaPlan,
  OccupancyPlan,
  OperandSmem,
  Param,
  PartialTiles,
  PipelinePlan,
  ProblemIndices,
  Role,
  ScalarParam,
  ScheduleKey,
  Span,
  StagingPlan,
  TensorParam,
  TilePlan,
  TmaPipelinePlan,
  WarpPlan,
  WorkspacePlan,
} from "./ir/gemm.ts";
export type {
  AluOp,
  AtomOp,
  BarOp,
  BinFn,
  BinOp,
  CommentOp,
  CommitOp,
  CpAsyncOp,
  CreatePolicyOp,
  CvtKind,
  CvtOp,
  FenceOp,
  ForOp,
  GridDepOp,
  Guard,
  IfOp,
  Imm,
  KernelParam,
  LdgOp,
  LdmatrixOp,
  LdsOp,
  MadOp,
  MbarArriveOp,
  MbarFenceOp,
  MbarInitOp,
  MbarWaitOp,
  MemWidth,
  MmaOp,
  MovOp,
  MulWideOp,
  Operand,
  PackOp,
  ParamOp,
  PrefetchOp,
  ProxyFenceOp,
  Reg,
  RegType,
  SelpOp,
  SetMaxNRegOp,
  SetpOp,
  SmemBaseOp,
  SpecialReg,
  SregOp,
  StgOp,
  StsOp,
  TmaLoadOp,
  TmapPrefetchOp,
  UnOp,
  UnpackOp,
  WaitOp,
  WgCommitOp,
  WgFenceOp,
  WgmmaOp,
  WgWaitOp,
} from "./ir/kernel.ts";
export type {
  FragmentMap,
  MmaBitOp,
  MmaDtype,
  MmaOperand,
  MmaRegType,
} from "./ir/mma_fragments.ts";
export type { Instruction, TargetRow, TargetTable } from "./ir/target.ts";
export type { GemmPass } from "./passes/pass.ts";
export type { DumpHook, PipelineResult } from "./passes/pipeline_list.ts";

// AOT artefacts: C and cubin (issue 19, item 2)
export { cSource } from "./backends/aot/c.ts";
export { assembleCubin, type CubinOptions } from "./backends/aot/cubin.ts";
export { CUBIN_ARCHS, type CubinArch } from "./backends/ptx/ptxas.ts";

// launch: load once, launch many times on device buffers (issue 19, item 1)
export {
  type BufferRef,
  type KernelSource,
  type LaunchBuffers,
  LaunchError,
  type LaunchOptions,
  type LaunchSizes,
  LoadedKernel,
  loadKernel,
  type LoadKernelOptions,
} from "./backends/cuda/kernel.ts";
export {
  decodeTensor,
  downloadTensor,
  encodeTensor,
  type HostArray,
  type HostValues,
  uploadTensor,
} from "./harness/device_tensor.ts";
export {
  CudaFunction,
  CudaModule,
  CudaStream,
  DeviceBuffer,
  type JitInfo,
} from "./backends/cuda/driver.ts";

// aot python
export { pythonModule, type PythonModuleOptions } from "./backends/aot/python.ts";

// fuzz
export { type Limit, type LimitName, LIMITS } from "./dsl/limits.ts";

// strides (issue 20): the type a TensorDeclAst's `strides` names
export type { StridesAst } from "./dsl/ast.ts";

// stride-launch (issue 20): the manifest's parameter kinds, "stride" among them.
export type { ParamKind } from "./backends/ptx/manifest.ts";

/**
 * Grouped launches (DESIGN §6.2): `LoadedKernel.groupedLaunch(problems)` checks
 * every problem of a grouped kernel as an ordinary launch of its form, uploads
 * the problem table once and launches a persistent grid as often as wanted;
 * {@link moeProblems} builds the problems of the mixture-of-experts form (one
 * packed A and D, `offs` the end row of each expert, B one matrix per expert);
 * {@link runGrouped} is `gemm run --groups`.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { compile, Cuda, cudaAvailable, downloadTensor, loadKernel, moeProblems, uploadTensor }
 *   from "./mod.ts";
 * const ck = compile(`kernel experts grouped { X: bf16[M, K] row  W: bf16[K, N] col
 *   Y: f32[M, N] row
 *   Y[m, n] = X[m, k] * W[k, n] }`).kernels[0]!;
 * // Three experts with 5, 0 and 3 tokens: the second is a problem with M = 0.
 * const offs = [5, 5, 8];
 * const at = (n: number) => BigInt(n) << 32n;
 * const ps = moeProblems(ck.manifest,
 *   { a: at(1), b: at(2), d: at(3), offs, sizes: { N: 16, K: 32 } });
 * equal(ps[1]!.sizes.M, 0);
 * equal(ps[2]!.buffers.X, at(1) + 5n * 32n * 2n); // expert 2 starts at row 5
 * if (cudaAvailable().ok) {
 *   using cuda = Cuda.open();
 *   using k = loadKernel(ck, { cuda });
 *   const a = uploadTensor(cuda, new Float32Array(8 * 32).fill(0.5), "bf16");
 *   const b = uploadTensor(cuda, new Float32Array(3 * 16 * 32).fill(0.25), "bf16");
 *   const d = cuda.alloc(8 * 16 * 4);
 *   using g = k.groupedLaunch(moeProblems(ck.manifest, { a, b, d, offs, sizes: { N: 16, K: 32 } }));
 *   g.launch();
 *   cuda.synchronize();
 *   equal(downloadTensor(d, "f32")[0], 4); // 32 x 0.5 x 0.25
 * }
 * ```
 */
export {
  GroupedLaunch,
  type GroupedLaunchOptions,
  type GroupedPlan,
  type GroupedProblem,
  type MoeOperands,
  moeProblems,
  planGroupedLaunch,
} from "./backends/cuda/grouped.ts";
export {
  checkGroupedRun,
  type GroupedProblemRun,
  type GroupedRunOptions,
  type GroupedRunReport,
  runGrouped,
} from "./harness/run_grouped.ts";
// The grouped kernel's types that the exported Kernel, KernelManifest and SimLaunch name
// (for `deno doc --lint`).
export type { GroupField, GroupLayout } from "./ir/kernel.ts";
export type { ManifestGroup } from "./backends/ptx/manifest.ts";
export type { SimBuffer } from "./backends/sim/mod.ts";

/**
 * Structured-sparse A on the host (DESIGN §6.3, issue 21; numerics/sparse.ts, the
 * format, and numerics/sparse_compress.ts, the values):
 * {@link compressSparse} turns a dense `[batch, rows, K]` matrix with the
 * `mma.sp` pattern (2:4 for f16/bf16/s8/u8, 1:2 for f32/tf32, 4:8 in pairs
 * for s4/u4) into A's kept values (`[batch, rows, K/2]`, encoded as the type
 * is stored) and the canonical `A_meta` metadata (one 4-bit pair of 2-bit
 * indices per group, little-endian u32 words row by row), refusing a matrix
 * that breaks the pattern with a {@link SparsePatternError} that lists where,
 * or pruning it with `prune: true`; {@link decompressSparse} is the inverse;
 * {@link sparseValueBytes} and {@link sparseMetaBytes} size the buffers.
 *
 * @example
 * ```ts
 * import { deepEqual, equal, throws } from "node:assert/strict";
 * import {
 *   compressSparse, decompressSparse, randomSparse, SparsePatternError, sparseMetaBytes,
 *   sparseValueBytes,
 * } from "./mod.ts";
 * // One f16 row of 8 whose kept indices are (0, 3) and (1, 2).
 * const c = compressSparse([1.5, 0, 0, -2, 0, 3, 4, 0], "f16", 1, 8);
 * equal(c.meta[0], 0x4444449c); // nibbles 0b1100, 0b1001, then padding 0b0100
 * deepEqual([...decompressSparse(c, "f16", 1, 8)], [1.5, 0, 0, -2, 0, 3, 4, 0]);
 * // A random 64 x 128 bf16 matrix with the pattern, and the buffer sizes.
 * const a = randomSparse("bf16", 64, 128, { seed: 1 });
 * const s = compressSparse(a, "bf16", 64, 128);
 * equal(s.values.byteLength, sparseValueBytes(64, 128, "bf16")); // 64 x 64 x 2
 * equal(s.meta.byteLength, sparseMetaBytes(64, 128, "bf16")); // 64 rows x 2 words x 4
 * // Three nonzeros in a group of four: refused, or pruned on request.
 * throws(() => compressSparse([1, 2, 3, 0], "f16", 1, 4), SparsePatternError);
 * equal(compressSparse([1, 2, 3, 0], "f16", 1, 4, { prune: true }).pruned, 1);
 * ```
 */
export {
  isSparseDtype,
  SPARSE_DTYPES,
  type SparseCompressed,
  type SparseDtype,
  type SparseGroup,
  sparseGroup,
  sparseMetaBytes,
  type SparseMetaLayout,
  sparseMetaPosition,
  sparseMetaWordsPerRow,
  sparseValueBytes,
} from "./numerics/sparse.ts";
export {
  checkSparsePattern,
  compressSparse,
  decompressSparse,
  pruneSparse,
  randomSparse,
  type RandomSparseOptions,
  type SparseCheckOptions,
  type SparseCompressOptions,
  SparsePatternError,
  type SparsePatternReport,
  type SparseShapeOptions,
  type SparseViolation,
} from "./numerics/sparse_compress.ts";

// sparse-mma (issue 21): the mma.sp rows beside the dense MMA table (ir/mma_sparse.ts), each
// confirmed on the H200 by harness/mma_probe.ts (bench/results/2026-12-02-h200-issue21-mma-sp/).
export {
  findSparseMma,
  keptColumns,
  metaNibble,
  SPARSE_MMA_TABLE,
  type SparseMetaMap,
  sparseMmaByName,
  type SparseMmaShape,
} from "./ir/mma_sparse.ts";
