/**
 * The C artefact of grouped kernels (backends/aot/c.ts, DESIGN §6.2): the file compiles
 * warning-free as C and as C++ against the toolkit's cuda.h and links against the fake driver
 * (tests/gpu/testdata/fake_libcuda.c, with the occupancy query and the table copy defined here
 * where it lacks them); `_table` writes the tables as `groupTable` does and refuses each problem
 * as `launchViolations` does (less the rules grouped problems drop), `_run` copies the table on
 * the stream, and the persistent grid caps at SMs x occupancy, found once per kernel. Also
 * examples/c/main.c built against its header and run on the fake, and `gemm compile --emit c`
 * and `--emit py` of grouped kernels. The harness of single launches: tests/_aot_c.ts.
 *
 * Skipped visibly without a C compiler or cuda.h (failed under CI=true).
 */

import assert from "node:assert/strict";
import { GROUPED_ARTEFACT_SOURCE } from "./_programs.ts";
import { join } from "node:path";
import { compile, type CompiledKernel } from "../compiler.ts";
import { cSource } from "../backends/aot/c.ts";
import { gemm } from "./_cli.ts";
import {
  type LaunchContract,
  launchViolations,
  type TensorBinding,
  tensorBytes,
} from "../backends/ptx/contract.ts";
import { problemContract } from "../backends/aot/_group.ts";
import { groupTable } from "../backends/ptx/group_table.ts";
import { groupedGrid, problemTiles } from "../ir/kernel.ts";
import { cTest, INCLUDE, sh } from "./_c_toolchain.ts";
import { FAKE, type Reply, rng, ROOT, validStrides } from "./_aot_c.ts";

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
