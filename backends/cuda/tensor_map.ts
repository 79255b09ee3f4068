/**
 * sm90's TMA tensor maps on the Deno launch paths (docs/ARCHITECTURE.md §3.4): a kernel
 * parameter of kind `tensormap` (`ptx` "tmap") is a 128-byte `CUtensorMap` passed by value,
 * built per launch from its tensor's device address and the launch's dims and strides by the
 * rule of ir/tensor_map.ts ({@link tensorMapArgs}) and the driver's `cuTensorMapEncodeTiled`
 * (an optional symbol: drivers before CUDA 12 lack it).
 *
 * Pure but for {@link encodeTensorMap}, which calls the driver.
 *
 * @module
 */

import {
  TENSOR_MAP_BYTES,
  type TensorMapArgs,
  tensorMapArgs,
  type TensorMapSpec,
} from "../../ir/tensor_map.ts";
import type { KernelManifest, ManifestParam } from "../ptx/manifest.ts";
import { check } from "./errors.ts";
import type { Driver } from "./symbols.ts";

/** Bytes of a tensor map's alignment (`CUtensorMap` is `alignas(64)`). */
export const TENSOR_MAP_ALIGN = 64;

/**
 * Writes one encoded tensor map at `dst` (64-byte aligned, 128 bytes). Given the tensor's
 * name for messages. Throws when the driver cannot encode it.
 */
export type TensorMapEncoder = (
  args: TensorMapArgs,
  tensor: string,
  dst: Deno.PointerValue,
) => void;

/** A manifest's tensor-map parameter: its position, name and rule. */
export interface TensorMapParam {
  /** The parameter's index in the ABI. */
  readonly param: number;
  /** The parameter's name (e.g. `A_tmap`). */
  readonly name: string;
  /** The rule (its `tensor` names the tensor parameter it maps). */
  readonly spec: TensorMapSpec;
}

/**
 * The tensor-map parameters of a manifest, checked: each has a rule naming a tensor
 * parameter of the kernel, and they come after every other parameter.
 *
 * @param m The manifest.
 * @returns The maps, in ABI order (none for kernels without TMA).
 * @throws {Error} For a map without a rule, of an unknown tensor, or before another parameter.
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { tensorMapParams } from "./tensor_map.ts";
 * const m = { name: "k", params: [{ name: "A", kind: "tensor", ptx: "u64" }, { name: "K",
 *   kind: "dim", ptx: "u32" }, { name: "A_tmap", kind: "tensormap", ptx: "tmap", tmap: {
 *   tensor: "A", dataType: "float16", elementBytes: 2, dims: [["K"]], strides: [], box: [64],
 *   swizzle: 128 } }] } as const;
 * deepEqual(tensorMapParams(m).map((t) => [t.param, t.name]), [[2, "A_tmap"]]);
 * ```
 */
export function tensorMapParams(
  m: Pick<KernelManifest, "name" | "params">,
): TensorMapParam[] {
  const out: TensorMapParam[] = [];
  m.params.forEach((p, param) => {
    if (p.kind !== "tensormap" && p.ptx !== "tmap") {
      if (out.length > 0) {
        throw new Error(
          `Kernel "${m.name}": parameter "${p.name}" comes after tensor map "${out[0]!.name}" ` +
            "(tensor maps come last)",
        );
      }
      return;
    }
    const spec = p.tmap;
    if (p.kind !== "tensormap" || p.ptx !== "tmap" || spec === undefined) {
      throw new Error(`Kernel "${m.name}": parameter "${p.name}" is not a tensor map with a rule`);
    }
    if (!m.params.some((q) => q.kind === "tensor" && q.name === spec.tensor)) {
      throw new Error(
        `Kernel "${m.name}": tensor map "${p.name}" maps "${spec.tensor}", not a tensor of it`,
      );
    }
    out.push({ param, name: p.name, spec });
  });
  return out;
}

/**
 * The manifest without its tensor maps, for backends/ptx/contract.ts's `launchContract`
 * (which knows tensors, dims, strides, scalars and the workspace; the maps come last, so every
 * other parameter keeps its index).
 *
 * @param m The manifest.
 * @returns The manifest, or a copy without the tensor-map parameters.
 */
export function withoutTensorMaps<M extends Pick<KernelManifest, "name" | "params">>(m: M): M {
  if (tensorMapParams(m).length === 0) return m;
  return { ...m, params: m.params.filter((p: ManifestParam) => p.kind !== "tensormap") };
}

/**
 * Evaluates every tensor map of a launch (ir/tensor_map.ts {@link tensorMapArgs}), with the
 * rule's violations as messages (each naming the tensor) instead of throwing.
 *
 * @param maps The kernel's maps ({@link tensorMapParams}).
 * @param address The device address of a tensor by name (undefined: not given).
 * @param values The dims and strides by name (strides left out already dense).
 * @returns The encoder's arguments of each map, or the violations.
 * @example
 * ```ts
 * import { deepEqual, match } from "node:assert/strict";
 * import { tensorMapLaunchArgs } from "./tensor_map.ts";
 * const maps = [{ param: 2, name: "A_tmap", spec: { tensor: "A", dataType: "float16",
 *   elementBytes: 2, dims: [["K"], ["M"]], strides: [["K"]], box: [64, 128],
 *   swizzle: 128 } }] as const;
 * const a = tensorMapLaunchArgs(maps, () => 0x1000n, { M: 64, K: 64 })[0]!;
 * deepEqual(typeof a === "string" ? a : a.globalStrides, [128]);
 * const bad = tensorMapLaunchArgs(maps, () => 0x1008n, { M: 64, K: 64 });
 * match(typeof bad[0] === "string" ? bad[0] : "", /Tensor map of A: address 0x1008/);
 * ```
 */
export function tensorMapLaunchArgs(
  maps: readonly TensorMapParam[],
  address: (tensor: string) => bigint | undefined,
  values: Readonly<Record<string, number>>,
): TensorMapArgs[] | string[] {
  const args: TensorMapArgs[] = [];
  const bad: string[] = [];
  for (const m of maps) {
    const a = address(m.spec.tensor);
    if (a === undefined) {
      bad.push(`Tensor map "${m.name}": no device buffer for tensor "${m.spec.tensor}"`);
      continue;
    }
    try {
      args.push(tensorMapArgs(m.spec, a, values));
    } catch (e) {
      bad.push(e instanceof Error ? e.message : String(e));
    }
  }
  return bad.length > 0 ? bad : args;
}

/** The buffers of one `cuTensorMapEncodeTiled` call (kept: the call allocates none). */
const scratch = {
  dims: new BigUint64Array(5),
  strides: new BigUint64Array(4),
  box: new Uint32Array(5),
  ones: new Uint32Array([1, 1, 1, 1, 1]),
};

/**
 * `cuTensorMapEncodeTiled` of one map into `dst` (interleave none, element strides 1,
 * out-of-bounds elements zero), raising a `CudaError` that names the tensor when the driver
 * refuses it, and an Error when the driver lacks the function.
 *
 * @param driver The driver.
 * @param args The map ({@link tensorMapArgs}).
 * @param tensor The tensor's name, for messages.
 * @param dst Where the map goes: 128 bytes, 64-byte aligned.
 */
export function encodeTensorMap(
  driver: Driver,
  args: TensorMapArgs,
  tensor: string,
  dst: Deno.PointerValue,
): void {
  const encode = driver.cuTensorMapEncodeTiled;
  if (encode === null) throw new Error(missingEncoder(driver, tensor));
  if (BigInt(Deno.UnsafePointer.value(dst)) % BigInt(TENSOR_MAP_ALIGN) !== 0n) {
    throw new RangeError(
      `Tensor map of ${tensor}: its slot is not ${TENSOR_MAP_ALIGN}-byte aligned`,
    );
  }
  const rank = args.globalDim.length;
  const s = scratch;
  for (let i = 0; i < rank; i++) {
    s.dims[i] = BigInt(args.globalDim[i]!);
    s.box[i] = args.boxDim[i]!;
    if (i + 1 < rank) s.strides[i] = BigInt(args.globalStrides[i]!);
  }
  const code = encode(
    dst,
    args.dataType,
    rank,
    Deno.UnsafePointer.create(args.address),
    s.dims,
    s.strides,
    s.box,
    s.ones,
    0, // CU_TENSOR_MAP_INTERLEAVE_NONE
    args.swizzle,
    args.l2Promotion,
    0, // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros
  );
  if (code !== 0) {
    check(
      driver,
      "cuTensorMapEncodeTiled",
      code,
      `the tensor map of tensor "${tensor}" (address 0x${args.address.toString(16)}, dims ` +
        `[${args.globalDim}], strides [${args.globalStrides}] bytes, box [${args.boxDim}], ` +
        `swizzle ${args.swizzleBytes} bytes)`,
    );
  }
}

/**
 * Why a kernel with tensor maps cannot be launched through this driver, or null.
 *
 * @param driver The driver.
 * @param m The kernel's manifest.
 * @returns The message, or null when the driver encodes maps (or the kernel has none).
 */
export function tensorMapProblem(driver: Driver, m: KernelManifest): string | null {
  const maps = tensorMapParams(m);
  if (maps.length === 0 || driver.cuTensorMapEncodeTiled !== null) return null;
  return `Kernel "${m.name}": ${missingEncoder(driver, maps[0]!.spec.tensor)}`;
}

function missingEncoder(driver: Driver, tensor: string): string {
  return `the tensor map of tensor "${tensor}" needs cuTensorMapEncodeTiled, which the CUDA ` +
    `driver ${driver.path} lacks (CUDA 12.0 or newer is needed for sm90's TMA kernels)`;
}

/** {@link TENSOR_MAP_BYTES}, re-exported for the launchers. */
export { TENSOR_MAP_BYTES };
