/**
 * TMA tensor maps (sm90, issue 23, DESIGN §6.4): what a kernel that loads a tensor through
 * `cp.async.bulk.tensor` needs its launcher to build with the driver's
 * `cuTensorMapEncodeTiled`, written as data ({@link TensorMapSpec}, a kernel parameter's
 * `tmap`) so that every launcher evaluates the same rule: the Deno launch API, the C and
 * Python artefacts (which print it from the manifest), and the simulator, which executes the
 * copies from the same {@link TensorMapArgs}.
 *
 * A tensor map describes the tensor as the hardware sees it: `rank` dimensions, the
 * contiguous one first; each dimension's extent and (but the first) its stride in bytes; the
 * box (the tile) one copy moves; the shared-memory swizzle the box is written in; and zeros
 * for every element of the box outside the extents. The tensor's own `.u64` parameter keeps
 * its place in the ABI: the tensor maps come after every other parameter.
 *
 * @module
 */

/** The element types a map names: `CU_TENSOR_MAP_DATA_TYPE_*`. 8-bit integers are copied as
 * bytes (`UINT8`); tf32 operands as the f32 bits (`FLOAT32`), which wgmma reads as tf32. */
export const TMAP_DATA_TYPES = {
  uint8: 0,
  float16: 6,
  float32: 7,
  bfloat16: 9,
} as const;

/** A map's element type by name. */
export type TensorMapDataType = keyof typeof TMAP_DATA_TYPES;

/** `CU_TENSOR_MAP_SWIZZLE_*` by the bytes the swizzle spans (0: none). */
export const TMAP_SWIZZLES: Readonly<Record<TensorMapSwizzle, number>> = { 0: 0, 128: 3 };

/** The swizzles a map may ask for, in bytes: none, or the 128-byte one of wgmma's layout (the
 * 32- and 64-byte ones are not used yet: a shortcut). */
export type TensorMapSwizzle = 0 | 128;

/**
 * The L2 promotion every map asks for: `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`. Measured on the
 * H200 (bench/NOTES.md 68-69, f16 sm90): where rows start on 256-byte lines it ties 256 B (8192³
 * 746-759 against 756-757 TFLOP/s, 5120³ 699 both), where they do not it wins (5000³, rows of
 * 10,000 bytes: 470 against 400 persistent, 522 against 439 one block a tile; none 464 and 514).
 * 256 B fetches a second line for every row that straddles one.
 */
export const TMAP_L2_PROMOTION = 2;

/** A factor of an extent or stride: a kernel parameter (a `dim` or `stride`) or a constant. */
export type TensorMapFactor = string | number;

/**
 * How a kernel's launcher builds one tensor map (a `tensormap` kernel parameter's `tmap`).
 * Dimensions are listed innermost (contiguous) first, as the driver takes them.
 */
export interface TensorMapSpec {
  /** The tensor parameter whose address the map holds. */
  readonly tensor: string;
  /** The element type as the map names it. */
  readonly dataType: TensorMapDataType;
  /** Bytes per element. */
  readonly elementBytes: 1 | 2 | 4;
  /** Each dimension's extent in elements: a product of factors. */
  readonly dims: readonly (readonly TensorMapFactor[])[];
  /** The stride of dimensions 1 .. rank - 1 in elements: a product of factors. */
  readonly strides: readonly (readonly TensorMapFactor[])[];
  /** The box one copy moves, per dimension, in elements. */
  readonly box: readonly number[];
  /** The shared-memory swizzle, in bytes (128: the layout of ir/wgmma_table.ts). */
  readonly swizzle: TensorMapSwizzle;
}

/** The arguments of `cuTensorMapEncodeTiled` for one map (interleave none, element strides
 * 1, out-of-bounds elements zero: `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`). */
export interface TensorMapArgs {
  /** `CU_TENSOR_MAP_DATA_TYPE_*`. */
  readonly dataType: number;
  /** Bytes per element. */
  readonly elementBytes: number;
  /** The tensor's global address. */
  readonly address: bigint;
  /** Extents in elements, innermost first. */
  readonly globalDim: readonly number[];
  /** Strides of dimensions 1 .. rank - 1, in bytes. */
  readonly globalStrides: readonly number[];
  /** The box, in elements. */
  readonly boxDim: readonly number[];
  /** `CU_TENSOR_MAP_SWIZZLE_*`. */
  readonly swizzle: number;
  /** The swizzle's span in bytes. */
  readonly swizzleBytes: number;
  /** `CU_TENSOR_MAP_L2_PROMOTION_*`. */
  readonly l2Promotion: number;
}

/** Bytes of a tensor map (`CUtensorMap`, 64-byte aligned). */
export const TENSOR_MAP_BYTES = 128;

/**
 * Evaluates a map's rule for one launch and checks what the hardware requires of it: a
 * 16-byte aligned address, strides that are multiples of 16 bytes below 2^40, extents from 1
 * to 2^32, a box of at most 256 elements a dimension whose rows fit the swizzle.
 *
 * @param spec The rule (a parameter's `tmap`).
 * @param address The tensor's address.
 * @param values The launch's dims and strides by name.
 * @returns The encoder's arguments.
 * @throws Error naming the tensor and the value that breaks a rule.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { tensorMapArgs } from "./tensor_map.ts";
 * const a = tensorMapArgs({ tensor: "A", dataType: "float16", elementBytes: 2,
 *   dims: [["K"], ["M"]], strides: [["K"]], box: [64, 128], swizzle: 128 }, 0x1000n,
 *   { M: 300, K: 520 });
 * deepEqual([a.globalDim, a.globalStrides], [[520, 300], [1040]]);
 * ```
 */
export function tensorMapArgs(
  spec: TensorMapSpec,
  address: bigint,
  values: Readonly<Record<string, number>>,
): TensorMapArgs {
  const product = (fs: readonly TensorMapFactor[]) =>
    fs.reduce<number>((p, f) => {
      const v = typeof f === "number" ? f : values[f];
      if (v === undefined) throw new Error(`Tensor map of ${spec.tensor}: no value for "${f}"`);
      return p * v;
    }, 1);
  const fail = (what: string): never => {
    throw new Error(`Tensor map of ${spec.tensor}: ${what}`);
  };
  if (address % 16n !== 0n) fail(`address 0x${address.toString(16)} is not 16-byte aligned`);
  const globalDim = spec.dims.map(product);
  globalDim.forEach((d, i) => {
    if (!Number.isInteger(d) || d < 1 || d > 2 ** 32) {
      fail(`extent ${d} of dimension ${i} is not 1 .. 2^32`);
    }
  });
  const globalStrides = spec.strides.map((s) => product(s) * spec.elementBytes);
  globalStrides.forEach((s, i) => {
    if (s % 16 !== 0 || s <= 0 || s >= 2 ** 40) {
      fail(`stride of dimension ${i + 1} is ${s} bytes, not a positive multiple of 16 below 2^40`);
    }
  });
  spec.box.forEach((b, i) => {
    if (!Number.isInteger(b) || b < 1 || b > 256) {
      fail(`box ${b} of dimension ${i} is not 1 .. 256`);
    }
  });
  if (spec.swizzle > 0 && spec.box[0]! * spec.elementBytes > spec.swizzle) {
    fail(
      `a box row of ${
        spec.box[0]! * spec.elementBytes
      } bytes exceeds the ${spec.swizzle}-byte swizzle`,
    );
  }
  return {
    dataType: TMAP_DATA_TYPES[spec.dataType],
    elementBytes: spec.elementBytes,
    address,
    globalDim,
    globalStrides,
    boxDim: spec.box,
    swizzle: TMAP_SWIZZLES[spec.swizzle],
    swizzleBytes: spec.swizzle,
    l2Promotion: TMAP_L2_PROMOTION,
  };
}

/**
 * Where element `coord` (innermost first, relative to the box's origin) of a box lands in
 * shared memory, as a byte offset from the destination: boxes are written row after row
 * (`box[0]` elements a row), and with the 128-byte swizzle the 16-byte chunk of each byte
 * (address bits 4-6) is XORed with its 128-byte line's position in 1,024 bytes (bits 7-9), on
 * the absolute address (the destination is 1024-byte aligned).
 *
 * @param args The map.
 * @param coord The element's coordinates within the box.
 * @returns The byte offset.
 */
export function boxOffset(args: TensorMapArgs, coord: readonly number[]): number {
  let lin = 0;
  for (let i = coord.length - 1; i >= 0; i--) lin = lin * args.boxDim[i]! + coord[i]!;
  const byte = lin * args.elementBytes;
  if (args.swizzleBytes === 0) return byte;
  return byte ^ (((byte >> 7) & 7) << 4);
}
