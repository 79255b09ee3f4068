/**
 * The C artefact (backends/aot/c.ts): the generated file compiles warning-free
 * as C and as C++ (`-Wall -Wextra -Werror`, the toolkit's cuda.h), links
 * against the fake driver (tests/gpu/testdata/fake_libcuda.c) and, launch by
 * launch, refuses exactly what `launchViolations` refuses, with its messages,
 * and passes a valid launch to cuLaunchKernel with the contract's grid, the
 * manifest's block and shared memory, and the arguments in ABI order.
 *
 * Skipped visibly without a C compiler or cuda.h (failed under CI=true).
 */

import assert from "node:assert/strict";
import {
  GROUPED_ARTEFACT_SOURCE,
  HGEMM_CAB_SOURCE,
  SPARSE_ARTEFACT_SOURCE,
  splitKArtefactSource,
} from "./_programs.ts";
import { join } from "node:path";
import { compile, type CompiledKernel } from "../compiler.ts";
import { cSource } from "../backends/aot/c.ts";
import { gemm } from "./_cli.ts";
import {
  contractGrid,
  contractWorkspaceBytes,
  type LaunchContract,
  launchContract,
  launchViolations,
  MAX_DIM,
  type TensorBinding,
  tensorBytes,
  tensorView,
} from "../backends/ptx/contract.ts";
import { stridedKernel } from "./_strided_manifests.ts";
import { problemContract } from "../backends/aot/_group.ts";
import { groupTable } from "../backends/ptx/group_table.ts";
import { groupedGrid, problemTiles } from "../ir/kernel.ts";
import { Rng } from "../numerics/random.ts";
import { cTest, INCLUDE, sh } from "./_c_toolchain.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const FAKE = join(ROOT, "tests/gpu/testdata/fake_libcuda.c");

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

/** A C harness: reads one launch a line, prints the status, the message and what the fake got. */
function harness(cs: readonly LaunchContract[]): string {
  const cases = cs.map((c, i) => {
    let t = 1;
    const args = [
      "0",
      ...c.tensors.map(() => `P(${t++})`),
      ...c.dims.map(() => `I(${t++})`),
      ...c.strides.map(() => `I(${t++})`),
      ...c.scalars.map(() => `F(${t++})`),
      ...(c.workspace !== null ? [`P(${t++})`, `(size_t)P(${t++})`] : []),
    ];
    return `    case ${i}: s = gemmc_${c.name}_launch(${args.join(", ")}); break;`;
  });
  return `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemmc.h"
int fake_last_launch(uint32_t *geometry, uint64_t *bits, char *types);
int fake_last_memset(uint64_t *out);
static char *tok[64];
#define P(i) (CUdeviceptr)strtoull(tok[i], 0, 0)
#define I(i) (int64_t)strtoll(tok[i], 0, 10)
#define F(i) strtod(tok[i], 0)
int main(void) {
  static char line[8192];
  while (fgets(line, sizeof line, stdin)) {
    int n = 0, s = -1, i;
    char *p = strtok(line, " \\n");
    while (p && n < 64) { tok[n++] = p; p = strtok(0, " \\n"); }
    if (n == 0) continue;
    if (!strcmp(tok[0], "load")) s = gemmc_load();
    else if (!strcmp(tok[0], "unload")) { gemmc_unload(); s = 0; }
    else switch (atoi(tok[0])) {
${cases.join("\n")}
    default: return 3;
    }
    printf("S %d\\n", s);
    if (*gemmc_last_error()) printf("E %s\\n", gemmc_last_error());
    if (s == 0 && strcmp(tok[0], "load") && strcmp(tok[0], "unload")) {
      uint32_t geo[7];
      uint64_t bits[64], ms[3];
      char types[64 * 8];
      int np = fake_last_launch(geo, bits, types);
      printf("L");
      for (i = 0; i < 7; i++) printf(" %u", geo[i]);
      for (i = 0; i < np; i++) printf(" %s:%llu", types + 8 * i, (unsigned long long)bits[i]);
      fake_last_memset(ms);
      printf("\\nM %llu %llu %llu\\n", (unsigned long long)ms[0], (unsigned long long)ms[1],
             (unsigned long long)ms[2]);
    }
    printf(".\\n");
    fflush(stdout);
  }
  return 0;
}
`;
}

/** One launch to try: sizes, addresses, scalars, the caller's workspace (or none: gemmc's own). */
interface Case {
  readonly kernel: number;
  readonly sizes: Record<string, number>;
  readonly tensors: Map<string, bigint>;
  readonly scalars: Map<string, number>;
  readonly workspace?: { address: bigint; bytes: number };
}

function line(c: LaunchContract, k: Case): string {
  const num = (v: number) =>
    Number.isNaN(v)
      ? "nan"
      : v === Infinity
      ? "inf"
      : v === -Infinity
      ? "-inf"
      : Object.is(v, -0)
      ? "-0"
      : `${v}`;
  const ws = c.workspace === null
    ? []
    : [`0x${(k.workspace?.address ?? 0n).toString(16)}`, `${k.workspace?.bytes ?? 0}`];
  return [
    `${k.kernel}`,
    ...c.tensors.map((t) => `0x${k.tensors.get(t.name)!.toString(16)}`),
    ...c.dims.map((d) => `${k.sizes[d.name]}`),
    ...c.strides.map((s) => `${k.sizes[s.name]}`),
    ...c.scalars.map((s) => num(k.scalars.get(s.name)!)),
    ...ws,
  ].join(" ");
}

/** A seeded generator: numerics/random.ts's mulberry32 as a function. */
function rng(seed: number): () => number {
  const g = new Rng(seed);
  return () => g.next();
}

/** A launch that keeps the contract: random sizes on the alignments, disjoint aligned buffers. */
function validCase(c: LaunchContract, kernel: number, r: () => number): Case {
  const sizes: Record<string, number> = {};
  for (const d of c.dims) sizes[d.name] = 128 * (1 + Math.floor(r() * 8));
  validStrides(c, sizes, r);
  const tensors = new Map<string, bigint>();
  let at = 0x7f0000000000n + BigInt(Math.floor(r() * 1000)) * 256n;
  for (const t of c.tensors) {
    tensors.set(t.name, at);
    at += BigInt(Math.ceil(tensorBytes(t, sizes) / 256) * 256 + 256);
  }
  const scalars = new Map(c.scalars.map((s) => [s.name, Math.round((r() * 8 - 4) * 64) / 64]));
  const ws = c.workspace !== null && r() < 0.5
    ? { address: at, bytes: contractWorkspaceBytes(c, sizes) + Math.floor(r() * 4) * 16 }
    : undefined;
  return { kernel, sizes, tensors, scalars, ...(ws !== undefined ? { workspace: ws } : {}) };
}

/**
 * Stride values that keep the contract (C takes every one): the dense value
 * plus a few aligned elements of padding; an input's batch stride sometimes 0.
 */
function validStrides(c: LaunchContract, sizes: Record<string, number>, r: () => number): void {
  const pad = (a: number) => a * Math.floor(r() * 4);
  for (const t of c.tensors) {
    const v = tensorView(t);
    if (v === null) continue;
    const dim = (d: string | number) => typeof d === "number" ? d : sizes[d]!;
    if (typeof v.matrixStride === "string" && sizes[v.matrixStride] === undefined) {
      sizes[v.matrixStride] = dim(v.contiguous) + pad(t.alignElems);
    }
    const sm = v.matrixStride === null ? dim(v.contiguous) : dim(v.matrixStride);
    if (typeof v.batchStride === "string" && sizes[v.batchStride] === undefined) {
      sizes[v.batchStride] = !t.output && r() < 0.3
        ? 0
        : (v.rows === null ? 1 : dim(v.rows)) * sm + pad(t.alignElems);
    }
  }
}

/** The valid case broken in one or two random ways. */
function brokenCase(c: LaunchContract, kernel: number, r: () => number): Case {
  const k = validCase(c, kernel, r);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const breaks = 1 + Math.floor(r() * 2);
  let ws = k.workspace;
  for (let b = 0; b < breaks; b++) {
    const t = pick(c.tensors);
    switch (Math.floor(r() * (c.strides.length > 0 ? 10 : 8))) {
      case 0:
        if (c.dims.length > 0) k.sizes[pick(c.dims).name] = pick([-1, MAX_DIM + 1, -7, 0]);
        break;
      case 1:
        if (c.dims.length > 0) k.sizes[pick(c.dims).name]! += pick([1, 2, 4, 8, 12]);
        break;
      case 2:
        k.tensors.set(t.name, 0n);
        break;
      case 3:
        k.tensors.set(t.name, k.tensors.get(t.name)! + BigInt(pick([1, 2, 4, 8])));
        break;
      case 4: {
        const o = c.tensors.find((x) => x.output)!;
        k.tensors.set(o.name, k.tensors.get(t.name)! + BigInt(pick([0, 256])));
        break;
      }
      case 5:
        if (c.scalars.length > 0) {
          k.scalars.set(pick(c.scalars).name, pick([NaN, Infinity, -Infinity]));
        }
        break;
      case 6:
        if (c.workspace !== null) {
          const base = ws ??
            { address: 0x7e0000000000n, bytes: contractWorkspaceBytes(c, k.sizes) };
          ws = pick([
            { ...base, address: base.address + 8n },
            { ...base, bytes: base.bytes - 16 },
            { ...base, address: k.tensors.get(t.name)! },
          ]);
        }
        break;
      case 8:
      case 9: {
        // A stride negative, below its minimum, misaligned, 0, or of a small dimension.
        const s = pick(c.strides).name;
        const v = k.sizes[s]!;
        k.sizes[s] = pick([-1, -v - 8, v - 8, v + 1, v + 2, 0, 1]);
        break;
      }
      default:
        if (c.dims.length > 0) k.sizes[pick(c.dims).name] = 0;
    }
  }
  return { ...k, ...(ws !== undefined ? { workspace: ws } : {}) };
}

function expected(c: LaunchContract, k: Case): string[] {
  const tensors = new Map<string, TensorBinding>(
    [...k.tensors].map(([n, address]) => [n, { address }]),
  );
  return launchViolations(c, k.sizes, tensors, k.scalars, k.workspace);
}

/** The argument bits the fake should see, in ABI order. */
function expectedParams(c: LaunchContract, k: Case, ownWs: bigint | null): string[] {
  const out: string[] = [];
  const f32 = (v: number) => new Uint32Array(new Float32Array([v]).buffer)[0]!;
  for (const t of c.tensors) out[t.param] = `u64:${k.tensors.get(t.name)!}`;
  for (const d of c.dims) out[d.param] = `u32:${k.sizes[d.name]}`;
  for (const s of c.strides) out[s.param] = `u64:${k.sizes[s.name]}`;
  for (const s of c.scalars) out[s.param] = `${s.ptx}:${f32(k.scalars.get(s.name)!)}`;
  if (c.workspace !== null) out[c.workspace.param] = `u64:${k.workspace?.address ?? ownWs}`;
  return out;
}

interface Reply {
  readonly status: number;
  readonly errors: string[];
  readonly launch: string[] | null;
  readonly memset: bigint[] | null;
}

function replies(text: string): Reply[] {
  return text.split(".\n").filter((b) => b.trim() !== "").map((b) => {
    const lines = b.split("\n").filter((l) => l !== "");
    const status = Number(lines[0]!.slice(2));
    const errs: string[] = [];
    let launch: string[] | null = null;
    let memset: bigint[] | null = null;
    for (const l of lines.slice(1)) {
      if (l.startsWith("L ")) launch = l.slice(2).split(" ");
      else if (l.startsWith("M ")) memset = l.slice(2).split(" ").map(BigInt);
      else errs.push(l.startsWith("E ") ? l.slice(2) : l);
    }
    return { status, errors: errs, launch, memset };
  });
}

async function build(kernels: readonly CompiledKernel[], cxx: boolean): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_c_" });
  await Deno.writeTextFile(join(dir, "gemmc.h"), cSource(kernels));
  await Deno.writeTextFile(
    join(dir, "impl.c"),
    '#define GEMMC_IMPLEMENTATION\n#include "gemmc.h"\n',
  );
  await Deno.writeTextFile(
    join(dir, "harness.c"),
    harness(kernels.map((k) => launchContract(k.manifest))),
  );
  const flags = ["-O2", "-Wall", "-Wextra", "-Werror", `-I${INCLUDE}`, `-I${dir}`, "-c"];
  const impl = join(dir, cxx ? "impl.cpp" : "impl.c");
  if (cxx) await Deno.copyFile(join(dir, "impl.c"), impl);
  await sh(cxx ? "c++" : "cc", [...flags, impl, "-o", join(dir, "impl.o")]);
  await sh("cc", [...flags, join(dir, "harness.c"), "-o", join(dir, "harness.o")]);
  await sh("cc", ["-w", "-c", FAKE, "-o", join(dir, "fake.o")]);
  const exe = join(dir, "harness");
  await sh(cxx ? "c++" : "cc", [
    join(dir, "harness.o"),
    join(dir, "impl.o"),
    join(dir, "fake.o"),
    "-o",
    exe,
  ]);
  return exe;
}

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

// ---------------------------------------------------------------- grouped kernels (DESIGN §6.2)

const GROUPED_RESULT = compile(GROUPED_ARTEFACT_SOURCE);
assert.ok(GROUPED_RESULT.ok, GROUPED_RESULT.diagnostics.map((d) => d.message).join("; "));
const GROUPED = GROUPED_RESULT.kernels;
const FAKE_SMS = 132;

/**
 * What the grouped C functions call and tests/gpu/testdata/fake_libcuda.c may lack: defined
 * here where it does (the occupancy the harness sets; a table copy recorded, not performed).
 */
function groupedFakes(): string {
  const fake = Deno.readTextFileSync(FAKE);
  const has = (f: string) => new RegExp(`CUresult ${f}\\(`).test(fake);
  return `#include <stdint.h>
#include <string.h>
typedef int CUresult;
OCCUPANCY_GLOBALS
uint64_t fake_copy_dst, fake_copy_n;
unsigned char fake_copy_bytes[1 << 16];
${has("cuCtxGetDevice") ? "" : "CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }"}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int threads, size_t smem) {
  if (!f || threads <= 0) return 1;
  (void)smem;
  fake_occupancy_calls++;
  *n = fake_occupancy;
  return 0;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *stream) {
  (void)stream;
  fake_copy_dst = dst;
  fake_copy_n = n;
  memcpy(fake_copy_bytes, src, n < sizeof fake_copy_bytes ? n : sizeof fake_copy_bytes);
  return 0;
}
`.replace(
    has("cuOccupancyMaxActiveBlocksPerMultiprocessor") ? /CUresult cuOccupancy[^]*?\n}\n/ : /^$/,
    "",
  ).replace(
    "OCCUPANCY_GLOBALS",
    // The fake's own occupancy (fake_occupancy, fake_occupancy_calls) where it has one.
    has("cuOccupancyMaxActiveBlocksPerMultiprocessor")
      ? ""
      : "int fake_occupancy = 3, fake_occupancy_calls = 0;",
  );
}

/** The grouped harness: one command a line (T: table then launch, R: run, Q: occupancy calls). */
function groupedHarness(ks: readonly CompiledKernel[]): string {
  const cases = ks.map((k, i) => {
    const c = problemContract(k.manifest);
    const f = `gemmc_${k.name}`;
    const fields = k.manifest.group!.fields.filter((x) => x.kind !== "tiles_before");
    const read = fields.map((x) =>
      `      ps[j].${x.name} = ${
        x.kind === "tensor"
          ? "(CUdeviceptr)strtoull(tok[t++], 0, 0)"
          : x.kind === "dim"
          ? "(uint32_t)strtoull(tok[t++], 0, 10)"
          : "(int64_t)strtoll(tok[t++], 0, 10)"
      };`
    );
    const sc = c.scalars.map(() => "(float)strtod(tok[t++], 0)");
    return `    case ${i}: {
      static ${f}_problem ps[64];
      uint32_t count = (uint32_t)strtoul(tok[t++], 0, 10), j;
      size_t bytes = (size_t)strtoull(tok[t++], 0, 10);
      float sc[4] = {0};
      int si = 0;
      ${sc.map((x) => `sc[si++] = ${x};`).join(" ")}
      (void)si;
      (void)sc;
      for (j = 0; j < count; j++) {
${read.join("\n")}
      }
      if (cmd == 'T') {
        s = ${f}_table(ps, count, count ? table : 0, bytes, &tiles);
        if (s != 0) break;
        printf("N %u\\nB ", tiles);
        for (j = 0; j < count * ${f}_entry_bytes; j++) printf("%02x", table[j]);
        printf("\\n");
        s = ${f}_launch(0, (CUdeviceptr)0x7e0000001000ULL, count, tiles${
      c.scalars.map((_, n) => `, sc[${n}]`).join("")
    });
      } else {
        fake_copy_dst = fake_copy_n = 0;
        s = ${f}_run(0, ps, count, table, (CUdeviceptr)0x7e0000002000ULL, bytes${
      c.scalars.map((_, n) => `, sc[${n}]`).join("")
    });
      }
      launched = 1;
      break;
    }`;
  });
  return `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemmc.h"
int fake_last_launch(uint32_t *geometry, uint64_t *bits, char *types);
extern int fake_occupancy, fake_occupancy_calls;
extern uint64_t fake_copy_dst, fake_copy_n;
extern unsigned char fake_copy_bytes[];
static char *tok[1024];
static unsigned char table[1 << 16];
int main(void) {
  static char line[65536];
  while (fgets(line, sizeof line, stdin)) {
    int n = 0, s = -1, t = 2, launched = 0;
    uint32_t tiles = 0, i;
    char cmd;
    char *p = strtok(line, " \\n");
    while (p && n < 1024) { tok[n++] = p; p = strtok(0, " \\n"); }
    if (n == 0) continue;
    cmd = tok[0][0];
    if (cmd == 'l') s = gemmc_load();
    else if (cmd == 'u') { gemmc_unload(); s = 0; }
    else if (cmd == 'Q') { printf("Q %d\\n.\\n", fake_occupancy_calls); fflush(stdout); continue; }
    else if (cmd == 'O') { fake_occupancy = atoi(tok[1]); printf(".\\n"); fflush(stdout); continue; }
    else switch (atoi(tok[1])) {
${cases.join("\n")}
    default: return 3;
    }
    printf("S %d\\n", s);
    if (*gemmc_last_error()) printf("E %s\\n", gemmc_last_error());
    if (s == 0 && launched) {
      uint32_t geo[7];
      uint64_t bits[64];
      char types[64 * 8];
      int np = fake_last_launch(geo, bits, types), k;
      printf("L");
      for (k = 0; k < 7; k++) printf(" %u", geo[k]);
      for (k = 0; k < np; k++) printf(" %s:%llu", types + 8 * k, (unsigned long long)bits[k]);
      printf("\\n");
      if (cmd == 'R') {
        printf("C %llu %llu ", (unsigned long long)fake_copy_dst, (unsigned long long)fake_copy_n);
        for (i = 0; i < fake_copy_n; i++) printf("%02x", fake_copy_bytes[i]);
        printf("\\n");
      }
    }
    printf(".\\n");
    fflush(stdout);
  }
  return 0;
}
`;
}

async function buildGrouped(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_cg_" });
  await Deno.writeTextFile(join(dir, "gemmc.h"), cSource(GROUPED));
  await Deno.writeTextFile(
    join(dir, "impl.c"),
    '#define GEMMC_IMPLEMENTATION\n#include "gemmc.h"\n',
  );
  await Deno.writeTextFile(join(dir, "harness.c"), groupedHarness(GROUPED));
  await Deno.writeTextFile(join(dir, "fake2.c"), groupedFakes());
  const flags = ["-O2", "-Wall", "-Wextra", "-Werror", `-I${INCLUDE}`, `-I${dir}`, "-c"];
  await sh("cc", [...flags, join(dir, "impl.c"), "-o", join(dir, "impl.o")]);
  await sh("c++", [...flags, "-xc++", join(dir, "impl.c"), "-o", join(dir, "implxx.o")]);
  await sh("cc", [...flags, join(dir, "harness.c"), "-o", join(dir, "harness.o")]);
  await sh("cc", ["-w", "-c", FAKE, "-o", join(dir, "fake.o")]);
  await sh("cc", ["-w", "-c", join(dir, "fake2.c"), "-o", join(dir, "fake2.o")]);
  const exe = join(dir, "harness");
  await sh("cc", [
    join(dir, "harness.o"),
    join(dir, "impl.o"),
    join(dir, "fake.o"),
    join(dir, "fake2.o"),
    "-o",
    exe,
  ]);
  return exe;
}

/** One grouped problem: its sizes (dims and strides) and its tensors' addresses. */
interface GProblem {
  readonly sizes: Record<string, number>;
  readonly addresses: Record<string, bigint>;
}

/** A random problem list: valid ones (some empty, with null addresses), some broken. */
function groupedProblems(c: LaunchContract, r: () => number, broken: boolean): GProblem[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const n = pick([0, 1, 2, 3, 5, 8]);
  const out: GProblem[] = [];
  let at = 0x7f0000000000n + BigInt(Math.floor(r() * 1000)) * 256n;
  for (let i = 0; i < n; i++) {
    const sizes: Record<string, number> = {};
    for (const d of c.dims) sizes[d.name] = pick([0, 8, 40, 64, 136, 264, 1000]);
    if (r() < 0.2) sizes[c.dims[0]!.name] = 0;
    validStrides(c, sizes, r);
    const addresses: Record<string, bigint> = {};
    for (const t of c.tensors) {
      const bytes = tensorBytes(t, sizes);
      addresses[t.name] = bytes === 0 && r() < 0.5 ? 0n : at;
      at += BigInt(Math.ceil(bytes / 256) * 256 + 256);
    }
    if (broken && r() < 0.5) {
      const t = pick(c.tensors);
      switch (pick([0, 1, 2, 3, 4])) {
        case 0:
          addresses[t.name] = 0n;
          break;
        case 1:
          addresses[t.name] = (addresses[t.name] || at) + 2n;
          break;
        case 2:
          sizes[pick(c.dims).name] = pick([2147483648, 4294967295, 12]);
          break;
        case 3: {
          const o = c.tensors.find((x) => x.output)!;
          addresses[o.name] = addresses[t.name] || at;
          break;
        }
        default:
          if (c.strides.length > 0) sizes[pick(c.strides).name] = pick([-1, 1, 7]);
      }
    }
    out.push({ sizes, addresses });
  }
  return out;
}

/** One problem's expected messages: launchViolations' less the rules grouped problems drop. */
function problemMessages(c: LaunchContract, i: number, p: GProblem): string[] {
  const tensors = new Map<string, TensorBinding>(
    Object.entries(p.addresses).map(([n, address]) => [n, { address }]),
  );
  const bad = launchViolations({ ...c, scalars: [] }, p.sizes, tensors, new Map());
  const sizesOk = !bad.some((m) => /is not an integer in/.test(m));
  return bad.filter((m) => {
    if (/the sizes give an empty grid/.test(m)) return false;
    const nul = /^Tensor "(\w+)" has a null address$/.exec(m);
    if (nul === null || !sizesOk) return true;
    return tensorBytes(c.tensors.find((t) => t.name === nul[1])!, p.sizes) !== 0;
  }).map((m) => `Problem ${i}: ${m}`);
}

function groupedLine(
  cmd: "T" | "R",
  index: number,
  k: CompiledKernel,
  ps: readonly GProblem[],
  bytes: number,
  scalars: readonly number[],
): string {
  const fields = k.manifest.group!.fields.filter((x) => x.kind !== "tiles_before");
  return [
    cmd,
    index,
    ps.length,
    bytes,
    ...scalars,
    ...ps.flatMap((p) =>
      fields.map((f) =>
        f.kind === "tensor" ? `0x${p.addresses[f.name]!.toString(16)}` : `${p.sizes[f.name]}`
      )
    ),
  ].join(" ");
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

cTest(
  "C artefact, grouped: tables as groupTable writes them, problems checked, the grid",
  async () => {
    const exe = await buildGrouped();
    const r = rng(23);
    const lines: string[] = ["load"];
    const want: ((o: GReply) => void)[] = [(o) => assert.equal(o.status, 0, o.errors.join("\n"))];
    let valid = 0, refused = 0, empty = 0, later = 0;
    for (let n = 0; n < 160; n++) {
      const index = n % GROUPED.length;
      const k = GROUPED[index]!;
      const c = problemContract(k.manifest);
      const ps = groupedProblems(c, r, n % 2 === 1);
      const entry = k.manifest.group!.entryBytes;
      const bytes = ps.length * entry - (n % 7 === 3 && ps.length > 0 ? 8 : 0);
      const scalars = c.scalars.map(() => n % 11 === 5 ? Infinity : Math.round(r() * 64) / 16);
      const cmd = n % 3 === 0 ? "R" : "T";
      lines.push(groupedLine(cmd, index, k, ps, bytes, scalars).replaceAll("Infinity", "inf"));
      const what = `case ${n}: ${lines.at(-1)}`;
      let msgs = bytes < ps.length * entry
        ? [
          `Kernel "${k.name}": the table holds ${
            Math.max(0, bytes)
          } bytes; ${ps.length} problems ` +
          `need ${ps.length * entry}`,
        ]
        : ps.flatMap((p, i) => problemMessages(c, i, p));
      const scalarMsgs = c.scalars.flatMap((s, i) =>
        Number.isFinite(scalars[i]!)
          ? []
          : [`Scalar "${s.name}" is Infinity: a finite f32 is needed`]
      );
      if (msgs.length === 0) msgs = scalarMsgs;
      if (msgs.some((m) => /^Problem [1-9]/.test(m))) later++;
      want.push((o) => {
        assert.deepEqual(o.errors, msgs, what);
        if (msgs.length > 0) {
          assert.equal(o.status, 1, what);
          assert.equal(o.launch, null, what);
          refused++;
          return;
        }
        valid++;
        if (ps.every((p) => problemTiles(k.kernel.grid, p.sizes) === 0)) empty++;
        const table = groupTable(k.manifest.group!, k.kernel.grid, ps);
        assert.equal(o.status, 0, what);
        if (cmd === "T") {
          assert.equal(o.tiles, table.totalTiles, what);
          assert.equal(o.table, hex(table.bytes), what);
        } else {
          // No problem: nothing to copy.
          const copy: [bigint, bigint, string] = ps.length > 0
            ? [0x7e0000002000n, BigInt(table.bytes.length), hex(table.bytes)]
            : [0n, 0n, ""];
          assert.deepEqual(o.copy, copy, what);
        }
        const [gx, gy, gz, bx, , , smem, ...params] = o.launch!;
        const grid = groupedGrid(table.totalTiles, FAKE_SMS * 3);
        assert.deepEqual([gx, gy, gz].map(Number), grid, what);
        assert.equal(Number(bx), k.manifest.block[0], what);
        assert.equal(Number(smem), k.manifest.dynamicSmemBytes, what);
        const f32 = (v: number) => new Uint32Array(new Float32Array([v]).buffer)[0]!;
        assert.deepEqual(params, [
          `u64:${cmd === "T" ? 0x7e0000001000n : 0x7e0000002000n}`,
          `u32:${ps.length}`,
          ...scalars.map((v) => `f32:${f32(v)}`),
        ], what);
      });
    }
    lines.push("Q");
    const out = groupedReplies(await sh(exe, [], lines.join("\n") + "\n"));
    assert.equal(out.length, want.length + 1);
    want.forEach((f, i) => f(out[i]!));
    assert.ok(
      valid >= 40 && refused >= 40 && empty >= 3 && later >= 10,
      `${valid} valid, ${refused} refused, ${empty} empty, ${later} name a later problem`,
    );
    assert.equal(out.at(-1)!.calls, GROUPED.length, "the occupancy is found once per kernel");
  },
);

cTest("C artefact, grouped: the persistent grid caps at SMs x occupancy, found once", async () => {
  const exe = await buildGrouped();
  const k = GROUPED[0]!;
  const c = problemContract(k.manifest);
  // 1000 x 4000 at 64x128 tiles: 16 x 32 = 512 tiles a problem, 1024 in all.
  const big = (at: bigint): GProblem => {
    const sizes = { M: 1000, N: 4000, K: 64 };
    const addresses: Record<string, bigint> = {};
    for (const t of c.tensors) {
      addresses[t.name] = at;
      at += BigInt(tensorBytes(t, sizes) + 256);
    }
    return { sizes, addresses };
  };
  const ps = [big(0x7f0000000000n), big(0x7f8000000000n)];
  const line = groupedLine("T", 0, k, ps, 80, []);
  const out = groupedReplies(
    await sh(
      exe,
      [],
      ["O 2", "load", line, "O 5", line, "unload", "load", line, "Q"].join("\n") + "\n",
    ),
  );
  const grids = out.filter((o) => o.launch !== null).map((o) => Number(o.launch![0]));
  // Occupancy 2: 264 blocks; kept after the fake says 5; found again after gemmc_unload.
  assert.deepEqual(grids, [264, 264, 660]);
  assert.equal(out.at(-1)!.calls, 2);
  assert.equal(out.find((o) => o.tiles !== undefined)!.tiles, 1024);
});

cTest("C artefact, grouped: launching before gemmc_load", async () => {
  const exe = await buildGrouped();
  const k = GROUPED[1]!;
  const [ok] = groupedReplies(await sh(exe, [], groupedLine("T", 1, k, [], 0, [1, 2]) + "\n"));
  assert.equal(ok!.status, 2);
  assert.deepEqual(ok!.errors, ['Kernel "gs": gemmc_load() has not succeeded']);
});

interface GReply extends Reply {
  readonly tiles?: number;
  readonly table?: string;
  readonly copy: [bigint, bigint, string] | null;
  readonly calls?: number;
}

function groupedReplies(text: string): GReply[] {
  return text.split(".\n").filter((b) => b.trim() !== "").map((b) => {
    const lines = b.split("\n").filter((l) => l !== "");
    let status = -1,
      tiles: number | undefined,
      table: string | undefined,
      calls: number | undefined;
    let launch: string[] | null = null, copy: [bigint, bigint, string] | null = null;
    const errors: string[] = [];
    let seenStatus = 0;
    for (const l of lines) {
      if (l.startsWith("S ")) {
        // T prints the table's status, then the launch's: the last one counts.
        status = Number(l.slice(2));
        seenStatus++;
      } else if (l.startsWith("N ")) tiles = Number(l.slice(2));
      else if (l.startsWith("B ")) table = l.slice(2);
      else if (l.startsWith("L ")) launch = l.slice(2).split(" ");
      else if (l.startsWith("Q ")) calls = Number(l.slice(2));
      else if (l.startsWith("C ")) {
        const [d, n, h] = l.slice(2).split(" ");
        copy = [BigInt(d!), BigInt(n!), h ?? ""];
      } else errors.push(l.startsWith("E ") ? l.slice(2) : l);
    }
    void seenStatus;
    return {
      status,
      errors,
      launch,
      memset: null,
      copy,
      ...(tiles !== undefined ? { tiles } : {}),
      ...(table !== undefined ? { table } : {}),
      ...(calls !== undefined ? { calls } : {}),
    };
  });
}

cTest(
  "examples/c/main.c builds against its header; its grouped part runs on the fake",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "gemmc_cex_" });
    const r = compile(Deno.readTextFileSync(join(ROOT, "examples/c/kernels.gemm")));
    assert.ok(r.ok);
    await Deno.writeTextFile(join(dir, "gemmc_kernels.h"), cSource(r.kernels));
    await Deno.writeTextFile(join(dir, "fake2.c"), groupedFakes());
    const flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", `-I${INCLUDE}`, `-I${dir}`];
    await sh("cc", [...flags, "-c", join(ROOT, "examples/c/main.c"), "-o", join(dir, "main.o")]);
    await sh("cc", ["-w", "-c", FAKE, "-o", join(dir, "fake.o")]);
    await sh("cc", ["-w", "-c", join(dir, "fake2.c"), "-o", join(dir, "fake2.o")]);
    const exe = join(dir, "x");
    await sh("cc", [
      join(dir, "main.o"),
      join(dir, "fake.o"),
      join(dir, "fake2.o"),
      "-lm",
      "-o",
      exe,
    ]);
    // The fake runs no kernel (every comparison fails, exit 1): the refusal is what it shows here.
    const p = await new Deno.Command(exe, { stdout: "piped", stderr: "piped" }).output();
    const out = new TextDecoder().decode(p.stdout);
    assert.match(
      out,
      /^refused table \(status 1\):\nProblem 2: Tensor "X" at 0x[0-9a-f]+ is not aligned to 16 bytes \(align 8 of bf16\)$/m,
    );
    assert.match(out, /^experts +max error/m);
  },
);

Deno.test("gemm compile --emit c and --emit py take grouped kernels", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_cg4_" });
  const src = join(dir, "g.gemm");
  await Deno.writeTextFile(src, GROUPED_ARTEFACT_SOURCE);
  const c = await gemm("compile", src, "--emit", "c");
  assert.equal(c.code, 0, c.stderr);
  assert.equal(c.stdout, cSource(GROUPED));
  assert.match(c.stdout, /^gemmc_status gemmc_experts_run\(CUstream stream, /m);
  const py = await gemm("compile", src, "--emit", "py");
  assert.equal(py.code, 0, py.stderr);
  assert.match(py.stdout, /^experts\.moe = _gemmc_experts_moe$/m);
  assert.match(py.stdout, /^gs\.grouped = _gemmc_gs_grouped$/m);
});

// ---------------------------------------------------------------- structured-sparse A (issue 21)

cTest(
  "C artefact, sparse A: the kept values and the metadata checked and sized as contract.ts",
  async () => {
    const r = compile(SPARSE_ARTEFACT_SOURCE);
    assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
    const ks = r.kernels;
    const cs = ks.map((k) => launchContract(k.manifest));
    for (const c of cs) {
      assert.deepEqual(c.tensors.map((t) => [t.name, t.sparse?.storage]), [
        ["A", "values"],
        ["A_meta", "metadata"],
        ["B", undefined],
        ["D", undefined],
      ]);
    }
    await build(ks, true); // warning-free as C++ too
    const exe = await build(ks, false);
    const rnd = rng(29);
    const cases: Case[] = [];
    for (let i = 0; i < 160; i++) {
      const kernel = i % cs.length;
      cases.push(
        i % 3 === 0 ? validCase(cs[kernel]!, kernel, rnd) : brokenCase(cs[kernel]!, kernel, rnd),
      );
    }
    // The special cases: K whose kept values break A's alignment (even and odd), and A_meta or A
    // placed to end just at D (or one alignment into it), as their stored extents give them.
    const special = (kernel: number, f: (k: Case, c: LaunchContract) => void) => {
      const c = cs[kernel]!;
      const k = validCase(c, kernel, rnd);
      f(k, c);
      cases.push(k);
      return cases.length - 1;
    };
    const ends: number[] = [];
    const odd: number[] = [];
    for (const kernel of [0, 1]) {
      odd.push(special(kernel, (k) => k.sizes.K = kernel === 0 ? 200 : 400));
      odd.push(special(kernel, (k) => k.sizes.K = kernel === 0 ? 201 : 401));
      for (const name of ["A", "A_meta"]) {
        for (const into of [false, true]) {
          ends.push(special(kernel, (k, c) => {
            const t = c.tensors.find((x) => x.name === name)!;
            const back = BigInt(tensorBytes(t, k.sizes) - (into ? t.alignBytes : 0));
            k.tensors.set(name, k.tensors.get("D")! - back);
          }));
        }
      }
    }
    const input = ["load", ...cases.map((k) => line(cs[k.kernel]!, k))].join("\n") + "\n";
    const out = replies(await sh(exe, [], input));
    assert.equal(out.length, cases.length + 1);
    let valid = 0, refused = 0, keptValues = 0;
    cases.forEach((k, i) => {
      const c = cs[k.kernel]!;
      const o = out[i + 1]!;
      const want = expected(c, k);
      const what = `case ${i} (${c.name}): ${line(c, k)}`;
      assert.deepEqual(o.errors, want, what);
      if (want.some((m) => m.includes("(the kept values, K="))) keptValues++;
      if (want.length > 0) {
        assert.equal(o.status, 1, what);
        refused++;
        return;
      }
      valid++;
      assert.equal(o.status, 0, what);
      const [gx, gy, gz, , , , , ...params] = o.launch!;
      assert.deepEqual([gx, gy, gz].map(Number), contractGrid(c, k.sizes), what);
      // ABI order: A, A_meta, B, D, the dims, the scalars.
      assert.deepEqual(params, expectedParams(c, k, null), what);
      assert.equal(params[1], `u64:${k.tensors.get("A_meta")}`, what);
    });
    // Ending at D launches; one alignment into it overlaps.
    for (const [j, i] of ends.entries()) {
      const name = j % 4 < 2 ? "A" : "A_meta";
      assert.deepEqual(
        out[i + 1]!.errors,
        j % 2 === 0 ? [] : [`Output "D" overlaps input "${name}"`],
        `case ${i}`,
      );
    }
    const msg = (k: number, a: number) =>
      `Tensor "A" declares align ${a} but its leading dimension (the kept values, K=${k} / 2 = ${
        k / 2
      }) is not a multiple of ${a}`;
    const errs = (n: number) => out[odd[n]! + 1]!.errors;
    assert.deepEqual([errs(0)[0], errs(1)[0]], [msg(200, 8), msg(201, 8)]);
    assert.deepEqual([errs(2)[0], errs(3)[0]], [msg(400, 32), msg(401, 32)]);
    assert.ok(valid >= 40 && refused >= 60 && keptValues >= 6, `${valid} ${refused} ${keptValues}`);
  },
);
