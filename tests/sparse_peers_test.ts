/**
 * bench/peers/sparse_peers.py (the PyTorch peers of the 2:4 sparse benchmark,
 * issue 21) without a GPU or torch: its `--dry` mode prints the plan and one
 * planned JSON record per (dtype, peer, state) with every key of the schema
 * (its RECORD_KEYS, in order), among them each key bench/sparse.ts reads
 * (`PEER_RECORD_KEYS`), for the defaults and for random sizes,
 * dtypes and states; bad sizes, dtypes and states are refused with a message
 * each and exit 2. Without torch, a real run exits 3 and says so (skipped,
 * visibly, where torch is installed). Nothing here runs a peer: the timing,
 * the checks and the backend detection need torch and a GPU (the device step
 * `sparse`, tests/gpu/device_run.sh). Skipped, visibly, where python3 does
 * not run.
 */

import assert from "node:assert/strict";
import { python3 } from "./_python.ts";
import {
  dryRecords,
  HAS_TORCH,
  PEERS_DIR,
  PEERS_IGNORE,
  PEERS_WHY,
  peerScript,
  randInt,
  randomSubset,
} from "./_peer_script.ts";
import { PEER_RECORD_KEYS } from "../bench/sparse_report.ts";

const PEERS = peerScript("sparse_peers", PEER_RECORD_KEYS);

Deno.test(
  `sparse_peers.py --dry: the default plan, 8192³, 4 dtypes x 2 peers x 2 states${PEERS_WHY}`,
  {
    ignore: PEERS_IGNORE,
  },
  () => {
    const r = PEERS.run(["--dry"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^M=8192 N=8192 K=8192 flops 1\.1e\+12 \(dense-equivalent\), seed 1, /);
    assert.match(r.stdout, /^f32: A \[8192, 8192\] row pruned 1:2 \(kept \[8192, 4096\]\)/m);
    assert.match(r.stdout, /^s8: .* D \[8192, 8192\] s32$/m);
    const recs = dryRecords(r.stdout);
    assert.equal(recs.length, 16);
    for (const rec of recs) {
      PEERS.assertKeys(rec);
      assert.equal(rec.status, "planned");
      assert.equal(rec.flops, 2 * 8192 ** 3);
      for (const k of ["ms", "tflops", "backend", "ok", "reason"]) assert.equal(rec[k], null, k);
    }
    assert.deepEqual(
      recs.map((x) => `${x.dtype} ${x.peer} ${x.state} ${x.seed}`),
      ["f16", "bf16", "s8", "f32"].flatMap((t, i) =>
        ["dense", "sparse"].flatMap((p) =>
          ["burst", "sustained"].map((s) => `${t} ${p} ${s} ${1 + i}`)
        )
      ),
    );
  },
);

Deno.test(`sparse_peers.py --dry: random sizes, dtypes, states and seed${PEERS_WHY}`, {
  ignore: PEERS_IGNORE,
}, () => {
  const [M, N, K] = [64 * randInt(1, 200), 64 * randInt(1, 200), 64 * randInt(1, 200)];
  const dtypes = randomSubset(["f16", "bf16", "s8", "f32"]);
  const states = randomSubset(["burst", "sustained"]);
  const seed = randInt(2, 10000);
  const r = PEERS.run([
    "--dry",
    "--m",
    `${M}`,
    "--n",
    `${N}`,
    "--k",
    `${K}`,
    "--dtypes",
    dtypes.join(","),
    "--states",
    states.join(","),
    "--seed",
    `${seed}`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.startsWith(`M=${M} N=${N} K=${K} `), r.stdout);
  const recs = dryRecords(r.stdout);
  assert.equal(recs.length, dtypes.length * 2 * states.length);
  for (const rec of recs) {
    PEERS.assertKeys(rec);
    assert.deepEqual([rec.M, rec.N, rec.K, rec.flops], [M, N, K, 2 * M * N * K]);
    assert.ok(states.includes(rec.state as string));
    assert.equal(rec.seed, seed + dtypes.indexOf(rec.dtype as string));
  }
  for (const t of dtypes) {
    const kept = t === "f32" ? "1:2" : "2:4";
    assert.ok(
      r.stdout.includes(`${t}: A [${M}, ${K}] row pruned ${kept} (kept [${M}, ${K / 2}])`),
      r.stdout,
    );
  }
});

Deno.test(`sparse_peers.py: bad sizes, dtypes and states exit 2, one message each${PEERS_WHY}`, {
  ignore: PEERS_IGNORE,
}, () => {
  const m = 64 * randInt(1, 50) + randInt(1, 63);
  const r = PEERS.run(["--dry", "--m", `${m}`, "--dtypes", "f16,f64", "--states", "burst,burst"]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  const lines = r.stderr.trim().split("\n");
  assert.deepEqual(lines, [
    `sparse_peers.py: --m must be a positive multiple of 64, got ${m}`,
    "sparse_peers.py: --dtypes must be a comma-separated list of distinct f16, bf16, s8, f32; " +
    "got 'f16,f64'",
    "sparse_peers.py: --states must be a comma-separated list of distinct burst, sustained; " +
    "got 'burst,burst'",
  ]);
  // Without --dry too: the options are checked before torch is looked for.
  const k = PEERS.run(["--k", "0"]);
  assert.equal(k.code, 2);
  assert.match(k.stderr, /--k must be a positive multiple of 64, got 0/);
});

Deno.test(
  `sparse_peers.py without torch exits 3 and says so${
    PEERS_IGNORE ? PEERS_WHY : HAS_TORCH ? " (skipped: torch is installed)" : ""
  }`,
  { ignore: PEERS_IGNORE || HAS_TORCH },
  () => {
    const r = PEERS.run(["--m", "64", "--n", "64", "--k", "64", "--dtypes", "f16"]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^sparse_peers\.py: torch is not installed/);
  },
);

Deno.test(`sparse_peers.py: records are written as strict JSON lines, NaN as null${PEERS_WHY}`, {
  ignore: PEERS_IGNORE,
}, () => {
  // The writer and the table on fake records (no torch: the module imports it lazily).
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_sparse_peers_" });
  try {
    const ms = 0.5 + Math.random() * 4;
    const code = `
import sys, math
sys.path.insert(0, ${JSON.stringify(PEERS_DIR)})
import sparse_peers as s
import argparse
plan = s.validate(argparse.Namespace(m=64, n=128, k=256, dtypes="f16,f32", states="burst", seed=3))
recs = [
    s.record(plan, "f16", "dense", "burst", status="ok", ms=${ms}, tflops=plan.flops / (${ms} * 1e-3) / 1e12,
             backend="cuBLAS", max_rel_err=math.nan, burst_rounds=[${ms}, math.inf]),
    s.record(plan, "f32", "sparse", "burst", status="unsupported", reason="ValueError: f32"),
]
s.write_jsonl(sys.argv[1], recs)
print(s.table(recs))
`;
    const r = python3(["-c", code, `${dir}/out.jsonl`]);
    assert.ok(r !== null);
    assert.equal(r.code, 0, r.stderr);
    const lines = Deno.readTextFileSync(`${dir}/out.jsonl`).trim().split("\n");
    assert.equal(lines.length, 2);
    const [a, b] = lines.map((l) => JSON.parse(l));
    PEERS.assertKeys(a);
    assert.equal(a.max_rel_err, null);
    assert.deepEqual(a.burst_rounds, [ms, null]);
    assert.equal(a.flops, 2 * 64 * 128 * 256);
    assert.equal(b.status, "unsupported");
    assert.match(r.stdout, new RegExp(`^f16 {3}dense {2}burst +${ms.toFixed(4)} `, "m"));
    assert.match(r.stdout, /^f32 {3}sparse burst +- +- +- +unsupported \(ValueError: f32\)$/m);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
