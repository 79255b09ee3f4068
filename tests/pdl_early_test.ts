/**
 * The compile option `pdlEarly` (compiler.ts): tensors the previous grid does not write (an
 * LLM's weights) may be read before `griddep.wait`. With B named, sm90's TMA producer arms the
 * first stages of its block's first tile and copies B's boxes into them before its wait (each
 * role then waits on its own), and the cp.async main loops issue their prologue's copies of B
 * before it (unless their copies of it stream with `evict_first`, as the skinny tiles' B does by
 * default). Checked on lowered kernels of every form the llm shapes reach (sm80's cp.async
 * skinny tile, TMA one block a tile, persistent on clusters of 2, persistent without), under the
 * Stream-K, ping-pong and split-K schedules, and with A named too: the simulator agrees at odd
 * sizes with no hazard; the same kernel with the wait's `early` list emptied is reported
 * (`global-before-griddep-wait`: its B copies come first), as is one whose wait names the output
 * and comes after its stores (a write is never allowed early). Without the option the kernel is
 * what it was; the option's misuses are refused.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel, type CompileOptions } from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import type { Kernel, Op } from "../ir/kernel.ts";
import { allOps, mapOps } from "./_kernel_ops.ts";
import { printPtx } from "../backends/ptx/mod.ts";
import { cSource } from "../backends/aot/c.ts";
import { pythonModule } from "../backends/aot/python.ts";
import { earlyDecisions } from "../passes/lower/early.ts";
import { withSchedule } from "../bench/gpu_bench.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";

const SOURCE = Deno.readTextFileSync(new URL("../examples/bf16_gemm.gemm", import.meta.url));

/** bf16_gemm's roles: X [Rows, Inner] is A, W [Cols, Inner] (a column-major B) the weights. */
const decode = (Rows: number) => ({ Rows, Cols: 4096, Inner: 4096 });

/** bf16_gemm on 128x32 tiles: the default of 8-bit types at M = 65-128 (passes/skinny.ts), a
 * schedule line for 16-bit ones, whose box of W is a fifth of the stage. */
const SOURCE_128X32 = withSchedule(SOURCE, "threadblock 128x32x64");

function compiled(options: CompileOptions, source = SOURCE): CompiledKernel {
  const r = compile(source, { target: "sm90", sms: 132, ...options });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/** One kernel form: its size hints (none: the default tile), what is read early, and the sizes
 * it is simulated at (odd: K not a multiple of the k-tile, M not of the tile). */
interface Subject {
  readonly name: string;
  readonly hints?: Record<string, number>;
  readonly early: string[];
  readonly sizes: Record<string, number>;
  /** The kernel's form, as its text says. */
  readonly form: RegExp;
  /** A schedule line added to the source (absent: none). */
  readonly schedule?: string;
}

const SUBJECTS: Subject[] = [
  {
    // B evict_normal: the tile's default evict_first keeps W after the wait (see below).
    name: "sm80's cp.async skinny tile (M = 16), cache_b evict_normal",
    hints: decode(16),
    early: ["W"],
    sizes: { Rows: 7, Cols: 136, Inner: 328 },
    form: /threads 128,.*grid tiles 16x32/,
    schedule: "cache_b evict_normal",
  },
  {
    name: "TMA 64x32, one block a tile (M = 64)",
    hints: decode(64),
    early: ["W"],
    sizes: { Rows: 33, Cols: 136, Inner: 528 },
    form: /grid tiles 64x32/,
  },
  {
    // X's box is four fifths of this tile's stage; W's fifth is not read early (see below).
    name: "TMA 128x32, one block a tile (M = 128, its schedule line), A early",
    hints: decode(128),
    early: ["X"],
    sizes: { Rows: 100, Cols: 136, Inner: 528 },
    form: /grid tiles 128x32/,
    schedule: "threadblock 128x32x64",
  },
  {
    name: "persistent 64x64 on clusters of 2 (M = 128, K = 4096), B evict_first",
    hints: decode(128),
    early: ["W"],
    sizes: { Rows: 100, Cols: 136, Inner: 528 },
    form: /grid tiles 64x64[^]*createpolicy\.L2::evict_first[^]*sreg nctaid\.x/,
  },
  {
    name: "persistent 64x64 on clusters of 2 (M = 128, K = 14336)",
    hints: { Rows: 128, Cols: 4096, Inner: 14336 },
    early: ["W"],
    sizes: { Rows: 100, Cols: 136, Inner: 528 },
    form: /grid tiles 64x64[^]*sreg nctaid\.x/,
  },
  {
    name: "persistent 128x256 (the default tile), A and B early",
    early: ["W", "X"],
    sizes: { Rows: 33, Cols: 136, Inner: 200 },
    form: /grid tiles 128x256[^]*sreg nctaid\.x/,
  },
  {
    name: "TMA 64x32, A alone early",
    hints: decode(64),
    early: ["X"],
    sizes: { Rows: 33, Cols: 136, Inner: 528 },
    form: /grid tiles 64x32/,
  },
  ...["scheduler stream_k", "scheduler pingpong", "split_k 3"].map((schedule) => ({
    name: `${schedule} (TMA)`,
    early: ["W"],
    sizes: { Rows: 300, Cols: 520, Inner: 1000 },
    form: /threads 384/,
    schedule,
  })),
];

function subjectKernel(s: Subject): CompiledKernel {
  const source = s.schedule === undefined ? SOURCE : withSchedule(SOURCE, s.schedule);
  const r = compile(source, {
    target: "sm90",
    sms: 132,
    ...(s.hints !== undefined ? { sizeHints: s.hints } : {}),
    pdl: true,
    pdlEarly: s.early,
  });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

const isWait = (o: Op) => o.op === "griddep" && o.action === "wait";

for (const s of SUBJECTS) {
  Deno.test(`pdlEarly: ${s.name}: early copies before the wait, agrees with no hazard`, () => {
    const ck = subjectKernel(s);
    assert.match(ck.kernelText, s.form);
    const waits = allOps(ck.kernel.body).filter(isWait);
    assert.ok(waits.length >= 1);
    for (const w of waits) {
      assert.ok(w.op === "griddep");
      assert.deepEqual([...(w.early ?? [])].sort(), [...s.early].sort());
    }
    // The early copies come first in program order: the wait follows their comment.
    const text = ck.kernelText;
    const copies = text.search(/before the wait/);
    assert.ok(copies >= 0 && copies < text.indexOf("griddep.wait"), text.slice(0, 2000));
    // The L2 prefetch of B stays only where B is not copied early.
    assert.equal(/asked of the L2/.test(text), !s.early.includes("W") && /cp\.async/.test(text));
    const rep = simulateGemm(ck, s.sizes, { seed: 41 });
    assert.deepEqual(rep.sim.hazards, []);
    assert.ok(rep.ok);
  });

  Deno.test(`pdlEarly: ${s.name}: without the wait's early list, the copies are reported`, () => {
    const ck = subjectKernel(s);
    const body = mapOps(ck.kernel.body, (o) => (isWait(o) ? { op: "griddep", action: "wait" } : o));
    const rep = simulateGemm({ ...ck, kernel: { ...ck.kernel, body } }, s.sizes, { seed: 41 });
    const h = rep.sim.hazards.find((x) => x.kind === "global-before-griddep-wait");
    assert.ok(h !== undefined, JSON.stringify(rep.sim.hazards.map((x) => x.kind)));
    assert.match(h.op, /\b(tma|cpasync)\b/);
  });
}

Deno.test("pdlEarly: a write before the wait is reported even where the wait names its tensor", () => {
  const s = SUBJECTS[1]!;
  const ck = subjectKernel(s);
  const body = mapOps(ck.kernel.body, (o) => (isWait(o) ? null : o));
  const late: Op = { op: "griddep", action: "wait", early: ["W", "X", "Y"] };
  const mutant: Kernel = { ...ck.kernel, body: [...body, late] };
  const rep = simulateGemm({ ...ck, kernel: mutant }, s.sizes, { seed: 41 });
  const h = rep.sim.hazards.find((x) => x.kind === "global-before-griddep-wait");
  assert.ok(h !== undefined, JSON.stringify(rep.sim.hazards.map((x) => x.kind)));
  assert.match(h.message, /global store/);
});

/** bf16_gemm with B's copies at the L2's normal priority (the skinny tiles stream it). */
const SOURCE_NORMAL_B = withSchedule(SOURCE, "cache_b evict_normal");

Deno.test("pdlEarly: without it, or with pdl alone, the kernel is what it was", () => {
  for (const hints of [decode(16), decode(64), undefined]) {
    const h = hints === undefined ? {} : { sizeHints: hints };
    const compiled_ = (o: CompileOptions) =>
      compiled(o, hints?.Rows === 16 ? SOURCE_NORMAL_B : SOURCE);
    const plain = compiled_({ ...h, pdl: true });
    const empty = compiled_({ ...h, pdl: true, pdlEarly: [] });
    assert.equal(printPtx([empty.kernel]), printPtx([plain.kernel]));
    assert.doesNotMatch(plain.kernelText, /before the wait|early/);
    // Named early, the same schedule: only the order of the copies and waits changes.
    const early = compiled_({ ...h, pdl: true, pdlEarly: ["W"] });
    assert.equal(early.kernelText.split("\n")[1], plain.kernelText.split("\n")[1]);
    assert.notEqual(printPtx([early.kernel]), printPtx([plain.kernel]));
  }
});

Deno.test("pdlEarly: a TMA box under a quarter of the stage is not read early", () => {
  // 128x32 (M = 65-128): W's box is a fifth of the stage (bench/NOTES.md 86: it lost there).
  const h = { sizeHints: decode(128) };
  const plain = compiled({ ...h, pdl: true }, SOURCE_128X32);
  const early = compiled({ ...h, pdl: true, pdlEarly: ["W"] }, SOURCE_128X32);
  assert.match(early.kernelText, /grid tiles 128x32/);
  assert.equal(printPtx([early.kernel]), printPtx([plain.kernel]));
  assert.deepEqual(early.manifest.pdl, { early: [] });
  // The other side of the bound (EARLY_MIN_STAGE_SHARE): 64x32's W box, 4 of its stage's 12 KB,
  // is read early.
  const third = compiled({ sizeHints: decode(64), pdl: true, pdlEarly: ["W"] });
  assert.match(third.kernelText, /grid tiles 64x32/);
  assert.deepEqual(third.manifest.pdl, { early: ["W"] });
});

Deno.test("pdlEarly: a cp.async kernel whose copies of W stream evict_first reads W after the wait", () => {
  // The skinny tile's default B evict_first (passes/skinny.ts SKINNY_STREAMED_B): early copies
  // lost to the L2 prefetch (bench/NOTES.md 94), so the option is declined with a note.
  const h = { sizeHints: decode(16) };
  const plain = compiled({ ...h, pdl: true });
  const early = compiled({ ...h, pdl: true, pdlEarly: ["W"] });
  assert.match(early.kernelText, /grid tiles 16x32[^]*createpolicy\.L2::evict_first/);
  assert.equal(printPtx([early.kernel]), printPtx([plain.kernel]));
  assert.deepEqual(early.manifest.pdl, { early: [] });
  assert.match(earlyDecisions(early.planned)[0]!.why, /evict_first.*NOTES\.md 94/);
  // The schedule's own evict_first keeps it after the wait too; evict_last does not.
  const own = (p: string) =>
    compiled(
      { ...h, pdl: true, pdlEarly: ["W"] },
      withSchedule(SOURCE, `cache_b ${p}`),
    ).manifest.pdl;
  assert.deepEqual(own("evict_first"), { early: [] });
  assert.deepEqual(own("evict_last"), { early: ["W"] });
});

Deno.test("pdlEarly: earlyDecisions says what the manifest lists, for every form and refusal", () => {
  const read = (f: string) => Deno.readTextFileSync(new URL(`../examples/${f}`, import.meta.url));
  const forms: [string, CompiledKernel, string[], RegExp][] = [
    ...SUBJECTS.map((s): [string, CompiledKernel, string[], RegExp] => [
      s.name,
      subjectKernel(s),
      s.early,
      /copied before the wait/,
    ]),
    [
      "the skinny tile, W evict_first",
      compiled({ sizeHints: decode(16), pdl: true, pdlEarly: ["W"] }),
      ["W"],
      /stream with evict_first/,
    ],
    [
      "128x32, W",
      compiled({ sizeHints: decode(128), pdl: true, pdlEarly: ["W"] }, SOURCE_128X32),
      ["W"],
      /0\.20 of a stage/,
    ],
    ["grouped", one(read("moe.gemm")), ["W"], /grouped kernel/],
    ["sparse", one(read("sparse.gemm")), ["W"], /its first stages are copied before the wait/],
  ];
  for (const [name, k, named, why] of forms) {
    const d = earlyDecisions(k.planned);
    assert.deepEqual(d.map((x) => x.tensor).sort(), [...named].sort(), name);
    const early = d.filter((x) => x.early).map((x) => x.tensor).sort();
    // The manifest lists a sparse A's metadata words with it (W_meta with W).
    const listed = (k.manifest.pdl?.early ?? []).filter((t) =>
      t !== "W_meta" || !early.includes("W")
    );
    assert.deepEqual(early, [...listed].sort(), name);
    for (const x of d) assert.match(x.why, why, name);
  }
  // sm80: no wait at all, so no manifest pdl, and the decision says why.
  const r = compile(SOURCE, { target: "sm80", pdl: true, pdlEarly: ["W"] });
  assert.equal(r.kernels[0]!.manifest.pdl, undefined);
  assert.match(earlyDecisions(r.kernels[0]!.planned)[0]!.why, /sm80 has no griddepcontrol/);
});

/** The one kernel of `src` compiled for sm90 with pdl and W early. */
function one(src: string): CompiledKernel {
  const r = compile(src, { target: "sm90", pdl: true, pdlEarly: ["W"] });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

/** examples/sparse.gemm: W (A, pruned 2:4) is the weights, X (B) the activations. */
const SPARSE = Deno.readTextFileSync(new URL("../examples/sparse.gemm", import.meta.url));

for (const early of [["W"], ["X"], ["W", "X"]]) {
  // W's metadata words (W_meta) travel with its kept values.
  const listed = early.includes("W") ? [...early, "W_meta"] : early;
  Deno.test(`pdlEarly: a sparse kernel reads ${listed.join(", ")} before the wait`, () => {
    const r = compile(SPARSE, { target: "sm90", pdl: true, pdlEarly: early });
    assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
    const ck = r.kernels[0]!;
    assert.deepEqual(ck.manifest.pdl, { early: listed });
    // The words are loaded (ld.global) before the wait exactly where W is read early.
    const beforeWait = ck.kernelText.slice(0, ck.kernelText.indexOf("griddep.wait"));
    assert.equal(/= ldg\.b32/.test(beforeWait), early.includes("W"));
    const text = ck.kernelText;
    const roles = early.map((t) => (t === "W" ? "A" : "B")).join(" and ");
    const copies = text.indexOf(`k-tiles of ${roles} before the wait`);
    assert.ok(copies >= 0 && copies < text.indexOf("griddep.wait"), text.slice(0, 3000));
    // Odd sizes: M and N not multiples of the tile, K not of the k-tile.
    for (const sizes of [{ M: 33, N: 72, K: 208 }, { M: 7, N: 40, K: 80 }]) {
      const rep = simulateGemm(ck, sizes, { seed: 43 });
      assert.deepEqual(rep.sim.hazards, []);
      assert.ok(rep.ok);
      // Without the wait's early list the early copies are reported; without W_meta in it, the
      // words' loads.
      const without = (drop: (t: string) => boolean) => {
        const wait: Op = { op: "griddep", action: "wait", early: listed.filter((t) => !drop(t)) };
        const body = mapOps(ck.kernel.body, (o) => (isWait(o) ? wait : o));
        const rep = simulateGemm({ ...ck, kernel: { ...ck.kernel, body } }, sizes, { seed: 43 });
        return rep.sim.hazards.filter((x) => x.kind === "global-before-griddep-wait");
      };
      const bare = without(() => true);
      assert.ok(bare.some((x) => /\bcpasync\b/.test(x.op)), JSON.stringify(bare.map((x) => x.op)));
      if (early.includes("W")) {
        const noMeta = without((t) => t === "W_meta");
        assert.ok(noMeta.length > 0, "the words' loads before the wait are not reported");
        for (const x of noMeta) assert.match(x.op, /\bldg\b/);
      }
    }
  });

  ptxasTest(
    `pdlEarly: a sparse kernel, ${early.join(" and ")} early: ptxas, no spills`,
    async (ptxas) => {
      const r = compile(SPARSE, { target: "sm90", pdl: true, pdlEarly: early });
      assert.ok(r.ok);
      const res = await runPtxas(r.kernels[0]!.ptx, { arch: "sm_90a", ptxasPath: ptxas });
      assert.ok(res.ok, res.log);
      for (const k of res.kernels) assert.equal(k.spillStoreBytes + k.spillLoadBytes, 0, k.name);
    },
  );
}

Deno.test("pdlEarly: misuses are refused", () => {
  const c = (o: CompileOptions) => () => compile(SOURCE, { target: "sm90", ...o });
  assert.throws(c({ pdlEarly: ["W"] }), /pdlEarly needs pdl/);
  assert.throws(c({ pdl: true, pdlEarly: ["Y"] }), /"Y" is a kernel's output/);
  assert.throws(c({ pdl: true, pdlEarly: ["V"] }), /"V" is no input tensor/);
  // A target without griddepcontrol compiles it to nothing, as pdl.
  const r = compile(SOURCE, { target: "sm80", pdl: true, pdlEarly: ["W"] });
  assert.ok(r.ok);
  assert.doesNotMatch(r.kernels[0]!.kernelText, /griddep|before the wait/);
});

Deno.test("pdlEarly: the manifest, the C header and the Python docstring say what is read early", () => {
  const early = compiled({ sizeHints: decode(64), pdl: true, pdlEarly: ["W"] });
  const waits = compiled({ sizeHints: decode(64), pdl: true });
  const plain = compiled({ sizeHints: decode(64) });
  assert.deepEqual(early.manifest.pdl, { early: ["W"] });
  assert.deepEqual(waits.manifest.pdl, { early: [] });
  assert.equal(plain.manifest.pdl, undefined);
  // sm80 has no griddepcontrol: pdl compiles to nothing, and the manifest says so.
  const sm80 = compile(SOURCE, { target: "sm80", pdl: true, pdlEarly: ["W"] }).kernels[0]!;
  assert.equal(sm80.manifest.pdl, undefined);
  const one = (s: string) => s.replace(/\s*\n\s*(\* |# )?/g, " ");
  const c = one(cSource([early]));
  assert.match(
    c,
    /reads W before the wait \(pdlEarly\): after gemmc_set_pdl\(1\) the grid before it must not write W\./,
  );
  assert.match(one(cSource([waits])), /Compiled with pdl: it waits/);
  assert.match(one(cSource([plain])), /Compiled without pdl: it does not wait/);
  const py = one(pythonModule([early]));
  assert.match(
    py,
    /reads W before the wait \(pdlEarly\): after pdl=True the grid before it must not write W\./,
  );
  assert.match(one(pythonModule([plain])), /Compiled without pdl/);
});
