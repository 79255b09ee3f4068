/**
 * How a driver call fails: {@link CudaError} (a CUresult, with the driver's
 * name and description for it), {@link JitError} (the JIT rejected the PTX,
 * with its log), {@link CudaUnavailableError} (no driver or device here), the
 * check every call goes through, and the record of a sticky fault (a kernel
 * fault leaves the context unusable until it is reset).
 *
 * @module
 */

import type { Driver } from "./symbols.ts";

/**
 * A failed driver call: the function, the CUresult, its name and description.
 *
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { CudaError } from "./errors.ts";
 * const e = new CudaError("cuInit", 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected");
 * equal(e.message, "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
 * ok(e instanceof Error && e.code === 100);
 * ```
 */
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
   * An error of driver function `fn`.
   *
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

/**
 * `cuModuleLoadDataEx` rejected the PTX: the message and {@link JitError.log} hold the JIT's log.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { CudaError, JitError } from "./errors.ts";
 * const e = new JitError(218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed", "line 3: syntax error");
 * ok(e instanceof CudaError && e.log === "line 3: syntax error");
 * ok(e.message.endsWith("its log:\nline 3: syntax error"));
 * ```
 */
export class JitError extends CudaError {
  /** The JIT compiler's error log (and info log, when it wrote one). */
  readonly log: string;

  /**
   * A rejection of the PTX by the JIT, with its log.
   *
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
 *
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { CudaUnavailableError } from "./errors.ts";
 * equal(new CudaUnavailableError("No CUDA driver here.").message, "No CUDA driver here.");
 * ```
 */
export class CudaUnavailableError extends Error {
  /**
   * The error, with the one sentence that says why.
   *
   * @param message The sentence.
   */
  constructor(message: string) {
    super(message);
    this.name = "CudaUnavailableError";
  }
}

function readCString(slot: BigUint64Array): string {
  const p = Deno.UnsafePointer.create(slot[0]!);
  return p === null ? "" : Deno.UnsafePointerView.getCString(p);
}

/**
 * The driver's name and description of a CUresult (`cuGetErrorName`,
 * `cuGetErrorString`), with stand-ins when it has none.
 *
 * @param d The driver.
 * @param code The CUresult.
 * @returns `[name, description]`.
 */
export function errorNames(d: Driver, code: number): [string, string] {
  const slot = new BigUint64Array(new ArrayBuffer(8));
  const name = d.cuGetErrorName(code, slot) === 0 ? readCString(slot) : "";
  slot[0] = 0n;
  const text = d.cuGetErrorString(code, slot) === 0 ? readCString(slot) : "";
  return [name || `CUresult ${code}`, text || "no description"];
}

/** CUresults after which the context is unusable (a kernel fault): 700, 702, 714..719. */
export const STICKY: ReadonlySet<number> = new Set([700, 702, 714, 715, 716, 717, 718, 719]);
/** Set by a sticky error: the last `Cuda.close` resets the primary context. */
let contextFaulted = false;

/**
 * Whether a sticky error was raised since the last {@link takeContextFault}, which clears it.
 *
 * @returns Whether the context faulted.
 */
export function takeContextFault(): boolean {
  const f = contextFaulted;
  contextFaulted = false;
  return f;
}

/**
 * Raises a {@link CudaError} unless `code` is CUDA_SUCCESS; a sticky code is
 * recorded for {@link takeContextFault}.
 *
 * @param d The driver (for the error's name).
 * @param fn The function called.
 * @param code Its CUresult.
 * @param detail More context for the message.
 */
export function check(d: Driver, fn: string, code: number, detail = ""): void {
  if (code === 0) return;
  if (STICKY.has(code)) contextFaulted = true;
  const [name, text] = errorNames(d, code);
  throw new CudaError(fn, code, name, text, detail);
}
