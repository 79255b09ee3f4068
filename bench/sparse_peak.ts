/**
 * `deno run -A bench/sparse_peak.ts`: the `mma.sp` ceiling (issue 21) against the
 * dense `mma.sync` ceiling of the same type, in the same run: independent MMAs from
 * registers (bench/mma_peak.ts `peakKernel`), 4 blocks of 256 threads an SM, random
 * operands; `mma.sp` plain and `mma.sp::ordered_metadata`. Dense-equivalent TFLOP/s
 * (a sparse m16n8k32 counts 2·16·8·32), burst (median of 5 after 2 warm-ups) and
 * sustained (after 1.5 s of load, bench/gpu_measure.ts). {@link sparsePeaks}
 * measures them on an open context (bench/sparse.ts takes its ceilings from it).
 *
 * Writes `bench/results/sparse-peak-DATE.md` (a new file when one exists).
 *
 * @module
 */

import { Cuda, cudaAvailable } from "../backends/cuda/driver.ts";
import { printPtx } from "../backends/ptx/print.ts";
import type { Kernel } from "../ir/kernel.ts";
import { PEAK_SHAPES, PEAK_THREADS, peakKernel, peakOps, SPARSE_PEAK_SHAPES } from "./mma_peak.ts";
import { timeIt, timeSustained } from "./gpu_measure.ts";
import { freshResultPath } from "./results.ts";

/** A ceiling kernel: the dense `mma.sync`, or `mma.sp` plain or with ordered metadata. */
export type SparsePeakVariant = "dense mma.sync" | "mma.sp" | "mma.sp::ordered_metadata";

/** Every {@link SparsePeakVariant}, in the record's order. */
export const SPARSE_PEAK_VARIANTS: readonly SparsePeakVariant[] = [
  "dense mma.sync",
  "mma.sp",
  "mma.sp::ordered_metadata",
];

/** One measured kernel: dense-equivalent TFLOP/s (TOP/s for s8). */
export interface SparsePeakRow {
  readonly type: string;
  readonly variant: SparsePeakVariant;
  readonly shape: string;
  readonly burst: number;
  readonly sustained: number;
}

/** What {@link sparsePeaks} measures, and how it names each row on the console. */
export interface SparsePeakOptions {
  /** The types, in this order (default every {@link SPARSE_PEAK_SHAPES} type; others skipped). */
  readonly types?: readonly string[];
  /** The kernels of each type (default all; the dense one where PEAK_SHAPES has the type). */
  readonly variants?: readonly SparsePeakVariant[];
  /** Each row's console line is `LABEL (SHAPE): B burst, S sustained` (default `TYPE VARIANT`). */
  readonly label?: (row: SparsePeakRow) => string;
}

/**
 * Measures the ceilings on an open context: independent MMAs from registers,
 * `blocks` (4 an SM) of {@link PEAK_THREADS} threads, random operands; burst
 * (median of 5 after 2 warm-ups) and sustained (after 1.5 s of load).
 *
 * @param cuda The context.
 * @param options The types, the variants, the console label.
 * @returns The blocks launched and a row per kernel (type by type, variants in
 *   {@link SPARSE_PEAK_VARIANTS} order).
 */
export function sparsePeaks(
  cuda: Cuda,
  options: SparsePeakOptions = {},
): { blocks: number; rows: SparsePeakRow[] } {
  const variants = options.variants ?? SPARSE_PEAK_VARIANTS;
  const label = options.label ?? ((r: SparsePeakRow) => `${r.type} ${r.variant}`);
  const iters = 2048;
  const cases: { type: string; variant: SparsePeakVariant; shape: string; kernel: Kernel }[] = [];
  for (const t of options.types ?? Object.keys(SPARSE_PEAK_SHAPES)) {
    const sp = SPARSE_PEAK_SHAPES[t];
    if (sp === undefined) continue;
    for (const variant of SPARSE_PEAK_VARIANTS.filter((v) => variants.includes(v))) {
      const shape = variant === "dense mma.sync" ? PEAK_SHAPES[t] : sp;
      if (shape === undefined) continue;
      const ordered = variant === "mma.sp::ordered_metadata";
      cases.push({
        type: t,
        variant,
        shape,
        kernel: peakKernel(shape, undefined, "random", ordered),
      });
    }
  }
  const blocks = cuda.device.multiprocessors * 4;
  const rows: SparsePeakRow[] = [];
  if (cases.length === 0) return { blocks, rows };
  const mod = cuda.loadModule(printPtx(cases.map((c) => c.kernel), { minBlocksPerSm: 1 }));
  const buf = cuda.alloc(blocks * PEAK_THREADS * 8);
  try {
    for (const c of cases) {
      const fn = mod.getFunction(c.kernel.name);
      const run = (n: number) => () =>
        cuda.launch(
          fn,
          { grid: [blocks, 1, 1], block: [PEAK_THREADS, 1, 1], dynamicSmemBytes: 0 },
          [{ type: "u64", value: buf.ptr }, { type: "u32", value: n }],
        );
      const tf = (ops: number, ms: number) => ops / (ms * 1e-3) / 1e12;
      const burst = tf(peakOps(c.shape, blocks, iters), timeIt(cuda, run(iters), 2, 5));
      const long = run(3 * iters);
      const sustained = tf(
        peakOps(c.shape, blocks, 3 * iters),
        timeSustained(cuda, long, timeIt(cuda, long, 1, 2)),
      );
      const row = { type: c.type, variant: c.variant, shape: c.shape, burst, sustained };
      rows.push(row);
      console.log(
        `${label(row)} (${c.shape}): ${burst.toFixed(0)} burst, ${sustained.toFixed(0)} sustained`,
      );
    }
  } finally {
    buf.free();
    mod.unload();
  }
  return { blocks, rows };
}

/** Runs the comparison and records it; false without a driver. */
export function sparsePeakMain(command: string): boolean {
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.error(`sparse_peak: ${avail.why}`);
    return false;
  }
  using cuda = Cuda.open();
  const { blocks, rows } = sparsePeaks(cuda);
  const dense = (t: string) => rows.find((r) => r.type === t && r.variant.startsWith("dense"));
  const lines = [
    `# mma.sp ceiling against mma.sync (${new Date().toISOString().slice(0, 10)})`,
    "",
    `\`${command}\` on ${cuda.device.name}: ${blocks} blocks of ${PEAK_THREADS} threads, independent MMAs ` +
    "from registers, random operands; dense-equivalent TFLOP/s (TOP/s for s8).",
    "",
    "| type | kernel | shape | burst | sustained | burst / dense | sustained / dense |",
    "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ...rows.map((r) => {
      const d = dense(r.type);
      const ratio = (a: number, b: number | undefined) =>
        b === undefined ? "-" : (a / b).toFixed(2);
      return `| ${r.type} | ${r.variant} | ${r.shape} | ${r.burst.toFixed(0)} | ${
        r.sustained.toFixed(0)
      } | ${ratio(r.burst, d?.burst)} | ${ratio(r.sustained, d?.sustained)} |`;
    }),
  ];
  const text = lines.join("\n") + "\n";
  console.log(text);
  const path = freshResultPath(
    new URL("results", import.meta.url).pathname,
    `sparse-peak-${new Date().toISOString().slice(0, 10)}`,
    ".md",
  );
  Deno.writeTextFileSync(path, text);
  console.log(`Recorded in ${path}.`);
  return true;
}

if (import.meta.main) {
  if (!sparsePeakMain(["deno run -A bench/sparse_peak.ts", ...Deno.args].join(" "))) Deno.exit(1);
}
