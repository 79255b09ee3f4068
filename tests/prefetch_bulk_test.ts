/**
 * The bulk L2 prefetch (ir/kernel.ts `PrefetchOp` with `bytes`, `cp.async.bulk.prefetch.L2`):
 * its PTX, the verifier's rules (sm90 only, a multiple of 16 bytes, no evict_last), and the
 * simulator's checks, on a hand-built kernel whose threads each ask for a run of a tensor: the
 * lines counted, a run past the tensor's end and a misaligned or odd-sized one reported.
 */

import assert from "node:assert/strict";
import * as ir from "../ir/builder.ts";
import { imm } from "../ir/builder.ts";
import type { Kernel, Operand } from "../ir/kernel.ts";
import type { Target } from "../ir/gemm.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printKernel } from "../ir/print_kernel.ts";
import { printPtx } from "../backends/ptx/mod.ts";
import { SimError, simulate } from "../backends/sim/mod.ts";
import { Emitter, rng } from "../backends/sim/_test_kernels.ts";

/** Thread t asks for `bytes` bytes of `src` from byte `t * step + skew` (4 threads). */
function kernel(target: Target, bytes: Operand, step: number, skew = 0): Kernel {
  const e = new Emitter();
  const src = e.param("src");
  const tid = e.tid();
  const at = e.addr(src, tid, step);
  const p = skew === 0 ? at : e.bin("add", "u64", at, skew);
  e.emit(ir.prefetchBulk(p, bytes));
  return {
    kind: "kernel",
    name: "bulk_prefetch",
    target,
    params: [{ name: "src", kind: "tensor", ptx: "u64" }],
    threads: 4,
    dynamicSmemBytes: 0,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: e.regs,
    body: e.body,
  };
}

function run(k: Kernel, srcBytes: number) {
  const r = rng(5);
  const bytes = new Uint8Array(srcBytes).map(() => Math.floor(r() * 256));
  return simulate(k, { grid: [1, 1, 1], args: { src: { bytes } } });
}

Deno.test("bulk prefetch: PTX and kernel-IR text", () => {
  const k = kernel("sm90", imm(512), 512);
  verifyKernel(k);
  assert.match(printKernel(k), /prefetch\.L2\.bulk \[%rd\d+\], 512/);
  assert.match(printPtx([k]), /cp\.async\.bulk\.prefetch\.L2\.global \[%rd\d+\], 512;/);
});

Deno.test("bulk prefetch: the verifier refuses it off sm90, odd sizes and evict_last", () => {
  assert.throws(() => verifyKernel(kernel("sm80", imm(512), 512)), /needs sm90/);
  assert.throws(() => verifyKernel(kernel("sm90", imm(24), 512)), /multiple of 16/);
  const k = kernel("sm90", imm(512), 512);
  const body = k.body.map((o) => (o.op === "prefetch" ? { ...o, evictLast: true } : o));
  assert.throws(() => verifyKernel({ ...k, body }), /no evict_last/);
});

Deno.test("bulk prefetch: the simulator counts the lines of each run and checks its bytes", () => {
  // Runs of 320 bytes from 0, 336, 672, 1008: lines 0-2, 2-5, 5-7, 7-10.
  const res = run(kernel("sm90", imm(320), 336), 4 * 336);
  assert.deepEqual(res.hazards, []);
  assert.equal(res.stats.l2Prefetches, 3 + 4 + 3 + 4);
  // Nothing moves: no global bytes read.
  assert.equal(res.stats.globalBytesRead, 0);
  // The last thread's run ends 16 bytes past the tensor.
  assert.throws(
    () => run(kernel("sm90", imm(352), 336), 4 * 336),
    (e) => e instanceof SimError && /Out-of-bounds L2 prefetch: 352 bytes/.test(e.message),
  );
  assert.throws(
    () => run(kernel("sm90", imm(320), 336, 8), 4 * 336 + 64),
    (e) => e instanceof SimError && /Misaligned L2 prefetch/.test(e.message),
  );
});
