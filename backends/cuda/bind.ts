/**
 * Binding one launch of a loaded kernel, without the driver: the caller's
 * buffers, sizes and scalars checked against the launch contract
 * (backends/ptx/contract.ts {@link launchViolations}) and written into a
 * kernel-parameter buffer built once per kernel. {@link LaunchBinder} is the
 * hot path of `LoadedKernel.launch` (backends/cuda/kernel.ts): per call it
 * allocates nothing beyond the contract check's small arrays, and the
 * parameter slots are patched in place. A kernel's tensor maps (sm90, §3.4)
 * are evaluated per launch and encoded into their slots only when their
 * tensor's address or the sizes they depend on change.
 *
 * @module
 */

import {
  contractGrid,
  contractWorkspaceBytes,
  type LaunchContract,
  launchViolations,
  type TensorBinding,
  withStrideDefaults,
} from "../ptx/contract.ts";
import type { KernelManifest } from "../ptx/manifest.ts";
import type { TensorMapArgs } from "../../ir/tensor_map.ts";
import { type LaunchLimits, launchProblems } from "./launch.ts";
import { type KernelArg, packKernelParams } from "./params.ts";
import { type CudaStream, DeviceBuffer } from "./resources.ts";
import {
  TENSOR_MAP_BYTES,
  type TensorMapEncoder,
  tensorMapLaunchArgs,
  type TensorMapParam,
  tensorMapParams,
} from "./tensor_map.ts";

/** A tensor argument: a buffer of the kernel's context, or a raw device address. */
export type BufferRef = DeviceBuffer | bigint;

/** Device buffers (or raw addresses) by tensor name. */
export type LaunchBuffers = Readonly<Record<string, BufferRef>>;

/**
 * Runtime sizes by dimension name (the kernel's own names: `M`, `N`, `K`, `L`,
 * ...), and runtime strides by stride parameter name (`lda`, ...; in
 * elements; one left out takes its dense value).
 */
export type LaunchSizes = Readonly<Record<string, number>>;

/** Options of one launch. */
export interface LaunchOptions {
  /** The stream (default: the legacy default stream). */
  readonly stream?: CudaStream;
  /** Scalar values by name; a scalar not given takes its declared default. */
  readonly scalars?: Readonly<Record<string, number>>;
  /**
   * A split-K workspace of the caller's (at least the contract's bytes,
   * 16-byte aligned, zeroed before its first launch; each launch leaves its
   * arrival counters at 0). Without it the kernel uses one of its own per stream.
   */
  readonly workspace?: BufferRef;
  /**
   * Launch as a programmatic dependent of the previous work in the stream (sm_90+;
   * `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`): the
   * kernel may start while the previous kernel finishes; kernels compiled with `pdl` for sm90 wait
   * (`griddepcontrol.wait`) before touching global memory, so results are those of a
   * serialized launch. Kernels of other targets run correctly with it but gain nothing.
   * Default false (`cuLaunchKernel`); a driver without `cuLaunchKernelEx` (before CUDA 11.8)
   * refuses it.
   */
  readonly pdl?: boolean;
}

/** Every problem of a launch, named; thrown before anything is launched. */
export class LaunchError extends Error {
  /** The kernel. */
  readonly kernel: string;
  /** One message per problem, each naming the tensor, dimension or scalar and its value. */
  readonly violations: readonly string[];

  /**
   * An error listing every problem of a launch of `kernel`.
   *
   * @param kernel The kernel's name.
   * @param violations The problems (at least one).
   */
  constructor(kernel: string, violations: readonly string[]) {
    const n = violations.length;
    super(
      `Kernel "${kernel}" was not launched: ${n} problem${n === 1 ? "" : "s"}:\n` +
        violations.map((v) => `  - ${v}`).join("\n"),
    );
    this.name = "LaunchError";
    this.kernel = kernel;
    this.violations = violations;
  }
}

/** A zero of a parameter's PTX type (the slots are patched per launch). */
function zeroArg(ptx: KernelManifest["params"][number]["ptx"]): KernelArg {
  if (ptx === "tmap") return { type: "tmap", tensor: "", value: new Uint8Array(TENSOR_MAP_BYTES) };
  return ptx === "u64" ? { type: "u64", value: 0n } : { type: ptx, value: 0 };
}

/** A tensor binding the binder rewrites in place on every launch. */
interface Slot {
  address: bigint;
  bytes: number | undefined;
}

/**
 * The per-kernel state of its launches: the contract (derived once), the
 * kernel-parameter buffer (built once, patched per launch) and reusable
 * bindings. Pure: no driver is called.
 */
export class LaunchBinder {
  /** The contract every launch is checked against. */
  readonly contract: LaunchContract;
  /** The slots `cuLaunchKernel` reads (one 8-byte value per parameter; 128 bytes a tensor map). */
  readonly values: ArrayBuffer;
  /** `kernelParams`: the slots' addresses. */
  readonly pointers: BigUint64Array;
  /** Each parameter's slot, as a byte offset into {@link LaunchBinder.values}. */
  readonly offsets: readonly number[];
  readonly #view: DataView;
  readonly #maps: readonly TensorMapParam[];
  readonly #encode: TensorMapEncoder | null;
  /** What each map's slot holds (address, extents, strides), or "" (stale). */
  readonly #mapKeys: string[];
  readonly #tensors = new Map<string, Slot>();
  readonly #slots: Slot[];
  /** An aligned stand-in address per tensor, far from the others (see {@link #fill}). */
  readonly #dummies: readonly bigint[];
  readonly #scalars = new Map<string, number>();
  readonly #known: ReadonlySet<string>;
  readonly #dims: ReadonlySet<string>;
  readonly #scalarNames: ReadonlySet<string>;
  readonly #ws: Slot = { address: 0n, bytes: undefined };
  readonly #limits: LaunchLimits | null;
  /** The grid of the last launch bound. */
  grid: readonly [number, number, number] = [1, 1, 1];
  /**
   * Workspace bytes the kernel must provide itself for the last launch bound
   * (0: none, or the caller gave one).
   */
  ownWorkspaceBytes = 0;

  /**
   * @param manifest The kernel's manifest.
   * @param contract Its contract.
   * @param limits The device's grid and shared-memory limits (null: not checked).
   * @param encode Encodes a tensor map into its slot (needed by kernels with tensor maps).
   * @throws {Error} For a kernel with tensor maps and no encoder.
   */
  constructor(
    manifest: KernelManifest,
    contract: LaunchContract,
    limits: LaunchLimits | null,
    encode: TensorMapEncoder | null = null,
  ) {
    this.contract = contract;
    this.#limits = limits;
    this.#maps = tensorMapParams(manifest);
    if (this.#maps.length > 0 && encode === null) {
      throw new Error(`Kernel "${manifest.name}" has tensor maps: its binder needs an encoder`);
    }
    this.#encode = encode;
    this.#mapKeys = this.#maps.map(() => "");
    const packed = packKernelParams(manifest.params.map((p) => zeroArg(p.ptx)));
    this.values = packed.values;
    this.pointers = packed.pointers;
    this.offsets = packed.offsets;
    this.#view = new DataView(this.values);
    this.#slots = contract.tensors.map(() => ({ address: 0n, bytes: undefined }));
    this.#dummies = contract.tensors.map((_, i) => BigInt(i + 1) << 40n);
    this.#known = new Set(contract.tensors.map((t) => t.name));
    this.#dims = new Set([...contract.dims, ...contract.strides].map((d) => d.name));
    this.#scalarNames = new Set(contract.scalars.map((s) => s.name));
  }

  /**
   * Checks one launch and, when it may run, writes its arguments into the
   * parameter slots (the workspace's address excepted when the kernel
   * provides its own: {@link LaunchBinder.setWorkspace}), its grid into
   * {@link LaunchBinder.grid} and the workspace it needs into
   * {@link LaunchBinder.ownWorkspaceBytes}.
   *
   * @param buffers Tensors by name.
   * @param sizes Sizes by dimension name.
   * @param options Scalars and a workspace.
   * @returns The violations, or null when bound.
   */
  bind(buffers: LaunchBuffers, sizes: LaunchSizes, options: LaunchOptions): string[] | null {
    const c = this.contract;
    let extra: string[] | null = null;
    const tensors = c.tensors;
    for (let i = 0; i < tensors.length; i++) {
      const t = tensors[i]!;
      const v = buffers[t.name];
      const slot = this.#slots[i]!;
      if (v === undefined) {
        this.#tensors.delete(t.name);
        continue;
      }
      const problem = this.#fill(slot, v, t.name, this.#dummies[i]!);
      if (problem !== null) (extra ??= []).push(problem);
      this.#tensors.set(t.name, slot);
    }
    for (const n in buffers) {
      if (!this.#known.has(n)) {
        (extra ??= []).push(
          `Kernel "${c.name}" has no tensor "${n}" (it has ${list(this.#known)})`,
        );
      }
    }
    for (const n in sizes) {
      if (!this.#dims.has(n)) {
        (extra ??= []).push(
          `Kernel "${c.name}" has no runtime ${
            c.strides.length === 0 ? "dimension" : "dimension or stride"
          } "${n}"` +
            (this.#dims.size === 0
              ? " (its sizes are all fixed)"
              : ` (it has ${list(this.#dims)})`),
        );
      }
    }
    const given = options.scalars;
    for (const s of c.scalars) {
      const v = given?.[s.name] ?? s.default ?? undefined;
      if (v === undefined) this.#scalars.delete(s.name);
      else this.#scalars.set(s.name, v);
    }
    if (given !== undefined) {
      for (const n in given) {
        if (!this.#scalarNames.has(n)) {
          (extra ??= []).push(
            `Kernel "${c.name}" has no scalar "${n}"` +
              (this.#scalarNames.size === 0 ? "" : ` (it has ${list(this.#scalarNames)})`),
          );
        }
      }
    }
    let ws: TensorBinding | undefined;
    if (options.workspace !== undefined) {
      const problem = this.#fill(this.#ws, options.workspace, null, 1n << 50n);
      if (problem !== null) (extra ??= []).push(problem);
      ws = this.#ws;
    }
    const bad = launchViolations(c, sizes, this.#tensors, this.#scalars, ws);
    if (extra !== null) bad.push(...extra);
    if (bad.length > 0) return bad;
    const grid = contractGrid(c, sizes);
    const lim = this.#limits;
    if (
      lim !== null && !(grid[0] <= lim.maxGrid[0] && grid[1] <= lim.maxGrid[1] &&
        grid[2] <= lim.maxGrid[2])
    ) {
      return launchProblems(c.name, grid, c.block, c.dynamicSmemBytes, lim);
    }
    const maps = this.#maps.length === 0 ? null : this.#mapArgs(sizes);
    if (maps !== null && typeof maps[0] === "string") return maps as string[];
    this.#write(sizes, ws);
    if (maps !== null) this.#writeMaps(maps as TensorMapArgs[]);
    this.grid = grid;
    this.ownWorkspaceBytes = ws === undefined && c.workspace !== null
      ? contractWorkspaceBytes(c, sizes)
      : 0;
    return null;
  }

  /**
   * Writes the workspace's address into its slot.
   *
   * @param address The device address.
   */
  setWorkspace(address: bigint): void {
    const w = this.contract.workspace;
    if (w !== null) this.#view.setBigUint64(this.offsets[w.param]!, address, true);
  }

  /**
   * A binding from a buffer or an address; a message when it is neither or
   * freed (the slot then holds `dummy`, an aligned address of its own, so
   * that the contract adds no second message about the same argument).
   * `tensor` names the tensor (null: the workspace); a message is built only
   * on failure (no string per launch).
   */
  #fill(slot: Slot, v: unknown, tensor: string | null, dummy: bigint): string | null {
    const b = bufferBinding(v, tensor);
    if (typeof b === "string") {
      slot.address = dummy;
      slot.bytes = undefined;
      return b;
    }
    slot.address = b.address;
    slot.bytes = b.bytes;
    return null;
  }

  /** The arguments into their slots (the contract passed). */
  #write(sizes: LaunchSizes, ws: TensorBinding | undefined): void {
    const dv = this.#view;
    const c = this.contract;
    const at = this.offsets;
    for (let i = 0; i < c.tensors.length; i++) {
      dv.setBigUint64(at[c.tensors[i]!.param]!, this.#slots[i]!.address, true);
    }
    for (const d of c.dims) dv.setUint32(at[d.param]!, sizes[d.name]!, true);
    if (c.strides.length > 0) {
      // Shortcut: a stride left out costs a copy of the sizes here and in the
      // contract check (strided kernels only; none when every stride is given).
      const sz = withStrideDefaults(c, sizes);
      for (const s of c.strides) dv.setBigUint64(at[s.param]!, BigInt(sz[s.name]!), true);
    }
    for (const s of c.scalars) {
      const v = this.#scalars.get(s.name)!;
      const o = at[s.param]!;
      if (s.ptx === "f32") dv.setFloat32(o, v, true);
      else if (s.ptx === "f64") dv.setFloat64(o, v, true);
      else dv.setInt32(o, v, true);
    }
    if (ws !== undefined) this.setWorkspace(ws.address);
  }

  /** The tensor maps' encoder arguments at these sizes, or their violations (the contract passed). */
  #mapArgs(sizes: LaunchSizes): TensorMapArgs[] | string[] {
    const c = this.contract;
    const values = c.strides.length > 0 ? withStrideDefaults(c, sizes) : sizes;
    return tensorMapLaunchArgs(this.#maps, (n) => this.#tensors.get(n)?.address, values);
  }

  /** Encodes each map whose inputs changed since its slot was last written. */
  #writeMaps(maps: readonly TensorMapArgs[]): void {
    const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(this.values)));
    for (let i = 0; i < maps.length; i++) {
      const a = maps[i]!;
      const key = `${a.address}|${a.globalDim}|${a.globalStrides}`;
      if (key === this.#mapKeys[i]) continue;
      this.#mapKeys[i] = "";
      const m = this.#maps[i]!;
      const dst = Deno.UnsafePointer.create(base + BigInt(this.offsets[m.param]!));
      this.#encode!(a, m.spec.tensor, dst);
      this.#mapKeys[i] = key;
    }
  }
}

/**
 * A tensor argument's binding (its address, and its length for a `DeviceBuffer`), or
 * the message when it is neither a live buffer nor a 64-bit address. Shared by the
 * ordinary launch (LaunchBinder) and the grouped one (backends/cuda/grouped.ts).
 *
 * @param v The argument.
 * @param tensor The tensor's name (null: the split-K workspace).
 * @returns The binding, or the message.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { bufferBinding } from "./bind.ts";
 * deepEqual(bufferBinding(4096n, "A"), { address: 4096n, bytes: undefined });
 * equal(bufferBinding(-1n, "A"), 'Tensor "A" has address -1, not a 64-bit address');
 * ```
 */
export function bufferBinding(v: unknown, tensor: string | null): TensorBinding | string {
  if (typeof v === "bigint") {
    return v >= 0n && v < 1n << 64n
      ? { address: v, bytes: undefined }
      : `${subject(tensor)} has address ${v}, not a 64-bit address`;
  }
  if (v instanceof DeviceBuffer) {
    if (v.freed) return `${subject(tensor)}'s device buffer was freed`;
    return { address: v.ptr, bytes: v.bytes };
  }
  return `${subject(tensor)} is ${
    describe(v)
  }: a DeviceBuffer or a bigint device address is needed`;
}

/** The argument a message is about: a tensor by name, or (null) the workspace. */
function subject(tensor: string | null): string {
  return tensor === null ? "The split-K workspace" : `Tensor "${tensor}"`;
}

/** Names as a message lists them: `"A", "B"`. */
export function list(names: ReadonlySet<string>): string {
  return [...names].map((n) => `"${n}"`).join(", ");
}

/** A value as a message names it: `null`, `a Float32Array`, `number 3`. */
export function describe(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "object") return `a ${v.constructor?.name ?? "object"}`;
  return `${typeof v} ${String(v)}`;
}
