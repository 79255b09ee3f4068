/**
 * A sweep of the default schedules through ptxas (not part of `deno task test`;
 * run it by hand, about a minute per 500 kernels on 2 cores):
 *
 *     deno run -A tests/ptxas_sweep.ts [--jobs N] [--keep DIR]
 *
 * Every example and a set of inline programs (16- and 8-bit outputs with
 * plain, bias and C-reading epilogues, both A layouts; 32-bit outputs, row-
 * or column-major, with and without C) is compiled with size
 * hints for 10 problem shapes on 108 and 132 SMs, as `gemm run --tune --sms N`
 * would; the distinct PTX modules are assembled with `ptxas -v` for sm_80. A
 * kernel that ptxas rejects, that spills or that has a stack frame is a
 * failure (exit 1), listed with the program, the hints and the SM count.
 * A program the compiler rejects for some hints is counted, not a failure
 * (the fuzzer, tests/fuzz.ts, checks that rejections are diagnostics).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { compile, ptxModule } from "../compiler.ts";
import { findPtxas, runPtxas } from "../backends/ptx/ptxas.ts";
import { programs, SHAPES as shapes } from "./_programs.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { jobs: { type: "string", default: "2" }, keep: { type: "string" } },
});
const ptxas = findPtxas();
if (ptxas === null) {
  console.error("ptxas_sweep: ptxas not found");
  Deno.exit(2);
}

const root = new URL("../examples/", import.meta.url);
const sources: [string, string][] = [
  ...[...Deno.readDirSync(root)]
    .filter((e) => e.name.endsWith(".gemm"))
    .map((e) =>
      [`examples/${e.name}`, Deno.readTextFileSync(new URL(e.name, root))] as [string, string]
    ),
  ...programs(),
];
const distinct = new Map<string, string>();
let compiled = 0;
let rejected = 0;
for (const [name, src] of sources) {
  for (const [M, N, K] of shapes) {
    for (const sms of [108, 132]) {
      // Hints by role and by the examples' own dimension names.
      const hints = { M: M!, N: N!, K: K!, Tokens: M!, Out: N!, In: K!, L: 2 };
      const r = compile(src, { file: name, sizeHints: hints, sms });
      if (!r.ok) {
        rejected++;
        continue;
      }
      compiled++;
      for (const k of r.kernels) {
        const ptx = ptxModule([k]);
        if (!distinct.has(ptx)) {
          distinct.set(ptx, `${name} ${k.name} hints ${M}x${N}x${K} sms ${sms}`);
        }
      }
    }
  }
}
console.log(`compiled ${compiled}, rejected ${rejected}; ${distinct.size} distinct kernels`);

const failures: string[] = [];
let maxRegs = 0;
const queue = [...distinct.entries()];
let n = 0;
async function worker(): Promise<void> {
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
    const [ptx, tag] = item;
    const i = n++;
    if (values.keep !== undefined) {
      Deno.mkdirSync(values.keep, { recursive: true });
      Deno.writeTextFileSync(`${values.keep}/k${i}.ptx`, `// ${tag}\n${ptx}`);
    }
    const r = await runPtxas(ptx, { arch: "sm_80", ptxasPath: ptxas! });
    const k = r.kernels[0];
    if (!r.ok || k === undefined) {
      failures.push(`${tag}: ptxas failed\n${r.log}`);
      continue;
    }
    maxRegs = Math.max(maxRegs, k.registers);
    if (k.spillStoreBytes + k.spillLoadBytes + k.stackFrameBytes > 0) {
      failures.push(
        `${tag}: ${k.spillStoreBytes} B spill stores, ${k.spillLoadBytes} B spill loads, ` +
          `${k.stackFrameBytes} B stack frame`,
      );
    }
  }
}
await Promise.all(Array.from({ length: Number(values.jobs) }, () => worker()));
for (const f of failures) console.log(`FAIL ${f}`);
console.log(
  `ptxas sm_80: ${distinct.size - failures.length} of ${distinct.size} clean ` +
    `(no spill, no stack frame); at most ${maxRegs} registers`,
);
if (failures.length > 0) Deno.exit(1);
