/**
 * Hand-built kernel-IR programs and helpers for the simulator's tests and
 * benchmarks (tests/sim_*_test.ts): a small emitter over {@link KernelBuilder},
 * a seeded random generator, and a multistage cp.async + ldmatrix + mma GEMM
 * whose mutants (a missing wait, a missing barrier, a short stage distance)
 * the hazard checker must catch.
 *
 * @module
 */

import { Rng } from "../../numerics/random.ts";
import { imm, KernelBuilder } from "../../ir/builder.ts";
import type { BinFn, Kernel, KernelParam, Operand, Reg } from "../../ir/kernel.ts";
import * as ir from "../../ir/builder.ts";

/** A seeded generator of uniform numbers in [0, 1) (mulberry32). */
export function rng(seed: number): () => number {
  const g = new Rng(seed);
  return () => g.next();
}

/** A uniform random integer in [lo, hi]. */
export function randInt(r: () => number, lo: number, hi: number): number {
  return lo + Math.floor(r() * (hi - lo + 1));
}

/** Parameter declarations: tensors (`name: dtype`), dims (`name`), by kind. */
export interface ParamSpec {
  readonly tensors?: readonly string[];
  readonly dims?: readonly string[];
}

/** KernelBuilder with shorthands for the operations tests use most. */
export class Emitter extends KernelBuilder {
  /** `dst = param name`. */
  param(name: string, type: "u64" | "u32" = "u64"): Reg {
    return this.loadParam(type, name);
  }

  /** `dst = tid.x`. */
  tid(): Reg {
    return this.readSreg("tid.x", "tid");
  }

  /** `dst = a FN b` of `type`. */
  bin(
    fn: BinFn,
    type: "u32" | "s32" | "u64" | "b32" | "pred" | "f32" | "f64",
    a: Operand,
    b: Operand | number,
  ): Reg {
    const d = this.reg(type === "b32" ? "b32" : type);
    this.emit(ir.bin(fn, type, d, a, typeof b === "number" ? imm(b) : b));
    return d;
  }

  /** `dst(u64) = base + index * scale` (index u32). */
  addr(base: Reg, index: Operand, scale: number): Reg {
    const off = this.reg("u64");
    this.emit(ir.mulWide(off, index, imm(scale)));
    return this.bin("add", "u64", base, off);
  }

  /** `dst(pred) = a CMP b`. */
  setp(
    cmp: "lt" | "le" | "gt" | "ge" | "eq" | "ne",
    type: "u32" | "s32",
    a: Operand,
    b: Operand | number,
  ): Reg {
    const d = this.reg("pred");
    this.emit(ir.setp(cmp, type, d, a, typeof b === "number" ? imm(b) : b));
    return d;
  }
}

/**
 * A kernel around a built body.
 *
 * @param e The emitter holding registers and body.
 * @param name Kernel name.
 * @param threads Threads per block.
 * @param smem Dynamic shared-memory bytes.
 * @param params Tensor and dim parameter names.
 * @returns The kernel.
 */
export function kernelOf(
  e: KernelBuilder,
  name: string,
  threads: number,
  smem: number,
  params: ParamSpec,
): Kernel {
  const ps: KernelParam[] = [
    ...(params.tensors ?? []).map((n): KernelParam => ({ name: n, kind: "tensor", ptx: "u64" })),
    ...(params.dims ?? []).map((n): KernelParam => ({ name: n, kind: "dim", ptx: "u32" })),
  ];
  return {
    kind: "kernel",
    name,
    target: "sm80",
    params: ps,
    threads,
    dynamicSmemBytes: smem,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: e.regs,
    body: e.body,
  };
}

/** Mutations of {@link pipelinedGemm} that the hazard checker must catch. */
export type GemmMutant = "none" | "no-wait" | "no-bar" | "wait-too-permissive" | "short-distance";

/** Shape of {@link pipelinedGemm}'s tiles. */
export const PIPE = Object.freeze({ BM: 32, BN: 32, BK: 32, stages: 3, threads: 128 });

/** The bytes of one stage of {@link pipelinedGemm}: the A tile, then the B tile. */
const STAGE_BYTES = (PIPE.BM + PIPE.BN) * PIPE.BK * 2;
/** Where the B tile starts in a stage. */
const B_OFF = PIPE.BM * PIPE.BK * 2;

/**
 * A multistage f16 GEMM `D(f32, M x N, row-major) = A(f16, M x K, row-major) *
 * B(f16, K x N, column-major, i.e. N x K with K contiguous)`, as the lowering
 * writes them: a 32x32x32 block tile, 4 warps of 16x16 (two m16n8k16 each),
 * 3 stages of cp.async (16 bytes a thread per operand per stage), `wait
 * stages-2` and `bar` at the top of each k-tile, then the copy of the k-tile
 * `stages-1` ahead, then ldmatrix.x4 fragments and the MMAs. Sizes must be
 * multiples of 32, and K at least 64. Grid: `[N / 32, M / 32, 1]`.
 *
 * @param mutant A deliberate bug, or "none".
 * @returns The kernel (parameters A, B, D; dims M, N, K).
 */
export function pipelinedGemm(mutant: GemmMutant = "none"): Kernel {
  const { BK, stages: S, threads } = PIPE;
  const stageBytes = STAGE_BYTES;
  const e = new Emitter();
  const A = e.param("A");
  const B = e.param("B");
  const D = e.param("D");
  const N = e.param("N", "u32");
  const K = e.param("K", "u32");
  const tid = e.tid();
  const bx = e.readSreg("ctaid.x", "bx");
  const by = e.readSreg("ctaid.y", "by");
  const smem = e.reg("u32", "smem");
  e.emit(ir.smemBase(smem));

  const { issue, kTiles } = copyIssuer(e, { A, B, K, tid, bx, by, smem });
  // Prologue: k-tiles 0 .. S-2.
  const pk = e.reg("u32", "pk");
  e.for(pk, imm(0), imm(S - 1), 1, () => {
    issue(pk);
    e.emit(ir.commit());
  });

  const { lane, wm, wn, aLd, bLd } = warpAddresses(e, tid);
  const acc = [0, 1].map(() => [0, 1, 2, 3].map(() => e.reg("f32", "acc")));
  for (const t of acc) for (const r of t) e.emit(ir.mov(r, imm(0)));
  const af = [0, 1, 2, 3].map(() => e.reg("b32", "a"));
  const bf = [0, 1, 2, 3].map(() => e.reg("b32", "b"));

  const kt = e.reg("u32", "kt");
  e.for(kt, imm(0), kTiles, 1, () => {
    const waitN = mutant === "wait-too-permissive" ? S - 1 : S - 2;
    if (mutant !== "no-wait") e.emit(ir.wait(waitN));
    if (mutant !== "no-bar") e.emit(ir.bar());
    const next = e.bin("add", "u32", kt, mutant === "short-distance" ? S : S - 1);
    issue(next);
    e.emit(ir.commit());
    const stage = e.bin("rem", "u32", kt, S);
    const sBase = e.reg("u32");
    e.emit(ir.mad("u32", sBase, stage, imm(stageBytes), smem));
    const aAddr = e.bin("add", "u32", sBase, aLd);
    const bAddr = e.bin("add", "u32", sBase, bLd);
    for (let kk = 0; kk < BK / 16; kk++) {
      e.emit(ir.ldmatrix(4, false, af, aAddr, kk * 32));
      e.emit(ir.ldmatrix(4, false, bf, bAddr, kk * 32));
      for (let nt = 0; nt < 2; nt++) {
        e.emit(ir.mma("m16n8k16.f16.f32", acc[nt]!, af, [bf[2 * nt]!, bf[2 * nt + 1]!], acc[nt]!));
      }
    }
  });
  e.emit(ir.wait(0));

  storeTile(e, acc, { D, N, lane, bx, by, wm, wn });
  return kernelOf(e, `pipelined_gemm_${mutant.replaceAll("-", "_")}`, threads, S * stageBytes, {
    tensors: ["A", "B", "D"],
    dims: ["M", "N", "K"],
  });
}

/** Computes each thread's copy addresses and returns the issuer of one k-tile's copies. */
function copyIssuer(
  e: Emitter,
  v: Readonly<Record<"A" | "B" | "K" | "tid" | "bx" | "by" | "smem", Reg>>,
): { issue: (kt: Reg) => void; kTiles: Reg } {
  const { BM, BN, BK, stages: S } = PIPE;
  const { A, B, K, tid, bx, by, smem } = v;
  const stageBytes = STAGE_BYTES;
  const bOff = B_OFF;
  // Copy assignment: thread t copies 16 bytes = 8 halves of row t / 4, chunk t % 4.
  const row = e.bin("shr", "u32", tid, 2);
  const chunk = e.bin("and", "u32", tid, 3);
  // Global: A + ((by * BM + row) * K + chunk * 8) * 2 + kt * BK * 2.
  const aRow = e.reg("u32");
  e.emit(ir.mad("u32", aRow, by, imm(BM), row));
  const aIdx = e.reg("u32");
  e.emit(ir.mad("u32", aIdx, aRow, K, e.bin("shl", "u32", chunk, 3)));
  const aSrc0 = e.addr(A, aIdx, 2);
  const bRow = e.reg("u32");
  e.emit(ir.mad("u32", bRow, bx, imm(BN), row));
  const bIdx = e.reg("u32");
  e.emit(ir.mad("u32", bIdx, bRow, K, e.bin("shl", "u32", chunk, 3)));
  const bSrc0 = e.addr(B, bIdx, 2);
  // Shared: row * BK * 2 + chunk * 16 within the stage's tile.
  const sDst = e.reg("u32");
  e.emit(ir.mad("u32", sDst, row, imm(BK * 2), e.bin("shl", "u32", chunk, 4)));
  e.emit(ir.bin("add", "u32", sDst, sDst, smem));
  const kTiles = e.bin("div", "u32", K, BK);

  /** Issues the copies of k-tile `kt` into stage `kt % S` (guarded off when kt >= kTiles). */
  const issue = (kt: Reg): void => {
    const stage = e.bin("rem", "u32", kt, S);
    const dst = e.reg("u32");
    e.emit(ir.mad("u32", dst, stage, imm(stageBytes), sDst));
    const kOff = e.bin("mul", "u32", kt, BK * 2);
    const kOff64 = e.reg("u64");
    e.emit(ir.cvt("u64.u32", kOff64, kOff));
    const aSrc = e.bin("add", "u64", aSrc0, kOff64);
    const bSrc = e.bin("add", "u64", bSrc0, kOff64);
    const live = e.setp("lt", "u32", kt, kTiles);
    const guard = { pred: live, negate: false };
    e.emit(
      ir.cpAsync({
        cache: "cg",
        bytes: 16,
        dst,
        dstOffset: 0,
        src: aSrc,
        srcBytes: imm(16),
      }, guard),
    );
    e.emit(
      ir.cpAsync({
        cache: "cg",
        bytes: 16,
        dst,
        dstOffset: bOff,
        src: bSrc,
        srcBytes: imm(16),
      }, guard),
    );
  };
  return { issue, kTiles };
}

/** The ldmatrix lane addresses of a warp's A and B fragments (byte offsets in a stage). */
function warpAddresses(e: Emitter, tid: Reg): Record<"lane" | "wm" | "wn" | "aLd" | "bLd", Reg> {
  const { BK } = PIPE;
  const bOff = B_OFF;
  // Warp tile: warp w computes rows (w / 2) * 16, columns (w % 2) * 16.
  const warp = e.bin("shr", "u32", tid, 5);
  const lane = e.bin("and", "u32", tid, 31);
  const wm = e.bin("shr", "u32", warp, 1);
  const wn = e.bin("and", "u32", warp, 1);
  // ldmatrix lane addresses (byte offsets in a stage). A x4: matrix j = lane / 8 holds rows
  // (j & 1) * 8 + lane % 8, k columns (j >> 1) * 8.
  const lj = e.bin("shr", "u32", lane, 3);
  const l8 = e.bin("and", "u32", lane, 7);
  const aR = e.reg("u32");
  e.emit(ir.mad("u32", aR, e.bin("and", "u32", lj, 1), imm(8), l8));
  e.emit(ir.mad("u32", aR, wm, imm(16), aR));
  const aC = e.bin("mul", "u32", e.bin("shr", "u32", lj, 1), 16); // bytes
  const aLd = e.reg("u32");
  e.emit(ir.mad("u32", aLd, aR, imm(BK * 2), aC));
  // B x4: matrix j holds n rows (j >> 1) * 8 + lane % 8, k columns (j & 1) * 8.
  const bR = e.reg("u32");
  e.emit(ir.mad("u32", bR, e.bin("shr", "u32", lj, 1), imm(8), l8));
  e.emit(ir.mad("u32", bR, wn, imm(16), bR));
  const bC = e.bin("mul", "u32", e.bin("and", "u32", lj, 1), 16);
  const bLd = e.reg("u32");
  e.emit(ir.mad("u32", bLd, bR, imm(BK * 2), bC));
  e.emit(ir.bin("add", "u32", bLd, bLd, imm(bOff)));
  return { lane, wm, wn, aLd, bLd };
}

/** Stores the accumulators of a warp's 16x16 tile to D. */
function storeTile(
  e: Emitter,
  acc: readonly (readonly Reg[])[],
  v: Readonly<Record<"D" | "N" | "lane" | "bx" | "by" | "wm" | "wn", Reg>>,
): void {
  const { BM, BN } = PIPE;
  const { D, N, lane, bx, by, wm, wn } = v;
  // Epilogue: acc[nt][i] is row g + 8 * (i >> 1), column 2 * (lane % 4) + (i & 1) of tile nt.
  const g = e.bin("shr", "u32", lane, 2);
  const t4 = e.bin("and", "u32", lane, 3);
  const r0 = e.reg("u32");
  e.emit(ir.mad("u32", r0, by, imm(BM), g));
  e.emit(ir.mad("u32", r0, wm, imm(16), r0));
  const c0 = e.reg("u32");
  e.emit(ir.mad("u32", c0, bx, imm(BN), e.bin("shl", "u32", t4, 1)));
  e.emit(ir.mad("u32", c0, wn, imm(16), c0));
  for (let nt = 0; nt < 2; nt++) {
    for (let h = 0; h < 2; h++) {
      const rr = e.bin("add", "u32", r0, h * 8);
      const ix = e.reg("u32");
      e.emit(ir.mad("u32", ix, rr, N, c0));
      const p = e.addr(D, ix, 4);
      e.emit(ir.stg("b32", [acc[nt]![2 * h]!, acc[nt]![2 * h + 1]!], p, nt * 32));
    }
  }
}

/**
 * The byte offsets of a thread's wgmma accumulator registers from its first element's
 * address, in a row-major tile of `n` columns of `elemBytes` each (ir/kernel_sm90.ts WgmmaOp's
 * register layout: an f16 accumulator packs two columns a register), stated here
 * independently of ir/wgmma_table.ts for the tests.
 *
 * @param n The tile's columns.
 * @param regs The accumulator registers.
 * @param f16 Whether the accumulator is f16 (two elements a register).
 * @param elemBytes Bytes of one element.
 * @returns One offset a register.
 */
export function wgmmaAccOffsets(
  n: number,
  regs: number,
  f16: boolean,
  elemBytes: number,
): number[] {
  return Array.from(
    { length: regs },
    (_, r) =>
      f16
        ? ((r & 1) * 8 * n + 8 * (r >> 1)) * elemBytes
        : (((r >> 1) & 1) * 8 * n + 8 * (r >> 2) + (r & 1)) * elemBytes,
  );
}

/**
 * Emits the element index of a thread's first wgmma accumulator in a row-major tile of `n`
 * columns: row 16 warp + lane / 4, column 2 (lane % 4).
 *
 * @param e The emitter.
 * @param tid The thread index (u32).
 * @param n The tile's columns.
 * @returns The index (u32).
 */
export function wgmmaFirstAccElement(e: Emitter, tid: Reg, n: number): Reg {
  const row = e.reg("u32");
  e.emit(
    ir.mad(
      "u32",
      row,
      e.bin("shr", "u32", tid, 5),
      imm(16),
      e.bin("shr", "u32", e.bin("and", "u32", tid, 31), 2),
    ),
  );
  const el = e.reg("u32");
  e.emit(ir.mad("u32", el, row, imm(n), e.bin("shl", "u32", e.bin("and", "u32", tid, 3), 1)));
  return el;
}

/** Deliberate bugs of {@link clusterRingKernel}. */
export type ClusterMutant =
  | "none"
  /** The consumers release only their own CTA's empty barrier (counting one CTA's warps). */
  | "local-release"
  /** A CTA barrier instead of the cluster barrier between the barriers' init and their use. */
  | "no-cluster-bar"
  /** The multicast mask names rank 2 of the cluster of 2. */
  | "mask-too-wide"
  /** The remote release goes to rank 2 of the cluster of 2. */
  | "arrive-rank-2"
  /** The consumers read B through the peer's window (their address plus the window stride). */
  | "peer-read"
  /** The consumers wait on the full barrier's wrong parity. */
  | "wrong-parity";

/** Shape of {@link clusterRingKernel}: stage rows of A and B (32 u32 columns each), stages, threads. */
export const CLUSTER_RING = Object.freeze({ rows: 8, stages: 2, threads: 96, cols: 32 });

/**
 * A cluster of 2 CTAs sharing operand A by multicast TMA copies: `D[x][w][c] = Σ_k A[k][c]
 * B[x K + k][c]` over the rows k of consumer warp w (k % 8 in [4 w, 4 w + 4)), u32 wrapping,
 * for CTA x of the grid. Per CTA 96 threads: warps 0 and 1 consume, thread 64 produces.
 * Each k-tile of 8 rows fills a stage (A's 8 x 32 box, then B's): CTA r's producer waits for
 * the stage's empty barrier, announces the stage's 2048 bytes on its full barrier, copies A's
 * rows 4 r .. 4 r + 3 into both CTAs (multicast 0b11) and its own B box. Consumers wait for
 * the full barrier, read their rows with ld.shared, then lane 0 of each warp releases the
 * stage on its own CTA's empty barrier and on the peer's (count 4: both CTAs' consumer warps).
 * A ring of 2 stages; thread 0 initialises the barriers before a cluster barrier; a named
 * barrier over the 64 consumers and a cluster barrier close the kernel. Grid: `[2 c, 1, 1]`,
 * K a multiple of 8.
 *
 * @param mutant A deliberate bug, or "none".
 * @returns The kernel (parameters A, B, D, K and the maps A_map, B_map).
 */
export function clusterRingKernel(mutant: ClusterMutant = "none"): Kernel {
  const { rows, stages, cols } = CLUSTER_RING;
  const rowBytes = cols * 4;
  const box = rows * rowBytes;
  const stage = 2 * box;
  const barBase = stages * stage;
  const e = new Emitter();
  const D = e.param("D");
  const K = e.param("K", "u32");
  const tid = e.tid();
  const bx = e.readSreg("ctaid.x", "bx");
  const rank = e.readSreg("cluster_ctarank", "rank");
  const peer = e.bin("xor", "u32", rank, 1);
  const smem = e.reg("u32", "smem");
  e.emit(ir.smemBase(smem));
  const madU = (a: Operand, k: number, c: Operand) => {
    const d = e.reg("u32");
    e.emit(ir.mad("u32", d, a, imm(k), c));
    return d;
  };
  const full = (s: Operand) => madU(s, 8, e.bin("add", "u32", smem, barBase));
  const empty = (s: Operand) => madU(s, 8, e.bin("add", "u32", smem, barBase + 8 * stages));
  const kCount = e.bin("div", "u32", K, rows);
  const stageOf = (kt: Reg) => {
    const s = e.bin("rem", "u32", kt, stages);
    const ph = e.bin("and", "u32", e.bin("div", "u32", kt, stages), 1);
    return { s, ph, a: madU(s, stage, smem) };
  };
  e.if(e.setp("eq", "u32", tid, 0), false, () => {
    for (let s = 0; s < stages; s++) {
      e.emit(ir.mbarInit(full(imm(s)), 1));
      e.emit(ir.mbarInit(empty(imm(s)), mutant === "local-release" ? 2 : 4));
    }
    e.emit(ir.mbarFence());
  });
  e.emit(mutant === "no-cluster-bar" ? ir.bar() : ir.clusterBar());
  e.if(e.setp("ge", "u32", tid, 64), false, () => {
    e.if(e.setp("eq", "u32", tid, 64), false, () => {
      const kt = e.reg("u32", "kt");
      e.for(kt, imm(0), kCount, 1, () => {
        const { s, ph, a } = stageOf(kt);
        e.emit(ir.mbarWait(empty(s), e.bin("xor", "u32", ph, 1)));
        const f = full(s);
        e.emit(ir.mbarArrive(f, stage));
        const k0 = e.bin("mul", "u32", kt, rows);
        const half = madU(rank, rows / 2, k0);
        const mask = mutant === "mask-too-wide" ? 0b111 : 0b11;
        e.emit(ir.tmaLoad(madU(rank, box / 2, a), "A_map", [imm(0), half], f, mask));
        const bRow = e.reg("u32");
        e.emit(ir.mad("u32", bRow, bx, K, k0));
        e.emit(ir.tmaLoad(e.bin("add", "u32", a, box), "B_map", [imm(0), bRow], f));
      });
    });
  }, () => {
    const lane = e.bin("and", "u32", tid, 31);
    const warp = e.bin("shr", "u32", tid, 5);
    const lane0 = ir.when(e.setp("eq", "u32", lane, 0));
    const acc = e.reg("u32", "acc");
    e.emit(ir.mov(acc, imm(0)));
    // The warp's first row's byte offset plus the lane's column.
    const off = madU(warp, (rows / 2) * rowBytes, e.bin("shl", "u32", lane, 2));
    const kt = e.reg("u32", "kt");
    e.for(kt, imm(0), kCount, 1, () => {
      const { s, ph, a } = stageOf(kt);
      const par = mutant === "wrong-parity" ? e.bin("xor", "u32", ph, 1) : ph;
      e.emit(ir.mbarWait(full(s), par));
      const pa = e.bin("add", "u32", a, off);
      const pb0 = e.bin("add", "u32", pa, box);
      const pb = mutant === "peer-read" ? e.bin("add", "u32", pb0, 5120) : pb0;
      for (let r = 0; r < rows / 2; r++) {
        const va = e.reg("u32");
        const vb = e.reg("u32");
        e.emit(ir.lds("b32", [va], pa, r * rowBytes));
        e.emit(ir.lds("b32", [vb], pb, r * rowBytes));
        e.emit(ir.mad("u32", acc, va, vb, acc));
      }
      const em = empty(s);
      e.emit(ir.mbarArrive(em, undefined, lane0));
      if (mutant !== "local-release") {
        const to = mutant === "arrive-rank-2" ? imm(2) : peer;
        e.emit(ir.mbarArrive(em, undefined, lane0, to));
      }
    });
    // D[bx][warp][lane].
    const di = e.reg("u32");
    e.emit(ir.mad("u32", di, bx, imm(2 * cols), madU(warp, cols, lane)));
    e.emit(ir.stg("b32", [acc], e.addr(D, di, 4), 0));
    e.emit(ir.namedBar(1, 64));
  });
  e.emit(ir.clusterBar());
  return clusterRingOf(mutant, e, barBase + 16 * stages);
}

/** The cluster ring kernel's record around its emitted body: its parameters and maps. */
function clusterRingOf(mutant: ClusterMutant, e: Emitter, smemBytes: number): Kernel {
  const { rows, threads, cols } = CLUSTER_RING;
  const spec = (tensor: string, boxRows: number): KernelParam["tmap"] => ({
    tensor,
    dataType: "float32",
    elementBytes: 4,
    dims: [[cols], [tensor === "A" ? "K" : "KB"]],
    strides: [[cols]],
    box: [cols, boxRows],
    swizzle: 0,
  });
  return {
    kind: "kernel",
    name: `cluster_ring_${mutant.replaceAll("-", "_")}`,
    target: "sm90",
    params: [
      { name: "A", kind: "tensor", ptx: "u64" },
      { name: "B", kind: "tensor", ptx: "u64" },
      { name: "D", kind: "tensor", ptx: "u64" },
      { name: "K", kind: "dim", ptx: "u32" },
      { name: "KB", kind: "dim", ptx: "u32" },
      { name: "A_map", kind: "tensormap", ptx: "tmap", tmap: spec("A", rows / 2)! },
      { name: "B_map", kind: "tensormap", ptx: "tmap", tmap: spec("B", rows)! },
    ],
    threads,
    dynamicSmemBytes: smemBytes,
    cluster: 2,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: e.regs,
    body: e.body,
  };
}
