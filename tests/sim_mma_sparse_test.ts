// The simulator's `mma.sp` (sparse rows of ir/mma_sparse.ts) against the dense product of the
// decompressed A. The test draws a random 2:4 pattern (1:2 for tf32, 4:8 in pairs for s4/u4),
// compresses A and writes the metadata with helpers of its own: the lane and nibble of each
// (row, chunk) come from the layout formulas below, written from the ISA's metadata figures
// independently of the table's `meta.coord`. One warp loads the fragments and the metadata,
// runs the mma.sp and stores D (harness/mma_probe_sparse.ts's sparse probe kernel).

import assert from "node:assert/strict";
import { SPARSE_MMA_TABLE, type SparseMmaShape } from "../ir/mma_sparse.ts";
import type { MmaDtype } from "../ir/mma_table.ts";
import { formatProbe, runProbe } from "../harness/mma_probe.ts";
import {
  packFragment,
  type ProbeLauncher,
  simProbeLauncher,
  unpackFragment,
} from "../harness/mma_probe_common.ts";
import { evaluateSparseProbe, sparseProbeKernel } from "../harness/mma_probe_sparse.ts";
import { Rng } from "../numerics/random.ts";
import { SimError } from "../backends/sim/types.ts";
import { verifyKernel } from "../ir/verify_kernel.ts";
import { printPtx } from "../backends/ptx/print.ts";
import * as ir from "../ir/builder.ts";

const INT = new Set<MmaDtype>(["s8", "u8", "s4", "u4"]);

/** Dense elements a chunk spans and how many of them are kept. */
function chunking(s: SparseMmaShape): { group: number; kept: number; chunks: number } {
  const group = s.aType === "tf32" ? 2 : s.aType === "s4" || s.aType === "u4" ? 8 : 4;
  return { group, kept: group / 2, chunks: s.k / group };
}

/** (lane, nibble) of the metadata of (row, chunk) under selector `sel` (ISA figures). */
function metaLane(s: SparseMmaShape, sel: number, row: number, chunk: number): [number, number] {
  const { chunks } = chunking(s);
  const unit16 = s.aType === "f16" || s.aType === "bf16" || s.aType === "tf32";
  const g = row & 7;
  const h = row >> 3;
  if (chunks === 4) return [4 * g + sel, 4 * h + chunk];
  if (chunks === 8 && unit16) return [4 * g + 2 * sel + (chunk >> 2), 4 * h + (chunk & 3)];
  if (chunks === 8) return [4 * g + 2 * sel + h, chunk];
  return [4 * g + 2 * (chunk >> 3) + h, chunk & 7];
}

/** The nibble of kept columns `cols` (ascending) of a chunk. */
function nibbleOf(s: SparseMmaShape, cols: readonly number[]): number {
  if (s.aType === "tf32") return cols[0] === 0 ? 0b0100 : 0b1110;
  if (cols.length === 2) return cols[0]! | (cols[1]! << 2);
  return (cols[0]! >> 1) | ((cols[2]! >> 1) << 2);
}

type Pattern = (readonly number[])[]; // kept columns by row * chunks + chunk

function randomPattern(s: SparseMmaShape, rng: Rng): Pattern {
  const { group, kept, chunks } = chunking(s);
  const pairs = group === 8;
  const out: Pattern = [];
  for (let i = 0; i < s.m * chunks; i++) {
    const slots = pairs ? 4 : group;
    const all = Array.from({ length: slots }, (_, j) => j);
    for (let j = slots - 1; j > 0; j--) {
      const x = rng.int(0, j);
      [all[j], all[x]] = [all[x]!, all[j]!];
    }
    const pick = all.slice(0, pairs ? 2 : kept).sort((x, y) => x - y);
    out.push(pairs ? pick.flatMap((p) => [2 * p, 2 * p + 1]) : pick);
  }
  return out;
}

/** Small nonzero values for floats (exact products), the whole range for integers. */
function randomValue(t: MmaDtype, rng: Rng): number {
  const [lo, hi] = t === "s8"
    ? [-128, 127]
    : t === "u8"
    ? [1, 255]
    : t === "s4"
    ? [-8, 7]
    : t === "u4"
    ? [1, 15]
    : [-6, 6];
  for (;;) {
    const v = rng.int(lo, hi);
    if (v !== 0) return v;
  }
}

/** Kept values of A (compressed, M x K/2) and the dense A they stand for on a pattern. */
function denseOf(s: SparseMmaShape, p: Pattern, comp: readonly number[]): number[] {
  const { group, kept, chunks } = chunking(s);
  const dense = new Array<number>(s.m * s.k).fill(0);
  for (let r = 0; r < s.m; r++) {
    for (let j = 0; j < s.k / 2; j++) {
      const c = Math.floor(j / kept);
      dense[r * s.k + c * group + p[r * chunks + c]![j % kept]!] = comp[r * (s.k / 2) + j]!;
    }
  }
  return dense;
}

/** Metadata registers: pattern `p` in the lanes of selector `sel`, `fill` in the others. */
function metaBytes(s: SparseMmaShape, sel: number, p: Pattern, fill: number[] | null = null) {
  const { chunks } = chunking(s);
  const words = fill === null ? new Array<number>(32).fill(0xeeeeeeee) : fill.slice();
  const written = new Set<number>();
  for (let r = 0; r < s.m; r++) {
    for (let c = 0; c < chunks; c++) {
      const [lane, n] = metaLane(s, sel, r, c);
      if (!written.has(lane)) words[lane] = 0;
      written.add(lane);
      words[lane] = (words[lane]! | (nibbleOf(s, p[r * chunks + c]!) << (4 * n))) >>> 0;
    }
  }
  const bytes = new Uint8Array(128);
  const dv = new DataView(bytes.buffer);
  words.forEach((w, l) => dv.setUint32(4 * l, w >>> 0, true));
  return { bytes, words };
}

interface Case {
  readonly comp: number[];
  readonly b: number[];
  readonly c: number[];
  readonly abytes: Uint8Array;
  readonly bbytes: Uint8Array;
  readonly cbytes: Uint8Array;
}

function randomCase(s: SparseMmaShape, rng: Rng): Case {
  const comp = Array.from({ length: s.m * (s.k / 2) }, () => randomValue(s.aType, rng));
  const b = Array.from({ length: s.k * s.n }, () => randomValue(s.bType, rng));
  const cr = INT.has(s.aType) ? 100000 : 20;
  const c = Array.from({ length: s.m * s.n }, () => rng.int(-cr, cr));
  return {
    comp,
    b,
    c,
    abytes: packFragment(s.a, (r, j) => comp[r * (s.k / 2) + j]!),
    bbytes: packFragment(s.b, (k, j) => b[k * s.n + j]!),
    cbytes: packFragment(s.c, (i, j) => c[i * s.n + j]!),
  };
}

/** D = dense A · B + C, exact (saturated to s32 for integers). */
function reference(s: SparseMmaShape, dense: readonly number[], x: Case): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.m; i++) {
    for (let j = 0; j < s.n; j++) {
      let acc = x.c[i * s.n + j]!;
      for (let k = 0; k < s.k; k++) acc += dense[i * s.k + k]! * x.b[k * s.n + j]!;
      out.push(s.cType === "s32" ? Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, acc)) : acc);
    }
  }
  return out;
}

function run(s: SparseMmaShape, sel: number, ordered: boolean, x: Case, e: Uint8Array): number[] {
  const launch = simProbeLauncher(s, sparseProbeKernel(s, { selector: sel, ordered }));
  const d = unpackFragment(s.c, launch(x.abytes, x.bbytes, x.cbytes, e));
  const out = new Array<number>(s.m * s.n).fill(NaN);
  for (let l = 0; l < 32; l++) {
    for (let r = 0; r < s.c.regs; r++) {
      for (let el = 0; el < s.c.elemsPerReg; el++) {
        const [i, j] = s.c.coord(l, r, el);
        out[i * s.n + j] = d(l, r, el);
      }
    }
  }
  return out;
}

Deno.test("mma.sp: D = decompressed A · B + C for every sparse row, selector, ordered", () => {
  const rng = new Rng(2101);
  for (const s of SPARSE_MMA_TABLE) {
    for (const sel of s.meta.selectors) {
      for (const ordered of [false, true]) {
        const x = randomCase(s, rng);
        const p = randomPattern(s, rng);
        const got = run(s, sel, ordered, x, metaBytes(s, sel, p).bytes);
        assert.deepEqual(got, reference(s, denseOf(s, p, x.comp), x), `${s.name} sel ${sel}`);
      }
    }
  }
});

Deno.test("mma.sp: one wrong metadata index changes D (to the product of the moved A)", () => {
  const rng = new Rng(2102);
  for (const s of SPARSE_MMA_TABLE) {
    const { chunks } = chunking(s);
    const x = randomCase(s, rng);
    const p = randomPattern(s, rng);
    const good = run(s, 0, false, x, metaBytes(s, 0, p).bytes);
    // One chunk, one index moved to a free position (tf32: the other element of the pair;
    // s4/u4: the second kept pair to the free pair).
    const at = rng.int(0, s.m * chunks - 1);
    const old = p[at]!;
    const { group } = chunking(s);
    let moved: number[];
    if (s.aType === "tf32") moved = [1 - old[0]!];
    else if (group === 4) {
      const free = [0, 1, 2, 3].filter((c) => !old.includes(c));
      moved = [old[0]!, free[rng.int(0, free.length - 1)]!].sort((a, b) => a - b);
    } else {
      const pairsOld = [old[0]! >> 1, old[2]! >> 1];
      const free = [0, 1, 2, 3].filter((q) => !pairsOld.includes(q));
      const q = [pairsOld[0]!, free[rng.int(0, free.length - 1)]!].sort((a, b) => a - b);
      moved = q.flatMap((v) => [2 * v, 2 * v + 1]);
    }
    const bad = p.slice();
    bad[at] = moved;
    const got = run(s, 0, false, x, metaBytes(s, 0, bad).bytes);
    assert.notDeepEqual(got, good, `${s.name}: a wrong index left D unchanged`);
    assert.deepEqual(got, reference(s, denseOf(s, bad, x.comp), x), s.name);
  }
});

Deno.test("mma.sp: the selector chooses which lanes' metadata is read", () => {
  const rng = new Rng(2103);
  for (const s of SPARSE_MMA_TABLE) {
    const x = randomCase(s, rng);
    if (s.meta.selectors.length === 1) {
      // All four lanes of each group supply metadata: selector 0 only.
      const k = sparseProbeKernel(s, { selector: 0, ordered: false });
      const body = k.body.map((o) => (o.op === "mma" ? { ...o, selector: 1 } : o));
      assert.throws(() => verifyKernel({ ...k, body }), /selector 1/);
      continue;
    }
    // Pattern P in the lanes of selector 0, pattern Q in the lanes of the last selector.
    const last = s.meta.selectors.at(-1)!;
    const P = randomPattern(s, rng);
    const Q = randomPattern(s, rng);
    const words = metaBytes(s, 0, P).words;
    const both = metaBytes(s, last, Q, words).bytes;
    const dP = run(s, 0, false, x, both);
    const dQ = run(s, last, false, x, both);
    assert.deepEqual(dP, reference(s, denseOf(s, P, x.comp), x), `${s.name} selector 0`);
    assert.deepEqual(dQ, reference(s, denseOf(s, Q, x.comp), x), `${s.name} selector ${last}`);
    assert.notDeepEqual(dP, dQ, s.name);
  }
});

Deno.test("mma.sp: undefined metadata is a SimError; ordered_metadata refuses a descending pair", () => {
  const rng = new Rng(2104);
  const s = SPARSE_MMA_TABLE.find((r) => r.name === "sp.m16n8k16.f16.f32")!;
  const x = randomCase(s, rng);
  const p = randomPattern(s, rng);
  const { bytes, words } = metaBytes(s, 0, p);
  // Both indices equal in lane 0's nibble 0: undefined.
  const ub = metaBytes(s, 0, p, words.map((w, l) => (l === 0 ? (w & ~0xf) >>> 0 : w)));
  const ubBytes = new Uint8Array(bytes);
  new DataView(ubBytes.buffer).setUint32(0, (words[0]! & ~0xf) >>> 0, true);
  assert.ok(ub.words.length === 32);
  assert.throws(() => run(s, 0, false, x, ubBytes), SimError);
  // Lane 0 nibble 0 as (1, 0): legal for mma.sp (the kept values swap places), not ordered.
  const desc = new Uint8Array(bytes);
  new DataView(desc.buffer).setUint32(0, ((words[0]! & ~0xf) | 0b0001) >>> 0, true);
  const swapped = p.slice();
  swapped[0] = [1, 0];
  assert.deepEqual(run(s, 0, false, x, desc), reference(s, denseOf(s, swapped, x.comp), x));
  assert.throws(() => run(s, 0, true, x, desc), /ordered_metadata/);
});

Deno.test("mma.sp in the IR: the verifier and the PTX printer", () => {
  const s = SPARSE_MMA_TABLE.find((r) => r.name === "sp.m16n8k32.bf16.f32")!;
  const k = sparseProbeKernel(s, { selector: 1, ordered: false });
  verifyKernel(k);
  const mma = k.body.find((o) => o.op === "mma")!;
  assert.ok(mma.op === "mma");
  const swap = (o: typeof mma) => ({ ...k, body: k.body.map((x) => (x === mma ? o : x)) });
  const { meta: _m, ...noMeta } = mma;
  assert.throws(() => verifyKernel(swap(noMeta)), /metadata register/);
  assert.throws(() => verifyKernel(swap({ ...mma, selector: 2 })), /selector 2/);
  assert.throws(() => verifyKernel(swap({ ...mma, meta: mma.d[0]! })), /metadata/);
  const { selector: _s, ...plain } = noMeta;
  const dense = { ...plain, shape: "m16n8k16.bf16.f32" };
  assert.throws(() => verifyKernel(swap({ ...dense, meta: mma.a[0]! })), /dense/);
  const ptx = printPtx([k]);
  assert.match(ptx, /^\.version 8\.0$/m);
  assert.match(
    ptx,
    /mma\.sp\.sync\.aligned\.m16n8k32\.row\.col\.f32\.bf16\.bf16\.f32 \{[^}]+\}, \{[^}]+\}, \{[^}]+\}, \{[^}]+\}, %b\d+, 0x1;/,
  );
  const ord = printPtx([sparseProbeKernel(s, { selector: 0, ordered: true })]);
  assert.match(ord, /^\.version 8\.5$/m);
  assert.match(ord, /mma\.sp::ordered_metadata\.sync\.aligned\.m16n8k32\./);
  const r = (id: number) => ({ kind: "reg" as const, id, type: "b32" as const });
  assert.deepEqual(
    Object.keys(ir.mma("m16n8k16.f16.f16", [r(1), r(2)], [], [], [r(1), r(2)])),
    ["op", "shape", "d", "a", "b", "c"],
  );
});

Deno.test("the sparse probe finds the metadata map a launch reads (a wrong table row)", async () => {
  const s = SPARSE_MMA_TABLE.find((r) => r.name === "sp.m16n8k32.s8.s32")!;
  const launchers = (v: { selector: number; ordered: boolean }) =>
    [simProbeLauncher(s, sparseProbeKernel(s, v)), null] as [ProbeLauncher, null];
  const right = evaluateSparseProbe(s, "sim", launchers, 7);
  assert.ok(right.ok);
  assert.equal(right.metaMap?.agree, 2 * 16 * 8);
  // A table that swaps the two lanes of each pair (rows g and g + 8).
  const meta = Object.freeze({
    ...s.meta,
    coord: (lane: number, sel: number, n: number) => s.meta.coord(lane ^ 1, sel, n),
  });
  const wrong: SparseMmaShape = Object.freeze({ ...s, meta });
  const r = evaluateSparseProbe(wrong, "sim", launchers, 7);
  assert.equal(r.ok, false);
  assert.ok(r.product.agree < r.product.total);
  assert.equal(r.metaMap?.agree, 0);
  for (const m of r.metaMap!.mismatches) {
    assert.deepEqual(m.observed, [m.table[0] ^ 1, m.table[1]]);
  }
  assert.match(formatProbe([r]), /metadata map 0\/256/);
  const all = await runProbe({ mode: "sim", shapes: SPARSE_MMA_TABLE });
  assert.ok(all.every((x) => x.ok && x.metaMap!.agree === x.metaMap!.total));
});
