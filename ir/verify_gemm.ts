/**
 * The GEMM IR verifier: the invariants every pass must keep. A failure is a
 * compiler bug, not a user error, so it throws a plain `Error` naming the
 * broken invariant.
 *
 * @module
 */

import type { GemmKernel, Shape3 } from "./gemm.ts";
import { visitEpilogue } from "./epilogue_expr.ts";
import { DTYPE_INFO } from "./dtype.ts";

/**
 * Checks a GEMM IR kernel's invariants.
 *
 * @param k The kernel.
 * @throws Error naming the first broken invariant.
 */
export function verifyGemm(k: GemmKernel): void {
  const fail = (msg: string): never => {
    throw new Error(`GEMM IR verifier: kernel "${k.name}": ${msg}`);
  };
  const names = new Set<string>();
  for (const p of k.params) {
    if (names.has(p.name)) fail(`duplicate parameter "${p.name}"`);
    names.add(p.name);
    if (p.kind === "tensor") {
      if (p.dims.length < 1 || p.dims.length > 3) {
        fail(`tensor "${p.name}" has rank ${p.dims.length}`);
      }
      if (p.align < 1 || (p.align & (p.align - 1)) !== 0) {
        fail(`tensor "${p.name}" has alignment ${p.align}`);
      }
      for (const d of p.dims) {
        if (d.kind === "sym" && !k.dims.includes(d.name)) fail(`dim "${d.name}" is not listed`);
      }
    }
  }
  const tensor = (name: string) => {
    const p = k.params.find((q) => q.name === name);
    if (p === undefined || p.kind !== "tensor") return fail(`no tensor "${name}"`);
    return p;
  };
  const a = tensor(k.problem.a.tensor);
  const b = tensor(k.problem.b.tensor);
  const d = tensor(k.problem.d.tensor);
  if (a.role !== "A" || b.role !== "B" || d.role !== "D") {
    fail("operand roles disagree with the problem");
  }
  if (a.dtype !== k.math.a || b.dtype !== k.math.b) fail("math types disagree with the operands");
  if (
    k.problem.batch === null && (k.problem.a.batched || k.problem.b.batched || k.problem.d.batched)
  ) {
    fail("a batched operand in an unbatched problem");
  }
  if (k.problem.batch !== null && !k.problem.d.batched) {
    fail("the output of a batched GEMM is not batched");
  }
  const accOk = k.math.op === "mul"
    ? DTYPE_INFO[k.math.acc].float === DTYPE_INFO[k.math.a].float
    : k.math.acc === "s32";
  if (!accOk) fail(`accumulator "${k.math.acc}" does not fit "${k.math.a}" operands`);
  visitEpilogue(k.epilogue.expr, {
    scalar: (e) => {
      const p = k.params.find((q) => q.name === e.name);
      if (p === undefined || p.kind !== "scalar") {
        fail(`epilogue reads unknown scalar "${e.name}"`);
      }
    },
    load: (e) => {
      const t = tensor(e.tensor);
      if (t.role !== "C" && t.role !== "bias") {
        fail(`epilogue reads "${e.tensor}" of role ${t.role}`);
      }
      if (e.rows && e.cols && !k.epilogue.views.some((v) => v.tensor === e.tensor)) {
        fail(`epilogue matrix "${e.tensor}" has no view`);
      }
    },
  });
  const pos = (s: Shape3 | undefined, what: string) => {
    if (s !== undefined && (s.m <= 0 || s.n <= 0 || s.k <= 0)) {
      fail(`${what} has a non-positive extent`);
    }
  };
  pos(k.schedule.threadblock, "threadblock");
  pos(k.schedule.warp, "warp");
  pos(k.schedule.mma, "mma");
  for (const key of ["stages", "swizzle", "splitK"] as const) {
    const v = k.schedule[key];
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) fail(`${key} is ${v}`);
  }
  verifyDecisions(k, fail);
}

/** The invariants of the decisions made after gemm-mma: occupancy, workspace, staging, short tiles. */
function verifyDecisions(k: GemmKernel, fail: (msg: string) => never): void {
  const { occupancy, workspace, staging, tile, warp, pipeline, mma } = k.plan;
  if (mma !== undefined && k.plan.instruction !== undefined) {
    fail("plan.instruction is left beside plan.mma");
  }
  if (mma !== undefined && pipeline !== undefined) {
    const reads = [["A", pipeline.a, mma.aLoad], ["B", pipeline.b, mma.bLoad]] as const;
    for (const [role, o, load] of reads) {
      // Tiles read by ld.shared take scale 2 (gemm-fragment-load); transposed ones keep theirs.
      if (!o.transpose && o.swizzleScale !== (load === "lds" ? 2 : 1)) {
        fail(`operand ${role} read by ${load} has swizzle scale ${o.swizzleScale}`);
      }
    }
  }
  if (occupancy !== undefined && occupancy.blocksPerSm !== 1 && occupancy.blocksPerSm !== 2) {
    fail(`plan.occupancy has ${occupancy.blocksPerSm} blocks per SM`);
  }
  if (workspace !== undefined) {
    // Stream-K's records have two parts (passes/workspace.ts STREAM_K_PARTS).
    const streamK = pipeline?.tma?.persistent?.streamK !== undefined;
    const splitK = tile?.splitK ?? 1;
    const parts = streamK ? 2 : splitK;
    if ((workspace === null) !== (parts === 1)) {
      fail(`plan.workspace is ${workspace === null ? "absent" : "present"} at split_k ${splitK}`);
    }
    if (workspace !== null) {
      const w = workspace;
      const threads = warp?.threads ?? 0;
      if (w.perTile !== w.headerBytes + parts * w.partialBytes) {
        fail(`plan.workspace: ${w.perTile} bytes a tile is not the header and ${parts} partials`);
      }
      if (w.headerBytes < 4 || w.headerBytes % 16 !== 0) {
        fail(`plan.workspace: a ${w.headerBytes}-byte header`);
      }
      if (w.chunkBytes % w.accBytes !== 0 || w.partialBytes % (w.chunkBytes * threads) !== 0) {
        fail(`plan.workspace: partials of ${w.partialBytes} bytes are not whole chunks a thread`);
      }
    }
  }
  if (staging !== undefined && staging !== null) {
    const s = staging;
    if (k.problem.d.layout !== "row") fail("plan.staging stages a column-major D");
    if (s.tiles < 1 || s.stride % 16 !== 0 || s.stride < s.perRow * s.vecBytes) {
      fail(`plan.staging: ${s.tiles} tile rows of ${s.stride} bytes`);
    }
    const lanes = s.readLanes;
    if ((lanes & (lanes - 1)) !== 0 || lanes > 32 || lanes < s.perRow || lanes >= 2 * s.perRow) {
      fail(`plan.staging: ${lanes} lanes do not read rows of ${s.perRow} vectors`);
    }
    if (warp !== undefined && s.perRow * s.vecBytes !== warp.warp.n * s.elemBytes) {
      fail(`plan.staging: ${s.perRow} vectors of ${s.vecBytes} bytes do not make a warp-tile row`);
    }
    if (pipeline !== undefined && warp !== undefined) {
      const need = (warp.threads / 32) * s.regionBytes;
      if (need > pipeline.smemBytes) {
        fail(`plan.staging: ${need} bytes exceed the pipeline's ${pipeline.smemBytes}`);
      }
    }
  }
  const short = k.plan.short;
  if (short !== undefined && short !== null) {
    // The short tiles run in the same launch: the same block, within its shared memory.
    if (k.grouped !== true) fail("plan.short in a kernel that is not grouped");
    if (tile === undefined || warp === undefined || pipeline === undefined) {
      return fail("plan.short before the kernel's own plan");
    }
    const st = short.tile?.threadblock, sw = short.warp, sp = short.pipeline;
    if (st === undefined || sw === undefined || sp === undefined || short.mma === undefined) {
      return fail("plan.short is not fully planned");
    }
    if (2 * st.m !== tile.threadblock.m || st.n !== tile.threadblock.n) {
      fail(
        `plan.short threadblock ${st.m}x${st.n} is not half of ${tile.threadblock.m}x${tile.threadblock.n}`,
      );
    }
    if (sw.threads !== warp.threads) {
      fail(`plan.short has ${sw.threads} threads, not ${warp.threads}`);
    }
    if (sp.smemBytes > pipeline.smemBytes) {
      fail(
        `plan.short needs ${sp.smemBytes} bytes of shared memory, the kernel ${pipeline.smemBytes}`,
      );
    }
  }
}
