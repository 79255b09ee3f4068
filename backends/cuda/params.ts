/**
 * Kernel arguments as `cuLaunchKernel` takes them: one 8-byte slot per
 * argument (a tensor map: 128 bytes, 64-byte aligned) and an array of
 * pointers to the slots. Pure apart from taking the slots' address (and the
 * tensor-map encoder a caller passes); no driver needed.
 *
 * @module
 */

import { TENSOR_MAP_BYTES, type TensorMapArgs } from "../../ir/tensor_map.ts";
import { TENSOR_MAP_ALIGN, type TensorMapEncoder } from "./tensor_map.ts";

/** One kernel argument, typed as the PTX parameter is (docs/ARCHITECTURE.md §3). */
export type KernelArg =
  | { readonly type: "u64"; readonly value: bigint }
  | { readonly type: "u32" | "s32" | "f32" | "f64"; readonly value: number }
  | {
    /** A tensor map by value (sm90's TMA, §3.4): 128 bytes at a 64-byte aligned slot. */
    readonly type: "tmap";
    /** The tensor it maps, for messages. */
    readonly tensor: string;
    /** The encoder's arguments (encoded when packed), or an encoded map's 128 bytes. */
    readonly value: TensorMapArgs | Uint8Array;
  };

/** Packed kernel arguments: the slots, their addresses, and each slot's byte offset. */
export interface PackedParams {
  /** The slots (8 bytes a value, 128 at a 64-byte aligned address a tensor map). */
  readonly values: ArrayBuffer;
  /** `kernelParams`: the address of each argument's slot. */
  readonly pointers: BigUint64Array;
  /** Each argument's slot, as a byte offset into `values`. */
  readonly offsets: readonly number[];
}

/**
 * The `kernelParams` of `cuLaunchKernel`: one 8-byte slot per argument
 * holding its value (a tensor map: 128 bytes, 64-byte aligned in memory), and
 * an array of pointers to the slots. Both must stay referenced until the
 * launch returns (the driver copies the values then). A tensor map given as
 * its encoder's arguments is encoded into its slot by `encode`.
 *
 * @param args The arguments in parameter order.
 * @param encode Encodes a tensor map (backends/cuda/tensor_map.ts; needed only for maps
 *   given as arguments).
 * @returns The slots, the pointer array and the slots' offsets.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { packKernelParams } from "./params.ts";
 * const p = packKernelParams([{ type: "u64", value: 0x1000n }, { type: "u32", value: 7 }]);
 * equal(new DataView(p.values).getUint32(8, true), 7);
 * const m = packKernelParams([{ type: "u32", value: 1 },
 *   { type: "tmap", tensor: "A", value: new Uint8Array(128).fill(9) }]);
 * equal(m.pointers[1]! % 64n, 0n);
 * equal(new Uint8Array(m.values)[m.offsets[1]! + 127], 9);
 * ```
 */
export function packKernelParams(
  args: readonly KernelArg[],
  encode?: TensorMapEncoder,
): PackedParams {
  const maps = args.filter((a) => a.type === "tmap").length;
  const values = new ArrayBuffer(
    Math.max(8, args.length * 8 + maps * (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN)),
  );
  const base = args.length > 0
    ? BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(values)))
    : 0n;
  const offsets: number[] = [];
  let at = 0;
  for (const a of args) {
    if (a.type === "tmap") {
      const pad = Number(
        (BigInt(TENSOR_MAP_ALIGN) - (base + BigInt(at)) % BigInt(TENSOR_MAP_ALIGN)) %
          BigInt(TENSOR_MAP_ALIGN),
      );
      offsets.push(at + pad);
      at += pad + TENSOR_MAP_BYTES;
    } else {
      offsets.push(at);
      at += 8;
    }
  }
  const dv = new DataView(values);
  args.forEach((a, i) => {
    const o = offsets[i]!;
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
      case "tmap":
        if (a.value instanceof Uint8Array) {
          if (a.value.length !== TENSOR_MAP_BYTES) {
            throw new RangeError(
              `Kernel argument ${i}: the tensor map of ${a.tensor} has ${a.value.length} bytes, ` +
                `not ${TENSOR_MAP_BYTES}`,
            );
          }
          new Uint8Array(values, o, TENSOR_MAP_BYTES).set(a.value);
        } else if (encode === undefined) {
          throw new Error(`Kernel argument ${i}: the tensor map of ${a.tensor} needs an encoder`);
        } else encode(a.value, a.tensor, Deno.UnsafePointer.create(base + BigInt(o)));
        break;
    }
  });
  const pointers = new BigUint64Array(new ArrayBuffer(Math.max(8, args.length * 8)));
  for (let i = 0; i < args.length; i++) pointers[i] = base + BigInt(offsets[i]!);
  return { values, pointers, offsets };
}
