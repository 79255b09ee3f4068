/**
 * Hopper's warpgroup MMAs in the simulator: `wgmma.mma_async` (ir/kernel.ts, WgmmaOp) for
 * the f16, bf16, tf32, 8-bit float and 8-bit integer rows of ir/wgmma_table.ts (all but
 * b1), per warpgroup (warps 4g .. 4g + 3, all 128 lanes active), operands read from shared
 * memory in the `WGMMA_SMEM` layout through `wgmmaSmemAddress`; and its asynchrony:
 * `wgfence`, `wgcommit`, `wgwait`, `proxyfence`.
 *
 * Numerics are those of `mma.sync` (_mma.ts) for the same types: each product exact in
 * f64, the accumulator and the K products summed in f64, accumulator first, k ascending,
 * rounded once per instruction (to f32, or directly to f16 for an f16 accumulator); a
 * tf32 operand is its word's top 19 bits; integers exact, then saturated to s32.
 *
 * The 8-bit float rows (e4m3 / e5m2, any pair; K = 32 bytes like s8/u8) decode each byte
 * exactly (numerics/fp8.ts) and follow the accumulation model of numerics/mod.ts
 * ("Accumulation model for fp8 wgmma"): with an f32 accumulator, each instruction's exact
 * sum of the accumulator and the 32 products is truncated toward zero to 14 significant bits
 * (FP22, e8m13: the precision DeepSeek-V3 and SageAttention2 measured on Hopper), computed
 * exactly by numerics/fp8_acc.ts `fp8AccumulateTruncated`; with an f16 accumulator (a row the
 * compiler does not emit) as the f16 rows. Its error bound, `ceil(K / 32) * 2^-13` of
 * Σ|a_k b_k|, is the reference's for 8-bit float operands (harness/reference.ts).
 *
 * The result is computed when the wgmma is issued. What the hardware leaves undefined
 * until the wgmma completes is reported as a hazard instead (types.ts, HazardKind):
 * each warpgroup keeps its pending wgmmas (issued, group not retired by `wgwait`), with
 * the accumulators they write and the shared chunks they read. Registers: the ops that
 * touch a wgmma accumulator are wrapped ({@link guardAccumulators}) to report accesses
 * of pending accumulators and to mark writes that a `wgfence` must order. Shared memory:
 * _hazards.ts's async-proxy checks. None of it is built for a kernel without wgmma.
 *
 * @module
 */

import {
  type Kernel,
  opRegs,
  type Reg,
  walkOps,
  type WgmmaOp,
  type WgWaitOp,
} from "../../ir/kernel.ts";
import { regName } from "../../ir/print_kernel.ts";
import {
  WGMMA_BY_NAME,
  WGMMA_TYPE_BITS,
  wgmmaAccCoord,
  type WgmmaShape,
  wgmmaSmemAddress,
} from "../../ir/wgmma_table.ts";
import {
  bitsF32,
  f32ToF16Bits,
  fp8AccumulateTruncated,
  fp8ToNumber,
  roundF16,
  tf32Truncate,
} from "../../numerics/mod.ts";
import { F16_VALUES } from "./_alu.ts";
import type { Hazards } from "./_hazards.ts";
import type { Machine, Mask, OpInfo, Run } from "./_machine.ts";
import { BF16_VALUES } from "./_mma.ts";
import { SimError } from "./types.ts";

/** Threads of a warpgroup. */
const WG_THREADS = 128;

/** Bytes of a wgmma operand row along K (16 f16/bf16, 8 tf32, 32 8-bit elements). */
const K_BYTES = 32;

/** One issued wgmma whose group has not retired. */
interface PendingWgmma {
  /** The commit group it belongs to (see {@link WgState.open}). */
  readonly group: number;
  /** The operation's index. */
  readonly idx: number;
  /** Its accumulators, as indices of {@link WgState.dIndex}. */
  readonly d: Int32Array;
  /** The shared 16-byte chunks it reads (empty when hazards are off). */
  readonly chunks: Int32Array;
}

/**
 * Whether a kernel has a wgmma op (only then does the simulator build {@link WgState}).
 *
 * @param kernel The kernel.
 * @returns Whether any operation is a `wgmma`.
 */
export function hasWgmma(kernel: Kernel): boolean {
  let found = false;
  walkOps(kernel.body, (o) => {
    if (o.op === "wgmma") found = true;
  });
  return found;
}

/** The warpgroup-MMA state of one launch: pending wgmmas by warpgroup, and which
 * accumulators each warpgroup wrote since its last `wgfence`. */
export class WgState {
  /** Warpgroups of a block (the last may be partial, and then cannot run wgmma). */
  readonly G: number;
  /** Register id → its index among the kernel's wgmma accumulators, or -1. */
  readonly dIndex: Int32Array;
  /** The accumulator registers, by that index. */
  readonly dRegs: readonly Reg[];
  /** Per warpgroup and accumulator (g * dRegs.length + i): pending wgmmas that write it. */
  readonly pendRegs: Int32Array;
  /** Per warpgroup and accumulator: 1 + the index of the last operation other than wgmma
   * that wrote it since the warpgroup's last `wgfence`, or 0. */
  readonly dirty: Int32Array;
  /** Per warpgroup: the commit group its next wgmma joins; lower groups are committed. */
  readonly open: Int32Array;
  /** Per warpgroup: its pending wgmmas, in issue order. */
  readonly pending: PendingWgmma[][];

  /**
   * @param kernel The kernel (its wgmma ops name the accumulators).
   * @param warps Warps per block.
   * @param hz The hazard tracker (its async-proxy checks are enabled here).
   */
  constructor(kernel: Kernel, warps: number, hz: Hazards) {
    this.G = Math.ceil(warps / 4);
    this.dIndex = new Int32Array(kernel.regs.length).fill(-1);
    const dRegs: Reg[] = [];
    walkOps(kernel.body, (o) => {
      if (o.op !== "wgmma") return;
      for (const r of o.d) {
        if (this.dIndex[r.id] === -1) {
          this.dIndex[r.id] = dRegs.length;
          dRegs.push(r);
        }
      }
    });
    this.dRegs = dRegs;
    this.pendRegs = new Int32Array(this.G * dRegs.length);
    this.dirty = new Int32Array(this.G * dRegs.length);
    this.open = new Int32Array(this.G);
    this.pending = Array.from({ length: this.G }, () => []);
    hz.enableAsync(warps);
  }

  /** Resets the per-block state. */
  startBlock(): void {
    this.pendRegs.fill(0);
    this.dirty.fill(0);
    this.open.fill(0);
    for (const p of this.pending) p.length = 0;
  }

  /** Reports wgmmas still pending at the end of the block and drops them. */
  endBlock(hz: Hazards): void {
    let n = 0;
    let uncommitted = 0;
    let first: PendingWgmma | null = null;
    const warps: number[] = [];
    for (let g = 0; g < this.G; g++) {
      const p = this.pending[g]!;
      if (p.length === 0) continue;
      first ??= p[0]!;
      n += p.length;
      for (const e of p) if (e.group >= this.open[g]!) uncommitted++;
      warps.push(4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3);
      p.length = 0;
    }
    if (first === null) return;
    hz.report(
      "unbalanced-wgmma",
      first.idx,
      warps,
      null,
      `${n} wgmmas still pending at the end of the block (${uncommitted} never committed, ${
        n - uncommitted
      } committed but never waited for with wgmma.wait_group)`,
    );
  }

  /** Retires warpgroup `g`'s pending wgmmas of groups below `below`. */
  retire(hz: Hazards, g: number, below: number): void {
    const p = this.pending[g]!;
    const nD = this.dRegs.length;
    let keep = 0;
    for (let i = 0; i < p.length; i++) {
      const e = p[i]!;
      if (e.group >= below) {
        p[keep++] = e;
        continue;
      }
      for (let j = 0; j < e.d.length; j++) this.pendRegs[g * nD + e.d[j]!]!--;
      for (let j = 0; j < e.chunks.length; j++) hz.asyncRetire(g, e.chunks[j]!, 16);
    }
    p.length = keep;
  }
}

function whereStatic(info: OpInfo) {
  return { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null };
}

/**
 * Checks that warpgroup `g` is entirely active (or entirely inactive) for a
 * warpgroup-collective operation.
 *
 * @returns Whether the warpgroup takes part.
 */
function groupActive(M: Machine, idx: number, m: Uint8Array, g: number, what: string): boolean {
  const base = g * WG_THREADS;
  let on = 0;
  let off = -1;
  for (let l = 0; l < WG_THREADS; l++) {
    const t = base + l;
    if (t < M.T && m[t] !== 0) on++;
    else if (off < 0) off = l;
  }
  if (on === 0) return false;
  if (on !== WG_THREADS) {
    M.fail(
      idx,
      base + off,
      `${what} is warpgroup-collective: thread ${off} of warpgroup ${g} (warps ${4 * g}..${
        4 * g + 3
      }) does not take part (all 128 threads must)`,
    );
  }
  return true;
}

/** Per row: the element decoding and the accumulator's index table. */
interface WgPlan {
  readonly s: WgmmaShape;
  /** Bytes of an operand element. */
  readonly eb: number;
  /** Per (thread of the warpgroup, accumulator element): its index `row * N + col` in D. */
  readonly ci: Int32Array;
  readonly A: Float64Array;
  /** B's N x K tile: element (n, k) at n * K + k. */
  readonly B: Float64Array;
  readonly C: Float64Array;
}

const PLANS = new Map<string, WgPlan>();

const SIMULATED = new Set(["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"]);

/** Exact value of every e4m3 / e5m2 byte (numerics/fp8.ts). */
const FP8_VALUES = {
  e4m3: Float64Array.from({ length: 256 }, (_, c) => fp8ToNumber(c, "e4m3")),
  e5m2: Float64Array.from({ length: 256 }, (_, c) => fp8ToNumber(c, "e5m2")),
};

/** Each thread's accumulator elements' indices in the 64 x N tile (ir/wgmma_table.ts
 * `wgmmaAccCoord`), thread-major. */
function accTable(n: number): Int32Array {
  const E = n / 2;
  const ci = new Int32Array(WG_THREADS * E);
  for (let t = 0; t < WG_THREADS; t++) {
    for (let e = 0; e < E; e++) {
      const [r, c] = wgmmaAccCoord(t, e);
      ci[t * E + e] = r * n + c;
    }
  }
  return ci;
}

function plan(info: OpInfo, name: string): WgPlan {
  let p = PLANS.get(name);
  if (p !== undefined) return p;
  const s = WGMMA_BY_NAME.get(name);
  if (s === undefined) throw new SimError(`Unknown wgmma shape "${name}"`, whereStatic(info));
  if (!SIMULATED.has(s.aType) || !SIMULATED.has(s.bType)) {
    throw new SimError(
      `wgmma ${name}: ${s.aType} x ${s.bType} is not simulated`,
      whereStatic(info),
    );
  }
  const eb = WGMMA_TYPE_BITS[s.aType] / 8;
  p = {
    s,
    eb,
    ci: accTable(s.n),
    A: new Float64Array(64 * s.k),
    B: new Float64Array(s.n * s.k),
    C: new Float64Array(64 * s.n),
  };
  PLANS.set(name, p);
  return p;
}

/**
 * Reads an operand tile (`rows` x K, K contiguous) starting at `start` into `out`
 * (element (r, k) at r * K + k), checking each 16-byte chunk's bounds, and, when `chunks`
 * is given, records the chunks' addresses into it from `at` on and checks them as wgmma
 * reads of warpgroup `g`.
 */
function readTile(
  M: Machine,
  idx: number,
  g: number,
  start: number,
  rows: number,
  type: string,
  eb: number,
  out: Float64Array,
  chunks: Int32Array | null,
  at: number,
): void {
  const per = 16 / eb;
  const K = K_BYTES / eb;
  const s8 = M.smem;
  const s16 = M.smemU16;
  const s32 = M.smemU32;
  const t0 = g * WG_THREADS;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < K_BYTES / 16; c++) {
      const a = wgmmaSmemAddress(start, r, 16 * c);
      M.sCheck(idx, t0, a, 16, 16, "wgmma operand read");
      if (chunks !== null) {
        chunks[at++] = a;
        M.hz.asyncRead(idx, g, a, 16);
        if (M.tma !== null) M.tma.read(idx, t0, a, 16, "wgmma");
      }
      const o = r * K + c * per;
      if (type === "f16") {
        for (let e = 0; e < per; e++) out[o + e] = F16_VALUES[s16[(a >> 1) + e]!]!;
      } else if (type === "bf16") {
        for (let e = 0; e < per; e++) out[o + e] = BF16_VALUES[s16[(a >> 1) + e]!]!;
      } else if (type === "tf32") {
        for (let e = 0; e < per; e++) out[o + e] = tf32Truncate(bitsF32(s32[(a >> 2) + e]!));
      } else if (type === "s8") {
        for (let e = 0; e < per; e++) out[o + e] = (s8[a + e]! << 24) >> 24;
      } else if (type === "e4m3" || type === "e5m2") {
        const t = FP8_VALUES[type];
        for (let e = 0; e < per; e++) out[o + e] = t[s8[a + e]!]!;
      } else for (let e = 0; e < per; e++) out[o + e] = s8[a + e]!;
    }
  }
  M.sharedBytesRead += rows * K_BYTES;
}

/** D = (scaleD ? D : 0) + A * B^T over the plan's tiles, rounded once as the row's type
 * (8-bit floats into f32: {@link multiplyFp8}). */
function multiply(p: WgPlan, scaleD: boolean): void {
  const { A, B, C } = p;
  const { n: N, k: K, cType } = p.s;
  const fp8 = p.s.aType === "e4m3" || p.s.aType === "e5m2";
  if (fp8 && cType === "f32") return multiplyFp8(p, scaleD);
  for (let i = 0; i < 64; i++) {
    const ao = i * K;
    for (let j = 0; j < N; j++) {
      const bo = j * K;
      let acc = scaleD ? C[i * N + j]! : 0;
      for (let k = 0; k < K; k++) acc += A[ao + k]! * B[bo + k]!;
      if (cType === "s32") {
        acc = acc > 2147483647 ? 2147483647 : acc < -2147483648 ? -2147483648 : acc;
      } else if (cType === "f16") acc = roundF16(acc);
      // f32: the Float32Array store of the scatter rounds the f64 sum once, to nearest even.
      C[i * N + j] = acc;
    }
  }
}

/** The 8-bit float rows into f32: per element, the exact sum of the accumulator and the
 * products (their integer parts and fractions summed apart, each exactly), truncated to FP22
 * (numerics/fp8_acc.ts). */
function multiplyFp8(p: WgPlan, scaleD: boolean): void {
  const { A, B, C } = p;
  const { n: N, k: K } = p.s;
  for (let i = 0; i < 64; i++) {
    const ao = i * K;
    for (let j = 0; j < N; j++) {
      const bo = j * K;
      let hi = 0;
      let lo = 0;
      for (let k = 0; k < K; k++) {
        const x = A[ao + k]! * B[bo + k]!;
        const h = Math.trunc(x);
        hi += h;
        lo += x - h;
      }
      C[i * N + j] = fp8AccumulateTruncated(scaleD ? C[i * N + j]! : 0, hi, lo);
    }
  }
}

/** Moves warpgroup `g`'s accumulators between its threads' registers `d` and tile C. */
function accumulators(
  p: WgPlan,
  d: readonly (Float32Array | Int32Array | Uint32Array)[],
  g: number,
  dir: "gather" | "scatter",
): void {
  const E = p.s.n / 2;
  const { C, ci } = p;
  const f16 = p.s.cType === "f16";
  const base = g * WG_THREADS;
  for (let t = 0; t < WG_THREADS; t++) {
    const q = t * E;
    const tt = base + t;
    if (!f16) {
      if (dir === "gather") { for (let e = 0; e < E; e++) C[ci[q + e]!] = d[e]![tt]!; }
      else for (let e = 0; e < E; e++) d[e]![tt] = C[ci[q + e]!]!;
    } else if (dir === "gather") {
      for (let r = 0; r < E / 2; r++) {
        const w = d[r]![tt]!;
        C[ci[q + 2 * r]!] = F16_VALUES[w & 0xffff]!;
        C[ci[q + 2 * r + 1]!] = F16_VALUES[w >>> 16]!;
      }
    } else {
      for (let r = 0; r < E / 2; r++) {
        d[r]![tt] = f32ToF16Bits(C[ci[q + 2 * r]!]!) | (f32ToF16Bits(C[ci[q + 2 * r + 1]!]!) << 16);
      }
    }
  }
}

/** The address register's value, the same in all 128 lanes of warpgroup `g`, checked for
 * the layout: 16-byte aligned, the K slice within its 128-byte row. */
function tileStart(M: Machine, idx: number, g: number, v: Uint32Array, what: string): number {
  const base = g * WG_THREADS;
  const a = v[base]!;
  for (let l = 1; l < WG_THREADS; l++) {
    if (v[base + l] !== a) {
      M.fail(
        idx,
        base + l,
        `wgmma ${what} address differs across the warpgroup: ${
          v[base + l]
        } here, ${a} in its first thread`,
      );
    }
  }
  if (a % 16 !== 0 || (a & 1023) + K_BYTES > 128) {
    M.fail(
      idx,
      base,
      `wgmma ${what} tile start ${a} is off the layout (a 1024-byte boundary plus a 16-byte multiple below ${
        128 - K_BYTES + 16
      })`,
    );
  }
  return a;
}

/** `wgmma.mma_async`: see {@link WgmmaOp}. */
export function compileWgmma(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as WgmmaOp;
  const idx = info.index;
  const p = plan(info, o.shape);
  const s = p.s;
  if (o.d.length !== s.accRegs) {
    throw new SimError(
      `wgmma ${s.name} needs ${s.accRegs} accumulator registers, got ${o.d.length}`,
      whereStatic(info),
    );
  }
  const as = s.cType === "f32" ? "f32" : s.cType === "s32" ? "s32" : "u32";
  const d = o.d.map((r) => M.view(r, as, idx) as Float32Array | Int32Array | Uint32Array);
  const aV = M.view(o.a, "u32", idx) as Uint32Array;
  const bV = M.view(o.b, "u32", idx) as Uint32Array;
  const st = M.wg!;
  const dI = Int32Array.from(o.d, (r) => st.dIndex[r.id]!);
  const nD = st.dRegs.length;
  const nChunks = ((64 + s.n) * K_BYTES) / 16;
  const scaleD = o.scaleD === 1;
  return () => {
    const m = mask.m;
    for (let g = 0; g < st.G; g++) {
      if (!groupActive(M, idx, m, g, "wgmma")) continue;
      const a = tileStart(M, idx, g, aV, "A");
      const b = tileStart(M, idx, g, bV, "B");
      const chunks = M.hz.on ? new Int32Array(nChunks) : null;
      readTile(M, idx, g, a, 64, s.aType, p.eb, p.A, chunks, 0);
      readTile(M, idx, g, b, s.n, s.bType, p.eb, p.B, chunks, 64 * 2);
      if (M.hz.on) {
        for (let i = 0; i < dI.length; i++) {
          const w = st.dirty[g * nD + dI[i]!]!;
          if (w === 0) continue;
          M.hz.report(
            "unfenced-accumulator",
            idx,
            [4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3],
            null,
            `wgmma of warpgroup ${g} reads accumulators that "${
              M.infos[w - 1]!.text
            }" wrote with no wgmma.fence (wgfence) since`,
          );
          break;
        }
      }
      if (scaleD) accumulators(p, d, g, "gather");
      multiply(p, scaleD);
      accumulators(p, d, g, "scatter");
      for (let i = 0; i < dI.length; i++) st.pendRegs[g * nD + dI[i]!]!++;
      st.pending[g]!.push({ group: st.open[g]!, idx, d: dI, chunks: chunks ?? new Int32Array(0) });
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `wgfence`, `wgcommit`, `wgwait n`: warpgroup-collective bookkeeping (see ir/kernel.ts). */
export function compileWgSync(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op;
  const idx = info.index;
  if (o.op !== "wgfence" && o.op !== "wgcommit" && o.op !== "wgwait") {
    throw new Error(`internal: compileWgSync of ${o.op}`);
  }
  const n = o.op === "wgwait" ? (o as WgWaitOp).n : 0;
  if (!Number.isInteger(n) || n < 0) {
    throw new SimError(`Bad wgmma.wait_group count ${n}`, whereStatic(info));
  }
  const what = o.op === "wgfence"
    ? "wgmma.fence"
    : o.op === "wgcommit"
    ? "wgmma.commit_group"
    : "wgmma.wait_group";
  const kind = o.op;
  return () => {
    const m = mask.m;
    const st = M.wg;
    const G = st === null ? Math.ceil(M.W / 4) : st.G;
    for (let g = 0; g < G; g++) {
      if (!groupActive(M, idx, m, g, what) || st === null) continue;
      if (kind === "wgfence") {
        const nD = st.dRegs.length;
        st.dirty.fill(0, g * nD, (g + 1) * nD);
      } else if (kind === "wgcommit") st.open[g]!++;
      else if (st.pending[g]!.length > 0) st.retire(M.hz, g, st.open[g]! - n);
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `proxyfence` (`fence.proxy.async.shared::cta`): per thread; clears the unfenced marks
 * of the generic-proxy writes of every warp with an active lane. */
export function compileProxyFence(M: Machine, info: OpInfo, mask: Mask): Run {
  const idx = info.index;
  const T = M.T;
  return () => {
    if (M.hz.async) {
      const m = mask.m;
      for (let w = 0; w < M.W; w++) {
        const end = Math.min(T, w * 32 + 32);
        for (let t = w * 32; t < end; t++) {
          if (m[t] !== 0) {
            M.hz.proxyFence(w);
            break;
          }
        }
      }
    }
    M.counts[idx]! += mask.warps;
  };
}

/**
 * Wraps the compiled run of an operation that reads or writes a wgmma accumulator (any
 * but wgmma, loops and conditionals; unchanged for the others, and when hazards are off):
 * before it runs, an accumulator of a pending wgmma of a warpgroup with a lane that runs
 * it is an `accumulator-before-wait` hazard; after, the accumulators it writes are marked
 * for the warpgroup's next wgmma to find fenced.
 *
 * @param M The machine (with its {@link WgState}).
 * @param info The operation.
 * @param mask Its lanes.
 * @param run Its compiled run.
 * @returns The run to use.
 */
export function guardAccumulators(M: Machine, info: OpInfo, mask: Mask, run: Run): Run {
  const o = info.op;
  const st = M.wg;
  if (st === null || !M.hz.on || o.op === "wgmma" || o.op === "for" || o.op === "if") return run;
  const { reads, writes } = opRegs(o);
  const touched = [...new Set([...reads, ...writes].filter((r) => st.dIndex[r.id]! >= 0))];
  if (touched.length === 0) return run;
  const tI = Int32Array.from(touched, (r) => st.dIndex[r.id]!);
  const wI = Int32Array.from(
    [...new Set(writes.filter((r) => st.dIndex[r.id]! >= 0))],
    (r) => st.dIndex[r.id]!,
  );
  const idx = info.index;
  const guard = "guard" in o && o.guard !== undefined ? o.guard : undefined;
  const gv = guard === undefined ? null : M.view(guard.pred, "pred", idx) as Uint8Array;
  const skip = guard?.negate === true ? 1 : 0;
  const nD = st.dRegs.length;
  const act = new Uint8Array(st.G);
  const T = M.T;
  return () => {
    const m = mask.m;
    for (let g = 0; g < st.G; g++) {
      let on = 0;
      const end = Math.min(T, (g + 1) * WG_THREADS);
      for (let t = g * WG_THREADS; t < end && on === 0; t++) {
        if (m[t] !== 0 && (gv === null || gv[t] !== skip)) on = 1;
      }
      act[g] = on;
      if (on === 0 || st.pending[g]!.length === 0) continue;
      for (let i = 0; i < tI.length; i++) {
        if (st.pendRegs[g * nD + tI[i]!] === 0) continue;
        const r = st.dRegs[tI[i]!]!;
        M.hz.report(
          "accumulator-before-wait",
          idx,
          [4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3],
          null,
          `Warpgroup ${g} accesses ${
            regName(r)
          }, the accumulator of a wgmma still pending (not retired by wgmma.wait_group)`,
        );
        break;
      }
    }
    run();
    for (let g = 0; g < st.G; g++) {
      if (act[g] === 0) continue;
      for (let i = 0; i < wI.length; i++) st.dirty[g * nD + wI[i]!] = idx + 1;
    }
  };
}
