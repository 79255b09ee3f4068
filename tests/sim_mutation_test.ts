/**
 * Mutation tests on REAL lowered kernels: the kernel IR that `compile` produces
 * for examples/hgemm.gemm (with a small schedule, at 3 and at 2 stages) and
 * examples/s8_gemm.gemm (its default schedule, 4 stages) is rewritten as a
 * tree to break its cp.async pipeline, and the simulator must report every
 * mutant as a hazard of the expected kind, at a kernel-IR line that exists in
 * the mutant's printed text. The unmutated kernels report none and agree with
 * the reference.
 *
 * The program shape (passes/lower/main_loop.ts): a prologue that fills `stages - 1`
 * stages (one commit group each), `wait stages-2` and `bar`; a k-loop that
 * issues the copies of a later k-tile at k-step 0 and commits, and before the
 * last k-step waits (`wait stages-2`) and barriers; after the loop a drain
 * (`wait 0`) and the epilogue.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { simulateGemm, type SimulateReport } from "../harness/simulate_gemm.ts";
import type { HazardKind } from "../backends/sim/mod.ts";
import type { ForOp, IfOp, Kernel, Op } from "../ir/kernel.ts";
import { printKernel } from "../ir/print_kernel.ts";

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

const EXAMPLES = new URL("../examples/", import.meta.url);

function compileExample(file: string, edit: (s: string) => string = (s) => s): CompiledKernel {
  const source = edit(Deno.readTextFileSync(new URL(file, EXAMPLES)));
  const r = compile(source, { file: `examples/${file}` });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/** examples/hgemm.gemm with its schedule's tiles made small (64x64x32, warps 32x32x32). */
function smallHgemm(stages: number): CompiledKernel {
  return compileExample("hgemm.gemm", (s) => {
    const t = s
      .replace(/threadblock \d+x\d+x\d+/, "threadblock 64x64x32")
      .replace(/warp \d+x\d+x\d+/, "warp 32x32x32")
      .replace(/stages \d+/, `stages ${stages}`);
    assert.notEqual(t, s, "examples/hgemm.gemm has no schedule to edit");
    return t;
  });
}

interface Subject {
  readonly name: string;
  readonly ck: CompiledKernel;
  readonly sizes: Record<string, number>;
}

const SUBJECTS: Subject[] = [
  // 11 k-tiles: more than the stages, so the ring wraps; a partial tile in M
  // and N. hgemm reads C: 3 k-tiles in the first copy of the k-loop, 8 after
  // the L2 prefetch of C's tile.
  { name: "hgemm (64x64x32, 3 stages)", ck: smallHgemm(3), sizes: { M: 80, N: 72, K: 352 } },
  { name: "hgemm (64x64x32, 2 stages)", ck: smallHgemm(2), sizes: { M: 80, N: 72, K: 352 } },
  // f16 output with a bias: the epilogue stages D through shared memory (default
  // schedule, 10 k-tiles, partial tiles in M and N).
  {
    name: "fused_bias_relu (staged epilogue)",
    ck: compileExample("fused_bias_relu.gemm"),
    sizes: { Tokens: 136, Out: 264, In: 320 },
  },
  // The default schedule: 128x256x64, 4 stages; 6 k-tiles.
  {
    name: "s8_gemm (default schedule)",
    ck: compileExample("s8_gemm.gemm"),
    sizes: { M: 128, N: 256, K: 384 },
  },
];

// ---------------------------------------------------------------------------
// Rewriting the kernel IR tree
// ---------------------------------------------------------------------------

/** Where an op sits: inside the k-loop or not. */
interface Ctx {
  readonly inLoop: boolean;
}

/**
 * Rebuilds a body bottom-up; `f` returns the replacement of an op (its
 * children already rewritten) or null to keep it.
 */
function rewrite(body: readonly Op[], f: (o: Op, c: Ctx) => Op[] | null, c: Ctx): Op[] {
  const out: Op[] = [];
  for (const o of body) {
    let o2: Op = o;
    if (o.op === "for") o2 = { ...o, body: rewrite(o.body, f, { inLoop: true }) };
    else if (o.op === "if") {
      o2 = { ...o, then: rewrite(o.then, f, c), otherwise: rewrite(o.otherwise, f, c) };
    }
    out.push(...(f(o2, c) ?? [o2]));
  }
  return out;
}

function mapOps(k: Kernel, f: (o: Op, c: Ctx) => Op[] | null): Kernel {
  return { ...k, body: rewrite(k.body, f, { inLoop: false }) };
}

/**
 * Rewrites the body that holds the k-loop (the list of ops around it) as a
 * whole. `loopAt` is the first copy of the loop, `lastAt` the last: an
 * epilogue that reads C runs the loop's last k-tiles in a second copy, after
 * the L2 prefetch of C's tile (passes/lower/epilogue_loads.ts `epiPrefetch`).
 */
function mapMainBody(
  k: Kernel,
  f: (body: readonly Op[], loopAt: number, lastAt: number) => Op[],
): Kernel {
  let found = 0;
  const visit = (body: readonly Op[]): Op[] => {
    const loopAt = body.findIndex((o) => o.op === "for");
    if (loopAt >= 0) {
      found++;
      return f(body, loopAt, body.findLastIndex((o) => o.op === "for"));
    }
    return body.map((o): Op =>
      o.op === "if" ? { ...o, then: visit(o.then), otherwise: visit(o.otherwise) } : o
    );
  };
  const body = visit(k.body);
  assert.equal(found, 1, "expected exactly one k-loop");
  return { ...k, body };
}

/** The drain: the `wait 0` right after the k-loop. */
function drainOf(k: Kernel): Op {
  let drain: Op | undefined;
  mapMainBody(k, (body, _loopAt, lastAt) => {
    drain = body[lastAt + 1];
    return [...body];
  });
  assert.ok(drain?.op === "wait" && drain.n === 0, "no wait 0 after the k-loop");
  return drain;
}

/** Every op of a kernel, flattened. */
function allOps(body: readonly Op[]): Op[] {
  return body.flatMap((o) =>
    o.op === "for"
      ? [o, ...allOps(o.body)]
      : o.op === "if"
      ? [o, ...allOps((o as IfOp).then), ...allOps((o as IfOp).otherwise)]
      : [o]
  );
}

interface Mutant {
  readonly name: string;
  /** Null where the mutant does not apply to this kernel. */
  readonly make: (k: Kernel, stages: number) => Kernel | null;
  /** The hazard kind that must be reported. */
  readonly kind: HazardKind;
  /** What the reported op must be. */
  readonly reportedOp: RegExp;
  /** Whether the reported op lies inside the k-loop. */
  readonly inLoop: boolean | null;
  /** Whether the output must also disagree with the reference. */
  readonly mismatch: boolean;
  /** Where the mutant is equivalent to the original (must then report nothing). */
  readonly equivalent?: (stages: number) => boolean;
  /** What is reported instead where the epilogue stages D through shared memory. */
  readonly staged?: Pick<Mutant, "kind" | "reportedOp" | "inLoop">;
}

/** Whether the epilogue stages D through shared memory (the subjects have no split-K,
 * whose flag is the only other shared store). */
function stagesD(k: Kernel): boolean {
  return allOps(k.body).some((o) => o.op === "sts");
}

const MUTANTS: Mutant[] = [
  {
    name: "(a) delete the wait inside the k-loop",
    make: (k) => mapOps(k, (o, c) => o.op === "wait" && c.inLoop ? [] : null),
    kind: "read-before-landed",
    reportedOp: /= ldmatrix/,
    inLoop: true,
    mismatch: true,
  },
  {
    name: "(a) delete every wait",
    make: (k) => mapOps(k, (o) => o.op === "wait" ? [] : null),
    kind: "read-before-landed",
    reportedOp: /= ldmatrix/,
    inLoop: false, // the first read is the prologue's fragment load
    mismatch: true,
  },
  {
    name: "(b) delete every bar inside the k-loop",
    make: (k) => mapOps(k, (o, c) => o.op === "bar" && c.inLoop ? [] : null),
    kind: "race",
    reportedOp: /= ldmatrix|cpasync/,
    inLoop: true,
    mismatch: false, // lockstep execution hides it; only the checker sees it
  },
  {
    name: "(b) delete the prologue bar",
    make: (k) => mapOps(k, (o, c) => o.op === "bar" && !c.inLoop ? [] : null),
    kind: "race",
    reportedOp: /= ldmatrix/,
    inLoop: false,
    mismatch: false,
  },
  {
    name: "(c) wait depth n -> n+1 (one group too permissive)",
    make: (k) => {
      // Only the pipeline's waits; the drain stays `wait 0`.
      const drain = drainOf(k);
      return mapOps(k, (o) => o.op === "wait" && o !== drain ? [{ ...o, n: o.n + 1 }] : null);
    },
    kind: "read-before-landed",
    reportedOp: /= ldmatrix/,
    inLoop: null,
    mismatch: true,
  },
  {
    name: "(c) the prologue fills one stage fewer",
    make: (k, stages) => {
      if (stages < 3) return null; // with 2 stages the prologue would fill none
      return mapMainBody(k, (body, loopAt) => {
        const commits = body.slice(0, loopAt).flatMap((o, i) => o.op === "commit" ? [i] : []);
        assert.equal(commits.length, stages - 1, "one prologue commit per stage but the last");
        const prev = commits[commits.length - 2]!;
        const last = commits[commits.length - 1]!;
        // Drop the last group's copies and commit (and one of the two stage
        // advances between them), keeping one advance: the k-loop then finds
        // its k-tiles one stage later than the waits assume.
        return [...body.slice(0, prev + 1), ...body.slice(last + 1)];
      });
    },
    kind: "read-before-landed",
    reportedOp: /= ldmatrix/,
    // The prologue's `wait stages-2` now leaves every prologue group pending:
    // the first fragment load reads k-tile 0 before it landed.
    inLoop: false,
    mismatch: true,
  },
  {
    name: "(c) the prologue fills one stage more (prefetch distance = stages)",
    make: (k, stages) => {
      if (stages < 3) return null;
      return mapMainBody(k, (body, loopAt) => {
        const commits = body.slice(0, loopAt).flatMap((o, i) => o.op === "commit" ? [i] : []);
        const prev = commits[commits.length - 2]!;
        const last = commits[commits.length - 1]!;
        // Repeat the last group (a stage advance, its copies, its commit): the
        // k-loop's first copies then overwrite the stage it is reading.
        return [
          ...body.slice(0, last + 1),
          ...body.slice(prev + 1, last + 1),
          ...body.slice(last + 1),
        ];
      });
    },
    kind: "race",
    reportedOp: /^cpasync/,
    inLoop: true,
    mismatch: false, // the data stays right in lockstep; the overwrite is the race
  },
  {
    name: "delete the commit inside the k-loop",
    make: (k) => mapOps(k, (o, c) => o.op === "commit" && c.inLoop ? [] : null),
    kind: "read-before-landed",
    reportedOp: /= ldmatrix/,
    inLoop: true,
    mismatch: true,
  },
  {
    name: "(d) delete the final wait 0",
    make: (k) => {
      const drain = drainOf(k);
      return mapOps(k, (o) => o === drain ? [] : null);
    },
    kind: "unbalanced-cp.async",
    reportedOp: /^cpasync/,
    inLoop: true, // the pending copies are the k-loop's prefetches past K
    mismatch: false,
    // With 2 stages the k-loop's own `wait 0` already drains every group, so
    // the drain is redundant and deleting it changes nothing.
    equivalent: (stages) => stages === 2,
    // A staged epilogue writes the shared memory those copies (zero-filled
    // past K) still land in: that race is reported first.
    staged: { kind: "write-before-landed", reportedOp: /^sts/, inLoop: false },
  },
  {
    name: "(e) delete the staged epilogue's barriers",
    make: (k) => {
      if (!stagesD(k)) return null;
      return mapMainBody(k, (body, _loopAt, lastAt) => [
        ...body.slice(0, lastAt + 1),
        ...body.slice(lastAt + 1).filter((o) => o.op !== "bar"),
      ]);
    },
    kind: "race",
    reportedOp: /^(sts|lds)/,
    inLoop: false,
    mismatch: false,
  },
];

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/** The printed line range `[for, closing brace]` of the k-loop. */
/** The kernel-IR lines (1-based, exclusive) of each copy of the k-loop. */
function loopLines(text: string): [number, number][] {
  const lines = text.split("\n");
  const spans: [number, number][] = [];
  let indent = -1;
  for (let start = 0; start < lines.length; start++) {
    const l = lines[start]!;
    if (!/^\s*for /.test(l)) continue;
    const at = l.length - l.trimStart().length;
    // The k-loop copies are siblings: the first `for`'s indentation.
    if (indent < 0) indent = at;
    if (at !== indent) continue;
    const end = lines.findIndex((x, i) => i > start && x === `${" ".repeat(indent)}}`);
    assert.ok(end > start);
    spans.push([start + 1, end + 1]);
  }
  assert.ok(spans.length > 0);
  return spans;
}

function run(s: Subject, kernel: Kernel): SimulateReport {
  return simulateGemm({ ...s.ck, kernel }, s.sizes, { seed: 4242 });
}

for (const s of SUBJECTS) {
  const stages = s.ck.planned.plan.pipeline!.stages;

  Deno.test(`${s.name}: the unmutated kernel has no hazard and agrees`, () => {
    const rep = run(s, s.ck.kernel);
    assert.deepEqual(rep.sim.hazards, []);
    assert.equal(rep.sim.hazardCount, 0);
    assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
    // The shape the mutants rely on.
    const ops = allOps(s.ck.kernel.body);
    const loops = ops.filter((o): o is ForOp => o.op === "for");
    // Two copies of the k-loop when the epilogue reads C (prefetched between them).
    assert.equal(loops.length, s.ck.gemm.epilogue.views.length > 0 ? 2 : 1);
    for (const loop of loops) {
      const waits = allOps(loop.body).filter((o) => o.op === "wait");
      assert.deepEqual(waits.map((o) => o.op === "wait" && o.n), [stages - 2]);
      assert.equal(allOps(loop.body).filter((o) => o.op === "bar").length, 1);
    }
  });

  for (const m of MUTANTS) {
    const mutant = m.make(s.ck.kernel, stages);
    if (mutant === null) continue;
    if (m.equivalent?.(stages)) {
      Deno.test(`${s.name}: mutant "${m.name}" is equivalent here: no hazard, agrees`, () => {
        assert.notEqual(printKernel(mutant), s.ck.kernelText, "the mutation changed nothing");
        const rep = run(s, mutant);
        assert.deepEqual(rep.sim.hazards, []);
        assert.ok(rep.ok);
      });
      continue;
    }
    const e = m.staged !== undefined && stagesD(s.ck.kernel) ? { ...m, ...m.staged } : m;
    Deno.test(`${s.name}: mutant "${m.name}" is reported as ${e.kind}`, () => {
      const text = printKernel(mutant);
      assert.notEqual(text, s.ck.kernelText, "the mutation changed nothing");
      const rep = run(s, mutant);
      assert.ok(!rep.ok, "the mutant passed");
      const kinds = [...new Set(rep.sim.hazards.map((h) => h.kind))];
      const h = rep.sim.hazards.find((x) => x.kind === e.kind);
      assert.ok(h !== undefined, `no ${e.kind} hazard; got ${JSON.stringify(kinds)}`);
      // The reported kernel-IR line is the op, as printKernel prints the mutant.
      const lines = text.split("\n");
      assert.equal(lines[h.line - 1]?.trim(), h.op, `line ${h.line}`);
      assert.match(h.op, e.reportedOp);
      if (e.inLoop !== null) {
        const spans = loopLines(text);
        assert.equal(
          spans.some(([a, b]) => h.line > a && h.line < b),
          e.inLoop,
          `line ${h.line} vs k-loop ${JSON.stringify(spans)}`,
        );
      }
      assert.ok(h.count > 0 && h.message.length > 0);
      if (m.mismatch) assert.ok(!rep.comparison.ok, "expected a mismatch too");
      console.log(`  ${e.kind} at kernel-IR line ${h.line}: ${h.op}  (${h.message})`);
    });
  }
}
