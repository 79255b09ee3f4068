/**
 * Strided and batch-strided programs of every operand type, and sizes with
 * non-dense strides that are not tile multiples: shared by tests/strides_test.ts
 * (the simulator) and tests/gpu/strided_test.ts (the GPU).
 *
 * @module
 */

import { defaultAlign, type Dtype } from "../ir/dtype.ts";

/** One operand type's program family: operands, output, math, and K's alignment. */
export interface Family {
  readonly a: Dtype;
  readonly d: Dtype;
  readonly math?: string;
  /** A matrix C read through strides (floats only). */
  readonly c: boolean;
  /** B's layout: col (K-contiguous) for the integer and binary types. */
  readonly bLayout: "row" | "col";
}

export const FAMILIES: Readonly<Record<string, Family>> = {
  f16: { a: "f16", d: "f32", c: true, bLayout: "row" },
  bf16: { a: "bf16", d: "f32", c: true, bLayout: "col" },
  tf32: { a: "f32", d: "f32", math: "tf32", c: true, bLayout: "row" },
  f32: { a: "f32", d: "f32", math: "f32", c: true, bLayout: "col" },
  f64: { a: "f64", d: "f64", c: true, bLayout: "row" },
  s8: { a: "s8", d: "s32", c: false, bLayout: "col" },
  u8: { a: "u8", d: "s32", c: false, bLayout: "col" },
  s4: { a: "s4", d: "s32", c: false, bLayout: "col" },
  u4: { a: "u4", d: "s32", c: false, bLayout: "col" },
  b1: { a: "b1", d: "s32", c: false, bLayout: "col" },
};

export function program(f: Family, batched: boolean): string {
  const [bx, bi] = batched ? ["L, ", "b, "] : ["", ""];
  const st = (s: string, ld: string) => batched ? `strides(${s}, ${ld})` : `strides(${ld})`;
  const prod = f.a === "b1" ? `popc(A[${bi}m, k] ^ B[${bi}k, n])` : `A[${bi}m, k] * B[${bi}k, n]`;
  const lines = [
    `kernel k_${f.a}_${f.math ?? ""}_${batched ? "batched" : "plain"} {`,
    `  A: ${f.a}[${bx}M, K] row ${st("sa", "lda")}`,
    // Batched: one B for every batch (batch stride 0).
    `  B: ${f.a}[${bx}K, N] ${f.bLayout} ${st("0", "ldb")}`,
    ...(f.c ? [`  C: ${f.d}[${bx}M, N] col ${st("sc", "ldc")}`, `  beta: ${f.d}`] : []),
    `  D: ${f.d}[${bx}M, N] row ${st("sd", "ldd")}`,
    `  D[${bi}m, n] = ${prod}${f.c ? ` + beta * C[${bi}m, n]` : ""}`,
    ...(f.math !== undefined ? [`  schedule {\n    math ${f.math}\n  }`] : []),
    "}",
  ];
  return lines.join("\n");
}

/** Sizes not tile multiples, strides not dense (each a whole number of alignments more). */
export function stridedSizes(f: Family, batched: boolean): Record<string, number> {
  const al = defaultAlign(f.a);
  const dl = defaultAlign(f.d);
  const K = 3 * al;
  const M = 40;
  const N = 3 * Math.max(dl, f.bLayout === "row" ? al : 1);
  const s: Record<string, number> = {
    M,
    N,
    K,
    lda: K + al,
    ldb: (f.bLayout === "row" ? N : K) + 2 * al,
    ldc: M + dl,
    ldd: N + 2 * dl,
  };
  if (batched) {
    s.L = 3;
    s.sa = M * s.lda! + 5 * al;
    s.sc = N * s.ldc! + dl;
    s.sd = M * s.ldd! + 3 * dl;
  }
  return s;
}
