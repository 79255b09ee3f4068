/**
 * The launch contract (backends/ptx/contract.ts) and the launch binder of the
 * Deno launch API (backends/cuda/bind.ts), with no driver: every violation
 * named, the parameter slots written as the ABI says, and the host-array
 * codecs (harness/device_tensor.ts) against the numerics' rounding.
 */

import assert from "node:assert/strict";
import { compile, type CompiledKernel } from "../compiler.ts";
import { launchContract, launchViolations } from "../backends/ptx/contract.ts";
import { LaunchBinder, LaunchError } from "../backends/cuda/bind.ts";
import { decodeTensor, encodeTensor } from "../harness/device_tensor.ts";
import { readElem } from "../harness/tensor.ts";
import { Rng } from "../numerics/random.ts";
import { roundBf16, roundF16 } from "../numerics/mod.ts";
import type { Dtype } from "../ir/dtype.ts";
import { gridFor, workspaceBytes } from "../ir/kernel.ts";

function kernel(src: string): CompiledKernel {
  const r = compile(src, { file: "t.gemm" });
  assert.ok(r.ok, r.diagnostics.map((d) => d.message).join("; "));
  return r.kernels[0]!;
}

const HGEMM = kernel(Deno.readTextFileSync(new URL("../examples/hgemm.gemm", import.meta.url)));
const SPLITK = kernel(Deno.readTextFileSync(new URL("../examples/splitk.gemm", import.meta.url)));

const LIMITS = { maxGrid: [2147483647, 65535, 65535] as const, maxSharedPerBlockOptin: 232448 };

function binder(ck: CompiledKernel): LaunchBinder {
  return new LaunchBinder(ck.manifest, launchContract(ck.manifest), LIMITS);
}

/** Addresses 256-byte aligned and far apart, like allocations. */
function addrs(names: readonly string[]): Record<string, bigint> {
  return Object.fromEntries(names.map((n, i) => [n, BigInt(i + 1) << 32n]));
}

Deno.test("contract: a batched bias's contiguous extent is N", () => {
  // bad_inputs/batch_bias_col.gemm: a bias [L, N] is stored with N contiguous (batch outermost);
  // the checker refuses `col` on it (E0117), so the layouts it takes are none and `row`.
  for (const layout of ["", "row"]) {
    const ck = kernel(`kernel k {
  A: f16[L, M, K]
  B: f16[L, K, N] col
  bias: f32[L, N] ${layout} align 4
  D: f32[L, M, N]
  D[l, m, n] = A[l, m, k] * B[l, k, n] + bias[l, n]
}`);
    const c = launchContract(ck.manifest);
    const bias = c.tensors.find((t) => t.name === "bias")!;
    assert.equal(bias.leading, "N", layout);
    // Matrix operands keep their layout's contiguous dimension.
    assert.equal(c.tensors.find((t) => t.name === "B")!.leading, "K");
    assert.equal(c.tensors.find((t) => t.name === "A")!.leading, "K");
    const t = new Map(
      Object.entries(addrs(["A", "B", "bias", "D"])).map(([n, a]) => [n, {
        address: a,
      }]),
    );
    const ok = launchViolations(c, { L: 3, M: 16, N: 24, K: 16 }, t, new Map());
    assert.deepEqual(ok, []);
    const bad = launchViolations(c, { L: 3, M: 16, N: 26, K: 16 }, t, new Map());
    assert.deepEqual(bad, [
      'Tensor "bias" declares align 4 but its leading dimension N=26 is not a multiple of 4',
      'Tensor "D" declares align 4 but its leading dimension N=26 is not a multiple of 4',
    ]);
  }
});

Deno.test("binder: a good launch writes every slot in ABI order, as its PTX type", () => {
  const b = binder(HGEMM);
  const bufs = addrs(["A", "B", "C", "D"]);
  const r = b.bind(bufs, { M: 200, N: 136, K: 72 }, { scalars: { alpha: 1.25, beta: -0.5 } });
  assert.equal(r, null);
  assert.deepEqual(b.grid, gridFor(HGEMM.kernel.grid, { M: 200, N: 136, K: 72 }));
  assert.equal(b.ownWorkspaceBytes, 0);
  const dv = new DataView(b.values);
  const seen: Record<string, number | bigint> = {};
  HGEMM.manifest.params.forEach((p, i) => {
    const o = i * 8;
    seen[p.name] = p.ptx === "u64"
      ? dv.getBigUint64(o, true)
      : p.ptx === "u32"
      ? dv.getUint32(o, true)
      : p.ptx === "f32"
      ? dv.getFloat32(o, true)
      : dv.getInt32(o, true);
  });
  assert.deepEqual(seen, { ...bufs, M: 200, N: 136, K: 72, alpha: 1.25, beta: -0.5 });
  // kernelParams point at the slots.
  const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(b.values)));
  assert.equal(b.pointers[3], base + 24n);
  // Defaults apply to the scalars not given; a second launch patches the same slots.
  const r2 = b.bind({ ...bufs, A: 0x7000_0000n }, { M: 1, N: 8, K: 8 }, {});
  assert.equal(r2, null);
  assert.equal(dv.getBigUint64(0, true), 0x7000_0000n);
  assert.equal(dv.getUint32(4 * 8, true), 1);
  const alpha = HGEMM.manifest.params.findIndex((p) => p.name === "alpha");
  assert.equal(dv.getFloat32(alpha * 8, true), 1);
  assert.equal(dv.getFloat32((alpha + 1) * 8, true), 0);
});

Deno.test("binder: every violation of a launch is listed, each naming its argument and value", () => {
  const b = binder(HGEMM);
  const before = new Uint8Array(b.values.slice(0));
  const bad = b.bind(
    {
      A: 0x1000n + 8n, // misaligned (16 bytes)
      B: 0n, // null
      C: "0x2000" as unknown as bigint, // not a buffer
      E: 0x5000n, // no such tensor
    },
    { M: 64, N: 60, K: 64, Q: 3 },
    { scalars: { alpha: NaN, gamma: 1 } },
  );
  assert.ok(Array.isArray(bad));
  const want = [
    /Tensor "A" at 0x1008 is not aligned to 16 bytes/,
    /Tensor "B" has a null address/,
    /No device buffer for tensor "D"/,
    /Tensor "C" is string 0x2000: a DeviceBuffer or a bigint device address is needed/,
    /Kernel "hgemm" has no tensor "E" \(it has "A", "B", "C", "D"\)/,
    /Kernel "hgemm" has no runtime dimension "Q" \(it has "M", "K", "N"\)/,
    /Scalar "alpha" is NaN: a finite f32 is needed/,
    /Kernel "hgemm" has no scalar "gamma" \(it has "alpha", "beta"\)/,
  ];
  for (const w of want) assert.ok(bad.some((m) => w.test(m)), `${w}: ${bad.join("\n")}`);
  // Nothing was written: the slots are as they were.
  assert.deepEqual(new Uint8Array(b.values), before);
  const e = new LaunchError("hgemm", bad);
  assert.match(e.message, /^Kernel "hgemm" was not launched: \d+ problems:\n {2}- /);
  assert.deepEqual(e.violations, bad);
});

Deno.test("binder: sizes, lengths, overlaps and s32 scalars", () => {
  const b = binder(HGEMM);
  const a = addrs(["A", "B", "C", "D"]);
  const cases: [Record<string, number>, Record<string, bigint>, RegExp][] = [
    [{ M: 64, N: 64 }, a, /no size for dimension "K"/],
    [{ M: 64, N: 64, K: 2 ** 31 }, a, /size K=2147483648 is not an integer in 0\.\.2147483647/],
    [{ M: 64, N: 64, K: 1.5 }, a, /size K=1\.5 is not an integer/],
    [{ M: 0, N: 64, K: 64 }, a, /empty grid/],
    [{ M: 64, N: 64, K: 64 }, { ...a, D: a.A! + 16n }, /Output "D" overlaps input "A"/],
    [{ M: 64, N: 64, K: 64 }, { ...a, C: a.D! + 16n }, /Output "D" overlaps input "C"/],
    [{ M: 64, N: 64, K: 64 }, { ...a, A: -16n }, /Tensor "A" has address -16/],
  ];
  for (const [sizes, bufs, says] of cases) {
    const r = b.bind(bufs, sizes, {});
    assert.ok(Array.isArray(r) && r.some((m) => says.test(m)), `${says}: ${JSON.stringify(r)}`);
  }
  // In place: C at D's very address is legal.
  assert.equal(b.bind({ ...a, C: a.D! }, { M: 64, N: 64, K: 64 }, {}), null);
  // A grid beyond the device's limit (y: 65535) is refused with the device's words.
  const batched = kernel(`kernel k { A: f16[L, M, K]  B: f16[L, K, N] col  D: f32[L, M, N]
    D[l, m, n] = A[l, m, k] * B[l, k, n] }`);
  const r = binder(batched).bind(addrs(["A", "B", "D"]), { L: 70000, M: 8, N: 8, K: 8 }, {});
  assert.ok(Array.isArray(r) && r.some((m) => /grid [yz] = 70000 is outside 1\.\.65535/.test(m)));
  const s32 = kernel(Deno.readTextFileSync(new URL("../examples/u8_gemm.gemm", import.meta.url)));
  const bs = binder(s32);
  const r3 = bs.bind(addrs(["A", "B", "D"]), { M: 64, N: 64, K: 64 }, { scalars: { shift: 2.5 } });
  assert.ok(Array.isArray(r3) && r3.some((m) => /Scalar "shift" is 2\.5: an s32 scalar/.test(m)));
});

Deno.test("binder: split-K wants a workspace of the contract's size; a given one is checked", () => {
  const b = binder(SPLITK);
  const names = SPLITK.manifest.params.filter((p) => p.kind === "tensor" && p.role !== "workspace")
    .map((p) => p.name);
  const bufs = addrs(names);
  const sizes = { M: 300, N: 200, K: 512 };
  const own = b.bind(bufs, sizes, {});
  assert.equal(own, null);
  const c = launchContract(SPLITK.manifest);
  assert.ok(c.workspace !== null);
  assert.equal(b.ownWorkspaceBytes, workspaceBytes(SPLITK.kernel.grid, sizes));
  assert.ok(b.ownWorkspaceBytes > 0);
  // A given workspace: no own one; its address lands in the last slot.
  const ws = 0x40_0000_0000n;
  const given = b.bind(bufs, sizes, { workspace: ws });
  assert.equal(given, null);
  assert.equal(b.ownWorkspaceBytes, 0);
  assert.equal(new DataView(b.values).getBigUint64(c.workspace.param * 8, true), ws);
  const bad = b.bind(bufs, sizes, { workspace: ws + 8n });
  assert.ok(
    Array.isArray(bad) && bad.some((m) => /workspace at 0x4000000008 is not aligned/.test(m)),
  );
  const overlap = b.bind(bufs, sizes, { workspace: bufs[names[0]!]! });
  assert.ok(Array.isArray(overlap) && overlap.some((m) => /workspace overlaps tensor/.test(m)));
  // A kernel without split-K refuses a workspace.
  const h = binder(HGEMM).bind(addrs(["A", "B", "C", "D"]), { M: 8, N: 8, K: 8 }, {
    workspace: ws,
  });
  assert.ok(Array.isArray(h) && h.some((m) => /has no split-K workspace to give/.test(m)));
});

Deno.test("host arrays: f16 and bf16 round to nearest even; every dtype round-trips", () => {
  const rng = new Rng(19);
  const xs = Float64Array.from({ length: 4099 }, () => (rng.next() * 2 - 1) * 300);
  for (const [t, round] of [["f16", roundF16], ["bf16", roundBf16]] as const) {
    const back = decodeTensor(encodeTensor(xs, t), t);
    assert.ok(back instanceof Float32Array && back.length === xs.length);
    for (let i = 0; i < xs.length; i++) assert.equal(back[i], round(xs[i]!), `${t} ${xs[i]}`);
    // Decoding what was encoded re-encodes to the same bits.
    assert.deepEqual(encodeTensor(back, t), encodeTensor(xs, t));
  }
  const ints: [Dtype, number, number, string][] = [
    ["s32", -(2 ** 31), 2 ** 31 - 1, "Int32Array"],
    ["s8", -128, 127, "Int8Array"],
    ["u8", 0, 255, "Uint8Array"],
    ["s4", -8, 7, "Int8Array"],
    ["u4", 0, 15, "Uint8Array"],
    ["b1", 0, 1, "Uint8Array"],
  ];
  for (const [t, lo, hi, kind] of ints) {
    const vs = Array.from({ length: 1001 }, () => rng.int(lo, hi));
    const bytes = encodeTensor(vs, t);
    const back = decodeTensor(bytes, t, vs.length);
    assert.equal(back.constructor.name, kind, t);
    assert.deepEqual([...back], vs, t);
    // The packing is harness/tensor.ts's.
    for (let i = 0; i < vs.length; i += 97) assert.equal(readElem(bytes, t, i), vs[i], t);
    assert.throws(
      () => encodeTensor([hi + 1], t),
      new RegExp(`Element 0 is ${hi + 1}: not a ${t}`),
    );
    assert.throws(() => encodeTensor([0.5], t), /not a/);
  }
  for (const t of ["f32", "f64"] as const) {
    const back = decodeTensor(encodeTensor(xs, t), t);
    for (let i = 0; i < xs.length; i += 13) {
      assert.equal(back[i], t === "f32" ? Math.fround(xs[i]!) : xs[i]);
    }
  }
  assert.throws(() => decodeTensor(new Uint8Array(6), "f32", 2), /6 bytes do not hold 2/);
});
