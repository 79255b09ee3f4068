// The simulator on the real warp-specialized sm90 kernels (passes/lower/wgmma_ws.ts): a
// producer warpgroup filling a ring of stages by TMA, two consumer warpgroups running wgmma
// from it. The compiled hgemm (f16 -> f32, with C) and s8_gemm agree with the reference at
// odd sizes under every role schedule with no hazards; mutants of the compiled kernel IR (a
// release dropped or made early, a parity flipped, a wait skipped, a short expect_tx) are
// each caught.

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { gridFor, type Kernel, type Op, type Reg } from "../ir/kernel.ts";
import { tensorParam } from "../ir/gemm.ts";
import * as ir from "../ir/builder.ts";
import {
  type HazardKind,
  type RoleSchedule,
  SimError,
  type SimResult,
  simulate,
} from "../backends/sim/mod.ts";
import { randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { compareOutput } from "../harness/compare.ts";
import { simArgs } from "../harness/simulate_gemm.ts";
import { workspaceArgs } from "../harness/workspace.ts";
import { alignmentViolations } from "../harness/sizes.ts";

const SCHEDULES: readonly RoleSchedule[] = ["producer-first", "consumer-first", "alternate"];

/** An example compiled for sm90 with the default schedule (its `schedule {}` block dropped:
 * an explicit mma schedule keeps the sm80-style path). */
function compiled(file: string): CompiledKernel {
  const src = Deno.readTextFileSync(new URL(`../examples/${file}`, import.meta.url))
    .replace(/\n {2}schedule \{[\s\S]*?\n {2}\}\n/, "\n");
  const r = compile(src, { target: "sm90" });
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  assert.ok(ck.kernel.params.some((p) => p.kind === "tensormap"), `${file}: no tensor maps`);
  return ck;
}

const HGEMM = compiled("hgemm.gemm");
const S8 = compiled("s8_gemm.gemm");
/** f16 out: the epilogue stages D's tile through shared memory between named barriers. */
const F16ACC = compiled("hgemm_f16acc.gemm");

interface Run {
  readonly res: SimResult;
  /** Whether D agrees with the reference. */
  readonly agrees: boolean;
  readonly worst: string;
}

/** Simulates `kernel` (the compiled one, or a mutant of it) on random inputs (no tensor-map
 * arguments: the simulator builds the maps) and compares D with the reference. */
function run(
  ck: CompiledKernel,
  sizes: Readonly<Record<string, number>>,
  seed: number,
  schedule: RoleSchedule = "producer-first",
  kernel: Kernel = ck.kernel,
): Run {
  assert.deepEqual(alignmentViolations(ck.gemm, sizes), []);
  const args = randomArgs(ck.gemm, sizes, seed, {});
  // Stream-K's workspace (passes/lower/stream_k.ts), zeroed.
  const ws = Object.fromEntries(
    [...workspaceArgs(kernel, sizes)].map(([n, bytes]) => [n, { bytes }]),
  );
  const grid = gridFor(kernel.grid, sizes);
  const res = simulate(kernel, { grid, args: { ...simArgs(args), ...ws } }, {
    schedule,
    maxHazards: 100,
  });
  const d = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
  const cmp = compareOutput(args.tensors.get(d.name)!, d.dtype, referenceGemm(ck.gemm, args));
  return { res, agrees: cmp.ok, worst: JSON.stringify(cmp).slice(0, 300) };
}

function kinds(res: SimResult): HazardKind[] {
  return [...new Set(res.hazards.map((h) => h.kind))].sort();
}

const CASES: readonly { ck: CompiledKernel; what: string; sizes: Record<string, number> }[] = [
  { ck: HGEMM, what: "hgemm", sizes: { M: 200, N: 300, K: 520 } },
  { ck: HGEMM, what: "hgemm", sizes: { M: 129, N: 260, K: 72 } },
  { ck: F16ACC, what: "hgemm_f16acc", sizes: { M: 130, N: 264, K: 200 } },
  { ck: S8, what: "s8_gemm", sizes: { M: 131, N: 300, K: 528 } },
  { ck: S8, what: "s8_gemm", sizes: { M: 64, N: 40, K: 16 } },
];

for (const c of CASES) {
  const dims = Object.entries(c.sizes).map(([k, v]) => `${k}=${v}`).join(",");
  Deno.test(`sm90 warp-specialized ${c.what} ${dims}: agrees, no hazards, every schedule`, () => {
    const box = c.ck.kernel.params.find((p) => p.kind === "tensormap")!.tmap!.box;
    const kc = Math.ceil(c.sizes.K! / box[0]!);
    const g = c.ck.kernel.grid;
    const tiles = Math.ceil(c.sizes.M! / g.tileM) * Math.ceil(c.sizes.N! / g.tileN);
    for (const schedule of SCHEDULES) {
      const r = run(c.ck, c.sizes, 7, schedule);
      assert.deepEqual(r.res.hazards.map((h) => `${h.kind}: ${h.message}`), [], schedule);
      assert.ok(r.agrees, `${schedule}: ${r.worst}`);
      // Two boxes a k-tile and tile (the blocks past the last tile column exit at once).
      assert.equal(r.res.stats.tmaCopies, 2 * kc * tiles, schedule);
      assert.ok(r.res.stats.byKind["wgmma"]! > 0);
      assert.equal(r.res.stats.byKind["setmaxnreg"], 12 * tiles);
    }
  });
}

// ---------------------------------------------------------------------------
// Mutants of the compiled kernel IR
// ---------------------------------------------------------------------------

/** The ops of a body, rewritten: `f` gets each op and whether it is in the producer's loop
 * (the `for` holding the `tma`s) and returns its replacement (null: unchanged). */
function edit(k: Kernel, f: (o: Op, producer: boolean) => Op[] | null): Kernel {
  const go = (ops: readonly Op[], producer: boolean): Op[] =>
    ops.flatMap((o) => {
      const r = f(o, producer);
      if (r !== null) return r;
      if (o.op === "for") {
        return [{ ...o, body: go(o.body, producer || o.body.some((x) => x.op === "tma")) }];
      }
      if (o.op === "if") {
        return [{ ...o, then: go(o.then, producer), otherwise: go(o.otherwise, producer) }];
      }
      return [o];
    });
  return { ...k, body: go(k.body, false) };
}

/** The consumers' parity flipped at every wait of theirs (a new register each). */
function flipParity(k: Kernel): Kernel {
  const regs = [...k.regs];
  const out = edit(k, (o, producer) => {
    if (o.op !== "mbarwait" || producer || o.parity.kind !== "reg") return null;
    const p: Reg = { kind: "reg", id: regs.length, type: "u32" };
    regs.push(p);
    return [ir.bin("xor", "u32", p, o.parity, ir.imm(1)), { ...o, parity: p }];
  });
  return { ...out, regs };
}

/** The consumers' release of the previous stage moved before the `wgwait 1` that retires
 * the wgmmas reading it. */
function earlyRelease(k: Kernel): Kernel {
  const go = (ops: readonly Op[]): Op[] => {
    const w = ops.findIndex((o) => o.op === "wgwait" && o.n === 1);
    const a = ops.findIndex((o) => o.op === "mbararrive" && o.tx === undefined);
    const out = ops.map((o): Op =>
      o.op === "for"
        ? { ...o, body: go(o.body) }
        : o.op === "if"
        ? { ...o, then: go(o.then), otherwise: go(o.otherwise) }
        : o
    );
    if (w < 0 || a < w) return out;
    // [.. wgwait, address ops .., arrive ..] -> [.. address ops .., arrive, wgwait ..]
    return [...out.slice(0, w), ...out.slice(w + 1, a + 1), out[w]!, ...out.slice(a + 1)];
  };
  return { ...k, body: go(k.body) };
}

interface Mutant {
  readonly name: string;
  readonly kernel: (k: Kernel) => Kernel;
  /** The compiled kernel mutated (default hgemm). */
  readonly ck?: CompiledKernel;
  /** Under the default schedule: the hazards (exactly) or the error. */
  readonly hazards?: readonly HazardKind[];
  readonly error?: RegExp;
  /** Schedules whose interleaving happens to be benign for it (no hazard, D right). */
  readonly missed?: readonly RoleSchedule[];
}

const MUTANTS: readonly Mutant[] = [
  {
    name: "the consumers' release dropped",
    kernel: (k) => edit(k, (o) => (o.op === "mbararrive" && o.tx === undefined ? [] : null)),
    // The producer waits for a stage of the ring's second round forever.
    error:
      /^Deadlock: .*in threads 256\.\.256 waits for the phase of parity 0 of the mbarrier at shared 0x30020 \(in phase 0, parity 0: 8 of 8 arrivals/,
  },
  {
    name: "the consumers' parity flipped",
    kernel: flipParity,
    error:
      /^Deadlock: .*in threads 0\.\.255 waits for the phase of parity 1 of the mbarrier at shared 0x30000 \(in phase 1/,
  },
  {
    name: "the producer's empty wait skipped",
    kernel: (k) => edit(k, (o, producer) => (o.op === "mbarwait" && producer ? [] : null)),
    error: /^Deadlock: .*hazards so far: tma-overwrite/,
    // Where the consumers keep pace, each early reload lands after its stage was consumed.
    missed: ["consumer-first", "alternate"],
  },
  {
    name: "expect_tx short by B's box",
    kernel: (k) =>
      edit(
        k,
        (o) => (o.op === "mbararrive" && o.tx !== undefined ? [{ ...o, tx: o.tx - 32768 }] : null),
      ),
    error: /^More transaction bytes completed than expected: .*hazards so far: tma-before-wait/,
  },
  {
    name: "expect_tx 16 bytes over",
    kernel: (k) =>
      edit(
        k,
        (o) => (o.op === "mbararrive" && o.tx !== undefined ? [{ ...o, tx: o.tx + 16 }] : null),
      ),
    error: /^Deadlock: .*0 of 1 arrivals and 16 transaction bytes pending/,
  },
  {
    name: "the consumers' release before wgwait",
    kernel: earlyRelease,
    hazards: ["write-during-wgmma"],
    // Where the consumers retire the group before the producer's next turn.
    missed: ["consumer-first", "alternate"],
  },
  {
    name: "the consumers' full waits skipped",
    kernel: (k) => edit(k, (o, producer) => (o.op === "mbarwait" && !producer ? [] : null)),
    hazards: ["tma-before-wait", "tma-overwrite", "unbalanced-tma"],
  },
  {
    name: "the epilogue's named barriers for 384 threads",
    ck: F16ACC,
    kernel: (k) =>
      edit(k, (o) => (o.op === "bar" && o.named !== undefined ? [ir.namedBar(1, 384)] : null)),
    error: /^Named barrier 1 expects 384 threads but 256 reach it \(threads from 0 on\)/,
  },
  {
    name: "fence.mbarrier_init dropped",
    kernel: (k) => edit(k, (o) => (o.op === "mbarfence" ? [] : null)),
    hazards: ["unpublished-mbarrier"],
  },
];

for (const m of MUTANTS) {
  const ck = m.ck ?? HGEMM;
  Deno.test(`sm90 warp-specialized ${ck.name} mutant, ${m.name}: caught`, () => {
    const k = m.kernel(ck.kernel);
    assert.notDeepEqual(k.body, ck.kernel.body, "the mutation changed nothing");
    const sizes = { M: 130, N: 264, K: 520 };
    if (m.error !== undefined) {
      assert.throws(() => run(ck, sizes, 3, "producer-first", k), (e: unknown) => {
        assert.ok(e instanceof SimError, String(e));
        assert.match(e.message, m.error!);
        return true;
      });
    } else {
      const r = run(ck, sizes, 3, "producer-first", k);
      assert.deepEqual(
        kinds(r.res),
        [...m.hazards!].sort(),
        r.res.hazards.map((h) => h.message).join("\n"),
      );
    }
    // Under the other schedules it shows too (a hazard, an error, or a wrong result), but
    // where that interleaving is benign.
    for (const schedule of SCHEDULES.slice(1)) {
      const missed = m.missed?.includes(schedule) === true;
      try {
        const r = run(ck, sizes, 3, schedule, k);
        if (missed) assert.ok(r.res.hazardCount === 0 && r.agrees, `${schedule}: now caught`);
        else assert.ok(r.res.hazardCount > 0 || !r.agrees, `${schedule}: missed`);
      } catch (e) {
        if (!(e instanceof SimError) || missed) throw e;
      }
    }
  });
}
