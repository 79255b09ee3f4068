/**
 * Benchmark records: a run writes a new file and never rewrites a committed
 * one; `deno task bench --gpu` without a driver exits 1 with one sentence.
 */

import assert from "node:assert/strict";
import { freshResultPath } from "../bench/results.ts";
import { runWithoutDriver } from "./_cli.ts";

Deno.test("freshResultPath: the plain name, then -2, -3, ...; never an existing file", () => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_results_" });
  try {
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      const p = freshResultPath(`${dir}/results`, "sim-2026-12-02", ".md");
      assert.ok(!seen.includes(p), p);
      Deno.writeTextFileSync(p, `run ${i}`);
      seen.push(p);
    }
    assert.deepEqual(seen.map((p) => p.slice(dir.length)), [
      "/results/sim-2026-12-02.md",
      "/results/sim-2026-12-02-2.md",
      "/results/sim-2026-12-02-3.md",
      "/results/sim-2026-12-02-4.md",
    ]);
    // Every record is still the run that wrote it.
    seen.forEach((p, i) => assert.equal(Deno.readTextFileSync(p), `run ${i}`));
    // Another stem or extension starts again at the plain name.
    assert.equal(
      freshResultPath(dir + "/results", "2026-12-02-h200", ".csv").slice(dir.length),
      "/results/2026-12-02-h200.csv",
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("deno task bench --gpu without a driver: exit 1, one sentence, nothing benchmarked", async () => {
  const out = await runWithoutDriver(["bench/main.ts", "--gpu"]);
  assert.equal(out.code, 1, out.stderr);
  assert.equal(out.stdout, "", "the simulator and compile benchmarks did not run");
  assert.match(out.stderr, /^deno task bench --gpu: No CUDA driver: [^\n]+\n$/);
});
