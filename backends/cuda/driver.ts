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
 * The parts: symbols.ts (the cuda.h constants, the `Deno.dlopen` table and
 * the bound {@link Driver}), errors.ts (the errors and the check of every
 * call), load.ts (finding and starting the driver), params.ts (kernel
 * arguments), resources.ts (buffers, modules, functions, events, streams);
 * this module holds the context, {@link Cuda}, and re-exports the rest.
 *
 * @module
 */

import { cbuf, CU_DEVICE_ATTRIBUTE, CU_JIT, type Driver, ptrValue } from "./symbols.ts";
import {
  check,
  CudaError,
  CudaUnavailableError,
  errorNames,
  JitError,
  STICKY,
  takeContextFault,
} from "./errors.ts";
import { initDriver } from "./load.ts";
import { type KernelArg, packKernelParams } from "./params.ts";
import { encodeTensorMap } from "./tensor_map.ts";
import { launchPacked } from "./launch.ts";
import type { TensorMapArgs } from "../../ir/tensor_map.ts";
import {
  CudaEvent,
  type CudaFunction,
  CudaModule,
  CudaStream,
  DeviceBuffer,
  type OwnedHandle,
} from "./resources.ts";

export {
  CU_DEVICE_ATTRIBUTE,
  CU_FUNC_ATTRIBUTE,
  CU_JIT,
  CU_LAUNCH_ATTRIBUTE,
  CU_LAUNCH_ATTRIBUTE_LAYOUT,
  CU_LAUNCH_CONFIG,
  DEFAULT_DYNAMIC_SMEM_LIMIT,
  type Driver,
} from "./symbols.ts";
export { CudaError, CudaUnavailableError, JitError } from "./errors.ts";
export { cudaAvailable } from "./load.ts";
export { type KernelArg, type PackedParams, packKernelParams } from "./params.ts";
export {
  CudaEvent,
  CudaFunction,
  CudaModule,
  CudaStream,
  DeviceBuffer,
  type FunctionAttributes,
  type JitInfo,
} from "./resources.ts";

/** Open {@link Cuda} handles (all share the device's primary context). */
let openContexts = 0;

/** What the driver says about a device. */
export interface DeviceInfo {
  /** The device's ordinal (`cuDeviceGet`). */
  readonly ordinal: number;
  /** The device's name, e.g. `NVIDIA H200`. */
  readonly name: string;
  /** `[major, minor]`, e.g. `[9, 0]` for an H200. */
  readonly computeCapability: readonly [number, number];
  /** E.g. `sm_90`. */
  readonly arch: string;
  /** The number of SMs. */
  readonly multiprocessors: number;
  /** Typical SM clock (kHz). */
  readonly clockKHz: number;
  /** Typical memory clock (kHz). */
  readonly memoryClockKHz: number;
  /** Width of the memory bus, in bits. */
  readonly memoryBusBits: number;
  /** L2 cache size, in bytes. */
  readonly l2Bytes: number;
  /** Device memory, in bytes. */
  readonly totalMemoryBytes: number;
  /** Shared memory a block may have by default. */
  readonly maxSharedPerBlock: number;
  /** Shared memory a block may opt in to (`cuFuncSetAttribute`). */
  readonly maxSharedPerBlockOptin: number;
  /** The largest grid `[x, y, z]`, in blocks. */
  readonly maxGrid: readonly [number, number, number];
  /** `cuDriverGetVersion`, e.g. 13000. */
  readonly driverVersion: number;
  /** E.g. `13.0`. */
  readonly driverVersionText: string;
  /** The library that was loaded. */
  readonly library: string;
}

/**
 * Asks the driver about device `ordinal`.
 *
 * @param d The driver.
 * @param ordinal The device.
 * @returns What it says, and the `CUdevice`.
 */
function queryDevice(d: Driver, ordinal: number): { info: DeviceInfo; dev: number } {
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
  check(d, "cuDeviceTotalMem_v2", d.cuDeviceTotalMem_v2(mem, dev));
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
  return { info: device, dev };
}

/** Launch geometry. */
export interface LaunchConfig {
  /** The grid `[x, y, z]`, in blocks. */
  readonly grid: readonly [number, number, number];
  /** The block `[x, y, z]`, in threads. */
  readonly block: readonly [number, number, number];
  /** Dynamic shared memory per block, in bytes. */
  readonly dynamicSmemBytes: number;
}

/** Options of {@link Cuda.launch}. */
export interface CudaLaunchOptions {
  /** Launch as a programmatic dependent of the previous work in the stream, as
   * `LoadedKernel.launch`'s `pdl` (backends/cuda/bind.ts `LaunchOptions.pdl`). Default false. */
  readonly pdl?: boolean;
}

/**
 * A device's primary context and everything allocated through it. Open with
 * {@link Cuda.open}; {@link Cuda.close} (or `using`) frees every buffer,
 * event and module still alive and releases the context, also after errors.
 *
 * @example
 * ```ts
 * import { deepEqual } from "node:assert/strict";
 * import { Cuda, cudaAvailable } from "./driver.ts";
 * // Without a driver (CI) there is nothing to run; with one, a round trip through device memory.
 * if (cudaAvailable().ok) {
 *   using cuda = Cuda.open();
 *   const bytes = new Uint8Array([3, 1, 4, 1, 5, 9, 2, 6]);
 *   const buf = cuda.alloc(bytes.length);
 *   buf.upload(bytes);
 *   deepEqual(buf.download(), bytes);
 * }
 * ```
 */
export class Cuda {
  /**
   * The bound driver functions, for gemmc's own launch code.
   *
   * @ignore
   */
  readonly driver: Driver;
  /** The device. */
  readonly device: DeviceInfo;
  #open = true;
  #lastParams: ArrayBuffer | null = null;
  /** Tensor maps encoded by {@link Cuda.launch}, by their arguments' object (reused sets). */
  readonly #maps = new WeakMap<TensorMapArgs, Uint8Array>();
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
    const { info: device, dev } = queryDevice(d, ordinal);
    const slot = new BigUint64Array(new ArrayBuffer(8));
    check(d, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(slot, dev));
    const ctx = Deno.UnsafePointer.create(slot[0]!);
    const code = d.cuCtxSetCurrent(ctx);
    if (code !== 0) {
      d.cuDevicePrimaryCtxRelease_v2(dev);
      check(d, "cuCtxSetCurrent", code);
    }
    return new Cuda(d, device);
  }

  #live(): void {
    if (!this.#open) throw new Error("CUDA context used after close");
  }

  /**
   * Drops a resource from the set released by {@link Cuda.close}.
   *
   * @internal
   * @ignore
   */
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
      d.cuMemAlloc_v2(out, BigInt(Math.max(1, bytes))),
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
   * `stream`; asynchronous. A tensor map given as its encoder's arguments
   * (`kernelArgs` makes them) is encoded with `cuTensorMapEncodeTiled` once per
   * arguments object: a set of arguments launched again reuses its maps. With
   * `options.pdl`, `cuLaunchKernelEx` as a programmatic dependent of the previous
   * work in the stream ({@link CudaLaunchOptions.pdl}).
   *
   * @param fn The kernel.
   * @param config Grid, block and dynamic shared memory.
   * @param args The arguments, in parameter order.
   * @param stream A stream from {@link Cuda.createStream}; the default stream when absent.
   * @param options `pdl`: a programmatic dependent launch (default false).
   * @throws {CudaError} When the driver refuses the launch.
   * @throws {Error} With `pdl`, when the driver lacks `cuLaunchKernelEx`.
   */
  launch(
    fn: CudaFunction,
    config: LaunchConfig,
    args: readonly KernelArg[],
    stream?: CudaStream,
    options: CudaLaunchOptions = {},
  ): void {
    this.#live();
    const d = this.driver;
    const { values, pointers } = packKernelParams(args, (a, tensor, dst) => {
      const held = this.#maps.get(a);
      if (held !== undefined) {
        new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(dst!, held.length)).set(held);
        return;
      }
      encodeTensorMap(d, a, tensor, dst);
      this.#maps.set(a, new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(dst!, 128)).slice());
    });
    if (options.pdl === true) {
      this.#lastParams = values;
      const h = stream === undefined ? null : stream.handle;
      const c = config;
      launchPacked(d, fn.handle, c.grid, c.block, c.dynamicSmemBytes, h, pointers, fn.name, true);
      return;
    }
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
      const code = d.cuDevicePrimaryCtxRelease_v2(this.device.ordinal);
      if (openContexts === 0 && d.cuDevicePrimaryCtxReset_v2 !== null && takeContextFault()) {
        // After a kernel fault the context cannot be used again: start the next one afresh.
        d.cuDevicePrimaryCtxReset_v2(this.device.ordinal);
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
