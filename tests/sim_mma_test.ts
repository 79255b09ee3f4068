// The simulator's mma against plain reference matmuls, for every row of the MMA table: one
// warp loads random A, B and C fragments from global memory (the bytes laid out so that lane l's
// register j is word l * regs + j), runs the mma and stores D; the test decodes D through the
// fragment map and compares with a reference written here independently: integers exactly,
// floating point bit for bit with the documented model (products exact, the accumulator and the
// k products summed in f64, accumulator first, k ascending, one rounding).

import assert from "node:assert/strict";
import type { Reg } from "../ir/kernel.ts";
import {
  type FragmentMap,
  MMA_DTYPE_BITS,
  MMA_SHAPES,
  type MmaDtype,
  type MmaShape,
} from "../ir/mma_table.ts";
import { simulate } from "../backends/sim/mod.ts";
import {
  bf16BitsToF32,
  bitsF32,
  f16BitsToF32,
  f32Bits,
  f32ToBf16Bits,
  f32ToF16Bits,
  fmaF64,
  roundF16,
  tf32Truncate,
} from "../numerics/mod.ts";
import { Emitter, kernelOf, randInt, rng } from "../backends/sim/_test_kernels.ts";

/** A random element of a dtype, as the value the MMA computes with, and its storage bits. */
interface Elem {
  /** The value the MMA uses. */
  readonly value: number;
  /** Storage: the element's bits (32-bit formats, sub-byte), or the f64 value itself. */
  readonly bits: number;
}

function randomElem(r: () => number, dt: MmaDtype): Elem {
  const sign = r() < 0.5 ? 1 : 0;
  switch (dt) {
    case "f16": {
      const h = (sign << 15) | (randInt(r, 15 - 6, 15 + 6) << 10) | randInt(r, 0, 1023);
      return { value: f16BitsToF32(h), bits: h };
    }
    case "bf16": {
      const h = (sign << 15) | (randInt(r, 127 - 20, 127 + 20) << 7) | randInt(r, 0, 127);
      return { value: bf16BitsToF32(h), bits: h };
    }
    case "tf32": {
      // Raw f32 bits with nonzero low mantissa bits: the MMA must ignore the low 13.
      const u =
        ((sign << 31) | (randInt(r, 127 - 10, 127 + 10) << 23) | randInt(r, 1, 0x7fffff)) >>>
        0;
      return { value: tf32Truncate(bitsF32(u)), bits: u };
    }
    case "f32": {
      const u = ((sign << 31) | (randInt(r, 127 - 8, 127 + 8) << 23) | randInt(r, 0, 0x7fffff)) >>>
        0;
      return { value: bitsF32(u), bits: u };
    }
    case "f64": {
      const v = (r() - 0.5) * 2 ** randInt(r, -20, 20);
      return { value: v, bits: v };
    }
    case "s8":
      return intElem(randInt(r, -128, 127), 8);
    case "u8":
      return intElem(randInt(r, 0, 255), 8);
    case "s4":
      return intElem(randInt(r, -8, 7), 4);
    case "u4":
      return intElem(randInt(r, 0, 15), 4);
    case "b1":
      return intElem(randInt(r, 0, 1), 1);
    case "s32": {
      // Half near the ends of the range, so that saturation (or wrap-around) happens.
      const near = r() < 0.5;
      const v = near
        ? (sign ? -(2 ** 31) + randInt(r, 0, 300) : 2 ** 31 - 1 - randInt(r, 0, 300))
        : randInt(r, -100000, 100000);
      return { value: v, bits: v >>> 0 };
    }
  }
}

function intElem(v: number, bits: number): Elem {
  return { value: v, bits: v & ((1 << bits) - 1) };
}

/** A random rows x cols matrix of `dt`, row-major. */
function randomMatrix(r: () => number, dt: MmaDtype, rows: number, cols: number): Elem[] {
  return Array.from({ length: rows * cols }, () => randomElem(r, dt));
}

/** The fragment registers of `mat` laid out as lane-major words (8-byte words for f64). */
function encode(f: FragmentMap, mat: readonly Elem[]): Uint8Array {
  const bytes = new Uint8Array(32 * f.regs * (f.regBits / 8));
  const dv = new DataView(bytes.buffer);
  const w = MMA_DTYPE_BITS[f.dtype];
  for (let l = 0; l < 32; l++) {
    for (let j = 0; j < f.regs; j++) {
      const at = (l * f.regs + j) * (f.regBits / 8);
      if (f.regBits === 64) {
        const [row, col] = f.coord(l, j, 0);
        dv.setFloat64(at, mat[row * f.cols + col]!.bits, true);
        continue;
      }
      let word = 0;
      for (let e = 0; e < f.elemsPerReg; e++) {
        const [row, col] = f.coord(l, j, e);
        word = (word | (mat[row * f.cols + col]!.bits << (e * w))) >>> 0;
      }
      dv.setUint32(at, word, true);
    }
  }
  return bytes;
}

/** D's elements (as values; f16 as its value, f32 as its value) decoded through the C map. */
function decode(f: FragmentMap, bytes: Uint8Array): number[] {
  const out = new Array<number>(f.rows * f.cols).fill(NaN);
  const dv = new DataView(bytes.buffer);
  for (let l = 0; l < 32; l++) {
    for (let j = 0; j < f.regs; j++) {
      const at = (l * f.regs + j) * (f.regBits / 8);
      for (let e = 0; e < f.elemsPerReg; e++) {
        const [row, col] = f.coord(l, j, e);
        let v: number;
        if (f.dtype === "f64") v = dv.getFloat64(at, true);
        else if (f.dtype === "f32") v = dv.getFloat32(at, true);
        else if (f.dtype === "s32") v = dv.getInt32(at, true);
        else v = f16BitsToF32((dv.getUint32(at, true) >>> (16 * e)) & 0xffff);
        out[row * f.cols + col] = v;
      }
    }
  }
  return out;
}

/** The documented model, written independently of the simulator. */
function reference(
  s: MmaShape,
  a: readonly Elem[],
  b: readonly Elem[],
  c: readonly Elem[],
): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.m; i++) {
    for (let j = 0; j < s.n; j++) {
      let acc = c[i * s.n + j]!.value;
      if (s.aType === "f64") {
        for (let k = 0; k < s.k; k++) {
          acc = fmaF64(a[i * s.k + k]!.value, b[k * s.n + j]!.value, acc);
        }
      } else if (s.aType === "b1") {
        let n = 0;
        for (let k = 0; k < s.k; k++) {
          const x = a[i * s.k + k]!.value;
          const y = b[k * s.n + j]!.value;
          n += s.op === "and.popc" ? x & y : x ^ y;
        }
        acc = (acc + n) | 0;
      } else if (s.cType === "s32") {
        for (let k = 0; k < s.k; k++) acc += a[i * s.k + k]!.value * b[k * s.n + j]!.value;
        acc = Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, acc));
      } else {
        for (let k = 0; k < s.k; k++) acc += a[i * s.k + k]!.value * b[k * s.n + j]!.value;
        acc = s.cType === "f16" ? roundF16(acc) : Math.fround(acc);
      }
      out.push(acc);
    }
  }
  return out;
}

/** One warp: ldg the fragments of A, B, C; mma; stg D. */
function mmaKernel(s: MmaShape) {
  const e = new Emitter();
  const tid = e.tid();
  const load = (name: string, f: FragmentMap, type: Reg["type"]): Reg[] => {
    const base = e.param(name);
    const bytes = f.regBits / 8;
    const p = e.addr(base, tid, f.regs * bytes);
    return Array.from({ length: f.regs }, (_, j) => {
      const r = e.reg(type, `${name}${j}`);
      e.emit({
        op: "ldg",
        width: bytes === 8 ? "b64" : "b32",
        dst: [r],
        addr: p,
        offset: j * bytes,
      });
      return r;
    });
  };
  const accType = (dt: MmaDtype): Reg["type"] =>
    dt === "f32" ? "f32" : dt === "s32" ? "s32" : dt === "f64" ? "f64" : "b32";
  const opType = s.aType === "f64" ? "f64" : "b32";
  const a = load("A", s.a, opType);
  const b = load("B", s.b, opType);
  const c = load("C", s.c, accType(s.cType));
  const d = Array.from({ length: s.c.regs }, () => e.reg(accType(s.cType), "d"));
  e.emit({ op: "mma", shape: s.name, d, a, b, c });
  const dBase = e.param("D");
  const bytes = s.c.regBits / 8;
  const p = e.addr(dBase, tid, s.c.regs * bytes);
  d.forEach((r, j) => {
    e.emit({ op: "stg", width: bytes === 8 ? "b64" : "b32", src: [r], addr: p, offset: j * bytes });
  });
  return kernelOf(e, `mma_${s.name.replaceAll(".", "_")}`, 32, 0, {
    tensors: ["A", "B", "C", "D"],
  });
}

function same(x: number, y: number): boolean {
  return Object.is(x, y) || (x === y);
}

for (const s of MMA_SHAPES) {
  Deno.test(`mma ${s.name} equals the reference model bit for bit`, () => {
    const kernel = mmaKernel(s);
    for (let trial = 0; trial < 3; trial++) {
      const r = rng(0x5eed + trial * 977 + s.name.length * 31 + s.k);
      const a = randomMatrix(r, s.aType, s.m, s.k);
      const b = randomMatrix(r, s.bType, s.k, s.n);
      const c = randomMatrix(r, s.cType, s.m, s.n);
      const dBytes = new Uint8Array(32 * s.c.regs * (s.c.regBits / 8)).fill(0xa5); // poison
      const res = simulate(kernel, {
        grid: [1, 1, 1],
        args: {
          A: { bytes: encode(s.a, a) },
          B: { bytes: encode(s.b, b) },
          C: { bytes: encode(s.c, c) },
          D: { bytes: dBytes },
        },
      });
      assert.equal(res.stats.mmas, 1);
      assert.deepEqual(res.hazards, []);
      const got = decode(s.c, dBytes);
      const want = reference(s, a, b, c);
      for (let i = 0; i < want.length; i++) {
        const g = got[i]!;
        const w = want[i]!;
        const ok = s.cType === "f32"
          ? f32Bits(g) === f32Bits(w)
          : s.cType === "f16"
          ? f32ToF16Bits(g) === f32ToF16Bits(w)
          : same(g, w);
        assert.ok(
          ok,
          `${s.name} trial ${trial}: D[${Math.floor(i / s.n)}][${i % s.n}] = ${g}, want ${w}`,
        );
      }
      if (s.cType === "s32" && s.aType !== "b1") {
        // Saturation happened somewhere (C holds values near the ends of the range).
        assert.ok(
          want.some((v) => v === 2 ** 31 - 1 || v === -(2 ** 31)),
          "no saturation exercised",
        );
      }
    }
  });
}

Deno.test("tf32 mma ignores the low 13 bits; bf16 and f16 fragments decode as their formats", () => {
  // Cross-check the conversions the reference relies on with known patterns.
  assert.equal(f32Bits(tf32Truncate(bitsF32(0x3f801fff))), 0x3f800000);
  assert.equal(f32ToBf16Bits(bf16BitsToF32(0x3f81)), 0x3f81);
  assert.equal(f16BitsToF32(0x3c01), 1 + 2 ** -10);
});
