/**
 * Hand-built sm90 kernels of the warpgroup MMA operations (ir/kernel.ts WgmmaOp and its
 * fence, groups and `fence.proxy.async`): one warpgroup fills a tile of A and one of B in
 * shared memory with its thread indices, fences them for the async proxy, runs one
 * `wgmma` of a table row over zeroed accumulators, waits, and stores the accumulators to
 * `out`, each thread its own run. The PTX tests print and assemble them for sm_90a.
 *
 * @module
 */

import * as ir from "../../../ir/builder.ts";
import { imm, KernelBuilder } from "../../../ir/builder.ts";
import type { Kernel } from "../../../ir/kernel.ts";
import type { Target } from "../../../ir/gemm.ts";
import { WGMMA_BY_NAME, WGMMA_SMEM, type WgmmaShape } from "../../../ir/wgmma_table.ts";
import { kernel, OUT } from "./_fixture.ts";

/** The rows the test kernels cover: every family of operand types (none mixed, so that
 * the module keeps PTX 8.0), the smallest and largest N. */
export const WGMMA_TEST_ROWS: readonly string[] = [
  "wg.m64n256k16.f16.f32",
  "wg.m64n8k16.f16.f16",
  "wg.m64n128k16.bf16.f32",
  "wg.m64n8k8.tf32.f32",
  "wg.m64n224k32.s8.s32",
  "wg.m64n32k32.u8.s32",
];

/** The kernel's name for a row. */
export function wgmmaKernelName(row: WgmmaShape): string {
  return `wgmma_${row.name.replaceAll(".", "_")}`;
}

/**
 * One warpgroup runs one wgmma of `row` (see the module comment).
 *
 * @param row The wgmma table row.
 * @param target A target with wgmma.
 * @returns The kernel.
 */
export function wgmmaKernel(row: WgmmaShape, target: Target): Kernel {
  const b = new KernelBuilder();
  const out = b.loadParam("u64", "out");
  const tid = b.readSreg("tid.x", "tid");
  const smem = b.reg("u32", "smem");
  b.emit(ir.smemBase(smem));
  b.emit(ir.comment(`${row.name}: ${row.ptx}`));
  // A: 64 rows, B: N rows, 128 bytes each; each thread writes a word of every row pair.
  const aBytes = 64 * WGMMA_SMEM.rowBytes;
  const bytes = aBytes + row.n * WGMMA_SMEM.rowBytes;
  const at = b.reg("u32");
  b.emit(ir.mad("u32", at, tid, imm(4), smem));
  for (let off = 0; off < bytes; off += 128 * 4) b.emit(ir.sts("b32", [tid], at, off));
  b.emit(ir.proxyFence());
  b.emit(ir.bar());
  const d = Array.from({ length: row.accRegs }, () => b.reg(row.accRegType));
  for (const r of d) b.emit(ir.mov(r, imm(0)));
  const bAddr = b.reg("u32");
  b.emit(ir.bin("add", "u32", bAddr, smem, imm(aBytes)));
  b.emit(ir.wgFence());
  b.emit(ir.wgmma(row.name, d, smem, bAddr, 1));
  b.emit(ir.wgCommit());
  b.emit(ir.wgWait(0));
  const off = b.reg("u64");
  b.emit(ir.mulWide(off, tid, imm(row.accRegs * 4)));
  const dst = b.reg("u64");
  b.emit(ir.bin("add", "u64", dst, out, off));
  for (let i = 0; i < d.length; i += 4) {
    b.emit(ir.stg("b32", d.slice(i, i + 4), dst, i * 4));
  }
  return kernel(wgmmaKernelName(row), target, [OUT], 128, bytes, b);
}

/** The test kernels of {@link WGMMA_TEST_ROWS}. */
export function wgmmaKernels(target: Target): Kernel[] {
  return WGMMA_TEST_ROWS.map((n) => wgmmaKernel(WGMMA_BY_NAME.get(n)!, target));
}
