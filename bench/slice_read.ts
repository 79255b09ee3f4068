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
 * and two that it has, to take apart:
 *
 * - **a**: every block also copies A's k-tile (16 rows of `K` elements, row-major: 8 KB a stage,
 *   4 copies a thread), the same bytes for every block at the same moment (R = 0), as ours;
 * - **e**: B's copies carry an L2 evict_first policy (our skinny kernels' `cache_b`);
 * - **s**: one k-tile fewer in flight while a block waits, as ours ({@link sliceReadPtx}).
 *
 * Every column and k-tile of B is read exactly once whatever G and R (the map is a bijection);
 * each thread folds the words it copied into an xor, B's and A's apart, and the host compares the
 * xor of the warps' B words with that of B's bytes and, block by block, the xor of its warps' A
 * words with that of A's bytes ({@link SliceRead.check}), so a kernel that skipped or repeated a
 * load fails. The k-tile is 512 bytes a column for any type (the memory pattern of the f16
 * kernel; an s8 kernel's is 256). Hand-written PTX: the kernel IR describes GEMMs, not this.
 *
 * @module
 */

import type { Cuda, CudaModule, DeviceBuffer, KernelArg } from "../backends/cuda/driver.ts";
import { warpXorPtx, xorWords } from "./stream_read.ts";

/** Threads a block (4 warps, as the 16x32x256 tile), columns a block, bytes of a column's k-tile,
 * stages. */
export const SLICE_THREADS = 128, SLICE_COLS = 32, SLICE_KTILE_BYTES = 512, SLICE_STAGES = 4;
/** Rows of A a block copies with the `a` flag (the decode tile's M). */
export const SLICE_A_ROWS = 16;
/** Bytes of one stage: every column's k-tile. */
const STAGE_BYTES = SLICE_COLS * SLICE_KTILE_BYTES;
/** 16-byte copies a thread a stage. */
const COPIES = STAGE_BYTES / 16 / SLICE_THREADS;
/** A's k-tile's place in a stage (after B's), and a stage's bytes with it. */
const A_OFFSET = STAGE_BYTES, STAGE_STRIDE = STAGE_BYTES + SLICE_A_ROWS * SLICE_KTILE_BYTES;

/** A's 16-byte copies a thread a stage. */
const A_COPIES = SLICE_A_ROWS * SLICE_KTILE_BYTES / 16 / SLICE_THREADS;

/** One variant: the group of adjacent columns, the rotation of the k-loop, whether A is read
 * too and whether B's copies evict first. */
export interface SliceVariant {
  readonly group: number;
  readonly rotate: number;
  readonly a: boolean;
  readonly evictFirst: boolean;
  /** One k-tile fewer in flight while a block waits (as ours; {@link sliceReadPtx}). */
  readonly shallow: boolean;
}

/** `G:R[:FLAGS]` comma-separated (e.g. `32:0,8:0:a,32:1:aes`; flags `a`, `e`, `s`, see the module);
 * throws on a group that does not divide {@link SLICE_COLS}, a negative rotation or another
 * flag. */
export function parseSliceVariants(text: string): SliceVariant[] {
  return text.split(",").map((v) => {
    const m = /^(\d+):(\d+)(?::([aes]+))?$/.exec(v.trim());
    const group = m ? Number(m[1]) : NaN, rotate = m ? Number(m[2]) : NaN;
    const flags = m?.[3] ?? "";
    if (
      !(group >= 1 && SLICE_COLS % group === 0 && rotate >= 0) ||
      new Set(flags).size !== flags.length
    ) {
      throw new Error(
        `--slices: "${v}" is not G:R[:FLAGS] with G dividing ${SLICE_COLS}, R >= 0, flags of a, e, s`,
      );
    }
    return {
      group,
      rotate,
      a: flags.includes("a"),
      evictFirst: flags.includes("e"),
      shallow: flags.includes("s"),
    };
  });
}

/** The label of a variant, as {@link parseSliceVariants} reads it. */
export function sliceLabel(v: SliceVariant): string {
  const flags = `${v.a ? "a" : ""}${v.evictFirst ? "e" : ""}${v.shallow ? "s" : ""}`;
  return `${v.group}:${v.rotate}${flags === "" ? "" : `:${flags}`}`;
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
 * `slice_read(b, col_bytes, ktiles, group, rotate, a, evict_first, out)`: block x of the grid
 * reads its
 * {@link SLICE_COLS} columns of B (`col_bytes` apart, `ktiles` k-tiles of
 * {@link SLICE_KTILE_BYTES} each) through a ring of {@link SLICE_STAGES} stages of shared memory
 * (dynamic, `SLICE_STAGES * 16 KB`) and stores each warp's xor of the words it copied to
 * `out[warp of the grid]`. Each iteration issues k-tile j's copies, then waits for k-tile
 * j - `lag` and folds it: `lag` k-tiles stay in flight while a block waits (3: our 4-stage
 * kernel's count plus one, as it issues after its wait; 2: as ours, the `s` flag).
 */
export function sliceReadPtx(lag: number): string {
  return `.version 8.0
.target sm_80
.address_size 64
.extern .shared .align 128 .b8 slice_smem[];
.visible .entry slice_read(.param .u64 b, .param .u32 col_bytes, .param .u32 ktiles,
  .param .u32 group, .param .u32 rotate, .param .u64 a, .param .u32 evict_first,
  .param .u64 out)
{
  .reg .pred %p<8>;
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
  // A (row r = warp + 4 i, its chunk the lane's), or none where a = 0.
  ld.param.u64 %rd12, [a];
  setp.ne.u64 %p5, %rd12, 0;
  cvta.to.global.u64 %rd12, %rd12;
  add.u64 %rd12, %rd12, %rd6;
  mul.wide.u32 %rd13, %r4, %r8;
  add.u64 %rd12, %rd12, %rd13;
  mul.wide.u32 %rd14, %r8, ${SLICE_THREADS / 32};
  ld.param.u32 %r16, [evict_first];
  setp.ne.u32 %p6, %r16, 0;
  createpolicy.fractional.L2::evict_first.b64 %rd15, 1.0;
  mov.b32 %r10, 0;
  mov.b32 %r17, 0;
  mov.u32 %r30, 0;
  add.u32 %r31, %r7, ${lag};
LOOP:
  setp.ge.u32 %p1, %r30, %r7;
  @%p1 bra ISSUED;
  add.u32 %r32, %r30, %r13;
  setp.ge.u32 %p2, %r32, %r7;
  @%p2 sub.u32 %r32, %r32, %r7;
  mul.wide.u32 %rd7, %r32, ${SLICE_KTILE_BYTES};
  and.b32 %r33, %r30, ${SLICE_STAGES - 1};
  mad.lo.u32 %r33, %r33, ${STAGE_STRIDE}, %r14;
${
    Array.from({ length: COPIES }, (_, i) =>
      `  add.u64 %rd8, %rd${20 + i}, %rd7;
  @%p6 cp.async.cg.shared.global.L2::cache_hint [%r33+${i * SLICE_THREADS * 16}], [%rd8], 16, %rd15;
  @!%p6 cp.async.cg.shared.global [%r33+${i * SLICE_THREADS * 16}], [%rd8], 16;`).join("\n")
  }
  @!%p5 bra ISSUED;
  add.u64 %rd8, %rd12, %rd7;
${
    Array.from({ length: A_COPIES }, (_, i) =>
      `  cp.async.cg.shared.global [%r33+${A_OFFSET + i * SLICE_THREADS * 16}], [%rd8], 16;
  add.u64 %rd8, %rd8, %rd14;`).join("\n")
  }
ISSUED:
  cp.async.commit_group;
  setp.lt.u32 %p3, %r30, ${lag};
  @%p3 bra NEXT;
  cp.async.wait_group ${lag};
  bar.sync 0;
  sub.u32 %r34, %r30, ${lag};
  and.b32 %r34, %r34, ${SLICE_STAGES - 1};
  mad.lo.u32 %r34, %r34, ${STAGE_STRIDE}, %r14;
${
    Array.from({ length: COPIES }, (_, i) =>
      `  ld.shared.v4.u32 {%r40, %r41, %r42, %r43}, [%r34+${i * SLICE_THREADS * 16}];
  xor.b32 %r10, %r10, %r40;
  xor.b32 %r10, %r10, %r41;
  xor.b32 %r10, %r10, %r42;
  xor.b32 %r10, %r10, %r43;`).join("\n")
  }
  @!%p5 bra FOLDED;
${
    Array.from({ length: A_COPIES }, (_, i) =>
      `  ld.shared.v4.u32 {%r40, %r41, %r42, %r43}, [%r34+${A_OFFSET + i * SLICE_THREADS * 16}];
  xor.b32 %r17, %r17, %r40;
  xor.b32 %r17, %r17, %r41;
  xor.b32 %r17, %r17, %r42;
  xor.b32 %r17, %r17, %r43;`).join("\n")
  }
FOLDED:
  bar.sync 0;
NEXT:
  add.u32 %r30, %r30, 1;
  setp.lt.u32 %p1, %r30, %r31;
  @%p1 bra LOOP;
${warpXorPtx(["%r10", "%r17"], "%r50")}
  setp.ne.u32 %p1, %r9, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd10, [out];
  cvta.to.global.u64 %rd10, %rd10;
  mad.lo.u32 %r51, %r2, ${SLICE_THREADS / 32}, %r4;
  mul.wide.u32 %rd11, %r51, 8;
  add.u64 %rd10, %rd10, %rd11;
  st.global.v2.u32 [%rd10], {%r10, %r17};
DONE:
  ret;
}
`;
}

/** The kernel with {@link SLICE_STAGES} - 1 k-tiles in flight while a block waits. */
export const SLICE_READ_PTX = sliceReadPtx(SLICE_STAGES - 1);

/** {@link sliceRead}'s side: the launch of input set `i % sets` and the check. */
export interface SliceRead {
  readonly blocks: number;
  /** `extra`: the arguments of parameters an instrumentation appended. */
  readonly launch: (i: number, extra?: readonly KernelArg[]) => void;
  /** Runs set 0 once on zeroed warp words: the xor of their B words against that of set 0's B
   * bytes and (with A) each block's xor of its A words against that of A's bytes. */
  readonly check: (extra?: readonly KernelArg[]) => SliceCheck;
}

/** {@link SliceRead.check}'s outcome (`badBlocks`: blocks whose A words disagree). */
export interface SliceCheck {
  readonly ok: boolean;
  readonly got: number;
  readonly want: number;
  readonly badBlocks: number;
}

/** One input set: B, and A (read with the `a` flag). */
export interface SliceSet {
  readonly a: DeviceBuffer;
  readonly b: DeviceBuffer;
}

/**
 * The kernel (its PTX passed through `instrument`, where given) over the input sets, `n` columns
 * of B of `colBytes` each (`n / 32` blocks) and, with the `a` flag, {@link SLICE_A_ROWS} rows of
 * A of `colBytes` each. Null where `n` is not a multiple of {@link SLICE_COLS}, a column is not
 * whole k-tiles, or a buffer is too short.
 */
export function sliceRead(
  cuda: Cuda,
  shape: { readonly n: number; readonly colBytes: number },
  v: SliceVariant,
  sets: readonly SliceSet[],
  own: { readonly bufs: DeviceBuffer[]; readonly mods: CudaModule[] },
  instrument: (ptx: string) => string = (p) => p,
): SliceRead | null {
  const { n, colBytes } = shape;
  const [bBytes, aBytes] = [n * colBytes, SLICE_A_ROWS * colBytes];
  if (n % SLICE_COLS !== 0 || colBytes % SLICE_KTILE_BYTES !== 0 || sets.length === 0) return null;
  if (sets.some((s) => s.b.bytes < bBytes || (v.a && s.a.bytes < aBytes))) return null;
  const mod = cuda.loadModule(instrument(sliceReadPtx(SLICE_STAGES - (v.shallow ? 2 : 1))));
  own.mods.push(mod);
  const fn = mod.getFunction("slice_read");
  const smem = SLICE_STAGES * STAGE_STRIDE;
  fn.setMaxDynamicSharedBytes(smem);
  const blocks = n / SLICE_COLS;
  const warps = SLICE_THREADS / 32;
  // Each warp's two words: its B xor, its A xor.
  const out = cuda.alloc(blocks * warps * 8);
  own.bufs.push(out);
  const config = {
    grid: [blocks, 1, 1] as const,
    block: [SLICE_THREADS, 1, 1] as const,
    dynamicSmemBytes: smem,
  };
  const u32 = (value: number) => ({ type: "u32" as const, value });
  const u64 = (value: bigint) => ({ type: "u64" as const, value });
  const args = sets.map((s) => [
    u64(s.b.ptr),
    u32(colBytes),
    u32(colBytes / SLICE_KTILE_BYTES),
    u32(v.group),
    u32(v.rotate),
    u64(v.a ? s.a.ptr : 0n),
    u32(v.evictFirst ? 1 : 0),
    u64(out.ptr),
  ]);
  const launch = (i: number, extra: readonly KernelArg[] = []) =>
    cuda.launch(fn, config, [...args[i % sets.length]!, ...extra]);
  const check = (extra: readonly KernelArg[] = []): SliceCheck => {
    out.fill(0);
    launch(0, extra);
    cuda.synchronize();
    const words = new Uint32Array(out.download().buffer);
    let got = 0;
    for (let w = 0; w < words.length; w += 2) got ^= words[w]!;
    got >>>= 0;
    const want = xorWords(sets[0]!.b.download(new Uint8Array(bBytes)));
    const wantA = v.a ? xorWords(sets[0]!.a.download(new Uint8Array(aBytes))) : 0;
    let badBlocks = 0;
    for (let x = 0; x < blocks; x++) {
      let a = 0;
      for (let w = 0; w < warps; w++) a ^= words[(x * warps + w) * 2 + 1]!;
      if (a >>> 0 !== wantA) badBlocks++;
    }
    return { ok: got === want && badBlocks === 0, got, want, badBlocks };
  };
  return { blocks, launch, check };
}
