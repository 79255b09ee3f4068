/**
 * The epilogue table (ir/epilogue.ts) and the expression walks
 * (ir/epilogue_expr.ts): every row's builder against its reference semantics
 * and error bound, its declared approximate instructions against what it
 * emits, its typing rule and spelling through the checker and the printer;
 * visit, rewrite and fold over every node kind.
 */

import assert from "node:assert/strict";
import {
  APPROX,
  callableEpilogueFns,
  type ComputeType,
  type EmitUnFn,
  EPILOGUE_FNS,
  type EpilogueEmitter,
  epilogueFn,
  type EpilogueFnName,
} from "../ir/epilogue.ts";
import {
  accNode,
  argsOf,
  callNode,
  castNode,
  constNode,
  foldEpilogue,
  functionsIn,
  loadNode,
  rewriteEpilogue,
  scalarNode,
  visitEpilogue,
} from "../ir/epilogue_expr.ts";
import type { EpilogueExpr } from "../ir/gemm.ts";
import { printEpilogueExpr } from "../ir/print_gemm.ts";
import { compile } from "../compiler.ts";
import * as numerics from "../numerics/mod.ts";
import { randInt, rng } from "../backends/sim/_test_kernels.ts";

const NAMES = Object.keys(EPILOGUE_FNS) as EpilogueFnName[];

/** An emitter that records the instructions a builder emits (registers are their indices). */
function recorder(): { em: EpilogueEmitter<number>; ops: string[] } {
  const ops: string[] = [];
  const push = (s: string) => ops.push(s) - 1;
  return {
    ops,
    em: {
      bin: (fn, t) => push(`${fn}.${t}`),
      un: (fn, t) => push(`${fn}.${t}`),
      mad: () => push("mad.f32"),
      convert: (_, from, to) => push(`cvt.${to}.${from}`),
    },
  };
}

/** An emitter that evaluates as the simulator does: each f32 instruction
 * rounded once, the approximate ones by {@link APPROX}'s numerics function. */
function evaluator(): EpilogueEmitter<number> {
  const round = (v: number, t: ComputeType) =>
    t === "f32" ? Math.fround(v) : t === "s32" ? v | 0 : v;
  const approx = (fn: EmitUnFn) =>
    (numerics as unknown as Record<string, (x: number) => number>)[
      APPROX[fn as keyof typeof APPROX].sim
    ]!;
  return {
    bin: (fn, t, a, b) => {
      const x = a as number;
      const y = b as number;
      if (fn === "mul" && t === "s32") return Math.imul(x, y);
      const v = { add: x + y, sub: x - y, mul: x * y, min: Math.min(x, y), max: Math.max(x, y) }[
        fn
      ];
      return round(v, t);
    },
    un: (fn, t, x) => {
      if (fn === "neg") return round(-x, t);
      if (fn === "abs") return round(Math.abs(x), t);
      return approx(fn)(x);
    },
    mad: (a, b, c) => numerics.fmaF32(a, b, c),
    convert: (x, _, to) => round(x, to),
  };
}

Deno.test("epilogue table: each row's arity matches the node it builds", () => {
  for (const name of NAMES) {
    const row = EPILOGUE_FNS[name];
    const args = Array.from({ length: row.arity }, (_, i) => constNode(i));
    const e = callNode(name, args);
    assert.equal(e.op, row.arity === 1 ? "unary" : row.arity === 2 ? "binary" : "clamp", name);
    assert.deepEqual(argsOf(e), args, name);
    assert.throws(() => callNode(name, [...args, accNode()]), /takes \d arguments: got \d/);
  }
  assert.equal(epilogueFn("toString"), undefined);
  assert.equal(epilogueFn("softplus"), undefined);
});

Deno.test("epilogue table: each row's approx list is the approximate instructions it emits", () => {
  for (const name of NAMES) {
    const row = EPILOGUE_FNS[name];
    for (const c of ["f32", "f64", "s32"] as const) {
      if (row.domain === "float" && c === "s32") continue;
      const { em, ops } = recorder();
      const args = Array.from({ length: row.arity }, () => () => em.bin("add", c, 0, 0));
      row.build(em, args, c);
      const emitted = new Set(
        ops.map((o) => o.split(".")[0]!).filter((f) => Object.hasOwn(APPROX, f)),
      );
      assert.deepEqual(emitted, new Set(row.approx), `${name} in ${c}`);
      // Every argument is emitted once: as many adds as arguments come first or between.
      assert.equal(ops.filter((o) => o === `add.${c}`).length >= row.arity, true, name);
      // A float function in f64 is evaluated in f32 between two conversions.
      if (row.domain === "float" && c === "f64") {
        assert.equal(ops[row.arity], "cvt.f32.f64", name);
        assert.equal(ops.at(-1), "cvt.f64.f32", name);
      }
    }
  }
});

Deno.test("epilogue table: the approximate instructions' simulator functions exist", () => {
  for (const [fn, a] of Object.entries(APPROX)) {
    const f = (numerics as unknown as Record<string, unknown>)[a.sim];
    assert.equal(typeof f, "function", `${fn}: numerics.${a.sim}`);
    assert.ok(a.relError > 0 && a.relError < 2 ** -10, fn);
  }
});

Deno.test("epilogue table: f32 builders agree with the reference within the bound", () => {
  const r = rng(18);
  for (const name of NAMES) {
    const row = EPILOGUE_FNS[name];
    for (let i = 0; i < 2000; i++) {
      // Arguments in [-12, 12) (exp stays far from f32 overflow), f32 values.
      const xs = Array.from({ length: row.arity }, () => Math.fround(r() * 24 - 12));
      if (name === "clamp" && xs[1]! > xs[2]!) [xs[1], xs[2]] = [xs[2]!, xs[1]!];
      const got = row.build(evaluator(), xs.map((x) => () => x), "f32");
      const want = row.reference(xs, "f32");
      // The bound, plus the f32 roundings of the sequence (a few ulp).
      const tol = row.bound * Math.max(1, Math.abs(want)) + 2 ** -20 * Math.abs(want);
      assert.ok(Math.abs(got - want) <= tol, `${name}(${xs.join(", ")}): ${got} vs ${want}`);
    }
  }
});

Deno.test("epilogue table: integer rows are exact in s32, with wrapping", () => {
  const r = rng(19);
  const draw = () => randInt(r, -(2 ** 31), 2 ** 31 - 1) >> randInt(r, 0, 20);
  for (const name of NAMES) {
    const row = EPILOGUE_FNS[name];
    if (row.domain === "float") continue;
    for (let i = 0; i < 2000; i++) {
      const xs = Array.from({ length: row.arity }, draw);
      if (name === "clamp" && xs[1]! > xs[2]!) [xs[1], xs[2]] = [xs[2]!, xs[1]!];
      const got = row.build(evaluator(), xs.map((x) => () => x), "s32");
      assert.equal(got, row.reference(xs, "s32"), `${name}(${xs.join(", ")})`);
    }
  }
  assert.equal(EPILOGUE_FNS.neg.reference([-(2 ** 31)], "s32"), -(2 ** 31));
  assert.equal(EPILOGUE_FNS.mul.reference([2 ** 16, 2 ** 16], "s32"), 0);
});

Deno.test("epilogue table: tanh and exp values and tolerances", () => {
  assert.equal(EPILOGUE_FNS.tanh.reference([0], "f32"), 0);
  assert.equal(EPILOGUE_FNS.exp.reference([1], "f32"), Math.E);
  assert.equal(EPILOGUE_FNS.exp.bound, 2 ** -10);
  assert.equal(EPILOGUE_FNS.relu.bound, 0);
  // The bound covers the GPU's tanh.approx: 2^-10.99 relative.
  assert.ok(EPILOGUE_FNS.tanh.bound >= APPROX.tanh.relError);
});

// ---- through the checker and the printer ----------------------------------------------------

function epilogueOf(dtypes: [string, string], stmt: string): { compute: string; text: string } {
  const src = `kernel k {\n  A: ${dtypes[0]}[M, K]\n  B: ${dtypes[0]}[K, N] col\n` +
    `  D: ${dtypes[1]}[M, N]${dtypes[1].endsWith("8") ? " align 4" : ""}\n  D[m, n] = ${stmt}\n}\n`;
  const r = compile(src, { file: "t.gemm" });
  assert.ok(r.ok, `${stmt}: ${r.diagnostics.map((d) => d.message).join("; ")}`);
  const g = r.kernels[0]!.gemm;
  return {
    compute: g.epilogue.compute,
    text: printEpilogueExpr(g.epilogue.expr, g.problem.indices),
  };
}

Deno.test("epilogue table: every callable row checks, types by its rule and prints as called", () => {
  for (const name of callableEpilogueFns()) {
    const row = EPILOGUE_FNS[name];
    const args = ["A[m, k] * B[k, n]", "-3", "3"].slice(0, row.arity).join(", ");
    const int = epilogueOf(["s8", "s32"], `s32(${name}(${args}))`);
    assert.equal(int.compute, row.domain === "float" ? "f32" : "s32", name);
    assert.equal(
      int.text,
      `s32(${name}(acc${row.arity > 1 ? ", -(3)" : ""}${row.arity > 2 ? ", 3" : ""}))`,
    );
    assert.equal(epilogueOf(["f64", "f64"], `${name}(${args})`).compute, "f64", name);
    assert.equal(epilogueOf(["f16", "f16"], `f16(${name}(${args}))`).compute, "f32", name);
  }
});

Deno.test("epilogue table: wrong arity and unknown names are diagnostics", () => {
  const src = (stmt: string) =>
    `kernel k {\n  A: f16[M, K]\n  B: f16[K, N] col\n  D: f32[M, N]\n  D[m, n] = ${stmt}\n}\n`;
  const one = (stmt: string) => compile(src(stmt), { file: "t.gemm" }).diagnostics[0]?.message;
  assert.equal(one("tanh(A[m, k] * B[k, n], 2)"), 'Function "tanh" takes 1 argument, got 2');
  assert.equal(one("exp()"), 'Function "exp" takes 1 argument, got 0');
  assert.match(
    one("add(A[m, k] * B[k, n], 1)")!,
    /^Unknown function "add": expected one of .*tanh, exp/,
  );
  assert.match(one("neg(A[m, k] * B[k, n])")!, /^Unknown function "neg"/);
});

// ---- visit, rewrite, fold -------------------------------------------------------------------

/** One expression with every node kind. */
const EVERY: EpilogueExpr = callNode("clamp", [
  callNode("add", [
    callNode("tanh", [callNode("mul", [scalarNode("alpha"), accNode()])]),
    castNode("f16", loadNode("bias", false, true, false)),
  ]),
  constNode(-1),
  callNode("exp", [loadNode("C", true, true, false)]),
]);

Deno.test("visitEpilogue: every node once, parents first, arguments in order", () => {
  const seen: string[] = [];
  const note = (e: EpilogueExpr) => void seen.push(e.op);
  visitEpilogue(EVERY, {
    acc: note,
    const: note,
    scalar: note,
    load: (l) => void seen.push(`load ${l.tensor}`),
    unary: (u) => void seen.push(u.fn),
    binary: (b) => void seen.push(b.fn),
    clamp: note,
    cast: (c) => void seen.push(`cast ${c.to}`),
  });
  assert.deepEqual(seen, [
    "clamp",
    "add",
    "tanh",
    "mul",
    "scalar",
    "acc",
    "cast f16",
    "load bias",
    "const",
    "exp",
    "load C",
  ]);
  assert.deepEqual(functionsIn(EVERY).map((f) => f.name), ["clamp", "add", "tanh", "mul", "exp"]);
});

Deno.test("rewriteEpilogue: bottom-up, sharing what did not change", () => {
  assert.equal(rewriteEpilogue(EVERY, {}), EVERY);
  assert.equal(rewriteEpilogue(EVERY, { scalar: (s) => s }), EVERY);
  const ix = { m: "m", n: "n", batch: null };
  // tanh -> exp everywhere, the accumulator doubled: each replacement sees rebuilt arguments.
  const r = rewriteEpilogue(EVERY, {
    acc: () => callNode("mul", [constNode(2), accNode()]),
    unary: (u) => (u.fn === "tanh" ? callNode("exp", [u.x]) : u),
  });
  assert.equal(
    printEpilogueExpr(r, ix),
    "clamp((exp((alpha * (2 * acc))) + f16(bias[n])), -1, exp(C[m, n]))",
  );
  assert.equal(
    printEpilogueExpr(EVERY, ix),
    "clamp((tanh((alpha * acc)) + f16(bias[n])), -1, exp(C[m, n]))",
  );
  // The untouched third argument is shared, not copied.
  assert.equal(argsOf(r)[2], argsOf(EVERY)[2]);
});

Deno.test("foldEpilogue: values from the leaves up", () => {
  const count = foldEpilogue<number>(EVERY, {
    acc: () => 1,
    const: () => 1,
    scalar: () => 1,
    load: () => 1,
    unary: (_, [x]) => x! + 1,
    binary: (_, [a, b]) => a! + b! + 1,
    clamp: (_, xs) => xs.reduce((s, x) => s + x, 1),
    cast: (_, [x]) => x! + 1,
  });
  assert.equal(count, 11);
});
