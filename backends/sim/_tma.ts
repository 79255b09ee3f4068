/**
 * sm90's TMA copies in the simulator (ir/kernel.ts TmaLoadOp): `cp.async.bulk.tensor` of a
 * box through a `tensormap` kernel parameter, whose map the simulator builds itself from the
 * parameter's rule (ir/tensor_map.ts `tensorMapArgs`, on the address where it placed the
 * tensor and the launch's dims and strides), written in the map's swizzle (`boxOffset`),
 * elements outside the tensor as zeros, then completing the box's bytes on the barrier.
 *
 * The bytes land when the copy is issued; what the hardware leaves undefined until the
 * barrier's phase completes and the reader has waited on it is tracked per 4-byte word of
 * shared memory (when hazards are on): the barrier and phase of the last TMA copy that wrote
 * each word. Hazards (types.ts HazardKind): `tma-before-wait` (a read of bytes still in
 * flight for the reading thread), `write-before-landed` (a write of such bytes, or a copy
 * over bytes an outstanding cp.async or TMA copy writes), `write-during-wgmma` (a copy over
 * bytes a pending wgmma reads), `tma-overwrite` (a copy over bytes of an earlier copy nobody
 * waited for), `uninitialized-read` (a read of bytes nothing wrote in the block),
 * `unbalanced-tma` (copies nobody waited for when the block ends).
 *
 * A multicast copy (a cluster kernel, _cluster.ts) is one copy per receiving CTA: the box at
 * the same offset of each CTA's window, its bytes completed on the barrier at the same offset
 * of each, and each destination's words tracked with its own CTA's barrier. It reads global
 * memory once (for `SimStats.globalBytesRead`); `tmaBytes` counts each destination.
 *
 * A copy with a cache policy (`policy`, an L2 hint) checks in each issuing lane that the register
 * holds one a `createpolicy` wrote (_ops.ts `checkPolicy`) and copies as it would without it.
 *
 * Shortcuts: a multicast copy lands in every destination at once, when issued (the hardware
 * may land it in one CTA long before another; the barrier tracking covers what a reader may
 * see, not that order).
 *
 * @module
 */

import type { Kernel, TmaLoadOp, TmapPrefetchOp } from "../../ir/kernel.ts";
import { walkOps } from "../../ir/kernel.ts";
import { type TensorMapArgs, tensorMapArgs } from "../../ir/tensor_map.ts";
import { remoteAddress } from "./_cluster.ts";
import type { Machine, Mask, OpInfo, RegArray, Run } from "./_machine.ts";
import { checkPolicy, policyView } from "./_ops.ts";
import { SimError } from "./types.ts";

function whereStatic(info: OpInfo) {
  return { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null };
}

/**
 * Whether a kernel has an operation of one of the kinds named.
 *
 * @param kernel The kernel.
 * @param kinds Operation tags.
 * @returns Whether any operation has one.
 */
export function hasOps(kernel: Kernel, kinds: readonly string[]): boolean {
  let found = false;
  walkOps(kernel.body, (o) => {
    if (kinds.includes(o.op)) found = true;
  });
  return found;
}

/**
 * Evaluates the tensor maps of a kernel's `tensormap` parameters for one launch.
 *
 * @param kernel The kernel.
 * @param values Every other parameter's value by name (tensors: their simulated address).
 * @returns The maps by parameter name.
 * @throws SimError when a map's rule fails (a missing value, a misaligned stride).
 */
export function tensorMaps(
  kernel: Kernel,
  values: ReadonlyMap<string, number>,
): Map<string, TensorMapArgs> {
  const maps = new Map<string, TensorMapArgs>();
  const nums: Record<string, number> = {};
  for (const p of kernel.params) {
    if (p.kind === "dim" || p.kind === "stride") nums[p.name] = values.get(p.name)!;
  }
  for (const p of kernel.params) {
    if (p.kind !== "tensormap") continue;
    if (p.tmap === undefined) throw new SimError(`Tensor map parameter "${p.name}" has no tmap`);
    const base = values.get(p.tmap.tensor);
    const t = kernel.params.find((q) => q.name === p.tmap!.tensor);
    if (base === undefined || t?.kind !== "tensor") {
      throw new SimError(
        `Tensor map parameter "${p.name}" names "${p.tmap.tensor}", which is no tensor parameter`,
      );
    }
    try {
      maps.set(p.name, tensorMapArgs(p.tmap, BigInt(base), nums));
    } catch (e) {
      throw new SimError(`Parameter "${p.name}": ${(e as Error).message}`);
    }
  }
  return maps;
}

/** The TMA state of one launch: the maps, per-word provenance of shared memory, counters. */
export class TmaState {
  /** The maps by parameter name. */
  readonly maps: Map<string, TensorMapArgs>;
  /** Per 4-byte word: 1 + the barrier index of the TMA copy that last wrote it, or 0. */
  readonly bar: Int32Array;
  /** Per word: the phase of that barrier the copy completes. */
  readonly ph: Int32Array;
  /** Per word: the copy's operation index. */
  readonly op: Int32Array;
  /** Per word: 1 once written in the block (by anything). */
  readonly written: Uint8Array;
  /** Copies issued and their box bytes. */
  copies = 0;
  bytes = 0;

  /**
   * @param M The machine.
   * @param maps The launch's tensor maps.
   */
  constructor(readonly M: Machine, maps: Map<string, TensorMapArgs>) {
    this.maps = maps;
    const words = M.hz.on ? Math.ceil(M.smemSize / 4) : 0;
    this.bar = new Int32Array(words);
    this.ph = new Int32Array(words);
    this.op = new Int32Array(words);
    this.written = new Uint8Array(words);
  }

  /** Forgets the last block's copies. */
  startBlock(): void {
    this.bar.fill(0);
    this.written.fill(0);
  }

  /** At the end of a block: an `unbalanced-tma` hazard for the bytes of copies no thread
   * waited for (a phase never completed, or completed and never waited on). */
  endBlock(): void {
    const mb = this.M.mb!;
    let first = -1;
    let n = 0;
    for (let x = 0; x < this.bar.length; x++) {
      const b = this.bar[x]! - 1;
      if (b < 0 || mb.seen[b]! > this.ph[x]!) continue;
      if (first < 0) first = x;
      n++;
    }
    if (first < 0) return;
    const b = this.bar[first]! - 1;
    this.M.hz.report(
      "unbalanced-tma",
      this.op[first]!,
      [],
      first * 4,
      `${
        4 * n
      } bytes of TMA copies that no thread waited for at the end of the block (the first of "${
        this.M.infos[this.op[first]!]!.text
      }", on phase ${this.ph[first]} of ${mb.describe(b)})`,
    );
  }

  /** Whether the TMA bytes of word `x` are visible to thread `t` (or no copy wrote it). */
  #visible(x: number, t: number): boolean {
    const b = this.bar[x]! - 1;
    return b < 0 || this.M.mb!.observed[b]![t]! > this.ph[x]!;
  }

  /**
   * Checks a read of shared bytes `[addr, addr + len)` by thread `t` (hazards on only).
   *
   * @param what How the message names the reader.
   */
  read(idx: number, t: number, addr: number, len: number, what: string): void {
    const hz = this.M.hz;
    for (let x = addr >> 2; x <= (addr + len - 1) >> 2; x++) {
      if (this.written[x] === 0) {
        hz.report(
          "uninitialized-read",
          idx,
          [t >> 5],
          Math.max(x * 4, addr),
          `${what} of thread ${t} reads shared memory that nothing has written in this block (no TMA copy, store or cp.async)`,
        );
        return;
      }
      if (!this.#visible(x, t)) {
        const b = this.bar[x]! - 1;
        hz.report(
          "tma-before-wait",
          idx,
          [t >> 5],
          Math.max(x * 4, addr),
          `${what} of thread ${t} reads shared memory of the TMA copy "${
            this.M.infos[this.op[x]!]!.text
          }" before waiting for the phase ${this.ph[x]} it completes on ${this.M.mb!.describe(b)}`,
        );
        return;
      }
    }
  }

  /** A generic-proxy write (st.shared, cp.async) of `[addr, addr + len)` by thread `t`. */
  write(idx: number, t: number, addr: number, len: number, what: string): void {
    for (let x = addr >> 2; x <= (addr + len - 1) >> 2; x++) {
      this.written[x] = 1;
      if (this.bar[x] === 0) continue;
      if (!this.#visible(x, t)) {
        this.M.hz.report(
          "write-before-landed",
          idx,
          [t >> 5],
          Math.max(x * 4, addr),
          `${what} writes shared memory of the TMA copy "${
            this.M.infos[this.op[x]!]!.text
          }" still in flight for thread ${t} (it did not wait for the phase the copy completes)`,
        );
      }
      this.bar[x] = 0;
    }
  }

  /** A TMA copy by thread `t` writing word `x`, completing phase `ph` of barrier `b`. */
  copyWord(idx: number, t: number, x: number, b: number, ph: number): void {
    const M = this.M;
    const hz = M.hz;
    if (hz.async && hz.asyncReads[x]! > 0) {
      const g = hz.asyncReader[x]!;
      hz.report(
        "write-during-wgmma",
        idx,
        [t >> 5, 4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3],
        x * 4,
        `A TMA copy of warp ${
          t >> 5
        } overwrites shared memory a wgmma of warpgroup ${g} still reads (its group was not retired by wgmma.wait_group)`,
      );
    }
    if (hz.pendWords[x]! > 0) {
      hz.report(
        "write-before-landed",
        idx,
        [t >> 5, hz.pendWarp[x]!],
        x * 4,
        `A TMA copy of warp ${t >> 5} writes shared memory that an outstanding cp.async of warp ${
          hz.pendWarp[x]
        } also writes`,
      );
    }
    const pb = this.bar[x]! - 1;
    if (pb >= 0) {
      const mb = M.mb!;
      const prev = `the TMA copy "${M.infos[this.op[x]!]!.text}"`;
      if (mb.phase[pb]! <= this.ph[x]!) {
        hz.report(
          "write-before-landed",
          idx,
          [t >> 5],
          x * 4,
          `A TMA copy writes shared memory that ${prev} also writes, whose phase ${this.ph[x]} of ${
            mb.describe(pb)
          } has not completed`,
        );
      } else if (mb.seen[pb]! <= this.ph[x]!) {
        hz.report(
          "tma-overwrite",
          idx,
          [t >> 5],
          x * 4,
          `A TMA copy overwrites shared memory of ${prev} before any thread waited for its phase ${
            this.ph[x]
          } of ${mb.describe(pb)} (a stage reloaded before it was consumed)`,
        );
      }
    }
    if (hz.async) hz.unfenced[x] = 0;
    this.bar[x] = b + 1;
    this.ph[x] = ph;
    this.op[x] = idx;
    this.written[x] = 1;
  }
}

/** A compiled box copy's constants: the map, its box and swizzle. */
interface Box {
  readonly map: TensorMapArgs;
  readonly rank: number;
  readonly bytes: number;
  readonly align: number;
}

function boxOf(M: Machine, info: OpInfo): Box {
  const o = info.op as TmaLoadOp;
  const map = M.tma!.maps.get(o.map);
  if (map === undefined) {
    throw new SimError(`No tensor map parameter "${o.map}"`, whereStatic(info));
  }
  const rank = map.boxDim.length;
  if (o.coords.length !== rank) {
    throw new SimError(
      `The map "${o.map}" has ${rank} dimensions but the copy gives ${o.coords.length} coordinates`,
      whereStatic(info),
    );
  }
  const bytes = map.boxDim.reduce((p, d) => p * d, map.elementBytes);
  return { map, rank, bytes, align: map.swizzleBytes === 128 ? 1024 : 128 };
}

/** Thread t's box origin into `c`: each coordinate an immediate or thread t's register. */
function originOf(
  coords: readonly (Int32Array | { readonly value: number })[],
  t: number,
  c: number[],
): void {
  for (let i = 0; i < c.length; i++) {
    const v = coords[i]!;
    c[i] = "value" in v ? v.value | 0 : v[t]!;
  }
}

/** A copy's destination: aligned for its swizzle, inside the thread's shared window. */
function checkDestination(M: Machine, idx: number, t: number, dst: number, box: Box): void {
  if (dst % box.align !== 0) {
    M.fail(
      idx,
      t,
      `TMA destination at shared 0x${dst.toString(16)} is not ${box.align}-byte aligned${
        box.align === 1024 ? " (the 128-byte swizzle)" : ""
      }`,
    );
  }
  M.sCheck(idx, t, dst, box.bytes, 1, "TMA destination");
}

/** `tmapprefetch`: see {@link TmapPrefetchOp}. A hint: only its tensor map is checked. */
export function compileTmapPrefetch(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as TmapPrefetchOp;
  const idx = info.index;
  if (M.tma?.maps.get(o.map) === undefined) {
    throw new SimError(`No tensor map parameter "${o.map}"`, whereStatic(info));
  }
  return () => {
    M.counts[idx]! += mask.warps;
  };
}

/** `tma`: see {@link TmaLoadOp}. One copy per active lane. */
export function compileTma(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as TmaLoadOp;
  const idx = info.index;
  const box = boxOf(M, info);
  const { rank } = box;
  const dstV = M.view(o.dst, "u32", idx) as Uint32Array;
  const barV = M.view(o.bar, "u32", idx) as Uint32Array;
  const coords = o.coords.map((c) => c.kind === "reg" ? M.view(c, "s32", idx) as Int32Array : c);
  const c = new Array<number>(rank).fill(0);
  const pol = policyView(M, info, o.policy);
  if (o.multicast !== undefined) {
    return compileMulticast(M, info, mask, box, dstV, barV, coords, pol);
  }
  return () => {
    const m = mask.m;
    for (let t = 0; t < M.T; t++) {
      if (m[t] === 0) continue;
      if (pol !== null) checkPolicy(M, idx, pol, t);
      const dst = dstV[t]!;
      checkDestination(M, idx, t, dst, box);
      const mb = M.mb!;
      const b = mb.at(idx, t, barV[t]!, "cp.async.bulk.tensor");
      mb.use(idx, t, b, true);
      originOf(coords, t, c);
      mb.liveCheck(idx, t, dst, box.bytes, "TMA copy");
      copyBox(M, idx, t, dst, box, c, b, mb.phase[b]!);
      M.tma!.copies++;
      M.tma!.bytes += box.bytes;
      M.sharedBytesWritten += box.bytes;
      mb.completeTx(idx, t, b, box.bytes);
    }
    M.counts[idx]! += mask.warps;
  };
}

/** A `tma` with `multicast`: see {@link TmaLoadOp}, and the module's note. */
function compileMulticast(
  M: Machine,
  info: OpInfo,
  mask: Mask,
  box: Box,
  dstV: Uint32Array,
  barV: Uint32Array,
  coords: readonly (Int32Array | { readonly value: number })[],
  pol: RegArray | null,
): Run {
  const o = info.op as TmaLoadOp;
  const idx = info.index;
  const N = M.cl.N;
  const mc = o.multicast!;
  if (!Number.isInteger(mc) || mc <= 0 || mc >= 2 ** N) {
    throw new SimError(
      `Multicast mask ${mc} names no CTA or a rank outside the cluster of ${N} (1 .. ${
        2 ** N - 1
      })`,
      whereStatic(info),
    );
  }
  const ranks = [...Array(N).keys()].filter((q) => ((mc >> q) & 1) === 1);
  const c = new Array<number>(box.rank).fill(0);
  return () => {
    const m = mask.m;
    for (let t = 0; t < M.T; t++) {
      if (m[t] === 0) continue;
      if (pol !== null) checkPolicy(M, idx, pol, t);
      const dst = dstV[t]!;
      checkDestination(M, idx, t, dst, box);
      originOf(coords, t, c);
      const mb = M.mb!;
      for (let k = 0; k < ranks.length; k++) {
        const q = ranks[k]!;
        const b = mb.atRemote(idx, t, barV[t]!, q, "cp.async.bulk.tensor multicast");
        mb.use(idx, t, b, true);
        const d = remoteAddress(M, idx, t, dst, q, "TMA multicast");
        mb.liveCheck(idx, t, d, box.bytes, "TMA copy");
        copyBox(M, idx, t, d, box, c, b, mb.phase[b]!, k === 0);
        M.tma!.bytes += box.bytes;
        M.sharedBytesWritten += box.bytes;
        mb.completeTx(idx, t, b, box.bytes);
      }
      M.tma!.copies++;
    }
    M.counts[idx]! += mask.warps;
  };
}

/** Copies the box at `origin` to `dst`, row by row (dimension 0 contiguous), and records the
 * words written for the hazard checks (`countRead`: whether its global bytes count as read). */
function copyBox(
  M: Machine,
  idx: number,
  t: number,
  dst: number,
  box: Box,
  origin: readonly number[],
  b: number,
  ph: number,
  countRead = true,
): void {
  const { map, rank } = box;
  const eb = map.elementBytes;
  const bd = map.boxDim;
  const gd = map.globalDim;
  const base = Number(map.address);
  const swz = map.swizzleBytes === 128;
  const sm = M.smem;
  const st = M.tma!;
  const track = M.hz.on;
  const rows = bd.slice(1).reduce((p, d) => p * d, 1);
  const rowBytes = bd[0]! * eb;
  const lo = Math.max(0, -origin[0]!);
  const hi = Math.min(bd[0]!, gd[0]! - origin[0]!);
  let lastX = -1;
  for (let r = 0; r < rows; r++) {
    // The row's coordinates beyond dimension 0, and whether they are all inside the tensor.
    let rest = r;
    let inside = hi > lo;
    let g = base + origin[0]! * eb;
    for (let i = 1; i < rank; i++) {
      const ci = origin[i]! + (rest % bd[i]!);
      rest = Math.floor(rest / bd[i]!);
      if (ci < 0 || ci >= gd[i]!) inside = false;
      g += ci * map.globalStrides[i - 1]!;
    }
    let src: Uint8Array | null = null;
    let off = 0;
    if (inside) {
      const ti = M.gResolve(idx, t, g + lo * eb, (hi - lo) * eb, 1, "TMA source");
      src = M.gBytes[ti]!;
      off = M.gOff - lo * eb;
      if (countRead) M.globalBytesRead += (hi - lo) * eb;
    }
    for (let e = 0; e < bd[0]!; e++) {
      const byte = r * rowBytes + e * eb;
      const d = dst + (swz ? byte ^ (((byte >> 7) & 7) << 4) : byte);
      const on = src !== null && e >= lo && e < hi;
      for (let k = 0; k < eb; k++) sm[d + k] = on ? src![off + e * eb + k]! : 0;
      if (track && d >> 2 !== lastX) {
        lastX = d >> 2;
        st.copyWord(idx, t, lastX, b, ph);
      }
    }
  }
}
