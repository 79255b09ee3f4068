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
export type {
  DimRef,
  Epilogue,
  EpilogueExpr,
  GemmKernel,
  MathSpec,
  Plan,
  Problem,
  Schedule,
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
export { formatProbe, type ProbeResult, runProbe } from "./harness/mma_probe.ts";

// doclint: the types that the exports above name in their signatures (issue 19, item 3),
// exported so that `deno doc --lint mod.ts` finds every type a caller sees.
export type { LaunchConfig } from "./backends/cuda/driver.ts";
export type { KernelArg } from "./backends/cuda/params.ts";
export type { CudaEvent, OwnedHandle } from "./backends/cuda/resources.ts";
export type { ManifestWorkspace } from "./backends/ptx/manifest.ts";
export type { BankStatsByKind } from "./backends/sim/types.ts";
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
export type {
  ProbeCount,
  ProbeMapCheck,
  ProbeMismatch,
  ProbeMode,
  ProbeOptions,
} from "./harness/mma_probe.ts";
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
  CvtKind,
  CvtOp,
  FenceOp,
  ForOp,
  Guard,
  IfOp,
  Imm,
  KernelParam,
  LdgOp,
  LdmatrixOp,
  LdsOp,
  MadOp,
  MemWidth,
  MmaOp,
  MovOp,
  MulWideOp,
  Operand,
  PackOp,
  ParamOp,
  PrefetchOp,
  Reg,
  RegType,
  SelpOp,
  SetpOp,
  SmemBaseOp,
  SpecialReg,
  SregOp,
  StgOp,
  StsOp,
  UnOp,
  UnpackOp,
  WaitOp,
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
