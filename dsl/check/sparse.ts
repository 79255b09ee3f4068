/**
 * `sparse` on a tensor declaration (../shared/DESIGN.md §6.3, issue 21): a
 * structured-sparse A for `mma.sp`. The rules, each an `E0127`: only the A
 * operand, K contiguous, an element type `mma.sp` takes (numerics/sparse.ts
 * `SPARSE_DTYPES`), a literal K a multiple of the type's group
 * (`sparseGroup`), no `strides(...)` yet, and the metadata parameter's name
 * `<A>_meta` free.
 *
 * @module
 */

import type { AccessAst, KernelAst, TensorDeclAst } from "../ast.ts";
import { type Param, type Span, sparseMetaName } from "../../ir/gemm.ts";
import { isSparseDtype, SPARSE_DTYPES, sparseGroup } from "../../numerics/sparse.ts";
import { fail, type Scope } from "./scope.ts";

/** The pattern of a sparse type, for messages. */
function patternOf(dtype: string): string {
  const g = sparseGroup(dtype);
  return g.unit === 2 ? "4:8 in pairs" : g.keptUnits === 1 ? "1:2" : "2:4";
}

/**
 * The rules of one declaration alone: its element type, and no strides.
 *
 * @param s The kernel's scope.
 * @param d A declaration with `sparse`.
 * @throws {DiagnosticError} E0127.
 */
export function checkSparseDecl(s: Scope, d: TensorDeclAst): void {
  if (d.sparse === null) return;
  if (!isSparseDtype(d.dtype)) {
    fail(
      s.src,
      "E0127",
      `"${d.name.text}" is ${d.dtype}, which cannot be sparse: mma.sp takes ` +
        `${SPARSE_DTYPES.join(", ")} (f32 computed as tf32)`,
      d.dtypeSpan,
    );
  }
  if (d.strides !== null) {
    fail(
      s.src,
      "E0127",
      `A sparse "${d.name.text}" cannot take "strides(...)" yet: its kept values and metadata ` +
        `are dense (issue 21); drop the strides`,
      d.strides.span,
    );
  }
}

/**
 * The rules that need the statement: `sparse` only on the A operand, A
 * K-contiguous, a literal K a multiple of the group.
 *
 * @param s The kernel's scope.
 * @param k The kernel.
 * @param a The A operand's access and declaration.
 * @param kIx The summed index.
 * @param mIx The output's row index (A's other one).
 * @param aKContiguous Whether A's view is K-contiguous (its normalised layout `row`).
 * @param roleOf What a tensor is, by name, for messages ("operand B", "the output D").
 * @throws {DiagnosticError} E0127.
 */
export function checkSparseOperand(
  s: Scope,
  k: KernelAst,
  a: { readonly acc: AccessAst; readonly decl: TensorDeclAst },
  kIx: string,
  mIx: string,
  aKContiguous: boolean,
  roleOf: (name: string) => string,
): void {
  for (const item of k.items) {
    if (item.kind !== "tensorDecl" || item.sparse === null || item === a.decl) continue;
    fail(
      s.src,
      "E0127",
      `Only operand A may be sparse (mma.sp): "${item.name.text}" is ${roleOf(item.name.text)}`,
      item.sparse,
    );
  }
  const d = a.decl;
  if (d.sparse === null) return;
  if (!aKContiguous) {
    fail(
      s.src,
      "E0127",
      `A sparse "${d.name.text}" must be K-contiguous (its pattern runs along "${kIx}"): ` +
        `here it is contiguous along "${mIx}"; declare it ` +
        `"${d.name.text}: ${d.dtype}[M, K] row sparse" (K last, row-major)`,
      d.layout?.span ?? d.sparse,
    );
  }
  const at = a.acc.indices.findIndex((i) => i.text === kIx);
  const kDim = d.dims[at];
  const g = sparseGroup(d.dtype);
  if (kDim !== undefined && kDim.kind === "const" && kDim.value % g.elements !== 0) {
    fail(
      s.src,
      "E0127",
      `K = ${kDim.value} of sparse "${d.name.text}" is not a multiple of ${g.elements}, ` +
        `the ${d.dtype} sparse group (${patternOf(d.dtype)} along K)`,
      kDim.span,
    );
  }
}

/**
 * The metadata parameter's name (`<A>_meta`) must be free: no tensor, scalar,
 * dimension or stride parameter of the kernel may take it.
 *
 * @param s The kernel's scope.
 * @param k The kernel.
 * @param aDecl A's declaration (sparse).
 * @param params The kernel's parameters (the metadata's own among them).
 * @param names The kernel's dimensions and stride parameters.
 * @throws {DiagnosticError} E0127.
 */
export function checkSparseName(
  s: Scope,
  k: KernelAst,
  aDecl: TensorDeclAst,
  params: readonly Param[],
  names: readonly string[],
): void {
  const meta = sparseMetaName(aDecl.name.text);
  const taken = params.some((p) =>
    p.name === meta && !(p.kind === "tensor" && p.role === "A_meta")
  );
  if (!taken && !names.includes(meta)) return;
  const decl = s.tensors.get(meta) ?? s.scalars.get(meta);
  let at = decl?.name.span;
  for (const item of k.items) {
    if (at !== undefined) break;
    if (item.kind !== "tensorDecl") continue;
    const uses = [...item.dims, ...(item.strides?.values ?? [])];
    at = uses.find((x) => x.kind === "sym" && x.name === meta)?.span;
  }
  fail(
    s.src,
    "E0127",
    `A sparse "${aDecl.name.text}" takes a metadata parameter named "${meta}" ` +
      `(DESIGN §6.3): rename the kernel's "${meta}"`,
    at ?? aDecl.sparse!,
  );
}

/**
 * A sparse A runs on `mma.sp`, a tensor-core instruction of one pass: `math f32` (CUDA
 * cores) and `math 3xtf32` (three MMAs a product) have no sparse form, and grouped
 * kernels do not take a sparse operand yet.
 *
 * @param s The kernel's scope.
 * @param k The kernel.
 * @param at Where `sparse` is written.
 * @param mode The kernel's math mode.
 * @throws {DiagnosticError} E0127.
 */
export function checkSparseMath(s: Scope, k: KernelAst, at: Span, mode: string): void {
  if (mode === "simt" || mode === "3xtf32") {
    fail(
      s.src,
      "E0127",
      `A sparse operand runs on the tensor cores' mma.sp: math ${
        mode === "simt" ? "f32" : "3xtf32"
      } has no sparse form (use math tf32, or drop "sparse")`,
      at,
    );
  }
  if (k.grouped !== null) {
    fail(s.src, "E0127", "A grouped kernel takes no sparse operand yet (issue 21)", at);
  }
}
