/**
 * Checks one kernel: its declarations, its one statement (the output, the
 * contraction and the roles, the math, the epilogue) and its schedule block,
 * into a {@link GemmKernel}. The phases share one {@link Scope}, passed along.
 *
 * @module
 */

import { checkFp8 } from "./fp8.ts";
import type { KernelAst, ScheduleLineAst, StatementAst } from "../ast.ts";
import type { DimRef, GemmKernel, MatrixView, Problem, Role, Target } from "../../ir/gemm.ts";
import { DEFAULT_TARGET } from "../../ir/target.ts";
import { GROUP_PARAMS } from "../../ir/gemm.ts";
import { fail, lineOf, newScope, type Scope, type Src } from "./scope.ts";
import { declareScalar, declareTensor, kernelParams } from "./declarations.ts";
import { readSchedule, type ScheduleInfo } from "./schedule.ts";
import { resolveExpr } from "./walk.ts";
import { checkOutput, findContraction, matrixView, operandRoles } from "./contraction.ts";
import { checkMath } from "./math.ts";
import { checkEpilogue } from "./epilogue.ts";
import { checkSparseMath, checkSparseName, checkSparseOperand } from "./sparse.ts";

/**
 * Checks one kernel.
 *
 * @param k The kernel's AST.
 * @param src The source the spans point into.
 * @param target The target that overrides the schedule's `target` line, if any.
 * @returns The checked kernel.
 * @throws {DiagnosticError} The kernel's first error.
 */
export function checkKernel(k: KernelAst, src: Src, target: Target | undefined): GemmKernel {
  const s = newScope(src);
  const statements: StatementAst[] = [];
  const scheduleLines: ScheduleLineAst[] = [];
  for (const item of k.items) {
    switch (item.kind) {
      case "tensorDecl":
        declareTensor(s, item);
        break;
      case "scalarDecl":
        declareScalar(s, item);
        break;
      case "statement":
        statements.push(item);
        break;
      case "schedule":
        scheduleLines.push(...item.lines);
        break;
    }
  }
  const [stmt, extra] = statements;
  if (stmt === undefined) {
    fail(
      src,
      "E0114",
      `Kernel "${k.name.text}" has no statement: write one assignment such as ` +
        `"D[m, n] = A[m, k] * B[k, n]"`,
      k.name.span,
    );
  }
  if (extra !== undefined) {
    fail(
      src,
      "E0114",
      `A kernel holds exactly one statement: this is a second one (the first is at line ${
        lineOf(src, stmt.span)
      })`,
      extra.span,
    );
  }
  const sched = readSchedule(src, scheduleLines);
  return checkStatement(s, k, stmt, sched, target ?? sched.target ?? DEFAULT_TARGET);
}

function checkStatement(
  s: Scope,
  k: KernelAst,
  stmt: StatementAst,
  sched: ScheduleInfo,
  target: Target,
): GemmKernel {
  const out = checkOutput(s, stmt);
  const { rowIx, colIx, batchIx } = out.ix;
  const outName = stmt.target.tensor.text;
  resolveExpr(s, stmt.expr, outName);
  const lhs = stmt.target.indices.map((i) => i.text);
  const contraction = findContraction(s, stmt.expr, lhs);
  const { kIx, main } = contraction;
  const { aAcc, bAcc, aDecl, bDecl } = operandRoles(s, contraction.operands, out.ix);

  const aView = matrixView(s, aAcc, aDecl, batchIx, rowIx, kIx);
  const bView = matrixView(s, bAcc, bDecl, batchIx, kIx, colIx);
  const dView = matrixView(s, stmt.target, out.decl, batchIx, rowIx, colIx);
  const roleText = (n: string) =>
    n === bDecl.name.text ? "operand B" : n === outName ? "the output" : "not an operand";
  checkSparseOperand(
    s,
    k,
    { acc: aAcc, decl: aDecl },
    kIx,
    rowIx,
    aView.layout === "row",
    roleText,
  );
  const dimOf = (i: string): DimRef => s.binding.get(i)!.dim;
  const problem: Problem = {
    m: dimOf(rowIx),
    n: dimOf(colIx),
    k: dimOf(kIx),
    batch: batchIx === null ? null : dimOf(batchIx),
    indices: { m: rowIx, n: colIx, k: kIx, batch: batchIx },
    a: aView,
    b: bView,
    d: dView,
  };

  const math = checkMath(s.src, aDecl, bDecl, main, sched);
  if (aDecl.sparse !== null) checkSparseMath(s, k, aDecl.sparse, math.mode);
  const roles = new Map<string, Role>([
    [aDecl.name.text, "A"],
    [bDecl.name.text, "B"],
    [outName, "D"],
  ]);
  checkFp8(s, roles, { a: aView, b: bView }, target);
  const views: MatrixView[] = [];
  const epi = checkEpilogue(s, stmt.expr, {
    main,
    sumFactors: contraction.operands,
    ix: out.ix,
    math,
    out: out.decl,
    roles,
    views,
  });
  const matrices = new Set([aView, bView, dView, ...views].map((v) => v.tensor));
  const { params, dims, strides } = kernelParams(s, k, roles, matrices);
  if (aDecl.sparse !== null) checkSparseName(s, k, aDecl, params, [...dims, ...strides]);
  if (k.grouped !== null) checkGrouped(s, k, problem, sched, params.map((p) => p.name));

  return {
    kind: "gemm",
    name: k.name.text,
    target,
    params,
    dims,
    ...(strides.length > 0 ? { strides } : {}),
    ...(k.grouped !== null ? { grouped: true as const } : {}),
    problem,
    math,
    epilogue: { ...epi, views },
    schedule: sched.schedule,
    plan: {},
    scheduleSpans: sched.spans,
    nameSpan: k.name.span,
    span: k.span,
    source: s.src,
  };
}

/**
 * The rules of a grouped kernel (DESIGN §6.2): its problems are its batch (no batch
 * dimension), every problem runs whole in one block per tile (no split-K), tiles are
 * handed out by the persistent scheduler (no `swizzle`), and the table and count
 * parameters' names are free.
 */
function checkGrouped(
  s: Scope,
  k: KernelAst,
  problem: Problem,
  sched: ScheduleInfo,
  names: readonly string[],
): void {
  const at = k.grouped!;
  if (problem.batch !== null) {
    const ix = problem.indices.batch!;
    fail(
      s.src,
      "E0126",
      `A grouped kernel's problems are its batch: drop the batch index "${ix}" ` +
        "(each problem of the table has its own tensors)",
      s.binding.get(ix)?.span ?? at,
    );
  }
  for (
    const [key, v] of [["split_k", sched.schedule.splitK], ["swizzle", sched.schedule.swizzle]]
  ) {
    if (v !== undefined && v !== 1) {
      fail(
        s.src,
        "E0126",
        `"${key} ${v}" does not apply to a grouped kernel: its persistent blocks take whole tiles ` +
          "from every problem in turn",
        sched.spans[key as "split_k" | "swizzle"] ?? at,
      );
    }
  }
  for (const n of Object.values(GROUP_PARAMS)) {
    if (names.includes(n)) {
      fail(
        s.src,
        "E0126",
        `A grouped kernel takes a parameter named "${n}" (DESIGN §6.2): rename the kernel's "${n}"`,
        (s.tensors.get(n) ?? s.scalars.get(n))?.name.span ?? at,
      );
    }
  }
}
