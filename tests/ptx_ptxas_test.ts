/**
 * ptxas accepts the printer's PTX: every hand-built test kernel
 * (backends/ptx/testdata/kernels.ts: every operation, conversion, memory
 * width and MMA row) assembles for sm_80 and for sm_86, with no spills and
 * no stack frame. Also the parsing of `ptxas -v` and the report format.
 *
 * Without ptxas these tests are skipped, visibly ("(skipped: no ptxas)"),
 * except under `CI=true`, where a missing ptxas is a failure.
 */

import assert from "node:assert/strict";
import { printPtx, ptxTarget } from "../backends/ptx/print.ts";
import {
  findPtxas,
  formatPtxasReport,
  parsePtxasLog,
  type PtxasResult,
  runPtxas,
} from "../backends/ptx/ptxas.ts";
import { allTestKernels } from "../backends/ptx/testdata/kernels.ts";
import { ptxasTest } from "./_ptxas.ts";
import { TARGET_NAMES } from "../ir/target.ts";

function assertClean(r: PtxasResult, names: readonly string[]): void {
  assert.ok(r.ok, r.log);
  assert.deepEqual(r.kernels.map((k) => k.name), names);
  for (const k of r.kernels) {
    assert.ok(k.registers > 0 && k.registers <= 255, `${k.name}: ${k.registers} registers`);
    assert.equal(k.spillStoreBytes, 0, `${k.name} spills`);
    assert.equal(k.spillLoadBytes, 0, `${k.name} spills`);
    assert.equal(k.stackFrameBytes, 0, `${k.name} has a stack frame`);
  }
}

for (const target of TARGET_NAMES) {
  const arch = ptxTarget(target);
  for (const k of allTestKernels(target)) {
    ptxasTest(`ptxas -arch=${arch} accepts ${k.name}`, async (ptxas) => {
      const r = await runPtxas(printPtx([k]), { arch, ptxasPath: ptxas });
      assertClean(r, [k.name]);
    });
  }
  ptxasTest(`ptxas -arch=${arch} accepts all test kernels in one module`, async (ptxas) => {
    const ks = allTestKernels(target);
    const r = await runPtxas(printPtx(ks), { arch, ptxasPath: ptxas });
    assertClean(r, ks.map((k) => k.name));
    const report = formatPtxasReport(r);
    assert.equal(report.split("\n").length, ks.length);
    assert.match(
      report,
      /^ops_registers: \d+ registers, 0 bytes shared, 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads$/m,
    );
    // ops_memory synchronises: ptxas counts its barrier.
    assert.equal(r.kernels.find((k) => k.name === "ops_memory")?.barriers, 1);
    // sm_90a's report names no constant bank (its parameters live elsewhere).
    if (arch !== "sm_90a") assert.ok((r.kernels[0]?.constBytes ?? 0) > 0);
  });
}

ptxasTest("ptxas accepts .minnctapersm", async (ptxas) => {
  const ks = allTestKernels("sm80");
  const r = await runPtxas(printPtx(ks, { minBlocksPerSm: 1 }), {
    arch: "sm_80",
    ptxasPath: ptxas,
  });
  assertClean(r, ks.map((k) => k.name));
});

ptxasTest("ptxas rejects bad PTX with its message", async (ptxas) => {
  const bad = ".version 8.0\n.target sm_80\n.address_size 64\n" +
    ".visible .entry k()\n{\n  frobnicate;\n  ret;\n}\n";
  const r = await runPtxas(bad, { arch: "sm_80", ptxasPath: ptxas });
  assert.equal(r.ok, false);
  assert.match(r.log, /<ptx>, line 6; error/);
  assert.match(formatPtxasReport(r), /^ptxas failed:\n/);
});

Deno.test("findPtxas: an explicit file first, null for nothing", () => {
  const tmp = Deno.makeTempFileSync({ prefix: "ptxas" });
  try {
    assert.equal(findPtxas(tmp), tmp);
  } finally {
    Deno.removeSync(tmp);
  }
  assert.equal(findPtxas("/nonexistent/ptxas"), findPtxas());
});

Deno.test("formatPtxasReport: a line per kernel", () => {
  const r: PtxasResult = {
    ok: true,
    log: "",
    kernels: [
      {
        name: "a",
        registers: 128,
        sharedBytes: 0,
        stackFrameBytes: 8,
        spillStoreBytes: 4,
        spillLoadBytes: 12,
      },
      {
        name: "b",
        registers: 32,
        sharedBytes: 100,
        stackFrameBytes: 0,
        spillStoreBytes: 0,
        spillLoadBytes: 0,
      },
    ],
  };
  assert.equal(
    formatPtxasReport(r),
    "a: 128 registers, 0 bytes shared, 8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n" +
      "b: 32 registers, 100 bytes shared, 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
  );
});

Deno.test("parsePtxasLog: the CUDA 13 and the older formats", () => {
  const log = [
    "ptxas info    : 0 bytes gmem",
    "ptxas info    : Compiling entry function 'hgemm' for 'sm_80'",
    "ptxas info    : Function properties for hgemm",
    "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads",
    "ptxas info    : Used 232 registers, used 1 barriers, 400 bytes cmem[0], 8 bytes cmem[2]",
    "ptxas info    : Compile time = 34.914 ms",
    "ptxas info    : Compiling entry function 'old' for 'sm_86'",
    "ptxas info    : Function properties for old",
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
    "ptxas info    : Used 8 registers, 1024 bytes smem, 368 bytes cmem[0]",
  ].join("\n");
  assert.deepEqual(parsePtxasLog(log), [
    {
      name: "hgemm",
      registers: 232,
      sharedBytes: 0,
      stackFrameBytes: 16,
      spillStoreBytes: 8,
      spillLoadBytes: 12,
      barriers: 1,
      constBytes: 408,
    },
    {
      name: "old",
      registers: 8,
      sharedBytes: 1024,
      stackFrameBytes: 0,
      spillStoreBytes: 0,
      spillLoadBytes: 0,
      constBytes: 368,
    },
  ]);
});
