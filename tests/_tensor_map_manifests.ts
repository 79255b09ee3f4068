/**
 * Hand-built tensor-map kernels for the launcher tests (sm90's TMA, issue 23): a compiled
 * kernel with `tensormap` parameters (`ptx` "tmap", a {@link TensorMapSpec} each) appended to
 * its kernel IR and its manifest, as the sm90 lowering places them (after every other
 * parameter), and its PTX printed again so that the entry declares them
 * (`.param .align 64 .b8 NAME[128]`), which is where the fake driver reads the launch's
 * maps. Shortcut until the lowering emits TMA kernels: the body is the kernel's own, so these
 * serve the launchers and the fake driver only, never a real launch.
 *
 * @module
 */

import { compile, type CompiledKernel, ptxModule } from "../compiler.ts";
import type { KernelParam } from "../ir/kernel.ts";
import type { TensorMapArgs, TensorMapSpec } from "../ir/tensor_map.ts";
import type { ManifestParam } from "../backends/ptx/manifest.ts";

/**
 * The kernel with one tensor map per spec, named `<tensor>_tmap`, after its parameters.
 *
 * @param ck The compiled kernel.
 * @param specs The maps' rules.
 * @returns The kernel with the maps in its IR, manifest and PTX.
 */
export function tensorMapKernel(
  ck: CompiledKernel,
  specs: readonly TensorMapSpec[],
): CompiledKernel {
  const params: KernelParam[] = specs.map((tmap) => ({
    name: `${tmap.tensor}_tmap`,
    kind: "tensormap",
    ptx: "tmap",
    tmap,
  }));
  const kernel = { ...ck.kernel, params: [...ck.kernel.params, ...params] };
  const mparams: ManifestParam[] = params.map((p) => ({
    name: p.name,
    kind: p.kind,
    ptx: p.ptx,
    tmap: p.tmap!,
  }));
  const manifest = { ...ck.manifest, params: [...ck.manifest.params, ...mparams] };
  const withMaps = { ...ck, kernel, manifest };
  return { ...withMaps, ptx: ptxModule([withMaps]) };
}

/** The maps of hgemm's operands as the sm90 lowering asks for them (K contiguous, 128-byte swizzle). */
export const HGEMM_TMAPS: readonly TensorMapSpec[] = [
  {
    tensor: "A",
    dataType: "float16",
    elementBytes: 2,
    dims: [["K"], ["M"]],
    strides: [["K"]],
    box: [64, 128],
    swizzle: 128,
  },
  {
    tensor: "B",
    dataType: "float16",
    elementBytes: 2,
    dims: [["K"], ["N"]],
    strides: [["K"]],
    box: [64, 256],
    swizzle: 128,
  },
];

/**
 * examples/hgemm.gemm compiled for sm90 with the maps of {@link HGEMM_TMAPS} (parameters A, B,
 * C, D, M, K, N, alpha, beta, A_tmap, B_tmap); once the lowering gives the kernel tensor maps
 * of its own, the kernel as compiled. Tests read the rules from the manifest.
 *
 * @param name The kernel's name (default hgemm).
 * @returns The kernel.
 */
export function hgemmTensorMapKernel(name = "hgemm"): CompiledKernel {
  const src = Deno.readTextFileSync(new URL("../examples/hgemm.gemm", import.meta.url))
    .replace("kernel hgemm", `kernel ${name}`);
  const r = compile(src, { target: "sm90" });
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  if (ck.manifest.params.some((p) => p.kind === "tensormap")) return ck;
  return tensorMapKernel(ck, HGEMM_TMAPS);
}

/**
 * The kernel with tensor `name` declared `align 2` in its manifest (4 bytes for f16):
 * addresses the contract lets by but a tensor map does not (16 bytes).
 *
 * @param ck The kernel.
 * @param name The tensor.
 * @returns The kernel with the looser manifest.
 */
export function looselyAligned(ck: CompiledKernel, name = "A"): CompiledKernel {
  const params = ck.manifest.params.map((p): ManifestParam =>
    p.name === name ? { ...p, align: 2 } : p
  );
  return { ...ck, manifest: { ...ck.manifest, params } };
}

/**
 * hgemm with one map of A, without swizzle and with a box row of 8 bytes: the rule lets it by,
 * the driver refuses it (a box row must be a multiple of 16 bytes).
 *
 * @param name The kernel's name.
 * @returns The kernel.
 */
export function refusedMapKernel(name: string): CompiledKernel {
  const base = hgemmTensorMapKernel(name);
  const plain = {
    ...base,
    kernel: { ...base.kernel, params: base.kernel.params.filter((p) => p.kind !== "tensormap") },
    manifest: {
      ...base.manifest,
      params: base.manifest.params.filter((p) => p.kind !== "tensormap"),
    },
  };
  return tensorMapKernel(plain, [{ ...HGEMM_TMAPS[0]!, swizzle: 0, box: [4, 128] }]);
}

/** An f16 GEMM the sm90 lowering gives tensor maps (passes/wgmma.ts: the warp-specialized TMA pipeline). */
export const TMA_SOURCE = `kernel NAME {
  A: f16[M, K] row
  B: f16[K, N] col
  D: f32[M, N] row
  D[m, n] = A[m, k] * B[k, n]
}`;

/**
 * {@link TMA_SOURCE} compiled for sm90: parameters A, B, D, M, K, N, A_tmap, B_tmap, as the
 * lowering places them.
 *
 * @param name The kernel's name.
 * @param schedule Schedule lines of its own (`"cluster 2"`), if any.
 * @returns The kernel.
 * @throws {Error} When the lowering gives it no tensor maps.
 */
export function compiledTmaKernel(name: string, schedule?: string): CompiledKernel {
  const src = TMA_SOURCE.replace("NAME", name);
  const r = compile(
    schedule === undefined ? src : src.replace(/}$/, `  schedule {\n    ${schedule}\n  }\n}`),
    { target: "sm90" },
  );
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join("; "));
  const ck = r.kernels[0]!;
  if (!ck.manifest.params.some((p) => p.kind === "tensormap")) {
    throw new Error(`Kernel "${name}" has no tensor maps on sm90`);
  }
  return ck;
}

/**
 * The fake driver's record of an encoded map (tests/gpu/testdata/fake_libcuda.c writes its
 * arguments into the 128 bytes): magic, serial, type, rank, address, extents, strides, box,
 * element strides and the four enum flags (interleave, swizzle, L2 promotion, oob fill).
 *
 * @param b The 128 bytes.
 * @returns The record's fields.
 */
export function fakeMapRecord(b: Uint8Array) {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const rank = dv.getUint32(12, true);
  const u64 = (o: number) => Number(dv.getBigUint64(o, true));
  return {
    magic: dv.getUint32(0, true),
    serial: dv.getUint32(4, true),
    map: {
      dataType: dv.getUint32(8, true),
      address: dv.getBigUint64(16, true),
      globalDim: Array.from({ length: rank }, (_, d) => u64(24 + 8 * d)),
      globalStrides: Array.from({ length: rank - 1 }, (_, d) => u64(64 + 8 * d)),
      boxDim: Array.from({ length: rank }, (_, d) => dv.getUint32(96 + 4 * d, true)),
      elementStrides: [...b.subarray(116, 116 + rank)],
      flags: [...b.subarray(121, 125)],
    },
  };
}

/** The fake's magic number at the start of every map it encodes. */
export const FAKE_MAP_MAGIC = 0x50414d54;

/**
 * What {@link fakeMapRecord}'s `map` must hold for the encoder's arguments `a`: element
 * strides 1, interleave and oob fill none.
 *
 * @param a The arguments (ir/tensor_map.ts `tensorMapArgs`).
 * @returns The expected fields.
 */
export function expectedMapRecord(a: TensorMapArgs): ReturnType<typeof fakeMapRecord>["map"] {
  return {
    dataType: a.dataType,
    address: a.address,
    globalDim: [...a.globalDim],
    globalStrides: [...a.globalStrides],
    boxDim: [...a.boxDim],
    elementStrides: a.globalDim.map(() => 1),
    flags: [0, a.swizzle, a.l2Promotion, 0],
  };
}
