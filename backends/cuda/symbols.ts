/**
 * The FFI side of the CUDA driver bindings: the cuda.h constants used, the
 * symbol table handed to `Deno.dlopen`, the {@link Driver} those symbols bind
 * to (fallbacks resolved, a missing one named) and the buffer helpers every
 * call needs. No library is opened here ({@link ./load.ts} does that).
 *
 * C signatures: CUresult = i32, CUdevice = int, CUdeviceptr = u64, handles =
 * pointers, size_t = usize.
 *
 * @module
 */

/** `CUdevice_attribute` values used here (cuda.h). */
export const CU_DEVICE_ATTRIBUTE = Object.freeze({
  MAX_GRID_DIM_X: 5,
  MAX_GRID_DIM_Y: 6,
  MAX_GRID_DIM_Z: 7,
  MAX_SHARED_MEMORY_PER_BLOCK: 8,
  CLOCK_RATE: 13,
  MULTIPROCESSOR_COUNT: 16,
  MEMORY_CLOCK_RATE: 36,
  GLOBAL_MEMORY_BUS_WIDTH: 37,
  L2_CACHE_SIZE: 38,
  COMPUTE_CAPABILITY_MAJOR: 75,
  COMPUTE_CAPABILITY_MINOR: 76,
  MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 97,
});

/** `CUfunction_attribute` values used here (cuda.h). */
export const CU_FUNC_ATTRIBUTE = Object.freeze({
  MAX_THREADS_PER_BLOCK: 0,
  SHARED_SIZE_BYTES: 1,
  CONST_SIZE_BYTES: 2,
  LOCAL_SIZE_BYTES: 3,
  NUM_REGS: 4,
  PTX_VERSION: 5,
  BINARY_VERSION: 6,
  MAX_DYNAMIC_SHARED_SIZE_BYTES: 8,
});

/** `CUjit_option` values used here (cuda.h). */
export const CU_JIT = Object.freeze({
  WALL_TIME: 2,
  INFO_LOG_BUFFER: 3,
  INFO_LOG_BUFFER_SIZE_BYTES: 4,
  ERROR_LOG_BUFFER: 5,
  ERROR_LOG_BUFFER_SIZE_BYTES: 6,
  LOG_VERBOSE: 12,
});

/** `CUlaunchAttributeID` values used here (cuda.h). */
export const CU_LAUNCH_ATTRIBUTE = Object.freeze({
  /**
   * Programmatic dependent launch (sm_90+): the value's
   * `programmaticStreamSerializationAllowed` (an `int`) set to 1 lets the kernel start
   * while the previous kernel of its stream finishes.
   */
  PROGRAMMATIC_STREAM_SERIALIZATION: 6,
});

/**
 * Byte offsets of `CUlaunchConfig`, the first argument of `cuLaunchKernelEx` (cuda.h of
 * CUDA 12 and 13, 64-bit: checked against the header by tests/launch_ex_layout_test.ts):
 *
 * | field            | C type               | offset |
 * | ---------------- | -------------------- | -----: |
 * | `gridDimX`       | `unsigned int`       |      0 |
 * | `gridDimY`       | `unsigned int`       |      4 |
 * | `gridDimZ`       | `unsigned int`       |      8 |
 * | `blockDimX`      | `unsigned int`       |     12 |
 * | `blockDimY`      | `unsigned int`       |     16 |
 * | `blockDimZ`      | `unsigned int`       |     20 |
 * | `sharedMemBytes` | `unsigned int`       |     24 |
 * | (padding)        |                      |     28 |
 * | `hStream`        | `CUstream`           |     32 |
 * | `attrs`          | `CUlaunchAttribute*` |     40 |
 * | `numAttrs`       | `unsigned int`       |     48 |
 * | (padding)        |                      |     52 |
 *
 * `SIZE` is `sizeof(CUlaunchConfig)` (56, 8-byte aligned).
 */
export const CU_LAUNCH_CONFIG = Object.freeze({
  GRID_DIM_X: 0,
  GRID_DIM_Y: 4,
  GRID_DIM_Z: 8,
  BLOCK_DIM_X: 12,
  BLOCK_DIM_Y: 16,
  BLOCK_DIM_Z: 20,
  SHARED_MEM_BYTES: 24,
  H_STREAM: 32,
  ATTRS: 40,
  NUM_ATTRS: 48,
  SIZE: 56,
});

/**
 * Byte offsets of `CUlaunchAttribute` (cuda.h, as {@link CU_LAUNCH_CONFIG}): `id` (a
 * `CUlaunchAttributeID`, 4 bytes) at 0, 4 bytes of padding, then the value union
 * `CUlaunchAttributeValue` (64 bytes) at 8, whose `programmaticStreamSerializationAllowed`
 * (an `int`) is at the union's start. `SIZE` is `sizeof(CUlaunchAttribute)` (72, 8-byte aligned).
 */
export const CU_LAUNCH_ATTRIBUTE_LAYOUT = Object.freeze({
  ID: 0,
  VALUE: 8,
  VALUE_BYTES: 64,
  SIZE: 72,
});

/** Dynamic shared memory a kernel may use without `cuFuncSetAttribute` (48 KiB). */
export const DEFAULT_DYNAMIC_SMEM_LIMIT = 48 * 1024;

// Every symbol is optional so that a missing one is reported by name
// ({@link bindDriver}) rather than as an opaque dlopen failure. Versioned
// names are those cuda.h's macros select (cuMemAlloc -> cuMemAlloc_v2, ...);
// for the two whose unversioned ABI differs only in age, the old name is the
// fallback ({@link FALLBACK}).
/** The symbols passed to `Deno.dlopen`. */
export const SYMBOLS = {
  cuGetErrorName: { parameters: ["i32", "buffer"], result: "i32", optional: true },
  cuGetErrorString: { parameters: ["i32", "buffer"], result: "i32", optional: true },
  cuInit: { parameters: ["u32"], result: "i32", optional: true },
  cuDriverGetVersion: { parameters: ["buffer"], result: "i32", optional: true },
  cuDeviceGetCount: { parameters: ["buffer"], result: "i32", optional: true },
  cuDeviceGet: { parameters: ["buffer", "i32"], result: "i32", optional: true },
  cuDeviceGetName: { parameters: ["buffer", "i32", "i32"], result: "i32", optional: true },
  cuDeviceGetAttribute: { parameters: ["buffer", "i32", "i32"], result: "i32", optional: true },
  cuDeviceTotalMem_v2: { parameters: ["buffer", "i32"], result: "i32", optional: true },
  cuDevicePrimaryCtxRetain: { parameters: ["buffer", "i32"], result: "i32", optional: true },
  cuDevicePrimaryCtxRelease_v2: { parameters: ["i32"], result: "i32", optional: true },
  cuDevicePrimaryCtxRelease: { parameters: ["i32"], result: "i32", optional: true },
  cuDevicePrimaryCtxReset_v2: { parameters: ["i32"], result: "i32", optional: true },
  cuCtxSetCurrent: { parameters: ["pointer"], result: "i32", optional: true },
  cuCtxSynchronize: { parameters: [], result: "i32", optional: true },
  cuModuleLoadDataEx: {
    parameters: ["buffer", "buffer", "u32", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  cuModuleUnload: { parameters: ["pointer"], result: "i32", optional: true },
  cuModuleGetFunction: {
    parameters: ["buffer", "pointer", "buffer"],
    result: "i32",
    optional: true,
  },
  cuFuncSetAttribute: { parameters: ["pointer", "i32", "i32"], result: "i32", optional: true },
  cuFuncGetAttribute: { parameters: ["buffer", "i32", "pointer"], result: "i32", optional: true },
  cuMemAlloc_v2: { parameters: ["buffer", "usize"], result: "i32", optional: true },
  cuMemFree_v2: { parameters: ["u64"], result: "i32", optional: true },
  cuMemcpyHtoD_v2: { parameters: ["u64", "buffer", "usize"], result: "i32", optional: true },
  cuMemcpyDtoH_v2: { parameters: ["buffer", "u64", "usize"], result: "i32", optional: true },
  cuMemcpyDtoD_v2: { parameters: ["u64", "u64", "usize"], result: "i32", optional: true },
  cuMemsetD8_v2: { parameters: ["u64", "u8", "usize"], result: "i32", optional: true },
  cuMemsetD8Async: {
    parameters: ["u64", "u8", "usize", "pointer"],
    result: "i32",
    optional: true,
  },
  cuLaunchKernel: {
    parameters: [
      "pointer", // CUfunction f
      "u32", // gridDimX
      "u32", // gridDimY
      "u32", // gridDimZ
      "u32", // blockDimX
      "u32", // blockDimY
      "u32", // blockDimZ
      "u32", // sharedMemBytes
      "pointer", // CUstream hStream (null: the legacy default stream)
      "buffer", // void** kernelParams
      "pointer", // void** extra (null)
    ],
    result: "i32",
    optional: true,
  },
  // CUDA 11.8+: the launch with attributes (programmatic dependent launch, backends/cuda/launch.ts).
  cuLaunchKernelEx: {
    parameters: [
      "buffer", // const CUlaunchConfig* config (CU_LAUNCH_CONFIG)
      "pointer", // CUfunction f
      "buffer", // void** kernelParams
      "pointer", // void** extra (null)
    ],
    result: "i32",
    optional: true,
  },
  cuEventCreate: { parameters: ["buffer", "u32"], result: "i32", optional: true },
  cuEventRecord: { parameters: ["pointer", "pointer"], result: "i32", optional: true },
  cuEventSynchronize: { parameters: ["pointer"], result: "i32", optional: true },
  cuEventElapsedTime_v2: {
    parameters: ["buffer", "pointer", "pointer"],
    result: "i32",
    optional: true,
  },
  cuEventElapsedTime: {
    parameters: ["buffer", "pointer", "pointer"],
    result: "i32",
    optional: true,
  },
  cuEventDestroy_v2: { parameters: ["pointer"], result: "i32", optional: true },
  cuStreamCreate: { parameters: ["buffer", "u32"], result: "i32", optional: true },
  cuStreamDestroy_v2: { parameters: ["pointer"], result: "i32", optional: true },
  cuStreamSynchronize: { parameters: ["pointer"], result: "i32", optional: true },
  cuOccupancyMaxActiveBlocksPerMultiprocessor: {
    parameters: ["buffer", "pointer", "i32", "usize"], // int*, CUfunction, blockSize, dynamicSMemSize
    result: "i32",
    optional: true,
  },
  cuTensorMapEncodeTiled: {
    parameters: [
      "pointer", // CUtensorMap* tensorMap (64-byte aligned)
      "u32", // CUtensorMapDataType
      "u32", // cuuint32_t tensorRank
      "pointer", // void* globalAddress
      "buffer", // const cuuint64_t* globalDim
      "buffer", // const cuuint64_t* globalStrides (rank - 1, bytes)
      "buffer", // const cuuint32_t* boxDim
      "buffer", // const cuuint32_t* elementStrides
      "u32", // CUtensorMapInterleave
      "u32", // CUtensorMapSwizzle
      "u32", // CUtensorMapL2promotion
      "u32", // CUtensorMapFloatOOBfill
    ],
    result: "i32",
    optional: true,
  },
} as const;

/** The bound symbols of the library, each possibly null. */
export type Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
type Sym<K extends keyof Symbols> = NonNullable<Symbols[K]>;

/** The functions gemmc cannot run without, by their versioned names. */
const REQUIRED = [
  "cuGetErrorName",
  "cuGetErrorString",
  "cuInit",
  "cuDriverGetVersion",
  "cuDeviceGetCount",
  "cuDeviceGet",
  "cuDeviceGetName",
  "cuDeviceGetAttribute",
  "cuDeviceTotalMem_v2",
  "cuDevicePrimaryCtxRetain",
  "cuDevicePrimaryCtxRelease_v2",
  "cuCtxSetCurrent",
  "cuCtxSynchronize",
  "cuModuleLoadDataEx",
  "cuModuleUnload",
  "cuModuleGetFunction",
  "cuFuncSetAttribute",
  "cuFuncGetAttribute",
  "cuMemAlloc_v2",
  "cuMemFree_v2",
  "cuMemcpyHtoD_v2",
  "cuMemcpyDtoH_v2",
  "cuMemsetD8_v2",
  "cuLaunchKernel",
  "cuEventCreate",
  "cuEventRecord",
  "cuEventSynchronize",
  "cuEventElapsedTime_v2",
  "cuEventDestroy_v2",
] as const satisfies readonly (keyof Symbols)[];

/**
 * The functions that may be absent: `cuDevicePrimaryCtxReset_v2` is used only
 * to clean up after a kernel fault, the streams only to run a probe beside
 * other work or a loaded kernel on a stream of its caller's; without
 * `cuMemsetD8Async` a loaded kernel zeroes its split-K workspace with the
 * synchronous `cuMemsetD8_v2`; without `cuOccupancyMaxActiveBlocksPerMultiprocessor`
 * a grouped launch's persistent grid counts one block per SM (backends/cuda/grouped.ts);
 * `cuMemcpyDtoD_v2` only measures the copy bandwidth (bench/llm.ts);
 * `cuTensorMapEncodeTiled` (CUDA 12+) only builds the tensor maps of sm90's TMA kernels
 * (backends/cuda/tensor_map.ts: such a kernel is refused, by name, without it);
 * `cuLaunchKernelEx` (CUDA 11.8+) only makes the launches asked for with `pdl`
 * (backends/cuda/launch.ts: such a launch is refused, naming it, without it).
 */
const OPTIONAL = [
  "cuDevicePrimaryCtxReset_v2",
  "cuTensorMapEncodeTiled",
  "cuMemcpyDtoD_v2",
  "cuStreamCreate",
  "cuStreamDestroy_v2",
  "cuStreamSynchronize",
  "cuMemsetD8Async",
  "cuOccupancyMaxActiveBlocksPerMultiprocessor",
  "cuLaunchKernelEx",
] as const satisfies readonly (keyof Symbols)[];

/** The older name bound when a versioned required one is absent (the same ABI). */
const FALLBACK: Partial<Record<(typeof REQUIRED)[number], keyof Symbols>> = {
  cuDevicePrimaryCtxRelease_v2: "cuDevicePrimaryCtxRelease",
  cuEventElapsedTime_v2: "cuEventElapsedTime",
};

/**
 * The driver's functions under their versioned names: every required one
 * present (fallbacks resolved), the optional ones possibly null.
 */
export type Driver =
  & { readonly path: string }
  & { readonly [K in (typeof REQUIRED)[number]]: Sym<K> }
  & { readonly [K in (typeof OPTIONAL)[number]]: Symbols[K] };

/**
 * Binds a loaded library's symbols.
 *
 * @param path The library's path, kept in the driver.
 * @param s Its symbols.
 * @returns The driver, or `it lacks <names>` when required functions are missing.
 */
export function bindDriver(path: string, s: Symbols): Driver | string {
  const missing: string[] = [];
  const d: Record<string, unknown> = { path };
  for (const name of REQUIRED) {
    const older = FALLBACK[name];
    const f = s[name] ?? (older === undefined ? null : s[older]);
    if (f === null) missing.push(name);
    d[name] = f;
  }
  for (const name of OPTIONAL) d[name] = s[name];
  return missing.length === 0 ? d as Driver : `it lacks ${missing.join(", ")}`;
}

/**
 * A zeroed buffer whose memory V8 never moves (an explicit ArrayBuffer).
 *
 * @param bytes Its size.
 * @returns The buffer.
 */
export function cbuf(bytes: number): Uint8Array {
  return new Uint8Array(new ArrayBuffer(bytes));
}

/**
 * A pointer's address.
 *
 * @param p The pointer.
 * @returns Its value as a bigint.
 */
export function ptrValue(p: Deno.PointerValue): bigint {
  return BigInt(Deno.UnsafePointer.value(p));
}
