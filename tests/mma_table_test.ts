import assert from "node:assert/strict";
import {
  findMma,
  type FragmentMap,
  ldmatrixAddrRow,
  ldmatrixCoord,
  MMA_DTYPE_BITS,
  MMA_SHAPES,
  type MmaShape,
  mmaShapesFor,
  validateMmaTable,
} from "../ir/mma_table.ts";
import {
  findSparseMma,
  keptColumns,
  metaNibble,
  SPARSE_MMA_TABLE,
  sparseMmaByName,
  type SparseMmaShape,
  validateSparseMmaTable,
} from "../ir/mma_sparse.ts";
import { sparseProbeKernel } from "../harness/mma_probe_sparse.ts";
import { printPtx } from "../backends/ptx/print.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";

function mma(name: string): MmaShape {
  const s = MMA_SHAPES.find((x) => x.name === name);
  assert.ok(s, `missing row ${name}`);
  return s;
}

function at(f: FragmentMap, lane: number, reg: number, elem: number): [number, number] {
  const [r, c] = f.coord(lane, reg, elem);
  return [r, c];
}

Deno.test("validateMmaTable accepts the shipped table", () => {
  validateMmaTable();
  validateMmaTable(MMA_SHAPES);
});

Deno.test("table has the 29 expected rows", () => {
  const names = MMA_SHAPES.map((s) => s.name).sort();
  const expected = [
    "m16n8k16.f16.f32",
    "m16n8k16.f16.f16",
    "m16n8k8.f16.f32",
    "m16n8k8.f16.f16",
    "m16n8k8.bf16.f32",
    "m16n8k16.bf16.f32",
    "m16n8k4.tf32.f32",
    "m16n8k8.tf32.f32",
    "m8n8k4.f64.f64",
  ];
  for (const k of [16, 32]) {
    for (const a of ["s8", "u8"]) {
      for (const b of ["s8", "u8"]) expected.push(`m16n8k${k}.${a === b ? a : `${a}.${b}`}.s32`);
    }
  }
  for (const k of [32, 64]) {
    for (const a of ["s4", "u4"]) {
      for (const b of ["s4", "u4"]) expected.push(`m16n8k${k}.${a === b ? a : `${a}.${b}`}.s32`);
    }
  }
  for (const k of [128, 256]) {
    for (const op of ["and.popc", "xor.popc"]) expected.push(`m16n8k${k}.b1.s32.${op}`);
  }
  assert.deepEqual(names, expected.sort());
});

Deno.test("every fragment covers its tile exactly once (bijection)", () => {
  for (const s of MMA_SHAPES) {
    const ops: [FragmentMap, number, number][] = [
      [s.a, s.m, s.k],
      [s.b, s.k, s.n],
      [s.c, s.m, s.n],
    ];
    for (const [f, rows, cols] of ops) {
      assert.equal(f.rows, rows, `${s.name} ${f.operand} rows`);
      assert.equal(f.cols, cols, `${s.name} ${f.operand} cols`);
      assert.equal(32 * f.regs * f.elemsPerReg, rows * cols, `${s.name} ${f.operand} count`);
      assert.equal(f.elemsPerReg * MMA_DTYPE_BITS[f.dtype], f.regBits);
      const owner = new Map<number, string>();
      for (let lane = 0; lane < 32; lane++) {
        for (let reg = 0; reg < f.regs; reg++) {
          for (let elem = 0; elem < f.elemsPerReg; elem++) {
            const [r, c] = f.coord(lane, reg, elem);
            assert.ok(r >= 0 && r < rows && c >= 0 && c < cols, `${s.name} out of tile`);
            const key = r * cols + c;
            assert.ok(!owner.has(key), `${s.name} ${f.operand} (${r},${c}) twice`);
            owner.set(key, `${lane}/${reg}/${elem}`);
          }
        }
      }
      assert.equal(owner.size, rows * cols, `${s.name} ${f.operand} coverage`);
    }
  }
});

Deno.test("register packing per dtype", () => {
  const epr = (name: string) => {
    const s = mma(name);
    return [s.a.elemsPerReg, s.b.elemsPerReg, s.c.elemsPerReg, s.regBits];
  };
  assert.deepEqual(epr("m16n8k16.f16.f32"), [2, 2, 1, 32]);
  assert.deepEqual(epr("m16n8k16.f16.f16"), [2, 2, 2, 32]);
  assert.deepEqual(epr("m16n8k16.bf16.f32"), [2, 2, 1, 32]);
  assert.deepEqual(epr("m16n8k8.tf32.f32"), [1, 1, 1, 32]);
  assert.deepEqual(epr("m8n8k4.f64.f64"), [1, 1, 1, 64]);
  assert.deepEqual(epr("m16n8k32.s8.u8.s32"), [4, 4, 1, 32]);
  assert.deepEqual(epr("m16n8k64.u4.s32"), [8, 8, 1, 32]);
  assert.deepEqual(epr("m16n8k256.b1.s32.xor.popc"), [32, 32, 1, 32]);
  const regs = (name: string) => {
    const s = mma(name);
    return [s.a.regs, s.b.regs, s.c.regs];
  };
  assert.deepEqual(regs("m16n8k16.f16.f32"), [4, 2, 4]);
  assert.deepEqual(regs("m16n8k16.f16.f16"), [4, 2, 2]);
  assert.deepEqual(regs("m16n8k8.f16.f32"), [2, 1, 4]);
  assert.deepEqual(regs("m16n8k4.tf32.f32"), [2, 1, 4]);
  assert.deepEqual(regs("m16n8k8.tf32.f32"), [4, 2, 4]);
  assert.deepEqual(regs("m8n8k4.f64.f64"), [1, 1, 2]);
  assert.deepEqual(regs("m16n8k16.s8.s32"), [2, 1, 4]);
  assert.deepEqual(regs("m16n8k32.s8.s32"), [4, 2, 4]);
  assert.deepEqual(regs("m16n8k32.s4.s32"), [2, 1, 4]);
  assert.deepEqual(regs("m16n8k64.s4.s32"), [4, 2, 4]);
  assert.deepEqual(regs("m16n8k128.b1.s32.and.popc"), [2, 1, 4]);
  assert.deepEqual(regs("m16n8k256.b1.s32.and.popc"), [4, 2, 4]);
});

Deno.test("spot checks: m16n8k16 f16 (PTX figures for m16n8k16 floating point)", () => {
  const s = mma("m16n8k16.f16.f32");
  // lane 5: groupID 1, threadID_in_group 1
  assert.deepEqual(at(s.a, 5, 0, 0), [1, 2]);
  assert.deepEqual(at(s.a, 5, 0, 1), [1, 3]);
  assert.deepEqual(at(s.a, 5, 1, 0), [9, 2]);
  assert.deepEqual(at(s.a, 5, 2, 0), [1, 10]);
  assert.deepEqual(at(s.a, 5, 3, 1), [9, 11]);
  assert.deepEqual(at(s.a, 0, 0, 0), [0, 0]);
  assert.deepEqual(at(s.a, 31, 3, 1), [15, 15]);
  assert.deepEqual(at(s.b, 5, 0, 0), [2, 1]);
  assert.deepEqual(at(s.b, 5, 1, 1), [11, 1]);
  assert.deepEqual(at(s.b, 30, 1, 0), [12, 7]);
  assert.deepEqual(at(s.c, 5, 0, 0), [1, 2]);
  assert.deepEqual(at(s.c, 5, 1, 0), [1, 3]);
  assert.deepEqual(at(s.c, 5, 2, 0), [9, 2]);
  assert.deepEqual(at(s.c, 5, 3, 0), [9, 3]);
  assert.deepEqual(at(s.c, 31, 3, 0), [15, 7]);
  const h = mma("m16n8k16.f16.f16");
  assert.deepEqual(at(h.c, 5, 0, 0), [1, 2]);
  assert.deepEqual(at(h.c, 5, 0, 1), [1, 3]);
  assert.deepEqual(at(h.c, 5, 1, 0), [9, 2]);
  assert.deepEqual(at(h.c, 5, 1, 1), [9, 3]);
  // bf16 shares the f16 layout.
  const bf = mma("m16n8k16.bf16.f32");
  for (let lane = 0; lane < 32; lane++) {
    for (let reg = 0; reg < 4; reg++) {
      for (let e = 0; e < 2; e++) assert.deepEqual(at(bf.a, lane, reg, e), at(s.a, lane, reg, e));
    }
  }
});

Deno.test("spot checks: m16n8k8 f16", () => {
  const s = mma("m16n8k8.f16.f32");
  assert.deepEqual(at(s.a, 5, 0, 0), [1, 2]);
  assert.deepEqual(at(s.a, 5, 1, 1), [9, 3]);
  assert.deepEqual(at(s.b, 5, 0, 1), [3, 1]);
  assert.deepEqual(at(s.b, 31, 0, 1), [7, 7]);
  assert.deepEqual(at(s.c, 5, 2, 0), [9, 2]);
});

Deno.test("spot checks: tf32 m16n8k4 and m16n8k8", () => {
  const k4 = mma("m16n8k4.tf32.f32");
  // lane 14: groupID 3, threadID_in_group 2
  assert.deepEqual(at(k4.a, 14, 0, 0), [3, 2]);
  assert.deepEqual(at(k4.a, 14, 1, 0), [11, 2]);
  assert.deepEqual(at(k4.a, 5, 0, 0), [1, 1]);
  assert.deepEqual(at(k4.a, 5, 1, 0), [9, 1]);
  assert.deepEqual(at(k4.b, 14, 0, 0), [2, 3]);
  assert.deepEqual(at(k4.b, 5, 0, 0), [1, 1]);
  assert.deepEqual(at(k4.c, 14, 3, 0), [11, 5]);
  const k8 = mma("m16n8k8.tf32.f32");
  assert.deepEqual(at(k8.a, 14, 0, 0), [3, 2]);
  assert.deepEqual(at(k8.a, 14, 1, 0), [11, 2]);
  assert.deepEqual(at(k8.a, 14, 2, 0), [3, 6]);
  assert.deepEqual(at(k8.a, 14, 3, 0), [11, 6]);
  assert.deepEqual(at(k8.b, 14, 0, 0), [2, 3]);
  assert.deepEqual(at(k8.b, 14, 1, 0), [6, 3]);
});

Deno.test("spot checks: f64 m8n8k4", () => {
  const s = mma("m8n8k4.f64.f64");
  assert.equal(s.regBits, 64);
  assert.equal(s.a.regBits, 64);
  assert.equal(s.c.regBits, 64);
  assert.deepEqual(at(s.a, 14, 0, 0), [3, 2]);
  assert.deepEqual(at(s.a, 31, 0, 0), [7, 3]);
  assert.deepEqual(at(s.b, 14, 0, 0), [2, 3]);
  assert.deepEqual(at(s.c, 14, 0, 0), [3, 4]);
  assert.deepEqual(at(s.c, 14, 1, 0), [3, 5]);
  assert.deepEqual(at(s.c, 31, 1, 0), [7, 7]);
});

Deno.test("spot checks: s8/u8 m16n8k16 and m16n8k32", () => {
  const k16 = mma("m16n8k16.s8.s32");
  assert.deepEqual(at(k16.a, 31, 1, 3), [15, 15]);
  assert.deepEqual(at(k16.a, 6, 0, 2), [1, 10]);
  assert.deepEqual(at(k16.b, 31, 0, 3), [15, 7]);
  const k32 = mma("m16n8k32.u8.s8.s32");
  // lane 6: groupID 1, threadID_in_group 2
  assert.deepEqual(at(k32.a, 6, 0, 3), [1, 11]);
  assert.deepEqual(at(k32.a, 6, 1, 0), [9, 8]);
  assert.deepEqual(at(k32.a, 6, 2, 1), [1, 25]);
  assert.deepEqual(at(k32.a, 6, 3, 3), [9, 27]);
  assert.deepEqual(at(k32.b, 6, 0, 2), [10, 1]);
  assert.deepEqual(at(k32.b, 6, 1, 3), [27, 1]);
  assert.deepEqual(at(k32.c, 6, 1, 0), [1, 5]);
});

Deno.test("spot checks: s4/u4 m16n8k32 and m16n8k64", () => {
  const k32 = mma("m16n8k32.s4.u4.s32");
  assert.deepEqual(at(k32.a, 6, 0, 7), [1, 23]);
  assert.deepEqual(at(k32.a, 6, 1, 0), [9, 16]);
  assert.deepEqual(at(k32.b, 6, 0, 5), [21, 1]);
  const k64 = mma("m16n8k64.s4.s32");
  assert.deepEqual(at(k64.a, 6, 2, 7), [1, 55]);
  assert.deepEqual(at(k64.a, 6, 3, 0), [9, 48]);
  assert.deepEqual(at(k64.b, 6, 1, 5), [53, 1]);
  assert.deepEqual(at(k64.b, 31, 1, 7), [63, 7]);
});

Deno.test("spot checks: b1 m16n8k128 and m16n8k256", () => {
  const k128 = mma("m16n8k128.b1.s32.and.popc");
  assert.deepEqual(at(k128.a, 6, 1, 31), [9, 95]);
  assert.deepEqual(at(k128.b, 6, 0, 0), [64, 1]);
  const k256 = mma("m16n8k256.b1.s32.xor.popc");
  assert.deepEqual(at(k256.a, 6, 0, 0), [1, 64]);
  assert.deepEqual(at(k256.a, 6, 1, 31), [9, 95]);
  assert.deepEqual(at(k256.a, 6, 2, 5), [1, 197]);
  assert.deepEqual(at(k256.a, 6, 3, 31), [9, 223]);
  assert.deepEqual(at(k256.a, 31, 3, 31), [15, 255]);
  assert.deepEqual(at(k256.b, 31, 1, 31), [255, 7]);
  assert.deepEqual(at(k256.b, 6, 0, 0), [64, 1]);
  assert.deepEqual(at(k256.c, 6, 2, 0), [9, 4]);
});

/**
 * Independent restatement of the PTX ISA formulas in terms of the flat element index i
 * (a_i / b_i / c_i, i = reg * elemsPerReg + elem), compared against every table entry.
 */
Deno.test("maps agree with the flat-index PTX formulas", () => {
  type F = (g: number, t: number, i: number) => [number, number];
  const aFormula = (s: MmaShape): F => {
    const e = s.a.elemsPerReg;
    if (s.m === 8) return (g, t, i) => [g, t * e + i]; // m8n8k4 f64: single element
    if (e === 1) {
      // tf32: a0 (g,t) a1 (g+8,t) a2 (g,t+4) a3 (g+8,t+4)
      return (g, t, i) => [i % 2 === 0 ? g : g + 8, i < 2 ? t : t + 4];
    }
    // f16 k16: rows g for a0,a1 / a4,a5; g+8 otherwise; +8 cols from a4 on (PTX wording),
    // and the same pattern with e elements per register for 8/4/1-bit types.
    return (g, t, i) => {
      const upper = i % (2 * e) < e;
      return [upper ? g : g + 8, t * e + (i % e) + (i >= 2 * e ? 4 * e : 0)];
    };
  };
  const bFormula = (s: MmaShape): F => {
    const e = s.b.elemsPerReg;
    return (g, t, i) => [t * e + (i % e) + (i >= e ? 4 * e : 0), g];
  };
  const cFormula: F = (g, t, i) => [i < 2 ? g : g + 8, t * 2 + (i & 1)];
  for (const s of MMA_SHAPES) {
    const cases: [FragmentMap, F][] = [[s.a, aFormula(s)], [s.b, bFormula(s)], [s.c, cFormula]];
    for (const [f, formula] of cases) {
      for (let lane = 0; lane < 32; lane++) {
        for (let reg = 0; reg < f.regs; reg++) {
          for (let elem = 0; elem < f.elemsPerReg; elem++) {
            const i = reg * f.elemsPerReg + elem;
            assert.deepEqual(
              at(f, lane, reg, elem),
              formula(lane >> 2, lane % 4, i),
              `${s.name} ${f.operand} lane ${lane} i ${i}`,
            );
          }
        }
      }
    }
  }
});

Deno.test("ptx mnemonics", () => {
  assert.equal(mma("m16n8k16.f16.f32").ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
  assert.equal(mma("m16n8k8.f16.f16").ptx, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16");
  assert.equal(
    mma("m16n8k16.bf16.f32").ptx,
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
  );
  assert.equal(mma("m16n8k4.tf32.f32").ptx, "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32");
  assert.equal(mma("m8n8k4.f64.f64").ptx, "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64");
  assert.equal(
    mma("m16n8k32.s8.u8.s32").ptx,
    "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
  );
  assert.equal(
    mma("m16n8k64.u4.s32").ptx,
    "mma.sync.aligned.m16n8k64.row.col.satfinite.s32.u4.u4.s32",
  );
  assert.equal(
    mma("m16n8k256.b1.s32.and.popc").ptx,
    "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc",
  );
  for (const s of MMA_SHAPES) {
    const isInt = ["s8", "u8", "s4", "u4"].includes(s.aType);
    assert.equal(s.satfinite, isInt, s.name);
    assert.equal(s.op !== undefined, s.aType === "b1", s.name);
    assert.equal("op" in s, s.aType === "b1", `${s.name}: op key only on b1 rows`);
  }
});

Deno.test("findMma lookups", () => {
  assert.equal(findMma("f16", "f16", "f32", 16, 8, 16)?.name, "m16n8k16.f16.f32");
  assert.equal(findMma("f16", "f16", "f16", 16, 8, 8)?.name, "m16n8k8.f16.f16");
  assert.equal(findMma("bf16", "bf16", "f32", 16, 8, 8)?.name, "m16n8k8.bf16.f32");
  assert.equal(findMma("tf32", "tf32", "f32", 16, 8, 4)?.name, "m16n8k4.tf32.f32");
  assert.equal(findMma("f64", "f64", "f64", 8, 8, 4)?.name, "m8n8k4.f64.f64");
  assert.equal(findMma("u8", "s8", "s32", 16, 8, 32)?.name, "m16n8k32.u8.s8.s32");
  assert.equal(findMma("s4", "s4", "s32", 16, 8, 64)?.name, "m16n8k64.s4.s32");
  assert.equal(
    findMma("b1", "b1", "s32", 16, 8, 256, "xor.popc")?.name,
    "m16n8k256.b1.s32.xor.popc",
  );
  assert.equal(
    findMma("b1", "b1", "s32", 16, 8, 128, "and.popc")?.name,
    "m16n8k128.b1.s32.and.popc",
  );
  // Not in the table / not SM80.
  assert.equal(findMma("b1", "b1", "s32", 16, 8, 256), undefined);
  assert.equal(findMma("s8", "s8", "s32", 16, 8, 32, "and.popc"), undefined);
  assert.equal(findMma("bf16", "bf16", "bf16", 16, 8, 16), undefined);
  assert.equal(findMma("f16", "f16", "f32", 16, 8, 32), undefined);
  assert.equal(findMma("f64", "f64", "f64", 16, 8, 4), undefined);
  assert.equal(findMma("s8", "s4", "s32", 16, 8, 32), undefined);
  assert.equal(findMma("f16", "bf16", "f32", 16, 8, 16), undefined);
});

Deno.test("mmaShapesFor lists by ascending k", () => {
  const ks = (xs: readonly MmaShape[]) => xs.map((s) => s.k);
  assert.deepEqual(ks(mmaShapesFor("f16", "f16", "f32")), [8, 16]);
  assert.deepEqual(ks(mmaShapesFor("f16", "f16", "f16")), [8, 16]);
  assert.deepEqual(ks(mmaShapesFor("bf16", "bf16", "f32")), [8, 16]);
  assert.deepEqual(ks(mmaShapesFor("tf32", "tf32", "f32")), [4, 8]);
  assert.deepEqual(ks(mmaShapesFor("f64", "f64", "f64")), [4]);
  assert.deepEqual(ks(mmaShapesFor("s8", "u8", "s32")), [16, 32]);
  assert.deepEqual(ks(mmaShapesFor("u4", "u4", "s32")), [32, 64]);
  assert.deepEqual(ks(mmaShapesFor("b1", "b1", "s32", "and.popc")), [128, 256]);
  assert.deepEqual(ks(mmaShapesFor("b1", "b1", "s32", "xor.popc")), [128, 256]);
  assert.deepEqual(mmaShapesFor("b1", "b1", "s32"), []);
  assert.deepEqual(mmaShapesFor("bf16", "bf16", "f16"), []);
  assert.ok(Object.isFrozen(mmaShapesFor("f16", "f16", "f32")));
});

Deno.test("table is deeply frozen", () => {
  assert.ok(Object.isFrozen(MMA_SHAPES));
  assert.ok(Object.isFrozen(MMA_DTYPE_BITS));
  for (const s of MMA_SHAPES) {
    assert.ok(Object.isFrozen(s) && Object.isFrozen(s.a) && Object.isFrozen(s.b));
    assert.ok(Object.isFrozen(s.c));
  }
  const s = mma("m16n8k16.f16.f32");
  assert.throws(() => {
    (s as { k: number }).k = 32;
  }, TypeError);
  assert.throws(() => {
    (MMA_SHAPES as MmaShape[]).push(s);
  }, TypeError);
});

Deno.test("coord rejects out-of-range arguments", () => {
  const s = mma("m16n8k16.f16.f32");
  assert.throws(() => s.a.coord(32, 0, 0), RangeError);
  assert.throws(() => s.a.coord(-1, 0, 0), RangeError);
  assert.throws(() => s.a.coord(0, 4, 0), RangeError);
  assert.throws(() => s.a.coord(0, 0, 2), RangeError);
  assert.throws(() => s.c.coord(0, 0, 1), RangeError);
  assert.throws(() => s.a.coord(0.5, 0, 0), RangeError);
});

Deno.test("validateMmaTable rejects broken tables", () => {
  const good = mma("m16n8k16.f16.f32");
  const freezeRow = (r: MmaShape) => Object.freeze([Object.freeze(r)]);
  // Two lanes mapping to the same element.
  const dupA: FragmentMap = Object.freeze({
    ...good.a,
    coord: (lane: number, reg: number, elem: number) => good.a.coord(lane & ~1, reg, elem),
  });
  assert.throws(() => validateMmaTable(freezeRow({ ...good, a: dupA })), /covered twice/);
  // Wrong register count.
  const badRegs: FragmentMap = Object.freeze({ ...good.b, regs: 3 });
  assert.throws(() => validateMmaTable(freezeRow({ ...good, b: badRegs })), /lanes/);
  // A register type that cannot hold the operand: packed f16 pairs in an f32
  // register, f32 accumulators in b32.
  const f32A: FragmentMap = Object.freeze({ ...good.a, regType: "f32" });
  assert.throws(() => validateMmaTable(freezeRow({ ...good, a: f32A })), /register type f32/);
  const b32C: FragmentMap = Object.freeze({ ...good.c, regType: "b32" });
  assert.throws(() => validateMmaTable(freezeRow({ ...good, c: b32C })), /register type b32/);
  // Mnemonic inconsistent with the row's types.
  assert.throws(
    () =>
      validateMmaTable(
        freezeRow({ ...good, ptx: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" }),
      ),
    /operand types/,
  );
  assert.throws(
    () =>
      validateMmaTable(
        freezeRow({ ...good, ptx: "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32" }),
      ),
    /shape/,
  );
  // Duplicate rows.
  assert.throws(() => validateMmaTable(Object.freeze([good, good])), /duplicate/);
  // Unfrozen array.
  assert.throws(() => validateMmaTable([good]), /frozen/);
});

Deno.test("ldmatrix address lanes", () => {
  assert.deepEqual(ldmatrixAddrRow(0, 1), { matrix: 0, row: 0 });
  assert.deepEqual(ldmatrixAddrRow(7, 1), { matrix: 0, row: 7 });
  assert.equal(ldmatrixAddrRow(8, 1), undefined);
  assert.deepEqual(ldmatrixAddrRow(13, 2), { matrix: 1, row: 5 });
  assert.equal(ldmatrixAddrRow(16, 2), undefined);
  assert.deepEqual(ldmatrixAddrRow(29, 4), { matrix: 3, row: 5 });
  assert.throws(() => ldmatrixAddrRow(32, 4), RangeError);
});

Deno.test("ldmatrix data coordinates", () => {
  assert.deepEqual([...ldmatrixCoord(0, 0, 0, false)], [0, 0]);
  assert.deepEqual([...ldmatrixCoord(5, 2, 1, false)], [1, 3]);
  assert.deepEqual([...ldmatrixCoord(31, 3, 1, false)], [7, 7]);
  assert.deepEqual([...ldmatrixCoord(5, 2, 1, true)], [3, 1]);
  assert.deepEqual([...ldmatrixCoord(30, 0, 0, true)], [4, 7]);
  assert.throws(() => ldmatrixCoord(0, 4, 0, false), RangeError);
  assert.throws(() => ldmatrixCoord(0, 0, 2, false), RangeError);
  // Each matrix is covered exactly once across 32 lanes x 2 elements, with and without .trans.
  for (const trans of [false, true]) {
    const seen = new Set<number>();
    for (let lane = 0; lane < 32; lane++) {
      for (let e = 0; e < 2; e++) {
        const [r, c] = ldmatrixCoord(lane, 1, e, trans);
        seen.add(r * 8 + c);
      }
    }
    assert.equal(seen.size, 64);
  }
});

Deno.test("ldmatrix.x4 feeds the m16n8k16 A fragment; ldmatrix.x2.trans feeds B", () => {
  const s = mma("m16n8k16.f16.f32");
  // A (16x16, row-major in smem): lane i addresses A row (i % 16), column block 8 * (i >> 4),
  // so matrix j = i >> 3 covers rows 8 * (j & 1).., cols 8 * (j >> 1)..
  const aRowOf = (j: number, r: number) => {
    for (let lane = 0; lane < 32; lane++) {
      const addr = ldmatrixAddrRow(lane, 4);
      if (addr !== undefined && addr.matrix === j && addr.row === r) {
        return [lane % 16, 8 * (lane >> 4)] as const;
      }
    }
    throw new Error("no lane");
  };
  for (let lane = 0; lane < 32; lane++) {
    for (let j = 0; j < 4; j++) {
      for (let e = 0; e < 2; e++) {
        const [r, c] = ldmatrixCoord(lane, j, e, false);
        const [row, col0] = aRowOf(j, r);
        assert.deepEqual([row, col0 + c], at(s.a, lane, j, e), `A lane ${lane} reg ${j}`);
      }
    }
  }
  // B (16x8, stored K-major: each smem row is one k with 8 n values): lanes 0..15 address
  // k rows 0..15, and .trans hands each lane (k, n) pairs along k.
  for (let lane = 0; lane < 32; lane++) {
    for (let j = 0; j < 2; j++) {
      for (let e = 0; e < 2; e++) {
        const [r, c] = ldmatrixCoord(lane, j, e, true);
        const addr = ldmatrixAddrRow(8 * j + r, 2);
        assert.ok(addr !== undefined && addr.matrix === j);
        const kRow = 8 * j + r;
        assert.deepEqual([kRow, c], at(s.b, lane, j, e), `B lane ${lane} reg ${j}`);
      }
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Sparse rows (ir/mma_sparse.ts)
// ---------------------------------------------------------------------------------------------

function sp(name: string): SparseMmaShape {
  const s = sparseMmaByName(name);
  assert.ok(s, `missing sparse row ${name}`);
  return s;
}

Deno.test("sparse table: the 24 rows of the PTX ISA for sm_80, names and mnemonics", () => {
  validateSparseMmaTable();
  assert.equal(SPARSE_MMA_TABLE.length, 24);
  const names = SPARSE_MMA_TABLE.map((s) => s.name);
  for (
    const n of [
      "sp.m16n8k16.f16.f32",
      "sp.m16n8k16.f16.f16",
      "sp.m16n8k32.f16.f16",
      "sp.m16n8k32.bf16.f32",
      "sp.m16n8k8.tf32.f32",
      "sp.m16n8k16.tf32.f32",
      "sp.m16n8k32.u8.s8.s32",
      "sp.m16n8k64.s8.s32",
      "sp.m16n8k64.u4.s32",
      "sp.m16n8k128.s4.u4.s32",
    ]
  ) assert.ok(names.includes(n), n);
  assert.ok(!names.includes("sp.m16n8k32.bf16.f16"));
  assert.equal(
    sp("sp.m16n8k64.s8.u8.s32").ptx,
    "mma.sp.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.u8.s32",
  );
  assert.equal(
    sp("sp.m16n8k8.tf32.f32").ptxOrdered,
    "mma.sp::ordered_metadata.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
  );
  // No name clashes with the dense table.
  for (const s of SPARSE_MMA_TABLE) assert.ok(!MMA_SHAPES.some((d) => d.name === s.name));
  assert.equal(findSparseMma("f16", "f16", "f16", 16, 8, 32)?.name, "sp.m16n8k32.f16.f16");
  assert.equal(findSparseMma("f16", "f16", "f32", 16, 8, 8), undefined);
});

Deno.test("sparse table: compressed A is the dense map of M x K/2; B and C/D as dense", () => {
  for (const s of SPARSE_MMA_TABLE) {
    assert.equal(s.a.rows, 16);
    assert.equal(s.a.cols, s.k / 2, s.name);
    // The ISA's register counts of A: f16 k16 2, k32 4; tf32 k8 2, k16 4; s8 k32 2, k64 4;
    // s4 k64 2, k128 4.
    const small = s.k === 16 && s.aType !== "tf32" || s.k === 8 || s.k === 32 && INT8(s) ||
      s.k === 64 && INT4(s);
    assert.equal(s.a.regs, small ? 2 : 4, s.name);
    const dense = findMma(s.aType, s.bType, s.cType, 16, 8, s.k);
    if (dense !== undefined) {
      for (let l = 0; l < 32; l++) {
        for (let r = 0; r < s.b.regs; r++) {
          for (let e = 0; e < s.b.elemsPerReg; e++) {
            assert.deepEqual(at(s.b, l, r, e), at(dense.b, l, r, e));
          }
        }
      }
    }
  }
  // Sparse m16n8k16 f16: a0,a1 row g, two kept of cols 4t..4t+3; a2,a3 row g + 8.
  const f = sp("sp.m16n8k16.f16.f32").a;
  assert.deepEqual(at(f, 6, 0, 1), [1, 5]); // g 1, t 2: kept index 5 = chunk 2
  assert.deepEqual(at(f, 6, 1, 0), [9, 4]);
  // Sparse m16n8k128 s4: a0..a7 row g from cols 16t.., a16.. cols + 64 (kept: + 32).
  const q = sp("sp.m16n8k128.s4.s32").a;
  assert.deepEqual(at(q, 7, 2, 3), [1, 3 * 8 + 3 + 32]);
});

function INT8(s: SparseMmaShape): boolean {
  return s.aType === "s8" || s.aType === "u8";
}
function INT4(s: SparseMmaShape): boolean {
  return s.aType === "s4" || s.aType === "u4";
}

Deno.test("sparse table: metadata lanes per selector (the ISA's 'Sparse matrix storage')", () => {
  const sel = (n: string) => sp(n).meta.selectors;
  assert.deepEqual(sel("sp.m16n8k16.f16.f32"), [0, 1, 2, 3]);
  assert.deepEqual(sel("sp.m16n8k32.bf16.f32"), [0, 1]);
  assert.deepEqual(sel("sp.m16n8k8.tf32.f32"), [0, 1, 2, 3]);
  assert.deepEqual(sel("sp.m16n8k16.tf32.f32"), [0, 1]);
  assert.deepEqual(sel("sp.m16n8k32.s8.s32"), [0, 1]);
  assert.deepEqual(sel("sp.m16n8k64.u8.s32"), [0]);
  assert.deepEqual(sel("sp.m16n8k64.s4.s32"), [0, 1]);
  assert.deepEqual(sel("sp.m16n8k128.u4.s32"), [0]);
  // m16n8k16 f16, selector 2: lane 4g + 2; bits 0-15 row g, 16-31 row g + 8.
  const a = sp("sp.m16n8k16.f16.f32").meta;
  assert.deepEqual(a.coord(4 * 3 + 2, 2, 1), [3, 1]);
  assert.deepEqual(a.coord(4 * 3 + 2, 2, 5), [11, 1]);
  assert.equal(a.coord(4 * 3 + 1, 2, 5), undefined);
  // m16n8k32 f16, selector 1: lanes 4g + 2 (chunks 0-3) and 4g + 3 (chunks 4-7), rows g | g + 8.
  const b = sp("sp.m16n8k32.f16.f32").meta;
  assert.deepEqual(b.coord(4 * 5 + 3, 1, 6), [13, 6]);
  assert.deepEqual(b.coord(4 * 5 + 2, 1, 0), [5, 0]);
  assert.equal(b.coord(4 * 5 + 1, 1, 0), undefined);
  // m16n8k64 s8: lane t: row g + 8 (t & 1), chunks 8 (t >> 1) ..
  const c = sp("sp.m16n8k64.s8.s32").meta;
  assert.deepEqual(c.coord(4 * 2 + 1, 0, 3), [10, 3]);
  assert.deepEqual(c.coord(4 * 2 + 2, 0, 7), [2, 15]);
  // m16n8k32 s8, selector 0: lane 4g row g, lane 4g + 1 row g + 8, all 8 chunks.
  const d = sp("sp.m16n8k32.s8.s32").meta;
  assert.deepEqual(d.coord(4 * 7 + 1, 0, 7), [15, 7]);
  assert.throws(() => d.coord(0, 2, 0), RangeError);
  assert.throws(() => d.coord(32, 0, 0), RangeError);
  assert.throws(() => d.coord(0, 0, 8), RangeError);
});

Deno.test("sparse table: metadata nibbles (2:4, tf32 1:2, s4 pairs), UB and ordered", () => {
  const f = sp("sp.m16n8k16.f16.f32");
  const t = sp("sp.m16n8k8.tf32.f32");
  const q = sp("sp.m16n8k64.u4.s32");
  for (let n = 0; n < 16; n++) {
    const i0 = n & 3;
    const i1 = n >> 2;
    assert.deepEqual(keptColumns(f, n, false), i0 === i1 ? undefined : [i0, i1]);
    assert.deepEqual(keptColumns(f, n, true), i0 < i1 ? [i0, i1] : undefined);
    const tc = keptColumns(t, n, false);
    assert.deepEqual(tc, n === 0b0100 ? [0] : n === 0b1110 ? [1] : undefined);
    const cols = keptColumns(q, n, true);
    if (cols !== undefined) assert.equal(metaNibble(q, cols), n);
    const fc = keptColumns(f, n, true);
    if (fc !== undefined) assert.equal(metaNibble(f, fc), n);
  }
  assert.deepEqual(keptColumns(q, 0b1100, false), [0, 1, 6, 7]);
  assert.throws(() => metaNibble(q, [1, 2, 4, 5]), RangeError);
  assert.throws(() => metaNibble(f, [2, 2]), RangeError);
  assert.throws(() => keptColumns(f, 16, false), RangeError);
});

Deno.test("sparse table: deeply frozen; validateSparseMmaTable rejects broken rows", () => {
  for (const s of SPARSE_MMA_TABLE) {
    for (const x of [s, s.a, s.b, s.c, s.meta, s.meta.selectors]) assert.ok(Object.isFrozen(x));
  }
  assert.ok(Object.isFrozen(SPARSE_MMA_TABLE));
  const good = sp("sp.m16n8k32.f16.f32");
  const one = (r: SparseMmaShape) => Object.freeze([Object.freeze(r)]);
  // Two nibbles for one chunk.
  const dupMeta = Object.freeze({
    ...good.meta,
    coord: (lane: number, s: number, n: number) => good.meta.coord(lane, s, n & ~1),
  });
  assert.throws(() => validateSparseMmaTable(one({ ...good, meta: dupMeta })), /twice/);
  // A chunk's metadata in a lane of another row group.
  const farMeta = Object.freeze({
    ...good.meta,
    coord: (lane: number, s: number, n: number) => good.meta.coord(lane ^ 4, s, n),
  });
  assert.throws(() => validateSparseMmaTable(one({ ...good, meta: farMeta })), /in lane/);
  // A selector the shape does not have.
  const sel3 = Object.freeze({ ...good.meta, selectors: Object.freeze([0, 1, 2]) });
  assert.throws(() => validateSparseMmaTable(one({ ...good, meta: sel3 })), /selectors/);
  // An A map of the wrong tile (16 x 8, not 16 x K/2 = 16 x 16).
  const denseA = mma("m16n8k8.f16.f32").a;
  assert.throws(() => validateSparseMmaTable(one({ ...good, a: denseA })), /tile/);
  // Mnemonics.
  assert.throws(
    () => validateSparseMmaTable(one({ ...good, ptx: good.ptxOrdered })),
    /ordered_metadata/,
  );
  assert.throws(
    () =>
      validateSparseMmaTable(
        one({ ...good, ptx: "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" }),
      ),
    /shape/,
  );
  assert.throws(() => validateSparseMmaTable(Object.freeze([good, good])), /duplicate/);
  assert.throws(() => validateSparseMmaTable([good]), /frozen/);
});

ptxasTest("sparse table: every row, selector and ordered_metadata assembles (sm_80, sm_86)", async (
  ptxas,
) => {
  for (const ordered of [false, true]) {
    const kernels = SPARSE_MMA_TABLE.flatMap((s) =>
      s.meta.selectors.map((selector) => sparseProbeKernel(s, { selector, ordered }))
    );
    const ptx = printPtx(kernels);
    for (const arch of ["sm_80", "sm_86"] as const) {
      const r = await runPtxas(ptx, { arch, ptxasPath: ptxas });
      assert.ok(r.ok, r.log);
      assert.equal(r.kernels.length, kernels.length);
    }
  }
});
