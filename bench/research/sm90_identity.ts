/**
 * sm90 PTX across a compiler change (tests/ptx_identity.ts covers sm80 and sm86): compiles every
 * `.gemm` of examples/ and bench/kernels/ for sm90 on 132 SMs at decode and square sizes (the
 * sizes as hints), with and without PDL, by two checkouts, and counts the kernels whose PTX is
 * the same. With `--cut-setup`, the TMA pipelines' barrier set-up (from its comment, `S stages:
 * full and empty barriers`, to the barrier after it) is left out and register and label numbers
 * are masked, so that a change to the set-up alone shows as "the same" (NOTES 100). Not part of
 * the benchmark or of CI.
 *
 *     deno run -A bench/research/sm90_identity.ts ROOT_A ROOT_B [--cut-setup] [--show N]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { resolve } from "node:path";

interface Compiler {
  compile: (src: string, o: Record<string, unknown>) => {
    ok: boolean;
    kernels: { ptx: string }[];
  };
}

/** The sizes every program is compiled for (M, N, K). */
const SIZES: readonly (readonly [number, number, number])[] = [
  [16, 4096, 4096],
  [64, 4096, 4096],
  [128, 4096, 4096],
  [256, 4096, 4096],
  [128, 14336, 4096],
  [5000, 5000, 5000],
  [8192, 8192, 8192],
];

/** The PTX with the set-up cut out and numbers masked. */
function withoutSetup(ptx: string): string {
  const i = ptx.indexOf("stages: full and empty barriers");
  let s = ptx;
  if (i >= 0) {
    const rest = ptx.slice(i);
    const m = /\n\s*(bar\.sync 0;|barrier\.cluster\.arrive)/.exec(rest);
    s = ptx.slice(0, i) + (m === null ? "" : rest.slice(m.index));
  }
  return s.replace(/%[a-z]+<\d+>/g, "%R<>").replace(/%[a-z]+\d+/g, "%R").replace(
    /\$L_\d+/g,
    "$L",
  );
}

/** The `.gemm` files of a checkout's examples/ and bench/kernels/. */
function programs(root: string): string[] {
  return ["examples", "bench/kernels"].flatMap((d) =>
    [...Deno.readDirSync(`${root}/${d}`)].filter((e) => e.name.endsWith(".gemm")).map((e) =>
      `${d}/${e.name}`
    ).sort()
  );
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    options: { "cut-setup": { type: "boolean" }, show: { type: "string" } },
    allowPositionals: true,
  });
  if (positionals.length !== 2) {
    console.error("usage: sm90_identity.ts ROOT_A ROOT_B [--cut-setup] [--show N]");
    Deno.exit(2);
  }
  const [rootA, rootB] = positionals.map((p) => resolve(p));
  const load = async (root: string) =>
    (await import(`file://${root}/compiler.ts`)) as unknown as Compiler;
  const A = await load(rootA!);
  const B = await load(rootB!);
  const norm = values["cut-setup"] === true ? withoutSetup : (p: string) => p;
  const show = Number(values.show ?? 3);
  let same = 0, differ = 0, setups = 0;
  for (const f of programs(rootA!)) {
    const src = Deno.readTextFileSync(`${rootA}/${f}`);
    for (const [M, N, K] of SIZES) {
      for (const pdl of [false, true]) {
        const o = { target: "sm90", sms: 132, sizeHints: { M, N, K }, pdl };
        const ra = A.compile(src, o);
        const rb = B.compile(src, o);
        if (!ra.ok || !rb.ok) continue;
        ra.kernels.forEach((ka, i) => {
          const pb = rb.kernels[i]?.ptx ?? "";
          if (ka.ptx.includes("stages: full and empty")) setups++;
          if (norm(ka.ptx) === norm(pb)) same++;
          else if (++differ <= show) {
            console.log(`differs: ${f} ${M}x${N}x${K}${pdl ? " pdl" : ""}`);
          }
        });
      }
    }
  }
  console.log(
    `sm90 kernels: ${same} the same${
      values["cut-setup"] === true ? " outside the set-up" : ""
    }, ${differ} differ; ${setups} with a TMA set-up`,
  );
}
