/**
 * How an epilogue reads a matrix C (passes/lower/epilogue_loads.ts `epiPrefetch`,
 * `loadAhead`, bench/NOTES.md 34): C's tile is prefetched into L2 between two
 * copies of the k-loop, every prefetch lies inside C (the simulator checks
 * it, and a mutant without the guards is caught), the loads of C come before
 * the stores to D they belong with (ptxas cannot reorder them: C may be D),
 * and so C may be D: in place, the result is the out-of-place one, bit for
 * bit.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { simArgs, simulateGemm } from "../harness/simulate_gemm.ts";
import { simulate } from "../backends/sim/mod.ts";
import { randomArgs } from "../harness/inputs.ts";
import { resolveSizes } from "../harness/sizes.ts";
import { gridFor, type Kernel, type Op, walkOps } from "../ir/kernel.ts";
import { prefetchAhead } from "../passes/lower/mod.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { ptxTarget } from "../backends/ptx/print.ts";

function kernel(decls: string[], stmt: string, schedule: string[] = []): CompiledKernel {
  const sched = schedule.length === 0 ? "" : `\n  schedule {\n    ${schedule.join("\n    ")}\n  }`;
  const src = `kernel k {\n  ${decls.join("\n  ")}\n  ${stmt}${sched}\n}\n`;
  const r = compile(src, { file: "epilogue_loads.gemm" });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

const SMALL = ["threadblock 64x64x32", "warp 32x32x32", "stages 3"];

/** f16 operands, f32 C and D (the direct epilogue path), D row- or column-major. */
const direct = (dLayout = "row", schedule = SMALL) =>
  kernel(
    [
      "A: f16[M, K] row",
      "B: f16[K, N] col",
      `C: f32[M, N] ${dLayout}`,
      `D: f32[M, N] ${dLayout}`,
      "beta: f32",
    ],
    "D[m, n] = A[m, k] * B[k, n] + beta * C[m, n]",
    schedule,
  );

/** f16 C and D: the raw accumulators staged through shared memory. */
const staged = (schedule = SMALL) =>
  kernel(
    ["A: f16[M, K] row", "B: f16[K, N] col", "C: f16[M, N] row", "D: f16[M, N] row"],
    "D[m, n] = f16(A[m, k] * B[k, n] + C[m, n])",
    schedule,
  );

/** The ops of the body that holds the k-loop, and the indices of its k-loop copies. */
function mainBody(k: Kernel): { body: readonly Op[]; loops: number[] } {
  let found: { body: readonly Op[]; loops: number[] } | null = null;
  const visit = (body: readonly Op[]) => {
    const loops = body.flatMap((o, i) => o.op === "for" ? [i] : []);
    if (loops.length > 0 && found === null) found = { body, loops };
    for (const o of body) if (o.op === "if") visit(o.then);
  };
  visit(k.body);
  assert.ok(found !== null, "no k-loop");
  return found;
}

function ops(body: readonly Op[]): Op[] {
  const out: Op[] = [];
  walkOps(body, (o) => out.push(o));
  return out;
}

Deno.test("an epilogue that reads C prefetches its tile into L2 between two copies of the k-loop", () => {
  const ck = direct();
  const { body, loops } = mainBody(ck.kernel);
  assert.equal(loops.length, 2);
  const between = body.slice(loops[0]! + 1, loops[1]!);
  const pf = between.filter((o) => o.op === "prefetch");
  assert.ok(pf.length > 0);
  assert.ok(pf.every((o) => o.op === "prefetch" && o.guard !== undefined));
  // Nowhere else.
  assert.equal(ops(ck.kernel.body).filter((o) => o.op === "prefetch").length, pf.length);
  assert.match(ck.ptx, /prefetch\.global\.L2 \[/);
  assert.match(
    ck.kernelText,
    new RegExp(`the last ${prefetchAhead(32)} k-tiles, after the L2 prefetch of C's tile`),
  );
});

Deno.test("no prefetch without C; with split-K one k-loop, the last split prefetching", () => {
  const plain = kernel(
    ["A: f16[M, K] row", "B: f16[K, N] col", "bias: f32[N]", "D: f32[M, N] row"],
    "D[m, n] = A[m, k] * B[k, n] + bias[n]",
    SMALL,
  );
  assert.equal(mainBody(plain.kernel).loops.length, 1);
  assert.equal(ops(plain.kernel.body).filter((o) => o.op === "prefetch").length, 0);
  // Split-K: the prefetches sit in the last split's branch, after the k-loop.
  const split = direct("row", [...SMALL, "split_k 2"]);
  const { body, loops } = mainBody(split.kernel);
  assert.equal(loops.length, 1);
  const after = ops(body.slice(loops[0]! + 1));
  assert.ok(after.some((o) => o.op === "prefetch"));
  const pf = ops(split.kernel.body).filter((o) => o.op === "prefetch");
  assert.equal(after.filter((o) => o.op === "prefetch").length, pf.length);
  const rep = simulateGemm(split, { M: 100, N: 136, K: 352 }, { seed: 8 });
  assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
  assert.ok(rep.sim.stats.l2Prefetches > 0);
});

Deno.test("the prefetches cover C's tile line by line and stay inside C", () => {
  // 64x64 tiles of f32 C: 64 rows of 256 bytes, 2 lines each plus the line of
  // the row's last byte (a row need not start on a line): 192 a tile.
  const ck = direct();
  const full = simulateGemm(ck, { M: 128, N: 192, K: 96 }, { seed: 5 });
  assert.ok(full.ok, JSON.stringify(full.comparison.first));
  assert.equal(full.sim.stats.l2Prefetches, 2 * 3 * 64 * 3);
  // Partial tiles: fewer, and none outside C (the simulator would throw).
  const part = simulateGemm(ck, { M: 100, N: 136, K: 352 }, { seed: 6 });
  assert.ok(part.ok, JSON.stringify(part.comparison.first));
  assert.ok(part.sim.stats.l2Prefetches > 0 && part.sim.stats.l2Prefetches < 2 * 3 * 64 * 3);
});

Deno.test("a prefetch outside C is an error in the simulator: the guards are needed", () => {
  const ck = direct();
  const strip = (body: readonly Op[]): Op[] =>
    body.map((o): Op => {
      if (o.op === "prefetch") return { op: "prefetch", addr: o.addr };
      if (o.op === "for") return { ...o, body: strip(o.body) };
      if (o.op === "if") return { ...o, then: strip(o.then), otherwise: strip(o.otherwise) };
      return o;
    });
  const mutant = { ...ck, kernel: { ...ck.kernel, body: strip(ck.kernel.body) } };
  assert.ok(simulateGemm(ck, { M: 100, N: 192, K: 96 }).ok);
  // Unguarded, the last tile row's prefetches (and the threads past the
  // tile's pieces) run past C's end.
  assert.throws(
    () => simulateGemm(mutant, { M: 100, N: 192, K: 96 }),
    /Out-of-bounds L2 prefetch: .* of tensor "C"/,
  );
});

/** Index pairs (store to D, then a load) in the epilogue's ops with no barrier between. */
function loadsAfterStores(k: Kernel): { stores: number; loadsAfter: number; acrossBar: number } {
  const { body, loops } = mainBody(k);
  const epi = ops(body.slice(loops.at(-1)! + 1));
  let stored = false;
  let barSince = false;
  let loadsAfter = 0;
  let acrossBar = 0;
  let stores = 0;
  for (const o of epi) {
    if (o.op === "stg") {
      stored = true;
      barSince = false;
      stores++;
    } else if (o.op === "bar") barSince = true;
    else if (o.op === "ldg" && stored) {
      if (barSince) acrossBar++;
      else loadsAfter++;
      stored = false;
    }
  }
  return { stores, loadsAfter, acrossBar };
}

Deno.test("the loads of C come before the stores to D they go with", () => {
  // Staged (raw accumulators): after a store to D, the next load of C comes
  // only after a barrier (the next chunk's loads, issued after its staging).
  const s = loadsAfterStores(staged().kernel);
  assert.equal(s.loadsAfter, 0);
  // Direct, row-major D: a 32x32 f32 warp tile is 2 rows of 4 tiles of 2
  // pairs; a batch holds 8 registers of loads, 2 tiles: 4 batches, 3 turns
  // from storing to loading, where loading along with each store had 15.
  const d = loadsAfterStores(direct().kernel);
  assert.equal(d.stores, 16);
  assert.equal(d.loadsAfter, 3);
  // Column-major D: by columns of tiles, 2 tiles (of 4 single elements) a
  // batch, a whole column: 4 batches. Prefetched too.
  const col = direct("col");
  const c = loadsAfterStores(col.kernel);
  assert.equal(c.stores, 32);
  assert.equal(c.loadsAfter, 3);
  assert.equal(mainBody(col.kernel).loops.length, 2);
  // Split-K (shortcut): each element's load right before its store.
  const split = loadsAfterStores(direct("row", [...SMALL, "split_k 2"]).kernel);
  // 16 pairs stored to D, each after its own load of C (besides the
  // workspace's stores and loads): at least 15 turns.
  assert.ok(split.loadsAfter + split.acrossBar >= 15, JSON.stringify(split));
});

Deno.test("column-major D: one address a column of the warp tile, rows at offsets", () => {
  // A 32x32 f32 warp tile of m16n8 tiles: 4 tiles of 2 columns a lane across,
  // 2 tiles of 2 rows down: 32 stores through 8 addresses.
  for (
    const ck of [
      direct("col"),
      kernel(
        ["A: f16[M, K] row", "B: f16[K, N] col", "D: f32[M, N] col"],
        "D[m, n] = A[m, k] * B[k, n]",
        SMALL,
      ),
    ]
  ) {
    const { body, loops } = mainBody(ck.kernel);
    const stg = ops(body.slice(loops.at(-1)! + 1)).filter((o) => o.op === "stg");
    assert.equal(stg.length, 32);
    assert.equal(new Set(stg.map((o) => o.op === "stg" && o.addr.id)).size, 8);
    assert.deepEqual(
      [...new Set(stg.map((o) => o.op === "stg" && o.offset))].sort((a, b) => +a - +b),
      [0, 32, 64, 96],
    );
    const rep = simulateGemm(ck, { M: 100, N: 72, K: 64 }, { seed: 3 });
    assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
  }
});

/** The output of a simulated launch with C and D separate, and with D in C's memory. */
function inPlace(ck: CompiledKernel, given: Record<string, number>): [Uint8Array, Uint8Array] {
  const sizes = resolveSizes(ck.gemm, given);
  const args = randomArgs(ck.gemm, sizes, 11, {});
  const grid = gridFor(ck.kernel.grid, sizes);
  const c0 = args.tensors.get("C")!.slice();
  const out = simulate(ck.kernel, { grid, args: simArgs(args) });
  assert.equal(out.hazardCount, 0);
  const apart = args.tensors.get("D")!.slice();
  const shared = { bytes: c0 };
  const res = simulate(ck.kernel, { grid, args: { ...simArgs(args), C: shared, D: shared } });
  assert.equal(res.hazardCount, 0);
  return [apart, c0];
}

for (
  const [name, ck] of [
    ["staged f16 C and D (default schedule)", () => staged([])],
    ["direct f32 C and D, row-major", () => direct()],
    ["direct f32 C and D, column-major", () => direct("col")],
  ] as const
) {
  Deno.test(`C may be D (in place): ${name}`, () => {
    const sizes = { M: 136, N: 264, K: 96 };
    const rep = simulateGemm(ck(), sizes, { seed: 11 });
    assert.ok(rep.ok, JSON.stringify(rep.comparison.first));
    const [apart, together] = inPlace(ck(), sizes);
    assert.deepEqual(together, apart);
  });
}

ptxasTest("C read ahead: the default schedules assemble without spills", async (ptxas) => {
  const hinted = (src: string, n: number, sms: number) => {
    const r = compile(src, { file: "k.gemm", sizeHints: { M: n, N: n, K: n }, sms });
    assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
    return r.kernels[0]!;
  };
  const src = (c: string, d: string, stmt: string) =>
    `kernel k {\n  A: f16[M, K] row\n  B: f16[K, N] col\n  C: ${c}\n  D: ${d}\n  ${stmt}\n}\n`;
  const cases: CompiledKernel[] = [];
  for (const n of [4096, 8192]) {
    for (const sms of [108, 132]) {
      cases.push(
        hinted(
          src("f16[M, N] row", "f16[M, N] row", "D[m, n] = f16(A[m, k] * B[k, n] + C[m, n])"),
          n,
          sms,
        ),
        hinted(
          src("f32[M, N] row", "f32[M, N] row", "D[m, n] = A[m, k] * B[k, n] + C[m, n]"),
          n,
          sms,
        ),
        hinted(
          src("f32[M, N] col", "f32[M, N] col", "D[m, n] = A[m, k] * B[k, n] + C[m, n]"),
          n,
          sms,
        ),
      );
    }
  }
  for (const ck of cases) {
    const p = await runPtxas(ck.ptx, { arch: ptxTarget(ck.kernel.target), ptxasPath: ptxas });
    assert.ok(p.ok, p.log);
    const k = p.kernels[0]!;
    assert.equal(
      k.spillStoreBytes + k.spillLoadBytes + k.stackFrameBytes,
      0,
      ck.kernelText.slice(0, 80),
    );
  }
});
