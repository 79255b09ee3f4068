/**
 * The C artefact of kernels with TMA tensor maps (sm90, docs/ARCHITECTURE.md §3.4; hand-built,
 * tests/_tensor_map_manifests.ts): the file compiles warning-free as C and C++ against the
 * toolkit's cuda.h and links against the fake driver (tests/gpu/testdata/fake_libcuda.c),
 * whose `cuTensorMapEncodeTiled` validates as the driver does and records its arguments in the
 * map, and whose launch refuses a map it did not encode. Each launch's maps are compared field
 * by field with ir/tensor_map.ts `tensorMapArgs`; a broken rule gives `tensorMapArgs`' own
 * message and launches nothing; a map the driver refuses is GEMMC_ERROR_CUDA naming it.
 *
 * Skipped visibly without a C compiler or cuda.h (failed under CI=true).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { cSource } from "../backends/aot/c.ts";
import type { CompiledKernel } from "../compiler.ts";
import { tensorMapArgs } from "../ir/tensor_map.ts";
import { gridFor } from "../ir/kernel.ts";
import { cTest, INCLUDE, sh } from "./_c_toolchain.ts";
import {
  compiledTmaKernel,
  expectedMapRecord,
  FAKE_MAP_MAGIC,
  fakeMapRecord,
  hgemmTensorMapKernel,
  looselyAligned,
  refusedMapKernel,
} from "./_tensor_map_manifests.ts";

const FAKE = new URL("gpu/testdata/fake_libcuda.c", import.meta.url).pathname;

/**
 * The kernels: hgemm with maps of A and B, the same with A `align 2`, one map the driver
 * refuses, a kernel the sm90 lowering gives its maps, and the same on clusters of 2 (B's box
 * halved, the cluster's grid).
 */
const KERNELS = [
  hgemmTensorMapKernel("tma"),
  looselyAligned(hgemmTensorMapKernel("loose")),
  refusedMapKernel("refused"),
  compiledTmaKernel("real"),
  compiledTmaKernel("clustered", "cluster 2"),
  compiledTmaKernel("clusteredn", "cluster 1x2"),
];

/** Reads `K A B C D M K N alpha beta` a line; prints the status, the error and the launch. */
const HARNESS = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemmc.h"
int fake_last_launch(uint32_t *geometry, uint64_t *bits, char *types);
int fake_last_map(int i, unsigned char *out);
int fake_map_stats(int64_t *out);
int main(void) {
  static char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    char *tok[16];
    int n = 0, s = -1, i, j;
    char *p = strtok(line, " \\n");
    while (p && n < 16) { tok[n++] = p; p = strtok(0, " \\n"); }
    if (n == 0) continue;
    if (!strcmp(tok[0], "load")) s = gemmc_load();
    else if (n == 10) {
      CUdeviceptr a[4];
      int64_t d[3];
      for (i = 0; i < 4; i++) a[i] = (CUdeviceptr)strtoull(tok[1 + i], 0, 0);
      for (i = 0; i < 3; i++) d[i] = strtoll(tok[5 + i], 0, 10);
      switch (atoi(tok[0])) {
        case 0: s = gemmc_tma_launch(0, a[0], a[1], a[2], a[3], d[0], d[1], d[2], 1.0f, 0.0f); break;
        case 1: s = gemmc_loose_launch(0, a[0], a[1], a[2], a[3], d[0], d[1], d[2], 1.0f, 0.0f); break;
        case 2: s = gemmc_refused_launch(0, a[0], a[1], a[2], a[3], d[0], d[1], d[2], 1.0f, 0.0f); break;
        case 3: s = gemmc_real_launch(0, a[0], a[1], a[3], d[0], d[1], d[2]); break;
        case 4: s = gemmc_clustered_launch(0, a[0], a[1], a[3], d[0], d[1], d[2]); break;
        case 5: s = gemmc_clusteredn_launch(0, a[0], a[1], a[3], d[0], d[1], d[2]); break;
        default: return 3;
      }
    } else return 4;
    printf("S %d\\n", s);
    if (*gemmc_last_error()) printf("E %s\\n", gemmc_last_error());
    if (s == 0 && n == 10) {
      uint32_t geo[7];
      uint64_t bits[64];
      char types[64 * 8];
      unsigned char map[128];
      int64_t ms[2];
      int np = fake_last_launch(geo, bits, types);
      printf("G %u %u %u\\n", geo[0], geo[1], geo[2]);
      printf("L");
      for (i = 0; i < np; i++) printf(" %s:%llu", types + 8 * i, (unsigned long long)bits[i]);
      printf("\\n");
      for (i = 0; i < np; i++) {
        if (!fake_last_map(i, map)) continue;
        printf("T %d ", i);
        for (j = 0; j < 128; j++) printf("%02x", map[j]);
        printf("\\n");
      }
      fake_map_stats(ms);
      printf("R %lld\\n", (long long)ms[1]);
    }
    printf(".\\n");
    fflush(stdout);
  }
  return 0;
}
`;

async function build(cxx: boolean): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_c_tmap_" });
  await Deno.writeTextFile(join(dir, "gemmc.h"), cSource(KERNELS));
  const impl = join(dir, cxx ? "impl.cpp" : "impl.c");
  await Deno.writeTextFile(impl, '#define GEMMC_IMPLEMENTATION\n#include "gemmc.h"\n');
  await Deno.writeTextFile(join(dir, "harness.c"), HARNESS);
  const flags = ["-O2", "-Wall", "-Wextra", "-Werror", `-I${INCLUDE}`, `-I${dir}`, "-c"];
  await sh(cxx ? "c++" : "cc", [...flags, impl, "-o", join(dir, "impl.o")]);
  await sh("cc", [...flags, join(dir, "harness.c"), "-o", join(dir, "harness.o")]);
  await sh("cc", ["-w", "-c", FAKE, "-o", join(dir, "fake.o")]);
  const exe = join(dir, "harness");
  const objs = ["harness.o", "impl.o", "fake.o"].map((o) => join(dir, o));
  await sh(cxx ? "c++" : "cc", [...objs, "-o", exe]);
  return exe;
}

interface Reply {
  status: number;
  errors: string[];
  params: string[];
  maps: Map<number, Uint8Array>;
  refused: number;
  /** The launch's grid. */
  grid: number[];
}

function replies(text: string): Reply[] {
  return text.split(".\n").filter((b) => b.trim() !== "").map((b) => {
    const r: Reply = {
      status: NaN,
      errors: [],
      params: [],
      maps: new Map(),
      refused: -1,
      grid: [],
    };
    for (const l of b.split("\n").filter((x) => x !== "")) {
      if (l.startsWith("S ")) r.status = Number(l.slice(2));
      else if (l.startsWith("L")) r.params = l.slice(2).split(" ");
      else if (l.startsWith("G ")) r.grid = l.slice(2).split(" ").map(Number);
      else if (l.startsWith("T ")) {
        const [i, hex] = l.slice(2).split(" ");
        r.maps.set(Number(i), Uint8Array.from(hex!.match(/../g)!.map((h) => parseInt(h, 16))));
      } else if (l.startsWith("R ")) r.refused = Number(l.slice(2));
      else r.errors.push(l.startsWith("E ") ? l.slice(2) : l);
    }
    return r;
  });
}

/** The parameters the fake should get: each tensor's address, dim, scalar and map by name. */
function wantParams(
  ck: CompiledKernel,
  addr: Record<string, bigint>,
  sizes: Record<string, number>,
) {
  const one = new Uint32Array(new Float32Array([1]).buffer)[0]!;
  return ck.manifest.params.map((p) => {
    if (p.kind === "tensor") return `u64:${addr[p.name]}`;
    if (p.kind === "dim") return `u32:${sizes[p.name]}`;
    if (p.kind === "scalar") return `f32:${p.name === "alpha" ? one : 0}`;
    return `tmap:${addr[p.tmap!.tensor]}`;
  });
}

/** Checks a launch's maps against tensorMapArgs; returns how many there were. */
function checkMaps(
  ck: CompiledKernel,
  r: Reply,
  addr: Record<string, bigint>,
  sizes: Record<string, number>,
): number {
  const maps = ck.manifest.params.flatMap((p, i) =>
    p.kind === "tensormap" ? [[p, i] as const] : []
  );
  for (const [p, i] of maps) {
    const a = tensorMapArgs(p.tmap!, addr[p.tmap!.tensor]!, sizes);
    const rec = fakeMapRecord(r.maps.get(i)!);
    assert.equal(rec.magic, FAKE_MAP_MAGIC, `${ck.name} ${p.name}: a map the fake encoded`);
    assert.deepEqual(rec.map, expectedMapRecord(a), `${ck.name} ${p.name}`);
  }
  return maps.length;
}

const BASE = 0x7f0000000000n;

for (const cxx of [false, true]) {
  cTest(
    `C artefact (${cxx ? "C++" : "C"}): tensor maps built by the rule, passed by value`,
    async () => {
      const exe = await build(cxx);
      const [M, K, N] = [200, 136, 264];
      const addr = [0, 1, 2, 3].map((i) => BASE + BigInt(i) * 0x1000000n);
      const line = (k: number, a: readonly bigint[], m: number, kk: number, n: number) =>
        `${k} ${a.map((x) => `0x${x.toString(16)}`).join(" ")} ${m} ${kk} ${n} 1 0`;
      const misaligned = [addr[0]! + 4n, ...addr.slice(1)];
      const input = [
        "load",
        line(0, addr, M, K, N),
        line(0, addr, M, 0, N), // K = 0: the contract lets it by, A's extent does not
        line(1, misaligned, M, K, N), // A at 4 bytes: align 2 lets it by, the map does not
        line(2, addr, M, K, N), // the driver refuses the map
        line(3, addr, M, K, N),
        line(4, addr, 300, K, N), // 3 tiles along M: 2 cluster units
        line(5, addr, 300, K, N), // along N: 2 tiles a row, one unit each
      ].join("\n") + "\n";
      const out = replies(await sh(exe, [], input));
      assert.equal(out.length, 8);
      assert.equal(out[0]!.status, 0, out[0]!.errors.join("\n"));
      const ok = out[1]!;
      assert.equal(ok.status, 0, ok.errors.join("\n"));
      const ck = KERNELS[0]!;
      const sizes = { M, K, N };
      const named = { A: addr[0]!, B: addr[1]!, C: addr[2]!, D: addr[3]! };
      assert.deepEqual(ok.params, wantParams(ck, named, sizes));
      assert.equal(checkMaps(ck, ok, named, sizes), 2);
      assert.equal(ok.refused, 0, "every map the fake got was one it encoded");
      // A broken rule: tensorMapArgs' own message; nothing launched.
      const spec = ck.manifest.params.find((p) => p.tmap?.tensor === "A")!.tmap!;
      const message = (f: () => unknown) => {
        try {
          f();
        } catch (e) {
          return (e as Error).message;
        }
        return "";
      };
      assert.equal(out[2]!.status, 1);
      assert.deepEqual(out[2]!.errors, [
        message(() => tensorMapArgs(spec, addr[0]!, { M, K: 0, N })),
      ]);
      assert.equal(out[3]!.status, 1);
      assert.deepEqual(out[3]!.errors, [message(() => tensorMapArgs(spec, misaligned[0]!, sizes))]);
      assert.match(
        out[3]!.errors[0]!,
        /^Tensor map of A: address 0x7f0000000004 is not 16-byte aligned$/,
      );
      // The driver's refusal: GEMMC_ERROR_CUDA, naming the map and its tensor.
      assert.equal(out[4]!.status, 3);
      assert.match(
        out[4]!.errors.join("\n"),
        /Kernel "refused": the tensor map A_tmap of tensor "A":/,
      );
      assert.match(
        out[4]!.errors.join("\n"),
        /cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE/,
      );
      // The kernel as the sm90 lowering gives it maps.
      const real = out[5]!;
      assert.equal(real.status, 0, real.errors.join("\n"));
      assert.deepEqual(real.params, wantParams(KERNELS[3]!, named, sizes));
      assert.equal(checkMaps(KERNELS[3]!, real, named, sizes), 2);
      assert.equal(real.refused, 0);
      // Its persistent grid: the artefact's rule is ir/grid.ts gridFor's.
      assert.notEqual(KERNELS[3]!.kernel.grid.persistent, undefined);
      assert.deepEqual(real.grid, gridFor(KERNELS[3]!.kernel.grid, sizes));
      assert.deepEqual(ok.grid, gridFor(ck.kernel.grid, sizes));
      // On clusters of 2: both maps by the rule (B's box half as tall), the grid by gridFor's
      // cluster rule (2 units a tile column, 2 CTAs each: not the 6 tiles of one a CTA).
      const clustered = out[6]!;
      const cs = { M: 300, K, N };
      assert.equal(clustered.status, 0, clustered.errors.join("\n"));
      assert.equal(checkMaps(KERNELS[4]!, clustered, named, cs), 2);
      assert.equal(KERNELS[4]!.kernel.grid.persistent?.cluster, 2);
      assert.deepEqual(clustered.grid, gridFor(KERNELS[4]!.kernel.grid, cs));
      assert.deepEqual(clustered.grid, [8, 1, 1]);
      // Along N (`cluster 1x2`): A's box half as tall, units of 2 tiles of a row (3 of them).
      const alongN = out[7]!;
      assert.equal(alongN.status, 0, alongN.errors.join("\n"));
      assert.equal(checkMaps(KERNELS[5]!, alongN, named, cs), 2);
      assert.equal(KERNELS[5]!.kernel.grid.persistent?.clusterAxis, "n");
      assert.deepEqual(alongN.grid, gridFor(KERNELS[5]!.kernel.grid, cs));
      assert.deepEqual(alongN.grid, [6, 1, 1]);
      // The header says what each map is.
      const text = cSource(KERNELS);
      assert.match(
        text,
        / \* {3}A_tmap: tensor A as float16, extents \[K, M\] \(innermost first\)/,
      );
    },
  );
}
