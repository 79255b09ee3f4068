/**
 * `mma.sync.aligned` for every row of the MMA table, per warp: gather the
 * operand tiles from the 32 lanes' registers through index tables built once
 * per shape from the row's fragment maps, multiply, scatter D back.
 *
 * Numerics (see numerics.ts, "Accumulation model"):
 * - f16 / bf16 / tf32 operands: each product is exact in f64; the accumulator
 *   and the k products are summed in f64, accumulator first, k ascending, and
 *   the sum is rounded once: to f32 (round to nearest even) for an f32
 *   accumulator, directly to f16 for an f16 accumulator. A tf32 operand is the
 *   register's top 19 bits (the low 13 mantissa bits are ignored).
 * - f64: a chain of correctly rounded fused multiply-adds in k order.
 * - integers: exact, then saturated to s32 (`.satfinite`).
 * - b1: `popc(a & b)` or `popc(a ^ b)` summed onto the accumulator, wrapping.
 *
 * @module
 */

import type { MmaOp, Reg } from "../../ir/kernel.ts";
import { type FragmentMap, MMA_SHAPES, type MmaDtype, type MmaShape } from "../../ir/mma_table.ts";
import { bitsF32, f32ToF16Bits, fmaF64, roundF16, satS32, tf32Truncate } from "./numerics.ts";
import type { Machine, Mask, OpInfo, RegArray, Run } from "./_machine.ts";
import { F16_VALUES } from "./_alu.ts";
import { warpActive } from "./_ops.ts";
import { SimError } from "./types.ts";

/** Index tables and scratch tiles of one MMA shape. */
interface Plan {
  readonly shape: MmaShape;
  /** (lane, reg, elem) -> i * K + k. */
  readonly aIdx: Int32Array;
  /** (lane, reg, elem) -> j * K + k (B stored transposed). */
  readonly bIdx: Int32Array;
  /** (lane, reg, elem) -> i * N + j. */
  readonly cIdx: Int32Array;
  readonly A: Float64Array;
  readonly Bt: Float64Array;
  readonly C: Float64Array;
}

function table(f: FragmentMap, index: (r: number, c: number) => number): Int32Array {
  const out = new Int32Array(32 * f.regs * f.elemsPerReg);
  let i = 0;
  for (let l = 0; l < 32; l++) {
    for (let r = 0; r < f.regs; r++) {
      for (let e = 0; e < f.elemsPerReg; e++) {
        const [row, col] = f.coord(l, r, e);
        out[i++] = index(row, col);
      }
    }
  }
  return out;
}

const PLANS = new Map<string, Plan>();

function plan(s: MmaShape): Plan {
  let p = PLANS.get(s.name);
  if (p === undefined) {
    const { m: M, n: N, k: K } = s;
    p = {
      shape: s,
      aIdx: table(s.a, (i, k) => i * K + k),
      bIdx: table(s.b, (k, j) => j * K + k),
      cIdx: table(s.c, (i, j) => i * N + j),
      A: new Float64Array(M * K),
      Bt: new Float64Array(N * K),
      C: new Float64Array(M * N),
    };
    PLANS.set(s.name, p);
  }
  return p;
}

const F16 = F16_VALUES;

/** Unpacks `regs` (lanes `base..base+31`) of element type `dt` into `out` through `idx`. */
function gather(
  dt: MmaDtype,
  regs: readonly RegArray[],
  base: number,
  idx: Int32Array,
  out: Float64Array,
): void {
  const R = regs.length;
  let i = 0;
  for (let l = 0; l < 32; l++) {
    const t = base + l;
    for (let r = 0; r < R; r++) {
      const w = regs[r]![t]!;
      switch (dt) {
        case "f16":
          out[idx[i++]!] = F16[w & 0xffff]!;
          out[idx[i++]!] = F16[w >>> 16]!;
          break;
        case "bf16":
          out[idx[i++]!] = bitsF32(w << 16);
          out[idx[i++]!] = bitsF32(w & 0xffff0000);
          break;
        case "tf32":
          out[idx[i++]!] = tf32Truncate(bitsF32(w));
          break;
        case "f32":
        case "s32":
        case "f64":
          out[idx[i++]!] = w;
          break;
        case "s8":
          for (let e = 0; e < 4; e++) out[idx[i++]!] = (w << (24 - 8 * e)) >> 24;
          break;
        case "u8":
          for (let e = 0; e < 4; e++) out[idx[i++]!] = (w >>> (8 * e)) & 0xff;
          break;
        case "s4":
          for (let e = 0; e < 8; e++) out[idx[i++]!] = (w << (28 - 4 * e)) >> 28;
          break;
        case "u4":
          for (let e = 0; e < 8; e++) out[idx[i++]!] = (w >>> (4 * e)) & 0xf;
          break;
        case "b1":
          for (let e = 0; e < 32; e++) out[idx[i++]!] = (w >>> e) & 1;
          break;
      }
    }
  }
}

function regViews(M: Machine, info: OpInfo, regs: readonly Reg[], f: FragmentMap, what: string) {
  if (regs.length !== f.regs) {
    throw new SimError(
      `mma operand ${what} needs ${f.regs} registers, got ${regs.length}`,
      { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null },
    );
  }
  const as = f.dtype === "f64"
    ? "f64"
    : f.dtype === "f32"
    ? "f32"
    : f.dtype === "s32"
    ? "s32"
    : "u32";
  return regs.map((r) => M.view(r, as, info.index));
}

/** `mma.sync.aligned`: see {@link MmaOp}. */
export function compileMma(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as MmaOp;
  const idx = info.index;
  const s = MMA_SHAPES.find((x) => x.name === o.shape);
  if (s === undefined) {
    throw new SimError(`Unknown mma shape "${o.shape}"`, {
      op: info.text,
      path: info.path,
      line: info.line,
      block: null,
      warp: null,
      lane: null,
    });
  }
  const p = plan(s);
  const a = regViews(M, info, o.a, s.a, "A");
  const b = regViews(M, info, o.b, s.b, "B");
  const c = regViews(M, info, o.c, s.c, "C");
  const d = regViews(M, info, o.d, s.c, "D");
  const { m: Mm, n: N, k: K } = s;
  const kind = s.aType === "f64"
    ? 1
    : s.aType === "b1"
    ? (s.op === "xor.popc" ? 4 : 3)
    : s.cType === "s32"
    ? 2
    : 0;
  const f16acc = s.cType === "f16";
  const sat = s.satfinite;
  const { A, Bt, C } = p;
  const cRegs = s.c.regs;
  const cEpr = s.c.elemsPerReg;
  return () => {
    const m = mask.m;
    for (let wp = 0; wp < M.W; wp++) {
      if (!warpActive(M, idx, m, wp, "mma")) continue;
      const base = wp * 32;
      gather(s.aType, a, base, p.aIdx, A);
      gather(s.bType, b, base, p.bIdx, Bt);
      gather(f16acc ? "f16" : s.cType, c, base, p.cIdx, C);
      for (let i = 0; i < Mm; i++) {
        const ao = i * K;
        for (let j = 0; j < N; j++) {
          const bo = j * K;
          let acc = C[i * N + j]!;
          if (kind === 0 || kind === 2) {
            for (let k = 0; k < K; k++) acc += A[ao + k]! * Bt[bo + k]!;
            if (kind === 2) acc = sat ? satS32(acc) : acc | 0;
            else if (f16acc) acc = roundF16(acc);
          } else if (kind === 1) {
            for (let k = 0; k < K; k++) acc = fmaF64(A[ao + k]!, Bt[bo + k]!, acc);
          } else if (kind === 3) {
            let n = 0;
            for (let k = 0; k < K; k++) n += A[ao + k]! * Bt[bo + k]!;
            acc = (acc + n) | 0;
          } else {
            let n = 0;
            for (let k = 0; k < K; k++) n += A[ao + k]! !== Bt[bo + k]! ? 1 : 0;
            acc = (acc + n) | 0;
          }
          C[i * N + j] = acc;
        }
      }
      // Scatter D (C now holds it; d may alias c, and every c was read above).
      const ci = p.cIdx;
      let q = 0;
      for (let l = 0; l < 32; l++) {
        const t = base + l;
        for (let r = 0; r < cRegs; r++) {
          if (f16acc) {
            const v0 = f32ToF16Bits(C[ci[q++]!]!);
            const v1 = f32ToF16Bits(C[ci[q++]!]!);
            d[r]![t] = v0 | (v1 << 16);
          } else {
            for (let e = 0; e < cEpr; e++) d[r]![t] = C[ci[q++]!]!;
          }
        }
      }
      M.mmas++;
    }
    M.counts[idx]! += mask.warps;
  };
}
