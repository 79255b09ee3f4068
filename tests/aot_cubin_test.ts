/**
 * The cubin artefact (backends/aot/cubin.ts, `gemm compile --emit cubin`):
 * for every architecture, ptxas's output is a 64-bit ELF for NVIDIA CUDA
 * (e_machine 190) whose flags name the architecture asked for and which holds
 * every kernel's code; the CLI writes the same bytes to `-o` and refuses what
 * it cannot do.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { compile, ptxModule } from "../compiler.ts";
import { assembleCubin } from "../backends/aot/cubin.ts";
import { CUBIN_ARCHS } from "../backends/ptx/ptxas.ts";
import { ptxasTest } from "./_ptxas.ts";
import { gemm } from "./_cli.ts";

const SOURCE = `
kernel hgemm_c { A: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n] }
kernel s8_c { A: s8[M, K] row  B: s8[K, N] col  D: s32[M, N] row
  D[m, n] = A[m, k] * B[k, n] }
`;

/** The facts of a CUDA ELF header: class, machine, and the SM number in e_flags bits 8..15. */
function elfFacts(b: Uint8Array): { elf: boolean; class64: boolean; machine: number; sm: number } {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return {
    elf: b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46,
    class64: b[4] === 2,
    machine: v.getUint16(18, true),
    sm: (v.getUint32(48, true) >> 8) & 0xff,
  };
}

function holds(b: Uint8Array, text: string): boolean {
  return new TextDecoder("latin1").decode(b).includes(text);
}

ptxasTest(
  "cubin: one ELF per architecture, for that architecture, with every kernel",
  async (ptxas) => {
    const ptx = ptxModule(compile(SOURCE).kernels);
    for (const arch of CUBIN_ARCHS) {
      const b = await assembleCubin(ptx, { arch, ptxasPath: ptxas });
      assert.deepEqual(elfFacts(b), {
        elf: true,
        class64: true,
        machine: 190,
        sm: parseInt(arch.slice(3)), // sm_90a: 90
      }, arch);
      assert.ok(holds(b, ".text.hgemm_c") && holds(b, ".text.s8_c"), arch);
    }
  },
);

ptxasTest("cubin: an architecture below the module's target is refused", async (ptxas) => {
  const ptx = ptxModule(compile(SOURCE, { target: "sm86" }).kernels);
  await assert.rejects(
    assembleCubin(ptx, { arch: "sm_80", ptxasPath: ptxas }),
    /Cannot assemble PTX for sm_86 as sm_80/,
  );
  await assert.rejects(
    assembleCubin(ptx, { arch: "sm_75" as "sm_80", ptxasPath: ptxas }),
    /Unknown architecture "sm_75"/,
  );
});

ptxasTest(
  "gemm compile --emit cubin: writes the API's bytes to -o; usage errors",
  async (ptxas) => {
    const dir = await Deno.makeTempDir({ prefix: "gemmc_cubin_" });
    const src = join(dir, "k.gemm");
    await Deno.writeTextFile(src, SOURCE);
    const out = join(dir, "k.cubin");
    const r = await gemm("compile", src, "--emit", "cubin", "--arch", "sm_90", "-o", out);
    assert.equal(r.code, 0, r.stderr);
    const api = await assembleCubin(ptxModule(compile(SOURCE).kernels), {
      arch: "sm_90",
      ptxasPath: ptxas,
    });
    assert.deepEqual(await Deno.readFile(out), api);
    const cases: [string[], RegExp][] = [
      [["--emit", "cubin"], /--emit cubin writes a binary file: give -o FILE/],
      [["--emit", "cubin", "--arch", "sm_70", "-o", out], /Unknown --arch "sm_70"/],
      [["--emit", "ptx", "--arch", "sm_90"], /--arch is for --emit cubin/],
      [
        ["--emit", "cubin", "--target", "sm86", "--arch", "sm_80", "-o", out],
        /--arch sm_80 is below the kernels' target sm_86/,
      ],
    ];
    for (const [args, re] of cases) {
      const e = await gemm("compile", src, ...args);
      assert.equal(e.code, 2, args.join(" "));
      assert.match(e.stderr, re);
    }
  },
);
