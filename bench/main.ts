/**
 * `deno task bench`: the project's benchmarks, printed as tables.
 *
 * 1. The simulator (bench/sim_bench.ts): a 256x256x256 f16 GEMM, whole grid,
 *    hazards on and off; recorded in a new `bench/results/sim-DATE.md`
 *    (`sim-DATE-2.md`, ... when that exists: bench/results.ts).
 * 2. Compile time: for every kernel of every example, the median time to
 *    compile it from source to PTX in-process (parse, check, passes,
 *    lowering, PTX printing), after warm-up. Target: <= 10 ms per kernel.
 *    `--target T` compiles them for T (sm90: wgmma and TMA) instead of their own.
 * 3. `--gpu`: imports `./gpu_bench.ts` when it exists and calls its exported
 *    `main(args)` with the remaining arguments; otherwise says that the GPU
 *    benchmark is not available. Without a CUDA driver, `--gpu` exits 1
 *    with one line on stderr before any benchmark runs.
 *
 * 4. `--launch`: the launch overhead per call of the Deno launch API against
 *    a raw `cuLaunchKernel` loop (bench/launch_overhead.ts); recorded in
 *    `bench/results/launch-overhead-DATE.md`; exits 1 without a driver.
 * 5. `--strided`: strided kernels against dense at 8192³, f16 and bf16, both
 *    states of the card (bench/strided_cost.ts); recorded in
 *    `bench/results/strided-DATE.md`; exits 1 without a driver.
 * 6. `--grouped`: grouped GEMM for mixture-of-experts layers, bf16, against a
 *    loop of per-expert cuBLAS calls and `torch._grouped_mm` in the same run
 *    (bench/grouped.ts); with `--target sm90`, sm90's wgmma kernels among the
 *    candidates beside the sm80 ones; recorded in `bench/results/grouped-DATE.md`;
 *    exits 1 without a driver.
 * 7. `--sparse`: 2:4 structured-sparse A against the dense kernel of the same
 *    type (f16, bf16, tf32, s8) at 8192³, with the `mma.sp` ceiling and the
 *    PyTorch peers (cuBLAS, cuSPARSELt) in the same run (bench/sparse.ts);
 *    recorded in `bench/results/sparse-DATE.md`; exits 1 without a driver.
 * 8. `--gpu --shapes llm`: instead of the shapes of `--gpu`, the skinny shapes
 *    of LLM inference (issue 22: f16, bf16 and s8, M from 1 to 1024, (N, K) of
 *    a projection, an up- and a down-projection) against cuBLAS and the floor
 *    (HBM copy bandwidth or the mma.sync ceiling, measured in the same run),
 *    timed in back-to-back series in both states of the card (bench/llm.ts);
 *    with `--types f16,bf16,s8`, `--m 1,16,...`, `--nk 4096x4096,...`, `--sizes MxNxK,...`
 *    (these problems instead of the table's), `--no-cublas`,
 *    `--target T`, `--schedule "LINES"` (every row's kernel with these schedule lines) and
 *    `--pdl` (ours timed again as programmatic dependent launches: the columns
 *    ours+PDL µs and ours+PDL/floor, and its targets' verdicts; `--pdl-early`: the
 *    same, its kernel reading B, the weights, before its wait) and `--copy` (a
 *    device-to-device copy of each row's bytes timed beside: the columns copy µs
 *    and copy/floor, what one launch of those bytes reaches) and `--read` (a
 *    streaming kernel of each row's bytes timed beside: read µs and read/floor,
 *    what one kernel launch of those bytes reaches); recorded in
 *    `bench/results/llm-DATE.md` and `.json`; exits 1 without a driver or when
 *    a row fails its check. `--shapes llm,8192` runs the table, then `--gpu`
 *    at the other shapes.
 *
 * 9. `--fp8`: sm90's 8-bit float GEMM (issue 23: e4m3, and e4m3 x e5m2, bf16
 *    out, per-tensor scales) at 8192³, 4096³ and 5008³ against
 *    `torch._scaled_mm` in the same run, both states (bench/fp8.ts); without
 *    `--gpu`, the other arguments are its own (`--types`, `--shapes`,
 *    `--no-peers`, `--out`, `--dry`: the plan, no GPU); recorded in
 *    `bench/results/fp8-DATE.md` and `.json`; exits 1 without a driver or when
 *    one of gemmc's kernels fails.
 *
 * Options: `--no-sim`, `--no-compile`, `--no-record` (do not write the
 * simulator record), `--gpu`, `--shapes llm` (with `--gpu`; `--pdl`, `--pdl-early`, `--copy`, `--read` with it), `--launch`,
 * `--strided`, `--grouped`, `--sparse`, `--fp8`.
 *
 * @module
 */

import { compile } from "../compiler.ts";
import { simBenchMain } from "./sim_bench.ts";
import { median } from "../harness/timing.ts";
import { launchOverheadMain } from "./launch_overhead.ts";
import { stridedCostMain } from "./strided_cost.ts";
import { groupedBenchMain, groupedTarget } from "./grouped.ts";
import { isTargetName, type Target } from "../ir/target.ts";
import { sparseBenchMain } from "./sparse.ts";
import { llmBenchMain } from "./llm.ts";
import { fp8BenchMain, type Fp8BenchOptions, parseFp8Args } from "./fp8.ts";
import { cudaAvailable } from "../backends/cuda/driver.ts";

/** Target: milliseconds to compile one kernel from source to PTX. */
export const COMPILE_TARGET_MS = 10;

/** One kernel's compile-time figures. */
export interface CompileBenchRow {
  readonly file: string;
  readonly kernel: string;
  readonly medianMs: number;
  readonly minMs: number;
  /** The first compile in this process (includes JIT warm-up of the compiler). */
  readonly coldMs: number;
  readonly ptxLines: number;
}

/**
 * Times compiling every kernel of every example to PTX.
 *
 * @param options `warmup` untimed compiles and `runs` timed ones per kernel; `target` overrides
 *   the examples' own (`--target`: sm90's wgmma and TMA lowering).
 * @returns One row per kernel.
 */
export function runCompileBench(
  options: { warmup?: number; runs?: number; target?: Target } = {},
): CompileBenchRow[] {
  const warmup = options.warmup ?? 5;
  const runs = options.runs ?? 21;
  const target = options.target !== undefined ? { target: options.target } : {};
  const dir = new URL("../examples/", import.meta.url);
  const files = [...Deno.readDirSync(dir)]
    .filter((e) => e.isFile && e.name.endsWith(".gemm"))
    .map((e) => e.name)
    .sort();
  const rows: CompileBenchRow[] = [];
  for (const name of files) {
    const file = `examples/${name}`;
    const source = Deno.readTextFileSync(new URL(name, dir));
    const all = compile(source, { file, ...target });
    if (!all.ok) throw new Error(`${file} does not compile`);
    for (const k of all.kernels) {
      const once = () => {
        const t0 = performance.now();
        const r = compile(source, { file, kernel: k.name, ...target });
        const ms = performance.now() - t0;
        const ptx = r.kernels[0]?.ptx;
        if (!r.ok || ptx === undefined || ptx.length === 0) {
          throw new Error(`${file}: ${k.name} gave no PTX`);
        }
        return { ms, ptx };
      };
      const cold = once();
      for (let i = 0; i < warmup; i++) once();
      const times: number[] = [];
      for (let i = 0; i < runs; i++) times.push(once().ms);
      rows.push({
        file,
        kernel: k.name,
        medianMs: median(times),
        minMs: Math.min(...times),
        coldMs: cold.ms,
        ptxLines: cold.ptx.split("\n").length,
      });
    }
  }
  return rows;
}

/** The compile-time table. */
export function compileBenchTable(rows: readonly CompileBenchRow[]): string {
  const lines = [
    `| example | kernel | median ms | min ms | first ms | PTX lines | target <= ${COMPILE_TARGET_MS} ms |`,
    "| ------- | ------ | --------: | -----: | -------: | --------: | ------------- |",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.file} | ${r.kernel} | ${r.medianMs.toFixed(2)} | ${r.minMs.toFixed(2)} | ${
        r.coldMs.toFixed(1)
      } | ${r.ptxLines} | ${r.medianMs <= COMPILE_TARGET_MS ? "met" : "MISSED"} |`,
    );
  }
  const met = rows.filter((r) => r.medianMs <= COMPILE_TARGET_MS).length;
  lines.push("", `${met} of ${rows.length} kernels within ${COMPILE_TARGET_MS} ms (median).`);
  return lines.join("\n");
}

/**
 * The `--gpu` hook: runs `./gpu_bench.ts` when it exists.
 *
 * @param args Arguments passed on to its `main`.
 * @returns Whether a GPU benchmark ran.
 */
export async function gpuBench(args: readonly string[]): Promise<boolean> {
  const url = new URL("./gpu_bench.ts", import.meta.url);
  try {
    Deno.statSync(url);
  } catch {
    console.log("GPU benchmark: not available (bench/gpu_bench.ts does not exist yet).");
    return false;
  }
  // A computed specifier: the module is optional, so it is not part of the type-checked graph.
  const mod = await import(url.href) as { main?: (args: readonly string[]) => unknown };
  if (typeof mod.main !== "function") {
    console.log("GPU benchmark: bench/gpu_bench.ts exports no main(args); nothing to run.");
    return false;
  }
  await mod.main(args);
  return true;
}

if (import.meta.main) {
  const args = [...Deno.args];
  const flag = (f: string) => {
    const i = args.indexOf(f);
    if (i >= 0) args.splice(i, 1);
    return i >= 0;
  };
  const noSim = flag("--no-sim");
  const noCompile = flag("--no-compile");
  const noRecord = flag("--no-record");
  const gpu = flag("--gpu");
  const launch = flag("--launch");
  const strided = flag("--strided");
  const grouped = flag("--grouped");
  const sparse = flag("--sparse");
  const fp8 = flag("--fp8");
  // `--fp8` without `--gpu`: the other arguments are bench/fp8.ts's own.
  let fp8Options: Fp8BenchOptions = {};
  if (fp8 && !gpu) {
    const o = parseFp8Args(args);
    if (typeof o === "string") {
      console.error(`deno task bench --fp8: ${o}`);
      Deno.exit(2);
    }
    fp8Options = o;
  }
  // `--shapes llm`: the LLM table (bench/llm.ts); other shapes stay for gpu_bench.ts.
  const shapesAt = args.indexOf("--shapes");
  const shapes = shapesAt >= 0 ? (args[shapesAt + 1] ?? "").split(",") : [];
  const llm = shapes.includes("llm");
  const otherShapes = shapes.filter((s) => s !== "llm");
  if (llm) {
    if (otherShapes.length > 0) args[shapesAt + 1] = otherShapes.join(",");
    else args.splice(shapesAt, 2);
  }
  if (llm && !gpu) {
    console.error("deno task bench --shapes llm: needs --gpu (deno task bench --gpu --shapes llm)");
    Deno.exit(1);
  }
  // `--pdl`, `--copy`, `--read`: options of the LLM table alone (bench/llm.ts parses them).
  const llmFlag = ["--pdl", "--pdl-early", "--copy", "--read"].find((f) => args.includes(f));
  if (llmFlag !== undefined && !llm) {
    console.error(`deno task bench ${llmFlag}: only with --gpu --shapes llm (bench/llm.ts)`);
    Deno.exit(1);
  }
  // Asked for the GPU and there is none: say so and fail before the minutes of the others.
  const needsGpu = gpu || (fp8 && fp8Options.dry !== true);
  const driver = needsGpu ? cudaAvailable() : { ok: true as const };
  if (!driver.ok) {
    console.error(`deno task bench ${gpu ? "--gpu" : "--fp8"}: ${driver.why}`);
    Deno.exit(1);
  }
  if (!noSim) {
    console.log("## Simulator\n");
    await simBenchMain(!noRecord, ["deno task bench", ...Deno.args].join(" "));
    console.log("");
  }
  if (!noCompile) {
    // `--target T` (bench/grouped.ts parses it for every benchmark that takes one).
    const target = args.includes("--target") ? groupedTarget(args) : undefined;
    if (target !== undefined && !isTargetName(target)) {
      console.error(`deno task bench: ${target}`);
      Deno.exit(2);
    }
    console.log(
      `## Compile time (source to PTX, in-process${target ? `, target ${target}` : ""})\n`,
    );
    console.log(compileBenchTable(runCompileBench(target ? { target } : {})));
    console.log("");
  }
  if (gpu && llm) {
    console.log("## GPU: skinny shapes of LLM inference (issue 22)\n");
    if (!llmBenchMain(["deno task bench", ...Deno.args].join(" "), args)) Deno.exit(1);
  }
  if (gpu && (!llm || otherShapes.length > 0)) {
    console.log("## GPU\n");
    await gpuBench(args);
  }
  if (launch) {
    console.log("## Launch overhead\n");
    if (!launchOverheadMain(["deno task bench", ...Deno.args].join(" "))) Deno.exit(1);
  }
  if (strided) {
    console.log("## Strided against dense\n");
    if (!stridedCostMain(["deno task bench", ...Deno.args].join(" "))) Deno.exit(1);
  }
  if (grouped) {
    console.log("## Grouped (mixture of experts)\n");
    // `--target sm90`: sm90's wgmma kernels beside the sm80 ones (read here, and kept in args
    // for the GPU benchmark).
    const target = groupedTarget(args);
    if (!isTargetName(target)) {
      console.error(`deno task bench --grouped: ${target}`);
      Deno.exit(2);
    }
    const command = ["deno task bench", ...Deno.args].join(" ");
    if (!groupedBenchMain(command, undefined, target)) Deno.exit(1);
  }
  if (sparse) {
    console.log("## 2:4 sparse against dense\n");
    if (!sparseBenchMain(["deno task bench", ...Deno.args].join(" "))) Deno.exit(1);
  }
  if (fp8) {
    console.log("## 8-bit floats (sm90) against torch._scaled_mm\n");
    const command = ["deno task bench", ...Deno.args].join(" ");
    if (!await fp8BenchMain(command, fp8Options)) Deno.exit(1);
  }
}
