/**
 * From a launch manifest (docs/ARCHITECTURE.md §3) to a launch: the kernel arguments in
 * ABI order, and the checks a launch must pass before it is attempted
 * (block size, grid limits, dynamic shared memory against the device).
 * Pure functions: no driver needed.
 *
 * @module
 */

import { launchContract, withStrideDefaults } from "../ptx/contract.ts";
import type { KernelManifest } from "../ptx/manifest.ts";
import type { KernelArg } from "./params.ts";
import {
  cbuf,
  CU_LAUNCH_ATTRIBUTE,
  CU_LAUNCH_ATTRIBUTE_LAYOUT,
  CU_LAUNCH_CONFIG,
  type Driver,
  ptrValue,
} from "./symbols.ts";
import { check } from "./errors.ts";
import { tensorMapArgs } from "../../ir/tensor_map.ts";
import { withoutTensorMaps } from "./tensor_map.ts";

/**
 * The arguments of a launch, in the manifest's parameter order: a `u64`
 * device address per tensor, a `u32` per runtime dimension, each scalar
 * as its PTX type (`f32`, `f64`, `s32`), and each tensor map (sm90) as its
 * encoder's arguments (ir/tensor_map.ts `tensorMapArgs`, checked here; encoded
 * when packed: `Cuda.launch` does it).
 *
 * @param manifest The kernel's manifest.
 * @param tensors Device addresses by tensor name.
 * @param sizes Runtime sizes by dimension name (and strides by name; dense when left out).
 * @param scalars Scalar values by name.
 * @returns The arguments; throws naming any that is missing or out of range.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { kernelArgs } from "./launch.ts";
 * const args = kernelArgs({
 *   name: "k", entry: "k", target: "sm_80", block: [128, 1, 1], dynamicSmemBytes: 0,
 *   gridPlan: { tileM: 64, tileN: 64, swizzle: 1, splitK: 1, m: "M", n: "N", batch: null },
 *   params: [
 *     { name: "A", kind: "tensor", ptx: "u64" },
 *     { name: "M", kind: "dim", ptx: "u32" },
 *     { name: "alpha", kind: "scalar", ptx: "f32" },
 *   ],
 * }, new Map([["A", 0x7f0000000000n]]), { M: 96 }, new Map([["alpha", 1.5]]));
 * equal(args[1]?.type, "u32");
 * equal(args[1]?.value, 96);
 * ```
 */
export function kernelArgs(
  manifest: KernelManifest,
  tensors: ReadonlyMap<string, bigint>,
  sizes: Readonly<Record<string, number>>,
  scalars: ReadonlyMap<string, number>,
): KernelArg[] {
  // Stride parameters left out of `sizes` take their dense values.
  const strided = manifest.params.some((p) => p.kind === "stride" && sizes[p.name] === undefined);
  const sz = strided
    ? withStrideDefaults(launchContract(withoutTensorMaps(manifest)), sizes)
    : sizes;
  return manifest.params.map((p): KernelArg => {
    switch (p.kind) {
      case "table": // a grouped kernel's problem table: a device address, as a tensor's
      case "tensor": {
        const v = tensors.get(p.name);
        if (v === undefined) throw new Error(`No device buffer for tensor "${p.name}"`);
        return { type: "u64", value: v };
      }
      case "count": // a grouped kernel's problem count: a u32, as a dimension's
      case "dim": {
        const v = sizes[p.name];
        if (v === undefined) throw new Error(`No size for dimension "${p.name}"`);
        if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
          throw new RangeError(`Size ${p.name}=${v} does not fit a u32`);
        }
        return { type: "u32", value: v };
      }
      case "stride": {
        // A stride parameter (DESIGN §6.1): its value in elements comes with the sizes.
        const v = sz[p.name];
        if (v === undefined || !Number.isInteger(v) || v < 0 || v >= 2 ** 63) {
          throw new RangeError(`Stride ${p.name}=${v} is not an integer in 0..2^63-1`);
        }
        return { type: "u64", value: BigInt(v) };
      }
      case "scalar": {
        const v = scalars.get(p.name);
        if (v === undefined) throw new Error(`No value for scalar "${p.name}"`);
        if (p.ptx === "u64" || p.ptx === "tmap") {
          throw new Error(`Scalar "${p.name}" passed as .${p.ptx}`);
        }
        if (p.ptx === "s32" && (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31)) {
          throw new RangeError(`Scalar ${p.name}=${v} is not an s32`);
        }
        return { type: p.ptx, value: v };
      }
      case "tensormap": {
        // A TMA tensor map (§3.4): its rule evaluated at the tensor's address and the sizes.
        const spec = p.tmap;
        if (spec === undefined) throw new Error(`Tensor map "${p.name}" has no rule`);
        const a = tensors.get(spec.tensor);
        if (a === undefined) {
          throw new Error(`No device buffer for tensor "${spec.tensor}" (tensor map "${p.name}")`);
        }
        return { type: "tmap", tensor: spec.tensor, value: tensorMapArgs(spec, a, sz) };
      }
    }
  });
}

/** What {@link launchProblems} checks a launch against. */
export interface LaunchLimits {
  readonly maxGrid: readonly [number, number, number];
  readonly maxSharedPerBlockOptin: number;
}

/**
 * Why a kernel's PTX target cannot run on a device, or null: an architecture-specific
 * target (`sm_90a`) runs only on its own compute capability (9.0), which the driver would
 * otherwise report as an opaque load error.
 *
 * @param name The kernel's name.
 * @param target The manifest's target (`sm_80`, `sm_90a`).
 * @param cc The device's compute capability.
 * @returns The problem, or null.
 * @example
 * ```ts
 * import { equal, match } from "node:assert/strict";
 * import { targetProblem } from "./launch.ts";
 * equal(targetProblem("k", "sm_90a", [9, 0]), null);
 * equal(targetProblem("k", "sm_80", [9, 0]), null);
 * match(targetProblem("k", "sm_90a", [8, 0])!, /compute capability 9\.0/);
 * ```
 */
export function targetProblem(
  name: string,
  target: string,
  cc: readonly [number, number],
): string | null {
  const m = /^sm_(\d)(\d)a$/.exec(target);
  if (m === null || (Number(m[1]) === cc[0] && Number(m[2]) === cc[1])) return null;
  return `Kernel "${name}" is compiled for ${target}, which runs only on compute capability ` +
    `${m[1]}.${m[2]}; this device is ${cc[0]}.${cc[1]} (compile it for another target)`;
}

/**
 * Why a launch cannot run on a device (empty when it can): block size, grid
 * dimensions and dynamic shared memory.
 *
 * @param name The kernel (for messages).
 * @param grid The grid.
 * @param block The block.
 * @param dynamicSmemBytes Dynamic shared memory per block.
 * @param limits The device's limits.
 * @returns One message per problem.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { launchProblems } from "./launch.ts";
 * const p = launchProblems("k", [1, 70000, 1], [128, 1, 1], 0,
 *   { maxGrid: [2147483647, 65535, 65535], maxSharedPerBlockOptin: 232448 });
 * equal(p.length, 1);
 * ```
 */
export function launchProblems(
  name: string,
  grid: readonly [number, number, number],
  block: readonly [number, number, number],
  dynamicSmemBytes: number,
  limits: LaunchLimits,
): string[] {
  const out: string[] = [];
  const threads = block[0] * block[1] * block[2];
  if (!(threads >= 1 && threads <= 1024)) {
    out.push(`Kernel "${name}": a block of ${threads} threads is not 1..1024`);
  }
  const axes = ["x", "y", "z"] as const;
  for (let i = 0; i < 3; i++) {
    const g = grid[i]!;
    if (!Number.isInteger(g) || g < 1 || g > limits.maxGrid[i]!) {
      out.push(
        `Kernel "${name}": grid ${axes[i]} = ${g} is outside 1..${
          limits.maxGrid[i]
        } on this device`,
      );
    }
  }
  if (dynamicSmemBytes > limits.maxSharedPerBlockOptin) {
    out.push(
      `Kernel "${name}" needs ${dynamicSmemBytes} bytes of shared memory per block; ` +
        `this device allows ${limits.maxSharedPerBlockOptin}`,
    );
  }
  return out;
}

/**
 * Bytes of a programmatic dependent launch's configuration ({@link writePdlConfig}): the
 * `CUlaunchConfig` (56 bytes), then its one `CUlaunchAttribute` (72 bytes).
 */
export const PDL_CONFIG_BYTES: number = CU_LAUNCH_CONFIG.SIZE + CU_LAUNCH_ATTRIBUTE_LAYOUT.SIZE;

/**
 * Writes the configuration of a programmatic dependent launch into `buf`
 * ({@link PDL_CONFIG_BYTES} bytes, which must not move: an explicit `ArrayBuffer`): the
 * `CUlaunchConfig` at 0 (grid, block, dynamic shared memory, the stream, `attrs` pointing at
 * byte {@link CU_LAUNCH_CONFIG}.SIZE of `buf`, `numAttrs` 1), then the attribute
 * `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` with
 * `programmaticStreamSerializationAllowed` = 1; every other byte 0. Offsets: symbols.ts
 * {@link CU_LAUNCH_CONFIG} and {@link CU_LAUNCH_ATTRIBUTE_LAYOUT}.
 *
 * @param buf The buffer.
 * @param grid The grid.
 * @param block The block.
 * @param smem Dynamic shared memory in bytes.
 * @param stream The stream handle (null: the default stream).
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { PDL_CONFIG_BYTES, writePdlConfig } from "./launch.ts";
 * const buf = new Uint8Array(new ArrayBuffer(PDL_CONFIG_BYTES));
 * writePdlConfig(buf, [4, 2, 1], [128, 1, 1], 32768, null);
 * const v = new DataView(buf.buffer);
 * equal(v.getUint32(4, true), 2); // gridDimY
 * equal(v.getUint32(24, true), 32768); // sharedMemBytes
 * equal(v.getBigUint64(32, true), 0n); // hStream: the default stream
 * equal(v.getUint32(48, true), 1); // numAttrs
 * equal(v.getUint32(56, true), 6); // the attribute's id
 * equal(v.getInt32(64, true), 1); // programmaticStreamSerializationAllowed
 * ```
 */
export function writePdlConfig(
  buf: Uint8Array,
  grid: readonly [number, number, number],
  block: readonly [number, number, number],
  smem: number,
  stream: Deno.PointerValue | null,
): void {
  if (buf.byteLength < PDL_CONFIG_BYTES) {
    throw new RangeError(`A PDL launch configuration needs ${PDL_CONFIG_BYTES} bytes`);
  }
  const C = CU_LAUNCH_CONFIG, A = CU_LAUNCH_ATTRIBUTE_LAYOUT;
  buf.fill(0, 0, PDL_CONFIG_BYTES);
  const v = new DataView(buf.buffer, buf.byteOffset, PDL_CONFIG_BYTES);
  v.setUint32(C.GRID_DIM_X, grid[0], true);
  v.setUint32(C.GRID_DIM_Y, grid[1], true);
  v.setUint32(C.GRID_DIM_Z, grid[2], true);
  v.setUint32(C.BLOCK_DIM_X, block[0], true);
  v.setUint32(C.BLOCK_DIM_Y, block[1], true);
  v.setUint32(C.BLOCK_DIM_Z, block[2], true);
  v.setUint32(C.SHARED_MEM_BYTES, smem, true);
  v.setBigUint64(C.H_STREAM, stream === null ? 0n : ptrValue(stream), true);
  v.setBigUint64(C.ATTRS, ptrValue(Deno.UnsafePointer.of(buf)) + BigInt(C.SIZE), true);
  v.setUint32(C.NUM_ATTRS, 1, true);
  v.setUint32(C.SIZE + A.ID, CU_LAUNCH_ATTRIBUTE.PROGRAMMATIC_STREAM_SERIALIZATION, true);
  v.setInt32(C.SIZE + A.VALUE, 1, true); // programmaticStreamSerializationAllowed
}

/** The configuration of PDL launches, rewritten by each (the driver reads it during the call). */
let pdlConfig: Uint8Array | null = null;

/**
 * Throws unless the driver can make a programmatic dependent launch (`cuLaunchKernelEx`,
 * CUDA 11.8 and later).
 *
 * @param driver The driver.
 * @param what What is launched, for the message.
 * @throws {Error} Naming the launch and the missing function.
 */
export function requirePdl(driver: Driver, what: string): void {
  if (driver.cuLaunchKernelEx === null) {
    throw new Error(
      `Cannot launch ${what} with pdl: the CUDA driver ${driver.path} lacks cuLaunchKernelEx ` +
        "(CUDA 11.8 and later)",
    );
  }
}

/**
 * `cuLaunchKernel` with packed parameters, raising the driver's error (a
 * `CudaError` naming `what`) when it fails: the one launch call of the ordinary
 * and the grouped launch. With `pdl`, `cuLaunchKernelEx` instead, as a programmatic
 * dependent of the previous work in the stream ({@link writePdlConfig}).
 *
 * @param driver The driver.
 * @param fn The function handle.
 * @param grid The grid.
 * @param block The block.
 * @param smem Dynamic shared memory in bytes.
 * @param stream The stream handle (null: the default stream).
 * @param pointers The parameter pointers (backends/cuda/params.ts).
 * @param what What is launched, for the message.
 * @param pdl Launch as a programmatic dependent (default false).
 * @throws {Error} With `pdl`, when the driver lacks `cuLaunchKernelEx`.
 */
export function launchPacked(
  driver: Driver,
  fn: Deno.PointerValue,
  grid: readonly [number, number, number],
  block: readonly [number, number, number],
  smem: number,
  stream: Deno.PointerValue | null,
  pointers: BigUint64Array,
  what: string,
  pdl = false,
): void {
  if (pdl) {
    requirePdl(driver, what);
    const config = pdlConfig ??= cbuf(PDL_CONFIG_BYTES);
    writePdlConfig(config, grid, block, smem, stream);
    const code = driver.cuLaunchKernelEx!(config, fn, pointers, null);
    if (code !== 0) check(driver, "cuLaunchKernelEx", code, `${what} grid [${grid}] (pdl)`);
    return;
  }
  const code = driver.cuLaunchKernel(
    fn,
    grid[0],
    grid[1],
    grid[2],
    block[0],
    block[1],
    block[2],
    smem,
    stream,
    pointers,
    null,
  );
  if (code !== 0) check(driver, "cuLaunchKernel", code, `${what} grid [${grid}]`);
}
