/**
 * bench/sparse.ts (`deno task bench --sparse`, issue 21) without a GPU: the
 * report writer on random fake measurements (TFLOP/s, ratios, the target
 * verdicts, the peers' backend, a compile failure and an unsupported peer as
 * recorded lines), the sampled check on small random sparse and dense kernels
 * (a correct output passes, a wrong sampled element fails, a wrong element
 * outside the sample is not seen), the kernels' sources (they check; the dense
 * ones and the sparse ones compile), the
 * command line, the no-GPU exit, and the whole flow against the fake libcuda
 * (tests/gpu/testdata/fake_libcuda.c: nothing runs, so the check must fail and
 * a sparse compile failure is a recorded line). Real timing needs a device
 * (the device step `sparse`, tests/gpu/device_run.sh).
 */

import assert from "node:assert/strict";
import { check, compile } from "../compiler.ts";
import { cudaAvailable } from "../backends/cuda/driver.ts";
import { randomArgs } from "../harness/inputs.ts";
import { referenceGemm } from "../harness/reference.ts";
import { encodeTensor } from "../harness/device_tensor.ts";
import { Rng } from "../numerics/random.ts";
import { buildFakeDriver, cCompiler, runWithFakeDriver } from "./gpu/_fake_driver.ts";
import {
  parseSparseArgs,
  sampledCheck,
  samplePicks,
  sparseBenchMain,
  sparseBenchSource,
} from "../bench/sparse.ts";
import {
  type KernelFigures,
  type PeerRecord,
  SPARSE_BENCH_TYPES,
  type SparseBenchRow,
  type SparseBenchType,
  sparseReport,
} from "../bench/sparse_report.ts";

const rng = new Rng(Date.now() >>> 0);
const OUT: Record<SparseBenchType, string> = { f16: "f16", bf16: "bf16", tf32: "f32", s8: "s32" };
const PEER: Record<SparseBenchType, string> = { f16: "f16", bf16: "bf16", tf32: "f32", s8: "s8" };

/** A random time in ms, 0.5 to 5. */
function ms(): number {
  return 0.5 + 4.5 * rng.next();
}

/** Figures of a kernel that ran. */
function ran(): KernelFigures {
  return {
    status: "ok",
    note: "check ok on 2304 sampled elements",
    schedule: "128x256x64, warp 64x64x64, 4 stages",
    ms: { burst: ms(), sustained: ms() },
  };
}

/** A peer record that ran. */
function peerRec(
  dtype: string,
  peer: "dense" | "sparse",
  state: "burst" | "sustained",
  flops: number,
): PeerRecord {
  const t = ms();
  return {
    dtype,
    peer,
    state,
    status: "ok",
    reason: null,
    op: peer === "dense" ? "torch.mm(A, B)" : "to_sparse_semi_structured(A) @ B",
    backend: peer === "dense" ? "cuBLAS" : "cuSPARSELt",
    ok: true,
    ms: t,
    tflops: flops / (t * 1e-3) / 1e12,
  };
}

/** The table row of a type in a state's section. */
function tableRow(text: string, state: "Burst" | "Sustained", t: string): string[] {
  const section = text.split(`## ${state}\n`)[1]!.split("\n## ")[0]!;
  const line = section.split("\n").find((l) => l.startsWith(`| ${t} |`));
  assert.ok(line !== undefined, `${state} ${t}`);
  return line.split("|").slice(1, -1).map((c) => c.trim());
}

Deno.test("sparseReport: the tables from random fake measurements, both states", () => {
  const [M, N, K] = [64 * rng.int(1, 160), 64 * rng.int(1, 160), 64 * rng.int(1, 160)];
  const flops = 2 * M * N * K;
  const tf = (x: number) => flops / (x * 1e-3) / 1e12;
  const rows: SparseBenchRow[] = SPARSE_BENCH_TYPES.map((type) => ({
    type,
    dense: ran(),
    sparse: ran(),
    peers: (["dense", "sparse"] as const).flatMap((p) =>
      (["burst", "sustained"] as const).map((s) => peerRec(PEER[type], p, s, flops))
    ),
    ceiling: { burst: 100 + 900 * rng.next(), sustained: 100 + 900 * rng.next() },
  }));
  const text = sparseReport({
    command: "deno task bench --sparse",
    device: "NVIDIA H200",
    date: "2026-12-02",
    M,
    N,
    K,
    rows,
    peersNote: null,
  });
  assert.match(text, /^# 2:4 structured-sparse A against dense \(2026-12-02\)\n/);
  assert.ok(text.includes(`on NVIDIA H200. M=${M} N=${N} K=${K};`));
  for (const r of rows) {
    for (const [state, key] of [["Burst", "burst"], ["Sustained", "sustained"]] as const) {
      const cells = tableRow(text, state, r.type);
      const d = tf(r.dense.ms[key]!), s = tf(r.sparse.ms[key]!);
      const ps = r.peers.find((x) => x.peer === "sparse" && x.state === key)!;
      const pd = r.peers.find((x) => x.peer === "dense" && x.state === key)!;
      const target = r.type === "f16" || r.type === "bf16"
        ? `>= 1.5: ${s / d >= 1.5 ? "met" : "MISSED"}`
        : "-";
      assert.deepEqual(cells, [
        r.type,
        d.toFixed(0),
        s.toFixed(0),
        (s / d).toFixed(2),
        target,
        `${ps.tflops!.toFixed(0)} (cuSPARSELt)`,
        (s / ps.tflops!).toFixed(2),
        pd.tflops!.toFixed(0),
        (d / pd.tflops!).toFixed(2),
        r.ceiling![key].toFixed(0),
        (s / r.ceiling![key]).toFixed(2),
      ]);
    }
    assert.ok(
      text.includes(`- ${r.type} dense: ok [128x256x64, warp 64x64x64, 4 stages]: check ok`),
    );
    assert.ok(
      text.includes(
        `- ${r.type} sparse (torch ${PEER[r.type]}): ok; to_sparse_semi_structured(A) @ B ` +
          "(cuSPARSELt), check ok\n",
      ),
    );
  }
  assert.ok(text.endsWith("\n"));
});

Deno.test("sparseReport: a compile failure, a missing state and an unsupported peer are lines", () => {
  const t = SPARSE_BENCH_TYPES[rng.int(0, 3)]!;
  const reason = `RuntimeError: dtype ${rng.int(0, 999)} not supported`;
  const dense = ran();
  const row: SparseBenchRow = {
    type: t,
    dense,
    sparse: {
      status: "compile failed",
      note: 'E0204: Shared memory over the budget:\n  "A" tiles',
      schedule: null,
      ms: { burst: null, sustained: null },
    },
    peers: [
      peerRec(PEER[t], "dense", "burst", 1e12),
      { ...peerRec(PEER[t], "sparse", "burst", 1e12), status: "unsupported", reason, ms: null },
    ],
    ceiling: null,
  };
  const text = sparseReport({
    command: "c",
    device: "GPU",
    date: "2026-12-02",
    M: 64,
    N: 64,
    K: 64,
    rows: [row],
    peersNote: "peers exited 3: no CUDA device",
  });
  const b = tableRow(text, "Burst", t);
  assert.equal(b[1], (2 * 64 ** 3 / (dense.ms.burst! * 1e-3) / 1e12).toFixed(0));
  assert.deepEqual(b.slice(2, 4), ["-", "-"]);
  assert.equal(b[4], t === "f16" || t === "bf16" ? ">= 1.5: -" : "-");
  assert.deepEqual([b[5], b[6], b[9], b[10]], ["-", "-", "-", "-"]);
  // No sustained peer record: the dense peer's cells are empty there.
  assert.deepEqual(tableRow(text, "Sustained", t).slice(7, 9), ["-", "-"]);
  assert.ok(
    text.includes(
      `- ${t} sparse: compile failed: E0204: Shared memory over the budget: "A" tiles\n`,
    ),
    text,
  );
  assert.ok(text.includes(`- ${t} sparse (torch ${PEER[t]}): unsupported: ${reason}\n`), text);
  assert.ok(text.includes("- peers exited 3: no CUDA device\n"));
});

Deno.test("sampledCheck: random sparse and dense kernels, every type; a wrong sampled element fails", () => {
  for (const t of SPARSE_BENCH_TYPES) {
    for (const sparse of [true, false]) {
      const k = check(sparseBenchSource(t, sparse)).kernels[0]!;
      const sizes = { M: 8 * rng.int(2, 6), N: 8 * rng.int(2, 6), K: 32 * rng.int(1, 4) };
      const args = randomArgs(k, sizes, rng.int(1, 1e6));
      assert.equal(args.tensors.has("A_meta"), sparse);
      const out = encodeTensor(referenceGemm(k, args).values, OUT[t] as never);
      const rows = samplePicks(sizes.M, rng.int(2, 6), rng);
      const cols = samplePicks(sizes.N, rng.int(2, 6), rng);
      const good = sampledCheck(k, sizes, args.tensors, out, rows, cols);
      assert.ok(good.ok, `${t} sparse=${sparse}`);
      assert.equal(good.elements, rows.length * cols.length);
      // One sampled element made wrong (its bytes from another value).
      const eb = out.length / (sizes.M * sizes.N);
      const r = rows[rng.int(0, rows.length - 1)]!, c = cols[rng.int(0, cols.length - 1)]!;
      const bad = out.slice();
      const at = (r * sizes.N + c) * eb;
      if (t === "s8") {
        new DataView(bad.buffer).setInt32(
          at,
          new DataView(out.buffer).getInt32(at, true) + 1,
          true,
        );
      } else bad.set(encodeTensor([1e4 * (1 + rng.next())], OUT[t] as never), at);
      const caught = sampledCheck(k, sizes, args.tensors, bad, rows, cols);
      assert.equal(caught.ok, false, `${t} sparse=${sparse}`);
      assert.equal(caught.overBound, 1);
      // An element of a row outside the sample is not looked at.
      const free = Array.from({ length: sizes.M }, (_, i) => i).filter((i) => !rows.includes(i));
      const other = out.slice();
      other.fill(0xff, free[0]! * sizes.N * eb, (free[0]! + 1) * sizes.N * eb);
      assert.ok(sampledCheck(k, sizes, args.tensors, other, rows, cols).ok);
    }
  }
});

Deno.test("sampledCheck: the sparse metadata rows follow the sampled rows", () => {
  // Swapping two rows' metadata (kept values unchanged) changes those rows' products.
  const k = check(sparseBenchSource("f16", true)).kernels[0]!;
  const sizes = { M: 16, N: 8, K: 64 };
  const args = randomArgs(k, sizes, rng.int(1, 1e6));
  const out = encodeTensor(referenceGemm(k, args).values, "f16");
  const meta = args.tensors.get("A_meta")!;
  const w = meta.length / sizes.M;
  const swapped = meta.slice();
  swapped.set(meta.subarray(3 * w, 4 * w), 5 * w);
  swapped.set(meta.subarray(5 * w, 6 * w), 3 * w);
  assert.notDeepEqual(swapped, meta);
  const tensors = new Map(args.tensors).set("A_meta", swapped);
  assert.equal(sampledCheck(k, sizes, tensors, out, [3, 5], [0, 1, 2, 3, 4, 5, 6, 7]).ok, false);
  assert.ok(sampledCheck(k, sizes, tensors, out, [0, 1, 2, 4, 6], [0, 1, 2, 3, 4, 5, 6, 7]).ok);
});

Deno.test("sparseBenchSource: every kernel checks and compiles, dense and sparse", () => {
  for (const t of SPARSE_BENCH_TYPES) {
    const d = compile(sparseBenchSource(t, false), { sizeHints: { M: 8192, N: 8192, K: 8192 } });
    assert.ok(d.ok, `${t}: ${d.diagnostics.map((x) => x.message).join("; ")}`);
    const sc = check(sparseBenchSource(t, true));
    assert.deepEqual(sc.diagnostics, [], t);
    assert.deepEqual(sc.kernels[0]!.params.map((p) => p.name), ["A", "A_meta", "B", "D"]);
    assert.equal(sc.kernels[0]!.math.mode, "tensor");
    const s = compile(sparseBenchSource(t, true), { sizeHints: { M: 8192, N: 8192, K: 8192 } });
    assert.ok(s.ok, `${t}: ${s.diagnostics.map((x) => `${x.code} ${x.message}`).join("; ")}`);
    assert.match(s.kernels[0]!.ptx, /mma\.sp::ordered_metadata\.sync/);
  }
  assert.match(sparseBenchSource("tf32", true), /A: f32\[M, K\] row sparse\n[^]*math tf32/);
  assert.match(
    sparseBenchSource("s8", false),
    /D: s32\[M, N\] row\n {2}D\[m, n\] = A\[m, k\] \* B/,
  );
});

Deno.test("parseSparseArgs: sizes, types, switches; bad ones named", () => {
  const m = 64 * rng.int(1, 200);
  assert.deepEqual(parseSparseArgs(["--k", `${m}`, "--no-ceiling", "--types", "tf32"]), {
    K: m,
    ceiling: false,
    types: ["tf32"],
  });
  assert.deepEqual(parseSparseArgs([]), {});
  assert.deepEqual(parseSparseArgs(["--no-peers", "--out", "/tmp/x"]), {
    peers: false,
    outDir: "/tmp/x",
  });
  assert.equal(parseSparseArgs(["--out"]), "--out needs a folder");
  assert.equal(
    parseSparseArgs(["--n", `${m + 1}`]),
    `--n needs a positive multiple of 64, got ${m + 1}`,
  );
  assert.equal(
    parseSparseArgs(["--types", "f16,f64"]),
    "--types takes a list of f16, bf16, tf32, s8; got f16,f64",
  );
  assert.equal(parseSparseArgs(["--fast"]), "unknown argument --fast");
});

const noGpu = !cudaAvailable().ok;
Deno.test(
  `sparseBenchMain without a GPU says so and returns false${
    noGpu ? "" : " (skipped: a GPU is here)"
  }`,
  { ignore: !noGpu },
  () => {
    const errors: string[] = [];
    const orig = console.error;
    console.error = (...a: unknown[]) => errors.push(a.join(" "));
    try {
      assert.equal(sparseBenchMain("test", { M: 64, N: 64, K: 64 }), false);
    } finally {
      console.error = orig;
    }
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /^bench --sparse: /);
  },
);

const cc = cCompiler();
Deno.test(
  `bench/sparse.ts against the fake libcuda: the whole flow, a sparse compile failure recorded${
    cc === undefined ? " (skipped: no C compiler)" : ""
  }`,
  { ignore: cc === undefined },
  async () => {
    // tests/gpu/testdata/fake_libcuda.c runs no kernel: D stays poisoned, so the dense
    // check must fail (and the run exit 1), and the sparse kernel's the same way.
    const dir = await Deno.makeTempDir({ prefix: "gemmc_sparse_bench_" });
    try {
      const lib = (await buildFakeDriver(dir))!;
      const t = SPARSE_BENCH_TYPES[rng.int(0, 3)]!;
      const script = new URL("../bench/sparse.ts", import.meta.url).pathname;
      const { code, out } = await runWithFakeDriver(lib, [
        ...["run", "-A", script, "--m", "128", "--n", "64", "--k", "64", "--types", t],
        ...["--no-peers", "--no-ceiling", "--out", dir],
      ]);
      assert.equal(code, 1, out);
      const files = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) =>
        n.startsWith("sparse-")
      ).sort();
      assert.equal(files.length, 2, out);
      const report = Deno.readTextFileSync(`${dir}/${files[1]!}`);
      assert.match(report, new RegExp(`\\n- ${t} dense: check failed \\[[^\\]]+\\]: check FAILED`));
      assert.match(
        report,
        new RegExp(`\\n- ${t} sparse: check failed \\[[^\\]]+\\]: check FAILED`),
      );
      assert.match(report, /\n- peers skipped \(--no-peers\)\n/);
      const raw = JSON.parse(Deno.readTextFileSync(`${dir}/${files[0]!}`));
      assert.deepEqual([raw.M, raw.N, raw.K, raw.rows.length], [128, 64, 64, 1]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
