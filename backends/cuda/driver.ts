/**
 * Bindings to the CUDA driver API through Deno's FFI (`Deno.dlopen` of
 * `libcuda.so.1`), loaded lazily on first use: importing this module touches
 * no library, so everything else in gemmc runs where no driver exists.
 *
 * What is bound, with the C signatures (CUresult = i32, CUdevice = int,
 * CUdeviceptr = u64, handles = pointers, size_t = usize):
 * init, driver version, device and its attributes, the primary context,
 * `cuModuleLoadDataEx` with the JIT's error and info logs, functions and their
 * attributes, memory (alloc, free, copies, memset), `cuLaunchKernel`, events,
 * and `cuGetErrorName` / `cuGetErrorString` for every failure.
 *
 * Every call is checked: a failure raises {@link CudaError} naming the
 * function, the error's name and its description. {@link Cuda} owns a context
 * and everything allocated through it, and releases all of it on
 * {@link Cuda.close} (also `using cuda = Cuda.open()`), on every path.
 *
 * The library path: `GEMMC_LIBCUDA` when set (a test points it at a missing
 * file to see the no-driver path on any machine), else `libcuda.so.1`, then
 * `libcuda.so`.
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

/** Dynamic shared memory a kernel may use without `cuFuncSetAttribute` (48 KiB). */
export const DEFAULT_DYNAMIC_SMEM_LIMIT = 48 * 1024;

// Every symbol is optional so that a missing one is reported by name
// ({@link loadLibrary}) rather than as an opaque dlopen failure. Versioned
// names are those cuda.h's macros select (cuMemAlloc -> cuMemAlloc_v2, ...);
// for the two whose unversioned ABI differs only in age, the old name is the
// fallback.
const SYMBOLS = {
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
  cuMemsetD8_v2: { parameters: ["u64", "u8", "usize"], result: "i32", optional: true },
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
} as const;

type Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
type Sym<K extends keyof Symbols> = NonNullable<Symbols[K]>;

/** The driver's functions, every one present (fallbacks resolved). */
interface Driver {
  readonly path: string;
  readonly cuGetErrorName: Sym<"cuGetErrorName">;
  readonly cuGetErrorString: Sym<"cuGetErrorString">;
  readonly cuInit: Sym<"cuInit">;
  readonly cuDriverGetVersion: Sym<"cuDriverGetVersion">;
  readonly cuDeviceGetCount: Sym<"cuDeviceGetCount">;
  readonly cuDeviceGet: Sym<"cuDeviceGet">;
  readonly cuDeviceGetName: Sym<"cuDeviceGetName">;
  readonly cuDeviceGetAttribute: Sym<"cuDeviceGetAttribute">;
  readonly cuDeviceTotalMem: Sym<"cuDeviceTotalMem_v2">;
  readonly cuDevicePrimaryCtxRetain: Sym<"cuDevicePrimaryCtxRetain">;
  readonly cuDevicePrimaryCtxRelease: Sym<"cuDevicePrimaryCtxRelease_v2">;
  /** Optional: used only to clean up after a kernel fault. */
  readonly cuDevicePrimaryCtxReset: Symbols["cuDevicePrimaryCtxReset_v2"];
  readonly cuCtxSetCurrent: Sym<"cuCtxSetCurrent">;
  readonly cuCtxSynchronize: Sym<"cuCtxSynchronize">;
  readonly cuModuleLoadDataEx: Sym<"cuModuleLoadDataEx">;
  readonly cuModuleUnload: Sym<"cuModuleUnload">;
  readonly cuModuleGetFunction: Sym<"cuModuleGetFunction">;
  readonly cuFuncSetAttribute: Sym<"cuFuncSetAttribute">;
  readonly cuFuncGetAttribute: Sym<"cuFuncGetAttribute">;
  readonly cuMemAlloc: Sym<"cuMemAlloc_v2">;
  readonly cuMemFree: Sym<"cuMemFree_v2">;
  readonly cuMemcpyHtoD: Sym<"cuMemcpyHtoD_v2">;
  readonly cuMemcpyDtoH: Sym<"cuMemcpyDtoH_v2">;
  readonly cuMemsetD8: Sym<"cuMemsetD8_v2">;
  readonly cuLaunchKernel: Sym<"cuLaunchKernel">;
  readonly cuEventCreate: Sym<"cuEventCreate">;
  readonly cuEventRecord: Sym<"cuEventRecord">;
  readonly cuEventSynchronize: Sym<"cuEventSynchronize">;
  readonly cuEventElapsedTime: Sym<"cuEventElapsedTime_v2">;
  readonly cuEventDestroy: Sym<"cuEventDestroy_v2">;
  /** Optional: streams are used only to run a probe beside other work. */
  readonly cuStreamCreate: Symbols["cuStreamCreate"];
  readonly cuStreamDestroy: Symbols["cuStreamDestroy_v2"];
}

/** A failed driver call: the function, the CUresult, its name and description. */
export class CudaError extends Error {
  /** The driver function that failed, e.g. `cuMemAlloc_v2`. */
  readonly fn: string;
  /** The CUresult. */
  readonly code: number;
  /** The error's name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`. */
  readonly errorName: string;
  /** The driver's description of the error. */
  readonly errorString: string;

  /**
   * @param fn The function.
   * @param code The CUresult.
   * @param errorName Its name.
   * @param errorString Its description.
   * @param detail More context, appended to the message.
   */
  constructor(fn: string, code: number, errorName: string, errorString: string, detail = "") {
    super(`${fn} failed: ${errorName} (${errorString})${detail === "" ? "" : `: ${detail}`}`);
    this.name = "CudaError";
    this.fn = fn;
    this.code = code;
    this.errorName = errorName;
    this.errorString = errorString;
  }
}

/** `cuModuleLoadDataEx` rejected the PTX: the message and {@link JitError.log} hold the JIT's log. */
export class JitError extends CudaError {
  /** The JIT compiler's error log (and info log, when it wrote one). */
  readonly log: string;

  /**
   * @param code The CUresult.
   * @param errorName Its name.
   * @param errorString Its description.
   * @param log The JIT log.
   */
  constructor(code: number, errorName: string, errorString: string, log: string) {
    super("cuModuleLoadDataEx", code, errorName, errorString);
    this.message = `The CUDA JIT rejected the PTX: ${errorName} (${errorString})` +
      (log.trim() === "" ? " and wrote no log" : `; its log:\n${log.trimEnd()}`);
    this.name = "JitError";
    this.log = log;
  }
}

/**
 * No CUDA driver can be used here: the library did not load, lacks a
 * function, `cuInit` failed or there is no device. The message is one
 * sentence, fit to print as is.
 */
export class CudaUnavailableError extends Error {
  /**
   * @param message The sentence.
   */
  constructor(message: string) {
    super(message);
    this.name = "CudaUnavailableError";
  }
}

/** The advice closing every "no driver" sentence. */
const SIMULATE_HINT = "`gemm simulate` runs the same kernel on the CPU";

type LoadState =
  | { readonly ok: true; readonly driver: Driver }
  | { readonly ok: false; readonly why: string };

let loadState: LoadState | undefined;
/** Open {@link Cuda} handles (all share the device's primary context). */
let openContexts = 0;
let initState: LoadState | undefined;

/** The message of an exception, on one line. */
function oneLine(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.replace(/\s*\n\s*/g, " ").trim();
}

function libraryCandidates(): string[] {
  let env: string | undefined;
  try {
    env = Deno.env.get("GEMMC_LIBCUDA");
  } catch {
    env = undefined; // no --allow-env: the default names
  }
  return env !== undefined && env !== "" ? [env] : ["libcuda.so.1", "libcuda.so"];
}

function bindDriver(path: string, s: Symbols): Driver | string {
  const missing: string[] = [];
  const need = <T>(name: string, f: T | null): T => {
    if (f === null) missing.push(name);
    return f as T;
  };
  const d: Driver = {
    path,
    cuGetErrorName: need("cuGetErrorName", s.cuGetErrorName),
    cuGetErrorString: need("cuGetErrorString", s.cuGetErrorString),
    cuInit: need("cuInit", s.cuInit),
    cuDriverGetVersion: need("cuDriverGetVersion", s.cuDriverGetVersion),
    cuDeviceGetCount: need("cuDeviceGetCount", s.cuDeviceGetCount),
    cuDeviceGet: need("cuDeviceGet", s.cuDeviceGet),
    cuDeviceGetName: need("cuDeviceGetName", s.cuDeviceGetName),
    cuDeviceGetAttribute: need("cuDeviceGetAttribute", s.cuDeviceGetAttribute),
    cuDeviceTotalMem: need("cuDeviceTotalMem_v2", s.cuDeviceTotalMem_v2),
    cuDevicePrimaryCtxRetain: need("cuDevicePrimaryCtxRetain", s.cuDevicePrimaryCtxRetain),
    cuDevicePrimaryCtxRelease: need(
      "cuDevicePrimaryCtxRelease_v2",
      s.cuDevicePrimaryCtxRelease_v2 ?? s.cuDevicePrimaryCtxRelease,
    ),
    cuDevicePrimaryCtxReset: s.cuDevicePrimaryCtxReset_v2,
    cuCtxSetCurrent: need("cuCtxSetCurrent", s.cuCtxSetCurrent),
    cuCtxSynchronize: need("cuCtxSynchronize", s.cuCtxSynchronize),
    cuModuleLoadDataEx: need("cuModuleLoadDataEx", s.cuModuleLoadDataEx),
    cuModuleUnload: need("cuModuleUnload", s.cuModuleUnload),
    cuModuleGetFunction: need("cuModuleGetFunction", s.cuModuleGetFunction),
    cuFuncSetAttribute: need("cuFuncSetAttribute", s.cuFuncSetAttribute),
    cuFuncGetAttribute: need("cuFuncGetAttribute", s.cuFuncGetAttribute),
    cuMemAlloc: need("cuMemAlloc_v2", s.cuMemAlloc_v2),
    cuMemFree: need("cuMemFree_v2", s.cuMemFree_v2),
    cuMemcpyHtoD: need("cuMemcpyHtoD_v2", s.cuMemcpyHtoD_v2),
    cuMemcpyDtoH: need("cuMemcpyDtoH_v2", s.cuMemcpyDtoH_v2),
    cuMemsetD8: need("cuMemsetD8_v2", s.cuMemsetD8_v2),
    cuLaunchKernel: need("cuLaunchKernel", s.cuLaunchKernel),
    cuEventCreate: need("cuEventCreate", s.cuEventCreate),
    cuEventRecord: need("cuEventRecord", s.cuEventRecord),
    cuEventSynchronize: need("cuEventSynchronize", s.cuEventSynchronize),
    cuEventElapsedTime: need(
      "cuEventElapsedTime_v2",
      s.cuEventElapsedTime_v2 ?? s.cuEventElapsedTime,
    ),
    cuEventDestroy: need("cuEventDestroy_v2", s.cuEventDestroy_v2),
    cuStreamCreate: s.cuStreamCreate,
    cuStreamDestroy: s.cuStreamDestroy_v2,
  };
  return missing.length === 0 ? d : `it lacks ${missing.join(", ")}`;
}

/** Loads the library once; never throws. */
function loadLibrary(): LoadState {
  if (loadState !== undefined) return loadState;
  const reasons: string[] = [];
  const candidates = libraryCandidates();
  for (const path of candidates) {
    let lib: Deno.DynamicLibrary<typeof SYMBOLS>;
    try {
      lib = Deno.dlopen(path, SYMBOLS);
    } catch (e) {
      // The fallback name failing to open as well adds nothing to the first reason.
      if (reasons.length === 0) {
        reasons.push(oneLine(e).replace(/^(Could not open library: )+/, ""));
      }
      continue;
    }
    const d = bindDriver(path, lib.symbols);
    if (typeof d === "string") {
      lib.close();
      reasons.push(`${path}: ${d}`);
      continue;
    }
    // The library stays open for the life of the process (contexts may outlive any one user).
    loadState = { ok: true, driver: d };
    return loadState;
  }
  const name = candidates[0]!;
  loadState = {
    ok: false,
    why: `No CUDA driver: ${name} could not be loaded (${reasons.join("; ")}); ${SIMULATE_HINT}`,
  };
  return loadState;
}

/** A zeroed buffer whose memory V8 never moves (an explicit ArrayBuffer). */
function cbuf(bytes: number): Uint8Array {
  return new Uint8Array(new ArrayBuffer(bytes));
}

function readCString(slot: BigUint64Array): string {
  const p = Deno.UnsafePointer.create(slot[0]!);
  return p === null ? "" : Deno.UnsafePointerView.getCString(p);
}

function errorNames(d: Driver, code: number): [string, string] {
  const slot = new BigUint64Array(new ArrayBuffer(8));
  const name = d.cuGetErrorName(code, slot) === 0 ? readCString(slot) : "";
  slot[0] = 0n;
  const text = d.cuGetErrorString(code, slot) === 0 ? readCString(slot) : "";
  return [name || `CUresult ${code}`, text || "no description"];
}

/** CUresults after which the context is unusable (a kernel fault): 700, 702, 714..719. */
const STICKY = new Set([700, 702, 714, 715, 716, 717, 718, 719]);
/** Set by a sticky error: the last {@link Cuda.close} resets the primary context. */
let contextFaulted = false;

function check(d: Driver, fn: string, code: number, detail = ""): void {
  if (code === 0) return;
  if (STICKY.has(code)) contextFaulted = true;
  const [name, text] = errorNames(d, code);
  throw new CudaError(fn, code, name, text, detail);
}

/** Loads and initialises the driver once; never throws. */
function initDriver(): LoadState {
  if (initState !== undefined) return initState;
  const l = loadLibrary();
  if (!l.ok) return (initState = l);
  const d = l.driver;
  let code: number;
  try {
    code = d.cuInit(0);
  } catch (e) {
    return (initState = {
      ok: false,
      why: `No CUDA driver: cuInit could not be called (${oneLine(e)}); ${SIMULATE_HINT}`,
    });
  }
  if (code !== 0) {
    const [name, text] = errorNames(d, code);
    return (initState = {
      ok: false,
      why: `No usable CUDA driver: ${d.path} loaded but cuInit failed with ${name} (${text}); ` +
        SIMULATE_HINT,
    });
  }
  const n = new Int32Array(new ArrayBuffer(4));
  const c = d.cuDeviceGetCount(n);
  if (c !== 0 || n[0]! < 1) {
    const why = c !== 0 ? errorNames(d, c).join(": ") : "the driver reports none";
    return (initState = {
      ok: false,
      why: `No CUDA device: ${d.path} loaded but found no GPU (${why}); ${SIMULATE_HINT}`,
    });
  }
  return (initState = l);
}

/**
 * Whether a CUDA driver and a device can be used here. Never throws: loads
 * `libcuda.so.1` (or `GEMMC_LIBCUDA`), calls `cuInit` and counts devices, once
 * per process.
 *
 * @returns `{ ok: true }`, or `{ ok: false, why }` with one sentence saying why.
 * @example
 * ```ts
 * import { cudaAvailable } from "./driver.ts";
 * const r = cudaAvailable();
 * console.log(r.ok ? "a GPU is here" : r.why);
 * ```
 */
export function cudaAvailable(): { ok: true } | { ok: false; why: string } {
  try {
    const s = initDriver();
    return s.ok ? { ok: true } : { ok: false, why: s.why };
  } catch (e) {
    return { ok: false, why: `No CUDA driver: ${oneLine(e)}; ${SIMULATE_HINT}` };
  }
}

/** What the driver says about a device. */
export interface DeviceInfo {
  readonly ordinal: number;
  readonly name: string;
  /** `[major, minor]`, e.g. `[9, 0]` for an H200. */
  readonly computeCapability: readonly [number, number];
  /** E.g. `sm_90`. */
  readonly arch: string;
  readonly multiprocessors: number;
  /** Typical SM clock (kHz). */
  readonly clockKHz: number;
  readonly memoryClockKHz: number;
  readonly memoryBusBits: number;
  readonly l2Bytes: number;
  readonly totalMemoryBytes: number;
  /** Shared memory a block may have by default. */
  readonly maxSharedPerBlock: number;
  /** Shared memory a block may opt in to (`cuFuncSetAttribute`). */
  readonly maxSharedPerBlockOptin: number;
  readonly maxGrid: readonly [number, number, number];
  /** `cuDriverGetVersion`, e.g. 13000. */
  readonly driverVersion: number;
  /** E.g. `13.0`. */
  readonly driverVersionText: string;
  /** The library that was loaded. */
  readonly library: string;
}

/** Attributes of a loaded kernel (`cuFuncGetAttribute`). */
export interface FunctionAttributes {
  readonly registers: number;
  /** Local memory per thread (spills and stack). */
  readonly localBytes: number;
  readonly staticSharedBytes: number;
  readonly constBytes: number;
  readonly maxThreadsPerBlock: number;
  /** PTX and binary versions, major * 10 + minor. */
  readonly ptxVersion: number;
  readonly binaryVersion: number;
}

/** One kernel argument, typed as the PTX parameter is (DESIGN.md §3). */
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
 * import { packKernelParams } from "./driver.ts";
 * const p = packKernelParams([{ type: "u64", value: 0x1000n }, { type: "u32", value: 7 }]);
 * console.assert(new DataView(p.values).getUint32(8, true) === 7);
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

function ptrValue(p: Deno.PointerValue): bigint {
  return BigInt(Deno.UnsafePointer.value(p));
}

/** Device memory owned by a {@link Cuda}. */
export class DeviceBuffer {
  readonly #cuda: Cuda;
  #ptr: bigint;
  /** Size in bytes. */
  readonly bytes: number;

  /** @internal Use {@link Cuda.alloc}. */
  constructor(cuda: Cuda, ptr: bigint, bytes: number) {
    this.#cuda = cuda;
    this.#ptr = ptr;
    this.bytes = bytes;
  }

  /** The device address (`CUdeviceptr`). */
  get ptr(): bigint {
    if (this.#ptr === 0n) throw new Error("Device buffer used after free");
    return this.#ptr;
  }

  /** Whether {@link DeviceBuffer.free} has run. */
  get freed(): boolean {
    return this.#ptr === 0n;
  }

  /**
   * Copies host bytes to the start of the buffer (synchronous).
   *
   * @param src The bytes; at most {@link DeviceBuffer.bytes}.
   */
  upload(src: Uint8Array): void {
    if (src.byteLength > this.bytes) {
      throw new RangeError(`Upload of ${src.byteLength} bytes into a ${this.bytes}-byte buffer`);
    }
    if (src.byteLength === 0) return;
    const d = this.#cuda.driver;
    check(d, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD(this.ptr, src, BigInt(src.byteLength)));
  }

  /**
   * Copies the buffer (or its first `dst.byteLength` bytes) to the host (synchronous).
   *
   * @param dst Where to write (default: a new array of {@link DeviceBuffer.bytes}).
   * @returns `dst`.
   */
  download(dst: Uint8Array = cbuf(this.bytes)): Uint8Array {
    if (dst.byteLength > this.bytes) {
      throw new RangeError(`Download of ${dst.byteLength} bytes from a ${this.bytes}-byte buffer`);
    }
    if (dst.byteLength === 0) return dst;
    const d = this.#cuda.driver;
    check(d, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH(dst, this.ptr, BigInt(dst.byteLength)));
    return dst;
  }

  /**
   * Sets every byte (`cuMemsetD8`).
   *
   * @param byte The value, 0..255.
   */
  fill(byte: number): void {
    const d = this.#cuda.driver;
    check(d, "cuMemsetD8_v2", d.cuMemsetD8(this.ptr, byte & 0xff, BigInt(this.bytes)));
  }

  /** Frees the memory (idempotent). */
  free(): void {
    if (this.#ptr === 0n) return;
    const p = this.#ptr;
    this.#ptr = 0n;
    this.#cuda.forget(this);
    const d = this.#cuda.driver;
    check(d, "cuMemFree_v2", d.cuMemFree(p));
  }
}

/** A kernel of a loaded module. */
export class CudaFunction {
  readonly #cuda: Cuda;
  readonly #handle: Deno.PointerValue;
  /** The entry name. */
  readonly name: string;

  /** @internal Use {@link CudaModule.getFunction}. */
  constructor(cuda: Cuda, handle: Deno.PointerValue, name: string) {
    this.#cuda = cuda;
    this.#handle = handle;
    this.name = name;
  }

  /** @internal The `CUfunction`. */
  get handle(): Deno.PointerValue {
    return this.#handle;
  }

  /**
   * One attribute (`cuFuncGetAttribute`).
   *
   * @param attr A {@link CU_FUNC_ATTRIBUTE} value.
   * @returns Its value.
   */
  attribute(attr: number): number {
    const d = this.#cuda.driver;
    const out = new Int32Array(new ArrayBuffer(4));
    check(d, "cuFuncGetAttribute", d.cuFuncGetAttribute(out, attr, this.#handle), this.name);
    return out[0]!;
  }

  /** Registers, local memory, static shared memory and versions. */
  attributes(): FunctionAttributes {
    const a = CU_FUNC_ATTRIBUTE;
    return {
      registers: this.attribute(a.NUM_REGS),
      localBytes: this.attribute(a.LOCAL_SIZE_BYTES),
      staticSharedBytes: this.attribute(a.SHARED_SIZE_BYTES),
      constBytes: this.attribute(a.CONST_SIZE_BYTES),
      maxThreadsPerBlock: this.attribute(a.MAX_THREADS_PER_BLOCK),
      ptxVersion: this.attribute(a.PTX_VERSION),
      binaryVersion: this.attribute(a.BINARY_VERSION),
    };
  }

  /**
   * Allows `bytes` of dynamic shared memory (`cuFuncSetAttribute`
   * `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`); needed above 48 KiB.
   *
   * @param bytes The most dynamic shared memory a launch will ask for.
   */
  setMaxDynamicSharedBytes(bytes: number): void {
    const d = this.#cuda.driver;
    check(
      d,
      "cuFuncSetAttribute",
      d.cuFuncSetAttribute(this.#handle, CU_FUNC_ATTRIBUTE.MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
      `${this.name}: MAX_DYNAMIC_SHARED_SIZE_BYTES = ${bytes}`,
    );
  }
}

/** What the JIT said while loading a module. */
export interface JitInfo {
  /** The info log (with `CU_JIT_LOG_VERBOSE`: registers and spills per kernel). */
  readonly infoLog: string;
  /** Wall-clock time of the JIT (ms), as it reports it. */
  readonly wallMs: number;
}

/**
 * A driver handle that a {@link Cuda} owns (module, event, stream): usable
 * until released, released once (idempotent), and forgotten by its owner
 * then, so that {@link Cuda.close} frees only what is still alive.
 */
abstract class OwnedHandle {
  readonly #cuda: Cuda;
  #handle: Deno.PointerValue;
  readonly #what: string;

  constructor(cuda: Cuda, handle: Deno.PointerValue, what: string) {
    this.#cuda = cuda;
    this.#handle = handle;
    this.#what = what;
  }

  /** The owning context. */
  protected get cuda(): Cuda {
    return this.#cuda;
  }

  /** The handle; an error once released. */
  protected get live(): Deno.PointerValue {
    if (this.#handle === null) throw new Error(`${this.#what} used after it was released`);
    return this.#handle;
  }

  /** Releases the handle with `call` (once; later calls do nothing). */
  protected release(fn: string, call: (d: Driver, h: Deno.PointerValue) => number): void {
    if (this.#handle === null) return;
    const h = this.#handle;
    this.#handle = null;
    this.#cuda.forget(this);
    const d = this.#cuda.driver;
    check(d, fn, call(d, h));
  }
}

/** A loaded module (`CUmodule`). */
export class CudaModule extends OwnedHandle {
  /** The JIT's log and time. */
  readonly jit: JitInfo;

  /** @internal Use {@link Cuda.loadModule}. */
  constructor(cuda: Cuda, handle: Deno.PointerValue, jit: JitInfo) {
    super(cuda, handle, "Module");
    this.jit = jit;
  }

  /**
   * A kernel of the module (`cuModuleGetFunction`).
   *
   * @param name The `.entry` name.
   * @returns The function.
   */
  getFunction(name: string): CudaFunction {
    const h = this.live;
    const d = this.cuda.driver;
    const out = new BigUint64Array(new ArrayBuffer(8));
    const cname = new TextEncoder().encode(name + "\0");
    check(d, "cuModuleGetFunction", d.cuModuleGetFunction(out, h, cname), `"${name}"`);
    return new CudaFunction(this.cuda, Deno.UnsafePointer.create(out[0]!), name);
  }

  /** Unloads the module (idempotent). */
  unload(): void {
    this.release("cuModuleUnload", (d, h) => d.cuModuleUnload(h));
  }
}

/** A CUDA event (timing enabled). */
export class CudaEvent extends OwnedHandle {
  /** @internal Use {@link Cuda.createEvent}. */
  constructor(cuda: Cuda, handle: Deno.PointerValue) {
    super(cuda, handle, "Event");
  }

  /** Records the event on the default stream. */
  record(): void {
    const d = this.cuda.driver;
    check(d, "cuEventRecord", d.cuEventRecord(this.live, null));
  }

  /** Waits for the event. */
  synchronize(): void {
    const d = this.cuda.driver;
    check(d, "cuEventSynchronize", d.cuEventSynchronize(this.live));
  }

  /**
   * Milliseconds from `start` to this event (both recorded and complete).
   *
   * @param start The earlier event.
   * @returns The elapsed time (ms).
   */
  elapsedSince(start: CudaEvent): number {
    const d = this.cuda.driver;
    const out = new Float32Array(new ArrayBuffer(4));
    check(d, "cuEventElapsedTime", d.cuEventElapsedTime(out, start.live, this.live));
    return out[0]!;
  }

  /** Destroys the event (idempotent). */
  destroy(): void {
    this.release("cuEventDestroy_v2", (d, h) => d.cuEventDestroy(h));
  }
}

/**
 * A stream that does not synchronise with the default stream
 * (`CU_STREAM_NON_BLOCKING`): work launched on it runs beside the default
 * stream's. Create with {@link Cuda.createStream}.
 */
export class CudaStream extends OwnedHandle {
  /** @internal Use {@link Cuda.createStream}. */
  constructor(cuda: Cuda, handle: Deno.PointerValue) {
    super(cuda, handle, "Stream");
  }

  /** @internal The handle for cuLaunchKernel. */
  get handle(): Deno.PointerValue {
    return this.live;
  }

  /** Destroys the stream (idempotent); work already queued on it still runs. */
  destroy(): void {
    this.release("cuStreamDestroy_v2", (d, h) => d.cuStreamDestroy?.(h) ?? 0);
  }
}

/** Launch geometry. */
export interface LaunchConfig {
  readonly grid: readonly [number, number, number];
  readonly block: readonly [number, number, number];
  readonly dynamicSmemBytes: number;
}

/**
 * A device's primary context and everything allocated through it. Open with
 * {@link Cuda.open}; {@link Cuda.close} (or `using`) frees every buffer,
 * event and module still alive and releases the context, also after errors.
 */
export class Cuda {
  /** @internal */
  readonly driver: Driver;
  /** The device. */
  readonly device: DeviceInfo;
  #open = true;
  #lastParams: ArrayBuffer | null = null;
  readonly #owned = new Set<DeviceBuffer | OwnedHandle>();

  private constructor(driver: Driver, device: DeviceInfo) {
    this.driver = driver;
    this.device = device;
    openContexts++;
  }

  /**
   * Loads the driver (once), retains device `ordinal`'s primary context and
   * makes it current.
   *
   * @param ordinal The device (default 0).
   * @returns The handle.
   * @throws {CudaUnavailableError} When no driver or device can be used (one sentence).
   * @throws {CudaError} When a driver call fails.
   */
  static open(ordinal = 0): Cuda {
    const s = initDriver();
    if (!s.ok) throw new CudaUnavailableError(s.why);
    const d = s.driver;
    const i32 = new Int32Array(new ArrayBuffer(4));
    check(d, "cuDeviceGet", d.cuDeviceGet(i32, ordinal), `device ${ordinal}`);
    const dev = i32[0]!;
    const attr = (a: number) => {
      check(d, "cuDeviceGetAttribute", d.cuDeviceGetAttribute(i32, a, dev), `attribute ${a}`);
      return i32[0]!;
    };
    const nameBuf = cbuf(256);
    check(d, "cuDeviceGetName", d.cuDeviceGetName(nameBuf, 256, dev));
    const end = nameBuf.indexOf(0);
    const name = new TextDecoder().decode(nameBuf.subarray(0, end < 0 ? 256 : end));
    check(d, "cuDriverGetVersion", d.cuDriverGetVersion(i32));
    const version = i32[0]!;
    const mem = new BigUint64Array(new ArrayBuffer(8));
    check(d, "cuDeviceTotalMem_v2", d.cuDeviceTotalMem(mem, dev));
    const A = CU_DEVICE_ATTRIBUTE;
    const major = attr(A.COMPUTE_CAPABILITY_MAJOR);
    const minor = attr(A.COMPUTE_CAPABILITY_MINOR);
    const device: DeviceInfo = {
      ordinal,
      name,
      computeCapability: [major, minor],
      arch: `sm_${major}${minor}`,
      multiprocessors: attr(A.MULTIPROCESSOR_COUNT),
      clockKHz: attr(A.CLOCK_RATE),
      memoryClockKHz: attr(A.MEMORY_CLOCK_RATE),
      memoryBusBits: attr(A.GLOBAL_MEMORY_BUS_WIDTH),
      l2Bytes: attr(A.L2_CACHE_SIZE),
      totalMemoryBytes: Number(mem[0]!),
      maxSharedPerBlock: attr(A.MAX_SHARED_MEMORY_PER_BLOCK),
      maxSharedPerBlockOptin: attr(A.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
      maxGrid: [attr(A.MAX_GRID_DIM_X), attr(A.MAX_GRID_DIM_Y), attr(A.MAX_GRID_DIM_Z)],
      driverVersion: version,
      driverVersionText: `${Math.floor(version / 1000)}.${Math.floor((version % 1000) / 10)}`,
      library: d.path,
    };
    const slot = new BigUint64Array(new ArrayBuffer(8));
    check(d, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(slot, dev));
    const ctx = Deno.UnsafePointer.create(slot[0]!);
    const code = d.cuCtxSetCurrent(ctx);
    if (code !== 0) {
      d.cuDevicePrimaryCtxRelease(dev);
      check(d, "cuCtxSetCurrent", code);
    }
    return new Cuda(d, device);
  }

  #live(): void {
    if (!this.#open) throw new Error("CUDA context used after close");
  }

  /** @internal Drops a resource from the set released by {@link Cuda.close}. */
  forget(r: DeviceBuffer | OwnedHandle): void {
    this.#owned.delete(r);
  }

  /**
   * JIT-compiles and loads a PTX module (`cuModuleLoadDataEx`), with the
   * error and info logs captured.
   *
   * @param ptx The PTX text.
   * @returns The module; its `jit` holds the info log and the JIT time.
   * @throws {JitError} With the JIT's log when it rejects the PTX.
   */
  loadModule(ptx: string): CudaModule {
    this.#live();
    const d = this.driver;
    const image = new TextEncoder().encode(ptx + "\0");
    const LOG = 1 << 16;
    const errLog = cbuf(LOG);
    const infoLog = cbuf(LOG);
    const opts = new Int32Array(new ArrayBuffer(6 * 4));
    opts.set([
      CU_JIT.ERROR_LOG_BUFFER,
      CU_JIT.ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT.INFO_LOG_BUFFER,
      CU_JIT.INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT.LOG_VERBOSE,
      CU_JIT.WALL_TIME,
    ]);
    // optionValues is `void*[]`: buffers by address, sizes and flags as the
    // pointer's value; the driver writes back the log sizes and (as a float
    // in the slot's low 4 bytes) the wall time.
    const vals = new BigUint64Array(new ArrayBuffer(6 * 8));
    vals.set([
      ptrValue(Deno.UnsafePointer.of(errLog)),
      BigInt(LOG),
      ptrValue(Deno.UnsafePointer.of(infoLog)),
      BigInt(LOG),
      1n,
      0n,
    ]);
    const out = new BigUint64Array(new ArrayBuffer(8));
    const code = d.cuModuleLoadDataEx(out, image, 6, opts, vals);
    const text = (buf: Uint8Array, n: bigint) => {
      const len = Math.min(Number(n), buf.length);
      const z = buf.subarray(0, len).indexOf(0);
      return new TextDecoder().decode(buf.subarray(0, z < 0 ? len : z));
    };
    const wallMs = new Float32Array(vals.buffer, 5 * 8, 1)[0]!;
    const info = code === 0 ? text(infoLog, vals[3]!) : text(infoLog, BigInt(LOG));
    if (code !== 0) {
      const err = text(errLog, BigInt(LOG));
      const [name, desc] = errorNames(d, code);
      const log = [err.trimEnd(), info.trimEnd()].filter((s) => s !== "").join("\n");
      throw new JitError(code, name, desc, log);
    }
    const m = new CudaModule(this, Deno.UnsafePointer.create(out[0]!), { infoLog: info, wallMs });
    this.#owned.add(m);
    return m;
  }

  /**
   * Allocates device memory (`cuMemAlloc_v2`); at least one byte is reserved.
   *
   * @param bytes The size.
   * @returns The buffer, freed by {@link Cuda.close} if not before.
   */
  alloc(bytes: number): DeviceBuffer {
    this.#live();
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`Bad size ${bytes}`);
    const d = this.driver;
    const out = new BigUint64Array(new ArrayBuffer(8));
    check(
      d,
      "cuMemAlloc_v2",
      d.cuMemAlloc(out, BigInt(Math.max(1, bytes))),
      `${bytes} bytes`,
    );
    const b = new DeviceBuffer(this, out[0]!, bytes);
    this.#owned.add(b);
    return b;
  }

  /**
   * Creates an event with timing (`cuEventCreate`, flags 0).
   *
   * @returns The event, destroyed by {@link Cuda.close} if not before.
   */
  createEvent(): CudaEvent {
    this.#live();
    const d = this.driver;
    const out = new BigUint64Array(new ArrayBuffer(8));
    check(d, "cuEventCreate", d.cuEventCreate(out, 0));
    const e = new CudaEvent(this, Deno.UnsafePointer.create(out[0]!));
    this.#owned.add(e);
    return e;
  }

  /**
   * A non-blocking stream, or null when the driver lacks `cuStreamCreate`.
   *
   * @returns The stream (freed by {@link Cuda.close} at the latest).
   */
  createStream(): CudaStream | null {
    this.#live();
    const d = this.driver;
    if (d.cuStreamCreate === null) return null;
    const out = new BigUint64Array(new ArrayBuffer(8));
    check(d, "cuStreamCreate", d.cuStreamCreate(out, 1 /* CU_STREAM_NON_BLOCKING */));
    const st = new CudaStream(this, Deno.UnsafePointer.create(out[0]!));
    this.#owned.add(st);
    return st;
  }

  /**
   * Launches a kernel (`cuLaunchKernel`) on the default stream, or on
   * `stream`; asynchronous.
   *
   * @param fn The kernel.
   * @param config Grid, block and dynamic shared memory.
   * @param args The arguments, in parameter order.
   * @param stream A stream from {@link Cuda.createStream}; the default stream when absent.
   */
  launch(
    fn: CudaFunction,
    config: LaunchConfig,
    args: readonly KernelArg[],
    stream?: CudaStream,
  ): void {
    this.#live();
    const d = this.driver;
    const { values, pointers } = packKernelParams(args);
    const [gx, gy, gz] = config.grid;
    const [bx, by, bz] = config.block;
    const code = d.cuLaunchKernel(
      fn.handle,
      gx,
      gy,
      gz,
      bx,
      by,
      bz,
      config.dynamicSmemBytes,
      stream === undefined ? null : stream.handle,
      pointers,
      null,
    );
    // The slots stay referenced until the next launch (the driver copied them already).
    this.#lastParams = values;
    check(
      d,
      "cuLaunchKernel",
      code,
      `${fn.name} grid [${config.grid.join(", ")}] block [${config.block.join(", ")}] ` +
        `${config.dynamicSmemBytes} bytes of dynamic shared memory`,
    );
  }

  /** Waits for all work of the context (`cuCtxSynchronize`); raises the first kernel fault. */
  synchronize(): void {
    this.#live();
    const d = this.driver;
    check(d, "cuCtxSynchronize", d.cuCtxSynchronize());
  }

  /** Whether {@link Cuda.close} has not run yet. */
  get isOpen(): boolean {
    return this.#open;
  }

  /**
   * Frees every buffer, destroys every event, unloads every module still
   * alive, then releases the primary context. Idempotent; every release is
   * attempted even when one fails, and the first failure is raised at the end.
   */
  close(): void {
    if (!this.#open) return;
    let first: unknown = null;
    for (const r of [...this.#owned]) {
      try {
        if (r instanceof DeviceBuffer) r.free();
        else if (r instanceof CudaModule) r.unload();
        else (r as CudaEvent | CudaStream).destroy();
      } catch (e) {
        first ??= e;
      }
    }
    this.#owned.clear();
    this.#open = false;
    this.#lastParams = null;
    openContexts--;
    const d = this.driver;
    try {
      // Other open handles share the (one) primary context: it stays current for them.
      if (openContexts === 0) d.cuCtxSetCurrent(null);
      const code = d.cuDevicePrimaryCtxRelease(this.device.ordinal);
      if (openContexts === 0 && contextFaulted && d.cuDevicePrimaryCtxReset !== null) {
        // After a kernel fault the context cannot be used again: start the next one afresh.
        d.cuDevicePrimaryCtxReset(this.device.ordinal);
        contextFaulted = false;
      }
      if (!STICKY.has(code)) check(d, "cuDevicePrimaryCtxRelease_v2", code);
    } catch (e) {
      first ??= e;
    }
    // After a kernel fault every release fails the same way; the fault itself was raised already.
    if (first !== null && !(first instanceof CudaError && STICKY.has(first.code))) throw first;
  }

  /** `using cuda = Cuda.open()` closes it at the end of the scope. */
  [Symbol.dispose](): void {
    this.close();
  }
}
