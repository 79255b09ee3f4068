/**
 * The epilogue staged through shared memory, as the plan's staging
 * (`plan.staging`, pass `gemm-epilogue-staging`) lays it out.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import type { StagingPlan } from "../../ir/gemm.ts";
import type { MemWidth, Reg, RegType } from "../../ir/kernel.ts";
import { emitAffine, termOf } from "./affine.ts";
import type { LowerContext } from "./context.ts";
import { accValue, packOut } from "./epilogue_expr.ts";
import { alongRow, globalAddr, loadAhead, loadElem, store } from "./epilogue_loads.ts";
import type { EpilogueSetup, LoadExpr } from "./epilogue_setup.ts";
import * as ir from "../../ir/builder.ts";

/** The lane's staging addresses (see {@link stagingAddresses}). */
interface StagingAddresses {
  readonly writeBase: Reg;
  readonly readBase: Reg;
  readonly readCol: Reg;
  readonly readRow0: Reg;
  /** Whether the lane reads a vector of its row (null: every lane does; see
   * `StagingPlan.readLanes`). */
  readonly reads: Reg | null;
}

/**
 * Rows and columns of D the staged path uses, each computed once across the
 * chunks (see {@link stagedPositions}).
 */
interface StagedPositions {
  /** A row or column of D (and whether it is inside D) at an offset from the
   * lane's first element of an accumulator tile in the fragment layout
   * ("frag"), or from its first read-back vector along D's rows ("rows"). */
  readonly line: (from: "frag" | "rows", rows: boolean, off: number) => { at: Reg; ok: Reg };
  /** An element of a vector the epilogue reads, at an offset of the staged
   * element (each row's or column's element loaded once). */
  readonly vectorLoad: (e: LoadExpr, rowOff: number, colOff: number) => Reg;
  /** The warp-tile row of a lane's read-back vector q of the chunk from
   * accumulator-tile row i0, that row of D, and the vector's bounds predicate. */
  readonly readPos: (i0: number, q: number) => { gRow: number; row: Reg; ok: Reg };
}

/**
 * Emits the epilogue staged through shared memory: per chunk of
 * `stage.tiles` accumulator-tile rows, the writes of the fragments into
 * each warp's region ({@link writeChunk}), a barrier, and the read-back
 * along D's rows with its stores ({@link readChunk}).
 *
 * @param cx The lowering's context.
 * @param st The epilogue's set-up.
 * @param stage The staging plan.
 */
export function stagedEpilogue(cx: LowerContext, st: EpilogueSetup, stage: StagingPlan): void {
  const b = cx.b;
  const s = cx.shape;
  const { acc, before, cType, loads, nodes, roomy } = st;
  // Staged through shared memory (the pipeline's, free once every warp is
  // past its last fragment load): each warp writes `stage.tiles` rows of
  // accumulator tiles in their fragment layout into its own padded region,
  // then reads them back row by row in `stage.vecBytes` vectors, so that
  // lanes next to each other store consecutive bytes of a row of D.
  const addrs = stagingAddresses(cx, st, stage);
  const raw = stage.mode === "raw";
  const mTiles = acc.length;
  const at = stagedPositions(cx, st, stage, addrs);
  b.emit(
    ir.comment(
      `staged through shared memory (${
        raw ? "raw accumulators" : "D's elements"
      }): ${stage.tiles} of ${mTiles} accumulator-tile rows a chunk, ` +
        `${stage.regionBytes} bytes a warp, rows of ${stage.stride} bytes, ${stage.vecBytes}-byte reads, ` +
        `${stage.readLanes} lanes a row`,
    ),
  );
  // The chunks: `stage.tiles` accumulator-tile rows each.
  const chunks: [number, number][] = [];
  for (let i0 = 0; i0 < mTiles; i0 += stage.tiles) {
    chunks.push([i0, Math.min(mTiles, i0 + stage.tiles)]);
  }
  const perChunk = ([i0, iEnd]: [number, number]) => ((iEnd - i0) * s.m * stage.readLanes) / 32;
  // Raw: the loads of the matrices the epilogue reads (C) for a chunk's
  // read-back, all issued before the chunk's first store to D (ptxas keeps
  // a load of C below an earlier store to D: they may be the same memory),
  // and where registers allow a chunk ahead: after the first chunk's
  // barrier the loads of the first two chunks, after each next barrier the
  // next chunk's. (Issuing the first chunk's before the staging spilled.)
  // Each element of C is read by the lane that writes that element of D,
  // before it writes it, so C may be D (in place). A row-major matrix
  // aligned to 4: 4 elements a load (any other, under an 8-bit D: one an
  // element, at its use; shortcut).
  const matrices = [...nodes.values()].filter((x) =>
    x.rows && x.cols && alongRow(loads.get(x.tensor)!, 4)
  );
  const issueChunk = (c: [number, number]) => {
    const got = new Map<string, () => Reg[]>();
    for (let q = 0; q < perChunk(c); q++) {
      const { row, ok } = at.readPos(c[0], q);
      for (const x of matrices) {
        const info = loads.get(x.tensor)!;
        got.set(`${q}:${x.tensor}`, loadAhead(cx, x, info, row, addrs.readCol, ok, 4, cType));
      }
    }
    return got;
  };
  const loadsC = raw && matrices.length > 0;
  // A chunk ahead only where the accumulators leave room for a second
  // chunk's loads (`roomy`: at most half a thread's registers, 128 of the
  // target's 255, a 64x64 f32 warp tile) and no split-K sums are added;
  // else each chunk's loads right after its barrier (ptxas spilled 80x64
  // warp tiles and split-K kernels).
  const aheadOk = roomy && before === undefined;
  let ahead: Map<string, () => Reg[]> | null = null;
  // Every warp is past the main loop's last shared-memory read (and, with
  // split-K, past reading the broadcast flag) before any warp writes.
  b.emit(cx.barrier());
  chunks.forEach((c, ci) => {
    writeChunk(cx, st, stage, at, addrs.writeBase, c);
    b.emit(cx.barrier());
    const got = loadsC && (ci === 0 || !aheadOk) ? issueChunk(c) : ahead;
    ahead = loadsC && aheadOk && ci + 1 < chunks.length ? issueChunk(chunks[ci + 1]!) : null;
    readChunk(cx, st, stage, at, addrs, c[0], perChunk(c), got);
    if (c[1] < mTiles) b.emit(cx.barrier());
  });
}

/**
 * The staged path's rows and columns of D, computed on first use and kept
 * for the later chunks; emits the read-back column's bounds predicate.
 *
 * @param cx The lowering's context.
 * @param st The epilogue's set-up.
 * @param stage The staging plan.
 * @param addrs The lane's staging addresses.
 * @returns The cached positions.
 */
function stagedPositions(
  cx: LowerContext,
  st: EpilogueSetup,
  stage: StagingPlan,
  addrs: StagingAddresses,
): StagedPositions {
  const s = cx.shape;
  const { M, N, cType, laneRow, laneCol, loads } = st;
  const tid = cx.features.get("tid")!;
  const lineCache = new Map<string, { at: Reg; ok: Reg }>();
  const line = (from: "frag" | "rows", rows: boolean, off: number) => {
    const key = `${from}${rows ? "r" : "c"}${off}`;
    let l = lineCache.get(key);
    if (l === undefined) {
      const base = from === "frag"
        ? (rows ? laneRow : laneCol)
        : (rows ? addrs.readRow0 : addrs.readCol);
      const at = off === 0 ? base : cx.bin("add", "u32", base, imm(off));
      l = { at, ok: cx.setp("lt", "u32", at, rows ? M : N) };
      lineCache.set(key, l);
    }
    return l;
  };
  // An idle lane of a row's read-back stores nothing.
  const colOk = line("rows", false, 0).ok;
  const readColOk = addrs.reads === null ? colOk : cx.bin("and", "pred", colOk, addrs.reads);
  // A vector the epilogue reads (a bias per row or column): each row's or
  // column's element loaded once, under that row's or column's own bounds
  // predicate, and reused by every element that reads it. One load per
  // element, hoisted by ptxas above the shared stores, spilled.
  const from = stage.mode === "raw" ? "rows" : "frag";
  const loaded = new Map<string, Reg>();
  const vectorLoad = (e: LoadExpr, rowOff: number, colOff: number) => {
    const key = `${e.tensor}:${e.rows ? `r${rowOff}` : e.cols ? `c${colOff}` : "0"}`;
    let v = loaded.get(key);
    if (v === undefined) {
      const at = e.rows ? line(from, true, rowOff) : e.cols ? line(from, false, colOff) : null;
      // A vector load reads only its row's or column's index (passed as
      // both); an index-0 load reads neither and needs no guard: element 0
      // of the tensor exists.
      const idx = at?.at ?? tid;
      v = loadElem(cx, e, loads.get(e.tensor)!, idx, idx, at?.ok ?? null, cType);
      loaded.set(key, v);
    }
    return v;
  };
  const readCache = new Map<string, { gRow: number; row: Reg; ok: Reg }>();
  const readPos = (i0: number, q: number) => {
    const gRow = i0 * s.m + (q * 32) / stage.readLanes;
    let p = readCache.get(`${gRow}`);
    if (p === undefined) {
      const { at: row, ok: rowOk } = line("rows", true, gRow);
      p = { gRow, row, ok: cx.bin("and", "pred", rowOk, readColOk) };
      readCache.set(`${gRow}`, p);
    }
    return p;
  };
  return { line, vectorLoad, readPos };
}

/**
 * Writes a chunk's accumulator tiles into the warp's region in their
 * fragment layout: the raw accumulators, or the epilogue's D elements.
 *
 * @param cx The lowering's context.
 * @param st The epilogue's set-up.
 * @param stage The staging plan.
 * @param at The cached positions.
 * @param writeBase The lane's first element's address in the region.
 * @param chunk The chunk's first and end accumulator-tile rows.
 */
function writeChunk(
  cx: LowerContext,
  st: EpilogueSetup,
  stage: StagingPlan,
  at: StagedPositions,
  writeBase: Reg,
  [i0, iEnd]: [number, number],
): void {
  const s = cx.shape;
  const { acc, before, cType, d, stageGroups, output } = st;
  const raw = stage.mode === "raw";
  for (let i = i0; i < iEnd; i++) {
    for (let j = 0; j < acc[i]!.length; j++) {
      const regs = acc[i]![j]!;
      before?.(i, j);
      for (const grp of stageGroups) {
        const e0 = grp[0]!;
        const outs = grp.map((e, q) => {
          const accV = accValue(cx, regs[e.reg]!, e.elem, cType);
          if (raw) return accV;
          return output(accV, (x) => at.vectorLoad(x, i * s.m + e0.dr, j * s.n + e0.dc + q));
        });
        const off = ((i - i0) * s.m + e0.dr) * stage.stride +
          (j * s.n + e0.dc) * stage.elemBytes;
        store(cx, "sts", writeBase, off, outs, raw ? cType : d.dtype, null);
      }
    }
  }
}

/**
 * Reads a chunk back along D's rows and stores it to D: the staged D
 * elements as they are, or (raw) the epilogue of 4 accumulators along a
 * row, packed into one store.
 *
 * @param cx The lowering's context.
 * @param st The epilogue's set-up.
 * @param stage The staging plan.
 * @param at The cached positions.
 * @param addrs The lane's staging addresses.
 * @param i0 The chunk's first accumulator-tile row.
 * @param vectors Vectors a lane reads back from the chunk.
 * @param got Raw: the loads of C issued for this chunk, by vector and tensor.
 */
function readChunk(
  cx: LowerContext,
  st: EpilogueSetup,
  stage: StagingPlan,
  at: StagedPositions,
  addrs: StagingAddresses,
  i0: number,
  vectors: number,
  got: Map<string, () => Reg[]> | null,
): void {
  const b = cx.b;
  const { cType, d, dBytes, dBase, ldD, loads, output } = st;
  const raw = stage.mode === "raw";
  const vecWidth: MemWidth = stage.vecBytes === 2 ? "b16" : "b32";
  const vecRegs = Math.max(1, stage.vecBytes / 4);
  const vecType: RegType = raw ? cType : vecWidth;
  for (let q = 0; q < vectors; q++) {
    const dRow = (q * 32) / stage.readLanes; // within the chunk
    const regsQ = Array.from({ length: vecRegs }, () => b.reg(vecType));
    b.emit(ir.lds(vecWidth, regsQ, addrs.readBase, dRow * stage.stride));
    const { gRow, row, ok } = at.readPos(i0, q);
    const addr = globalAddr(cx, dBase, row, addrs.readCol, ldD, true, dBytes);
    // Raw: the epilogue of the 4 elements along the row (D's N is a
    // multiple of 4, so one predicate guards them all), packed into one
    // store of 8 (16-bit D) or 4 bytes (8-bit D).
    const src = !raw ? regsQ : packOut(
      cx,
      regsQ.map((accV, e) =>
        output(
          accV,
          (x) => {
            if (!(x.rows && x.cols)) return at.vectorLoad(x, gRow, e);
            const four = got?.get(`${q}:${x.tensor}`);
            if (four !== undefined) return four()[e]!;
            const col = at.line("rows", false, e).at;
            return loadElem(cx, x, loads.get(x.tensor)!, row, col, ok, cType);
          },
        )
      ),
      d.dtype,
    );
    b.emit(ir.stg(raw ? "b32" : vecWidth, src, addr, 0, ir.when(ok)));
  }
}

/**
 * The lane's addresses in its warp's staging region: where it writes its
 * first accumulator element in the fragment layout, and where it reads back
 * its first vector along D's rows, with that vector's first row and column
 * of D.
 *
 * @param cx The lowering's context.
 * @param st The epilogue's set-up.
 * @param stage The staging plan.
 * @returns The write and read bases, and the read-back vector's row and column.
 */
function stagingAddresses(
  cx: LowerContext,
  st: EpilogueSetup,
  stage: StagingPlan,
): StagingAddresses {
  const { smem, base0R, base0C, wRow, wCol } = st;
  const tid = cx.features.get("tid")!;
  const warpId = cx.bin("shr", "u32", tid, imm(5));
  const lane = cx.bin("and", "u32", tid, imm(31));
  const region = cx.bin(
    "add",
    "u32",
    smem,
    cx.mulImm(warpId, stage.regionBytes),
  );
  const writeOff = emitAffine(cx, {
    c: 0,
    terms: (["g", "tig"] as const).map((f) => [
      f,
      termOf(base0R, f) * stage.stride + termOf(base0C, f) * stage.elemBytes,
    ]),
  });
  const writeBase = cx.bin("add", "u32", region, writeOff);
  // Lane l reads, in read-back q of the chunk, row `q * 32 / readLanes + l / readLanes` and its
  // vector `l % readLanes`; a lane past the row's vectors reads the last one again (in bounds,
  // the same bank word) and stores nothing.
  const readRow = cx.divRem("div", lane, stage.readLanes);
  const lanePos = cx.divRem("rem", lane, stage.readLanes);
  const idle = stage.readLanes > stage.perRow;
  const readVec = idle ? cx.bin("min", "u32", lanePos, imm(stage.perRow - 1)) : lanePos;
  const reads = idle ? cx.setp("lt", "u32", lanePos, imm(stage.perRow)) : null;
  const readOff = cx.bin(
    "add",
    "u32",
    cx.mulImm(readRow, stage.stride),
    cx.mulImm(readVec, stage.vecBytes),
  );
  const readBase = cx.bin("add", "u32", region, readOff);
  const readCol = cx.bin(
    "add",
    "u32",
    wCol,
    cx.mulImm(readVec, stage.vecBytes / stage.elemBytes),
  );
  const readRow0 = cx.bin("add", "u32", wRow, readRow);
  return { writeBase, readBase, readCol, readRow0, reads };
}
