/**
 * What the test kernels share: the kernel wrapper and its grid, the `out`
 * parameter, the {@link Sink} that keeps results live, a sample immediate of
 * each register type, and registers for a memory access.
 *
 * @module
 */

import * as ir from "../../../ir/builder.ts";
import { imm, type KernelBuilder } from "../../../ir/builder.ts";
import type { Kernel, KernelParam, MemWidth, Reg, RegType } from "../../../ir/kernel.ts";
import type { Target } from "../../../ir/gemm.ts";

/** The launch grid of every test kernel: one block tile, nothing to tile over. */
const GRID = Object.freeze({
  tileM: 1,
  tileN: 1,
  swizzle: 1,
  splitK: 1,
  m: 1,
  n: 1,
  batch: null,
});

/** A test kernel of the builder's registers and body. */
export function kernel(
  name: string,
  target: Target,
  params: readonly KernelParam[],
  threads: number,
  smem: number,
  b: KernelBuilder,
): Kernel {
  return {
    kind: "kernel",
    name,
    target,
    params,
    threads,
    dynamicSmemBytes: smem,
    grid: GRID,
    regs: b.regs,
    body: b.body,
  };
}

/** The output tensor every test kernel writes its results to (and never reads). */
export const OUT: KernelParam = { name: "out", kind: "tensor", ptx: "u64", dtype: "f32" };

/** Stores registers to consecutive 8-byte slots of `out`, keeping them live. */
export class Sink {
  #slot = 0;
  constructor(readonly b: KernelBuilder, readonly base: Reg) {}

  keep(r: Reg): void {
    const off = 8 * this.#slot++;
    const b = this.b;
    switch (r.type) {
      case "pred": {
        const v = b.reg("u32");
        b.emit(ir.selp("u32", v, imm(1), imm(0), r));
        b.emit(ir.stg("b8", [v], this.base, off));
        return;
      }
      case "b16":
        b.emit(ir.stg("b16", [r], this.base, off));
        return;
      case "u64":
      case "f64":
        b.emit(ir.stg("b64", [r], this.base, off));
        return;
      default:
        b.emit(ir.stg("b32", [r], this.base, off));
    }
  }
}

/** A sample immediate of each register type (never zero or one, so that
 * nothing folds away trivially). */
export const SAMPLE: Readonly<Record<RegType, number>> = {
  pred: 1,
  b16: 0x3c01,
  b32: 0x7f00ff01,
  u32: 4000000000,
  s32: -12345,
  f32: -1.75,
  u64: 2 ** 40 + 3,
  f64: Math.PI,
};

/** Registers for a memory operation of `width`, `n` of them. */
export function memRegs(b: KernelBuilder, width: MemWidth, n: number): Reg[] {
  const t: RegType = width === "b16" ? "b16" : width === "b64" ? "f64" : "u32";
  return Array.from({ length: n }, () => b.reg(t));
}
