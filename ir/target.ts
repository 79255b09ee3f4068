/**
 * The compile targets: every fact about a GPU architecture that the compiler
 * uses, one row a target. The checker (dsl/check/schedule.ts: the `target` key, E0112),
 * the passes (passes/tile.ts: the SM count and the minimum grid;
 * passes/warp.ts: threads per block; passes/pipeline.ts: shared memory;
 * passes/mma.ts: registers and the MMA shapes; passes/occupancy.ts: blocks
 * per SM), the lowering (a thread's registers: the epilogue's loads ahead),
 * the PTX printer (`.version`, `.target`, the occupancy bounds), ptxas
 * (`-arch`), the manifest (its `target`), the CLI (`--target`, its help) and
 * the simulator (threads and shared memory a block may have) read this table.
 *
 * ## Adding a target
 * One row in {@link TARGETS}, written as the row it extends plus what differs
 * (sm86 is sm80 with less shared memory and fewer threads an SM). What is new
 * about it goes where the compiler uses it:
 * - a new figure of an existing kind (shared memory, registers, SMs): the
 *   row's field; nothing else changes.
 * - new instructions (sm_90's `wgmma`, TMA, `mbarrier`): a name in
 *   {@link Instruction} and in the row's `instructions`; the pass that
 *   chooses them asks {@link targetHas}; the kernel IR op, its PTX template
 *   (backends/ptx/print.ts) and its simulator semantics (backends/sim/) are
 *   the new parts.
 * - new MMA shapes: rows of ir/mma_table.ts (their fragment maps), and their
 *   names in the target's `mmaShapes`; {@link mmaShapesOn} then offers them
 *   to `gemm-mma`.
 * - new dtypes (sm_90's e4m3/e5m2): ir/dtype.ts, with the checker refusing
 *   them where {@link targetHas} says the target lacks their instructions.
 * tests/target_test.ts checks every row's invariants (and assembles its PTX
 * spelling with ptxas when one is installed); the other tests iterate over
 * {@link TARGET_NAMES}.
 *
 * Sources of the figures: the CUDA C++ Programming Guide, "Compute
 * Capabilities" (technical specifications per compute capability 8.0,
 * 8.6 and 9.0), and `cudaDevAttrMaxSharedMemoryPerBlockOptin` /
 * `cudaDevAttrMaxSharedMemoryPerMultiprocessor` as the driver reports them.
 *
 * @module
 */

import {
  MMA_SHAPES,
  type MmaBitOp,
  type MmaDtype,
  type MmaShape,
  mmaShapesFor,
} from "./mma_table.ts";

/**
 * An instruction family the compiler emits that not every target has (the
 * PTX ISA's "Target ISA notes" of each): the passes ask {@link targetHas}
 * before choosing one.
 */
export type Instruction =
  /** `mma.sync.aligned` (warp-level tensor-core MMA). */
  | "mma.sync"
  /** `cp.async` (global to shared memory without registers), with its groups. */
  | "cp.async"
  /** `ldmatrix.sync.aligned.m8n8` (MMA fragments from shared memory). */
  | "ldmatrix"
  /** `ldmatrix ... .trans` (16-bit fragments of an M/N-contiguous tile). */
  | "ldmatrix.trans"
  /** `cvt.rna.tf32.f32` (rounding f32 to tf32 for the MMA). */
  | "cvt.tf32"
  /** `cvt` to and from `.bf16`. */
  | "cvt.bf16"
  /** `createpolicy.fractional` (L2 cache-eviction policies, PTX ISA 7.4) and the
   * `.L2::cache_hint` operand of `cp.async`, `ld.global` and, with TMA, of
   * `cp.async.bulk.tensor`. */
  | "createpolicy"
  /** `wgmma.mma_async` (sm_90a warpgroup MMA from shared memory), its fence, groups,
   * and `fence.proxy.async`. */
  | "wgmma"
  /** `cp.async.bulk.tensor` (sm90's TMA copies through tensor maps), `mbarrier` with
   * transaction counts, `setmaxnreg`. */
  | "tma"
  /** `griddepcontrol.{wait,launch_dependents}` (sm_90's programmatic dependent launch). */
  | "griddepcontrol";

/** One compile target's facts. */
export interface TargetInfo {
  /** The DSL and API spelling (`target sm80`). */
  readonly name: string;
  /** The PTX `.target` and ptxas `-arch` spelling. */
  readonly ptx: string;
  /** The PTX ISA version of the module's `.version` line (the lowest that has
   * every instruction the compiler emits for the target). */
  readonly ptxVersion: string;
  /** Shared memory one block may use, in bytes: the opt-in maximum
   * (cudaDevAttrMaxSharedMemoryPerBlockOptin). The stage budget of
   * `gemm-pipeline` (E0204). */
  readonly smemPerBlock: number;
  /** Shared memory of one SM, in bytes (cudaDevAttrMaxSharedMemoryPerMultiprocessor). */
  readonly smemPerSm: number;
  /** 32-bit registers of one SM's register file. */
  readonly registersPerSm: number;
  /** Registers one thread may use (the PTX limit; E0208). */
  readonly registersPerThread: number;
  /** Threads a block may have (E0205, the printer, the simulator). */
  readonly maxThreadsPerBlock: number;
  /** Resident threads of one SM (the bound on `.minnctapersm N` x threads). */
  readonly maxThreadsPerSm: number;
  /** Resident blocks of one SM. */
  readonly maxBlocksPerSm: number;
  /** The SM count the default tile plans for when the compile options give
   * none (`sms`, `--sms`). */
  readonly defaultSms: number;
  /** The GPU {@link TargetInfo.defaultSms} is taken from, for help texts. */
  readonly defaultGpu: string;
  /** Blocks a default tile should give at least when the sizes are known
   * (`gemm-tile` halves the tile while the grid is smaller). */
  readonly minBlocks: number;
  /** The name of the MMA instruction set the target's shapes come from, for
   * messages (`SM80 has 16x8x8, 16x8x16`). */
  readonly mmaIsa: string;
  /** The instruction families the target has. */
  readonly instructions: ReadonlySet<Instruction>;
  /** The names of the ir/mma_table.ts rows the target has. */
  readonly mmaShapes: ReadonlySet<string>;
}

/** Everything Ampere's first chip has: every instruction above. */
const AMPERE_INSTRUCTIONS: ReadonlySet<Instruction> = Object.freeze(
  new Set<Instruction>([
    "mma.sync",
    "cp.async",
    "ldmatrix",
    "ldmatrix.trans",
    "cvt.tf32",
    "cvt.bf16",
    "createpolicy",
  ]),
);

/** sm_90a: Ampere's instructions, the warpgroup MMA, TMA and programmatic dependent launch. */
const HOPPER_INSTRUCTIONS: ReadonlySet<Instruction> = Object.freeze(
  new Set<Instruction>([...AMPERE_INSTRUCTIONS, "wgmma", "tma", "griddepcontrol"]),
);

/** Every row of the MMA table: they are the SM80 `mma.sync` variants. */
const SM80_MMA: ReadonlySet<string> = Object.freeze(new Set(MMA_SHAPES.map((s) => s.name)));

const SM80 = Object.freeze(
  {
    name: "sm80",
    ptx: "sm_80",
    ptxVersion: "8.0",
    smemPerBlock: 166912, // 163 KiB
    smemPerSm: 167936, // 164 KiB
    registersPerSm: 65536,
    registersPerThread: 255,
    maxThreadsPerBlock: 1024,
    maxThreadsPerSm: 2048,
    maxBlocksPerSm: 32,
    defaultSms: 108,
    defaultGpu: "an A100",
    // One block per SM of an A100, the chip sm_80 was made for.
    minBlocks: 108,
    mmaIsa: "SM80",
    instructions: AMPERE_INSTRUCTIONS,
    mmaShapes: SM80_MMA,
  } as const satisfies TargetInfo,
);

/**
 * A row of {@link TARGETS}: a {@link TargetInfo} whose name and PTX spelling
 * are literal types (so that {@link Target} and {@link PtxTarget} are unions
 * of them).
 */
export interface TargetRow<Name extends string, Ptx extends string> extends TargetInfo {
  /** The DSL and API spelling (`target sm80`). */
  readonly name: Name;
  /** The PTX `.target` and ptxas `-arch` spelling. */
  readonly ptx: Ptx;
}

/**
 * The type of {@link TARGETS}, written out for `deno doc` and JSR (a published
 * constant needs an explicit type); the compiler checks it against the table.
 */
export interface TargetTable {
  /** sm_80: the A100's chip (GA100). */
  readonly sm80: TargetRow<"sm80", "sm_80">;
  /** sm_86: GA10x (RTX 30xx, A40, A10). */
  readonly sm86: TargetRow<"sm86", "sm_86">;
  /** sm_90a: Hopper (H100, H200), its architecture-specific features included. */
  readonly sm90: TargetRow<"sm90", "sm_90a">;
}

/**
 * Every target, by name. The order is the CLI's and the help's; the first is the default.
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { TARGETS } from "./target.ts";
 * equal(TARGETS.sm86.ptx, "sm_86");
 * equal(TARGETS.sm80.registersPerSm, 65536);
 * ```
 */
export const TARGETS: TargetTable = Object.freeze(
  {
    sm80: SM80,
    // sm_86 (GA10x) runs every sm_80 instruction and MMA shape; it has less
    // shared memory and fewer resident threads. Its default SM count and
    // minimum grid stay the A100's: the tile a program gets when no SM count
    // is given does not change with the target.
    sm86: Object.freeze(
      {
        ...SM80,
        name: "sm86",
        ptx: "sm_86",
        smemPerBlock: 101376, // 99 KiB
        smemPerSm: 102400, // 100 KiB
        maxThreadsPerSm: 1536,
        maxBlocksPerSm: 16,
      } as const satisfies TargetInfo,
    ),
    // sm_90a (Hopper; issue 23, DESIGN §6.4): every sm_80 instruction and MMA shape, more
    // shared memory, and an H100/H200's 132 SMs by default, and wgmma: 16-bit dense
    // K-major programs run warpgroup MMAs from shared memory (passes/wgmma.ts). TMA
    // bulk tensor copies, mbarrier and clusters are not in the row yet (a shortcut of
    // issue 23): operands arrive by cp.async, and the other programs are the sm_80
    // kernels assembled for sm_90a, natively instead of through the driver's JIT.
    // `a`: the architecture-specific target that wgmma and setmaxnreg need (PTX ISA 8.0).
    sm90: Object.freeze(
      {
        ...SM80,
        name: "sm90",
        ptx: "sm_90a",
        ptxVersion: "8.0",
        smemPerBlock: 232448, // 227 KiB
        smemPerSm: 233472, // 228 KiB
        defaultSms: 132,
        defaultGpu: "an H100 SXM or H200",
        minBlocks: 132,
        mmaIsa: "SM80 (mma.sync on SM90) and SM90 wgmma",
        instructions: HOPPER_INSTRUCTIONS,
      } as const satisfies TargetInfo,
    ),
  } as const satisfies Record<string, TargetInfo>,
);

/** A compile target's name. */
export type Target = keyof typeof TARGETS;

/** A target's PTX spelling (`sm_80`): the `.target`, ptxas `-arch` and the manifest's `target`. */
export type PtxTarget = (typeof TARGETS)[Target]["ptx"];

/**
 * The targets' names, in table order.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { TARGET_NAMES } from "./target.ts";
 * deepEqual(TARGET_NAMES, ["sm80", "sm86", "sm90"]);
 * ```
 */
export const TARGET_NAMES: readonly Target[] = Object.freeze(Object.keys(TARGETS) as Target[]);

/** The target of a program whose schedule and options name none. */
export const DEFAULT_TARGET: Target = TARGET_NAMES[0]!;

/**
 * The facts of one target.
 *
 * @param t The target's name.
 * @returns Its row of {@link TARGETS}.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { targetInfo } from "./target.ts";
 * equal(targetInfo("sm86").ptx, "sm_86");
 * ```
 */
export function targetInfo(t: Target): (typeof TARGETS)[Target] {
  return TARGETS[t];
}

/**
 * Whether a string is a target's DSL name (`sm80`; not the PTX spelling).
 *
 * @param text The string.
 * @returns True for a row's name.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { isTargetName } from "./target.ts";
 * ok(isTargetName("sm86"));
 * ok(!isTargetName("sm_86"));
 * ```
 */
export function isTargetName(text: string): text is Target {
  return Object.hasOwn(TARGETS, text);
}

/**
 * Reads a target as a user writes it: the DSL name (`sm80`) or the PTX one
 * (`sm_80`).
 *
 * @param text The spelling.
 * @returns The target, or null when no row has that name.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { parseTarget } from "./target.ts";
 * equal(parseTarget("sm_86"), "sm86");
 * equal(parseTarget("sm70"), null);
 * ```
 */
export function parseTarget(text: string): Target | null {
  for (const t of TARGET_NAMES) {
    if (TARGETS[t].name === text || TARGETS[t].ptx === text) return t;
  }
  return null;
}

/**
 * The targets' names joined for a message.
 *
 * @param sep The separator before the last name.
 * @returns `sm80, sm86 or sm90` (with two rows: `sm80 or sm86`).
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { targetList } from "./target.ts";
 * equal(targetList(), "sm80, sm86 or sm90");
 * ```
 */
export function targetList(sep = " or "): string {
  return TARGET_NAMES.length <= 2
    ? TARGET_NAMES.join(sep)
    : `${TARGET_NAMES.slice(0, -1).join(", ")}${sep}${TARGET_NAMES.at(-1)}`;
}

/**
 * The targets' names as a usage line's choice.
 *
 * @returns `sm80|sm86|sm90`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { targetChoices } from "./target.ts";
 * equal(targetChoices(), "sm80|sm86|sm90");
 * ```
 */
export function targetChoices(): string {
  return TARGET_NAMES.join("|");
}

/**
 * The default SM count as help texts say it.
 *
 * @param t The target (default: {@link DEFAULT_TARGET}).
 * @returns `108, an A100`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { defaultSmsText } from "./target.ts";
 * equal(defaultSmsText(), "108, an A100");
 * ```
 */
export function defaultSmsText(t: Target = DEFAULT_TARGET): string {
  return `${TARGETS[t].defaultSms}, ${TARGETS[t].defaultGpu}`;
}

/**
 * Whether a target has an instruction family.
 *
 * @param t The target.
 * @param i The instruction family.
 * @returns True when the target's row lists it.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { targetHas } from "./target.ts";
 * ok(targetHas("sm86", "ldmatrix"));
 * ```
 */
export function targetHas(t: Target, i: Instruction): boolean {
  return TARGETS[t].instructions.has(i);
}

/**
 * The MMA shapes a target has for the given operand and accumulator types
 * and bit op: {@link mmaShapesFor}'s rows (ascending K) that the target's row
 * lists, none where it lacks `mma.sync`.
 *
 * @param t The target.
 * @param aType A's type.
 * @param bType B's type.
 * @param cType The accumulator's type.
 * @param op The bit op (`b1` rows only).
 * @returns The rows, frozen.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { mmaShapesOn } from "./target.ts";
 * ok(mmaShapesOn("sm86", "f16", "f16", "f32").length > 0);
 * ```
 */
export function mmaShapesOn(
  t: Target,
  aType: MmaDtype,
  bType: MmaDtype,
  cType: MmaDtype,
  op?: MmaBitOp,
): readonly MmaShape[] {
  const row = TARGETS[t];
  if (!row.instructions.has("mma.sync")) return Object.freeze([]);
  return Object.freeze(
    mmaShapesFor(aType, bType, cType, op).filter((s) => row.mmaShapes.has(s.name)),
  );
}

/**
 * Whether `blocks` blocks of a kernel fit one SM's shared memory and
 * threads, as the lowering decides blocks per SM. The shared memory is
 * weighed against the per-block opt-in ({@link TargetInfo.smemPerBlock}),
 * as `Lowering.minBlocksPerSm` always has (the per-SM figure less the 1 KiB
 * the driver reserves a block is a little lower: switching would change
 * which kernels get two blocks).
 *
 * @param t The target.
 * @param blocks Blocks an SM.
 * @param threads Threads a block.
 * @param smemBytes Dynamic shared memory a block.
 * @returns True when they fit.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { blocksFit } from "./target.ts";
 * ok(blocksFit("sm80", 2, 256, 65536));
 * ok(!blocksFit("sm86", 2, 256, 65536));
 * ```
 */
export function blocksFit(t: Target, blocks: number, threads: number, smemBytes: number): boolean {
  const row = TARGETS[t];
  return blocks <= row.maxBlocksPerSm && blocks * threads <= row.maxThreadsPerSm &&
    blocks * smemBytes <= row.smemPerBlock;
}

/**
 * Registers a thread of a block of `threads` gets when the block has an SM to itself: the
 * register file in equal shares, a multiple of 8 (the allocation unit), at most 256. What a
 * warp-specialized kernel's `setmaxnreg` asks must fit its block's share (passes/wgmma.ts
 * `tmaConsumerRegs`; the simulator checks it).
 *
 * @param t The target.
 * @param threads Threads a block.
 * @returns Registers a thread.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { launchRegisters } from "./target.ts";
 * equal(launchRegisters("sm90", 384), 168);
 * equal(launchRegisters("sm90", 128), 256);
 * ```
 */
export function launchRegisters(t: Target, threads: number): number {
  return Math.min(256, Math.floor(TARGETS[t].registersPerSm / threads / 8) * 8);
}

/**
 * Refuses an instruction family a target lacks, where a pass has chosen it
 * and has no other way yet (no row lacks one today: a new row that does gets
 * this error, naming the pass to teach, rather than PTX that ptxas refuses).
 *
 * @param t The target.
 * @param i The instruction family.
 * @param by What chose it, for the message (`gemm-pipeline's copies`).
 * @throws {Error} When the target's row does not list `i`.
 * @example
 * ```ts
 * import { requireInstruction } from "./target.ts";
 * requireInstruction("sm80", "cp.async", "gemm-pipeline's copies");
 * ```
 */
export function requireInstruction(t: Target, i: Instruction, by: string): void {
  if (!targetHas(t, i)) {
    throw new Error(`Target "${t}" has no ${i}: ${by} need another instruction on it`);
  }
}
