/**
 * The shared-memory hazard tracker of one simulated launch: races between
 * warps with no barrier in between, reads and writes of bytes an outstanding
 * cp.async still writes, and cp.async copies left pending at the end of a block.
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
  /** The block that hazards are reported in. */
  block: BlockCoord = [0, 0, 0];

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

  /** Starts block `block`: a new epoch (no access of the last block races with this one). */
  startBlock(block: BlockCoord): void {
    this.block = block;
    this.epoch++;
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
    const nh: Hazard = {
      kind,
      message,
      op: i.text,
      path: i.path,
      line: i.line,
      block: this.block,
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
