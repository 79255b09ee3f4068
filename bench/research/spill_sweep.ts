/**
 * Issue 23's "no spills at the defaults", at scale: every distinct sm90 warp-specialized (TMA)
 * kernel the compiler picks for an example or benchmark kernel x size hint (none, squares 2048
 * to 8192, 5000, and the llm table's rows, M = 1024 among them) x schedule line (none, `cluster 2`, `cluster 1x2`,
 * `scheduler stream_k`) x pdl, assembled by ptxas for sm_90a; prints each kernel that spills or that
 * ptxas refuses, and a count. Schedules a kernel cannot have are skipped and counted. Not part
 * of CI (a few minutes on 2 cores). Written 2026-12-06.
 *
 * Usage: deno run -A bench/research/spill_sweep.ts
 */
import { compile } from "../../compiler.ts";
import { runPtxas } from "../../backends/ptx/ptxas.ts";
import { withSchedule } from "../gpu_bench.ts";

const root = new URL("../../", import.meta.url);
const sources: [string, string][] = [];
for (const dir of ["examples/", "bench/kernels/"]) {
  for (
    const e of [...Deno.readDirSync(new URL(dir, root))].sort((a, b) => a.name < b.name ? -1 : 1)
  ) {
    if (e.name.endsWith(".gemm")) {
      sources.push([`${dir}${e.name}`, Deno.readTextFileSync(new URL(`${dir}${e.name}`, root))]);
    }
  }
}
const hintsList: (Record<string, number> | undefined)[] = [undefined];
for (const s of [2048, 3072, 4096, 5000, 8192]) hintsList.push({ M: s, N: s, K: s, L: 2 });
for (const M of [1, 16, 64, 128, 256, 1024]) {
  for (const [N, K] of [[4096, 4096], [14336, 4096], [4096, 14336]] as const) {
    hintsList.push({ M, N, K, L: 2 });
  }
}
// Grids of 128x256 wgmma tiles between half the SMs and all of them (WGMMA_WAVE_FILL, NOTES 84).
// and one wave of 128x128 over one wave of the default (WGMMA_FULL_WAVE, NOTES 85).
for (const [M, N] of [[640, 3584], [768, 4096], [512, 4096], [512, 4224], [1024, 2048]] as const) {
  hintsList.push({ M, N, K: 4096, L: 2 });
}
const seen = new Set<string>();
let assembled = 0, spilled = 0, refused = 0, skipped = 0;
for (const [file, src0] of sources) {
  for (const lines of [undefined, "cluster 2", "cluster 1x2", "scheduler stream_k"]) {
    // A source with its own schedule block keeps it; the line is added beside it.
    const src = lines === undefined ? src0 : withSchedule(src0, lines);
    for (const hints of hintsList) {
      for (const pdl of [false, true]) {
        let r;
        try {
          r = compile(src, {
            file,
            target: "sm90",
            sms: 132,
            pdl,
            ...(hints ? { sizeHints: hints } : {}),
          });
        } catch {
          skipped++;
          continue;
        }
        if (!r.ok) {
          skipped++;
          continue;
        }
        for (const ck of r.kernels) {
          if (ck.planned.plan.pipeline?.tma === undefined || seen.has(ck.ptx)) continue;
          seen.add(ck.ptx);
          const res = await runPtxas(ck.ptx, { arch: "sm_90a" });
          assembled++;
          const what = `${file} ${lines ?? "default"} ${JSON.stringify(hints ?? {})}${
            pdl ? " pdl" : ""
          }`;
          if (!res.ok) {
            refused++;
            console.log(`REFUSED ${what}: ${res.log.split("\n").slice(0, 2).join(" / ")}`);
            continue;
          }
          const k = res.kernels[0]!;
          if (k.spillStoreBytes + k.spillLoadBytes > 0) {
            spilled++;
            console.log(
              `SPILL ${what}: ${k.registers} registers, ${k.spillStoreBytes} B stored, ` +
                `${k.spillLoadBytes} B loaded`,
            );
          }
        }
      }
    }
  }
}
console.log(
  `${assembled} distinct TMA kernels assembled, ${spilled} spill, ${refused} refused, ` +
    `${skipped} compiles skipped`,
);
