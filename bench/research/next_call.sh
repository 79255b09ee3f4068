#!/usr/bin/env bash
# Issue 22/23: the next call, written before it ran (2026-12-06, after bench/NOTES.md 83; the
# earlier plan of this name ran as calls 1-2 of NOTES 81). Steps tests, fill, bf16, fill2, fill3,
# ncu and llm (M = 16, 128, 1024) ran as calls 1-3 of NOTES 84; llms8, s8v, ncu2, fill4, s8r (with its llm rows as s8r2)
# and full as calls 1-4 of NOTES 85; f16m, early, early2, final86 as calls 1-4 of NOTES 86; s8x
# and s8t as call 1 of NOTES 87; pdlt and infer87 as call 1 of NOTES 88; m128v, trig, allgpu and
# ncu128 as calls 1-2 of NOTES 94 (an H100); ksweep, runs, timeline, timeline2, deep95, four95,
# s8deep, table95, timeline3 and cores95 as calls 1-8 of NOTES 95 (H100s); allgpu, slices, slices2
# and rot96 as calls 1-4 of NOTES 96 (H100s; rot96's K = 8192 rows were refused, --nk has no
# 4096x8192, and ran by hand as call 5); timeline, rotk14, rot97 and rotk97 as calls 1-3 of NOTES 97
# (H100s); early98, allgpu, wait98, tmap98 and gpu98 as calls 1-5 of NOTES 98 (H100s); sparse99,
# loop98, power98 and allgpu as calls 1-3 of NOTES 99 (an H100). NOTES 100 found no machine;
# probe100, n112, init100, early100 and setup99 ran as call 1 of NOTES 101 (an H100). The default
# STEPS are what NOTES 101 leaves for the next call, on an H200 (table95 at the head, n112b for the
# new 16x112 tiles, then ksweep for that card's fixed cost a launch, deep98; run with CARD=H200 and
# OTHER_STEPS for what another card should do instead: allgpu). Each step's time is not known
# before it runs: with `timeout 560`
# the steps late in the script's order may be cut (what ran is packed). Steps:
#   tests: tests/gpu/wgmma_test.ts --filter 224 (the 128x224 case with a column bias, staged rows
#          of 28 vectors) and tests/gpu/skinny_test.ts --filter sm90;
#   fill:  WGMMA_WAVE_FILL's unmeasured grids: f16 at 768x4096x4096 (96 blocks of 128x256) and
#          896x4096x4096 (112), the default (128x128) against `threadblock 128x256x64`;
#   bf16:  bf16 at 5000³ and 1024x14336x4096, the default (128x224, inferred from f16) against
#          `threadblock 128x256x64`;
#   fill2: after call 1 (NOTES 84), WGMMA_WAVE_FILL at 1/2: f16 at 512x4096 (64 blocks of
#          128x256, the sm80 fallback's side), 640x3584 (70), 640x4096 (80), 768x4096 (96), K =
#          4096, the default (128x224 by its wave rule at the last three) against
#          `threadblock 128x256x64` and `threadblock 128x128x64`;
#   fill3: after call 2, 128x128 where its one wave fills more than half the SMs: f16 at 384x4096
#          (96 blocks) and 512x4096 (128), K = 4096, sm90's default against the sm80 target's tile
#          (the fallback before);
#   llm:   the llm table of LLM_TYPES (default f16,bf16) at every M, the rule rows among them;
#   ncu:   where the sustained gap at 8192³ goes (NOTES 77: ours runs a lower clock at the same
#          power cap): Nsight Compute's DRAM, L2, shared-memory and instruction counts for f16's
#          default and for cuBLAS's kernel, one launch each at ncu's base clock, and for the
#          default with `swizzle 4` and `swizzle 16` (a window of tiles in flight that misses L2
#          reads more from DRAM);
#   ncu2:  the same pair at 8192³ (default only) with the L2's read sectors split by source unit
#          (NOTES 84: ours reads 12% above its arithmetic, cuBLAS 5%), a separate ncu run so that
#          a metric this ncu lacks costs only that run;
#   fill4: tf32 and s8, whose half-the-SMs bounds are inferred from f16 (NOTES 84), at 512x4096,
#          640x4096 and 768x4096 (K = 4096): the default against 128x128 and the sm80 target;
#   llms8: the llm table's s8 rows (M = 16, 128, every (N, K));
#   s8v:   s8 at M = 16 and 128, N = K = 4096, the default against deeper, split and wgmma
#          variants of its tiles (the llm table's protocol, one row a run);
#   s8r:   after s8's rule took 128x32x128 at M = 65-128: the s8 GPU tests of
#          tests/gpu/skinny_test.ts, the new default against the old one's schedule lines at
#          M = 100 and 128 (N = 4096, K = 4096 and 14336), and s8 at 512x4096x4096 against
#          128x128;
#   full:  after WGMMA_FULL_WAVE: the s8 skinny GPU tests, and s8 at 1024x2048 and 512x4224, f16
#          at 512x4224 (K = 4096), the default (128x128) against the 128x224 it replaced;
#   f16m:  f16 at M = 128, N = K = 4096, the default's schedule lines against 128x32 (one block
#          a tile, 11 stages) and 64x64 without clusters; s8 at M = 16 with 6 stages of 16x32x256
#          against the default's lines;
#   early: the compile option pdlEarly (B, the weights, copied into the first stages before the
#          wait): the PDL chain GPU tests (tests/gpu/pdl_test.ts), then the llm table's f16 rows at
#          M = 1-256, N = K = 4096 with --pdl (base) and with --pdl-early, then s8 (M = 16, 128)
#          and f16's N or K = 14336 rows at M = 16, 128 with --pdl-early;
#   early2: after call 1 of NOTES 86, same-run pairs of --pdl and --pdl-early (adjacent): f16 at
#          M = 64, 128, 256 and s8 at M = 128 (N = K = 4096) at the defaults, f16 M = 128 on
#          128x32x64 with 11 stages; then f16 M = 128 at K = 14336 on 128x32 against the default;
#   final86: after f16 and bf16 took 128x32 at M = 65-128 below K = 8192 (NOTES 86): the sm90
#          skinny GPU tests and the PDL chain tests, then the llm table (--pdl) of f16 and bf16 at
#          M = 16, 64, 128, 256, N = K = 4096 (the rows whose kernels changed, and their neighbours).
#   s8x:   M = 16, N = K = 4096 on two blocks an SM (each its own issuing warps, NOTES 73): s8's
#          16x32x256 split 2 in 6 and 4 stages, 16x16x256 (256 blocks); f16's 16x32x256 split 2;
#   infer87: two rules inferred from f16, measured for the other types: bf16 at M = 128,
#          N = K = 4096 on the default (128x32x64, one block a tile) against the 64x64 on clusters
#          it replaced, adjacent; bf16 and tf32 at 512x4224x4096 on the default (WGMMA_FULL_WAVE:
#          one wave of 128x128) against the tiles it replaced (128x224x64, 128x256x32);
#   pdlt:  the PDL chain GPU tests (tests/gpu/pdl_test.ts) after NOTES 87's review changed their
#          cases (128x32 a pdl-only chain, the clustered 64x64 the early one);
#   newk:  `gemm run --tune` of kernels that compile since NOTES 88 (they were refused, E0204):
#          sparse f16 at M = 128, N = K = 8192 on sm80 and 512x4096x14336 on sm90; f16 5000³ on
#          sm86's tile (run on the H100 through the JIT);
#   h200:  on an H200 (where the issues' targets are stated): every GPU test, then the llm table's
#          rows at N = K = 4096 (f16 and bf16 at M = 16, 64, 128, 256; s8 at M = 16, 128);
#   bf16k: bf16 at M = 128, N = 4096, K = 14336, the default (64x64 on clusters) against 128x32x64
#          in 11 stages, adjacent: the K side of the 128x32 rule, inferred from f16 (NOTES 88);
#   s8t:   the s8 GPU tests of tests/gpu/skinny_test.ts (16x32x256 in 6 stages at M = 9 among them).
#   h200b: call 3 of NOTES 89 (run there inline, these helpers): the llm rows of f16 and bf16 at
#          M = 1-1024 against (14336, 4096) and (4096, 14336), s8 at M = 16, 128 there, f16 and
#          bf16 at M = 1 and 1024 (N = K = 4096), then the sm90 benchmark at 8192³ (f16, bf16,
#          tf32, s8);
#   m128:  after NOTES 89 (the H200's M = 128 row ~6 µs over its floor): f16 at M = 128, N = K = 4096,
#          the default (128x32x64, 11 stages), 64x64x64 in 13 stages on clusters of 2, 128x32x64
#          on clusters of 1x2 (A's box shared), the default again;
#   m16deep: f16 at M = 16, N = K = 4096 on the H200: the default (16x32x256, 3 stages) against 6
#          and 9 stages (NOTES 73's depth model was measured on an H100 only, where 9 stages tied);
#   copy:  the llm rows of f16 at M = 16 and 128, N = K = 4096 with --pdl --copy (the copy of the
#          same bytes timed beside, bench/llm.ts `copyLaunch`; its first run on a GPU);
#   odd:   f16 at 5000³ on the sm80 target (issue 22's 5000³ row, not run on the H200 since NOTES 77).
#   timeline: NOTES 95: bench/timeline.ts (every block's start, wait, trigger and end, launch by
#          launch) for f16 at M = 16 and 128 and s8 at M = 16 (N = K = 4096, with the read
#          kernel), f16 at M = 16, N = 14336, and f16 M = 16 with the trigger after the last copy;
#   timeline2: after call 2 of NOTES 95: f16 at M = 16, N = K = 4096 traced under the default,
#          6 stages, split_k 2 and 16x16x256, then the default again, each with its blocks' records;
#   deep95: after timeline2 (6 stages ended the M = 16 blocks' tail sooner): f16 at M = 16, N = K =
#          4096 with 4, 6 and 9 stages of 16x32x256 (B evict_first, as the default), bf16 with 6,
#          each bracketed by the default (3 stages);
#   four95: after deep95 (4 stages the new default of 16-bit 16x32x256): the new default against 3
#          stages at f16 M = 1, 16, bf16 M = 16 and f16 K = 8192; the skinny and PDL GPU tests;
#   timeline3: the wgmma rows' blocks (f16 M = 64, 128; s8 M = 128; N = K = 4096), with records;
#   cores95: f16 M = 128 on 64x64 clusters in 6 stages (96 KB) against the default's 13, and M = 64
#          on 64x32 in 9 stages (108 KB) against 18: room for the next grid's block beside this one;
#   table95: the llm rows at N = K = 4096 (f16, bf16 at M = 1-256; s8 at 16, 128) with --pdl at
#          the head (FOUR95_TESTS=0 skips four95's GPU tests);
#   s8deep: s8 at M = 16, N = K = 4096: 16x32x256 in 8 stages (96 KB) against the default's 6;
#   ksweep: after NOTES 90 (a copy of the same bytes at 0.98 of the H100's floor): f16 at M = 16,
#          N = 4096, K = 1024-16384 (bench/llm.ts --sizes) with --pdl --copy --read: each side's time
#          against the bytes, whose slope is its streaming rate and intercept its fixed cost;
#   runs:  f16 at M = 16, N = K = 4096: the default (16x32x256: B read in 512-byte runs of each
#          column a k-tile) against 16x32x512 in 3 stages and 16x32x1024 in 2 (1 and 2 KB runs);
#   copyall: the llm rows at N = K = 4096 (f16 at M = 1-256, s8 at M = 16, 128) with --pdl --copy
#          --read (the streaming kernel of the same bytes, bench/stream_read.ts, its first GPU run);
#   cache: the schedule keys cache_a / cache_b (L2 eviction priorities, their first GPU run): f16
#          at M = 16 and 128, N = K = 4096, B evict_first, and at M = 128 A evict_last with it;
#   read2: after NOTES 91 (call 1-2 of it ran ksweep, copyall and cache on an H100): the llm rows
#          of f16, bf16 and s8 at M = 1-128 (N = K = 4096 and N = 14336) with --pdl --copy --read:
#          the read kernel with a word a warp (its fixed cost, unmeasured), and the skinny
#          evict_first default (SKINNY_STREAMED_B) on every row, bf16 and s8 for the first time;
#   m128s: after NOTES 92's model (the H200's M = 128 row bound by the bytes each SM takes in from
#          the L2: 1.25 MB a 128x32 block): f16 at M = 128, N = K = 4096, the default against
#          64x64x64 on clusters of 2 (1 MB a block), 128x64x64 split 2 in 9 stages (0.75 MB) and
#          128x128x64 split 4 in 6 stages (0.5 MB), and 128x32x64 on clusters of 1x2 (A's box
#          multicast: the same bytes into each SM, half of them read from the L2);
#   m256s: the same model at M = 256, N = K = 4096 (NOTES 92): the default 128x64x64 (1.5 MB into each
#          SM) against 128x128x64 split 2 in 6 stages (1 MB, a fix-up of 64 KB a tile);
#   m128v: after NOTES 92's change (16-bit M = 65-128 on 64x64 clusters, B evict_first there too):
#          f16 and bf16 at M = 128, N = K = 4096, the default against 128x32x64 in 11 stages with
#          `cache_b evict_first` (NOTES 92's old default), bracketed; on an H200 and an H100 alike;
#   trig:  NOTES 93's experiment: f16 and s8 at M = 1, 16 (the mma.sync skinny tiles), N = K = 4096,
#          ours+PDL with the trigger after the drain (--pdl) against after the last copy
#          (--pdl-last-copy), then --pdl again (NOTES 94 ran --pdl-early and both too, trig1-5);
#   ncu128: NOTES 92's second model (M = 128 bound by shared memory's bytes): ncu of f16 at M = 128,
#          N = K = 4096, the default (64x64 on clusters) and 128x32x64 in 11 stages with the hint, and cuBLAS
#          (Mem Busy, Max Bandwidth and the shared-memory rows of MemoryWorkloadAnalysis);
#   slices: NOTES 96: does the M = 16 tail come from where the blocks read B? bench/timeline.ts
#          --slices at f16 M = 16, N = 4096, K = 4096 and 8192: ours against the research kernel that
#          reads B as ours does (bench/slice_read.ts), its columns contiguous (32:0, bracketing),
#          in groups of 8 and 1 spread across B, and its k-loop rotated by 1 and 5 k-tiles a block;
#   slices2: after call 2 of NOTES 96 (the pure read of B ended its blocks over 1.4 µs, ours over
#          2.1, its slowest block 0.75 µs sooner; groups narrowed its ends, rotation did nothing):
#          the slice kernel with A read too (a: every block the same 8 KB a stage, in step) and B
#          evicting first (e), one k-tile fewer in flight (s, as ours), all three (ours' pattern),
#          then that with the k-loop rotated (R = 1, 5) and with 1-column groups;
#   rot96: after the skinny mma.sync tiles took `rotate_k 1` (SKINNY_ROTATE_K, NOTES 96): the new
#          default against `rotate_k 0` (the old kernel), bracketed, f16, bf16 and s8 at M = 16;
#          f16 M = 16 at K = 8192 and 14336 both ways; the timeline of f16 M = 16 both ways; the
#          skinny GPU tests whose kernels rotate (M = 1, 7, 9);
#   rotk14: after NOTES 96 (rotate_k works with split-K, not measured): f16 and bf16 at M = 1 and
#          16, N = 4096, K = 14336 (16x64x128 split 2), the default bracketing `rotate_k 1`;
#   rot97: after NOTES 97 (sm90's TMA pipelines rotate in their producer, rotate_k.ts
#          `tmaKSequence`): the wgmma skinny rows at N = K = 4096 (f16 M = 64 on 64x32, 128 on 64x64
#          clusters, 256 on 128x64; bf16 M = 64; s8 M = 128 on 128x32), the default bracketing
#          `rotate_k 1`; rotated TMA kernels at odd sizes through `gemm run` (checked against the
#          reference); f16 M = 16 at N = 14336 (sm80's 16x128x128, whose blocks end over 5 µs)
#          bracketing `rotate_k 1`; the timeline of f16 M = 64, 128 and of that row, both ways;
#   rotk97: after call 2 of NOTES 97 (rotate_k 1 lost on every TMA row, and s8's 256-byte k-tile rows
#          lost on mma.sync, where f16's 512-byte ones gained): f16 at M = 64 and 128, N = K =
#          4096, the default bracketing `rotate_k 4` (and 8 at M = 64): a block's start 512 (1024)
#          bytes further along each row of B, where `rotate_k 1` moved it 128;
#   early98: after NOTES 97's item 6 (a rotated cp.async loop copies early: with `pdlEarly` and B
#          `evict_normal` the skinny 16x32x256 kernel is rotated and copies B before its wait, a
#          combination never run on a GPU): the PDL chain and skinny GPU tests (pdl_test's M = 7
#          B-early case is that kernel), then f16 and bf16 at M = 16, N = K = 4096 with --pdl-early:
#          the default (B evict_first: rotated, no early copies) bracketing `cache_b evict_normal`
#          (rotated, early) and `cache_b evict_normal; rotate_k 0` (early, unrotated: the kernel
#          before item 6);
#   deep98: on an H200 (its HBM streams 1.4x the H100's bytes a µs, so it may need more in flight,
#          NOTES 95): f16 and bf16 at M = 16, N = K = 4096, the default (4 stages, the deepest whose
#          next grid's block fits beside it) bracketing `stages 6` (144 KB a block);
#   wait98: after NOTES 98's item 3 (a TMA pipeline's barrier set-up, the cluster barrier among it,
#          moved before griddepcontrol.wait): the llm rows with --pdl of f16 at M = 64, 128, 256
#          and s8 at M = 128 (N = K = 4096), the head bracketing the tree before the change
#          (.device/base98, carried: `git archive 7a72633` without tests, docs and results);
#   tmap98: after NOTES 98's item 4 (a TMA pipeline asks for its tensor maps' descriptors,
#          `prefetch.tensormap`, before its barriers' set-up): the same rows, the head bracketing
#          the tree before it (.device/base98b: `git archive 9c6faf4`, as base98);
#   gpu98: the GPU tests of the TMA kernels (tests/gpu/wgmma_test.ts) and the PDL chains, after
#          items 3 and 4;
#   loop98: after NOTES 98's item 3 (f16 M = 128 with PDL 0.7 µs faster once the set-up moved
#          before the wait, twice what was predicted): the timeline of f16 at M = 128, N = K = 4096
#          (its `loop` point: a block's first k-tile) on the head and on .device/base98 (the tree
#          before), head first and again;
#   power98: NOTES 98's item 5 (with PDL, M = 128 and 256 run their sustained series 15-20% below
#          the clock they hold without it): f16 at M = 64, 128, 256 (N = K = 4096, --pdl) with
#          nvidia-smi logging the power draw and SM clock every 50 ms beside the run
#          (power98-smi.csv; the llm log's row order is ours, ours+PDL, cuBLAS in each state);
#   setup99: NOTES 99 item 4's lead: the timeline's new `setup` point (a block's start to the
#          barrier after its mbarrier inits) for f16 at M = 128 (clusters of 2), 64 and 256
#          (N = K = 4096), to split the ~1.1 µs of set-up a block pays before its first copy;
#   probe100: the set-up's steps taken apart (bench/research/probes/setup_cost.cu): S stages'
#          mbarrier.inits by one thread, their fence (gemmc's fence.mbarrier_init.release.cluster
#          or fence.proxy.async), the cluster's or the block's barrier, in SM cycles, at S = 4, 9,
#          13, 18, on clusters of 2 and without; then probes/first_box.cu: a block's start to its
#          first stage landed (S bulk copies of 8 KB a block from DRAM), the copies issued after
#          the set-up's barrier (as gemmc does) or before it (NOTES 100 item 3's lead);
#   init100: after the first warp's lanes took over the barriers' set-up from one thread (NOTES
#          100): the timeline of f16 at M = 128 and 64 (N = K = 4096) on the head and on
#          .device/base99 (3b44b24, the tree before), then the llm rows of f16 at M = 64, 128,
#          256 with --pdl, head / base / head;
#   n112:  the one-wave grid at N = 14336 (M = 16, K = 4096) of 128 blocks (16x112) against the
#          skinny rule's 112 (16x128): s8 (0.80 of the floor on the H200 in NOTES 89, 0.84 with
#          PDL; the target 0.85) and f16, default / 16x112 with 7 warps of 16x16 / with 2 warps of
#          16x56 / default again (B evict_first on every side, as the default); ran as call 1 of
#          NOTES 101 (an H100), after which 16x112 on 2 warps became the default (it ran before
#          the step used llm_bracketed: its variants are named -w16 and -w56 there, not -v1, -v2);
#   n112b: the same rows after that: the default (16x112) / the old 16x128 / the default again;
#   early100: the TMA rows with B read before the wait: f16 at M = 64, 128, 256 (N = K = 4096),
#          --pdl, --pdl-early, --pdl again (NOTES 94 left them unmeasured since the hint, and
#          NOTES 98 moved the barriers' set-up before the wait);
#   sparse99: after NOTES 99's two completions (no timing): the sparse GPU tests, among them the
#          sm90 kernels with pdl and A, B or both read before the wait (one launch each, against the
#          reference and the simulator); examples/align1.gemm with cache_a / cache_b (its 2-byte
#          loads now carry the policy) at an odd size on sm80 and sm90, checked against the
#          simulator;
#   allgpu: every GPU test, `deno test -A tests/gpu/` (step h200 without its llm rows);
#   nohint: the same rows of f16 and s8 at N = K = 4096 with `cache_b evict_normal`, the
#          default before SKINNY_STREAMED_B, for the same-run comparison.
# Everything lands in OUT/all.tgz, packed after each step. Deno on PATH. Not part of the
# benchmark or of CI.
#
# Usage: [CARD=H200] bash bench/research/next_call.sh OUT   (STEPS: any of the steps above)
set -u
. bench/research/_gemm_run_rows.sh
call_start next_call "${1:?usage: next_call.sh OUT}" "table95 n112b ksweep deep98"
if has tests; then
  gpu_tests tests/gpu/wgmma_test.ts tests/gpu/skinny_test.ts --filter "/224|sm90/"
fi
if has early; then
  gpu_tests tests/gpu/pdl_test.ts
  llm_rows "$W" early-base f16 1,16,64,128,256 4096x4096
  LLM_PDL=--pdl-early llm_rows "$W" early f16 1,16,64,128,256 4096x4096
  LLM_PDL=--pdl-early llm_rows "$W" early-s8 s8 16,128 4096x4096
  LLM_PDL=--pdl-early llm_rows "$W" early-long f16 16,128 14336x4096,4096x14336
fi
if has final86; then
  gpu_tests tests/gpu/skinny_test.ts tests/gpu/pdl_test.ts --filter "/sm90|pdl chain/"
  llm_rows "$W" llm86 f16,bf16 16,64,128,256 4096x4096
fi
if has early2; then
  N32="threadblock 128x32x64; stages 11"
  for spec in "f16:64,128,256:" "s8:128:" "f16:128:$N32"; do
    IFS=: read -r t ms sched <<<"$spec"
    for pdlf in --pdl --pdl-early; do
      label="e2-$t-${ms//,/_}${sched:+-n32}${pdlf#--pdl}"
      if [ -n "$sched" ]; then
        LLM_PDL=$pdlf llm_rows "$W" "$label" "$t" "$ms" 4096x4096 "$sched"
      else
        LLM_PDL=$pdlf llm_rows "$W" "$label" "$t" "$ms" 4096x4096
      fi
    done
  done
  llm_rows "$W" e2-k14336 f16 128 4096x14336
  llm_rows "$W" e2-k14336-n32 f16 128 4096x14336 "$N32"
fi
if has s8x; then
  llm_variants "$W" s8x "s8:16:threadblock 16x32x256; warp 16x8x256; stages 6; split_k 2" \
    "s8:16:threadblock 16x32x256; warp 16x8x256; stages 4; split_k 2" \
    "s8:16:threadblock 16x16x256; warp 16x8x256; stages 6" \
    "f16:16:threadblock 16x32x256; warp 16x8x256; stages 3; split_k 2"
  llm_rows "$W" s8x-default s8,f16 16 4096x4096
fi
if has pdlt; then
  gpu_tests tests/gpu/pdl_test.ts
fi
if has infer87; then
  llm_rows "$W" i87-bf16-128 bf16 128 4096x4096
  llm_rows "$W" i87-bf16-128-64x64 bf16 128 4096x4096 "threadblock 64x64x64; stages 13; cluster 2"
  bench_sm90 "$W" i87-fw-default bf16,tf32 512x4224x4096
  pack
  bench_sm90 "$W" i87-fw-bf16-128x224 bf16 512x4224x4096 --schedule "threadblock 128x224x64"
  pack
  bench_sm90 "$W" i87-fw-tf32-128x256 tf32 512x4224x4096 --schedule "threadblock 128x256x32"
  pack
fi
if has early98; then
  gpu_tests tests/gpu/pdl_test.ts tests/gpu/skinny_test.ts
  for t in f16 bf16; do
    LLM_PDL=--pdl-early llm_bracketed "$W" "early98-$t" "$t" 16 "cache_b evict_normal" \
      "cache_b evict_normal; rotate_k 0"
  done
fi
if has allgpu; then
  gpu_tests tests/gpu/
fi
if has h200; then
  gpu_tests tests/gpu/
  llm_rows "$W" h200-llm f16,bf16 16,64,128,256 4096x4096
  llm_rows "$W" h200-s8 s8 16,128 4096x4096
fi
if has h200b; then
  llm_rows "$W" h200-long f16,bf16 1,16,64,128,256,1024 14336x4096,4096x14336
  llm_rows "$W" h200-long-s8 s8 16,128 14336x4096,4096x14336
  llm_rows "$W" h200-1-1024 f16,bf16 1,1024 4096x4096
  bench_sm90 "$W" h200-8192 f16,bf16,tf32,s8 8192x8192x8192
  pack
fi
if has m128; then
  llm_bracketed "$W" m128 f16 128 "threadblock 64x64x64; stages 13; cluster 2" \
    "threadblock 128x32x64; stages 11; cluster 1x2"
fi
if has m16deep; then
  llm_bracketed "$W" m16 f16 16 "threadblock 16x32x256; warp 16x8x256; stages 6" \
    "threadblock 16x32x256; warp 16x8x256; stages 9"
fi
if has copy; then
  llm_run "$W" copy --types f16 --m 16,128 --nk 4096x4096 --pdl --copy
fi
if has timeline; then
  for row in "f16 16x4096x4096 --read" "f16 128x4096x4096 --read" "s8 16x4096x4096 --read" \
    "f16 16x14336x4096" "f16 16x4096x4096 --pdl-last-copy"; do
    read -r t s extra <<<"$row"
    # shellcheck disable=SC2086 # $extra is one flag or none
    trace_run "$W/timeline-$t-$s${extra:+-${extra#--}}" "timeline $t $s $extra" \
      --type "$t" --size "$s" $extra
  done
fi
if has slices; then
  for s in 16x4096x4096 16x4096x8192; do
    TRACE_TIMEOUT=150 trace_run "$W/slices-f16-$s" "slices f16 $s" --type f16 --size "$s" \
      --slices 32:0,8:0,1:0,32:1,32:5,8:1,32:0
  done
fi
if has rot96; then
  # In order of worth, as the call may be cut off: f16 M = 16 bracketed, the GPU tests of the
  # skinny kernels that rotate (M = 1, 7, 9), K = 8192 and 14336, the timeline, bf16, s8.
  llm_bracketed "$W" rot96-f16 f16 16 "rotate_k 0"
  gpu_tests tests/gpu/skinny_test.ts --filter "/M=(1|7|9),/"
  llm_run "$W" rot96-k8192 --types f16,bf16 --sizes 16x4096x8192 --pdl
  llm_run "$W" rot96-k8192-v1 --types f16,bf16 --sizes 16x4096x8192 --pdl --schedule "rotate_k 0"
  llm_rows "$W" rot96-4096x14336 f16 16 4096x14336
  llm_rows "$W" rot96-4096x14336-v1 f16 16 4096x14336 "rotate_k 0"
  for sched in "" "rotate_k 0"; do
    trace_run "$W/rot96-timeline${sched:+-off}" "rot96 timeline (${sched:-default})" \
      --type f16 --size 16x4096x4096 ${sched:+--schedule "$sched"}
  done
  llm_bracketed "$W" rot96-bf16 bf16 16 "rotate_k 0"
  llm_bracketed "$W" rot96-s8 s8 16 "rotate_k 0"
fi
if has rotk14; then
  for t in f16 bf16; do
    for m in 1 16; do
      llm_rows "$W" "rotk14-$t-m$m" "$t" "$m" 4096x14336
      llm_rows "$W" "rotk14-$t-m$m-v1" "$t" "$m" 4096x14336 "rotate_k 1"
      llm_rows "$W" "rotk14-$t-m$m-again" "$t" "$m" 4096x14336
    done
  done
fi
if has rot97; then
  # In order of worth, as the call may be cut off.
  llm_bracketed "$W" rot97-f16-m64 f16 64 "rotate_k 1"
  llm_bracketed "$W" rot97-f16-m128 f16 128 "rotate_k 1"
  # The mma.sync 16x128x128 of N = 14336 (not rotated by default; its blocks end over 5 µs).
  llm_rows "$W" rot97-n14 f16 16 14336x4096
  llm_rows "$W" rot97-n14-v1 f16 16 14336x4096 "rotate_k 1"
  llm_rows "$W" rot97-n14-again f16 16 14336x4096
  for row in "f16 f16 threadblock+64x32x64;rotate_k+1 M=33,N=520,K=400" \
    "f16 f16 cluster+2;rotate_k+3 M=300,N=520,K=400" \
    "bf16 f32 cluster+1x2;rotate_k+1 M=300,N=520,K=400" \
    "s8 s32 threadblock+128x32x128;rotate_k+1 M=97,N=520,K=1296" \
    "f16 f16 scheduler+stream_k;rotate_k+1 M=300,N=1040,K=1000"; do
    read -r t d sched s <<<"$row"
    n="${sched%%;*}" && f="$W/rot97-$t-${n/+/-}.gemm"
    printf 'kernel r {\n  A: %s[M, K] row\n  B: %s[K, N] col\n  D: %s[M, N] row\n  D[m, n] = %s(A[m, k] * B[k, n])\n  schedule {\n    target sm90\n    %s\n  }\n}\n' \
      "$t" "$t" "$d" "$d" "$(echo "$sched" | tr '+;' ' \n')" >"$f"
    ROWS_DIR=$W one "rot97-odd-$t-${n/+/-}" "$f" "$s" --target sm90
  done
  pack
  for sched in "" "rotate_k 1"; do
    for s in 64x4096x4096 128x4096x4096 16x14336x4096; do
      trace_run "$W/rot97-timeline-$s${sched:+-v1}" "rot97 timeline $s (${sched:-default})" \
        --type f16 --size "$s" ${sched:+--schedule "$sched"}
    done
  done
  llm_bracketed "$W" rot97-bf16-m64 bf16 64 "rotate_k 1"
  llm_bracketed "$W" rot97-s8-m128 s8 128 "rotate_k 1"
  llm_bracketed "$W" rot97-f16-m256 f16 256 "rotate_k 1"
fi
if has rotk97; then
  llm_bracketed "$W" rotk97-f16-m128 f16 128 "rotate_k 4"
  llm_bracketed "$W" rotk97-f16-m64 f16 64 "rotate_k 4" "rotate_k 8"
fi
if has slices2; then
  for row in "16x4096x4096 32:0,32:0:e,32:0:s,32:0:a,32:0:aes,32:1:aes,32:5:aes,1:0:aes,1:5:aes,32:0:aes,32:0" \
    "16x4096x8192 32:0:aes,32:1:aes,32:5:aes,1:5:aes,32:0:aes"; do
    read -r s v <<<"$row"
    TRACE_TIMEOUT=150 trace_run "$W/slices2-f16-$s" "slices2 f16 $s" --type f16 --size "$s" \
      --slices "$v"
    grep 'instrumented' "$W/slices2-f16-$s.txt" | sed 's/^/  /'
  done
fi
if has timeline2; then
  # The same row's blocks under four schedules of the mma.sync skinny tile, bracketed by the
  # default (the records of the last round of each kept whole, for the blocks' spread).
  H="cache_b evict_first"
  n=0
  for sched in "" "threadblock 16x32x256; warp 16x8x256; stages 6; $H" \
    "threadblock 16x32x256; warp 16x8x256; stages 3; split_k 2; $H" \
    "threadblock 16x16x256; warp 16x8x256; stages 3; $H" ""; do
    n=$((n + 1))
    echo "$sched" >"$W/timeline2-$n.schedule"
    trace_run "$W/timeline2-$n" "timeline2-$n (${sched:-default})" --type f16 \
      --size 16x4096x4096 ${sched:+--schedule "$sched"}
  done
fi
if has deep95; then
  H="cache_b evict_first"
  llm_bracketed "$W" deep95-f16 f16 16 "threadblock 16x32x256; warp 16x8x256; stages 4; $H" \
    "threadblock 16x32x256; warp 16x8x256; stages 6; $H" \
    "threadblock 16x32x256; warp 16x8x256; stages 9; $H"
  llm_bracketed "$W" deep95-bf16 bf16 16 "threadblock 16x32x256; warp 16x8x256; stages 6; $H"
fi
if has four95; then
  # After the rule took 4 stages for 16x32x256 (16-bit, M <= 16): the new default against the old
  # 3 stages, bracketed, f16 at M = 1 and 16, bf16 at M = 16; f16 at K = 8192; then the GPU tests
  # of the skinny kernels and the PDL chains at the new default.
  OLD3="threadblock 16x32x256; warp 16x8x256; stages 3; cache_b evict_first"
  llm_bracketed "$W" four95-f16 f16 16 "$OLD3"
  llm_bracketed "$W" four95-f16m1 f16 1 "$OLD3"
  llm_bracketed "$W" four95-bf16 bf16 16 "$OLD3"
  llm_run "$W" four95-k8192 --types f16 --sizes 16x4096x8192 --pdl
  llm_run "$W" four95-k8192-v1 --types f16 --sizes 16x4096x8192 --pdl --schedule "$OLD3"
  [ "${FOUR95_TESTS:-1}" = 1 ] && gpu_tests tests/gpu/skinny_test.ts tests/gpu/pdl_test.ts
fi
if has timeline3; then
  for row in "f16 64x4096x4096" "f16 128x4096x4096" "s8 128x4096x4096"; do
    read -r t s <<<"$row"
    trace_run "$W/timeline3-$t-$s" "timeline3 $t $s" --type "$t" --size "$s"
  done
fi
if has cores95; then
  # The wgmma rows with a pipeline shallow enough that the next grid's block fits beside this one
  # (as 4 stages of M = 16's 16x32x256 against 9: NOTES 95), bracketed by the deep defaults.
  llm_bracketed "$W" cores95-m128 f16 128 "threadblock 64x64x64; stages 6; cluster 2; cache_b evict_first"
  llm_bracketed "$W" cores95-m64 f16 64 "threadblock 64x32x64; stages 9; cache_b evict_first"
fi
if has table95; then
  llm_run "$W" table95 --types f16,bf16,s8 --m 1,16,64,128,256 --nk 4096x4096 --pdl
fi
if has n112; then
  for tk in s8:256 f16:128; do
    t=${tk%%:*} k=${tk#*:}
    LLM_NK=14336x4096 llm_bracketed "$W" "n112-$t" "$t" 16 \
      "threadblock 16x112x$k; warp 16x16x$k; stages 4; cache_b evict_first" \
      "threadblock 16x112x$k; warp 16x56x$k; stages 4; cache_b evict_first"
  done
fi
if has n112b; then
  for tk in s8:256 f16:128; do
    t=${tk%%:*} k=${tk#*:}
    LLM_NK=14336x4096 llm_bracketed "$W" "n112b-$t" "$t" 16 \
      "threadblock 16x128x$k; warp 16x32x$k; stages 4; cache_b evict_first"
  done
fi
if has s8deep; then
  llm_bracketed "$W" s8deep s8 16 "threadblock 16x32x256; warp 16x8x256; stages 8; cache_b evict_first"
fi
if has ksweep; then
  llm_run "$W" ksweep --types f16 --pdl --copy --read \
    --sizes 16x4096x1024,16x4096x2048,16x4096x4096,16x4096x8192,16x4096x16384
fi
# tree_bracket PREFIX BASE: the llm rows with --pdl of f16 at M = 64, 128, 256 and s8 at M = 128 (N =
# K = 4096), this tree bracketing the tree BASE (carried), into W/PREFIX-{head,base,head-again}-TYPE.
tree_bracket() {
  local prefix=$1 base=$2 side tm
  base_tree "$base"
  for side in head base head-again; do
    for tm in f16:64,128,256 s8:128; do
      if [ "$side" = base ]; then
        (cd "$base" && llm_run "$W" "$prefix-$side-${tm%%:*}" --types "${tm%%:*}" --m "${tm#*:}" \
          --nk 4096x4096 --pdl)
      else
        llm_run "$W" "$prefix-$side-${tm%%:*}" --types "${tm%%:*}" --m "${tm#*:}" --nk 4096x4096 --pdl
      fi
    done
  done
}
if has wait98; then
  tree_bracket wait98 .device/base98
fi
if has tmap98; then
  tree_bracket tmap98 .device/base98b
fi
if has loop98; then
  base_tree .device/base98
  trace_run "$W/loop98-head" "loop98 head" --type f16 --size 128x4096x4096
  (cd .device/base98 && trace_run "$W/loop98-base" "loop98 base" --type f16 --size 128x4096x4096)
  trace_run "$W/loop98-head-again" "loop98 head again" --type f16 --size 128x4096x4096
fi
if has power98; then
  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,temperature.gpu --format=csv -lms 50 \
    >"$W/power98-smi.csv" 2>&1 &
  smi=$!
  llm_run "$W" power98 --types f16 --m 64,128,256 --nk 4096x4096 --pdl
  kill "$smi" 2>/dev/null
  pack
fi
if has probe100; then
  # Each step of the set-up on its own (bench/research/probes/setup_cost.cu), in SM cycles.
  nvcc -arch=sm_90a -O2 -o /tmp/setup_cost bench/research/probes/setup_cost.cu &&
    /tmp/setup_cost 2>&1 | tee "$W/probe100.txt"
  # And what the first boxes before the barrier would gain (probes/first_box.cu).
  nvcc -arch=sm_90a -O2 -o /tmp/first_box bench/research/probes/first_box.cu &&
    /tmp/first_box 2>&1 | tee "$W/probe100-first-box.txt"
  pack
fi
if has init100; then
  # The first warp's lanes set the barriers up (the head) against one thread (.device/base99,
  # 3b44b24): the timeline of f16 at M = 128 and 64, then the llm rows head / base / head.
  base_tree .device/base99
  for m in 128 64; do
    trace_run "$W/init100-head-m$m" "init100 head M=$m" --type f16 --size "${m}x4096x4096"
    (cd .device/base99 && trace_run "$W/init100-base-m$m" "init100 base M=$m" --type f16 \
      --size "${m}x4096x4096")
  done
  for side in head base head-again; do
    if [ "$side" = base ]; then
      (cd .device/base99 && llm_run "$W" "init100-$side" --types f16 --m 64,128,256 \
        --nk 4096x4096 --pdl)
    else
      llm_run "$W" "init100-$side" --types f16 --m 64,128,256 --nk 4096x4096 --pdl
    fi
  done
fi
if has early100; then
  # B (the weights) read before the wait on the TMA rows, unmeasured since the set-up moved before
  # the wait (NOTES 98) and B took evict_first (NOTES 94): --pdl, --pdl-early, --pdl, adjacent.
  for v in pdl pdl-early pdl-again; do
    flag=--${v%-again}
    llm_run "$W" "early100-$v" --types f16 --m 64,128,256 --nk 4096x4096 "$flag"
  done
fi
if has setup99; then
  # The set-up's share of a block's start (NOTES 99 item 4's lead), ordinary and PDL launches.
  trace_run "$W/setup99-f16-m128" "setup99 f16 M=128" --type f16 --size 128x4096x4096
  trace_run "$W/setup99-f16-m64" "setup99 f16 M=64" --type f16 --size 64x4096x4096
  trace_run "$W/setup99-f16-m256" "setup99 f16 M=256" --type f16 --size 256x4096x4096
fi
if has sparse99; then
  gpu_tests tests/gpu/sparse_test.ts
  f="$W/align1_hinted.gemm"
  sed 's/^kernel hgemm_any {$/kernel hgemm_any {\n  schedule {\n    cache_a evict_last\n    cache_b evict_first\n  }/' \
    examples/align1.gemm >"$f"
  one align1-hinted "$f" M=333,N=271,K=203 --check sim
  one align1-hinted-sm90 "$f" M=333,N=271,K=203 --check sim --target sm90
  pack
fi
if has gpu98; then
  gpu_tests tests/gpu/pdl_test.ts tests/gpu/wgmma_test.ts
fi
if has copyall; then
  llm_run "$W" copyall --types f16,s8 --m 1,16,64,128,256 --nk 4096x4096 --pdl --copy --read
fi
if has cache; then
  llm_variants "$W" cache "f16:16:cache_b evict_first" "f16:128:cache_b evict_first" \
    "f16:128:cache_a evict_last; cache_b evict_first"
fi
if has read2; then
  llm_run "$W" read2 --types f16,bf16,s8 --m 1,16,64,128 --nk 4096x4096,14336x4096 --pdl --copy \
    --read
fi
if has nohint; then
  llm_run "$W" nohint --types f16,s8 --m 1,16,64,128 --nk 4096x4096 --pdl \
    --schedule "cache_b evict_normal"
fi
if has m128s; then
  llm_bracketed "$W" m128s f16 128 "threadblock 64x64x64; stages 13; cluster 2" \
    "threadblock 128x64x64; stages 9; split_k 2" "threadblock 128x128x64; stages 6; split_k 4" \
    "threadblock 128x32x64; stages 11; cluster 1x2"
fi
if has m256s; then
  llm_bracketed "$W" m256s f16 256 "threadblock 128x128x64; stages 6; split_k 2"
fi
if has m128v; then
  for t in f16 bf16; do
    llm_bracketed "$W" "m128v-$t" "$t" 128 "threadblock 128x32x64; stages 11; cache_b evict_first"
  done
fi
if has deep98; then
  for t in f16 bf16; do
    llm_bracketed "$W" "deep98-$t" "$t" 16 "stages 6"
  done
fi
if has trig; then
  n=0
  # --pdl-early and both ran as trig3-4 of NOTES 94; at M <= 16 the compiler now declines early
  # copies of B (evict_first), so they would time --pdl again.
  for v in --pdl --pdl-last-copy --pdl; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # $v is one or two flags
    llm_run "$W" "trig$n" --types f16,s8 --m 1,16 --nk 4096x4096 $v
  done
fi
if has ncu128; then
  ncu_pair "$W/ncu128" 128x4096x4096 "" "threadblock 128x32x64\n    stages 11\n    cache_b evict_first"
  pack
fi
if has runs; then
  llm_bracketed "$W" runs f16 16 "threadblock 16x32x512; warp 16x8x512; stages 3" \
    "threadblock 16x32x1024; warp 16x8x1024; stages 2"
fi
if has odd; then
  BENCH_TARGET=sm80 bench_sm90 "$W" odd-sm80 f16 5000x5000x5000
  pack
fi
if has newk; then
  # `gemm run` (checked against the reference, then timed) of kernels that compile since NOTES 88.
  for a in "examples/sparse.gemm --target sm80 --size M=128,N=8192,K=8192" \
    "examples/sparse.gemm --target sm90 --size M=512,N=4096,K=14336" \
    "bench/kernels/f16.gemm --target sm86 --size M=5000,N=5000,K=5000"; do
    echo "== $a"
    # shellcheck disable=SC2086
    timeout 60 deno run --cached-only -A cli.ts run $a --tune --iters 20 2>&1 | tail -3
  done | tee "$W/newk.txt"
  pack
fi
if has bf16k; then
  llm_rows "$W" bf16k-default bf16 128 4096x14336
  llm_rows "$W" bf16k-128x32 bf16 128 4096x14336 "threadblock 128x32x64; stages 11"
fi
if has s8t; then
  gpu_tests tests/gpu/skinny_test.ts --filter s8
  pack
fi
W256="threadblock 128x256x64"
if has fill; then
  bench_ab "$W" fill-default fill-128x256 f16 768x4096x4096,896x4096x4096 "$W256" pack
fi
if has bf16; then
  bench_ab "$W" bf16-default bf16-128x256 bf16 5000,1024x14336x4096 "$W256" pack
fi
if has fill2; then
  F2=512x4096x4096,640x3584x4096,640x4096x4096,768x4096x4096
  bench_sm90 "$W" fill2-default f16 "$F2"
  pack
  bench_sm90 "$W" fill2-128x256 f16 "$F2" --schedule "$W256"
  pack
  bench_sm90 "$W" fill2-128x128 f16 "$F2" --schedule "threadblock 128x128x64"
  pack
fi
if has fill3; then
  bench_sm90 "$W" fill3-default f16 384x4096x4096,512x4096x4096
  pack
  BENCH_TARGET=sm80 bench_sm90 "$W" fill3-sm80 f16 384x4096x4096,512x4096x4096
  pack
fi
if has llm; then
  llm_rows "$W" llm "${LLM_TYPES:-f16,bf16}" "${LLM_MS:-1,16,64,128,256,1024}" 4096x4096,14336x4096,4096x14336
fi
if has llms8; then
  llm_rows "$W" llm-s8 s8 16,128 4096x4096,14336x4096,4096x14336
fi
if has s8v; then
  # s8 at N = K = 4096 (0.58-0.61 of the floor, NOTES 81): the default against deeper or
  # split variants of its tiles, one run each (cuBLAS in each).
  llm_variants "$W" s8v "s8:16:threadblock 16x32x512; warp 16x8x512; stages 6" \
    "s8:16:threadblock 16x32x256; warp 16x8x256; stages 6" \
    "s8:16:threadblock 16x64x512; warp 16x16x512; split_k 2" \
    "s8:16:threadblock 64x32x256; stages 9" \
    "s8:128:threadblock 128x32x128; stages 10; scheduler persistent"
fi
if has s8r || has s8r2; then
  # s8's new rule (NOTES 85: persistent 128x32x128 at M = 65-128 where it makes one wave): the
  # GPU tests of the s8 skinny kernels, the new default against the old one's schedule lines at
  # M = 128 (N = 4096, K = 4096 and 14336; the table has no M = 100), and s8 at 512x4096x4096
  # again. STEPS=s8r2: the llm rows alone.
  has s8r2 || gpu_tests tests/gpu/skinny_test.ts --filter s8
  NK2=4096x4096,4096x14336
  llm_rows "$W" s8r-default s8 128 "$NK2"
  llm_rows "$W" s8r-64x64 s8 128 "$NK2" "threadblock 64x64x128; stages 14; cluster 2"
  if ! has s8r2; then
    bench_ab "$W" s8-512-default s8-512-128x128 s8 512x4096x4096 "threadblock 128x128x128" pack
  fi
fi
if has full; then
  # After WGMMA_FULL_WAVE (NOTES 85): the s8 skinny GPU tests at the final rule, and the rows the
  # rule reaches by inference, the default (128x128) against the tile it replaced.
  gpu_tests tests/gpu/skinny_test.ts --filter s8
  bench_ab "$W" full-s8-default full-s8-128x224 s8 1024x2048x4096,512x4224x4096 \
    "threadblock 128x224x128" pack
  bench_ab "$W" full-f16-default full-f16-128x224 f16 512x4224x4096 "threadblock 128x224x64" pack
fi
if has f16m; then
  # f16 at M = 128, N = K = 4096 (0.68-0.75 of the floor, target 0.75): the default's schedule
  # lines against s8's 128x32 without persistence and 64x64 without clusters; s8 M = 16's
  # 16x32x256 with 6 stages (NOTES 85 call 1: 9.0 against 9.3 µs) against the default again.
  llm_variants "$W" f16m "f16:128:threadblock 64x64x64; stages 13; cluster 2" \
    "f16:128:threadblock 128x32x64; stages 11" \
    "f16:128:threadblock 64x64x64; stages 14" \
    "s8:16:threadblock 16x32x512; warp 16x8x512; stages 3" \
    "s8:16:threadblock 16x32x256; warp 16x8x256; stages 6"
fi
if has ncu; then
  ncu_pair "$W/ncu" 8192x8192x8192 "" "swizzle 4" "swizzle 16"
  pack
fi
if has ncu2; then
  L2SRC=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum
  NCU_METRICS="$L2SRC,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum" \
    ncu_pair "$W/ncu2" 8192x8192x8192 ""
  pack
fi
if has fill4; then
  F4=512x4096x4096,640x4096x4096,768x4096x4096
  for t in tf32:32 s8:128; do
    bench_sm90 "$W" "fill4-${t%%:*}-default" "${t%%:*}" "$F4"
    pack
    bench_sm90 "$W" "fill4-${t%%:*}-128x128" "${t%%:*}" "$F4" --schedule "threadblock 128x128x${t#*:}"
    pack
    BENCH_TARGET=sm80 bench_sm90 "$W" "fill4-${t%%:*}-sm80" "${t%%:*}" "$F4"
    pack
  done
fi
pack
