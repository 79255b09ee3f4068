/**
 * The check the sm90 warp-specialized kernels' simulation tests share (tests/cluster_test.ts
 * and tests/pingpong_test.ts): a compiled kernel simulated at `sizes` under
 * each role schedule agrees with the reference (integers exactly) with no hazards.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { CompiledKernel } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import type { RoleSchedule } from "../backends/sim/mod.ts";
import { tensorParam } from "../ir/gemm.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";

/**
 * Simulates `ck` at `sizes` once per schedule (the simulator's default when none is given) and
 * asserts no hazards and agreement with the reference, exact for an integer D.
 *
 * @param ck The compiled kernel.
 * @param sizes The sizes.
 * @param seed The inputs' seed.
 * @param schedules The role schedules (absent: the default one).
 */
export function assertAgreesUnderRoles(
  ck: CompiledKernel,
  sizes: Record<string, number>,
  seed: number,
  schedules: readonly (RoleSchedule | undefined)[] = [undefined],
): void {
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  for (const schedule of schedules) {
    const rep = simulateGemm(ck, sizes, { seed, ...(schedule ? { schedule } : {}) });
    const at = schedule ?? "default schedule";
    assert.equal(rep.sim.hazardCount, 0, `${at}: ${JSON.stringify(rep.sim.hazards[0])}`);
    const cmp = rep.comparison;
    assert.ok(
      cmp.ok,
      `${at}: ${cmp.overBound} of ${cmp.elements} over; ${JSON.stringify(cmp.first)}`,
    );
    if (!DTYPE_INFO[d.dtype].float) assert.equal(cmp.maxAbsError, 0, at);
  }
}
