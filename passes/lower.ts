/**
 * `lower-kernel`: GEMM IR with a complete plan -> kernel IR.
 *
 * The program it writes, per thread (CUTLASS's Ampere multistage design):
 *
 * 1. Parameters, thread/warp/lane indices, the threadblock's tile from the
 *    block index through the rasterisation swizzle; blocks past the last tile
 *    column skip the whole body (a uniform `if`).
 * 2. Copy set-up: for each operand, each of this thread's copies per stage
 *    gets a global pointer, a bounds predicate for its M/N row, its k index
 *    within the tile, and a swizzled shared-memory offset.
 * 3. Prologue: fill `stages - 1` stages (cp.async, one commit group each;
 *    copies past K are zero-filled), `wait_group stages-2`, barrier, and the
 *    fragments of k-step 0.
 * 4. Main loop over k-tiles, k-steps unrolled: at k-step 0 issue the copies of
 *    tile `kt + stages - 1` into the stage freed by the previous iteration and
 *    commit; before the last k-step wait for the next stage and barrier; load
 *    the fragments of the next k-step into the other fragment buffer
 *    (double buffering) while the MMAs of this k-step run. Warp tiles too
 *    large for two buffers (the mma plan's `fragments: "interleaved"`) load
 *    each next fragment right after the MMAs that last read the one it
 *    replaces, so that about one buffer's registers are live. An epilogue
 *    that reads a matrix (C) runs the loop in two copies and prefetches C's
 *    tile into L2 between them, `prefetchAhead` k-tiles before the end
 *    (`epiPrefetch`).
 * 5. Drain (`wait_group 0`), then the epilogue. 8- and 16-bit row-major D is
 *    staged through shared memory (`stagePlan`): the fused epilogue
 *    expression per element (or pair) in registers, its result staged and
 *    stored in vectors along D's rows; or, for an epilogue that reads a
 *    matrix (C), the raw accumulators staged and the epilogue evaluated along
 *    D's rows. Otherwise each element or pair gets its row, column, bounds
 *    predicate, the expression, the conversion and a guarded store straight
 *    from registers (a column-major D walked by columns, each column of the
 *    warp tile addressed once). The loads of C are issued ahead of the stores
 *    to D they go with (`loadAhead`): ptxas cannot reorder them, as C may be
 *    D (in place).
 *
 * Shortcuts (named, to be lifted): column-major D and 32/64-bit D store
 * straight from registers; copy pointers are recomputed per k-tile from one
 * pointer per copy; split-K epilogues load C with each store (the last
 * split prefetches C's tile first); a C that is not row-major and aligned to
 * 4 keeps a 16-bit D direct (read along D's rows it would waste 3/4 of each
 * sector), and under an 8-bit D is read along D's rows one element at a time.
 *
 * @module
 */

import type { EpilogueExpr, GemmKernel, MatrixView, OperandSmem, TensorParam } from "../ir/gemm.ts";
import type { EpilogueEmitter } from "../ir/epilogue.ts";
import { argsOf, fnOf } from "../ir/epilogue_expr.ts";
import { tensorParam, unreachable } from "../ir/gemm.ts";
import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import type {
  BinFn,
  Kernel,
  KernelParam,
  MemWidth,
  Op,
  Operand,
  Reg,
  RegType,
} from "../ir/kernel.ts";
import { imm, KernelBuilder } from "../ir/builder.ts";
import { MMA_SHAPES, type MmaShape } from "../ir/mma_table.ts";
import { SIMT_PREFIX, simtShape } from "../ir/simt.ts";
import { tallyWavefronts, type WavefrontTally } from "../ir/smem_banks.ts";
import { SMEM_BUDGET } from "./pipeline.ts";

function log2(x: number): number {
  const l = Math.round(Math.log2(x));
  if (2 ** l !== x) throw new Error(`Not a power of two: ${x}`);
  return l;
}

/** Per-thread index features that addresses are affine in. */
type Feature = "lane7" | "lane8" | "lane16" | "g" | "tig" | "wm" | "wn" | "tidHi" | "tidLo" | "tid";

/** An affine recipe: value = c + sum(coef * feature). */
interface Affine {
  readonly c: number;
  readonly terms: readonly (readonly [Feature, number])[];
}

/** An epilogue tensor: its base address (batch offset applied), parameter and matrix view. */
interface EpiTensor {
  readonly base: Reg;
  readonly t: TensorParam;
  readonly view: MatrixView | null;
}

/** An affine recipe's coefficient of feature `f`. */
function termOf(a: Affine, f: Feature): number {
  return a.terms.find(([g]) => g === f)?.[1] ?? 0;
}

/** How the epilogue stages D through shared memory (see `stagePlan`). */
interface StagePlan {
  /** Accumulator-tile rows (of `shape.m` rows each) a warp stages at once. */
  readonly tiles: number;
  /** Bytes from one staged row to the next (the warp tile's row plus padding). */
  readonly stride: number;
  /** Bytes of one warp's region. */
  readonly regionBytes: number;
  /** Bytes a lane reads back at once (and, staging outputs, stores to D). */
  readonly vecBytes: number;
  /** Vectors in one staged row. */
  readonly perRow: number;
  /** Staged: D's elements ("out"), or the accumulators in the compute type ("raw"),
   * the epilogue then evaluated along D's rows (epilogues that read a matrix). */
  readonly mode: "out" | "raw";
  /** Bytes of one staged element. */
  readonly elemBytes: number;
}

/** Registers an epilogue's loads issued ahead of a batch of direct stores may
 * hold where the accumulators take at most 128 (a 64x64 f32 warp tile); half
 * as many above. More spilled kernels near the 255-register limit
 * (tests/ptxas_sweep.ts: 16 and 32 did, and so did a budget growing as the
 * rows of accumulators retire). */
const AHEAD_REGS = 8;

/** Bytes of an L2 cache line, the unit `prefetch.global.L2` asks for. */
const L2_LINE = 128;

/**
 * How many k-tiles before the end of the main loop an epilogue that reads a
 * matrix prefetches its tile into L2: 256 elements of K (8 k-tiles of 32),
 * some microseconds of a large tile's main loop, more than a DRAM access
 * takes under load, and short enough that the lines are still in L2 when the
 * epilogue reads them (bench/NOTES.md 34).
 */
export function prefetchAhead(tileK: number): number {
  return Math.max(2, Math.ceil(256 / tileK));
}

/** `s * a`. */
function scaleAffine(a: Affine, s: number): Affine {
  return { c: a.c * s, terms: a.terms.map(([f, c]) => [f, c * s]) };
}

/**
 * A per-lane quantity as `c + cg * g + ct * tig` (g = lane >> 2, tig = lane &
 * 3), as every MMA and SIMT fragment map is.
 *
 * @param f The quantity of each lane.
 * @param what What it is, for the error where it is not affine.
 * @returns The affine form.
 */
function laneAffine(f: (lane: number) => number, what: string): Affine {
  const c0 = f(0);
  const cg = f(4) - c0;
  const ct = f(1) - c0;
  for (let l = 0; l < 32; l++) {
    if (f(l) !== c0 + cg * (l >> 2) + ct * (l & 3)) {
      throw new Error(`${what} is not affine in (g, tig)`);
    }
  }
  return { c: c0, terms: [["g", cg], ["tig", ct]] };
}

/** A shared-memory location recipe: (row, byte in row) of an operand tile. */
interface SmemRecipe {
  readonly row: Affine;
  readonly byte: Affine;
}

/** The swizzled, stage-relative byte offset of (row, byte) in an operand tile. */
export function swizzleOffset(p: OperandSmem, row: number, byte: number): number {
  const rowChunks = p.rowBytes / 16;
  const linear = row * rowChunks + (byte >> 4);
  const phys = linear ^ (((linear >> p.swizzleShift) * p.swizzleScale) & 7);
  return p.offset + phys * 16 + (byte & 15);
}

/** The most distinct feature tuples {@link Lowering.groupRecipes} tells apart by table. */
const MAX_THREAD_KEYS = 4096;

class Lowering {
  readonly b = new KernelBuilder();
  readonly k: GemmKernel;
  readonly shape: MmaShape;
  readonly threads: number;
  readonly params = new Map<string, Reg>();
  /** f32 registers that hold `cvt.f32(h)` of a 16-bit float h (see convertOut). */
  readonly narrowed = new Map<Reg, { readonly to: Dtype; readonly h: Reg; readonly widen: Op }>();
  readonly features = new Map<Feature, Reg>();
  tidHiShift = 0;
  tidLoMask = 0;
  /** 3xtf32: an accumulator tile of zeros, the C of each k-tile's first MMA (see mmas). */
  zeroAcc: Reg[] = [];
  /** 3xtf32: per accumulator tile, the running sum of the current k-tile's products. */
  kTileSum: Reg[][][] = [];

  constructor(k: GemmKernel) {
    this.k = k;
    const name = k.plan.mma!.shape;
    const w = k.plan.warp!.warp;
    const s = name.startsWith(SIMT_PREFIX)
      ? simtShape(w.m, w.n)
      : MMA_SHAPES.find((x) => x.name === name);
    if (s === undefined) throw new Error(`Unknown MMA shape "${name}"`);
    this.shape = s;
    this.threads = k.plan.warp!.threads;
  }

  // ---- small emitters ----------------------------------------------------

  bin(
    fn: BinFn,
    type: "u32" | "s32" | "u64" | "b32" | "pred" | "f32" | "f64",
    a: Operand,
    b: Operand,
    name?: string,
  ): Reg {
    const rt: RegType = type === "b32" ? "b32" : type;
    const dst = this.b.reg(rt, name);
    this.b.emit({ op: "bin", fn, type, dst, a, b });
    return dst;
  }

  u32(v: number | Reg): Operand {
    return typeof v === "number" ? imm(v) : v;
  }

  setp(
    cmp: "lt" | "le" | "gt" | "ge" | "eq" | "ne",
    type: "u32" | "s32" | "u64" | "f32" | "f64",
    a: Operand,
    b: Operand,
  ): Reg {
    const dst = this.b.reg("pred");
    this.b.emit({ op: "setp", cmp, type, dst, a, b });
    return dst;
  }

  and(p: Reg | null, q: Reg | null): Reg | null {
    if (p === null) return q;
    if (q === null) return p;
    return this.bin("and", "pred", p, q);
  }

  mov(type: RegType, v: Operand, name?: string): Reg {
    const dst = this.b.reg(type, name);
    this.b.emit({ op: "mov", dst, src: v });
    return dst;
  }

  /** A dimension's value: an immediate for a constant, else its parameter. */
  dim(d: { kind: "sym"; name: string } | { kind: "const"; value: number }): Operand {
    return d.kind === "const" ? imm(d.value) : this.params.get(d.name)!;
  }

  // ---- affine recipes ----------------------------------------------------

  featureValue(f: Feature, tid: number): number {
    const lane = tid & 31;
    const warp = tid >> 5;
    const wp = this.k.plan.warp!;
    switch (f) {
      case "lane7":
        return lane & 7;
      case "lane8":
        return (lane >> 3) & 1;
      case "lane16":
        return (lane >> 4) & 1;
      case "g":
        return lane >> 2;
      case "tig":
        return lane & 3;
      case "wm":
        return warp % wp.warpsM;
      case "wn":
        return Math.floor(warp / wp.warpsM);
      case "tidHi":
        return tid >> this.tidHiShift;
      case "tidLo":
        return tid & this.tidLoMask;
      case "tid":
        return tid;
      default:
        return unreachable(f);
    }
  }

  /** Emits `a` for this thread as a u32 register. */
  emitAffine(a: Affine): Operand {
    let acc: Operand | null = null;
    for (const [f, c] of a.terms) {
      if (c === 0) continue;
      const fr = this.features.get(f)!;
      if (acc === null) {
        acc = c === 1 ? fr : this.bin("mul", "u32", fr, imm(c));
      } else {
        const dst = this.b.reg("u32");
        this.b.emit({ op: "mad", type: "u32", dst, a: fr, b: imm(c), c: acc });
        acc = dst;
      }
    }
    if (acc === null) return imm(a.c);
    return a.c === 0 ? acc : this.bin("add", "u32", acc, imm(a.c));
  }

  /** Emits the swizzled offset of a recipe: a u32 register. */
  emitSwizzled(p: OperandSmem, r: SmemRecipe): Reg {
    const row = this.emitAffine(r.row);
    const byte = this.emitAffine(r.byte);
    const rowChunks = p.rowBytes / 16;
    const chunk = byte.kind === "imm" ? imm(byte.value >> 4) : this.bin("shr", "u32", byte, imm(4));
    const linear = this.b.reg("u32");
    this.b.emit({ op: "mad", type: "u32", dst: linear, a: row, b: imm(rowChunks), c: chunk });
    const hi0 = this.bin("shr", "u32", linear, imm(p.swizzleShift));
    const hi = p.swizzleScale === 1 ? hi0 : this.bin("shl", "u32", hi0, imm(log2(p.swizzleScale)));
    const m = this.bin("and", "u32", hi, imm(7));
    const phys = this.bin("xor", "u32", linear, m);
    const off = this.bin("shl", "u32", phys, imm(4));
    const inChunk: Operand = byte.kind === "imm"
      ? imm(byte.value & 15)
      : this.bin("and", "u32", byte, imm(15));
    const withIn = inChunk.kind === "imm" && inChunk.value === 0
      ? off
      : this.bin("add", "u32", off, inChunk);
    return this.bin("add", "u32", withIn, imm(p.offset), "smemoff");
  }

  /**
   * Shares base registers between recipes whose offsets differ by one
   * constant for every thread: returns, per recipe, a base register and an
   * immediate offset.
   */
  groupRecipes(
    p: OperandSmem,
    recipes: readonly SmemRecipe[],
    smemBase: Reg,
  ): { base: Reg; offset: number }[] {
    // The offsets are functions of the features the recipes use, so they are
    // evaluated on one thread per distinct tuple of those features' values
    // (the first such thread: thread 0 comes first); every other thread
    // repeats one of these. (Evaluating every term of every recipe for every
    // thread was most of the lowering's time for SIMT kernels, with their
    // many recipes.)
    const threads = this.threads;
    const cols = new Map<Feature, Int32Array>();
    const key = new Int32Array(threads);
    let keys = 1;
    const use = (f: Feature): void => {
      if (cols.has(f)) return;
      const col = new Int32Array(threads);
      let lo = Infinity;
      let hi = -Infinity;
      for (let t = 0; t < threads; t++) {
        const v = this.featureValue(f, t);
        col[t] = v;
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      cols.set(f, col);
      const span = hi - lo + 1;
      keys *= span;
      if (keys <= MAX_THREAD_KEYS) {
        for (let t = 0; t < threads; t++) key[t] = key[t]! * span + (col[t]! - lo);
      }
    };
    for (const r of recipes) {
      for (const [f] of r.row.terms) use(f);
      for (const [f] of r.byte.terms) use(f);
    }
    const tids: number[] = [];
    if (keys <= MAX_THREAD_KEYS) {
      const seen = new Uint8Array(keys);
      for (let t = 0; t < threads; t++) {
        if (seen[key[t]!] === 0) {
          seen[key[t]!] = 1;
          tids.push(t);
        }
      }
    } else {
      for (let t = 0; t < threads; t++) tids.push(t);
    }
    const n = tids.length;
    // A recipe's affine parts are evaluated as their constant plus the sum of
    // their terms, kept per distinct list of terms (recipes differ mostly in
    // the constant). The values are small integers or multiples of 1/8, so
    // the sums are exact in any order.
    const sums: { terms: Affine["terms"]; sum: Float64Array }[] = [];
    const termSum = (terms: Affine["terms"]): Float64Array => {
      for (const e of sums) {
        if (
          e.terms.length === terms.length &&
          e.terms.every(([f, c], j) => f === terms[j]![0] && c === terms[j]![1])
        ) {
          return e.sum;
        }
      }
      const sum = new Float64Array(n);
      for (const [f, c] of terms) {
        if (c === 0) continue;
        const col = cols.get(f)!;
        for (let i = 0; i < n; i++) sum[i]! += c * col[tids[i]!]!;
      }
      sums.push({ terms, sum });
      return sum;
    };
    const offs = new Int32Array(recipes.length * n);
    recipes.forEach((r, i) => {
      const rowC = r.row.c;
      const byteC = r.byte.c;
      const rows = termSum(r.row.terms);
      const bytes = termSum(r.byte.terms);
      for (let t = 0; t < n; t++) {
        offs[i * n + t] = swizzleOffset(p, rowC + rows[t]!, byteC + bytes[t]!);
      }
    });
    const reps: { at: number; base: Reg }[] = [];
    return recipes.map((r, i) => {
      const at = i * n;
      for (const rep of reps) {
        const d = offs[at]! - offs[rep.at]!;
        let same = true;
        for (let t = 1; t < n && same; t++) same = offs[at + t]! - offs[rep.at + t]! === d;
        // The same base, a constant apart; a negative offset is not an
        // address form the kernel IR takes (found by tests/fuzz.ts: a SIMT
        // warp 16x80 orders its recipes so that a later one lies below).
        if (same && d >= 0) return { base: rep.base, offset: d };
      }
      const off = this.emitSwizzled(p, r);
      const base = this.bin("add", "u32", smemBase, off, "sbase");
      reps.push({ at, base });
      return { base, offset: 0 };
    });
  }

  // ---- the kernel --------------------------------------------------------

  run(): Kernel {
    const k = this.k;
    const b = this.b;
    const tile = k.plan.tile!;
    const wp = k.plan.warp!;
    const pipe = k.plan.pipeline!;
    const mp = k.plan.mma!;
    const tb = tile.threadblock;

    // Parameters in ABI order: tensors, dims, scalars.
    const kparams: KernelParam[] = [];
    for (const p of k.params) {
      if (p.kind === "tensor") {
        kparams.push({ name: p.name, kind: "tensor", ptx: "u64", dtype: p.dtype });
      }
    }
    for (const d of k.dims) kparams.push({ name: d, kind: "dim", ptx: "u32" });
    for (const p of k.params) {
      if (p.kind === "scalar") {
        const ptx = p.dtype === "f64" ? "f64" : p.dtype === "s32" ? "s32" : "f32";
        kparams.push({ name: p.name, kind: "scalar", ptx, dtype: p.dtype });
      }
    }
    // split_k > 1: the workspace, last (see splitKReduce).
    if (tile.splitK > 1) {
      kparams.push({ name: WORKSPACE_PARAM, kind: "tensor", ptx: "u64", dtype: "u8" });
    }
    for (const p of kparams) {
      const t: RegType = p.ptx === "u64" ? "u64" : p.ptx;
      const r = b.reg(t, p.name);
      b.emit({ op: "param", dst: r, name: p.name });
      this.params.set(p.name, r);
    }

    // Indices.
    const tid = b.reg("u32", "tid");
    b.emit({ op: "sreg", dst: tid, sreg: "tid.x" });
    const lane = this.bin("and", "u32", tid, imm(31), "lane");
    const warp = this.bin("shr", "u32", tid, imm(5), "warp");
    this.features.set("tid", tid);
    this.features.set("lane7", this.bin("and", "u32", lane, imm(7)));
    this.features.set(
      "lane8",
      this.bin("and", "u32", this.bin("shr", "u32", lane, imm(3)), imm(1)),
    );
    this.features.set("lane16", this.bin("shr", "u32", lane, imm(4)));
    this.features.set("g", this.bin("shr", "u32", lane, imm(2), "g"));
    this.features.set("tig", this.bin("and", "u32", lane, imm(3), "tig"));
    this.features.set("wm", this.divRem("rem", warp, wp.warpsM, "wm"));
    this.features.set("wn", this.divRem("div", warp, wp.warpsM, "wn"));

    const bx = b.reg("u32", "bx");
    b.emit({ op: "sreg", dst: bx, sreg: "ctaid.x" });
    const by = b.reg("u32", "by");
    b.emit({ op: "sreg", dst: by, sreg: "ctaid.y" });
    const bzRaw = b.reg("u32", "bz");
    b.emit({ op: "sreg", dst: bzRaw, sreg: "ctaid.z" });
    // grid z = batch * split_k: the batch index and this block's split of K.
    const splitK = tile.splitK;
    const split = splitK > 1 ? this.divRem("rem", bzRaw, splitK, "split") : null;
    const bz = splitK > 1 ? this.divRem("div", bzRaw, splitK, "batch") : bzRaw;
    const ls = log2(tile.swizzle);
    const tileMIdx = ls === 0 ? bx : this.bin("shr", "u32", bx, imm(ls));
    const tileNIdx = ls === 0 ? by : this.bin(
      "add",
      "u32",
      this.bin("shl", "u32", by, imm(ls)),
      this.bin("and", "u32", bx, imm(tile.swizzle - 1)),
    );
    const M = this.dim(k.problem.m);
    const N = this.dim(k.problem.n);
    const K = this.dim(k.problem.k);
    const tilesN = this.divRem("div", this.bin("add", "u32", N, imm(tb.n - 1)), tb.n);
    const inGrid = this.setp("lt", "u32", tileNIdx, tilesN);
    b.if(inGrid, true, () => {
      const m0 = this.mulImm(tileMIdx, tb.m, "m0");
      const n0 = this.mulImm(tileNIdx, tb.n, "n0");
      const smem = b.reg("u32", "smem");
      b.emit({ op: "smembase", dst: smem });

      const aCopy = this.copySetup("A", k.problem.a, pipe.a, m0, M, K, bz, smem);
      const bCopy = this.copySetup("B", k.problem.b, pipe.b, n0, N, K, bz, smem);

      // Fragment address set-up.
      const aFrag = this.fragSetup("A", pipe.a, mp.aLoad, smem);
      const bFrag = this.fragSetup("B", pipe.b, mp.bLoad, smem);

      // Accumulators.
      const mTiles = wp.warp.m / this.shape.m;
      const nTiles = wp.warp.n / this.shape.n;
      const accType: RegType = this.shape.cType === "f32"
        ? "f32"
        : this.shape.cType === "s32"
        ? "s32"
        : this.shape.cType === "f64"
        ? "f64"
        : "b32";
      const acc: Reg[][][] = [];
      for (let i = 0; i < mTiles; i++) {
        const row: Reg[][] = [];
        for (let j = 0; j < nTiles; j++) {
          const regs: Reg[] = [];
          for (let r = 0; r < this.shape.c.regs; r++) {
            regs.push(this.mov(accType, imm(0), `acc${i}_${j}_${r}`));
          }
          row.push(regs);
        }
        acc.push(row);
      }
      if (this.k.math.mode === "3xtf32") {
        this.zeroAcc = Array.from({ length: this.shape.c.regs }, () => this.mov("f32", imm(0)));
      }

      // k-tiles.
      const kTiles = K.kind === "imm" ? imm(Math.ceil(K.value / tb.k)) : this.bin(
        "shr",
        "u32",
        this.bin("add", "u32", K, imm(tb.k - 1)),
        imm(log2(tb.k)),
        "ktiles",
      );
      const S = pipe.stages;
      // kRem of the next tile to fetch: K - t * tileK (s32, may go negative).
      let kRem = this.s32Of(K, "kfetch");
      let kCount: Operand = kTiles;
      if (split !== null) {
        // Split s computes k-tiles [s * per, s * per + count) of the kTiles,
        // per = ceil(kTiles / split_k); the last splits may get fewer or none
        // (count 0: a partial of zeros). kRem stops at the split's end, so
        // that the copies fetched ahead past it read nothing.
        const kt = kTiles.kind === "imm" ? this.mov("u32", kTiles) : kTiles;
        const per = this.divRem("div", this.bin("add", "u32", kt, imm(splitK - 1)), splitK, "kper");
        const start = this.bin("min", "u32", this.bin("mul", "u32", split, per), kt, "kstart");
        kCount = this.bin("min", "u32", per, this.bin("sub", "u32", kt, start), "kcount");
        const left = this.bin("sub", "s32", kRem, this.s32Of(this.mulImm(start, tb.k)));
        kRem = this.bin("min", "s32", left, this.s32Of(this.mulImm(kCount, tb.k)), "kfetch");
        this.skipTiles(aCopy, start);
        this.skipTiles(bCopy, start);
      }
      const writeOff = this.mov("u32", imm(0), "wstage");
      const readOff = this.mov("u32", imm(0), "rstage");

      const issue = () => {
        this.issueCopies(aCopy, pipe.a, writeOff, kRem);
        this.issueCopies(bCopy, pipe.b, writeOff, kRem);
        b.emit({ op: "commit" });
        b.emit({ op: "bin", fn: "sub", type: "s32", dst: kRem, a: kRem, b: imm(tb.k) });
        this.advanceStage(writeOff, S);
      };

      b.emit({ op: "comment", text: `prologue: fill ${S - 1} stages` });
      for (let s = 0; s < S - 1; s++) issue();
      b.emit({ op: "wait", n: pipe.waitDepth });
      b.emit({ op: "bar" });

      // Fragment buffers.
      const fragRegs = (op: MmaShape["a"], tiles: number): Reg[][] =>
        Array.from(
          { length: tiles },
          () =>
            Array.from(
              { length: op.regs },
              () => b.reg(op.regBits === 64 ? "f64" : this.k.math.mode === "simt" ? "f32" : "b32"),
            ),
        );
      const aBuf = [fragRegs(this.shape.a, mTiles), fragRegs(this.shape.a, mTiles)];
      const bBuf = [fragRegs(this.shape.b, nTiles), fragRegs(this.shape.b, nTiles)];
      const loadFrags = (kk: number, buf: number) => {
        this.loadFrags(aFrag, aBuf[buf]!, kk, readOff, pipe.a);
        this.loadFrags(bFrag, bBuf[buf]!, kk, readOff, pipe.b);
      };
      loadFrags(0, 0);

      const kt = b.reg("u32", "kt");
      const KK = mp.kSteps;
      // k-steps per tile are a power of two >= 2 (gemm-mma), so the two fragment
      // buffers alternate evenly across tiles: k-step kk uses buffer kk % 2.
      if (KK % 2 !== 0) throw new Error(`lower-kernel: ${KK} k-steps per tile is odd`);
      const kLoop = (from: Operand, to: Operand) =>
        b.for(kt, from, to, 1, () => {
          for (let kk = 0; kk < KK; kk++) {
            if (kk === KK - 1) {
              b.emit({ op: "wait", n: pipe.waitDepth });
              b.emit({ op: "bar" });
              this.advanceStage(readOff, S);
            }
            const next = (kk + 1) % 2;
            const interleaved = mp.fragments === "interleaved";
            if (!interleaved) loadFrags((kk + 1) % KK, next);
            if (kk === 0) {
              b.emit({ op: "comment", text: `copies of k-tile kt + ${S - 1}` });
              issue();
            }
            if (!interleaved) {
              this.mmas(acc, aBuf[kk % 2]!, bBuf[kk % 2]!, kk);
              continue;
            }
            // Each load of k-step kk+1 right after the MMAs that free its tiles.
            const aNext = this.fragLoader(aFrag, aBuf[next]!, (kk + 1) % KK, readOff, pipe.a);
            const bNext = this.fragLoader(bFrag, bBuf[next]!, (kk + 1) % KK, readOff, pipe.b);
            const bDone = new Set<number>();
            this.mmas(acc, aBuf[kk % 2]!, bBuf[kk % 2]!, kk, (i, j, rowDone) => {
              if (i === mTiles - 1) {
                bDone.add(j);
                bNext((t) => bDone.has(t));
              }
              if (rowDone) aNext((t) => t <= i);
            });
          }
        });
      // An epilogue that reads a matrix (C) asks the L2 for C's tile
      // `prefetchAhead` k-tiles before the main loop ends (a second copy of
      // the loop runs those last k-tiles: a branch inside the loop body would
      // split its basic block, which cost 6% in bench/NOTES.md 3). With
      // split-K only the last split to finish reads C: it prefetches C's tile
      // when it knows it is last, before it loads the partial sums.
      const prefetch = split === null ? this.epiPrefetch(m0, n0, M, N, bz) : null;
      if (prefetch === null) kLoop(imm(0), kCount);
      else {
        const P = prefetchAhead(tb.k);
        b.emit({ op: "comment", text: `the last ${P} k-tiles, after the L2 prefetch of C's tile` });
        const at: Operand = kCount.kind === "imm"
          ? imm(Math.max(kCount.value - P, 0))
          : this.bin("sub", "u32", this.bin("max", "u32", kCount, imm(P)), imm(P), "kpf");
        if (at.kind !== "imm" || at.value > 0) kLoop(imm(0), at);
        prefetch();
        kLoop(at, kCount);
      }
      b.emit({ op: "wait", n: 0 });

      if (split === null) this.epilogue(acc, m0, n0, M, N, bz, smem);
      else {
        const tilesM = this.divRem("div", this.bin("add", "u32", M, imm(tb.m - 1)), tb.m);
        const tileLin = this.bin(
          "add",
          "u32",
          this.bin(
            "mul",
            "u32",
            this.bin("add", "u32", this.bin("mul", "u32", bz, tilesM), tileMIdx),
            tilesN,
          ),
          tileNIdx,
          "tile",
        );
        this.splitKReduce(
          acc,
          split,
          tileLin,
          smem,
          (sum) => this.epilogue(acc, m0, n0, M, N, bz, smem, sum),
          this.epiPrefetch(m0, n0, M, N, bz),
        );
      }
    });

    const minBlocks = this.minBlocksPerSm();
    return {
      kind: "kernel",
      name: k.name,
      target: k.target,
      params: kparams,
      threads: this.threads,
      dynamicSmemBytes: pipe.smemBytes,
      ...(minBlocks > 1 ? { minBlocksPerSm: minBlocks } : {}),
      grid: {
        tileM: tb.m,
        tileN: tb.n,
        swizzle: tile.swizzle,
        splitK: tile.splitK,
        ...(tile.splitK > 1 ? { workspacePerTile: this.workspacePerTile() } : {}),
        m: k.problem.m.kind === "sym" ? k.problem.m.name : k.problem.m.value,
        n: k.problem.n.kind === "sym" ? k.problem.n.name : k.problem.n.value,
        batch: k.problem.batch === null
          ? null
          : k.problem.batch.kind === "sym"
          ? k.problem.batch.name
          : k.problem.batch.value,
      },
      regs: b.regs,
      body: b.body,
    };
  }

  /**
   * Blocks per SM the kernel is built for. SIMT kernels of at most 64
   * accumulators a thread (CUTLASS's sgemm tile, 8x8 a lane) fit in
   * 65536 / (2 * threads) registers for up to 256 threads: two blocks share
   * an SM where their shared memory fits twice, and hide each other's
   * barriers (+3-4%, bench/NOTES.md 39). At 128 registers ptxas spilled
   * (tests/simt_test.ts) larger micro-tiles (a 64x64 warp tile, 1.9 KB),
   * tensors aligned to less than 16 bytes (8-60 bytes) and a transposed B
   * copied by 4-byte cp.async with a bias (16-48 bytes), and split-K over
   * more than 4 splits (the last split's reduction, 8-12 bytes at split 8):
   * those, and the tensor-core kernels, keep one block and up to 255
   * registers.
   */
  minBlocksPerSm(): number {
    const k = this.k;
    if (k.math.mode !== "simt") return 1;
    const pipe = k.plan.pipeline!;
    const w = k.plan.warp!.warp;
    const aligned = k.params.every((p) =>
      p.kind !== "tensor" || p.align * DTYPE_INFO[p.dtype].bits >= 128
    );
    const byCopies = (o: OperandSmem) => o.transpose === true && o.viaRegisters !== true;
    const fits = 2 * this.threads <= 512 && 2 * pipe.smemBytes <= SMEM_BUDGET[k.target] &&
      (w.m / 8) * (w.n / 4) <= 64 && aligned && !byCopies(pipe.a) && !byCopies(pipe.b) &&
      k.plan.tile!.splitK <= 4;
    return fits ? 2 : 1;
  }

  // ---- split-K ------------------------------------------------------------------

  /** Bytes per accumulator register (f64: 8, else 4: f32, s32, or f16x2). */
  accBytes(): number {
    return this.shape.cType === "f64" ? 8 : 4;
  }

  /**
   * The workspace record of one output tile: a 128-byte header (the u32
   * arrival counter) and one partial accumulator tile per split, each thread's
   * registers in 16-byte chunks (8 for f16 accumulators) laid out chunk-major
   * (`(chunk * threads + tid) * bytes`), so that a warp's stores and loads are
   * contiguous.
   */
  workspacePerTile(): number {
    return 128 + this.k.plan.tile!.splitK * this.partialBytes();
  }

  /** Bytes of one split's partial accumulator tile (every thread's registers). */
  partialBytes(): number {
    const wp = this.k.plan.warp!;
    const regs = (wp.warp.m / this.shape.m) * (wp.warp.n / this.shape.n) * this.shape.c.regs;
    return this.threads * regs * this.accBytes();
  }

  /** Moves a copy plan's pointers `tiles` k-tiles ahead (a split's first k-tile). */
  skipTiles(c: CopyPlan, tiles: Reg): void {
    const off = this.bin("mul", "u64", b64(this, tiles), c.step);
    const ptrs = c.kind === "each" ? c.copies.map((x) => x.ptr) : [c.ptr0];
    for (const p of ptrs) this.b.emit({ op: "bin", fn: "add", type: "u64", dst: p, a: p, b: off });
  }

  /**
   * Split-K, in the kernel (no second launch): every block stores its partial
   * accumulators into its tile's workspace record and counts itself in with an
   * atomic add; the block that arrives last sums the split_k partials in split
   * order (so the result does not depend on the order of arrival), resets the
   * counter to 0 for the next launch, and runs the epilogue (`then`), which
   * calls `sum(i, j)` to load accumulator tile (i, j)'s sums just before it
   * uses them. The others end. Partials are raw accumulators: f32, f64, s32
   * (summed with saturation, as the integer MMAs accumulate), or f16x2 (the
   * halves summed in f32 and rounded to f16 once).
   */
  splitKReduce(
    acc: Reg[][][],
    split: Reg,
    tileLin: Reg,
    smem: Reg,
    then: (sum: (i: number, j: number) => void) => void,
    prefetch: (() => void) | null = null,
  ): void {
    const b = this.b;
    const S = this.k.plan.tile!.splitK;
    const T = this.threads;
    const flat = acc.flat(2);
    const eb = this.accBytes();
    // 16-byte chunks (8 for f16 accumulators, whose MMA tile holds 8 bytes a thread).
    const chunkBytes = Math.min(16, acc[0]![0]!.length * eb);
    const perChunk = chunkBytes / eb;
    const chunks = flat.length / perChunk;
    if (acc[0]![0]!.length % perChunk !== 0) {
      throw new Error("lower-kernel: an accumulator tile is not whole 16-byte chunks");
    }
    const partBytes = this.partialBytes();
    const width = eb === 8 ? "b64" : "b32";
    b.emit({
      op: "comment",
      text: `split-K: partial to the workspace, the last of ${S} splits reduces`,
    });
    const ws = this.params.get(WORKSPACE_PARAM)!;
    const rec = this.bin(
      "add",
      "u64",
      ws,
      this.bin("mul", "u64", b64(this, tileLin), imm(this.workspacePerTile())),
    );
    const tid = this.features.get("tid")!;
    const mine = this.bin("add", "u64", rec, b64(this, this.mulImm(tid, chunkBytes)));
    const part0 = this.bin("add", "u64", mine, imm(128));
    const own = this.bin(
      "add",
      "u64",
      part0,
      this.bin("mul", "u64", b64(this, split), imm(partBytes)),
    );
    for (let c = 0; c < chunks; c++) {
      const src = flat.slice(c * perChunk, (c + 1) * perChunk);
      b.emit({ op: "stg", width, src, addr: own, offset: c * T * chunkBytes });
    }
    // Release: every thread's partial before the barrier, and thread 0's
    // fence after it (cumulative over what the barrier showed it) before its
    // atomic. Acquire: thread 0's fence right after the atomic that saw the
    // others, then the barrier, as CUTLASS's semaphore does (acquire, then
    // __syncthreads); the partials are read through L2 (ld.global.cg).
    b.emit({ op: "fence" });
    b.emit({ op: "bar" });
    const t0 = this.setp("eq", "u32", tid, imm(0));
    b.emit({ op: "fence" });
    const old = this.mov("u32", imm(0), "arrived");
    b.emit({
      op: "atom",
      dst: old,
      addr: rec,
      offset: 0,
      b: imm(1),
      guard: { pred: t0, negate: false },
    });
    b.emit({ op: "fence" });
    const lastT0 = this.bin("and", "pred", t0, this.setp("eq", "u32", old, imm(S - 1)));
    // The counter back to 0 for the next launch (every split has counted in).
    b.emit({
      op: "stg",
      width: "b32",
      src: [imm(0)],
      addr: rec,
      offset: 0,
      guard: { pred: lastT0, negate: false },
    });
    const flag = this.b.reg("u32", "last");
    b.emit({ op: "selp", type: "u32", dst: flag, a: imm(1), b: imm(0), p: lastT0 });
    b.emit({
      op: "sts",
      width: "b32",
      src: [flag],
      addr: smem,
      offset: 0,
      guard: { pred: t0, negate: false },
    });
    b.emit({ op: "bar" });
    const got = this.b.reg("u32", "lastall");
    b.emit({ op: "lds", width: "b32", dst: [got], addr: smem, offset: 0 });
    const isLast = this.setp("ne", "u32", got, imm(0));
    b.if(isLast, true, () => {
      b.emit({ op: "fence" });
      // The last split alone reads C: its tile into L2 while the partial sums load.
      prefetch?.();
      const addT = this.shape.cType === "f64" ? "f64" : this.shape.cType === "s32" ? "s32" : "f32";
      const fn = addT === "s32" ? "addsat" : "add";
      const load = (s: number, c: number, dst: Reg[]) =>
        b.emit({
          op: "ldg",
          width,
          dst,
          addr: part0,
          offset: s * partBytes + c * T * chunkBytes,
          cache: "cg",
        });
      // f16x2 (b32) accumulators: each half as f32.
      const halves = (w: Reg): Reg[] => {
        const lo = b.reg("b16");
        const hi = b.reg("b16");
        b.emit({ op: "unpack", lo, hi, src: w });
        return [lo, hi].map((h) => {
          const x = b.reg("f32");
          b.emit({ op: "cvt", kind: "f32.f16", dst: x, src: h });
          return x;
        });
      };
      const nTiles = acc[0]!.length;
      const tileRegs = acc[0]![0]!.length;
      // The sums of one accumulator tile, loaded by the epilogue right before
      // it stores that tile: few registers live at once.
      then((i, j) => {
        const first = ((i * nTiles + j) * tileRegs) / perChunk;
        for (let c = first; c < first + tileRegs / perChunk; c++) {
          const regs = flat.slice(c * perChunk, (c + 1) * perChunk);
          if (this.shape.cType !== "f16") {
            load(0, c, regs);
            for (let s = 1; s < S; s++) {
              const part = regs.map((r) => b.reg(r.type));
              load(s, c, part);
              regs.forEach((r, q) =>
                b.emit({ op: "bin", fn, type: addT, dst: r, a: r, b: part[q]! })
              );
            }
            continue;
          }
          // The halves are summed in f32 and rounded to f16 once, at the end.
          let sums: Reg[][] = [];
          for (let s = 0; s < S; s++) {
            const part = regs.map((r) => b.reg(r.type));
            load(s, c, part);
            const hs = part.map(halves);
            if (s === 0) sums = hs;
            else {
              sums.forEach((pair, q) =>
                pair.forEach((x, e) =>
                  b.emit({ op: "bin", fn: "add", type: "f32", dst: x, a: x, b: hs[q]![e]! })
                )
              );
            }
          }
          regs.forEach((r, q) => {
            const [lo, hi] = sums[q]!.map((x) => {
              const h = b.reg("b16");
              b.emit({ op: "cvt", kind: "f16.f32", dst: h, src: x });
              return h;
            });
            b.emit({ op: "pack", dst: r, lo: lo!, hi: hi! });
          });
        }
      });
    });
  }

  /** `x / d` or `x % d` for a constant d: a shift or mask when d is a power of two. */
  divRem(fn: "div" | "rem", x: Reg, d: number, name?: string): Reg {
    if ((d & (d - 1)) === 0) {
      return fn === "div"
        ? this.bin("shr", "u32", x, imm(log2(d)), name)
        : this.bin("and", "u32", x, imm(d - 1), name);
    }
    return this.bin(fn, "u32", x, imm(d), name);
  }

  /** `x * c` for a constant c: a shift when c is a power of two. */
  mulImm(x: Reg, c: number, name?: string): Reg {
    return (c & (c - 1)) === 0
      ? this.bin("shl", "u32", x, imm(log2(c)), name)
      : this.bin("mul", "u32", x, imm(c), name);
  }

  /** A u32 operand's bits as an s32 register (two bit moves; free in PTX). */
  s32Of(o: Operand, name?: string): Reg {
    const dst = this.b.reg("s32", name);
    if (o.kind === "imm") {
      this.b.emit({ op: "mov", dst, src: o });
      return dst;
    }
    const bits = this.b.reg("b32");
    this.b.emit({ op: "cvt", kind: "b32.u32", dst: bits, src: o });
    this.b.emit({ op: "cvt", kind: "s32.b32", dst, src: bits });
    return dst;
  }

  advanceStage(off: Reg, stages: number): void {
    // Stage offsets count in stage indices; byte offsets are index * stageBytes.
    const next = this.bin("add", "u32", off, imm(1));
    const wrap = this.setp("eq", "u32", next, imm(stages));
    this.b.emit({ op: "selp", type: "u32", dst: off, a: imm(0), b: next, p: wrap });
  }

  // ---- global -> shared copies ---------------------------------------------

  copySetup(
    _role: "A" | "B",
    view: MatrixView,
    p: OperandSmem,
    x0: Reg,
    outerSize: Operand,
    K: Operand,
    bz: Reg,
    smem: Reg,
  ): CopyPlan {
    const k = this.k;
    const t = tensorParam(k, view.tensor);
    const bits = DTYPE_INFO[t.dtype].bits;
    // The copies go along the operand's lines in global memory: the tile's
    // rows, or for a transposed tile its columns (tileK elements).
    const tileK = this.k.plan.tile!.threadblock.k;
    const transpose = p.transpose === true;
    const cpr = (transpose ? (tileK * bits) / 8 : p.rowBytes) / p.copyBytes; // copies per line
    const epc = (p.copyBytes * 8) / bits; // elements per copy
    const T = this.threads;
    const total = (p.rows * p.rowBytes) / p.copyBytes;
    // Thread tid's copy j covers copy index c = tid + j*T: row c / cpr, column c % cpr.
    this.tidHiShift = log2(cpr);
    this.tidLoMask = cpr - 1;
    const tidHi = this.bin("shr", "u32", this.features.get("tid")!, imm(log2(cpr)));
    const tidLo = this.bin("and", "u32", this.features.get("tid")!, imm(cpr - 1));
    this.features.set("tidHi", tidHi);
    this.features.set("tidLo", tidLo);
    const rowOf = (j: number): Affine =>
      T % cpr === 0
        ? { c: (j * T) / cpr, terms: [["tidHi", 1]] }
        : { c: Math.floor(j / (cpr / T)), terms: [] };
    const colOf = (j: number): Affine =>
      T % cpr === 0
        ? { c: 0, terms: [["tidLo", 1]] }
        : { c: (j % (cpr / T)) * T, terms: [["tid", 1]] };
    const copies: CopyOne[] = [];
    // Base pointer, with the batch offset.
    const base: Reg = view.batched ? this.vectorBase(t, bz) : this.params.get(view.tensor)!;
    // Leading dimension in bytes: the size of the contiguous logical dim.
    const kContig = p.contiguous === "k" || transpose;
    const ldElems = kContig ? K : outerSize;
    const ldBytes = bytesOfElems(this, ldElems.kind === "imm" ? ldElems : b64(this, ldElems), bits);
    // Each copy's destinations: one, or for a transposed tile one per
    // element (its `epc` elements of line l, from k, go to rows k.. at l's
    // byte: one cp.async of an element, or through registers 4 elements).
    const per = transpose ? epc : 1;
    const recipes: SmemRecipe[] = [];
    const valid: (Reg | null)[] = [];
    for (let j = 0; j < Math.ceil(total / T); j++) {
      const row = rowOf(j);
      const col = colOf(j);
      for (let e = 0; e < per; e++) {
        const k0 = scaleAffine(col, epc);
        recipes.push(
          transpose
            ? { row: { c: k0.c + e, terms: k0.terms }, byte: scaleAffine(row, bits / 8) }
            : { row, byte: scaleAffine(col, p.copyBytes) },
        );
      }
      // Partial last round of copies: only threads with c < total copy.
      valid.push(
        total % T === 0 || (j + 1) * T <= total
          ? null
          : this.setp("lt", "u32", this.features.get("tid")!, imm(total - j * T)),
      );
    }
    const flat = this.groupRecipes(p, recipes, smem);
    const dst = valid.map((_, j) => flat.slice(j * per, (j + 1) * per));
    // Bytes to advance per k-tile.
    const step: Operand = kContig
      ? imm((tileK * bits) / 8)
      : ldBytes.kind === "imm"
      ? imm(ldBytes.value * tileK)
      : this.bin("mul", "u64", ldBytes, imm(tileK));
    if (T % cpr === 0) {
      // Every round of copies covers dr whole rows: copy j is copy 0 moved by j*dr rows.
      const dr = T / cpr;
      const tidLoE = (p.copyBytes * 8) / bits;
      const colE = tidLoE === 1 ? tidLo : this.bin("mul", "u32", tidLo, imm(tidLoE));
      const outer0 = this.bin("add", "u32", x0, kContig ? tidHi : colE);
      const kIdx0 = kContig ? colE : tidHi;
      const lineOff = this.mulU64(kContig ? outer0 : kIdx0, ldBytes);
      const inOff = bytesOfElems(this, b64(this, kContig ? kIdx0 : outer0), bits);
      const ptr0 = this.bin(
        "add",
        "u64",
        this.bin("add", "u64", base, lineOff),
        inOff,
        `${view.tensor}ptr`,
      );
      const stride: Operand = ldBytes.kind === "imm"
        ? imm(ldBytes.value * dr)
        : this.bin("mul", "u64", ldBytes, imm(dr));
      // K-contiguous: rows are M/N; outer-contiguous: rows are k.
      const outerRem = kContig
        ? this.bin("sub", "s32", this.s32Of(outerSize), this.s32Of(outer0), `${view.tensor}orem`)
        : null;
      const outerOk = kContig ? null : this.setp("lt", "u32", outer0, outerSize);
      return {
        kind: "strided",
        ptr0,
        stride,
        step,
        dr,
        kContig,
        outerRem,
        outerOk,
        kIdx: this.s32Of(kIdx0),
        dst,
        valid,
      };
    }
    if (p.viaRegisters === true) {
      throw new Error("lower-kernel: register copies need whole lines a round");
    }
    for (let j = 0; j < valid.length; j++) {
      const rowV = this.emitAffine(rowOf(j)); // the global line (a transposed tile's recipe row is k)
      const colV = this.emitAffine(colOf(j));
      // Logical (outer, k) of the copy's first element.
      let outerIdx: Operand;
      let kIdx: Operand;
      if (kContig) {
        outerIdx = this.bin("add", "u32", x0, rowV);
        kIdx = colV.kind === "imm" ? imm(colV.value * epc) : this.bin("mul", "u32", colV, imm(epc));
      } else {
        kIdx = rowV;
        const oc = colV.kind === "imm"
          ? imm(colV.value * epc)
          : this.bin("mul", "u32", colV, imm(epc));
        outerIdx = this.bin("add", "u32", x0, oc);
      }
      const okRow = this.setp("lt", "u32", outerIdx, outerSize);
      // Global byte address of k-tile 0.
      const lineIdx = kContig ? outerIdx : kIdx;
      const inLine = kContig ? kIdx : outerIdx;
      const lineOff = this.mulU64(lineIdx, ldBytes);
      const inOff = bytesOfElems(this, b64(this, inLine), bits);
      const ptr = this.bin(
        "add",
        "u64",
        this.bin("add", "u64", base, lineOff),
        inOff,
        `${view.tensor}p${j}`,
      );
      // k index for the bounds check: as s32.
      copies.push({ ptr, okRow, valid: valid[j]!, kIdx: this.s32Of(kIdx), dst: dst[j]![0]! });
    }
    return { kind: "each", copies, step };
  }

  /** Copy j's pointer: `ptr0 + j * stride` (ptr0 itself for j = 0). */
  nthPointer(ptr0: Reg, stride: Operand, j: number): Reg {
    if (j === 0) return ptr0;
    const ptr = this.b.reg("u64");
    this.b.emit(
      stride.kind === "imm"
        ? { op: "bin", fn: "add", type: "u64", dst: ptr, a: ptr0, b: imm(j * stride.value) }
        : { op: "mad", type: "u64", dst: ptr, a: stride, b: imm(j), c: ptr0 },
    );
    return ptr;
  }

  mulU64(a: Operand, ldBytes: Operand): Operand {
    if (a.kind === "imm" && ldBytes.kind === "imm") return imm(a.value * ldBytes.value);
    const a64 = a.kind === "imm" ? a : b64(this, a);
    return this.bin("mul", "u64", a64, ldBytes);
  }

  issueCopies(c: CopyPlan, p: OperandSmem, stage: Reg, kRem: Reg): void {
    const b = this.b;
    const stageOff = this.bin("mul", "u32", stage, imm(p.stageBytes));
    const bases = new Map<Reg, Reg>();
    const dstOf = (d: { base: Reg; offset: number }) => {
      let r = bases.get(d.base);
      if (r === undefined) {
        r = this.bin("add", "u32", d.base, stageOff);
        bases.set(d.base, r);
      }
      return r;
    };
    if (c.kind === "strided") {
      const kOk = c.kContig ? this.setp("lt", "s32", c.kIdx, kRem) : null;
      const kRemT = c.kContig ? null : this.bin("sub", "s32", kRem, c.kIdx);
      c.dst.forEach((d, j) => {
        const rowOk = c.kContig
          ? this.setp("lt", "s32", imm(j * c.dr), c.outerRem!)
          : this.setp("lt", "s32", imm(j * c.dr), kRemT!);
        const ok = this.and(rowOk, c.kContig ? kOk : c.outerOk)!;
        const ptr = this.nthPointer(c.ptr0, c.stride, j);
        if (p.viaRegisters !== true) {
          this.copyOne(p, ok, ptr, dstOf(d[0]!), d[0]!.offset, c.valid[j]!);
          return;
        }
        // Through registers: one 16-byte load, an element to each of 4 rows.
        const v = d.map(() => this.mov("b32", imm(0)));
        b.emit({
          op: "ldg",
          width: "b32",
          dst: v,
          addr: ptr,
          offset: 0,
          guard: { pred: ok, negate: false },
        });
        v.forEach((x, e) =>
          b.emit({ op: "sts", width: "b32", src: [x], addr: dstOf(d[e]!), offset: d[e]!.offset })
        );
      });
      b.emit({ op: "bin", fn: "add", type: "u64", dst: c.ptr0, a: c.ptr0, b: c.step });
      return;
    }
    for (const one of c.copies) {
      const kOk = this.setp("lt", "s32", one.kIdx, kRem);
      const ok = this.and(one.okRow, kOk)!;
      this.copyOne(p, ok, one.ptr, dstOf(one.dst), one.dst.offset, one.valid);
      b.emit({ op: "bin", fn: "add", type: "u64", dst: one.ptr, a: one.ptr, b: c.step });
    }
  }

  /**
   * One global->shared copy: cp.async with zero-fill, or a guarded load and a
   * store. `ok` false (past M, N or K) writes zeros; `only` false (a thread
   * past the tile in a partial round of copies, whose destination lies
   * outside the tile) copies nothing.
   */
  copyOne(
    p: OperandSmem,
    ok: Reg,
    src: Reg,
    dst: Reg,
    dstOffset: number,
    only: Reg | null,
  ): void {
    const b = this.b;
    const guard = only === null ? {} : { guard: { pred: only, negate: false } };
    if (p.async) {
      const n = this.b.reg("u32");
      b.emit({ op: "selp", type: "u32", dst: n, a: imm(p.copyBytes), b: imm(0), p: ok });
      b.emit({
        op: "cpasync",
        cache: p.copyBytes === 16 ? "cg" : "ca",
        // The L2 may fetch whole 128-byte lines: +5% for tf32 at 8192^3 on the H200
        // (bench/NOTES.md 6).
        ...(p.copyBytes === 16 ? { prefetch: 128 as const } : {}),
        bytes: p.copyBytes as 4 | 8 | 16,
        dst,
        dstOffset,
        src,
        srcBytes: n,
        ...guard,
      });
    } else {
      const width: MemWidth = p.copyBytes === 2 ? "b16" : "b8";
      const v = this.mov(width === "b16" ? "b16" : "u32", imm(0));
      b.emit({
        op: "ldg",
        width,
        dst: [v],
        addr: src,
        offset: 0,
        guard: { pred: ok, negate: false },
      });
      b.emit({ op: "sts", width, src: [v], addr: dst, offset: dstOffset, ...guard });
    }
  }

  // ---- fragments -------------------------------------------------------------

  /** Plans every fragment load of a warp tile: per (tile, k-step) instruction, its recipe. */
  fragSetup(
    role: "A" | "B",
    p: OperandSmem,
    load: "ldmatrix" | "ldmatrix.trans" | "lds",
    smem: Reg,
  ): FragPlan {
    const wp = this.k.plan.warp!;
    const mp = this.k.plan.mma!;
    const frag = role === "A" ? this.shape.a : this.shape.b;
    const bits = DTYPE_INFO[role === "A" ? this.k.math.a : this.k.math.b].bits;
    const tileOuter = role === "A" ? this.shape.m : this.shape.n;
    const tiles = role === "A" ? wp.warp.m / this.shape.m : wp.warp.n / this.shape.n;
    const warpFeat: Feature = role === "A" ? "wm" : "wn";
    const warpOuter = role === "A" ? wp.warp.m : wp.warp.n;
    // (outer, k) of a fragment element, in the warp tile, for lane/reg/elem.
    const at = (lane: number, reg: number, elem: number): [number, number] => {
      const [r, c] = frag.coord(lane, reg, elem);
      return role === "A" ? [r, c] : [c, r];
    };
    // Converts (outer, kElem) plus warp origin into an smem (row, byte) recipe.
    const toRecipe = (outer: Affine, kE: Affine): SmemRecipe => {
      const o: Affine = { c: outer.c, terms: [...outer.terms, [warpFeat, warpOuter]] };
      return p.contiguous === "k"
        ? { row: o, byte: scaleAffine(kE, bits / 8) }
        : { row: kE, byte: scaleAffine(o, bits / 8) };
    };
    const instrs: FragInstr[] = [];
    if (load === "lds") {
      // (outer, k) of each register, affine in g and tig; the same for every tile and k-step.
      const what = `Fragment map of ${this.shape.name} ${role}`;
      const fitted: [Affine, Affine][] = Array.from(
        { length: frag.regs },
        (
          _,
          r,
        ) => [laneAffine((l) => at(l, r, 0)[0], what), laneAffine((l) => at(l, r, 0)[1], what)],
      );
      const runs = ldsRuns(fitted, frag.regBits, p.contiguous, [warpOuter, tileOuter]);
      for (let t = 0; t < tiles; t++) {
        for (let kk = 0; kk < mp.kSteps; kk++) {
          for (const run of runs) {
            const [outer, kE] = fitted[run[0]!]!;
            instrs.push({
              tile: t,
              kk,
              regs: run,
              num: run.length,
              trans: false,
              recipe: toRecipe(
                { c: outer.c + t * tileOuter, terms: outer.terms },
                { c: kE.c + kk * this.shape.k, terms: kE.terms },
              ),
            });
          }
        }
      }
    } else {
      const trans = load === "ldmatrix.trans";
      // Each register is one 8x8 b16 matrix; find the (outer, k) origin of each.
      const originOf = (r: number): [number, number] => {
        let o = Infinity;
        let kk = Infinity;
        for (let l = 0; l < 32; l++) {
          for (let e = 0; e < frag.elemsPerReg; e++) {
            const [a, c] = at(l, r, e);
            o = Math.min(o, a);
            kk = Math.min(kk, c);
          }
        }
        return [o, kk];
      };
      // Memoised: the grouping below asks again for every tile and k-step.
      const origins: [number, number][] = [];
      const origin = (r: number): [number, number] => (origins[r] ??= originOf(r));
      // Validate: ldmatrix delivers exactly this fragment register.
      for (let r = 0; r < frag.regs; r++) {
        const [o0, k0] = origin(r);
        for (let l = 0; l < 32; l++) {
          for (let e = 0; e < frag.elemsPerReg; e++) {
            const [o, kEl] = at(l, r, e);
            // Position in the 8x8 b16 matrix as stored.
            const bitInRow = (kEl - k0) * bits; // along k
            if (!trans) {
              const storedRow = o - o0;
              const b16col = Math.floor(bitInRow / 16);
              const ok = storedRow === l >> 2 && Math.floor(b16col / 2) === (l & 3) &&
                (bitInRow % 32) === e * bits;
              if (!ok) {
                throw new Error(
                  `ldmatrix does not produce the ${this.shape.name} ${role} fragment`,
                );
              }
            } else {
              // Stored rows are k, columns outer (16-bit types only).
              const ok = bits === 16 && (kEl - k0) === 2 * (l & 3) + e && o - o0 === l >> 2;
              if (!ok) {
                throw new Error(
                  `ldmatrix.trans does not produce the ${this.shape.name} ${role} fragment`,
                );
              }
            }
          }
        }
      }
      // Group matrices into x4 (or x2/x1) instructions: all (tile, reg) of one k-step.
      for (let kk = 0; kk < mp.kSteps; kk++) {
        const mats: { tile: number; reg: number; o: number; k: number }[] = [];
        for (let t = 0; t < tiles; t++) {
          for (let r = 0; r < frag.regs; r++) {
            const [o0, k0] = origin(r);
            mats.push({ tile: t, reg: r, o: o0 + t * tileOuter, k: k0 + kk * this.shape.k });
          }
        }
        for (let i = 0; i < mats.length;) {
          const num = mats.length - i >= 4 ? 4 : mats.length - i >= 2 ? 2 : 1;
          const group = mats.slice(i, i + num);
          i += num;
          // Lane l addresses row (l & 7) of matrix (l >> 3) % num.
          const pick = (bit: 0 | 1, f: (m: { o: number; k: number }) => number): number => {
            const m0 = group[0]!;
            const m1 = group[bit === 0 ? 1 : 2];
            return m1 === undefined ? 0 : f(m1) - f(m0);
          };
          // Check affine in (lane8, lane16) bits.
          const g0 = group[0]!;
          const dO8 = num >= 2 ? pick(0, (m) => m.o) : 0;
          const dK8 = num >= 2 ? pick(0, (m) => m.k) : 0;
          const dO16 = num === 4 ? pick(1, (m) => m.o) : 0;
          const dK16 = num === 4 ? pick(1, (m) => m.k) : 0;
          if (num === 4) {
            const g3 = group[3]!;
            if (g3.o !== g0.o + dO8 + dO16 || g3.k !== g0.k + dK8 + dK16) {
              throw new Error("ldmatrix matrices are not affine in the lane bits");
            }
          }
          const outer: Affine = trans
            ? { c: g0.o, terms: [["lane8", dO8], ["lane16", dO16]] }
            : { c: g0.o, terms: [["lane7", 1], ["lane8", dO8], ["lane16", dO16]] };
          const kE: Affine = trans
            ? { c: g0.k, terms: [["lane7", 1], ["lane8", dK8], ["lane16", dK16]] }
            : { c: g0.k, terms: [["lane8", dK8], ["lane16", dK16]] };
          instrs.push({
            tile: -1,
            kk,
            regs: group.map((m) => m.tile * frag.regs + m.reg),
            num,
            trans,
            recipe: toRecipe(outer, kE),
          });
        }
      }
    }
    const bases = this.groupRecipes(p, instrs.map((i) => i.recipe), smem);
    return { instrs, bases, regBits: frag.regBits, regsPerTile: frag.regs, load };
  }

  loadFrags(f: FragPlan, buf: Reg[][], kk: number, readStage: Reg, p: OperandSmem): void {
    this.fragLoader(f, buf, kk, readStage, p)(() => true);
  }

  /**
   * The loads of k-step kk's fragments as a function that emits, each time
   * it is called, those not yet emitted whose tiles all pass `ready`.
   */
  fragLoader(
    f: FragPlan,
    buf: Reg[][],
    kk: number,
    readStage: Reg,
    p: OperandSmem,
  ): (ready: (tile: number) => boolean) => void {
    const tilesOf = (ins: FragInstr): number[] =>
      ins.tile >= 0 ? [ins.tile] : [...new Set(ins.regs.map((r) => Math.floor(r / f.regsPerTile)))];
    const pending = f.instrs.map((ins, i) => [ins, i] as const).filter(([ins]) => ins.kk === kk);
    let stageOff: Reg | null = null;
    const bases = new Map<Reg, Reg>();
    return (ready) => {
      for (let n = 0; n < pending.length;) {
        const [ins, i] = pending[n]!;
        if (!tilesOf(ins).every(ready)) {
          n++;
          continue;
        }
        pending.splice(n, 1);
        stageOff ??= this.bin("mul", "u32", readStage, imm(p.stageBytes));
        this.emitFragLoad(f, buf, ins, i, stageOff, bases);
      }
    };
  }

  emitFragLoad(
    f: FragPlan,
    buf: Reg[][],
    ins: FragInstr,
    i: number,
    stageOff: Reg,
    bases: Map<Reg, Reg>,
  ): void {
    const { base, offset } = f.bases[i]!;
    let addr = bases.get(base);
    if (addr === undefined) {
      addr = this.bin("add", "u32", base, stageOff);
      bases.set(base, addr);
    }
    if (f.load === "lds") {
      const dst = ins.regs.map((r) => buf[ins.tile]![r]!);
      this.b.emit({ op: "lds", width: f.regBits === 64 ? "b64" : "b32", dst, addr, offset });
    } else {
      const flat = buf.flat();
      this.b.emit({
        op: "ldmatrix",
        num: ins.num as 1 | 2 | 4,
        trans: ins.trans,
        dst: ins.regs.map((r) => flat[r]!),
        addr,
        offset,
      });
    }
  }

  // ---- MMAs ---------------------------------------------------------------------

  /**
   * The MMAs of k-step `kk` of a k-tile, rows of the warp tile in order and
   * columns serpentine (a B fragment is reused across the turn). `after(i,
   * j, rowDone)` runs after each plain tensor MMA (the interleaved fragment
   * loads hook in there).
   */
  mmas(
    acc: Reg[][][],
    aFr: Reg[][],
    bFr: Reg[][],
    kk: number,
    after?: (i: number, j: number, rowDone: boolean) => void,
  ): void {
    const b = this.b;
    const mode = this.k.math.mode;
    if (mode === "simt") {
      // One k of the outer product, cell by cell: c[x] += a[x / vB] * b[x % vB] (fma.rn.f32).
      for (let i = 0; i < acc.length; i++) {
        for (let j = 0; j < acc[i]!.length; j++) {
          const a = aFr[i]!;
          const bb = bFr[j]!;
          const vB = bb.length;
          acc[i]![j]!.forEach((r, x) => {
            b.emit({
              op: "mad",
              type: "f32",
              dst: r,
              a: a[Math.floor(x / vB)]!,
              b: bb[x % vB]!,
              c: r,
            });
          });
        }
      }
      return;
    }
    // 3xtf32: x = big + small. big is x with its low 13 mantissa bits cleared,
    // which is what a tf32 MMA reads of x itself: x is passed as big. small =
    // x - big (exact in f32) is passed raw too: the MMA reads its top 11
    // significant bits. Two instructions a register; rounding both with
    // cvt.rna.tf32 took five and measured 0.78 of the speed for an error 0.83
    // as large (bench/NOTES.md 41).
    const split = (regs: Reg[]): { big: Reg[]; small: Reg[] } => {
      const big: Reg[] = [];
      const small: Reg[] = [];
      for (const r of regs) {
        const f = b.reg("f32");
        b.emit({ op: "cvt", kind: "f32.b32", dst: f, src: r });
        const hi = this.bin("and", "b32", r, imm(0xffffe000));
        const hiF = b.reg("f32");
        b.emit({ op: "cvt", kind: "f32.b32", dst: hiF, src: hi });
        const rest = this.bin("sub", "f32", f, hiF);
        const lo = b.reg("b32");
        b.emit({ op: "cvt", kind: "b32.f32", dst: lo, src: rest });
        big.push(r);
        small.push(lo);
      }
      return { big, small };
    };
    const aS = mode === "3xtf32" ? aFr.map(split) : null;
    const bS = mode === "3xtf32" ? bFr.map(split) : null;
    for (let i = 0; i < acc.length; i++) {
      const row = acc[i]!;
      for (let jj = 0; jj < row.length; jj++) {
        const j = i % 2 === 0 ? jj : row.length - 1 - jj; // serpentine
        const c = row[j]!;
        if (aS !== null && bS !== null) {
          // The k-tile's products summed from zero (its k-steps' three MMAs
          // chained), then added to the accumulator with add.rn.f32: the
          // tensor cores' adders truncate, and chained onto the growing
          // accumulator that truncation biased the sum (relative error 2.9e-5
          // at K=4096 on the H200 against f32's 1.2e-6; bench/NOTES.md 41).
          const A = aS[i]!;
          const B = bS[j]!;
          const first = kk === 0;
          const t = first ? c.map(() => b.reg("f32")) : this.kTileSum[i]![j]!;
          (this.kTileSum[i] ??= [])[j] = t;
          let from = first ? this.zeroAcc : t;
          for (const [x, y] of [[A.small, B.big], [A.big, B.small], [A.big, B.big]] as const) {
            b.emit({ op: "mma", shape: this.shape.name, d: t, a: x, b: y, c: from });
            from = t;
          }
          if (kk === this.k.plan.mma!.kSteps - 1) {
            c.forEach((r, q) =>
              b.emit({ op: "bin", fn: "add", type: "f32", dst: r, a: r, b: t[q]! })
            );
          }
        } else {
          b.emit({ op: "mma", shape: this.shape.name, d: c, a: aFr[i]!, b: bFr[j]!, c });
          after?.(i, j, jj === row.length - 1);
        }
      }
    }
  }

  // ---- epilogue -----------------------------------------------------------------

  epilogue(
    acc: Reg[][][],
    m0: Reg,
    n0: Reg,
    M: Operand,
    N: Operand,
    bz: Reg,
    smem: Reg,
    before?: (i: number, j: number) => void,
  ): void {
    const k = this.k;
    const b = this.b;
    const wp = k.plan.warp!;
    const s = this.shape;
    const compute = k.epilogue.compute;
    const cType: RegType = compute;
    const d = tensorParam(k, k.problem.d.tensor);
    b.emit({ op: "comment", text: "epilogue" });
    // Warp origin.
    const wRow = this.bin(
      "add",
      "u32",
      m0,
      this.bin("mul", "u32", this.features.get("wm")!, imm(wp.warp.m)),
    );
    const wCol = this.bin(
      "add",
      "u32",
      n0,
      this.bin("mul", "u32", this.features.get("wn")!, imm(wp.warp.n)),
    );
    // Accumulator element positions: (row, col) = (g*ag + tig*at + dr, g*bg + tig*bt + dc).
    const what = `Accumulator map of ${s.name}`;
    const base0R = laneAffine((l) => s.c.coord(l, 0, 0)[0], what);
    const base0C = laneAffine((l) => s.c.coord(l, 0, 0)[1], what);
    const laneRow = this.bin("add", "u32", wRow, this.emitAffine({ c: 0, terms: base0R.terms }));
    const laneCol = this.bin("add", "u32", wCol, this.emitAffine({ c: 0, terms: base0C.terms }));
    // Elements of one tile's fragment, as (reg, elem, dRow, dCol), grouped into row runs.
    const elems: { reg: number; elem: number; dr: number; dc: number }[] = [];
    for (let r = 0; r < s.c.regs; r++) {
      for (let e = 0; e < s.c.elemsPerReg; e++) {
        const [rr, cc] = s.c.coord(0, r, e);
        elems.push({ reg: r, elem: e, dr: rr - base0R.c, dc: cc - base0C.c });
      }
    }
    // Pairs of column-adjacent elements (vectorised when D is row-major and aligned).
    const dRowMajor = k.problem.d.layout === "row";
    const dBytes = DTYPE_INFO[d.dtype].bits / 8;
    const pairOk = dRowMajor && d.align >= 2 && dBytes >= 2;
    const grouped = (pairs: boolean) => {
      const groups: (typeof elems)[] = [];
      const used = new Set<number>();
      elems.forEach((e, i) => {
        if (used.has(i)) return;
        used.add(i);
        const j = elems.findIndex((f, jj) => !used.has(jj) && f.dr === e.dr && f.dc === e.dc + 1);
        if (pairs && j >= 0 && e.dc % 2 === 0) {
          used.add(j);
          groups.push([e, elems[j]!]);
        } else groups.push([e]);
      });
      return groups;
    };
    const groups = grouped(pairOk);
    // D's base and leading dimension.
    const dBase = this.tensorBase(k.problem.d, d, bz);
    const ldD = dRowMajor ? N : M;
    // Epilogue tensors.
    const loads = new Map<string, EpiTensor>();
    // One load expression of each tensor (they differ only in where they sit).
    const nodes = new Map<string, Extract<EpilogueExpr, { op: "load" }>>();
    let readsMatrix = false;
    const collect = (e: EpilogueExpr): void => {
      switch (e.op) {
        case "load":
          readsMatrix ||= e.rows && e.cols;
          if (!nodes.has(e.tensor)) nodes.set(e.tensor, e);
          if (!loads.has(e.tensor)) {
            const t = tensorParam(k, e.tensor);
            const view = k.epilogue.views.find((v) => v.tensor === e.tensor) ?? null;
            const base = view !== null
              ? this.tensorBase(view, t, bz)
              : e.batched
              ? this.vectorBase(t, bz)
              : this.params.get(t.name)!;
            loads.set(e.tensor, { base, t, view });
          }
          return;
        case "unary":
        case "cast":
          return collect(e.x);
        case "binary":
          collect(e.a);
          return collect(e.b);
        case "clamp":
          collect(e.x);
          collect(e.lo);
          return collect(e.hi);
        case "acc":
        case "const":
        case "scalar":
          return;
        default:
          return unreachable(e);
      }
    };
    collect(k.epilogue.expr);

    // Epilogue loads (C, a bias, split-K's partial sums) cannot alias the
    // shared-memory stores, so ptxas would hoist every load of a chunk above
    // them: one accumulator-tile row a chunk bounds the registers they hold.
    // A bias along M alone is loaded once a row (cached) and takes whole
    // chunks: +2.5% at 4096³ (a bias along N lost 0.6% so: bench/NOTES.md 35).
    // An epilogue that reads a row-major matrix (C) aligned to 4 stages the
    // raw accumulators and is evaluated along D's rows, where neighbouring
    // lanes read C.
    const rowVectorsOnly = [...nodes.values()].every((x) => x.rows && !x.cols);
    const maxTiles = before !== undefined || !rowVectorsOnly ? 1 : acc.length;
    // Raw accumulators are staged in pairs whatever D's alignment.
    const stageGroups = readsMatrix ? grouped(true) : groups;
    // A matrix the raw path cannot read 4 at a time along a row (a
    // column-major C, or one aligned to less than 4) keeps a 16-bit D
    // direct: the fragment layout reads C in whole sectors (bench/NOTES.md
    // 37). An 8-bit D stays staged (shortcut: direct, one spilled).
    const rawReadable = dBytes !== 2 ||
      [...nodes.values()].every((x) =>
        !(x.rows && x.cols) || this.alongRow(loads.get(x.tensor)!, 4)
      );
    const stage = !rawReadable ? null : this.stagePlan(
      s,
      base0R,
      base0C,
      stageGroups,
      d,
      dBytes,
      pairOk,
      maxTiles,
      readsMatrix ? "raw" : "out",
      cType,
    );
    /** The epilogue of one accumulator value as D's type. */
    const output = (accV: Reg, load: (x: Extract<EpilogueExpr, { op: "load" }>) => Reg) =>
      this.convertOut(this.evalEpilogue(k.epilogue.expr, accV, cType, load), cType, d.dtype);
    // Accumulators of at most 128 registers (a 64x64 f32 warp tile) leave
    // room for loads issued ahead; more, for fewer (ptxas spilled).
    const roomy = acc.length * acc[0]!.length * s.c.regs <= 128;
    if (stage === null) {
      // Row by row of accumulator tiles, in batches of tiles whose loads hold
      // at most `budget` registers: every load of a batch is issued before
      // the batch's first store (ptxas keeps a load of C below an earlier
      // store to D, which may be the same memory: one load latency a batch,
      // not one an element), a pair of a row-major matrix aligned to 2 in
      // one load. Each element of C is read by the thread that writes that
      // element of D, before it writes it, so C may be D (in place).
      const nElems = groups.reduce((n, g) => n + g.length, 0);
      const perJ = [...nodes.values()].reduce(
        (n, x) => n + nElems * (DTYPE_INFO[loads.get(x.tensor)!.t.dtype].bits === 64 ? 2 : 1),
        0,
      );
      const budget = roomy ? AHEAD_REGS : AHEAD_REGS / 2;
      // Tiles a batch (along a row of tiles, or a column for column-major D).
      const jBatch = perJ === 0 ? Infinity : Math.max(1, Math.floor(budget / perJ));
      // Shortcut: split-K keeps each group's loads right before its store
      // (loads ahead spilled, with its own loads of the partial sums;
      // tests/ptxas_sweep.ts).
      const ahead = nodes.size > 0 && before === undefined;
      const issue = (i: number, j: number, grp: (typeof groups)[number]) => {
        const e0 = grp[0]!;
        const row = this.bin("add", "u32", laneRow, imm(i * s.m + e0.dr));
        const col = this.bin("add", "u32", laneCol, imm(j * s.n + e0.dc));
        const rowOk = this.setp("lt", "u32", row, M);
        const cols: Reg[] = [];
        const oks: Reg[] = [];
        grp.forEach((_, q) => {
          // The second element of a pair needs its own column and bounds
          // predicate only for the epilogue's loads (the pair is stored
          // under the first one's).
          const own = q === 0 || loads.size > 0;
          const cq = own && q > 0 ? this.bin("add", "u32", col, imm(q)) : col;
          cols.push(cq);
          oks.push(
            own ? this.bin("and", "pred", rowOk, this.setp("lt", "u32", cq, N)) : oks[0]!,
          );
        });
        const got = new Map<string, () => Reg[]>();
        for (const x of nodes.values()) {
          const info = loads.get(x.tensor)!;
          // (Pair loads spilled tf32's 80x64 warp tiles: register pairs.)
          if (x.rows && x.cols && grp.length === 2 && roomy && this.alongRow(info, 2)) {
            got.set(x.tensor, this.loadAhead(x, info, row, col, oks[0]!, 2, cType));
            continue;
          }
          const one = grp.map((_, q) => this.loadAhead(x, info, row, cols[q]!, oks[q]!, 1, cType));
          got.set(x.tensor, () => one.map((f) => f()[0]!));
        }
        return { row, col, oks, got };
      };
      // Batches of (i, j) tiles: row-major D by rows of tiles, `jBatch`
      // tiles at a time; column-major D by columns of tiles, as many at a
      // time, each column of D's elements addressed once (its address plus
      // the row's offset: a column of the warp tile is contiguous in D),
      // where the address of every element spilled 52 kernels
      // (tests/ptxas_sweep.ts).
      const batches: [number, number][][] = [];
      if (dRowMajor) {
        for (let i = 0; i < acc.length; i++) {
          for (let j0 = 0; j0 < acc[i]!.length; j0 += jBatch) {
            const n = Math.min(acc[i]!.length, j0 + jBatch) - j0;
            batches.push(Array.from({ length: n }, (_, jj) => [i, j0 + jj] as [number, number]));
          }
        }
      } else {
        for (let j = 0; j < acc[0]!.length; j++) {
          for (let i0 = 0; i0 < acc.length; i0 += jBatch) {
            const n = Math.min(acc.length, i0 + jBatch) - i0;
            batches.push(Array.from({ length: n }, (_, ii) => [i0 + ii, j] as [number, number]));
          }
        }
      }
      const colAddr = new Map<string, Reg>();
      const address = (
        i: number,
        j: number,
        e0: { dr: number; dc: number },
        p: { row: Reg; col: Reg },
      ) => {
        if (dRowMajor) {
          return { addr: this.globalAddr(dBase, p.row, p.col, ldD, true, dBytes), off: 0 };
        }
        const key = `${j}:${e0.dc}`;
        let a = colAddr.get(key);
        if (a === undefined) {
          a = this.globalAddr(dBase, laneRow, p.col, ldD, false, dBytes);
          colAddr.set(key, a);
        }
        return { addr: a, off: (i * s.m + e0.dr) * dBytes };
      };
      for (const batch of batches) {
        const pos = !ahead ? null : batch.map(([i, j]) => groups.map((grp) => issue(i, j, grp)));
        batch.forEach(([i, j], t) => {
          const regs = acc[i]![j]!;
          before?.(i, j);
          groups.forEach((grp, gi) => {
            const p = pos?.[t]?.[gi] ?? issue(i, j, grp);
            const outs = grp.map((e, q) =>
              output(this.accValue(regs[e.reg]!, e.elem, cType), (x) => p.got.get(x.tensor)!()[q]!)
            );
            const { addr, off } = address(i, j, grp[0]!, p);
            this.store("stg", addr, off, outs, d.dtype, p.oks[0]!);
          });
        });
      }
      return;
    }

    // Staged through shared memory (the pipeline's, free once every warp is
    // past its last fragment load): each warp writes `stage.tiles` rows of
    // accumulator tiles in their fragment layout into its own padded region,
    // then reads them back row by row in `stage.vecBytes` vectors, so that
    // lanes next to each other store consecutive bytes of a row of D.
    const tid = this.features.get("tid")!;
    const warpId = this.bin("shr", "u32", tid, imm(5));
    const lane = this.bin("and", "u32", tid, imm(31));
    const region = this.bin(
      "add",
      "u32",
      smem,
      this.mulImm(warpId, stage.regionBytes),
    );
    const writeOff = this.emitAffine({
      c: 0,
      terms: (["g", "tig"] as const).map((f) => [
        f,
        termOf(base0R, f) * stage.stride + termOf(base0C, f) * stage.elemBytes,
      ]),
    });
    const writeBase = this.bin("add", "u32", region, writeOff);
    // Lane l reads vector q * 32 + l of the chunk: row `q * 32 / perRow + l / perRow`,
    // byte `(l % perRow) * vecBytes` (perRow divides 32).
    const readRow = this.divRem("div", lane, stage.perRow);
    const readVec = this.divRem("rem", lane, stage.perRow);
    const readOff = this.bin(
      "add",
      "u32",
      this.mulImm(readRow, stage.stride),
      this.mulImm(readVec, stage.vecBytes),
    );
    const readBase = this.bin("add", "u32", region, readOff);
    const readCol = this.bin(
      "add",
      "u32",
      wCol,
      this.mulImm(readVec, stage.vecBytes / stage.elemBytes),
    );
    const readRow0 = this.bin("add", "u32", wRow, readRow);
    const raw = stage.mode === "raw";
    const vecWidth: MemWidth = stage.vecBytes === 2 ? "b16" : "b32";
    const vecRegs = Math.max(1, stage.vecBytes / 4);
    const vecType: RegType = raw ? cType : vecWidth;
    const mTiles = acc.length;
    // A row or column of D (and whether it is inside D) at an offset from
    // the lane's first element of an accumulator tile in the fragment layout
    // ("frag"), or from its first read-back vector along D's rows ("rows").
    const lineCache = new Map<string, { at: Reg; ok: Reg }>();
    const line = (from: "frag" | "rows", rows: boolean, off: number) => {
      const key = `${from}${rows ? "r" : "c"}${off}`;
      let l = lineCache.get(key);
      if (l === undefined) {
        const base = from === "frag" ? (rows ? laneRow : laneCol) : (rows ? readRow0 : readCol);
        const at = off === 0 ? base : this.bin("add", "u32", base, imm(off));
        l = { at, ok: this.setp("lt", "u32", at, rows ? M : N) };
        lineCache.set(key, l);
      }
      return l;
    };
    const readColOk = line("rows", false, 0).ok;
    // A vector the epilogue reads (a bias per row or column): each row's or
    // column's element loaded once, under that row's or column's own bounds
    // predicate, and reused by every element that reads it. One load per
    // element, hoisted by ptxas above the shared stores, spilled.
    const from = raw ? "rows" : "frag";
    const loaded = new Map<string, Reg>();
    const vectorLoad = (
      e: Extract<EpilogueExpr, { op: "load" }>,
      rowOff: number,
      colOff: number,
    ) => {
      const key = `${e.tensor}:${e.rows ? `r${rowOff}` : e.cols ? `c${colOff}` : "0"}`;
      let v = loaded.get(key);
      if (v === undefined) {
        const at = e.rows ? line(from, true, rowOff) : e.cols ? line(from, false, colOff) : null;
        // A vector load reads only its row's or column's index (passed as
        // both); an index-0 load reads neither and needs no guard: element 0
        // of the tensor exists.
        const idx = at?.at ?? tid;
        v = this.loadElem(e, loads.get(e.tensor)!, idx, idx, at?.ok ?? null, cType);
        loaded.set(key, v);
      }
      return v;
    };
    b.emit({
      op: "comment",
      text:
        `staged through shared memory (${
          raw ? "raw accumulators" : "D's elements"
        }): ${stage.tiles} of ${mTiles} accumulator-tile rows a chunk, ` +
        `${stage.regionBytes} bytes a warp, rows of ${stage.stride} bytes, ${stage.vecBytes}-byte reads`,
    });
    // The chunks: `stage.tiles` accumulator-tile rows each.
    const chunks: [number, number][] = [];
    for (let i0 = 0; i0 < mTiles; i0 += stage.tiles) {
      chunks.push([i0, Math.min(mTiles, i0 + stage.tiles)]);
    }
    const perChunk = ([i0, iEnd]: [number, number]) => ((iEnd - i0) * s.m * stage.perRow) / 32;
    /** The warp-tile row of a lane's read-back vector q of the chunk from
     * accumulator-tile row i0, that row of D, and the vector's bounds predicate. */
    const readCache = new Map<string, { gRow: number; row: Reg; ok: Reg }>();
    const readPos = (i0: number, q: number) => {
      const gRow = i0 * s.m + (q * 32) / stage.perRow;
      let p = readCache.get(`${gRow}`);
      if (p === undefined) {
        const { at: row, ok: rowOk } = line("rows", true, gRow);
        p = { gRow, row, ok: this.bin("and", "pred", rowOk, readColOk) };
        readCache.set(`${gRow}`, p);
      }
      return p;
    };
    // Raw: the loads of the matrices the epilogue reads (C) for a chunk's
    // read-back, all issued before the chunk's first store to D (ptxas keeps
    // a load of C below an earlier store to D: they may be the same memory),
    // and where registers allow a chunk ahead: after the first chunk's
    // barrier the loads of the first two chunks, after each next barrier the
    // next chunk's. (Issuing the first chunk's before the staging spilled.)
    // Each element of C is read by the lane that writes that element of D,
    // before it writes it, so C may be D (in place). A row-major matrix
    // aligned to 4: 4 elements a load (any other, under an 8-bit D: one an
    // element, at its use; shortcut).
    const matrices = [...nodes.values()].filter((x) =>
      x.rows && x.cols && this.alongRow(loads.get(x.tensor)!, 4)
    );
    const issueChunk = (c: [number, number]) => {
      const got = new Map<string, () => Reg[]>();
      for (let q = 0; q < perChunk(c); q++) {
        const { row, ok } = readPos(c[0], q);
        for (const x of matrices) {
          const info = loads.get(x.tensor)!;
          got.set(`${q}:${x.tensor}`, this.loadAhead(x, info, row, readCol, ok, 4, cType));
        }
      }
      return got;
    };
    const loadsC = raw && matrices.length > 0;
    // A chunk ahead only where the accumulators leave room for a second
    // chunk's loads (at most 128 registers: a 64x64 f32 warp tile) and no
    // split-K sums are added; else each chunk's loads right after its
    // barrier (ptxas spilled 80x64 warp tiles and split-K kernels).
    const aheadOk = roomy && before === undefined;
    let ahead: Map<string, () => Reg[]> | null = null;
    // Every warp is past the main loop's last shared-memory read (and, with
    // split-K, past reading the broadcast flag) before any warp writes.
    b.emit({ op: "bar" });
    chunks.forEach((c, ci) => {
      const [i0, iEnd] = c;
      for (let i = i0; i < iEnd; i++) {
        for (let j = 0; j < acc[i]!.length; j++) {
          const regs = acc[i]![j]!;
          before?.(i, j);
          for (const grp of stageGroups) {
            const e0 = grp[0]!;
            const outs = grp.map((e, q) => {
              const accV = this.accValue(regs[e.reg]!, e.elem, cType);
              if (raw) return accV;
              return output(accV, (x) => vectorLoad(x, i * s.m + e0.dr, j * s.n + e0.dc + q));
            });
            const off = ((i - i0) * s.m + e0.dr) * stage.stride +
              (j * s.n + e0.dc) * stage.elemBytes;
            this.store("sts", writeBase, off, outs, raw ? cType : d.dtype, null);
          }
        }
      }
      b.emit({ op: "bar" });
      const got = loadsC && (ci === 0 || !aheadOk) ? issueChunk(c) : ahead;
      ahead = loadsC && aheadOk && ci + 1 < chunks.length ? issueChunk(chunks[ci + 1]!) : null;
      for (let q = 0; q < perChunk(c); q++) {
        const dRow = (q * 32) / stage.perRow; // within the chunk
        const regsQ = Array.from({ length: vecRegs }, () => b.reg(vecType));
        b.emit({
          op: "lds",
          width: vecWidth,
          dst: regsQ,
          addr: readBase,
          offset: dRow * stage.stride,
        });
        const { gRow, row, ok } = readPos(i0, q);
        const addr = this.globalAddr(dBase, row, readCol, ldD, true, dBytes);
        // Raw: the epilogue of the 4 elements along the row (D's N is a
        // multiple of 4, so one predicate guards them all), packed into one
        // store of 8 (16-bit D) or 4 bytes (8-bit D).
        const src = !raw ? regsQ : this.packOut(
          regsQ.map((accV, e) =>
            output(
              accV,
              (x) => {
                if (!(x.rows && x.cols)) return vectorLoad(x, gRow, e);
                const four = got?.get(`${q}:${x.tensor}`);
                if (four !== undefined) return four()[e]!;
                const col = line("rows", false, e).at;
                return this.loadElem(x, loads.get(x.tensor)!, row, col, ok, cType);
              },
            )
          ),
          d.dtype,
        );
        b.emit({
          op: "stg",
          width: raw ? "b32" : vecWidth,
          src,
          addr,
          offset: 0,
          guard: { pred: ok, negate: false },
        });
      }
      if (iEnd < mTiles) b.emit({ op: "bar" });
    });
  }

  /** Two 16-bit values in one 32-bit register, `lo` in the low half. */
  pack(lo: Reg, hi: Reg): Reg {
    const w = this.b.reg("b32");
    this.b.emit({ op: "pack", dst: w, lo, hi });
    return w;
  }

  /** Packs 4 consecutive elements of an 8- or 16-bit D type into 32-bit words, element 0 lowest. */
  packOut(vs: Reg[], t: Dtype): Reg[] {
    if (t === "f16" || t === "bf16") return [this.pack(vs[0]!, vs[1]!), this.pack(vs[2]!, vs[3]!)];
    // s8/u8: clamped s32 values; their low bytes, shifted into place.
    let w: Reg | null = null;
    vs.forEach((v, i) => {
      const byte = this.bin("and", "s32", v, imm(255));
      const at = i === 0 ? byte : this.bin("shl", "s32", byte, imm(8 * i));
      w = w === null ? at : this.bin("or", "s32", w, at);
    });
    return [w!];
  }

  /** D's element (row, col) as a global address. */
  globalAddr(base: Reg, row: Reg, col: Reg, ld: Operand, rowMajor: boolean, bytes: number): Reg {
    const line = rowMajor ? row : col;
    const inLine = rowMajor ? col : row;
    const lineOff = this.mulU64(line, b64Op(this, ld));
    const idx = this.bin("add", "u64", lineOff, b64(this, inLine));
    return this.bin("add", "u64", base, bytesOfElems(this, idx, bytes * 8));
  }

  /**
   * Whether and how the epilogue stages D through shared memory (null: each
   * thread stores its accumulator elements straight from registers).
   *
   * Staged when D is row-major with 8- or 16-bit elements, the MMA is a
   * tensor-core one, and D's alignment allows vectors wider than the direct
   * path's stores (a pair of elements, or one); the vector is at most 16
   * bytes and one warp-tile row.
   * A chunk is as many accumulator-tile rows (at most `maxTiles`) as the
   * regions (one a warp) fit in the pipeline's shared memory, balanced over
   * the chunks: the epilogue never asks for more shared memory than the main
   * loop (shortcut: where one row does not fit, it stays direct). The
   * padding of a region's rows is the smallest multiple of
   * 16 bytes for which the fragment writes and the vector reads need the
   * fewest shared-memory wavefronts: conflict-free for warp-tile rows of 128
   * bytes or more (every default tile); narrower rows have no padding that
   * suits both sides, and their reads take up to twice the ideal (an XOR
   * swizzle would fix it; shortcut, the epilogue is a small part of a tile's
   * time). Column-major D stays direct (shortcut).
   */
  stagePlan(
    s: MmaShape,
    rowAff: Affine,
    colAff: Affine,
    groups: readonly (readonly { dr: number; dc: number }[])[],
    d: TensorParam,
    dBytes: number,
    pairOk: boolean,
    maxTiles: number,
    mode: "out" | "raw",
    cType: "f32" | "f64" | "s32",
  ): StagePlan | null {
    const k = this.k;
    if (k.plan.mma!.shape.startsWith(SIMT_PREFIX) || k.problem.d.layout !== "row") return null;
    // Only where the direct path's stores leave 32-byte sectors part-filled:
    // 4 lanes write a row's 8 columns, so 8- and 16-bit outputs (4 or 2
    // bytes a lane). f32/s32 pairs (8 bytes a lane) already fill sectors;
    // staging them measured -1% at tf32 8192³ and +2% at 4096³ (bench/NOTES.md 31).
    if (dBytes !== 1 && dBytes !== 2) return null;
    const wp = k.plan.warp!;
    // Raw: 4 accumulators of 4 bytes a lane, stored as 4 elements of D (D's
    // alignment at least 4).
    if (mode === "raw" && (cType === "f64" || d.align < 4)) return null;
    const elemBytes = mode === "raw" ? 4 : dBytes;
    const rowBytes = wp.warp.n * elemBytes;
    let vecBytes = 16;
    while (
      vecBytes > 1 &&
      (mode === "out" && vecBytes > d.align * dBytes || rowBytes % vecBytes !== 0)
    ) {
      vecBytes /= 2;
    }
    if (mode === "raw" ? vecBytes !== 16 : vecBytes <= (pairOk ? 2 : 1) * dBytes) return null;
    const perRow = rowBytes / vecBytes;
    // Every lane reads the same number of vectors from each accumulator-tile
    // row, the same column of each (rows of at most 32 vectors: 512 bytes).
    if (32 % perRow !== 0 || (s.m * perRow) % 32 !== 0) return null;
    const mTiles = wp.warp.m / s.m;
    const warps = this.threads / 32;
    const avail = k.plan.pipeline!.smemBytes;
    const nTiles = wp.warp.n / s.n;
    // Lane l's fragment position relative to lane 0's (affine in g = l / 4, tig = l % 4).
    const lanes = (a: Affine) =>
      Array.from({ length: 32 }, (_, l) => termOf(a, "g") * (l >> 2) + termOf(a, "tig") * (l & 3));
    const laneRow = lanes(rowAff);
    const laneCol = lanes(colAff);
    const addrs = new Array<number>(32);
    /** Excess wavefronts of one tile row's writes and reads, or more than `limit`. */
    const excess = (stride: number, limit: number): number => {
      const t: WavefrontTally = { wavefronts: 0, ideal: 0 };
      for (let j = 0; j < nTiles && t.wavefronts - t.ideal <= limit; j++) {
        for (const grp of groups) {
          const e0 = grp[0]!;
          for (let l = 0; l < 32; l++) {
            addrs[l] = (laneRow[l]! + e0.dr) * stride +
              (laneCol[l]! + j * s.n + e0.dc) * elemBytes;
          }
          tallyWavefronts(addrs, 32, grp.length * elemBytes, t);
        }
      }
      for (let q = 0; q < (s.m * perRow) / 32; q++) {
        for (let l = 0; l < 32; l++) {
          const v = q * 32 + l;
          addrs[l] = Math.floor(v / perRow) * stride + (v % perRow) * vecBytes;
        }
        tallyWavefronts(addrs, 32, vecBytes, t);
      }
      return t.wavefronts - t.ideal;
    };
    // The pad with the fewest excess wavefronts (the pattern repeats every
    // accumulator-tile row), then as many tile rows a chunk as fit, balanced
    // over the chunks (5 rows that fit 3 at a time: 3 + 2).
    let best: { stride: number; cost: number } | null = null;
    for (let pad = 0; pad <= 128; pad += 16) {
      const stride = rowBytes + pad;
      if (warps * s.m * stride > avail) break;
      const cost = excess(stride, best?.cost ?? Infinity);
      if (best === null || cost < best.cost) best = { stride, cost };
      if (cost === 0) break;
    }
    if (best === null) return null;
    const fit = Math.min(maxTiles, mTiles, Math.floor(avail / (warps * s.m * best.stride)));
    const tiles = Math.ceil(mTiles / Math.ceil(mTiles / fit));
    return {
      tiles,
      stride: best.stride,
      regionBytes: tiles * s.m * best.stride,
      vecBytes,
      perRow,
      mode,
      elemBytes,
    };
  }

  /**
   * L2 prefetches of the block's tile of every matrix the epilogue reads (C),
   * as a function that emits them, or null when it reads none. The tile is
   * cut into runs along the matrix's contiguous dimension (tile rows of a
   * row-major C) and each run into 128-byte lines, plus the line of its last
   * byte (a run need not start on a line); the block's threads take the
   * pieces in turn, each under the bounds guard of the piece's first element,
   * so no address lies outside C.
   */
  epiPrefetch(m0: Reg, n0: Reg, M: Operand, N: Operand, bz: Reg): (() => void) | null {
    const k = this.k;
    const views = k.epilogue.views;
    if (views.length === 0) return null;
    const tb = k.plan.tile!.threadblock;
    const b = this.b;
    return () => {
      b.emit({ op: "comment", text: "L2 prefetch of the epilogue's matrices" });
      const tid = this.features.get("tid")!;
      for (const v of views) {
        const t = tensorParam(k, v.tensor);
        const bits = DTYPE_INFO[t.dtype].bits;
        const rowMajor = v.layout === "row";
        const runs = rowMajor ? tb.m : tb.n;
        const runElems = rowMajor ? tb.n : tb.m;
        const runBytes = Math.ceil((runElems * bits) / 8);
        const lines = Math.ceil(runBytes / L2_LINE);
        const pieces = lines + 1;
        const total = runs * pieces;
        const base = this.tensorBase(v, t, bz);
        for (let i = 0; i * this.threads < total; i++) {
          const idx = i === 0 ? tid : this.bin("add", "u32", tid, imm(i * this.threads));
          const run = this.divRem("div", idx, pieces);
          const piece = this.divRem("rem", idx, pieces);
          // The piece's first byte in its run: line `piece`, the last piece at the run's end.
          const byte = this.bin(
            "min",
            "u32",
            this.mulImm(piece, L2_LINE),
            imm(runBytes - 1),
          );
          const elem = this.bin("shr", "u32", this.mulImm(byte, 8), imm(log2(bits)));
          const row = this.bin("add", "u32", m0, rowMajor ? run : elem);
          const col = this.bin("add", "u32", n0, rowMajor ? elem : run);
          let ok = this.bin(
            "and",
            "pred",
            this.setp("lt", "u32", row, M),
            this.setp("lt", "u32", col, N),
          );
          if ((i + 1) * this.threads > total) {
            ok = this.bin("and", "pred", ok, this.setp("lt", "u32", idx, imm(total)));
          }
          const elemIdx = this.globalAddr(base, row, col, rowMajor ? N : M, rowMajor, bits / 8);
          b.emit({ op: "prefetch", addr: elemIdx, guard: { pred: ok, negate: false } });
        }
      }
    };
  }

  /** Base address of a matrix tensor with the batch offset applied. */
  tensorBase(view: MatrixView, t: TensorParam, bz: Reg): Reg {
    const base = this.params.get(t.name)!;
    if (!view.batched) return base;
    return this.vectorBase(t, bz);
  }

  /** Base of a batched tensor (any rank): base + bz * (elements per batch) * bytes. */
  vectorBase(t: TensorParam, bz: Reg): Reg {
    const base = this.params.get(t.name)!;
    let stride: Operand = imm(1);
    for (const d of t.dims.slice(1)) {
      const v: Operand = d.kind === "const" ? imm(d.value) : b64(this, this.params.get(d.name)!);
      stride = stride.kind === "imm" && v.kind === "imm"
        ? imm(stride.value * v.value)
        : this.bin("mul", "u64", stride, v);
    }
    const bytes = bytesOfElems(this, stride, DTYPE_INFO[t.dtype].bits);
    const off = this.bin("mul", "u64", b64(this, bz), bytes);
    return this.bin("add", "u64", base, off);
  }

  /** An accumulator element as the compute type. */
  accValue(r: Reg, elem: number, c: "f32" | "f64" | "s32"): Reg {
    const b = this.b;
    const at = this.shape.cType;
    if (at === "f16") {
      const lo = b.reg("b16");
      const hi = b.reg("b16");
      b.emit({ op: "unpack", lo, hi, src: r });
      const f = b.reg("f32");
      b.emit({ op: "cvt", kind: "f32.f16", dst: f, src: elem === 0 ? lo : hi });
      return f;
    }
    if (at === "f32" && c === "f32") return r;
    if (at === "f64" && c === "f64") return r;
    if (at === "s32" && c === "s32") return r;
    if (at === "s32" && c === "f32") {
      const f = b.reg("f32");
      b.emit({ op: "cvt", kind: "f32.s32", dst: f, src: r });
      return f;
    }
    if (at === "s32" && c === "f64") {
      const f = b.reg("f64");
      b.emit({ op: "cvt", kind: "f64.s32", dst: f, src: r });
      return f;
    }
    throw new Error(`No conversion from accumulator ${at} to compute ${c}`);
  }

  /** Converts a value of type `from` into the compute type. */
  toCompute(v: Reg, from: RegType, c: "f32" | "f64" | "s32"): Reg {
    if (from === c) return v;
    const b = this.b;
    const dst = b.reg(c);
    const kinds: Record<
      string,
      "f64.f32" | "f32.f64" | "f32.s32" | "f64.s32" | "s32.f32" | "s32.f64"
    > = {
      "f32>f64": "f64.f32",
      "f64>f32": "f32.f64",
      "s32>f32": "f32.s32",
      "s32>f64": "f64.s32",
      "f32>s32": "s32.f32",
      "f64>s32": "s32.f64",
    };
    const kind = kinds[`${from}>${c}`];
    if (kind === undefined) throw new Error(`No conversion ${from} -> ${c}`);
    b.emit({ op: "cvt", kind, dst, src: v });
    return dst;
  }

  /** The epilogue expression of one accumulator value, in the compute type;
   * `load` gives the value of each tensor element it reads. Functions emit
   * their instructions by the table's builders (ir/epilogue.ts). */
  evalEpilogue(
    e: EpilogueExpr,
    accV: Reg,
    c: "f32" | "f64" | "s32",
    load: (e: Extract<EpilogueExpr, { op: "load" }>) => Reg,
  ): Reg {
    const ev = (x: EpilogueExpr) => this.evalEpilogue(x, accV, c, load);
    const constant = (v: number): Reg => this.mov(c, imm(v));
    switch (e.op) {
      case "acc":
        return accV;
      case "const":
        return constant(e.value);
      case "scalar": {
        const r = this.params.get(e.name)!;
        return this.toCompute(r, r.type, c);
      }
      case "load":
        return load(e);
      case "unary":
      case "binary":
      case "clamp": {
        const args = argsOf(e).map((x) => () => ev(x));
        return fnOf(e)!.row.build(this.epilogueEmitter(), args, c);
      }
      case "cast":
        return this.castTo(ev(e.x), c, e.to);
      default:
        return unreachable(e);
    }
  }

  /** The kernel-IR emitter the epilogue table's builders emit through. */
  epilogueEmitter(): EpilogueEmitter<Reg> {
    const b = this.b;
    const op = (v: Reg | number): Operand => (typeof v === "number" ? imm(v) : v);
    return {
      bin: (fn, t, x, y) => this.bin(fn, t, op(x), op(y)),
      un: (fn, t, x) => {
        const dst = b.reg(t);
        b.emit({ op: "un", fn, type: t, dst, src: x });
        return dst;
      },
      mad: (x, y, z) => {
        const dst = b.reg("f32");
        b.emit({ op: "mad", type: "f32", dst, a: op(x), b: op(y), c: op(z) });
        return dst;
      },
      convert: (x, from, to) => this.toCompute(x, from, to),
    };
  }

  /** Rounds a compute value to `to` and back (a cast inside the epilogue). */
  castTo(x: Reg, c: "f32" | "f64" | "s32", to: Dtype): Reg {
    const b = this.b;
    if (to === c) return x;
    if (to === "f16" || to === "bf16") {
      const xf = c === "f32" ? x : this.toCompute(x, c, "f32");
      const h = b.reg("b16");
      b.emit({ op: "cvt", kind: to === "f16" ? "f16.f32" : "bf16.f32", dst: h, src: xf });
      const back = b.reg("f32");
      const widen: Op = {
        op: "cvt",
        kind: to === "f16" ? "f32.f16" : "f32.bf16",
        dst: back,
        src: h,
      };
      b.emit(widen);
      if (c === "f32") this.narrowed.set(back, { to, h, widen });
      return c === "f32" ? back : this.toCompute(back, "f32", c);
    }
    if (to === "f32") {
      const xf = this.toCompute(x, c, "f32");
      return this.toCompute(xf, "f32", c);
    }
    if (to === "f64") return x; // f64 holds every f32 and s32 value exactly
    // Integer casts: round to s32 (saturating), then clamp to the type's range.
    const xi = c === "s32" ? x : this.toCompute(x, c, "s32");
    const [lo, hi] = to === "s8" ? [-128, 127] : to === "u8" ? [0, 255] : [null, null];
    const clamped = lo === null
      ? xi
      : this.bin("min", "s32", this.bin("max", "s32", xi, imm(lo)), imm(hi!));
    return c === "s32" ? clamped : this.toCompute(clamped, "s32", c);
  }

  /** A compute value converted to D's type, in the register type the store takes. */
  convertOut(v: Reg, c: "f32" | "f64" | "s32", out: Dtype): Reg {
    const b = this.b;
    switch (out) {
      case "f32":
        return this.toCompute(v, c, "f32");
      case "f64":
        return this.toCompute(v, c, "f64");
      case "f16":
      case "bf16": {
        // `out(x)` of a value that is already `cvt.f32(h)` with h of type
        // `out`: h itself (the round trip is exact), as in D = f16(A * B).
        // The widening is then unread (v was the expression's value): taken back.
        const n = c === "f32" ? this.narrowed.get(v) : undefined;
        if (n !== undefined && n.to === out) {
          this.b.retract(n.widen);
          this.narrowed.delete(v);
          return n.h;
        }
        const f = this.toCompute(v, c, "f32");
        const h = b.reg("b16");
        b.emit({ op: "cvt", kind: out === "f16" ? "f16.f32" : "bf16.f32", dst: h, src: f });
        return h;
      }
      case "s32":
        return this.toCompute(v, c, "s32");
      case "s8":
      case "u8": {
        const i = this.toCompute(v, c, "s32");
        const [lo, hi] = out === "s8" ? [-128, 127] : [0, 255];
        return this.bin("min", "s32", this.bin("max", "s32", i, imm(lo)), imm(hi));
      }
      default:
        throw new Error(`Unsupported output type "${out}"`);
    }
  }

  /**
   * Stores one element of D's type, or a pair of column-adjacent ones (packed
   * into 32 bits for 16-bit types), to global (`stg`, guarded by `ok`) or
   * shared memory (`sts`).
   */
  store(op: "stg" | "sts", addr: Reg, offset: number, vs: Reg[], t: Dtype, ok: Reg | null): void {
    const b = this.b;
    let src = vs;
    let width: MemWidth = t === "f64"
      ? "b64"
      : t === "f16" || t === "bf16"
      ? "b16"
      : t === "s8" || t === "u8"
      ? "b8"
      : "b32";
    if (vs.length === 2 && width === "b16") {
      src = [this.pack(vs[0]!, vs[1]!)];
      width = "b32";
    }
    const guard = ok === null ? {} : { guard: { pred: ok, negate: false } };
    b.emit({ op, width, src, addr, offset, ...guard });
  }

  /**
   * Issues the load of `n` consecutive elements (1, 2 or 4) along a row of an
   * epilogue tensor at (row, col), guarded by `ok` (0 where it is false), and
   * returns a function that converts them to compute values. The conversions
   * are emitted at its first call, where the values are used: an epilogue
   * issues the loads of a batch of elements first (see `epilogue`), and ptxas
   * cannot move a load of C above a store to D (they may be the same memory).
   * n > 1 needs {@link alongRow}.
   */
  loadAhead(
    e: Extract<EpilogueExpr, { op: "load" }>,
    info: EpiTensor,
    row: Reg,
    col: Reg,
    ok: Reg | null,
    n: 1 | 2 | 4,
    c: "f32" | "f64" | "s32",
  ): () => Reg[] {
    const b = this.b;
    const t = info.t;
    const bits = DTYPE_INFO[t.dtype].bits;
    const addr = this.elemAddr(e, info, row, col);
    const guard = ok === null ? {} : { guard: { pred: ok, negate: false } };
    // 16-bit elements in pairs, one 32-bit word each; else one register an element.
    const paired = bits === 16 && n > 1;
    const width: MemWidth = paired
      ? "b32"
      : bits === 64
      ? "b64"
      : bits === 16
      ? "b16"
      : bits === 8
      ? "b8"
      : "b32";
    const rt: RegType = paired
      ? "b32"
      : bits === 64
      ? "f64"
      : bits === 16
      ? "b16"
      : bits === 8
      ? "u32"
      : t.dtype === "f32"
      ? "f32"
      : "s32";
    const ws = Array.from({ length: paired ? n / 2 : n }, () => this.mov(rt, imm(0)));
    b.emit({ op: "ldg", width, dst: ws, addr, offset: 0, ...guard });
    let vals: Reg[] | null = null;
    return () => {
      if (vals !== null) return vals;
      const vs = !paired ? ws : ws.flatMap((w) => {
        const lo = b.reg("b16");
        const hi = b.reg("b16");
        b.emit({ op: "unpack", lo, hi, src: w });
        return [lo, hi];
      });
      vals = vs.map((v) => this.loadedToCompute(v, t.dtype, c));
      return vals;
    };
  }

  /** One element of an epilogue tensor as a compute value, loaded where it is used. */
  loadElem(
    e: Extract<EpilogueExpr, { op: "load" }>,
    info: EpiTensor,
    row: Reg,
    col: Reg,
    ok: Reg | null,
    c: "f32" | "f64" | "s32",
  ): Reg {
    return this.loadAhead(e, info, row, col, ok, 1, c)()[0]!;
  }

  /** Whether {@link loadAhead} can load `n` elements of a row of this epilogue
   * tensor at once: a row-major matrix aligned to n elements or more, 16- or
   * 32-bit (64-bit: pairs). */
  alongRow(info: EpiTensor, n: number): boolean {
    const bits = DTYPE_INFO[info.t.dtype].bits;
    return info.view?.layout === "row" && info.t.align >= n &&
      (bits === 16 || bits === 32 || (bits === 64 && n === 2));
  }

  /** The global address of an epilogue tensor's element at (row, col). */
  elemAddr(
    e: Extract<EpilogueExpr, { op: "load" }>,
    info: EpiTensor,
    row: Reg,
    col: Reg,
  ): Reg {
    let idx: Operand;
    if (e.rows && e.cols) {
      const v = info.view!;
      const M = this.dim(this.k.problem.m);
      const N = this.dim(this.k.problem.n);
      const line = v.layout === "row" ? row : col;
      const inLine = v.layout === "row" ? col : row;
      const ld = v.layout === "row" ? N : M;
      const lo = this.mulU64(line, b64Op(this, ld));
      idx = this.bin("add", "u64", lo, b64(this, inLine));
    } else {
      idx = b64(this, e.rows ? row : e.cols ? col : this.mov("u32", imm(0)));
    }
    const off = bytesOfElems(this, idx, DTYPE_INFO[info.t.dtype].bits);
    return this.bin("add", "u64", info.base, off);
  }

  /** A loaded epilogue tensor element (its register as loaded) as a compute value. */
  loadedToCompute(v: Reg, dtype: Dtype, c: "f32" | "f64" | "s32"): Reg {
    const b = this.b;
    switch (dtype) {
      case "f16":
      case "bf16": {
        const f = b.reg("f32");
        b.emit({ op: "cvt", kind: dtype === "f16" ? "f32.f16" : "f32.bf16", dst: f, src: v });
        return this.toCompute(f, "f32", c);
      }
      case "f32":
      case "f64":
      case "s32":
        return this.toCompute(v, v.type, c);
      case "s8": {
        // Sign-extend the low byte: (v << 24) >> 24 (arithmetic).
        const sh = this.bin("shl", "s32", this.s32Of(v), imm(24));
        const ext = this.bin("shr", "s32", sh, imm(24));
        return this.toCompute(ext, "s32", c);
      }
      case "u8":
        return this.toCompute(this.s32Of(v), "s32", c);
      default:
        throw new Error(`Unsupported epilogue tensor type "${dtype}"`);
    }
  }
}

interface CopyOne {
  readonly ptr: Reg;
  readonly okRow: Reg | null;
  /** False for a thread past the tile in a partial round (see copyOne's `only`). */
  readonly valid: Reg | null;
  readonly kIdx: Reg;
  readonly dst: { base: Reg; offset: number };
}

/** Copies with one pointer each (used when a round of copies is not whole rows). */
interface EachCopies {
  readonly kind: "each";
  readonly copies: readonly CopyOne[];
  readonly step: Operand;
}

/** Copies that are copy 0 moved by whole rows: one pointer for all of them. */
interface StridedCopies {
  readonly kind: "strided";
  /** Pointer of copy 0 (advanced by `step` per k-tile). */
  readonly ptr0: Reg;
  /** Bytes between copy j and j+1. */
  readonly stride: Operand;
  readonly step: Operand;
  /** Rows between copy j and j+1. */
  readonly dr: number;
  readonly kContig: boolean;
  /** K-contiguous: rows (M/N) left from copy 0's row (s32). */
  readonly outerRem: Reg | null;
  /** Outer-contiguous: whether the column run is inside M/N. */
  readonly outerOk: Reg | null;
  /** k index of copy 0 within the tile (s32). */
  readonly kIdx: Reg;
  /** Per copy, its destinations: one, or for a tile transposed through registers 4 (rows k..k+3). */
  readonly dst: readonly (readonly { base: Reg; offset: number }[])[];
  readonly valid: readonly (Reg | null)[];
}

type CopyPlan = EachCopies | StridedCopies;

/**
 * Fragment registers that one `ld.shared` (`.v2`/`.v4`) can load together:
 * runs of 4 (else 2) consecutive registers that sit at consecutive elements
 * along a contiguous outer dimension, at the same k, the run's first element
 * aligned to the run's bytes for every lane and warp (so that a 16-byte run
 * is one swizzle chunk). The SIMT micro-tiles are laid out for this
 * (ir/simt.ts); the tensor-core fragments that come by `ld.shared` (f64,
 * M/N-contiguous tf32) have no such runs and load one register at a time.
 *
 * @param fitted Per register, its (outer, k) position affine in (g, tig).
 * @param regBits The register width.
 * @param contiguous The operand tile's contiguous dimension.
 * @param strides Other steps the outer position takes (warp and tile origins).
 * @returns The registers of each load, in order.
 */
export function ldsRuns(
  fitted: readonly (readonly [Affine, Affine])[],
  regBits: number,
  contiguous: "k" | "outer",
  strides: readonly number[],
): number[][] {
  const runs: number[][] = [];
  const same = (a: Affine, b: Affine) =>
    a.terms.length === b.terms.length &&
    a.terms.every(([f, c], i) => f === b.terms[i]![0] && c === b.terms[i]![1]);
  const fits = (r: number, n: number): boolean => {
    if (contiguous !== "outer" || regBits !== 32 || r + n > fitted.length) return false;
    const [o0, k0] = fitted[r]!;
    if (o0.c % n !== 0 || o0.terms.some(([, c]) => c % n !== 0)) return false;
    if (strides.some((s) => s % n !== 0)) return false;
    for (let i = 1; i < n; i++) {
      const [o, kk] = fitted[r + i]!;
      if (o.c !== o0.c + i || !same(o, o0) || kk.c !== k0.c || !same(kk, k0)) return false;
    }
    return true;
  };
  for (let r = 0; r < fitted.length;) {
    const n = fits(r, 4) ? 4 : fits(r, 2) ? 2 : 1;
    runs.push(Array.from({ length: n }, (_, i) => r + i));
    r += n;
  }
  return runs;
}

interface FragInstr {
  /** The tile for `lds` (its registers consecutive); -1 for ldmatrix groups (regs are flat indices). */
  readonly tile: number;
  readonly kk: number;
  readonly regs: readonly number[];
  readonly num: number;
  readonly trans: boolean;
  readonly recipe: SmemRecipe;
}

interface FragPlan {
  readonly instrs: readonly FragInstr[];
  readonly bases: readonly { base: Reg; offset: number }[];
  readonly regBits: 32 | 64;
  readonly regsPerTile: number;
  readonly load: "ldmatrix" | "ldmatrix.trans" | "lds";
}

/** The name of the split-K workspace parameter (the last parameter, when split_k > 1). */
export const WORKSPACE_PARAM = "workspace";

/** Zero-extends a u32 register to u64. */
function b64(l: Lowering, v: Operand): Operand & Reg {
  if (v.kind === "imm") throw new Error("b64 of an immediate");
  if (v.type === "u64") return v;
  const r = l.b.reg("u64");
  l.b.emit({ op: "cvt", kind: "u64.u32", dst: r, src: v });
  return r;
}

function b64Op(l: Lowering, v: Operand): Operand {
  return v.kind === "imm" ? v : b64(l, v);
}

/** Element count (u64 or imm) to bytes: `n * bits / 8`. */
function bytesOfElems(
  l: Lowering,
  n: Operand,
  bits: number,
): Operand & (Reg | { kind: "imm"; value: number }) {
  if (n.kind === "imm") return imm((n.value * bits) / 8);
  if (bits >= 8) {
    const m = bits / 8;
    return m === 1 ? n : l.bin("shl", "u64", n, imm(log2(m)));
  }
  return l.bin("shr", "u64", n, imm(log2(8 / bits)));
}

/**
 * Lowers a fully planned GEMM IR kernel to the kernel IR.
 *
 * @param k The kernel after `gemm-mma`.
 * @returns The kernel-IR program.
 */
export function lowerToKernel(k: GemmKernel): Kernel {
  if (
    k.plan.tile === undefined || k.plan.warp === undefined || k.plan.pipeline === undefined ||
    k.plan.mma === undefined
  ) {
    throw new Error(`lower-kernel: kernel "${k.name}" is not fully planned`);
  }
  return new Lowering(k).run();
}
