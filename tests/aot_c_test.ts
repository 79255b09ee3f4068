/**
 * The C artefact (backends/aot/c.ts) of ordinary kernels (hgemm with C, alpha and beta, an s8
 * kernel, a split-K kernel, a batched s4 kernel, and their strided variants): the generated
 * file compiles warning-free as C and as C++ (`-Wall -Wextra -Werror`, the toolkit's cuda.h),
 * links against the fake driver (tests/gpu/testdata/fake_libcuda.c) and, launch by launch,
 * refuses exactly what `launchViolations` refuses, with its messages, and passes a valid launch
 * to cuLaunchKernel with the contract's grid, the manifest's block and shared memory, and the
 * arguments in ABI order. Also gemmc's own split-K workspace, two translation units, a module
 * the driver rejects, and `gemm compile --emit c`. Grouped kernels:
 * tests/aot_c_grouped_test.ts; a structured-sparse A: tests/aot_c_sparse_test.ts; the harness:
 * tests/_aot_c.ts.
 *
 * Skipped visibly without a C compiler or cuda.h (failed under CI=true).
 */

import assert from "node:assert/strict";
import { HGEMM_CAB_SOURCE, splitKArtefactSource } from "./_programs.ts";
import { join } from "node:path";
import { compile } from "../compiler.ts";
import { cSource } from "../backends/aot/c.ts";
import { gemm } from "./_cli.ts";
import {
  contractGrid,
  contractWorkspaceBytes,
  launchContract,
  tensorBytes,
} from "../backends/ptx/contract.ts";
import { stridedKernel } from "./_strided_manifests.ts";
import { cTest, INCLUDE, sh } from "./_c_toolchain.ts";
import {
  brokenCase,
  build,
  type Case,
  expected,
  expectedParams,
  FAKE,
  line,
  replies,
  type Reply,
  rng,
  validCase,
} from "./_aot_c.ts";

/** hgemm (C, alpha, beta), an s8 kernel, a split-K kernel, a batched s4 kernel with a fixed K. */
const SOURCE = `
${HGEMM_CAB_SOURCE}
kernel s8k {
  A: s8[M, K] row
  B: s8[K, N] col
  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}
${splitKArtefactSource("splitk")}
kernel batched_s4 {
  A: s4[L, M, 128] row
  B: s4[L, 128, N] col
  D: s32[L, M, N] row
  D[l, m, n] = A[l, m, k] * B[l, k, n]
}
`;
/**
 * The strided variants (issue 20; hand-built manifests, tests/_strided_manifests.ts):
 * hgemm with lda, ldb and a shared ldc for C and D; split-K with lda; the
 * batched s4 kernel with a batch stride, a broadcast B (batch stride 0) and
 * a literal matrix stride.
 */
const STRIDED = compile(SOURCE.replace(/kernel (\w+) /g, "kernel $1_s ")).kernels;
const KERNELS = [
  ...compile(SOURCE).kernels,
  stridedKernel(STRIDED[0]!, { A: ["lda"], B: ["ldb"], C: ["ldc"], D: ["ldc"] }),
  stridedKernel(STRIDED[2]!, { A: ["lda"], D: ["ldd"] }),
  stridedKernel(STRIDED[3]!, { A: ["sa", "lda"], B: [0, 160], D: ["sd", "ldd"] }),
];
const CONTRACTS = KERNELS.map((k) => launchContract(k.manifest));

for (const cxx of [false, true]) {
  const lang = cxx ? "C++" : "C";
  cTest(
    `C artefact (${lang}): every launch refused as launchViolations says, valid ones launched`,
    async () => {
      assert.equal(KERNELS.length, 7);
      const exe = await build(KERNELS, cxx);
      const r = rng(cxx ? 19 : 7);
      const cases: Case[] = [];
      for (let i = 0; i < 420; i++) {
        const kernel = i % CONTRACTS.length;
        const c = CONTRACTS[kernel]!;
        cases.push(i % 3 === 0 ? validCase(c, kernel, r) : brokenCase(c, kernel, r));
      }
      const before = validCase(CONTRACTS[0]!, 0, r);
      const input = [
        line(CONTRACTS[0]!, before),
        "load",
        ...cases.map((k) => line(CONTRACTS[k.kernel]!, k)),
        "unload",
        line(CONTRACTS[0]!, before),
      ].join("\n") + "\n";
      const out = replies(await sh(exe, [], input));
      assert.equal(out.length, cases.length + 4);
      // Before gemmc_load and after gemmc_unload: refused as not loaded, nothing launched.
      for (const o of [out[0]!, out.at(-1)!]) {
        assert.equal(o.status, 2);
        assert.deepEqual(o.errors, ['Kernel "hgemm": gemmc_load() has not succeeded']);
      }
      assert.equal(out[1]!.status, 0, out[1]!.errors.join("\n"));
      let valid = 0, refused = 0, strideRules = 0;
      cases.forEach((k, i) => {
        const c = CONTRACTS[k.kernel]!;
        const o = out[i + 2]!;
        const want = expected(c, k);
        const what = `case ${i} (${c.name}): ${line(c, k)}`;
        assert.deepEqual(o.errors, want, what);
        if (want.some((m) => / stride /.test(m))) strideRules++;
        if (want.length > 0) {
          assert.equal(o.status, 1, what);
          assert.equal(o.launch, null, what);
          refused++;
          return;
        }
        valid++;
        assert.equal(o.status, 0, what);
        const [gx, gy, gz, bx, by, bz, smem, ...params] = o.launch!;
        assert.deepEqual([gx, gy, gz].map(Number), contractGrid(c, k.sizes), what);
        assert.deepEqual([bx, by, bz].map(Number), [...c.block], what);
        assert.equal(Number(smem), c.dynamicSmemBytes, what);
        let own: bigint | null = null;
        if (c.workspace !== null && k.workspace === undefined) {
          own = BigInt(params.at(-1)!.split(":")[1]!);
          assert.ok(own !== 0n && own % 16n === 0n, what);
        }
        assert.deepEqual(params, expectedParams(c, k, own), what);
        if (own !== null) {
          // gemmc's own workspace: zeroed on the stream when (re)allocated; at least as large.
          const [at, value, bytes] = o.memset!;
          assert.equal(value, 0n, what);
          if (at === own) assert.ok(bytes! >= BigInt(contractWorkspaceBytes(c, k.sizes)), what);
        }
      });
      assert.ok(valid >= 100 && refused >= 180, `${valid} valid, ${refused} refused`);
      assert.ok(strideRules >= 30, `${strideRules} launches broke a stride rule`);
    },
  );
}

cTest("C artefact: gemmc's own split-K workspace grows and is zeroed on the stream", async () => {
  const exe = await build(KERNELS, false);
  const c = CONTRACTS[2]!;
  const r = rng(3);
  const small = validCase(c, 2, r);
  const sizes = { ...small.sizes, M: small.sizes.M! * 4, N: small.sizes.N! * 2 };
  const big: Case = { ...validCase(c, 2, r), sizes };
  const noWs = (k: Case): Case => ({
    kernel: k.kernel,
    sizes: k.sizes,
    tensors: k.tensors,
    scalars: k.scalars,
  });
  const bigNoWs = noWs(big);
  // Re-place the buffers for the larger sizes.
  let at = 0x7f0000000000n;
  for (const t of c.tensors) {
    bigNoWs.tensors.set(t.name, at);
    at += BigInt(Math.ceil(tensorBytes(t, sizes) / 256) * 256 + 256);
  }
  const input = ["load", line(c, noWs(small)), line(c, noWs(small)), line(c, bigNoWs)].join("\n") +
    "\n";
  const [, a, b, d] = replies(await sh(exe, [], input));
  const ws = (o: Reply) => BigInt(o.launch!.at(-1)!.split(":")[1]!);
  for (const o of [a!, b!, d!]) assert.equal(o.status, 0, o.errors.join("\n"));
  assert.deepEqual(a!.memset, [ws(a!), 0n, BigInt(contractWorkspaceBytes(c, small.sizes))]);
  assert.equal(ws(b!), ws(a!), "the workspace is kept between launches");
  assert.deepEqual(d!.memset, [ws(d!), 0n, BigInt(contractWorkspaceBytes(c, sizes))]);
});

cTest("C artefact: two translation units, one with the implementation, link", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_c2_" });
  await Deno.writeTextFile(join(dir, "gemmc.h"), cSource(KERNELS.slice(0, 1)));
  await Deno.writeTextFile(
    join(dir, "a.cpp"),
    '#include "gemmc.h"\nint main(void) { return gemmc_load() == GEMMC_OK ? 0 : 1; }\n',
  );
  await Deno.writeTextFile(
    join(dir, "b.c"),
    '#include "gemmc.h"\n#define GEMMC_IMPLEMENTATION\n#include "gemmc.h"\n#include "gemmc.h"\n',
  );
  const flags = ["-Wall", "-Wextra", "-Werror", `-I${INCLUDE}`, "-c"];
  await sh("c++", [...flags, join(dir, "a.cpp"), "-o", join(dir, "a.o")]);
  await sh("cc", [...flags, join(dir, "b.c"), "-o", join(dir, "b.o")]);
  await sh("cc", ["-w", "-c", FAKE, "-o", join(dir, "fake.o")]);
  await sh("c++", [join(dir, "a.o"), join(dir, "b.o"), join(dir, "fake.o"), "-o", join(dir, "x")]);
  await sh(join(dir, "x"), []);
});

Deno.test("gemm compile --emit c prints cSource of the file's kernels, or writes it to -o", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_c3_" });
  const src = join(dir, "k.gemm");
  await Deno.writeTextFile(src, SOURCE);
  const r = await gemm("compile", src, "--emit", "c");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, cSource(KERNELS.slice(0, 4)));
  const one = await gemm(
    "compile",
    src,
    "--emit",
    "c",
    "--kernel",
    "splitk",
    "-o",
    join(dir, "s.h"),
  );
  assert.equal(one.code, 0, one.stderr);
  assert.equal(await Deno.readTextFile(join(dir, "s.h")), cSource([KERNELS[2]!]));
});

cTest("C artefact: a module the driver rejects: GEMMC_ERROR_CUDA with the JIT log", async () => {
  // The fake driver rejects a module that mentions FAKE_JIT_ERROR, with a log.
  const ks = compile(`kernel FAKE_JIT_ERROR { A: f16[M, K] row  B: f16[K, N] col
    D: f32[M, N] row  D[m, n] = A[m, k] * B[k, n] }`).kernels;
  const exe = await build(ks, false);
  const [load, launch] = replies(
    await sh(
      exe,
      [],
      `load\n${
        line(launchContract(ks[0]!.manifest), validCase(launchContract(ks[0]!.manifest), 0, rng(1)))
      }\n`,
    ),
  );
  assert.equal(load!.status, 3);
  assert.deepEqual(load!.errors, [
    "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed",
    "ptxas fatal   : fake error at line 7",
  ]);
  assert.equal(launch!.status, 2);
});
