/**
 * The runtime part of the Python artefact (`gemm compile --emit py`): the
 * Python text every generated module carries after its tables
 * (backends/aot/python.ts). It reads the tables `_KERNELS` (one
 * `LaunchContract` per kernel, rendered as Python data), `_DTYPES`,
 * `_MAX_DIM`, `_WORKSPACE_ALIGN_BYTES` and `_PTX`, and implements:
 *
 * - the launch contract's rules (backends/ptx/contract.ts
 *   `launchViolations`), ported rule for rule with the same messages: a
 *   change there must be made here too (tests/aot_python_test.ts runs both on
 *   the same cases and compares the messages);
 * - what only a Python caller can get wrong: the tensor's library, dtype,
 *   rank, extents, layout (strides), device; a tensor declared with
 *   `strides(...)` (DESIGN.md §6.1) may be any view whose contiguous
 *   dimension has stride 1: its other strides are the stride values (the
 *   `.u64` stride parameters), checked against literals, dimensions and the
 *   other tensors that name the same stride;
 * - two drivers: cuda-python (`cuda.bindings.driver`, or the older
 *   `cuda.cuda`) and CuPy (`cupy.cuda.driver`), both through the same
 *   `void**` parameter array built with ctypes;
 * - sm90's tensor maps (backends/aot/_python_tmap.ts), built through libcuda by ctypes;
 * - programmatic dependent launch (`pdl=True`, backends/aot/_python_pdl.ts): cuda-python's
 *   `cuLaunchKernelEx` with the programmatic stream-serialization attribute.
 *
 * @module
 */

import { PYTHON_STRIDES } from "./_python_strides.ts";
import { PYTHON_GROUPED } from "./_python_grouped.ts";
import { PYTHON_TMAP } from "./_python_tmap.ts";
import { PYTHON_PDL } from "./_python_pdl.ts";

/** The Python runtime text (no tables; see backends/aot/python.ts), strides included. */
export const PYTHON_RUNTIME = String.raw`
import ctypes as _ctypes
import math as _math
import numbers as _numbers
import os as _os
import threading as _threading


class GemmcLaunchError(ValueError):
    """A launch that breaks the kernel's contract; nothing was launched.

    The message has one line per problem, each naming the tensor, dimension
    or scalar and its value; the attribute problems holds the lines.
    """

    def __init__(self, kernel, problems):
        self.kernel = kernel
        self.problems = list(problems)
        ValueError.__init__(self, "\n".join(self.problems))


# The dynamic shared memory a kernel may use without raising its limit.
_SMEM_DEFAULT_LIMIT = 48 * 1024
# CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (cuda.h).
_ATTR_MAX_DYNAMIC_SMEM = 8
_PARAM_CTYPES = {
    "u64": _ctypes.c_uint64,
    "u32": _ctypes.c_uint32,
    "f32": _ctypes.c_float,
    "f64": _ctypes.c_double,
    "s32": _ctypes.c_int32,
}


def _js(v):
    """A number as the Deno launcher's messages print it (JavaScript's String(v))."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "Infinity" if v > 0 else "-Infinity"
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        return repr(v).replace("e-0", "e-").replace("e+0", "e+")
    return str(v)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


class _View(object):
    """A tensor argument as the checks see it (strides in elements)."""

    def __init__(self, x, lib, dtype, shape, strides, address, device, itemsize):
        self.x = x
        self.lib = lib
        self.dtype = dtype
        self.shape = shape
        self.strides = strides
        self.address = address
        self.device = device
        self.itemsize = itemsize
        n = 1
        for e in shape:
            n *= e
        self.bytes = n * itemsize


def _view(name, x, bad):
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        if not x.is_cuda:
            bad.append(f'Tensor "{name}" is on {x.device}: a CUDA tensor is needed')
            return None
        return _View(x, "torch", str(x.dtype).replace("torch.", ""), tuple(x.shape),
                     tuple(x.stride()), x.data_ptr(), x.device.index, x.element_size())
    cupy = _cupy()
    if cupy is not None and isinstance(x, cupy.ndarray):
        size = x.itemsize
        return _View(x, "cupy", x.dtype.name, tuple(x.shape),
                     tuple(s // size for s in x.strides), x.data.ptr, x.device.id, size)
    bad.append(f'Tensor "{name}" is a {type(x).__name__}: a PyTorch CUDA tensor or a CuPy '
               'array is needed')
    return None


def _contiguous_axis(t, rank):
    """The axis that is contiguous in memory (packed for sub-byte dtypes)."""
    if rank >= 2 and t["layout"] == "col":
        return rank - 2
    return rank - 1


def _logical_shape(t, v, bad):
    """The shape in the kernel's elements: a sub-byte tensor's packed axis unpacked; a sparse
    A's kept values (K / 2 a row) doubled."""
    shape = list(v.shape)
    if t["bits"] < 8 and shape:
        shape[_contiguous_axis(t, len(shape))] *= 8 // t["bits"]
    if _sparse_storage(t) == "values" and shape:
        shape[-1] *= 2
    return shape


def _sparse_storage(t):
    """A sparse A's buffer (contract.ts ContractTensor.sparse): "values", "metadata" or None."""
    s = t.get("sparse")
    return None if s is None else s["storage"]


def _stored_extent(t, full):
    """contract.ts storedExtent: a sparse A's kept values hold K / 2, its metadata
    ceil(K / kPerWord) words; any other tensor's contiguous extent is the dimension."""
    storage = _sparse_storage(t)
    if storage == "values":
        return full // 2 if full % 2 == 0 else full / 2
    if storage == "metadata":
        return -(-full // t["sparse"]["kPerWord"])
    return full


def _meta_dtypes(lib):
    """The element types a sparse A's metadata (32-bit words) may have."""
    if lib == "torch":
        return ("int32", "uint32") if hasattr(_torch(), "uint32") else ("int32",)
    return ("int32", "uint32")


def _meta_shape(k, views, sizes, bad):
    """A sparse A's metadata: [batch?, M, ceil(K / kPerWord)] at the sizes the others give."""
    for t in k["tensors"]:
        v = views.get(t["name"])
        if v is None or _sparse_storage(t) != "metadata":
            continue
        want = [_dim(d, sizes) for d in t["shape"]]
        if None in want or not all(isinstance(e, int) for e in want):
            continue
        want[-1] = _stored_extent(t, want[-1])
        if list(v.shape) != want:
            dims = list(t["shape"][:-1]) + [f'ceil({t["shape"][-1]} / {t["sparse"]["kPerWord"]})']
            bad.append(f'Tensor "{t["name"]}" has shape {list(v.shape)}: the metadata of the '
                       f'sparse A needs {want} ([{", ".join(str(d) for d in dims)}] 32-bit words)')


def _dense_strides(t, shape):
    """The strides, in elements, of a dense tensor of this (physical) shape and layout."""
    order = list(range(len(shape)))
    if len(shape) >= 2 and t["layout"] == "col":
        order[-1], order[-2] = order[-2], order[-1]
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= shape[axis]
    return strides


def _check_view(t, v, bad):
    """dtype and layout: what a gemmc kernel reads as dense in its declared layout."""
    name = t["name"]
    meta = _sparse_storage(t) == "metadata"
    want = _meta_dtypes(v.lib) if meta else _DTYPES[t["dtype"]].get(v.lib) or ()
    if v.dtype not in want:
        what = f'the sparse metadata (32-bit words) of gemmc {t["dtype"]}' if meta else \
            f'gemmc {t["dtype"]}'
        bad.append(f'Tensor "{name}" has dtype {v.lib}.{v.dtype}; {what} needs '
                   + " or ".join(f"{v.lib}.{w}" for w in want))
        return False
    if len(v.shape) != len(t["shape"]) and not meta:
        bad.append(f'Tensor "{name}" has shape {list(v.shape)}; it is declared '
                   f'[{", ".join(str(d) for d in t["shape"])}]')
        return False
    if 0 in v.shape:
        return True
    if t.get("strides") is not None:
        return _check_strided(t, v, bad)
    want = _dense_strides(t, v.shape)
    if any(s != w and e != 1 for s, w, e in zip(v.strides, want, v.shape)):
        how = ("contiguous" if t["layout"] == "row" or len(v.shape) < 2
               else "the transpose of a contiguous one in its last two dimensions")
        bad.append(f'Tensor "{name}" has strides {list(v.strides)} for shape {list(v.shape)}: '
                   f'declared {t["layout"]}, it must be {how} (strides {want})')
        return False
    return True


def _sizes(k, views, bad):
    """The runtime sizes, from the tensors' shapes (each dimension agreeing)."""
    sizes = {}
    origin = {}
    for t in k["tensors"]:
        v = views.get(t["name"])
        if v is None or _sparse_storage(t) == "metadata":
            continue  # the metadata's extents are checked against the sizes (_meta_shape)
        for d, e in zip(t["shape"], _logical_shape(t, v, bad)):
            if isinstance(d, int):
                if e != d:
                    bad.append(f'Tensor "{t["name"]}" has extent {e} where it is declared {d}')
            elif d in sizes and sizes[d] != e:
                bad.append(f'Tensor "{t["name"]}" gives {d}={e} but tensor "{origin[d]}" '
                           f'gives {d}={sizes[d]}')
            elif d not in sizes:
                sizes[d] = e
                origin[d] = t["name"]
    return sizes


def _dim(d, sizes):
    return d if isinstance(d, int) else sizes.get(d)


def _grid(k, sizes):
    # backends/ptx/contract.ts contractGrid (ir/grid.ts gridFor).
    g = k["gridPlan"]
    tiles_m = -(-_dim(g["m"], sizes) // g["tileM"])
    tiles_n = -(-_dim(g["n"], sizes) // g["tileN"])
    batch = 1 if g["batch"] is None else _dim(g["batch"], sizes)
    if g.get("persistent"):
        # A persistent kernel: one block an SM at most, each looping over tiles; with clusters
        # of c CTAs, c of them over units of c tiles along M (or N).
        c = g["persistent"].get("cluster", 1)
        if g["persistent"].get("clusterAxis") == "n":
            units = tiles_m * -(-tiles_n // c) * batch
        else:
            units = -(-tiles_m // c) * tiles_n * batch
        return (c * max(1, min(units, g["persistent"]["blocks"] // c)), 1, 1)
    return (tiles_m * g["swizzle"], -(-tiles_n // g["swizzle"]), batch * g["splitK"])


def _workspace_bytes(k, sizes):
    # backends/ptx/contract.ts contractWorkspaceBytes (ir/grid.ts workspaceBytes).
    g = k["gridPlan"]
    per = g.get("workspacePerTile") or 0
    if k["workspace"] is None or per == 0:
        return 0
    x, _, z = _grid(k, sizes)
    if g.get("persistent"):
        return 2 * x * per  # Stream-K: two records a block at most
    return (x // g["swizzle"]) * -(-_dim(g["n"], sizes) // g["tileN"]) * (z // g["splitK"]) * per


def _tensor_bytes(t, sizes):
    if t.get("strides") is not None:
        batch, rows, cont, sb, sm = _view_values(t["view"], sizes)
        n = 0 if 0 in (batch, rows, cont) else (batch - 1) * sb + (rows - 1) * sm + cont
        return -(-(n * t["bits"]) // 8)
    # contract.ts tensorBytes: a sparse A's contiguous extent as stored (its last dimension,
    # row-major); the kept values' K / 2 as a division at the end (K may be odd).
    n = 1
    last = len(t["shape"]) - 1
    for i, d in enumerate(t["shape"]):
        e = _dim(d, sizes)
        n *= _stored_extent(t, e) if i == last and _sparse_storage(t) == "metadata" else e
    half = 2 if _sparse_storage(t) == "values" else 1
    return -(-(n * t["bits"]) // (8 * half))


def _violations(k, sizes, tensors, scalars, workspace=None, pending=()):
    """backends/ptx/contract.ts launchViolations, rule for rule, same messages.

    tensors: name -> (address, bytes or None); pending: outputs still to be
    allocated (no buffer yet, nothing to check but the sizes); scalars None: not
    checked. A grouped kernel's problem (k["group"]) has no empty-grid rule, and its
    tensors of 0 bytes may have a null address.
    """
    bad = []
    name = k["name"]
    sizes_ok = True
    for d in k["dims"]:
        v = sizes.get(d["name"])
        if v is None:
            bad.append(f'Kernel "{name}": no size for dimension "{d["name"]}"')
            sizes_ok = False
        elif not (isinstance(v, int) and 0 <= v <= _MAX_DIM):
            bad.append(f'Kernel "{name}": size {d["name"]}={_js(v)} is not an integer in '
                       f'0..{_MAX_DIM}')
            sizes_ok = False
    if sizes_ok and k.get("group") is None:
        grid = _grid(k, sizes)
        if any(g < 1 for g in grid):
            bad.append(f'Kernel "{name}": the sizes give an empty grid '
                       f'[{", ".join(str(g) for g in grid)}]: every output dimension must be '
                       'at least 1')
    # Strides (DESIGN.md §6.1): the values given, and those left out dense.
    strides_ok = True
    for s in k["strides"]:
        v = sizes.get(s["name"])
        if v is not None and not (isinstance(v, int) and not isinstance(v, bool)
                                  and 0 <= v < 2**63):
            bad.append(f'Kernel "{name}": stride {s["name"]}={_js(v)} is not an integer in '
                       f'0..{_MAX_STRIDE}')
            strides_ok = False
    if not strides_ok:
        sizes_ok = False
    elif sizes_ok and k["strides"]:
        sizes = _with_stride_defaults(k, sizes)
    ranges = []
    for t in k["tensors"]:
        if sizes_ok and t["leading"] is not None:
            full = _dim(t["leading"], sizes)
            v = _stored_extent(t, full)
            if v % t["alignElems"] != 0:
                lead = str(full) if isinstance(t["leading"], int) else f'{t["leading"]}={full}'
                if t.get("sparse") is not None:
                    lead = f"(the kept values, {lead} / 2 = {_js(v)})"
                bad.append(f'Tensor "{t["name"]}" declares align {t["alignElems"]} but its '
                           f'leading dimension {lead} is not a multiple of {t["alignElems"]}')
        if sizes_ok and t.get("strides") is not None:
            _stride_violations(t, sizes, bad)
        if t["name"] in pending:
            continue
        b = tensors.get(t["name"])
        if b is None:
            bad.append(f'No device buffer for tensor "{t["name"]}"')
            continue
        address, length = b
        if address == 0 and k.get("group") and sizes_ok and _tensor_bytes(t, sizes) == 0:
            pass  # an empty problem's tensor (an expert without tokens): never read or written
        elif address == 0:
            bad.append(f'Tensor "{t["name"]}" has a null address')
        elif address % t["alignBytes"] != 0:
            bad.append(f'Tensor "{t["name"]}" at 0x{address:x} is not aligned to '
                       f'{t["alignBytes"]} bytes (align {t["alignElems"]} of {t["dtype"]})')
        if not sizes_ok:
            continue
        need = _tensor_bytes(t, sizes)
        if length is not None and length < need:
            bad.append(f'Buffer of tensor "{t["name"]}" holds {length} bytes; the sizes need '
                       f'{need}')
        ranges.append((t, address, address + need))
    for o, olo, ohi in ranges:
        if not o["output"]:
            continue
        for i, ilo, ihi in ranges:
            if i["output"]:
                continue
            in_place = i["role"] == "C" and ilo == olo and _same_strides(i, o, sizes)
            if not in_place and olo < ihi and ilo < ohi and ohi > olo and ihi > ilo:
                bad.append(f'Output "{o["name"]}" overlaps input "{i["name"]}"'
                           + (" (C may only be D itself, at the same address)"
                              if i["role"] == "C" else ""))
    if workspace is not None:
        bad.extend(_workspace_violations(k, sizes, sizes_ok, workspace, ranges))
    if scalars is not None:
        _scalar_violations(k, scalars, bad)
    return bad


def _scalar_violations(k, scalars, bad):
    """launchViolations' scalar rules."""
    for s in k["scalars"]:
        v = scalars.get(s["name"])
        if v is None:
            bad.append(f'No value for scalar "{s["name"]}"')
        elif (isinstance(v, bool) or not isinstance(v, _numbers.Real)
              or not _math.isfinite(_ctypes.c_float(v).value if s["ptx"] == "f32" else v)):
            bad.append(f'Scalar "{s["name"]}" is {_js(v)}: a finite {s["dtype"]} is needed')
        elif s["ptx"] == "s32" and not (float(v).is_integer() and -2**31 <= v < 2**31):
            bad.append(f'Scalar "{s["name"]}" is {_js(v)}: an s32 scalar needs a 32-bit integer')


def _workspace_violations(k, sizes, sizes_ok, w, ranges):
    if k["workspace"] is None:
        return [f'Kernel "{k["name"]}" has no split-K workspace to give']
    bad = []
    address, length = w
    if address == 0:
        bad.append("The split-K workspace has a null address")
    elif address % _WORKSPACE_ALIGN_BYTES != 0:
        bad.append(f"The split-K workspace at 0x{address:x} is not aligned to "
                   f"{_WORKSPACE_ALIGN_BYTES} bytes")
    if not sizes_ok:
        return bad
    need = _workspace_bytes(k, sizes)
    if length is not None and length < need:
        bad.append(f"The split-K workspace holds {length} bytes; the sizes need {need}")
    hi = address + (need if length is None else length)
    for t, lo, thi in ranges:
        if hi > address and thi > lo and address < thi and lo < hi:
            bad.append(f'The split-K workspace overlaps tensor "{t["name"]}"')
    return bad


class _CudaPython(object):
    """Loads and launches through cuda-python's driver bindings."""

    name = "cuda-python"

    def __init__(self):
        try:
            from cuda.bindings import driver
        except ImportError:
            from cuda import cuda as driver
        self.d = driver
        self.ctx = {}
        self.modules = {}
        self.functions = {}
        self._call("cuInit", 0)

    def _call(self, what, *args):
        r = getattr(self.d, what)(*args)
        if int(r[0]) != 0:
            raise RuntimeError(f"gemmc: {what} failed: {r[0]!r}")
        return r[1] if len(r) == 2 else None

    def _context(self, device):
        if device not in self.ctx:
            dev = self._call("cuDeviceGet", device)
            self.ctx[device] = self._call("cuDevicePrimaryCtxRetain", dev)
        return self.ctx[device]

    def function(self, device, entry, smem):
        key = (device, entry)
        if key not in self.functions:
            self._call("cuCtxPushCurrent", self._context(device))
            try:
                if device not in self.modules:
                    self.modules[device] = self._call("cuModuleLoadData", _ptx_image())
                f = self._call("cuModuleGetFunction", self.modules[device], entry.encode())
                if smem > _SMEM_DEFAULT_LIMIT:
                    attr = self.d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                    self._call("cuFuncSetAttribute", f, attr, smem)
            finally:
                self._call("cuCtxPopCurrent")
            self.functions[key] = f
        return self.functions[key]

    def launch(self, device, f, grid, block, smem, stream, params, pdl=False):
        self._call("cuCtxPushCurrent", self._context(device))
        try:
            if pdl:  # a programmatic dependent launch (_python_pdl.ts)
                config = _pdl_config(self.d, grid, block, smem, stream)
                self._call("cuLaunchKernelEx", config, f, params, 0)
            else:
                self._call("cuLaunchKernel", f, grid[0], grid[1], grid[2], block[0], block[1],
                           block[2], smem, self.d.CUstream(stream), params, 0)
        finally:
            self._call("cuCtxPopCurrent")

    def resident_blocks(self, device, f, threads, smem):
        """SMs x the kernel's blocks per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor)."""
        self._call("cuCtxPushCurrent", self._context(device))
        try:
            dev = self._call("cuDeviceGet", device)
            attr = self.d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
            sms = self._call("cuDeviceGetAttribute", attr, dev)
            per = self._call("cuOccupancyMaxActiveBlocksPerMultiprocessor", f, threads, smem)
        finally:
            self._call("cuCtxPopCurrent")
        return max(1, int(sms)) * max(1, int(per))

    def copy_htod(self, device, dst, src, n, stream):
        """n bytes from host address src to device address dst, in stream order."""
        self._call("cuCtxPushCurrent", self._context(device))
        try:
            self._call("cuMemcpyHtoDAsync", dst, src, n, self.d.CUstream(stream))
        finally:
            self._call("cuCtxPopCurrent")


class _CuPy(object):
    """Loads and launches through CuPy's driver wrappers (cupy.cuda.driver)."""

    name = "cupy"

    def __init__(self):
        import cupy
        from cupy.cuda import driver
        self.cupy = cupy
        self.d = driver
        self.modules = {}
        self.functions = {}

    def function(self, device, entry, smem):
        key = (device, entry)
        if key not in self.functions:
            with self.cupy.cuda.Device(device):
                if device not in self.modules:
                    self.modules[device] = self.d.moduleLoadData(_ptx_image())
                f = self.d.moduleGetFunction(self.modules[device], entry)
                if smem > _SMEM_DEFAULT_LIMIT:
                    self.d.funcSetAttribute(f, _ATTR_MAX_DYNAMIC_SMEM, smem)
            self.functions[key] = f
        return self.functions[key]

    def launch(self, device, f, grid, block, smem, stream, params, pdl=False):
        if pdl:
            raise RuntimeError(f"Cannot launch with pdl: {_pdl_missing(self)}")
        with self.cupy.cuda.Device(device):
            self.d.launchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                smem, stream, params, 0)

    def resident_blocks(self, device, f, threads, smem):
        """SMs x the kernel's blocks per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor)."""
        with self.cupy.cuda.Device(device):
            # cudaDevAttrMultiProcessorCount
            sms = self.cupy.cuda.runtime.deviceGetAttribute(16, device)
            occupancy = getattr(self.d, "occupancyMaxActiveBlocksPerMultiprocessor", None)
            # Shortcut: a CuPy without it gets one block per SM (right, if slower).
            per = 1 if occupancy is None else occupancy(f, threads, smem)
        return max(1, int(sms)) * max(1, int(per))

    def copy_htod(self, device, dst, src, n, stream):
        """n bytes from host address src to device address dst, in stream order."""
        with self.cupy.cuda.Device(device):
            self.cupy.cuda.runtime.memcpyAsync(dst, src, n, 1, stream)  # cudaMemcpyHostToDevice


_BACKENDS = {"cuda-python": _CudaPython, "cupy": _CuPy}
_state = {"choice": _os.environ.get("GEMMC_PY_BACKEND", "auto"), "backend": None,
          "workspaces": {}, "tables": {}, "resident": {}}
_lock = _threading.Lock()


def _ptx_image():
    return _PTX.encode() + b"\0"


def set_backend(name="auto"):
    """Chooses how the PTX is loaded and launched: "cuda-python", "cupy" or
    "auto" (cuda-python where it imports, else CuPy; the default, or the
    environment variable GEMMC_PY_BACKEND)."""
    if name != "auto" and name not in _BACKENDS:
        raise ValueError(f'Unknown backend "{name}": expected auto, '
                         + ", ".join(_BACKENDS))
    with _lock:
        _state["choice"] = name
        _state["backend"] = None
        _state["resident"] = {}


def backend_name():
    """The backend in use (loading it if none is yet): "cuda-python" or "cupy"."""
    return _backend().name


def _backend():
    with _lock:
        if _state["backend"] is None:
            choice = _state["choice"]
            if choice == "auto":
                try:
                    _state["backend"] = _CudaPython()
                except ImportError:
                    try:
                        _state["backend"] = _CuPy()
                    except ImportError:
                        raise RuntimeError("gemmc: neither cuda-python nor CuPy imports; "
                                           "install one (pip install cuda-python, or cupy)")
            else:
                _state["backend"] = _BACKENDS[choice]()
        return _state["backend"]


def _stream_handle(stream, lib, device):
    if stream is None:
        if lib == "torch":
            return _torch().cuda.current_stream(device).cuda_stream
        cupy = _cupy()
        with cupy.cuda.Device(device):
            return cupy.cuda.get_current_stream().ptr
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


def _allocate(t, lib, device, sizes, zeros=False):
    """A dense tensor of t's declared shape, dtype and layout (zeroed if asked)."""
    shape = [_dim(d, sizes) for d in t["shape"]]
    if t["bits"] < 8 and shape:
        shape[_contiguous_axis(t, len(shape))] //= 8 // t["bits"]
    col = len(shape) >= 2 and t["layout"] == "col"
    if col:
        shape[-1], shape[-2] = shape[-2], shape[-1]
    dtype = _DTYPES[t["dtype"]][lib][0]
    if lib == "torch":
        torch = _torch()
        make = torch.zeros if zeros else torch.empty
        x = make(tuple(shape), dtype=getattr(torch, dtype), device=f"cuda:{device}")
        return x.transpose(-1, -2) if col else x
    cupy = _cupy()
    with cupy.cuda.Device(device):
        make = cupy.zeros if zeros else cupy.empty
        x = make(tuple(shape), dtype=dtype)
    return x.swapaxes(-1, -2) if col else x


def _cached_workspace(k, lib, device, stream, need):
    """The split-K workspace of this device and stream, zeroed once, grown when too short.

    Shortcut: a fresh one is zeroed on the library's current stream and that
    stream is synchronized before the launch (which may be on another stream).
    """
    key = (lib, device, stream)
    w = _state["workspaces"].get(key)
    if w is None or w[1] < need:
        t = {"shape": [need], "bits": 8, "dtype": "u8", "layout": "row"}
        x = _allocate(t, lib, device, {}, zeros=True)
        if lib == "torch":
            _torch().cuda.current_stream(device).synchronize()
        else:
            with _cupy().cuda.Device(device):
                _cupy().cuda.get_current_stream().synchronize()
        w = (x, need)
        _state["workspaces"][key] = w
    return w[0]


def _tensor_views(k, args, bad):
    """Views of the given tensors, checked for library, device, dtype and layout."""
    views = {}
    first = None
    for t in k["tensors"]:
        x = args.get(t["name"])
        if x is None:
            continue
        v = _view(t["name"], x, bad)
        if v is None or not _check_view(t, v, bad):
            continue
        if first is None:
            first = (t["name"], v)
        elif v.lib != first[1].lib:
            bad.append(f'Tensor "{t["name"]}" is a {v.lib} tensor but tensor "{first[0]}" is a '
                       f'{first[1].lib} one')
            continue
        elif v.device != first[1].device:
            bad.append(f'Tensor "{t["name"]}" is on cuda:{v.device} but tensor "{first[0]}" is '
                       f'on cuda:{first[1].device}')
            continue
        views[t["name"]] = v
    return views


def _scalar_values(k, given, bad):
    """Scalar values by DSL name: the keyword arguments (by their Python names), else defaults."""
    names = k["scalarArgs"]
    for n in given:
        if n not in names:
            bad.append(f'Kernel "{k["name"]}" has no scalar "{n}"'
                       + (f': its scalars are {", ".join(names)}' if names else ""))
    values = {s["name"]: s["default"] for s in k["scalars"]}
    values.update((names[n], v) for n, v in given.items() if n in names)
    return values


def _params(k, sizes, views, scalars, workspace, maps=None):
    """The kernel's parameters in ABI order, as ctypes values and their void* array (a tensor
    map: its buffer, and the address of its aligned 128 bytes, _encode_tmaps)."""
    values = []
    pointers = []
    for kind, name, ptx in k["params"]:
        if kind == "tensormap":
            buf, aligned = maps[name]
            values.append(buf)
            pointers.append(aligned)
            continue
        if kind == "tensor":
            v = views[name].address
        elif kind == "dim" or kind == "stride":
            v = sizes[name]
        elif kind == "scalar":
            v = scalars[name] if ptx != "s32" else int(scalars[name])
        else:
            v = workspace
        c = _PARAM_CTYPES[ptx](v)
        values.append(c)
        pointers.append(_ctypes.addressof(c))
    array = (_ctypes.c_void_p * max(1, len(values)))(*pointers)
    return values, array


def _launch(k, inputs, out, stream, workspace, given, pdl=False):
    """Checks everything (raising GemmcLaunchError, nothing launched), then launches (with
    pdl: as a programmatic dependent, _python_pdl.ts)."""
    if pdl:
        _require_pdl(k, _backend())
    bad = []
    ins = [t for t in k["tensors"] if not t["output"]]
    output = [t for t in k["tensors"] if t["output"]][0]
    args = dict(zip((t["name"] for t in ins), inputs))
    for t in ins:
        if args.get(t["name"]) is None:
            bad.append(f'No tensor given for "{t["name"]}"')
    if out is not None:
        args[output["name"]] = out
    views = _tensor_views(k, args, bad)
    sizes = _sizes(k, views, bad)
    _stride_values(k, views, sizes, bad)
    scalars = _scalar_values(k, given, bad)
    if bad:
        raise GemmcLaunchError(k["name"], bad)
    _meta_shape(k, views, sizes, bad)
    lib, device = next((v.lib, v.device) for v in views.values())
    try:
        handle = _stream_handle(stream, lib, device)
    except (TypeError, ValueError):
        bad.append(f"The stream is {stream!r}: a torch or CuPy stream or a CUstream handle "
                   "is needed")
    ws = None
    if workspace is not None:
        w = _view("workspace", workspace, bad)
        if w is not None and w.device != device:
            bad.append(f'The split-K workspace is on cuda:{w.device} but the tensors are on '
                       f'cuda:{device}')
        elif w is not None and any(s != d for s, d, e in zip(
                w.strides, _dense_strides({"layout": "row"}, w.shape), w.shape) if e != 1):
            bad.append(f"The split-K workspace has strides {list(w.strides)} for shape "
                       f"{list(w.shape)}: it must be contiguous")
        ws = None if w is None else (w.address, w.bytes)
    # A strided view's buffer length is unknown (its own extent holds it by construction).
    strided = set(t["name"] for t in k["tensors"] if t.get("strides") is not None)
    bindings = {n: (v.address, None if n in strided else v.bytes) for n, v in views.items()}
    pending = () if out is not None else (output["name"],)
    bad += _violations(k, sizes, bindings, scalars, ws, pending)
    if bad:
        raise GemmcLaunchError(k["name"], bad)
    sizes = _with_stride_defaults(k, sizes)
    if out is None and output.get("strides") is not None:
        out = _allocate_strided(output, lib, device, sizes)
        views[output["name"]] = _view(output["name"], out, bad)
    elif out is None:
        out = _allocate(output, lib, device, sizes)
        views[output["name"]] = _view(output["name"], out, bad)
    if k["workspace"] is not None:
        need = _workspace_bytes(k, sizes)
        ws = ws[0] if ws is not None else _view(
            "workspace", _cached_workspace(k, lib, device, handle, need), bad).address
    maps = None
    if k.get("tmaps"):
        # sm90's TMA: each map's rule at the tensor's address and the sizes, then its encoding.
        rules = _tmap_rules(k, views, sizes, bad)
        if bad:
            raise GemmcLaunchError(k["name"], bad)
        maps = _encode_tmaps(k, views, rules)
    backend = _backend()
    f = backend.function(device, k["entry"], k["dynamicSmemBytes"])
    values, array = _params(k, sizes, views, scalars, ws, maps)
    backend.launch(device, f, _grid(k, sizes), k["block"], k["dynamicSmemBytes"], handle,
                   _ctypes.addressof(array), pdl)
    del values
    return out
` + PYTHON_STRIDES + PYTHON_GROUPED + PYTHON_TMAP + PYTHON_PDL;

/** The names the runtime defines or uses, which generated names must avoid. */
export function runtimeNames(): Set<string> {
  return new Set(PYTHON_RUNTIME.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []);
}
