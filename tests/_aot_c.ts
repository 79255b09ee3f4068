/**
 * The launch harness of the C artefact's tests (tests/aot_c_test.ts,
 * tests/aot_c_sparse_test.ts, tests/aot_c_grouped_test.ts): a file's kernels
 * (backends/aot/c.ts) built as C or C++ (`-Wall -Wextra -Werror`, the toolkit's
 * cuda.h) and linked against the fake driver (tests/gpu/testdata/fake_libcuda.c)
 * with a harness that reads one launch a line; random launches that keep the
 * contract or break it; what `launchViolations` says of a launch and the
 * argument bits the fake should see; the harness's replies.
 *
 * @module
 */

import { join } from "node:path";
import type { CompiledKernel } from "../compiler.ts";
import { cSource } from "../backends/aot/c.ts";
import {
  contractWorkspaceBytes,
  type LaunchContract,
  launchContract,
  launchViolations,
  MAX_DIM,
  type TensorBinding,
  tensorBytes,
  tensorView,
} from "../backends/ptx/contract.ts";
import { Rng } from "../numerics/random.ts";
import { INCLUDE, sh } from "./_c_toolchain.ts";

/** The repository root, and the fake driver's source. */
export const ROOT = new URL("../", import.meta.url).pathname;
export const FAKE = join(ROOT, "tests/gpu/testdata/fake_libcuda.c");

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
export interface Case {
  readonly kernel: number;
  readonly sizes: Record<string, number>;
  readonly tensors: Map<string, bigint>;
  readonly scalars: Map<string, number>;
  readonly workspace?: { address: bigint; bytes: number };
}

export function line(c: LaunchContract, k: Case): string {
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
export function rng(seed: number): () => number {
  const g = new Rng(seed);
  return () => g.next();
}

/** A launch that keeps the contract: random sizes on the alignments, disjoint aligned buffers. */
export function validCase(c: LaunchContract, kernel: number, r: () => number): Case {
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
export function validStrides(
  c: LaunchContract,
  sizes: Record<string, number>,
  r: () => number,
): void {
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
export function brokenCase(c: LaunchContract, kernel: number, r: () => number): Case {
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

export function expected(c: LaunchContract, k: Case): string[] {
  const tensors = new Map<string, TensorBinding>(
    [...k.tensors].map(([n, address]) => [n, { address }]),
  );
  return launchViolations(c, k.sizes, tensors, k.scalars, k.workspace);
}

/** The argument bits the fake should see, in ABI order. */
export function expectedParams(c: LaunchContract, k: Case, ownWs: bigint | null): string[] {
  const out: string[] = [];
  const f32 = (v: number) => new Uint32Array(new Float32Array([v]).buffer)[0]!;
  for (const t of c.tensors) out[t.param] = `u64:${k.tensors.get(t.name)!}`;
  for (const d of c.dims) out[d.param] = `u32:${k.sizes[d.name]}`;
  for (const s of c.strides) out[s.param] = `u64:${k.sizes[s.name]}`;
  for (const s of c.scalars) out[s.param] = `${s.ptx}:${f32(k.scalars.get(s.name)!)}`;
  if (c.workspace !== null) out[c.workspace.param] = `u64:${k.workspace?.address ?? ownWs}`;
  return out;
}

export interface Reply {
  readonly status: number;
  readonly errors: string[];
  readonly launch: string[] | null;
  readonly memset: bigint[] | null;
}

export function replies(text: string): Reply[] {
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

export async function build(kernels: readonly CompiledKernel[], cxx: boolean): Promise<string> {
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
