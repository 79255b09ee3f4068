/**
 * The sparse benchmark's types and record (bench/sparse.ts runs it): the benchmark's types and
 * states, issue 21's ratio target, one kernel's figures, the peers' record, and the markdown
 * record ({@link sparseReport}). Pure: tests/sparse_bench_test.ts checks it without a GPU.
 *
 * @module
 */

/** The benchmark's types: tf32 is f32 operands with `math tf32`. */
export type SparseBenchType = "f16" | "bf16" | "tf32" | "s8";

/** Every {@link SparseBenchType}, in the report's order. */
export const SPARSE_BENCH_TYPES: readonly SparseBenchType[] = ["f16", "bf16", "tf32", "s8"];

/** Types whose sparse/dense ratio has a target (issue 21), and the target. */
export const SPARSE_RATIO_TARGET: Readonly<Partial<Record<SparseBenchType, number>>> = {
  f16: 1.5,
  bf16: 1.5,
};

/** The measurement states, in the report's order. */
export const SPARSE_STATES = ["burst", "sustained"] as const;

/** A measurement state. */
export type SparseState = (typeof SPARSE_STATES)[number];

/** One kernel's figures (ours, dense or sparse). */
export interface KernelFigures {
  /**
   * `ok`: compiled, checked and timed; `check failed`: timed, but its output
   * disagrees with the reference; `compile failed`: the compiler refused it
   * (`note` holds the diagnostics); `error`: loading, launching or timing failed.
   */
  readonly status: "ok" | "check failed" | "compile failed" | "error";
  /** The diagnostics or the error; the check's summary when it ran. */
  readonly note: string;
  /** The planned schedule, e.g. `128x256x64, warp 64x64x64, 4 stages`; null when not compiled. */
  readonly schedule: string | null;
  /** Median ms per state; null where not measured. */
  readonly ms: Readonly<Record<SparseState, number | null>>;
}

/** One of the peer script's records (bench/peers/sparse_peers.py, RECORD_KEYS), as read. */
export interface PeerRecord {
  readonly dtype: string;
  readonly peer: "dense" | "sparse";
  readonly state: SparseState;
  readonly status: string;
  readonly reason: string | null;
  readonly op: string | null;
  readonly backend: string | null;
  readonly ok: boolean | null;
  readonly ms: number | null;
  readonly tflops: number | null;
}

/** Each key of {@link PeerRecord}, no other (the type sees to both). */
const PEER_READ: Readonly<Record<keyof PeerRecord, 0>> = {
  dtype: 0,
  peer: 0,
  state: 0,
  status: 0,
  reason: 0,
  op: 0,
  backend: 0,
  ok: 0,
  ms: 0,
  tflops: 0,
};

/** The record keys this module reads (tests/sparse_peers_test.ts checks the script's records). */
export const PEER_RECORD_KEYS = Object.keys(PEER_READ) as readonly (keyof PeerRecord)[];

/** The `mma.sp` ceiling of one type, dense-equivalent TFLOP/s (TOP/s for s8). */
export interface SparseCeiling {
  readonly burst: number;
  readonly sustained: number;
}

/** One type's row of the report. */
export interface SparseBenchRow {
  readonly type: SparseBenchType;
  readonly dense: KernelFigures;
  readonly sparse: KernelFigures;
  /** The peers' records of this type (any states, either peer); empty without peers. */
  readonly peers: readonly PeerRecord[];
  /** Null where not measured. */
  readonly ceiling: SparseCeiling | null;
}

/** What {@link sparseReport} writes up. */
export interface SparseReportInput {
  /** The command line that ran the benchmark. */
  readonly command: string;
  /** The GPU's name. */
  readonly device: string;
  /** The date, `YYYY-MM-DD`. */
  readonly date: string;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly rows: readonly SparseBenchRow[];
  /** Why there are no peer figures (not installed, failed, skipped), or null. */
  readonly peersNote: string | null;
}

/** A number to `d` decimals, `-` where absent or not finite. */
export function fx(v: number | null | undefined, d: number): string {
  return v == null || !Number.isFinite(v) ? "-" : v.toFixed(d);
}

/**
 * The markdown report: per state a table of dense and sparse TFLOP/s
 * (dense-equivalent), sparse / dense against the target, the ratios to the
 * peers' sparse (cuSPARSELt or CUTLASS, named) and dense (cuBLAS) GEMMs and the
 * share of the `mma.sp` ceiling; then each kernel's status line (a compile
 * failure is a line there), the peers' lines, and notes.
 *
 * @param input The figures.
 * @returns The report (ends with a newline).
 * @example
 * ```ts
 * import { match } from "node:assert/strict";
 * import { sparseReport } from "./sparse_report.ts";
 * const ms = { burst: 2, sustained: 2.5 };
 * const text = sparseReport({
 *   command: "deno task bench --sparse", device: "GPU", date: "2026-12-02",
 *   M: 8192, N: 8192, K: 8192, peersNote: "skipped",
 *   rows: [{
 *     type: "f16", peers: [], ceiling: null,
 *     dense: { status: "ok", note: "ok", schedule: "128x128x32", ms },
 *     sparse: { status: "compile failed", note: "E0204", schedule: null,
 *       ms: { burst: null, sustained: null } },
 *   }],
 * });
 * match(text, /\| f16 \| 550 \| - \| - \| >= 1.5: - \|/);
 * ```
 */
export function sparseReport(input: SparseReportInput): string {
  const flops = 2 * input.M * input.N * input.K;
  const tf = (ms: number | null | undefined) =>
    ms == null || !Number.isFinite(ms) || ms <= 0 ? null : flops / (ms * 1e-3) / 1e12;
  const lines = [
    `# 2:4 structured-sparse A against dense (${input.date})`,
    "",
    `\`${input.command}\` on ${input.device}. M=${input.M} N=${input.N} K=${input.K}; A [M, K] ` +
    "row (sparse: kept values [M, K/2] and A_meta, numerics/sparse.ts canonical layout), " +
    "B [K, N] col, D [M, N] row; both kernels multiply the same random pruned A (2:4, tf32 1:2) " +
    "at their default schedules. TFLOP/s are dense-equivalent (2·M·N·K / time; TOP/s for s8). " +
    "Burst: 3 rounds after 1 s rests; sustained: after 1.5 s of load (bench/gpu_measure.ts). " +
    "Peers in the same run right after (bench/peers/sparse_peers.py): torch.mm (cuBLAS; s8 " +
    "torch._int_mm; f32 with allow_tf32) and to_sparse_semi_structured(A) @ B.",
    "",
  ];
  for (const state of SPARSE_STATES) {
    lines.push(
      `## ${state === "burst" ? "Burst" : "Sustained"}`,
      "",
      "| dtype | dense TFLOP/s | sparse TFLOP/s | sparse / dense | target | torch sparse TFLOP/s " +
        "(backend) | sparse / torch sparse | torch dense TFLOP/s | dense / torch dense | " +
        "mma.sp ceiling | sparse / ceiling |",
      "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for (const r of input.rows) {
      const dense = tf(r.dense.ms[state]);
      const sparse = tf(r.sparse.ms[state]);
      const peer = (p: "dense" | "sparse") =>
        r.peers.find((x) => x.peer === p && x.state === state && x.status === "ok");
      const ps = peer("sparse"), pd = peer("dense");
      const ratio = (a: number | null, b: number | null | undefined) =>
        a === null || b == null || !(b > 0) ? null : a / b;
      const sd = ratio(sparse, dense);
      const target = SPARSE_RATIO_TARGET[r.type];
      const verdict = target === undefined
        ? "-"
        : `>= ${target}: ${sd === null ? "-" : sd >= target ? "met" : "MISSED"}`;
      const ceil = r.ceiling?.[state] ?? null;
      lines.push(
        `| ${r.type} | ${fx(dense, 0)} | ${fx(sparse, 0)} | ${fx(sd, 2)} | ${verdict} | ${
          ps === undefined ? "-" : `${fx(ps.tflops, 0)} (${ps.backend ?? "?"})`
        } | ${fx(ratio(sparse, ps?.tflops), 2)} | ${fx(pd?.tflops, 0)} | ${
          fx(ratio(dense, pd?.tflops), 2)
        } | ${fx(ceil, 0)} | ${fx(ratio(sparse, ceil), 2)} |`,
      );
    }
    lines.push("");
  }
  lines.push("## Kernels", "");
  for (const r of input.rows) {
    for (const [which, k] of [["dense", r.dense], ["sparse", r.sparse]] as const) {
      lines.push(
        `- ${r.type} ${which}: ${k.status}${k.schedule === null ? "" : ` [${k.schedule}]`}: ${
          k.note.replace(/\s*\n\s*/g, " ")
        }`,
      );
    }
  }
  lines.push("", "## Peers", "");
  if (input.peersNote !== null) lines.push(`- ${input.peersNote}`);
  for (const r of input.rows) {
    for (const p of ["dense", "sparse"] as const) {
      const recs = r.peers.filter((x) => x.peer === p);
      if (recs.length === 0) continue;
      const x = recs[0]!;
      const check = x.ok === null ? "not checked" : x.ok ? "check ok" : "check FAILED";
      lines.push(
        `- ${r.type} ${p} (torch ${x.dtype}): ${x.status}` +
          (x.status === "unsupported"
            ? `: ${x.reason ?? "?"}`
            : `; ${x.op ?? "?"} (${x.backend ?? "?"}), ${check}${
              x.reason === null || x.status === "failed" ? "" : ` (${x.reason})`
            }`),
      );
    }
  }
  lines.push(
    "",
    "Ratios above 1: the first named is faster. Targets: issue 21 (sparse / dense >= 1.5 for " +
      "f16 and bf16). The ceiling: independent `mma.sp` from registers, random operands " +
      "(bench/mma_peak.ts, as bench/sparse_peak.ts measures it).",
    "",
  );
  return lines.join("\n");
}
