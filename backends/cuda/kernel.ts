/**
 * A compiled kernel loaded once and launched many times on device buffers:
 * {@link loadKernel} JIT-loads the PTX and keeps the module and function;
 * {@link LoadedKernel.launch} checks every launch against the launch contract
 * (backends/ptx/contract.ts) before anything runs, raising a
 * {@link LaunchError} that lists every problem, then launches asynchronously
 * on the stream. The parameter buffer is built once and patched per launch
 * (backends/cuda/bind.ts); a split-K kernel keeps a zeroed workspace per
 * stream, grown when a launch needs more, unless the caller gives one. An sm90
 * kernel's tensor maps are encoded into their slots (`cuTensorMapEncodeTiled`)
 * when a launch changes their tensor's address or sizes (backends/cuda/tensor_map.ts).
 *
 * @module
 */

import { launchContract, WORKSPACE_ALIGN_BYTES } from "../ptx/contract.ts";
import type { KernelManifest } from "../ptx/manifest.ts";
import { type Cuda, DEFAULT_DYNAMIC_SMEM_LIMIT, type Driver } from "./driver.ts";
import { check } from "./errors.ts";
import { launchPacked, launchProblems, requirePdl, targetProblem } from "./launch.ts";
import { encodeTensorMap, tensorMapProblem, withoutTensorMaps } from "./tensor_map.ts";
import type { CudaFunction, CudaModule, CudaStream, DeviceBuffer } from "./resources.ts";
import {
  GroupedLaunch,
  type GroupedLaunchOptions,
  type GroupedProblem,
  residentBlocks,
} from "./grouped.ts";
import {
  LaunchBinder,
  type LaunchBuffers,
  LaunchError,
  type LaunchOptions,
  type LaunchSizes,
} from "./bind.ts";

export {
  type BufferRef,
  LaunchBinder,
  type LaunchBuffers,
  LaunchError,
  type LaunchOptions,
  type LaunchSizes,
} from "./bind.ts";
export {
  GroupedLaunch,
  type GroupedLaunchOptions,
  type GroupedProblem,
  type MoeOperands,
  moeProblems,
} from "./grouped.ts";

/** What {@link loadKernel} loads: a compiled kernel, or PTX and its manifest. */
export interface KernelSource {
  /** The PTX module holding the kernel. */
  readonly ptx: string;
  /** The kernel's launch manifest. */
  readonly manifest: KernelManifest;
}

/** Options of {@link loadKernel}. */
export interface LoadKernelOptions {
  /** The context the kernel is loaded into (it stays the caller's to close). */
  readonly cuda: Cuda;
}

/**
 * A kernel loaded into a context, launched many times. Its module, function,
 * parameter buffer and split-K workspaces live until {@link LoadedKernel.close}
 * (or the context's close).
 */
export class LoadedKernel {
  /** The kernel's name. */
  readonly name: string;
  /** Its manifest. */
  readonly manifest: KernelManifest;
  /** The loaded module (its `jit` holds the JIT's log). */
  readonly module: CudaModule;
  /** The kernel function. */
  readonly function: CudaFunction;
  readonly #cuda: Cuda;
  /** Null for a grouped kernel (its launches: {@link LoadedKernel.groupedLaunch}). */
  readonly #binder: LaunchBinder | null;
  readonly #grouped = new Set<GroupedLaunch>();
  #resident: number | null = null;
  readonly #workspaces = new Map<CudaStream | null, DeviceBuffer>();
  #launches = 0;
  #open = true;
  // The hot path's constants, read once.
  readonly #driver: Driver;
  readonly #fn: Deno.PointerValue;
  readonly #block: readonly [number, number, number];
  readonly #smem: number;

  /** @internal Use {@link loadKernel}. */
  constructor(cuda: Cuda, source: KernelSource) {
    const m = source.manifest;
    const problems = launchProblems(m.name, [1, 1, 1], m.block, m.dynamicSmemBytes, cuda.device);
    const arch = targetProblem(m.name, m.target, cuda.device.computeCapability);
    if (arch !== null) problems.push(arch);
    const tmap = tensorMapProblem(cuda.driver, m);
    if (tmap !== null) problems.push(tmap);
    if (problems.length > 0) throw new LaunchError(m.name, problems);
    // A grouped kernel's parameters are its table, count and scalars: no ordinary contract.
    const d = cuda.driver;
    this.#binder = m.group !== undefined ? null : new LaunchBinder(
      m,
      launchContract(withoutTensorMaps(m)),
      cuda.device,
      (a, tensor, dst) => encodeTensorMap(d, a, tensor, dst),
    );
    this.#cuda = cuda;
    this.name = m.name;
    this.manifest = m;
    this.module = cuda.loadModule(source.ptx);
    try {
      this.function = this.module.getFunction(m.entry);
      if (m.dynamicSmemBytes > DEFAULT_DYNAMIC_SMEM_LIMIT) {
        this.function.setMaxDynamicSharedBytes(m.dynamicSmemBytes);
      }
    } catch (e) {
      this.module.unload();
      throw e;
    }
    this.#driver = cuda.driver;
    this.#fn = this.function.handle;
    this.#block = m.block;
    this.#smem = m.dynamicSmemBytes;
  }

  /** Launches so far (each that reached `cuLaunchKernel` and succeeded). */
  get launches(): number {
    return this.#launches;
  }

  /**
   * The split-K workspace the kernel holds for a stream, or null.
   *
   * @param stream The stream (default: the default stream).
   * @returns The buffer.
   */
  workspace(stream?: CudaStream): DeviceBuffer | null {
    return this.#workspaces.get(stream ?? null) ?? null;
  }

  /**
   * Launches the kernel asynchronously on `options.stream`, after checking
   * every size, alignment, buffer length, scalar and the workspace against
   * the contract; on any problem nothing is launched (nor allocated).
   *
   * @param buffers Device buffers (or raw device addresses) by tensor name.
   * @param sizes Sizes by runtime dimension name, and strides by stride parameter name
   *   (elements; one left out is dense).
   * @param options The stream, scalars (defaults apply), a workspace of the caller's, and
   *   `pdl`, a programmatic dependent launch ({@link LaunchOptions.pdl}).
   * @throws {LaunchError} Listing every problem, each naming its tensor, dimension or scalar
   *   (a tensor map's rule broken: ir/tensor_map.ts, naming the tensor).
   * @throws {CudaError} When the driver refuses the launch, or a tensor map (naming its tensor).
   * @throws {Error} For a grouped kernel: it is launched with {@link LoadedKernel.groupedLaunch};
   *   with `pdl`, when the driver lacks `cuLaunchKernelEx` (nothing launched or allocated).
   */
  launch(buffers: LaunchBuffers, sizes: LaunchSizes, options: LaunchOptions = {}): void {
    if (!this.#open || !this.#cuda.isOpen) {
      throw new Error(`Kernel "${this.name}" launched after its close or its context's`);
    }
    const binder = this.#binder;
    if (binder === null) {
      throw new Error(
        `Kernel "${this.name}" is grouped (DESIGN §6.2): launch it with ` +
          "groupedLaunch(problems, { scalars }).launch(), not launch(buffers, sizes)",
      );
    }
    const pdl = options.pdl === true;
    if (pdl) requirePdl(this.#driver, `kernel "${this.name}"`);
    const bad = binder.bind(buffers, sizes, options);
    if (bad !== null) throw new LaunchError(this.name, bad);
    const stream = options.stream;
    const h = stream === undefined ? null : stream.handle;
    if (binder.ownWorkspaceBytes > 0) {
      binder.setWorkspace(this.#ownWorkspace(stream ?? null, binder.ownWorkspaceBytes));
    }
    launchPacked(
      this.#driver,
      this.#fn,
      binder.grid,
      this.#block,
      this.#smem,
      h,
      binder.pointers,
      this.name,
      pdl,
    );
    this.#launches++;
  }

  /**
   * Prepares a launch of a grouped kernel (DESIGN §6.2) over a list of
   * problems: checks every problem as an ordinary launch of the kernel's form
   * (a problem with a zero dimension is legal; a tensor it never reads may be
   * left out), builds the problem table and uploads it once to a buffer the
   * returned launch owns, and picks the persistent grid
   * (`[min(all tiles, blocks), 1, 1]`, blocks: SMs x the occupancy the driver
   * reports unless `options.blocks`). Launch it with {@link GroupedLaunch.launch}
   * as often as wanted; close it (or the kernel, or the context) to free the
   * table. With zero problems its launch does nothing.
   *
   * @param problems Each problem's buffers and sizes.
   * @param options Scalars (shared by every problem), the grid's block count, the stream.
   * @returns The launch.
   * @throws {LaunchError} Listing every problem's violations, each with its index.
   * @throws {Error} For a kernel that is not grouped.
   */
  groupedLaunch(
    problems: readonly GroupedProblem[],
    options: GroupedLaunchOptions = {},
  ): GroupedLaunch {
    if (!this.#open || !this.#cuda.isOpen) {
      throw new Error(`Kernel "${this.name}" used after its close or its context's`);
    }
    if (this.manifest.group === undefined) {
      throw new Error(
        `Kernel "${this.name}" is not grouped: launch it with launch(buffers, sizes)`,
      );
    }
    const cuda = this.#cuda;
    const l = new GroupedLaunch(
      {
        manifest: this.manifest,
        driver: this.#driver,
        fn: this.#fn,
        alloc: (bytes) => cuda.alloc(bytes),
        synchronize: () => cuda.synchronize(),
        isOpen: () => this.#open && cuda.isOpen,
        launched: () => {
          this.#launches++;
        },
        residentBlocks: () => this.residentBlocks,
        closed: (g) => this.#grouped.delete(g),
      },
      problems,
      options,
    );
    this.#grouped.add(l);
    return l;
  }

  /**
   * Blocks of this kernel that run at once on the device: SMs x the occupancy
   * the driver reports (`cuOccupancyMaxActiveBlocksPerMultiprocessor`; x 1
   * without it). Asked once.
   */
  get residentBlocks(): number {
    this.#resident ??= residentBlocks(
      this.#driver,
      this.#fn,
      this.#block[0] * this.#block[1] * this.#block[2],
      this.#smem,
      this.#cuda.device.multiprocessors,
    );
    return this.#resident;
  }

  /**
   * The kernel's own workspace on a stream, at least `bytes`, zeroed when
   * allocated (each launch leaves its arrival counters at 0); a smaller one is freed after
   * the stream's queued work.
   */
  #ownWorkspace(stream: CudaStream | null, bytes: number): bigint {
    const held = this.#workspaces.get(stream);
    if (held !== undefined && !held.freed && held.bytes >= bytes) return held.ptr;
    if (held !== undefined) {
      // Launches queued on the stream may still use it.
      if (!held.freed) this.#sync(stream);
      this.#workspaces.delete(stream);
      held.free();
    }
    // A whole number of 16-byte words (the contract's workspace alignment).
    const size = Math.ceil(bytes / WORKSPACE_ALIGN_BYTES) * WORKSPACE_ALIGN_BYTES;
    const w = this.#cuda.alloc(size);
    try {
      const d = this.#cuda.driver;
      if (d.cuMemsetD8Async !== null) {
        const h = stream === null ? null : stream.handle;
        check(d, "cuMemsetD8Async", d.cuMemsetD8Async(w.ptr, 0, BigInt(size), h));
      } else w.fill(0);
    } catch (e) {
      w.free();
      throw e;
    }
    this.#workspaces.set(stream, w);
    return w.ptr;
  }

  #sync(stream: CudaStream | null): void {
    if (stream === null) this.#cuda.synchronize();
    else stream.synchronize();
  }

  /**
   * Waits for the kernel's queued work on its streams, frees its workspaces
   * and unloads its module (idempotent; nothing to do after the context's
   * close, which freed them already).
   */
  close(): void {
    if (!this.#open) return;
    let first: unknown = null;
    for (const g of [...this.#grouped]) {
      try {
        g.close();
      } catch (e) {
        first ??= e;
      }
    }
    this.#open = false;
    for (const [stream, w] of this.#workspaces) {
      try {
        if (this.#cuda.isOpen && !w.freed) this.#sync(stream);
      } catch (e) {
        first ??= e;
      }
      try {
        w.free();
      } catch (e) {
        first ??= e;
      }
    }
    this.#workspaces.clear();
    try {
      this.module.unload();
    } catch (e) {
      first ??= e;
    }
    if (first !== null) throw first;
  }

  /** `using k = loadKernel(...)` closes it at the end of the scope. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Loads a compiled kernel once (JIT, function, dynamic shared memory) for
 * many launches on device buffers.
 *
 * @param source A compiled kernel, or `{ ptx, manifest }`.
 * @param options The context.
 * @returns The loaded kernel; close it (or the context) to release it.
 * @throws {LaunchError} When the block or shared memory cannot run on the device.
 * @throws {JitError} With the JIT's log when it rejects the PTX.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile, Cuda, cudaAvailable, loadKernel, uploadTensor, downloadTensor } from "../../mod.ts";
 * const ck = compile(`kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n] }`).kernels[0]!;
 * if (cudaAvailable().ok) {
 *   using cuda = Cuda.open();
 *   using k = loadKernel(ck, { cuda });
 *   const a = uploadTensor(cuda, new Float32Array(64 * 64).fill(0.5), "f16");
 *   const b = uploadTensor(cuda, new Float32Array(64 * 64).fill(0.25), "f16");
 *   const d = cuda.alloc(64 * 64 * 4);
 *   k.launch({ A: a, B: b, D: d }, { M: 64, N: 64, K: 64 });
 *   cuda.synchronize();
 *   ok(downloadTensor(d, "f32")[0] === 8);
 * }
 * ```
 */
export function loadKernel(source: KernelSource, options: LoadKernelOptions): LoadedKernel {
  return new LoadedKernel(options.cuda, source);
}
