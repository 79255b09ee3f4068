/**
 * The skinny tests' kernel, compile helper and split-K order check (tests/skinny_test.ts, tests/skinny_sm90_test.ts).
 *
 * @module
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { type Target, tensorParam } from "../ir/gemm.ts";
import { gridFor } from "../ir/kernel.ts";
import { simArgs } from "../harness/simulate_gemm.ts";
import { randomArgs } from "../harness/inputs.ts";
import { gridBlocks, simulate } from "../backends/sim/mod.ts";
import { workspaceArgs } from "../harness/workspace.ts";

/** The benchmark's kernel; s8 stores its s32 sums (with a bias: s32 too). */
export const BENCH = (t: string, extra = "") => {
  const sum = extra === "" ? "A[m, k] * B[k, n]" : "relu(A[m, k] * B[k, n] + bias[n])";
  const s8 = t === "s8";
  return `kernel sk {
  A: ${t}[M, K] row
  B: ${t}[K, N] col
  ${extra === "" ? "" : `bias: ${s8 ? "s32" : "f32"}[N]`}
  D: ${s8 ? "s32" : t}[M, N] row
  D[m, n] = ${s8 ? sum : `${t}(${sum})`}
${extra}}
`;
};

/** Compiles `src` for the H200's 132 SMs with `hints` as the sizes (sm80 unless `target`). */
export function hinted(
  src: string,
  hints: Record<string, number>,
  target?: Target,
): CompiledKernel {
  const r = compile(src, {
    file: "sk.gemm",
    sizeHints: hints,
    sms: 132,
    ...(target === undefined ? {} : { target }),
  });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/**
 * Simulates a split-K kernel at `sizes` twice, its blocks in grid order and reversed, on the
 * same random inputs with D poisoned (0xff), and checks that D was written and that both runs
 * wrote the same bytes.
 */
export function assertOrderFree(
  ck: CompiledKernel,
  sizes: Record<string, number>,
  seed: number,
): void {
  const run = (reverse: boolean) => {
    const args = randomArgs(ck.gemm, sizes, seed, {});
    const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor).name;
    args.tensors.get(d)!.fill(0xff);
    const grid = gridFor(ck.kernel.grid, sizes);
    const blocks = gridBlocks(grid);
    const ws = workspaceArgs(ck.kernel, sizes).get("workspace")!;
    simulate(ck.kernel, { grid, args: { ...simArgs(args), workspace: { bytes: ws } } }, {
      blocks: reverse ? blocks.reverse() : blocks,
    });
    return args.tensors.get(d)!;
  };
  const a = run(false);
  const b = run(true);
  assert.ok(a.some((x) => x !== 0xff), "D was written");
  assert.deepEqual(a, b);
}
