/**
 * A research kernel for bench/timeline.ts `--slices` (issue 22, bench/NOTES.md 95-96): does a
 * decode GEMM's tail come from *where* its blocks read B, and would another order of reads cure
 * it? At M <= 16 our kernel runs 128 blocks of 16x32x256 (one wave), each streaming one
 * contiguous 256 KB slice of B (32 columns of K = 4096 f16, 8 KB a column) in k-tiles of 512
 * bytes a column, 4 stages of `cp.async.cg` deep; the blocks end over ~2.2 µs, and a block's
 * speed repeats with the address of its slice (NOTES 95). This kernel reads B the same way and
 * does nothing else, with two knobs that our kernel does not have:
 *
 * - **group** G (a divisor of 32): a block's 32 columns are 32/G groups of G adjacent columns,
 *   group q of block x at column `q * blocks * G + x * G` (G = 32: our kernel's contiguous
 *   slice; G = 8: four 64 KB runs 8 MB apart at N = K = 4096; G = 1: 32 columns 1 MB apart);
 * - **rotate** R: block x starts its k-loop at k-tile `(x * R) mod kTiles` and wraps, so the
 *   blocks read different k-offsets at the same moment (R = 0: all in step, as ours).
 *
 * Every column and k-tile of B is read exactly once whatever G and R (the map is a bijection);
 * each thread folds the words it copied into an xor, and the host compares the xor of the warps'
 * words with that of B's bytes ({@link SliceRead.check}), so a kernel that skipped or repeated a
 * load fails. The k-tile is 512 bytes a column for any type (the memory pattern of the f16
 * kernel; an s8 kernel's is 256). Hand-written PTX: the kernel IR describes GEMMs, not this.
 *
 * @module
 */

import type { Cuda, CudaModule, DeviceBuffer, KernelArg } from "../backends/cuda/driver.ts";
import { xorWords } from "./stream_read.ts";

/** Threads a block (4 warps, as the 16x32x256 tile), columns a block, bytes of a column's k-tile,
 * stages. */
export const SLICE_THREADS = 128, SLICE_COLS = 32, SLICE_KTILE_BYTES = 512, SLICE_STAGES = 4;
/** Bytes of one stage: every column's k-tile. */
const STAGE_BYTES = SLICE_COLS * SLICE_KTILE_BYTES;
/** 16-byte copies a thread a stage. */
const COPIES = STAGE_BYTES / 16 / SLICE_THREADS;

/** One variant: the group of adjacent columns and the rotation of the k-loop. */
export interface SliceVariant {
  readonly group: number;
  readonly rotate: number;
}

/** `G:R` pairs, comma-separated (e.g. `32:0,8:0,32:1`); throws on a group that does not divide
 * {@link SLICE_COLS} or a negative rotation. */
export function parseSliceVariants(text: string): SliceVariant[] {
  return text.split(",").map((v) => {
    const m = /^(\d+):(\d+)$/.exec(v.trim());
    const group = m ? Number(m[1]) : NaN, rotate = m ? Number(m[2]) : NaN;
    if (!(group >= 1 && SLICE_COLS % group === 0 && rotate >= 0)) {
      throw new Error(`--slices: "${v}" is not G:R with G dividing ${SLICE_COLS}, R >= 0`);
    }
    return { group, rotate };
  });
}

/** Copy i's column within the block is `hi + 4 i` (`hi` the warp): its address in B, `%rd2x`. */
function columnBases(): string {
  return Array.from({ length: COPIES }, (_, i) =>
    `  add.u32 %r20, %r4, ${i * (SLICE_THREADS / 32)};
  div.u32 %r21, %r20, %r5;
  rem.u32 %r22, %r20, %r5;
  mad.lo.u32 %r23, %r21, %r11, %r12;
  add.u32 %r23, %r23, %r22;
  mul.wide.u32 %rd5, %r23, %r8;
  add.u64 %rd${20 + i}, %rd4, %rd5;`).join("\n");
}

/**
 * `slice_read(b, col_bytes, ktiles, group, rotate, out)`: block x of the grid reads its
 * {@link SLICE_COLS} columns of B (`col_bytes` apart, `ktiles` k-tiles of
 * {@link SLICE_KTILE_BYTES} each) through a ring of {@link SLICE_STAGES} stages of shared memory
 * (dynamic, `SLICE_STAGES * 16 KB`) and stores each warp's xor of the words it copied to
 * `out[warp of the grid]`.
 */
export const SLICE_READ_PTX = `.version 8.0
.target sm_80
.address_size 64
.extern .shared .align 128 .b8 slice_smem[];
.visible .entry slice_read(.param .u64 b, .param .u32 col_bytes, .param .u32 ktiles,
  .param .u32 group, .param .u32 rotate, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<32>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %nctaid.x;
  shr.u32 %r4, %r1, 5;
  and.b32 %r9, %r1, 31;
  ld.param.u32 %r5, [group];
  ld.param.u32 %r6, [rotate];
  ld.param.u32 %r7, [ktiles];
  ld.param.u32 %r8, [col_bytes];
  ld.param.u64 %rd4, [b];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd6, %r9, 16;
  add.u64 %rd4, %rd4, %rd6;
  mul.lo.u32 %r11, %r3, %r5;
  mul.lo.u32 %r12, %r2, %r5;
${columnBases()}
  mul.lo.u32 %r13, %r2, %r6;
  rem.u32 %r13, %r13, %r7;
  mov.u32 %r14, slice_smem;
  shl.b32 %r15, %r1, 4;
  add.u32 %r14, %r14, %r15;
  mov.b32 %r10, 0;
  mov.u32 %r30, 0;
  add.u32 %r31, %r7, ${SLICE_STAGES - 1};
LOOP:
  setp.ge.u32 %p1, %r30, %r7;
  @%p1 bra ISSUED;
  add.u32 %r32, %r30, %r13;
  setp.ge.u32 %p2, %r32, %r7;
  @%p2 sub.u32 %r32, %r32, %r7;
  mul.wide.u32 %rd7, %r32, ${SLICE_KTILE_BYTES};
  and.b32 %r33, %r30, ${SLICE_STAGES - 1};
  mad.lo.u32 %r33, %r33, ${STAGE_BYTES}, %r14;
${
  Array.from({ length: COPIES }, (_, i) =>
    `  add.u64 %rd8, %rd${20 + i}, %rd7;
  cp.async.cg.shared.global [%r33+${i * SLICE_THREADS * 16}], [%rd8], 16;`).join("\n")
}
ISSUED:
  cp.async.commit_group;
  setp.lt.u32 %p3, %r30, ${SLICE_STAGES - 1};
  @%p3 bra NEXT;
  cp.async.wait_group ${SLICE_STAGES - 1};
  bar.sync 0;
  sub.u32 %r34, %r30, ${SLICE_STAGES - 1};
  and.b32 %r34, %r34, ${SLICE_STAGES - 1};
  mad.lo.u32 %r34, %r34, ${STAGE_BYTES}, %r14;
${
  Array.from({ length: COPIES }, (_, i) =>
    `  ld.shared.v4.u32 {%r40, %r41, %r42, %r43}, [%r34+${i * SLICE_THREADS * 16}];
  xor.b32 %r10, %r10, %r40;
  xor.b32 %r10, %r10, %r41;
  xor.b32 %r10, %r10, %r42;
  xor.b32 %r10, %r10, %r43;`).join("\n")
}
  bar.sync 0;
NEXT:
  add.u32 %r30, %r30, 1;
  setp.lt.u32 %p1, %r30, %r31;
  @%p1 bra LOOP;
${
  [16, 8, 4, 2, 1].map((m) =>
    `  shfl.sync.bfly.b32 %r50, %r10, ${m}, 31, -1;\n  xor.b32 %r10, %r10, %r50;`
  ).join("\n")
}
  setp.ne.u32 %p1, %r9, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd10, [out];
  cvta.to.global.u64 %rd10, %rd10;
  mad.lo.u32 %r51, %r2, ${SLICE_THREADS / 32}, %r4;
  mul.wide.u32 %rd11, %r51, 4;
  add.u64 %rd10, %rd10, %rd11;
  st.global.u32 [%rd10], %r10;
DONE:
  ret;
}
`;

/** {@link sliceRead}'s side: the launch of input set `i % sets` and the check. */
export interface SliceRead {
  readonly blocks: number;
  /** `extra`: the arguments of parameters an instrumentation appended. */
  readonly launch: (i: number, extra?: readonly KernelArg[]) => void;
  /** Runs set 0 once on zeroed warp words; their xor against that of set 0's B bytes. */
  readonly check: (extra?: readonly KernelArg[]) => { ok: boolean; got: number; want: number };
}

/**
 * The kernel (its PTX passed through `instrument`, where given) over B's input sets, `n` columns
 * of `colBytes` each: `n / 32` blocks. Null where `n` is not a multiple of {@link SLICE_COLS}, a
 * column is not whole k-tiles, or a buffer is shorter than `n * colBytes`.
 */
export function sliceRead(
  cuda: Cuda,
  shape: { readonly n: number; readonly colBytes: number },
  v: SliceVariant,
  sets: readonly DeviceBuffer[],
  own: { readonly bufs: DeviceBuffer[]; readonly mods: CudaModule[] },
  instrument: (ptx: string) => string = (p) => p,
): SliceRead | null {
  const { n, colBytes } = shape;
  const bytes = n * colBytes;
  if (n % SLICE_COLS !== 0 || colBytes % SLICE_KTILE_BYTES !== 0) return null;
  if (sets.length === 0 || sets.some((s) => s.bytes < bytes)) return null;
  const mod = cuda.loadModule(instrument(SLICE_READ_PTX));
  own.mods.push(mod);
  const fn = mod.getFunction("slice_read");
  const smem = SLICE_STAGES * STAGE_BYTES;
  fn.setMaxDynamicSharedBytes(smem);
  const blocks = n / SLICE_COLS;
  const out = cuda.alloc(blocks * (SLICE_THREADS / 32) * 4);
  own.bufs.push(out);
  const config = {
    grid: [blocks, 1, 1] as const,
    block: [SLICE_THREADS, 1, 1] as const,
    dynamicSmemBytes: smem,
  };
  const u32 = (value: number) => ({ type: "u32" as const, value });
  const args = sets.map((s) => [
    { type: "u64" as const, value: s.ptr },
    u32(colBytes),
    u32(colBytes / SLICE_KTILE_BYTES),
    u32(v.group),
    u32(v.rotate),
    { type: "u64" as const, value: out.ptr },
  ]);
  const launch = (i: number, extra: readonly KernelArg[] = []) =>
    cuda.launch(fn, config, [...args[i % sets.length]!, ...extra]);
  return {
    blocks,
    launch,
    check: (extra = []) => {
      out.fill(0);
      launch(0, extra);
      cuda.synchronize();
      const got = xorWords(out.download());
      const want = xorWords(sets[0]!.download(new Uint8Array(bytes)));
      return { ok: got === want, got, want };
    },
  };
}
