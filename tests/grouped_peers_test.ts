/**
 * bench/peers/grouped_peers.py (the PyTorch peers of the grouped-GEMM
 * benchmark) without a GPU or torch: its `--dry` mode accepts
 * bench/peers/testdata/grouped_rows.json and a random valid row, printing
 * their shapes, and rejects a row whose counts do not match E or hold a
 * negative count, with a message naming the row and a non-zero exit. Skipped,
 * visibly, where python3 does not run.
 */

import assert from "node:assert/strict";
import { python3 } from "./_python.ts";

const SCRIPT = new URL("../bench/peers/grouped_peers.py", import.meta.url).pathname;
const ROWS = new URL("../bench/peers/testdata/grouped_rows.json", import.meta.url).pathname;

const ignore = python3(["-c", "import sys; print(sys.version_info >= (3, 8))"])?.stdout.trim() !==
  "True";
const why = ignore ? " (skipped: no python3 >= 3.8)" : "";

/** A random integer in [lo, hi]. */
function rand(lo: number, hi: number): number {
  return lo + Math.floor(Math.random() * (hi - lo + 1));
}

/** A random valid row: some experts empty, at least one not. */
function randomRow(): { name: string; E: number; N: number; K: number; counts: number[] } {
  const E = rand(3, 12);
  const counts = Array.from({ length: E }, () => (Math.random() < 0.3 ? 0 : rand(1, 300)));
  counts[rand(0, E - 1)] = rand(1, 300);
  return { name: `random E=${E}`, E, N: 8 * rand(1, 64), K: 8 * rand(1, 64), counts };
}

/** Runs `--dry` on this IN.json document; OUT.json must not be written. */
function dry(doc: unknown): { code: number; stdout: string; stderr: string } {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_peers_" });
  try {
    Deno.writeTextFileSync(`${dir}/in.json`, JSON.stringify(doc));
    const r = python3([SCRIPT, "--dry", `${dir}/in.json`, `${dir}/out.json`]);
    assert.ok(r !== null);
    assert.throws(() => Deno.statSync(`${dir}/out.json`), Deno.errors.NotFound);
    return r;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test(`grouped_peers.py --dry accepts the example rows and a random one${why}`, {
  ignore,
}, () => {
  const r = dry(JSON.parse(Deno.readTextFileSync(ROWS)));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^tiny E=4: E=4 N=64 K=128 T=25 active=3\/4 /m);
  assert.match(r.stdout, /X bf16 \[216, 256\] {2}W bf16 \[8, 128, 256\] {2}Y bf16 \[216, 128\]/);

  const row = randomRow();
  const T = row.counts.reduce((a, b) => a + b, 0);
  const active = row.counts.filter((c) => c > 0).length;
  const s = dry({ rows: [row], seed: rand(1, 1000), states: ["sustained"] });
  assert.equal(s.code, 0, s.stderr);
  assert.ok(
    s.stdout.includes(`${row.name}: E=${row.E} N=${row.N} K=${row.K} T=${T} active=${active}/`),
    s.stdout,
  );
  assert.ok(s.stdout.includes(`weight bytes read ${active * row.N * row.K * 2} `), s.stdout);
});

Deno.test(`grouped_peers.py --dry rejects counts that do not match E, and negative counts${why}`, {
  ignore,
}, () => {
  const short = randomRow();
  short.counts.pop();
  const a = dry({ rows: [short], seed: 1, states: ["burst"] });
  assert.equal(a.code, 2);
  assert.equal(a.stdout, "");
  assert.ok(
    a.stderr.includes(
      `rows[0] "${short.name}": counts has ${short.E - 1} entries but E is ${short.E}`,
    ),
    a.stderr,
  );

  const neg = randomRow();
  const j = rand(0, neg.E - 1);
  const bad = -rand(1, 99);
  neg.counts[j] = bad;
  neg.name = `negative E=${neg.E}`;
  const b = dry({ rows: [randomRow(), neg], seed: 1, states: ["burst", "sustained"] });
  assert.equal(b.code, 2);
  assert.ok(
    b.stderr.includes(
      `rows[1] "${neg.name}": counts[${j}] is ${bad}, not a count of tokens (an integer >= 0)`,
    ),
    b.stderr,
  );
});
