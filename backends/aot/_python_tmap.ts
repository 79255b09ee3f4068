/**
 * Tensor maps in the Python artefact (backends/aot/python.ts; sm90's TMA,
 * docs/ARCHITECTURE.md §3.4): each kernel's maps as a table of their rules (the manifest's
 * `tmap`, ir/tensor_map.ts `TensorMapSpec`, with the driver's codes), and the runtime text
 * that evaluates a rule at a launch's tensor address and sizes with the checks and messages of
 * `tensorMapArgs` and builds the map with `cuTensorMapEncodeTiled` through libcuda by ctypes
 * (`GEMMC_LIBCUDA`, else `libcuda.so.1`: the library cuda-python and CuPy load), into a
 * 128-byte buffer at a 64-byte aligned address that the kernel parameters point at.
 *
 * Shortcut: the maps are encoded at every launch (a few microseconds of host time).
 *
 * @module
 */

import type { KernelManifest } from "../ptx/manifest.ts";
import { tensorMapParams } from "../cuda/tensor_map.ts";
import {
  TENSOR_MAP_BYTES,
  TMAP_DATA_TYPES,
  TMAP_L2_PROMOTION,
  TMAP_SWIZZLES,
} from "../../ir/tensor_map.ts";

/** One map as a generated module's table holds it. */
export interface PythonTensorMap {
  readonly name: string;
  readonly tensor: string;
  readonly dataType: number;
  readonly elementBytes: number;
  readonly dims: readonly (readonly (string | number)[])[];
  readonly strides: readonly (readonly (string | number)[])[];
  readonly box: readonly number[];
  readonly swizzle: number;
  readonly swizzleBytes: number;
  readonly l2Promotion: number;
}

/**
 * A kernel's maps for its table (`"tmaps"`), with the driver's codes.
 *
 * @param m The manifest.
 * @returns The maps (empty: none).
 */
export function pythonTensorMaps(m: KernelManifest): PythonTensorMap[] {
  return tensorMapParams(m).map(({ name, spec: s }) => ({
    name,
    tensor: s.tensor,
    dataType: TMAP_DATA_TYPES[s.dataType],
    elementBytes: s.elementBytes,
    dims: s.dims,
    strides: s.strides,
    box: s.box,
    swizzle: TMAP_SWIZZLES[s.swizzle],
    swizzleBytes: s.swizzle,
    l2Promotion: TMAP_L2_PROMOTION,
  }));
}

/**
 * A kernel docstring's lines about its maps.
 *
 * @param m The manifest.
 * @returns The lines (none without maps).
 */
export function pythonTensorMapDoc(m: KernelManifest): string[] {
  const maps = tensorMapParams(m);
  if (maps.length === 0) return [];
  const p = (xs: readonly (string | number)[]) => xs.length === 0 ? "1" : xs.join("*");
  return [
    "Tensor maps (sm90's TMA), built at each launch with cuTensorMapEncodeTiled (libcuda by",
    "ctypes: GEMMC_LIBCUDA, else libcuda.so.1; CUDA 12+) and passed after the other parameters:",
    ...maps.map(({ name, spec: s }) =>
      `    ${name}: tensor ${s.tensor} as ${s.dataType}, extents [${s.dims.map(p).join(", ")}] ` +
      `(innermost first), strides [${s.strides.map(p).join(", ")}] elements, box [${
        s.box.join(", ")
      }], ${s.swizzle === 0 ? "no swizzle" : `${s.swizzle}-byte swizzle`}`
    ),
  ];
}

/** The runtime's tensor-map functions (after the rest of the runtime). */
export const PYTHON_TMAP = String.raw`

_TMAP_BYTES = ${TENSOR_MAP_BYTES}
_libcuda_state = {}


def _libcuda():
    """libcuda by ctypes, with cuTensorMapEncodeTiled's signature (loaded once)."""
    if "lib" not in _libcuda_state:
        path = _os.environ.get("GEMMC_LIBCUDA") or "libcuda.so.1"
        lib = _ctypes.CDLL(path)
        f = getattr(lib, "cuTensorMapEncodeTiled", None)
        if f is None:
            raise RuntimeError(f"gemmc: the CUDA driver {path} lacks cuTensorMapEncodeTiled "
                               "(CUDA 12.0 or newer is needed for sm90's TMA kernels)")
        u32, p = _ctypes.c_uint32, _ctypes.c_void_p
        f.argtypes = [p, u32, u32, p, p, p, p, p, u32, u32, u32, u32]
        f.restype = _ctypes.c_int
        _libcuda_state["lib"] = lib
    return _libcuda_state["lib"]


def _tmap_args(m, address, sizes):
    """ir/tensor_map.ts tensorMapArgs: (dims, strides in bytes), or the first broken rule."""
    def product(fs):
        v = 1
        for f in fs:
            v *= f if isinstance(f, int) else sizes[f]
        return v
    tensor = m["tensor"]
    if address % 16 != 0:
        return f"Tensor map of {tensor}: address 0x{address:x} is not 16-byte aligned"
    dims = [product(fs) for fs in m["dims"]]
    for i, d in enumerate(dims):
        if not 1 <= d <= 2**32:
            return f"Tensor map of {tensor}: extent {d} of dimension {i} is not 1 .. 2^32"
    strides = [product(fs) * m["elementBytes"] for fs in m["strides"]]
    for i, s in enumerate(strides):
        if s % 16 != 0 or s <= 0 or s >= 2**40:
            return (f"Tensor map of {tensor}: stride of dimension {i + 1} is {s} bytes, not a "
                    "positive multiple of 16 below 2^40")
    for i, b in enumerate(m["box"]):
        if not 1 <= b <= 256:
            return f"Tensor map of {tensor}: box {b} of dimension {i} is not 1 .. 256"
    row = m["box"][0] * m["elementBytes"]
    if m["swizzleBytes"] > 0 and row > m["swizzleBytes"]:
        return (f"Tensor map of {tensor}: a box row of {row} bytes exceeds the "
                f'{m["swizzleBytes"]}-byte swizzle')
    return (dims, strides)


def _tmap_rules(k, views, sizes, bad):
    """Every map's arguments at this launch (checked; problems appended to bad)."""
    out = {}
    for m in k.get("tmaps", ()):
        a = _tmap_args(m, views[m["tensor"]].address, sizes)
        if isinstance(a, str):
            bad.append(a)
        else:
            out[m["name"]] = a
    return out


def _encode_tmaps(k, views, rules):
    """The maps by parameter name: (buffer, address of its 64-byte aligned 128 bytes)."""
    maps = {}
    for m in k.get("tmaps", ()):
        dims, strides = rules[m["name"]]
        rank = len(dims)
        buf = (_ctypes.c_ubyte * (_TMAP_BYTES + 64))()
        aligned = (_ctypes.addressof(buf) + 63) // 64 * 64
        u64s, u32s = _ctypes.c_uint64 * 5, _ctypes.c_uint32 * 5
        r = _libcuda().cuTensorMapEncodeTiled(
            aligned, m["dataType"], rank, views[m["tensor"]].address, u64s(*dims),
            u64s(*strides) if strides else None, u32s(*m["box"]), u32s(*([1] * rank)),
            0, m["swizzle"], m["l2Promotion"], 0)  # interleave none, zeros out of bounds
        if r != 0:
            raise RuntimeError(f'gemmc: kernel "{k["name"]}": cuTensorMapEncodeTiled failed '
                               f'(CUresult {r}) for the tensor map {m["name"]} of tensor '
                               f'"{m["tensor"]}" (extents {dims}, strides {strides} bytes, '
                               f'box {m["box"]})')
        maps[m["name"]] = (buf, aligned)
    return maps
`;
