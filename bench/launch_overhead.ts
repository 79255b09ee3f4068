/**
 * `deno task bench --launch`: the host time of one {@link LoadedKernel.launch}
 * against a raw `cuLaunchKernel` loop, on the same tiny kernel (hgemm's
 * parameters, its contract and grid, a body that only returns, so that the
 * GPU keeps up and the host's cost is what is measured).
 *
 * Both loops launch asynchronously on the default stream, `CALLS` calls per
 * batch, timed on the host around the loop alone; the stream is synchronised
 * after each batch, outside the timing. Batches alternate between the two
 * loops; the median batch of each gives µs per call. The raw loop reuses one
 * prebuilt parameter buffer and checks each CUresult; the launch API checks
 * the whole contract (sizes, alignments, lengths, overlaps, scalars) per
 * call. Goal: within 2 µs of the raw loop. Also reported: the contract check
 * and parameter patching alone (backends/cuda/bind.ts), with no driver call.
 *
 * Writes `bench/results/launch-overhead-DATE.md` (a new file: `-2`, `-3`, ...
 * when one exists).
 *
 * @module
 */

import { compile } from "../compiler.ts";
import { Cuda, cudaAvailable, packKernelParams } from "../backends/cuda/driver.ts";
import { type LoadedKernel, loadKernel } from "../backends/cuda/kernel.ts";
import { LaunchBinder } from "../backends/cuda/bind.ts";
import { kernelArgs } from "../backends/cuda/launch.ts";
import { contractGrid, launchContract } from "../backends/ptx/contract.ts";
import type { KernelManifest } from "../backends/ptx/manifest.ts";
import { median } from "../harness/timing.ts";

/** Calls per timed batch (below the driver's queue depth, so that no launch waits). */
const CALLS = 1000;
/** Timed batches of each loop. */
const BATCHES = 21;
/** The goal: the launch API within this many µs per call of the raw loop. */
export const LAUNCH_OVERHEAD_GOAL_US = 2;

/** The figures of one run. */
export interface LaunchOverhead {
  /** The device's name. */
  readonly device: string;
  /** Calls per batch, batches per loop. */
  readonly calls: number;
  readonly batches: number;
  /** Median µs per call: the raw `cuLaunchKernel` loop. */
  readonly rawUs: number;
  /** Median µs per call: {@link LoadedKernel.launch}. */
  readonly apiUs: number;
  /** Median µs per call: the contract check and parameter patching alone. */
  readonly bindUs: number;
}

/** hgemm's manifest and a PTX entry with its parameters that only returns. */
function nopKernel(): { ptx: string; manifest: KernelManifest } {
  const src = Deno.readTextFileSync(new URL("../examples/hgemm.gemm", import.meta.url));
  const ck = compile(src, { file: "examples/hgemm.gemm" }).kernels[0]!;
  const entry = "launch_overhead_nop";
  const header = ck.ptx.slice(0, ck.ptx.indexOf(".address_size"));
  const params = ck.manifest.params.map((p) => `  .param .${p.ptx} ${entry}_${p.name}`);
  const ptx = `${header}.address_size 64\n\n.visible .entry ${entry}(\n${
    params.join(",\n")
  }\n)\n{\n  ret;\n}\n`;
  return { ptx, manifest: { ...ck.manifest, entry, block: [128, 1, 1], dynamicSmemBytes: 0 } };
}

/**
 * Measures the launch overhead on the GPU.
 *
 * @returns The figures.
 */
export function measureLaunchOverhead(): LaunchOverhead {
  const { ptx, manifest } = nopKernel();
  const sizes = { M: 128, N: 256, K: 64 };
  const scalars = { alpha: 1.5, beta: 0.25 };
  using cuda = Cuda.open();
  using k: LoadedKernel = loadKernel({ ptx, manifest }, { cuda });
  const bufs = {
    A: cuda.alloc(128 * 64 * 2),
    B: cuda.alloc(64 * 256 * 2),
    C: cuda.alloc(128 * 256 * 4),
    D: cuda.alloc(128 * 256 * 4),
  };
  const addrs = new Map(Object.entries(bufs).map(([n, b]) => [n, b.ptr]));
  const args = kernelArgs(manifest, addrs, sizes, new Map(Object.entries(scalars)));
  const { pointers } = packKernelParams(args);
  const contract = launchContract(manifest);
  const [gx, gy, gz] = contractGrid(contract, sizes);
  const [bx, by, bz] = manifest.block;
  const d = cuda.driver;
  const fn = k.function.handle;
  const raw = () => {
    for (let i = 0; i < CALLS; i++) {
      const code = d.cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, 0, null, pointers, null);
      if (code !== 0) throw new Error(`cuLaunchKernel failed: ${code}`);
    }
  };
  const opts = { scalars };
  const api = () => {
    for (let i = 0; i < CALLS; i++) k.launch(bufs, sizes, opts);
  };
  const binder = new LaunchBinder(manifest, contract, cuda.device);
  const bind = () => {
    for (let i = 0; i < CALLS; i++) binder.bind(bufs, sizes, opts);
  };
  const time = (f: () => void) => {
    const t0 = performance.now();
    f();
    const us = (performance.now() - t0) * 1000 / CALLS;
    cuda.synchronize();
    return us;
  };
  // Warm-up: the JIT compiles each loop's code before the timed batches.
  for (let i = 0; i < 5; i++) [raw, api, bind].forEach(time);
  const samples = { raw: [] as number[], api: [] as number[], bind: [] as number[] };
  for (let i = 0; i < BATCHES; i++) {
    samples.raw.push(time(raw));
    samples.api.push(time(api));
    samples.bind.push(time(bind));
  }
  return {
    device: cuda.device.name,
    calls: CALLS,
    batches: BATCHES,
    rawUs: median(samples.raw),
    apiUs: median(samples.api),
    bindUs: median(samples.bind),
  };
}

/**
 * The figures as a Markdown report.
 *
 * @param r The figures.
 * @param command The command that produced them.
 * @returns The report.
 */
export function launchOverheadReport(r: LaunchOverhead, command: string): string {
  const diff = r.apiUs - r.rawUs;
  return [
    `# Launch overhead per call (${new Date().toISOString().slice(0, 10)})`,
    "",
    `\`${command}\` on ${r.device}. ${r.batches} batches of ${r.calls} asynchronous launches`,
    "of a kernel that only returns (hgemm's parameters, contract and grid), on the default",
    "stream, host time around each batch's loop (synchronised after it); medians.",
    "",
    "| loop | µs per call |",
    "| ---- | ----------: |",
    `| raw \`cuLaunchKernel\` (prebuilt parameters) | ${r.rawUs.toFixed(3)} |`,
    `| \`LoadedKernel.launch\` (contract checked per call) | ${r.apiUs.toFixed(3)} |`,
    `| its contract check and parameter patching alone | ${r.bindUs.toFixed(3)} |`,
    `| difference (launch API - raw) | ${diff.toFixed(3)} |`,
    "",
    `Goal: within ${LAUNCH_OVERHEAD_GOAL_US} µs of the raw loop: ${
      diff <= LAUNCH_OVERHEAD_GOAL_US ? "met" : "MISSED"
    }.`,
    "",
  ].join("\n");
}

/**
 * A path under bench/results that does not exist yet.
 *
 * @param stem The name before the date.
 * @returns The URL.
 */
function newResultFile(stem: string): URL {
  const date = new Date().toISOString().slice(0, 10);
  for (let i = 1;; i++) {
    const url = new URL(`./results/${stem}-${date}${i === 1 ? "" : `-${i}`}.md`, import.meta.url);
    try {
      Deno.statSync(url);
    } catch {
      return url;
    }
  }
}

/**
 * Runs the benchmark, prints it and records it.
 *
 * @param command The command line, for the record.
 * @returns False (and says why) without a driver.
 */
export function launchOverheadMain(command: string): boolean {
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.log(`Launch overhead: not measured: ${avail.why}`);
    return false;
  }
  const text = launchOverheadReport(measureLaunchOverhead(), command);
  console.log(text);
  const url = newResultFile("launch-overhead");
  Deno.writeTextFileSync(url, text);
  console.log(`Recorded in bench/results/${url.pathname.split("/").pop()}.`);
  return true;
}

if (import.meta.main) {
  if (!launchOverheadMain(["deno run -A bench/launch_overhead.ts", ...Deno.args].join(" "))) {
    Deno.exit(1);
  }
}
