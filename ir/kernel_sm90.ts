/**
 * The kernel IR's operations of sm90 (issue 23, DESIGN §6.4): the warpgroup MMA and its
 * fence, groups and proxy fence, and the warp-specialized pipeline's mbarriers, TMA copies and
 * register reallocation. They are members of ir/kernel.ts's `Op`, which re-exports them; the
 * verifier refuses them on targets without the instructions (ir/target.ts `wgmma`, `tma`).
 *
 * @module
 */

import type { Guard, Operand, Reg } from "./kernel.ts";

/**
 * `wgmma.mma_async.sync.aligned` of the wgmma table row named `shape` (ir/wgmma_table.ts;
 * sm_90a, issue 23): the warpgroup of the executing thread (warps 4g .. 4g + 3, all 128
 * lanes active) multiplies a 64 x K tile of A by a K x N tile of B, both read from shared
 * memory, into its 64 x N accumulator. Each thread's `d` are its accumulator registers in
 * the ISA's order (the row's `accRegs`): for the n8 block j, registers 4j .. 4j + 3 (f32,
 * s32) hold the m16n8 accumulator fragment of ir/mma_table.ts at rows 16 (warp % 4) ..,
 * columns 8j .., as do registers 2j, 2j + 1 (f16x2) of an f16 accumulator.
 *
 * Operands (the layout `WGMMA_SMEM` of ir/wgmma_table.ts): `a` and `b` are u32
 * shared addresses of A's 64 x K and B's N x K tiles, K contiguous, rows of 128 bytes
 * in groups of 8 (1,024 bytes), the 128-byte swizzle on the absolute address (bits 4-6
 * XOR bits 7-9), so a tile starts at a 1024-byte boundary plus an offset along K below
 * 128 bytes. The printer encodes them as the instruction's matrix descriptors.
 *
 * Asynchronous: the op starts the multiply; it completes at the `wgwait` that retires
 * its group (`wgcommit`). Until then the `d` registers must be neither read nor written
 * by other operations, and the shared bytes it reads must not be written; `d` written by
 * other operations since the last `wgfence` must be fenced before it starts; shared
 * memory written through the generic proxy (sts, cp.async) needs a `proxyfence` by the
 * writing thread and a `bar` before a wgmma reads it. The simulator reports each
 * violation as a hazard.
 */
export interface WgmmaOp {
  /** The operation's tag. */
  readonly op: "wgmma";
  /** The wgmma table row's name. */
  readonly shape: string;
  /** The accumulators (read unless `scaleD` is 0, and written). */
  readonly d: readonly Reg[];
  /** A's tile: its shared address (u32). */
  readonly a: Reg;
  /** B's tile: its shared address (u32). */
  readonly b: Reg;
  /** 1: d = a * b + d; 0: d = a * b. */
  readonly scaleD: 0 | 1;
}

/** `wgmma.fence.sync.aligned`: orders this warpgroup's register writes (of wgmma
 * accumulators) before the wgmmas that follow. Warpgroup-collective. */
export interface WgFenceOp {
  /** The operation's tag. */
  readonly op: "wgfence";
}

/** `wgmma.commit_group.sync.aligned`: closes the warpgroup's group of wgmmas issued
 * since the last commit. Warpgroup-collective. */
export interface WgCommitOp {
  /** The operation's tag. */
  readonly op: "wgcommit";
}

/** `wgmma.wait_group.sync.aligned n`: waits until at most `n` of the warpgroup's
 * committed groups are pending; the others have completed (their accumulators written,
 * their shared reads done). Warpgroup-collective. */
export interface WgWaitOp {
  /** The operation's tag. */
  readonly op: "wgwait";
  /** Groups that may stay pending. */
  readonly n: number;
}

/** `fence.proxy.async.shared::cta`: this thread's shared-memory writes through the
 * generic proxy (st.shared, cp.async) are ordered before later accesses through the
 * async proxy (wgmma operands) once a barrier has made them the block's. */
export interface ProxyFenceOp {
  /** The operation's tag. */
  readonly op: "proxyfence";
}

/**
 * `mbarrier.init.shared::cta.b64 [addr], count` (sm90): the 8-byte barrier at shared address
 * `addr` (8-byte aligned) starts phase 0, expecting `count` arrivals and no transaction bytes.
 * A phase completes when its arrivals and its transaction bytes (from `mbararrive`'s `tx`
 * and the copies of `tma` that name it) are all in; the next phase starts at once. One
 * thread initialises; an `mbarfence` and a `bar` publish the barrier to the block and to the
 * async proxy.
 */
export interface MbarInitOp {
  /** The operation's tag. */
  readonly op: "mbarinit";
  /** The barrier's shared address (u32). */
  readonly addr: Reg;
  /** Arrivals a phase expects. */
  readonly count: number;
}

/** `mbarrier.arrive.shared::cta.b64 _, [addr]`, or with `tx`
 * `mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], tx`: the executing thread's arrival
 * on the barrier's current phase, after (with `tx`) raising the bytes the phase waits for.
 * With `cta` (a cluster kernel, {@link Kernel.cluster}): the arrival goes to the barrier at the
 * same offset in the shared memory of the cluster's CTA of that rank (`mapa.shared::cluster`,
 * then `mbarrier.arrive.shared::cluster.b64`, at the default `.release.cta`: a cluster-scope
 * release also waited for the consumer's wgmma group still in flight and halved the main loop's
 * rate, bench/NOTES.md 75), the executing CTA included. */
export interface MbarArriveOp {
  /** The operation's tag. */
  readonly op: "mbararrive";
  /** The barrier's shared address (u32). */
  readonly addr: Reg;
  /** Transaction bytes the phase expects besides the arrivals (absent: none). */
  readonly tx?: number;
  /** The rank in the cluster (u32) of the CTA whose barrier receives the arrival (absent: the
   * executing CTA's, at cta scope). Not with `tx`. */
  readonly cta?: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/**
 * Waits until the phase of parity `parity` of the barrier at `addr` has completed
 * (`mbarrier.try_wait.parity.shared::cta.b64` in a loop): with the barrier in phase p, a wait
 * for parity p's opposite returns at once (phase p - 1 completed), one for p's parity blocks
 * until phase p completes. The shared memory that the phase's copies wrote is then visible to
 * the waiting thread.
 */
export interface MbarWaitOp {
  /** The operation's tag. */
  readonly op: "mbarwait";
  /** The barrier's shared address (u32). */
  readonly addr: Reg;
  /** The phase parity waited for (u32: 0 or 1). */
  readonly parity: Operand;
}

/** `fence.mbarrier_init.release.cluster`: makes the executing thread's `mbarinit`s visible
 * to the async proxy (the TMA unit's transaction counts) before a barrier publishes them. */
export interface MbarFenceOp {
  /** The operation's tag. */
  readonly op: "mbarfence";
}

/**
 * `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst],
 * [map, {coords}], [bar]` (sm90's TMA): copies the box of the tensor map parameter `map`
 * (ir/tensor_map.ts) whose origin is `coords` (s32 elements, innermost first, one per
 * dimension of the map) into shared memory at `dst` (1024-byte aligned for the 128-byte
 * swizzle), in the map's swizzle, elements outside the tensor as zeros; when the bytes have
 * landed it completes that many transaction bytes on the barrier at `bar`. Asynchronous: the
 * bytes may be read only by threads that waited on the barrier's phase, and must not be
 * written meanwhile. Issued by one thread.
 *
 * With `multicast` (a cluster kernel, {@link Kernel.cluster}; `.multicast::cluster`): the box
 * lands at the same offset `dst` in the shared memory of every CTA of the cluster whose rank's
 * bit is set, and completes its bytes on the barrier at offset `bar` of each of them.
 *
 * With `policy` (`.L2::cache_hint` after the other qualifiers, the policy operand last, after the
 * multicast mask): the L2 applies that cache-eviction policy (ir/kernel_memory.ts
 * `CreatePolicyOp`) to the lines the box reads.
 */
export interface TmaLoadOp {
  /** The operation's tag. */
  readonly op: "tma";
  /** The box's shared address (u32). */
  readonly dst: Reg;
  /** The `tensormap` parameter's name. */
  readonly map: string;
  /** The box's origin, innermost first (s32 or u32). */
  readonly coords: readonly Operand[];
  /** The barrier completed (u32 shared address). */
  readonly bar: Reg;
  /** The cluster's CTAs that receive the box, one bit a rank (absent: the executing CTA). */
  readonly multicast?: number;
  /** A u64 register a `createpolicy` wrote: the L2 cache-eviction policy of the box's lines. A
   * performance hint only (the simulator checks the register and ignores it). Absent: none. */
  readonly policy?: Reg;
}

/**
 * `prefetch.tensormap [map]` (sm90; the map's generic address, as {@link TmaLoadOp} takes it):
 * brings the tensor map parameter `map`'s descriptor into the cache the TMA unit reads it from,
 * so that the block's first TMA copy does not wait for it. A performance hint only: it reads no
 * tensor (not a global access: it may come before `griddep.wait`) and changes no result.
 */
export interface TmapPrefetchOp {
  /** The operation's tag. */
  readonly op: "tmapprefetch";
  /** The `tensormap` parameter's name. */
  readonly map: string;
}

/** What `setmaxnreg` may ask (the PTX ISA): from `min` to `max` registers a thread, a multiple
 * of `step`. */
export const SETMAXNREG = Object.freeze({ min: 24, max: 256, step: 8 });

/** Whether `regs` is a count `setmaxnreg` may ask ({@link SETMAXNREG}). */
export function setMaxNRegValid(regs: number): boolean {
  return Number.isInteger(regs) && regs >= SETMAXNREG.min && regs <= SETMAXNREG.max &&
    regs % SETMAXNREG.step === 0;
}

/** `setmaxnreg.{inc,dec}.sync.aligned.u32 regs` (sm90): the executing warpgroup's registers
 * per thread raised or lowered to `regs` ({@link SETMAXNREG}), so that producer warps
 * give their registers to the consumers'. Warpgroup-collective; no effect on the program. */
export interface SetMaxNRegOp {
  /** The operation's tag. */
  readonly op: "setmaxnreg";
  /** Raise or lower. */
  readonly action: "inc" | "dec";
  /** The new count per thread. */
  readonly regs: number;
}

/**
 * `griddepcontrol.{wait,launch_dependents}` (sm90's programmatic dependent launch, PTX ISA 7.8):
 * `launch` lets the grid launched after this one in the stream with the programmatic
 * stream-serialization attribute (backends/cuda/launch.ts `pdl`) start once every block of
 * this grid has issued it or exited; `wait` blocks the executing thread until the grids this
 * one depends on have completed and their memory is visible. A kernel that has a `wait` runs
 * it in every thread before that thread's first global access (loads, stores, atomics,
 * cp.async and TMA sources; an L2 prefetch is a hint, coherent in L2, and may come first):
 * then a dependent launch computes what a serialized one does, and the work before the wait
 * (index arithmetic, barriers' set-up, L2 prefetches) overlaps the previous grid's tail. The
 * simulator reports a global access before the wait (`global-before-griddep-wait`). Both
 * are no-ops for a launch without the attribute. The one exception: reads of the tensors a
 * wait names in `early` (compile option `pdlEarly`: tensors the previous grid does not write,
 * such as an LLM's weights), which may come before it.
 */
export interface GridDepOp {
  /** The operation's tag. */
  readonly op: "griddep";
  /** `wait`: `griddepcontrol.wait`; `launch`: `griddepcontrol.launch_dependents`. */
  readonly action: "wait" | "launch";
  /** A wait's tensor parameters that the kernel reads before it (loads, cp.async and TMA
   * sources; never a store): the previous grid does not write them, by the compile option
   * `pdlEarly`'s promise. Absent: none. */
  readonly early?: readonly string[];
}
