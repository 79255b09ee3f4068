/**
 * The sparse lowering (DESIGN §6.3, issue 21): kernels with a structured-sparse A
 * simulate in agreement with the reference (the decompressed A's product) for every
 * sparse type, at sizes that are not tile multiples, with epilogues, batches,
 * split-K, runtime and literal K, each `mma.sp` shape; hazards none; the metadata
 * the kernel reads is the one the reference decompresses with (a changed index
 * changes the output); ptxas takes every default kernel for sm_80 and sm_86 without
 * spills.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { simArgs, simulateGemm } from "../harness/simulate_gemm.ts";
import { randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { compareOutput } from "../harness/compare.ts";
import { chooseReferenceSample, referenceCheck } from "../harness/checks.ts";
import { resolveSizes } from "../harness/sizes.ts";
import { simulate } from "../backends/sim/mod.ts";
import { gridFor } from "../ir/kernel.ts";
import { sparseMetaParam, tensorParam } from "../ir/gemm.ts";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { program, sparseSizes, TYPES } from "./_sparse.ts";
import { launchContract, launchViolations, tensorBytes } from "../backends/ptx/contract.ts";
import { tensorShape } from "../harness/tensor.ts";

function one(src: string, target: "sm80" | "sm86" = "sm80"): CompiledKernel {
  const r = compile(src, { file: "sparse.gemm", target });
  assert.ok(r.ok, r.diagnostics.map((x) => x.message).join("; "));
  return r.kernels[0]!;
}

for (const [a, d, K] of TYPES) {
  Deno.test(`sparse simulate: ${a} -> ${d}, K ${K}, epilogue, M and N not tile multiples`, () => {
    const ck = one(program(`sp_${a}`, a, d, K));
    assert.match(ck.ptx, /mma\.sp::ordered_metadata\.sync\.aligned\.m16n8k/);
    const sizes = sparseSizes(a, K);
    const rep = simulateGemm(ck, sizes, { seed: 3 + a.length });
    assert.equal(rep.sim.hazardCount, 0, "hazards");
    assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
    assert.equal(rep.comparison.elements, 70 * 40);
  });
}

/** Explicit schedules: the smaller `mma.sp` shape of each type, split-K, a batch. */
const SCHEDULES: readonly (readonly [string, string, Record<string, number>])[] = [
  [
    program(
      "f16_k16",
      "f16",
      "f32",
      "96",
      "  schedule {\n    threadblock 64x64x64\n" +
        "    warp 32x32x64\n    mma 16x8x16\n    stages 3\n  }\n",
    ),
    "m16n8k16",
    { M: 70, N: 100 },
  ],
  [
    program(
      "tf32_k8",
      "f32",
      "f32",
      "80",
      "  schedule {\n    threadblock 64x64x32\n" +
        "    warp 32x32x32\n    mma 16x8x8\n    stages 3\n  }\n",
    ),
    "m16n8k8",
    { M: 70, N: 100 },
  ],
  [
    program(
      "s8_k32",
      "s8",
      "s32",
      "192",
      "  schedule {\n    threadblock 64x128x64\n" +
        "    warp 32x64x64\n    mma 16x8x32\n    stages 3\n  }\n",
    ),
    "m16n8k32",
    { M: 70, N: 100 },
  ],
  [
    program(
      "s4_k64",
      "s4",
      "s32",
      "384",
      "  schedule {\n    threadblock 64x64x128\n" +
        "    warp 32x32x128\n    mma 16x8x64\n    stages 3\n  }\n",
    ),
    "m16n8k64",
    { M: 70, N: 100 },
  ],
  [
    program("bf16_split", "bf16", "f32", "1024", "  schedule {\n    split_k 3\n  }\n"),
    "m16n8k32",
    { M: 70, N: 100 },
  ],
  [
    "kernel batched {\n  A: f16[L, M, K] row sparse\n  B: f16[L, K, N] col\n  D: f32[L, M, N]\n" +
    "  D[l, m, n] = A[l, m, k] * B[l, k, n]\n}\n",
    "m16n8k32",
    { L: 2, M: 70, N: 40, K: 208 },
  ],
];

for (const [src, shape, sizes] of SCHEDULES) {
  const name = src.slice(7, src.indexOf(" {"));
  Deno.test(`sparse simulate: ${name} (${shape})`, () => {
    const ck = one(src);
    assert.match(ck.ptx, new RegExp(`mma\\.sp::ordered_metadata\\.sync\\.aligned\\.${shape}\\.`));
    const rep = simulateGemm(ck, sizes, { seed: 11 });
    assert.equal(rep.sim.hazardCount, 0, "hazards");
    assert.ok(rep.comparison.ok, JSON.stringify(rep.comparison.first));
  });
}

Deno.test("sparse simulate: the kernel reads the metadata (another kept index changes D)", () => {
  for (const [a, d] of [["f16", "f32"], ["s8", "s32"], ["f32", "f32"]] as const) {
    const ck = one(program(`mut_${a}`, a, d, "128"));
    const sizes = resolveSizes(ck.gemm, { M: 40, N: 24 });
    const args = randomArgs(ck.gemm, sizes, 5, { alpha: 1.5 });
    const meta = args.tensors.get(sparseMetaParam(ck.gemm)!.name)!;
    // Row 17's first word and row 26's second (rows g and g + 8 of a block, the two
    // words of a packet: both selectors of the two-step rows): swap each nibble's two
    // indices for another legal pair (tf32: the other element of the pair), so that
    // other columns of B meet the values.
    const row = meta.length / 40;
    const before = referenceGemm(ck.gemm, args);
    for (const at of [17 * row, 26 * row + 4]) {
      for (let i = 0; i < 4; i++) {
        const was = meta[at + i]!;
        // 2:4: kept (0, 1) and (1, 2), or (0, 3) and (0, 1) where that was the byte.
        meta[at + i] = a === "f32" ? was ^ 0xaa : was === 0x49 ? 0xc4 : 0x49;
      }
    }
    const after = referenceGemm(ck.gemm, args);
    const grid = gridFor(ck.kernel.grid, sizes);
    simulate(ck.kernel, { grid, args: simArgs(args) }, { hazards: false });
    const dName = tensorParam(ck.gemm, ck.gemm.problem.d.tensor);
    const out = args.tensors.get(dName.name)!;
    assert.ok(compareOutput(out, dName.dtype, after).ok, `${a}: the changed metadata's product`);
    assert.equal(compareOutput(out, dName.dtype, before).ok, false, `${a}: not the old product`);
  }
});

Deno.test("sparse lowering: one metadata load a packet, read with each selector", () => {
  // f16 m16n8k32 (two k-steps a packet: selectors 0 and 1), s8 m16n8k64 (one: 0 only).
  for (const [a, d, sels] of [["f16", "f32", ["0x0", "0x1"]], ["s8", "s32", ["0x0"]]] as const) {
    const ck = one(program(`sel_${a}`, a, d, "1024"));
    const used = new Set([...ck.ptx.matchAll(/mma\.sp[^;]*, (0x[0-9a-f]+);/g)].map((m) => m[1]));
    assert.deepEqual([...used].sort(), [...sels], a);
  }
  // A k-tile of one metadata word a row holds half a packet: refused, with the reason.
  const r = compile(
    program("half", "f16", "f32", "96", "  schedule {\n    threadblock 64x64x32\n  }\n"),
    { file: "half.gemm" },
  );
  assert.equal(r.ok, false);
  assert.equal(r.diagnostics[0]!.code, "E0209");
  assert.match(r.diagnostics[0]!.message, /tile K 32 must be a multiple of 64/);
});

Deno.test("sparse default tiles: 256x128, two stages of four mma.sp k-steps (8-bit with a literal K: two); sm86 keeps the dense tile twice as deep", () => {
  const want = { f16: "256x128x128", f32: "256x128x64", s8: "256x128x256" } as const;
  for (const [a, d] of [["f16", "f32"], ["f32", "f32"], ["s8", "s32"]] as const) {
    const src = program(`dt_${a}`, a, d, "K");
    const sizeHints = { M: 8192, N: 8192, K: 8192 };
    const r80 = compile(src, { file: "dt.gemm", sizeHints, sms: 132 });
    assert.ok(r80.ok);
    const p = r80.kernels[0]!.planned.plan;
    const tb = p.tile!.threadblock;
    assert.equal(`${tb.m}x${tb.n}x${tb.k}`, want[a], `${a} on sm80`);
    assert.equal(p.pipeline!.stages, 2, `${a} stages`);
    assert.ok(p.pipeline!.smemBytes <= 166912, `${a} fits sm80`);
    const r86 = compile(src, { file: "dt.gemm", sizeHints, sms: 84, target: "sm86" });
    assert.ok(r86.ok, `${a} on sm86`);
    const t86 = r86.kernels[0]!.planned.plan.tile!.threadblock;
    assert.equal(t86.k, { f16: 64, f32: 32, s8: 128 }[a], a);
  }
  // A literal K: 256x128x256 spills 4 bytes there (passes/tile_context.ts sparseThreadblock).
  const lit = compile(program("dt_lit", "s8", "s32", "8192"), {
    file: "dt.gemm",
    sizeHints: { M: 8192, N: 8192 },
    sms: 132,
  });
  assert.ok(lit.ok);
  const tl = lit.kernels[0]!.planned.plan.tile!.threadblock;
  assert.equal(`${tl.m}x${tl.n}x${tl.k}`, "256x128x128");
});

ptxasTest(
  "sparse: ptxas takes every default sparse kernel, sm_80 and sm_86, no spills",
  async () => {
    for (const target of ["sm80", "sm86"] as const) {
      for (const [a, d, K] of TYPES) {
        const ck = one(program(`pt_${a}`, a, d, K), target);
        const r = await runPtxas(ck.ptx, { arch: target === "sm80" ? "sm_80" : "sm_86" });
        assert.ok(r.ok, r.log);
        const k = r.kernels[0]!;
        assert.deepEqual(
          [k.spillStoreBytes, k.spillLoadBytes],
          [0, 0],
          `${a} on ${target}: spills`,
        );
      }
    }
  },
);

Deno.test("sparse launch contract: the manifest's storage sizes the buffers as the harness stores them", () => {
  for (const [a, d, K] of TYPES) {
    const ck = one(program(`ct_${a}`, a, d, K));
    const c = launchContract(ck.manifest);
    const sizes = resolveSizes(ck.gemm, { M: 70, N: 40, ...(K === "K" ? { K: 256 } : {}) });
    const meta = sparseMetaParam(ck.gemm)!;
    const aParam = tensorParam(ck.gemm, ck.gemm.problem.a.tensor);
    const m = ck.manifest.params.find((p) => p.name === meta.name)!;
    assert.equal(m.sparse?.storage, "metadata");
    assert.equal(ck.manifest.params.find((p) => p.name === aParam.name)!.sparse?.storage, "values");
    const bindings = new Map<string, { address: bigint; bytes: number }>();
    let at = 1n << 32n;
    for (const t of c.tensors) {
      const p = ck.gemm.params.find((q) => q.name === t.name)!;
      const bytes = p.kind === "tensor" ? tensorShape(p, sizes).bytes : 0;
      assert.equal(tensorBytes(t, sizes), bytes, `${a}: ${t.name}`);
      bindings.set(t.name, { address: at, bytes });
      at += BigInt(Math.ceil(bytes / 256) * 256 + 256);
    }
    const scalars = new Map(c.scalars.map((s) => [s.name, 1.5]));
    assert.deepEqual(launchViolations(c, sizes, bindings, scalars), [], a);
    // One byte short of the metadata, and the launcher says so.
    const short = new Map(bindings);
    short.set(meta.name, {
      ...bindings.get(meta.name)!,
      bytes: bindings.get(meta.name)!.bytes - 1,
    });
    assert.match(
      launchViolations(c, sizes, short, scalars).join("; "),
      new RegExp(`Buffer of tensor "${meta.name}" holds`),
    );
  }
  // A square sparse A: only the stored (last) K is halved.
  const sq = one(
    "kernel sq {\n  A: f16[K, K] row sparse\n  B: f16[K, N] col\n  D: f32[K, N]\n" +
      "  D[m, n] = A[m, k] * B[k, n]\n}\n",
  );
  const sqc = launchContract(sq.manifest);
  for (const t of sqc.tensors) {
    const p = sq.gemm.params.find((q) => q.name === t.name)!;
    if (p.kind !== "tensor") continue;
    assert.equal(tensorBytes(t, { K: 64, N: 8 }), tensorShape(p, { K: 64, N: 8 }).bytes, t.name);
  }
  // A runtime K whose kept values break A's alignment (f16: 8 kept values).
  const ck = one(program("ct_k", "f16", "f32", "K"));
  const c = launchContract(ck.manifest);
  const bad = launchViolations(c, { M: 64, N: 64, K: 200 }, new Map(), new Map());
  assert.ok(
    bad.some((x) =>
      x.includes(
        '"A" declares align 8 but its leading dimension (the kept values, K=200 / 2 = 100)',
      )
    ),
    bad.join("; "),
  );
});

Deno.test("sparse reference check: a sampled check gathers the metadata as words", () => {
  for (const [a, d] of [["f16", "f32"], ["s4", "s32"]] as const) {
    const ck = one(program(`smp_${a}`, a, d, "K"));
    const sizes = resolveSizes(ck.gemm, { M: 96, N: 48, K: 512 });
    const args = randomArgs(ck.gemm, sizes, 7, { alpha: 0.5 });
    simulate(ck.kernel, { grid: gridFor(ck.kernel.grid, sizes), args: simArgs(args) }, {
      hazards: false,
    });
    const out = args.tensors.get(tensorParam(ck.gemm, ck.gemm.problem.d.tensor).name)!;
    const sample = chooseReferenceSample(ck.gemm, sizes, 96 * 16 * 512, 3);
    assert.ok(sample !== null && sample.size > 0);
    assert.ok(referenceCheck(ck.gemm, args, out, sample).comparison.ok, a);
    // A wrong element in a sampled row is caught.
    const row = sample.get("M")?.[1] ?? 1;
    const bad = out.slice();
    bad[(row * 48 + 5) * 4 + 3]! ^= 0x40; // f32 and s32: 4 bytes an element; the top byte
    assert.equal(referenceCheck(ck.gemm, args, bad, sample).comparison.ok, false, a);
  }
});
