/**
 * `gemm compile --emit explain`: why each kernel got its schedule, in words. For every kernel,
 * the threadblock and split-K with the rule of gemm-tile that chose them (TilePlan.why: the sizes
 * and SMs it weighed, and the constant whose comment holds the measurements), the stage count
 * with gemm-pipeline's reason (PipelinePlan.stagesWhy), the form of the kernel the lowering
 * builds from them, and which copies carry the operands' cache policies (`cache_a`,
 * `cache_b`). Without `--tune` the sizes are unknown and the defaults are the general ones.
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import type { GemmKernel } from "../ir/gemm.ts";
import { earlyDecisions } from "../passes/lower/early.ts";
import { cacheHintDecisions } from "../passes/lower/cache_hints.ts";
import { shapeText } from "../ir/print_gemm.ts";

/**
 * The explanation of each kernel's schedule, one block of lines a kernel.
 *
 * @param kernels The compiled kernels.
 * @returns The text.
 * @example
 * ```ts
 * import { match } from "node:assert/strict";
 * import { compile } from "../compiler.ts";
 * import { explainSchedules } from "./explain.ts";
 * const src = `kernel k {
 *   A: f16[M, K] row
 *   B: f16[K, N] col
 *   D: f16[M, N] row
 *   D[m, n] = A[m, k] * B[k, n]
 * }`;
 * const r = compile(src, { target: "sm90", sms: 132, sizeHints: { M: 8192, N: 8192, K: 8192 } });
 * match(explainSchedules(r.kernels), /threadblock 128x256x64.*wgmma default/);
 * ```
 */
export function explainSchedules(kernels: readonly CompiledKernel[]): string {
  return kernels.map((k) => explainOne(k.planned, k.gemm).join("\n") + "\n").join("\n");
}

/** One kernel's lines: `k` planned, `source` as checked (what its schedule gives). */
function explainOne(k: GemmKernel, source: GemmKernel): string[] {
  const tile = k.plan.tile!;
  const pipe = k.plan.pipeline!;
  const tb = tile.threadblock;
  const hints = k.sizeHints === undefined
    ? "sizes unknown (no --tune)"
    : Object.entries(k.sizeHints).map(([n, v]) => `${n}=${v}`).join(", ");
  const sms = k.sms === undefined ? "" : `, ${k.sms} SMs`;
  const out = [
    `kernel ${k.name} (target ${k.target}; ${hints}${sms}):`,
    `  threadblock ${shapeText(tb)}, split_k ${tile.splitK}: ${
      tile.why ?? "a plan written by hand"
    }${source.schedule.splitK !== undefined ? "; split_k given by the schedule" : ""}`,
    `  stages ${pipe.stages}: ${pipe.stagesWhy ?? "a plan written by hand"}`,
    `  swizzle ${tile.swizzle}: ${
      source.schedule.swizzle !== undefined ? "given by the schedule" : "the default"
    }`,
    `  runs as: ${form(k)}`,
  ];
  for (const d of earlyDecisions(k)) {
    out.push(`  pdlEarly ${d.tensor}: ${d.early ? "read before the wait" : "not early"}: ${d.why}`);
  }
  for (const d of cacheHintDecisions(k)) {
    out.push(`  ${d.key} ${d.priority} (${d.tensor}, operand ${d.role}): ${d.why}`);
  }
  return out;
}

/** The kernel's form: its MMA, how its operands arrive, and its grid. */
function form(k: GemmKernel): string {
  const tile = k.plan.tile!;
  const pipe = k.plan.pipeline!;
  const mma = k.plan.mma!;
  const parts = [
    tile.wgmma
      ? `wgmma ${shapeText(mma.instr)}`
      : `${k.math.mode === "simt" ? "SIMT" : "mma.sync"} ${mma.shape}`,
  ];
  parts.push(
    pipe.tma !== undefined
      ? "TMA copies by a producer warpgroup"
      : pipe.a.async
      ? `cp.async copies of ${pipe.a.copyBytes} bytes`
      : "synchronous copies",
  );
  if (k.grouped === true) parts.push("grouped: persistent blocks over the problem table");
  const t = pipe.tma;
  const p = t?.persistent;
  if (p !== undefined) {
    parts.push(
      p.pingPong !== undefined
        ? "persistent, ping-pong consumers"
        : p.streamK !== undefined
        ? "persistent, Stream-K"
        : "persistent",
    );
  }
  if (t?.cluster !== undefined) {
    parts.push(`clusters of ${t.cluster} along ${t.clusterAxis === "n" ? "N" : "M"}`);
  }
  if (k.pdl === true) parts.push("pdl");
  return parts.join(", ");
}
