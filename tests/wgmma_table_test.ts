/**
 * The wgmma table (ir/wgmma_table.ts, issue 23): every row's instruction, with A from
 * shared memory and from registers, is what ptxas `-arch=sm_90a` accepts, and shapes
 * the ISA leaves out are what it refuses (so the acceptance says something).
 */

import assert from "node:assert/strict";
import { runPtxas } from "../backends/ptx/ptxas.ts";
import { WGMMA_TABLE, wgmmaOperands, type WgmmaShape } from "../ir/wgmma_table.ts";
import { ptxasTest } from "./_ptxas.ts";

const regs = (p: string, n: number) =>
  `{${Array.from({ length: n }, (_, i) => `${p}${i}`).join(", ")}}`;

/** A kernel issuing `rows`, each with A from shared memory and, if `fromRegs`, from registers. */
function kernel(name: string, rows: readonly WgmmaShape[], fromRegs = true): string {
  const body = rows.flatMap((s) => {
    const d = regs(s.accRegType === "f32" ? "%f" : "%r", s.accRegs);
    const forms = [`${s.ptx} ${d}, ${wgmmaOperands(s, "%rd1", "%rd2", "%p1", false)};`];
    if (fromRegs) {
      forms.push(`${s.ptx} ${d}, ${wgmmaOperands(s, regs("%a", s.aRegs), "%rd2", "1", true)};`);
    }
    return forms.map((f) => `  ${f}`);
  });
  const init = [
    ...Array.from({ length: 128 }, (_, i) => `  mov.f32 %f${i}, 0f00000000;`),
    ...Array.from({ length: 128 }, (_, i) => `  mov.b32 %r${i}, 0;`),
    ...Array.from({ length: 8 }, (_, i) => `  mov.b32 %a${i}, ${i};`),
  ];
  return [
    `.visible .entry ${name}(.param .u64 p) {`,
    "  .reg .b64 %rd<3>;",
    "  .reg .f32 %f<128>;",
    "  .reg .b32 %r<128>;",
    "  .reg .b32 %a<8>;",
    "  .reg .pred %p<2>;",
    "  ld.param.u64 %rd1, [p];",
    "  add.u64 %rd2, %rd1, 16;",
    "  setp.ne.u64 %p1, %rd1, 0;",
    ...init,
    "  wgmma.fence.sync.aligned;",
    ...body,
    "  wgmma.commit_group.sync.aligned;",
    "  wgmma.wait_group.sync.aligned 0;",
    "  st.global.f32 [%rd1], %f0;",
    "  st.global.b32 [%rd1+4], %r0;",
    "  ret;",
    "}",
  ].join("\n");
}

const module = (kernels: string[], version = "8.0") =>
  [`.version ${version}`, ".target sm_90a", ".address_size 64", "", ...kernels].join("\n") + "\n";

Deno.test("wgmma table: the ISA's families and shapes, register counts", () => {
  const count = (f: (s: WgmmaShape) => boolean) => WGMMA_TABLE.filter(f).length;
  assert.equal(count((s) => s.aType === "f16"), 64); // 32 N x (f16, f32) accumulators
  assert.equal(count((s) => s.aType === "tf32"), 32);
  assert.equal(count((s) => s.aType === "e4m3" || s.aType === "e5m2"), 256);
  assert.equal(count((s) => s.cType === "s32" && s.aType !== "b1"), 64);
  assert.equal(count((s) => s.aType === "b1"), 18);
  for (const s of WGMMA_TABLE) {
    // 64 x N accumulators over 128 threads, 32-bit registers.
    const accBits = s.cType === "f16" ? 16 : 32;
    assert.equal(s.accRegs * 32 * 128, 64 * s.n * accBits, s.name);
  }
});

ptxasTest(
  "wgmma table: ptxas -arch=sm_90a accepts every row, A from shared memory and from registers",
  async (ptxas) => {
    for (const version of ["8.0", "8.4"] as const) {
      const families = new Map<string, WgmmaShape[]>();
      for (const s of WGMMA_TABLE.filter((s) => s.ptxVersion === version)) {
        const f = `${s.aType}_${s.bType}_${s.cType}`;
        families.set(f, [...(families.get(f) ?? []), s]);
      }
      const r = await runPtxas(
        module([...families].map(([f, rows]) => kernel(`wg_${f}`, rows)), version),
        { arch: "sm_90a", ptxasPath: ptxas },
      );
      assert.ok(r.ok, r.log.slice(0, 3000));
      assert.equal(r.kernels.length, families.size);
    }
    // A mixed-integer row below its version is refused: the field is needed.
    const mixed = WGMMA_TABLE.find((s) => s.ptxVersion === "8.4")!;
    const old = await runPtxas(module([kernel("old", [mixed])], "8.0"), {
      arch: "sm_90a",
      ptxasPath: ptxas,
    });
    assert.equal(old.ok, false);
  },
);

ptxasTest("wgmma table: shapes the ISA leaves out are refused by ptxas", async (ptxas) => {
  const base = (name: string) => WGMMA_TABLE.find((s) => s.name === name)!;
  // Each mutation names an instruction outside the table; ptxas must refuse each.
  const W = "wgmma.mma_async.sync.aligned.";
  const bad: WgmmaShape[] = [
    {
      ...base("wg.m64n32k32.s8.s32"),
      n: 40,
      accRegs: 20,
      ptx: `${W}m64n40k32.satfinite.s32.s8.s8`,
    },
    { ...base("wg.m64n8k8.tf32.f32"), k: 16, ptx: `${W}m64n8k16.f32.tf32.tf32` },
    {
      ...base("wg.m64n8k16.bf16.f32"),
      cType: "f16",
      accRegs: 2,
      accRegType: "b32",
      ptx: `${W}m64n8k16.f16.bf16.bf16`,
    },
  ];
  for (const s of bad) {
    const r = await runPtxas(module([kernel("bad", [s], false)]), {
      arch: "sm_90a",
      ptxasPath: ptxas,
    });
    assert.equal(r.ok, false, `${s.ptx} accepted`);
    // Refused for the instruction itself, not for the kernel around it.
    assert.match(r.log, /(Illegal|Unexpected) [^\n]*'wgmma\.mma_async/, s.ptx);
  }
  // The table's own rows in the same kernel are accepted (the refusals are the shapes).
  const good = await runPtxas(
    module([kernel("good", bad.map((s) => WGMMA_TABLE.find((t) => t.aType === s.aType)!), false)]),
    { arch: "sm_90a", ptxasPath: ptxas },
  );
  assert.ok(good.ok, good.log.slice(0, 2000));
});
