/**
 * The textual form of the GEMM IR: stable, one fact a line, for golden tests
 * and `gemm compile --emit ir`.
 *
 * @module
 */

import { fnOf, foldEpilogue } from "./epilogue_expr.ts";
import type { ClusterAxis, DimRef, EpilogueExpr, GemmKernel, Schedule, Shape3 } from "./gemm.ts";

function dim(d: DimRef): string {
  return d.kind === "sym" ? d.name : String(d.value);
}

/** A cluster as its schedule line writes it: `2` along M, `1x2` along N. */
function clusterText(ctas: number, axis: ClusterAxis | undefined): string {
  return axis === "n" ? `1x${ctas}` : `${ctas}`;
}

/**
 * A tile shape as schedule lines write it, `MxNxK`.
 *
 * @param s The shape.
 * @returns The text.
 */
export function shapeText(s: Shape3): string {
  return `${s.m}x${s.n}x${s.k}`;
}

/**
 * Prints an epilogue expression in infix form, fully parenthesised.
 *
 * @param e The expression.
 * @param ix The user's index names, for tensor loads.
 * @returns The text.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { printEpilogueExpr } from "./print_gemm.ts";
 * const t = printEpilogueExpr({ op: "unary", fn: "relu", x: { op: "acc" } }, { m: "m", n: "n", batch: null });
 * equal(t, "relu(acc)");
 * ```
 */
export function printEpilogueExpr(
  e: EpilogueExpr,
  ix: { readonly m: string; readonly n: string; readonly batch: string | null },
): string {
  const call = (n: EpilogueExpr, xs: readonly string[]) => {
    const { name, row } = fnOf(n)!;
    const s = row.spelling;
    if (s.kind === "prefix") return `${s.symbol}(${xs[0]})`;
    if (s.kind === "infix") return `(${xs[0]} ${s.symbol} ${xs[1]})`;
    return `${name}(${xs.join(", ")})`;
  };
  return foldEpilogue<string>(e, {
    acc: () => "acc",
    const: (c) => String(c.value),
    scalar: (c) => c.name,
    load: (l) => {
      const idx = [
        ...(l.batched && ix.batch !== null ? [ix.batch] : []),
        ...(l.rows ? [ix.m] : []),
        ...(l.cols ? [ix.n] : []),
      ];
      return `${l.tensor}[${idx.join(", ")}]`;
    },
    unary: call,
    binary: call,
    clamp: call,
    cast: (c, [x]) => `${c.to}(${x})`,
  });
}

/**
 * Prints a schedule's settings, `-` for those not yet chosen; `scheduler`, `cluster`, `cache_a`,
 * `cache_b` and `rotate_k` only where the schedule has them. Each pair but a `-` is the schedule line
 * that gives it: the lines parse back to the same schedule.
 *
 * @param s The schedule.
 * @returns One line of `key value` pairs.
 */
export function printSchedule(s: Schedule): string {
  const f = (v: Shape3 | number | undefined) =>
    v === undefined ? "-" : typeof v === "number" ? String(v) : shapeText(v);
  return `threadblock ${f(s.threadblock)}, warp ${f(s.warp)}, mma ${f(s.mma)}, stages ${
    f(s.stages)
  }, swizzle ${f(s.swizzle)}, split_k ${f(s.splitK)}${
    s.scheduler === undefined ? "" : `, scheduler ${s.scheduler}`
  }${s.cluster === undefined ? "" : `, cluster ${clusterText(s.cluster, s.clusterAxis)}`}${
    s.cacheA === undefined ? "" : `, cache_a ${s.cacheA}`
  }${s.cacheB === undefined ? "" : `, cache_b ${s.cacheB}`}${
    s.rotateK === undefined ? "" : `, rotate_k ${s.rotateK}`
  }`;
}

/** The plan lines of the decisions after gemm-mma (occupancy, workspace, staging). */
function printDecisions(k: GemmKernel): string[] {
  const out: string[] = [];
  const pl = k.plan;
  if (pl.occupancy !== undefined) {
    out.push(`  plan.occupancy blocks/SM ${pl.occupancy.blocksPerSm}`);
  }
  if (pl.workspace === null) out.push(`  plan.workspace none`);
  else if (pl.workspace !== undefined) {
    const w = pl.workspace;
    out.push(
      `  plan.workspace param ${w.param}, ${w.perTile} bytes a tile: header ${w.headerBytes}, ` +
        `partials of ${w.partialBytes} bytes (${w.accBytes}-byte registers in ${w.chunkBytes}-byte chunks)`,
    );
  }
  if (pl.staging === null) out.push(`  plan.staging direct`);
  else if (pl.staging !== undefined) {
    const s = pl.staging;
    out.push(
      `  plan.staging ${s.mode}: ${s.tiles} accumulator-tile rows a chunk, ${s.regionBytes} bytes ` +
        `a warp, rows of ${s.stride} bytes, ${s.perRow} x ${s.vecBytes}-byte reads a row` +
        (s.readLanes !== s.perRow ? ` (by ${s.readLanes} lanes)` : "") + ", " +
        `${s.elemBytes}-byte elements`,
    );
  }
  // Only grouped kernels have a short plan to report (absent or null elsewhere).
  if (pl.short === null && k.grouped === true) out.push(`  plan.short none`);
  else if (pl.short !== undefined && pl.short !== null) {
    const t = pl.short;
    out.push(
      `  plan.short threadblock ${shapeText(t.tile!.threadblock)}, warp ${
        shapeText(t.warp!.warp)
      }, ` +
        `warps ${t.warp!.warpsM}x${t.warp!.warpsN}, smem ${t.pipeline!.smemBytes} bytes, ` +
        `A by ${t.mma!.aLoad}, B by ${t.mma!.bLoad}, staging ${t.staging?.mode ?? "direct"}`,
    );
  }
  return out;
}

/**
 * Prints a GEMM IR kernel.
 *
 * @param k The kernel.
 * @returns Its textual form, ending in a newline.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { printGemm } from "./print_gemm.ts";
 * const r = check("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * ok(printGemm(r.kernels[0]!).startsWith("gemm @k target sm80 {"));
 * // A grouped kernel (DESIGN §6.2) says so after its name.
 * const g = check("kernel e grouped { X: bf16[M, K]\n W: bf16[K, N] col\n Y: bf16[M, N]\n Y[m, n] = X[m, k] * W[k, n] }");
 * ok(printGemm(g.kernels[0]!).startsWith("gemm @e grouped target sm80 {"));
 * // A sparse A (DESIGN §6.3) says so, and its metadata parameter follows it.
 * const s = check("kernel s { A: f16[M, K] row sparse\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }");
 * ok(printGemm(s.kernels[0]!).includes("tensor A: f16[M, K] row sparse align 8 role A\n  tensor A_meta: metadata of f16[M, K] row role A_meta\n"));
 * ```
 */
export function printGemm(k: GemmKernel): string {
  const out: string[] = [];
  out.push(`gemm @${k.name}${k.grouped === true ? " grouped" : ""} target ${k.target} {`);
  out.push(...printParams(k));
  out.push(`  dims (${k.dims.join(", ")})`);
  if (k.strides !== undefined) out.push(`  strides (${k.strides.join(", ")})`);
  const pr = k.problem;
  out.push(
    `  problem m ${dim(pr.m)} (${pr.indices.m}), n ${dim(pr.n)} (${pr.indices.n}), k ${
      dim(pr.k)
    } (${pr.indices.k}), batch ${
      pr.batch === null ? "none" : `${dim(pr.batch)} (${pr.indices.batch})`
    }`,
  );
  for (const [role, v] of [["A", pr.a], ["B", pr.b], ["D", pr.d]] as const) {
    out.push(`  operand ${role} = ${v.tensor} ${v.layout}${v.batched ? " batched" : ""}`);
  }
  const m = k.math;
  out.push(
    `  math ${m.a} x ${m.b} -> ${m.acc}, mma ${m.mmaA} x ${m.mmaB}, mode ${m.mode}, op ${m.op}`,
  );
  for (const v of k.epilogue.views) {
    out.push(`  epilogue-operand ${v.tensor} ${v.layout}${v.batched ? " batched" : ""}`);
  }
  out.push(
    `  epilogue ${k.epilogue.compute}: ${pr.d.tensor} = ${
      printEpilogueExpr(k.epilogue.expr, pr.indices)
    }`,
  );
  out.push(`  schedule ${printSchedule(k.schedule)}`);
  out.push(...printPlan(k));
  out.push(...printDecisions(k));
  out.push(`}`);
  return out.join("\n") + "\n";
}

/** printGemm's lines of the parameters: each tensor, with its shape, layout and role, and each
 * scalar. */
function printParams(k: GemmKernel): string[] {
  const out: string[] = [];
  for (const p of k.params) {
    if (p.kind === "tensor" && p.role === "A_meta") {
      // Its storage is u32 words (ir/gemm.ts Param): say whose pattern, over which dims.
      out.push(
        `  tensor ${p.name}: metadata of ${p.dtype}[${
          p.dims.map(dim).join(", ")
        }] ${p.layout} role A_meta`,
      );
    } else if (p.kind === "tensor") {
      out.push(
        `  tensor ${p.name}: ${p.dtype}[${p.dims.map(dim).join(", ")}] ${p.layout}${
          p.sparse === true ? " sparse" : ""
        }${
          p.strides === undefined ? "" : ` strides(${p.strides.map(dim).join(", ")})`
        } align ${p.align}` +
          ` role ${p.role}`,
      );
    } else {
      out.push(
        `  scalar ${p.name}: ${p.dtype}${p.default === null ? "" : ` = ${p.default}`}`,
      );
    }
  }
  return out;
}

/** printGemm's lines of the plan the passes filled in so far (none before gemm-tile). */
function printPlan(k: GemmKernel): string[] {
  const out: string[] = [];
  const pl = k.plan;
  if (pl.tile !== undefined) {
    const t = pl.tile;
    out.push(
      `  plan.tile threadblock ${
        shapeText(t.threadblock)
      }, swizzle ${t.swizzle}, split_k ${t.splitK}, ` +
        `partial m ${t.partial.m} n ${t.partial.n} k ${t.partial.k}` +
        (t.smallGrid ? ", small grid" : "") + (t.skinny ? ", skinny" : "") +
        (t.deepPipeline ? ", deep pipeline" : "") + (t.persistent ? ", persistent" : "") +
        (t.cluster !== undefined ? `, cluster ${t.cluster}` : ""),
    );
  }
  if (pl.warp !== undefined) {
    const w = pl.warp;
    out.push(
      `  plan.warp warp ${shapeText(w.warp)}, warps ${w.warpsM}x${w.warpsN}, threads ${w.threads}`,
    );
  }
  if (pl.pipeline !== undefined) {
    const p = pl.pipeline;
    out.push(
      `  plan.pipeline stages ${p.stages}, smem ${p.smemBytes} bytes, wait_group ${p.waitDepth}`,
    );
    for (const [n, o] of [["A", p.a], ["B", p.b]] as const) {
      out.push(
        `  plan.smem ${n}: ${o.contiguous}-contiguous${
          o.transpose ? " (transposed)" : ""
        }, ${o.rows} rows x ${o.rowBytes} bytes, ` +
          `xor-swizzle shift ${o.swizzleShift} scale ${o.swizzleScale}, offset ${o.offset}, stage ${o.stageBytes} bytes, ` +
          `${
            o.async ? `cp.async ${o.copyBytes}` : `sync copy ${o.copyBytes}`
          } bytes x ${o.copiesPerThread}/thread`,
      );
    }
  }
  if (pl.instruction !== undefined) {
    const m = pl.instruction;
    out.push(
      `  plan.instruction ${m.shape} (${
        shapeText(m.instr)
      }), k-steps ${m.kSteps}, ~${m.regEstimate} registers`,
    );
  }
  if (pl.mma !== undefined) {
    const m = pl.mma;
    out.push(
      `  plan.mma ${m.shape} (${shapeText(m.instr)}), A by ${m.aLoad}, B by ${m.bLoad}, ` +
        `k-steps ${m.kSteps}, ~${m.regEstimate} registers`,
    );
  }
  return out;
}
