/**
 * SM80 (Ampere) sparse warp-level MMA: every `mma.sp.sync.aligned` variant of the PTX ISA
 * for sm_80 (2:4 structured sparsity of A), with the fragment maps of the compressed A, B,
 * C/D and the metadata operand. The rows live beside the dense table (ir/mma_table.ts) in
 * their own table, {@link SPARSE_MMA_TABLE}; each row is a {@link MmaShape} (same fields,
 * same B and C/D maps as the dense shape of the same K) plus {@link SparseMmaShape.meta}.
 *
 * Source: PTX ISA, section "Warp Level Matrix Multiply-Accumulate Instructions" ->
 * "Matrix multiply-accumulate operation using mma.sp instruction with sparse matrix A"
 * (9.7.14.6 in the 9.x ISA), in particular
 *   - "Sparse matrix storage" (9.7.14.6.1): the granularities (2:4 for .f16/.bf16 and
 *     .u8/.s8, 1:2 for .tf32, 4:8 in pairs for .u4/.s4), the meaning of a metadata nibble,
 *     the invalid nibbles, the `::ordered_metadata` values, and which threads of each group
 *     of four supply metadata for which sparsity-selector values;
 *   - "Matrix fragments for multiply-accumulate operation with sparse matrix A" (9.7.14.6.2)
 *     and its subsections "Matrix Fragments for sparse mma.m16n8k16 / m16n8k32 with .f16 and
 *     .bf16 types", "... sparse mma.m16n8k16 / m16n8k8 with .tf32 floating point type",
 *     "... sparse mma.m16n8k32 / m16n8k64 with .u8/.s8 integer type", "... sparse
 *     mma.m16n8k64 / m16n8k128 with .u4/.s4 integer type": the A fragments and the
 *     metadata layout figures;
 *   - "Multiply-and-Accumulate Instruction: mma.sp" (9.7.14.6.3): the operand list
 *     `d, a, b, c, e, f` (e: the b32 metadata register, f: the sparsity selector, an
 *     integer constant) and the legal type combinations.
 *
 * The compressed A: the ISA gives, for each shape, registers that each hold the kept
 * elements of a run of consecutive dense columns of one row (e.g. sparse m16n8k16 .f16: two
 * .b32, each two kept elements out of 4 consecutive ones; row groupID for a0,a1 and
 * groupID + 8 for a2,a3). Numbered by their place among the kept elements, those are
 * exactly the dense A map of an M x K/2 tile ({@link fragA}`(type, M, K/2)`), which is what
 * each row's `a` is: element (r, j) of the compressed tile is the j-th kept element of row r.
 *
 * The metadata (one b32 register a lane): eight 4-bit nibbles, nibble n in bits 4n..4n+3.
 * A nibble describes one chunk of a row: for 2:4 two 2-bit indices (bits 0-1: the position
 * in the chunk of the first kept element, bits 2-3: of the second); for .u4/.s4 the same
 * indices name 2-element sub-chunks of an 8-wide chunk; for .tf32 (1:2) 0b0100 keeps the
 * first element of the pair and 0b1110 the second. Which lane holds which (row, chunk) is
 * {@link SparseMetaMap.coord}; the layouts, with g = groupID = lane >> 2 and
 * t = threadID_in_group = lane % 4, s the selector:
 *   - 16-bit units (.f16/.bf16, .tf32 counted in 16-bit halves), 4 chunks a row
 *     (m16n8k16 f16/bf16, m16n8k8 tf32): lane t = s (s in 0..3); nibble n -> row
 *     g + 8 * (n >> 2), chunk n & 3.
 *   - 16-bit units, 8 chunks a row (m16n8k32 f16/bf16, m16n8k16 tf32): lanes t = 2s + p
 *     (s in 0..1); nibble n -> row g + 8 * (n >> 2), chunk 4p + (n & 3).
 *   - 8-bit units (.u8/.s8, .u4/.s4 pairs), 8 chunks a row (m16n8k32 s8, m16n8k64 s4):
 *     lanes t = 2s + p (s in 0..1); nibble n -> row g + 8p, chunk n.
 *   - 8-bit units, 16 chunks a row (m16n8k64 s8, m16n8k128 s4): all four lanes (s = 0);
 *     nibble n -> row g + 8 * (t & 1), chunk 8 * (t >> 1) + n.
 * The 16-bit layouts and the 16-chunk 8-bit layout are the ISA's figures as Triton's
 * `getSparseMetadataLayout` implements them (measured there on sm_86/sm_89); the 8-chunk
 * 8-bit layout is the first half of the 16-chunk one, as the ISA's figure for m16n8k64
 * columns 0-31 is, and is the one layout here nobody has yet confirmed on hardware
 * (harness/mma_probe.ts checks all of them in gpu mode).
 *
 * Validated at module load ({@link validateSparseMmaTable}) and deep-frozen.
 *
 * @module
 */

import {
  fragA,
  fragB,
  fragC,
  type FragmentMap,
  type MmaDtype,
  regBitsOf,
  WARP,
} from "./mma_fragments.ts";
import { type MmaShape, validateFragmentMap } from "./mma_table.ts";

/**
 * Where a sparse row's metadata lives: the chunking of A's rows and, for each lane and
 * selector, which chunk each of the lane's eight metadata nibbles describes.
 */
export interface SparseMetaMap {
  /** Dense elements of A a chunk spans (4 for 2:4, 2 for .tf32's 1:2, 8 for .u4/.s4 4:8). */
  readonly group: number;
  /** Elements kept in each chunk (2, 1 or 4: always group / 2). */
  readonly kept: number;
  /** Chunks in one row of the M x K tile (k / group). */
  readonly chunks: number;
  /** Lanes of each group of four consecutive lanes that supply metadata (1, 2 or 4). */
  readonly lanesPerGroup: 1 | 2 | 4;
  /** The legal sparsity-selector values: 0..3, 0..1 or 0 (4 / lanesPerGroup values). */
  readonly selectors: readonly number[];
  /**
   * Maps (lane, selector, nibble) to the [row, chunk] of A whose kept positions nibble
   * `nibble` (bits 4*nibble..4*nibble+3) of that lane's metadata register holds, or
   * undefined when the lane supplies no metadata under that selector. Throws a RangeError
   * for a lane outside 0..31, a nibble outside 0..7 or an illegal selector.
   */
  readonly coord: (
    lane: number,
    selector: number,
    nibble: number,
  ) => readonly [number, number] | undefined;
}

/** One SM80 `mma.sp.sync.aligned` variant: a {@link MmaShape} plus its metadata map. */
export interface SparseMmaShape extends MmaShape {
  /**
   * Unique row name: "sp." and the dense naming, e.g. "sp.m16n8k32.f16.f32",
   * "sp.m16n8k64.s8.u8.s32". `m`, `n`, `k` are the dense instruction shape (A is M x K
   * before compression).
   */
  readonly name: string;
  /** Always true: marks a sparse row. */
  readonly sparse: true;
  /** Fragment map of the compressed A: M x K/2 (the kept elements of each row, in order). */
  readonly a: FragmentMap;
  /** The metadata layout. */
  readonly meta: SparseMetaMap;
  /** PTX mnemonic, e.g. "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32". */
  readonly ptx: string;
  /** The same with `mma.sp::ordered_metadata` (PTX ISA 8.5; advised by ptxas on sm_90). */
  readonly ptxOrdered: string;
}

// ---------------------------------------------------------------------------------------------
// Metadata maps
// ---------------------------------------------------------------------------------------------

/** 16-bit units (.f16/.bf16/.tf32) or 8-bit units (.u8/.s8, .u4/.s4 pairs). */
type Unit = 16 | 8;

function unitOf(t: MmaDtype): Unit {
  return t === "f16" || t === "bf16" || t === "tf32" ? 16 : 8;
}

function groupOf(t: MmaDtype): number {
  return t === "tf32" ? 2 : t === "s4" || t === "u4" ? 8 : 4;
}

function metaMap(aType: MmaDtype, k: number): SparseMetaMap {
  const group = groupOf(aType);
  const chunks = k / group;
  const unit = unitOf(aType);
  const lanesPerGroup = (chunks === 4 ? 1 : chunks === 8 ? 2 : 4) as 1 | 2 | 4;
  const selectors = Object.freeze(Array.from({ length: 4 / lanesPerGroup }, (_, i) => i));
  const what = `sparse ${aType} k${k} metadata`;
  const coord = (lane: number, sel: number, n: number): readonly [number, number] | undefined => {
    if (!Number.isInteger(lane) || lane < 0 || lane >= WARP) {
      throw new RangeError(`${what}: lane ${lane} out of range 0..31`);
    }
    if (!selectors.includes(sel)) {
      throw new RangeError(`${what}: selector ${sel} not in ${selectors.join(", ")}`);
    }
    if (!Number.isInteger(n) || n < 0 || n >= 8) {
      throw new RangeError(`${what}: nibble ${n} out of range 0..7`);
    }
    const g = lane >> 2;
    const t = lane & 3;
    if (lanesPerGroup === 1) {
      return t === sel ? Object.freeze([g + 8 * (n >> 2), n & 3] as const) : undefined;
    }
    if (lanesPerGroup === 2) {
      if (t >> 1 !== sel) return undefined;
      const p = t & 1;
      return unit === 16
        ? Object.freeze([g + 8 * (n >> 2), 4 * p + (n & 3)] as const)
        : Object.freeze([g + 8 * p, n] as const);
    }
    return Object.freeze([g + 8 * (t & 1), 8 * (t >> 1) + n] as const);
  };
  return Object.freeze({ group, kept: group / 2, chunks, lanesPerGroup, selectors, coord });
}

// ---------------------------------------------------------------------------------------------
// Table
// ---------------------------------------------------------------------------------------------

type Spec = Pick<MmaShape, "k" | "aType" | "bType" | "cType">;

const SP = "mma.sp.sync.aligned.";
const SP_ORDERED = "mma.sp::ordered_metadata.sync.aligned.";

function sparseName(s: Spec): string {
  const types = s.aType === s.bType ? s.aType : `${s.aType}.${s.bType}`;
  return `sp.m16n8k${s.k}.${types}.${s.cType}`;
}

function mnemonicTail(s: Spec): string {
  const sat = s.cType === "s32" ? ".satfinite" : "";
  return `m16n8k${s.k}.row.col${sat}.${s.cType}.${s.aType}.${s.bType}.${s.cType}`;
}

function buildSparse(s: Spec): SparseMmaShape {
  const tail = mnemonicTail(s);
  return Object.freeze({
    name: sparseName(s),
    m: 16,
    n: 8,
    k: s.k,
    aType: s.aType,
    bType: s.bType,
    cType: s.cType,
    satfinite: s.cType === "s32",
    a: fragA(s.aType, 16, s.k / 2),
    b: fragB(s.bType, s.k, 8),
    c: fragC(s.cType, 16, 8),
    ptx: SP + tail,
    ptxOrdered: SP_ORDERED + tail,
    regBits: regBitsOf(s.aType),
    sparse: true as const,
    meta: metaMap(s.aType, s.k),
  });
}

function floatSpecs(): Spec[] {
  const out: Spec[] = [];
  for (const k of [16, 32]) {
    out.push({ k, aType: "f16", bType: "f16", cType: "f32" });
    out.push({ k, aType: "f16", bType: "f16", cType: "f16" });
    out.push({ k, aType: "bf16", bType: "bf16", cType: "f32" });
  }
  for (const k of [8, 16]) out.push({ k, aType: "tf32", bType: "tf32", cType: "f32" });
  return out;
}

function intSpecs(ks: readonly number[], signed: MmaDtype, unsigned: MmaDtype): Spec[] {
  const out: Spec[] = [];
  for (const k of ks) {
    for (const aType of [signed, unsigned]) {
      for (const bType of [signed, unsigned]) out.push({ k, aType, bType, cType: "s32" });
    }
  }
  return out;
}

/**
 * Every SM80 `mma.sp.sync.aligned` variant: f16 x f16 -> f32|f16 and bf16 x bf16 -> f32 at
 * m16n8k16 and m16n8k32, tf32 x tf32 -> f32 at m16n8k8 and m16n8k16, s8/u8 -> s32 at m16n8k32
 * and m16n8k64 and s4/u4 -> s32 at m16n8k64 and m16n8k128 (all four signedness pairs,
 * `.satfinite`). Frozen and validated.
 *
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { SPARSE_MMA_TABLE } from "./mma_sparse.ts";
 * const s = SPARSE_MMA_TABLE.find((r) => r.name === "sp.m16n8k32.f16.f32")!;
 * equal(s.ptx, "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32");
 * equal(s.a.cols, 16); // the compressed A: 16 x 16 kept values
 * ok(s.meta.selectors.length === 2);
 * ```
 */
export const SPARSE_MMA_TABLE: readonly SparseMmaShape[] = Object.freeze(
  [
    ...floatSpecs(),
    ...intSpecs([32, 64], "s8", "u8"),
    ...intSpecs([64, 128], "s4", "u4"),
  ].map(buildSparse),
);

// ---------------------------------------------------------------------------------------------
// Metadata nibbles
// ---------------------------------------------------------------------------------------------

/**
 * The dense columns, within its chunk, of the kept elements a metadata nibble names, in
 * the order the compressed A holds them; undefined for a nibble whose effect the ISA leaves
 * undefined ("Sparse matrix storage": both indices equal; with `ordered`, the
 * `::ordered_metadata` rule that the first index be below the second; for .tf32 anything
 * but 0b0100 and 0b1110).
 *
 * @param s The sparse row.
 * @param nibble The 4-bit metadata value.
 * @param ordered Whether the instruction is `mma.sp::ordered_metadata`.
 * @returns Dense column offsets within the chunk (s.meta.kept of them), or undefined.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { keptColumns, sparseMmaByName } from "./mma_sparse.ts";
 * const f16 = sparseMmaByName("sp.m16n8k32.f16.f32")!;
 * deepEqual(keptColumns(f16, 0b1100, false), [0, 3]);
 * equal(keptColumns(f16, 0b0101, false), undefined);
 * deepEqual(keptColumns(sparseMmaByName("sp.m16n8k64.s4.s32")!, 0b1001, true), [2, 3, 4, 5]);
 * ```
 */
export function keptColumns(
  s: SparseMmaShape,
  nibble: number,
  ordered: boolean,
): readonly number[] | undefined {
  if (!Number.isInteger(nibble) || nibble < 0 || nibble > 15) {
    throw new RangeError(`${s.name}: metadata nibble ${nibble} out of range 0..15`);
  }
  if (s.aType === "tf32") return nibble === 0b0100 ? [0] : nibble === 0b1110 ? [1] : undefined;
  const i0 = nibble & 3;
  const i1 = nibble >> 2;
  if (i0 === i1 || (ordered && i0 > i1)) return undefined;
  if (s.meta.group === 4) return [i0, i1];
  return [2 * i0, 2 * i0 + 1, 2 * i1, 2 * i1 + 1];
}

/**
 * The metadata nibble that keeps the given dense columns of a chunk (ascending; s.meta.kept
 * of them; for .u4/.s4 two whole 2-element sub-chunks). The inverse of {@link keptColumns};
 * the nibble is also valid for `::ordered_metadata`. Throws for columns no nibble expresses.
 *
 * @param s The sparse row.
 * @param cols Dense column offsets within the chunk, ascending.
 * @returns The 4-bit metadata value.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { metaNibble, sparseMmaByName } from "./mma_sparse.ts";
 * equal(metaNibble(sparseMmaByName("sp.m16n8k16.f16.f32")!, [1, 3]), 0b1101);
 * equal(metaNibble(sparseMmaByName("sp.m16n8k8.tf32.f32")!, [1]), 0b1110);
 * ```
 */
export function metaNibble(s: SparseMmaShape, cols: readonly number[]): number {
  const bad = () => new RangeError(`${s.name}: no metadata keeps columns [${cols.join(", ")}]`);
  const { group, kept } = s.meta;
  if (cols.length !== kept || cols.some((c) => !Number.isInteger(c) || c < 0 || c >= group)) {
    throw bad();
  }
  if (s.aType === "tf32") return cols[0] === 0 ? 0b0100 : 0b1110;
  if (group === 4) {
    if (cols[0]! >= cols[1]!) throw bad();
    return cols[0]! | (cols[1]! << 2);
  }
  const [a, a1, b, b1] = cols as readonly [number, number, number, number];
  if (a % 2 !== 0 || a1 !== a + 1 || b % 2 !== 0 || b1 !== b + 1 || a >= b) throw bad();
  return (a >> 1) | ((b >> 1) << 2);
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

const SP_RE = new RegExp(
  "^mma\\.sp(::ordered_metadata)?\\.sync\\.aligned\\.m16n8k(\\d+)\\.row\\.col(\\.satfinite)?" +
    "\\.(\\w+)\\.(\\w+)\\.(\\w+)\\.(\\w+)$",
);

/** Sparse shapes of the PTX ISA for sm_80 by A type: the two K of each. */
const LEGAL_K: Readonly<Partial<Record<MmaDtype, readonly number[]>>> = {
  f16: [16, 32],
  bf16: [16, 32],
  tf32: [8, 16],
  s8: [32, 64],
  u8: [32, 64],
  s4: [64, 128],
  u4: [64, 128],
};

function fail(name: string, msg: string): never {
  throw new Error(`sparse mma table: ${name}: ${msg}`);
}

function validateMnemonic(s: SparseMmaShape, ptx: string, ordered: boolean): void {
  const mt = SP_RE.exec(ptx) ?? fail(s.name, `malformed mnemonic "${ptx}"`);
  const [, ord, pk, sat, pd, pa, pb, pc] = mt;
  if ((ord !== undefined) !== ordered) fail(s.name, `"${ptx}": ordered_metadata flag`);
  if (Number(pk) !== s.k || s.m !== 16 || s.n !== 8) fail(s.name, `"${ptx}": shape`);
  if (pa !== s.aType || pb !== s.bType) fail(s.name, `"${ptx}": operand types`);
  if (pd !== s.cType || pc !== s.cType) fail(s.name, `"${ptx}": accumulator types`);
  if ((sat !== undefined) !== s.satfinite) fail(s.name, `"${ptx}": satfinite`);
}

function validateTypes(s: SparseMmaShape): void {
  const ks = LEGAL_K[s.aType] ?? fail(s.name, `no sparse mma for A type ${s.aType}`);
  if (!ks.includes(s.k)) fail(s.name, `no sparse ${s.aType} mma with k ${s.k}`);
  if (s.aType === "f16" || s.aType === "bf16" || s.aType === "tf32") {
    if (s.bType !== s.aType) fail(s.name, "floating-point A and B types must match");
    if (s.cType !== "f32" && !(s.aType === "f16" && s.cType === "f16")) {
      fail(s.name, `accumulator ${s.cType} not allowed for ${s.aType}`);
    }
    if (s.satfinite) fail(s.name, "float mma takes no satfinite");
  } else {
    if (unitOf(s.bType) !== 8 || groupOf(s.bType) !== groupOf(s.aType)) {
      fail(s.name, "integer A and B must have the same width");
    }
    if (s.cType !== "s32" || !s.satfinite) fail(s.name, "integer rows are .satfinite s32");
  }
}

/** The compressed A: every register holds whole chunks' kept elements of one row. */
function validateCompressedA(s: SparseMmaShape): void {
  const { a, meta } = s;
  validateFragmentMap(s.name, a, s.m, s.k / 2);
  if (a.elemsPerReg % meta.kept !== 0) fail(s.name, "a register splits a chunk");
  for (let lane = 0; lane < WARP; lane++) {
    for (let reg = 0; reg < a.regs; reg++) {
      const [r0, c0] = a.coord(lane, reg, 0);
      if (c0 % meta.kept !== 0) fail(s.name, `A (${lane},${reg}) starts inside a chunk`);
      for (let e = 1; e < a.elemsPerReg; e++) {
        const [r, c] = a.coord(lane, reg, e);
        if (r !== r0 || c !== c0 + e) fail(s.name, `A (${lane},${reg}) is not one run of a row`);
      }
    }
  }
}

/** For each selector, the lanes' nibbles cover the M x chunks metadata exactly once. */
function validateMeta(s: SparseMmaShape): void {
  const { meta } = s;
  if (meta.group !== groupOf(s.aType) || meta.kept * 2 !== meta.group) fail(s.name, "chunking");
  if (meta.chunks * meta.group !== s.k) fail(s.name, `${meta.chunks} chunks do not span k`);
  if (meta.selectors.length * meta.lanesPerGroup !== 4) fail(s.name, "selectors vs lanes");
  if (s.m * meta.chunks !== 8 * (WARP / 4) * meta.lanesPerGroup) {
    fail(s.name, "metadata does not fill the supplying lanes' registers");
  }
  for (const sel of meta.selectors) {
    const seen = new Uint8Array(s.m * meta.chunks);
    for (let lane = 0; lane < WARP; lane++) {
      const t = lane & 3;
      const supplies = Math.floor(t / meta.lanesPerGroup) === sel;
      for (let n = 0; n < 8; n++) {
        const rc = meta.coord(lane, sel, n);
        if ((rc !== undefined) !== supplies) fail(s.name, `selector ${sel}: lane ${lane}`);
        if (rc === undefined) continue;
        const [r, c] = rc;
        if (!(r >= 0 && r < s.m && c >= 0 && c < meta.chunks)) {
          fail(s.name, `metadata (${lane},${sel},${n}) -> (${r},${c}) outside`);
        }
        // The metadata of a chunk sits in the group of lanes that holds its row's A.
        if ((r & 7) !== lane >> 2) fail(s.name, `metadata of row ${r} in lane ${lane}`);
        if (seen[r * meta.chunks + c]) fail(s.name, `metadata (${r},${c}) covered twice`);
        seen[r * meta.chunks + c] = 1;
      }
    }
    if (seen.includes(0)) fail(s.name, `selector ${sel}: metadata not covered`);
  }
  if (!Object.isFrozen(meta) || !Object.isFrozen(meta.selectors)) fail(s.name, "not frozen");
}

/**
 * Checks every row of `shapes` (default: {@link SPARSE_MMA_TABLE}): the mnemonics (plain
 * and ordered_metadata) agree with the row's fields and are legal sparse types for sm_80;
 * the compressed A map covers M x K/2 exactly once with whole chunks a register; B and C/D
 * cover K x N and M x N; for every legal selector the metadata nibbles cover M x chunks
 * exactly once and sit in the lanes of their rows; names are unique; everything is frozen.
 * Throws an Error describing the first problem. Runs once at module load.
 *
 * @param shapes The rows to check.
 * @example
 * ```ts
 * import { throws } from "node:assert/strict";
 * import { SPARSE_MMA_TABLE, validateSparseMmaTable } from "./mma_sparse.ts";
 * validateSparseMmaTable();
 * const bad = Object.freeze([{ ...SPARSE_MMA_TABLE[0]!, k: 64 }]);
 * throws(() => validateSparseMmaTable(bad));
 * ```
 */
export function validateSparseMmaTable(
  shapes: readonly SparseMmaShape[] = SPARSE_MMA_TABLE,
): void {
  const names = new Set<string>();
  for (const s of shapes) {
    if (s.sparse !== true) fail(s.name, "not marked sparse");
    if (s.name !== sparseName(s)) fail(s.name, `name should be ${sparseName(s)}`);
    if (names.has(s.name)) fail(s.name, "duplicate name");
    names.add(s.name);
    validateMnemonic(s, s.ptx, false);
    validateMnemonic(s, s.ptxOrdered, true);
    validateTypes(s);
    if (s.regBits !== 32) fail(s.name, `bad regBits ${s.regBits}`);
    if (s.a.operand !== "a" || s.b.operand !== "b" || s.c.operand !== "c") {
      fail(s.name, "fragment operands mislabeled");
    }
    if (s.a.dtype !== s.aType || s.b.dtype !== s.bType || s.c.dtype !== s.cType) {
      fail(s.name, "fragment dtypes do not match row types");
    }
    validateCompressedA(s);
    validateFragmentMap(s.name, s.b, s.k, s.n);
    validateFragmentMap(s.name, s.c, s.m, s.n);
    validateMeta(s);
    for (const x of [s, s.a, s.b, s.c]) if (!Object.isFrozen(x)) fail(s.name, "not frozen");
  }
  if (!Object.isFrozen(shapes)) throw new Error("sparse mma table: table array is not frozen");
}

validateSparseMmaTable();

// ---------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------

const BY_NAME: ReadonlyMap<string, SparseMmaShape> = new Map(
  SPARSE_MMA_TABLE.map((s) => [s.name, s]),
);

/**
 * The sparse row of a name ("sp.m16n8k32.f16.f32"), or undefined.
 *
 * @param name The row's name.
 * @returns The row.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { sparseMmaByName } from "./mma_sparse.ts";
 * equal(sparseMmaByName("sp.m16n8k64.s8.s32")?.meta.lanesPerGroup, 4);
 * equal(sparseMmaByName("m16n8k16.f16.f32"), undefined);
 * ```
 */
export function sparseMmaByName(name: string): SparseMmaShape | undefined {
  return BY_NAME.get(name);
}

/**
 * Whether an MMA row is a sparse one (`mma.sp`, with its metadata map).
 *
 * @param s A row of either table.
 * @returns True for a {@link SparseMmaShape}.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { isSparseShape, SPARSE_MMA_TABLE } from "./mma_sparse.ts";
 * import { MMA_SHAPES } from "./mma_table.ts";
 * equal(isSparseShape(SPARSE_MMA_TABLE[0]!), true);
 * equal(isSparseShape(MMA_SHAPES[0]!), false);
 * ```
 */
export function isSparseShape(s: MmaShape): s is SparseMmaShape {
  return (s as Partial<SparseMmaShape>).sparse === true;
}

/**
 * The sparse row for exact operand and accumulator types and the dense instruction shape
 * (K before compression), or undefined when sm_80 has no such `mma.sp`.
 *
 * @param aType A's element type.
 * @param bType B's element type.
 * @param cType The accumulator type.
 * @param m M (16).
 * @param n N (8).
 * @param k K of the dense tile.
 * @returns The row.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { findSparseMma } from "./mma_sparse.ts";
 * equal(findSparseMma("bf16", "bf16", "f32", 16, 8, 32)?.name, "sp.m16n8k32.bf16.f32");
 * equal(findSparseMma("bf16", "bf16", "f16", 16, 8, 32), undefined);
 * ```
 */
export function findSparseMma(
  aType: MmaDtype,
  bType: MmaDtype,
  cType: MmaDtype,
  m: number,
  n: number,
  k: number,
): SparseMmaShape | undefined {
  return SPARSE_MMA_TABLE.find((s) =>
    s.aType === aType && s.bType === bType && s.cType === cType && s.m === m && s.n === n &&
    s.k === k
  );
}

// ---------------------------------------------------------------------------------------------
// Metadata packets
// ---------------------------------------------------------------------------------------------

/** One 16-bit half of a lane's packet word: which canonical half it is. */
export interface MetaHalf {
  /** The row, relative to the lane's groupID g: g (0) or g + 8 (8). */
  readonly row: 0 | 8;
  /** The 16-bit half (0..3) of that row's two canonical words in the packet (4 groups each). */
  readonly half: number;
}

/**
 * The metadata *packet* of a sparse row: 32 words, one a lane, that give every lane its
 * metadata register for `steps` consecutive k-steps, k-step q read with selector q. It
 * covers 16 rows of A and 16 groups along K (two canonical words of each row,
 * numerics/sparse.ts), so one `ld.shared.b32` a tile row serves `steps` MMAs and the
 * selector picks which lanes' words the instruction reads: under selector q the lanes
 * t in [q * lanesPerGroup, (q + 1) * lanesPerGroup) of each group of four supply it
 * (the ISA's rule, {@link SparseMetaMap.coord}). The two rows of a 16-row block that a
 * lane's word draws on are always g and g + 8, so a thread that reads those two rows'
 * words builds the packet words of lanes 4g .. 4g + 3.
 */
export interface MetaPacket {
  /** k-steps one packet serves: `4 / lanesPerGroup`. */
  readonly steps: number;
  /** Dense K one packet spans: `steps * k`, 16 groups. */
  readonly k: number;
  /** By t = lane & 3, the canonical halves of the word's bits 0-15 and 16-31. */
  readonly halves: readonly (readonly [MetaHalf, MetaHalf])[];
}

/**
 * The metadata packet of a sparse row, derived from its metadata map and checked: each
 * 16-bit half of a lane's word must be four consecutive groups of one row (row g or
 * g + 8) starting at a multiple of four, and depend on t = lane & 3 only. The two rows of
 * a type give the same packet (checked at module load).
 *
 * @param s A sparse row.
 * @returns The packet.
 * @throws {Error} If the map breaks the packet's shape.
 * @example
 * ```ts
 * import { deepEqual, equal } from "node:assert/strict";
 * import { metaPacket, sparseMmaByName } from "./mma_sparse.ts";
 * const p = metaPacket(sparseMmaByName("sp.m16n8k32.f16.f32")!);
 * equal(p.steps, 2); // selector 0: lanes t = 0, 1; selector 1: t = 2, 3
 * deepEqual(p.halves[3], [{ row: 0, half: 3 }, { row: 8, half: 3 }]);
 * ```
 */
export function metaPacket(s: SparseMmaShape): MetaPacket {
  let p = PACKETS.get(s);
  if (p === undefined) PACKETS.set(s, p = derivePacket(s));
  return p;
}

/** Each row's packet, derived once. */
const PACKETS = new WeakMap<SparseMmaShape, MetaPacket>();

function derivePacket(s: SparseMmaShape): MetaPacket {
  const mm = s.meta;
  const steps = 4 / mm.lanesPerGroup;
  if (steps * mm.chunks !== 16) fail(s.name, `a packet of ${steps * mm.chunks} groups, not 16`);
  const halfAt = (lane: number, x: number): MetaHalf => {
    const q = Math.floor((lane & 3) / mm.lanesPerGroup);
    const [r0, c0] = mm.coord(lane, q, 4 * x)!;
    const group0 = q * mm.chunks + c0;
    for (let n = 1; n < 4; n++) {
      const [r, c] = mm.coord(lane, q, 4 * x + n)!;
      if (r !== r0 || q * mm.chunks + c !== group0 + n) fail(s.name, "a packet half is no run");
    }
    const row = r0 - (lane >> 2);
    if ((row !== 0 && row !== 8) || group0 % 4 !== 0) fail(s.name, "a packet half is misplaced");
    return Object.freeze({ row: row as 0 | 8, half: group0 / 4 });
  };
  const halves = [0, 1, 2, 3].map((t) => Object.freeze([halfAt(t, 0), halfAt(t, 1)] as const));
  for (let l = 0; l < WARP; l++) {
    for (const x of [0, 1]) {
      const h = halfAt(l, x);
      const want = halves[l & 3]![x]!;
      if (h.row !== want.row || h.half !== want.half) fail(s.name, "a packet depends on groupID");
    }
  }
  return Object.freeze({ steps, k: steps * s.k, halves: Object.freeze(halves) });
}

// The two rows of a type share one packet layout (halves and K span), so that a kernel's
// metadata tile does not depend on which of them it runs.
for (const s of SPARSE_MMA_TABLE) {
  const p = metaPacket(s);
  const first = SPARSE_MMA_TABLE.find((o) => o.aType === s.aType)!;
  const q = metaPacket(first);
  if (q.k !== p.k || JSON.stringify(q.halves) !== JSON.stringify(p.halves)) {
    fail(s.name, `its metadata packet differs from ${first.name}'s`);
  }
}
