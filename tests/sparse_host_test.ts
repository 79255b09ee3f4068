/**
 * The host side of structured-sparse A (numerics/sparse.ts, issue 21):
 * round trips for every sparse type, the metadata bits against hand-written
 * words, pruning, reported violations, refused shapes, and seeded property
 * tests. Independent checks here recompute nibbles and kept values from the
 * dense matrix by their own loops, not through the module's helpers.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  checkSparsePattern,
  compressSparse,
  decompressSparse,
  pruneSparse,
  randomSparse,
  SparsePatternError,
} from "../numerics/sparse_compress.ts";
import {
  SPARSE_DTYPES,
  type SparseDtype,
  sparseGroup,
  sparseMetaBytes,
  sparseMetaPosition,
  sparseMetaWordsPerRow,
  sparseValueBytes,
} from "../numerics/sparse.ts";
import { Rng } from "../numerics/random.ts";
import { decodeTensor, encodeTensor } from "../harness/device_tensor.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";

/** Elements of K per group, written out here (the ISA's table), not taken from the module. */
const GROUP: Record<SparseDtype, number> = {
  f16: 4,
  bf16: 4,
  s8: 4,
  u8: 4,
  f32: 2,
  tf32: 2,
  s4: 8,
  u4: 8,
};

/** `values` as `dtype` stores them (through the repository's encoder). */
function asStored(values: ArrayLike<number>, dtype: SparseDtype): number[] {
  return [...decodeTensor(encodeTensor(values, dtype), dtype, values.length)];
}

/** A random value of `dtype`, never 0 or ±1 as stored. */
function draw(rng: Rng, dtype: SparseDtype): number {
  const info = DTYPE_INFO[dtype];
  for (;;) {
    const v = info.float
      ? (rng.next() < 0.5 ? -1 : 1) * (0.01 + rng.next() * 100)
      : info.signed
      ? rng.int(-(2 ** (info.bits - 1)), 2 ** (info.bits - 1) - 1)
      : rng.int(0, 2 ** info.bits - 1);
    const s = asStored([v], dtype)[0]!;
    if (s !== 0 && Math.abs(s) !== 1) return v;
  }
}

/**
 * A dense matrix with the pattern where each group has a random number of
 * nonzero units (0 up to what it keeps), so the zero-filling rule is used.
 */
function sparseWithGaps(
  rng: Rng,
  dtype: SparseDtype,
  rows: number,
  cols: number,
): number[] {
  const group = GROUP[dtype];
  const unit = dtype === "s4" || dtype === "u4" ? 2 : 1;
  const keep = dtype === "f32" || dtype === "tf32" ? 1 : 2;
  const out = new Array<number>(rows * cols).fill(0);
  for (let base = 0; base < out.length; base += group) {
    const units = group / unit;
    const n = rng.int(0, keep);
    const chosen = new Set<number>();
    while (chosen.size < n) chosen.add(rng.int(0, units - 1));
    for (const u of chosen) {
      for (let e = 0; e < unit; e++) {
        // In a kept pair, sometimes one of the two is zero.
        out[base + u * unit + e] = unit === 2 && rng.next() < 0.2 && e === 1 ? 0 : draw(rng, dtype);
      }
    }
  }
  return out;
}

/**
 * The nibble of every group, recomputed from the dense matrix by the rule the
 * module documents (nonzero units, then the lowest zero units; tf32 as 0b0100
 * / 0b1110), laid out row by row, 8 a word, padded with 0b0100.
 */
function expectedMeta(
  dense: ArrayLike<number>,
  dtype: SparseDtype,
  rows: number,
  cols: number,
): Uint32Array {
  const stored = asStored(dense, dtype);
  const group = GROUP[dtype];
  const pairs = dtype === "s4" || dtype === "u4";
  const groups = cols / group;
  const wpr = Math.ceil(groups / 8);
  const words = new Uint32Array(rows * wpr);
  for (let r = 0; r < rows; r++) {
    for (let slot = 0; slot < wpr * 8; slot++) {
      let nib = 0b0100;
      if (slot < groups) {
        const g = stored.slice(r * cols + slot * group, r * cols + (slot + 1) * group);
        if (dtype === "f32" || dtype === "tf32") {
          nib = g[1] !== 0 ? 0b1110 : 0b0100;
        } else {
          const nz: boolean[] = pairs
            ? [0, 1, 2, 3].map((p) => g[2 * p] !== 0 || g[2 * p + 1] !== 0)
            : g.map((v) => v !== 0);
          const idx = [0, 1, 2, 3].filter((u) => nz[u]);
          for (let u = 0; idx.length < 2; u++) if (!nz[u]) idx.push(u);
          idx.sort((a, b) => a - b);
          nib = idx[0]! | (idx[1]! << 2);
        }
      }
      words[r * wpr + (slot >> 3)]! |= nib << (4 * (slot & 7));
    }
  }
  return words;
}

/** The kept values recomputed from the dense matrix and its expected metadata. */
function expectedKept(
  dense: ArrayLike<number>,
  dtype: SparseDtype,
  rows: number,
  cols: number,
  meta: Uint32Array,
): number[] {
  const group = GROUP[dtype];
  const wpr = Math.ceil(cols / group / 8);
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    for (let q = 0; q < cols / group; q++) {
      const nib = (meta[r * wpr + (q >> 3)]! >>> (4 * (q & 7))) & 15;
      const base = r * cols + q * group;
      if (dtype === "f32" || dtype === "tf32") out.push(dense[base + (nib === 0b1110 ? 1 : 0)]!);
      else if (dtype === "s4" || dtype === "u4") {
        for (const p of [nib & 3, nib >> 2]) {
          out.push(dense[base + 2 * p]!, dense[base + 2 * p + 1]!);
        }
      } else out.push(dense[base + (nib & 3)]!, dense[base + (nib >> 2)]!);
    }
  }
  return out;
}

Deno.test("sparse: the groups are the ISA's (2:4; 1:2 for f32/tf32; 4:8 in pairs for s4/u4)", () => {
  for (const t of SPARSE_DTYPES) {
    const g = sparseGroup(t);
    assert.equal(g.elements, GROUP[t], t);
    // Every type keeps half of K.
    assert.equal(g.keptUnits * g.unit * 2, g.elements, t);
  }
  for (const bad of ["f64", "s32", "b1", "f8"]) {
    assert.throws(() => sparseGroup(bad), RangeError, bad);
  }
});

Deno.test("sparse: hand-written metadata words and kept values", () => {
  // f16, 1x8: kept (0, 3) = 0b1100, (1, 2) = 0b1001; six padding nibbles 0b0100.
  const f16 = compressSparse([1.5, 0, 0, -2, 0, 3, 4, 0], "f16", 1, 8);
  assert.deepEqual([...f16.meta], [0x4444449c]);
  assert.deepEqual(asStoredBytes(f16.values, "f16", 4), [1.5, -2, 3, 4]);

  // f16, 1x32 (8 groups, one full word, no padding): (0,1) (0,2) (0,3) (1,2) (1,3) (2,3) (0,3) (1,2).
  const row: number[] = [];
  const pairs = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3], [0, 3], [1, 2]];
  let v = 2;
  for (const [a, b] of pairs) {
    const g = [0, 0, 0, 0];
    g[a!] = v++;
    g[b!] = -(v++);
    row.push(...g);
  }
  const full = compressSparse(row, "f16", 1, 32);
  // Nibbles low to high: 4, 8, c, 9, d, e, c, 9.
  assert.equal(full.meta[0], 0x9ced9c84);

  // bf16 with fewer nonzeros: all zero -> (0,1); one at 3 -> (0,3); one at 0 -> (0,1); one at 2 -> (0,2).
  const few = compressSparse([0, 0, 0, 0, 0, 0, 0, 7, 5, 0, 0, 0, 0, 0, -3, 0], "bf16", 1, 16);
  assert.equal(few.meta[0], 0x444484c4);
  assert.deepEqual(asStoredBytes(few.values, "bf16", 8), [0, 0, 0, 7, 5, 0, 0, -3]);

  // s8, two rows of 4: row 0 keeps (2,3), row 1 keeps (0,2); each row its own word.
  const s8 = compressSparse([0, 0, -128, 127, 9, 0, -9, 0], "s8", 2, 4);
  assert.deepEqual([...s8.meta], [0x4444444e, 0x44444448]);
  assert.deepEqual([...s8.values], [0x80, 0x7f, 9, 0xf7]);

  // tf32, 1x4: element 1 of the first pair (0b1110), element 0 of the second (0b0100).
  const tf32 = compressSparse([0, 2.5, -1.25, 0], "tf32", 1, 4);
  assert.equal(tf32.meta[0], 0x4444444e);
  assert.deepEqual([...new Float32Array(tf32.values.buffer)], [2.5, -1.25]);
  // An all-zero pair keeps element 0: 0b0100 in the second nibble as well.
  assert.equal(compressSparse([0, 3, 0, 0], "f32", 1, 4).meta[0], 0x4444444e);

  // s4, 1x8: pairs 1 = (3, -2) and 3 = (5, 0) kept: 0b1101; values packed low nibble first.
  const s4 = compressSparse([0, 0, 3, -2, 0, 0, 5, 0], "s4", 1, 8);
  assert.equal(s4.meta[0], 0x4444444d);
  assert.deepEqual([...s4.values], [0xe3, 0x05]);

  // u4, 1x16: group 0 keeps pairs (0, 2), group 1 only pair 1 nonzero -> (0, 1).
  const u4 = compressSparse([2, 3, 0, 0, 4, 5, 0, 0, 0, 0, 15, 0, 0, 0, 0, 0], "u4", 1, 16);
  assert.equal(u4.meta[0], 0x44444448);
  assert.deepEqual([...u4.values], [0x32, 0x54, 0x00, 0x0f]);
});

/** Decoded values of `n` stored elements. */
function asStoredBytes(bytes: Uint8Array, dtype: SparseDtype, n: number): number[] {
  return [...decodeTensor(bytes, dtype, n)];
}

Deno.test("sparse: round trip for every type on random matrices with the pattern", () => {
  for (const [i, t] of SPARSE_DTYPES.entries()) {
    const g = GROUP[t];
    // 8 groups a row (one whole word), 11 (a padded second word), and a batch.
    for (const [rows, groups, batch] of [[5, 8, 1], [3, 11, 1], [2, 9, 3]] as const) {
      const cols = groups * g;
      const dense = randomSparse(t, rows, cols, { seed: 100 + i, batch });
      const c = compressSparse(dense, t, rows, cols, { batch });
      assert.equal(c.values.byteLength, sparseValueBytes(rows, cols, t, batch), t);
      assert.equal(c.meta.byteLength, sparseMetaBytes(rows, cols, t, batch), t);
      assert.equal(c.values.byteLength * 8, (batch * rows * cols * DTYPE_INFO[t].bits) / 2, t);
      assert.equal(c.pruned, 0);
      assert.equal(c.metaLayout, "canonical");
      const back = decompressSparse(c, t, rows, cols, { batch });
      assert.deepEqual([...back], asStored(dense, t), `${t} ${rows}x${cols}x${batch}`);
      // The metadata and the kept values, recomputed independently.
      const meta = expectedMeta(dense, t, batch * rows, cols);
      assert.deepEqual([...c.meta], [...meta], t);
      const kept = expectedKept(dense, t, batch * rows, cols, meta);
      assert.deepEqual(asStoredBytes(c.values, t, kept.length), asStored(kept, t), t);
      // Exactly the nonzeros were kept (every group of randomSparse is full).
      assert.deepEqual(
        asStoredBytes(c.values, t, kept.length),
        asStored(dense, t).filter((x) => x !== 0),
        t,
      );
    }
  }
});

Deno.test("sparse: pruning keeps the largest magnitudes and leaves the pattern", () => {
  const rng = new Rng(21);
  for (const t of SPARSE_DTYPES) {
    const rows = 6;
    const cols = 4 * GROUP[t];
    const dense = Array.from({ length: rows * cols }, () => draw(rng, t));
    // Some ties: copy a magnitude within a group now and then.
    for (let i = 1; i < dense.length; i += 7) {
      const x = dense[i - 1]!;
      const info = DTYPE_INFO[t];
      const negatable = info.float || (info.signed && x > -(2 ** (info.bits - 1)));
      dense[i] = negatable ? -x : x;
    }
    assert.ok(!checkSparsePattern(dense, t, rows, cols).ok, t);
    const p = pruneSparse(dense, t, rows, cols);
    assert.ok(checkSparsePattern(p.values, t, rows, cols).ok, t);
    const stored = asStored(dense, t);
    const unit = t === "s4" || t === "u4" ? 2 : 1;
    const keep = t === "f32" || t === "tf32" ? 1 : 2;
    let dropped = 0;
    for (let base = 0; base < dense.length; base += GROUP[t]) {
      const units = GROUP[t] / unit;
      const mag = (u: number) => {
        let m = 0;
        for (let e = 0; e < unit; e++) m += Math.abs(stored[base + u * unit + e]!);
        return m;
      };
      const kept: number[] = [];
      const gone: number[] = [];
      for (let u = 0; u < units; u++) {
        const z = p.values[base + u * unit] === 0 &&
          (unit === 1 || p.values[base + u * unit + 1] === 0);
        (z ? gone : kept).push(u);
        if (!z) {
          for (let e = 0; e < unit; e++) {
            assert.equal(
              p.values[base + u * unit + e],
              dense[base + u * unit + e],
              "kept as given",
            );
          }
        }
      }
      assert.equal(kept.length, keep, `${t} group at ${base}`);
      for (const k of kept) {
        for (const d of gone) {
          assert.ok(mag(k) > mag(d) || (mag(k) === mag(d) && k < d), `${t} ${base}: ${k} vs ${d}`);
        }
      }
      for (const d of gone) {
        for (let e = 0; e < unit; e++) if (stored[base + d * unit + e] !== 0) dropped++;
      }
    }
    assert.equal(p.zeroed, dropped, t);
    // compressSparse with prune: the same matrix, and the count reported.
    const c = compressSparse(dense, t, rows, cols, { prune: true });
    assert.equal(c.pruned, dropped, t);
    assert.deepEqual([...decompressSparse(c, t, rows, cols)], asStored(p.values, t), t);
  }
  // A tie of three: the two lower indices stay.
  assert.deepEqual([...pruneSparse([-6, 2, 6, 6], "s8", 1, 4).values], [-6, 0, 6, 0]);
  // A matrix that has the pattern is left alone.
  const ok = randomSparse("f16", 3, 16, { seed: 5 });
  const same = pruneSparse(ok, "f16", 3, 16);
  assert.equal(same.zeroed, 0);
  assert.deepEqual([...same.values], [...ok]);
});

Deno.test("sparse: violations are reported with their positions and count", () => {
  const rows = 4;
  const cols = 16;
  const dense = randomSparse("f16", rows, cols, { seed: 9 });
  // Break row 1 group 2 (3 nonzeros) and row 3 groups 0 and 3 (4 nonzeros).
  dense.set([2.5, -3.5, 4.5, 0], 1 * cols + 8);
  dense.set([2.5, -3.5, 4.5, 5.5], 3 * cols + 0);
  dense.set([2.5, -3.5, 4.5, 5.5], 3 * cols + 12);
  const r = checkSparsePattern(dense, "f16", rows, cols);
  assert.equal(r.ok, false);
  assert.equal(r.count, 3);
  assert.deepEqual(r.first, [
    { batch: 0, row: 1, group: 2, col: 8, nonzeros: 3 },
    { batch: 0, row: 3, group: 0, col: 0, nonzeros: 4 },
    { batch: 0, row: 3, group: 3, col: 12, nonzeros: 4 },
  ]);
  assert.equal(checkSparsePattern(dense, "f16", rows, cols, { limit: 1 }).first.length, 1);
  assert.throws(() => compressSparse(dense, "f16", rows, cols), (e: unknown) => {
    assert.ok(e instanceof SparsePatternError);
    assert.equal(e.name, "SparsePatternError");
    assert.equal(e.count, 3);
    assert.deepEqual(e.violations, r.first);
    assert.match(e.message, /3 groups/);
    assert.match(e.message, /row 1 group 2 \(cols 8\.\.11\): 3 nonzeros/);
    assert.match(e.message, /2:4/);
    return true;
  });
  // The batch index of a batched matrix.
  const b = randomSparse("s8", 2, 8, { seed: 3, batch: 3 });
  b.set([5, 6, 7, 0], 2 * 16 + 8 + 4); // batch 2, row 1, group 1
  const rb = checkSparsePattern(b, "s8", 2, 8, { batch: 3 });
  assert.deepEqual(rb.first, [{ batch: 2, row: 1, group: 1, col: 4, nonzeros: 3 }]);
  // f16 values that round to zero are zeros; NaN is not.
  assert.ok(checkSparsePattern([1e-9, 2, -3, 1e-9], "f16", 1, 4).ok);
  assert.equal(checkSparsePattern([NaN, 2, -3, 0], "f16", 1, 4).count, 1);
  // tf32: both of a pair nonzero.
  assert.deepEqual(checkSparsePattern([0, 2, 3, 4], "tf32", 1, 4).first, [
    { batch: 0, row: 0, group: 1, col: 2, nonzeros: 2 },
  ]);
  // s4 counts pairs: 4 nonzeros in 2 pairs pass, 3 nonzeros in 3 pairs do not.
  assert.ok(checkSparsePattern([3, 4, 0, 0, 0, 0, -5, 6], "s4", 1, 8).ok);
  const s4 = checkSparsePattern([3, 0, 0, 4, 0, 0, -5, 0], "s4", 1, 8);
  assert.deepEqual(s4.first, [{ batch: 0, row: 0, group: 0, col: 0, nonzeros: 3 }]);
  assert.throws(
    () => compressSparse([3, 0, 0, 4, 0, 0, -5, 0], "s4", 1, 8),
    /3 nonzero pairs.*|4:8 in pairs/,
  );
});

Deno.test("sparse: bad K, types, lengths and values are refused", () => {
  assert.throws(() => compressSparse(new Array(6).fill(0), "f16", 1, 6), /multiple of 4/);
  assert.throws(() => compressSparse(new Array(12).fill(0), "s4", 1, 12), /multiple of 8/);
  assert.throws(() => compressSparse(new Array(3).fill(0), "tf32", 1, 3), /multiple of 2/);
  assert.throws(() => sparseMetaBytes(4, 10, "u8"), RangeError);
  assert.throws(() => sparseValueBytes(4, 4, "u4"), RangeError);
  assert.throws(() => compressSparse([2, 0, 0, 3], "f64", 1, 4), /cannot be a sparse operand/);
  assert.throws(() => compressSparse([2, 0, 0, 3], "b1", 1, 4), RangeError);
  assert.throws(() => compressSparse([2, 0, 0, 3], "f16", 1, 8), /4 values given/);
  assert.throws(() => compressSparse([2, 0, 0, 3], "f16", 2, 4), /8 expected/);
  assert.throws(() => compressSparse([2.5, 0, 0, 3], "s8", 1, 4), /not a s8/);
  assert.throws(() => compressSparse([16, 0, 0, 3, 0, 0, 0, 0], "u4", 1, 8), /row 0, col 0/);
  // With prune a dropped out-of-range value is still refused.
  assert.throws(() => compressSparse([2, 3, 300, 4], "u8", 1, 4, { prune: true }), /col 2/);
  assert.throws(() => compressSparse([], "f16", -1, 4), /non-negative/);
  // Empty matrices are fine.
  const e = compressSparse([], "f16", 0, 8);
  assert.equal(e.values.byteLength + e.meta.byteLength, 0);
});

Deno.test("sparse: decompress refuses indices the ISA leaves undefined and short buffers", () => {
  const values = new Uint8Array(4);
  for (const bad of [0b0000, 0b0101, 0b1010, 0b1111, 0b0001, 0b0110]) {
    assert.throws(
      () => decompressSparse({ values, meta: new Uint32Array([bad]) }, "f16", 1, 4),
      /not a meaningful f16 index/,
      bad.toString(2),
    );
  }
  for (const bad of [0b1000, 0b0000, 0b1101]) {
    assert.throws(
      () => decompressSparse({ values, meta: new Uint32Array([bad]) }, "tf32", 1, 2),
      /not a meaningful tf32 index/,
    );
  }
  assert.throws(
    () => decompressSparse({ values, meta: new Uint32Array(0) }, "f16", 1, 4),
    /1 expected/,
  );
  assert.throws(() => decompressSparse({ values, meta: new Uint32Array(1) }, "f16", 1, 8));
});

Deno.test("sparse: sizes and positions", () => {
  assert.equal(sparseMetaWordsPerRow(32, "f16"), 1);
  assert.equal(sparseMetaWordsPerRow(36, "f16"), 2);
  assert.equal(sparseMetaWordsPerRow(16, "f32"), 1);
  assert.equal(sparseMetaWordsPerRow(18, "f32"), 2);
  assert.equal(sparseMetaWordsPerRow(64, "u4"), 1);
  assert.equal(sparseMetaWordsPerRow(72, "u4"), 2);
  assert.equal(sparseMetaBytes(3, 72, "u4", 2), 2 * 3 * 2 * 4);
  assert.equal(sparseValueBytes(3, 72, "u4", 2), (2 * 3 * 36) / 2);
  assert.equal(sparseValueBytes(3, 72, "tf32"), 3 * 36 * 4);
  assert.equal(sparseValueBytes(3, 72, "bf16"), 3 * 36 * 2);
  assert.equal(sparseValueBytes(3, 72, "s8"), 3 * 36);
  // sparseMetaPosition finds each group's nibble in a compressed matrix.
  const dense = randomSparse("s8", 3, 44, { seed: 4 });
  const c = compressSparse(dense, "s8", 3, 44);
  const meta = expectedMeta(dense, "s8", 3, 44);
  for (let r = 0; r < 3; r++) {
    for (let q = 0; q < 11; q++) {
      const { word, shift } = sparseMetaPosition(44, "s8", r, q);
      const nib = (c.meta[word]! >>> shift) & 15;
      const g = dense.slice(r * 44 + q * 4, r * 44 + q * 4 + 4);
      const nz = [...g.keys()].filter((i) => g[i] !== 0);
      assert.equal(nib, nz[0]! | (nz[1]! << 2), `row ${r} group ${q}`);
      assert.equal(nib, (meta[word]! >>> shift) & 15);
    }
  }
});

Deno.test("sparse: seeded property tests (gaps, batches, idempotence, valid nibbles)", () => {
  const rng = new Rng(0x5a17);
  for (let trial = 0; trial < 300; trial++) {
    const t = SPARSE_DTYPES[rng.int(0, SPARSE_DTYPES.length - 1)]!;
    const rows = rng.int(1, 5);
    const batch = rng.int(1, 3);
    const cols = GROUP[t] * rng.int(1, 20);
    const dense = sparseWithGaps(rng, t, batch * rows, cols);
    const what = `trial ${trial}: ${t} ${batch}x${rows}x${cols}`;
    assert.ok(checkSparsePattern(dense, t, rows, cols, { batch }).ok, what);
    const c = compressSparse(dense, t, rows, cols, { batch });
    assert.deepEqual([...c.meta], [...expectedMeta(dense, t, batch * rows, cols)], what);
    const back = decompressSparse(c, t, rows, cols, { batch });
    assert.deepEqual([...back], asStored(dense, t), what);
    // Compressing the expanded matrix gives the same bytes.
    const again = compressSparse(back, t, rows, cols, { batch });
    assert.deepEqual(again.values, c.values, what);
    assert.deepEqual(again.meta, c.meta, what);
    // Batched is laid out as batch * rows rows.
    const flat = compressSparse(dense, t, batch * rows, cols);
    assert.deepEqual(flat.values, c.values, what);
    assert.deepEqual(flat.meta, c.meta, what);
    // Every nibble (padding included) is one the ISA defines, with distinct indices.
    for (const w of c.meta) {
      for (let s = 0; s < 32; s += 4) {
        const n = (w >>> s) & 15;
        if (t === "f32" || t === "tf32") assert.ok(n === 0b0100 || n === 0b1110, what);
        else assert.ok((n & 3) < n >> 2, `${what}: nibble ${n}`);
      }
    }
    // Pruning a matrix with the pattern changes nothing.
    assert.equal(compressSparse(dense, t, rows, cols, { batch, prune: true }).pruned, 0, what);
  }
});
