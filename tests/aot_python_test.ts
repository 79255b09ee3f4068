/**
 * The Python artefact (backends/aot/python.ts, `gemm compile --emit py`)
 * without a GPU: every example's module compiles under `python3 -m
 * py_compile`; tests/python/check_fakes.py imports the modules of hgemm, s8,
 * split-K, s4 and b1 with a fake torch, a fake CuPy and a fake cuda-python
 * driver and checks the validation messages and every launch's grid, block,
 * shared memory, stream and parameters; and the Python port of the launch contract gives the same
 * messages as backends/ptx/contract.ts `launchViolations` on the same cases.
 * Skipped, visibly, where python3 does not run.
 */

import assert from "node:assert/strict";
import { python3 } from "./_python.ts";
import { GROUPED_ARTEFACT_SOURCE, SPARSE_ARTEFACT_SOURCE } from "./_programs.ts";
import { compile, type CompiledKernel } from "../compiler.ts";
import { pythonModule } from "../backends/aot/python.ts";
import {
  contractWorkspaceBytes,
  launchContract,
  launchViolations,
  type TensorBinding,
} from "../backends/ptx/contract.ts";
import { examples, isGroupedExample, ROOT } from "./_examples.ts";
import { gemm } from "./_cli.ts";
import { type StrideDecls, stridedKernel } from "./_strided_manifests.ts";
import { groupTable } from "../backends/ptx/group_table.ts";
import { groupedGrid } from "../ir/kernel.ts";

const PYTHON = python3(["-c", "import sys; print(sys.version_info >= (3, 6))"])?.stdout.trim() ===
  "True";
const ignore = !PYTHON;
const why = ignore ? " (skipped: no python3 >= 3.6)" : "";

function compiled(name: string): CompiledKernel[] {
  const file = `examples/${name}.gemm`;
  const r = compile(Deno.readTextFileSync(new URL(file, ROOT)), { file });
  assert.ok(r.ok, `${file}: ${r.diagnostics.map((d) => d.message).join("; ")}`);
  return [...r.kernels];
}

/** Writes the modules of these examples into a fresh directory. */
function writeModules(names: readonly string[]): string {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_" });
  for (const n of names) Deno.writeTextFileSync(`${dir}/${n}.py`, pythonModule(compiled(n)));
  return dir;
}

Deno.test(`every example's Python module passes py_compile${why}`, { ignore }, () => {
  // Not yet for grouped kernels: the Python artefact has no problem table (tests/grouped_test.ts
  // lists that as a visible skip).
  const names = examples().filter((n) => !isGroupedExample(n));
  const dir = writeModules(names);
  try {
    const r = python3(["-m", "py_compile", ...names.map((n) => `${dir}/${n}.py`)]);
    assert.equal(r?.code, 0, r?.stderr);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test(`gemm compile --emit py writes the module${why}`, { ignore }, async () => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_" });
  try {
    const r = await gemm(
      "compile",
      "examples/two_kernels.gemm",
      "--emit",
      "py",
      "-o",
      `${dir}/m.py`,
    );
    assert.equal(r.code, 0, r.stderr);
    const text = Deno.readTextFileSync(`${dir}/m.py`);
    for (const k of compiled("two_kernels")) {
      assert.match(text, new RegExp(`^def ${k.name}\\(`, "m"));
      assert.ok(text.includes(JSON.stringify(`.visible .entry ${k.kernel.name}(`)));
    }
    assert.equal(python3(["-m", "py_compile", `${dir}/m.py`])?.code, 0);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test(`names that are Python keywords or runtime names get a "_"${why}`, { ignore }, () => {
  const r = compile(`kernel len { out: f16[M, K] row  lambda: f16[K, N] col  D: f32[M, N] row
    stream: f32 = 2.0
    pdl: f32 = 1.0
    D[m, n] = pdl * stream * out[m, k] * lambda[k, n] }`);
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  const text = pythonModule(r.kernels);
  assert.ok(
    text.includes("def len_(out_, lambda_, out=None, stream=None, *, pdl=False, **scalars):"),
  );
  assert.ok(text.includes('"scalarArgs": {"stream_": "stream", "pdl_": "pdl"}'));
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_" });
  try {
    Deno.writeTextFileSync(`${dir}/m.py`, text);
    assert.equal(python3(["-m", "py_compile", `${dir}/m.py`])?.code, 0);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** The strided variants the fakes and the parity test check (hand-built manifests). */
const STRIDED: Readonly<Record<string, StrideDecls>> = {
  hgemm_strided: { A: ["lda"], B: ["ldb"], C: ["ldc"], D: ["ldc"] },
  s4_strided: { A: ["lda"], B: [256], D: ["ldd"] },
  batched_strided: { A: ["sa", "lda"], B: [0, "ldb"], D: ["sd", "N"] },
};

function sparseCompiled(): CompiledKernel[] {
  const r = compile(SPARSE_ARTEFACT_SOURCE);
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return [...r.kernels];
}

function stridedCompiled(name: string): CompiledKernel {
  const base = compiled(name.replace("_strided", "").replace("s4", "s4_gemm"))[0]!;
  return stridedKernel(base, STRIDED[name]!);
}

Deno.test(`the modules check and launch right, on a fake driver${why}`, { ignore }, () => {
  const dir = writeModules(["hgemm", "s8_gemm", "splitk", "s4_gemm", "b1_and"]);
  for (const n of Object.keys(STRIDED)) {
    Deno.writeTextFileSync(`${dir}/${n}.py`, pythonModule([stridedCompiled(n)]));
  }
  Deno.writeTextFileSync(`${dir}/sparse.py`, pythonModule(sparseCompiled()));
  try {
    const r = python3([new URL("python/check_fakes.py", import.meta.url).pathname, "fakes", dir]);
    assert.equal(r?.code, 0, `${r?.stdout}\n${r?.stderr}`);
    assert.match(r!.stdout, /\d+ checks passed, 0 failed/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** One case of the contract, as both launchers take it. */
interface Case {
  sizes: Record<string, number>;
  tensors: Record<string, [number, number]>;
  scalars: Record<string, number>;
  workspace?: [number, number];
}

/** Random cases around the contract's edges: good, misaligned, short, overlapping, bad sizes. */
function cases(k: CompiledKernel, n: number, seed: number): Case[] {
  let s = seed;
  const rnd = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const c = launchContract(k.manifest);
  const out: Case[] = [];
  for (let i = 0; i < n; i++) {
    const sizes: Record<string, number> = {};
    for (const d of c.dims) sizes[d.name] = pick([0, 1, 7, 64, 96, 100, 264, 1000, -1, 2.5]);
    if (rnd() < 0.1) delete sizes[c.dims[0]!.name];
    // Strides: left out (dense), dense-ish, padded, short, misaligned, 0, out of range.
    for (const st of c.strides) {
      const v = pick([undefined, 64, 96, 128, 264, 1000, 1032, 1040, 100000, 0, 7, 130, -1, 2.5]);
      if (v !== undefined) sizes[st.name] = v;
    }
    const tensors: Record<string, [number, number]> = {};
    // Own, shared and nearby addresses: alignments, null, overlaps and in-place C all arise.
    let base = 0x1000000;
    for (const t of c.tensors) {
      const addr = pick([base, base, base + 2, base + 16, 0, 0x10000, 0x10010, 0x10000 + 4096]);
      tensors[t.name] = [addr, pick([1 << 20, 64, 1 << 22])];
      base += 1 << 23;
    }
    if (rnd() < 0.1) delete tensors[c.tensors[0]!.name];
    const scalars: Record<string, number> = {};
    for (const sc of c.scalars) scalars[sc.name] = pick([1, -0.5, 1e39, 3.25]);
    const ws: [number, number] | undefined = c.workspace !== null
      ? [pick([base, base + 8, 0x10000, 0x20000]), pick([1 << 24, 128, 0])]
      : undefined;
    out.push({ sizes, tensors, scalars, ...(ws !== undefined ? { workspace: ws } : {}) });
  }
  return out;
}

Deno.test(`the Python contract gives launchViolations' messages${why}`, { ignore }, () => {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_" });
  try {
    let compared = 0, strideMessages = 0, sparseMessages = 0;
    const sparse = sparseCompiled();
    for (
      const name of [
        "hgemm",
        "splitk",
        "s4_gemm",
        "fused_bias_relu",
        "batched",
        ...Object.keys(STRIDED),
        "spmm",
        "sps4",
      ]
    ) {
      const k = STRIDED[name] !== undefined
        ? stridedCompiled(name)
        : name === "spmm" || name === "sps4"
        ? sparse.find((x) => x.name === name)!
        : compiled(name)[0]!;
      const c = launchContract(k.manifest);
      const cs = cases(k, 60, name.length * 7919);
      Deno.writeTextFileSync(`${dir}/m.py`, pythonModule([k]));
      Deno.writeTextFileSync(`${dir}/cases.json`, JSON.stringify(cs));
      const r = python3([
        new URL("python/check_fakes.py", import.meta.url).pathname,
        "parity",
        `${dir}/m.py`,
        k.name,
        `${dir}/cases.json`,
      ]);
      assert.equal(r?.code, 0, r?.stderr);
      const got = JSON.parse(r!.stdout) as string[][];
      cs.forEach((cs1, i) => {
        const tensors = new Map<string, TensorBinding>(
          Object.entries(cs1.tensors).map(([n, [a, b]]) => [n, { address: BigInt(a), bytes: b }]),
        );
        const ws = cs1.workspace !== undefined
          ? { address: BigInt(cs1.workspace[0]), bytes: cs1.workspace[1] }
          : undefined;
        const want = launchViolations(
          c,
          cs1.sizes,
          tensors,
          new Map(Object.entries(cs1.scalars)),
          ws,
        );
        assert.deepEqual(got[i], want, `${name} case ${i}: ${JSON.stringify(cs1)}`);
        compared += want.length;
        strideMessages += want.filter((m) => / stride /.test(m)).length;
        sparseMessages += want.filter((m) =>
          /the kept values|tensor "A_meta"|input "A_meta"/.test(m)
        ).length;
      });
      if (c.workspace !== null) assert.ok(contractWorkspaceBytes(c, { M: 64, N: 64, K: 64 }) > 0);
    }
    assert.ok(compared > 450, `only ${compared} messages compared`);
    assert.ok(strideMessages > 60, `only ${strideMessages} stride messages compared`);
    assert.ok(sparseMessages > 30, `only ${sparseMessages} sparse messages compared`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** One grouped launch as check_fakes.py records it. */
interface GroupedRecord {
  kind: string;
  entry: string;
  grid: number[];
  block: number[];
  smem: number;
  params: Record<string, number>;
  dst: number;
  table: string;
  problems: { sizes: Record<string, number>; addresses: Record<string, number> }[];
  occupancy: number;
}

Deno.test(`grouped kernels: tables as groupTable writes them, checks, MoE, the grid${why}`, {
  ignore,
}, () => {
  const r = compile(GROUPED_ARTEFACT_SOURCE);
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_" });
  try {
    Deno.writeTextFileSync(`${dir}/grouped.py`, pythonModule(r.kernels));
    const out = python3([
      new URL("python/check_fakes.py", import.meta.url).pathname,
      "grouped",
      dir,
    ]);
    assert.equal(out?.code, 0, `${out?.stdout}\n${out?.stderr}`);
    assert.match(out!.stdout, /\d+ checks passed, 0 failed/);
    const line = out!.stdout.split("\n").find((l) => l.startsWith("RECORDS "))!;
    const records = JSON.parse(line.slice(8)) as GroupedRecord[];
    assert.deepEqual(records.map((x) => x.kind), [
      "grouped",
      "again",
      "one",
      "moe",
      "moe tensor offs",
      "strided",
      "cupy",
    ]);
    for (const rec of records) {
      const k = r.kernels.find((x) => x.kernel.name === rec.entry)!;
      const t = groupTable(k.manifest.group!, k.kernel.grid, rec.problems);
      const hex = [...t.bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
      assert.equal(rec.table, hex, rec.kind);
      assert.deepEqual(rec.grid, groupedGrid(t.totalTiles, 132 * rec.occupancy), rec.kind);
      assert.deepEqual(rec.block, [...k.manifest.block], rec.kind);
      assert.equal(rec.smem, k.manifest.dynamicSmemBytes, rec.kind);
      assert.equal(rec.params.group_table, rec.dst, rec.kind);
      assert.equal(rec.params.group_count, rec.problems.length, rec.kind);
    }
    // The first launch has more tiles than the 132 x 3 resident blocks: the grid is capped.
    assert.equal(records[0]!.grid[0], 396);
    // An expert without tokens, and tiles_before after it.
    const moe = records[3]!;
    assert.deepEqual(moe.problems.map((p) => p.sizes.M), [10, 0, 25, 15]);
    // The example's grouped module (examples/python/gemm_torch.py runs it on the GPU).
    const file = "examples/python/grouped.gemm";
    const ex = compile(Deno.readTextFileSync(new URL(file, ROOT)), { file });
    assert.ok(ex.ok, file);
    Deno.writeTextFileSync(`${dir}/example.py`, pythonModule(ex.kernels, { source: file }));
    const c = python3(["-m", "py_compile", `${dir}/example.py`]);
    assert.equal(c?.code, 0, c?.stderr);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test(`a grouped kernel's scalar named like moe()'s arguments gets a "_"${why}`, {
  ignore,
}, () => {
  const r = compile(`kernel g grouped { a: f16[M, K] row  B: f16[K, N] col  D: f32[M, N] row
    offs: f32 = 2.0
    D[m, n] = offs * a[m, k] * B[k, n] }`);
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  const text = pythonModule(r.kernels);
  assert.ok(text.includes("def g(a_, B, out=None, stream=None, *, pdl=False, **scalars):"));
  assert.ok(text.includes('"scalarArgs": {"offs_": "offs"}'));
  assert.ok(
    text.includes("def _gemmc_g_moe(a, b, d, offs, stream=None, *, pdl=False, **scalars):"),
  );
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_py_" });
  try {
    Deno.writeTextFileSync(`${dir}/m.py`, text);
    assert.equal(python3(["-m", "py_compile", `${dir}/m.py`])?.code, 0);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
