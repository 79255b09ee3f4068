/**
 * The warp-specialized tile of sm90 (`plan.pipeline.tma`, passes/wgmma.ts `wgmmaTma`): a
 * producer warpgroup, after the consumers' threads, copies each k-tile's A and B boxes by TMA
 * into a ring of stages; the consumer warpgroups (the plan's warps) multiply them with wgmma
 * and run the epilogue. Two mbarriers a stage hand the stages over:
 *
 * - full[s]: one arrival (the producer's, with the stage's bytes as its transaction count),
 *   completed when both boxes have landed; the consumers wait on it;
 * - empty[s]: one arrival per consumer warp once its warpgroup's wgmmas on the stage retired
 *   (`wgmma.wait_group`); the producer waits on it before it refills the stage.
 *
 * k-tile kt uses stage kt % S in phase (kt / S) & 1. The producer's first pass over the ring
 * waits for the parity of the phase before phase 0, which counts as completed. The consumers
 * keep G = WGMMA_GROUPS_IN_FLIGHT groups of wgmmas running: at k-tile kt, once its group is
 * committed and only G are pending, they release the stage of k-tile kt - G (the first k-tile
 * is peeled, so the loop's release needs no test). Registers move from the producer to the
 * consumers by `setmaxnreg`; the consumers' epilogue meets at named barrier 1
 * (LowerContext.barrier), which the producer does not reach.
 *
 * A persistent block (kernel.ts) carries the ring from tile to tile; a Stream-K part
 * (stream_k.ts) runs its own k-tiles (`TileOrigin.kSpan`).
 *
 * A cluster of C CTAs (`tma.cluster`, a persistent kernel whose CTAs take vertically adjacent
 * tiles, kernel.ts) shares B's box (horizontally adjacent tiles, `tma.clusterAxis` `n`: A's
 * box): the producer of rank r copies the r-th of its C row slices
 * into the same stage of every CTA (`.multicast::cluster`), so a stage's full barrier still
 * waits for the whole stage's bytes, and its empty barrier counts the consumer warps of all C
 * CTAs, each of which arrives on every CTA's barrier (a producer must not refill a stage that
 * any CTA still reads). A cluster barrier after the barriers' set-up (no copy may reach a
 * barrier not yet initialised) and one before the end (no CTA may leave while a peer still
 * copies into it or arrives on its barriers) bracket the roles.
 *
 * The set-up is thread 0's: 2 S `mbarrier.init`s, one after another. The first warp's lanes
 * doing them instead (lane l stage l's two) was measured slower (bench/NOTES.md 101, an H100: a
 * warp's inits 1,756 cycles at 13 stages against one thread's 677; a block's set-up 1.28 µs
 * against 0.42 at f16 M = 64, the launch 1.0 µs longer), and reverted.
 *
 * Shortcuts (issue 23): the producer's other 127 threads idle; a persistent block's tiles are a
 * static round (no dynamic tile counter: bench/NOTES.md 65); clusters only of 2, along M or N.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { KernelParam, Operand, Reg } from "../../ir/kernel.ts";
import { operandView } from "../../ir/gemm.ts";
import { operandTensorMap, WGMMA_GROUPS_IN_FLIGHT } from "../wgmma.ts";
import type { LowerContext } from "./context.ts";
import { kLoops, kTileSpan, type TileOrigin, zeroAccumulators } from "./main_loop.ts";
import { tmaKSequence } from "./rotate_k.ts";
import { wgmmaGroup, wgmmaStageBases } from "./wgmma.ts";
import * as ir from "../../ir/builder.ts";

/** The name of an operand's tensor-map parameter. */
function mapName(cx: LowerContext, role: "A" | "B"): string {
  const t = operandView(cx.k, role).tensor;
  let name = `${t}_tmap`;
  while (cx.k.params.some((p) => p.name === name)) name += "_";
  return name;
}

/**
 * The tensor-map parameters of a warp-specialized kernel (A's, then B's), none otherwise.
 *
 * @param cx The lowering's context.
 * @returns The parameters, for the end of the list.
 */
export function tensorMapParams(cx: LowerContext): KernelParam[] {
  if (cx.k.plan.pipeline?.tma === undefined) return [];
  return (["A", "B"] as const).map((role) => ({
    name: mapName(cx, role),
    kind: "tensormap",
    ptx: "tmap",
    tmap: operandTensorMap(cx.k, role),
  }));
}

/** The ring's registers: stage s's barriers and tiles. */
interface Ring {
  readonly stages: number;
  /** The full and empty barriers of stage 0 (u32 shared addresses; stage s at +8 s). */
  readonly full: Reg;
  readonly empty: Reg;
  /** CTAs per cluster (1: none) and this CTA's rank in it (null without a cluster). */
  readonly cluster: number;
  readonly rank: Reg | null;
  /** The operand whose box the cluster's CTAs share, each copying a slice into all of them:
   * B for pairs along M, A along N. */
  readonly shared: "A" | "B";
}

/**
 * The tiles one block of a warp-specialized kernel computes: one (`count` null), or a
 * persistent block's `count` tiles, the i-th emitted by `at(i)`.
 */
export interface TileSource {
  /** The block's tile count (u32, the same for every thread); null: the one tile of `at`. */
  readonly count: Operand | null;
  /** Emits tile i's origin (its m0, n0 and batch; the sizes and the split are fixed). */
  readonly at: (i: Reg | null) => TileOrigin;
}

/**
 * Emits the tiles of a warp-specialized kernel: the barriers' set-up, then the producer's and
 * the consumers' roles, each over the block's tiles with the ring carried from one to the
 * next; `finish` emits the consumers' epilogue (or split-K) of a tile from its accumulators.
 *
 * @param cx The lowering's context (a TMA plan).
 * @param smem The shared memory's base.
 * @param tiles The block's tiles.
 * @param finish Emits what follows a tile's main loop, for the consumers (of warpgroup `wg` in
 *   a ping-pong kernel, else 0), through `rcx`: the consumers' context (`cx`, or a ping-pong
 *   warpgroup's role context, whose thread indices and named barrier are its own).
 */
export function warpSpecializedTiles(
  cx: LowerContext,
  smem: Reg,
  tiles: TileSource,
  finish: TileFinish,
): void {
  const b = cx.b;
  const pipe = cx.k.plan.pipeline!;
  const tma = pipe.tma!;
  const S = pipe.stages;
  const tid = cx.features.get("tid")!;
  const full = cx.bin("add", "u32", smem, imm(tma.barrierOffset), "full");
  const empty = cx.bin("add", "u32", full, imm(8 * S), "empty");
  const cluster = tma.cluster ?? 1;
  const rank = cluster > 1 ? b.readSreg("cluster_ctarank", "crank") : null;
  const shared = tma.clusterAxis === "n" ? "A" : "B";
  const ring: Ring = { stages: S, full, empty, cluster, rank, shared };
  // A stage is read by one tile's consumers: the block's, or one warpgroup of a ping-pong one.
  const consumerWarps = cx.threads / 32;
  const pingPong = tma.persistent?.pingPong !== undefined;
  const consumerThreads = (pingPong ? 2 : 1) * cx.threads;
  b.emit(ir.comment(`${S} stages: full and empty barriers`));
  b.if(cx.setp("eq", "u32", tid, imm(0)), false, () => {
    // The tensor maps' descriptors asked for first, so that the first copies find them (and,
    // under PDL, fetched before the wait, while the previous grid still runs). Measured as a
    // tie on an H100's decode rows (bench/NOTES.md 98): kept as CUTLASS does, its worth unshown.
    for (const role of ["A", "B"] as const) b.emit(ir.tmapPrefetch(mapName(cx, role)));
    for (let s = 0; s < S; s++) {
      b.emit(ir.mbarInit(at(cx, full, 8 * s), 1));
      b.emit(ir.mbarInit(at(cx, empty, 8 * s), consumerWarps * cluster));
    }
    // A ping-pong kernel's turn barriers: one a consumer warpgroup, its 4 warps arriving.
    const turns = tma.persistent?.pingPong?.turnOffset;
    if (turns !== undefined) {
      for (const w of [0, 1]) b.emit(ir.mbarInit(at(cx, smem, turns + 8 * w), consumerWarps));
    }
    b.emit(ir.mbarFence());
  });
  b.emit(cluster > 1 ? ir.clusterBar() : ir.bar());
  // Every role waits here, before the producer's first TMA copy (a shortcut: no L2 prefetch of
  // B's first boxes before the wait, as the mma.sync main loop has), or, with operands read
  // early, each role before its own first global access. The barriers' set-up above touches
  // only this CTA's (and its peers') shared memory, so it runs before the wait: under PDL it
  // overlaps the previous grid's tail, the cluster barrier's round trip among it.
  cx.gridWaitBeforeRoles();
  const producer = cx.setp("ge", "u32", tid, imm(consumerThreads));
  /** Emits `body` for each of the block's tiles. */
  const eachTile = (body: (o: TileOrigin) => void) => {
    if (tiles.count === null) return body(tiles.at(null));
    const i = b.reg("u32", "tile_i");
    b.for(i, imm(0), tiles.count, 1, () => body(tiles.at(i)));
  };
  // Operands read early (compile option pdlEarly): the producer fills the first stages with
  // their boxes before its wait, each role then waits on its own.
  const early = cx.earlyOperands();
  b.if(producer, "warpgroup", () => {
    b.emit(ir.setMaxNReg("dec", tma.producerRegs));
    const elected = cx.setp("eq", "u32", tid, imm(consumerThreads));
    const pre = early.length === 0 ? null : preloadFirstTile(cx, tiles, ring, early, elected);
    b.if(elected, false, () => {
      const st = ringState(cx, "p");
      eachTile((o) => {
        produce(cx, o, ring, st, pre);
        // Only the block's first tile was begun before the wait.
        if (pre !== null && tiles.count !== null) b.emit(ir.mov(pre.count, imm(0)));
      });
    });
  }, () => {
    b.emit(ir.setMaxNReg("inc", tma.consumerRegs));
    if (early.length > 0) cx.gridWaitInRole();
    if (pingPong) return pingPongConsumers(cx, smem, tiles, ring, finish);
    const st = ringState(cx, "c");
    const rel = cx.mov("u32", imm(0), "crel");
    eachTile((o) => finish(consume(cx, o, ring, st, rel, tiles.count !== null), o, 0, cx));
  });
  if (cluster > 1) b.emit(ir.clusterBar());
}

/**
 * A ping-pong kernel's consumers (passes/wgmma.ts `wgmmaPingPong`): warpgroup w (0, 1) runs
 * the program of a one-warpgroup tile on the block's tiles w, w + 2, ..., with its thread and
 * warp indices counted from its first thread, named barrier 1 + w and its own staging region
 * (`finish`'s `wg`). The producer fills the ring with every tile's k-tiles in turn, so before
 * tile i the warpgroup's ring state moves to k-tile i kTiles of the ring's sequence (every
 * tile has the same count: no split, no Stream-K), and the stage it releases next is that one.
 * Each branch is a role of its own (a warpgroup-uniform `if`), so the two drift apart on the
 * GPU and in the simulator; the program is emitted once for each (a shortcut: twice the
 * consumers' code).
 *
 * The main loops take turns (`turnOffset`'s two mbarriers, 4 warps' arrivals each): tile i's
 * waits for the warpgroup of tile i - 1 to have retired its main loop's wgmmas, so that no
 * warpgroup waits on a stage's full barrier more than one phase ahead of it (its parity would
 * read as the phase before, complete) and the epilogue of one runs beside the other's main
 * loop. Warpgroup 0 waits from its second tile on, parity (i / 2 + 1) & 1 on its barrier;
 * warpgroup 1 from its first, parity (i / 2) & 1 on its own; each arrives on the other's.
 */
function pingPongConsumers(
  outer: LowerContext,
  smem: Reg,
  tiles: TileSource,
  ring: Ring,
  finish: TileFinish,
): void {
  const b = outer.b;
  const tid = outer.features.get("tid")!;
  const count = tiles.count;
  const turns = outer.k.plan.pipeline!.tma!.persistent!.pingPong!.turnOffset;
  if (count === null) throw new Error("lower-kernel: a ping-pong kernel is persistent");
  const program = (wg: number) => {
    const cx = outer.role(1 + wg);
    if (wg > 0) {
      // This warpgroup's thread and warp indices, from its first thread (lanes are the same).
      const local = cx.bin("sub", "u32", tid, imm(wg * cx.threads), "pptid");
      const warp = cx.bin("shr", "u32", local, imm(5), "ppwarp");
      const wp = cx.k.plan.warp!;
      cx.features.set("tid", local);
      cx.features.set("warp", warp);
      cx.features.set("wm", cx.divRem("rem", warp, wp.warpsM, "ppwm"));
      cx.features.set("wn", cx.divRem("div", warp, wp.warpsM, "ppwn"));
    }
    const st = ringState(cx, `c${wg}`);
    const rel = cx.mov("u32", imm(0), `crel${wg}`);
    const i = b.reg("u32", `tile_i${wg}`);
    const lane0 = laneZero(cx);
    const mine = at(cx, smem, turns + 8 * wg);
    const theirs = at(cx, smem, turns + 8 * (1 - wg));
    b.for(i, imm(wg), count, 2, () => {
      const o = tiles.at(i);
      // The ring's position at tile i's first k-tile: its stage, phase, and the next release.
      const n = cx.bin("mul", "u32", i, kTileSpan(cx, o.K, o.split).kCount, "ppn");
      const S = ring.stages;
      b.emit(ir.mov(st.s, cx.divRem("rem", n, S)));
      b.emit(ir.bin("and", "u32", st.ph, cx.divRem("div", n, S), imm(1)));
      b.emit(ir.mov(rel, st.s));
      // This warpgroup's turn: tile i - 1's main loop has retired.
      const half = cx.divRem("div", i, 2);
      const turn = () =>
        b.emit(
          ir.mbarWait(mine, cx.bin("and", "u32", cx.bin("add", "u32", half, imm(1 - wg)), imm(1))),
        );
      if (wg === 1) turn();
      else b.if(cx.setp("gt", "u32", i, imm(0)), true, turn);
      const acc = consume(cx, o, ring, st, rel, true);
      b.emit(ir.mbarArrive(theirs, undefined, ir.when(lane0)));
      finish(acc, o, wg, cx);
    });
  };
  b.if(
    outer.setp("ge", "u32", tid, imm(outer.threads)),
    "warpgroup",
    () => program(1),
    () => program(0),
  );
}

/**
 * Emits the one tile of a non-persistent warp-specialized kernel (see
 * {@link warpSpecializedTiles}).
 *
 * @param cx The lowering's context (a TMA plan).
 * @param o The tile and the problem's sizes.
 * @param finish Emits what follows the main loop, for the consumers.
 */
export function warpSpecializedTile(
  cx: LowerContext,
  o: TileOrigin,
  finish: (acc: Reg[][][]) => void,
): void {
  warpSpecializedTiles(cx, o.smem, { count: null, at: () => o }, (acc) => finish(acc));
}

/**
 * What follows a tile's main loop for its consumers ({@link warpSpecializedTiles}): `wg` is the
 * ping-pong warpgroup (else 0) and `cx` the context to emit it through.
 */
export type TileFinish = (acc: Reg[][][], o: TileOrigin, wg: number, cx: LowerContext) => void;

/** A role's place in the ring: the stage and the phase of its next k-tile. */
interface RingState {
  readonly s: Reg;
  readonly ph: Reg;
}

function ringState(cx: LowerContext, role: string): RingState {
  return { s: cx.mov("u32", imm(0), `${role}s`), ph: cx.mov("u32", imm(0), `${role}ph`) };
}

/** Whether this thread is lane 0 of its warp (each warp's one arrival on an mbarrier). */
function laneZero(cx: LowerContext): Reg {
  return cx.setp("eq", "u32", cx.bin("and", "u32", cx.features.get("tid")!, imm(31)), imm(0));
}

/** `base + bytes` (base itself for 0). */
function at(cx: LowerContext, base: Reg, bytes: number): Reg {
  return bytes === 0 ? base : cx.bin("add", "u32", base, imm(bytes));
}

/** The stage index and phase of a k-tile counter: advances `s` and flips `ph` at the wrap. */
function advance(cx: LowerContext, s: Reg, ph: Reg, stages: number): void {
  const b = cx.b;
  b.emit(ir.bin("add", "u32", s, s, imm(1)));
  const wrap = cx.setp("eq", "u32", s, imm(stages));
  b.emit(ir.selp("u32", s, imm(0), s, wrap));
  const flipped = cx.bin("xor", "u32", ph, imm(1));
  b.emit(ir.selp("u32", ph, flipped, ph, wrap));
}

/** A tile's boxes, for its producer: its k-tiles, the k of the next, and each operand's place in
 * a stage and first row (in a cluster, of this CTA's slice of the shared operand's box). */
interface TileBoxes {
  readonly kCount: Operand;
  readonly k0: Reg;
  /** Emits the move of {@link k0} to the next k-tile (rotate_k.ts `tmaKSequence`). */
  readonly next: () => void;
  /** Emits stage s's address of an operand's box. */
  readonly dst: (role: "A" | "B", s: Reg) => Reg;
  /** Emits the TMA copy of an operand's box of the k-tile at `k` into `dst`, completing on
   * `fullS` (with the operand's cache policy where its schedule asks for one). */
  readonly load: (role: "A" | "B", dst: Reg, k: Reg, fullS: Reg) => void;
}

/** An operand's stage base, first row, and the CTAs its copy reaches (a cluster's shared box). */
interface Box {
  readonly base: Reg;
  readonly row: Reg;
  readonly multicast?: number;
}

function tileBoxes(cx: LowerContext, o: TileOrigin, ring: Ring): TileBoxes {
  const b = cx.b;
  const k = cx.k;
  const pipe = k.plan.pipeline!;
  const tb = k.plan.tile!.threadblock;
  const maps = { A: mapName(cx, "A"), B: mapName(cx, "B") };
  // The batch coordinate where the map has the batch dimension (passes/wgmma.ts).
  const batchOf = (role: "A" | "B") => operandTensorMap(k, role).dims.length === 3 ? [o.bz] : [];
  const { start, kCount } = o.kSpan === undefined
    ? kTileSpan(cx, o.K, o.split)
    : { start: o.kSpan.start, kCount: o.kSpan.count };
  const { k0, next } = tmaKSequence(cx, o, start, kCount);
  // Each operand's stage base and first row; in a cluster, for the operand its CTAs share,
  // this CTA's slice of the box (rows r rows / C on), at its place in the stage, copied into
  // every CTA of the cluster.
  const operand = (role: "A" | "B", row0: Reg, rows: number) => {
    const plan = role === "A" ? pipe.a : pipe.b;
    const name = role === "A" ? "pa" : "pb";
    if (ring.rank === null || ring.shared !== role) {
      return { base: cx.bin("add", "u32", o.smem, imm(plan.offset), name), row: row0 };
    }
    const first = cx.mulImm(ring.rank, rows / ring.cluster, `${name}row`);
    const bytes = cx.mulImm(ring.rank, plan.stageBytes / ring.cluster, `${name}o`);
    return {
      base: cx.bin("add", "u32", o.smem, cx.bin("add", "u32", bytes, imm(plan.offset)), name),
      row: cx.bin("add", "u32", row0, first, `${name}r`),
      multicast: (1 << ring.cluster) - 1,
    };
  };
  const boxes: Readonly<Record<"A" | "B", Box>> = {
    A: operand("A", o.m0, tb.m),
    B: operand("B", o.n0, tb.n),
  };
  return {
    kCount,
    k0,
    next,
    dst: (role, s) => {
      const bytes = (role === "A" ? pipe.a : pipe.b).stageBytes;
      return cx.bin("add", "u32", boxes[role].base, cx.bin("mul", "u32", s, imm(bytes)));
    },
    load: (role, dst, kAt, fullS) => {
      const box = boxes[role];
      const coords = [kAt, box.row, ...batchOf(role)];
      b.emit(ir.tmaLoad(dst, maps[role], coords, fullS, box.multicast, cx.cachePolicy(role)));
    },
  };
}

/** The k-tiles of a block's first tile that its producer began before the wait: their stages
 * armed and the early operands' boxes copied ({@link preloadFirstTile}). */
interface Preloaded {
  /** How many (u32; set to 0 once the first tile is produced). */
  readonly count: Reg;
  /** The operands still to copy into them. */
  readonly late: readonly ("A" | "B")[];
}

/**
 * Before the producer's wait (compile option `pdlEarly`): the elected thread arms the first
 * stages of the block's first tile (as many as the ring holds, at most its k-tiles) and copies
 * the early operands' boxes into them (the ring is fresh, so no stage need be waited for); then
 * every producer thread waits. The other operands' boxes of those k-tiles follow the wait
 * ({@link produce}).
 *
 * @returns The k-tiles begun, and the operands they still lack.
 */
function preloadFirstTile(
  cx: LowerContext,
  tiles: TileSource,
  ring: Ring,
  early: readonly ("A" | "B")[],
  elected: Reg,
): Preloaded {
  const b = cx.b;
  const pipe = cx.k.plan.pipeline!;
  const count = cx.mov("u32", imm(0), "ppre");
  b.if(elected, false, () => {
    // A persistent block's first tile, where it has one.
    const t0 = tiles.count === null ? null : cx.mov("u32", imm(0), "pt0");
    const body = () => {
      const t = tileBoxes(cx, t0 === null ? tiles.at(null) : tiles.at(t0), ring);
      b.emit(
        t.kCount.kind === "imm"
          ? ir.mov(count, imm(Math.min(t.kCount.value, ring.stages)))
          : ir.bin("min", "u32", count, t.kCount, imm(ring.stages)),
      );
      b.emit(ir.comment(`the first k-tiles' boxes of ${early.join(" and ")} before the wait`));
      const j = b.reg("u32", "pj");
      b.for(j, imm(0), count, 1, () => {
        const fullS = cx.bin("add", "u32", ring.full, cx.bin("shl", "u32", j, imm(3)));
        b.emit(ir.mbarArrive(fullS, pipe.a.stageBytes + pipe.b.stageBytes));
        for (const r of early) t.load(r, t.dst(r, j), t.k0, fullS);
        t.next();
      });
    };
    if (tiles.count === null) body();
    else b.if(cx.setp("gt", "u32", tiles.count, imm(0)), true, body);
  });
  cx.gridWaitInRole();
  return { count, late: (["A", "B"] as const).filter((r) => !early.includes(r)) };
}

/** The producer's loop over a tile's k-tiles (one thread): each k-tile's boxes into its
 * stage once it is empty; with `pre`, first the late operands' boxes of the k-tiles begun
 * before the wait. */
function produce(
  cx: LowerContext,
  o: TileOrigin,
  ring: Ring,
  st: RingState,
  pre: Preloaded | null,
): void {
  const b = cx.b;
  const k = cx.k;
  const pipe = k.plan.pipeline!;
  const { s, ph } = st;
  const t = tileBoxes(cx, o, ring);
  const { k0 } = t;
  if (pre !== null) {
    const j = b.reg("u32", "pkj");
    b.for(j, imm(0), pre.count, 1, () => {
      const fullS = cx.bin("add", "u32", ring.full, cx.bin("shl", "u32", s, imm(3)));
      for (const r of pre.late) t.load(r, t.dst(r, s), k0, fullS);
      t.next();
      advance(cx, s, ph, ring.stages);
    });
  }
  const bytes = pipe.a.stageBytes + pipe.b.stageBytes;
  const kt = b.reg("u32", "pkt");
  b.for(kt, pre === null ? imm(0) : pre.count, t.kCount, 1, () => {
    const off8 = cx.bin("shl", "u32", s, imm(3));
    const fullS = cx.bin("add", "u32", ring.full, off8);
    const emptyS = cx.bin("add", "u32", ring.empty, off8);
    b.emit(ir.mbarWait(emptyS, cx.bin("xor", "u32", ph, imm(1))));
    b.emit(ir.mbarArrive(fullS, bytes));
    const aDst = t.dst("A", s);
    const bDst = t.dst("B", s);
    t.load("A", aDst, k0, fullS);
    t.load("B", bDst, k0, fullS);
    t.next();
    advance(cx, s, ph, ring.stages);
  });
}

/**
 * The consumers' loop: per k-tile, the wait for its stage, its group of wgmmas, and the
 * release of the stage whose group retired; with `releaseLast` (a persistent block, whose
 * producer goes on to the next tile) also the last k-tile's, once all retired.
 *
 * @returns The accumulators (as wgmmaMainLoop's).
 */
function consume(
  cx: LowerContext,
  o: TileOrigin,
  ring: Ring,
  st: RingState,
  rel: Reg,
  releaseLast: boolean,
): Reg[][][] {
  const b = cx.b;
  const G = WGMMA_GROUPS_IN_FLIGHT;
  const S = ring.stages;
  const { acc } = zeroAccumulators(cx);
  const d = acc.flat(2);
  const bases = wgmmaStageBases(cx, o.smem);
  const lane0 = laneZero(cx);
  const { s, ph } = st;
  // `rel`: the stage whose group retires next (G k-tiles behind s).
  const kCount = o.kSpan?.count ?? kTileSpan(cx, o.K, o.split).kCount;
  const tile = () => {
    const off8 = cx.bin("shl", "u32", s, imm(3));
    b.emit(ir.mbarWait(cx.bin("add", "u32", ring.full, off8), ph));
    wgmmaGroup(cx, d, bases, s);
    advance(cx, s, ph, S);
  };
  const release = () => {
    const emptyR = cx.bin("add", "u32", ring.empty, cx.bin("shl", "u32", rel, imm(3)));
    if (ring.rank === null) b.emit(ir.mbarArrive(emptyR, undefined, ir.when(lane0)));
    // A cluster: on the stage's empty barrier of every CTA, whose producers all copy into it.
    for (let q = 0; ring.rank !== null && q < ring.cluster; q++) {
      b.emit(ir.mbarArrive(emptyR, undefined, ir.when(lane0), imm(q)));
    }
    b.emit(ir.bin("add", "u32", rel, rel, imm(1)));
    b.emit(ir.selp("u32", rel, imm(0), rel, cx.setp("eq", "u32", rel, imm(S))));
  };
  if (G !== 1) throw new Error(`lower-kernel: ${G} wgmma groups in flight (the peel keeps 1)`);
  // The first k-tile, peeled (a block may have none: split-K's last splits).
  const some = kCount.kind === "imm" ? null : cx.setp("gt", "u32", kCount, imm(0));
  /** Emits `f` for a block with at least one k-tile (a test only where kCount is a register). */
  const ifAnyKTile = (f: () => void) => {
    if (some !== null) b.if(some, true, f);
    else if (kCount.kind === "imm" && kCount.value > 0) f();
  };
  ifAnyKTile(tile);
  const kt = b.reg("u32", "ckt");
  kLoops(cx, o, kCount, (from, to) => {
    // k-tile 0 is peeled: from at least 1 (kLoops' second loop may start at 0).
    const lo = from.kind === "imm"
      ? imm(Math.max(from.value, 1))
      : cx.bin("max", "u32", from, imm(1));
    b.for(kt, lo, to, 1, () => {
      tile();
      b.emit(ir.wgWait(G));
      release();
    });
  });
  b.emit(ir.wgWait(0));
  if (releaseLast) ifAnyKTile(release);
  return acc;
}
