/**
 * bench/peers/fp8_peers.py (the `torch._scaled_mm` peer of the fp8 benchmark,
 * issue 23) without a GPU or torch: its `--dry` mode prints the plan and one
 * planned JSON record per (shape, dtype, variant, state) with every key of the
 * schema (its RECORD_KEYS, in order), among them each key bench/fp8.ts reads
 * (`FP8_PEER_RECORD_KEYS`), for the defaults (what bench/fp8.ts passes,
 * `fp8PeerArgs`) and for random shapes, dtypes, variants, states and scales;
 * bad options are refused with a message each and exit 2. Without torch, a
 * real run exits 3 and says so (skipped, visibly, where torch is installed).
 * The writer and the table on fake records. Nothing here runs the peer: the
 * timing and the check need torch and a GPU. Skipped, visibly, where python3
 * does not run.
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
import { FP8_BENCH_TYPES, FP8_PEER_RECORD_KEYS, FP8_PROBLEMS, fp8PeerArgs } from "../bench/fp8.ts";

const PEERS = peerScript("fp8_peers", FP8_PEER_RECORD_KEYS);

Deno.test(
  `fp8_peers.py --dry with bench/fp8.ts's arguments: 3 shapes x 2 dtypes x 2 x 2${PEERS_WHY}`,
  {
    ignore: PEERS_IGNORE,
  },
  () => {
    const args = fp8PeerArgs(FP8_PROBLEMS, FP8_BENCH_TYPES).slice(1); // without the script
    const r = PEERS.run(["--dry", ...args]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^torch\._scaled_mm, out bf16, scale_a 0\.5, scale_b 0\.25, seed 1, variants default, fast_accum, states burst, sustained\n/,
    );
    assert.match(
      r.stdout,
      /^e4m3_e5m2 M=5008 N=5008 K=5008 flops 2\.512e\+11: A \[5008, 5008\] row float8_e4m3fn, B \[5008, 5008\] col float8_e5m2, D \[5008, 5008\] bf16, seed 6$/m,
    );
    const recs = dryRecords(r.stdout);
    assert.equal(recs.length, 24);
    for (const rec of recs) {
      PEERS.assertKeys(rec);
      assert.equal(rec.status, "planned");
      assert.equal(rec.flops, 2 * (rec.M as number) * (rec.N as number) * (rec.K as number));
      assert.deepEqual([rec.scale_a, rec.scale_b], [0.5, 0.25]);
      assert.equal(rec.fast_accum, rec.variant === "fast_accum");
      assert.equal(rec.a_dtype, "float8_e4m3fn");
      assert.equal(rec.b_dtype, rec.dtype === "e4m3" ? "float8_e4m3fn" : "float8_e5m2");
      for (const k of ["ms", "tflops", "ok", "reason", "max_rel_err", "bound_ratio", "torch"]) {
        assert.equal(rec[k], null, k);
      }
    }
    assert.deepEqual(
      recs.map((x) => `${x.M} ${x.dtype} ${x.variant} ${x.state} ${x.seed}`),
      [8192, 4096, 5008].flatMap((n, i) =>
        ["e4m3", "e4m3_e5m2"].flatMap((t, j) =>
          ["default", "fast_accum"].flatMap((v) =>
            ["burst", "sustained"].map((s) => `${n} ${t} ${v} ${s} ${1 + 2 * i + j}`)
          )
        )
      ),
    );
  },
);

Deno.test(`fp8_peers.py --dry: random shapes, dtypes, variants, states, scales${PEERS_WHY}`, {
  ignore: PEERS_IGNORE,
}, () => {
  const shapes = [
    16 * randInt(1, 600),
    `${16 * randInt(1, 300)}x${16 * randInt(1, 300)}x${16 * randInt(1, 300)}`,
  ];
  const dtypes = randomSubset(["e4m3", "e4m3_e5m2"]);
  const variants = randomSubset(["default", "fast_accum"]);
  const states = randomSubset(["burst", "sustained"]);
  const [sa, sb, seed] = [2 ** randInt(-4, 4), randInt(1, 100) / 8, randInt(2, 10000)];
  const r = PEERS.run([
    "--dry",
    "--shapes",
    shapes.join(","),
    "--dtypes",
    dtypes.join(","),
    "--variants",
    variants.join(","),
    "--states",
    states.join(","),
    "--scale-a",
    `${sa}`,
    "--scale-b",
    `${sb}`,
    "--seed",
    `${seed}`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const recs = dryRecords(r.stdout);
  assert.equal(recs.length, 2 * dtypes.length * variants.length * states.length);
  const dims = shapes.map((s) =>
    typeof s === "number" ? [s, s, s] : s.split("x").map((x) => Number(x))
  );
  for (const rec of recs) {
    PEERS.assertKeys(rec);
    assert.ok(variants.includes(rec.variant as string));
    assert.ok(states.includes(rec.state as string));
    assert.deepEqual([rec.scale_a, rec.scale_b], [sa, sb]);
    const si = dims.findIndex(([m, n, k]) => m === rec.M && n === rec.N && k === rec.K);
    assert.ok(si >= 0, JSON.stringify(rec));
    assert.equal(rec.seed, seed + si * dtypes.length + dtypes.indexOf(rec.dtype as string));
  }
});

Deno.test(
  `fp8_peers.py: bad options exit 2, one message each${PEERS_WHY}`,
  { ignore: PEERS_IGNORE },
  () => {
    const odd = 16 * randInt(1, 300) + randInt(1, 15);
    const r = PEERS.run([
      "--dry",
      "--shapes",
      `${odd},64x64`,
      "--dtypes",
      "e5m2",
      "--variants",
      "fast",
      "--states",
      "burst,burst",
      "--scale-a",
      "0",
    ]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, "");
    assert.deepEqual(r.stderr.trim().split("\n"), [
      `fp8_peers.py: --shapes: ${odd} needs positive multiples of 16 (torch._scaled_mm's rule)`,
      "fp8_peers.py: --shapes: '64x64' is not S or MxNxK",
      "fp8_peers.py: --dtypes must be a comma-separated list of distinct e4m3, e4m3_e5m2; got 'e5m2'",
      "fp8_peers.py: --variants must be a comma-separated list of distinct default, fast_accum; " +
      "got 'fast'",
      "fp8_peers.py: --states must be a comma-separated list of distinct burst, sustained; " +
      "got 'burst,burst'",
      "fp8_peers.py: --scale-a must be a positive finite number, got 0.0",
    ]);
    // Without --dry too: the options are checked before torch is looked for.
    const k = PEERS.run(["--shapes", "4096,4096"]);
    assert.equal(k.code, 2);
    assert.match(k.stderr, /--shapes repeats a shape: '4096,4096'/);
  },
);

Deno.test(
  `fp8_peers.py without torch exits 3 and says so${
    PEERS_IGNORE ? PEERS_WHY : HAS_TORCH ? " (skipped: torch is installed)" : ""
  }`,
  { ignore: PEERS_IGNORE || HAS_TORCH },
  () => {
    const r = PEERS.run(["--shapes", "64", "--dtypes", "e4m3"]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^fp8_peers\.py: torch is not installed/);
  },
);

Deno.test(`fp8_peers.py: records are written as strict JSON lines, NaN as null${PEERS_WHY}`, {
  ignore: PEERS_IGNORE,
}, () => {
  // The writer and the table on fake records (no torch: the module imports it lazily).
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_fp8_peers_" });
  try {
    const ms = 0.5 + Math.random() * 4;
    const code = `
import sys, math, argparse
sys.path.insert(0, ${JSON.stringify(PEERS_DIR)})
import fp8_peers as f
plan = f.validate(argparse.Namespace(shapes="64x128x256", dtypes="e4m3,e4m3_e5m2",
    variants="default,fast_accum", states="burst", scale_a=0.5, scale_b=0.25, seed=3))
s = plan.shapes[0]
recs = [
    f.record(plan, s, "e4m3", "fast_accum", "burst", status="ok", ms=${ms},
             tflops=s.flops / (${ms} * 1e-3) / 1e12, max_rel_err=math.nan, bound_ratio=0.25,
             burst_rounds=[${ms}, math.inf]),
    f.record(plan, s, "e4m3_e5m2", "default", "burst", status="unsupported",
             reason="RuntimeError: fp8"),
]
f.write_jsonl(sys.argv[1], recs)
print(f.table(recs))
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
    assert.deepEqual([a.M, a.N, a.K, a.flops], [64, 128, 256, 2 * 64 * 128 * 256]);
    assert.deepEqual([a.fast_accum, b.fast_accum, b.b_dtype], [true, false, "float8_e5m2"]);
    assert.equal(b.status, "unsupported");
    assert.match(
      r.stdout,
      new RegExp(
        `^e4m3 +64 +128 +256 fast_accum burst +${ms.toFixed(4)} +[\\d.]+ +0\\.250 ok$`,
        "m",
      ),
    );
    assert.match(
      r.stdout,
      /^e4m3_e5m2 +64 +128 +256 default +burst +- +- +- unsupported \(RuntimeError: fp8\)$/m,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
