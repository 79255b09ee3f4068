/**
 * Programmatic dependent launch on the GPU (`LoadedKernel.launch(..., { pdl: true })`,
 * backends/cuda/launch.ts): a chain of f16 GEMMs compiled for sm90, each one's output
 * D [M, N] row-major the next one's A [M, K] (K = N), launched back to back on one stream,
 * every launch after the first a programmatic dependent of the one before. Each kernel starts
 * while the previous one finishes and must wait (`griddepcontrol.wait`) before reading its A:
 * every link's output must equal the CPU reference (f64 accumulation, rounded to f16 as the
 * kernels round) on the input it read, the last one the reference chain's, and the chain
 * launched again, with `pdl` and without (serialized), must give the same bytes. Inputs are
 * random, outputs poisoned (0xFF bytes, f16 NaN) before every round. The chains at the decode
 * shapes' schedules read B (the weights, which no link writes) before their wait (compile
 * option `pdlEarly`): the A each reads must still be its predecessor's finished output.
 * Everywhere: the chain's kernel compiles for sm90 with the griddepcontrol instructions. Listed as skipped without a
 * CUDA driver or on a GPU that is not sm_90.
 *
 * @module
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../../compiler.ts";
import { Cuda, cudaAvailable, type DeviceBuffer } from "../../backends/cuda/driver.ts";
import { loadKernel } from "../../backends/cuda/kernel.ts";
import { decodeTensor, uploadTensor } from "../../harness/device_tensor.ts";
import { roundF16 } from "../../numerics/mod.ts";
import { Rng } from "../../numerics/random.ts";
import { withSchedule } from "../../bench/gpu_bench.ts";

const CUDA = cudaAvailable();
/** sm90's kernels (sm_90a) run only on sm_90 itself. */
const HOPPER = CUDA.ok && (() => {
  using cuda = Cuda.open();
  return cuda.device.arch === "sm_90";
})();
const SKIP = HOPPER ? "" : CUDA.ok ? " (skipped: not an sm_90 GPU)" : " (skipped: no CUDA driver)";

/** One link of the chain: D = A · B, f16 in, f32 accumulation, f16 out. */
const SOURCE = `kernel chain {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f16[M, N] row
  D[m, n] = f16(A[m, k] * B[k, n])
}`;

/** Kernels back to back in one chain. */
const LINKS = 6;
/** Rounds of the chain per launch mode, each after poisoning every output. */
const ROUNDS = 3;

/**
 * The chain's kernel for sizes M, N (= K), or at the schedule of `hint` (an LLM decode shape:
 * the skinny tiles); with `early`, its B (the weights, which no link writes) read before the
 * wait (compile option `pdlEarly`).
 */
function chainKernel(c: ChainCase): CompiledKernel {
  const src = c.schedule === undefined ? SOURCE : withSchedule(SOURCE, c.schedule);
  const r = compile(src, {
    target: "sm90",
    pdl: true,
    sms: 132,
    sizeHints: c.hint ?? { M: c.M, N: c.N, K: c.N },
    ...(c.early ? { pdlEarly: ["B"] } : {}),
  });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  // What the kernel reads before its wait, as its manifest says.
  assert.deepEqual(r.kernels[0]!.manifest.pdl?.early, c.early ? ["B"] : []);
  return r.kernels[0]!;
}

/** Random f16 values: A0 in (-1, 1); each B scaled by sqrt(3 / K) so that every link keeps
 * the outputs' spread (never zeros or ones). */
function inputs(M: number, N: number, seed: number): { a0: Float32Array; bs: Float32Array[] } {
  const rng = new Rng(seed);
  const f16 = (n: number, scale: number) =>
    Float32Array.from({ length: n }, () => roundF16((rng.next() * 2 - 1) * scale));
  const K = N;
  return {
    a0: f16(M * K, 1),
    bs: Array.from({ length: LINKS }, () => f16(K * N, Math.sqrt(3 / K))),
  };
}

/** One link in f64 (B column-major), rounded to f16 as the kernel rounds its output. */
function referenceLink(M: number, N: number, a: Float32Array, b: Float32Array): Float32Array {
  const K = N;
  const d = new Float32Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += a[m * K + k]! * b[n * K + k]!;
      d[m * N + n] = roundF16(s);
    }
  }
  return d;
}

/**
 * Checks an output against a reference: `|got - want| <= rel * |want| + abs * rms(want)`
 * everywhere; a NaN (the poison) fails.
 */
function checkOutput(
  got: Float32Array,
  want: Float32Array,
  tol: { rel: number; abs: number },
  where: string,
): void {
  let sq = 0;
  for (const w of want) sq += w * w;
  const rms = Math.sqrt(sq / want.length);
  assert.ok(rms > 0.1, `${where}: the reference's RMS ${rms} is not O(1)`);
  let bad = 0, first = -1;
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i]! - want[i]!);
    if (!(err <= tol.rel * Math.abs(want[i]!) + tol.abs * rms)) {
      bad++;
      if (first < 0) first = i;
    }
  }
  assert.equal(
    bad,
    0,
    `${where}: ${bad} of ${want.length} elements off; first [${first}]: got ${got[first]}, ` +
      `want ${want[first]}`,
  );
}

/**
 * One link against the f64 reference on the input it read: f32 accumulation may flip the
 * f16 rounding, 1 ulp (at most 2^-10 relative); allowed twice that, plus 2^-12 of the RMS
 * near zero. A link that read its input before the previous link finished it read poison
 * (NaN) or other values and fails.
 */
const LINK_TOL = { rel: 2 ** -9, abs: 2 ** -12 };
/**
 * The last link against the reference chain (each link on the reference's own previous
 * output): the flipped roundings carry from link to link; the simulator's run of this chain
 * differs from it by up to 2^-9 (|want| + RMS) at the 6th link; allowed 2^-7.
 */
const CHAIN_TOL = { rel: 2 ** -7, abs: 2 ** -7 };

/** One chain: its sizes, the hint its kernel is tuned for (default: the sizes), and whether
 * B is read before the wait. */
interface ChainCase {
  readonly M: number;
  readonly N: number;
  readonly hint?: { readonly M: number; readonly N: number; readonly K: number };
  readonly early: boolean;
  /** A schedule line added to the source. */
  readonly schedule?: string;
}

/** Decode hints (passes/skinny.ts): M = 16 sm80's cp.async tile, 64 the TMA 64x32 tile, 128
 * the persistent 64x64 tiles on clusters of 2 (at K = 4096 not named early here: the chain of
 * the pdl alone), 256 the TMA 128x64 tile. */
const decode = (M: number, K = 4096) => ({ M, N: 4096, K });

const CASES: ChainCase[] = [
  { M: 64, N: 256, early: false },
  { M: 256, N: 512, early: false },
  // B at the L2's normal priority: the tile's default evict_first would keep it after the wait
  // (passes/lower/early.ts EARLY_STREAMED_WHY).
  { M: 7, N: 512, hint: decode(16), early: true, schedule: "cache_b evict_normal" },
  { M: 60, N: 512, hint: decode(64), early: true },
  { M: 100, N: 512, hint: decode(128), early: false },
  { M: 100, N: 512, hint: decode(128, 14336), early: true },
  { M: 250, N: 512, hint: decode(256), early: true },
];

Deno.test("pdl chain: every chain's kernel compiles for sm90 with griddepcontrol, B early as said", () => {
  // chainKernel checks the manifest's early list against the case.
  for (const c of CASES) {
    const ck = chainKernel(c);
    assert.match(ck.ptx, /griddepcontrol\.wait/);
    assert.match(ck.ptx, /griddepcontrol\.launch_dependents/);
    assert.equal(ck.manifest.target, "sm_90a");
  }
});

for (const c of CASES) {
  const { M, N } = c;
  const tuned = c.hint === undefined
    ? ""
    : ` at the schedule of M=${c.hint.M}, N=${c.hint.N}, K=${c.hint.K}`;
  Deno.test({
    name:
      `pdl chain: ${LINKS} f16 GEMMs (M=${M}, N=K=${N}${tuned}${
        c.early ? ", B read before the wait" : ""
      }${
        c.schedule === undefined ? "" : `, ${c.schedule}`
      }) back to back, each reading the previous output, launched with pdl, equal the ` +
      `reference chain and the serialized launches${SKIP}`,
    ignore: !HOPPER,
    fn: () => {
      const K = N;
      const ck = chainKernel(c);
      const { a0, bs } = inputs(M, N, 1000 + M + N);
      using cuda = Cuda.open();
      using k = loadKernel(ck, { cuda });
      const st = cuda.createStream();
      assert.ok(st !== null, "the driver has cuStreamCreate");
      const held: DeviceBuffer[] = [];
      try {
        const up = (x: Float32Array) => {
          const b = uploadTensor(cuda, x, "f16");
          held.push(b);
          return b;
        };
        // acts[0] = A0; acts[i + 1] = link i's D, link i + 1's A.
        const acts = [up(a0), ...Array.from({ length: LINKS }, () => up(new Float32Array(M * N)))];
        const bBufs = bs.map(up);
        const sizes = { M, N, K };
        /** The chain on the stream, every output poisoned before; each output's bytes. */
        const chain = (pdl: boolean): Uint8Array[] => {
          for (const d of acts.slice(1)) d.fill(0xff); // f16 NaN
          // The stream does not wait for the default stream's memsets: the context does.
          cuda.synchronize();
          for (let i = 0; i < LINKS; i++) {
            k.launch(
              { A: acts[i]!, B: bBufs[i]!, D: acts[i + 1]! },
              sizes,
              { stream: st, pdl: pdl && i > 0 },
            );
          }
          st.synchronize();
          return acts.slice(1).map((d) => d.download());
        };
        const first = chain(true);
        const outs = first.map((b) => decodeTensor(b, "f16") as Float32Array);
        // Each link against the reference on the input it read (the previous link's output).
        for (let i = 0; i < LINKS; i++) {
          const input = i === 0 ? a0 : outs[i - 1]!;
          checkOutput(outs[i]!, referenceLink(M, N, input, bs[i]!), LINK_TOL, `pdl link ${i}`);
        }
        // The last against the reference chain.
        let want = a0;
        for (const b of bs) want = referenceLink(M, N, want, b);
        checkOutput(outs[LINKS - 1]!, want, CHAIN_TOL, "pdl chain's last link");
        // Again with pdl, then serialized: the same bytes every time.
        for (const [pdl, rounds] of [[true, ROUNDS - 1], [false, ROUNDS]] as const) {
          for (let r = 0; r < rounds; r++) {
            const again = chain(pdl);
            for (let i = 0; i < LINKS; i++) {
              assert.deepEqual(
                again[i],
                first[i],
                `${pdl ? "pdl" : "serialized"} round ${r}, link ${i}`,
              );
            }
          }
        }
        assert.equal(k.launches, 2 * ROUNDS * LINKS);
      } finally {
        for (const b of held) b.free();
      }
    },
  });
}
