/**
 * The gemmc simulator: executes the kernel IR (ir/kernel.ts), the same program
 * the PTX backend prints, on the CPU, block by block with each block's
 * threads in lockstep. It checks every access (bounds, alignment), reports
 * shared-memory hazards (reads before a cp.async landed, races between warps
 * without a barrier, unbalanced cp.async groups; for wgmma, accumulators touched
 * before `wgwait` or written without `wgfence`, operands overwritten while pending or
 * written without `proxyfence`, unbalanced groups; for sm90's TMA copies and mbarriers,
 * reads before the wait, stages reloaded while read or before they were consumed,
 * unpublished barriers) and runs warp-specialized roles as coroutines; it gathers statistics
 * (warp-instructions by kind, global and shared bytes, MMAs, bank conflicts
 * in wavefronts). Numerics are those of `numerics/`. A cluster kernel's clusters run as blocks
 * of several CTAs whose shared memories the multicast copies and remote arrivals reach
 * (_cluster.ts).
 *
 * @module
 */

export * from "./simulate.ts";
export * from "./types.ts";
