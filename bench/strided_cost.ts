/**
 * `deno task bench --strided`: what strides cost (issue 20's target: a strided
 * kernel within 3% of the dense kernel at 8192³). For f16 and bf16, the dense
 * benchmark kernel (bench/kernels/f16.gemm, bf16.gemm: TN, 16-bit out) and its
 * strided twin (`A strides(lda)`, `B strides(ldb)`, `D strides(ldd)`, runtime
 * strides set to K + 64, K + 64 and N + 64) are compiled with the same size
 * hints and SM count, so they get the same schedule, and timed in the same run
 * in both states of the card (bench/gpu_measure.ts: burst after a rest,
 * sustained after 1.5 s of load), dense and strided alternating. Each output
 * is checked first on 64 sampled elements against a float64 dot product of
 * the (rounded) inputs, and the strided output's padding must still hold its
 * poison.
 *
 * Writes `bench/results/strided-DATE.md` (a new file: `-2`, ... when one exists).
 *
 * @module
 */

import { compile } from "../compiler.ts";
import { Cuda, cudaAvailable } from "../backends/cuda/driver.ts";
import { loadKernel } from "../backends/cuda/kernel.ts";
import type { DeviceBuffer } from "../backends/cuda/resources.ts";
import { decodeTensor, encodeTensor } from "../harness/device_tensor.ts";
import { Rng } from "../numerics/random.ts";
import { timeBurst, timeSustained } from "./gpu_measure.ts";
import { freshResultPath } from "./results.ts";

/** The problem size and the padding of every strided dimension. */
const SIZE = 8192;
const PAD = 64;
/** The target: strided time within this factor of the dense time. */
const TARGET = 1.03;

/** One type's kernels as source. */
function sources(t: "f16" | "bf16"): { dense: string; strided: string } {
  const body = `D[m, n] = ${t}(A[m, k] * B[k, n])`;
  return {
    dense: `kernel dense_${t} {\n  A: ${t}[M, K] row\n  B: ${t}[K, N] col\n  D: ${t}[M, N] row\n` +
      `  ${body}\n}`,
    strided: `kernel strided_${t} {\n  A: ${t}[M, K] row strides(lda)\n` +
      `  B: ${t}[K, N] col strides(ldb)\n  D: ${t}[M, N] row strides(ldd)\n  ${body}\n}`,
  };
}

/** Random values in [-1, 1) rounded to `t`, as stored (encoded) and as numbers. */
function randomMatrix(t: "f16" | "bf16", n: number, rng: Rng): Uint8Array {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = rng.next() * 2 - 1;
  return encodeTensor(v, t);
}

/** One row of the table. */
interface Row {
  readonly type: string;
  readonly burst: [number, number];
  readonly sustained: [number, number];
  readonly check: string;
}

/** Runs the comparison and records it; false without a driver or when a check fails. */
export function stridedCostMain(command: string): boolean {
  const avail = cudaAvailable();
  if (!avail.ok) {
    console.error(`bench --strided: ${avail.why}`);
    return false;
  }
  using cuda = Cuda.open();
  const sms = cuda.device.multiprocessors;
  const N = SIZE, M = SIZE, K = SIZE;
  const lda = K + PAD, ldb = K + PAD, ldd = N + PAD;
  const rows: Row[] = [];
  const rng = new Rng(20261202);
  for (const t of ["f16", "bf16"] as const) {
    const src = sources(t);
    const opts = { sizeHints: { M, N, K }, sms };
    const dense = compile(src.dense, opts).kernels[0]!;
    const strided = compile(src.strided, opts).kernels[0]!;
    const aBytes = randomMatrix(t, M * lda, rng); // strided storage; dense uses a packed copy
    const bBytes = randomMatrix(t, N * ldb, rng);
    const packed = (src: Uint8Array, rowsN: number, ld: number, cols: number) => {
      const out = new Uint8Array(rowsN * cols * 2);
      for (let r = 0; r < rowsN; r++) {
        out.set(src.subarray(r * ld * 2, (r * ld + cols) * 2), r * cols * 2);
      }
      return out;
    };
    const up = (bytes: Uint8Array): DeviceBuffer => {
      const b = cuda.alloc(bytes.byteLength);
      b.upload(bytes);
      return b;
    };
    const aS = up(aBytes);
    const bS = up(bBytes);
    const aD = up(packed(aBytes, M, lda, K));
    const bD = up(packed(bBytes, N, ldb, K));
    const dS = cuda.alloc(M * ldd * 2);
    const dD = cuda.alloc(M * N * 2);
    const bufs = [aS, bS, aD, bD, dS, dD];
    using kd = loadKernel(dense, { cuda });
    using ks = loadKernel(strided, { cuda });
    const poison = new Uint8Array(M * ldd * 2).fill(0xff); // NaN in f16 and bf16
    dS.upload(poison);
    dD.upload(poison.subarray(0, M * N * 2));
    const runDense = () => kd.launch({ A: aD, B: bD, D: dD }, { M, N, K });
    const runStrided = () => ks.launch({ A: aS, B: bS, D: dS }, { M, N, K, lda, ldb, ldd });
    runDense();
    runStrided();
    // Check: sampled elements against float64, and the strided D's padding untouched.
    const check = checkStrided(t, rng, {
      a: decodeTensor(aBytes, t, M * lda),
      b: decodeTensor(bBytes, t, N * ldb),
      strided: decodeTensor(dS.download(new Uint8Array(M * ldd * 2)), t, M * ldd),
      dense: decodeTensor(dD.download(new Uint8Array(M * N * 2)), t, M * N),
    });
    const est = (2 * M * N * K) / 500e12 * 1e3;
    const bd = timeBurst(cuda, runDense, est).ms, bs = timeBurst(cuda, runStrided, est).ms;
    const bd2 = timeBurst(cuda, runDense, est).ms, bs2 = timeBurst(cuda, runStrided, est).ms;
    const sd = timeSustained(cuda, runDense, est), ss = timeSustained(cuda, runStrided, est);
    for (const buf of bufs) buf.free();
    rows.push({
      type: t,
      burst: [Math.min(bd, bd2), Math.min(bs, bs2)],
      sustained: [sd, ss],
      check,
    });
    console.log(
      `${t}: ${check}; burst ${bd.toFixed(3)}/${bs.toFixed(3)} ms, ` +
        `${bd2.toFixed(3)}/${bs2.toFixed(3)} ms; sustained ${sd.toFixed(3)}/${ss.toFixed(3)} ms`,
    );
  }
  const text = stridedReport(rows, command, cuda.device.name, sms);
  console.log(text);
  const path = freshResultPath(
    new URL("results", import.meta.url).pathname,
    `strided-${new Date().toISOString().slice(0, 10)}`,
    ".md",
  );
  Deno.writeTextFileSync(path, text);
  console.log(`Recorded in ${path}.`);
  return rows.every((r) => r.check.startsWith("ok"));
}

/** The strided and dense outputs decoded, with the inputs ({@link checkStrided}). */
interface StridedOutputs {
  readonly a: ArrayLike<number>;
  readonly b: ArrayLike<number>;
  readonly strided: ArrayLike<number>;
  readonly dense: ArrayLike<number>;
}

/** 64 sampled elements of both outputs against float64 within the bound of K f32 roundings and
 * one to the 16-bit output, and the strided D's padding (poisoned) untouched: "ok (...)" or
 * "FAILED (...)". */
function checkStrided(t: "f16" | "bf16", rng: Rng, o: StridedOutputs): string {
  const N = SIZE, M = SIZE, K = SIZE;
  const lda = K + PAD, ldb = K + PAD, ldd = N + PAD;
  const { a, b } = o;
  let worst = 0;
  for (let s = 0; s < 64; s++) {
    const m = rng.int(0, M - 1), n = rng.int(0, N - 1);
    let ref = 0, mag = 0;
    for (let k = 0; k < K; k++) {
      const p = a[m * lda + k]! * b[n * ldb + k]!;
      ref += p;
      mag += Math.abs(p);
    }
    // K f32 roundings of the sum, then one rounding to the 16-bit output.
    const bound = K * 2 ** -23 * mag + Math.abs(ref) * (t === "f16" ? 2 ** -10 : 2 ** -7);
    for (const got of [o.strided[m * ldd + n]!, o.dense[m * N + n]!]) {
      const e = Math.abs(got - ref) / bound;
      worst = Number.isFinite(e) ? Math.max(worst, e) : Infinity;
    }
  }
  let padOk = true;
  for (let m = 0; m < M && padOk; m += 97) {
    for (let n = N; n < ldd; n++) if (!Number.isNaN(o.strided[m * ldd + n]!)) padOk = false;
  }
  const ok = worst <= 1 && padOk;
  return `${ok ? "ok" : "FAILED"} (worst error/bound ${worst.toFixed(3)}, padding ${
    padOk ? "untouched" : "WRITTEN"
  })`;
}

/** The recorded table of the rows, with the target met or missed. */
function stridedReport(rows: readonly Row[], command: string, device: string, sms: number): string {
  const tf = (ms: number) => ((2 * SIZE ** 3) / (ms * 1e-3) / 1e12).toFixed(0);
  const lines = [
    `# Strided against dense, ${SIZE}³ (${new Date().toISOString().slice(0, 10)})`,
    "",
    `\`${command}\` on ${device}. TN, 16-bit output; strided: lda = ldb = K + ${PAD}, ` +
    `ldd = N + ${PAD} (runtime stride parameters); the same schedule (size hints, ${sms} SMs). ` +
    "Burst: the faster of two alternating burst medians; sustained: after 1.5 s of load.",
    "",
    "| type | dense burst ms (TFLOP/s) | strided burst ms (TFLOP/s) | strided/dense burst | " +
    "dense sustained ms | strided sustained ms | strided/dense sustained | check |",
    "| ---- | ---: | ---: | ---: | ---: | ---: | ---: | ---- |",
    ...rows.map((r) =>
      `| ${r.type} | ${r.burst[0].toFixed(3)} (${tf(r.burst[0])}) | ${r.burst[1].toFixed(3)} (${
        tf(r.burst[1])
      }) | ${(r.burst[1] / r.burst[0]).toFixed(3)} | ${r.sustained[0].toFixed(3)} | ${
        r.sustained[1].toFixed(3)
      } | ${(r.sustained[1] / r.sustained[0]).toFixed(3)} | ${r.check} |`
    ),
    "",
    `Target: strided within ${((TARGET - 1) * 100).toFixed(0)}% of dense (ratio <= ${TARGET}): ` +
    (rows.every((r) =>
        r.burst[1] / r.burst[0] <= TARGET && r.sustained[1] / r.sustained[0] <= TARGET
      )
      ? "met."
      : "MISSED."),
  ];
  return lines.join("\n") + "\n";
}

if (import.meta.main) {
  if (!stridedCostMain(["deno run -A bench/strided_cost.ts", ...Deno.args].join(" "))) {
    Deno.exit(1);
  }
}
