/**
 * `gemm-mma`: the `mma.sync` instruction from the frozen MMA table
 * (ir/mma_table.ts) (or the SIMT cell of `math f32`), the k-steps, the
 * register estimate, and whether fragments are double buffered across the
 * k-steps of a tile or loaded interleaved. How they come from shared memory
 * is gemm-fragment-load's choice (passes/fragment_load.ts).
 *
 * @module
 */

import type { GemmKernel, InstructionPlan } from "../ir/gemm.ts";
import type { MmaDtype, MmaShape } from "../ir/mma_table.ts";
import { MMA_SHAPES } from "../ir/mma_table.ts";
import { mmaShapesOn, targetHas, targetInfo } from "../ir/target.ts";
import { SPARSE_MMA_TABLE, sparseMmaByName } from "../ir/mma_sparse.ts";
import { sparseMetaParam } from "../ir/gemm.ts";
import { type GemmPass, scheduleError } from "./pass.ts";
import { SIMT_PREFIX, simtShape } from "../ir/simt.ts";
import { wgmmaRowFor } from "./wgmma.ts";
import { isFp8 } from "../ir/dtype.ts";

/** Registers the estimate reserves for addressing, predicates and the epilogue. */
const ADDRESSING_REGS = 40;

/**
 * The same with interleaved fragment loads, tighter: ptxas (CUDA 13, sm_80
 * and sm_90) gives 96x64 f16 warps (192 accumulators, 40 fragment registers)
 * 255 registers and no spills, and 80x64 ones 254.
 */
const INTERLEAVED_ADDRESSING_REGS = 20;

/** E0208 when a block's estimated registers exceed one SM's register file. */
function checkRegisterFile(k: GemmKernel, regEstimate: number): void {
  const threads = k.plan.warp!.threads;
  const file = targetInfo(k.target).registersPerSm;
  if (regEstimate * threads > file) {
    scheduleError(
      k,
      ["warp", "threadblock"],
      "E0208",
      `Estimated ${regEstimate} registers x ${threads} threads = ${regEstimate * threads} ` +
        `registers per block exceed the ${file} of an SM: use fewer warps`,
    );
  }
}

/** The SIMT plan of `math f32`: fma.rn.f32 outer products, fragments by ld.shared. */
function simtPlan(k: GemmKernel): GemmKernel {
  const w = k.plan.warp!.warp;
  const tb = k.plan.tile!.threadblock;
  if (w.m % 8 !== 0 || w.n % 4 !== 0) {
    scheduleError(
      k,
      "warp",
      "E0202",
      `Warp ${w.m}x${w.n}x${w.k} does not fit SIMT's 8x4 lanes: M must be a multiple of 8, N of 4`,
    );
  }
  if (tb.k < 2) {
    scheduleError(k, "threadblock", "E0209", `Tile K ${tb.k}: SIMT needs at least 2 k-steps`);
  }
  const TM = w.m / 8;
  const TN = w.n / 4;
  const regEstimate = TM * TN + 2 * (TM + TN) + ADDRESSING_REGS;
  const budget = targetInfo(k.target).registersPerThread;
  if (regEstimate > budget) {
    scheduleError(
      k,
      ["warp", "threadblock"],
      "E0208",
      `Estimated ${regEstimate} registers per thread (${TM * TN} accumulators) exceed ` +
        `${budget}: use a smaller warp tile`,
    );
  }
  // As for the tensor-core plans (1024 threads of a 16x80 SIMT warp tile
  // spilled 1.4 KB a thread).
  checkRegisterFile(k, regEstimate);
  const cell = simtShape(w.m, w.n);
  const plan: InstructionPlan = {
    shape: cell.name,
    instr: { m: cell.m, n: cell.n, k: 1 },
    kSteps: tb.k,
    regEstimate,
    fragments: "double",
  };
  return { ...k, plan: { ...k.plan, instruction: plan } };
}

/**
 * The `mma.sp` rows (ir/mma_sparse.ts) for a sparse A's types, ascending K: every
 * target with `mma.sync` has them (sm_80 on).
 */
function sparseShapesOn(
  k: GemmKernel,
  a: MmaDtype,
  b: MmaDtype,
  c: MmaDtype,
): readonly MmaShape[] {
  if (!targetHas(k.target, "mma.sync")) return [];
  return SPARSE_MMA_TABLE.filter((s) => s.aType === a && s.bType === b && s.cType === c)
    .toSorted((x, y) => x.k - y.k);
}

/**
 * The MMA table row (or SIMT cell) that the mma plan names.
 *
 * @param k The kernel (warp and mma plans made).
 * @returns The shape; throws for a name the tables lack (a compiler bug).
 */
export function plannedShape(k: GemmKernel): MmaShape {
  const name = k.plan.mma!.shape;
  const w = k.plan.warp!.warp;
  const s = name.startsWith(SIMT_PREFIX)
    ? simtShape(w.m, w.n)
    : (sparseMmaByName(name) ?? MMA_SHAPES.find((x) => x.name === name));
  if (s === undefined) throw new Error(`Unknown MMA shape "${name}"`);
  return s;
}

/**
 * The plan of a wgmma tile (passes/wgmma.ts): the warpgroup row of the tile's N, and as
 * `shape` the m16n8 mma.sync row of the same types and K, whose accumulator fragment is
 * each warp's 16 x 8 part of the warpgroup's accumulator (what the epilogue reads).
 */
function wgmmaPlan(k: GemmKernel): GemmKernel {
  const tb = k.plan.tile!.threadblock;
  const row = wgmmaRowFor(k, tb);
  const m = k.math;
  // The m16n8 row whose accumulator map the epilogue reads: of the same types, or for 8-bit
  // floats (no mma.sync multiplies them) f16's with the same f32 accumulator (the m16n8
  // accumulator map does not depend on the operand types).
  const fp8 = isFp8(m.mmaA);
  const [ta, tb2] = fp8 ? ["f16", "f16"] as const : [m.mmaA as MmaDtype, m.mmaB as MmaDtype];
  const shape = mmaShapesOn(k.target, ta, tb2, m.acc as MmaDtype)
    .find((s) => s.m === 16 && s.n === 8 && (fp8 || s.k === row?.k));
  if (row === null || shape === undefined) {
    throw new Error(`gemm-mma: no wgmma plan for ${m.mmaA} -> ${m.acc} at ${tb.m}x${tb.n}x${tb.k}`);
  }
  const regEstimate = row.accRegs + ADDRESSING_REGS;
  checkRegisterFile(k, regEstimate);
  const plan: InstructionPlan = {
    shape: shape.name,
    instr: { m: row.m, n: row.n, k: row.k },
    kSteps: tb.k / row.k,
    regEstimate,
    fragments: "double",
    wgmma: row.name,
  };
  return {
    ...k,
    schedule: { ...k.schedule, mma: plan.instr },
    plan: { ...k.plan, instruction: plan },
  };
}

/** The pass. */
export const mmaPass: GemmPass = {
  name: "gemm-mma",
  title: "MmaSelect",
  summary: "Select the mma.sync instruction, the k-steps and the fragment buffering",
  run(k: GemmKernel): GemmKernel {
    const m = k.math;
    if (m.mode === "simt") return simtPlan(k);
    if (k.plan.tile!.wgmma) return wgmmaPlan(k);
    const op = m.op === "mul" ? undefined : m.op;
    const sparse = sparseMetaParam(k) !== null;
    const shapes = sparse
      ? sparseShapesOn(k, m.mmaA as MmaDtype, m.mmaB as MmaDtype, m.acc as MmaDtype)
      : mmaShapesOn(k.target, m.mmaA as MmaDtype, m.mmaB as MmaDtype, m.acc as MmaDtype, op);
    const instr = sparse ? "mma.sp" : "mma.sync";
    const want = k.schedule.mma;
    const list = shapes.map((s) => `${s.m}x${s.n}x${s.k}`).join(", ");
    const shape = want === undefined
      ? shapes[shapes.length - 1]
      : shapes.find((s) => s.m === want.m && s.n === want.n && s.k === want.k);
    if (shape === undefined) {
      scheduleError(
        k,
        "mma",
        "E0203",
        want === undefined
          ? `No ${instr} instruction for ${m.mmaA} x ${m.mmaB} -> ${m.acc}`
          : `No ${instr} instruction ${want.m}x${want.n}x${want.k} for ${m.mmaA} x ${m.mmaB} -> ${m.acc}: ` +
            `${targetInfo(k.target).mmaIsa} has ${list}`,
      );
    }
    const w = k.plan.warp!.warp;
    const tb = k.plan.tile!.threadblock;
    if (w.m % shape.m !== 0 || w.n % shape.n !== 0 || tb.k % shape.k !== 0) {
      scheduleError(
        k,
        ["mma", "warp"],
        "E0202",
        `Warp ${w.m}x${w.n}x${w.k} is not divisible by the instruction ${shape.m}x${shape.n}x${shape.k}`,
      );
    }
    const kSteps = tb.k / shape.k;
    if (kSteps < 2) {
      scheduleError(
        k,
        ["threadblock", "mma"],
        "E0209",
        `Tile K ${tb.k} holds ${kSteps} k-step of the ${shape.m}x${shape.n}x${shape.k} instruction: ` +
          `the fragment pipeline needs at least 2 (use threadblock K ${2 * shape.k})`,
      );
    }
    const mTiles = w.m / shape.m;
    const nTiles = w.n / shape.n;
    const regWords = shape.regBits / 32;
    const acc = mTiles * nTiles * shape.c.regs * regWords;
    // A sparse A adds a metadata register per tile row (passes/lower/sparse.ts; a second
    // set, the next packet, is not counted: it is loaded once every 1-4 k-steps).
    const oneSet = (mTiles * shape.a.regs + nTiles * shape.b.regs) * regWords +
      (sparse ? mTiles : 0);
    // Two sets (double buffering) when they fit; else one set, the next
    // k-step's fragments loaded into each register as it frees up (plain
    // tensor MMAs only: 3xtf32 splits its fragments first).
    const budget = targetInfo(k.target).registersPerThread;
    const doubleFits = acc + 2 * oneSet + ADDRESSING_REGS <= budget;
    const fragments = doubleFits || k.math.mode !== "tensor" ? "double" : "interleaved";
    const frags = (k.math.mode === "3xtf32" ? 2 : 1) * (fragments === "double" ? 2 : 1) *
      oneSet;
    const regEstimate = acc + frags +
      (fragments === "double" ? ADDRESSING_REGS : INTERLEAVED_ADDRESSING_REGS);
    if (regEstimate > budget) {
      scheduleError(
        k,
        ["warp", "threadblock"],
        "E0208",
        `Estimated ${regEstimate} registers per thread (${acc} accumulators, ${frags} fragments${
          fragments === "interleaved" ? " in one buffer" : ""
        }) ` +
          `exceed ${budget}: use a smaller warp tile`,
      );
    }
    checkRegisterFile(k, regEstimate);
    const plan: InstructionPlan = {
      shape: shape.name,
      instr: { m: shape.m, n: shape.n, k: shape.k },
      kSteps,
      regEstimate,
      fragments,
    };
    return {
      ...k,
      schedule: { ...k.schedule, mma: plan.instr },
      plan: { ...k.plan, instruction: plan },
    };
  },
};
