/**
 * The epilogue's driver: the warp's and lane's positions in D, the epilogue's tensors,
 * and the choice between the direct and the staged path.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { type EpilogueExpr, tensorParam, unreachable } from "../../ir/gemm.ts";
import type { MemWidth, Operand, Reg, RegType } from "../../ir/kernel.ts";
import { emitAffine, laneAffine, termOf } from "./affine.ts";
import { type LowerContext, tensorBase, vectorBase } from "./context.ts";
import { accValue, convertOut, evalEpilogue, packOut } from "./epilogue_expr.ts";
import {
  alongRow,
  type EpiTensor,
  globalAddr,
  loadAhead,
  loadElem,
  store,
} from "./epilogue_loads.ts";
import { stagePlan } from "./epilogue_staged.ts";

/** Registers an epilogue's loads issued ahead of a batch of direct stores may
 * hold where the accumulators take at most 128 (a 64x64 f32 warp tile); half
 * as many above. More spilled kernels near the 255-register limit
 * (tests/ptxas_sweep.ts: 16 and 32 did, and so did a budget growing as the
 * rows of accumulators retire). */
const AHEAD_REGS = 8;

export function epilogue(
  cx: LowerContext,
  acc: Reg[][][],
  m0: Reg,
  n0: Reg,
  M: Operand,
  N: Operand,
  bz: Reg,
  smem: Reg,
  before?: (i: number, j: number) => void,
): void {
  const k = cx.k;
  const b = cx.b;
  const wp = k.plan.warp!;
  const s = cx.shape;
  const compute = k.epilogue.compute;
  const cType: RegType = compute;
  const d = tensorParam(k, k.problem.d.tensor);
  b.emit({ op: "comment", text: "epilogue" });
  // Warp origin.
  const wRow = cx.bin(
    "add",
    "u32",
    m0,
    cx.bin("mul", "u32", cx.features.get("wm")!, imm(wp.warp.m)),
  );
  const wCol = cx.bin(
    "add",
    "u32",
    n0,
    cx.bin("mul", "u32", cx.features.get("wn")!, imm(wp.warp.n)),
  );
  // Accumulator element positions: (row, col) = (g*ag + tig*at + dr, g*bg + tig*bt + dc).
  const what = `Accumulator map of ${s.name}`;
  const base0R = laneAffine((l) => s.c.coord(l, 0, 0)[0], what);
  const base0C = laneAffine((l) => s.c.coord(l, 0, 0)[1], what);
  const laneRow = cx.bin("add", "u32", wRow, emitAffine(cx, { c: 0, terms: base0R.terms }));
  const laneCol = cx.bin("add", "u32", wCol, emitAffine(cx, { c: 0, terms: base0C.terms }));
  // Elements of one tile's fragment, as (reg, elem, dRow, dCol), grouped into row runs.
  const elems: { reg: number; elem: number; dr: number; dc: number }[] = [];
  for (let r = 0; r < s.c.regs; r++) {
    for (let e = 0; e < s.c.elemsPerReg; e++) {
      const [rr, cc] = s.c.coord(0, r, e);
      elems.push({ reg: r, elem: e, dr: rr - base0R.c, dc: cc - base0C.c });
    }
  }
  // Pairs of column-adjacent elements (vectorised when D is row-major and aligned).
  const dRowMajor = k.problem.d.layout === "row";
  const dBytes = DTYPE_INFO[d.dtype].bits / 8;
  const pairOk = dRowMajor && d.align >= 2 && dBytes >= 2;
  const grouped = (pairs: boolean) => {
    const groups: (typeof elems)[] = [];
    const used = new Set<number>();
    elems.forEach((e, i) => {
      if (used.has(i)) return;
      used.add(i);
      const j = elems.findIndex((f, jj) => !used.has(jj) && f.dr === e.dr && f.dc === e.dc + 1);
      if (pairs && j >= 0 && e.dc % 2 === 0) {
        used.add(j);
        groups.push([e, elems[j]!]);
      } else groups.push([e]);
    });
    return groups;
  };
  const groups = grouped(pairOk);
  // D's base and leading dimension.
  const dBase = tensorBase(cx, k.problem.d, d, bz);
  const ldD = dRowMajor ? N : M;
  // Epilogue tensors.
  const loads = new Map<string, EpiTensor>();
  // One load expression of each tensor (they differ only in where they sit).
  const nodes = new Map<string, Extract<EpilogueExpr, { op: "load" }>>();
  let readsMatrix = false;
  const collect = (e: EpilogueExpr): void => {
    switch (e.op) {
      case "load":
        readsMatrix ||= e.rows && e.cols;
        if (!nodes.has(e.tensor)) nodes.set(e.tensor, e);
        if (!loads.has(e.tensor)) {
          const t = tensorParam(k, e.tensor);
          const view = k.epilogue.views.find((v) => v.tensor === e.tensor) ?? null;
          const base = view !== null
            ? tensorBase(cx, view, t, bz)
            : e.batched
            ? vectorBase(cx, t, bz)
            : cx.params.get(t.name)!;
          loads.set(e.tensor, { base, t, view });
        }
        return;
      case "unary":
      case "cast":
        return collect(e.x);
      case "binary":
        collect(e.a);
        return collect(e.b);
      case "clamp":
        collect(e.x);
        collect(e.lo);
        return collect(e.hi);
      case "acc":
      case "const":
      case "scalar":
        return;
      default:
        return unreachable(e);
    }
  };
  collect(k.epilogue.expr);

  // Epilogue loads (C, a bias, split-K's partial sums) cannot alias the
  // shared-memory stores, so ptxas would hoist every load of a chunk above
  // them: one accumulator-tile row a chunk bounds the registers they hold.
  // A bias along M alone is loaded once a row (cached) and takes whole
  // chunks: +2.5% at 4096³ (a bias along N lost 0.6% so: bench/NOTES.md 35).
  // An epilogue that reads a row-major matrix (C) aligned to 4 stages the
  // raw accumulators and is evaluated along D's rows, where neighbouring
  // lanes read C.
  const rowVectorsOnly = [...nodes.values()].every((x) => x.rows && !x.cols);
  const maxTiles = before !== undefined || !rowVectorsOnly ? 1 : acc.length;
  // Raw accumulators are staged in pairs whatever D's alignment.
  const stageGroups = readsMatrix ? grouped(true) : groups;
  // A matrix the raw path cannot read 4 at a time along a row (a
  // column-major C, or one aligned to less than 4) keeps a 16-bit D
  // direct: the fragment layout reads C in whole sectors (bench/NOTES.md
  // 37). An 8-bit D stays staged (shortcut: direct, one spilled).
  const rawReadable = dBytes !== 2 ||
    [...nodes.values()].every((x) => !(x.rows && x.cols) || alongRow(loads.get(x.tensor)!, 4));
  const stage = !rawReadable ? null : stagePlan(
    cx,
    s,
    base0R,
    base0C,
    stageGroups,
    d,
    dBytes,
    pairOk,
    maxTiles,
    readsMatrix ? "raw" : "out",
    cType,
  );
  /** The epilogue of one accumulator value as D's type. */
  const output = (accV: Reg, load: (x: Extract<EpilogueExpr, { op: "load" }>) => Reg) =>
    convertOut(cx, evalEpilogue(cx, k.epilogue.expr, accV, cType, load), cType, d.dtype);
  // Accumulators of at most 128 registers (a 64x64 f32 warp tile) leave
  // room for loads issued ahead; more, for fewer (ptxas spilled).
  const roomy = acc.length * acc[0]!.length * s.c.regs <= 128;
  if (stage === null) {
    // Row by row of accumulator tiles, in batches of tiles whose loads hold
    // at most `budget` registers: every load of a batch is issued before
    // the batch's first store (ptxas keeps a load of C below an earlier
    // store to D, which may be the same memory: one load latency a batch,
    // not one an element), a pair of a row-major matrix aligned to 2 in
    // one load. Each element of C is read by the thread that writes that
    // element of D, before it writes it, so C may be D (in place).
    const nElems = groups.reduce((n, g) => n + g.length, 0);
    const perJ = [...nodes.values()].reduce(
      (n, x) => n + nElems * (DTYPE_INFO[loads.get(x.tensor)!.t.dtype].bits === 64 ? 2 : 1),
      0,
    );
    const budget = roomy ? AHEAD_REGS : AHEAD_REGS / 2;
    // Tiles a batch (along a row of tiles, or a column for column-major D).
    const jBatch = perJ === 0 ? Infinity : Math.max(1, Math.floor(budget / perJ));
    // Shortcut: split-K keeps each group's loads right before its store
    // (loads ahead spilled, with its own loads of the partial sums;
    // tests/ptxas_sweep.ts).
    const ahead = nodes.size > 0 && before === undefined;
    const issue = (i: number, j: number, grp: (typeof groups)[number]) => {
      const e0 = grp[0]!;
      const row = cx.bin("add", "u32", laneRow, imm(i * s.m + e0.dr));
      const col = cx.bin("add", "u32", laneCol, imm(j * s.n + e0.dc));
      const rowOk = cx.setp("lt", "u32", row, M);
      const cols: Reg[] = [];
      const oks: Reg[] = [];
      grp.forEach((_, q) => {
        // The second element of a pair needs its own column and bounds
        // predicate only for the epilogue's loads (the pair is stored
        // under the first one's).
        const own = q === 0 || loads.size > 0;
        const cq = own && q > 0 ? cx.bin("add", "u32", col, imm(q)) : col;
        cols.push(cq);
        oks.push(
          own ? cx.bin("and", "pred", rowOk, cx.setp("lt", "u32", cq, N)) : oks[0]!,
        );
      });
      const got = new Map<string, () => Reg[]>();
      for (const x of nodes.values()) {
        const info = loads.get(x.tensor)!;
        // (Pair loads spilled tf32's 80x64 warp tiles: register pairs.)
        if (x.rows && x.cols && grp.length === 2 && roomy && alongRow(info, 2)) {
          got.set(x.tensor, loadAhead(cx, x, info, row, col, oks[0]!, 2, cType));
          continue;
        }
        const one = grp.map((_, q) => loadAhead(cx, x, info, row, cols[q]!, oks[q]!, 1, cType));
        got.set(x.tensor, () => one.map((f) => f()[0]!));
      }
      return { row, col, oks, got };
    };
    // Batches of (i, j) tiles: row-major D by rows of tiles, `jBatch`
    // tiles at a time; column-major D by columns of tiles, as many at a
    // time, each column of D's elements addressed once (its address plus
    // the row's offset: a column of the warp tile is contiguous in D),
    // where the address of every element spilled 52 kernels
    // (tests/ptxas_sweep.ts).
    const batches: [number, number][][] = [];
    if (dRowMajor) {
      for (let i = 0; i < acc.length; i++) {
        for (let j0 = 0; j0 < acc[i]!.length; j0 += jBatch) {
          const n = Math.min(acc[i]!.length, j0 + jBatch) - j0;
          batches.push(Array.from({ length: n }, (_, jj) => [i, j0 + jj] as [number, number]));
        }
      }
    } else {
      for (let j = 0; j < acc[0]!.length; j++) {
        for (let i0 = 0; i0 < acc.length; i0 += jBatch) {
          const n = Math.min(acc.length, i0 + jBatch) - i0;
          batches.push(Array.from({ length: n }, (_, ii) => [i0 + ii, j] as [number, number]));
        }
      }
    }
    const colAddr = new Map<string, Reg>();
    const address = (
      i: number,
      j: number,
      e0: { dr: number; dc: number },
      p: { row: Reg; col: Reg },
    ) => {
      if (dRowMajor) {
        return { addr: globalAddr(cx, dBase, p.row, p.col, ldD, true, dBytes), off: 0 };
      }
      const key = `${j}:${e0.dc}`;
      let a = colAddr.get(key);
      if (a === undefined) {
        a = globalAddr(cx, dBase, laneRow, p.col, ldD, false, dBytes);
        colAddr.set(key, a);
      }
      return { addr: a, off: (i * s.m + e0.dr) * dBytes };
    };
    for (const batch of batches) {
      const pos = !ahead ? null : batch.map(([i, j]) => groups.map((grp) => issue(i, j, grp)));
      batch.forEach(([i, j], t) => {
        const regs = acc[i]![j]!;
        before?.(i, j);
        groups.forEach((grp, gi) => {
          const p = pos?.[t]?.[gi] ?? issue(i, j, grp);
          const outs = grp.map((e, q) =>
            output(accValue(cx, regs[e.reg]!, e.elem, cType), (x) => p.got.get(x.tensor)!()[q]!)
          );
          const { addr, off } = address(i, j, grp[0]!, p);
          store(cx, "stg", addr, off, outs, d.dtype, p.oks[0]!);
        });
      });
    }
    return;
  }

  // Staged through shared memory (the pipeline's, free once every warp is
  // past its last fragment load): each warp writes `stage.tiles` rows of
  // accumulator tiles in their fragment layout into its own padded region,
  // then reads them back row by row in `stage.vecBytes` vectors, so that
  // lanes next to each other store consecutive bytes of a row of D.
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
  // Lane l reads vector q * 32 + l of the chunk: row `q * 32 / perRow + l / perRow`,
  // byte `(l % perRow) * vecBytes` (perRow divides 32).
  const readRow = cx.divRem("div", lane, stage.perRow);
  const readVec = cx.divRem("rem", lane, stage.perRow);
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
  const raw = stage.mode === "raw";
  const vecWidth: MemWidth = stage.vecBytes === 2 ? "b16" : "b32";
  const vecRegs = Math.max(1, stage.vecBytes / 4);
  const vecType: RegType = raw ? cType : vecWidth;
  const mTiles = acc.length;
  // A row or column of D (and whether it is inside D) at an offset from
  // the lane's first element of an accumulator tile in the fragment layout
  // ("frag"), or from its first read-back vector along D's rows ("rows").
  const lineCache = new Map<string, { at: Reg; ok: Reg }>();
  const line = (from: "frag" | "rows", rows: boolean, off: number) => {
    const key = `${from}${rows ? "r" : "c"}${off}`;
    let l = lineCache.get(key);
    if (l === undefined) {
      const base = from === "frag" ? (rows ? laneRow : laneCol) : (rows ? readRow0 : readCol);
      const at = off === 0 ? base : cx.bin("add", "u32", base, imm(off));
      l = { at, ok: cx.setp("lt", "u32", at, rows ? M : N) };
      lineCache.set(key, l);
    }
    return l;
  };
  const readColOk = line("rows", false, 0).ok;
  // A vector the epilogue reads (a bias per row or column): each row's or
  // column's element loaded once, under that row's or column's own bounds
  // predicate, and reused by every element that reads it. One load per
  // element, hoisted by ptxas above the shared stores, spilled.
  const from = raw ? "rows" : "frag";
  const loaded = new Map<string, Reg>();
  const vectorLoad = (
    e: Extract<EpilogueExpr, { op: "load" }>,
    rowOff: number,
    colOff: number,
  ) => {
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
  b.emit({
    op: "comment",
    text:
      `staged through shared memory (${
        raw ? "raw accumulators" : "D's elements"
      }): ${stage.tiles} of ${mTiles} accumulator-tile rows a chunk, ` +
      `${stage.regionBytes} bytes a warp, rows of ${stage.stride} bytes, ${stage.vecBytes}-byte reads`,
  });
  // The chunks: `stage.tiles` accumulator-tile rows each.
  const chunks: [number, number][] = [];
  for (let i0 = 0; i0 < mTiles; i0 += stage.tiles) {
    chunks.push([i0, Math.min(mTiles, i0 + stage.tiles)]);
  }
  const perChunk = ([i0, iEnd]: [number, number]) => ((iEnd - i0) * s.m * stage.perRow) / 32;
  /** The warp-tile row of a lane's read-back vector q of the chunk from
   * accumulator-tile row i0, that row of D, and the vector's bounds predicate. */
  const readCache = new Map<string, { gRow: number; row: Reg; ok: Reg }>();
  const readPos = (i0: number, q: number) => {
    const gRow = i0 * s.m + (q * 32) / stage.perRow;
    let p = readCache.get(`${gRow}`);
    if (p === undefined) {
      const { at: row, ok: rowOk } = line("rows", true, gRow);
      p = { gRow, row, ok: cx.bin("and", "pred", rowOk, readColOk) };
      readCache.set(`${gRow}`, p);
    }
    return p;
  };
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
      const { row, ok } = readPos(c[0], q);
      for (const x of matrices) {
        const info = loads.get(x.tensor)!;
        got.set(`${q}:${x.tensor}`, loadAhead(cx, x, info, row, readCol, ok, 4, cType));
      }
    }
    return got;
  };
  const loadsC = raw && matrices.length > 0;
  // A chunk ahead only where the accumulators leave room for a second
  // chunk's loads (at most 128 registers: a 64x64 f32 warp tile) and no
  // split-K sums are added; else each chunk's loads right after its
  // barrier (ptxas spilled 80x64 warp tiles and split-K kernels).
  const aheadOk = roomy && before === undefined;
  let ahead: Map<string, () => Reg[]> | null = null;
  // Every warp is past the main loop's last shared-memory read (and, with
  // split-K, past reading the broadcast flag) before any warp writes.
  b.emit({ op: "bar" });
  chunks.forEach((c, ci) => {
    const [i0, iEnd] = c;
    for (let i = i0; i < iEnd; i++) {
      for (let j = 0; j < acc[i]!.length; j++) {
        const regs = acc[i]![j]!;
        before?.(i, j);
        for (const grp of stageGroups) {
          const e0 = grp[0]!;
          const outs = grp.map((e, q) => {
            const accV = accValue(cx, regs[e.reg]!, e.elem, cType);
            if (raw) return accV;
            return output(accV, (x) => vectorLoad(x, i * s.m + e0.dr, j * s.n + e0.dc + q));
          });
          const off = ((i - i0) * s.m + e0.dr) * stage.stride +
            (j * s.n + e0.dc) * stage.elemBytes;
          store(cx, "sts", writeBase, off, outs, raw ? cType : d.dtype, null);
        }
      }
    }
    b.emit({ op: "bar" });
    const got = loadsC && (ci === 0 || !aheadOk) ? issueChunk(c) : ahead;
    ahead = loadsC && aheadOk && ci + 1 < chunks.length ? issueChunk(chunks[ci + 1]!) : null;
    for (let q = 0; q < perChunk(c); q++) {
      const dRow = (q * 32) / stage.perRow; // within the chunk
      const regsQ = Array.from({ length: vecRegs }, () => b.reg(vecType));
      b.emit({
        op: "lds",
        width: vecWidth,
        dst: regsQ,
        addr: readBase,
        offset: dRow * stage.stride,
      });
      const { gRow, row, ok } = readPos(i0, q);
      const addr = globalAddr(cx, dBase, row, readCol, ldD, true, dBytes);
      // Raw: the epilogue of the 4 elements along the row (D's N is a
      // multiple of 4, so one predicate guards them all), packed into one
      // store of 8 (16-bit D) or 4 bytes (8-bit D).
      const src = !raw ? regsQ : packOut(
        cx,
        regsQ.map((accV, e) =>
          output(
            accV,
            (x) => {
              if (!(x.rows && x.cols)) return vectorLoad(x, gRow, e);
              const four = got?.get(`${q}:${x.tensor}`);
              if (four !== undefined) return four()[e]!;
              const col = line("rows", false, e).at;
              return loadElem(cx, x, loads.get(x.tensor)!, row, col, ok, cType);
            },
          )
        ),
        d.dtype,
      );
      b.emit({
        op: "stg",
        width: raw ? "b32" : vecWidth,
        src,
        addr,
        offset: 0,
        guard: { pred: ok, negate: false },
      });
    }
    if (iEnd < mTiles) b.emit({ op: "bar" });
  });
}
