/**
 * `--read`'s side of the llm table (bench/llm.ts, issue 22): a plain streaming kernel that moves
 * a row's bytes as a GEMM must (A and B read once, D's bytes written once) and does nothing
 * else. It pays what any kernel launch of those bytes pays (the launch, the first loads' latency,
 * the ramp of blocks onto the SMs, the tail) and no GEMM's work, so the distance from ours to it
 * is what our kernels add, and the distance from it to the floor is what a launch costs
 * (a `cuMemcpyDtoD` of the same bytes may run on a copy engine, without a kernel's launch
 * boundary; on an H100 it paid 3.1 µs a launch, bench/NOTES.md 91).
 *
 * The kernel: a grid of SMs x 8 blocks of 256 threads (2,048 threads an SM, the most an SM holds)
 * walks A's 16-byte vectors, then B's, grid-stride, four loads in flight a thread
 * (`ld.global.cg`, L2 only, as our kernels' `cp.async.cg`), and folds every word into a running
 * xor; then writes D's vectors (`st.global.cs`, streaming) with it; a warp's xor, reduced by
 * shuffles, is stored to a word of its own (one word a warp of the grid). The host checks the
 * xor of those words against the xor of every word of A and B ({@link StreamRead.check}), so a
 * kernel that skipped a load would fail. (The first version xor-reduced every warp's word into
 * one with `red.global.xor`: 8,448 atomics to one address on 132 SMs cost it ~5 µs a launch,
 * bench/NOTES.md 91.)
 *
 * Hand-written PTX: the kernel IR describes GEMMs, not this.
 *
 * @module
 */

import type { Cuda, CudaModule, DeviceBuffer, KernelArg } from "../backends/cuda/driver.ts";

/** Threads a block and blocks an SM of {@link STREAM_READ_PTX}'s grid. */
export const STREAM_READ_BLOCK = 256, STREAM_READ_BLOCKS_PER_SM = 8;

/**
 * The PTX of one grid-stride pass over `n` 16-byte vectors at `ptr` (params), xor-folded into
 * `%r10`: four vectors a thread an iteration while four fit, then one. `%rd1` is the thread's
 * first vector, `%rd3` the grid's stride (vectors), `%rd4` it in bytes.
 */
function readPass(label: string, ptr: string, n: string): string {
  const fold = (from: number) =>
    Array.from({ length: 4 }, (_, j) => `  xor.b32 %r10, %r10, %r${from + j};`).join("\n");
  const loads = [11, 15, 19, 23].map((r, j) =>
    `${j === 0 ? "" : "  add.u64 %rd15, %rd15, %rd4;\n"}` +
    `  ld.global.cg.v4.u32 {%r${r}, %r${r + 1}, %r${r + 2}, %r${r + 3}}, [%rd15];`
  ).join("\n");
  return `  ld.param.u64 %rd10, [${ptr}];
  cvta.to.global.u64 %rd10, %rd10;
  ld.param.u64 %rd11, [${n}];
  mov.u64 %rd12, %rd1;
${label}_FOUR:
  add.u64 %rd14, %rd12, %rd13;
  setp.ge.u64 %p1, %rd14, %rd11;
  @%p1 bra ${label}_ONE;
  shl.b64 %rd15, %rd12, 4;
  add.u64 %rd15, %rd10, %rd15;
${loads}
${[11, 15, 19, 23].map(fold).join("\n")}
  add.u64 %rd12, %rd12, %rd16;
  bra ${label}_FOUR;
${label}_ONE:
  setp.ge.u64 %p1, %rd12, %rd11;
  @%p1 bra ${label}_DONE;
  shl.b64 %rd15, %rd12, 4;
  add.u64 %rd15, %rd10, %rd15;
  ld.global.cg.v4.u32 {%r11, %r12, %r13, %r14}, [%rd15];
${fold(11)}
  add.u64 %rd12, %rd12, %rd3;
  bra ${label}_ONE;
${label}_DONE:`;
}

/** The PTX that xors each of `regs` (b32) across the warp by butterfly shuffles, through `tmp`:
 * afterwards every lane holds the warp's xor of each. */
export function warpXorPtx(regs: readonly string[], tmp: string): string {
  return [16, 8, 4, 2, 1].flatMap((m) =>
    regs.map((r) =>
      `  shfl.sync.bfly.b32 ${tmp}, ${r}, ${m}, 31, -1;\n  xor.b32 ${r}, ${r}, ${tmp};`
    )
  ).join("\n");
}

/**
 * `stream_read(a, a_vecs, b, b_vecs, d, d_vecs, out)`: reads `a_vecs` 16-byte vectors at `a`
 * and `b_vecs` at `b`, writes `d_vecs` at `d`, and stores each warp's fold of every word it
 * read to the 32-bit word `out[warp of the grid]`.
 */
export const STREAM_READ_PTX = `.version 8.0
.target sm_80
.address_size 64
.visible .entry stream_read(.param .u64 a, .param .u64 a_vecs, .param .u64 b,
  .param .u64 b_vecs, .param .u64 d, .param .u64 d_vecs, .param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<24>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd1, %r1, %r2;
  cvt.u64.u32 %rd2, %r3;
  add.u64 %rd1, %rd1, %rd2;
  mul.wide.u32 %rd3, %r4, %r2;
  shl.b64 %rd4, %rd3, 4;
  mul.lo.u64 %rd13, %rd3, 3;
  shl.b64 %rd16, %rd3, 2;
  mov.b32 %r10, 0;
${readPass("A", "a", "a_vecs")}
${readPass("B", "b", "b_vecs")}
  ld.param.u64 %rd10, [d];
  cvta.to.global.u64 %rd10, %rd10;
  ld.param.u64 %rd11, [d_vecs];
  mov.u64 %rd12, %rd1;
D_ONE:
  setp.ge.u64 %p1, %rd12, %rd11;
  @%p1 bra D_DONE;
  shl.b64 %rd15, %rd12, 4;
  add.u64 %rd15, %rd10, %rd15;
  st.global.cs.v4.u32 [%rd15], {%r10, %r10, %r10, %r10};
  add.u64 %rd12, %rd12, %rd3;
  bra D_ONE;
D_DONE:
${warpXorPtx(["%r10"], "%r30")}
  and.b32 %r31, %r3, 31;
  setp.ne.u32 %p2, %r31, 0;
  @%p2 bra DONE;
  ld.param.u64 %rd20, [out];
  cvta.to.global.u64 %rd20, %rd20;
  shr.u64 %rd21, %rd1, 5;
  shl.b64 %rd21, %rd21, 2;
  add.u64 %rd20, %rd20, %rd21;
  st.global.u32 [%rd20], %r10;
DONE:
  ret;
}
`;

/** One input set of a row: A's and B's buffers, read for `aBytes` and `bBytes`. */
export interface StreamReadSet {
  readonly a: DeviceBuffer;
  readonly b: DeviceBuffer;
}

/** The row's bytes: A and B read, D written (each a multiple of 16). */
export interface StreamReadBytes {
  readonly a: number;
  readonly b: number;
  readonly d: number;
}

/** `--read`'s side of a row: the launch of set `i % sets`, and the check. */
export interface StreamRead {
  /** Launches the kernel on input set `i % sets` (writing that set's destination); `extra`:
   * the arguments of parameters an {@link StreamReadTrace.instrument} appended. */
  readonly launch: (i: number, extra?: readonly KernelArg[]) => void;
  /** The grid's blocks (SMs x {@link STREAM_READ_BLOCKS_PER_SM}). */
  readonly blocks: number;
  /**
   * Runs set 0 once on zeroed warp words and compares their xor with the xor of every word of
   * set 0's A and B bytes, computed on the host from their download.
   */
  readonly check: () => StreamReadCheck;
}

/** {@link StreamRead.check}'s outcome: the xor the kernel's warps folded and the host's. */
export interface StreamReadCheck {
  readonly ok: boolean;
  readonly got: number;
  readonly want: number;
}

/** The xor of every little-endian 32-bit word of `bytes` (a multiple of 4 long). */
export function xorWords(bytes: Uint8Array, acc = 0): number {
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
  for (let i = 0; i < words.length; i++) acc ^= words[i]!;
  return acc >>> 0;
}

/** The kernel instrumented (bench/timeline.ts): its PTX rewritten, and the arguments of the
 * parameters that adds for {@link StreamRead.check}'s launch. */
export interface StreamReadTrace {
  readonly instrument: (ptx: string) => string;
  readonly checkArgs: readonly KernelArg[];
}

/**
 * `--read`'s side: {@link STREAM_READ_PTX} (rewritten by `trace`, where given) loaded into `mods`
 * (unloaded with the row's), a destination of D's bytes for each set and the warps' words appended
 * to `bufs` (freed with the row's). Null where a byte count is not a multiple of 16 or exceeds its
 * set's buffer.
 */
export function streamRead(
  cuda: Cuda,
  bytes: StreamReadBytes,
  sets: readonly StreamReadSet[],
  bufs: DeviceBuffer[],
  mods: CudaModule[],
  trace?: StreamReadTrace,
): StreamRead | null {
  const fits = (n: number, buf: DeviceBuffer) => n % 16 === 0 && n <= buf.bytes;
  if (sets.length === 0 || bytes.d % 16 !== 0) return null;
  if (!sets.every((s) => fits(bytes.a, s.a) && fits(bytes.b, s.b))) return null;
  const mod = cuda.loadModule(trace ? trace.instrument(STREAM_READ_PTX) : STREAM_READ_PTX);
  mods.push(mod);
  const fn = mod.getFunction("stream_read");
  const blocks = cuda.device.multiprocessors * STREAM_READ_BLOCKS_PER_SM;
  const out = cuda.alloc((blocks * STREAM_READ_BLOCK) / 32 * 4);
  bufs.push(out);
  const dsts = sets.map(() => cuda.alloc(Math.max(16, bytes.d)));
  bufs.push(...dsts);
  const config = {
    grid: [blocks, 1, 1] as const,
    block: [STREAM_READ_BLOCK, 1, 1] as const,
    dynamicSmemBytes: 0,
  };
  const u64 = (value: bigint) => ({ type: "u64" as const, value });
  const vecs = (n: number) => u64(BigInt(n / 16));
  const args = sets.map((s, i) => [
    u64(s.a.ptr),
    vecs(bytes.a),
    u64(s.b.ptr),
    vecs(bytes.b),
    u64(dsts[i]!.ptr),
    vecs(bytes.d),
    u64(out.ptr),
  ]);
  const check = (): StreamReadCheck => {
    out.fill(0);
    cuda.launch(fn, config, [...args[0]!, ...(trace?.checkArgs ?? [])]);
    cuda.synchronize();
    const got = xorWords(out.download());
    const s = sets[0]!;
    const want = xorWords(
      s.b.download(new Uint8Array(bytes.b)),
      xorWords(s.a.download(new Uint8Array(bytes.a))),
    );
    return { ok: got === want, got, want };
  };
  return {
    blocks,
    launch: (i, extra = []) => cuda.launch(fn, config, [...args[i % sets.length]!, ...extra]),
    check,
  };
}
