/**
 * What a {@link Cuda} context owns: device memory ({@link DeviceBuffer}),
 * loaded modules and their kernels ({@link CudaModule}, {@link CudaFunction}),
 * events and streams. Each is released once (idempotent) and then forgotten
 * by its owner, so that closing the context frees only what is still alive.
 *
 * @module
 */

import { cbuf, CU_FUNC_ATTRIBUTE, type Driver } from "./symbols.ts";
import { check } from "./errors.ts";

/**
 * The context a resource belongs to, as the resource sees it: its driver,
 * and the set it leaves when released (`Cuda` is the one implementation).
 */
export interface Owner {
  /** The driver. */
  readonly driver: Driver;
  /** Drops a released resource from the set freed on close. */
  forget(r: DeviceBuffer | OwnedHandle): void;
}

/** Attributes of a loaded kernel (`cuFuncGetAttribute`). */
export interface FunctionAttributes {
  /** Registers per thread. */
  readonly registers: number;
  /** Local memory per thread (spills and stack). */
  readonly localBytes: number;
  /** Static shared memory per block, in bytes. */
  readonly staticSharedBytes: number;
  /** Constant memory the kernel uses, in bytes. */
  readonly constBytes: number;
  /** The most threads a block of this kernel may have. */
  readonly maxThreadsPerBlock: number;
  /** PTX and binary versions, major * 10 + minor. */
  readonly ptxVersion: number;
  /** The version of the binary the JIT produced, major * 10 + minor. */
  readonly binaryVersion: number;
}

/** Device memory owned by a {@link Cuda}. */
export class DeviceBuffer {
  readonly #cuda: Owner;
  #ptr: bigint;
  /** Size in bytes. */
  readonly bytes: number;

  /**
   * Use {@link Cuda.alloc}.
   *
   * @internal
   * @ignore
   */
  constructor(cuda: Owner, ptr: bigint, bytes: number) {
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
    check(d, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD_v2(this.ptr, src, BigInt(src.byteLength)));
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
    check(d, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH_v2(dst, this.ptr, BigInt(dst.byteLength)));
    return dst;
  }

  /**
   * Sets every byte (`cuMemsetD8`).
   *
   * @param byte The value, 0..255.
   */
  fill(byte: number): void {
    const d = this.#cuda.driver;
    check(d, "cuMemsetD8_v2", d.cuMemsetD8_v2(this.ptr, byte & 0xff, BigInt(this.bytes)));
  }

  /** Frees the memory (idempotent). */
  free(): void {
    if (this.#ptr === 0n) return;
    const p = this.#ptr;
    this.#ptr = 0n;
    this.#cuda.forget(this);
    const d = this.#cuda.driver;
    check(d, "cuMemFree_v2", d.cuMemFree_v2(p));
  }
}

/** A kernel of a loaded module. */
export class CudaFunction {
  readonly #cuda: Owner;
  readonly #handle: Deno.PointerValue;
  /** The entry name. */
  readonly name: string;

  /**
   * Use {@link CudaModule.getFunction}.
   *
   * @internal
   * @ignore
   */
  constructor(cuda: Owner, handle: Deno.PointerValue, name: string) {
    this.#cuda = cuda;
    this.#handle = handle;
    this.name = name;
  }

  /**
   * The `CUfunction`.
   *
   * @internal
   * @ignore
   */
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

  /**
   * Registers, local memory, static shared memory and versions.
   *
   * @returns The attributes (`cuFuncGetAttribute`).
   */
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
export abstract class OwnedHandle {
  readonly #cuda: Owner;
  #handle: Deno.PointerValue;
  readonly #what: string;

  /**
   * Takes ownership of `handle` for `cuda`.
   *
   * @internal
   * @ignore
   */
  constructor(cuda: Owner, handle: Deno.PointerValue, what: string) {
    this.#cuda = cuda;
    this.#handle = handle;
    this.#what = what;
  }

  /**
   * The owning context.
   *
   * @ignore
   */
  protected get cuda(): Owner {
    return this.#cuda;
  }

  /** The handle; an error once released. */
  protected get live(): Deno.PointerValue {
    if (this.#handle === null) throw new Error(`${this.#what} used after it was released`);
    return this.#handle;
  }

  /**
   * Releases the handle with `call` (once; later calls do nothing).
   *
   * @ignore
   */
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

  /**
   * Use {@link Cuda.loadModule}.
   *
   * @internal
   * @ignore
   */
  constructor(cuda: Owner, handle: Deno.PointerValue, jit: JitInfo) {
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
  /**
   * Use {@link Cuda.createEvent}.
   *
   * @internal
   * @ignore
   */
  constructor(cuda: Owner, handle: Deno.PointerValue) {
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
    check(d, "cuEventElapsedTime", d.cuEventElapsedTime_v2(out, start.live, this.live));
    return out[0]!;
  }

  /** Destroys the event (idempotent). */
  destroy(): void {
    this.release("cuEventDestroy_v2", (d, h) => d.cuEventDestroy_v2(h));
  }
}

/**
 * A stream that does not synchronise with the default stream
 * (`CU_STREAM_NON_BLOCKING`): work launched on it runs beside the default
 * stream's. Create with {@link Cuda.createStream}.
 */
export class CudaStream extends OwnedHandle {
  /**
   * Use {@link Cuda.createStream}.
   *
   * @internal
   * @ignore
   */
  constructor(cuda: Owner, handle: Deno.PointerValue) {
    super(cuda, handle, "Stream");
  }

  /**
   * The handle for cuLaunchKernel.
   *
   * @internal
   * @ignore
   */
  get handle(): Deno.PointerValue {
    return this.live;
  }

  /**
   * Waits for the work queued on the stream (`cuStreamSynchronize`; the whole
   * context's, `cuCtxSynchronize`, on a driver without it).
   */
  synchronize(): void {
    const d = this.cuda.driver;
    if (d.cuStreamSynchronize === null) check(d, "cuCtxSynchronize", d.cuCtxSynchronize());
    else check(d, "cuStreamSynchronize", d.cuStreamSynchronize(this.live));
  }

  /** Destroys the stream (idempotent); work already queued on it still runs. */
  destroy(): void {
    this.release("cuStreamDestroy_v2", (d, h) => d.cuStreamDestroy_v2?.(h) ?? 0);
  }
}
