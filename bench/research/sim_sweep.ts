/**
 * Issue 22's acceptance at scale: every distinct kernel the compiler picks for an example x
 * target (sm80, sm86, sm90) x size hint (none, the squares 3072-8192, and M in {1, 16, 64,
 * 128, 256, 1024} x the llm table's (N, K)) on 132 SMs, simulated at sizes that are no tile
 * multiples, against the reference, hazards on. Prints each disagreement, hazard or failure and a count; sizes an
 * example's alignments refuse are skipped and counted, as are grouped kernels (their own tests
 * simulate them). Not part of CI (~5 minutes a size set on 2 cores). Written 2026-12-06.
 *
 * Usage: deno run -A bench/research/sim_sweep.ts [ROOT] [SIZES]
 *   SIZES: "M,N,K,L;M,N,K,L" (default "7,40,208,2;33,136,528,1").
 */
const root = Deno.args[0] ?? Deno.cwd();
const sizeSets = (Deno.args[1] ?? "7,40,208,2;33,136,528,1").split(";").map((t) => {
  const [M, N, K, L] = t.split(",").map(Number);
  return { M: M!, N: N!, K: K!, L: L! };
});
const base = new URL(`file://${Deno.realPathSync(root)}/`);
const { compile } = await import(new URL("compiler.ts", base).href);
const { simulateGemm } = await import(new URL("harness/simulate_gemm.ts", base).href);
const seen = new Set<string>();
let sims = 0, bad = 0, skipped = 0;
const hintsList: (Record<string, number> | undefined)[] = [undefined];
// Squares whose defaults are persistent on clusters of 2 (sm90, bench/NOTES.md 76), or not.
for (const S of [3072, 4096, 5000, 8192]) hintsList.push({ M: S, N: S, K: S, L: 2 });
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
for (
  const e of [...Deno.readDirSync(new URL("examples/", base))].sort((a, b) =>
    a.name < b.name ? -1 : 1
  )
) {
  if (!e.name.endsWith(".gemm")) continue;
  const src = Deno.readTextFileSync(new URL(`examples/${e.name}`, base));
  for (const target of ["sm80", "sm86", "sm90"]) {
    for (const hints of hintsList) {
      let r;
      try {
        r = compile(src, {
          file: e.name,
          target,
          sms: 132,
          ...(hints ? { sizeHints: hints } : {}),
        });
      } catch (x) {
        console.log(
          "COMPILE THREW",
          e.name,
          target,
          JSON.stringify(hints),
          String(x).slice(0, 100),
        );
        bad++;
        continue;
      }
      if (!r.ok) continue;
      for (const ck of r.kernels) {
        if (ck.kernel.group !== undefined) {
          skipped++;
          continue;
        }
        const key = `${e.name}|${ck.name}|${target}|${ck.kernelText.length}|${
          JSON.stringify(ck.planned.schedule)
        }`;
        if (seen.has(key)) continue;
        seen.add(key);
        for (const sizes of sizeSets) {
          sims++;
          try {
            const rep = simulateGemm(ck, sizes, { seed: 11 + sims });
            if (!rep.ok || rep.sim.hazardCount > 0) {
              bad++;
              console.log(
                "BAD",
                e.name,
                ck.name,
                target,
                JSON.stringify(hints),
                JSON.stringify(sizes),
                rep.ok ? "" : `over ${rep.comparison.overBound}`,
                rep.sim.hazards.slice(0, 2).map((h: { kind: string }) => h.kind).join(","),
              );
            }
          } catch (x) {
            const m = String(x);
            if (/align|multiple of|must be|declares/.test(m)) {
              skipped++;
              continue;
            }
            bad++;
            console.log(
              "SIM THREW",
              e.name,
              ck.name,
              target,
              JSON.stringify(hints),
              JSON.stringify(sizes),
              m.slice(0, 160),
            );
          }
        }
      }
    }
  }
}
console.log(`${seen.size} distinct kernels, ${sims} simulations, ${bad} bad, ${skipped} skipped`);
