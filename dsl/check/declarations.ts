/**
 * The declarations of a kernel: tensors (rank, positive sizes, layout,
 * alignment) and scalars (dtype, default), each name declared once; and the
 * kernel's parameters, in declaration order, once the statement has given
 * every tensor its role.
 *
 * @module
 */

import type { KernelAst, ScalarDeclAst, TensorDeclAst } from "../ast.ts";
import type { Param, Role, Span, TensorParam } from "../../ir/gemm.ts";
import { defaultAlign, minAlign } from "../../ir/dtype.ts";
import { fail, lineOf, type Scope, toDimRef } from "./scope.ts";
import { checkStrides } from "./strides.ts";
import { checkSparseDecl } from "./sparse.ts";
import { sparseMetaName } from "../../ir/gemm.ts";

function checkNewName(s: Scope, name: { text: string; span: Span }): void {
  const prev = s.tensors.get(name.text) ?? s.scalars.get(name.text);
  if (prev !== undefined) {
    fail(
      s.src,
      "E0102",
      `Duplicate declaration of "${name.text}": first declared at line ${
        lineOf(s.src, prev.name.span)
      }`,
      name.span,
    );
  }
}

function checkAlign(s: Scope, d: TensorDeclAst, align: { value: number; span: Span }): void {
  const a = align.value;
  const max = defaultAlign(d.dtype);
  if (a < 1 || (a & (a - 1)) !== 0) {
    fail(s.src, "E0117", `Alignment must be a power of two: got ${a}`, align.span);
  }
  if (a > max) {
    fail(
      s.src,
      "E0117",
      `Alignment ${a} of "${d.name.text}" exceeds 16 bytes: at most ${max} elements of ${d.dtype}`,
      align.span,
    );
  }
  if (a < minAlign(d.dtype)) {
    fail(
      s.src,
      "E0117",
      `Alignment ${a} of "${d.name.text}" is not a whole byte: ${d.dtype} needs at least ${
        minAlign(d.dtype)
      } elements`,
      align.span,
    );
  }
}

/**
 * Checks a tensor declaration and adds it to the scope.
 *
 * @param s The kernel's scope.
 * @param d The declaration.
 * @throws {DiagnosticError} E0102 for a name declared twice, E0117 for a bad
 *   rank, size, layout or alignment, E0127 for a `sparse` of a type that cannot be or
 *   with strides.
 */
export function declareTensor(s: Scope, d: TensorDeclAst): void {
  checkNewName(s, d.name);
  if (d.dims.length > 3) {
    fail(
      s.src,
      "E0117",
      `Tensor "${d.name.text}" has rank ${d.dims.length}: tensors have rank 1, 2 or 3 (batch first)`,
      d.span,
    );
  }
  for (const dim of d.dims) {
    if (dim.kind === "const" && dim.value <= 0) {
      fail(s.src, "E0117", `Dimension sizes must be positive: got ${dim.value}`, dim.span);
    }
  }
  if (d.layout?.value === "col" && d.dims.length === 1) {
    fail(
      s.src,
      "E0117",
      `Tensor "${d.name.text}" has rank 1: a vector has no "col" layout`,
      d.layout.span,
    );
  }
  if (d.align !== null) checkAlign(s, d, d.align);
  checkSparseDecl(s, d);
  s.tensors.set(d.name.text, d);
}

/**
 * Checks a scalar declaration and adds it to the scope.
 *
 * @param s The kernel's scope.
 * @param d The declaration.
 * @throws {DiagnosticError} E0102 for a name declared twice, E0117 for a bad
 *   dtype or an s32 default out of range, E0124 for a default that is not
 *   finite in its dtype (`1e999`, or `1e39` for f32).
 */
export function declareScalar(s: Scope, d: ScalarDeclAst): void {
  checkNewName(s, d.name);
  if (d.dtype !== "f32" && d.dtype !== "f64" && d.dtype !== "s32") {
    fail(
      s.src,
      "E0117",
      `Scalar "${d.name.text}" has dtype "${d.dtype}": scalars are f32, f64 or s32`,
      d.dtypeSpan,
    );
  }
  if (
    d.default !== null &&
    !Number.isFinite(d.dtype === "f32" ? Math.fround(d.default.value) : d.default.value)
  ) {
    fail(
      s.src,
      "E0124",
      `Literal out of range: default "${d.default.text}" of scalar "${d.name.text}" ` +
        `is not a finite ${d.dtype}`,
      d.default.span,
    );
  }
  if (d.default !== null && d.dtype === "s32") {
    const v = d.default.value;
    if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
      fail(
        s.src,
        "E0117",
        `Default "${d.default.text}" of s32 scalar "${d.name.text}" is not a 32-bit integer`,
        d.default.span,
      );
    }
  }
  s.scalars.set(d.name.text, d);
}

/**
 * The default alignment of a tensor (README.md, The DSL: 16 bytes), lowered when the
 * contiguous dimension is a literal that is not a multiple of it: then every
 * row start is aligned to the largest power of two dividing that literal, and
 * the default must say so (`A: s8[5000, 5000]` gets `align 8`).
 *
 * @param d The declaration.
 * @returns The alignment in elements.
 */
function literalAlign(d: TensorDeclAst): number {
  const full = defaultAlign(d.dtype);
  if (d.dims.length < 2) return full;
  const mat = d.dims.slice(-2);
  const contiguous = (d.layout?.value ?? "row") === "row" ? mat[1]! : mat[0]!;
  if (contiguous.kind !== "const") return full;
  // A sparse A stores half of K along its rows (DESIGN §6.3).
  const extent = d.sparse !== null ? contiguous.value / 2 : contiguous.value;
  let a = full;
  while (a > 1 && extent % a !== 0) a /= 2;
  // Sub-byte types need whole bytes.
  return Math.max(a, Math.min(minAlign(d.dtype), full));
}

/**
 * The kernel's parameters in declaration order, its symbolic dimensions
 * in order of first appearance, and its stride parameters likewise. A sparse A
 * is followed by its metadata parameter (role `A_meta`, ir/gemm.ts {@link Param}).
 *
 * @param s The kernel's scope.
 * @param k The kernel.
 * @param roles The role of every tensor the statement uses.
 * @param matrices The tensors the GEMM reads as matrices (A, B, D, C); the others are vectors.
 * @returns The parameters, the dimension names and the stride parameter names.
 * @throws {DiagnosticError} E0117 for a tensor declared but not used, E0125 (and E0118)
 *   for illegal strides.
 */
export function kernelParams(
  s: Scope,
  k: KernelAst,
  roles: ReadonlyMap<string, Role>,
  matrices: ReadonlySet<string>,
): { params: Param[]; dims: string[]; strides: string[] } {
  const params: Param[] = [];
  const dims: string[] = [];
  const strides: string[] = [];
  for (const item of k.items) {
    if (item.kind !== "tensorDecl") continue;
    for (const d of item.dims) {
      if (d.kind === "sym" && !dims.includes(d.name)) dims.push(d.name);
    }
  }
  for (const item of k.items) {
    if (item.kind === "tensorDecl") {
      const role = roles.get(item.name.text);
      if (role === undefined) {
        fail(s.src, "E0117", `Tensor "${item.name.text}" is declared but not used`, item.name.span);
      }
      const st = checkStrides(
        s,
        item,
        role,
        matrices.has(item.name.text),
        item.align?.value ?? literalAlign(item),
        dims,
        strides,
      );
      params.push(
        {
          kind: "tensor",
          name: item.name.text,
          dtype: item.dtype,
          dims: item.dims.map(toDimRef),
          layout: item.layout?.value ?? "row",
          align: st.align,
          ...(st.strides !== undefined ? { strides: st.strides } : {}),
          ...(item.sparse !== null ? { sparse: true as const } : {}),
          role,
          span: item.span,
        } satisfies TensorParam,
      );
      if (item.sparse !== null) {
        params.push(
          {
            kind: "tensor",
            name: sparseMetaName(item.name.text),
            dtype: item.dtype,
            dims: item.dims.map(toDimRef),
            layout: item.layout?.value ?? "row",
            align: 1,
            role: "A_meta",
            span: item.sparse,
          } satisfies TensorParam,
        );
      }
    } else if (item.kind === "scalarDecl") {
      params.push({
        kind: "scalar",
        name: item.name.text,
        dtype: item.dtype,
        default: item.default?.value ?? null,
        span: item.span,
      });
    }
  }
  return { params, dims, strides };
}
