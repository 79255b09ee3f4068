/**
 * `deno task bench --grouped`: grouped GEMM for mixture-of-experts layers (issue 20's
 * rows), bf16, against PyTorch in the same run.
 *
 * Each row: E experts, T routed tokens sorted by expert (counts drawn from a skewed
 * distribution, some experts empty), X `[T, K]` row-major, the expert weights
 * `[E, N, K]` (each expert's K x N B read column-major), Y `[T, N]` bf16. Our grouped
 * kernel runs the table that `moeProblems` builds from the offsets `offs[g]` (one
 * launch); a few schedules are compiled (the default, the one `--tune` picks for the
 * average expert, and fixed ones for the regime), each checked on sampled elements
 * against a float64 dot product and timed in a burst; the fastest is then timed in
 * both states of the card (bench/gpu_measure.ts). The peers, in the same run right
 * after (bench/peers/grouped_peers.py, a Python subprocess on the same GPU): a loop
 * of per-expert cuBLAS calls (`torch.mm`) and `torch._grouped_mm`, each checked and
 * timed with the same protocol.
 *
 * Figures: prefill rows in TFLOP/s (2·T·N·K) and their ratios to the peers; decode
 * rows as a share of the weight-reading floor (the bytes of the experts that got
 * tokens, read once at the copy bandwidth {@link COPY_BYTES_PER_S}, ../shared/ANCHORS.md).
 *
 * Writes `bench/results/grouped-DATE.md` (a new file: `-2`, ... when one exists) and
 * the raw figures beside it as JSON.
 *
 * Shortcut: inputs are a 64 MiB random pool copied over each buffer at rotating
 * offsets (drawing 15 GB of weights on the host would take minutes); the check
 * reads the same pool.
 *
 * @module
 */

import { compile, type CompiledKernel } from "../compiler.ts";
import { Cuda, cudaAvailable } from "../backends/cuda/driver.ts";
import { check as checkCuda } from "../backends/cuda/errors.ts";
import { loadKernel } from "../backends/cuda/kernel.ts";
import { moeProblems } from "../backends/cuda/grouped.ts";
import type { DeviceBuffer } from "../backends/cuda/resources.ts";
import { decodeTensor, encodeTensor } from "../harness/device_tensor.ts";
import { Rng } from "../numerics/random.ts";
import { timeBurst, timeSustained } from "./gpu_measure.ts";
import { freshResultPath } from "./results.ts";
import { isTargetName, type Target, targetList } from "../ir/target.ts";

/** Device-to-device copy bandwidth of the H200, read + write counted (ANCHORS.md). */
const COPY_BYTES_PER_S = 4.3e12;

/** One benchmark row (issue 20). */
export interface GroupedRow {
  readonly name: string;
  readonly kind: "prefill" | "decode";
  readonly E: number;
  readonly tokens: number;
  readonly N: number;
  readonly K: number;
}

/** The rows of issue 20. */
export const GROUPED_ROWS: readonly GroupedRow[] = [
  { name: "prefill E=128", kind: "prefill", E: 128, tokens: 32768, N: 1536, K: 2048 },
  { name: "prefill E=64", kind: "prefill", E: 64, tokens: 8192, N: 2816, K: 2048 },
  { name: "prefill E=256", kind: "prefill", E: 256, tokens: 32768, N: 4096, K: 7168 },
  { name: "decode E=8", kind: "decode", E: 8, tokens: 64, N: 14336, K: 4096 },
  { name: "decode E=128", kind: "decode", E: 128, tokens: 512, N: 1536, K: 2048 },
];

/** Fixed schedules tried per regime, beside the default and the tuned one. */
const SCHEDULES: Readonly<Record<GroupedRow["kind"], readonly string[]>> = {
  prefill: [
    "threadblock 128x128x64\n    warp 64x64x64\n    stages 4",
    "threadblock 64x256x32\n    warp 64x64x32\n    stages 4",
    "threadblock 64x128x64\n    warp 32x64x64\n    stages 4",
    "threadblock 128x128x32\n    warp 64x64x32\n    stages 4",
    "threadblock 96x256x32\n    warp 96x64x32\n    stages 4",
  ],
  decode: [
    "threadblock 16x128x64\n    warp 16x32x64\n    stages 6",
    "threadblock 32x128x64\n    warp 32x32x64\n    stages 5",
    "threadblock 16x64x128\n    warp 16x16x128\n    stages 6",
  ],
};

/** With `--target sm90`: warpgroup-MMA tiles tried beside sm90's default (passes/wgmma.ts;
 * a wgmma schedule names no warp tile), prefill rows only: a decode expert's few tokens fill
 * a sixteenth of a 64-row wgmma tile, and the sm80 decode tiles already stream the weights
 * near the floor (bench/NOTES.md 52). */
const SM90_SCHEDULES: readonly string[] = [
  "threadblock 64x256x64",
  "threadblock 128x128x64",
  "threadblock 128x192x64",
];

/** The kernel's source, with a schedule block or none. */
function source(schedule: string | null): string {
  return "kernel experts grouped {\n  X: bf16[M, K] row\n  W: bf16[K, N] col\n" +
    "  Y: bf16[M, N] row\n  Y[m, n] = X[m, k] * W[k, n]\n" +
    (schedule === null ? "" : `  schedule {\n    ${schedule}\n  }\n`) + "}\n";
}

/**
 * Tokens per expert: a skewed draw (log-normal weights, sigma 1.2), the
 * `ceil(E / 16)` lightest experts given none, the rest rounded to sum to `tokens`.
 *
 * @param E Experts.
 * @param tokens Routed tokens.
 * @param rng The generator.
 * @returns Counts per expert.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { Rng } from "../numerics/random.ts";
 * import { routedCounts } from "./grouped.ts";
 * const c = routedCounts(16, 1000, new Rng(1));
 * equal(c.reduce((a, b) => a + b, 0), 1000);
 * ok(c.some((x) => x === 0));
 * ```
 */
export function routedCounts(E: number, tokens: number, rng: Rng): number[] {
  const w = Array.from({ length: E }, () => {
    const u = Math.max(rng.next(), 1e-12), v = rng.next();
    return Math.exp(1.2 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v));
  });
  const order = [...w.keys()].sort((a, b) => w[a]! - w[b]!);
  for (const g of order.slice(0, Math.ceil(E / 16))) w[g] = 0;
  const sum = w.reduce((a, b) => a + b, 0);
  const counts = w.map((x) => Math.floor((tokens * x) / sum));
  let left = tokens - counts.reduce((a, b) => a + b, 0);
  for (const g of order.toReversed()) {
    if (left === 0) break;
    counts[g]!++;
    left--;
  }
  return counts;
}

/** A random bf16 pool and the device buffers filled from it at rotating offsets. */
class Pool {
  static readonly ELEMS = 32 * 1024 * 1024;
  readonly bytes: Uint8Array;
  readonly values: ArrayLike<number>;
  constructor(rng: Rng) {
    const v = new Float32Array(Pool.ELEMS);
    for (let i = 0; i < v.length; i++) v[i] = rng.next() * 2 - 1;
    this.bytes = encodeTensor(v, "bf16");
    this.values = decodeTensor(this.bytes, "bf16", Pool.ELEMS);
  }
  /** The rotation of chunk j. */
  static shift(j: number): number {
    return (j * 7919 * 64) % Pool.ELEMS;
  }
  /** Element e of a buffer filled by {@link fill}. */
  at(e: number): number {
    const j = Math.floor(e / Pool.ELEMS);
    return this.values[((e % Pool.ELEMS) + Pool.shift(j)) % Pool.ELEMS]!;
  }
  /** Fills `elems` bf16 elements of `buf` chunk by chunk. */
  fill(cuda: Cuda, buf: DeviceBuffer, elems: number): void {
    const d = cuda.driver;
    for (let j = 0; j * Pool.ELEMS < elems; j++) {
      const n = Math.min(Pool.ELEMS, elems - j * Pool.ELEMS);
      const s = Pool.shift(j);
      const base = buf.ptr + BigInt(j * Pool.ELEMS * 2);
      const first = Math.min(n, Pool.ELEMS - s);
      const put = (at: bigint, from: number, count: number) =>
        checkCuda(
          d,
          "cuMemcpyHtoD_v2",
          d.cuMemcpyHtoD_v2(
            at,
            this.bytes.subarray(from * 2, (from + count) * 2),
            BigInt(count * 2),
          ),
        );
      put(base, s, first);
      if (n > first) put(base + BigInt(first * 2), 0, n - first);
    }
  }
}

/** A compiled kernel's planned schedule: `sm80 128x128x64, warp 64x64x64, 4 stages` (sm90's
 * wgmma kernels: `sm90 wgmma 128x256x64, 4 stages`). */
function scheduleText(ck: CompiledKernel): string {
  const s = ck.planned.schedule;
  const tb = s.threadblock, wp = s.warp;
  if (tb === undefined || wp === undefined) return "?";
  const stages = `${s.stages} stages`;
  if (ck.planned.plan.mma?.wgmma !== undefined) {
    return `${ck.gemm.target} wgmma ${tb.m}x${tb.n}x${tb.k}, ${stages}`;
  }
  return `${ck.gemm.target} ${tb.m}x${tb.n}x${tb.k}, warp ${wp.m}x${wp.n}x${wp.k}, ${stages}`;
}

/** One candidate schedule's figures. */
interface Candidate {
  readonly label: string;
  readonly schedule: string;
  readonly burstMs: number;
  readonly check: string;
  readonly ok: boolean;
}

/** One peer's figures, as bench/peers/grouped_peers.py writes them. */
interface PeerFigures {
  readonly burst_ms?: number | null;
  readonly sustained_ms?: number | null;
  readonly ok?: boolean;
  readonly unavailable?: string;
}

/** One row's results. */
interface RowResult {
  readonly row: GroupedRow;
  readonly counts: readonly number[];
  readonly candidates: readonly Candidate[];
  readonly best: Candidate | null;
  readonly burstMs: number;
  readonly sustainedMs: number;
  readonly loop: PeerFigures | null;
  readonly grouped: PeerFigures | null;
  readonly flops: number;
  readonly weightBytes: number;
}

/** Checks 64 sampled outputs of a launch against float64 dot products. */
function checkOutput(
  pool: Pool,
  y: Uint8Array,
  row: GroupedRow,
  offs: readonly number[],
  rng: Rng,
): { ok: boolean; text: string } {
  const { N, K, E } = row;
  const T = offs[E - 1]!;
  const got = decodeTensor(y, "bf16", T * N);
  let worst = 0;
  for (let s = 0; s < 64; s++) {
    const t = rng.int(0, T - 1), n = rng.int(0, N - 1);
    let g = 0;
    while (offs[g]! <= t) g++;
    let ref = 0, mag = 0;
    for (let k = 0; k < K; k++) {
      const p = pool.at(t * K + k) * pool.at((g * N + n) * K + k);
      ref += p;
      mag += Math.abs(p);
    }
    const bound = K * 2 ** -23 * mag + Math.abs(ref) * 2 ** -7 + 1e-30;
    const e = Math.abs(got[t * N + n]! - ref) / bound;
    worst = Number.isFinite(e) ? Math.max(worst, e) : Infinity;
  }
  const ok = worst <= 1;
  return { ok, text: `${ok ? "ok" : "FAILED"} (worst error/bound ${worst.toFixed(3)})` };
}

/** Runs the peers script on the rows; null where Python or PyTorch is missing. */
function runPeers(rows: readonly { row: GroupedRow; counts: readonly number[] }[]): unknown {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc-grouped-" });
  const input = `${dir}/in.json`, output = `${dir}/out.json`;
  Deno.writeTextFileSync(
    input,
    JSON.stringify({
      seed: 1,
      states: ["burst", "sustained"],
      rows: rows.map(({ row, counts }) => ({
        name: row.name,
        E: row.E,
        N: row.N,
        K: row.K,
        counts,
      })),
    }),
  );
  const script = new URL("peers/grouped_peers.py", import.meta.url).pathname;
  const r = new Deno.Command("python3", { args: [script, input, output] }).outputSync();
  console.log(new TextDecoder().decode(r.stdout));
  if (!r.success) {
    console.error(`grouped peers failed: ${new TextDecoder().decode(r.stderr).slice(-2000)}`);
    return null;
  }
  return JSON.parse(Deno.readTextFileSync(output));
}

/** Times one row's candidates; the fastest correct one in both states. */
function runRow(
  cuda: Cuda,
  pool: Pool,
  row: GroupedRow,
  counts: readonly number[],
  target: Target,
): RowResult {
  const { E, N, K } = row;
  const offs: number[] = [];
  counts.reduce((a, c) => (offs.push(a + c), a + c), 0);
  const T = offs[E - 1]!;
  const sms = cuda.device.multiprocessors;
  const x = cuda.alloc(Math.max(T * K * 2, 16));
  const w = cuda.alloc(E * N * K * 2);
  const y = cuda.alloc(Math.max(T * N * 2, 16));
  pool.fill(cuda, x, T * K);
  pool.fill(cuda, w, E * N * K);
  const used = counts.filter((c) => c > 0).length;
  const weightBytes = used * N * K * 2;
  const flops = 2 * T * N * K;
  const est = row.kind === "prefill" ? (flops / 400e12) * 1e3 : (weightBytes / 3e12) * 1e3;
  const avgM = Math.max(1, Math.round(T / Math.max(used, 1)));
  const one = (schedule: string | null, t: Target, hints?: Record<string, number>) => {
    const r = compile(source(schedule), { sms, target: t, ...(hints ? { sizeHints: hints } : {}) });
    if (!r.ok) throw new Error(`bench --grouped: ${r.diagnostics[0]?.message}`);
    return r.kernels[0]!;
  };
  const fixed = (t: Target, list: readonly string[]) =>
    list.map((s) => ({
      label: `${t} ${s.split("\n")[0]!.replace("threadblock ", "")}`,
      ck: one(s, t),
    }));
  // The sm80 kernels always (the baseline of earlier results); sm90's beside them when asked.
  const variants: { label: string; ck: CompiledKernel }[] = [
    { label: "sm80 default", ck: one(null, "sm80") },
    { label: `sm80 tuned M=${avgM}`, ck: one(null, "sm80", { M: avgM, N, K }) },
    ...fixed("sm80", SCHEDULES[row.kind]),
    ...(target === "sm80" ? [] : [
      { label: `${target} default`, ck: one(null, target) },
      ...(row.kind === "prefill" ? fixed(target, SM90_SCHEDULES) : []),
    ]),
  ];
  const rng = new Rng(77);
  const candidates: Candidate[] = [];
  const launches: (() => void)[] = [];
  const closers: (() => void)[] = [];
  for (const v of variants) {
    const kernel = loadKernel(v.ck, { cuda });
    const problems = moeProblems(kernel.manifest, { a: x, b: w, d: y, offs, sizes: { N, K } });
    const launch = kernel.groupedLaunch(problems);
    closers.push(() => (launch.close(), kernel.close()));
    y.fill(0xff); // NaN: a tile the kernel skips fails the check
    launch.launch();
    const c = checkOutput(pool, y.download(new Uint8Array(T * N * 2)), row, offs, rng);
    const burst = timeBurst(cuda, () => launch.launch(), est).ms;
    candidates.push({
      label: v.label,
      schedule: `${scheduleText(v.ck)}; grid ${launch.grid[0]}, ${launch.totalTiles} tiles`,
      burstMs: burst,
      check: c.text,
      ok: c.ok,
    });
    launches.push(() => launch.launch());
    console.log(`${row.name} ${v.label}: ${c.text}; burst ${burst.toFixed(3)} ms`);
  }
  let bi = -1;
  for (const [i, c] of candidates.entries()) {
    if (c.ok && (bi < 0 || c.burstMs < candidates[bi]!.burstMs)) bi = i;
  }
  const best = bi < 0 ? null : candidates[bi]!;
  const burstMs = bi < 0 ? NaN : timeBurst(cuda, launches[bi]!, est).ms;
  const sustainedMs = bi < 0 ? NaN : timeSustained(cuda, launches[bi]!, est);
  for (const c of closers) c();
  for (const b of [x, w, y]) b.free();
  return {
    row,
    counts,
    candidates,
    best,
    burstMs: best === null ? NaN : Math.min(burstMs, best.burstMs),
    sustainedMs,
    loop: null,
    grouped: null,
    flops,
    weightBytes,
  };
}

/** The markdown report. */
function report(command: string, device: string, results: readonly RowResult[]): string {
  const f = (v: number | null | undefined, d = 3) =>
    v == null || !Number.isFinite(v) ? "-" : v.toFixed(d);
  const tf = (flops: number, ms: number | undefined) =>
    ms === undefined || !Number.isFinite(ms) ? "-" : (flops / (ms * 1e-3) / 1e12).toFixed(0);
  const lines = [
    `# Grouped GEMM (mixture of experts), bf16 (${new Date().toISOString().slice(0, 10)})`,
    "",
    `\`${command}\` on ${device}. X [T, K] row, W [E, N, K] (B col-major per expert), Y [T, N] ` +
    "bf16; one grouped launch from the offsets (moeProblems). Peers in the same run right after " +
    "(bench/peers/grouped_peers.py): a loop of per-expert torch.mm (cuBLAS), torch._grouped_mm. " +
    "Burst: 3 rounds after 1 s rests; sustained: after 1.5 s of load (bench/gpu_measure.ts).",
    "",
    "| row | tokens (experts used) | gemmc burst ms (TFLOP/s) | loop burst ms | grouped_mm burst ms | " +
    "gemmc sustained ms | loop sustained ms | grouped_mm sustained ms | vs grouped_mm (burst / sust.) | " +
    "vs loop (burst / sust.) | share of floor (burst / sust.) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of results) {
    const floorMs = (r.weightBytes / COPY_BYTES_PER_S) * 1e3;
    const used = r.counts.filter((c) => c > 0).length;
    const ratio = (peer: number | null | undefined, ours: number) =>
      peer == null || !Number.isFinite(ours) ? "-" : (peer / ours).toFixed(2);
    lines.push(
      `| ${r.row.name} (N=${r.row.N}, K=${r.row.K}) | ${r.row.tokens} (${used}/${r.row.E}) | ${
        f(r.burstMs)
      } (${tf(r.flops, r.burstMs)}) | ${f(r.loop?.burst_ms)} | ${f(r.grouped?.burst_ms)} | ${
        f(r.sustainedMs)
      } | ${f(r.loop?.sustained_ms)} | ${f(r.grouped?.sustained_ms)} | ${
        ratio(r.grouped?.burst_ms, r.burstMs)
      } / ${ratio(r.grouped?.sustained_ms, r.sustainedMs)} | ${
        ratio(r.loop?.burst_ms, r.burstMs)
      } / ${ratio(r.loop?.sustained_ms, r.sustainedMs)} | ${f(floorMs / r.burstMs, 2)} / ${
        f(floorMs / r.sustainedMs, 2)
      } |`,
    );
  }
  lines.push(
    "",
    "Ratios are peer time / gemmc time (above 1: gemmc faster). Floor: the weights of the " +
      `experts that got tokens read once at ${COPY_BYTES_PER_S / 1e12} TB/s.`,
    "",
  );
  lines.push("## Schedules tried (burst ms; the fastest correct one is timed above)", "");
  for (const r of results) {
    lines.push(
      `- ${r.row.name}: ` +
        r.candidates.map((c) => `${c.label} [${c.schedule}] ${f(c.burstMs)} ms ${c.check}`).join(
          "; ",
        ),
    );
  }
  lines.push("", "## Peers' checks", "");
  for (const r of results) {
    lines.push(
      `- ${r.row.name}: loop ${r.loop?.ok === undefined ? "-" : r.loop.ok ? "ok" : "FAILED"}, ` +
        `grouped_mm ${
          r.grouped?.unavailable ??
            (r.grouped?.ok === undefined ? "-" : r.grouped.ok ? "ok" : "FAILED")
        }`,
    );
  }
  lines.push("", "## Routing (tokens per expert)", "");
  for (const r of results) lines.push(`- ${r.row.name}: ${r.counts.join(" ")}`);
  return lines.join("\n") + "\n";
}

/**
 * The `--target` of a grouped benchmark's arguments (default sm80), or a message.
 *
 * @param args The command line's arguments.
 * @returns The target, or why the value is not one.
 * @example
 * ```ts
 * import { equal, match } from "node:assert/strict";
 * import { groupedTarget } from "./grouped.ts";
 * equal(groupedTarget(["--grouped"]), "sm80");
 * equal(groupedTarget(["--target", "sm90", "--grouped"]), "sm90");
 * match(groupedTarget(["--target", "sm99"]), /^--target sm99: expected sm80/);
 * match(groupedTarget(["--target"]), /^--target undefined/);
 * ```
 */
export function groupedTarget(args: readonly string[]): Target | string {
  const at = args.indexOf("--target");
  const t = at >= 0 ? args[at + 1] : "sm80";
  return t !== undefined && isTargetName(t) ? t : `--target ${t}: expected ${targetList()}`;
}

/** Runs the grouped benchmark and records it; false without a driver or when a check fails. */
export function groupedBenchMain(
  command: string,
  only?: readonly string[],
  target: Target = "sm80",
): boolean {
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.error(`bench --grouped: ${avail.why}`);
    return false;
  }
  // Every row's routing is drawn in table order, then the rows asked for are kept: a row
  // run alone gets the tokens it gets in the whole table (and in earlier results).
  const rng = new Rng(20261202);
  const routed = GROUPED_ROWS.map((row) => ({
    row,
    counts: routedCounts(row.E, row.tokens, rng),
  })).filter(({ row }) => only === undefined || only.some((o) => row.name.includes(o)));
  let results: RowResult[];
  let device: string;
  {
    using cuda = Cuda.open();
    device = cuda.device.name;
    const pool = new Pool(new Rng(5));
    results = routed.map(({ row, counts }) => runRow(cuda, pool, row, counts, target));
  }
  // The peers, in the same run, once our context is closed (their own process and context).
  const peers = runPeers(routed) as {
    rows?: { name: string; loop?: PeerFigures; grouped_mm?: PeerFigures }[];
  } | null;
  results = results.map((r) => {
    const p = peers?.rows?.find((q) => q.name === r.row.name);
    return { ...r, loop: p?.loop ?? null, grouped: p?.grouped_mm ?? null };
  });
  const text = report(command, device, results);
  console.log(text);
  const day = new Date().toISOString().slice(0, 10);
  const path = freshResultPath(
    new URL("results", import.meta.url).pathname,
    `grouped-${day}`,
    ".md",
  );
  Deno.writeTextFileSync(path, text);
  Deno.writeTextFileSync(
    path.replace(/\.md$/, ".json"),
    JSON.stringify({ results, peers }, null, 2),
  );
  console.log(`Recorded in ${path}.`);
  return results.every((r) => r.best !== null);
}

if (import.meta.main) {
  const target = groupedTarget(Deno.args);
  if (!isTargetName(target)) {
    console.error(`bench/grouped.ts: ${target}`);
    Deno.exit(2);
  }
  const at = Deno.args.indexOf("--target");
  const only = Deno.args.filter((a, i) => !a.startsWith("-") && (at < 0 || i !== at + 1));
  if (
    !groupedBenchMain(
      ["deno run -A bench/grouped.ts", ...Deno.args].join(" "),
      only.length > 0 ? only : undefined,
      target,
    )
  ) {
    Deno.exit(1);
  }
}
