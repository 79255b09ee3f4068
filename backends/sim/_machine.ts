/**
 * The state of one simulated launch: registers (one typed array of `threads`
 * lanes per virtual register), global and shared memory, the cp.async
 * machinery, the statistics, a hazard tracker (_hazards.ts) and, for a kernel with wgmma,
 * the warpgroup MMAs' state (_wgmma.ts), with mbarriers and TMA copies their state
 * (_mbarrier.ts, _tma.ts). The operation closures of `_ops.ts`, `_alu.ts`,
 * `_mma.ts` and `_wgmma.ts` read and write it directly.
 *
 * @module
 */

import {
  gridWaitEarly,
  type Kernel,
  type Op,
  type Reg,
  type RegType,
  workspaceParams,
} from "../../ir/kernel.ts";
import { tallyWavefronts } from "../../ir/smem_banks.ts";
import { targetInfo } from "../../ir/target.ts";
import { WARPGROUP_THREADS } from "../../ir/wgmma_table.ts";
import { clusterRoot, type ClusterShape, clusterShape, hazardRank } from "./_cluster.ts";
import { Hazards, type HazardSite } from "./_hazards.ts";
import { MbarState } from "./_mbarrier.ts";
import { hasOps, tensorMaps, TmaState } from "./_tma.ts";
import { hasWgmma, WgState } from "./_wgmma.ts";
import {
  type BankStats,
  type BlockCoord,
  PREFETCH_WHAT,
  READ_WHATS,
  type SimArg,
  type SimBuffer,
  SimError,
  type SimErrorWhere,
  type SimStats,
} from "./types.ts";

/** An operation with its printed line and position, for messages. */
export interface OpInfo extends HazardSite {
  readonly index: number;
  readonly op: Op;
}

/** The lanes a piece of code runs for: `m[t]` is 1 for an active thread. */
export interface Mask {
  readonly m: Uint8Array;
  /** Warps with at least one active lane (for instruction counts). */
  warps: number;
  /** The whole block (top level, or under uniform control flow only). */
  readonly root: boolean;
}

/** A compiled operation: runs it for all active lanes of the current block. */
export type Run = () => void;

/** The typed views of one register (those that exist for its type). */
export interface RegViews {
  readonly type: RegType;
  readonly u32?: Uint32Array;
  readonly s32?: Int32Array;
  readonly f32?: Float32Array;
  readonly b16?: Uint16Array;
  readonly pred?: Uint8Array;
  readonly u64?: Float64Array;
  readonly f64?: Float64Array;
  /** The f64 register as pairs of 32-bit words (for 64-bit memory accesses). */
  readonly w64?: Uint32Array;
}

/** A typed array view of registers. */
export type RegArray =
  | Uint32Array
  | Int32Array
  | Float32Array
  | Uint16Array
  | Uint8Array
  | Float64Array;

/** Byte distance between the base addresses of consecutive tensor parameters. */
export const TENSOR_STRIDE = 2 ** 36;

/** Largest u64 value the simulator represents exactly (u64 registers are JS numbers). */
export const U64_MAX_EXACT = 2 ** 53 - 1;

function hex(n: number): string {
  return Number.isFinite(n) && n >= 0 ? `0x${n.toString(16)}` : String(n);
}

function newBank(): BankStats {
  return { requests: 0, wavefronts: 0, ideal: 0 };
}

/** The simulator's state for one launch. */
export class Machine {
  readonly kernel: Kernel;
  /** Threads per block (of a cluster kernel: of the machine's block, the whole cluster,
   * padding included: see _cluster.ts). */
  readonly T: number;
  /** Warps per block (the last may be partial). */
  readonly W: number;
  /** The cluster layout (_cluster.ts; N = 1 for a kernel without clusters). */
  readonly cl: ClusterShape;
  /** Registers each warpgroup of the current block last asked for by `setmaxnreg` (0: not yet),
   * CTA by CTA (_mbarrier.ts). */
  readonly regAsks: Int32Array;
  readonly infos: OpInfo[];
  readonly regs: RegViews[];
  readonly grid: readonly [number, number, number];

  // Global memory: tensor parameter i lives at (i + 1) * TENSOR_STRIDE.
  readonly gNames: string[] = [];
  readonly gBytes: Uint8Array[] = [];
  readonly gView: DataView[] = [];
  /** Scalar and dim parameters, and tensor base addresses, by name. */
  readonly paramValues = new Map<string, number>();
  /** Set by {@link gResolve}: byte offset of the access in its tensor. */
  gOff = 0;
  /** The split-K / Stream-K workspace's buffer index (-1: none, or hazards off), and which of
   * its bytes a store of this launch has written (the `unwritten-partial` hazard). */
  wsIndex = -1;
  wsWritten: Uint8Array = new Uint8Array(0);

  // Shared memory.
  readonly smemSize: number;
  readonly smem: Uint8Array;
  readonly smemU16: Uint16Array;
  readonly smemU32: Uint32Array;
  readonly smemDV: DataView;

  // The current block.
  bx = 0;
  by = 0;
  bz = 0;
  readonly rootMask: Mask;

  // Statistics.
  /** Warp-instructions per operation index. */
  readonly counts: Float64Array;
  globalBytesRead = 0;
  /** Lane-level L2 prefetches (each asks for one line). */
  prefetches = 0;
  globalBytesWritten = 0;
  sharedBytesRead = 0;
  sharedBytesWritten = 0;
  mmas = 0;
  readonly banks = { lds: newBank(), sts: newBank(), ldmatrix: newBank(), cpasync: newBank() };

  // cp.async: per-thread group counters and a pool of in-flight copies.
  /** The group a thread's next copy joins; groups below it are committed. */
  readonly openGroup: Int32Array;
  #cpCap = 0;
  cpThread = new Int32Array(0);
  cpGroup = new Int32Array(0);
  cpDst = new Int32Array(0);
  cpBytes = new Int32Array(0);
  cpOp = new Int32Array(0);
  cpData = new Uint8Array(0);
  #cpFree = new Int32Array(0);
  #cpFreeN = 0;
  /** Slots of issued, not yet landed copies, in issue order. */
  pending = new Int32Array(0);
  pendingN = 0;

  /** The hazard tracker (see _hazards.ts). */
  readonly hz: Hazards;
  /** The warpgroup MMAs' state (_wgmma.ts): null for a kernel without wgmma. */
  readonly wg: WgState | null;
  /** The mbarriers (_mbarrier.ts): null for a kernel without mbarrier operations. */
  readonly mb: MbarState | null;
  /** The TMA copies (_tma.ts): null for a kernel without `tma`. */
  readonly tma: TmaState | null;
  /** A kernel with `griddep.wait` (ir/kernel_sm90.ts `GridDepOp`): per thread of the block, 1
   * once it has waited; a global access by a thread still at 0 is the hazard
   * `global-before-griddep-wait`. Null for a kernel without the wait. */
  readonly gridWaited: Uint8Array | null;
  /** The tensors (indices into {@link gNames}) that its waits name in `early`: reads of them
   * may come before the wait. */
  readonly gridEarly: ReadonlySet<number>;

  // Bank-conflict scratch.
  readonly laneAddr = new Int32Array(32);

  /**
   * @param kernel The kernel.
   * @param infos Its operations, indexed.
   * @param grid The launch grid.
   * @param args The launch arguments.
   * @param buffers Global buffers beyond the parameters' tensors.
   * @param hazards Whether to track hazards.
   * @param maxHazards How many distinct hazards to record.
   */
  constructor(
    kernel: Kernel,
    infos: OpInfo[],
    grid: readonly [number, number, number],
    args: Readonly<Record<string, SimArg>>,
    buffers: readonly SimBuffer[],
    hazards: boolean,
    maxHazards: number,
  ) {
    this.kernel = kernel;
    this.infos = infos;
    this.grid = grid;
    const target = targetInfo(kernel.target);
    if (
      !Number.isInteger(kernel.threads) || kernel.threads < 1 ||
      kernel.threads > target.maxThreadsPerBlock
    ) {
      throw new SimError(
        `Bad block size: ${kernel.threads} threads (1 to ${target.maxThreadsPerBlock})`,
      );
    }
    this.cl = clusterShape(kernel);
    const T = this.cl.N * this.cl.P;
    this.T = T;
    this.W = Math.ceil(T / 32);
    this.regAsks = new Int32Array(this.cl.N * Math.ceil(this.cl.T / WARPGROUP_THREADS));
    this.regs = kernel.regs.map((r, i) => {
      if (r.id !== i) {
        throw new SimError(`Register table is not indexed by id: entry ${i} has id ${r.id}`);
      }
      return makeViews(r.type, T);
    });
    this.counts = new Float64Array(infos.length);
    this.openGroup = new Int32Array(T);
    if (this.cl.N === 1) {
      const m = new Uint8Array(T).fill(1);
      this.rootMask = { m, warps: this.W, root: true };
    } else this.rootMask = { ...clusterRoot(this.cl), root: this.cl.P === this.cl.T };

    let tensors = 0;
    for (const p of kernel.params) {
      if (p.kind === "tensormap") continue; // built from the others (_tma.ts)
      const a = args[p.name];
      if (a === undefined) throw new SimError(`Missing argument for parameter "${p.name}"`);
      if (p.kind === "tensor" || p.kind === "table") {
        if (typeof a === "number") {
          throw new SimError(`Argument "${p.name}" must be a tensor ({ bytes }), got a number`);
        }
        tensors++;
        this.gNames.push(p.name);
        this.gBytes.push(a.bytes);
        this.gView.push(new DataView(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength));
        this.paramValues.set(p.name, tensors * TENSOR_STRIDE);
      } else {
        if (typeof a !== "number") {
          throw new SimError(`Argument "${p.name}" must be a number (a ${p.kind})`);
        }
        let v = a;
        if (p.ptx === "u32") v = a >>> 0;
        else if (p.ptx === "s32") v = a | 0;
        else if (p.ptx === "f32") v = Math.fround(a);
        if (p.ptx !== "f32" && p.ptx !== "f64" && v !== a) {
          throw new SimError(`Argument "${p.name}" = ${a} does not fit its type ${p.ptx}`);
        }
        this.paramValues.set(p.name, v);
      }
    }

    // The workspace (the parameter workspaceParams names): the bytes its
    // stores are tracked for the unwritten-partial hazard.
    const ws = workspaceParams(kernel)[0];
    if (hazards && ws !== undefined) {
      this.wsIndex = this.gNames.indexOf(ws);
      if (this.wsIndex >= 0) this.wsWritten = new Uint8Array(this.gBytes[this.wsIndex]!.length);
    }

    // Buffers no parameter names (a grouped kernel's problem tensors, DESIGN §6.2):
    // after the parameters' tensors, at the addresses simBufferAddress gives.
    for (const [i, buf] of buffers.entries()) {
      this.gNames.push(buf.name ?? `buffer ${i}`);
      this.gBytes.push(buf.bytes);
      this.gView.push(new DataView(buf.bytes.buffer, buf.bytes.byteOffset, buf.bytes.byteLength));
    }

    const S = kernel.dynamicSmemBytes;
    if (!Number.isInteger(S) || S < 0) throw new SimError(`Bad shared-memory size ${S}`);
    if (S > target.smemPerBlock) {
      throw new SimError(
        `Shared memory of ${S} bytes exceeds the ${target.smemPerBlock} a block may use on ${kernel.target}`,
      );
    }
    this.smemSize = this.cl.N * this.cl.SS;
    const sbuf = new ArrayBuffer(Math.ceil(this.smemSize / 4) * 4);
    this.smem = new Uint8Array(sbuf, 0, this.smemSize);
    this.smemU16 = new Uint16Array(sbuf);
    this.smemU32 = new Uint32Array(sbuf);
    this.smemDV = new DataView(sbuf);

    this.hz = new Hazards(infos, this.smemSize, hazards, maxHazards);
    if (this.cl.N > 1) {
      const cl = this.cl;
      this.hz.cta = (warps, address) => hazardRank(cl, warps, address);
    }
    this.wg = hasWgmma(kernel) ? new WgState(kernel, this.W, this.hz) : null;
    const mbarOps = ["mbarinit", "mbararrive", "mbarwait", "mbarfence", "tma"];
    this.mb = hasOps(kernel, mbarOps) ? new MbarState(this) : null;
    const maps = tensorMaps(kernel, this.paramValues);
    this.tma = hasOps(kernel, ["tma"]) ? new TmaState(this, maps) : null;
    const early = gridWaitEarly(kernel.body);
    this.gridWaited = early !== null ? new Uint8Array(this.T) : null;
    this.gridEarly = new Set(this.gNames.flatMap((n, i) => early?.includes(n) ? [i] : []));
    this.#growCp(256);
  }

  /** The current block's coordinates. */
  get block(): BlockCoord {
    return [this.bx, this.by, this.bz];
  }

  /**
   * Where operation `idx` is, and (when `t >= 0`) which thread ran it.
   *
   * @param idx Operation index.
   * @param t Thread index in the block, or -1.
   * @param inBlock Whether a block is running.
   * @returns The location.
   */
  where(idx: number, t: number, inBlock = true): SimErrorWhere {
    const i = this.infos[idx]!;
    if (this.cl.N > 1 && t >= 0) {
      // A cluster: the thread's CTA, and its warp within it.
      const r = Math.floor(t / this.cl.P);
      return {
        op: i.text,
        path: i.path,
        line: i.line,
        block: inBlock ? [this.bx + r, this.by, this.bz] : null,
        warp: (t - r * this.cl.P) >> 5,
        lane: t & 31,
      };
    }
    return {
      op: i.text,
      path: i.path,
      line: i.line,
      block: inBlock ? this.block : null,
      warp: t >= 0 ? t >> 5 : null,
      lane: t >= 0 ? t & 31 : null,
    };
  }

  /**
   * Raises a {@link SimError} at an operation and thread.
   *
   * @param idx Operation index.
   * @param t Thread (or -1 for the whole block).
   * @param message What went wrong.
   */
  fail(idx: number, t: number, message: string): never {
    throw new SimError(message, this.where(idx, t));
  }

  /** For generated code: a u64 result outside the exactly representable range. */
  u64Fail(idx: number, t: number, v: number): never {
    this.fail(
      idx,
      t,
      `u64 result ${v} is outside the simulator's exact range [0, 2^53) (u64 registers are numbers)`,
    );
  }

  /** For generated code: an integer division by zero. */
  divZero(idx: number, t: number): never {
    this.fail(idx, t, "Integer division by zero");
  }

  /**
   * A register's view as `type`; raises when the register has no such view
   * (a size mismatch).
   *
   * @param r The register.
   * @param type How the operation reads or writes it.
   * @param idx The operation, for the message.
   * @returns The typed array.
   */
  view(r: Reg, type: RegType, idx: number): RegArray {
    const v = this.regs[r.id];
    if (v === undefined || this.kernel.regs[r.id]?.type !== r.type) {
      throw new SimError(`Unknown register ${r.id}`, this.where(idx, -1, false));
    }
    const key = type === "b32" ? "u32" : type;
    const a = v[key];
    if (a === undefined) {
      throw new SimError(
        `Register of type ${r.type} cannot be used as ${type}`,
        this.where(idx, -1, false),
      );
    }
    return a;
  }

  /** Resets the per-block state and poisons registers and shared memory. */
  startBlock(x: number, y: number, z: number): void {
    this.bx = x;
    this.by = y;
    this.bz = z;
    this.hz.startBlock([x, y, z]);
    if (this.wg !== null) this.wg.startBlock();
    if (this.mb !== null) this.mb.startBlock();
    if (this.tma !== null) this.tma.startBlock();
    if (this.gridWaited !== null) this.gridWaited.fill(0);
    for (const v of this.regs) poison(v);
    this.smem.fill(0xff); // f16/f32 NaN: an unwritten element shows
    this.openGroup.fill(0);
    this.regAsks.fill(0);
  }

  /** Reports copies (and wgmmas, and TMA copies never waited for) still pending at the end of
   * the block and drops them. */
  endBlock(): void {
    if (this.wg !== null) this.wg.endBlock(this.hz);
    if (this.tma !== null) this.tma.endBlock();
    if (this.pendingN === 0) return;
    let uncommitted = 0;
    const warps = new Set<number>();
    for (let i = 0; i < this.pendingN; i++) {
      const s = this.pending[i]!;
      const t = this.cpThread[s]!;
      if (this.cpGroup[s]! >= this.openGroup[t]!) uncommitted++;
      warps.add(t >> 5);
    }
    const first = this.pending[0]!;
    this.hz.report(
      "unbalanced-cp.async",
      this.cpOp[first]!,
      [...warps].sort((a, b) => a - b),
      this.cpDst[first]!,
      `${this.pendingN} cp.async copies still pending at the end of the block (${uncommitted} never committed, ${
        this.pendingN - uncommitted
      } committed but never waited for)`,
    );
    for (let i = 0; i < this.pendingN; i++) this.#freeCp(this.pending[i]!);
    this.pendingN = 0;
    this.hz.pendWords.fill(0);
  }

  // ---------------------------------------------------------------------------
  // Global memory
  // ---------------------------------------------------------------------------

  /**
   * Finds the tensor holding `[addr, addr + size)` and sets {@link gOff}.
   * Raises for an access outside every tensor or misaligned to `align`.
   *
   * @returns The tensor index.
   */
  gResolve(
    idx: number,
    t: number,
    addr: number,
    size: number,
    align: number,
    what: string,
  ): number {
    const ti = Math.floor(addr / TENSOR_STRIDE) - 1;
    if (!(ti >= 0 && ti < this.gBytes.length)) {
      this.fail(idx, t, `Out-of-bounds ${what}: address ${hex(addr)} is in no tensor`);
    }
    const off = addr - (ti + 1) * TENSOR_STRIDE;
    const len = this.gBytes[ti]!.length;
    if (off + size > len) {
      this.fail(
        idx,
        t,
        `Out-of-bounds ${what}: ${size} bytes at offset ${off} of tensor "${
          this.gNames[ti]
        }" (${len} bytes)`,
      );
    }
    if (addr % align !== 0) {
      this.fail(idx, t, `Misaligned ${what}: address ${hex(addr)} is not a multiple of ${align}`);
    }
    if (
      this.gridWaited !== null && this.gridWaited[t] === 0 && what !== PREFETCH_WHAT &&
      !(this.gridEarly.has(ti) && READ_WHATS.has(what))
    ) {
      this.hz.report(
        "global-before-griddep-wait",
        idx,
        [t >> 5],
        null,
        `Thread ${t}'s ${what} comes before its griddepcontrol.wait: under a programmatic ` +
          "dependent launch it may read or overwrite memory the previous grid still uses",
      );
    }
    this.gOff = off;
    return ti;
  }

  /**
   * Checks a shared-memory access `[addr, addr + size)` aligned to `align` (of a cluster
   * kernel: within thread `t`'s CTA's window).
   */
  sCheck(idx: number, t: number, addr: number, size: number, align: number, what: string): void {
    if (this.cl.N > 1) {
      const lo = Math.floor(t / this.cl.P) * this.cl.SS;
      if (!(addr >= lo && addr + size <= lo + this.cl.S)) {
        this.fail(
          idx,
          t,
          `Out-of-bounds ${what}: ${size} bytes at shared address ${
            hex(addr)
          }, outside the thread's CTA's shared memory [${hex(lo)}, ${
            hex(lo + this.cl.S)
          }) (CTA rank ${Math.floor(t / this.cl.P)} of a cluster of ${this.cl.N})`,
        );
      }
    } else if (!(addr >= 0 && addr + size <= this.smemSize)) {
      this.fail(
        idx,
        t,
        `Out-of-bounds ${what}: ${size} bytes at shared address ${
          hex(addr)
        } (shared memory has ${this.smemSize} bytes)`,
      );
    }
    if (addr % align !== 0) {
      this.fail(
        idx,
        t,
        `Misaligned ${what}: shared address ${hex(addr)} is not a multiple of ${align}`,
      );
    }
  }

  // ---------------------------------------------------------------------------
  // Bank conflicts
  // ---------------------------------------------------------------------------

  /**
   * Counts one warp-level shared access into `st`: lanes `0..n-1` of
   * {@link laneAddr} (-1 for an inactive lane) each access `bytes` bytes, by
   * the bank model of ir/smem_banks.ts.
   */
  countBanks(st: BankStats, n: number, bytes: number): void {
    st.requests++;
    tallyWavefronts(this.laneAddr, n, bytes, st);
  }

  // ---------------------------------------------------------------------------
  // cp.async pool
  // ---------------------------------------------------------------------------

  #growCp(cap: number): void {
    const old = this.#cpCap;
    const g32 = (a: Int32Array) => {
      const n = new Int32Array(cap);
      n.set(a);
      return n;
    };
    this.cpThread = g32(this.cpThread);
    this.cpGroup = g32(this.cpGroup);
    this.cpDst = g32(this.cpDst);
    this.cpBytes = g32(this.cpBytes);
    this.cpOp = g32(this.cpOp);
    const d = new Uint8Array(cap * 16);
    d.set(this.cpData);
    this.cpData = d;
    const f = new Int32Array(cap);
    f.set(this.#cpFree.subarray(0, this.#cpFreeN));
    for (let s = cap - 1; s >= old; s--) f[this.#cpFreeN++] = s;
    this.#cpFree = f;
    this.pending = g32(this.pending);
    this.#cpCap = cap;
  }

  /** A free copy slot, appended to the pending list. */
  allocCp(): number {
    if (this.#cpFreeN === 0) this.#growCp(this.#cpCap * 2);
    const s = this.#cpFree[--this.#cpFreeN]!;
    this.pending[this.pendingN++] = s;
    return s;
  }

  #freeCp(s: number): void {
    this.#cpFree[this.#cpFreeN++] = s;
  }

  /**
   * Lands every pending copy of an active thread whose group is complete after
   * `wait n` (all but the newest `n` committed groups of that thread).
   */
  landCopies(idx: number, m: Uint8Array, n: number): void {
    let keep = 0;
    const P = this.pending;
    for (let i = 0; i < this.pendingN; i++) {
      const s = P[i]!;
      const t = this.cpThread[s]!;
      if (m[t] !== 0 && this.cpGroup[s]! < this.openGroup[t]! - n) this.#land(idx, s);
      else P[keep++] = s;
    }
    this.pendingN = keep;
  }

  #land(idx: number, s: number): void {
    const dst = this.cpDst[s]!;
    const bytes = this.cpBytes[s]!;
    const sm = this.smem;
    const data = this.cpData;
    for (let i = 0; i < bytes; i++) sm[dst + i] = data[s * 16 + i]!;
    if (this.hz.on) {
      for (let x = dst >> 2; x <= (dst + bytes - 1) >> 2; x++) this.hz.pendWords[x]!--;
      const w = this.cpThread[s]! >> 5;
      const what = `cp.async "${this.infos[this.cpOp[s]!]!.text}" landing`;
      this.hz.write(idx, w, dst, bytes, what, false);
    }
    this.#freeCp(s);
  }

  // ---------------------------------------------------------------------------
  // Results
  // ---------------------------------------------------------------------------

  /** The statistics gathered so far. */
  stats(): SimStats {
    const byKind: Record<string, number> = {};
    let total = 0;
    for (const i of this.infos) {
      const c = this.counts[i.index]!;
      if (c === 0) continue;
      byKind[i.op.op] = (byKind[i.op.op] ?? 0) + c;
      total += c;
    }
    return {
      warpInstructions: total,
      byKind,
      globalBytesRead: this.globalBytesRead,
      globalBytesWritten: this.globalBytesWritten,
      l2Prefetches: this.prefetches,
      sharedBytesRead: this.sharedBytesRead,
      sharedBytesWritten: this.sharedBytesWritten,
      mmas: this.mmas,
      tmaCopies: this.tma?.copies ?? 0,
      tmaBytes: this.tma?.bytes ?? 0,
      mbarrierBlocked: this.mb?.blocked ?? 0,
      banks: {
        lds: { ...this.banks.lds },
        sts: { ...this.banks.sts },
        ldmatrix: { ...this.banks.ldmatrix },
        cpasync: { ...this.banks.cpasync },
      },
    };
  }
}

function makeViews(type: RegType, T: number): RegViews {
  switch (type) {
    case "pred":
      return { type, pred: new Uint8Array(T) };
    case "b16":
      return { type, b16: new Uint16Array(T) };
    case "b32":
    case "u32":
    case "s32":
    case "f32": {
      const b = new ArrayBuffer(4 * T);
      return { type, u32: new Uint32Array(b), s32: new Int32Array(b), f32: new Float32Array(b) };
    }
    case "u64":
      return { type, u64: new Float64Array(T) };
    case "f64": {
      const b = new ArrayBuffer(8 * T);
      return { type, f64: new Float64Array(b), w64: new Uint32Array(b) };
    }
  }
}

/** Fills a register with garbage that shows when read before written. */
function poison(v: RegViews): void {
  if (v.pred !== undefined) v.pred.fill(0);
  else if (v.b16 !== undefined) v.b16.fill(0x7fff); // f16 NaN
  else if (v.u32 !== undefined) v.u32.fill(0x7fbadbad); // f32 NaN, a huge u32
  else if (v.u64 !== undefined) v.u64.fill(NaN); // an address no tensor holds
  else if (v.f64 !== undefined) v.f64.fill(NaN);
}
