/**
 * Finding and starting the driver, once per process and without throwing:
 * the library path (`GEMMC_LIBCUDA` when set, else `libcuda.so.1`, then
 * `libcuda.so`), `Deno.dlopen` with {@link SYMBOLS}, `cuInit` and a device
 * count. Every way this fails is one sentence ending in advice to simulate.
 *
 * @module
 */

import { bindDriver, type Driver, SYMBOLS } from "./symbols.ts";
import { errorNames } from "./errors.ts";

/** The advice closing every "no driver" sentence. */
const SIMULATE_HINT = "`gemm simulate` runs the same kernel on the CPU";

/** A loaded (or initialised) driver, or the sentence saying why there is none. */
export type LoadState =
  | { readonly ok: true; readonly driver: Driver }
  | { readonly ok: false; readonly why: string };

let loadState: LoadState | undefined;
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

/**
 * Loads and initialises the driver once; never throws.
 *
 * @returns The driver, or why there is none.
 */
export function initDriver(): LoadState {
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
 * import { ok } from "node:assert/strict";
 * import { cudaAvailable } from "./driver.ts";
 * const r = cudaAvailable();
 * ok(r.ok || r.why.length > 0); // without a GPU: one sentence saying why
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
