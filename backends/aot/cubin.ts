/**
 * The cubin artefact: a module's PTX assembled by ptxas into an ELF for one
 * GPU architecture (`gemm compile --emit cubin --arch sm_90`), loadable with
 * `cuModuleLoadData` without the driver's JIT.
 *
 * @module
 */

import { type CompiledKernel, ptxModule } from "../../compiler.ts";
import { CUBIN_ARCHS, type CubinArch, findPtxas, runPtxas } from "../ptx/ptxas.ts";

/** Options of {@link assembleCubin}. */
export interface CubinOptions {
  /** The architecture to assemble for (one of {@link CUBIN_ARCHS}). */
  readonly arch: CubinArch;
  /** The ptxas binary; by default {@link findPtxas} looks for one. */
  readonly ptxasPath?: string;
}

/** The `sm_NN` number of an architecture (`sm_86` → 86). */
function smNumber(arch: string): number {
  return Number(/^sm_(\d+)$/.exec(arch)?.[1] ?? NaN);
}

/**
 * Assembles a PTX module into a cubin with ptxas. The architecture must be
 * at least the module's `.target` (ptxas assembles sm_80 PTX for sm_86 or
 * sm_90, not the reverse).
 *
 * @param module The compiled kernels (assembled as one module), or a PTX module's text.
 * @param opts The architecture, and optionally the ptxas binary.
 * @returns The cubin's bytes (an ELF image).
 * @throws {Error} When the architecture is unknown or below the module's
 *   target, when no ptxas is found, or when ptxas rejects the PTX (its log in
 *   the message).
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { compile } from "../../compiler.ts";
 * import { findPtxas } from "../ptx/ptxas.ts";
 * import { assembleCubin } from "./cubin.ts";
 * const ck = compile(`kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
 *   D[m, n] = A[m, k] * B[k, n] }`).kernels;
 * if (findPtxas() !== null) {
 *   const elf = await assembleCubin(ck, { arch: "sm_90" });
 *   ok(elf[0] === 0x7f && elf[1] === 0x45 && elf[2] === 0x4c && elf[3] === 0x46); // "\x7fELF"
 * }
 * ```
 */
export async function assembleCubin(
  module: string | readonly CompiledKernel[],
  opts: CubinOptions,
): Promise<Uint8Array> {
  const ptx = typeof module === "string" ? module : ptxModule(module);
  if (!CUBIN_ARCHS.includes(opts.arch)) {
    throw new Error(`Unknown architecture "${opts.arch}": expected ${CUBIN_ARCHS.join(", ")}`);
  }
  const target = /^\s*\.target\s+(sm_\d+)/m.exec(ptx)?.[1];
  if (target !== undefined && smNumber(opts.arch) < smNumber(target)) {
    throw new Error(
      `Cannot assemble PTX for ${target} as ${opts.arch}: the architecture must be at least ` +
        `the module's target`,
    );
  }
  const bin = opts.ptxasPath ?? findPtxas();
  if (bin === null) {
    throw new Error(
      "Cannot run ptxas: not on the PATH nor in /usr/local/bin or /usr/local/cuda/bin",
    );
  }
  const out = await Deno.makeTempFile({ prefix: "gemmc_", suffix: ".cubin" });
  try {
    const r = await runPtxas(ptx, { arch: opts.arch, ptxasPath: bin, output: out });
    if (!r.ok) throw new Error(`ptxas rejected the PTX for ${opts.arch}:\n${r.log.trimEnd()}`);
    return await Deno.readFile(out);
  } finally {
    await Deno.remove(out).catch(() => {});
  }
}
