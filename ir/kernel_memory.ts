/**
 * The kernel IR's memory operations: the global -> shared copies (`cp.async` and its commit
 * groups and waits), L2 prefetches and cache-eviction policies, barriers and fences,
 * `ldmatrix`, and the shared and global loads, stores and atomics. They are members of
 * ir/kernel.ts's `Op`, which re-exports them; the address spaces and the execution model are
 * ir/kernel.ts's.
 *
 * @module
 */

import type { Guard, Operand, Reg } from "./kernel.ts";
import type { CachePolicy } from "./cache_policy.ts";

/**
 * `cp.async.{ca,cg}.shared.global [dst], [src], bytes, srcBytes`: copies
 * `bytes` (4, 8 or 16; `cg` only with 16) from global `src` to shared `dst`
 * asynchronously; only the first `srcBytes` are read and the rest of the
 * destination is zero-filled (`srcBytes` = 0 reads nothing and writes zeros).
 * The data lands in shared memory no earlier than the completion of the
 * commit group this copy belongs to ({@link WaitOp}). `dst` must be aligned to
 * `bytes`; so must `src` when `srcBytes > 0`. With `policy`
 * (`.L2::cache_hint`, the policy operand last), the L2 applies that
 * cache-eviction policy ({@link CreatePolicyOp}) to the lines it reads.
 */
export interface CpAsyncOp {
  /** The operation's tag. */
  readonly op: "cpasync";
  /** `ca`: cache in L1 and L2; `cg`: in L2 only. */
  readonly cache: "ca" | "cg";
  /** An L2 prefetch-size hint (`.L2::128B`): the L2 may fetch the whole
   * 128-byte line around the source. A performance hint only: no effect on
   * what lands in shared memory (the simulator ignores it). */
  readonly prefetch?: 128;
  /** Bytes written to shared memory. */
  readonly bytes: 4 | 8 | 16;
  /** The register holding the shared-memory destination address. */
  readonly dst: Reg;
  /** A constant byte offset added to `dst`. */
  readonly dstOffset: number;
  /** The register holding the global source address. */
  readonly src: Reg;
  /** Bytes read from `src` (the rest zero-filled). */
  readonly srcBytes: Operand;
  /** A u64 register a {@link CreatePolicyOp} wrote: the L2 cache-eviction policy of the
   * source's lines. A performance hint only (the simulator checks the register and ignores
   * it). Absent: none. */
  readonly policy?: Reg;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/**
 * `createpolicy.fractional.L2::<priority>.b64 dst, 1.0` (sm_80, PTX ISA 7.4): writes into the
 * u64 register `dst` an opaque 64-bit L2 cache-eviction policy that gives every line an access
 * under it (`.L2::cache_hint` on {@link CpAsyncOp}, {@link LdgOp}, sm90's `TmaLoadOp`) the
 * eviction priority `priority` (the fraction 1.0: all of them): `evict_first`, evicted before
 * normal lines; `evict_last`, kept ahead of them; `evict_normal`, the normal priority. The
 * value means nothing else: only a policy operand may read it.
 */
export interface CreatePolicyOp {
  /** The operation's tag. */
  readonly op: "createpolicy";
  /** The u64 register that receives the policy. */
  readonly dst: Reg;
  /** The eviction priority of the lines accessed under the policy. */
  readonly priority: CachePolicy;
}

/**
 * `prefetch.global.L2[::evict_last] [addr]`: asks the L2 cache to fetch the
 * line (128 bytes) holding global address `addr`. A performance hint only: it
 * moves no data into registers or shared memory, so it cannot change a result;
 * `addr` must still lie inside a tensor (the simulator checks it, so that a
 * lowering's bounds guard is tested like a load's).
 */
export interface PrefetchOp {
  /** The operation's tag. */
  readonly op: "prefetch";
  /** The register holding the global address. */
  readonly addr: Reg;
  /** `.L2::evict_last`: keep the line ahead of normal lines until it is used. */
  readonly evictLast?: boolean;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `cp.async.commit_group`: closes the current group of this thread's copies. */
export interface CommitOp {
  /** The operation's tag. */
  readonly op: "commit";
}

/** `cp.async.wait_group n`: waits until at most `n` of this thread's committed
 * groups are still pending; the data of all older groups is then visible to
 * this thread (and to the block after a following barrier). */
export interface WaitOp {
  /** The operation's tag. */
  readonly op: "wait";
  /** The number of committed groups that may still be pending. */
  readonly n: number;
}

/** `bar.sync 0`: a block-wide barrier; must be in uniform control flow. */
export interface BarOp {
  /** The operation's tag. */
  readonly op: "bar";
  /** A named barrier (`bar.sync id, threads`, sm90's warp-specialized kernels): barrier `id`
   * (1 .. 15) for the `threads` (a multiple of 32) that reach it, in control flow that only
   * they take. Absent: barrier 0 for the whole block, in uniform control flow. */
  readonly named?: { readonly id: number; readonly threads: number };
  /** A cluster kernel's barrier over every thread of the cluster's CTAs
   * (`barrier.cluster.arrive.release.aligned` then `barrier.cluster.wait.acquire.aligned`), in
   * uniform control flow: what one CTA's threads wrote to shared memory before it (barrier
   * initialisations included) is visible to the cluster's. Not with `named`. */
  readonly cluster?: true;
}

/**
 * `ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16 {dst...}, [addr + offset]`:
 * lane i supplies (in `addr`) the address of row i % 8 of matrix i / 8 (lanes
 * beyond 8 * num supply nothing); each row is 16 bytes. Register j of every
 * lane receives from matrix j: without `trans`, the b16 pair at row lane / 4,
 * columns 2 (lane % 4) + {0, 1}; with `trans`, rows 2 (lane % 4) + {0, 1} of
 * column lane / 4. Element 0 is the low half. Warp-collective.
 */
export interface LdmatrixOp {
  /** The operation's tag. */
  readonly op: "ldmatrix";
  /** The number of 8x8 matrices (x1, x2, x4). */
  readonly num: 1 | 2 | 4;
  /** Whether the matrices are transposed on the way. */
  readonly trans: boolean;
  /** One b32 register per matrix. */
  readonly dst: readonly Reg[];
  /** The register holding this lane's row address (shared memory). */
  readonly addr: Reg;
  /** A constant byte offset added to `addr`. */
  readonly offset: number;
}

/** Memory access widths of {@link LdsOp}, {@link StsOp}, {@link LdgOp}, {@link StgOp}:
 * `b8` uses the low 8 bits of a 32-bit register (loads zero-extend), `b16` a
 * b16 register, `b32` a 32-bit register, `b64` an f64 register. */
export type MemWidth = "b8" | "b16" | "b32" | "b64";

/** `ld.shared[.v2|.v4].WIDTH {dst...}, [addr + offset]`: `dst.length`
 * consecutive elements (1, 2 or 4), aligned to their total size. */
export interface LdsOp {
  /** The operation's tag. */
  readonly op: "lds";
  /** The width of each element. */
  readonly width: MemWidth;
  /** The destination registers, one per element. */
  readonly dst: readonly Reg[];
  /** The register holding the base address. */
  readonly addr: Reg;
  /** A constant byte offset added to `addr`. */
  readonly offset: number;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `st.shared[.v2|.v4].WIDTH [addr + offset], {src...}`. */
export interface StsOp {
  /** The operation's tag. */
  readonly op: "sts";
  /** The width of each element. */
  readonly width: MemWidth;
  /** The values stored, one per element. */
  readonly src: readonly Operand[];
  /** The register holding the base address. */
  readonly addr: Reg;
  /** A constant byte offset added to `addr`. */
  readonly offset: number;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `ld.global[.cg][.L2::cache_hint][.v2|.v4].WIDTH {dst...}, [addr + offset][, policy]`. A
 * guarded-off lane leaves `dst` unchanged, so the lowering moves a default in first. `cache:
 * "cg"` caches in L2 only (not in the SM's L1, which is not coherent between
 * blocks): for data other blocks of the same launch wrote. */
export interface LdgOp {
  /** The operation's tag. */
  readonly op: "ldg";
  /** The width of each element. */
  readonly width: MemWidth;
  /** The destination registers, one per element. */
  readonly dst: readonly Reg[];
  /** The register holding the base address. */
  readonly addr: Reg;
  /** A constant byte offset added to `addr`. */
  readonly offset: number;
  /** `cg`: cache in L2 only. */
  readonly cache?: "cg";
  /** A u64 register a {@link CreatePolicyOp} wrote (`.L2::cache_hint`, the policy operand
   * last): the L2 cache-eviction policy of the lines read, as {@link CpAsyncOp.policy}.
   * Absent: none. */
  readonly policy?: Reg;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `atom.global.add.u32 dst, [addr + offset], b`: adds `b` to the u32 at the
 * address and returns the old value, atomically with respect to every thread
 * of the grid. */
export interface AtomOp {
  /** The operation's tag. */
  readonly op: "atom";
  /** Receives the old value. */
  readonly dst: Reg;
  /** The register holding the base address. */
  readonly addr: Reg;
  /** A constant byte offset added to `addr`. */
  readonly offset: number;
  /** The value added. */
  readonly b: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `fence.acq_rel.gpu`: the thread's memory accesses before it are ordered
 * before those after it for every thread of the GPU (with a barrier and an
 * atomic: the split-K hand-over between blocks). The simulator runs blocks
 * one after another, where it has no further effect. */
export interface FenceOp {
  /** The operation's tag. */
  readonly op: "fence";
}

/** `st.global[.v2|.v4].WIDTH [addr + offset], {src...}`. */
export interface StgOp {
  /** The operation's tag. */
  readonly op: "stg";
  /** The width of each element. */
  readonly width: MemWidth;
  /** The values stored, one per element. */
  readonly src: readonly Operand[];
  /** The register holding the base address. */
  readonly addr: Reg;
  /** A constant byte offset added to `addr`. */
  readonly offset: number;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}
