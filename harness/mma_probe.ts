/**
 * The fragment-layout probe: for every row of the MMA table
 * (ir/mma_table.ts), a one-warp kernel-IR program loads each lane's A, B and
 * C fragment registers from memory, runs that row's `mma`, and stores the D
 * registers. The host fills the registers from matrices through the table's
 * fragment maps and reads D back through them, so each launch tests the
 * table against the hardware:
 *
 * 1. **C/D map, rows**: A holds the row number in column 0 (floats; for
 *    integer and b1 rows, `i + 1` ones along row `i`) and B ones, so
 *    `D[i][j] = i + 1`: every lane, register and element of D says which row
 *    it holds.
 * 2. **C/D map, columns**: likewise with `D[i][j] = j + 1`.
 *    Together: the (row, column) of every D element on the hardware, compared
 *    with the table's map of C/D, element by element.
 * 3. **Product**: A, B and C random (small integers for float types, so that
 *    every product and sum is exact; the whole range for integer types), and
 *    D read through the table must equal A·B + C computed on the host,
 *    exactly. This checks the A and B maps: a wrong map scrambles the
 *    product. (One ambiguity no `mma` can expose: the same permutation of k
 *    applied to both the A and the B map leaves every product unchanged.)
 *
 * Sparse rows (`mma.sp`, ir/mma_sparse.ts) take a fourth input, each lane's
 * metadata register, and A as the compressed fragment: the host draws a 2:4
 * pattern (1:2 for tf32, 4:8 in pairs for s4/u4), packs the kept values of A
 * through the row's compressed map and the pattern's nibbles through its
 * metadata map (the lanes that supply no metadata under the selector get a
 * valid but different pattern, so a launch that read them would compute a
 * wrong D), and checks D against the host product of the decompressed A. The
 * C/D map launches use the pattern "first kept columns" and selector 0; the
 * random product runs once per legal selector, with `mma.sp` and with
 * `mma.sp::ordered_metadata` (one kernel each, {@link sparseProbeKernel}).
 * Then, per selector, 8 (16 for 16 chunks a row) launches of a binary code
 * find the (lane, nibble) each (row, chunk) of A takes its metadata from, and
 * compare it with the table's metadata map (`metaMap` of the result; the
 * mismatches name the lane and nibble the launch used, so a wrong layout in
 * ir/mma_sparse.ts can be corrected from the probe's output).
 *
 * Modes: `gpu` launches the PTX through the CUDA driver and also runs the
 * simulator on the same registers (the raw D registers must be identical);
 * `sim` runs the simulator alone (which uses the table, so it checks the
 * probe's own code, on any machine).
 *
 * Run `deno run -A harness/mma_probe.ts [--sim] [--json]` (every dense and
 * sparse row).
 *
 * This module holds the dense probe's checks and the runner; the sparse probe
 * is in mma_probe_sparse.ts, and what both use (the result types, the probe
 * kernel of a dense row, fragment packing, inputs, the host product, the
 * simulator launcher) in mma_probe_common.ts.
 *
 * @module
 */

import { MMA_SHAPES, type MmaShape } from "../ir/mma_table.ts";
import { SPARSE_MMA_TABLE } from "../ir/mma_sparse.ts";
import { printPtx } from "../backends/ptx/print.ts";
import { Rng } from "../numerics/random.ts";
import { Cuda, cudaAvailable, CudaError, type DeviceBuffer } from "../backends/cuda/driver.ts";
import {
  checkCMap,
  equalBytes,
  failedProbe,
  gpuProbeLauncher,
  hostProduct,
  INT_TYPES,
  packFragment,
  type ProbeInputs,
  probeKernel,
  type ProbeLauncher,
  type ProbeMode,
  type ProbeResult,
  probeVerdict,
  randomInputs,
  releaseProbe,
  simProbeLauncher,
  unpackFragment,
} from "./mma_probe_common.ts";
import {
  evaluateSparseProbe,
  gpuSparseProbe,
  isSparse,
  type SparseLaunchers,
  sparseProbeKernel,
} from "./mma_probe_sparse.ts";

// The probe kernel of a dense row lives in mma_probe_common.ts, with the simulator launcher
// that runs it by default; this module stays its public entry point.
export { probeKernel };

/** Matrices whose product gives every D element its row + 1 (`rows`) or column + 1. */
function idInputs(s: MmaShape, which: "rows" | "cols"): ProbeInputs {
  const zero = () => 0;
  if (!INT_TYPES.has(s.aType)) {
    // Floats: the id in column / row 0 of the k dimension, exact in every type.
    return which === "rows"
      ? { a: (i, k) => (k === 0 ? i + 1 : 0), b: (k) => (k === 0 ? 1 : 0), c: zero }
      : { a: (_i, k) => (k === 0 ? 1 : 0), b: (k, j) => (k === 0 ? j + 1 : 0), c: zero };
  }
  // Integers and bits: i + 1 ones along k (K >= 16 >= M here), the other side all ones;
  // for xor.popc the other side is all zeros (x ^ 0 = x).
  const other = s.op === "xor.popc" ? 0 : 1;
  return which === "rows"
    ? { a: (i, k) => (k <= i ? 1 : 0), b: () => other, c: zero }
    : { a: () => other, b: (k, j) => (k <= j ? 1 : 0), c: zero };
}

/**
 * The three probe launches of one row, judged against a table row: `s`'s
 * fragment maps fill the registers and read D back, whatever kernel `launch`
 * runs (so a test can hand it a deliberately wrong table row).
 *
 * @param s The table row under test.
 * @param mode Recorded in the result.
 * @param launch Runs the probe kernel.
 * @param sim Also runs it on the simulator, to compare raw D registers (or null).
 * @param seed Seed of the random product check.
 * @returns The verdict.
 */
export function evaluateProbe(
  s: MmaShape,
  mode: ProbeMode,
  launch: ProbeLauncher,
  sim: ProbeLauncher | null,
  seed: number,
): ProbeResult {
  const run = (x: ProbeInputs) => {
    const a = packFragment(s.a, x.a);
    const b = packFragment(s.b, x.b);
    const c = packFragment(s.c, x.c);
    const d = launch(a, b, c);
    const same = sim === null ? null : equalBytes(d, sim(a, b, c));
    return { d: unpackFragment(s.c, d), same };
  };
  const rows = run(idInputs(s, "rows"));
  const cols = run(idInputs(s, "cols"));
  const rnd = randomInputs(s, new Rng(seed));
  const prod = run(rnd);
  const want = hostProduct(s, rnd);
  const simIdentical = sim === null ? null : rows.same === true && cols.same === true &&
    prod.same === true;
  return probeVerdict(s, mode, checkCMap(s, rows.d, cols.d, [{ d: prod.d, want }]), simIdentical);
}

/** Options of {@link runProbe}. */
export interface ProbeOptions {
  /** `gpu` (default) or `sim`. */
  readonly mode?: ProbeMode;
  /** The rows to probe (default: every row of the MMA table). */
  readonly shapes?: readonly MmaShape[];
  /** Seed of the random product check (default 1). */
  readonly seed?: number;
  /** GPU mode: an open driver handle (left open); default: one opened and closed here. */
  readonly cuda?: Cuda;
}

/**
 * Runs the fragment-layout probe on every MMA table row.
 *
 * @param options Mode, rows, seed, driver.
 * @returns One verdict per row.
 * @throws {CudaUnavailableError} In GPU mode, when no driver can be used.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { MMA_SHAPES } from "../ir/mma_table.ts";
 * import { runProbe } from "./mma_probe.ts";
 * const [r] = await runProbe({ mode: "sim", shapes: [MMA_SHAPES[0]!] });
 * ok(r?.ok);
 * ```
 */
export async function runProbe(options: ProbeOptions = {}): Promise<ProbeResult[]> {
  const mode = options.mode ?? "gpu";
  const shapes = options.shapes ?? MMA_SHAPES;
  const seed = options.seed ?? 1;
  const results: ProbeResult[] = [];
  if (mode === "sim") {
    for (const s of shapes) {
      if (isSparse(s)) {
        const l: SparseLaunchers = (v) => [simProbeLauncher(s, sparseProbeKernel(s, v)), null];
        results.push(evaluateSparseProbe(s, "sim", l, seed));
      } else results.push(evaluateProbe(s, "sim", simProbeLauncher(s), null, seed));
    }
    return await Promise.resolve(results);
  }
  const cuda = options.cuda ?? Cuda.open();
  try {
    for (const s of shapes) {
      if (isSparse(s)) {
        results.push(gpuSparseProbe(cuda, s, seed));
        continue;
      }
      const kernel = probeKernel(s);
      let result: ProbeResult;
      const buffers: DeviceBuffer[] = [];
      const unloads: (() => void)[] = [];
      try {
        const module = cuda.loadModule(printPtx([kernel]));
        unloads.push(() => module.unload());
        const fn = module.getFunction(kernel.name);
        const dBytes = 32 * s.c.regs * (s.c.regBits / 8);
        const bufs = [
          32 * s.a.regs * (s.a.regBits / 8),
          32 * s.b.regs * (s.b.regBits / 8),
          dBytes,
          dBytes,
        ].map((n) => {
          const b = cuda.alloc(n);
          buffers.push(b);
          return b;
        });
        const gpu = gpuProbeLauncher(cuda, fn, bufs.slice(0, 3), bufs[3]!);
        result = evaluateProbe(s, "gpu", gpu, simProbeLauncher(s, kernel), seed);
      } catch (e) {
        if (!(e instanceof CudaError)) throw e;
        result = failedProbe(s, e.message);
      } finally {
        releaseProbe(buffers, unloads);
      }
      results.push(result);
    }
  } finally {
    if (options.cuda === undefined) cuda.close();
  }
  return results;
}

/**
 * The probe's results as a table, one line per row.
 *
 * @param results From {@link runProbe}.
 * @returns The text.
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { formatProbe } from "./mma_probe.ts";
 * const text = formatProbe([{
 *   shape: "m16n8k16.f16.f32",
 *   ptx: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
 *   mode: "sim",
 *   cMap: { agree: 128, total: 128, mismatches: [] },
 *   product: { agree: 128, total: 128 },
 *   simIdentical: null,
 *   error: null,
 *   ok: true,
 * }]);
 * ok(text.includes("m16n8k16.f16.f32") && text.includes("128/128"));
 * ```
 */
export function formatProbe(results: readonly ProbeResult[]): string {
  const w = Math.max(5, ...results.map((r) => r.shape.length));
  const lines = [
    `${"shape".padEnd(w)}  ${"C/D map".padEnd(9)}  ${"A·B + C".padEnd(9)}  ${
      "simulator".padEnd(10)
    }  verdict`,
  ];
  for (const r of results) {
    if (r.error !== null) {
      lines.push(`${r.shape.padEnd(w)}  FAILED: ${r.error.split("\n")[0]}`);
      continue;
    }
    const sim = r.simIdentical === null ? "-" : r.simIdentical ? "identical" : "DIFFERS";
    lines.push(
      `${r.shape.padEnd(w)}  ${`${r.cMap.agree}/${r.cMap.total}`.padEnd(9)}  ${
        `${r.product.agree}/${r.product.total}`.padEnd(9)
      }  ${sim.padEnd(10)}  ${r.ok ? "OK" : "MISMATCH"}`,
    );
    for (const m of r.cMap.mismatches) {
      lines.push(
        `${"".padEnd(w)}    lane ${m.lane} reg ${m.reg} elem ${m.elem}: table (${
          m.table.join(", ")
        }), ${r.mode === "gpu" ? "GPU" : "simulator"} (${m.observed.join(", ")})`,
      );
    }
    const mm = r.metaMap;
    if (mm !== undefined && mm.agree !== mm.total) {
      lines.push(`${"".padEnd(w)}    metadata map ${mm.agree}/${mm.total}`);
      for (const m of mm.mismatches) {
        lines.push(
          `${"".padEnd(w)}    selector ${m.selector} row ${m.row} chunk ${m.chunk}: table lane ${
            m.table[0]
          } nibble ${m.table[1]}, ${r.mode === "gpu" ? "GPU" : "simulator"} lane ${
            m.observed[0]
          } nibble ${m.observed[1]}`,
        );
      }
    }
  }
  const bad = results.filter((r) => !r.ok).length;
  lines.push(
    bad === 0
      ? `All ${results.length} MMA shapes agree with the table (${results[0]?.mode ?? "gpu"})`
      : `${bad} of ${results.length} MMA shapes disagree with the table`,
  );
  return lines.join("\n") + "\n";
}

if (import.meta.main) {
  const sim = Deno.args.includes("--sim");
  const json = Deno.args.includes("--json");
  const unknown = Deno.args.filter((a) => a !== "--sim" && a !== "--json");
  if (unknown.length > 0) {
    console.error(`probe: unknown argument "${unknown[0]}": expected --sim, --json`);
    Deno.exit(2);
  }
  if (!sim) {
    const a = cudaAvailable();
    if (!a.ok) {
      console.error(`probe: ${a.why} (probe.ts --sim runs the probe there)`);
      Deno.exit(1);
    }
  }
  const results = await runProbe({
    mode: sim ? "sim" : "gpu",
    shapes: [...MMA_SHAPES, ...SPARSE_MMA_TABLE],
  });
  if (json) console.log(JSON.stringify({ results }, null, 2));
  else Deno.stdout.writeSync(new TextEncoder().encode(formatProbe(results)));
  Deno.exit(results.every((r) => r.ok) ? 0 : 1);
}
