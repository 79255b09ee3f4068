/**
 * The seedable generator behind every random input of the project: the
 * harness's inputs, the MMA probe's operands, the simulator's test kernels
 * and the fuzzer (mulberry32: small, fast, and the same stream on every
 * machine for a seed).
 *
 * @module
 */

/** A small, fast, seedable PRNG (mulberry32). */
export class Rng {
  #s: number;
  /** @param seed Any integer. */
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
}

/**
 * The integer range random inputs of a type are drawn from: the whole range
 * of the 8-, 4- and 1-bit types, [-1000, 1000] for wider integers.
 *
 * @param dtype The element type's name.
 * @returns [lo, hi], inclusive.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { intRange } from "./random.ts";
 * equal(intRange("s4")[0], -8);
 * ```
 */
export function intRange(dtype: string): [number, number] {
  switch (dtype) {
    case "s8":
      return [-128, 127];
    case "u8":
      return [0, 255];
    case "s4":
      return [-8, 7];
    case "u4":
      return [0, 15];
    case "b1":
      return [0, 1];
    default:
      return [-1000, 1000];
  }
}
