/**
 * The statement's structure: the output, the one contraction (two tensors
 * sharing exactly one summed index), the roles A and B of its operands
 * (whichever carries the row index is A), and each matrix's view (its layout
 * relative to the roles, and whether it is batched), whatever the index names.
 *
 * @module
 */

import type { AccessAst, ExprAst, StatementAst, TensorDeclAst } from "../ast.ts";
import type { Layout, MatrixView } from "../../ir/gemm.ts";
import { cover, EPILOGUE_DTYPES, fail, type Product, type Scope } from "./scope.ts";
import { accesses, products, resolveAccess } from "./walk.ts";
import type { OutputIndices } from "./epilogue.ts";

/**
 * Checks the statement's output and names its indices.
 *
 * @param s The kernel's scope.
 * @param stmt The statement.
 * @returns The output's declaration and its row, column and batch indices.
 * @throws {DiagnosticError} E0115 for an output that is a scalar or not a
 *   matrix, E0120 for an output dtype the epilogue cannot store, or the
 *   errors of {@link resolveAccess}.
 */
export function checkOutput(
  s: Scope,
  stmt: StatementAst,
): { decl: TensorDeclAst; ix: OutputIndices } {
  const target = stmt.target;
  const outName = target.tensor.text;
  if (s.scalars.has(outName)) {
    fail(
      s.src,
      "E0115",
      `The output "${outName}" is a scalar: the output must be a tensor`,
      target.span,
    );
  }
  const decl = resolveAccess(s, target);
  if (decl.dims.length < 2) {
    fail(
      s.src,
      "E0115",
      `The output "${outName}" has rank ${decl.dims.length}: a GEMM output is a matrix (rank 2) or a batch of them (rank 3)`,
      target.span,
    );
  }
  if (!EPILOGUE_DTYPES.includes(decl.dtype)) {
    fail(
      s.src,
      "E0120",
      `The output "${outName}" has dtype "${decl.dtype}": outputs are ${
        EPILOGUE_DTYPES.join(", ")
      }`,
      decl.dtypeSpan,
    );
  }
  const lhs = target.indices.map((i) => i.text);
  return {
    decl,
    ix: {
      batchIx: lhs.length === 3 ? lhs[0]! : null,
      rowIx: lhs[lhs.length - 2]!,
      colIx: lhs[lhs.length - 1]!,
    },
  };
}

/** The contraction: its product chain, its two summed operands, and the summed index. */
export interface Contraction {
  readonly main: Product;
  readonly operands: readonly [AccessAst, AccessAst];
  readonly kIx: string;
}

/**
 * Finds the one contraction of a resolved right-hand side.
 *
 * @param s The kernel's scope.
 * @param expr The right-hand side (already resolved).
 * @param lhs The output's indices.
 * @returns The contraction.
 * @throws {DiagnosticError} E0105 for no contraction, E0106 for two, E0107 for
 *   a contraction of more than two tensors, E0108 for a summed index outside
 *   it, E0119 for summed indices the two operands do not share or more than one.
 */
export function findContraction(s: Scope, expr: ExprAst, lhs: readonly string[]): Contraction {
  const all: AccessAst[] = [];
  accesses(expr, all);
  const summed = (a: AccessAst) => a.indices.filter((i) => !lhs.includes(i.text));
  const summedAccesses = all.filter((a) => summed(a).length > 0);
  const found: Product[] = [];
  products(expr, found);
  const candidates = found.filter((p) =>
    p.factors.filter((f) => f.kind === "access" && summed(f).length > 0).length >= 2
  );
  if (candidates.length === 0) {
    const stray = summedAccesses[0];
    if (stray !== undefined) {
      const ix = summed(stray)[0]!;
      fail(
        s.src,
        "E0105",
        `No contraction: index "${ix.text}" is summed over "${stray.tensor.text}" alone; a contraction multiplies two tensors that share it`,
        stray.span,
      );
    }
    fail(
      s.src,
      "E0105",
      `No contraction: no index is summed; a GEMM needs a product such as A[${
        lhs[lhs.length - 2]
      }, k] * B[k, ${lhs[lhs.length - 1]}]`,
      expr.span,
    );
  }
  if (candidates.length > 1) {
    fail(
      s.src,
      "E0106",
      `More than one contraction: the kernel computes one main loop; this is a second product over a summed index`,
      candidates[1]!.root.span,
    );
  }
  const main = candidates[0]!;
  const sumFactors = main.factors.filter((f): f is AccessAst =>
    f.kind === "access" && summed(f).length > 0
  );
  if (sumFactors.length > 2) {
    fail(
      s.src,
      "E0107",
      `A contraction of more than two tensors: ${
        sumFactors.map((f) => `"${f.tensor.text}"`).join(", ")
      } share summed indices; a GEMM multiplies exactly two`,
      sumFactors[2]!.span,
    );
  }
  for (const a of summedAccesses) {
    if (!sumFactors.includes(a)) {
      fail(
        s.src,
        "E0108",
        `Tensor "${a.tensor.text}" is indexed by the summed index "${
          summed(a)[0]!.text
        }" outside the contraction: epilogue tensors are indexed by output indices only`,
        a.span,
      );
    }
  }
  const [x, y] = sumFactors as [AccessAst, AccessAst];
  return { main, operands: [x, y], kIx: summedIndex(s, x, y, summed) };
}

/** The one index the two operands sum over together. */
function summedIndex(
  s: Scope,
  x: AccessAst,
  y: AccessAst,
  summed: (a: AccessAst) => readonly { text: string }[],
): string {
  const sx = summed(x).map((i) => i.text);
  const sy = summed(y).map((i) => i.text);
  for (const [p, sp, q, sq] of [[x, sx, y, sy], [y, sy, x, sx]] as const) {
    for (const i of sp) {
      if (!sq.includes(i)) {
        fail(
          s.src,
          "E0119",
          `Index "${i}" is summed but appears only in "${p.tensor.text}", not in "${q.tensor.text}"`,
          p.indices.find((ix) => ix.text === i)!.span,
        );
      }
    }
  }
  if (sx.length !== 1) {
    fail(
      s.src,
      "E0119",
      `The contraction sums over ${sx.length} indices (${
        sx.map((i) => `"${i}"`).join(", ")
      }): a GEMM sums over exactly one`,
      cover(x.span, y.span),
    );
  }
  return sx[0]!;
}

/**
 * Which operand of the contraction is A (it carries the row index) and which is B.
 *
 * @param s The kernel's scope.
 * @param operands The contraction's two operands, in source order.
 * @param ix The output indices.
 * @returns The accesses and declarations of A and B.
 * @throws {DiagnosticError} E0119 for an operand with both or neither output
 *   index, E0115 for an output index neither carries, E0118 for one tensor as both.
 */
export function operandRoles(
  s: Scope,
  operands: readonly [AccessAst, AccessAst],
  ix: OutputIndices,
): { aAcc: AccessAst; bAcc: AccessAst; aDecl: TensorDeclAst; bDecl: TensorDeclAst } {
  const { rowIx, colIx } = ix;
  const [x, y] = operands;
  const roleOf = (a: AccessAst): "A" | "B" => {
    const has = (i: string) => a.indices.some((ix) => ix.text === i);
    if (has(rowIx) && has(colIx)) {
      fail(
        s.src,
        "E0119",
        `Operand "${a.tensor.text}" has both output indices "${rowIx}" and "${colIx}": each operand of the contraction carries one`,
        a.span,
      );
    }
    if (!has(rowIx) && !has(colIx)) {
      fail(
        s.src,
        "E0119",
        `Operand "${a.tensor.text}" has neither output index "${rowIx}" nor "${colIx}"`,
        a.span,
      );
    }
    return has(rowIx) ? "A" : "B";
  };
  const rx = roleOf(x);
  const ry = roleOf(y);
  if (rx === ry) {
    const missing = rx === "A" ? colIx : rowIx;
    fail(
      s.src,
      "E0115",
      `Output index "${missing}" does not appear in the contraction: "${x.tensor.text}" and "${y.tensor.text}" both carry "${
        rx === "A" ? rowIx : colIx
      }"`,
      cover(x.span, y.span),
    );
  }
  const aAcc = rx === "A" ? x : y;
  const bAcc = rx === "A" ? y : x;
  const aDecl = s.tensors.get(aAcc.tensor.text)!;
  const bDecl = s.tensors.get(bAcc.tensor.text)!;
  if (aDecl === bDecl) {
    // The kernel takes one pointer per role; A·A would need the same tensor as A and B.
    fail(
      s.src,
      "E0118",
      `Tensor "${aDecl.name.text}" is both operands of the contraction: declare the second operand as its own tensor`,
      bAcc.span,
    );
  }
  return { aAcc, bAcc, aDecl, bDecl };
}

/**
 * The view of an operand or the output: its layout relative to the index
 * order (`first`, `second`), and whether the batch index leads it.
 *
 * @param s The kernel's scope.
 * @param acc The access.
 * @param decl The accessed tensor's declaration.
 * @param batchIx The output's batch index, if any.
 * @param first The index of the matrix's rows.
 * @param second The index of the matrix's columns.
 * @returns The view.
 * @throws {DiagnosticError} E0119 for a misplaced or missing batch index,
 *   E0103 for an access that is not a matrix of `first` and `second`.
 */
export function matrixView(
  s: Scope,
  acc: AccessAst,
  decl: TensorDeclAst,
  batchIx: string | null,
  first: string,
  second: string,
): MatrixView {
  const ix = acc.indices.map((i) => i.text);
  const batched = batchIx !== null && ix.includes(batchIx);
  if (batched && ix[0] !== batchIx) {
    fail(
      s.src,
      "E0119",
      `The batch index "${batchIx}" must be the first index of "${acc.tensor.text}"`,
      acc.span,
    );
  }
  if (ix.length === 3 && !batched) {
    fail(
      s.src,
      "E0119",
      `"${acc.tensor.text}" has rank 3 but its first index "${ix[0]}" is not the batch index${
        batchIx === null ? " (the output has no batch)" : ` "${batchIx}"`
      }`,
      acc.span,
    );
  }
  const mat = batched ? ix.slice(1) : ix;
  if (mat.length !== 2) {
    fail(
      s.src,
      "E0103",
      `Operand "${acc.tensor.text}" must be a matrix indexed by "${first}" and "${second}"`,
      acc.span,
    );
  }
  const layout: Layout = decl.layout?.value ?? "row";
  const contiguous = layout === "row" ? mat[1]! : mat[0]!;
  return {
    tensor: acc.tensor.text,
    layout: contiguous === second ? "row" : "col",
    batched,
  };
}
