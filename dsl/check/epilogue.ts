/**
 * The epilogue's typing: the statement's right-hand side as an
 * {@link EpilogueExpr} around the accumulator, the role (C or bias) and the
 * view of every epilogue tensor, and the compute type (f64 with an f64
 * accumulator, f32 when anything is floating-point, s32 otherwise). Which
 * functions exist and their domain come from the table of ir/epilogue.ts.
 *
 * @module
 */

import type { AccessAst, ExprAst, TensorDeclAst } from "../ast.ts";
import { epilogueFn, type EpilogueFnName } from "../../ir/epilogue.ts";
import {
  accNode,
  callNode,
  castNode,
  constNode,
  loadNode,
  scalarNode,
} from "../../ir/epilogue_expr.ts";
import type {
  ComputeType,
  Epilogue,
  EpilogueExpr,
  MathSpec,
  MatrixView,
  Role,
} from "../../ir/gemm.ts";
import { DTYPE_INFO, isDtype } from "../../ir/dtype.ts";
import { EPILOGUE_DTYPES, fail, type Product, type Scope } from "./scope.ts";

/** The output indices, which name the rows, the columns and the batch. */
export interface OutputIndices {
  readonly rowIx: string;
  readonly colIx: string;
  readonly batchIx: string | null;
}

/** What typing the epilogue reads and fills. */
export interface EpilogueInput {
  /** The contraction's product chain, which becomes the accumulator. */
  readonly main: Product;
  /** The contraction's two summed operands. */
  readonly sumFactors: readonly AccessAst[];
  readonly ix: OutputIndices;
  readonly math: MathSpec;
  readonly out: TensorDeclAst;
  /** The role of each tensor: A, B and D on entry; C and bias are added. */
  readonly roles: Map<string, Role>;
  /** The views of the C matrices, appended in order of first read. */
  readonly views: MatrixView[];
}

/** The walk's state: its input, whether a floating-point value was seen, and the integer literals. */
interface Walk {
  readonly s: Scope;
  readonly in: EpilogueInput;
  isFloat: boolean;
  /** Literals written as integers, checked against s32 once the compute type is known. */
  readonly ints: Extract<ExprAst, { kind: "number" }>[];
}

/** The largest literal an s32 epilogue holds. */
const S32_MAX = 2 ** 31 - 1;

/**
 * Types the epilogue of a statement.
 *
 * @param s The kernel's scope.
 * @param expr The statement's right-hand side.
 * @param input The contraction, the output, the math, and the roles and views to fill.
 * @returns The compute type and the expression (the views are in `input.views`).
 * @throws {DiagnosticError} E0120 for an epilogue tensor of a dtype the
 *   epilogue cannot read, E0119 for a misplaced batch index, E0118 for a
 *   tensor used in two roles or read in two index orders, E0116 for a popc
 *   outside the contraction, E0124 for a
 *   literal out of range (not finite, or over s32 in an integer epilogue).
 */
export function checkEpilogue(
  s: Scope,
  expr: ExprAst,
  input: EpilogueInput,
): Omit<Epilogue, "views"> {
  const { out, math } = input;
  const w: Walk = {
    s,
    in: input,
    isFloat: DTYPE_INFO[out.dtype].float || math.acc === "f64" || DTYPE_INFO[math.acc].float,
    ints: [],
  };
  const e = visit(w, expr);
  const compute: ComputeType = math.acc === "f64" ? "f64" : w.isFloat ? "f32" : "s32";
  const big = compute === "s32" ? w.ints.find((n) => n.value > S32_MAX) : undefined;
  if (big !== undefined) {
    fail(
      s.src,
      "E0124",
      `Literal out of range: ${big.text} does not fit the s32 epilogue (at most ${S32_MAX})`,
      big.span,
    );
  }
  return { compute, expr: e };
}

/** The accumulator with the contraction's other factors around it, in source order. */
function accumulator(w: Walk): EpilogueExpr {
  const { main, sumFactors } = w.in;
  const rest = main.factors.filter((f) =>
    main.root.kind === "popc" || !(sumFactors as readonly ExprAst[]).includes(f)
  );
  let r: EpilogueExpr = accNode();
  if (main.root.kind !== "popc") {
    // Keep the source order of the other factors around the accumulator.
    const firstSum = main.factors.findIndex((f) => !rest.includes(f));
    const before = main.factors.slice(0, firstSum).filter((f) => rest.includes(f));
    const after = main.factors.slice(firstSum).filter((f) => rest.includes(f));
    for (const f of before.reverse()) r = callNode("mul", [visit(w, f), r]);
    for (const f of after) r = callNode("mul", [r, visit(w, f)]);
  }
  return main.negated ? callNode("neg", [r]) : r;
}

function visit(w: Walk, e: ExprAst): EpilogueExpr {
  if (e === w.in.main.root) return accumulator(w);
  switch (e.kind) {
    case "access":
      return load(w, e);
    case "number":
      if (!Number.isFinite(e.value)) {
        fail(w.s.src, "E0124", `Literal out of range: ${e.text} is not a finite number`, e.span);
      }
      if (!Number.isInteger(e.value) || /[.eE]/.test(e.text)) w.isFloat = true;
      else w.ints.push(e);
      return constNode(e.value);
    case "name": {
      const sc = w.s.scalars.get(e.name.text)!;
      if (DTYPE_INFO[sc.dtype].float) w.isFloat = true;
      return scalarNode(e.name.text);
    }
    case "neg":
      return callNode("neg", [visit(w, e.operand)]);
    case "paren":
      return visit(w, e.inner);
    case "binary":
      return callNode(e.op === "+" ? "add" : e.op === "-" ? "sub" : "mul", [
        visit(w, e.lhs),
        visit(w, e.rhs),
      ]);
    case "call": {
      const f = e.callee.text;
      const args = e.args.map((a) => visit(w, a));
      if (isDtype(f)) {
        if (DTYPE_INFO[f].float) w.isFloat = true;
        return castNode(f, args[0]!);
      }
      const row = epilogueFn(f);
      if (row !== undefined && row.spelling.kind === "call") {
        if (row.domain === "float") w.isFloat = true;
        return callNode(f as EpilogueFnName, args);
      }
      throw new Error(`Unchecked function "${f}"`);
    }
    case "popc":
      // The contraction's popc became the accumulator above; any other is not
      // an epilogue function.
      return fail(
        w.s.src,
        "E0116",
        "A popc outside the contraction: popc(A[m, k] & B[k, n]) with b1 operands is the " +
          "main loop of a binary GEMM, not an epilogue function",
        e.span,
      );
  }
}

/** An epilogue tensor's read: its dtype, its role, and (for a C matrix) its view. */
function load(w: Walk, e: AccessAst): EpilogueExpr {
  const { src } = w.s;
  const { ix, roles, views } = w.in;
  const t = w.s.tensors.get(e.tensor.text)!;
  if (!EPILOGUE_DTYPES.includes(t.dtype)) {
    fail(
      src,
      "E0120",
      `Epilogue tensor "${t.name.text}" has dtype "${t.dtype}": epilogue tensors are ${
        EPILOGUE_DTYPES.join(", ")
      }`,
      e.span,
    );
  }
  if (DTYPE_INFO[t.dtype].float) w.isFloat = true;
  const names = e.indices.map((i) => i.text);
  const batched = ix.batchIx !== null && names.includes(ix.batchIx);
  if (batched && names[0] !== ix.batchIx) {
    fail(
      src,
      "E0119",
      `The batch index "${ix.batchIx}" must be the first index of "${e.tensor.text}"`,
      e.span,
    );
  }
  const rows = names.includes(ix.rowIx);
  const cols = names.includes(ix.colIx);
  const prevRole = roles.get(e.tensor.text);
  const role: Role = rows && cols ? "C" : "bias";
  if (prevRole !== undefined && prevRole !== role) {
    fail(src, "E0118", `Tensor "${e.tensor.text}" is used as ${prevRole} and as ${role}`, e.span);
  }
  roles.set(e.tensor.text, role);
  if (role === "bias" && batched && t.layout?.value === "col") {
    // A batched vector is stored batch-outermost (the lowering's vectorBase reads
    // it so): a declared "col" ([L, N] with L contiguous) would be a promise the
    // kernel does not keep, and one the manifest would repeat to every launcher
    // (bad_inputs/batch_bias_col.gemm: the reference honoured it, the kernel did not).
    fail(
      src,
      "E0117",
      `Tensor "${e.tensor.text}" is a batched vector (batch outermost, then its one dimension): ` +
        `it has no "col" layout; declare it without one`,
      t.layout.span,
    );
  }
  if (rows && cols) {
    const mat = batched ? names.slice(1) : names;
    const contiguous = (t.layout?.value ?? "row") === "row" ? mat[1] : mat[0];
    const layout = contiguous === ix.colIx ? "row" : "col";
    const prev = views.find((v) => v.tensor === e.tensor.text);
    if (prev === undefined) views.push({ tensor: e.tensor.text, layout, batched });
    else if (prev.layout !== layout || prev.batched !== batched) {
      // One view per epilogue matrix: a load carries no index order of its own.
      fail(
        src,
        "E0118",
        `Tensor "${e.tensor.text}" is read in two different index orders: an epilogue matrix is read one way`,
        e.span,
      );
    }
  }
  return loadNode(e.tensor.text, rows, cols, batched);
}
