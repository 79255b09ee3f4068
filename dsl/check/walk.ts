/**
 * Walks over the statement's right-hand side: resolving every access and name
 * against the scope (binding each index to the dimension it spans), and
 * collecting the accesses and the product chains the contraction is found
 * among.
 *
 * @module
 */

import type { AccessAst, ExprAst, TensorDeclAst } from "../ast.ts";
import { isDtype } from "../../ir/dtype.ts";
import { epilogueFn } from "../../ir/epilogue.ts";
import { didYouMean } from "../suggest.ts";
import {
  dimEq,
  dimText,
  EPILOGUE_DTYPES,
  fail,
  FUNCTIONS,
  lineOf,
  type Product,
  type Scope,
  toDimRef,
} from "./scope.ts";

/**
 * The direct subexpressions of an expression, in source order.
 *
 * @param e The expression.
 * @returns Its operands (none for an access, a number or a name).
 */
function children(e: ExprAst): readonly ExprAst[] {
  switch (e.kind) {
    case "access":
    case "number":
    case "name":
      return [];
    case "neg":
      return [e.operand];
    case "paren":
      return [e.inner];
    case "binary":
    case "popc":
      return [e.lhs, e.rhs];
    case "call":
      return e.args;
  }
}

/**
 * Resolves an access: the tensor exists, the rank matches, the indices are
 * distinct, and each index spans one dimension wherever it appears.
 *
 * @param s The kernel's scope; new index bindings are added to it.
 * @param a The access.
 * @returns The accessed tensor's declaration.
 * @throws {DiagnosticError} E0101, E0103, E0104, E0118 or E0119.
 */
export function resolveAccess(s: Scope, a: AccessAst): TensorDeclAst {
  const name = a.tensor.text;
  const t = s.tensors.get(name);
  if (t === undefined) {
    if (s.scalars.has(name)) {
      fail(s.src, "E0118", `"${name}" is a scalar, not a tensor: it cannot be indexed`, a.span);
    }
    fail(
      s.src,
      "E0101",
      `Unknown tensor "${name}"${didYouMean(name, [...s.tensors.keys()])}`,
      a.tensor.span,
    );
  }
  if (a.indices.length !== t.dims.length) {
    fail(
      s.src,
      "E0103",
      `Tensor "${name}" has rank ${t.dims.length} but is accessed with ${a.indices.length} ${
        a.indices.length === 1 ? "index" : "indices"
      }`,
      a.span,
    );
  }
  const seen = new Set<string>();
  a.indices.forEach((ix, i) => {
    if (seen.has(ix.text)) {
      fail(
        s.src,
        "E0119",
        `Index "${ix.text}" appears twice in one access of "${name}": diagonals are not GEMMs`,
        ix.span,
      );
    }
    seen.add(ix.text);
    const dim = toDimRef(t.dims[i]!);
    const prev = s.binding.get(ix.text);
    if (prev === undefined) {
      s.binding.set(ix.text, { dim, tensor: name, span: ix.span });
    } else if (!dimEq(prev.dim, dim)) {
      fail(
        s.src,
        "E0104",
        `Index "${ix.text}" spans two different dimensions: "${
          dimText(prev.dim)
        }" of "${prev.tensor}" (line ${lineOf(s.src, prev.span)}) and "${
          dimText(dim)
        }" of "${name}"`,
        ix.span,
      );
    }
  });
  return t;
}

/** Checks a call's callee and arity (a function of the table, or a cast). */
function resolveCall(s: Scope, e: Extract<ExprAst, { kind: "call" }>): void {
  const f = e.callee.text;
  const row = (FUNCTIONS as readonly string[]).includes(f) ? epilogueFn(f) : undefined;
  const arity = row?.arity ?? (isDtype(f) ? 1 : undefined);
  if (arity === undefined) {
    fail(
      s.src,
      "E0116",
      `Unknown function "${f}": expected one of ${
        FUNCTIONS.join(", ")
      }, or a cast named by a dtype (${EPILOGUE_DTYPES.join(", ")})${
        didYouMean(f, [...FUNCTIONS, ...EPILOGUE_DTYPES])
      }`,
      e.callee.span,
    );
  }
  if (isDtype(f) && !EPILOGUE_DTYPES.includes(f)) {
    fail(
      s.src,
      "E0116",
      `Cannot cast to "${f}" in an epilogue: casts are to ${EPILOGUE_DTYPES.join(", ")}`,
      e.callee.span,
    );
  }
  if (e.args.length !== arity) {
    fail(
      s.src,
      "E0116",
      `Function "${f}" takes ${arity} argument${arity === 1 ? "" : "s"}, got ${e.args.length}`,
      e.span,
    );
  }
}

/**
 * Visits every access, name and call of an expression, in source order, and
 * resolves it.
 *
 * @param s The kernel's scope.
 * @param e The expression.
 * @param output The output tensor's name (which the right-hand side may not read).
 * @throws {DiagnosticError} The first error of {@link resolveAccess}, an
 *   unknown name (E0101), a misused tensor or scalar (E0118), or a bad call (E0116).
 */
export function resolveExpr(s: Scope, e: ExprAst, output: string): void {
  switch (e.kind) {
    case "access":
      if (e.tensor.text === output) {
        fail(
          s.src,
          "E0118",
          `The output "${output}" cannot be read on the right-hand side: pass it as a separate C tensor`,
          e.span,
        );
      }
      resolveAccess(s, e);
      return;
    case "name": {
      const n = e.name.text;
      if (s.tensors.has(n)) {
        fail(s.src, "E0118", `"${n}" is a tensor: index it, as in ${n}[...]`, e.span);
      }
      if (!s.scalars.has(n)) {
        fail(s.src, "E0101", `Unknown name "${n}"${didYouMean(n, [...s.scalars.keys()])}`, e.span);
      }
      return;
    }
    case "call":
      resolveCall(s, e);
      break;
    default:
      break;
  }
  for (const c of children(e)) resolveExpr(s, c, output);
}

/**
 * Every product chain of an expression (maximal, flattened through parens and
 * minus); a `popc` is a product of its two operands.
 *
 * @param e The expression.
 * @param out Where the chains are appended, outermost first.
 */
export function products(e: ExprAst, out: Product[]): void {
  if (e.kind === "binary" && e.op === "*") {
    const factors: ExprAst[] = [];
    let neg = false;
    const walk = (x: ExprAst): void => {
      if (x.kind === "binary" && x.op === "*") {
        walk(x.lhs);
        walk(x.rhs);
      } else if (x.kind === "paren") {
        // Parentheses group, they add no factor: `(A[m, k]) * B[k, n]` is a contraction.
        walk(x.inner);
      } else if (x.kind === "neg") {
        neg = !neg;
        walk(x.operand);
      } else factors.push(x);
    };
    walk(e);
    out.push({ root: e, factors, negated: neg });
    for (const f of factors) products(f, out);
    return;
  }
  if (e.kind === "popc") {
    out.push({ root: e, factors: [e.lhs, e.rhs], negated: false });
    return;
  }
  for (const c of children(e)) products(c, out);
}

/**
 * Every access of an expression, in source order (a `popc`'s two operands
 * included).
 *
 * @param e The expression.
 * @param out Where the accesses are appended.
 */
export function accesses(e: ExprAst, out: AccessAst[]): void {
  if (e.kind === "access") {
    out.push(e);
    return;
  }
  if (e.kind === "popc") {
    out.push(e.lhs, e.rhs);
    return;
  }
  for (const c of children(e)) accesses(c, out);
}
