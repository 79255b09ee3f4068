/**
 * The main loop's global -> shared copies: their set-up (pointers, bounds predicates,
 * swizzled destinations), the copies of one k-tile, a split's skipped k-tiles and the
 * advance of a stage index.
 *
 * @module
 */

import { imm } from "../../ir/builder.ts";
import { DTYPE_INFO } from "../../ir/dtype.ts";
import { type MatrixView, type OperandSmem, tensorParam } from "../../ir/gemm.ts";
import type { MemWidth, Operand, Reg } from "../../ir/kernel.ts";
import { type Affine, emitAffine, groupRecipes, scaleAffine, type SmemRecipe } from "./affine.ts";
import { b64, bytesOfElems, lineStride, log2, type LowerContext, vectorBase } from "./context.ts";
import * as ir from "../../ir/builder.ts";

interface CopyOne {
  readonly ptr: Reg;
  readonly okRow: Reg | null;
  /** False for a thread past the tile in a partial round (see copyOne's `only`). */
  readonly valid: Reg | null;
  readonly kIdx: Reg;
  readonly dst: { base: Reg; offset: number };
}

/** Copies with one pointer each (used when a round of copies is not whole rows). */
interface EachCopies {
  readonly kind: "each";
  readonly copies: readonly CopyOne[];
  readonly step: Operand;
  /** The operand's L2 cache-eviction policy (LowerContext.cachePolicy), or undefined. */
  readonly policy: Reg | undefined;
}

/** Copies that are copy 0 moved by whole rows: one pointer for all of them. */
interface StridedCopies {
  readonly kind: "strided";
  /** Pointer of copy 0 (advanced by `step` per k-tile). */
  readonly ptr0: Reg;
  /** Bytes between copy j and j+1. */
  readonly stride: Operand;
  readonly step: Operand;
  /** Rows between copy j and j+1. */
  readonly dr: number;
  readonly kContig: boolean;
  /** K-contiguous: rows (M/N) left from copy 0's row (s32). */
  readonly outerRem: Reg | null;
  /** Outer-contiguous: whether the column run is inside M/N. */
  readonly outerOk: Reg | null;
  /** k index of copy 0 within the tile (s32). */
  readonly kIdx: Reg;
  /** Per copy, its destinations: one, or for a tile transposed through registers 4 (rows k..k+3). */
  readonly dst: readonly (readonly { base: Reg; offset: number }[])[];
  readonly valid: readonly (Reg | null)[];
  /** The operand's L2 cache-eviction policy (LowerContext.cachePolicy), or undefined. */
  readonly policy: Reg | undefined;
}

/** An operand's copies of one k-tile, as {@link copySetup} plans them. */
export type CopyPlan = EachCopies | StridedCopies;

/** The operand whose copies {@link copySetup} sets up. */
export interface CopyOperand {
  /** The operand's matrix view and shared-memory tile. */
  readonly view: MatrixView;
  readonly p: OperandSmem;
  /** The threadblock tile's first row (A) or column (B), and M (A) or N (B). */
  readonly x0: Reg;
  readonly outerSize: Operand;
  /**
   * A buffer whose lines are not the view's (a sparse A's kept values,
   * passes/lower/sparse.ts): its base (batch applied), line length in elements and
   * the elements of a line one k-tile spans. Absent: the tensor's own.
   */
  readonly line?: { readonly base: Reg; readonly ldElems: Operand; readonly tileK: number };
}

/** What {@link copySetup}'s steps share: the operand's copy geometry and registers. */
interface CopyLayout extends CopyOperand {
  /** Bits of an element. */
  readonly bits: number;
  /** Copies per line (a row of the tile, or a transposed tile's column). */
  readonly cpr: number;
  /** Elements per copy. */
  readonly epc: number;
  /** Whether the lines run along K (K-contiguous, or a transposed tile). */
  readonly kContig: boolean;
  /** The tensor's base pointer (batch offset applied) and leading dimension in bytes. */
  readonly base: Reg;
  readonly ldBytes: Operand;
  /** The thread's line and copy within the line (`tid / cpr`, `tid % cpr`). */
  readonly tidHi: Reg;
  readonly tidLo: Reg;
  /** Copy j's line and column within a round of copies, affine in the thread's features. */
  readonly rowOf: (j: number) => Affine;
  readonly colOf: (j: number) => Affine;
  /** The operand's L2 cache-eviction policy (LowerContext.cachePolicy), or undefined. */
  readonly policy: Reg | undefined;
}

/**
 * Sets up an operand's global -> shared copies: per copy of this thread, its
 * global pointer, bounds predicates, k index and swizzled destination (one
 * pointer for all where a round of copies covers whole rows), and the operand's
 * L2 cache-eviction policy where its schedule asks for one (`cache_a`, `cache_b`).
 *
 * @param cx The lowering's context (writes its `tidHi`/`tidLo` features).
 * @param role Which operand.
 * @param op The operand.
 * @param K The problem's K.
 * @param bz The batch index.
 * @param smem The shared memory's base.
 * @returns The copy plan.
 */
export function copySetup(
  cx: LowerContext,
  role: "A" | "B",
  op: CopyOperand,
  K: Operand,
  bz: Reg,
  smem: Reg,
): CopyPlan {
  const lay: CopyLayout = { ...copyLayout(cx, op, K, bz), policy: cx.cachePolicy(role) };
  const { dst, valid } = copyDestinations(cx, lay, smem);
  // Bytes to advance per k-tile.
  const tileK = op.line?.tileK ?? cx.k.plan.tile!.threadblock.k;
  const { ldBytes, bits } = lay;
  const step: Operand = lay.kContig
    ? imm((tileK * bits) / 8)
    : ldBytes.kind === "imm"
    ? imm(ldBytes.value * tileK)
    : cx.bin("mul", "u64", ldBytes, imm(tileK));
  if (cx.threads % lay.cpr === 0) return stridedCopies(cx, lay, dst, valid, step);
  if (op.p.viaRegisters === true) {
    throw new Error("lower-kernel: register copies need whole lines a round");
  }
  return eachCopies(cx, lay, dst, valid, step);
}

/**
 * The operand's copy geometry; emits `tidHi`/`tidLo` (into the context's
 * features), the base pointer and the leading dimension.
 */
function copyLayout(
  cx: LowerContext,
  op: CopyOperand,
  K: Operand,
  bz: Reg,
): Omit<CopyLayout, "policy"> {
  const { view, p, outerSize } = op;
  const t = tensorParam(cx.k, view.tensor);
  const bits = DTYPE_INFO[t.dtype].bits;
  // The copies go along the operand's lines in global memory: the tile's
  // rows, or for a transposed tile its columns (tileK elements).
  const tileK = op.line?.tileK ?? cx.k.plan.tile!.threadblock.k;
  const transpose = p.transpose === true;
  const cpr = (transpose ? (tileK * bits) / 8 : p.rowBytes) / p.copyBytes;
  const epc = (p.copyBytes * 8) / bits;
  const T = cx.threads;
  // Thread tid's copy j covers copy index c = tid + j*T: row c / cpr, column c % cpr.
  const tidHi = cx.bin("shr", "u32", cx.features.get("tid")!, imm(log2(cpr)));
  const tidLo = cx.bin("and", "u32", cx.features.get("tid")!, imm(cpr - 1));
  cx.features.set("tidHi", tidHi);
  cx.features.set("tidLo", tidLo);
  const rowOf = (j: number): Affine =>
    T % cpr === 0
      ? { c: (j * T) / cpr, terms: [["tidHi", 1]] }
      : { c: Math.floor(j / (cpr / T)), terms: [] };
  const colOf = (j: number): Affine =>
    T % cpr === 0
      ? { c: 0, terms: [["tidLo", 1]] }
      : { c: (j % (cpr / T)) * T, terms: [["tid", 1]] };
  // Base pointer, with the batch offset.
  const base: Reg = op.line?.base ??
    (view.batched ? vectorBase(cx, t, bz) : cx.params.get(view.tensor)!);
  // Leading dimension in bytes: the size of the contiguous logical dim.
  const kContig = p.contiguous === "k" || transpose;
  // A strided tensor's line stride (DESIGN §6.1) where it declares one.
  const ldElems = op.line?.ldElems ?? lineStride(cx, t) ?? (kContig ? K : outerSize);
  const ldBytes = bytesOfElems(cx, ldElems.kind === "imm" ? ldElems : b64(cx, ldElems), bits);
  return {
    ...op,
    bits,
    cpr,
    epc,
    kContig,
    base,
    ldBytes,
    tidHi,
    tidLo,
    rowOf,
    colOf,
  };
}

/**
 * Each copy's destinations in shared memory and, for a partial last round,
 * its thread predicate: one destination, or for a transposed tile one per
 * element (its `epc` elements of line l, from k, go to rows k.. at l's
 * byte: one cp.async of an element, or through registers 4 elements).
 */
function copyDestinations(
  cx: LowerContext,
  lay: CopyLayout,
  smem: Reg,
): Pick<StridedCopies, "dst" | "valid"> {
  const { p, bits, epc } = lay;
  const T = cx.threads;
  const total = (p.rows * p.rowBytes) / p.copyBytes;
  const transpose = p.transpose === true;
  const per = transpose ? epc : 1;
  const recipes: SmemRecipe[] = [];
  const valid: (Reg | null)[] = [];
  for (let j = 0; j < Math.ceil(total / T); j++) {
    const row = lay.rowOf(j);
    const col = lay.colOf(j);
    for (let e = 0; e < per; e++) {
      const k0 = scaleAffine(col, epc);
      recipes.push(
        transpose
          ? { row: { c: k0.c + e, terms: k0.terms }, byte: scaleAffine(row, bits / 8) }
          : { row, byte: scaleAffine(col, p.copyBytes) },
      );
    }
    // Partial last round of copies: only threads with c < total copy.
    valid.push(
      total % T === 0 || (j + 1) * T <= total
        ? null
        : cx.setp("lt", "u32", cx.features.get("tid")!, imm(total - j * T)),
    );
  }
  const flat = groupRecipes(cx, p, recipes, smem, lay.cpr);
  return { dst: valid.map((_, j) => flat.slice(j * per, (j + 1) * per)), valid };
}

/** Every round of copies covers whole rows: copy j is copy 0 moved by j * dr rows. */
function stridedCopies(
  cx: LowerContext,
  lay: CopyLayout,
  dst: StridedCopies["dst"],
  valid: StridedCopies["valid"],
  step: Operand,
): StridedCopies {
  const { view, x0, outerSize, bits, kContig, base, ldBytes, tidHi, tidLo, p } = lay;
  const dr = cx.threads / lay.cpr;
  const tidLoE = (p.copyBytes * 8) / bits;
  const colE = tidLoE === 1 ? tidLo : cx.bin("mul", "u32", tidLo, imm(tidLoE));
  const outer0 = cx.bin("add", "u32", x0, kContig ? tidHi : colE);
  const kIdx0 = kContig ? colE : tidHi;
  const lineOff = cx.mulU64(kContig ? outer0 : kIdx0, ldBytes);
  const inOff = bytesOfElems(cx, b64(cx, kContig ? kIdx0 : outer0), bits);
  const ptr0 = cx.bin(
    "add",
    "u64",
    cx.bin("add", "u64", base, lineOff),
    inOff,
    `${view.tensor}ptr`,
  );
  const stride: Operand = ldBytes.kind === "imm"
    ? imm(ldBytes.value * dr)
    : cx.bin("mul", "u64", ldBytes, imm(dr));
  // K-contiguous: rows are M/N; outer-contiguous: rows are k.
  const outerRem = kContig
    ? cx.bin("sub", "s32", cx.s32Of(outerSize), cx.s32Of(outer0), `${view.tensor}orem`)
    : null;
  const outerOk = kContig ? null : cx.setp("lt", "u32", outer0, outerSize);
  return {
    kind: "strided",
    ptr0,
    stride,
    step,
    dr,
    kContig,
    outerRem,
    outerOk,
    kIdx: cx.s32Of(kIdx0),
    dst,
    valid,
    policy: lay.policy,
  };
}

/** Rounds of copies that do not cover whole rows: a pointer and bounds per copy. */
function eachCopies(
  cx: LowerContext,
  lay: CopyLayout,
  dst: StridedCopies["dst"],
  valid: StridedCopies["valid"],
  step: Operand,
): EachCopies {
  const { view, x0, outerSize, bits, epc, kContig, base, ldBytes } = lay;
  const copies: CopyOne[] = [];
  for (let j = 0; j < valid.length; j++) {
    const rowV = emitAffine(cx, lay.rowOf(j)); // the global line (a transposed tile's recipe row is k)
    const colV = emitAffine(cx, lay.colOf(j));
    // Logical (outer, k) of the copy's first element.
    let outerIdx: Operand;
    let kIdx: Operand;
    if (kContig) {
      outerIdx = cx.bin("add", "u32", x0, rowV);
      kIdx = colV.kind === "imm" ? imm(colV.value * epc) : cx.bin("mul", "u32", colV, imm(epc));
    } else {
      kIdx = rowV;
      const oc = colV.kind === "imm" ? imm(colV.value * epc) : cx.bin("mul", "u32", colV, imm(epc));
      outerIdx = cx.bin("add", "u32", x0, oc);
    }
    const okRow = cx.setp("lt", "u32", outerIdx, outerSize);
    // Global byte address of k-tile 0.
    const lineIdx = kContig ? outerIdx : kIdx;
    const inLine = kContig ? kIdx : outerIdx;
    const lineOff = cx.mulU64(lineIdx, ldBytes);
    const inOff = bytesOfElems(cx, b64(cx, inLine), bits);
    const ptr = cx.bin(
      "add",
      "u64",
      cx.bin("add", "u64", base, lineOff),
      inOff,
      `${view.tensor}p${j}`,
    );
    // k index for the bounds check: as s32.
    copies.push({ ptr, okRow, valid: valid[j]!, kIdx: cx.s32Of(kIdx), dst: dst[j]![0]! });
  }
  return { kind: "each", copies, step, policy: lay.policy };
}

/** Copy j's pointer: `ptr0 + j * stride` (ptr0 itself for j = 0). */
function nthPointer(cx: LowerContext, ptr0: Reg, stride: Operand, j: number): Reg {
  if (j === 0) return ptr0;
  const ptr = cx.b.reg("u64");
  cx.b.emit(
    stride.kind === "imm"
      ? ir.bin("add", "u64", ptr, ptr0, imm(j * stride.value))
      : ir.mad("u64", ptr, stride, imm(j), ptr0),
  );
  return ptr;
}

/**
 * Issues an operand's copies of one k-tile into stage `stage`, each zero-filled
 * past M/N and past `kRem`, and advances the pointers by a k-tile.
 *
 * @param cx The lowering's context.
 * @param c The copy plan.
 * @param p The operand's shared-memory tile.
 * @param stage The stage index written.
 * @param kRem K left from the k-tile's first element (s32).
 */
export function issueCopies(
  cx: LowerContext,
  c: CopyPlan,
  p: OperandSmem,
  stage: Reg,
  kRem: Reg,
): void {
  const b = cx.b;
  const stageOff = cx.bin("mul", "u32", stage, imm(p.stageBytes));
  const bases = new Map<Reg, Reg>();
  const dstOf = (d: { base: Reg; offset: number }) => {
    let r = bases.get(d.base);
    if (r === undefined) {
      r = cx.bin("add", "u32", d.base, stageOff);
      bases.set(d.base, r);
    }
    return r;
  };
  if (c.kind === "strided") {
    const inBounds = stridedBounds(cx, c, kRem);
    c.dst.forEach((d, j) => {
      const ok = inBounds(j);
      const ptr = nthPointer(cx, c.ptr0, c.stride, j);
      if (p.viaRegisters !== true) {
        copyOne(cx, p, ok, ptr, dstOf(d[0]!), d[0]!.offset, c.valid[j]!, c.policy);
        return;
      }
      // Through registers: one 16-byte load, an element to each of 4 rows.
      const v = d.map(() => cx.mov("b32", imm(0)));
      b.emit(ir.ldg("b32", v, ptr, 0, ir.when(ok), undefined, c.policy));
      v.forEach((x, e) => b.emit(ir.sts("b32", [x], dstOf(d[e]!), d[e]!.offset)));
    });
    b.emit(ir.bin("add", "u64", c.ptr0, c.ptr0, c.step));
    return;
  }
  for (const one of c.copies) {
    const kOk = cx.setp("lt", "s32", one.kIdx, kRem);
    const ok = cx.and(one.okRow, kOk)!;
    copyOne(cx, p, ok, one.ptr, dstOf(one.dst), one.dst.offset, one.valid, c.policy);
    b.emit(ir.bin("add", "u64", one.ptr, one.ptr, c.step));
  }
}

/**
 * The bounds of a strided plan's copies of one k-tile: copy j's predicate, true where its
 * line lies inside M/N (K-contiguous) or K (outer-contiguous) and its k index before `kRem`
 * (K-contiguous) or its run inside M/N (outer-contiguous).
 *
 * @param cx The lowering's context.
 * @param c The copy plan.
 * @param kRem K left from the k-tile's first element (s32).
 * @returns Emits copy j's predicate.
 */
function stridedBounds(cx: LowerContext, c: StridedCopies, kRem: Reg): (j: number) => Reg {
  const kOk = c.kContig ? cx.setp("lt", "s32", c.kIdx, kRem) : null;
  const kRemT = c.kContig ? null : cx.bin("sub", "s32", kRem, c.kIdx);
  return (j) => {
    const rowOk = c.kContig
      ? cx.setp("lt", "s32", imm(j * c.dr), c.outerRem!)
      : cx.setp("lt", "s32", imm(j * c.dr), kRemT!);
    return cx.and(rowOk, c.kContig ? kOk : c.outerOk)!;
  };
}

/**
 * One global->shared copy: cp.async with zero-fill, or a guarded load and a
 * store. `ok` false (past M, N or K) writes zeros; `only` false (a thread
 * past the tile in a partial round of copies, whose destination lies
 * outside the tile) copies nothing. A cp.async carries the operand's cache
 * `policy` where it has one, and so does the load of a narrow copy (1 or 2
 * bytes, an operand aligned to less than 4: `ld.global.L2::cache_hint`).
 */
function copyOne(
  cx: LowerContext,
  p: OperandSmem,
  ok: Reg,
  src: Reg,
  dst: Reg,
  dstOffset: number,
  only: Reg | null,
  policy: Reg | undefined,
): void {
  const b = cx.b;
  const guard = ir.when(only);
  if (p.async) {
    const n = cx.b.reg("u32");
    b.emit(ir.selp("u32", n, imm(p.copyBytes), imm(0), ok));
    b.emit(ir.cpAsync(
      {
        cache: p.copyBytes === 16 ? "cg" : "ca",
        // The L2 may fetch whole 128-byte lines: +5% for tf32 at 8192^3 on the H200
        // (bench/NOTES.md 6).
        ...(p.copyBytes === 16 ? { prefetch: 128 as const } : {}),
        bytes: p.copyBytes as 4 | 8 | 16,
        dst,
        dstOffset,
        src,
        srcBytes: n,
        ...(policy === undefined ? {} : { policy }),
      },
      guard,
    ));
  } else {
    const width: MemWidth = p.copyBytes === 2 ? "b16" : "b8";
    const v = cx.mov(width === "b16" ? "b16" : "u32", imm(0));
    b.emit(ir.ldg(width, [v], src, 0, ir.when(ok), undefined, policy));
    b.emit(ir.sts(width, [v], dst, dstOffset, guard));
  }
}

/**
 * Asks the L2 for the lines that {@link issueCopies} will read for an operand's next `tiles`
 * k-tiles (from the plan's pointers, which it leaves unmoved): one `prefetch.global.L2` a
 * 128-byte run of copies, by the thread whose copy starts the run, within the copies' own
 * bounds (rows past M/N, k past `kRem`). A hint: it moves no data, so it may come before
 * `griddep.wait` (the kernel's first k-tiles of B asked for while the previous grid ends).
 * Strided plans of 16-byte cp.async copies only: a plan of single copies (`each`, a round of
 * copies that is not whole lines) or of narrower copies (an operand aligned to less than 16
 * bytes, whose many small copies would each need a prefetch of their own: ptxas spilled for
 * byte copies) gets none, a shortcut.
 *
 * @param cx The lowering's context.
 * @param c The operand's copy plan.
 * @param p The operand's shared-memory tile.
 * @param kRem K left from the first k-tile's first element (s32).
 * @param tiles How many k-tiles.
 */
export function prefetchKTiles(
  cx: LowerContext,
  c: CopyPlan,
  p: OperandSmem,
  kRem: Reg,
  tiles: number,
): void {
  if (c.kind !== "strided" || tiles <= 0 || !p.async || p.copyBytes !== 16) return;
  const b = cx.b;
  const tk = cx.k.plan.tile!.threadblock.k;
  // Copies per line (cpr = threads / dr) and per 128-byte run, both powers of two.
  const run = Math.min(cx.threads / c.dr, Math.max(1, 128 / p.copyBytes));
  const tid = cx.features.get("tid")!;
  const leader = run === 1
    ? null
    : cx.setp("eq", "u32", cx.bin("and", "u32", tid, imm(run - 1)), imm(0));
  b.emit(ir.comment(`${tiles} k-tiles from ${c.ptr0.name ?? "the operand"} asked of the L2`));
  for (let s = 0; s < tiles; s++) {
    const kRemS = s === 0 ? kRem : cx.bin("sub", "s32", kRem, imm(s * tk));
    const inBounds = stridedBounds(cx, c, kRemS);
    const at = s === 0 ? c.ptr0 : cx.b.reg("u64");
    if (s > 0) {
      b.emit(
        c.step.kind === "imm"
          ? ir.bin("add", "u64", at, c.ptr0, imm(s * c.step.value))
          : ir.mad("u64", at, c.step, imm(s), c.ptr0),
      );
    }
    c.dst.forEach((_, j) => {
      const ok = cx.and(cx.and(inBounds(j), c.valid[j]!), leader);
      b.emit(ir.prefetch(nthPointer(cx, at, c.stride, j), ir.when(ok)));
    });
  }
}

/**
 * The k-tile order of a rotated k-loop as the copies before the PDL wait follow it
 * (rotate_k.ts `KRotation` is one).
 */
export interface RotatedFetch {
  /** `K - t * tileK` of the rotated k-tile t fetched next (s32; before the prologue, the
   * block's first). */
  readonly kRot: Reg;
  /** The sequence the copies before the grid's wait of the operands `roles` follow: the block's
   * first rotated k-tiles in turn, from its first, apart from {@link kRot} (which moves with the
   * prologue's copies of the other operands). */
  readonly early: (roles: readonly ("A" | "B")[]) => {
    /** The k bound of the current k-tile's copies: its own rotated k, 0 where the unrotated
     * counter `kRem` says the block has no k-tile left. */
    readonly bound: (kRem: Reg) => Reg;
    /** On to the next k-tile, `roles`' pointers moved back where the sequence wraps (as the
     * prologue's and the loop's copies move theirs). */
    readonly next: () => void;
  };
}

/** An operand's copy plan and its shared-memory tile. */
export interface OperandCopies {
  readonly c: CopyPlan;
  readonly p: OperandSmem;
  /** The bound of its copies from K left (absent: K left itself; a sparse A's kept values:
   * half of it, passes/lower/sparse.ts `keptRemaining`). */
  readonly remaining?: (kRem: Reg) => Reg;
  /** Copies the operand's metadata words of the k-tile at `kRem` into stage `stage` (a sparse
   * A's, passes/lower/sparse.ts; absent: none). */
  readonly meta?: (stage: Reg, kRem: Reg) => void;
}

/**
 * What a cp.async main loop emits before its prologue under programmatic dependent launch
 * (nothing without it): the copies of the operands read early (`LowerContext.earlyOperands`,
 * compile option `pdlEarly`) into the prologue's `tiles` stages, each advancing its own
 * pointers as the prologue would (a sparse A's metadata words with its kept values, bounded by
 * the unrotated `kRem`: sparse kernels do not rotate); an L2 prefetch of B's first `tiles`
 * k-tiles where B is not among them; then the wait. The early copies join the prologue's first
 * commit group (a group takes every copy issued before its commit), so the loop's
 * `cp.async.wait_group` covers them.
 *
 * @param cx The lowering's context.
 * @param ops Operands A and B.
 * @param fetch `kRem`: K left from the first k-tile's first element (s32; left unchanged);
 *   `rot`: the k-loop's rotation (rotate_k.ts), whose sequence the early copies follow, or null.
 * @param tiles The prologue's k-tiles.
 * @returns The operands the prologue still copies.
 */
export function copiesBeforeWait(
  cx: LowerContext,
  ops: Readonly<Record<"A" | "B", OperandCopies>>,
  fetch: { readonly kRem: Reg; readonly rot: RotatedFetch | null },
  tiles: number,
): readonly ("A" | "B")[] {
  if (!cx.gridDep.on) return ["A", "B"];
  const { kRem, rot } = fetch;
  const early = tiles > 0 ? cx.earlyOperands() : [];
  if (!early.includes("B")) prefetchKTiles(cx, ops.B.c, ops.B.p, rot?.kRot ?? kRem, tiles);
  if (early.length > 0) {
    const tk = cx.k.plan.tile!.threadblock.k;
    cx.b.emit(ir.comment(`${tiles} k-tiles of ${early.join(" and ")} before the wait`));
    const seq = rot?.early(early) ?? null;
    for (let s = 0; s < tiles; s++) {
      const rem = s === 0 ? kRem : cx.bin("sub", "s32", kRem, imm(s * tk));
      const bound = seq === null ? rem : seq.bound(rem);
      for (const r of early) {
        const { c, p, remaining, meta } = ops[r];
        const stage = cx.mov("u32", imm(s));
        issueCopies(cx, c, p, stage, remaining?.(bound) ?? bound);
        meta?.(stage, rem);
      }
      seq?.next();
    }
  }
  cx.gridWait();
  return (["A", "B"] as const).filter((r) => !early.includes(r));
}

/** A copy plan's global pointers (each advanced by its `step` a k-tile). */
export function copyPointers(c: CopyPlan): readonly Reg[] {
  return c.kind === "each" ? c.copies.map((x) => x.ptr) : [c.ptr0];
}

/** Moves a copy plan's pointers `tiles` k-tiles ahead (a split's first k-tile, or a rotated
 * k-loop's, passes/lower/rotate_k.ts). */
export function skipTiles(cx: LowerContext, c: CopyPlan, tiles: Reg): void {
  const off = cx.bin("mul", "u64", b64(cx, tiles), c.step);
  for (const p of copyPointers(c)) cx.b.emit(ir.bin("add", "u64", p, p, off));
}

/**
 * `off = (off + 1) % stages`, a stage index moved to the next stage.
 *
 * @param cx The lowering's context.
 * @param off The stage index register (updated in place).
 * @param stages The pipeline's stages.
 */
export function advanceStage(cx: LowerContext, off: Reg, stages: number): void {
  // Stage offsets count in stage indices; byte offsets are index * stageBytes.
  const next = cx.bin("add", "u32", off, imm(1));
  const wrap = cx.setp("eq", "u32", next, imm(stages));
  cx.b.emit(ir.selp("u32", off, imm(0), next, wrap));
}
