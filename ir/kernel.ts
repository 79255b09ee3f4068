/**
 * The kernel IR: a thread-level program, the single input of both the PTX
 * printer (`backends/ptx`) and the simulator (`backends/sim`). It says
 * everything the GPU will do: every address computation, predicate, copy,
 * barrier, fragment load, MMA, conversion and store. Neither backend adds
 * semantics of its own; the comment on each operation below is its meaning,
 * lane by lane, and the simulator is its executable definition.
 *
 * Execution model (the CUDA one): a grid of blocks; a block of `blockDim`
 * threads = warps of 32 lanes. The body runs once per thread. Registers are
 * per thread and mutable (not SSA): `for` loops update them in place.
 * Control flow is structured: {@link ForOp} (a uniform trip count across the
 * block) and {@link IfOp} (marked uniform or not). Any operation may carry a
 * {@link Guard}: when the guard predicate is false for a lane, the operation
 * does nothing for that lane (PTX `@p` / `@!p`).
 *
 * Address spaces:
 * - Global: `u64` byte addresses. A tensor parameter's register holds the
 *   address of its element 0 (already converted with `cvta.to.global`).
 *   Address arithmetic never goes below 0 nor to 2^53 and above (the
 *   simulator holds u64 values exactly as numbers and raises otherwise).
 * - Shared: `u32` byte addresses into the block's dynamic shared memory; the
 *   {@link SmemBaseOp} gives the address of its first byte.
 *
 * @module
 */

import { type Dtype, unreachable } from "./gemm.ts";
import type { Target } from "./gemm.ts";
import type { TensorMapSpec } from "./tensor_map.ts";
import type {
  GridDepOp,
  MbarArriveOp,
  MbarFenceOp,
  MbarInitOp,
  MbarWaitOp,
  ProxyFenceOp,
  SetMaxNRegOp,
  TmaLoadOp,
  TmapPrefetchOp,
  WgCommitOp,
  WgFenceOp,
  WgmmaOp,
  WgWaitOp,
} from "./kernel_sm90.ts";
import type {
  AtomOp,
  BarOp,
  CommitOp,
  CpAsyncOp,
  CreatePolicyOp,
  FenceOp,
  LdgOp,
  LdmatrixOp,
  LdsOp,
  PrefetchOp,
  StgOp,
  StsOp,
  WaitOp,
} from "./kernel_memory.ts";
// The memory and sm90 operations are members of `Op` below, and exported from here with it.
export type * from "./kernel_memory.ts";
export type * from "./kernel_sm90.ts";
export * from "./grid.ts";
import type { GridPlan } from "./grid.ts";

/** Types of virtual registers. `b16`/`b32` hold raw bits (f16, packed
 * f16x2/bf16x2/s8x4/s4x8/b1x32, tf32); `u64` holds global addresses. */
export type RegType = "pred" | "b16" | "b32" | "u32" | "s32" | "f32" | "u64" | "f64";

/** A virtual register: a unique id and a type. `name` is a hint for readers. */
export interface Reg {
  /** The operand's tag. */
  readonly kind: "reg";
  /** The register's unique id (its index in {@link Kernel.regs}). */
  readonly id: number;
  /** The register's type. */
  readonly type: RegType;
  /** A name for readers of dumps and PTX; no meaning. */
  readonly name?: string;
}

/** An immediate operand. Integers for integer types, numbers for floats (an
 * f32 immediate is rounded with `Math.fround`). An immediate of a bit type
 * (`b16`, `b32`, and the widths of `sts`/`stg`) is the bit pattern, an integer. */
export interface Imm {
  /** The operand's tag. */
  readonly kind: "imm";
  /** The value (or bit pattern). */
  readonly value: number;
}

/** An operand: a register or an immediate. */
export type Operand = Reg | Imm;

/** Executes the operation only in lanes where `pred` is true (false with `negate`). */
export interface Guard {
  /** The predicate register. */
  readonly pred: Reg;
  /** Run where `pred` is false instead. */
  readonly negate: boolean;
}

/** Special registers. */
export type SpecialReg =
  | "tid.x"
  | "ctaid.x"
  | "ctaid.y"
  | "ctaid.z"
  | "nctaid.x"
  | "nctaid.y"
  | "nctaid.z"
  | "laneid"
  /** The CTA's rank in its cluster (sm90; 0 without clusters). */
  | "cluster_ctarank";

/** `dst = the kernel parameter named `name``. The parameter's PTX type comes
 * from the kernel's parameter list; tensor parameters are read as `u64` and
 * converted to global addresses. */
export interface ParamOp {
  /** The operation's tag. */
  readonly op: "param";
  /** The destination register. */
  readonly dst: Reg;
  /** The parameter's name. */
  readonly name: string;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `dst = special register` (always u32). */
export interface SregOp {
  /** The operation's tag. */
  readonly op: "sreg";
  /** The destination register. */
  readonly dst: Reg;
  /** The special register read. */
  readonly sreg: SpecialReg;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `dst = src`, both of one type (or an immediate). */
export interface MovOp {
  /** The operation's tag. */
  readonly op: "mov";
  /** The destination register. */
  readonly dst: Reg;
  /** The source operand. */
  readonly src: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `dst = shared-memory address of byte 0 of the dynamic shared buffer` (u32). */
export interface SmemBaseOp {
  /** The operation's tag. */
  readonly op: "smembase";
  /** The destination register. */
  readonly dst: Reg;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** Binary arithmetic and logic. Integer types (`u32`, `s32`, `u64`) wrap
 * modulo 2^bits (`mul` keeps the low half); `div`/`rem` are integer and
 * truncating, undefined for a zero divisor (the lowering never emits one);
 * `shl`/`shr` take the shift in `b` (`shr` is logical for u32/u64, arithmetic
 * for s32); `and`/`or`/`xor` are bitwise (also on `b32` and `pred`). Float
 * types (`f32`, `f64`) round to nearest even; `min`/`max` follow PTX (NaN
 * loses to a number). */
export interface BinOp {
  /** The operation's tag. */
  readonly op: "bin";
  /** The function. */
  readonly fn: BinFn;
  /** The operation's PTX type. */
  readonly type: "u32" | "s32" | "u64" | "b32" | "pred" | "f32" | "f64";
  /** The destination register. */
  readonly dst: Reg;
  /** The first operand. */
  readonly a: Operand;
  /** The second operand. */
  readonly b: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** Functions of {@link BinOp}. */
export type BinFn =
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "rem"
  | "min"
  | "max"
  | "shl"
  | "shr"
  | "and"
  | "or"
  | "xor"
  /** s32 only: `add.sat.s32`, clamped to [-2^31, 2^31 - 1] (the split-K
   * reduction of saturating integer MMAs). */
  | "addsat";

/** `dst = a * b + c`: `mad.lo` for integers (wrapping), `fma.rn` for floats
 * (one rounding). */
export interface MadOp {
  /** The operation's tag. */
  readonly op: "mad";
  /** The operation's PTX type. */
  readonly type: "u32" | "s32" | "u64" | "f32" | "f64";
  /** The destination register. */
  readonly dst: Reg;
  /** The first factor. */
  readonly a: Operand;
  /** The second factor. */
  readonly b: Operand;
  /** The addend. */
  readonly c: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `dst(u64) = a(u32) * b(u32)`, the full 64-bit product (`mul.wide.u32`). */
export interface MulWideOp {
  /** The operation's tag. */
  readonly op: "mulwide";
  /** The u64 destination. */
  readonly dst: Reg;
  /** The first u32 factor. */
  readonly a: Operand;
  /** The second u32 factor. */
  readonly b: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** Unary functions. `neg`, `abs` exact; `not` bitwise (b32/u32/pred);
 * `ex2`, `rcp`, `tanh` are the PTX `.approx.f32` instructions (the simulator
 * models them to within their documented error, see its numerics module);
 * `popc` counts set bits of a b32/u32. */
export interface UnOp {
  /** The operation's tag. */
  readonly op: "un";
  /** The function. */
  readonly fn: "neg" | "abs" | "not" | "ex2" | "rcp" | "tanh" | "popc";
  /** The operation's PTX type. */
  readonly type: "u32" | "s32" | "b32" | "pred" | "f32" | "f64";
  /** The destination register. */
  readonly dst: Reg;
  /** The source operand. */
  readonly src: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** Comparison to a predicate: `dst = a CMP b` (floats: ordered compares). */
export interface SetpOp {
  /** The operation's tag. */
  readonly op: "setp";
  /** The comparison. */
  readonly cmp: "lt" | "le" | "gt" | "ge" | "eq" | "ne";
  /** The type the operands are compared as. */
  readonly type: "u32" | "s32" | "u64" | "f32" | "f64";
  /** The destination register. */
  readonly dst: Reg;
  /** The first operand. */
  readonly a: Operand;
  /** The second operand. */
  readonly b: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `dst = p ? a : b`. */
export interface SelpOp {
  /** The operation's tag. */
  readonly op: "selp";
  /** The operation's PTX type. */
  readonly type: "u32" | "s32" | "b32" | "f32" | "f64" | "u64";
  /** The destination register. */
  readonly dst: Reg;
  /** The value where `p` is true. */
  readonly a: Operand;
  /** The value where `p` is false. */
  readonly b: Operand;
  /** The predicate that selects. */
  readonly p: Reg;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/**
 * Conversions, each exactly one PTX `cvt` (or `mov` for bit moves):
 * - `f32.f16`: f16 bits (b16) to f32, exact.
 * - `f32.bf16`: bf16 bits (b16) to f32, exact.
 * - `f16.f32`: f32 to f16 bits, round to nearest even (`cvt.rn.f16.f32`).
 * - `bf16.f32`: f32 to bf16 bits, round to nearest even (`cvt.rn.bf16.f32`).
 * - `tf32.f32`: f32 to tf32 bits in a b32, round to nearest, ties away
 *   (`cvt.rna.tf32.f32`); the low 13 bits are zero.
 * - `f64.f32`, `f32.f64` (round to nearest even).
 * - `f32.s32`, `f64.s32`: integer to float, round to nearest even.
 * - `s32.f32`, `s32.f64`: float to integer, round to nearest even,
 *   saturating, NaN to 0 (`cvt.rni.sat.s32.f32`).
 * - `s8.s32`, `u8.s32`: saturate an s32 to the 8-bit range
 *   (`cvt.sat.s8.s32` / `cvt.sat.u8.s32`), the result sign-extended (s8) or
 *   zero-extended (u8) to 32 bits.
 * - `u64.u32`: zero-extend.
 * - `b32.f32`, `f32.b32`, `b32.u32`, `u32.b32`, `s32.b32`, `b32.s32`: bit moves.
 */
export interface CvtOp {
  /** The operation's tag. */
  readonly op: "cvt";
  /** The conversion. */
  readonly kind: CvtKind;
  /** The destination register. */
  readonly dst: Reg;
  /** The source operand. */
  readonly src: Operand;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** Kinds of {@link CvtOp}, named `DST.SRC`. */
export type CvtKind =
  | "f32.f16"
  | "f32.bf16"
  | "f16.f32"
  | "bf16.f32"
  | "tf32.f32"
  | "f64.f32"
  | "f32.f64"
  | "f32.s32"
  | "f64.s32"
  | "s32.f32"
  | "s32.f64"
  | "s8.s32"
  | "u8.s32"
  | "u64.u32"
  | "b32.f32"
  | "f32.b32"
  | "b32.u32"
  | "u32.b32"
  | "s32.b32"
  | "b32.s32";

/** `dst(b32) = hi << 16 | lo` from two b16 registers (`mov.b32 d, {lo, hi}`). */
export interface PackOp {
  /** The operation's tag. */
  readonly op: "pack";
  /** The b32 destination. */
  readonly dst: Reg;
  /** The b16 register of the low half. */
  readonly lo: Reg;
  /** The b16 register of the high half. */
  readonly hi: Reg;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/** `lo = src & 0xffff`, `hi = src >> 16` into two b16 registers (`mov.b32 {lo, hi}, s`). */
export interface UnpackOp {
  /** The operation's tag. */
  readonly op: "unpack";
  /** The b16 register receiving the low half. */
  readonly lo: Reg;
  /** The b16 register receiving the high half. */
  readonly hi: Reg;
  /** The b32 register unpacked. */
  readonly src: Reg;
  /** Runs only in the lanes where the guard holds (absent: all lanes). */
  readonly guard?: Guard;
}

/**
 * `mma.sync.aligned` of the MMA table row named `shape` (ir/mma_table.ts):
 * `d = a * b + c` with the row's fragment maps. Registers: `a`, `b`, `c`, `d`
 * as many as the row's fragment maps say (b32 for packed and tf32 operands,
 * f32/s32 for f32/s32 accumulators, b32 holding f16x2 for f16 accumulators,
 * f64 for f64). Warp-collective; `d` may be the same registers as `c`.
 *
 * A sparse row (ir/mma_sparse.ts, names "sp.*") is `mma.sp.sync.aligned`:
 * `a` is the compressed A fragment, and `meta` (a b32 register: the lane's
 * metadata) and `selector` (one of the row's sparsity-selector values) are
 * required; `ordered` prints `mma.sp::ordered_metadata`. Dense rows take
 * none of the three.
 */
export interface MmaOp {
  /** The operation's tag. */
  readonly op: "mma";
  /** The MMA table row's name. */
  readonly shape: string;
  /** The D fragment (the result). */
  readonly d: readonly Reg[];
  /** The A fragment. */
  readonly a: readonly Reg[];
  /** The B fragment. */
  readonly b: readonly Reg[];
  /** The C fragment (the accumulator read). */
  readonly c: readonly Reg[];
  /** Sparse rows only: the lane's metadata register (b32). */
  readonly meta?: Reg;
  /** Sparse rows only: the sparsity selector (an immediate of the row's `meta.selectors`). */
  readonly selector?: number;
  /** Sparse rows only: print `mma.sp::ordered_metadata` (PTX ISA 8.5) instead of `mma.sp`. */
  readonly ordered?: boolean;
}

/** A loop with a trip count that is the same for every thread of the block:
 * `for (iv = from; iv < to; iv += step) body` (u32 compare); `step` is a
 * positive integer. */
export interface ForOp {
  /** The operation's tag. */
  readonly op: "for";
  /** The induction variable (u32). */
  readonly iv: Reg;
  /** The first value of `iv`. */
  readonly from: Operand;
  /** The bound: the loop runs while `iv < to`. */
  readonly to: Operand;
  /** The increment of `iv`. */
  readonly step: number;
  /** The loop body. */
  readonly body: readonly Op[];
}

/** `if (cond) then else otherwise`. `uniform` promises that `cond` is the
 * same for every thread of the block (so barriers may appear inside). */
export interface IfOp {
  /** The operation's tag. */
  readonly op: "if";
  /** The predicate register tested. */
  readonly cond: Reg;
  /** Take the `then` branch where `cond` is false instead. */
  readonly negate: boolean;
  /** Whether `cond` is the same for every thread of the block. */
  readonly uniform: boolean;
  /** A non-uniform `if` whose `cond` is the same for every thread of each warpgroup (the roles
   * of sm90's warp-specialized kernels): warp- and warpgroup-collective operations (mma,
   * wgmma, setmaxnreg) may appear inside, block barriers may not (named ones may). */
  readonly warpgroupUniform?: boolean;
  /** The operations run where the condition holds. */
  readonly then: readonly Op[];
  /** The operations run where it does not. */
  readonly otherwise: readonly Op[];
}

/** A comment carried into the PTX and shown in dumps; no effect. */
export interface CommentOp {
  /** The operation's tag. */
  readonly op: "comment";
  /** The comment's text. */
  readonly text: string;
}

/** The operations that read and write registers only (no memory, no barrier, no
 * control flow): the simulator's ALU (backends/sim/_alu.ts). */
export type AluOp =
  | ParamOp
  | SregOp
  | MovOp
  | SmemBaseOp
  | BinOp
  | MadOp
  | MulWideOp
  | UnOp
  | SetpOp
  | SelpOp
  | CvtOp
  | PackOp
  | UnpackOp;

/** Every kernel-IR operation. */
export type Op =
  | AluOp
  | CpAsyncOp
  | CreatePolicyOp
  | PrefetchOp
  | CommitOp
  | WaitOp
  | BarOp
  | LdmatrixOp
  | LdsOp
  | StsOp
  | LdgOp
  | StgOp
  | AtomOp
  | FenceOp
  | MmaOp
  | WgmmaOp
  | WgFenceOp
  | WgCommitOp
  | WgWaitOp
  | ProxyFenceOp
  | MbarInitOp
  | MbarArriveOp
  | MbarWaitOp
  | MbarFenceOp
  | TmaLoadOp
  | TmapPrefetchOp
  | SetMaxNRegOp
  | GridDepOp
  | ForOp
  | IfOp
  | CommentOp;

/** A kernel parameter as the ABI passes it (docs/ARCHITECTURE.md §3). */
export interface KernelParam {
  /** The parameter's name. */
  readonly name: string;
  /** What it is: a tensor's address, a dimension, a stride (`.u64`, DESIGN §6.1), a
   * scalar, or a grouped kernel's problem table (`.u64` address) and problem count
   * (`.u32`, DESIGN §6.2). */
  readonly kind: "tensor" | "dim" | "stride" | "scalar" | "table" | "count" | "tensormap";
  /** Its PTX type (`u64` for addresses; `tmap`: a 128-byte tensor map passed by value,
   * `.param .align 64 .b8 NAME[128]`). */
  readonly ptx: "u64" | "u32" | "f32" | "f64" | "s32" | "tmap";
  /** For tensors and scalars: the element type. */
  readonly dtype?: Dtype;
  /** For a `tensormap` (sm90's TMA, ir/tensor_map.ts): how the launcher builds it from the
   * other arguments. Tensor maps come after every other parameter. */
  readonly tmap?: TensorMapSpec;
}

/** One field of a grouped kernel's problem-table entry (DESIGN §6.2). */
export interface GroupField {
  /** The parameter of the ordinary kernel it stands for (a tensor, stride or dim
   * name), or `tiles_before`: the number of output tiles of the problems before
   * this one (the launcher's prefix sum; the kernel's tile search reads it). */
  readonly name: string;
  /** What it is. */
  readonly kind: "tensor" | "stride" | "dim" | "tiles_before";
  /** Byte offset in the entry (aligned to its size). */
  readonly offset: number;
  /** Its PTX type. */
  readonly ptx: "u64" | "u32";
}

/**
 * A grouped kernel's problem table (DESIGN §6.2): `count` entries of
 * `entryBytes` each, back to back from the table's address (8-byte aligned).
 * Each entry holds one problem's tensor addresses, strides and dims, and its
 * `tiles_before`; scalars are shared (kernel parameters).
 */
export interface GroupLayout {
  /** Bytes per entry (a multiple of 8). */
  readonly entryBytes: number;
  /** The fields, by offset. */
  readonly fields: readonly GroupField[];
}

/** A whole kernel-IR program. */
export interface Kernel {
  /** The node's tag. */
  readonly kind: "kernel";
  /** The kernel's name (the PTX entry). */
  readonly name: string;
  /** The compile target. */
  readonly target: Target;
  /** The entry point's parameters, in ABI order. */
  readonly params: readonly KernelParam[];
  /** Threads per block (x only). */
  readonly threads: number;
  /** Dynamic shared memory per block, in bytes. */
  readonly dynamicSmemBytes: number;
  /**
   * Blocks per SM the kernel is built to run at, if more than one: the PTX
   * says `.minnctapersm N`, so ptxas keeps each thread within the target's
   * `registersPerSm` / (N * threads) registers (ir/target.ts). Absent: one
   * block, up to its `registersPerThread`.
   */
  readonly minBlocksPerSm?: number;
  /**
   * CTAs per thread-block cluster along the grid's x (sm90; `.reqnctapercluster N, 1, 1`):
   * blocks x = N c .. N c + N - 1 of one y and z run together, each of rank x % N
   * (`%cluster_ctarank`), and may reach each other's shared memory (multicast TMA copies,
   * remote barrier arrivals). The grid's x is a multiple of N. Absent: 1 (no cluster).
   */
  readonly cluster?: number;
  /** How the grid follows from the runtime sizes (for a grouped kernel, the tile
   * of every problem; its grid is the persistent one of {@link groupedGrid}). */
  readonly grid: GridPlan;
  /** A grouped kernel's problem table (DESIGN §6.2); absent: an ordinary kernel. */
  readonly group?: GroupLayout;
  /** Every register, indexed by id. */
  readonly regs: readonly Reg[];
  /** The program every thread runs. */
  readonly body: readonly Op[];
}

function pushReg(to: Reg[], x: Operand | undefined): void {
  if (x !== undefined && x.kind === "reg") to.push(x);
}

/**
 * The registers an operation reads and writes (not descending into bodies).
 *
 * @param o The operation.
 * @returns `reads` and `writes` (registers only, immediates skipped).
 */
export function opRegs(o: Op): { reads: Reg[]; writes: Reg[] } {
  // Hot (the PTX printer and lower-kernel's dead-code removal call it for
  // every operation): plain pushes, no rest parameters or filters.
  const reads: Reg[] = [];
  if ("guard" in o && o.guard !== undefined) reads.push(o.guard.pred);
  switch (o.op) {
    case "param":
    case "sreg":
    case "smembase":
      return { reads, writes: [o.dst] };
    case "mov":
    case "un":
    case "cvt":
      pushReg(reads, o.src);
      return { reads, writes: [o.dst] };
    case "bin":
    case "setp":
    case "mulwide":
      pushReg(reads, o.a);
      pushReg(reads, o.b);
      return { reads, writes: [o.dst] };
    case "mad":
      pushReg(reads, o.a);
      pushReg(reads, o.b);
      pushReg(reads, o.c);
      return { reads, writes: [o.dst] };
    case "selp":
      pushReg(reads, o.a);
      pushReg(reads, o.b);
      pushReg(reads, o.p);
      return { reads, writes: [o.dst] };
    case "pack":
      reads.push(o.lo, o.hi);
      return { reads, writes: [o.dst] };
    case "unpack":
      reads.push(o.src);
      return { reads, writes: [o.lo, o.hi] };
    case "cpasync":
      reads.push(o.dst, o.src);
      pushReg(reads, o.srcBytes);
      pushReg(reads, o.policy);
      return { reads, writes: [] };
    case "createpolicy":
      return { reads, writes: [o.dst] };
    case "prefetch":
      reads.push(o.addr);
      return { reads, writes: [] };
    case "commit":
    case "wait":
    case "bar":
    case "fence":
    case "wgfence":
    case "wgcommit":
    case "wgwait":
    case "proxyfence":
    case "mbarfence":
    case "tmapprefetch":
    case "setmaxnreg":
    case "griddep":
    case "comment":
      return { reads, writes: [] };
    case "mbarinit":
      reads.push(o.addr);
      return { reads, writes: [] };
    case "mbararrive":
      reads.push(o.addr);
      pushReg(reads, o.cta);
      return { reads, writes: [] };
    case "mbarwait":
      reads.push(o.addr);
      pushReg(reads, o.parity);
      return { reads, writes: [] };
    case "tma":
      reads.push(o.dst, o.bar);
      for (const c of o.coords) pushReg(reads, c);
      pushReg(reads, o.policy);
      return { reads, writes: [] };
    case "atom":
      reads.push(o.addr);
      pushReg(reads, o.b);
      return { reads, writes: [o.dst] };
    case "ldmatrix":
      reads.push(o.addr);
      return { reads, writes: [...o.dst] };
    case "lds":
      reads.push(o.addr);
      return { reads, writes: [...o.dst] };
    case "ldg":
      reads.push(o.addr);
      pushReg(reads, o.policy);
      return { reads, writes: [...o.dst] };
    case "sts":
    case "stg":
      reads.push(o.addr);
      for (const x of o.src) pushReg(reads, x);
      return { reads, writes: [] };
    case "mma":
      reads.push(...o.a, ...o.b, ...o.c);
      if (o.meta !== undefined) reads.push(o.meta);
      return { reads, writes: [...o.d] };
    case "wgmma":
      reads.push(o.a, o.b);
      if (o.scaleD === 1) reads.push(...o.d);
      return { reads, writes: [...o.d] };
    case "for":
      pushReg(reads, o.from);
      pushReg(reads, o.to);
      return { reads, writes: [o.iv] };
    case "if":
      reads.push(o.cond);
      return { reads, writes: [] };
    default:
      return unreachable(o);
  }
}

/**
 * Visits every operation of a body, depth first, in program order.
 *
 * @param body The operations.
 * @param f Called for each, with the nesting path of enclosing loops/ifs.
 */
export function walkOps(
  body: readonly Op[],
  f: (o: Op, path: readonly (ForOp | IfOp)[]) => void,
  path: readonly (ForOp | IfOp)[] = [],
): void {
  for (const o of body) {
    f(o, path);
    if (o.op === "for") walkOps(o.body, f, [...path, o]);
    else if (o.op === "if") {
      walkOps(o.then, f, [...path, o]);
      walkOps(o.otherwise, f, [...path, o]);
    }
  }
}

/**
 * What a kernel's `griddepcontrol.wait` operations say (compile option `pdl`): null where it has
 * none, else the tensors it reads before them (their `early` lists, compile option `pdlEarly`).
 *
 * @param body The kernel's operations.
 * @returns The early tensors (empty: none), or null without a wait.
 */
export function gridWaitEarly(body: readonly Op[]): readonly string[] | null {
  let waits = false;
  const early = new Set<string>();
  walkOps(body, (o) => {
    if (o.op !== "griddep" || o.action !== "wait") return;
    waits = true;
    for (const name of o.early ?? []) early.add(name);
  });
  return waits ? [...early] : null;
}
