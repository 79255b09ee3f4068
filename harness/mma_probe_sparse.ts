/**
 * The sparse half of the fragment-layout probe (mma_probe.ts runs both): for
 * each `mma.sp` row (ir/mma_sparse.ts), a one-warp kernel that also loads
 * each lane's metadata register ({@link sparseProbeKernel}). The host draws a
 * 2:4 pattern (1:2 for tf32, 4:8 in pairs for s4/u4), packs the kept values
 * of A through the row's compressed map and the pattern's nibbles through its
 * metadata map ({@link packMeta}), and checks D against the host product of
 * the decompressed A for every legal selector, with `mma.sp` and with
 * `mma.sp::ordered_metadata`; binary-coded launches then find the (lane,
 * nibble) each (row, chunk) of A takes its metadata from
 * ({@link evaluateSparseProbe}; on the GPU, gpuSparseProbe).
 *
 * @module
 */

import type { MmaShape } from "../ir/mma_table.ts";
import { metaNibble, type SparseMmaShape } from "../ir/mma_sparse.ts";
import { imm, KernelBuilder } from "../ir/builder.ts";
import type { Kernel, Reg, RegType } from "../ir/kernel.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printPtx } from "../backends/ptx/print.ts";
import { Rng } from "../numerics/random.ts";
import { type Cuda, CudaError, type DeviceBuffer } from "../backends/cuda/driver.ts";
import * as ir from "../ir/builder.ts";
import {
  checkCMap,
  equalBytes,
  failedProbe,
  gpuProbeLauncher,
  hostProduct,
  INT_TYPES,
  packFragment,
  type ProbeInputs,
  type ProbeLauncher,
  type ProbeMetaCheck,
  type ProbeMetaMismatch,
  type ProbeMode,
  probeName,
  type ProbeResult,
  probeVerdict,
  randomInputs,
  releaseProbe,
  simProbeLauncher,
  unpackFragment,
} from "./mma_probe_common.ts";

/** Whether a row is a sparse one (ir/mma_sparse.ts). */
export function isSparse(s: MmaShape): s is SparseMmaShape {
  return (s as Partial<SparseMmaShape>).sparse === true;
}

/** Which `mma.sp` a sparse probe kernel runs: the selector and ordered_metadata. */
export interface SparseVariant {
  /** The sparsity selector (one of the row's `meta.selectors`). */
  readonly selector: number;
  /** `mma.sp::ordered_metadata` instead of `mma.sp`. */
  readonly ordered: boolean;
}

/**
 * The probe kernel of a sparse row: as {@link probeKernel}, with a fifth parameter `e`
 * (each lane's metadata register, one b32 a lane) and `a` the compressed fragment.
 *
 * @param s The sparse row.
 * @param v The selector and ordered_metadata.
 * @returns The kernel-IR program.
 * @example
 * ```ts
 * import { equal } from "node:assert/strict";
 * import { SPARSE_MMA_TABLE } from "../ir/mma_sparse.ts";
 * import { sparseProbeKernel } from "./mma_probe_sparse.ts";
 * const k = sparseProbeKernel(SPARSE_MMA_TABLE[0]!, { selector: 1, ordered: true });
 * equal(k.params.length, 5);
 * equal(k.name, "probe_sp_m16n8k16_f16_f32_s1_ord");
 * ```
 */
export function sparseProbeKernel(s: SparseMmaShape, v: SparseVariant): Kernel {
  const b = new KernelBuilder();
  const tid = b.readSreg("tid.x", "tid");
  const operand = (name: string, regs: number, type: RegType) => {
    const base = b.loadParam("u64", name);
    const off = b.reg("u64");
    b.emit(ir.mulWide(off, tid, imm(regs * 4)));
    const addr = b.reg("u64");
    b.emit(ir.bin("add", "u64", addr, base, off));
    const rs: Reg[] = [];
    for (let r = 0; r < regs; r++) rs.push(b.reg(type, `${name}${r}`));
    return { addr, regs: rs };
  };
  const A = operand("a", s.a.regs, s.a.regType);
  const B = operand("b", s.b.regs, s.b.regType);
  const C = operand("c", s.c.regs, s.c.regType);
  const D = operand("d", s.c.regs, s.c.regType);
  const E = operand("e", 1, "b32");
  for (const X of [A, B, C, E]) {
    X.regs.forEach((r, i) => b.emit(ir.ldg("b32", [r], X.addr, i * 4)));
  }
  b.emit(ir.mma(s.name, D.regs, A.regs, B.regs, C.regs, {
    meta: E.regs[0]!,
    selector: v.selector,
    ordered: v.ordered,
  }));
  D.regs.forEach((r, i) => b.emit(ir.stg("b32", [r], D.addr, i * 4)));
  const out: Kernel = {
    kind: "kernel",
    name: `${probeName(s)}_s${v.selector}${v.ordered ? "_ord" : ""}`,
    target: "sm80",
    params: ["a", "b", "c", "d", "e"].map((name) => ({ name, kind: "tensor", ptx: "u64" })),
    threads: 32,
    dynamicSmemBytes: 0,
    grid: { tileM: 1, tileN: 1, swizzle: 1, splitK: 1, m: 1, n: 1, batch: null },
    regs: b.regs,
    body: b.body,
  };
  verifyKernel(out);
  return out;
}

/** The kept dense columns of each (row, chunk) of a sparse A. */
type Keep = (row: number, chunk: number) => readonly number[];

/** The pattern "first kept columns of every chunk". */
function firstKept(s: SparseMmaShape): Keep {
  const cols = Object.freeze(Array.from({ length: s.meta.kept }, (_, i) => i));
  return () => cols;
}

/** A random legal pattern (2:4; tf32 1:2; s4/u4 two of the four pairs). */
function randomKeep(s: SparseMmaShape, rng: Rng): Keep {
  const { group, kept, chunks } = s.meta;
  const pairs = group === 8;
  const slots = pairs ? 4 : group;
  const pick = pairs ? 2 : kept;
  const t: (readonly number[])[] = [];
  for (let i = 0; i < s.m * chunks; i++) {
    const all = Array.from({ length: slots }, (_, j) => j);
    for (let j = slots - 1; j > 0; j--) {
      const x = rng.int(0, j);
      [all[j], all[x]] = [all[x]!, all[j]!];
    }
    const sel = all.slice(0, pick).sort((x, y) => x - y);
    t.push(pairs ? sel.flatMap((p) => [2 * p, 2 * p + 1]) : sel);
  }
  return (r, c) => t[r * chunks + c]!;
}

/** A dense A restricted to the pattern: `a` where kept, 0 elsewhere. */
function restrict(s: SparseMmaShape, keep: Keep, a: (r: number, c: number) => number) {
  const { group } = s.meta;
  return (r: number, c: number) => keep(r, Math.floor(c / group)).includes(c % group) ? a(r, c) : 0;
}

/**
 * The compressed A fragment bytes of a sparse row: the kept values of dense A (by the
 * pattern `keep`) through the row's compressed map.
 */
function packSparseA(s: SparseMmaShape, keep: Keep, a: (r: number, c: number) => number) {
  const { group, kept } = s.meta;
  return packFragment(s.a, (r, j) => {
    const chunk = Math.floor(j / kept);
    return a(r, chunk * group + keep(r, chunk)[j % kept]!);
  });
}

/**
 * Each lane's metadata register of a sparse row for pattern `keep` and a selector, one b32
 * a lane (little-endian). Lanes that supply no metadata under the selector get 0xEEEEEEEE
 * (valid, and a different pattern).
 *
 * @param s The sparse row.
 * @param selector The sparsity selector.
 * @param keep The kept dense columns of each (row, chunk).
 * @returns The bytes a sparse probe kernel loads as `e`.
 */
export function packMeta(s: SparseMmaShape, selector: number, keep: Keep): Uint8Array {
  const bytes = new Uint8Array(32 * 4);
  const dv = new DataView(bytes.buffer);
  for (let lane = 0; lane < 32; lane++) {
    let w = 0;
    let supplies = false;
    for (let n = 0; n < 8; n++) {
      const rc = s.meta.coord(lane, selector, n);
      if (rc === undefined) continue;
      supplies = true;
      w = (w | (metaNibble(s, keep(rc[0], rc[1])) << (4 * n))) >>> 0;
    }
    dv.setUint32(4 * lane, supplies ? w : 0xeeeeeeee, true);
  }
  return bytes;
}

/** The launchers of a sparse row's variant: the device (or simulator) and the simulator. */
export type SparseLaunchers = (v: SparseVariant) => [ProbeLauncher, ProbeLauncher | null];

/** Every variant a sparse row's probe runs: each legal selector, plain and ordered. */
export function sparseVariants(s: SparseMmaShape): SparseVariant[] {
  return s.meta.selectors.flatMap((selector) => [
    { selector, ordered: false },
    { selector, ordered: true },
  ]);
}

/**
 * The probe launches of one sparse row, judged against the row: the C/D map launches
 * (pattern "first kept", selector 0) and, for every variant, a random product with a random
 * pattern, against the host product of the decompressed A (exact).
 *
 * @param s The sparse row under test.
 * @param mode Recorded in the result.
 * @param launchers The launchers of each variant.
 * @param seed Seed of the random inputs.
 * @returns The verdict (`product` sums over the variants).
 */
export function evaluateSparseProbe(
  s: SparseMmaShape,
  mode: ProbeMode,
  launchers: SparseLaunchers,
  seed: number,
): ProbeResult {
  let simSame: boolean | null = null;
  const run = (v: SparseVariant, keep: Keep, x: ProbeInputs) => {
    const [launch, sim] = launchers(v);
    const a = packSparseA(s, keep, x.a);
    const b = packFragment(s.b, x.b);
    const c = packFragment(s.c, x.c);
    const e = packMeta(s, v.selector, keep);
    const d = launch(a, b, c, e);
    if (sim !== null) simSame = (simSame ?? true) && equalBytes(d, sim(a, b, c, e));
    return unpackFragment(s.c, d);
  };
  const first = firstKept(s);
  const v0 = { selector: 0, ordered: false };
  const rows = run(v0, first, sparseIdInputs(s, first, "rows"));
  const cols = run(v0, first, sparseIdInputs(s, first, "cols"));
  const rng = new Rng(seed);
  const prods = sparseVariants(s).map((v) => {
    const keep = randomKeep(s, rng);
    const rnd = randomInputs(s, rng);
    const x = { ...rnd, a: restrict(s, keep, rnd.a) };
    return { d: run(v, keep, x), want: hostProduct(s, x) };
  });
  const metaMap = discoverMeta(s, launchers);
  const simIdentical: boolean | null = simSame === null
    ? metaMap.simSame
    : simSame && metaMap.simSame !== false;
  return probeVerdict(s, mode, checkCMap(s, rows, cols, prods), simIdentical, metaMap.check);
}

/**
 * Finds which (lane, nibble) of the metadata registers each (row, chunk) of A is read from,
 * for every selector, with launches of a binary code: A's kept values all 1, C 0; launch
 * (bit b, half h) writes nibble 0b1110 ("keep the upper half of the chunk") where bit b of
 * the slot index 8 * lane + nibble is set and 0b0100 (the lower half) elsewhere, and B
 * (k, j) is 1 exactly where k is in the upper half of chunk 8h + j, so that D[i][j] is the
 * kept count where row i's chunk 8h + j read a 1 bit and 0 where it read a 0 bit.
 */
function discoverMeta(
  s: SparseMmaShape,
  launchers: SparseLaunchers,
): { check: ProbeMetaCheck; simSame: boolean | null } {
  const { group, kept, chunks } = s.meta;
  const a = packFragment(s.a, () => 1);
  const c = packFragment(s.c, () => 0);
  let simSame: boolean | null = null;
  const mismatches: ProbeMetaMismatch[] = [];
  let agree = 0;
  let total = 0;
  for (const selector of s.meta.selectors) {
    const [launch, sim] = launchers({ selector, ordered: false });
    const slot = new Float64Array(s.m * chunks); // the (lane, nibble) slot index found
    for (let h = 0; h * 8 < chunks; h++) {
      const b = packFragment(s.b, (k, j) => {
        const ch = Math.floor(k / group);
        return ch - 8 * h === j && k % group >= group / 2 ? 1 : 0;
      });
      for (let bit = 0; bit < 8; bit++) {
        const e = new Uint8Array(128);
        const dv = new DataView(e.buffer);
        for (let lane = 0; lane < 32; lane++) {
          let w = 0;
          for (let n = 0; n < 8; n++) {
            w = (w | ((((8 * lane + n) >> bit) & 1 ? 0xe : 0x4) << (4 * n))) >>> 0;
          }
          dv.setUint32(4 * lane, w, true);
        }
        const bytes = launch(a, b, c, e);
        if (sim !== null) simSame = (simSame ?? true) && equalBytes(bytes, sim(a, b, c, e));
        const d = unpackFragment(s.c, bytes);
        for (let lane = 0; lane < 32; lane++) {
          for (let r = 0; r < s.c.regs; r++) {
            for (let el = 0; el < s.c.elemsPerReg; el++) {
              const [i, j] = s.c.coord(lane, r, el);
              const ch = 8 * h + j;
              if (ch >= chunks) continue;
              const v = d(lane, r, el);
              const x = v === kept ? 1 : v === 0 ? 0 : NaN;
              slot[i * chunks + ch] = slot[i * chunks + ch]! + x * (1 << bit);
            }
          }
        }
      }
    }
    const where = new Map<number, [number, number]>();
    for (let lane = 0; lane < 32; lane++) {
      for (let n = 0; n < 8; n++) {
        const rc = s.meta.coord(lane, selector, n);
        if (rc !== undefined) where.set(rc[0] * chunks + rc[1], [lane, n]);
      }
    }
    for (let i = 0; i < s.m; i++) {
      for (let ch = 0; ch < chunks; ch++) {
        total++;
        const table = where.get(i * chunks + ch)!;
        const x = slot[i * chunks + ch]!;
        const observed: [number, number] = Number.isNaN(x) ? [NaN, NaN] : [x >> 3, x & 7];
        if (observed[0] === table[0] && observed[1] === table[1]) agree++;
        else if (mismatches.length < 8) {
          mismatches.push({ selector, row: i, chunk: ch, table, observed });
        }
      }
    }
  }
  return { check: { agree, total, mismatches }, simSame };
}

/** C/D id inputs of a sparse row on pattern `keep` (the same for every row). */
function sparseIdInputs(s: SparseMmaShape, keep: Keep, which: "rows" | "cols"): ProbeInputs {
  const zero = () => 0;
  const { group } = s.meta;
  // The kept dense columns in k order (the same in every row).
  const kept: number[] = [];
  for (let k = 0; k < s.k; k++) {
    if (keep(0, Math.floor(k / group)).includes(k % group)) kept.push(k);
  }
  const rank = new Map(kept.map((k, i) => [k, i]));
  const isKept = (k: number) => rank.has(k);
  const k0 = kept[0]!;
  if (!INT_TYPES.has(s.aType)) {
    return which === "rows"
      ? { a: (i, k) => (k === k0 ? i + 1 : 0), b: (k) => (k === k0 ? 1 : 0), c: zero }
      : { a: (_i, k) => (k === k0 ? 1 : 0), b: (k, j) => (k === k0 ? j + 1 : 0), c: zero };
  }
  return which === "rows"
    ? { a: (i, k) => (isKept(k) && rank.get(k)! <= i ? 1 : 0), b: () => 1, c: zero }
    : {
      a: (_i, k) => (isKept(k) ? 1 : 0),
      b: (k, j) => (isKept(k) && rank.get(k)! <= j ? 1 : 0),
      c: zero,
    };
}

/** The GPU probe of one sparse row: a module of one kernel per variant. */
export function gpuSparseProbe(cuda: Cuda, s: SparseMmaShape, seed: number): ProbeResult {
  const buffers: DeviceBuffer[] = [];
  const unloads: (() => void)[] = [];
  try {
    const alloc = (n: number) => {
      const b = cuda.alloc(n);
      buffers.push(b);
      return b;
    };
    const dBytes = 32 * s.c.regs * 4;
    const [ba, bb, bc, bd, be] = [32 * s.a.regs * 4, 32 * s.b.regs * 4, dBytes, dBytes, 128]
      .map(alloc) as [DeviceBuffer, DeviceBuffer, DeviceBuffer, DeviceBuffer, DeviceBuffer];
    const cache = new Map<string, [ProbeLauncher, ProbeLauncher]>();
    const launchers: SparseLaunchers = (v) => {
      const key = `${v.selector}/${v.ordered}`;
      let l = cache.get(key);
      if (l === undefined) {
        const kernel = sparseProbeKernel(s, v);
        const module = cuda.loadModule(printPtx([kernel]));
        unloads.push(() => module.unload());
        const fn = module.getFunction(kernel.name);
        const gpu = gpuProbeLauncher(cuda, fn, [ba, bb, bc, be], bd);
        l = [gpu, simProbeLauncher(s, kernel)];
        cache.set(key, l);
      }
      return l;
    };
    return evaluateSparseProbe(s, "gpu", launchers, seed);
  } catch (e) {
    if (!(e instanceof CudaError)) throw e;
    return failedProbe(s, e.message, sparseVariants(s).length);
  } finally {
    releaseProbe(buffers, unloads);
  }
}
