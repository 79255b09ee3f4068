/**
 * The simulator's entry point: runs a kernel-IR program on the CPU, block by
 * block, each block's threads in lockstep.
 *
 * @module
 */

import type { Kernel } from "../../ir/kernel.ts";
import { clusterStarts } from "./_cluster.ts";
import { compileKernel, indexOps } from "./_compile.ts";
import { Machine, TENSOR_STRIDE } from "./_machine.ts";
import {
  type BlockCoord,
  SimError,
  type SimLaunch,
  type SimOptions,
  type SimResult,
} from "./types.ts";

/**
 * Every block of a grid in launch order (x fastest, then y, then z): the order
 * {@link simulate} runs them in unless `options.blocks` gives another.
 *
 * @param grid The grid.
 * @returns The blocks' coordinates.
 */
export function gridBlocks(grid: readonly [number, number, number]): BlockCoord[] {
  const blocks: BlockCoord[] = [];
  for (let z = 0; z < grid[2]; z++) {
    for (let y = 0; y < grid[1]; y++) {
      for (let x = 0; x < grid[0]; x++) blocks.push([x, y, z]);
    }
  }
  return blocks;
}

/**
 * Runs a kernel-IR program on the CPU: every block of the grid (or those
 * `options.blocks` lists), one after another; within a block the body runs
 * once for all threads in lockstep, each operation for every active lane, the
 * warp-collective ones (`ldmatrix`, `mma`) per warp of 32.
 *
 * Memory: tensor parameter `i` (in parameter order, counting tensors only)
 * lives at global address `(i + 1) * 2^36` and is `launch.args[name].bytes`,
 * read and written in place. Shared memory is `kernel.dynamicSmemBytes` bytes
 * per block, starting at address 0, filled with 0xff at block start (so that
 * an unwritten f16 or f32 element reads as NaN); registers start as NaN or
 * garbage likewise. u64 registers are JS numbers, exact below 2^53 (a u64
 * result beyond that is an error).
 *
 * cp.async: a copy reads global memory when issued and lands in shared memory
 * when a `wait` completes its commit group (all but the newest `n` committed
 * groups of the waiting thread); not before.
 *
 * Errors ({@link SimError}): out-of-bounds or misaligned global and shared
 * accesses, bad cp.async sizes, non-uniform loop trip counts or uniform-if
 * conditions, `bar` in non-uniform control flow, partially active warps at
 * `ldmatrix`/`mma` (warpgroups at `wgmma`, `wgfence`, `wgcommit`, `wgwait`), wgmma
 * operand addresses that differ across the warpgroup or leave the layout, wgmma rows
 * not simulated (b1), malformed operations. Hazards (a read of shared memory an
 * outstanding cp.async will write, a race between warps with no barrier,
 * copies pending at the end, and the wgmma kinds of `HazardKind`) are collected, not
 * raised.
 *
 * wgmma: the result is computed when the wgmma is issued (the per-warpgroup pending
 * groups of `wgcommit` / `wgwait` only decide what is a hazard).
 *
 * sm90's warp-specialized kernels: a `tensormap` parameter takes no argument (the simulator
 * builds its map from the parameter's rule, the tensor's simulated address and the launch's
 * dims and strides); a `tma` copy lands when issued and completes its bytes on its mbarrier
 * at once, its bytes in flight for hazards until the reader waited on that phase. A
 * non-uniform `if` whose branches wait on mbarriers runs them as concurrent roles, taking
 * turns by `options.schedule`; a block whose every running thread waits is a deadlock
 * (a SimError naming each wait and its barrier's phase), as are mbarriers used before
 * `mbarinit`, arrivals or transaction bytes beyond what a phase expects, shared accesses
 * of a live barrier's bytes, named barriers reached by another number of threads than they
 * name, misaligned TMA boxes, `setmaxnreg` asks beyond the registers a CTA was launched with,
 * and `setmaxnreg` or a warpgroup-uniform condition that is not warpgroup-wide.
 *
 * Thread-block clusters (`kernel.cluster` N > 1): each cluster runs as one block of N CTAs
 * side by side (_cluster.ts), its CTAs' threads in lockstep but their roles as separate
 * coroutines; `options.blocks` runs the whole cluster of each block it lists. More errors:
 * a grid whose x is not a multiple of N, a plain shared access outside the thread's CTA's
 * shared memory, a multicast mask or remote arrival naming a rank outside the cluster, and a
 * remote use of a peer's mbarrier that no cluster barrier has published.
 *
 * @param kernel The kernel-IR program.
 * @param launch The grid and the arguments by parameter name.
 * @param options Blocks to run, hazard checking, the roles' schedule.
 * @returns Hazards and statistics.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { KernelBuilder } from "../../ir/builder.ts";
 * import { simulate } from "./simulate.ts";
 * const b = new KernelBuilder();
 * const out = b.reg("u64"), tid = b.reg("u32"), off = b.reg("u64"), p = b.reg("u64");
 * b.emit({ op: "param", dst: out, name: "out" });
 * b.emit({ op: "sreg", dst: tid, sreg: "tid.x" });
 * b.emit({ op: "mulwide", dst: off, a: tid, b: { kind: "imm", value: 4 } });
 * b.emit({ op: "bin", fn: "add", type: "u64", dst: p, a: out, b: off });
 * b.emit({ op: "stg", width: "b32", src: [tid], addr: p, offset: 0 });
 * const kernel = {
 *   kind: "kernel", name: "iota", target: "sm80", threads: 32, dynamicSmemBytes: 0,
 *   params: [{ name: "out", kind: "tensor", ptx: "u64", dtype: "s32" }],
 *   grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
 *   regs: b.regs, body: b.body,
 * } as const;
 * const bytes = new Uint8Array(128);
 * simulate(kernel, { grid: [1, 1, 1], args: { out: { bytes } } });
 * equal(new Int32Array(bytes.buffer)[31], 31);
 * ```
 */
export function simulate(kernel: Kernel, launch: SimLaunch, options: SimOptions = {}): SimResult {
  const grid = launch.grid;
  for (const g of grid) {
    if (!Number.isInteger(g) || g < 1) throw new SimError(`Bad grid [${grid.join(", ")}]`);
  }
  const blocks: BlockCoord[] = [];
  if (options.blocks !== undefined) {
    for (const b of options.blocks) {
      if (!b.every((v, i) => Number.isInteger(v) && v >= 0 && v < grid[i]!)) {
        throw new SimError(`Block (${b.join(", ")}) is outside the grid [${grid.join(", ")}]`);
      }
      blocks.push(b);
    }
  } else blocks.push(...gridBlocks(grid));
  const M = new Machine(
    kernel,
    indexOps(kernel),
    grid,
    launch.args,
    launch.buffers ?? [],
    options.hazards ?? true,
    options.maxHazards ?? 20,
  );
  const run = compileKernel(M, options.schedule ?? "producer-first");
  // A cluster kernel: one machine block a cluster (_cluster.ts), by its first CTA.
  const N = M.cl.N;
  const starts = N === 1 ? blocks : clusterStarts(grid, N, options.blocks ?? null);
  for (const [x, y, z] of starts) {
    M.startBlock(x, y, z);
    run();
    M.endBlock();
  }
  return {
    blocks: starts.length * N,
    hazards: M.hz.list,
    hazardCount: M.hz.count,
    stats: M.stats(),
  };
}

/**
 * The global address of extra buffer `i` of a launch ({@link SimLaunch}'s
 * `buffers`): they follow the kernel's tensor parameters (and a grouped
 * kernel's table), each {@link TENSOR_STRIDE} bytes apart.
 *
 * @param kernel The kernel.
 * @param i The buffer's index in `buffers`.
 * @returns Its address.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { simBufferAddress } from "./simulate.ts";
 * const kernel = { params: [{ name: "t", kind: "table", ptx: "u64" }] } as const;
 * equal(simBufferAddress(kernel, 0), 2 * 2 ** 36);
 * ```
 */
export function simBufferAddress(kernel: Pick<Kernel, "params">, i: number): number {
  const tensors = kernel.params.filter((p) => p.kind === "tensor" || p.kind === "table").length;
  return (tensors + 1 + i) * TENSOR_STRIDE;
}
