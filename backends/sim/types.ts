/**
 * The public types of the simulator: what a launch passes in, what it gets
 * back, and the error it raises.
 *
 * @module
 */

/** Block coordinates `[x, y, z]` in the grid. */
export type BlockCoord = readonly [number, number, number];

/** A tensor argument: its dense storage, read in place and written in place for outputs. */
export interface SimTensorArg {
  /** The tensor's bytes. */
  readonly bytes: Uint8Array;
}

/** An argument of a launch: a tensor's storage, or the number a dim or scalar parameter holds. */
export type SimArg = SimTensorArg | number;

/** Global memory no parameter names: a grouped kernel's problem tensors, whose
 * addresses its table holds (see `simBufferAddress`). */
export interface SimBuffer {
  /** The buffer's bytes, read and written in place. */
  readonly bytes: Uint8Array;
  /** What it is, for error messages. */
  readonly name?: string;
}

/** One launch: the grid and an argument for every kernel parameter, by name. */
export interface SimLaunch {
  /** The grid `[x, y, z]`, in blocks. */
  readonly grid: readonly [number, number, number];
  /** An argument for every kernel parameter, by name. */
  readonly args: Readonly<Record<string, SimArg>>;
  /** More global buffers, after the parameters' tensors (default none). */
  readonly buffers?: readonly SimBuffer[];
}

/** Options of {@link simulate}. */
export interface SimOptions {
  /** Simulate only these blocks (default: the whole grid, x fastest, then y, then z). */
  readonly blocks?: readonly BlockCoord[];
  /** Check shared-memory (and wgmma accumulator) hazards (default true). Turning it off saves
   * about a third of the time. */
  readonly hazards?: boolean;
  /** Record at most this many distinct hazards (default 20); later ones are only counted. */
  readonly maxHazards?: number;
  /**
   * How the concurrent roles of a warp-specialized kernel (the branches of a non-uniform
   * `if` that wait on mbarriers, _roles.ts) take turns. A role gives way when its
   * `mbarwait` blocks, and after an `mbararrive` or `tma` that completed a barrier's phase
   * (so a role that phase unblocks may run first); the policy then picks, among the roles
   * not blocked:
   * - `producer-first` (default): the branch that issues TMA copies (else the then-branch),
   *   so that a producer runs as far ahead as its barriers let it: the order that exposes
   *   stages overwritten while read or before they were consumed, and (through the
   *   per-thread visibility of TMA bytes) reads before the wait;
   * - `consumer-first`: the other branch first, so consumers run ahead (reads of stages
   *   not yet loaded show as `uninitialized-read`);
   * - `alternate`: another runnable branch than the one that gave way (round robin);
   * - `rank-first`: in a cluster kernel, the roles of the lowest-ranked CTA first (its
   *   producer, then its consumers), so that CTA 0 runs as far ahead as its barriers let it
   *   while the others lag; otherwise as `producer-first`.
   *
   * In a cluster kernel (`Kernel.cluster`) each branch runs once per CTA, and the order the
   * first three policies pick in is every CTA's producer by rank, then every CTA's consumers
   * by rank: `producer-first` lets CTA 0's consumers run ahead of CTA 1's, `consumer-first`
   * CTA 1's (the highest rank's) ahead of CTA 0's.
   */
  readonly schedule?: RoleSchedule;
}

/** The scheduling policies of {@link SimOptions.schedule}. */
export type RoleSchedule = "producer-first" | "consumer-first" | "alternate" | "rank-first";

/**
 * Kinds of shared-memory hazard:
 * - `read-before-landed`: an `lds` or `ldmatrix` read bytes that an issued
 *   cp.async (of any thread of the block) will write but whose group has not
 *   completed yet.
 * - `write-before-landed`: an `sts` or another cp.async wrote bytes that an
 *   outstanding cp.async will also write (the order of the two is undefined); or (sm90)
 *   an `sts`, cp.async or TMA copy wrote bytes of a TMA copy still in flight.
 * - `race`: a shared byte written by one warp and read or written by another
 *   warp with no `bar` in between (cp.async data counts as written by the
 *   issuing warp both when it is issued and when it lands).
 * - `unbalanced-cp.async`: copies still pending (never committed, or committed
 *   and never waited for) when the block ends.
 *
 * And of the warpgroup MMAs (`wgmma`, asynchronous: pending from issue until the
 * `wgwait` that retires its `wgcommit` group; a wgmma's shared reads at issue also
 * count as reads for `race` and `read-before-landed`, and as reads by its warpgroup's
 * 4 warps again when it retires):
 * - `accumulator-before-wait`: an operation other than wgmma read or wrote a
 *   register that is the accumulator (`d`) of a pending wgmma of its warpgroup.
 * - `unfenced-accumulator`: a wgmma's accumulators were written by another operation
 *   of its warpgroup since the warpgroup's last `wgfence`.
 * - `write-during-wgmma`: a write to shared memory (`sts`, cp.async issued or
 *   landing, a TMA copy) of bytes a pending wgmma reads.
 * - `unfenced-async-proxy`: a wgmma read shared bytes written through the generic
 *   proxy (`sts`, cp.async) whose writing warp has run no `proxyfence` since.
 * - `unbalanced-wgmma`: wgmmas still pending (never committed, or committed and
 *   never waited for) when the block ends.
 *
 * And of sm90's TMA copies and mbarriers (_tma.ts, _mbarrier.ts; a TMA copy's bytes are in
 * flight from its issue until the phase of its barrier that it completes has completed and
 * the reading thread has waited on that phase):
 * - `tma-before-wait`: an `lds`, `ldmatrix` or wgmma read bytes of a TMA copy still in
 *   flight for the reader (`write-before-landed` covers a write of such bytes,
 *   `write-during-wgmma` a TMA copy writing bytes a pending wgmma reads).
 * - `tma-overwrite`: a TMA copy wrote bytes that an earlier TMA copy wrote and that no
 *   thread has waited for (a stage reloaded before it was consumed).
 * - `uninitialized-read`: in a kernel with TMA copies, a read of shared bytes nothing has
 *   written in the block (a consumer running ahead of its producer).
 * - `unpublished-mbarrier`: an mbarrier used by a TMA copy with no `mbarfence` by its
 *   initialising thread since `mbarinit`, or by another warp with no `bar` since.
 * - `unbalanced-tma`: bytes of TMA copies that no thread waited for when the block ends
 *   (reported once a block, at the first such copy).
 *
 * And of the split-K and Stream-K workspace (the kernel's workspace parameter):
 * - `unwritten-partial`: a global load of workspace bytes that no block has stored in this
 *   launch (a partial sum read before its block stored it: the reduction ran too early).
 */
export type HazardKind =
  | "read-before-landed"
  | "write-before-landed"
  | "race"
  | "unbalanced-cp.async"
  | "accumulator-before-wait"
  | "unfenced-accumulator"
  | "write-during-wgmma"
  | "unfenced-async-proxy"
  | "unbalanced-wgmma"
  | "tma-before-wait"
  | "tma-overwrite"
  | "uninitialized-read"
  | "unpublished-mbarrier"
  | "unbalanced-tma"
  | "unwritten-partial"
  | "global-before-griddep-wait";

/** What the simulator's global-address check calls an L2 prefetch: a hint, coherent in L2, so
 * the one global access allowed before `griddep.wait`. */
export const PREFETCH_WHAT = "L2 prefetch";

/** What the global-address check calls the reads that may come before `griddep.wait` where the
 * wait names their tensor in `early` (ir/kernel_sm90.ts `GridDepOp`): never a store or an
 * atomic. */
export const READ_WHATS: ReadonlySet<string> = new Set([
  "global load",
  "cp.async source",
  "TMA source",
]);

/** A hazard, reported once per kind and operation (the first occurrence), with a count. */
export interface Hazard {
  /** Which kind of hazard. */
  readonly kind: HazardKind;
  /** What happened, in words. */
  readonly message: string;
  /** The operation's kernel-IR line (as `printKernel` prints it, without indentation). */
  readonly op: string;
  /** Position of the operation: indices into nested bodies, `else` marking an else branch. */
  readonly path: string;
  /** 1-based line of the operation in `printKernel(kernel)`. */
  readonly line: number;
  /** The block of the first occurrence (in a cluster kernel: the CTA whose shared memory it
   * concerns, else the CTA of its first warp). */
  readonly block: BlockCoord;
  /** The warps involved (the accessing warp first; in a cluster kernel numbered across the
   * cluster: warp w of CTA rank r is r P / 32 + w, P its threads rounded up to 128). */
  readonly warps: readonly number[];
  /** Shared-memory byte address of the first occurrence, or null. */
  readonly address: number | null;
  /** How many lane accesses (or, for `unbalanced-cp.async`, `unbalanced-wgmma` and
   * `unbalanced-tma`, blocks; for the other wgmma kinds, warpgroup-level accesses or 16-byte operand
   * chunks) showed it. */
  count: number;
}

/** Bank-conflict figures of one kind of shared-memory access. */
export interface BankStats {
  /** Warp-level requests. */
  requests: number;
  /** Wavefronts needed (32 banks of 4 bytes; lanes reading one word share it). */
  wavefronts: number;
  /** Wavefronts a conflict-free access of the same bytes would need. */
  ideal: number;
}

/** Bank conflicts of a launch, by shared-memory access kind. */
export interface BankStatsByKind {
  /** `ld.shared`. */
  readonly lds: BankStats;
  /** `st.shared`. */
  readonly sts: BankStats;
  /** `ldmatrix`. */
  readonly ldmatrix: BankStats;
  /** The shared-memory side of `cp.async`. */
  readonly cpasync: BankStats;
}

/** Statistics of a launch (over the simulated blocks). */
export interface SimStats {
  /** Warp-level instructions issued (a warp issues an op when any lane reaches it, guarded or not). */
  warpInstructions: number;
  /** The same, by op kind (`bin`, `ldg`, `mma`, ...). */
  readonly byKind: Record<string, number>;
  /** Bytes loaded from global memory. */
  globalBytesRead: number;
  /** Bytes stored to global memory. */
  globalBytesWritten: number;
  /** Lane-level `prefetch.global.L2` (each asks the L2 for one line; no bytes move to the SM). */
  l2Prefetches: number;
  /** Bytes loaded from shared memory. */
  sharedBytesRead: number;
  /** Bytes stored to shared memory. */
  sharedBytesWritten: number;
  /** Warp-level `mma` instructions. */
  mmas: number;
  /** TMA copies (`tma`, one per issuing lane), and the box bytes they wrote to shared memory
   * (zero-filled ones included; the global bytes read are in {@link globalBytesRead}). */
  tmaCopies: number;
  /** See {@link tmaCopies}. */
  tmaBytes: number;
  /** Times an `mbarwait` found its phase incomplete and its role gave way (0 in a kernel
   * without roles, where such a wait is a deadlock). */
  mbarrierBlocked: number;
  /** Bank conflicts by access kind. */
  readonly banks: BankStatsByKind;
}

/** What {@link simulate} returns. */
export interface SimResult {
  /** Blocks simulated (CTAs: a cluster kernel's clusters times their size). */
  readonly blocks: number;
  /** The first distinct hazards (at most `maxHazards`). */
  readonly hazards: readonly Hazard[];
  /** All hazard occurrences, recorded or not. */
  readonly hazardCount: number;
  /** Counters of the simulated blocks. */
  readonly stats: SimStats;
}

/** Where in the kernel and the launch an error happened. */
export interface SimErrorWhere {
  /** The operation's kernel-IR line. */
  readonly op: string;
  /** Its position (see {@link Hazard.path}). */
  readonly path: string;
  /** Its 1-based line in `printKernel(kernel)`. */
  readonly line: number;
  /** The block, when the error happened inside one. */
  readonly block: BlockCoord | null;
  /** The warp within the block, when known. */
  readonly warp: number | null;
  /** The lane within the warp, when known. */
  readonly lane: number | null;
}

/**
 * An error of the simulated program (out-of-bounds or misaligned access, a bad
 * cp.async size, non-uniform control flow where the IR promises uniformity, a
 * malformed operation). The message names the operation, its position, the
 * block, warp and lane; the same facts are fields.
 *
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { SimError } from "./types.ts";
 * const where = { op: "bar.sync 0", path: "3", line: 5, block: [0, 0, 0] as const, warp: 1, lane: 7 };
 * const e = new SimError("Misaligned access", where);
 * equal(e.message, 'Misaligned access: at "bar.sync 0" (op 3, line 5), block (0, 0, 0), warp 1, lane 7');
 * deepEqual(e.where, where);
 * ```
 */
export class SimError extends Error {
  /** The operation and the thread, where known. */
  readonly where: SimErrorWhere | null;

  /**
   * An error with its message and, when known, where it happened.
   *
   * @param message What went wrong (the location is appended when given).
   * @param where Where it went wrong.
   */
  constructor(message: string, where: SimErrorWhere | null = null) {
    super(where === null ? message : `${message}: ${describeWhere(where)}`);
    this.name = "SimError";
    this.where = where;
  }
}

/**
 * The location part of a {@link SimError} message.
 *
 * @param w The location.
 * @returns E.g. `at "{%b3} = ldg.b32 [%rd2]" (op 4/1, line 9), block (0, 0, 0), warp 1, lane 3`.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { describeWhere } from "./types.ts";
 * const w = { op: "bar.sync 0", path: "3", line: 5, block: [1, 0, 0] as const, warp: 2, lane: null };
 * equal(describeWhere(w), 'at "bar.sync 0" (op 3, line 5), block (1, 0, 0), warp 2');
 * ```
 */
export function describeWhere(w: SimErrorWhere): string {
  let s = `at "${w.op}" (op ${w.path}, line ${w.line})`;
  if (w.block !== null) s += `, block (${w.block.join(", ")})`;
  if (w.warp !== null) s += `, warp ${w.warp}`;
  if (w.lane !== null) s += `, lane ${w.lane}`;
  return s;
}
