/**
 * Programmatic dependent launch (ir/kernel_sm90.ts `GridDepOp`): every sm90 kernel compiled with
 * `pdl: true` waits once
 * (`griddep.wait`) before any thread's first global access and lets the next grid launch once
 * (`griddep.launch`) after it: after the main loop's drain in the mma.sync and cp.async wgmma
 * main loops (which also ask the L2 for B's first k-tiles before the wait), right after the
 * wait in the TMA, persistent and grouped kernels, a TMA pipeline's barrier set-up (mbarrier
 * inits, the block's or cluster's barrier) before the wait. Checked on real lowered kernels
 * of every kernel form (mma.sync, split-K, the TMA pipeline one block a tile, persistent and on
 * clusters, grouped, byte copies): the simulator agrees with no hazard at odd sizes, and a mutant whose
 * wait comes after the kernel's global accesses is reported (`global-before-griddep-wait`), as
 * is one whose prefetches lost their bounds guards. Other targets, and sm90 without `pdl`
 * (the default), get none of it: their PTX is what it was before.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, type CompileOptions } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { simulateGrouped } from "../harness/simulate_grouped.ts";
import { SimError, type SimResult } from "../backends/sim/mod.ts";
import type { Kernel, Op } from "../ir/kernel.ts";
import { allOps, mapOps } from "./_kernel_ops.ts";
import { printPtx } from "../backends/ptx/mod.ts";

const EXAMPLES = new URL("../examples/", import.meta.url);

function compileOne(file: string, options: CompileOptions, name?: string): CompiledKernel {
  const src = Deno.readTextFileSync(new URL(file, EXAMPLES));
  const r = compile(src, { file: `examples/${file}`, ...options });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return name === undefined ? r.kernels[0]! : r.kernels.find((k) => k.name === name)!;
}

/** One kernel form on sm90, and how to simulate it. */
interface Subject {
  readonly name: string;
  readonly ck: () => CompiledKernel;
  /** Sizes (an ordinary kernel) or problems (a grouped one). */
  readonly sizes: Record<string, number> | Record<string, number>[];
  /** Whether B's first k-tiles are prefetched before the wait. */
  readonly prefetch: boolean;
  /** Sizes at which the prefetches, stripped of their guards, leave the tensors (default: `sizes`). */
  readonly strippedSizes?: Record<string, number>;
  /** Whether the trigger comes after the main loop (else right after the wait). */
  readonly triggerAfterLoop: boolean;
  /** A TMA pipeline: its barriers' set-up (mbarrier inits, then the block's or the cluster's
   * barrier) comes before the wait, overlapping the previous grid's tail. */
  readonly setupBeforeWait?: boolean;
}

const DECODE = { M: 16, N: 4096, K: 4096 };

const SUBJECTS: Subject[] = [
  {
    name: "hgemm (mma.sync, reads C)",
    ck: () => compileOne("hgemm.gemm", { target: "sm90", pdl: true }),
    sizes: { M: 33, N: 72, K: 200 },
    prefetch: true,
    triggerAfterLoop: true,
  },
  {
    name: "bf16_gemm at a decode hint (mma.sync skinny tile)",
    ck: () => compileOne("bf16_gemm.gemm", { target: "sm90", sizeHints: DECODE, pdl: true }),
    sizes: { M: 7, N: 136, K: 328 },
    prefetch: true,
    triggerAfterLoop: true,
  },
  {
    name: "tf32_gemm at a decode hint (mma.sync, split-K)",
    ck: () => compileOne("tf32_gemm.gemm", { target: "sm90", sizeHints: DECODE, pdl: true }),
    sizes: { M: 1, N: 40, K: 1000 },
    prefetch: true,
    // The first k-tiles of B's last split run past K (at K = 1000 they stay inside B).
    strippedSizes: { M: 1, N: 40, K: 40 },
    triggerAfterLoop: true,
  },
  {
    name: "bf16_gemm (TMA pipeline, persistent)",
    ck: () => compileOne("bf16_gemm.gemm", { target: "sm90", pdl: true }),
    sizes: { M: 33, N: 136, K: 200 },
    prefetch: false,
    triggerAfterLoop: false,
    setupBeforeWait: true,
  },
  {
    name: "splitk (TMA pipeline, split-K workspace)",
    ck: () => compileOne("splitk.gemm", { target: "sm90", pdl: true }),
    sizes: { M: 33, N: 72, K: 520 },
    prefetch: false,
    triggerAfterLoop: false,
    setupBeforeWait: true,
  },
  {
    name: "bf16_gemm at M = 128 (TMA pipeline on clusters of 2)",
    ck: () =>
      compileOne("bf16_gemm.gemm", {
        target: "sm90",
        sizeHints: { M: 128, N: 4096, K: 4096 },
        pdl: true,
      }),
    sizes: { M: 100, N: 136, K: 200 },
    prefetch: false,
    triggerAfterLoop: false,
    setupBeforeWait: true,
  },
  {
    name: "align1 (byte copies: no prefetch)",
    ck: () => compileOne("align1.gemm", { target: "sm90", pdl: true }),
    sizes: { M: 33, N: 21, K: 37 },
    prefetch: false,
    triggerAfterLoop: true,
  },
  {
    name: "moe (grouped)",
    ck: () => compileOne("moe.gemm", { target: "sm90", pdl: true }),
    sizes: [{ M: 33, N: 72, K: 64 }, { M: 0, N: 64, K: 64 }, { M: 7, N: 136, K: 40 }],
    prefetch: false,
    triggerAfterLoop: false,
  },
];

function simulated(
  ck: CompiledKernel,
  kernel: Kernel,
  s: Subject,
): { ok: boolean; sim: SimResult } {
  const c = { ...ck, kernel };
  if (Array.isArray(s.sizes)) return simulateGrouped(c, s.sizes, { seed: 77 });
  return simulateGemm(c, s.sizes, { seed: 77 });
}

const isWait = (o: Op) => o.op === "griddep" && o.action === "wait";

for (const s of SUBJECTS) {
  Deno.test(`griddep: ${s.name}: one wait, one trigger after it, agrees with no hazard`, () => {
    const ck = s.ck();
    const ops = allOps(ck.kernel.body);
    const wait = ops.findIndex(isWait);
    const launch = ops.findIndex((o) => o.op === "griddep" && o.action === "launch");
    assert.ok(wait >= 0 && launch > wait, `wait at ${wait}, launch at ${launch}`);
    // After the main loop where the kernel has one of its own (cp.async copies before it).
    const copiesBetween = ops.slice(wait, launch).some((o) => o.op === "cpasync" || o.op === "ldg");
    assert.equal(copiesBetween, s.triggerAfterLoop);
    assert.equal(ops.filter(isWait).length, 1);
    assert.equal(ops.filter((o) => o.op === "griddep").length, 2);
    // A TMA pipeline's barrier set-up before the wait: the inits, then a barrier publishing them.
    if (s.setupBeforeWait === true) {
      const inits = ops.flatMap((o, i) => (o.op === "mbarinit" ? [i] : []));
      assert.ok(inits.length > 0 && inits.at(-1)! < wait, `inits at ${inits}, wait at ${wait}`);
      assert.ok(ops.slice(inits.at(-1)!, wait).some((o) => o.op === "bar"));
    }
    // Prefetches before the wait, in program order: B's first k-tiles.
    const text = ck.kernelText;
    const before = text.slice(0, text.indexOf("griddep.wait"));
    assert.equal(/prefetch\.L2 \[/.test(before), s.prefetch, before.slice(-400));
    assert.equal(/asked of the L2/.test(before), s.prefetch);
    const ptx = printPtx([ck.kernel]);
    assert.match(ptx, /griddepcontrol\.launch_dependents;/);
    assert.match(ptx, /griddepcontrol\.wait;/);
    const rep = simulated(ck, ck.kernel, s);
    assert.deepEqual(rep.sim.hazards, []);
    assert.ok(rep.ok);
  });

  Deno.test(`griddep: ${s.name}: a wait after the global accesses is reported`, () => {
    const ck = s.ck();
    const body = mapOps(ck.kernel.body, (o) => (isWait(o) ? null : o));
    const mutant: Kernel = { ...ck.kernel, body: [...body, { op: "griddep", action: "wait" }] };
    const rep = simulated(ck, mutant, s);
    const h = rep.sim.hazards.find((x) => x.kind === "global-before-griddep-wait");
    assert.ok(h !== undefined, JSON.stringify(rep.sim.hazards.map((x) => x.kind)));
    assert.match(h.op, /\b(ldg|cpasync|tma|atom|stg)\b/);
    assert.ok(!rep.ok);
  });
}

for (const s of SUBJECTS.filter((x) => x.prefetch)) {
  Deno.test(`griddep: ${s.name}: prefetches without their guards leave the tensors`, () => {
    const ck = s.ck();
    let stripped = 0;
    const body = mapOps(ck.kernel.body, (o) => {
      if (o.op !== "prefetch" || o.guard === undefined) return o;
      stripped++;
      const { guard: _, ...unguarded } = o;
      return unguarded;
    });
    assert.ok(stripped > 0);
    assert.throws(
      () => simulated(ck, { ...ck.kernel, body }, { ...s, sizes: s.strippedSizes ?? s.sizes }),
      (e) => e instanceof SimError && /Out-of-bounds L2 prefetch/.test(e.message),
    );
  });
}

Deno.test("griddep: sm80 and sm86 kernels with pdl, and sm90 ones without, have none", () => {
  for (const target of ["sm80", "sm86"] as const) {
    const ck = compileOne("hgemm.gemm", { target, pdl: true });
    assert.doesNotMatch(ck.kernelText, /griddep/);
  }
  for (const file of ["hgemm.gemm", "bf16_gemm.gemm", "moe.gemm"]) {
    const ck = compileOne(file, { target: "sm90" });
    assert.doesNotMatch(ck.kernelText, /griddep/);
    assert.doesNotMatch(printPtx([ck.kernel]), /griddepcontrol/);
    // Nor the prefetches made for it (hgemm's C prefetch is the epilogue's own, in the loop).
    assert.doesNotMatch(ck.kernelText, /asked of the L2/);
  }
});
