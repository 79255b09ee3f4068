/**
 * The compile option `pdlTrigger` (compiler.ts): with `last-copy`, the mma.sync main loop lets
 * the next grid start (`griddep.launch`) right after it issues its last copy, `stages - 1`
 * k-tiles before the end, instead of after its drain: the loop over k-tiles is cut there (a
 * second copy of the loop runs the last k-tiles; with an epilogue that reads C, a third, after
 * C's L2 prefetch). Checked on lowered kernels of the forms it reaches: the trigger sits between
 * two loops and before the drain, the simulator agrees with no hazard and gives the default's bits
 * at odd sizes (K shorter than the cut, K not a tile multiple), ptxas assembles it;
 * `drain` (the default) and kernels of other forms are what they were; the option's misuses are
 * refused.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, type CompileOptions } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import type { Op } from "../ir/kernel.ts";
import { printPtx } from "../backends/ptx/mod.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { withSchedule } from "../bench/gpu_bench.ts";

const EXAMPLES = new URL("../examples/", import.meta.url);
const DECODE = { M: 16, N: 4096, K: 4096 };

function compileOne(file: string, options: CompileOptions, schedule?: string): CompiledKernel {
  const text = Deno.readTextFileSync(new URL(file, EXAMPLES));
  const src = schedule === undefined ? text : withSchedule(text, schedule);
  const r = compile(src, { file: `examples/${file}`, target: "sm90", pdl: true, ...options });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/** One mma.sync kernel form, the sizes it is simulated at, and its loops over k-tiles. */
const SUBJECTS: {
  name: string;
  file: string;
  options: CompileOptions;
  sizes: Record<string, number>[];
  loops: number;
  /** A schedule line added to the source. */
  schedule?: string;
}[] = [
  {
    name: "bf16_gemm at a decode hint (the skinny 16x32x256 tile)",
    file: "bf16_gemm.gemm",
    options: { sizeHints: DECODE },
    // Rows, Cols, Inner: K of 2 k-tiles (shorter than the cut), of 3 and a part, of 1.
    sizes: [
      { Rows: 7, Cols: 136, Inner: 328 },
      { Rows: 16, Cols: 72, Inner: 808 },
      { Rows: 1, Cols: 40, Inner: 40 },
    ],
    loops: 2,
  },
  {
    // W at the L2's normal priority: its default evict_first keeps W after the wait
    // (passes/lower/early.ts EARLY_STREAMED_WHY).
    name: "bf16_gemm at a decode hint with pdlEarly for W (both options together)",
    file: "bf16_gemm.gemm",
    options: { sizeHints: DECODE, pdlEarly: ["W"] },
    schedule: "cache_b evict_normal",
    sizes: [{ Rows: 9, Cols: 104, Inner: 1064 }, { Rows: 3, Cols: 40, Inner: 200 }],
    loops: 2,
  },
  {
    name: "hgemm (reads C: the trigger's cut and C's prefetch)",
    file: "hgemm.gemm",
    options: {},
    sizes: [{ M: 33, N: 72, K: 200 }, { M: 17, N: 40, K: 24 }],
    loops: 3,
  },
];

/** The body's top-level ops, with the main loop's `for`s and the trigger marked. */
function shape(ops: readonly Op[]): string[] {
  const out: string[] = [];
  const walk = (body: readonly Op[]) => {
    for (const o of body) {
      if (o.op === "for") out.push("for");
      else if (o.op === "griddep") out.push(o.action);
      else if (o.op === "wait" && o.n === 0) out.push("drain");
      else if (o.op === "if") {
        walk(o.then);
        walk(o.otherwise);
      }
    }
  };
  walk(ops);
  return out;
}

for (const s of SUBJECTS) {
  Deno.test(`pdlTrigger last-copy: ${s.name}: the trigger after the last copy, agrees with no hazard`, () => {
    const ck = compileOne(s.file, { ...s.options, pdlTrigger: "last-copy" }, s.schedule);
    const drain = compileOne(s.file, s.options, s.schedule);
    if (s.options.pdlEarly !== undefined) {
      assert.deepEqual(ck.manifest.pdl, { early: s.options.pdlEarly });
    }
    const seq = shape(ck.kernel.body);
    const launch = seq.indexOf("launch");
    const drained = seq.lastIndexOf("drain");
    assert.ok(launch > seq.indexOf("wait") && launch < drained, seq.join(" "));
    // Loops: one before the trigger, one after it; C's prefetch cuts one more.
    assert.equal(seq.filter((x) => x === "for").length, s.loops, seq.join(" "));
    assert.ok(seq.slice(0, launch).includes("for"));
    assert.ok(seq.slice(launch, drained).includes("for"));
    // The default: the trigger right after the drain, one loop fewer.
    const dseq = shape(drain.kernel.body);
    assert.equal(dseq.indexOf("launch"), dseq.lastIndexOf("drain") + 1, dseq.join(" "));
    assert.equal(dseq.filter((x) => x === "for").length, s.loops - 1);
    assert.match(ck.kernelText, /after every copy is issued: the next grid may start/);
    for (const size of s.sizes) {
      const rep = simulateGemm(ck, size, { seed: 93 });
      assert.deepEqual(rep.sim.hazards, [], JSON.stringify(size));
      assert.ok(rep.ok, JSON.stringify(size));
      // The same bits as the default's kernel.
      const base = simulateGemm(drain, size, { seed: 93 });
      assert.deepEqual(rep.output, base.output, JSON.stringify(size));
    }
  });

  ptxasTest(`pdlTrigger last-copy: ${s.name}: ptxas assembles it without spills`, async (ptxas) => {
    const ck = compileOne(s.file, { ...s.options, pdlTrigger: "last-copy" }, s.schedule);
    const r = await runPtxas(ck.ptx, { arch: "sm_90a", ptxasPath: ptxas });
    assert.ok(r.ok, r.log);
    for (const k of r.kernels) assert.equal(k.spillStoreBytes + k.spillLoadBytes, 0, k.name);
  });
}

Deno.test("pdlTrigger: drain, and kernels of other forms, are what they were", () => {
  for (
    const [file, options] of [["bf16_gemm.gemm", { sizeHints: DECODE }], [
      "hgemm.gemm",
      {},
    ]] as const
  ) {
    const plain = compileOne(file, options);
    const drain = compileOne(file, { ...options, pdlTrigger: "drain" });
    assert.equal(printPtx([drain.kernel]), printPtx([plain.kernel]), file);
  }
  // The TMA pipeline triggers right after its wait whatever the option says.
  const tma = compileOne("bf16_gemm.gemm", {});
  const tmaLast = compileOne("bf16_gemm.gemm", { pdlTrigger: "last-copy" });
  assert.ok(tma.planned.plan.pipeline!.tma !== undefined);
  assert.match(printPtx([tma.kernel]), /griddepcontrol\.launch_dependents/);
  assert.equal(printPtx([tmaLast.kernel]), printPtx([tma.kernel]));
});

Deno.test("pdlTrigger: misuses are refused", () => {
  const src = Deno.readTextFileSync(new URL("hgemm.gemm", EXAMPLES));
  assert.throws(
    () => compile(src, { target: "sm90", pdlTrigger: "last-copy" }),
    /pdlTrigger needs pdl/,
  );
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => compile(src, { target: "sm90", pdl: true, pdlTrigger: "early" as any }),
    /"drain" or "last-copy", got early/,
  );
  // Without griddepcontrol (sm80) it compiles to nothing, as pdl.
  const r = compile(src, { target: "sm80", pdl: true, pdlTrigger: "last-copy" });
  assert.ok(r.ok);
  assert.doesNotMatch(r.kernels[0]!.kernelText, /griddep/);
});
