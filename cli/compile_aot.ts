/**
 * The artefacts `gemm compile --emit` writes besides the compiler's stages:
 * a self-contained C file (`c`), a cubin for one architecture (`cubin`,
 * through ptxas) and a Python module (`py`). cli/compile.ts puts these rows after its own in its one
 * `--emit` table.
 *
 * @module
 */

import type { CompiledKernel } from "../compiler.ts";
import { cSource } from "../backends/aot/c.ts";
import { pythonModule } from "../backends/aot/python.ts";
import { assembleCubin } from "../backends/aot/cubin.ts";
import { CUBIN_ARCHS, type CubinArch, findPtxas } from "../backends/ptx/ptxas.ts";
import { UsageError } from "./options.ts";

/** What an `--emit` row gets besides the kernels. */
export interface EmitContext {
  /** Runtime sizes (`--size`), if given and the row takes them. */
  readonly sizes: Record<string, number> | undefined;
  /** Whether `--tune` chose the schedule for the sizes. */
  readonly tuned: boolean;
  /** `--arch`, if given. */
  readonly arch: string | undefined;
  /** `--ptxas-path`, if given. */
  readonly ptxasPath: string | undefined;
  /** The source file's name, for the artefacts' headers. */
  readonly source: string;
}

/** One `--emit` value. */
export interface EmitRow {
  /** The `--emit` value. */
  readonly name: string;
  /** Its words in the help. */
  readonly help: string;
  /** Whether it is binary (written to `-o` only). */
  readonly binary: boolean;
  /**
   * What `--size` means to it without `--tune`: `"grid"`, a launch at those
   * sizes (alignments checked); `null`, nothing (then `--size` is refused).
   */
  readonly sizes: "grid" | null;
  /** Produces the output: text, or bytes when {@link EmitRow.binary}. */
  readonly emit: (
    kernels: readonly CompiledKernel[],
    ctx: EmitContext,
  ) => string | Uint8Array | Promise<string | Uint8Array>;
}

/** The `sm_NN` number of an architecture. */
function smNumber(arch: string): number {
  return Number(/^sm_(\d+)$/.exec(arch)?.[1] ?? NaN);
}

/** `--emit cubin`: the module assembled for `--arch` (default: the kernels' target). */
async function cubin(kernels: readonly CompiledKernel[], ctx: EmitContext): Promise<Uint8Array> {
  const target = kernels[0]!.manifest.target;
  const arch = ctx.arch ?? target;
  if (!(CUBIN_ARCHS as readonly string[]).includes(arch)) {
    throw new UsageError(`Unknown --arch "${arch}": expected ${CUBIN_ARCHS.join(", ")}`);
  }
  if (smNumber(arch) < smNumber(target)) {
    throw new UsageError(
      `--arch ${arch} is below the kernels' target ${target}: give --arch ${target} or higher, ` +
        `or compile for a lower --target`,
    );
  }
  const bin = findPtxas(ctx.ptxasPath);
  if (bin === null) {
    throw new UsageError(
      "--emit cubin: ptxas is not on the PATH nor in /usr/local/bin or /usr/local/cuda/bin; " +
        "give --ptxas-path",
    );
  }
  return await assembleCubin(kernels, { arch: arch as CubinArch, ptxasPath: bin });
}

/** The artefact rows of the `--emit` table. */
export const AOT_EMITS: readonly EmitRow[] = [
  {
    name: "c",
    help: "c (one C file: declarations, and the implementation behind " +
      "#define GEMMC_IMPLEMENTATION)",
    binary: false,
    sizes: null,
    emit: (kernels) => cSource(kernels),
  },
  {
    name: "cubin",
    help: `cubin (ptxas's ELF for --arch; needs -o)`,
    binary: true,
    sizes: null,
    emit: cubin,
  },
  {
    name: "py",
    help: "py (a Python module for PyTorch or CuPy: cuda-python or CuPy loads it)",
    binary: false,
    sizes: null,
    emit: (kernels, ctx) => pythonModule(kernels, { source: ctx.source }),
  },
];
