/**
 * `gemm-fragment-load`: how the MMA fragments of each operand come from
 * shared memory, once gemm-mma has chosen the instruction: `ldmatrix` where
 * the type and layout allow (K-contiguous tiles of any type but f64;
 * `.trans` for 16-bit types with M/N-contiguous tiles), `ld.shared`
 * otherwise (f64; tf32 with M/N-contiguous tiles; SIMT). A tile read by
 * `ld.shared` gets the XOR-swizzle scale that keeps those reads free of bank
 * conflicts (2; see {@link OperandSmem}). Completes gemm-mma's
 * {@link InstructionPlan} into the plan's {@link MmaPlan}.
 *
 * @module
 */

import { requireInstruction } from "../ir/target.ts";
import {
  type FragmentLoad,
  type GemmKernel,
  type MmaPlan,
  type OperandSmem,
  operandView,
  tensorParam,
} from "../ir/gemm.ts";
import { diagnostic, DiagnosticError } from "../dsl/diagnostics.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { SIMT_PREFIX } from "../ir/simt.ts";
import type { GemmPass } from "./pass.ts";

/**
 * How MMA fragments of an operand come from shared memory: `ldmatrix` for
 * K-contiguous tiles of any type but f64, `ldmatrix.trans` for 16-bit types
 * with M/N-contiguous tiles, `ld.shared` for f64 and for 32-bit types with
 * M/N-contiguous tiles; `null` where no load can build the fragment (8-, 4-
 * and 1-bit types that are not K-contiguous).
 *
 * @param bits Element width.
 * @param contiguous Which dimension is contiguous in the tile.
 * @returns The load, or null.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { fragmentLoad } from "./fragment_load.ts";
 * equal(fragmentLoad(16, "outer"), "ldmatrix.trans");
 * ```
 */
export function fragmentLoad(bits: number, contiguous: "k" | "outer"): FragmentLoad | null {
  if (bits === 64) return "lds";
  if (contiguous === "k") return "ldmatrix";
  if (bits === 16) return "ldmatrix.trans";
  if (bits === 32) return "lds";
  return null;
}

/**
 * The swizzle scale of a tile whose fragments the chosen loads read: 2 for
 * a tile read by `ld.shared` as the tile's own layout gives it (a phase
 * reads four rows of 32 bytes), else the scale gemm-pipeline gave it
 * (transposed tiles keep theirs).
 */
function swizzleFor(o: OperandSmem, bits: number): OperandSmem {
  if (o.transpose || fragmentLoad(bits, o.contiguous) !== "lds") return o;
  return { ...o, swizzleScale: 2 };
}

/** The load of one tensor-core operand, or E0211 where none can build its fragments. */
function operandLoad(k: GemmKernel, role: "A" | "B", o: OperandSmem): FragmentLoad {
  const t = operandView(k, role).tensor;
  const dtype = role === "A" ? k.math.a : k.math.b;
  const bits = DTYPE_INFO[dtype].bits;
  const l = fragmentLoad(bits, o.contiguous);
  if (l !== null && l !== "lds") requireInstruction(k.target, l, "gemm-fragment-load");
  if (l !== null) return l;
  // A layout problem, not a schedule one: point at the operand's declaration.
  throw new DiagnosticError([diagnostic(
    "E0211",
    `Operand ${role} ("${t}", ${dtype}) must be K-contiguous ` +
      `(${role === "A" ? "A row-major" : "B column-major"}): ${bits}-bit MMA fragments ` +
      `cannot be transposed from shared memory`,
    k.source,
    tensorParam(k, t).span,
  )]);
}

/** The pass. */
export const fragmentLoadPass: GemmPass = {
  name: "gemm-fragment-load",
  title: "FragmentLoad",
  summary: "Choose how fragments come from shared memory (ldmatrix, ldmatrix.trans, ld.shared)",
  run(k: GemmKernel): GemmKernel {
    const { instruction, ...plan } = k.plan;
    const pipe = k.plan.pipeline!;
    const simt = instruction!.shape.startsWith(SIMT_PREFIX);
    // SIMT reads its fragments by ld.shared (ir/simt.ts).
    // A wgmma reads both tiles from shared memory itself (passes/wgmma.ts).
    const wg = instruction!.wgmma !== undefined;
    const aLoad = wg ? "wgmma" : simt ? "lds" : operandLoad(k, "A", pipe.a);
    const bLoad = wg ? "wgmma" : simt ? "lds" : operandLoad(k, "B", pipe.b);
    const mma: MmaPlan = { ...instruction!, aLoad, bLoad };
    const pipeline = {
      ...pipe,
      a: swizzleFor(pipe.a, DTYPE_INFO[k.math.a].bits),
      b: swizzleFor(pipe.b, DTYPE_INFO[k.math.b].bits),
    };
    return { ...k, plan: { ...plan, pipeline, mma } };
  },
};
