/**
 * Run by tests/gpu/grouped_test.ts as `deno test` in a child process with
 * `GEMMC_LIBCUDA` pointing at the fake driver built from fake_libcuda.c.
 * Drives the grouped launch API (backends/cuda/grouped.ts,
 * `LoadedKernel.groupedLaunch`) against the fake and checks what reached the C
 * side: the table's bytes (as groupTable writes them) at the address the
 * kernel gets, the count and scalars, the persistent grid from the occupancy
 * the driver reports, nothing allocated or launched on a violation (every
 * problem named by its index), the mixture-of-experts problems' addresses,
 * a programmatic dependent launch (`pdl`: cuLaunchKernelEx with its attribute),
 * and everything released.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../../../compiler.ts";
import { Cuda, type DeviceBuffer } from "../../../backends/cuda/driver.ts";
import {
  type GroupedProblem,
  LaunchError,
  loadKernel,
  moeProblems,
} from "../../../backends/cuda/kernel.ts";
import { groupTable } from "../../../backends/ptx/group_table.ts";
import { problemTiles } from "../../../ir/kernel.ts";
import { Rng } from "../../../numerics/random.ts";
import { runGrouped } from "../../../harness/run_grouped.ts";
import { gemmWithEnv } from "../../_cli.ts";
import { launchExStats } from "./_launch_ex_stats.ts";

const LIB = Deno.env.get("GEMMC_LIBCUDA")!;
const fake = Deno.dlopen(LIB, {
  fake_stats: { parameters: ["buffer"], result: "i32" },
  fake_last_launch: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
  fake_occupancy_stats: { parameters: ["buffer"], result: "i32" },
  fake_launch_ex_stats: { parameters: ["buffer"], result: "i32" },
});

/** What the fake's cuLaunchKernel and cuLaunchKernelEx saw (fake_launch_ex_stats). */
const exStats = () => launchExStats((b) => fake.symbols.fake_launch_ex_stats(b));

function stats() {
  const s = new BigInt64Array(10);
  fake.symbols.fake_stats(s);
  const o = new BigInt64Array(3);
  fake.symbols.fake_occupancy_stats(o);
  return {
    allocs: Number(s[0]),
    modules: Number(s[1]),
    ctxRefs: Number(s[3]),
    launches: Number(s[4]),
    occupancyCalls: Number(o[0]),
    occThreads: Number(o[1]),
    occSmem: Number(o[2]),
  };
}

/** The last launch: its arguments' bits and its grid. */
function lastLaunch(): { params: bigint[]; grid: number[]; block: number[] } {
  const geo = new Uint32Array(7);
  const bits = new BigUint64Array(64);
  const n = fake.symbols.fake_last_launch(geo, bits, new Uint8Array(64 * 8));
  return {
    params: [...bits.subarray(0, n)],
    grid: [...geo.subarray(0, 3)],
    block: [...geo.subarray(3, 6)],
  };
}

const f32Bits = (x: number) => BigInt(new Uint32Array(new Float32Array([x]).buffer)[0]!);

function grouped(src: string): CompiledKernel {
  const r = compile(src);
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

const EPILOGUE = grouped(`kernel e grouped { X: bf16[M, K] row  W: bf16[K, N] col
  C: f32[M, N] row  Y: f32[M, N] row  alpha: f32 = 1.0  beta: f32 = 0.0
  Y[m, n] = alpha * X[m, k] * W[k, n] + beta * C[m, n]
  schedule { threadblock 64x64x32
    warp 32x32x32 } }`);
const MOE_SRC = `kernel experts grouped { X: bf16[M, K] row  W: bf16[K, N] col  Y: bf16[M, N] row
  Y[m, n] = X[m, k] * W[k, n]
  schedule { threadblock 64x64x32
    warp 32x32x32 } }`;
const MOE = grouped(MOE_SRC);

/** Random problems with buffers of the right sizes (some with a zero dimension). */
function problems(
  cuda: Cuda,
  rng: Rng,
  n: number,
): { ps: GroupedProblem[]; bufs: DeviceBuffer[] } {
  const bufs: DeviceBuffer[] = [];
  const ps: GroupedProblem[] = [];
  for (let i = 0; i < n; i++) {
    const M = i % 3 === 1 ? 0 : 1 + Math.floor(rng.next() * 300);
    const N = 8 * (1 + Math.floor(rng.next() * 40));
    const K = 8 * (1 + Math.floor(rng.next() * 10));
    const alloc = (bytes: number) => {
      const b = cuda.alloc(bytes);
      bufs.push(b);
      return b;
    };
    const buffers = M === 0
      ? {} // no tile: nothing is read
      : { X: alloc(M * K * 2), W: alloc(K * N * 2), C: alloc(M * N * 4), Y: alloc(M * N * 4) };
    ps.push({ buffers, sizes: { M, N, K } });
  }
  return { ps, bufs };
}

Deno.test("groupedLaunch: the table the kernel gets is groupTable's; the grid is persistent", () => {
  const s0 = stats();
  const cuda = Cuda.open();
  try {
    const k = loadKernel(EPILOGUE, { cuda });
    const rng = new Rng(17);
    for (const n of [1, 5, 40]) {
      const { ps, bufs } = problems(cuda, rng, n);
      const alpha = Math.fround(0.5 + rng.next());
      const beta = Math.fround(-0.5 - rng.next());
      const l0 = stats().launches;
      const g = k.groupedLaunch(ps, { scalars: { alpha, beta } });
      assert.equal(stats().launches, l0, "nothing launched before launch()");
      g.launch();
      g.launch();
      assert.equal(stats().launches, l0 + 2);
      const last = lastLaunch();
      // Arguments: the table's address, the count, the scalars.
      assert.deepEqual(last.params, [g.table!.ptr, BigInt(n), f32Bits(alpha), f32Bits(beta)]);
      assert.deepEqual(last.block, [...EPILOGUE.manifest.block]);
      // The table: groupTable's bytes over the problems' addresses (0 where not given).
      const want = groupTable(
        EPILOGUE.manifest.group!,
        EPILOGUE.manifest.gridPlan,
        ps.map((p) => ({
          sizes: p.sizes,
          addresses: Object.fromEntries(
            ["X", "W", "C", "Y"].map((t) => {
              const b = p.buffers[t] as DeviceBuffer | undefined;
              return [t, b === undefined ? 0n : b.ptr];
            }),
          ),
        })),
      );
      assert.equal(g.tableBytes, n * EPILOGUE.manifest.group!.entryBytes);
      assert.deepEqual(g.table!.download(), want.bytes);
      const tiles = ps.map((p) => problemTiles(EPILOGUE.manifest.gridPlan, p.sizes));
      assert.deepEqual(g.tiles, tiles);
      assert.equal(g.totalTiles, tiles.reduce((a, b) => a + b, 0));
      assert.equal(g.count, n);
      // Persistent: min(tiles, 132 SMs x the fake's 2 blocks per SM).
      assert.deepEqual(last.grid, [Math.max(1, Math.min(g.totalTiles, 264)), 1, 1]);
      assert.deepEqual(g.grid, last.grid);
      // `blocks` overrides the resident count.
      const g3 = k.groupedLaunch(ps, { scalars: { alpha, beta }, blocks: 3 });
      g3.launch();
      assert.deepEqual(lastLaunch().grid, [Math.min(3, g.totalTiles), 1, 1]);
      g3.close();
      g.close();
      assert.ok(g.table!.freed);
      assert.throws(() => g.launch(), /after its close/);
      for (const b of bufs) b.free();
    }
    // The occupancy was asked once, with the kernel's block and shared memory.
    const s = stats();
    assert.equal(s.occupancyCalls, s0.occupancyCalls + 1);
    assert.equal(s.occThreads, EPILOGUE.manifest.block[0]);
    assert.equal(s.occSmem, EPILOGUE.manifest.dynamicSmemBytes);
    assert.equal(k.residentBlocks, 264);
    // More tiles than resident blocks: the grid is the resident blocks.
    const big = k.groupedLaunch(
      Array.from({ length: 3 }, (_, i) => ({
        // Shared inputs; each problem its own output (outputs of a launch must not overlap).
        buffers: { X: 1n << 40n, W: 2n << 40n, C: 3n << 40n, Y: BigInt(4 + i) << 40n },
        sizes: { M: 64 * 20, N: 64 * 10, K: 32 },
      })),
    );
    assert.equal(big.totalTiles, 600);
    assert.deepEqual(big.grid, [264, 1, 1]);
    // The kernel's close closes its grouped launches.
    k.close();
    assert.ok(big.table!.freed);
    assert.throws(() => big.launch(), /after its close/);
  } finally {
    cuda.close();
  }
  const s = stats();
  assert.equal(s.allocs, 0);
  assert.equal(s.modules, s0.modules);
  assert.equal(s.ctxRefs, 0);
});

Deno.test("groupedLaunch's launch({ pdl: true }): cuLaunchKernelEx, the persistent grid and the PDL attribute", () => {
  using cuda = Cuda.open();
  using k = loadKernel(EPILOGUE, { cuda });
  const { ps, bufs } = problems(cuda, new Rng(3), 5);
  using g = k.groupedLaunch(ps, { scalars: { alpha: 2 } });
  const st = cuda.createStream()!;
  const e0 = exStats();
  g.launch({ pdl: true, stream: st });
  const e = exStats();
  assert.deepEqual([e.ex - e0.ex, e.pdl - e0.pdl, e.plain - e0.plain], [1, 1, 0]);
  assert.deepEqual([e.numAttrs, e.attrId, e.attrValue], [1, 6, 1]);
  assert.equal(e.stream, BigInt(Deno.UnsafePointer.value(st.handle)));
  const last = lastLaunch();
  assert.deepEqual(last.grid, [...g.grid]);
  assert.deepEqual(last.block, [...EPILOGUE.manifest.block]);
  assert.deepEqual(last.params, [g.table!.ptr, 5n, f32Bits(2), f32Bits(0)]);
  // Without it: cuLaunchKernel.
  g.launch();
  assert.deepEqual([exStats().ex, exStats().plain], [e.ex, e.plain + 1]);
  assert.equal(g.launches, 2);
  for (const b of bufs) b.free();
});

Deno.test("zero problems: nothing allocated, launch() launches nothing", () => {
  using cuda = Cuda.open();
  using k = loadKernel(MOE, { cuda });
  const s0 = stats();
  using g = k.groupedLaunch([]);
  g.launch();
  assert.equal(g.count, 0);
  assert.equal(g.table, null);
  assert.deepEqual(g.grid, [0, 1, 1]);
  assert.equal(stats().launches, s0.launches);
  assert.equal(stats().allocs, s0.allocs);
  assert.equal(g.launches, 0);
});

Deno.test("violations: every problem's, with its index; nothing allocated or launched", () => {
  using cuda = Cuda.open();
  using k = loadKernel(EPILOGUE, { cuda });
  const x = cuda.alloc(64 * 32 * 2);
  const w = cuda.alloc(32 * 64 * 2);
  const c = cuda.alloc(64 * 64 * 4);
  const y = cuda.alloc(64 * 64 * 4);
  const good = { buffers: { X: x, W: w, C: c, Y: y }, sizes: { M: 64, N: 64, K: 32 } };
  const short = cuda.alloc(100);
  const s0 = stats();
  let err: LaunchError | null = null;
  try {
    k.groupedLaunch([
      good,
      { buffers: { X: x, W: w, C: c, Y: y }, sizes: { M: 64, N: 64, K: 30 } }, // K breaks align 8
      good,
      { buffers: { X: x, W: short, C: c, Y: y }, sizes: { M: 64, N: 64, K: 32 } }, // W short
      { buffers: { X: x.ptr + 2n, W: w, C: c, Y: y }, sizes: { M: 64, N: 64, K: 32 } }, // misaligned
      { buffers: { X: x, W: w, C: c }, sizes: { M: 64, N: 64, K: 32 } }, // no Y
      { buffers: { X: x, W: w, C: c, Y: y, Z: y }, sizes: { M: 64, N: 64, K: 32, Q: 3 } },
    ], { scalars: { alpha: NaN, gamma: 2 } });
  } catch (e) {
    err = e as LaunchError;
  }
  assert.ok(err instanceof LaunchError, String(err));
  const v = err.violations;
  const of = (i: number) => v.filter((m) => m.startsWith(`Problem ${i}: `));
  assert.equal(of(0).length, 0);
  assert.equal(of(2).length, 0);
  assert.ok(of(1).some((m) => /align 8/.test(m) && /K=30/.test(m)), v.join("\n"));
  assert.ok(of(3).some((m) => /"W" holds 100 bytes/.test(m)), v.join("\n"));
  assert.ok(of(4).some((m) => /"X" at 0x[0-9a-f]+ is not aligned/.test(m)), v.join("\n"));
  assert.ok(of(5).some((m) => /No device buffer for tensor "Y"/.test(m)), v.join("\n"));
  assert.ok(of(6).some((m) => /no tensor "Z"/.test(m)), v.join("\n"));
  assert.ok(of(6).some((m) => /no runtime dimension or stride "Q"/.test(m)), v.join("\n"));
  // The scalars are checked once, not per problem.
  assert.equal(v.filter((m) => /Scalar "alpha" is NaN/.test(m)).length, 1);
  assert.equal(v.filter((m) => /no scalar "gamma"/.test(m)).length, 1);
  // Problems 0 and 2 are both `good`: one Y written by two problems of one launch.
  assert.ok(
    v.some((m) => /Problem 0's output "Y" overlaps problem 2's output "Y"/.test(m)),
    v.join("\n"),
  );
  assert.match(err.message, /Kernel "e" was not launched/);
  const s = stats();
  assert.equal(s.launches, s0.launches);
  assert.equal(s.allocs, s0.allocs, "no table allocated");
  // A zero dimension is legal: no tile, no buffer needed; K = 0 needs no X nor W.
  const y2 = cuda.alloc(64 * 64 * 4);
  using ok = k.groupedLaunch([
    { buffers: {}, sizes: { M: 0, N: 64, K: 32 } },
    { buffers: {}, sizes: { M: 64, N: 0, K: 32 } },
    { buffers: { C: c, Y: y2 }, sizes: { M: 64, N: 64, K: 0 } },
    good,
  ]);
  assert.deepEqual(ok.tiles, [0, 0, 1, 1]);
  // ... but a tile's output still needs its buffer.
  assert.throws(
    () => k.groupedLaunch([{ buffers: { C: c }, sizes: { M: 64, N: 64, K: 0 } }]),
    (e: unknown) =>
      e instanceof LaunchError && /Problem 0: No device buffer for tensor "Y"/.test(e.message),
  );
  // An ordinary launch of a grouped kernel is refused, pointing at groupedLaunch.
  assert.throws(() => k.launch(good.buffers, good.sizes), /grouped.*groupedLaunch/s);
  assert.throws(() => k.groupedLaunch([good], { blocks: 0 }), RangeError);
});

Deno.test("an ordinary kernel refuses groupedLaunch", () => {
  const ck = compile(`kernel k { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
    D[m, n] = A[m, k] * B[k, n] }`).kernels[0]!;
  using cuda = Cuda.open();
  using k = loadKernel(ck, { cuda });
  assert.throws(() => k.groupedLaunch([]), /not grouped.*launch\(buffers, sizes\)/);
});

Deno.test("moeProblems: each expert's rows and weight; empty experts are M = 0", () => {
  using cuda = Cuda.open();
  const rng = new Rng(23);
  const [N, K] = [64, 40];
  // Expert sizes with empty experts, first and in the middle.
  const counts = [0, 7, 0, 130, 1, 0, 33];
  const offs = counts.map((_, i) => counts.slice(0, i + 1).reduce((a, b) => a + b, 0));
  const T = offs[offs.length - 1]!;
  const E = counts.length;
  const a = cuda.alloc(T * K * 2);
  const b = cuda.alloc(E * N * K * 2);
  const d = cuda.alloc(T * N * 2);
  const ps = moeProblems(MOE.manifest, { a, b, d, offs: Int32Array.from(offs), sizes: { N, K } });
  assert.equal(ps.length, E);
  for (const [g, p] of ps.entries()) {
    const start = g === 0 ? 0 : offs[g - 1]!;
    assert.deepEqual(p.sizes, { M: counts[g], N, K });
    assert.equal(p.buffers.X, a.ptr + BigInt(start * K * 2), `expert ${g}: X`);
    assert.equal(p.buffers.W, b.ptr + BigInt(g * N * K * 2), `expert ${g}: W`);
    assert.equal(p.buffers.Y, d.ptr + BigInt(start * N * 2), `expert ${g}: Y`);
  }
  // They launch: the table holds them; the empty experts have no tile.
  using k = loadKernel(MOE, { cuda });
  using g = k.groupedLaunch(ps);
  assert.deepEqual(g.tiles, counts.map((m) => Math.ceil(m / 64) * 1));
  g.launch();
  assert.equal(lastLaunch().params[1], BigInt(E));
  // Role letters and raw addresses work alike; the buffers' sizes are checked.
  const base = BigInt(Math.floor(rng.next() * 1000) + 1) << 20n;
  const raw = moeProblems(MOE.manifest, {
    a: base,
    b: base * 2n,
    d: base * 3n,
    offs,
    sizes: { N, K },
  });
  assert.equal(raw[3]!.buffers.X, base + BigInt(offs[2]! * K * 2));
  assert.throws(
    () => moeProblems(MOE.manifest, { a, b: cuda.alloc(100), d, offs, sizes: { N, K } }),
    /"W" \(B\) holds 100 bytes/,
  );
  assert.throws(
    () => moeProblems(MOE.manifest, { a, b, d, offs: [5, 3], sizes: { N, K } }),
    /offs\[1\] = 3/,
  );
  assert.throws(() => moeProblems(MOE.manifest, { a, b, d, offs, sizes: { N } }), /No size.*K/);
  // Other forms are refused: an epilogue tensor; A column-major.
  assert.throws(
    () => moeProblems(EPILOGUE.manifest, { a, b, d, offs, sizes: { N, K } }),
    /beyond A, B and D.*"C"/,
  );
  const colA = grouped(`kernel t grouped { X: bf16[M, K] col  W: bf16[K, N] col  Y: bf16[M, N] row
    Y[m, n] = X[m, k] * W[k, n] }`);
  assert.throws(
    () => moeProblems(colA.manifest, { a, b, d, offs, sizes: { N, K } }),
    /"X" \(A\) is col-major/,
  );
  assert.equal(moeProblems(MOE.manifest, { a, b, d, offs: [], sizes: { N, K } }).length, 0);
});

Deno.test("runGrouped and gemm run --groups reach the fake: its outputs stay poisoned", async () => {
  // The fake runs no kernel: every problem with a tile is unwritten, the empty one agrees.
  const groups = [{ M: 70, N: 64, K: 32 }, { M: 0, N: 64, K: 32 }, { M: 5, N: 8, K: 16 }];
  const s0 = stats();
  const rep = runGrouped(MOE, groups, { seed: 5, iters: 2, warmup: 1 });
  assert.equal(stats().launches, s0.launches + 1 + 1 + 2, "one checked, 1 warm-up, 2 timed");
  assert.deepEqual(rep.problems.map((p) => p.tiles), [2, 0, 1]);
  assert.deepEqual(rep.problems.map((p) => p.unwritten), [70 * 64, 0, 5 * 8]);
  assert.deepEqual(rep.problems.map((p) => p.ok), [false, true, false]);
  assert.ok(!rep.ok);
  assert.equal(rep.timing!.iters, 2);
  assert.equal(rep.timing!.ops, 2 * (70 * 64 * 32 + 5 * 8 * 16));
  assert.equal(stats().allocs, s0.allocs, "every buffer freed");
  // The CLI, in a child process against the same fake.
  const dir = await Deno.makeTempDir({ prefix: "gemmc_fake_grouped_" });
  try {
    const file = `${dir}/experts.gemm`;
    await Deno.writeTextFile(file, MOE_SRC);
    const r = await gemmWithEnv(
      ["run", file, "--groups", "M=70,N=64,K=32;M=0,N=64,K=32", "--iters", "0"],
      { GEMMC_LIBCUDA: LIB },
    );
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /experts: MISMATCH in 1 of 2 problems \(2 tiles; persistent grid 2x1x1\)/,
    );
    assert.match(r.stdout, /problem 0 \([^)]*; 2 tiles\): MISMATCH;.*4480 elements unwritten/);
    assert.match(r.stdout, /problem 1 \([^)]*; 0 tiles\): agrees/);
    const j = await gemmWithEnv(
      ["run", file, "--groups", "M=3,N=64,K=32", "--iters", "0", "--json"],
      { GEMMC_LIBCUDA: LIB },
    );
    const rec = JSON.parse(j.stdout).reports[0];
    assert.equal(rec.problems[0].unwritten, 3 * 64);
    assert.deepEqual(rec.grid, [1, 1, 1]);
    // Sizes that break an alignment: a usage error naming the problem, before the driver.
    const bad = await gemmWithEnv(
      ["run", file, "--groups", "M=3,N=64,K=32;M=3,N=60,K=32"],
      { GEMMC_LIBCUDA: LIB },
    );
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /Problem 1: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
