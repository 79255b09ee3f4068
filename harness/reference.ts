/**
 * The reference GEMM: plain loops over the declared tensors, f64
 * accumulation for floats (exact products of the stored values), exact
 * integer arithmetic for integers, and the same epilogue evaluated in f64
 * (float compute) or exact s32 (integer compute). With each element it
 * returns an error bound that a correct kernel must meet, derived below.
 *
 * ## The bound
 *
 * Let P = Σ_k |a_k b_k| (the magnitude of the dot product). A kernel's
 * accumulator differs from the exact dot product by at most
 * `e = P · (ε_in + K · u_acc)` where
 * - ε_in is the error of the operands as the MMA reads them: 0 for f16, bf16,
 *   f64, e4m3, e5m2 and integers (exact); 2·2^-10 for tf32 (each f32 operand truncated to
 *   10 mantissa bits loses < 2^-10 relatively, a product < 2·2^-10 + 2^-20);
 *   2^-18 for 3xtf32 (the dropped small·small term and the split's rounding);
 * - u_acc bounds the relative error of one addition into the accumulator,
 *   whatever the order and rounding mode of the hardware: 2^-23 for f32
 *   (truncation loses < 1 ulp), 2^-10 for f16, 2^-52 for f64; K additions at
 *   most, each relative to a partial sum bounded by P;
 * - for 8-bit float operands (e4m3 / e5m2 on sm90's wgmma) with an f32 accumulator, a further
 *   ceil(K/32)·2^-13: each K = 32 instruction keeps only 14 significant bits of its sum
 *   (numerics/mod.ts, "Accumulation model for fp8 wgmma").
 * The epilogue maps the accumulator through f; the bound of the output is
 * `max |f(acc ± e) - f(acc)|` (every epilogue function is monotone or
 * Lipschitz on the interval), plus the error of the approximate PTX
 * functions (tanh.approx: 2^-10.9 relative; ex2/rcp.approx: 2^-21) scaled by
 * the output, plus one rounding of the output type (half an ulp, taken as a
 * full ulp of |R| to cover intermediate casts), plus 2^-24 per operation of
 * the epilogue (at least 16 of them: 2^-20) relative to its largest
 * intermediate (at least |R|) for its f32 arithmetic: `beta - (x + beta)`
 * rounds at |beta| however small the result (the reasoning is at
 * `outputElement`). Integer results carry no bound: they must be identical.
 *
 * @module
 */

import type { ComputeType, DimRef, EpilogueExpr, GemmKernel, TensorParam } from "../ir/gemm.ts";
import { tensorParam } from "../ir/gemm.ts";
import { type EpilogueNode, fnOf, foldEpilogue, functionsIn } from "../ir/epilogue_expr.ts";
import { type Dtype, DTYPE_INFO, isFp8 } from "../ir/dtype.ts";
import { dimValue, forEachInView, readElem, sparseExtents, tensorShape } from "./tensor.ts";
import type { LaunchArgs } from "./inputs.ts";
import { roundHalfEven, roundToDtype, ulpOf } from "../numerics/mod.ts";
import { decompressSparse } from "../numerics/sparse_compress.ts";
import { sparseMetaParam } from "../ir/gemm.ts";

/** The reference result of a GEMM. */
export interface Reference {
  /** Output values in D's storage order. */
  readonly values: Float64Array;
  /** Per element, the largest admissible |kernel - reference| (0 for integers). */
  readonly bound: Float64Array;
  /** Integer output from integer compute: compared for equality (every bound is 0). */
  readonly exact: boolean;
  /** A strided D (DESIGN §6.1): 1 for the storage elements of the view, 0 for its gaps,
   * which the kernel must leave as they were. Absent: every element is in the view. */
  readonly inView?: Uint8Array;
}

function intRangeOf(t: Dtype): [number, number] {
  return t === "s8" ? [-128, 127] : t === "u8" ? [0, 255] : [-(2 ** 31), 2 ** 31 - 1];
}

/** The value of an epilogue element from the accumulator, the batch, row and column. */
type ElementFn = (acc: number, b: number, r: number, c: number) => number;

/** The largest magnitude a function node of the epilogue produced since it was reset, and how
 * many function nodes the epilogue has (counted once, when it is built). */
interface Peak {
  value: number;
  nodes: number;
}

/**
 * The epilogue as one function of the element, built once: the table's exact
 * semantics at each function node (f64 for float compute, wrapping s32 for
 * s32), casts rounded to their type. Each function node's result raises
 * `peak` (the magnitude the kernel's arithmetic rounds at).
 */
function epilogueFunction(
  expr: EpilogueExpr,
  compute: ComputeType,
  scalars: ReadonlyMap<string, number>,
  loadOf: (e: EpilogueNode<"load">, b: number, r: number, c: number) => number,
  peak: Peak,
): ElementFn {
  const call = (e: EpilogueExpr, xs: readonly ElementFn[]): ElementFn => {
    const ref = fnOf(e)!.row.reference;
    peak.nodes++;
    return (acc, b, r, c) => {
      const v = ref(xs.map((x) => x(acc, b, r, c)), compute);
      if (Math.abs(v) > peak.value) peak.value = Math.abs(v);
      return v;
    };
  };
  return foldEpilogue<ElementFn>(expr, {
    acc: () => (acc) => acc,
    const: (e) => () => e.value,
    scalar: (e) => {
      const v = scalars.get(e.name)!;
      return () => v;
    },
    load: (e) => (_, b, r, c) => loadOf(e, b, r, c),
    unary: call,
    binary: call,
    clamp: call,
    cast: (e, [x]) => {
      if (DTYPE_INFO[e.to].float) return (acc, b, r, c) => roundToDtype(x!(acc, b, r, c), e.to);
      const [lo, hi] = intRangeOf(e.to);
      return (acc, b, r, c) => Math.min(Math.max(roundHalfEven(x!(acc, b, r, c)), lo), hi);
    },
  });
}

/** A tensor's storage index of the logical element (batch, row, column). */
type IndexFn = (b: number, r: number, c: number) => number;

/**
 * Element offsets: logical (b, row, col) -> storage index, via the access
 * order recorded in the view (normalised layout) and the declared layout.
 * A view's normalised layout says whether the second logical index is
 * contiguous; the tensor's declared layout says which declared position is
 * contiguous. Together they fix whether the declared order is (first,
 * second) or (second, first) of the logical indices.
 */
function elemIndex(
  t: TensorParam,
  sh: ReturnType<typeof tensorShape>,
  viewLayout: "row" | "col",
  batched: boolean,
): IndexFn {
  const declContigLast = t.layout === "row";
  const logicalSecondContig = viewLayout === "row";
  const swap = declContigLast !== logicalSecondContig;
  return (b, r, c) => {
    const mat = swap ? [c, r] : [r, c];
    return sh.index(batched ? [b, mat[0]!, mat[1]!] : mat);
  };
}

/**
 * The epilogue's loads: C and bias through their views' access order, any
 * other tensor by its declared index (the dimensions the load names).
 */
function epilogueLoads(
  k: GemmKernel,
  args: LaunchArgs,
): (e: EpilogueNode<"load">, b: number, r: number, c: number) => number {
  const sizes = args.sizes;
  const epi = new Map<string, (b: number, r: number, c: number) => number>();
  for (const prm of k.params) {
    if (prm.kind !== "tensor" || (prm.role !== "C" && prm.role !== "bias")) continue;
    const sh = tensorShape(prm, sizes);
    const bytes = args.tensors.get(prm.name)!;
    const view = k.epilogue.views.find((v) => v.tensor === prm.name);
    if (view !== undefined) {
      const f = elemIndex(prm, sh, view.layout, view.batched);
      epi.set(prm.name, (b, r, c) => readElem(bytes, prm.dtype, f(b, r, c)));
    }
  }
  return (e, b, r, c) => {
    const f = epi.get(e.tensor);
    if (f !== undefined) return f(b, r, c);
    const t = tensorParam(k, e.tensor);
    const sh = tensorShape(t, sizes);
    const bytes = args.tensors.get(t.name)!;
    const idx = [
      ...(e.batched ? [b] : []),
      ...(e.rows ? [r] : []),
      ...(e.cols ? [c] : []),
    ];
    return readElem(bytes, t.dtype, sh.index(idx));
  };
}

/** The accumulator's error relative to P = Σ|a_k b_k|: ε_in + K·u_acc (the module's bound),
 * plus, for 8-bit float operands (sm90's fp8 wgmma, f32 accumulator), ceil(K/32)·2^-13: each
 * K = 32 instruction keeps 14 significant bits of its sum (numerics/mod.ts, "Accumulation
 * model for fp8 wgmma"), losing less than 2^-13 of a partial sum bounded by P. */
function accumulatorError(m: GemmKernel["math"], K: number): number {
  const fp8 = (isFp8(m.mmaA) || isFp8(m.mmaB)) && m.acc === "f32"
    ? Math.ceil(K / 32) * 2 ** -13
    : 0;
  const epsIn = m.mode === "3xtf32" ? 2 ** -18 : m.mmaA === "tf32" ? 2 * 2 ** -10 + 2 ** -20 : 0;
  const uAcc = m.acc === "f32"
    ? 2 ** -23
    : m.acc === "f16"
    ? 2 ** -10
    : m.acc === "f64"
    ? 2 ** -52
    : 0;
  return epsIn + K * uAcc + fp8;
}

/** What turns one accumulator into an output element and its bound. */
interface OutputRule {
  readonly evalE: ElementFn;
  /** What `evalE` raises: the largest intermediate of its last evaluations. */
  readonly peak: Peak;
  /** Integer output from integer compute: no bound. */
  readonly exact: boolean;
  /** The largest tolerance of the approximate functions on the path. */
  readonly approx: number;
  readonly out: Dtype;
  readonly compute: ComputeType;
}

/**
 * The output element of accumulator `acc` (whose error is at most `e`) and
 * its bound (the module's bound), converted to the output type.
 */
function outputElement(
  rule: OutputRule,
  acc: number,
  e: number,
  b: number,
  r: number,
  c: number,
): [number, number] {
  const { evalE, exact, approx, out } = rule;
  rule.peak.value = 0;
  let v = evalE(acc, b, r, c);
  const peak = rule.peak.value;
  let bnd = 0;
  if (!exact) {
    if (e > 0) {
      const hi = evalE(acc + e, b, r, c);
      const lo = evalE(acc - e, b, r, c);
      bnd = Math.max(Math.abs(hi - v), Math.abs(lo - v));
    }
    if (approx > 0) bnd += approx * Math.max(1, Math.abs(v));
    // The epilogue's own rounding. Each f32 operation rounds its result to
    // within 2^-24 of that result (round to nearest), and that error then flows
    // through the later operations: unchanged through + and -, scaled by the
    // other factor through *, which scales that operation's result alike; so,
    // seen at the output, each operation contributes at most 2^-24 times the
    // magnitude of an intermediate result (a term), not of the output. A sum
    // that cancels cancels its terms, not their errors: `beta - (x + beta)`
    // rounds `x + beta` at |beta| however small the result
    // (bad_inputs/epilogue_cancellation_bound.gemm was 43/4096 over a bound
    // relative to |R|). Summed over the epilogue's operations: 2^-24 times
    // their count (at least 16: 2^-20, as before the count was taken) times the
    // largest term, or |R| if larger (a cast or a store rounds at |R|).
    const ops = Math.max(16, rule.peak.nodes);
    bnd += 2 ** -24 * ops * Math.max(Math.abs(v), peak) +
      2 * ulpOf(v, out === "f64" ? "f64" : out === "f16" || out === "bf16" ? out : "f32");
  }
  // Convert to the output type.
  if (DTYPE_INFO[out].float) v = roundToDtype(v, out);
  else {
    const [lo, hi] = intRangeOf(out);
    v = Math.min(Math.max(rule.compute === "s32" ? v : roundHalfEven(v), lo), hi);
    if (!exact) bnd = Math.max(bnd, 1);
  }
  return [v, bnd];
}

/**
 * A sparse A's elements, dense (DESIGN §6.3): its kept values and metadata expanded by
 * numerics/sparse_compress.ts `decompressSparse` into `[batch, M, K]` row-major.
 */
function denseSparseA(k: GemmKernel, a: TensorParam, args: LaunchArgs): (i: number) => number {
  const meta = sparseMetaParam(k);
  if (meta === null) throw new Error(`Sparse "${a.name}" has no metadata parameter`);
  const { batch, rows, cols } = sparseExtents(a, args.sizes);
  const mb = args.tensors.get(meta.name)!;
  // A copy: a Uint32Array view needs a 4-byte aligned offset (little-endian host, as the ABI).
  const words = new Uint32Array(mb.slice().buffer, 0, mb.byteLength >> 2);
  const dense = decompressSparse(
    { values: args.tensors.get(a.name)!, meta: words },
    a.dtype,
    rows,
    cols,
    { batch },
  );
  return (i) => dense[i]!;
}

/**
 * Computes the reference GEMM and its error bounds. A sparse A (DESIGN §6.3) is
 * multiplied as the dense matrix its kept values and metadata describe
 * (numerics/sparse_compress.ts `decompressSparse`).
 *
 * @param k The kernel (checked GEMM IR).
 * @param args The launch arguments (inputs as bytes).
 * @returns Values and bounds in D's storage order.
 * @example
 * ```ts
 * import { equal, ok } from "node:assert/strict";
 * import { check } from "../compiler.ts";
 * import { randomArgs } from "./inputs.ts";
 * import { referenceGemm } from "./reference.ts";
 * const k = check("kernel k { A: f16[M, K]\n B: f16[K, N] col\n D: f32[M, N]\n D[m, n] = A[m, k] * B[k, n] }")
 *   .kernels[0]!;
 * const ref = referenceGemm(k, randomArgs(k, { M: 16, N: 8, K: 32 }, 1));
 * equal(ref.values.length, 16 * 8);
 * ok(!ref.exact && ref.bound.every((b) => b > 0));
 * ```
 */
export function referenceGemm(k: GemmKernel, args: LaunchArgs): Reference {
  const p = k.problem;
  const sizes = args.sizes;
  const dimVal = (d: DimRef) => dimValue(d, sizes);
  const M = dimVal(p.m);
  const N = dimVal(p.n);
  const K = dimVal(p.k);
  const L = p.batch === null ? 1 : dimVal(p.batch);
  const A = tensorParam(k, p.a.tensor);
  const B = tensorParam(k, p.b.tensor);
  const D = tensorParam(k, p.d.tensor);
  const dSh = tensorShape(D, sizes);
  const aBytes = args.tensors.get(A.name)!;
  const bBytes = args.tensors.get(B.name)!;
  const floatOps = DTYPE_INFO[A.dtype].float;
  const m = k.math;
  const relErr = accumulatorError(m, K);
  const compute = k.epilogue.compute;
  const exact = !DTYPE_INFO[D.dtype].float && compute === "s32";
  const values = new Float64Array(dSh.elements);
  const bound = new Float64Array(dSh.elements);
  // A sparse A reads its dense expansion, [batch, M, K] row-major (the view is K-contiguous).
  const sparseA = A.sparse === true ? denseSparseA(k, A, args) : null;
  const aIdx = sparseA !== null
    ? (b: number, r: number, kk: number) => ((p.a.batched ? b : 0) * M + r) * K + kk
    : elemIndex(A, tensorShape(A, sizes), p.a.layout, p.a.batched);
  const aElem = sparseA ?? ((i: number) => readElem(aBytes, A.dtype, i));
  const bIdx = elemIndex(B, tensorShape(B, sizes), p.b.layout, p.b.batched);
  const dIdx = elemIndex(D, dSh, p.d.layout, p.d.batched);
  const peak: Peak = { value: 0, nodes: 0 };
  const rule: OutputRule = {
    evalE: epilogueFunction(k.epilogue.expr, compute, args.scalars, epilogueLoads(k, args), peak),
    peak,
    exact,
    approx: Math.max(0, ...functionsIn(k.epilogue.expr).map((f) => f.row.bound)),
    out: D.dtype,
    compute,
  };
  const popc = m.op !== "mul";
  // The operands of one batch, decoded once into K-contiguous rows (A as
  // [M][K], B as [N][K]), so that the dot products below read plain arrays.
  const aRows = new Float64Array(M * K);
  const bCols = new Float64Array(N * K);
  for (let b = 0; b < L; b++) {
    for (let r = 0; r < M; r++) {
      for (let kk = 0; kk < K; kk++) aRows[r * K + kk] = aElem(aIdx(b, r, kk));
    }
    for (let c = 0; c < N; c++) {
      for (let kk = 0; kk < K; kk++) bCols[c * K + kk] = readElem(bBytes, B.dtype, bIdx(b, kk, c));
    }
    for (let r = 0; r < M; r++) {
      for (let c = 0; c < N; c++) {
        let acc = 0;
        let mag = 0;
        const ar = r * K;
        const bc = c * K;
        for (let kk = 0; kk < K; kk++) {
          const x = aRows[ar + kk]!;
          const y = bCols[bc + kk]!;
          if (popc) acc += m.op === "and.popc" ? (x & y) : (x ^ y);
          else {
            acc += x * y;
            mag += Math.abs(x * y);
          }
        }
        if (!floatOps) {
          acc = Math.min(Math.max(acc, -(2 ** 31)), 2 ** 31 - 1);
        }
        const i = dIdx(b, r, c);
        [values[i], bound[i]] = outputElement(rule, acc, mag * relErr, b, r, c);
      }
    }
  }
  if (dSh.dense) return { values, bound, exact };
  const inView = new Uint8Array(dSh.elements);
  forEachInView(dSh, (i) => inView[i] = 1);
  return { values, bound, exact, inView };
}
