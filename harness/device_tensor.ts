/**
 * Host arrays to and from the bytes a kernel reads and writes (every dtype,
 * f16 and bf16 rounded to nearest even by numerics/rounding.ts, sub-byte
 * types packed as harness/tensor.ts stores them), and to and from device
 * buffers. Elements are in storage order: the caller lays a matrix out as
 * the kernel declares it (row or col).
 *
 * @module
 */

import { type Dtype, DTYPE_INFO } from "../ir/dtype.ts";
import {
  bf16BitsToF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  fp8ToNumber,
  numberToFp8,
} from "../numerics/mod.ts";
import type { Cuda, DeviceBuffer } from "../backends/cuda/driver.ts";
import { readElem, writeElem } from "./tensor.ts";

/**
 * A host array as {@link decodeTensor} returns it: `Float64Array` for f64,
 * `Float32Array` for f32, tf32, f16 and bf16, `Int32Array` for s32,
 * `Int8Array` for s8 and s4, `Uint8Array` for u8, u4 and b1 (one element each).
 */
export type HostArray = Float64Array | Float32Array | Int32Array | Int8Array | Uint8Array;

/** Values {@link encodeTensor} takes: any array of numbers (typed or not). */
export type HostValues = ArrayLike<number>;

/** The bytes of `n` elements of `dtype` (packed). */
function bytesOf(dtype: Dtype, n: number): number {
  return Math.ceil((n * DTYPE_INFO[dtype].bits) / 8);
}

/**
 * Encodes values as `dtype`'s storage: floats rounded to the type (nearest
 * even), integers checked against the type's range.
 *
 * @param values The elements, in storage order.
 * @param dtype The element type.
 * @returns The bytes (packed for sub-byte types).
 * @throws {RangeError} For an integer type given a value that is not an integer in its range.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { decodeTensor, encodeTensor } from "./device_tensor.ts";
 * const bytes = encodeTensor([1.5, -0.1, 65504], "f16");
 * ok(bytes.length === 6);
 * const back = decodeTensor(bytes, "f16");
 * ok(back[0] === 1.5 && back[2] === 65504 && Math.abs(back[1]! + 0.1) < 1e-4);
 * ```
 */
export function encodeTensor(values: HostValues, dtype: Dtype): Uint8Array {
  const n = values.length;
  const out = new Uint8Array(bytesOf(dtype, n));
  switch (dtype) {
    case "f64":
      new Float64Array(out.buffer).set(values);
      return out;
    case "f32":
    case "tf32":
      new Float32Array(out.buffer).set(values);
      return out;
    case "e4m3":
    case "e5m2":
      for (let i = 0; i < n; i++) out[i] = numberToFp8(values[i]!, dtype);
      return out;
    case "f16":
    case "bf16": {
      const h = new Uint16Array(out.buffer);
      const enc = dtype === "f16" ? f32ToF16Bits : f32ToBf16Bits;
      for (let i = 0; i < n; i++) h[i] = enc(values[i]!);
      return out;
    }
  }
  const [lo, hi] = integerBounds(dtype);
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (!Number.isInteger(v) || v < lo || v > hi) {
      throw new RangeError(`Element ${i} is ${v}: not a ${dtype} (an integer in ${lo}..${hi})`);
    }
    writeElem(out, dtype, i, v);
  }
  return out;
}

/** The values an integer type holds. */
function integerBounds(dtype: Dtype): [number, number] {
  if (dtype === "b1") return [0, 1];
  const bits = DTYPE_INFO[dtype].bits;
  return DTYPE_INFO[dtype].signed ? [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1] : [0, 2 ** bits - 1];
}

/**
 * Decodes `dtype`'s storage into a host array ({@link HostArray}).
 *
 * @param bytes The storage.
 * @param dtype The element type.
 * @param count Elements to decode (default: all the bytes hold).
 * @returns The elements.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { decodeTensor, encodeTensor } from "./device_tensor.ts";
 * const back = decodeTensor(encodeTensor([-8, 7, 3], "s4"), "s4", 3);
 * ok(back instanceof Int8Array && back.join() === "-8,7,3");
 * ```
 */
export function decodeTensor(bytes: Uint8Array, dtype: Dtype, count?: number): HostArray {
  const n = count ?? Math.floor((bytes.byteLength * 8) / DTYPE_INFO[dtype].bits);
  if (!Number.isSafeInteger(n) || n < 0 || bytesOf(dtype, n) > bytes.byteLength) {
    throw new RangeError(`${bytes.byteLength} bytes do not hold ${count} elements of ${dtype}`);
  }
  // A copy at offset 0, aligned for every view below.
  const own = bytes.slice(0, bytesOf(dtype, n));
  switch (dtype) {
    case "f64":
      return new Float64Array(own.buffer, 0, n);
    case "f32":
    case "tf32":
      return new Float32Array(own.buffer, 0, n);
    case "s32":
      return new Int32Array(own.buffer, 0, n);
    case "s8":
      return new Int8Array(own.buffer, 0, n);
    case "u8":
      return own;
    case "e4m3":
    case "e5m2":
      return Float32Array.from(own, (c) => fp8ToNumber(c, dtype));
    case "f16":
    case "bf16": {
      const h = new Uint16Array(own.buffer, 0, n);
      const dec = dtype === "f16" ? f16BitsToF32 : bf16BitsToF32;
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = dec(h[i]!);
      return out;
    }
    case "s4": {
      const out = new Int8Array(n);
      for (let i = 0; i < n; i++) out[i] = readElem(own, dtype, i);
      return out;
    }
    case "u4":
    case "b1": {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = readElem(own, dtype, i);
      return out;
    }
  }
}

/**
 * Allocates a device buffer in `cuda` and copies the encoded values into it
 * (synchronous).
 *
 * @param cuda The context.
 * @param values The elements, in storage order.
 * @param dtype The element type.
 * @returns The buffer (freed by its `free()` or the context's close).
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { Cuda, cudaAvailable, downloadTensor, uploadTensor } from "../mod.ts";
 * if (cudaAvailable().ok) {
 *   using cuda = Cuda.open();
 *   const b = uploadTensor(cuda, [0.1, 2, -3], "bf16");
 *   ok(downloadTensor(b, "bf16")[1] === 2);
 * }
 * ```
 */
export function uploadTensor(cuda: Cuda, values: HostValues, dtype: Dtype): DeviceBuffer {
  const bytes = encodeTensor(values, dtype);
  const b = cuda.alloc(bytes.byteLength);
  try {
    b.upload(bytes);
  } catch (e) {
    b.free();
    throw e;
  }
  return b;
}

/**
 * Copies a device buffer to the host (synchronous: waits for the work
 * before it on the default stream) and decodes it.
 *
 * @param buffer The buffer.
 * @param dtype The element type.
 * @param count Elements to read (default: all the buffer holds).
 * @returns The elements ({@link HostArray}).
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { Cuda, cudaAvailable, downloadTensor, uploadTensor } from "../mod.ts";
 * if (cudaAvailable().ok) {
 *   using cuda = Cuda.open();
 *   const b = uploadTensor(cuda, [1, -2, 3, -4], "s8");
 *   ok(downloadTensor(b, "s8", 2).join() === "1,-2");
 * }
 * ```
 */
export function downloadTensor(buffer: DeviceBuffer, dtype: Dtype, count?: number): HostArray {
  const n = count ?? Math.floor((buffer.bytes * 8) / DTYPE_INFO[dtype].bits);
  const bytes = bytesOf(dtype, n);
  if (!Number.isSafeInteger(n) || n < 0 || bytes > buffer.bytes) {
    throw new RangeError(
      `A ${buffer.bytes}-byte buffer does not hold ${count} elements of ${dtype}`,
    );
  }
  return decodeTensor(buffer.download(new Uint8Array(bytes)), dtype, n);
}
