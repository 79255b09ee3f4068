/**
 * The kernel's skeleton: parameters in ABI order, thread and block indices, the
 * prologue, the main loop over k-tiles, the drain, then split-K or the epilogue.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { GemmKernel } from "../../ir/gemm.ts";
import {
  type Kernel,
  type KernelParam,
  type Operand,
  type Reg,
  type RegType,
  WORKSPACE_PARAM,
} from "../../ir/kernel.ts";
import type { MmaShape } from "../../ir/mma_table.ts";
import { log2, LowerContext, minBlocksPerSm } from "./context.ts";
import { advanceStage, copySetup, issueCopies, skipTiles } from "./copies.ts";
import { epilogue } from "./epilogue.ts";
import { epiPrefetch, prefetchAhead } from "./epilogue_loads.ts";
import { fragLoader, fragSetup, loadFrags } from "./fragments.ts";
import { mmas } from "./mma.ts";
import { splitKReduce, workspacePerTile } from "./split_k.ts";
import * as ir from "../../ir/builder.ts";

function buildKernel(cx: LowerContext): Kernel {
  const k = cx.k;
  const b = cx.b;
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
    b.emit(ir.param(r, p.name));
    cx.params.set(p.name, r);
  }

  // Indices.
  const tid = b.reg("u32", "tid");
  b.emit(ir.sreg(tid, "tid.x"));
  const lane = cx.bin("and", "u32", tid, imm(31), "lane");
  const warp = cx.bin("shr", "u32", tid, imm(5), "warp");
  cx.features.set("tid", tid);
  cx.features.set("lane7", cx.bin("and", "u32", lane, imm(7)));
  cx.features.set(
    "lane8",
    cx.bin("and", "u32", cx.bin("shr", "u32", lane, imm(3)), imm(1)),
  );
  cx.features.set("lane16", cx.bin("shr", "u32", lane, imm(4)));
  cx.features.set("g", cx.bin("shr", "u32", lane, imm(2), "g"));
  cx.features.set("tig", cx.bin("and", "u32", lane, imm(3), "tig"));
  cx.features.set("wm", cx.divRem("rem", warp, wp.warpsM, "wm"));
  cx.features.set("wn", cx.divRem("div", warp, wp.warpsM, "wn"));

  const bx = b.reg("u32", "bx");
  b.emit(ir.sreg(bx, "ctaid.x"));
  const by = b.reg("u32", "by");
  b.emit(ir.sreg(by, "ctaid.y"));
  const bzRaw = b.reg("u32", "bz");
  b.emit(ir.sreg(bzRaw, "ctaid.z"));
  // grid z = batch * split_k: the batch index and this block's split of K.
  const splitK = tile.splitK;
  const split = splitK > 1 ? cx.divRem("rem", bzRaw, splitK, "split") : null;
  const bz = splitK > 1 ? cx.divRem("div", bzRaw, splitK, "batch") : bzRaw;
  const ls = log2(tile.swizzle);
  const tileMIdx = ls === 0 ? bx : cx.bin("shr", "u32", bx, imm(ls));
  const tileNIdx = ls === 0 ? by : cx.bin(
    "add",
    "u32",
    cx.bin("shl", "u32", by, imm(ls)),
    cx.bin("and", "u32", bx, imm(tile.swizzle - 1)),
  );
  const M = cx.dim(k.problem.m);
  const N = cx.dim(k.problem.n);
  const K = cx.dim(k.problem.k);
  const tilesN = cx.divRem("div", cx.bin("add", "u32", N, imm(tb.n - 1)), tb.n);
  const inGrid = cx.setp("lt", "u32", tileNIdx, tilesN);
  b.if(inGrid, true, () => {
    const m0 = cx.mulImm(tileMIdx, tb.m, "m0");
    const n0 = cx.mulImm(tileNIdx, tb.n, "n0");
    const smem = b.reg("u32", "smem");
    b.emit(ir.smemBase(smem));

    const aCopy = copySetup(cx, "A", k.problem.a, pipe.a, m0, M, K, bz, smem);
    const bCopy = copySetup(cx, "B", k.problem.b, pipe.b, n0, N, K, bz, smem);

    // Fragment address set-up.
    const aFrag = fragSetup(cx, "A", pipe.a, mp.aLoad, smem);
    const bFrag = fragSetup(cx, "B", pipe.b, mp.bLoad, smem);

    // Accumulators.
    const mTiles = wp.warp.m / cx.shape.m;
    const nTiles = wp.warp.n / cx.shape.n;
    const accType = cx.shape.c.regType;
    const acc: Reg[][][] = [];
    for (let i = 0; i < mTiles; i++) {
      const row: Reg[][] = [];
      for (let j = 0; j < nTiles; j++) {
        const regs: Reg[] = [];
        for (let r = 0; r < cx.shape.c.regs; r++) {
          regs.push(cx.mov(accType, imm(0), `acc${i}_${j}_${r}`));
        }
        row.push(regs);
      }
      acc.push(row);
    }
    if (cx.k.math.mode === "3xtf32") {
      cx.zeroAcc = Array.from({ length: cx.shape.c.regs }, () => cx.mov("f32", imm(0)));
    }

    // k-tiles.
    const kTiles = K.kind === "imm" ? imm(Math.ceil(K.value / tb.k)) : cx.bin(
      "shr",
      "u32",
      cx.bin("add", "u32", K, imm(tb.k - 1)),
      imm(log2(tb.k)),
      "ktiles",
    );
    const S = pipe.stages;
    // kRem of the next tile to fetch: K - t * tileK (s32, may go negative).
    let kRem = cx.s32Of(K, "kfetch");
    let kCount: Operand = kTiles;
    if (split !== null) {
      // Split s computes k-tiles [s * per, s * per + count) of the kTiles,
      // per = ceil(kTiles / split_k); the last splits may get fewer or none
      // (count 0: a partial of zeros). kRem stops at the split's end, so
      // that the copies fetched ahead past it read nothing.
      const kt = kTiles.kind === "imm" ? cx.mov("u32", kTiles) : kTiles;
      const per = cx.divRem("div", cx.bin("add", "u32", kt, imm(splitK - 1)), splitK, "kper");
      const start = cx.bin("min", "u32", cx.bin("mul", "u32", split, per), kt, "kstart");
      kCount = cx.bin("min", "u32", per, cx.bin("sub", "u32", kt, start), "kcount");
      const left = cx.bin("sub", "s32", kRem, cx.s32Of(cx.mulImm(start, tb.k)));
      kRem = cx.bin("min", "s32", left, cx.s32Of(cx.mulImm(kCount, tb.k)), "kfetch");
      skipTiles(cx, aCopy, start);
      skipTiles(cx, bCopy, start);
    }
    const writeOff = cx.mov("u32", imm(0), "wstage");
    const readOff = cx.mov("u32", imm(0), "rstage");

    const issue = () => {
      issueCopies(cx, aCopy, pipe.a, writeOff, kRem);
      issueCopies(cx, bCopy, pipe.b, writeOff, kRem);
      b.emit(ir.commit());
      b.emit(ir.bin("sub", "s32", kRem, kRem, imm(tb.k)));
      advanceStage(cx, writeOff, S);
    };

    b.emit(ir.comment(`prologue: fill ${S - 1} stages`));
    for (let s = 0; s < S - 1; s++) issue();
    b.emit(ir.wait(pipe.waitDepth));
    b.emit(ir.bar());

    // Fragment buffers.
    const fragRegs = (op: MmaShape["a"], tiles: number): Reg[][] =>
      Array.from(
        { length: tiles },
        () =>
          Array.from(
            { length: op.regs },
            () => b.reg(op.regType),
          ),
      );
    const aBuf = [fragRegs(cx.shape.a, mTiles), fragRegs(cx.shape.a, mTiles)];
    const bBuf = [fragRegs(cx.shape.b, nTiles), fragRegs(cx.shape.b, nTiles)];
    const loadBoth = (kk: number, buf: number) => {
      loadFrags(cx, aFrag, aBuf[buf]!, kk, readOff, pipe.a);
      loadFrags(cx, bFrag, bBuf[buf]!, kk, readOff, pipe.b);
    };
    loadBoth(0, 0);

    const kt = b.reg("u32", "kt");
    const KK = mp.kSteps;
    // k-steps per tile are a power of two >= 2 (gemm-mma), so the two fragment
    // buffers alternate evenly across tiles: k-step kk uses buffer kk % 2.
    if (KK % 2 !== 0) throw new Error(`lower-kernel: ${KK} k-steps per tile is odd`);
    const kLoop = (from: Operand, to: Operand) =>
      b.for(kt, from, to, 1, () => {
        for (let kk = 0; kk < KK; kk++) {
          if (kk === KK - 1) {
            b.emit(ir.wait(pipe.waitDepth));
            b.emit(ir.bar());
            advanceStage(cx, readOff, S);
          }
          const next = (kk + 1) % 2;
          const interleaved = mp.fragments === "interleaved";
          if (!interleaved) loadBoth((kk + 1) % KK, next);
          if (kk === 0) {
            b.emit(ir.comment(`copies of k-tile kt + ${S - 1}`));
            issue();
          }
          if (!interleaved) {
            mmas(cx, acc, aBuf[kk % 2]!, bBuf[kk % 2]!, kk);
            continue;
          }
          // Each load of k-step kk+1 right after the MMAs that free its tiles.
          const aNext = fragLoader(cx, aFrag, aBuf[next]!, (kk + 1) % KK, readOff, pipe.a);
          const bNext = fragLoader(cx, bFrag, bBuf[next]!, (kk + 1) % KK, readOff, pipe.b);
          const bDone = new Set<number>();
          mmas(cx, acc, aBuf[kk % 2]!, bBuf[kk % 2]!, kk, (i, j, rowDone) => {
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
    const prefetch = split === null ? epiPrefetch(cx, m0, n0, M, N, bz) : null;
    if (prefetch === null) kLoop(imm(0), kCount);
    else {
      const P = prefetchAhead(tb.k);
      b.emit(ir.comment(`the last ${P} k-tiles, after the L2 prefetch of C's tile`));
      const at: Operand = kCount.kind === "imm"
        ? imm(Math.max(kCount.value - P, 0))
        : cx.bin("sub", "u32", cx.bin("max", "u32", kCount, imm(P)), imm(P), "kpf");
      if (at.kind !== "imm" || at.value > 0) kLoop(imm(0), at);
      prefetch();
      kLoop(at, kCount);
    }
    b.emit(ir.wait(0));

    if (split === null) epilogue(cx, acc, m0, n0, M, N, bz, smem);
    else {
      const tilesM = cx.divRem("div", cx.bin("add", "u32", M, imm(tb.m - 1)), tb.m);
      const tileLin = cx.bin(
        "add",
        "u32",
        cx.bin(
          "mul",
          "u32",
          cx.bin("add", "u32", cx.bin("mul", "u32", bz, tilesM), tileMIdx),
          tilesN,
        ),
        tileNIdx,
        "tile",
      );
      splitKReduce(
        cx,
        acc,
        split,
        tileLin,
        smem,
        (sum) => epilogue(cx, acc, m0, n0, M, N, bz, smem, sum),
        epiPrefetch(cx, m0, n0, M, N, bz),
      );
    }
  });

  const minBlocks = minBlocksPerSm(cx);
  return {
    kind: "kernel",
    name: k.name,
    target: k.target,
    params: kparams,
    threads: cx.threads,
    dynamicSmemBytes: pipe.smemBytes,
    ...(minBlocks > 1 ? { minBlocksPerSm: minBlocks } : {}),
    grid: {
      tileM: tb.m,
      tileN: tb.n,
      swizzle: tile.swizzle,
      splitK: tile.splitK,
      ...(tile.splitK > 1 ? { workspacePerTile: workspacePerTile(cx) } : {}),
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
  return buildKernel(new LowerContext(k));
}
