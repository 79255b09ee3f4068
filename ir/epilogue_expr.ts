/**
 * Building and walking epilogue expressions ({@link EpilogueExpr}): a factory
 * for each node kind, the node's arguments in order, and one typed `visit`,
 * `rewrite` and `fold` keyed by a mapped type over the node kinds, so that a
 * walk names only the kinds it cares about and a new kind is a type error in
 * the one switch below.
 *
 * @module
 */

import type { Dtype, EpilogueExpr } from "./gemm.ts";
import { unreachable } from "./gemm.ts";
import {
  EPILOGUE_FNS,
  type EpilogueFnName,
  type EpilogueFnOfArity,
  type EpilogueFnRow,
} from "./epilogue.ts";

/** The kinds of epilogue node. */
export type EpilogueOp = EpilogueExpr["op"];

/** The node of kind `K`. */
export type EpilogueNode<K extends EpilogueOp> = Extract<EpilogueExpr, { readonly op: K }>;

/** Per node kind, what {@link visitEpilogue} does at a node of that kind. */
export type VisitActions = { readonly [K in EpilogueOp]?: (e: EpilogueNode<K>) => void };

/** Per node kind, how {@link rewriteEpilogue} replaces a node of that kind. */
export type RewriteActions = { readonly [K in EpilogueOp]?: (e: EpilogueNode<K>) => EpilogueExpr };

/** Per node kind (each one), the value of a node from its arguments' values. */
export type FoldActions<T> = {
  readonly [K in EpilogueOp]: (e: EpilogueNode<K>, args: readonly T[]) => T;
};

/** The accumulator. */
export const accNode = (): EpilogueNode<"acc"> => ({ op: "acc" });

/** A literal. */
export const constNode = (value: number): EpilogueNode<"const"> => ({ op: "const", value });

/** A scalar parameter. */
export const scalarNode = (name: string): EpilogueNode<"scalar"> => ({ op: "scalar", name });

/** A load of an epilogue tensor's element. */
export const loadNode = (
  tensor: string,
  rows: boolean,
  cols: boolean,
  batched: boolean,
): EpilogueNode<"load"> => ({ op: "load", tensor, rows, cols, batched });

/** A cast: the value rounded to `to` and back to the compute type. */
export const castNode = (to: Dtype, x: EpilogueExpr): EpilogueNode<"cast"> => ({
  op: "cast",
  to,
  x,
});

/**
 * The node of a function of the table applied to its arguments: `unary` for
 * arity 1, `binary` for 2, `clamp` for 3.
 *
 * @param fn The function's name.
 * @param args Its arguments, as many as its arity.
 * @returns The node.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { accNode, callNode, constNode } from "./epilogue_expr.ts";
 * const e = callNode("max", [accNode(), constNode(0)]);
 * equal(e.op, "binary");
 * equal(e.fn, "max");
 * ```
 */
export function callNode(fn: EpilogueFnName, args: readonly EpilogueExpr[]): EpilogueExpr {
  const row: EpilogueFnRow = EPILOGUE_FNS[fn];
  if (args.length !== row.arity) {
    throw new Error(`Function "${fn}" takes ${row.arity} arguments: got ${args.length}`);
  }
  const [a, b, c] = args as [EpilogueExpr, EpilogueExpr, EpilogueExpr];
  switch (row.arity) {
    case 1:
      return { op: "unary", fn: fn as EpilogueFnOfArity<1>, x: a };
    case 2:
      return { op: "binary", fn: fn as EpilogueFnOfArity<2>, a, b };
    case 3:
      return { op: "clamp", x: a, lo: b, hi: c };
    default:
      return unreachable(row.arity);
  }
}

/**
 * The table's row of a function node, or null for the other kinds.
 *
 * @param e A node.
 * @returns Its function's name and row.
 */
export function fnOf(
  e: EpilogueExpr,
): { readonly name: EpilogueFnName; readonly row: EpilogueFnRow } | null {
  const name = e.op === "unary" || e.op === "binary" ? e.fn : e.op === "clamp" ? "clamp" : null;
  return name === null ? null : { name, row: EPILOGUE_FNS[name] };
}

/**
 * A node's arguments, in order (the leaves have none).
 *
 * @param e A node.
 * @returns Its operands.
 */
export function argsOf(e: EpilogueExpr): readonly EpilogueExpr[] {
  switch (e.op) {
    case "acc":
    case "const":
    case "scalar":
    case "load":
      return [];
    case "unary":
    case "cast":
      return [e.x];
    case "binary":
      return [e.a, e.b];
    case "clamp":
      return [e.x, e.lo, e.hi];
    default:
      return unreachable(e);
  }
}

/** `e` with its arguments replaced by `args` (same count and order as {@link argsOf}). */
function withArgs(e: EpilogueExpr, args: readonly EpilogueExpr[]): EpilogueExpr {
  const fn = fnOf(e);
  if (fn !== null) return callNode(fn.name, args);
  return e.op === "cast" ? castNode(e.to, args[0]!) : e;
}

/**
 * Calls the action of each node's kind, parents before their arguments, the
 * arguments left to right.
 *
 * @param e The expression.
 * @param actions What to do at the kinds of interest.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { accNode, callNode, loadNode, visitEpilogue } from "./epilogue_expr.ts";
 * const names: string[] = [];
 * visitEpilogue(callNode("add", [accNode(), loadNode("bias", false, true, false)]), {
 *   load: (l) => names.push(l.tensor),
 * });
 * equal(names.join(), "bias");
 * ```
 */
export function visitEpilogue(e: EpilogueExpr, actions: VisitActions): void {
  (actions[e.op] as ((n: EpilogueExpr) => void) | undefined)?.(e);
  for (const x of argsOf(e)) visitEpilogue(x, actions);
}

/**
 * Rewrites an expression bottom-up: the arguments first, then the node (with
 * its new arguments) by the action of its kind, if any.
 *
 * @param e The expression.
 * @param actions The replacements, by kind.
 * @returns The new expression (`e` itself where nothing changed).
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { accNode, callNode, constNode, rewriteEpilogue } from "./epilogue_expr.ts";
 * const e = rewriteEpilogue(callNode("relu", [accNode()]), { acc: () => constNode(2) });
 * equal(e.op, "unary");
 * equal(e.x.op, "const");
 * ```
 */
export function rewriteEpilogue(e: EpilogueExpr, actions: RewriteActions): EpilogueExpr {
  const args = argsOf(e);
  const next = args.map((x) => rewriteEpilogue(x, actions));
  const node = next.every((x, i) => x === args[i]) ? e : withArgs(e, next);
  const action = actions[node.op] as ((n: EpilogueExpr) => EpilogueExpr) | undefined;
  return action === undefined ? node : action(node);
}

/**
 * Folds an expression bottom-up: each node's value from its arguments'
 * values, by the action of its kind (every kind has one).
 *
 * @param e The expression.
 * @param actions The value of each kind of node.
 * @returns The value of the root.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { accNode, callNode, constNode, foldEpilogue } from "./epilogue_expr.ts";
 * const depth = foldEpilogue<number>(callNode("max", [accNode(), constNode(0)]), {
 *   acc: () => 1, const: () => 1, scalar: () => 1, load: () => 1,
 *   unary: (_, [x]) => x! + 1, binary: (_, [a, b]) => Math.max(a!, b!) + 1,
 *   clamp: (_, xs) => Math.max(...xs) + 1, cast: (_, [x]) => x! + 1,
 * });
 * equal(depth, 2);
 * ```
 */
export function foldEpilogue<T>(e: EpilogueExpr, actions: FoldActions<T>): T {
  const args = argsOf(e).map((x) => foldEpilogue(x, actions));
  return (actions[e.op] as (n: EpilogueExpr, xs: readonly T[]) => T)(e, args);
}

/**
 * The functions an expression applies, each node once, in visiting order.
 *
 * @param e The expression.
 * @returns The name and row of each function node.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { accNode, callNode, functionsIn } from "./epilogue_expr.ts";
 * const fs = functionsIn(callNode("tanh", [callNode("neg", [accNode()])]));
 * equal(fs.map((f) => f.name).join(), "tanh,neg");
 * ```
 */
export function functionsIn(
  e: EpilogueExpr,
): readonly { readonly name: EpilogueFnName; readonly row: EpilogueFnRow }[] {
  const out: { readonly name: EpilogueFnName; readonly row: EpilogueFnRow }[] = [];
  const add = (n: EpilogueExpr) => void out.push(fnOf(n)!);
  visitEpilogue(e, { unary: add, binary: add, clamp: add });
  return out;
}
