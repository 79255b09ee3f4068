/**
 * A hand-built sm90 kernel of the warp-specialized operations (ir/kernel.ts: mbarriers, TMA
 * copies, setmaxnreg, named barriers and a warpgroup-uniform role `if`): warpgroup 1's first
 * thread copies `TMA_TEST_TILES` boxes of 64 rows x 64 f16 of `src` (through the tensor map
 * `src_tmap`) into a ring of two stages, every other one under an L2 cache policy; warpgroup 0 waits for each, adds one word of its
 * thread's row from the stage, hands the stage back, meets at named barrier 1 and stores its
 * sum to `out`. It lets the next grid launch at its start and waits for the previous one's
 * memory after its barriers' set-up (programmatic dependent launch). The PTX tests print and
 * assemble it for sm_90a.
 *
 * @module
 */

import * as ir from "../../../ir/builder.ts";
import { imm, KernelBuilder } from "../../../ir/builder.ts";
import type { Kernel, KernelParam } from "../../../ir/kernel.ts";
import type { Target } from "../../../ir/gemm.ts";
import { kernel, OUT } from "./_fixture.ts";

/** Boxes the producer copies (the ring of two stages wraps once). */
export const TMA_TEST_TILES = 3;

/** Bytes of one box: 64 rows of 128 bytes. */
const BOX_BYTES = 64 * 128;

/** The source tensor: f16 `[rows, 64]`, rows a runtime dimension. */
const SRC: KernelParam = { name: "src", kind: "tensor", ptx: "u64", dtype: "f16" };
const ROWS: KernelParam = { name: "rows", kind: "dim", ptx: "u32" };
const SRC_TMAP: KernelParam = {
  name: "src_tmap",
  kind: "tensormap",
  ptx: "tmap",
  tmap: {
    tensor: "src",
    dataType: "float16",
    elementBytes: 2,
    dims: [[64], ["rows"]],
    strides: [[64]],
    box: [64, 64],
    swizzle: 128,
  },
};

/**
 * The kernel (see the module comment).
 *
 * @param target A target with TMA.
 * @returns The kernel.
 */
export function tmaKernel(target: Target): Kernel {
  const b = new KernelBuilder();
  b.emit(ir.gridDep("launch"));
  const out = b.loadParam("u64", "out");
  b.loadParam("u64", "src");
  b.loadParam("u32", "rows");
  const tid = b.readSreg("tid.x", "tid");
  const smem = b.reg("u32", "smem");
  b.emit(ir.smemBase(smem));
  const bars = b.reg("u32", "bars");
  b.emit(ir.bin("add", "u32", bars, smem, imm(2 * BOX_BYTES)));
  const bar = (i: number) => {
    const r = b.reg("u32");
    b.emit(ir.bin("add", "u32", r, bars, imm(8 * i)));
    return r;
  };
  // full[s] at 8 s, empty[s] at 16 + 8 s.
  const full = [bar(0), bar(1)];
  const empty = [bar(2), bar(3)];
  const first = b.reg("pred");
  b.emit(ir.setp("eq", "u32", first, tid, imm(0)));
  b.if(first, false, () => {
    b.emit(ir.tmapPrefetch("src_tmap"));
    for (const f of full) b.emit(ir.mbarInit(f, 1));
    for (const e of empty) b.emit(ir.mbarInit(e, 4));
    b.emit(ir.mbarFence());
  });
  b.emit(ir.bar());
  b.emit(ir.gridDep("wait"));
  const producer = b.reg("pred");
  b.emit(ir.setp("ge", "u32", producer, tid, imm(128)));
  b.if(producer, "warpgroup", () => {
    b.emit(ir.setMaxNReg("dec", 40));
    const policy = b.reg("u64", "policy");
    b.emit(ir.createPolicy(policy, "evict_first"));
    const elected = b.reg("pred");
    b.emit(ir.setp("eq", "u32", elected, tid, imm(128)));
    b.if(elected, false, () => {
      for (let t = 0; t < TMA_TEST_TILES; t++) {
        const s = t % 2;
        b.emit(ir.mbarWait(empty[s]!, imm((Math.floor(t / 2) & 1) ^ 1)));
        b.emit(ir.mbarArrive(full[s]!, BOX_BYTES));
        const dst = b.reg("u32");
        b.emit(ir.bin("add", "u32", dst, smem, imm(s * BOX_BYTES)));
        // Every other box under an L2 cache policy.
        const hint = t % 2 === 1 ? policy : undefined;
        b.emit(ir.tmaLoad(dst, "src_tmap", [imm(0), imm(64 * t)], full[s]!, undefined, hint));
      }
    });
  }, () => {
    b.emit(ir.setMaxNReg("inc", 232));
    const sum = b.reg("u32");
    b.emit(ir.mov(sum, imm(0)));
    const lane0 = b.reg("pred");
    const lane = b.reg("u32");
    b.emit(ir.bin("and", "u32", lane, tid, imm(31)));
    b.emit(ir.setp("eq", "u32", lane0, lane, imm(0)));
    // Thread t reads word (t % 32) of row t / 2 of each box (swizzled or not, a word).
    const own = b.reg("u32");
    b.emit(ir.mad("u32", own, tid, imm(64), smem));
    for (let t = 0; t < TMA_TEST_TILES; t++) {
      const s = t % 2;
      b.emit(ir.mbarWait(full[s]!, imm(Math.floor(t / 2) & 1)));
      const w = b.reg("u32");
      b.emit(ir.lds("b32", [w], own, s * BOX_BYTES));
      b.emit(ir.bin("add", "u32", sum, sum, w));
      b.emit(ir.mbarArrive(empty[s]!, undefined, ir.when(lane0)));
    }
    b.emit(ir.namedBar(1, 128));
    const dst = b.reg("u64");
    const off = b.reg("u64");
    b.emit(ir.mulWide(off, tid, imm(4)));
    b.emit(ir.bin("add", "u64", dst, out, off));
    b.emit(ir.stg("b32", [sum], dst, 0));
  });
  return kernel("tma_ring", target, [OUT, SRC, ROWS, SRC_TMAP], 256, 2 * BOX_BYTES + 32, b);
}
