/**
 * bench/fp8.ts (`deno task bench --fp8`, issue 23) without a GPU: the benchmark
 * kernels (bench/kernels/e4m3*.gemm) compile for sm90 to wgmma kernels of their
 * 8-bit formats fed by TMA, with the per-tensor scales as parameters, and are
 * refused for sm80; the table, the target line and the report from fixed and
 * random fake records (met, MISSED, not measured, a failed check, the
 * fast-accumulation line); the command line; `--dry` (the plan, exit 0); the
 * no-GPU exit; and the whole flow against the fake libcuda
 * (tests/gpu/testdata/fake_libcuda.c: nothing runs, so the check must fail, the
 * run exit 1 and the record still be written). Real timing needs a device.
 */

import assert from "node:assert/strict";
import { compile } from "../compiler.ts";
import { cudaAvailable } from "../backends/cuda/driver.ts";
import { tensorParam } from "../ir/gemm.ts";
import { Rng } from "../numerics/random.ts";
import {
  compileFp8,
  FP8_BENCH_TYPES,
  FP8_PROBLEMS,
  fp8BenchMain,
  type Fp8BenchType,
  type Fp8PeerRecord,
  fp8Report,
  type Fp8Row,
  fp8Source,
  fp8Table,
  fp8Targets,
  parseFp8Args,
} from "../bench/fp8.ts";
import { buildFakeDriver, runWithFakeDriver } from "./gpu/_fake_driver.ts";

const rng = new Rng(Date.now() >>> 0);
const FLOPS8192 = 2 * 8192 ** 3;

/** gemmc's row that ran, at these times (ms). */
function row(
  type: Fp8BenchType,
  n: number,
  burst: number | null,
  sustained: number | null,
  status: Fp8Row["status"] = "ok",
): Fp8Row {
  return {
    type,
    shape: `${n}`,
    M: n,
    N: n,
    K: n,
    status,
    note: status === "ok" ? "check ok on 2048 sampled elements" : "check FAILED",
    schedule: "128x256x128, 3 stages, wg.m64n256k32.e4m3.f32, persistent 132",
    ms: { burst, sustained },
    burstRounds: burst === null ? [] : [burst, burst, burst],
    clockMHz: 1755,
    smClockMHz: 1740,
    powerW: 690,
    registers: 168,
    window: null,
  };
}

/** A peer record that ran at `ms` (or did not: status unsupported). */
function peer(
  dtype: string,
  n: number,
  variant: Fp8PeerRecord["variant"],
  state: Fp8PeerRecord["state"],
  ms: number | null,
  status = "ok",
): Fp8PeerRecord {
  return {
    dtype,
    variant,
    state,
    M: n,
    N: n,
    K: n,
    status,
    reason: status === "ok" ? null : status === "unsupported" ? "RuntimeError: no fp8" : "check",
    op: "torch._scaled_mm(A, B, scale_a, scale_b, out_dtype=torch.bfloat16)",
    ok: status === "unsupported" ? null : status === "ok",
    max_rel_err: status === "unsupported" ? null : 0.004,
    bound_ratio: status === "unsupported" ? null : 0.2,
    ms,
    tflops: ms === null ? null : 2 * n ** 3 / (ms * 1e-3) / 1e12,
    torch: "2.9.0",
    cuda: "12.8",
    device: "NVIDIA H200",
  };
}

/** The four peer records of e4m3 8192³ at these times (ms): default, then fast_accum. */
function peers8192(d: [number, number], f: [number, number]): Fp8PeerRecord[] {
  return [
    peer("e4m3", 8192, "default", "burst", d[0]),
    peer("e4m3", 8192, "default", "sustained", d[1]),
    peer("e4m3", 8192, "fast_accum", "burst", f[0]),
    peer("e4m3", 8192, "fast_accum", "sustained", f[1]),
  ];
}

Deno.test("bench/kernels/e4m3*.gemm compile for sm90 to TMA-fed wgmma kernels of their formats", () => {
  const b: Record<Fp8BenchType, string> = { e4m3: "e4m3", e4m3_e5m2: "e5m2" };
  for (const t of FP8_BENCH_TYPES) {
    for (const p of FP8_PROBLEMS) {
      const ck = compileFp8(t, p, 132);
      assert.equal(tensorParam(ck.gemm, "A").dtype, "e4m3");
      assert.equal(tensorParam(ck.gemm, "B").dtype, b[t]);
      assert.equal(tensorParam(ck.gemm, "D").dtype, "bf16");
      assert.deepEqual(
        ck.gemm.params.filter((q) => q.kind === "scalar").map((q) => [q.name, q.dtype, q.default]),
        [["sa", "f32", 1], ["sb", "f32", 1]],
      );
      const plan = ck.planned.plan;
      assert.equal(plan.mma!.wgmma, `wg.m64n256k32.${t === "e4m3" ? "e4m3" : "e4m3.e5m2"}.f32`);
      assert.notEqual(plan.pipeline!.tma, undefined);
      // Persistent on clusters of 2 where each of the 132 blocks gets at least 3 tiles
      // (passes/wgmma.ts): every problem here (8192³ 15.5, 5008³ 6.1, 4096³ 3.9); `cluster 1`
      // keeps one block a tile below 8.
      const tiles = Math.ceil(p.M / 128) * Math.ceil(p.N / 256);
      assert.ok(tiles >= 3 * 132);
      assert.equal(ck.kernel.grid.persistent?.blocks, 132);
      assert.equal(ck.kernel.cluster, 2);
      const one = compileFp8(t, p, 132, "cluster 1").kernel;
      assert.equal(one.grid.persistent?.blocks, tiles >= 8 * 132 ? 132 : undefined);
      assert.match(ck.ptx, /^\.target sm_90a$/m);
      assert.match(
        ck.ptx,
        new RegExp(`wgmma\\.mma_async\\.sync\\.aligned\\.m64n256k32\\.f32\\.e4m3\\.${b[t]} `),
      );
      assert.match(ck.ptx, /\.param \.f32 param_sa,\n\s*\.param \.f32 param_sb,/);
      assert.match(ck.ptx, /param_A_tmap\[128\]/);
      assert.match(ck.ptx, /cp\.async\.bulk\.tensor/);
    }
    // 8-bit floats need sm90's wgmma: the default target refuses them (E0128).
    const r = compile(fp8Source(t), { file: `${t}.gemm` });
    assert.ok(!r.ok);
    assert.ok(r.diagnostics.some((d) => d.code === "E0128"), JSON.stringify(r.diagnostics));
  }
});

Deno.test("fp8Table: TFLOP/s and ratios per type, shape and state; failed checks marked", () => {
  const [b, s] = [0.6 + rng.next() * 0.3, 0.7 + rng.next() * 0.3];
  const [db, ds, fb, fs] = [0.7, 0.75, 0.65, 0.7];
  const rows = [row("e4m3", 8192, b, s), row("e4m3_e5m2", 5008, 0.2, null, "check failed")];
  const peers = [
    ...peers8192([db, ds], [fb, fs]),
    peer("e4m3_e5m2", 5008, "default", "burst", 0.25, "failed"),
  ];
  const text = fp8Table(rows, peers);
  const lines = text.split("\n");
  assert.equal(lines.length, 2 + 4);
  const tf = (ms: number) => (FLOPS8192 / (ms * 1e-3) / 1e12).toFixed(1);
  assert.equal(
    lines[2],
    `| e4m3 | 8192³ | burst | ${tf(b)} | ${tf(db)} | ${(db / b).toFixed(3)} | ${tf(fb)} | ${
      (fb / b).toFixed(3)
    } |`,
  );
  assert.equal(
    lines[3],
    `| e4m3 | 8192³ | sustained | ${tf(s)} | ${tf(ds)} | ${(ds / s).toFixed(3)} | ${tf(fs)} | ${
      (fs / s).toFixed(3)
    } |`,
  );
  const odd = 2 * 5008 ** 3;
  const t5 = (ms: number) => (odd / (ms * 1e-3) / 1e12).toFixed(1);
  assert.equal(
    lines[4],
    `| e4m3_e5m2 | 5008³ | burst | ${t5(0.2)} (check failed) | ${t5(0.25)} (check failed) | ` +
      `${(0.25 / 0.2).toFixed(3)} | - | - |`,
  );
  assert.equal(lines[5], "| e4m3_e5m2 | 5008³ | sustained | - | - | - | - | - |");
});

Deno.test("fp8Targets: met, MISSED, a failed check, not measured, the fast_accum line", () => {
  const head = "e4m3 8192^3: >= 0.9x torch._scaled_mm in both states";
  // 0.70 / 0.72 ms against 0.70 / 0.75: ratios 1.000 and 1.042.
  const met = fp8Targets([row("e4m3", 8192, 0.7, 0.72)], peers8192([0.7, 0.75], [0.63, 0.648]));
  assert.deepEqual(met, [
    `${head}: met (burst 1.000x, sustained 1.042x)`,
    "e4m3 8192^3 against torch._scaled_mm(use_fast_accum=True), no target: burst 0.900x, " +
    "sustained 0.900x",
  ]);
  // Sustained at 0.8 against 0.7: 0.875 < 0.9.
  const missed = fp8Targets([row("e4m3", 8192, 0.7, 0.8)], peers8192([0.7, 0.7], [0.7, 0.7]));
  assert.equal(missed[0], `${head}: MISSED (burst 1.000x, sustained 0.875x)`);
  // Fast enough, but the output was wrong: not met.
  const wrong = fp8Targets(
    [row("e4m3", 8192, 0.5, 0.5, "check failed")],
    peers8192([0.7, 0.7], [0.7, 0.7]),
  );
  assert.equal(
    wrong[0],
    `${head}: MISSED (burst 1.400x, sustained 1.400x; gemmc's output failed its check)`,
  );
  // No peer figures: not measured, and why.
  assert.deepEqual(fp8Targets([row("e4m3", 8192, 0.7, 0.7)], []), [
    `${head}: not measured (burst, sustained: no torch._scaled_mm record)`,
  ]);
  const unsupported = [
    peer("e4m3", 8192, "default", "burst", null, "unsupported"),
    peer("e4m3", 8192, "default", "sustained", null, "unsupported"),
  ];
  assert.deepEqual(fp8Targets([row("e4m3", 8192, 0.7, 0.7)], unsupported), [
    `${head}: not measured (burst, sustained: torch._scaled_mm: unsupported: RuntimeError: no fp8)`,
  ]);
  // gemmc's kernel did not run.
  const failed: Fp8Row = { ...row("e4m3", 8192, null, null, "compile failed"), note: "E0128" };
  assert.deepEqual(fp8Targets([failed], peers8192([0.7, 0.7], [0.7, 0.7])), [
    `${head}: not measured (burst, sustained: gemmc: compile failed: E0128)`,
  ]);
  // Other shapes and types do not stand in for e4m3 8192³.
  assert.match(
    fp8Targets([row("e4m3", 4096, 0.1, 0.1), row("e4m3_e5m2", 8192, 0.7, 0.7)], [])[0]!,
    /: not measured \(no gemmc e4m3 8192³ row\)$/,
  );
});

Deno.test("fp8Report: the table, the targets, the kernels' and the peer's lines", () => {
  const rows = [row("e4m3", 8192, 0.7, 0.72), row("e4m3", 4096, 0.1, 0.11)];
  const peers = [
    ...peers8192([0.7, 0.75], [0.63, 0.648]),
    peer("e4m3", 4096, "default", "burst", null, "unsupported"),
  ];
  const text = fp8Report({
    command: "deno task bench --fp8",
    device: "NVIDIA H200 (sm_90, 132 SMs)",
    date: "2026-12-04",
    rows,
    peers,
    peersNote: null,
  });
  assert.match(text, /^# 8-bit float GEMM against torch._scaled_mm \(2026-12-04\)\n\n`deno task/);
  assert.ok(text.includes(fp8Table(rows, peers)));
  for (const l of fp8Targets(rows, peers)) assert.ok(text.includes(`\n- ${l}\n`), l);
  assert.match(
    text,
    /\n- e4m3 8192x8192x8192: ok \[128x256x128, 3 stages, [^\]]+\]: check ok on 2048 sampled elements; burst 0\.7000 ms \(rounds 0\.7000, 0\.7000, 0\.7000\), sustained 0\.7200 ms at 1755 MHz \(probe\), nvidia-smi 1740 MHz \/ 690 W, 168 registers\n/,
  );
  assert.match(text, /\n- torch 2\.9\.0 \(CUDA 12\.8\) on NVIDIA H200\n/);
  assert.match(
    text,
    /\n- e4m3 8192x8192x8192 fast_accum sustained: ok, 0\.6480 ms, 1696\.8 TFLOP\/s, check ok \(error\/bound 0\.200, max error 4\.00e-3 of the largest output\)\n/,
  );
  assert.match(
    text,
    /\n- e4m3 4096x4096x4096 default burst: unsupported: RuntimeError: no fp8\n/,
  );
  assert.ok(text.endsWith("\n"));
});

Deno.test("parseFp8Args: types, shapes, peers, out, dry, sms, schedule; bad ones refused", () => {
  assert.deepEqual(parseFp8Args([]), {});
  assert.deepEqual(
    parseFp8Args(["--types", "e4m3_e5m2", "--shapes", "8192,odd", "--out", "/tmp/x", "--dry"]),
    {
      types: ["e4m3_e5m2"],
      problems: [FP8_PROBLEMS[0], FP8_PROBLEMS[2]],
      outDir: "/tmp/x",
      dry: true,
    },
  );
  assert.deepEqual(parseFp8Args(["--sms", "114", "--no-peers"]), { sms: 114, peers: false });
  assert.deepEqual(parseFp8Args(["--schedule", "cluster 2; stages 3"]), {
    schedule: "cluster 2; stages 3",
  });
  const n = 16 * rng.int(1, 700);
  const shapes = parseFp8Args(["--shapes", `${n}`]);
  assert.ok(typeof shapes !== "string");
  assert.deepEqual(shapes.problems, [{ shape: `${n}`, M: n, N: n, K: n }]);
  for (
    const bad of [
      ["--types", "e5m2"],
      ["--types", "e4m3,e4m3"],
      ["--shapes", `${n + rng.int(1, 15)}`],
      ["--shapes", "4096,4096"],
      ["--shapes", ""],
      ["--sms", "0"],
      ["--out"],
      ["--schedule"],
      ["--schedule", " "],
      ["--gpu"],
    ]
  ) {
    assert.equal(typeof parseFp8Args(bad), "string", bad.join(" "));
  }
});

Deno.test("bench/fp8.ts --dry: every kernel's plan and the peer's, without a GPU, exit 0", async () => {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../bench/fp8.ts", import.meta.url).pathname, "--dry"],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(r.stdout);
  assert.equal(r.code, 0, out + new TextDecoder().decode(r.stderr));
  assert.match(out, /^# --dry: the kernels compiled for sm90 with 132 SMs; nothing runs\n/);
  for (const t of FP8_BENCH_TYPES) {
    for (const p of FP8_PROBLEMS) {
      assert.match(
        out,
        new RegExp(`\\n${t} ${p.M}x${p.N}x${p.K}: 128x256x128, \\d stages, wg\\.m64n256k32\\.`),
      );
    }
  }
  // Where python3 runs, the peer's plan follows (6 problems x 2 variants x 2 states).
  if (out.includes("# the peer (python3 ")) {
    assert.match(out, /\n# 24 peer records planned\n/);
    assert.match(out, /--shapes 8192x8192x8192,4096x4096x4096,5008x5008x5008 --dtypes /);
  }
});

Deno.test(
  `fp8BenchMain without a driver: false, one line on stderr${
    cudaAvailable().ok ? " (skipped: a driver is present)" : ""
  }`,
  { ignore: cudaAvailable().ok },
  async () => {
    const errors: string[] = [];
    const orig = console.error;
    console.error = (...a: unknown[]) => errors.push(a.join(" "));
    try {
      assert.equal(await fp8BenchMain("test", { problems: [FP8_PROBLEMS[1]!] }), false);
    } finally {
      console.error = orig;
    }
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /^bench --fp8: /);
  },
);

Deno.test("bench/fp8.ts against the fake libcuda: the whole flow, the check fails, recorded", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "gemmc_fp8_bench_" });
  try {
    const lib = await buildFakeDriver(dir);
    if (lib === null) {
      await t.step({ name: "skipped: no C compiler", ignore: true, fn: () => {} });
      return;
    }
    const type = FP8_BENCH_TYPES[rng.int(0, FP8_BENCH_TYPES.length - 1)]!;
    const script = new URL("../bench/fp8.ts", import.meta.url).pathname;
    const { code, out } = await runWithFakeDriver(lib, [
      ...["run", "-A", script, "--shapes", "256", "--types", type, "--no-peers", "--out", dir],
    ]);
    // The fake runs no kernel: D stays poisoned, so the check fails and the run exits 1.
    assert.equal(code, 1, out);
    const files = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith("fp8-"))
      .sort();
    assert.equal(files.length, 2, out);
    const report = Deno.readTextFileSync(`${dir}/${files[1]!}`);
    assert.match(
      report,
      new RegExp(`\\n- ${type} 256x256x256: check failed \\[128x256x128, [^\\]]+\\]: check FAILED`),
    );
    assert.match(report, /\n- peers skipped \(--no-peers\)\n/);
    assert.match(report, /: not measured \(no gemmc e4m3 8192³ row\)\n/);
    const raw = JSON.parse(Deno.readTextFileSync(`${dir}/${files[0]!}`));
    assert.equal(raw.rows.length, 1);
    assert.deepEqual([raw.rows[0].M, raw.rows[0].status], [256, "check failed"]);
    assert.deepEqual(raw.scales, { sa: 0.5, sb: 0.25 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
