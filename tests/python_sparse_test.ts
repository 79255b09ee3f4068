/**
 * The Python side of structured-sparse A (backends/aot/_python_sparse.ts)
 * against numerics/sparse.ts: for every sparse dtype, batched and not, K with
 * and without padding nibbles, Python's `compress_sparse` must give the bytes
 * of `compressSparse` (values and metadata), `prune=True` those of
 * `compressSparse(..., { prune: true })`, `decompress_sparse` those of
 * `decompressSparse`, and the errors (broken pattern, bad nibble, bad K, bad
 * dtype, an s4 out of range) the same messages. The inputs are random: values
 * from `randomSparse` with extra zeros (and -0) so that groups have fewer
 * nonzeros than they keep, and for pruning dense random values with injected
 * magnitude ties, NaN and infinities. One python3 run per library does every
 * case; numpy is needed (skipped visibly without), torch runs the same cases
 * when it imports (skipped visibly otherwise).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  compressSparse,
  decompressSparse,
  randomSparse,
  SparsePatternError,
} from "../numerics/sparse_compress.ts";
import { SPARSE_DTYPES, type SparseDtype, sparseGroup } from "../numerics/sparse.ts";
import { encodeTensor } from "../harness/device_tensor.ts";
import { Rng } from "../numerics/random.ts";
import { DTYPE_INFO } from "../ir/dtype.ts";
import { PYTHON_SPARSE } from "../backends/aot/_python_sparse.ts";
import { python3 } from "./_python.ts";

const NUMPY = python3(["-c", "import numpy"])?.code === 0;
const TORCH = NUMPY && python3(["-c", "import torch"])?.code === 0;
if (!NUMPY) console.log("python_sparse_test: no python3 with numpy; the Python tests are skipped");
else if (!TORCH) {
  console.log("python_sparse_test: torch does not import; the torch step is skipped");
}

/** The numpy element type of a dense A given to Python (bf16 as uint16 bits). */
const NUMPY_DTYPE: Record<SparseDtype, string> = {
  f16: "float16",
  bf16: "uint16",
  f32: "float32",
  tf32: "float32",
  s8: "int8",
  u8: "uint8",
  s4: "int8",
  u4: "uint8",
};

/** What Python should return: (values, meta, dense) element types per library. */
function resultDtypes(dtype: SparseDtype, lib: "numpy" | "torch"): [string, string, string] {
  if (lib === "numpy") {
    const packed = dtype === "s4" || dtype === "u4";
    return [packed ? "uint8" : NUMPY_DTYPE[dtype], "uint32", NUMPY_DTYPE[dtype]];
  }
  const t: Record<SparseDtype, string> = {
    f16: "torch.float16",
    bf16: "torch.bfloat16",
    f32: "torch.float32",
    tf32: "torch.float32",
    s8: "torch.int8",
    u8: "torch.uint8",
    s4: "torch.int8",
    u4: "torch.uint8",
  };
  const packed = dtype === "s4" || dtype === "u4";
  return [packed ? "torch.uint8" : t[dtype], "torch.int32", t[dtype]];
}

/** The dense bytes Python reads (4-bit types unpacked, one element a byte). */
function denseBytes(values: ArrayLike<number>, dtype: SparseDtype): Uint8Array {
  if (dtype === "s4") return new Uint8Array(Int8Array.from(values).buffer);
  if (dtype === "u4") return Uint8Array.from(values);
  return encodeTensor(values, dtype);
}

/** A compression case: the dense matrix and what Deno makes of it. */
interface Case {
  readonly name: string;
  readonly dtype: SparseDtype;
  readonly shape: number[];
  readonly dense: Float64Array;
  readonly prune: boolean;
}

/** A random nonzero, non-±1 value of `dtype` (floats 1/16..4 either sign). */
function randomValue(rng: Rng, dtype: SparseDtype): number {
  const info = DTYPE_INFO[dtype];
  for (;;) {
    const v = info.float ? (rng.next() < 0.5 ? -1 : 1) * (0.0625 + rng.next() * 4) : rng.int(
      info.signed ? -(2 ** (info.bits - 1)) : 0,
      2 ** (info.bits - (info.signed ? 1 : 0)) - 1,
    );
    if (v !== 0 && Math.abs(v) !== 1) return v;
  }
}

/** K of `words` whole metadata words plus `extra` groups (extra > 0: padding nibbles). */
function kOf(dtype: SparseDtype, words: number, extra: number): number {
  return sparseGroup(dtype).elements * (8 * words + extra);
}

/** A matrix with the pattern, some kept units zeroed (and -0 for floats), some groups all zero. */
function patterned(dtype: SparseDtype, batch: number, rows: number, cols: number, seed: number) {
  const a = randomSparse(dtype, rows, cols, { batch, seed });
  const rng = new Rng(seed + 1000);
  const g = sparseGroup(dtype).elements;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== 0 && rng.next() < 0.2) a[i] = DTYPE_INFO[dtype].float && rng.next() < 0.5 ? -0 : 0;
  }
  for (let base = 0; base < a.length; base += g) {
    if (rng.next() < 0.1) a.fill(0, base, base + g);
  }
  return a;
}

/** A dense random matrix (no pattern) with magnitude ties, and NaN / ±Infinity for floats. */
function unpatterned(dtype: SparseDtype, n: number, seed: number): Float64Array {
  const rng = new Rng(seed);
  const a = Float64Array.from({ length: n }, () => randomValue(rng, dtype));
  const g = sparseGroup(dtype);
  for (let base = 0; base < n; base += g.elements) {
    const roll = rng.next();
    if (roll < 0.3) {
      // A tie: one unit's elements copied onto another (a sign flipped for floats).
      const units = g.elements / g.unit;
      const from = rng.int(0, units - 1);
      const to = rng.int(0, units - 1);
      for (let e = 0; e < g.unit; e++) {
        const v = a[base + from * g.unit + e]!;
        a[base + to * g.unit + e] = DTYPE_INFO[dtype].float && rng.next() < 0.5 ? -v : v;
      }
    } else if (roll < 0.4 && DTYPE_INFO[dtype].float) {
      a[base + rng.int(0, g.elements - 1)] = [NaN, Infinity, -Infinity][rng.int(0, 2)]!;
    } else if (roll < 0.45) {
      a[base + rng.int(0, g.elements - 1)] = 0;
    }
  }
  return a;
}

/** Every compression case: per dtype, unbatched/batched, padded K and whole words, prune. */
function cases(): Case[] {
  const out: Case[] = [];
  let seed = 11;
  for (const dtype of SPARSE_DTYPES) {
    const shapes: [string, number, number, number][] = [
      ["2-D, K padded", 0, 5, kOf(dtype, 2, 3)],
      ["3-D, K padded", 3, 4, kOf(dtype, 1, 5)],
      ["3-D, K whole words", 2, 3, kOf(dtype, 2, 0)],
      ["2-D, K under one word", 0, 6, kOf(dtype, 0, 3)],
    ];
    for (const [what, batch, rows, cols] of shapes) {
      const shape = batch ? [batch, rows, cols] : [rows, cols];
      out.push({
        name: `${dtype} ${what}`,
        dtype,
        shape,
        dense: patterned(dtype, batch || 1, rows, cols, seed++),
        prune: false,
      });
      out.push({
        name: `${dtype} ${what}, prune`,
        dtype,
        shape,
        dense: unpatterned(dtype, (batch || 1) * rows * cols, seed++),
        prune: true,
      });
    }
  }
  return out;
}

/** One job for the Python driver. */
interface Job {
  readonly kind: "compress" | "decompress";
  readonly dtype: string;
  readonly npdtype: string;
  readonly shape: number[];
  readonly prune?: boolean;
  readonly dense?: string;
  readonly values?: string;
  readonly meta?: string;
  readonly valuesShape?: number[];
  readonly metaShape?: number[];
  readonly K?: number;
  readonly out: string;
}

/** What the driver reports for a job. */
interface JobResult {
  readonly error?: string;
  readonly errorType?: string;
  readonly count?: number;
  readonly violations?: unknown[];
  readonly valuesShape?: number[];
  readonly metaShape?: number[];
  readonly denseShape?: number[];
  readonly valuesDtype?: string;
  readonly metaDtype?: string;
  readonly denseDtype?: string;
  readonly sameDevice?: boolean;
}

/** The Python driver: argv jobs.json, lib; prints one result per job as JSON. */
const DRIVER = String.raw`
import json
import sys

import numpy as np

sys.path.insert(0, sys.argv[3])
from gemmc_sparse import compress_sparse, decompress_sparse, SparsePatternError

lib = sys.argv[2]
if lib == "torch":
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"


def to_lib(arr):
    if lib == "numpy":
        return arr
    if arr.dtype == np.uint16:
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16).to(device)
    if arr.dtype == np.uint32:
        return torch.from_numpy(arr.view(np.int32)).to(device)
    return torch.from_numpy(arr).to(device)


def from_lib(x):
    if lib == "numpy":
        assert isinstance(x, np.ndarray), type(x)
        return x
    assert isinstance(x, torch.Tensor), type(x)
    t = x.cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def dtype_name(x):
    return str(x.dtype) if lib == "torch" else x.dtype.name


def on_device(*xs):
    return lib == "numpy" or all(str(x.device).split(":")[0] == device for x in xs)


results = []
for j in json.load(open(sys.argv[1])):
    res = {}
    try:
        if j["kind"] == "compress":
            a = np.fromfile(j["dense"], dtype=j["npdtype"]).reshape(j["shape"])
            values, meta = compress_sparse(to_lib(a), j["dtype"], prune=j["prune"])
            res["valuesShape"], res["metaShape"] = list(values.shape), list(meta.shape)
            res["valuesDtype"], res["metaDtype"] = dtype_name(values), dtype_name(meta)
            from_lib(values).tofile(j["out"] + ".values")
            from_lib(meta).tofile(j["out"] + ".meta")
            K = j["shape"][-1]
        else:
            values = to_lib(np.fromfile(j["values"], dtype=j["npdtype"]).reshape(j["valuesShape"]))
            meta = to_lib(np.fromfile(j["meta"], dtype=np.uint32).reshape(j["metaShape"]))
            K = j["K"]
        dense = decompress_sparse(values, meta, j["dtype"], K)
        res["denseShape"], res["denseDtype"] = list(dense.shape), dtype_name(dense)
        res["sameDevice"] = on_device(values, meta, dense)
        from_lib(dense).tofile(j["out"] + ".dense")
    except SparsePatternError as e:
        res.update(error=str(e), errorType="SparsePatternError", count=e.count,
                   violations=e.violations)
    except (ValueError, TypeError) as e:
        res.update(error=str(e), errorType=type(e).__name__)
    results.append(res)
print(json.dumps(results))
`;

/** Runs the jobs in Python with `lib`; the results and the directory of the outputs. */
function runPython(dir: string, jobs: Job[], lib: "numpy" | "torch"): JobResult[] {
  Deno.writeTextFileSync(`${dir}/gemmc_sparse.py`, PYTHON_SPARSE);
  Deno.writeTextFileSync(`${dir}/driver.py`, DRIVER);
  Deno.writeTextFileSync(`${dir}/jobs.json`, JSON.stringify(jobs));
  const r = python3([`${dir}/driver.py`, `${dir}/jobs.json`, lib, dir]);
  assert.ok(r, "python3 ran");
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as JobResult[];
  assert.equal(out.length, jobs.length);
  return out;
}

/** The bytes a dense matrix decodes to, as Python's decompress_sparse writes them. */
function decompressedBytes(
  c: { values: Uint8Array; meta: Uint32Array },
  dtype: SparseDtype,
  shape: number[],
): Uint8Array {
  const [rows, cols] = shape.slice(-2) as [number, number];
  const d = decompressSparse(c, dtype, rows, cols, { batch: shape.length === 3 ? shape[0]! : 1 });
  return denseBytes(d, dtype);
}

/** The u32 metadata's bytes (little-endian). */
function metaBytes(meta: Uint32Array): Uint8Array {
  const out = new Uint8Array(meta.length * 4);
  const v = new DataView(out.buffer);
  meta.forEach((w, i) => v.setUint32(4 * i, w, true));
  return out;
}

/** The jobs of one python3 run, each with its name and its check. */
interface Batch {
  readonly dir: string;
  readonly lib: "numpy" | "torch";
  readonly jobs: Job[];
  add(name: string, job: Job, check: (r: JobResult, name: string) => void): void;
  /** A job's output file with this extension. */
  readOut(job: Job, ext: string): Uint8Array;
}

/** Builds the compression and error jobs, runs them with `lib` and checks every result. */
function checkAll(lib: "numpy" | "torch"): void {
  const dir = Deno.makeTempDirSync({ prefix: "gemmc_pysparse_" });
  try {
    const checks: ((r: JobResult, name: string) => void)[] = [];
    const names: string[] = [];
    const b: Batch = {
      dir,
      lib,
      jobs: [],
      add(name, job, check) {
        names.push(name);
        this.jobs.push(job);
        checks.push(check);
      },
      readOut: (job, ext) => Deno.readFileSync(`${job.out}.${ext}`),
    };
    addCompressions(b);
    addBrokenPatterns(b);
    addBadNibbles(b);
    addRefusals(b);
    addWrongType(b);
    const results = runPython(dir, b.jobs, lib);
    results.forEach((r, i) => checks[i]!(r, `${lib}: ${names[i]}`));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

/** Compression (and the round trip) of every case. */
function addCompressions(b: Batch): void {
  for (const [i, c] of cases().entries()) {
    const { dtype, shape } = c;
    const [rows, cols] = shape.slice(-2) as [number, number];
    const batch = shape.length === 3 ? shape[0]! : 1;
    const want = compressSparse(c.dense, dtype, rows, cols, { batch, prune: c.prune });
    if (c.prune) assert.ok(want.pruned > 0, `${c.name}: the random matrix needs pruning`);
    const job: Job = {
      kind: "compress",
      dtype,
      npdtype: NUMPY_DTYPE[dtype],
      shape,
      prune: c.prune,
      dense: `${b.dir}/c${i}.dense.in`,
      out: `${b.dir}/c${i}`,
    };
    Deno.writeFileSync(job.dense!, denseBytes(c.dense, dtype));
    const lead = shape.slice(0, -1);
    const packed = sparseGroup(dtype).unit === 2;
    const [vt, mt, dt] = resultDtypes(dtype, b.lib);
    b.add(c.name, job, (r, name) => {
      assert.equal(r.error, undefined, `${name}: ${r.error}`);
      assert.deepEqual(r.valuesShape, [...lead, packed ? cols / 4 : cols / 2], name);
      assert.deepEqual(r.metaShape, [...lead, Math.ceil(cols / sparseGroup(dtype).elements / 8)]);
      assert.deepEqual([r.valuesDtype, r.metaDtype, r.denseDtype], [vt, mt, dt], name);
      assert.deepEqual(b.readOut(job, "values"), want.values, `${name}: values`);
      assert.deepEqual(b.readOut(job, "meta"), metaBytes(want.meta), `${name}: meta`);
      assert.deepEqual(r.denseShape, shape, name);
      assert.ok(r.sameDevice, `${name}: results on the input's device`);
      assert.deepEqual(
        b.readOut(job, "dense"),
        decompressedBytes(want, dtype, shape),
        `${name}: decompress`,
      );
    });
  }
}

/** Broken patterns: the count, the first positions and the message. */
function addBrokenPatterns(b: Batch): void {
  for (const dtype of SPARSE_DTYPES) {
    const g = sparseGroup(dtype).elements;
    for (
      const [what, batch, rows, cols, bad] of [
        ["2-D, one group", 0, 5, kOf(dtype, 1, 3), [[0, 3, 9]]],
        ["3-D, two groups", 3, 4, kOf(dtype, 1, 2), [[0, 0, 0], [2, 3, 9]]],
        ["3-D, eleven groups (listed 8)", 2, 4, kOf(dtype, 1, 2), [
          ...Array.from({ length: 11 }, (_, k) => [k % 2, k % 4, k]),
        ]],
      ] as [string, number, number, number, number[][]][]
    ) {
      const a = patterned(dtype, batch || 1, rows, cols, 500 + b.jobs.length);
      const rng = new Rng(b.jobs.length);
      for (const [bi, r, q] of bad) {
        const base = (bi! * rows + r!) * cols + q! * g;
        for (let e = 0; e < g; e++) a[base + e] = randomValue(rng, dtype);
      }
      let want: SparsePatternError | undefined;
      try {
        compressSparse(a, dtype, rows, cols, { batch: batch || 1 });
      } catch (e) {
        want = e as SparsePatternError;
      }
      assert.ok(want instanceof SparsePatternError, `${dtype} ${what}: Deno refuses it`);
      const shape = batch ? [batch, rows, cols] : [rows, cols];
      const job: Job = {
        kind: "compress",
        dtype,
        npdtype: NUMPY_DTYPE[dtype],
        shape,
        prune: false,
        dense: `${b.dir}/p${b.jobs.length}.dense.in`,
        out: `${b.dir}/p${b.jobs.length}`,
      };
      Deno.writeFileSync(job.dense!, denseBytes(a, dtype));
      b.add(`${dtype} ${what}`, job, (r, name) => {
        assert.equal(r.errorType, "SparsePatternError", name);
        assert.equal(r.count, bad.length, name);
        assert.deepEqual(r.violations, want.violations, name);
        assert.equal(r.error, want.message.replace("prune: true", "prune=True"), name);
      });
    }
  }
}

/** A nibble that is not meaningful for the type, in decompress_sparse. */
function addBadNibbles(b: Batch): void {
  for (const dtype of SPARSE_DTYPES) {
    const [batch, rows, cols] = [3, 4, kOf(dtype, 1, 2)];
    const c = compressSparse(
      randomSparse(dtype, rows, cols, { batch, seed: 77 }),
      dtype,
      rows,
      cols,
      {
        batch,
      },
    );
    const meta = c.meta.slice();
    const w = Math.ceil(cols / sparseGroup(dtype).elements / 8);
    const [bi, r, q] = [2, 1, 9];
    const word = (bi * rows + r) * w + (q >> 3);
    const nib = dtype === "s4" || dtype === "u4" ? 0b0111 : 0b0000;
    meta[word] = (meta[word]! & ~(0xf << (4 * (q & 7)))) | (nib << (4 * (q & 7)));
    let want = "";
    try {
      decompressSparse({ values: c.values, meta }, dtype, rows, cols, { batch });
    } catch (e) {
      want = (e as Error).message;
    }
    assert.match(want, /not a meaningful/);
    const packed = sparseGroup(dtype).unit === 2;
    const job: Job = {
      kind: "decompress",
      dtype,
      npdtype: packed ? "uint8" : NUMPY_DTYPE[dtype],
      shape: [batch, rows, cols],
      values: `${b.dir}/n${b.jobs.length}.values.in`,
      meta: `${b.dir}/n${b.jobs.length}.meta.in`,
      valuesShape: [batch, rows, packed ? cols / 4 : cols / 2],
      metaShape: [batch, rows, w],
      K: cols,
      out: `${b.dir}/n${b.jobs.length}`,
    };
    Deno.writeFileSync(job.values!, c.values);
    Deno.writeFileSync(job.meta!, metaBytes(meta));
    b.add(`${dtype} bad nibble`, job, (res, name) => {
      assert.equal(res.errorType, "ValueError", name);
      assert.equal(res.error, want, name);
    });
  }
}

/** Refused arguments: K off the group, a type that cannot be sparse, an s4 out of range. */
function addRefusals(b: Batch): void {
  const s4Rows = [
    ...[3, 0, 0, 0, 0, 0, -5, 2, 0, 0, 6, 5, 0, 0, 0, 0],
    ...[0, 0, 0, 0, 0, 0, 7, 2, 0, 0, 9, 5, 0, 0, 0, 0],
  ];
  const refused: [string, string, string, number[], number[]][] = [
    ["K off the group", "f16", "float16", [2, 3], [1.5, 0, 0, 2.5, 0, 3]],
    ["K off the group, tf32", "tf32", "float32", [1, 5], [1.5, 0, 0, 2.5, 0]],
    ["s4 out of range", "s4", "int8", [2, 2, 8], s4Rows],
    ["u4 out of range", "u4", "uint8", [2, 2, 8], s4Rows.map((v) => Math.abs(v) * 2)],
    ["f64 is not sparse", "f64", "float64", [2, 4], [1.5, 0, 0, 2.5, 0, 3, -2, 0]],
  ];
  for (const [what, dtype, npdtype, shape, values] of refused) {
    let want = "";
    try {
      const [rows, cols] = shape.slice(-2) as [number, number];
      compressSparse(values, dtype, rows, cols, { batch: shape.length === 3 ? shape[0]! : 1 });
    } catch (e) {
      want = (e as Error).message;
    }
    assert.notEqual(want, "", `${what}: Deno refuses it`);
    const job: Job = {
      kind: "compress",
      dtype,
      npdtype,
      shape,
      prune: false,
      dense: `${b.dir}/r${b.jobs.length}.dense.in`,
      out: `${b.dir}/r${b.jobs.length}`,
    };
    const bytes = npdtype === "float64"
      ? new Uint8Array(Float64Array.from(values).buffer)
      : denseBytes(values, dtype as SparseDtype);
    Deno.writeFileSync(job.dense!, bytes);
    b.add(what, job, (r, name) => {
      assert.equal(r.errorType, "ValueError", name);
      assert.equal(r.error, want, name);
    });
  }
}

/** A wrong element type is a TypeError naming what is needed. */
function addWrongType(b: Batch): void {
  {
    const job: Job = {
      kind: "compress",
      dtype: "bf16",
      npdtype: "float32",
      shape: [1, 4],
      prune: false,
      dense: `${b.dir}/t.dense.in`,
      out: `${b.dir}/t`,
    };
    Deno.writeFileSync(job.dense!, new Uint8Array(new Float32Array([1.5, 0, 0, -2.5]).buffer));
    const want = b.lib === "numpy"
      ? "a has element type float32: bf16 needs uint16 (bf16 bits)"
      : "a has element type torch.float32: bf16 needs torch.bfloat16";
    b.add("bf16 given float32", job, (r, name) => {
      assert.equal(r.errorType, "TypeError", name);
      assert.equal(r.error, want, name);
    });
  }
}

Deno.test({
  name: "python compress_sparse/decompress_sparse (numpy) match numerics/sparse.ts byte for byte",
  ignore: !NUMPY,
  fn: () => checkAll("numpy"),
});

Deno.test({
  name: TORCH
    ? "python compress_sparse/decompress_sparse (torch) match numerics/sparse.ts byte for byte"
    : "python compress_sparse/decompress_sparse (torch): skipped, torch does not import here",
  ignore: !TORCH,
  fn: () => checkAll("torch"),
});
