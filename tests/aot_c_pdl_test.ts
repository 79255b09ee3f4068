/**
 * Programmatic dependent launch in the C artefact (backends/aot/_pdl_c.ts): sm90 kernels (an
 * ordinary one with tensor maps, a split-K one, a grouped one) compiled warning-free as C and
 * C++ against the toolkit's cuda.h and linked against the fake driver
 * (tests/gpu/testdata/fake_libcuda.c), whose `cuLaunchKernelEx` reads the `CUlaunchConfig` at
 * cuda.h's offsets, accepts only the PDL attribute and records it. After `gemmc_set_pdl(1)`
 * every launch goes through `cuLaunchKernelEx` with exactly the grid, block, shared memory and
 * stream of the plain launch and the one attribute (id 6, value 1); after `gemmc_set_pdl(0)`
 * (and by default) through `cuLaunchKernel`. A failing `cuLaunchKernelEx` is GEMMC_ERROR_CUDA
 * naming it; a file compiled without it (`GEMMC_NO_LAUNCH_EX`, or cuda.h before CUDA 11.8)
 * does not reference it and refuses `gemmc_set_pdl(1)` with GEMMC_ERROR_UNSUPPORTED.
 *
 * Skipped visibly without a C compiler or cuda.h (failed under CI=true).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { compile, type CompiledKernel } from "../compiler.ts";
import { cSource } from "../backends/aot/c.ts";
import { gridFor, groupedGrid, problemTiles } from "../ir/grid.ts";
import { GROUPED_ARTEFACT_SOURCE, HGEMM_CAB_SOURCE, splitKArtefactSource } from "./_programs.ts";
import { cTest, INCLUDE, sh } from "./_c_toolchain.ts";

const FAKE = new URL("gpu/testdata/fake_libcuda.c", import.meta.url).pathname;

/** hgemm (tensor maps on sm90, C, alpha, beta) and a split-K kernel, then the grouped ones. */
const SOURCE = `
${HGEMM_CAB_SOURCE}
${splitKArtefactSource("splitk")}
${GROUPED_ARTEFACT_SOURCE}`;

const RESULT = compile(SOURCE, { target: "sm90", pdl: true });
assert.ok(RESULT.ok, RESULT.diagnostics.map((d) => d.message).join("; "));
const KERNELS: readonly CompiledKernel[] = RESULT.kernels;
const kernel = (name: string) => KERNELS.find((k) => k.name === name)!;

/** The sizes of every ordinary launch, and the grouped launch's two problems. */
const SIZES = { M: 256, K: 128, N: 2048 };
const PROBLEMS = [{ M: 100, K: 64, N: 200 }, { M: 7, K: 64, N: 72 }];
/** The fake driver's SMs and blocks per SM (fake_libcuda.c). */
const RESIDENT = 132 * 2;

/**
 * One command a line: `load`, `unload`, `pdl ON`, `stream null|real|bogus`, `h`, `s`
 * (hgemm and split-K at {@link SIZES}), `g` (experts' `_run` of {@link PROBLEMS}). Prints the
 * status and the message; after a launch, the fake's last launch (`L`), the stream's handle
 * (`T`) and fake_launch_ex_stats (`X`: plain, ex, pdl launches, the last cuLaunchKernelEx's
 * numAttrs, attribute id, value and stream, and the configurations it refused).
 */
const HARNESS = `#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemmc.h"
int fake_last_launch(uint32_t *geometry, uint64_t *bits, char *types);
int fake_launch_ex_stats(int64_t *out);
#define AT(i) ((CUdeviceptr)0x7f0000000000ULL + (CUdeviceptr)(i) * 0x1000000ULL)
static struct { unsigned magic; } bogus; /* not a stream the fake made */
static unsigned char host_table[4096];
int main(void) {
  static char line[256];
  CUstream real = 0, stream = 0;
  if (cuStreamCreate(&real, 1) != CUDA_SUCCESS) return 5;
  while (fgets(line, sizeof line, stdin)) {
    char cmd[16] = {0}, arg[16] = {0};
    int s = -1, launched = 0, i;
    if (sscanf(line, "%15s %15s", cmd, arg) < 1) continue;
    if (!strcmp(cmd, "load")) s = gemmc_load();
    else if (!strcmp(cmd, "unload")) { gemmc_unload(); s = 0; }
    else if (!strcmp(cmd, "pdl")) s = gemmc_set_pdl(atoi(arg));
    else if (!strcmp(cmd, "stream")) {
      stream = !strcmp(arg, "real") ? real : !strcmp(arg, "bogus") ? (CUstream)(void *)&bogus : 0;
      s = 0;
    } else if (!strcmp(cmd, "h")) {
      s = gemmc_hgemm_launch(stream, AT(0), AT(1), AT(2), AT(3), ${SIZES.M}, ${SIZES.K},
                             ${SIZES.N}, 1.0f, 0.0f);
      launched = 1;
    } else if (!strcmp(cmd, "s")) {
      s = gemmc_splitk_launch(stream, AT(4), AT(5), AT(6), AT(7), ${SIZES.M}, ${SIZES.K},
                              ${SIZES.N}, 0, 0);
      launched = 1;
    } else if (!strcmp(cmd, "g")) {
      gemmc_experts_problem ps[2];
${
  PROBLEMS.map((p, i) =>
    `      ps[${i}].X = AT(${8 + 3 * i}); ps[${i}].W = AT(${9 + 3 * i}); ps[${i}].Y = AT(${
      10 + 3 * i
    });\n      ps[${i}].M = ${p.M}; ps[${i}].K = ${p.K}; ps[${i}].N = ${p.N};`
  ).join("\n")
}
      s = gemmc_experts_run(stream, ps, 2, host_table, AT(20), sizeof host_table);
      launched = 1;
    } else return 4;
    printf("S %d\\n", s);
    if (*gemmc_last_error()) printf("E %s\\n", gemmc_last_error());
    if (launched && s == 0) {
      uint32_t geo[7];
      uint64_t bits[64];
      char types[64 * 8];
      int64_t x[8];
      int np = fake_last_launch(geo, bits, types);
      printf("L");
      for (i = 0; i < 7; i++) printf(" %u", geo[i]);
      for (i = 0; i < np; i++) printf(" %s:%llu", types + 8 * i, (unsigned long long)bits[i]);
      printf("\\nT %llu\\nX", (unsigned long long)(uintptr_t)stream);
      fake_launch_ex_stats(x);
      for (i = 0; i < 8; i++) printf(" %lld", (long long)x[i]);
      printf("\\n");
    }
    printf(".\\n");
    fflush(stdout);
  }
  return 0;
}
`;

/** What the grouped launch needs and the fake lacks: the device, the table copy (not made). */
const FAKE2 = `#include <stddef.h>
#include <stdint.h>
typedef int CUresult;
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *stream) {
  (void)dst; (void)src; (void)n; (void)stream;
  return 0;
}
`;

/**
 * Builds the harness over the kernels' C file (C or C++, with extra compiler flags and include
 * directories first); returns the executable and the implementation's object.
 */
async function build(cxx: boolean, extra: string[] = []): Promise<{ exe: string; impl: string }> {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_c_pdl_" });
  await Deno.writeTextFile(join(dir, "gemmc.h"), cSource(KERNELS));
  const impl = join(dir, cxx ? "impl.cpp" : "impl.c");
  await Deno.writeTextFile(impl, '#define GEMMC_IMPLEMENTATION\n#include "gemmc.h"\n');
  await Deno.writeTextFile(join(dir, "harness.c"), HARNESS);
  await Deno.writeTextFile(join(dir, "fake2.c"), FAKE2);
  const flags = ["-O2", "-Wall", "-Wextra", "-Werror", ...extra, `-I${INCLUDE}`, `-I${dir}`, "-c"];
  const o = (n: string) => join(dir, `${n}.o`);
  await sh(cxx ? "c++" : "cc", [...flags, impl, "-o", o("impl")]);
  await sh("cc", [...flags, join(dir, "harness.c"), "-o", o("harness")]);
  await sh("cc", ["-w", "-c", FAKE, "-o", o("fake")]);
  await sh("cc", ["-w", "-c", join(dir, "fake2.c"), "-o", o("fake2")]);
  const exe = join(dir, "harness");
  await sh(cxx ? "c++" : "cc", [o("harness"), o("impl"), o("fake"), o("fake2"), "-o", exe]);
  return { exe, impl: o("impl") };
}

/** One command's reply. */
interface Reply {
  status: number;
  errors: string[];
  /** The fake's last launch: grid, block, shared memory, then the parameters. */
  launch: string[] | null;
  /** The stream the harness passed. */
  stream: bigint | null;
  /** fake_launch_ex_stats. */
  stats: bigint[] | null;
}

function replies(text: string): Reply[] {
  return text.split(".\n").filter((b) => b.trim() !== "").map((b) => {
    const r: Reply = { status: NaN, errors: [], launch: null, stream: null, stats: null };
    for (const l of b.split("\n").filter((x) => x !== "")) {
      if (l.startsWith("S ")) r.status = Number(l.slice(2));
      else if (l.startsWith("L ")) r.launch = l.slice(2).split(" ");
      else if (l.startsWith("T ")) r.stream = BigInt(l.slice(2));
      else if (l.startsWith("X ")) r.stats = l.slice(2).split(" ").map(BigInt);
      else r.errors.push(l.startsWith("E ") ? l.slice(2) : l);
    }
    return r;
  });
}

/** Runs the commands; returns one reply each. */
async function run(exe: string, commands: readonly string[]): Promise<Reply[]> {
  const out = replies(await sh(exe, [], commands.join("\n") + "\n"));
  assert.equal(out.length, commands.length);
  return out;
}

/** The grid, block and shared memory the fake must see for a launch command. */
function geometry(cmd: string): number[] {
  if (cmd === "g") {
    const k = kernel("experts");
    const tiles = PROBLEMS.reduce((n, p) => n + problemTiles(k.kernel.grid, p), 0);
    return [...groupedGrid(tiles, RESIDENT), ...k.manifest.block, k.manifest.dynamicSmemBytes];
  }
  const k = kernel(cmd === "h" ? "hgemm" : "splitk");
  return [...gridFor(k.kernel.grid, SIZES), ...k.manifest.block, k.manifest.dynamicSmemBytes];
}

/**
 * Checks a launch: status 0, the expected geometry, and through which entry point it went
 * (`before`: the stats of the launch before; the first launch compares with zeros).
 */
function checkLaunch(cmd: string, o: Reply, pdl: boolean, before: bigint[], what: string): void {
  assert.equal(o.status, 0, `${what}: ${o.errors.join("\n")}`);
  assert.deepEqual(o.errors, [], what);
  assert.deepEqual(o.launch!.slice(0, 7).map(Number), geometry(cmd), what);
  const [plain, ex, withPdl, numAttrs, id, value, stream, refused] = o.stats!;
  const [plain0, ex0, pdl0] = before;
  assert.equal(refused, 0n, `${what}: the fake refused no configuration`);
  if (!pdl) {
    assert.deepEqual([plain! - plain0!, ex! - ex0!, withPdl! - pdl0!], [1n, 0n, 0n], what);
    return;
  }
  assert.deepEqual([plain! - plain0!, ex! - ex0!, withPdl! - pdl0!], [0n, 1n, 1n], what);
  // Exactly one attribute: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, allowed; the
  // launch's own stream.
  assert.deepEqual([numAttrs, id, value, stream], [1n, 6n, 1n, o.stream!], what);
}

for (const cxx of [false, true]) {
  cTest(
    `C artefact (${cxx ? "C++" : "C"}), PDL: gemmc_set_pdl(1) launches through ` +
      "cuLaunchKernelEx with the attribute, gemmc_set_pdl(0) through cuLaunchKernel",
    async () => {
      assert.ok(KERNELS.every((k) => k.ptx.includes("griddepcontrol.wait")), "sm90 kernels");
      assert.ok(
        kernel("hgemm").manifest.params.some((p) => p.kind === "tensormap"),
        "hgemm has tensor maps",
      );
      // Every dimension of a grid counts: split-K's is [16, 2, 4].
      assert.deepEqual(geometry("s").slice(0, 3), [16, 2, 4]);
      const { exe } = await build(cxx);
      // [command, PDL on for it], in order.
      const script: [string, boolean | null][] = [
        ["load", null],
        ["stream real", null],
        ["h", false],
        ["s", false],
        ["g", false],
        ["pdl 1", null],
        ["h", true],
        ["s", true],
        ["g", true],
        ["stream null", null],
        ["h", true],
        ["pdl 0", null],
        ["h", false],
        ["g", false],
        ["pdl 7", null], // any nonzero value turns it on
        ["stream real", null],
        ["g", true],
        ["unload", null],
        ["h", null], // not loaded: nothing launched
        ["load", null],
        ["s", true], // kept across gemmc_unload()
        ["pdl 0", null],
        ["s", false],
      ];
      const out = await run(exe, script.map(([c]) => c));
      let stats = [0n, 0n, 0n];
      const plainLaunch = new Map<string, string[]>();
      script.forEach(([cmd, pdl], i) => {
        const o = out[i]!;
        const what = `line ${i}: ${cmd}${pdl === null ? "" : pdl ? " (pdl)" : " (plain)"}`;
        if (pdl === null) {
          // gemmc_unload() frees gemmc's own split-K workspace: the next one may lie elsewhere.
          if (cmd === "unload") plainLaunch.clear();
          if (cmd === "h") {
            assert.equal(o.status, 2, what);
            assert.deepEqual(o.errors, ['Kernel "hgemm": gemmc_load() has not succeeded']);
          } else {
            assert.equal(o.status, 0, `${what}: ${o.errors.join("\n")}`);
            assert.deepEqual(o.errors, [], what);
          }
          assert.equal(o.launch, null, what);
          return;
        }
        checkLaunch(cmd, o, pdl, stats, what);
        stats = o.stats!.slice(0, 3);
        // The same arguments whichever way it launched (the kernel's parameters, the maps'
        // addresses, the grouped table's device address and count).
        const seen = plainLaunch.get(cmd);
        if (seen === undefined) plainLaunch.set(cmd, o.launch!);
        else assert.deepEqual(o.launch, seen, what);
      });
      assert.ok(out[1]!.stream === null && out[2]!.stream! !== 0n, "a real stream");
      assert.equal(out[10]!.stream, 0n, "the null stream");
      assert.deepEqual(stats, [6n, 6n, 6n], "launches in all: plain, cuLaunchKernelEx, PDL");
    },
  );
}

cTest("C artefact, PDL: a failing cuLaunchKernelEx is GEMMC_ERROR_CUDA naming it", async () => {
  const { exe } = await build(false);
  const out = await run(exe, ["load", "stream bogus", "pdl 1", "h", "pdl 0", "h"]);
  const [gx, gy, gz] = geometry("h");
  assert.equal(out[3]!.status, 3);
  assert.deepEqual(out[3]!.errors, [
    `Kernel "hgemm": grid [${gx}, ${gy}, ${gz}] (pdl):`,
    "cuLaunchKernelEx failed: CUDA_ERROR_INVALID_HANDLE (400): invalid resource handle",
  ]);
  assert.equal(out[5]!.status, 3);
  assert.deepEqual(out[5]!.errors, [
    `Kernel "hgemm": grid [${gx}, ${gy}, ${gz}]:`,
    "cuLaunchKernel failed: CUDA_ERROR_INVALID_HANDLE (400): invalid resource handle",
  ]);
});

/** The undefined symbols of an object file. */
async function undefinedSymbols(object: string): Promise<string[]> {
  return (await sh("nm", ["-u", object])).split("\n").map((l) => l.trim().split(/\s+/).at(-1)!)
    .filter((s) => s !== "");
}

cTest(
  "C artefact, PDL: compiled without cuLaunchKernelEx, gemmc_set_pdl(1) is " +
    "GEMMC_ERROR_UNSUPPORTED and launches stay plain",
  async () => {
    const withEx = await build(false);
    assert.ok((await undefinedSymbols(withEx.impl)).includes("cuLaunchKernelEx"));
    // cuda.h of an older toolkit: the real one with CUDA_VERSION of 11.2.
    const old = await Deno.makeTempDir({ prefix: "gemmc_c_pdl_old_" });
    await Deno.writeTextFile(
      join(old, "cuda.h"),
      `#include "${join(INCLUDE!, "cuda.h")}"\n#undef CUDA_VERSION\n#define CUDA_VERSION 11020\n`,
    );
    const cases: [string[], string][] = [
      [
        ["-DGEMMC_NO_LAUNCH_EX"],
        "Cannot launch with pdl: this file was compiled with GEMMC_NO_LAUNCH_EX, without " +
        "cuLaunchKernelEx",
      ],
      [
        [`-I${old}`],
        "Cannot launch with pdl: this file was compiled against cuda.h of CUDA 11.2, without " +
        "cuLaunchKernelEx (CUDA 11.8 and later)",
      ],
    ];
    for (const [flags, message] of cases) {
      for (const cxx of [false, true]) {
        const what = `${flags.join(" ")} (${cxx ? "C++" : "C"})`;
        const { exe, impl } = await build(cxx, flags);
        assert.ok(!(await undefinedSymbols(impl)).includes("cuLaunchKernelEx"), what);
        const out = await run(exe, ["load", "pdl 1", "h", "pdl 0", "h"]);
        assert.equal(out[1]!.status, 4, what);
        assert.deepEqual(out[1]!.errors, [message], what);
        checkLaunch("h", out[2]!, false, [0n, 0n, 0n], what);
        assert.equal(out[3]!.status, 0, what);
        assert.deepEqual(out[3]!.errors, [], what);
        checkLaunch("h", out[4]!, false, out[2]!.stats!, what);
      }
    }
  },
);

Deno.test("C artefact, PDL: the header declares and documents gemmc_set_pdl", () => {
  const text = cSource(KERNELS);
  assert.match(text, /^gemmc_status gemmc_set_pdl\(int on\);$/m);
  assert.match(text, /CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION/);
  assert.match(text, /^ {2}GEMMC_ERROR_UNSUPPORTED = 4$/m);
  // Every launch goes through the one launch call.
  assert.equal(text.match(/cuLaunchKernel\(/g)?.length, 1);
  assert.equal(text.match(/cuLaunchKernelEx\(/g)?.length, 1);
});
