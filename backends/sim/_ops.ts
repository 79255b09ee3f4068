/**
 * Memory, cp.async, cache-policy, barrier and ldmatrix operations of the kernel
 * IR as closures over the machine, lane by lane as ir/kernel.ts defines them,
 * with the bounds and alignment checks, the hazard tracking and the statistics.
 *
 * @module
 */

import type {
  AtomOp,
  BarOp,
  CommitOp,
  CpAsyncOp,
  CreatePolicyOp,
  GridDepOp,
  LdgOp,
  LdmatrixOp,
  LdsOp,
  MemWidth,
  Operand,
  PrefetchOp,
  Reg,
  StgOp,
  StsOp,
  WaitOp,
} from "../../ir/kernel.ts";
import { ldmatrixCoord } from "../../ir/mma_table.ts";
import type { CachePolicy } from "../../ir/cache_policy.ts";
import { f32Bits, f32ToF16Bits } from "../../numerics/mod.ts";
import type { Machine, Mask, OpInfo, RegArray, Run } from "./_machine.ts";
import { PREFETCH_WHAT, SimError } from "./types.ts";

const WIDTH_BYTES: Readonly<Record<MemWidth, number>> = { b8: 1, b16: 2, b32: 4, b64: 8 };

/**
 * How one element of a memory access meets its register: `kind` 0 is an
 * integer view (the low `8 * width` bits), 1 the word pairs of an f64
 * register, 2 a u64 register (a number), 3 an immediate.
 */
interface Slot {
  readonly kind: 0 | 1 | 2 | 3;
  readonly arr: RegArray | null;
  /** For an immediate: the low and high 32 bits. */
  readonly lo: number;
  readonly hi: number;
}

function whereStatic(info: OpInfo) {
  return { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null };
}

function bad(info: OpInfo, msg: string): never {
  throw new SimError(msg, whereStatic(info));
}

function slot(M: Machine, info: OpInfo, o: Operand, width: MemWidth): Slot {
  if (o.kind === "imm") {
    const v = o.value;
    if (width === "b64") {
      const dv = new DataView(new ArrayBuffer(8));
      dv.setFloat64(0, v, true);
      return { kind: 3, arr: null, lo: dv.getUint32(0, true), hi: dv.getUint32(4, true) };
    }
    const bits = Number.isInteger(v) ? v >>> 0 : width === "b16" ? f32ToF16Bits(v) : f32Bits(v);
    return { kind: 3, arr: null, lo: bits, hi: 0 };
  }
  const r: Reg = o;
  if (width === "b64") {
    if (r.type === "f64") return { kind: 1, arr: M.regs[r.id]!.w64!, lo: 0, hi: 0 };
    if (r.type === "u64") return { kind: 2, arr: M.view(r, "u64", info.index), lo: 0, hi: 0 };
    bad(info, `A b64 access needs an f64 or u64 register, not ${r.type}`);
  }
  if (r.type === "b16") {
    if (width === "b32") bad(info, "A b32 access needs a 32-bit register, not b16");
    return { kind: 0, arr: M.view(r, "b16", info.index), lo: 0, hi: 0 };
  }
  if (r.type === "pred" || r.type === "u64" || r.type === "f64") {
    bad(info, `A ${width} access cannot use a ${r.type} register`);
  }
  return { kind: 0, arr: M.view(r, "u32", info.index), lo: 0, hi: 0 };
}

function vectorCount(info: OpInfo, n: number): void {
  if (n !== 1 && n !== 2 && n !== 4) {
    bad(info, `A vector access moves 1, 2 or 4 elements, not ${n}`);
  }
}

/** A guard's predicate lanes (null for none) and the value at which a lane skips. */
interface GuardView {
  readonly arr: Uint8Array | null;
  readonly skip: number;
}

function guardOf(
  M: Machine,
  info: OpInfo,
  g: { pred: Reg; negate: boolean } | undefined,
): GuardView {
  if (g === undefined) return { arr: null, skip: 0 };
  return { arr: M.view(g.pred, "pred", info.index) as Uint8Array, skip: g.negate ? 1 : 0 };
}

/** Whether lane `t` runs: active in the mask and not skipped by the guard. */
function runs(m: Uint8Array, g: GuardView, t: number): boolean {
  return m[t] !== 0 && (g.arr === null || g.arr[t] !== g.skip);
}

const P32 = 4294967296;

/** Writes element `i` of a load (low word `lo`, high word `hi`) into lane `t` of `s`. */
function put(M: Machine, idx: number, s: Slot, t: number, lo: number, hi: number): void {
  if (s.kind === 0) s.arr![t] = lo;
  else if (s.kind === 1) {
    s.arr![2 * t] = lo;
    s.arr![2 * t + 1] = hi;
  } else {
    if (hi >= 2 ** 21) M.fail(idx, t, `Loaded u64 value exceeds the simulator's exact range 2^53`);
    s.arr![t] = hi * P32 + lo;
  }
}

/** Sets {@link lo}/{@link hi} to lane `t` of `s`. */
let lo = 0;
let hi = 0;
function get(M: Machine, idx: number, s: Slot, t: number): void {
  if (s.kind === 0) {
    lo = s.arr![t]!;
    hi = 0;
  } else if (s.kind === 1) {
    lo = s.arr![2 * t]!;
    hi = s.arr![2 * t + 1]!;
  } else if (s.kind === 2) {
    const v = s.arr![t]!;
    if (!(v >= 0 && v < 2 ** 53)) M.fail(idx, t, `u64 value ${v} cannot be stored`);
    hi = Math.floor(v / P32);
    lo = v - hi * P32;
  } else {
    lo = s.lo;
    hi = s.hi;
  }
}

/** What a load or store of registers needs, compiled once: the element width and count,
 * the address view, the registers' slots and the guard. */
function memAccess(M: Machine, info: OpInfo, addrType: "u32" | "u64") {
  const o = info.op as LdgOp | StgOp | LdsOp | StsOp;
  const regs = o.op === "ldg" || o.op === "lds" ? o.dst : o.src;
  const n = regs.length;
  vectorCount(info, n);
  const eb = WIDTH_BYTES[o.width];
  return {
    idx: info.index,
    n,
    eb,
    size: n * eb,
    addr: M.view(o.addr, addrType, info.index),
    slots: regs.map((r) => slot(M, info, r, o.width)),
    g: guardOf(M, info, o.guard),
    off: o.offset,
    T: M.T,
    w: o.width,
  };
}

/** `ld.global` and `st.global` (see {@link LdgOp}, {@link StgOp}): the same lanes and bounds
 * checks; only the direction of each element differs. */
export function compileGlobal(M: Machine, info: OpInfo, mask: Mask, dir: "load" | "store"): Run {
  const { idx, n, eb, size, addr, slots, g, off, T, w } = memAccess(M, info, "u64");
  const load = dir === "load";
  const o = info.op as LdgOp | StgOp;
  const pol = policyView(M, info, o.op === "ldg" ? o.policy : undefined);
  return () => {
    const m = mask.m;
    let bytes = 0;
    for (let t = 0; t < T; t++) {
      if (!runs(m, g, t)) continue;
      if (pol !== null) checkPolicy(M, idx, pol, t);
      const what = load ? "global load" : "global store";
      const ti = M.gResolve(idx, t, addr[t]! + off, size, size, what);
      const dv = M.gView[ti]!;
      const p = M.gOff;
      if (ti === M.wsIndex) workspaceAccess(M, idx, t, p, size, load);
      for (let i = 0; i < n; i++) {
        const q = p + i * eb;
        if (load) {
          if (w === "b8") put(M, idx, slots[i]!, t, dv.getUint8(q), 0);
          else if (w === "b16") put(M, idx, slots[i]!, t, dv.getUint16(q, true), 0);
          else if (w === "b32") put(M, idx, slots[i]!, t, dv.getUint32(q, true), 0);
          else put(M, idx, slots[i]!, t, dv.getUint32(q, true), dv.getUint32(q + 4, true));
        } else {
          get(M, idx, slots[i]!, t);
          if (w === "b8") dv.setUint8(q, lo & 0xff);
          else if (w === "b16") dv.setUint16(q, lo & 0xffff, true);
          else if (w === "b32") dv.setUint32(q, lo, true);
          else {
            dv.setUint32(q, lo, true);
            dv.setUint32(q + 4, hi, true);
          }
        }
      }
      bytes += size;
    }
    if (load) M.globalBytesRead += bytes;
    else M.globalBytesWritten += bytes;
    M.counts[idx]! += mask.warps;
  };
}

/** Tracks a workspace store, or reports a load of bytes no store of the launch wrote
 * (`unwritten-partial`). */
function workspaceAccess(
  M: Machine,
  idx: number,
  t: number,
  at: number,
  size: number,
  load: boolean,
): void {
  const w = M.wsWritten;
  if (!load) {
    w.fill(1, at, at + size);
    return;
  }
  for (let i = at; i < at + size; i++) {
    if (w[i] === 0) {
      M.hz.report(
        "unwritten-partial",
        idx,
        [t >> 5],
        null,
        `thread ${t} loads workspace bytes at offset ${i} that no block has stored in this ` +
          "launch: a partial sum read before it was stored",
      );
      return;
    }
  }
}

/** `atom.global.add.u32`: see {@link AtomOp}. Lanes run in order, so within a
 * warp the lowest active lane sees the old value first (any order is legal on
 * the GPU; the lowering uses one lane). */
export function compileAtom(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as AtomOp;
  const idx = info.index;
  const addr = M.view(o.addr, "u64", idx);
  const dst = M.view(o.dst, "u32", idx);
  const bv = o.b.kind === "reg" ? M.view(o.b, "u32", idx) : null;
  const bi = o.b.kind === "imm" ? o.b.value >>> 0 : 0;
  return eachActiveLane(M, info, mask, o.guard, (t) => {
    const ti = M.gResolve(idx, t, addr[t]! + o.offset, 4, 4, "atomic");
    const dv = M.gView[ti]!;
    const old = dv.getUint32(M.gOff, true);
    dv.setUint32(M.gOff, (old + (bv !== null ? bv[t]! : bi)) >>> 0, true);
    dst[t] = old;
    M.globalBytesRead += 4;
    M.globalBytesWritten += 4;
  });
}

/** A run that calls `lane(t)` for every thread `t` active in `mask` whose guard holds, in
 * order, and counts the operation once a warp (for the operations that touch a lane at a
 * time: atomics, prefetches). */
function eachActiveLane(
  M: Machine,
  info: OpInfo,
  mask: Mask,
  guard: { pred: Reg; negate: boolean } | undefined,
  lane: (t: number) => void,
): Run {
  const g = guardOf(M, info, guard);
  const T = M.T;
  const idx = info.index;
  return () => {
    const m = mask.m;
    for (let t = 0; t < T; t++) {
      if (!runs(m, g, t)) continue;
      lane(t);
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `fence.acq_rel.gpu`: see {@link FenceOp}; blocks run one after another here, so only counted. */
export function compileFence(M: Machine, info: OpInfo, mask: Mask): Run {
  const idx = info.index;
  return () => {
    M.counts[idx]! += mask.warps;
  };
}

/** `griddepcontrol.{wait,launch_dependents}`: see {@link GridDepOp}. One grid runs here, so
 * there is nothing to wait for; a `wait` marks its threads as having waited, which
 * {@link Machine.gResolve} asks before every global access (`global-before-griddep-wait`). */
export function compileGridDep(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as GridDepOp;
  const idx = info.index;
  const waited = o.action === "wait" ? M.gridWaited : null;
  return () => {
    if (waited !== null) {
      const m = mask.m;
      for (let t = 0; t < M.T; t++) if (m[t] !== 0) waited[t] = 1;
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `prefetch.global.L2`: see {@link PrefetchOp}. Moves nothing; checks that every active
 * lane's address lies inside a tensor, as a load's would be checked, and counts the lines. */
export function compilePrefetch(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as PrefetchOp;
  const idx = info.index;
  const addr = M.view(o.addr, "u64", idx);
  return eachActiveLane(M, info, mask, o.guard, (t) => {
    M.gResolve(idx, t, addr[t]!, 1, 1, PREFETCH_WHAT);
    M.prefetches++;
  });
}

/** `ld.shared` and `st.shared` (see {@link LdsOp}, {@link StsOp}): the same lanes, checks,
 * hazards and bank counting; only the direction of each element differs. The warp-by-warp
 * lane loop (lane addresses for the bank count) is written out here and in
 * {@link compileCpAsync} rather than taken as a callback: a closure call per lane would sit
 * in the simulator's inner loop. */
export function compileShared(M: Machine, info: OpInfo, mask: Mask, dir: "load" | "store"): Run {
  const { idx, n, eb, size, addr, slots, g, off, T, w } = memAccess(M, info, "u32");
  const la = M.laneAddr;
  const load = dir === "load";
  const banks = load ? M.banks.lds : M.banks.sts;
  return () => {
    const m = mask.m;
    const s8 = M.smem;
    const s16 = M.smemU16;
    const s32 = M.smemU32;
    for (let wp = 0; wp < M.W; wp++) {
      let any = false;
      for (let l = 0; l < 32; l++) {
        const t = wp * 32 + l;
        la[l] = -1;
        if (t >= T || !runs(m, g, t)) continue;
        const a = addr[t]! + off;
        M.sCheck(idx, t, a, size, size, load ? "shared load" : "shared store");
        la[l] = a;
        any = true;
        if (M.mb !== null) M.mb.liveCheck(idx, t, a, size, load ? "ld.shared" : "st.shared");
        if (M.hz.on) {
          if (load) M.hz.read(idx, wp, a, size);
          else M.hz.write(idx, wp, a, size, "st.shared", true);
          if (M.tma !== null) {
            if (load) M.tma.read(idx, t, a, size, "ld.shared");
            else M.tma.write(idx, t, a, size, "st.shared");
          }
        }
        for (let i = 0; i < n; i++) {
          const q = a + i * eb;
          if (load) {
            if (w === "b8") put(M, idx, slots[i]!, t, s8[q]!, 0);
            else if (w === "b16") put(M, idx, slots[i]!, t, s16[q >> 1]!, 0);
            else if (w === "b32") put(M, idx, slots[i]!, t, s32[q >> 2]!, 0);
            else put(M, idx, slots[i]!, t, s32[q >> 2]!, s32[(q >> 2) + 1]!);
          } else {
            get(M, idx, slots[i]!, t);
            if (w === "b8") s8[q] = lo;
            else if (w === "b16") s16[q >> 1] = lo;
            else if (w === "b32") s32[q >> 2] = lo;
            else {
              s32[q >> 2] = lo;
              s32[(q >> 2) + 1] = hi;
            }
          }
        }
        if (load) M.sharedBytesRead += size;
        else M.sharedBytesWritten += size;
      }
      if (any) M.countBanks(banks, 32, size);
    }
    M.counts[idx]! += mask.warps;
  };
}

/** `cp.async`: see {@link CpAsyncOp}. The source is read when the copy is issued. */
export function compileCpAsync(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as CpAsyncOp;
  const idx = info.index;
  const bytes = o.bytes;
  if (bytes !== 4 && bytes !== 8 && bytes !== 16) {
    bad(info, `Bad cp.async size: ${bytes} bytes (4, 8 or 16)`);
  }
  if (o.cache === "cg" && bytes !== 16) {
    bad(info, `Bad cp.async size: cp.async.cg copies 16 bytes, not ${bytes}`);
  }
  const dstA = M.view(o.dst, "u32", idx);
  const srcA = M.view(o.src, "u64", idx);
  const sbA = o.srcBytes.kind === "reg" ? M.view(o.srcBytes, "u32", idx) : null;
  const sbImm = o.srcBytes.kind === "imm" ? o.srcBytes.value : 0;
  if (sbA === null && !(Number.isInteger(sbImm) && sbImm >= 0 && sbImm <= bytes)) {
    bad(info, `Bad cp.async size: source bytes ${sbImm} not in 0..${bytes}`);
  }
  const g = guardOf(M, info, o.guard);
  const pol = policyView(M, info, o.policy);
  const off = o.dstOffset;
  const T = M.T;
  const la = M.laneAddr;
  return () => {
    const m = mask.m;
    let gbytes = 0;
    for (let wp = 0; wp < M.W; wp++) {
      let any = false;
      for (let l = 0; l < 32; l++) {
        const t = wp * 32 + l;
        la[l] = -1;
        if (t >= T || !runs(m, g, t)) continue;
        if (pol !== null) checkPolicy(M, idx, pol, t);
        const d = dstA[t]! + off;
        const sb = sbA === null ? sbImm : sbA[t]!;
        if (!(sb >= 0 && sb <= bytes)) {
          M.fail(idx, t, `Bad cp.async size: source bytes ${sb} not in 0..${bytes}`);
        }
        M.sCheck(idx, t, d, bytes, bytes, "cp.async destination");
        if (M.mb !== null) M.mb.liveCheck(idx, t, d, bytes, "cp.async");
        if (M.tma !== null && M.hz.on) M.tma.write(idx, t, d, bytes, "cp.async");
        const s = M.allocCp();
        const data = M.cpData;
        if (sb > 0) {
          const ti = M.gResolve(idx, t, srcA[t]!, sb, bytes, "cp.async source");
          const p = M.gOff;
          const src = M.gBytes[ti]!;
          for (let i = 0; i < sb; i++) data[s * 16 + i] = src[p + i]!;
          gbytes += sb;
        }
        for (let i = sb; i < bytes; i++) data[s * 16 + i] = 0;
        M.cpThread[s] = t;
        M.cpGroup[s] = M.openGroup[t]!;
        M.cpDst[s] = d;
        M.cpBytes[s] = bytes;
        M.cpOp[s] = idx;
        la[l] = d;
        any = true;
        if (M.hz.on) {
          M.hz.write(idx, wp, d, bytes, "cp.async", true);
          for (let x = d >> 2; x <= (d + bytes - 1) >> 2; x++) {
            M.hz.pendWords[x]!++;
            M.hz.pendWarp[x] = wp;
          }
        }
        M.sharedBytesWritten += bytes;
      }
      if (any) M.countBanks(M.banks.cpasync, 32, bytes);
    }
    M.globalBytesRead += gbytes;
    M.counts[idx]! += mask.warps;
  };
}

/**
 * The value `createpolicy` writes for each eviction priority. The hardware's encoding is opaque
 * (the PTX ISA documents none) and nothing but a copy's policy operand reads it, so these are
 * stand-ins: distinct, exact in a u64 register (below 2^53), and unlike an address or the
 * poison of an unwritten register (NaN), so that {@link checkPolicy} can tell a policy from
 * anything else.
 */
export const POLICY_VALUES: Readonly<Record<CachePolicy, number>> = Object.freeze({
  evict_first: 0xcac4e_0001,
  evict_last: 0xcac4e_0002,
  evict_normal: 0xcac4e_0003,
});

const POLICY_SET: ReadonlySet<number> = new Set(Object.values(POLICY_VALUES));

/** `createpolicy`: see {@link CreatePolicyOp}. Writes the priority's {@link POLICY_VALUES}
 * into every active lane. */
export function compileCreatePolicy(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as CreatePolicyOp;
  const v = POLICY_VALUES[o.priority];
  if (v === undefined) bad(info, `Unknown eviction priority "${o.priority}"`);
  const dst = M.view(o.dst, "u64", info.index);
  return eachActiveLane(M, info, mask, undefined, (t) => {
    dst[t] = v;
  });
}

/** A copy's cache-policy register (u64), or null for a copy without one. */
export function policyView(M: Machine, info: OpInfo, policy: Reg | undefined): RegArray | null {
  return policy === undefined ? null : M.view(policy, "u64", info.index);
}

/**
 * Checks that lane `t` of a copy's policy register holds a policy a `createpolicy` wrote. The
 * hint changes nothing else: the copy moves the same bytes with it or without.
 *
 * @param M The machine.
 * @param idx The copy.
 * @param pol The policy register ({@link policyView}).
 * @param t The lane.
 */
export function checkPolicy(M: Machine, idx: number, pol: RegArray, t: number): void {
  const v = pol[t]!;
  if (!POLICY_SET.has(v)) {
    M.fail(idx, t, `Cache policy register holds ${v}: no createpolicy wrote it`);
  }
}

/** `cp.async.commit_group`: see {@link CommitOp}. */
export function compileCommit(M: Machine, info: OpInfo, mask: Mask): Run {
  const T = M.T;
  const idx = info.index;
  void (info.op as CommitOp);
  return () => {
    const m = mask.m;
    const og = M.openGroup;
    for (let t = 0; t < T; t++) if (m[t] !== 0) og[t]!++;
    M.counts[idx]! += mask.warps;
  };
}

/** `cp.async.wait_group n`: see {@link WaitOp}. */
export function compileWait(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as WaitOp;
  if (!Number.isInteger(o.n) || o.n < 0) bad(info, `Bad wait_group count ${o.n}`);
  const idx = info.index;
  return () => {
    if (M.pendingN > 0) M.landCopies(idx, mask.m, o.n);
    M.counts[idx]! += mask.warps;
  };
}

/** `bar.sync 0`: see {@link BarOp}. Only compiled in uniform control flow. */
export function compileBar(M: Machine, info: OpInfo, mask: Mask): Run {
  void (info.op as BarOp);
  const idx = info.index;
  return () => {
    M.hz.epoch++;
    M.counts[idx]! += mask.warps;
  };
}

/**
 * Checks that warp `wp` is entirely active (or entirely inactive) for a
 * warp-collective operation.
 *
 * @returns Whether the warp takes part.
 */
export function warpActive(
  M: Machine,
  idx: number,
  m: Uint8Array,
  wp: number,
  what: string,
): boolean {
  const base = wp * 32;
  let on = 0;
  let off = -1;
  for (let l = 0; l < 32; l++) {
    const t = base + l;
    if (t < M.T && m[t] !== 0) on++;
    else if (off < 0) off = l;
  }
  if (on === 0) return false;
  if (on !== 32) {
    M.fail(
      idx,
      base + off,
      `${what} is warp-collective: lane ${off} of warp ${wp} does not take part (all 32 lanes must)`,
    );
  }
  return true;
}

/** Row and column byte of each (lane, elem) of ldmatrix, from ir/mma_table.ts. */
function ldmTable(trans: boolean): { row: Int32Array; col: Int32Array } {
  const row = new Int32Array(64);
  const col = new Int32Array(64);
  for (let l = 0; l < 32; l++) {
    for (let e = 0; e < 2; e++) {
      const [r, c] = ldmatrixCoord(l, 0, e, trans);
      row[l * 2 + e] = r;
      col[l * 2 + e] = c * 2;
    }
  }
  return { row, col };
}

const LDM = { plain: ldmTable(false), trans: ldmTable(true) };

/** `ldmatrix`: see {@link LdmatrixOp}. */
export function compileLdmatrix(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as LdmatrixOp;
  const idx = info.index;
  const num = o.num;
  if (num !== 1 && num !== 2 && num !== 4) {
    bad(info, `ldmatrix loads 1, 2 or 4 matrices, not ${num}`);
  }
  if (o.dst.length !== num) {
    bad(info, `ldmatrix.x${num} writes ${num} registers, not ${o.dst.length}`);
  }
  const dst = o.dst.map((r) => {
    if (r.type === "b16" || r.type === "pred" || r.type === "u64" || r.type === "f64") {
      bad(info, `ldmatrix writes 32-bit registers, not ${r.type}`);
    }
    return M.view(r, "u32", idx) as Uint32Array;
  });
  const addr = M.view(o.addr, "u32", idx);
  const off = o.offset;
  const tab = o.trans ? LDM.trans : LDM.plain;
  const rows = new Int32Array(32);
  const la = M.laneAddr;
  return () => {
    const m = mask.m;
    const s16 = M.smemU16;
    for (let wp = 0; wp < M.W; wp++) {
      if (!warpActive(M, idx, m, wp, "ldmatrix")) continue;
      const base = wp * 32;
      for (let l = 0; l < 32; l++) {
        if (l < 8 * num) {
          const a = addr[base + l]! + off;
          M.sCheck(idx, base + l, a, 16, 16, "ldmatrix row");
          rows[l] = a;
          la[l] = a;
          if (M.hz.on) {
            M.hz.read(idx, wp, a, 16);
            if (M.tma !== null) M.tma.read(idx, base + l, a, 16, "ldmatrix");
          }
        } else la[l] = -1;
      }
      M.countBanks(M.banks.ldmatrix, 8 * num, 16);
      M.sharedBytesRead += 128 * num;
      for (let j = 0; j < num; j++) {
        const d = dst[j]!;
        for (let l = 0; l < 32; l++) {
          const r0 = rows[8 * j + tab.row[2 * l]!]! + tab.col[2 * l]!;
          const r1 = rows[8 * j + tab.row[2 * l + 1]!]! + tab.col[2 * l + 1]!;
          d[base + l] = s16[r0 >> 1]! | (s16[r1 >> 1]! << 16);
        }
      }
    }
    M.counts[idx]! += mask.warps;
  };
}
