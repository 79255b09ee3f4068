/**
 * `mma.sync.aligned` for every row of the MMA table, per warp: gather the
 * operand tiles from the 32 lanes' registers through index tables built from
 * the row's fragment maps (ir/mma_table.ts), multiply, scatter D back. The
 * code of each row is generated once (unrolled over registers and packed
 * elements, with the tile sizes as constants) and compiled with
 * `new Function`, so that every row runs its own monomorphic loop.
 *
 * Numerics (see numerics/mod.ts, "Accumulation model"):
 * - f16 / bf16 / tf32 operands: each product is exact in f64; the accumulator
 *   and the k products are summed in f64, accumulator first, k ascending, and
 *   the sum is rounded once: to f32 (round to nearest even) for an f32
 *   accumulator, directly to f16 for an f16 accumulator. A tf32 operand is the
 *   register's top 19 bits (the low 13 mantissa bits are ignored).
 * - f64: a chain of correctly rounded fused multiply-adds in k order.
 * - integers: exact, then saturated to s32 (`.satfinite`).
 * - b1: `popc(a & b)` or `popc(a ^ b)` summed onto the accumulator, wrapping.
 *
 * Sparse rows (`mma.sp`, ir/mma_sparse.ts): the compressed A fragment is
 * gathered into an M x K/2 tile, then expanded into the dense M x K tile (zeros
 * elsewhere) by the metadata nibbles of the lanes the row's metadata map names
 * for the op's selector (the other lanes' metadata registers are not read);
 * from there on the row runs exactly as the dense row of its types. A nibble
 * the ISA leaves undefined (both indices equal; with ordered_metadata the first
 * not below the second; tf32 other than 0b0100 / 0b1110) is a SimError.
 *
 * @module
 */

import type { MmaOp, Reg } from "../../ir/kernel.ts";
import { type FragmentMap, MMA_SHAPES, type MmaDtype, type MmaShape } from "../../ir/mma_table.ts";
import { keptColumns, sparseMmaByName, type SparseMmaShape } from "../../ir/mma_sparse.ts";
import {
  bf16BitsToF32,
  bitsF32,
  f32ToF16Bits,
  fmaF64,
  roundF16,
  tf32Truncate,
} from "../../numerics/mod.ts";
import type { Machine, Mask, OpInfo, Run } from "./_machine.ts";
import { F16_VALUES } from "./_alu.ts";
import { warpActive } from "./_ops.ts";
import { SimError } from "./types.ts";

/** Exact value of every bf16 bit pattern. */
export const BF16_VALUES: Float64Array = (() => {
  const t = new Float64Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = bf16BitsToF32(h);
  return t;
})();

const HELPERS = Object.freeze({
  F16: F16_VALUES,
  BF16: BF16_VALUES,
  tf32: (w: number) => tf32Truncate(bitsF32(w)),
  fmaF64,
  roundF16,
  toF16: f32ToF16Bits,
  warpActive,
});

/** (lane, reg, elem) -> index, in that nesting order. */
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

/** Element `e` of register value `w` as a number, by element type. */
function decode(dt: MmaDtype, e: number): string {
  switch (dt) {
    case "f16":
      return e === 0 ? "H.F16[w & 0xffff]" : "H.F16[w >>> 16]";
    case "bf16":
      return e === 0 ? "H.BF16[w & 0xffff]" : "H.BF16[w >>> 16]";
    case "tf32":
      return "H.tf32(w)";
    case "f32":
    case "s32":
    case "f64":
      return "w";
    case "s8":
      return `(w << ${24 - 8 * e}) >> 24`;
    case "u8":
      return `(w >>> ${8 * e}) & 0xff`;
    case "s4":
      return `(w << ${28 - 4 * e}) >> 28`;
    case "u4":
      return `(w >>> ${4 * e}) & 0xf`;
    case "b1":
      return `(w >>> ${e}) & 1`;
  }
}

/** Statements that gather operand `name` (registers `name0..`) into tile `out` via `idx`. */
function gatherCode(f: FragmentMap, dt: MmaDtype, name: string, out: string, idx: string): string {
  const per = f.regs * f.elemsPerReg;
  const lines = [`for (let l = 0, q = 0; l < 32; l++, q += ${per}) {`, "  const t = base + l;"];
  for (let r = 0; r < f.regs; r++) {
    lines.push(`  { const w = ${name}${r}[t];`);
    for (let e = 0; e < f.elemsPerReg; e++) {
      lines.push(`    ${out}[${idx}[q + ${r * f.elemsPerReg + e}]] = ${decode(dt, e)};`);
    }
    lines.push("  }");
  }
  lines.push("}");
  return lines.join("\n");
}

/** The generated source of one table row (everything but the register arrays). */
function mmaSource(s: MmaShape): string {
  const { m: M, n: N, k: K } = s;
  const sparse = sparseMmaByName(s.name) !== undefined;
  let inner: string;
  let finish = "";
  if (s.aType === "f64") {
    inner = "acc = H.fmaF64(A[ao + k], B[bo + k], acc);";
  } else if (s.aType === "b1") {
    inner = s.op === "xor.popc" ? "n += A[ao + k] ^ B[bo + k];" : "n += A[ao + k] & B[bo + k];";
    finish = "acc = (acc + n) | 0;";
  } else {
    inner = "acc += A[ao + k] * B[bo + k];";
    if (s.cType === "s32") {
      finish = s.satfinite
        ? "acc = acc > 2147483647 ? 2147483647 : acc < -2147483648 ? -2147483648 : acc;"
        : "acc = acc | 0;";
    } else if (s.cType === "f16") finish = "acc = H.roundF16(acc);";
  }
  const cdt: MmaDtype = s.cType === "f16" ? "f16" : s.cType;
  const scatter: string[] = [
    `for (let l = 0, q = 0; l < 32; l++, q += ${s.c.regs * s.c.elemsPerReg}) {`,
    "  const t = base + l;",
  ];
  for (let r = 0; r < s.c.regs; r++) {
    if (s.cType === "f16") {
      scatter.push(
        `  d${r}[t] = H.toF16(C[ci[q + ${2 * r}]]) | (H.toF16(C[ci[q + ${2 * r + 1}]]) << 16);`,
      );
    } else {
      // f32: the Float32Array store rounds the f64 sum once, to nearest even.
      scatter.push(`  d${r}[t] = C[ci[q + ${r}]];`);
    }
  }
  scatter.push("}");
  return `"use strict";
return function run() {
  const m = MK.m;
  for (let wp = 0; wp < M.W; wp++) {
    if (!H.warpActive(M, I, m, wp, "mma")) continue;
    const base = wp * 32;
${
    sparse
      ? gatherCode(s.a, s.aType, "a", "AC", "ai") + "\n    X(base);"
      : gatherCode(s.a, s.aType, "a", "A", "ai")
  }
${gatherCode(s.b, s.bType, "b", "B", "bi")}
${gatherCode(s.c, cdt, "c", "C", "ci")}
    for (let i = 0; i < ${M}; i++) {
      const ao = i * ${K};
      for (let j = 0; j < ${N}; j++) {
        const bo = j * ${K};
        let acc = C[i * ${N} + j];
        let n = 0;
        for (let k = 0; k < ${K}; k++) ${inner}
        ${finish}
        C[i * ${N} + j] = acc;
      }
    }
${scatter.join("\n")}
    M.mmas++;
  }
  CNT[I] += MK.warps;
};`;
}

/** Per row: the compiled factory, its index tables and scratch tiles. */
interface Plan {
  readonly factory: (...args: unknown[]) => Run;
  readonly ai: Int32Array;
  readonly bi: Int32Array;
  readonly ci: Int32Array;
  readonly A: Float64Array;
  /** B transposed: element (k, j) at j * K + k. */
  readonly B: Float64Array;
  readonly C: Float64Array;
  /** Sparse rows: the compressed A tile (M x K/2); dense rows: null. */
  readonly AC: Float64Array | null;
}

const PLANS = new Map<string, Plan>();

function params(s: MmaShape): string[] {
  const regs = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}${i}`);
  return [
    "M",
    "MK",
    "CNT",
    "I",
    "H",
    "ai",
    "bi",
    "ci",
    "A",
    "B",
    "C",
    "AC",
    "X",
    ...regs("a", s.a.regs),
    ...regs("b", s.b.regs),
    ...regs("c", s.c.regs),
    ...regs("d", s.c.regs),
  ];
}

function plan(s: MmaShape): Plan {
  let p = PLANS.get(s.name);
  if (p === undefined) {
    const { m: M, n: N, k: K } = s;
    const sparse = sparseMmaByName(s.name) !== undefined;
    const KA = sparse ? K / 2 : K;
    p = {
      factory: new Function(...params(s), mmaSource(s)) as Plan["factory"],
      ai: table(s.a, (i, k) => i * KA + k),
      bi: table(s.b, (k, j) => j * K + k),
      ci: table(s.c, (i, j) => i * N + j),
      A: new Float64Array(M * K),
      B: new Float64Array(N * K),
      C: new Float64Array(M * N),
      AC: sparse ? new Float64Array(M * KA) : null,
    };
    PLANS.set(s.name, p);
  }
  return p;
}

function regViews(M: Machine, info: OpInfo, regs: readonly Reg[], f: FragmentMap, what: string) {
  if (regs.length !== f.regs) {
    throw new SimError(
      `mma operand ${what} needs ${f.regs} registers, got ${regs.length}`,
      { op: info.text, path: info.path, line: info.line, block: null, warp: null, lane: null },
    );
  }
  // The table's register type; untyped b32 registers are read as their u32 bits.
  const as = f.regType === "b32" ? "u32" : f.regType;
  return regs.map((r) => M.view(r, as, info.index));
}

/** `mma.sync.aligned`: see {@link MmaOp}. */
export function compileMma(M: Machine, info: OpInfo, mask: Mask): Run {
  const o = info.op as MmaOp;
  const where = (warp: number | null = null, lane: number | null = null) => ({
    op: info.text,
    path: info.path,
    line: info.line,
    block: null,
    warp,
    lane,
  });
  const sp = sparseMmaByName(o.shape);
  const s = sp ?? MMA_SHAPES.find((x) => x.name === o.shape);
  if (s === undefined) throw new SimError(`Unknown mma shape "${o.shape}"`, where());
  const p = plan(s);
  let expand: ((base: number) => void) | null = null;
  if (sp !== undefined) {
    if (o.meta === undefined) throw new SimError(`mma ${sp.name}: no metadata register`, where());
    const sel = o.selector ?? -1;
    if (!sp.meta.selectors.includes(sel)) {
      throw new SimError(`mma ${sp.name}: sparsity selector ${o.selector} not legal`, where());
    }
    const meta = M.view(o.meta, "u32", info.index);
    expand = sparseExpander(sp, sel, o.ordered === true, meta, p.AC!, p.A, where);
  }
  return p.factory(
    M,
    mask,
    M.counts,
    info.index,
    HELPERS,
    p.ai,
    p.bi,
    p.ci,
    p.A,
    p.B,
    p.C,
    p.AC,
    expand,
    ...regViews(M, info, o.a, s.a, "A"),
    ...regViews(M, info, o.b, s.b, "B"),
    ...regViews(M, info, o.c, s.c, "C"),
    ...regViews(M, info, o.d, s.c, "D"),
  );
}

/** Per sparse row and selector: [lane, bit shift, dense offset, compressed offset] a nibble. */
const META_ENTRIES = new Map<string, Int32Array>();

function metaEntries(s: SparseMmaShape, sel: number): Int32Array {
  const key = `${s.name}/${sel}`;
  let e = META_ENTRIES.get(key);
  if (e === undefined) {
    const out: number[] = [];
    const { group, kept } = s.meta;
    for (let lane = 0; lane < 32; lane++) {
      for (let n = 0; n < 8; n++) {
        const rc = s.meta.coord(lane, sel, n);
        if (rc === undefined) continue;
        const [r, c] = rc;
        out.push(lane, 4 * n, r * s.k + c * group, r * (s.k / 2) + c * kept);
      }
    }
    e = Int32Array.from(out);
    META_ENTRIES.set(key, e);
  }
  return e;
}

/** The expansion of a warp's compressed A tile `AC` into the dense tile `A` by metadata. */
function sparseExpander(
  s: SparseMmaShape,
  sel: number,
  ordered: boolean,
  meta: ArrayLike<number>,
  AC: Float64Array,
  A: Float64Array,
  where: (warp: number | null, lane: number | null) => ConstructorParameters<typeof SimError>[1],
): (base: number) => void {
  const ent = metaEntries(s, sel);
  const cols = Array.from({ length: 16 }, (_, nib) => keptColumns(s, nib, ordered));
  return (base) => {
    A.fill(0);
    for (let i = 0; i < ent.length; i += 4) {
      const lane = ent[i]!;
      const nib = (meta[base + lane]! >>> ent[i + 1]!) & 15;
      const kc = cols[nib];
      if (kc === undefined) {
        throw new SimError(
          `mma ${s.name}: metadata nibble 0b${nib.toString(2).padStart(4, "0")} (bits ${
            ent[i + 1]
          }..${ent[i + 1]! + 3}) is undefined behaviour${ordered ? " (ordered_metadata)" : ""}`,
          where(base >> 5, lane),
        );
      }
      const d = ent[i + 2]!;
      const c = ent[i + 3]!;
      for (let j = 0; j < kc.length; j++) A[d + kc[j]!] = AC[c + j]!;
    }
  };
}
