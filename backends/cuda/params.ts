/**
 * Kernel arguments as `cuLaunchKernel` takes them: one 8-byte slot per
 * argument and an array of pointers to the slots. Pure apart from taking the
 * slots' address; no driver needed.
 *
 * @module
 */

/** One kernel argument, typed as the PTX parameter is (docs/ARCHITECTURE.md §3). */
export type KernelArg =
  | { readonly type: "u64"; readonly value: bigint }
  | { readonly type: "u32" | "s32" | "f32" | "f64"; readonly value: number };

/**
 * The `kernelParams` of `cuLaunchKernel`: one 8-byte slot per argument
 * holding its value, and an array of pointers to the slots. Both must stay
 * referenced until the launch returns (the driver copies the values then).
 *
 * @param args The arguments in parameter order.
 * @returns The slots and the pointer array.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { packKernelParams } from "./params.ts";
 * const p = packKernelParams([{ type: "u64", value: 0x1000n }, { type: "u32", value: 7 }]);
 * equal(new DataView(p.values).getUint32(8, true), 7);
 * ```
 */
export function packKernelParams(
  args: readonly KernelArg[],
): { readonly values: ArrayBuffer; readonly pointers: BigUint64Array } {
  const values = new ArrayBuffer(Math.max(8, args.length * 8));
  const dv = new DataView(values);
  args.forEach((a, i) => {
    const o = i * 8;
    switch (a.type) {
      case "u64":
        if (a.value < 0n || a.value >= 1n << 64n) {
          throw new RangeError(`Kernel argument ${i}: ${a.value} is not a u64`);
        }
        dv.setBigUint64(o, a.value, true);
        break;
      case "u32":
        if (!Number.isInteger(a.value) || a.value < 0 || a.value > 0xffffffff) {
          throw new RangeError(`Kernel argument ${i}: ${a.value} is not a u32`);
        }
        dv.setUint32(o, a.value, true);
        break;
      case "s32":
        if (!Number.isInteger(a.value) || a.value < -(2 ** 31) || a.value >= 2 ** 31) {
          throw new RangeError(`Kernel argument ${i}: ${a.value} is not an s32`);
        }
        dv.setInt32(o, a.value, true);
        break;
      case "f32":
        dv.setFloat32(o, a.value, true);
        break;
      case "f64":
        dv.setFloat64(o, a.value, true);
        break;
    }
  });
  const pointers = new BigUint64Array(new ArrayBuffer(Math.max(8, args.length * 8)));
  if (args.length > 0) {
    const base = Deno.UnsafePointer.value(Deno.UnsafePointer.of(values));
    for (let i = 0; i < args.length; i++) pointers[i] = BigInt(base) + BigInt(i * 8);
  }
  return { values, pointers };
}
