/**
 * SM80 (Ampere) warp-level `mma.sync.aligned` shape table and per-lane fragment maps.
 *
 * Every row is one PTX `mma.sync.aligned.<shape>.row.col...` variant used by CUTLASS's
 * Ampere (sm_80) warp-level MMA atoms. Each row carries the fragment maps for its A, B and
 * C/D operands: for a lane, a register of that lane's fragment and an element packed inside
 * that register, the map gives the (row, col) of the operand tile it holds.
 *
 * Source of the layouts: PTX ISA, section "Warp Level Matrix Multiply-Accumulate
 * Instructions" -> "Matrix Fragments for mma.m*n*k*", in particular the subsections
 *   - "Matrix Fragments for mma.m8n8k4 with .f64 floating point type"
 *   - "Matrix Fragments for mma.m16n8k4" (.tf32)
 *   - "Matrix Fragments for mma.m16n8k8" (.f16 / .bf16 / .tf32)
 *   - "Matrix Fragments for mma.m16n8k16 with floating point type" (.f16 / .bf16)
 *   - "Matrix Fragments for mma.m16n8k16 with integer type" (.s8 / .u8)
 *   - "Matrix Fragments for mma.m16n8k32" (.s8 / .u8 / .s4 / .u4)
 *   - "Matrix Fragments for mma.m16n8k64" (.s4 / .u4)
 *   - "Matrix Fragments for mma.m16n8k128" and "... mma.m16n8k256" (.b1)
 * and, for `ldmatrix`, section "Warp-level matrix load instruction: ldmatrix".
 *
 * All those sections use the same two lane-derived quantities:
 *   groupID           = lane >> 2   (0..7)
 *   threadID_in_group = lane % 4    (0..3)
 * and number the fragment elements a_i / b_i / c_i "low to high": element i lives in
 * register floor(i / elemsPerReg), at packed position i % elemsPerReg, position 0 being the
 * least significant bits of the register (as for .f16x2, 4 x .s8, 8 x .s4, 32 x .b1).
 *
 * The element types and the fragment-map builders are in ir/mma_fragments.ts (every name
 * re-exported here). The table is validated at module load by {@link validateMmaTable} and
 * deep-frozen.
 *
 * @module
 */

import {
  fragA,
  fragB,
  fragC,
  type FragmentMap,
  MMA_DTYPE_BITS,
  type MmaBitOp,
  type MmaDtype,
  regBitsOf,
  WARP,
} from "./mma_fragments.ts";

export {
  type FragmentMap,
  MMA_DTYPE_BITS,
  type MmaBitOp,
  type MmaDtype,
  type MmaOperand,
  type MmaRegType,
} from "./mma_fragments.ts";

/** One SM80 `mma.sync.aligned` variant together with its fragment layouts. */
export interface MmaShape {
  /**
   * Unique row name: `<shape>.<atype>[.<btype> when different].<ctype>[.<bitop>]`,
   * e.g. "m16n8k16.f16.f32", "m16n8k32.s8.u8.s32", "m16n8k256.b1.s32.xor.popc".
   */
  readonly name: string;
  /** M extent of the instruction tile. */
  readonly m: number;
  /** N extent of the instruction tile. */
  readonly n: number;
  /** K extent of the instruction tile. */
  readonly k: number;
  /** Element type of A. */
  readonly aType: MmaDtype;
  /** Element type of B. */
  readonly bType: MmaDtype;
  /** Element type of the accumulators C and D (always equal in this table). */
  readonly cType: MmaDtype;
  /** Bit reduction for `.b1` rows; absent for every other row. */
  readonly op?: MmaBitOp;
  /** Whether the mnemonic carries `.satfinite` (all integer rows here do). */
  readonly satfinite: boolean;
  /** Fragment map of A (M x K). */
  readonly a: FragmentMap;
  /** Fragment map of B (K x N). */
  readonly b: FragmentMap;
  /** Fragment map of C and D (M x N). */
  readonly c: FragmentMap;
  /** Full PTX mnemonic, e.g. "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32". */
  readonly ptx: string;
  /** Register width of the instruction's operands: 64 for the f64 row, 32 otherwise. */
  readonly regBits: 32 | 64;
}

// ---------------------------------------------------------------------------------------------
// Table
// ---------------------------------------------------------------------------------------------

/** What a row is written as: the fields of {@link MmaShape} that the rest is derived from. */
type RowSpec = Pick<MmaShape, "m" | "n" | "k" | "aType" | "bType" | "cType" | "op" | "ptx">;

function rowName(s: RowSpec): string {
  const types = s.aType === s.bType ? s.aType : `${s.aType}.${s.bType}`;
  return `m${s.m}n${s.n}k${s.k}.${types}.${s.cType}${s.op === undefined ? "" : `.${s.op}`}`;
}

function buildRow(s: RowSpec): MmaShape {
  const { op, ...spec } = s;
  const base = {
    name: rowName(s),
    ...spec,
    satfinite: s.ptx.includes(".satfinite."),
    a: fragA(s.aType, s.m, s.k),
    b: fragB(s.bType, s.k, s.n),
    c: fragC(s.cType, s.m, s.n),
    regBits: regBitsOf(s.aType),
  };
  const row: MmaShape = op === undefined ? base : { ...base, op };
  return Object.freeze(row);
}

const P = "mma.sync.aligned.";

const ROW_SPECS: readonly RowSpec[] = [
  // --- f16 x f16 (PTX: "Matrix Fragments for mma.m16n8k16 with floating point type",
  //     "Matrix Fragments for mma.m16n8k8") ---
  {
    m: 16,
    n: 8,
    k: 16,
    aType: "f16",
    bType: "f16",
    cType: "f32",
    ptx: `${P}m16n8k16.row.col.f32.f16.f16.f32`,
  },
  {
    m: 16,
    n: 8,
    k: 16,
    aType: "f16",
    bType: "f16",
    cType: "f16",
    ptx: `${P}m16n8k16.row.col.f16.f16.f16.f16`,
  },
  {
    m: 16,
    n: 8,
    k: 8,
    aType: "f16",
    bType: "f16",
    cType: "f32",
    ptx: `${P}m16n8k8.row.col.f32.f16.f16.f32`,
  },
  {
    m: 16,
    n: 8,
    k: 8,
    aType: "f16",
    bType: "f16",
    cType: "f16",
    ptx: `${P}m16n8k8.row.col.f16.f16.f16.f16`,
  },
  // --- bf16 x bf16 -> f32 (same sections as f16) ---
  {
    m: 16,
    n: 8,
    k: 8,
    aType: "bf16",
    bType: "bf16",
    cType: "f32",
    ptx: `${P}m16n8k8.row.col.f32.bf16.bf16.f32`,
  },
  {
    m: 16,
    n: 8,
    k: 16,
    aType: "bf16",
    bType: "bf16",
    cType: "f32",
    ptx: `${P}m16n8k16.row.col.f32.bf16.bf16.f32`,
  },
  // --- tf32 x tf32 -> f32 ("Matrix Fragments for mma.m16n8k4", "... mma.m16n8k8") ---
  {
    m: 16,
    n: 8,
    k: 4,
    aType: "tf32",
    bType: "tf32",
    cType: "f32",
    ptx: `${P}m16n8k4.row.col.f32.tf32.tf32.f32`,
  },
  {
    m: 16,
    n: 8,
    k: 8,
    aType: "tf32",
    bType: "tf32",
    cType: "f32",
    ptx: `${P}m16n8k8.row.col.f32.tf32.tf32.f32`,
  },
  // --- f64 ("Matrix Fragments for mma.m8n8k4 with .f64 floating point type") ---
  {
    m: 8,
    n: 8,
    k: 4,
    aType: "f64",
    bType: "f64",
    cType: "f64",
    ptx: `${P}m8n8k4.row.col.f64.f64.f64.f64`,
  },
  // --- 8-bit integer, satfinite ("Matrix Fragments for mma.m16n8k16 with integer type",
  //     "Matrix Fragments for mma.m16n8k32") ---
  ...intRows(16, "s8", "u8"),
  ...intRows(32, "s8", "u8"),
  // --- 4-bit integer, satfinite ("Matrix Fragments for mma.m16n8k32", "... mma.m16n8k64") ---
  ...intRows(32, "s4", "u4"),
  ...intRows(64, "s4", "u4"),
  // --- single bit ("Matrix Fragments for mma.m16n8k128", "... mma.m16n8k256") ---
  ...b1Rows(128),
  ...b1Rows(256),
];

/** All four signedness combinations of one integer shape (`.satfinite`, s32 accumulate). */
function intRows(k: number, signed: MmaDtype, unsigned: MmaDtype): RowSpec[] {
  const out: RowSpec[] = [];
  for (const aType of [signed, unsigned]) {
    for (const bType of [signed, unsigned]) {
      out.push({
        m: 16,
        n: 8,
        k,
        aType,
        bType,
        cType: "s32",
        ptx: `${P}m16n8k${k}.row.col.satfinite.s32.${aType}.${bType}.s32`,
      });
    }
  }
  return out;
}

/** Both bit reductions of one `.b1` shape (s32 accumulate). */
function b1Rows(k: number): RowSpec[] {
  return (["and.popc", "xor.popc"] as const).map((op): RowSpec => ({
    m: 16,
    n: 8,
    k,
    aType: "b1",
    bType: "b1",
    cType: "s32",
    op,
    ptx: `${P}m16n8k${k}.row.col.s32.b1.b1.s32.${op}`,
  }));
}

/**
 * Every SM80 `mma.sync.aligned` variant the compiler may emit; frozen and validated.
 *
 * @example
 * ```ts
 * import { ok } from "node:assert/strict";
 * import { MMA_SHAPES } from "./mma_table.ts";
 * ok(MMA_SHAPES.some((s) => s.name === "m16n8k16.f16.f32"));
 * ```
 */
export const MMA_SHAPES: readonly MmaShape[] = Object.freeze(ROW_SPECS.map(buildRow));

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

const PTX_RE = new RegExp(
  "^mma\\.sync\\.aligned\\.m(\\d+)n(\\d+)k(\\d+)\\.row\\.col(\\.satfinite)?" +
    "\\.(\\w+)\\.(\\w+)\\.(\\w+)\\.(\\w+)(?:\\.(and\\.popc|xor\\.popc))?$",
);

const FLOAT_IN = new Set<MmaDtype>(["f16", "bf16", "tf32", "f64"]);
const INT_IN = new Set<MmaDtype>(["s8", "u8", "s4", "u4"]);

function fail(name: string, msg: string): never {
  throw new Error(`mma table: ${name}: ${msg}`);
}

/**
 * Checks that fragment map `f` of row `name` covers its `rows` x `cols` operand tile exactly
 * once over 32 lanes x regs x elemsPerReg, with register packing that matches the element
 * width. Throws an Error naming the row and the first problem. Used by {@link
 * validateMmaTable} and by the sparse table's validation (ir/mma_sparse.ts).
 *
 * @example
 * ```ts
 * import { throws } from "node:assert/strict";
 * import { MMA_SHAPES, validateFragmentMap } from "./mma_table.ts";
 * const s = MMA_SHAPES[0]!;
 * validateFragmentMap(s.name, s.a, s.m, s.k);
 * throws(() => validateFragmentMap(s.name, s.a, s.m, 2 * s.k));
 * ```
 */
export function validateFragmentMap(
  name: string,
  f: FragmentMap,
  rows: number,
  cols: number,
): void {
  validateMap(name, f, rows, cols);
}

function validateMap(name: string, f: FragmentMap, rows: number, cols: number): void {
  const where = `${name} operand ${f.operand}`;
  if (f.rows !== rows || f.cols !== cols) {
    fail(where, `tile ${f.rows}x${f.cols}, expected ${rows}x${cols}`);
  }
  if (!Number.isInteger(f.regs) || f.regs < 1) fail(where, `bad regs ${f.regs}`);
  if (f.elemsPerReg * MMA_DTYPE_BITS[f.dtype] !== f.regBits) {
    fail(where, `elemsPerReg ${f.elemsPerReg} x ${f.dtype} does not fill ${f.regBits} bits`);
  }
  // f32, s32 and f64 elements sit one a register of their own type; the others
  // (packed, tf32) in untyped 32-bit registers.
  const typed = f.dtype === "f32" || f.dtype === "s32" || f.dtype === "f64";
  if (typed ? f.elemsPerReg !== 1 || f.regType !== f.dtype : f.regType !== "b32") {
    fail(where, `register type ${f.regType} cannot hold ${f.elemsPerReg} x ${f.dtype}`);
  }
  if (f.regs * f.elemsPerReg * WARP !== rows * cols) {
    fail(where, `${WARP} lanes x ${f.regs} regs x ${f.elemsPerReg} elems != ${rows * cols}`);
  }
  const seen = new Uint8Array(rows * cols);
  for (let lane = 0; lane < WARP; lane++) {
    for (let reg = 0; reg < f.regs; reg++) {
      for (let elem = 0; elem < f.elemsPerReg; elem++) {
        const [r, c] = f.coord(lane, reg, elem);
        const inside = Number.isInteger(r) && Number.isInteger(c) && r >= 0 && r < rows &&
          c >= 0 && c < cols;
        if (!inside) {
          fail(where, `(${lane},${reg},${elem}) -> (${r},${c}) outside ${rows}x${cols}`);
        }
        const idx = r * cols + c;
        if (seen[idx] !== 0) fail(where, `(${r},${c}) covered twice`);
        seen[idx] = 1;
      }
    }
  }
  // Exactly-once follows from the count check plus no duplicates, but check explicitly.
  const missing = seen.indexOf(0);
  if (missing >= 0) {
    fail(where, `(${Math.floor(missing / cols)},${missing % cols}) not covered`);
  }
}

function validateRow(s: MmaShape): void {
  const nm = s.name;
  const mt = PTX_RE.exec(s.ptx);
  if (mt === null) fail(nm, `malformed ptx mnemonic "${s.ptx}"`);
  const [, pm, pn, pk, psat, pd, pa, pb, pc, pop] = mt;
  if (Number(pm) !== s.m || Number(pn) !== s.n || Number(pk) !== s.k) {
    fail(nm, `ptx shape m${pm}n${pn}k${pk} != m${s.m}n${s.n}k${s.k}`);
  }
  if (pa !== s.aType || pb !== s.bType) fail(nm, `ptx operand types ${pa}.${pb} mismatch`);
  if (pd !== s.cType || pc !== s.cType) fail(nm, `ptx accumulator types ${pd}/${pc} mismatch`);
  if ((psat !== undefined) !== s.satfinite) fail(nm, "ptx .satfinite flag mismatch");
  if (pop !== s.op) fail(nm, `ptx bit op ${String(pop)} != ${String(s.op)}`);
  if (s.name !== rowName(s)) fail(nm, `name should be ${rowName(s)}`);

  // Type legality for sm_80 (PTX "mma" instruction description).
  if (FLOAT_IN.has(s.aType)) {
    if (s.aType !== s.bType) fail(nm, "floating-point A and B types must match");
    const okC = s.aType === "f16"
      ? s.cType === "f16" || s.cType === "f32"
      : s.cType === (s.aType === "f64" ? "f64" : "f32");
    if (!okC) fail(nm, `accumulator ${s.cType} not allowed for ${s.aType}`);
    if (s.satfinite || s.op !== undefined) fail(nm, "float mma takes no satfinite / bit op");
  } else if (INT_IN.has(s.aType)) {
    if (!INT_IN.has(s.bType) || MMA_DTYPE_BITS[s.aType] !== MMA_DTYPE_BITS[s.bType]) {
      fail(nm, "integer A and B must have the same width");
    }
    if (s.cType !== "s32") fail(nm, "integer mma accumulates in s32");
    if (s.op !== undefined) fail(nm, "integer mma takes no bit op");
  } else if (s.aType === "b1") {
    if (s.bType !== "b1" || s.cType !== "s32") fail(nm, "b1 mma is b1 x b1 -> s32");
    if (s.op === undefined) fail(nm, "b1 mma needs .and.popc or .xor.popc");
    if (s.satfinite) fail(nm, "b1 mma takes no satfinite");
  } else {
    fail(nm, `unsupported A type ${s.aType}`);
  }
  if (s.regBits !== regBitsOf(s.aType)) fail(nm, `bad regBits ${s.regBits}`);
  if (s.a.dtype !== s.aType || s.b.dtype !== s.bType || s.c.dtype !== s.cType) {
    fail(nm, "fragment dtypes do not match row types");
  }
  if (s.a.operand !== "a" || s.b.operand !== "b" || s.c.operand !== "c") {
    fail(nm, "fragment operands mislabeled");
  }
  validateMap(nm, s.a, s.m, s.k);
  validateMap(nm, s.b, s.k, s.n);
  validateMap(nm, s.c, s.m, s.n);
  if (!Object.isFrozen(s) || !Object.isFrozen(s.a) || !Object.isFrozen(s.b)) {
    fail(nm, "row is not frozen");
  }
  if (!Object.isFrozen(s.c)) fail(nm, "row is not frozen");
}

/**
 * Checks every row of `shapes` (default: {@link MMA_SHAPES}): each fragment map covers its
 * operand tile (A: MxK, B: KxN, C: MxN) exactly once over 32 lanes x regs x elemsPerReg,
 * register packing matches the element width, the PTX mnemonic agrees with the row's
 * fields and is legal for sm_80, names are unique, and lookup keys are unique.
 * Throws an Error describing the first problem found. Runs once at module load.
 */
export function validateMmaTable(shapes: readonly MmaShape[] = MMA_SHAPES): void {
  const names = new Set<string>();
  const keys = new Set<string>();
  for (const s of shapes) {
    validateRow(s);
    if (names.has(s.name)) fail(s.name, "duplicate name");
    names.add(s.name);
    const key = lookupKey(s);
    if (keys.has(key)) fail(s.name, "duplicate lookup key");
    keys.add(key);
  }
  if (!Object.isFrozen(shapes)) throw new Error("mma table: table array is not frozen");
}

// ---------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------

/** What a row is found by: its operand types, its shape and its bit op. */
type MmaKey =
  & Pick<MmaShape, "aType" | "bType" | "cType" | "m" | "n" | "k">
  & { readonly op?: MmaBitOp | undefined };

function lookupKey(s: MmaKey): string {
  return `${s.aType}/${s.bType}/${s.cType}/${s.m}/${s.n}/${s.k}/${s.op ?? ""}`;
}

validateMmaTable();

const BY_KEY: ReadonlyMap<string, MmaShape> = new Map(
  MMA_SHAPES.map((s) => [lookupKey(s), s]),
);

/**
 * Finds the table row for exact operand types, instruction shape and bit op.
 *
 * `op` must be given for `b1` rows and omitted for all others (an omitted `op` only matches
 * rows without a bit op). Returns undefined when SM80 has no such `mma` in this table.
 */
export function findMma(
  aType: MmaDtype,
  bType: MmaDtype,
  cType: MmaDtype,
  m: number,
  n: number,
  k: number,
  op?: MmaBitOp,
): MmaShape | undefined {
  return BY_KEY.get(lookupKey({ aType, bType, cType, m, n, k, op }));
}

/**
 * All rows with the given operand / accumulator types and bit op, sorted by ascending K
 * (then M, N). As in {@link findMma}, an omitted `op` only matches rows without a bit op,
 * so `b1` callers must pass "and.popc" or "xor.popc". The returned array is frozen.
 */
export function mmaShapesFor(
  aType: MmaDtype,
  bType: MmaDtype,
  cType: MmaDtype,
  op?: MmaBitOp,
): readonly MmaShape[] {
  return Object.freeze(
    MMA_SHAPES.filter((s) =>
      s.aType === aType && s.bType === bType && s.cType === cType && s.op === op
    ).sort((x, y) => x.k - y.k || x.m - y.m || x.n - y.n),
  );
}

// ---------------------------------------------------------------------------------------------
// ldmatrix
// ---------------------------------------------------------------------------------------------

/** Number of 8x8 b16 matrices loaded by one `ldmatrix.sync.aligned.m8n8.x{1,2,4}`. */
export type LdmatrixNum = 1 | 2 | 4;

/**
 * Address side of `ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16` (PTX ISA
 * "Warp-level matrix load instruction: ldmatrix"): lane i supplies the shared-memory address
 * of row i % 8 of matrix i / 8. Only lanes 0..8*num-1 supply addresses; for the other lanes
 * (x1: 8..31, x2: 16..31) this returns undefined. Each addressed row is 8 contiguous b16
 * elements (16 bytes).
 */
export function ldmatrixAddrRow(
  lane: number,
  num: LdmatrixNum,
): { readonly matrix: number; readonly row: number } | undefined {
  if (!Number.isInteger(lane) || lane < 0 || lane >= WARP) {
    throw new RangeError(`ldmatrix: lane ${lane} out of range 0..31`);
  }
  if (num !== 1 && num !== 2 && num !== 4) throw new RangeError(`ldmatrix: bad num ${num}`);
  if (lane >= 8 * num) return undefined;
  return Object.freeze({ matrix: lane >> 3, row: lane & 7 });
}

/**
 * Data side of `ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16` (PTX ISA
 * "Warp-level matrix load instruction: ldmatrix").
 *
 * Destination register `matrixIndex` of every lane receives two b16 elements of matrix
 * `matrixIndex` (element 0 in the low half). Returns the [row, col] of the 8x8 matrix *as
 * stored in memory* (row = the row whose address a lane supplied, col = b16 index within
 * that 16-byte row):
 *   - without .trans: lane l gets row l / 4, cols 2 * (l % 4) + elem;
 *   - with .trans:    lane l gets row 2 * (l % 4) + elem, col l / 4.
 * Without .trans the register layout equals the mma fragment layout of an 8x8 tile of
 * 16-bit elements (groupID, 2 * threadID_in_group + elem).
 */
export function ldmatrixCoord(
  lane: number,
  matrixIndex: number,
  elem: number,
  trans: boolean,
): readonly [number, number] {
  if (!Number.isInteger(lane) || lane < 0 || lane >= WARP) {
    throw new RangeError(`ldmatrix: lane ${lane} out of range 0..31`);
  }
  if (!Number.isInteger(matrixIndex) || matrixIndex < 0 || matrixIndex >= 4) {
    throw new RangeError(`ldmatrix: matrix index ${matrixIndex} out of range 0..3`);
  }
  if (elem !== 0 && elem !== 1) throw new RangeError(`ldmatrix: elem ${elem} not 0 or 1`);
  const g = lane >> 2;
  const pair = 2 * (lane & 3) + elem;
  return trans ? [pair, g] : [g, pair];
}
