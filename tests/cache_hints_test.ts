/**
 * L2 cache-eviction hints for the operands' copies (schedule keys `cache_a`, `cache_b`;
 * passes/lower/cache_hints.ts). On real lowered kernels of every kernel form that copies A and B
 * (mma.sync, split-K, grouped, sparse, SIMT through registers, synchronous 2-byte copies of
 * operands aligned to one element, cp.async before the PDL wait; on
 * sm90 the TMA pipeline one block a tile and persistent, clusters along M and N, Stream-K,
 * ping-pong, boxes before the PDL wait, and the grouped cp.async wgmma loop):
 *
 * - one `createpolicy` a hinted operand, of its priority, at the kernel's top level (before any
 *   copy, outside every loop and branch);
 * - every copy of a hinted operand (`cp.async`, TMA box, 16-, 2- or 1-byte `ld.global`, a sparse
 *   A's metadata words) carries that
 *   operand's policy register, and no copy of the other operand, nor any other load, carries one
 *   (an operand's copies are told apart by the tensor their source address is computed from);
 * - the simulator agrees with the reference at odd sizes with no hazard, and bit for bit with the
 *   same kernel without the keys;
 * - ptxas assembles the hinted PTX (sm_80, or sm_90a) with no spills.
 *
 * Without the keys a kernel has no `createpolicy` and no `.L2::cache_hint`.
 */

import assert from "node:assert/strict";
import {
  compile,
  type CompiledKernel,
  type CompileOptions,
  formatDiagnostics,
} from "../compiler.ts";
import { simulateGemm } from "../harness/simulate_gemm.ts";
import { simulateGrouped } from "../harness/simulate_grouped.ts";
import type { CachePolicy } from "../ir/cache_policy.ts";
import { operandView, sparseMetaParam } from "../ir/gemm.ts";
import { type Kernel, type Op, opRegs, type Reg, walkOps } from "../ir/kernel.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxTarget } from "../backends/ptx/print.ts";
import { explainSchedules } from "../cli/explain.ts";
import { SimError, type SimResult } from "../backends/sim/mod.ts";
import { ptxasTest } from "./_ptxas.ts";

const EXAMPLES = new URL("../examples/", import.meta.url);

/** A TN f16 GEMM (A row-major, B column-major) with schedule lines. */
const F16 = (lines: readonly string[] = []) =>
  `kernel h {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  D: f32[M, N] row\n` +
  `  D[m, n] = A[m, k] * B[k, n]\n  schedule {\n${lines.map((l) => `    ${l}\n`).join("")}  }\n}\n`;

/** SIMT f32 with a row-major A: A is transposed through registers (16-byte ld.global). */
const SIMT = `kernel s {\n  A: f32[M, K] row\n  B: f32[K, N] col\n  D: f32[M, N] row\n` +
  `  D[m, n] = A[m, k] * B[k, n]\n  schedule {\n    math f32\n  }\n}\n`;

const example = (name: string) => Deno.readTextFileSync(new URL(`${name}.gemm`, EXAMPLES));

/** One kernel form: its source, options, and the sizes (or a grouped kernel's problems) it is
 * simulated at (odd: M and N not multiples of the tile, K not of the k-tile). */
interface Subject {
  readonly name: string;
  readonly src: string;
  readonly options: CompileOptions;
  readonly sizes: Record<string, number> | Record<string, number>[];
  /** What makes the kernel the form it claims to be. */
  readonly is: (ck: CompiledKernel) => boolean;
  /** The hints of "B alone" and "both" where B_ONLY and BOTH would change the form. */
  readonly hints?: { readonly bOnly: Hints; readonly both: Hints };
}

const tma = (ck: CompiledKernel) => ck.planned.plan.pipeline!.tma;
const sm90 = { target: "sm90", sms: 132 } as const;

const SUBJECTS: readonly Subject[] = [
  {
    name: "sm80 mma.sync",
    src: F16(),
    options: {},
    sizes: { M: 33, N: 72, K: 200 },
    is: (ck) => ck.kernel.target === "sm80" && ck.planned.plan.pipeline!.a.async,
  },
  {
    name: "sm80 split-K",
    src: example("splitk"),
    options: {},
    sizes: { M: 33, N: 72, K: 520 },
    is: (ck) => ck.planned.plan.tile!.splitK === 4,
  },
  {
    name: "sm80 grouped",
    src: example("moe"),
    options: {},
    sizes: [{ M: 33, N: 72, K: 64 }, { M: 0, N: 64, K: 64 }, { M: 7, N: 136, K: 40 }],
    is: (ck) => ck.kernel.group !== undefined,
  },
  {
    name: "sm80 sparse A (kept values by cp.async, metadata by ld.global)",
    src: example("sparse"),
    options: {},
    sizes: { M: 33, N: 72, K: 208 },
    is: (ck) => ck.planned.plan.pipeline!.meta !== undefined,
  },
  {
    name: "sm80, operands aligned to 1 element (synchronous 2-byte loads and stores)",
    src: example("align1"),
    options: {},
    sizes: { M: 33, N: 71, K: 203 },
    is: (ck) => !ck.planned.plan.pipeline!.a.async && !ck.planned.plan.pipeline!.b.async,
  },
  {
    name: "sm80 SIMT, A transposed through registers",
    src: SIMT,
    options: {},
    sizes: { M: 33, N: 72, K: 52 },
    is: (ck) => ck.planned.plan.pipeline!.a.viaRegisters === true,
  },
  {
    name: "sm90 mma.sync, B's prologue copies before the PDL wait",
    src: example("hgemm"),
    options: { ...sm90, pdl: true, pdlEarly: ["B"] },
    sizes: { M: 33, N: 72, K: 200 },
    is: (ck) => tma(ck) === undefined && /griddep\.wait early B/.test(ck.kernelText),
    // B evict_first keeps a cp.async kernel's copies of B after the wait
    // (passes/lower/early.ts EARLY_STREAMED_WHY): B evict_last keeps them before it.
    hints: { bOnly: { B: "evict_last" }, both: { A: "evict_first", B: "evict_last" } },
  },
  {
    name: "sm90 TMA, one block a tile",
    src: F16(["scheduler tiles"]),
    options: sm90,
    sizes: { M: 33, N: 72, K: 200 },
    is: (ck) => tma(ck) !== undefined && tma(ck)!.persistent === undefined,
  },
  {
    name: "sm90 TMA persistent (bf16_gemm: X and W)",
    src: example("bf16_gemm"),
    options: sm90,
    sizes: { Rows: 33, Cols: 136, Inner: 200 },
    is: (ck) => tma(ck)?.persistent !== undefined && tma(ck)!.cluster === undefined,
  },
  {
    name: "sm90 TMA, clusters of 2 along M (B multicast)",
    src: F16(["cluster 2"]),
    options: sm90,
    sizes: { M: 200, N: 72, K: 200 },
    is: (ck) => tma(ck)?.cluster === 2 && tma(ck)!.clusterAxis !== "n",
  },
  {
    name: "sm90 TMA, clusters of 2 along N (A multicast)",
    src: F16(["cluster 1x2"]),
    options: sm90,
    sizes: { M: 33, N: 520, K: 200 },
    is: (ck) => tma(ck)?.clusterAxis === "n",
  },
  {
    name: "sm90 TMA Stream-K",
    src: F16(["scheduler stream_k"]),
    options: sm90,
    sizes: { M: 200, N: 520, K: 1000 },
    is: (ck) => tma(ck)?.persistent?.streamK !== undefined,
  },
  {
    name: "sm90 TMA ping-pong",
    src: F16(["scheduler pingpong"]),
    options: sm90,
    sizes: { M: 200, N: 520, K: 200 },
    is: (ck) => tma(ck)?.persistent?.pingPong !== undefined,
  },
  {
    name: "sm90 TMA split-K",
    src: example("splitk"),
    options: sm90,
    sizes: { M: 33, N: 72, K: 520 },
    is: (ck) => tma(ck) !== undefined && ck.planned.plan.tile!.splitK === 4,
  },
  {
    name: "sm90 TMA, W's boxes before the PDL wait",
    src: example("bf16_gemm"),
    options: { ...sm90, pdl: true, pdlEarly: ["W"] },
    sizes: { Rows: 33, Cols: 136, Inner: 200 },
    is: (ck) => tma(ck) !== undefined && /griddep\.wait early W/.test(ck.kernelText),
  },
  {
    name: "sm90 grouped (cp.async wgmma)",
    src: example("moe"),
    options: sm90,
    sizes: [{ M: 33, N: 72, K: 64 }, { M: 0, N: 64, K: 64 }, { M: 7, N: 136, K: 40 }],
    is: (ck) => ck.planned.plan.tile!.wgmma === true && tma(ck) === undefined,
  },
];

/** The hints a test compiles with, by operand. */
type Hints = Partial<Record<"A" | "B", CachePolicy>>;

const B_ONLY: Hints = { B: "evict_first" };
const BOTH: Hints = { A: "evict_last", B: "evict_first" };
const bOnly = (s: Subject) => s.hints?.bOnly ?? B_ONLY;
const both = (s: Subject) => s.hints?.both ?? BOTH;

/** `src` with the hints' schedule lines added to every kernel (a second schedule block). */
function hinted(src: string, hints: Hints): string {
  const lines = [
    ...(hints.A === undefined ? [] : [`    cache_a ${hints.A}`]),
    ...(hints.B === undefined ? [] : [`    cache_b ${hints.B}`]),
  ];
  return src.replace(/(kernel \w+( grouped)? \{\n)/g, `$1  schedule {\n${lines.join("\n")}\n  }\n`);
}

function compiled(s: Subject, hints: Hints): CompiledKernel {
  const src = hinted(s.src, hints);
  const r = compile(src, { file: "t.gemm", ...s.options });
  assert.ok(r.ok, formatDiagnostics(r.diagnostics, src));
  assert.equal(r.kernels.length, 1);
  const ck = r.kernels[0]!;
  assert.ok(s.is(ck), `${s.name}: the kernel is not of its form`);
  return ck;
}

/**
 * The tensors a register's value is computed from: the tensor parameters its writers read, back
 * to the `param` operations; a grouped kernel's tensor addresses are the `ld.global`s of their
 * problem-table field.
 */
function tensorsOf(k: Kernel, reg: Reg): Set<string> {
  const writers = new Map<number, Op[]>();
  walkOps(k.body, (o) => {
    for (const w of opRegs(o).writes) writers.set(w.id, [...(writers.get(w.id) ?? []), o]);
  });
  const tensors = new Set(k.params.filter((p) => p.kind === "tensor").map((p) => p.name));
  const out = new Set<string>();
  const seen = new Set<number>();
  const visit = (r: Reg) => {
    if (seen.has(r.id)) return;
    seen.add(r.id);
    for (const o of writers.get(r.id) ?? []) {
      if (o.op === "param" && tensors.has(o.name)) out.add(o.name);
      const field = o.op === "ldg" ? k.group?.fields.find((f) => f.offset === o.offset) : undefined;
      if (field !== undefined) {
        if (field.kind === "tensor") out.add(field.name);
        continue;
      }
      for (const x of opRegs(o).reads) visit(x);
    }
  };
  visit(reg);
  return out;
}

/** A global -> shared copy, or a global load, and the operand it reads (null: neither). */
interface Copy {
  readonly op: Op;
  readonly role: "A" | "B" | null;
  readonly policy: Reg | undefined;
}

function copies(ck: CompiledKernel): Copy[] {
  const k = ck.kernel;
  // A sparse A's metadata words are A's copies too.
  const meta = sparseMetaParam(ck.planned)?.name;
  const roleOf = (tensors: ReadonlySet<string>): "A" | "B" | null => {
    const a = tensors.has(operandView(ck.planned, "A").tensor) ||
      (meta !== undefined && tensors.has(meta));
    const b = tensors.has(operandView(ck.planned, "B").tensor);
    assert.ok(!(a && b), "a copy whose source is computed from both operands");
    return a ? "A" : b ? "B" : null;
  };
  const out: Copy[] = [];
  walkOps(k.body, (o) => {
    if (o.op === "cpasync" || o.op === "ldg") {
      out.push({
        op: o,
        role: roleOf(tensorsOf(k, o.op === "cpasync" ? o.src : o.addr)),
        policy: o.policy,
      });
    } else if (o.op === "tma") {
      const map = k.params.find((p) => p.name === o.map)!.tmap!;
      out.push({ op: o, role: roleOf(new Set([map.tensor])), policy: o.policy });
    }
  });
  return out;
}

/** The kernel's createpolicy operations, each with whether it lies inside a loop or branch. */
function policies(k: Kernel): { dst: Reg; priority: CachePolicy; nested: boolean }[] {
  const out: { dst: Reg; priority: CachePolicy; nested: boolean }[] = [];
  walkOps(k.body, (o, path) => {
    if (o.op === "createpolicy") {
      out.push({ dst: o.dst, priority: o.priority, nested: path.length > 0 });
    }
  });
  return out;
}

/** Checks the lowering of `hints`: one policy an operand, at the top, on each of its copies. */
function assertHinted(ck: CompiledKernel, hints: Hints): void {
  const ps = policies(ck.kernel);
  assert.equal(ps.length, Object.keys(hints).length, ck.kernelText.slice(0, 2000));
  assert.ok(ps.every((p) => !p.nested), "a createpolicy inside a loop or branch");
  const cs = copies(ck);
  const operands = cs.filter((c) => c.role !== null);
  for (const role of ["A", "B"] as const) {
    const mine = operands.filter((c) => c.role === role);
    assert.ok(mine.length > 0, `no copy of ${role}`);
    const want = hints[role];
    const p = want === undefined ? undefined : ps.find((x) => x.priority === want);
    if (want !== undefined) assert.ok(p !== undefined, `no createpolicy ${want} for ${role}`);
    // Every copy of the operand, a sparse A's metadata words and 1- or 2-byte loads included.
    for (const c of mine) assert.equal(c.policy, p?.dst, `${role}'s copy ${JSON.stringify(c.op)}`);
  }
  for (const c of cs.filter((x) => x.role === null)) assert.equal(c.policy, undefined);
  // Distinct policies for distinct operands.
  assert.equal(new Set(ps.map((p) => p.dst.id)).size, ps.length);
}

/** Simulates a subject's kernel at its sizes (random inputs, one seed): whether it agrees with
 * the reference with no hazard, its output bytes, and its statistics. */
function simulated(
  ck: CompiledKernel,
  s: Subject,
): { ok: boolean; output: Uint8Array[]; sim: SimResult } {
  if (Array.isArray(s.sizes)) {
    const r = simulateGrouped(ck, s.sizes, { seed: 2026 });
    return { ok: r.ok, output: r.problems.map((p) => p.output), sim: r.sim };
  }
  const r = simulateGemm(ck, s.sizes, { seed: 2026 });
  return { ok: r.ok, output: [r.output], sim: r.sim };
}

for (const s of SUBJECTS) {
  Deno.test(`cache hints: ${s.name}: cache_b alone, then both, on every copy of the operand`, () => {
    assertHinted(compiled(s, bOnly(s)), bOnly(s));
    assertHinted(compiled(s, both(s)), both(s));
    assertHinted(compiled(s, { A: "evict_normal" }), { A: "evict_normal" });
    const plain = compiled(s, {});
    assert.equal(policies(plain.kernel).length, 0);
    assert.ok(copies(plain).every((c) => c.policy === undefined));
    assert.doesNotMatch(plain.ptx, /createpolicy|cache_hint/);
  });

  Deno.test(`cache hints: ${s.name}: simulates as without them, and as the reference`, () => {
    const with_ = simulated(compiled(s, both(s)), s);
    const without = simulated(compiled(s, {}), s);
    assert.deepEqual(with_.sim.hazards, []);
    assert.ok(with_.ok && without.ok);
    // The policies were created (in every thread of every block) and read by the copies.
    assert.ok((with_.sim.stats.byKind.createpolicy ?? 0) > 0);
    assert.equal(without.sim.stats.byKind.createpolicy, undefined);
    assert.equal(with_.output.length, without.output.length);
    with_.output.forEach((o, i) => assert.deepEqual(o, without.output[i], `output ${i}`));
  });

  ptxasTest(
    `cache hints: ${s.name}: ptxas assembles the hinted kernel without spills`,
    async (ptxas) => {
      const ck = compiled(s, both(s));
      const r = await runPtxas(ck.ptx, { arch: ptxTarget(ck.kernel.target), ptxasPath: ptxas });
      assert.ok(r.ok, r.log);
      for (const k of r.kernels) {
        assert.equal(k.spillStoreBytes + k.spillLoadBytes, 0, `${k.name} spills`);
        assert.equal(k.stackFrameBytes, 0);
      }
    },
  );
}

Deno.test("cache hints: the PTX: .L2::cache_hint before the prefetch size, the policy operand last", () => {
  const sm80 = compiled(SUBJECTS[0]!, B_ONLY).ptx;
  const pol = /createpolicy\.fractional\.L2::evict_first\.b64 (%rd\d+), 1\.0;/.exec(sm80)![1]!;
  assert.match(
    sm80,
    new RegExp(
      `cp\\.async\\.cg\\.shared\\.global\\.L2::cache_hint\\.L2::128B \\[%r\\d+\\], \\[%rd\\d+\\], 16, %r\\d+, \\${pol};`,
    ),
  );
  const cluster = compiled(SUBJECTS.find((x) => x.name.includes("along M"))!, BOTH).ptx;
  assert.match(
    cluster,
    /complete_tx::bytes\.multicast::cluster\.L2::cache_hint \[%r\d+\], \[%tm1, \{[^}]*\}\], \[%r\d+\], %tmk, %rd\d+;/,
  );
  assert.match(
    cluster,
    /complete_tx::bytes\.L2::cache_hint \[%r\d+\], \[%tm1, \{[^}]*\}\], \[%r\d+\], %rd\d+;/,
  );
  const simt = compiled(SUBJECTS.find((x) => x.name.includes("SIMT"))!, { A: "evict_first" }).ptx;
  assert.match(simt, /ld\.global\.L2::cache_hint\.v4\.b32 \{[^}]*\}, \[%rd\d+\], %rd\d+;/);
});

Deno.test("cache hints: an operand aligned to less than 4 bytes, a sparse A's metadata: their loads carry it, and explain says so", () => {
  const ck = compiled(SUBJECTS.find((x) => x.name.includes("aligned to 1"))!, BOTH);
  // Each 2-byte load of A and of B with its own operand's policy, the policy operand last.
  const pol = (p: string) =>
    new RegExp(`createpolicy\\.fractional\\.L2::${p}\\.b64 (%rd\\d+), 1\\.0;`).exec(ck.ptx)![1]!;
  for (const p of [pol("evict_last"), pol("evict_first")]) {
    assert.match(
      ck.ptx,
      new RegExp(`ld\\.global\\.L2::cache_hint\\.b16 %h\\d+, \\[%rd\\d+\\], \\${p};`),
    );
  }
  assert.doesNotMatch(ck.ptx, /ld\.global\.b16/, "a 2-byte load without the hint");
  assert.match(
    explainSchedules([ck]),
    /cache_a evict_last \(A, operand A\): its 2-byte ld\.global loads \(aligned to less than 4 bytes\) carry it/,
  );
  const sparse = compiled(SUBJECTS.find((x) => x.name.includes("sparse"))!, BOTH);
  assert.match(
    explainSchedules([sparse]),
    /cache_a evict_last \(W, operand A\): its 16-byte cp\.async copies carry it \(so do the metadata words of W_meta\)/,
  );
  assert.match(
    explainSchedules([sparse]),
    /cache_b evict_first \(X, operand B\): its 16-byte cp\.async copies carry it$/m,
  );
  assert.match(sparse.ptx, /ld\.global\.L2::cache_hint\.b32 %b\d+, \[%rd\d+(\+\d+)?\], %rd\d+;/);
});

Deno.test("cache hints: a copy whose policy no createpolicy wrote is a simulator error", () => {
  for (const name of ["sm80 mma.sync", "sm90 TMA, one block a tile"]) {
    const s = SUBJECTS.find((x) => x.name === name)!;
    const ck = compiled(s, B_ONLY);
    const body = ck.kernel.body.filter((o) => o.op !== "createpolicy");
    assert.equal(body.length, ck.kernel.body.length - 1);
    assert.throws(
      () =>
        simulateGemm({ ...ck, kernel: { ...ck.kernel, body } }, s.sizes as Record<string, number>),
      (e) =>
        e instanceof SimError &&
        /^Cache policy register holds NaN: no createpolicy wrote it: at "(cpasync|tma)\.[^"]*L2::cache_hint/
          .test(e.message),
      name,
    );
  }
});
