/**
 * The shared-memory hazard tracker of one simulated launch: races between
 * warps with no barrier in between, reads and writes of bytes an outstanding
 * cp.async still writes, and cp.async copies left pending at the end of a block.
 * For a kernel with wgmma ops (_wgmma.ts, {@link Hazards.enableAsync}) also the
 * async-proxy side: writes of bytes a pending wgmma reads, and wgmma reads of bytes
 * written through the generic proxy with no `proxyfence` since.
 * The first occurrence of each kind and operation is kept, later ones counted.
 *
 * @module
 */

import type { BlockCoord, Hazard, HazardKind } from "./types.ts";

/** What a hazard names of an operation (a part of _machine.ts's `OpInfo`). */
export interface HazardSite {
  /** The kernel-IR line (unindented). */
  readonly text: string;
  /** Index path, e.g. `4/else/0`. */
  readonly path: string;
  /** 1-based line in `printKernel(kernel)`. */
  readonly line: number;
}

/** The hazard state of one launch, per byte and per 4-byte word of shared memory. */
export class Hazards {
  /** Whether hazards are tracked at all (the per-byte arrays are empty when not). */
  readonly on: boolean;
  /** How many distinct hazards to record. */
  readonly max: number;
  /** The distinct hazards recorded, in order of first occurrence. */
  readonly list: Hazard[] = [];
  /** Every occurrence, recorded or only counted. */
  count = 0;
  readonly #keys = new Map<string, Hazard>();
  readonly #infos: readonly HazardSite[];
  /** Outstanding cp.async copies covering each 4-byte word of shared memory. */
  readonly pendWords: Int32Array;
  /** The warp that issued the latest outstanding copy of each word. */
  readonly pendWarp: Int16Array;
  /** Per byte: the barrier epoch of the last write, and its warp. */
  readonly wEpoch: Int32Array;
  readonly wWarp: Int16Array;
  /** Per byte: the barrier epoch of the reads recorded in {@link rMask}, and the reading warps. */
  readonly rEpoch: Int32Array;
  readonly rMask: Int32Array;
  /** Incremented at every `bar` and every block start. */
  epoch = 0;
  /** Whether the async-proxy (wgmma) checks run: see {@link enableAsync}. */
  async = false;
  /** Per 4-byte word: reads by issued wgmmas whose group has not retired, and the
   * warpgroup of the latest. */
  asyncReads: Int32Array = new Int32Array(0);
  asyncReader: Int16Array = new Int16Array(0);
  /** Per word: 1 where written through the generic proxy (sts, cp.async) since the
   * writing warp's last `proxyfence`, and that warp. */
  unfenced: Uint8Array = new Uint8Array(0);
  unfencedWarp: Int16Array = new Int16Array(0);
  /** Per warp: the words it marked in {@link unfenced} since its last `proxyfence`. */
  #unfencedBy: number[][] = [];
  /** The block that hazards are reported in (of a cluster kernel: the cluster's first). */
  block: BlockCoord = [0, 0, 0];
  /** A cluster kernel's: the CTA rank a hazard occurred in, from its warps and address
   * (_cluster.ts `hazardRank`); null otherwise. */
  cta: ((warps: readonly number[], address: number | null) => number) | null = null;

  /**
   * @param infos The kernel's operations, indexed (for the messages).
   * @param smemBytes The shared memory of a block.
   * @param on Whether to track hazards.
   * @param max How many distinct hazards to record.
   */
  constructor(infos: readonly HazardSite[], smemBytes: number, on: boolean, max: number) {
    this.#infos = infos;
    this.on = on;
    this.max = max;
    const words = on ? Math.ceil(smemBytes / 4) : 0;
    const bytes = on ? smemBytes : 0;
    this.pendWords = new Int32Array(words);
    this.pendWarp = new Int16Array(words);
    this.wEpoch = new Int32Array(bytes).fill(-1);
    this.wWarp = new Int16Array(bytes);
    this.rEpoch = new Int32Array(bytes).fill(-1);
    this.rMask = new Int32Array(bytes);
  }

  /**
   * Turns on the async-proxy checks (a kernel with wgmma ops; nothing when hazards are
   * off): from here on every {@link write} also checks the bytes pending wgmmas read
   * and marks its words as written through the generic proxy.
   *
   * @param warps Warps per block.
   */
  enableAsync(warps: number): void {
    if (!this.on) return;
    const words = this.pendWords.length;
    this.async = true;
    this.asyncReads = new Int32Array(words);
    this.asyncReader = new Int16Array(words);
    this.unfenced = new Uint8Array(words);
    this.unfencedWarp = new Int16Array(words);
    this.#unfencedBy = Array.from({ length: warps }, () => []);
  }

  /** Starts block `block`: a new epoch (no access of the last block races with this one). */
  startBlock(block: BlockCoord): void {
    this.block = block;
    this.epoch++;
    if (this.async) {
      this.asyncReads.fill(0);
      this.unfenced.fill(0);
      for (const l of this.#unfencedBy) l.length = 0;
    }
  }

  /**
   * Records a hazard occurrence: the first of each kind and operation is kept
   * (up to {@link max}), later ones only counted.
   */
  report(
    kind: HazardKind,
    idx: number,
    warps: readonly number[],
    address: number | null,
    message: string,
  ): void {
    this.count++;
    const key = `${kind}:${idx}`;
    const h = this.#keys.get(key);
    if (h !== undefined) {
      h.count++;
      return;
    }
    if (this.list.length >= this.max) return;
    const i = this.#infos[idx]!;
    let block = this.block;
    if (this.cta !== null) {
      const r = this.cta(warps, address);
      block = [block[0] + r, block[1], block[2]];
      message += ` (in CTA rank ${r} of the cluster)`;
    }
    const nh: Hazard = {
      kind,
      message,
      op: i.text,
      path: i.path,
      line: i.line,
      block,
      warps,
      address,
      count: 1,
    };
    this.list.push(nh);
    this.#keys.set(key, nh);
  }

  /** Checks and records a read of shared bytes `[addr, addr + len)` by warp `w`. `read` and
   * `write` each copy the per-byte arrays into locals before their byte loop: it is the
   * simulator's hottest loop, and the two loops test different things. */
  read(idx: number, w: number, addr: number, len: number): void {
    const ep = this.epoch;
    const bit = 1 << w;
    const wE = this.wEpoch;
    const wW = this.wWarp;
    const rE = this.rEpoch;
    const rM = this.rMask;
    let raced = false;
    for (let b = addr; b < addr + len; b++) {
      if (wE[b] === ep && wW[b] !== w && !raced) {
        raced = true;
        this.report(
          "race",
          idx,
          [w, wW[b]!],
          b,
          `Warp ${w} reads a shared byte that warp ${wW[b]} wrote with no bar in between`,
        );
      }
      if (rE[b] !== ep) {
        rE[b] = ep;
        rM[b] = bit;
      } else rM[b]! |= bit;
    }
    const x = this.firstPending(addr, len);
    if (x >= 0) {
      this.#reportPending(
        "read-before-landed",
        idx,
        w,
        x,
        addr,
        `Warp ${w} reads shared memory before the cp.async of warp ${
          this.pendWarp[x]
        } that writes it has landed (its group was not waited for)`,
      );
    }
  }

  /** The first 4-byte word of `[addr, addr + len)` that an outstanding cp.async writes, or -1. */
  firstPending(addr: number, len: number): number {
    const pw = this.pendWords;
    for (let x = addr >> 2; x <= (addr + len - 1) >> 2; x++) if (pw[x]! > 0) return x;
    return -1;
  }

  /**
   * Checks and records a write of shared bytes `[addr, addr + len)` by warp
   * `w` (an `sts`, or a cp.async when issued or when landing).
   *
   * @param what How the message names the write.
   * @param pendingCheck Whether to flag bytes an outstanding cp.async also writes.
   */
  write(
    idx: number,
    w: number,
    addr: number,
    len: number,
    what: string,
    pendingCheck: boolean,
  ): void {
    if (this.async) this.#asyncWrite(idx, w, addr, len, what);
    const x = pendingCheck ? this.firstPending(addr, len) : -1;
    if (x >= 0) {
      this.#reportPending(
        "write-before-landed",
        idx,
        w,
        x,
        addr,
        `${what} of warp ${w} writes shared memory that an outstanding cp.async of warp ${
          this.pendWarp[x]
        } also writes`,
      );
    }
    const ep = this.epoch;
    const others = ~(1 << w);
    const wE = this.wEpoch;
    const wW = this.wWarp;
    const rE = this.rEpoch;
    const rM = this.rMask;
    let raced = false;
    for (let b = addr; b < addr + len; b++) {
      if (!raced) {
        if (wE[b] === ep && wW[b] !== w) {
          raced = true;
          this.report(
            "race",
            idx,
            [w, wW[b]!],
            b,
            `${what} of warp ${w} writes a shared byte that warp ${
              wW[b]
            } wrote with no bar in between`,
          );
        } else if (rE[b] === ep && (rM[b]! & others) !== 0) {
          raced = true;
          const o = 31 - Math.clz32(rM[b]! & others);
          this.report(
            "race",
            idx,
            [w, o],
            b,
            `${what} of warp ${w} writes a shared byte that warp ${o} read with no bar in between`,
          );
        }
      }
      wE[b] = ep;
      wW[b] = w;
    }
  }

  /** The async-proxy side of a generic-proxy write by warp `w`: flags words a pending
   * wgmma reads, and marks the words unfenced until `w`'s next `proxyfence`. */
  #asyncWrite(idx: number, w: number, addr: number, len: number, what: string): void {
    const rd = this.asyncReads;
    const uf = this.unfenced;
    const uw = this.unfencedWarp;
    let hit = -1;
    for (let x = addr >> 2; x <= (addr + len - 1) >> 2; x++) {
      if (hit < 0 && rd[x]! > 0) hit = x;
      if (uf[x] === 0 || uw[x] !== w) {
        uf[x] = 1;
        uw[x] = w;
        this.#unfencedBy[w]!.push(x);
      }
    }
    if (hit >= 0) {
      const g = this.asyncReader[hit]!;
      this.report(
        "write-during-wgmma",
        idx,
        [w, 4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3],
        hit * 4 > addr ? hit * 4 : addr,
        `${what} of warp ${w} overwrites shared memory a wgmma of warpgroup ${g} still reads (its group was not retired by wgmma.wait_group)`,
      );
    }
  }

  /**
   * Checks and records a wgmma's read of shared bytes `[addr, addr + len)` (within one
   * 4-byte-aligned 16-byte chunk or less) for warpgroup `g` at issue: a byte written in
   * this barrier epoch by any warp is a race (the async proxy sees a write only after a
   * `proxyfence` and a `bar`), a word an outstanding cp.async writes has not landed, a word
   * written through the generic proxy with no `proxyfence` since is unfenced. The read is
   * recorded for the warpgroup's 4 warps, and the words stay pinned (writes to them are
   * hazards) until {@link asyncRetire}.
   */
  asyncRead(idx: number, g: number, addr: number, len: number): void {
    const ep = this.epoch;
    const bits = 0xf << (4 * g);
    const wE = this.wEpoch;
    const rE = this.rEpoch;
    const rM = this.rMask;
    let raced = false;
    for (let b = addr; b < addr + len; b++) {
      if (wE[b] === ep && !raced) {
        raced = true;
        const v = this.wWarp[b]!;
        this.report(
          "race",
          idx,
          [4 * g, v],
          b,
          `A wgmma of warpgroup ${g} reads a shared byte that warp ${v} wrote with no bar in between`,
        );
      }
      if (rE[b] !== ep) {
        rE[b] = ep;
        rM[b] = bits;
      } else rM[b]! |= bits;
    }
    const p = this.firstPending(addr, len);
    if (p >= 0) {
      this.#reportPending(
        "read-before-landed",
        idx,
        4 * g,
        p,
        addr,
        `A wgmma of warpgroup ${g} reads shared memory before the cp.async of warp ${
          this.pendWarp[p]
        } that writes it has landed (its group was not waited for)`,
      );
    }
    const uf = this.unfenced;
    for (let x = addr >> 2; x <= (addr + len - 1) >> 2; x++) {
      if (uf[x] !== 0) {
        const v = this.unfencedWarp[x]!;
        this.report(
          "unfenced-async-proxy",
          idx,
          [4 * g, v],
          x * 4 > addr ? x * 4 : addr,
          `A wgmma of warpgroup ${g} reads shared memory that warp ${v} wrote with no fence.proxy.async (proxyfence) since`,
        );
        break;
      }
    }
    for (let x = addr >> 2; x <= (addr + len - 1) >> 2; x++) {
      this.asyncReads[x]!++;
      this.asyncReader[x] = g;
    }
  }

  /** A pending wgmma of warpgroup `g` retires: its read of `[addr, addr + len)` unpins the
   * words and counts as an ordinary read by the warpgroup's 4 warps in this epoch (a write
   * by another warp before the next `bar` is a race). */
  asyncRetire(g: number, addr: number, len: number): void {
    const ep = this.epoch;
    const bits = 0xf << (4 * g);
    const rE = this.rEpoch;
    const rM = this.rMask;
    for (let b = addr; b < addr + len; b++) {
      if (rE[b] !== ep) {
        rE[b] = ep;
        rM[b] = bits;
      } else rM[b]! |= bits;
    }
    for (let x = addr >> 2; x <= (addr + len - 1) >> 2; x++) this.asyncReads[x]!--;
  }

  /** Clears the unfenced marks of warp `w`'s generic-proxy writes (`proxyfence`). */
  proxyFence(w: number): void {
    const l = this.#unfencedBy[w]!;
    const uf = this.unfenced;
    const uw = this.unfencedWarp;
    for (let i = 0; i < l.length; i++) {
      const x = l[i]!;
      if (uw[x] === w) uf[x] = 0;
    }
    l.length = 0;
  }

  /** Reports an access by warp `w` of `[addr, ...)` whose word `x` an outstanding cp.async
   * writes: the warps involved and the first byte of the overlap. */
  #reportPending(
    kind: HazardKind,
    idx: number,
    w: number,
    x: number,
    addr: number,
    message: string,
  ): void {
    this.report(kind, idx, [w, this.pendWarp[x]!], x * 4 > addr ? x * 4 : addr, message);
  }
}
