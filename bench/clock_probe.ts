/**
 * The SM clock as the GPU ran it, not as `nvidia-smi` reports it: one warp
 * counts `%clock64` cycles against `%globaltimer` nanoseconds.
 * {@link ClockProbe.during} runs it on a stream of its own beside the work
 * (sleeping in 1 µs steps, so it takes almost no issue slots): on the H200,
 * 8192³ f16/bf16/tf32 GEMMs on random data hold 700 W at 1.5–1.6 GHz, other
 * tensor-core work runs at about 1.8 GHz, and `nvidia-smi` reports 1980 MHz
 * throughout (bench/NOTES.md 8, 12). Without streams it runs after the work,
 * where the clock may already have recovered (the blind spot of NOTES 12).
 *
 * Hand-written PTX: the kernel IR has no 64-bit clock registers (nothing but
 * this probe needs them).
 *
 * @module
 */

import type { Cuda, CudaModule, CudaStream, DeviceBuffer } from "../backends/cuda/driver.ts";

/** The probe module: `clock_probe(out: u64, ns: u64)` sleeps in 1 µs steps
 * for `ns` of %globaltimer (so that it takes almost no issue slots from work
 * beside it); thread 0 writes the [ns, SM cycles] that elapsed. */
export const CLOCK_PROBE_PTX = `.version 8.0
.target sm_80
.address_size 64
.visible .entry clock_probe(.param .u64 out, .param .u64 ns)
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<12>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [ns];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u64 %rd3, %globaltimer;
  mov.u64 %rd4, %clock64;
  add.u64 %rd5, %rd3, %rd2;
SPIN:
  nanosleep.u32 1000;
  mov.u64 %rd7, %globaltimer;
  setp.lt.u64 %p0, %rd7, %rd5;
  @%p0 bra SPIN;
  mov.u64 %rd6, %clock64;
  sub.u64 %rd8, %rd7, %rd3;
  sub.u64 %rd9, %rd6, %rd4;
  st.global.u64 [%rd1], %rd8;
  st.global.u64 [%rd1+8], %rd9;
DONE:
  ret;
}
`;

/** Probe time when it cannot run beside the work (no streams): after it, 0.1 ms. */
const AFTER_NS = 100_000;

/** A loaded probe; {@link ClockProbe.during} measures. */
export class ClockProbe {
  readonly #cuda: Cuda;
  readonly #mod: CudaModule;
  readonly #buf: DeviceBuffer;
  /** Where {@link ClockProbe.hold} writes: apart from what {@link ClockProbe.during} reads. */
  readonly #holdBuf: DeviceBuffer;
  readonly #stream: CudaStream | null;

  constructor(cuda: Cuda) {
    this.#cuda = cuda;
    this.#mod = cuda.loadModule(CLOCK_PROBE_PTX);
    this.#buf = cuda.alloc(16);
    this.#holdBuf = cuda.alloc(16);
    this.#stream = cuda.createStream();
  }

  /** Launches the probe, sleeping `ns`, writing `buf`, on `stream` (default: the default stream). */
  #launch(buf: DeviceBuffer, ns: number, stream?: CudaStream): void {
    this.#cuda.launch(
      this.#mod.getFunction("clock_probe"),
      { grid: [1, 1, 1], block: [32, 1, 1], dynamicSmemBytes: 0 },
      [{ type: "u64", value: buf.ptr }, { type: "u64", value: BigInt(Math.round(ns)) }],
      stream,
    );
  }

  /**
   * Queues a hold of `ms` on the default stream and returns: what the host queues
   * next waits behind it (bench/llm.ts: a back-to-back series the host queues
   * whole before the GPU reaches its first launch).
   */
  hold(ms: number): void {
    this.#launch(this.#holdBuf, ms * 1e6);
  }

  /**
   * The SM clock (MHz) while `work` runs: the probe sleeps on its own
   * non-blocking stream for `ns` while `work` queues launches on the default
   * stream (choose `ns` a little under their duration). Without streams it
   * runs for 0.1 ms after the work instead.
   */
  during(work: () => void, ns: number): number {
    if (this.#stream !== null) {
      this.#launch(this.#buf, ns, this.#stream);
      work();
    } else {
      work();
      this.#launch(this.#buf, AFTER_NS);
    }
    this.#cuda.synchronize();
    const v = new BigUint64Array(this.#buf.download().buffer);
    const elapsed = Number(v[0]!);
    return elapsed > 0 ? (Number(v[1]!) / elapsed) * 1e3 : NaN;
  }

  close(): void {
    this.#stream?.destroy();
    this.#buf.free();
    this.#holdBuf.free();
    this.#mod.unload();
  }
}
