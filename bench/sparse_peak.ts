/**
 * `deno run -A bench/sparse_peak.ts`: the `mma.sp` ceiling (issue 21) against the
 * dense `mma.sync` ceiling of the same type, in the same run: independent MMAs from
 * registers (bench/mma_peak.ts `peakKernel`), 4 blocks of 256 threads an SM, random
 * operands; `mma.sp` plain and `mma.sp::ordered_metadata`. Dense-equivalent TFLOP/s
 * (a sparse m16n8k32 counts 2·16·8·32), burst (median of 5 after 2 warm-ups) and
 * sustained (after 1.5 s of load, bench/gpu_measure.ts).
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

/** One measured kernel. */
interface Row {
  readonly type: string;
  readonly variant: string;
  readonly shape: string;
  readonly burst: number;
  readonly sustained: number;
}

/** Runs the comparison and records it; false without a driver. */
export function sparsePeakMain(command: string): boolean {
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.error(`sparse_peak: ${avail.why}`);
    return false;
  }
  using cuda = Cuda.open();
  const iters = 2048;
  const cases: { type: string; variant: string; shape: string; kernel: Kernel }[] = [];
  for (const [t, sp] of Object.entries(SPARSE_PEAK_SHAPES)) {
    const dense = PEAK_SHAPES[t];
    if (dense !== undefined) {
      cases.push({
        type: t,
        variant: "dense mma.sync",
        shape: dense,
        kernel: peakKernel(dense, undefined, "random"),
      });
    }
    cases.push({
      type: t,
      variant: "mma.sp",
      shape: sp,
      kernel: peakKernel(sp, undefined, "random", false),
    });
    cases.push({
      type: t,
      variant: "mma.sp::ordered_metadata",
      shape: sp,
      kernel: peakKernel(sp, undefined, "random", true),
    });
  }
  const mod = cuda.loadModule(printPtx(cases.map((c) => c.kernel), { minBlocksPerSm: 1 }));
  const blocks = cuda.device.multiprocessors * 4;
  const buf = cuda.alloc(blocks * PEAK_THREADS * 8);
  const rows: Row[] = [];
  for (const c of cases) {
    const fn = mod.getFunction(c.kernel.name);
    const run = (n: number) => () =>
      cuda.launch(fn, { grid: [blocks, 1, 1], block: [PEAK_THREADS, 1, 1], dynamicSmemBytes: 0 }, [
        { type: "u64", value: buf.ptr },
        { type: "u32", value: n },
      ]);
    const tf = (ops: number, ms: number) => ops / (ms * 1e-3) / 1e12;
    const burst = tf(peakOps(c.shape, blocks, iters), timeIt(cuda, run(iters), 2, 5));
    const long = run(3 * iters);
    const sustained = tf(
      peakOps(c.shape, blocks, 3 * iters),
      timeSustained(cuda, long, timeIt(cuda, long, 1, 2)),
    );
    rows.push({ type: c.type, variant: c.variant, shape: c.shape, burst, sustained });
    console.log(
      `${c.type} ${c.variant} (${c.shape}): ${burst.toFixed(0)} burst, ${
        sustained.toFixed(0)
      } sustained`,
    );
  }
  buf.free();
  mod.unload();
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
