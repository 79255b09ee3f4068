/**
 * `strides(...)` on a tensor declaration (../shared/DESIGN.md §6.1): the count,
 * the names (a kernel dimension, or a new runtime stride parameter) and, for
 * literals, the rules a launch checks for runtime values: a line stride of at
 * least the contiguous extent, a batch stride of at least lines x line stride
 * (or 0, one matrix for every batch, on an input), every stride a multiple of
 * the alignment and of whole bytes.
 *
 * @module
 */

import type { DimAst, TensorDeclAst } from "../ast.ts";
import type { DimRef, Role } from "../../ir/gemm.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { fail, type Scope, toDimRef } from "./scope.ts";

/** A tensor's checked strides and the alignment they leave. */
export interface CheckedStrides {
  /** The strides, outermost first (absent: dense). */
  readonly strides?: readonly DimRef[];
  /** The alignment in elements. */
  readonly align: number;
}

/** The largest power of two dividing `v` (v > 0), at most `cap`. */
function pow2Divisor(v: number, cap: number): number {
  let a = cap;
  while (a > 1 && v % a !== 0) a /= 2;
  return a;
}

/**
 * Checks a declaration's `strides(...)`, collecting new stride parameters.
 *
 * @param s The kernel's scope.
 * @param d The declaration.
 * @param role The tensor's role.
 * @param matrix Whether the GEMM reads it as a matrix (A, B, D, C); else a vector.
 * @param align The alignment without strides (declared, or the dense default).
 * @param dims The kernel's runtime dimensions.
 * @param strideParams The stride parameters so far (appended to, in order of first appearance).
 * @returns The strides and the alignment: without a declared `align`, the default is
 *   lowered to what literal strides keep (as for literal sizes).
 * @throws {DiagnosticError} E0125 for a wrong count or a literal breaking a rule,
 *   E0118 for a stride named like a tensor or a scalar.
 */
export function checkStrides(
  s: Scope,
  d: TensorDeclAst,
  role: Role,
  matrix: boolean,
  align: number,
  dims: readonly string[],
  strideParams: string[],
): CheckedStrides {
  const st = d.strides;
  if (st === null) return { align };
  const name = d.name.text;
  const rank = d.dims.length;
  if (st.values.length !== rank - 1) {
    fail(
      s.src,
      "E0125",
      `Tensor "${name}" has rank ${rank}: "strides" gives ${rank - 1} ` +
        `(every dimension's but the contiguous one, outermost first), got ${st.values.length}`,
      st.span,
    );
  }
  for (const v of st.values) {
    if (v.kind !== "sym" || dims.includes(v.name)) continue;
    if (s.tensors.has(v.name) || s.scalars.has(v.name)) {
      fail(
        s.src,
        "E0118",
        `"${v.name}" is a ${s.tensors.has(v.name) ? "tensor" : "scalar"}: ` +
          `a stride is a literal, a dimension or a new stride name`,
        v.span,
      );
    }
    if (!strideParams.includes(v.name)) strideParams.push(v.name);
  }
  const bits = DTYPE_INFO[d.dtype].bits;
  const lits = st.values.filter((v): v is Extract<DimAst, { kind: "const" }> => v.kind === "const");
  for (const v of lits) {
    if ((v.value * bits) % 8 !== 0) {
      fail(
        s.src,
        "E0125",
        `Stride ${v.value} of "${name}" is not a whole number of bytes: ` +
          `${d.dtype} strides are multiples of ${8 / bits} elements`,
        v.span,
      );
    }
  }
  // Without a declared `align`, literal strides lower the default as literal sizes do.
  let a = align;
  if (d.align === null) {
    for (const v of lits) if (v.value !== 0) a = Math.min(a, pow2Divisor(v.value, a));
  }
  for (const v of lits) {
    if (v.value % a !== 0) {
      fail(
        s.src,
        "E0125",
        `Stride ${v.value} of "${name}" is not a multiple of its alignment: ${a} elements`,
        v.span,
      );
    }
  }
  checkExtents(s, d, role, matrix);
  return { strides: st.values.map(toDimRef), align: a };
}

/** The literal rules on the extents: line stride >= contiguous extent, batch stride >=
 * lines x line stride or 0 on an input. */
function checkExtents(s: Scope, d: TensorDeclAst, role: Role, matrix: boolean): void {
  const name = d.name.text;
  const vals = d.strides!.values;
  const rank = d.dims.length;
  const rowMajor = (d.layout?.value ?? "row") === "row";
  const contiguous = rowMajor || !matrix ? d.dims[rank - 1]! : d.dims[rank - 2]!;
  const lines = !matrix ? null : rowMajor ? d.dims[rank - 2]! : d.dims[rank - 1]!;
  const ld = matrix ? vals[vals.length - 1]! : null;
  const batch = (matrix ? rank === 3 : rank === 2) ? vals[0]! : null;
  if (ld !== null && ld.kind === "const" && contiguous.kind === "const") {
    if (ld.value < contiguous.value) {
      fail(
        s.src,
        "E0125",
        `Line stride ${ld.value} of "${name}" is less than its contiguous extent ${contiguous.value}: ` +
          `lines would overlap`,
        ld.span,
      );
    }
  }
  if (batch === null || batch.kind !== "const") return;
  if (batch.value === 0) {
    if (role === "D") {
      fail(
        s.src,
        "E0125",
        `Batch stride 0 of output "${name}": every batch would write the same matrix`,
        batch.span,
      );
    }
    return;
  }
  // One batch's extent: lines x line stride (a vector: its length).
  const lineStride = ld === null ? 1 : ld.kind === "const" ? ld.value : null;
  const n = lines === null ? 1 : lines.kind === "const" ? lines.value : null;
  const inner = ld === null ? contiguous : null;
  const need = inner !== null
    ? inner.kind === "const" ? inner.value : null
    : lineStride === null || n === null
    ? null
    : lineStride * n;
  if (need !== null && batch.value < need) {
    fail(
      s.src,
      "E0125",
      `Batch stride ${batch.value} of "${name}" is less than one batch's extent ${need}` +
        (ld !== null ? ` (${n} lines x stride ${lineStride})` : "") +
        `: batches would overlap (0 broadcasts one ${matrix ? "matrix" : "vector"} to every batch)`,
      batch.span,
    );
  }
}
