"""The fakes behind tests/python/check_fakes.py, check_pdl.py and check_tmap.py: a fake
``torch`` (tensors with shapes, strides, devices and made-up addresses), a fake
``cuda.bindings.driver`` (which decodes every launch's void** parameter array with ctypes) and a
fake CuPy, installed into sys.modules before a generated module is imported.
"""

import ctypes
import enum
import importlib.util
import sys
import types


# ---------------------------------------------------------------- fake torch


class FakeDtype(object):
    def __init__(self, name, size):
        self.name = name
        self.size = size

    def __str__(self):
        return "torch." + self.name


class FakeDevice(object):
    def __init__(self, type_, index):
        self.type = type_
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


_next_address = [0x7F0000000000]


def fresh_address(nbytes):
    a = _next_address[0]
    _next_address[0] += (nbytes + 4095) // 4096 * 4096 + 4096
    return a


def span(shape, strides):
    """Elements (or bytes, for byte strides) from a view's first element to its last, plus one."""
    return 0 if 0 in shape else 1 + sum((e - 1) * abs(s) for e, s in zip(shape, strides))


class FakeTensor(object):
    def __init__(self, shape, dtype, device="cuda:0", strides=None, address=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        kind, _, index = device.partition(":")
        self.device = FakeDevice(kind, int(index) if index else None)
        if strides is None:
            strides, step = [], 1
            for e in reversed(self.shape):
                strides.insert(0, step)
                step *= e
        self._strides = tuple(strides)
        n = span(self.shape, self._strides)
        self._address = fresh_address(n * dtype.size) if address is None else address

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._address

    def element_size(self):
        return self.dtype.size

    def tolist(self):
        return list(self.values)

    def transpose(self, a, b):
        shape, strides = list(self.shape), list(self._strides)
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
        return FakeTensor(shape, self.dtype, str(self.device), strides, self._address)

    def t(self):
        return self.transpose(0, 1)

    # What compress_sparse's torch path calls (a tensor made from numpy keeps its array).
    def detach(self):
        return self

    def cpu(self):
        return self

    def contiguous(self):
        return self

    def numpy(self):
        return self.array

    def to(self, device):
        t = FakeTensor(self.shape, self.dtype, str(device))
        t.array = self.array
        return t


class FakeHostTensor(FakeTensor):
    """A fake torch tensor as compress_sparse recognizes one (its class's module is torch's)."""


FakeHostTensor.__module__ = "torch"


class FakeStream(object):
    def __init__(self, handle):
        self.cuda_stream = handle
        self.synchronized = 0

    def synchronize(self):
        self.synchronized += 1


def make_fake_torch():
    torch = types.ModuleType("torch")
    torch.Tensor = FakeTensor
    for name, size in [("float64", 8), ("float32", 4), ("float16", 2), ("bfloat16", 2),
                       ("int32", 4), ("int8", 1), ("uint8", 1)]:
        setattr(torch, name, FakeDtype(name, size))
    torch.made = []

    def make(zeroed):
        def f(shape, dtype, device):
            t = FakeTensor(shape, dtype, device)
            torch.made.append((zeroed, t))
            return t
        return f

    torch.empty = make(False)
    torch.zeros = make(True)

    def empty_strided(shape, strides, dtype, device):
        t = FakeTensor(shape, dtype, device, strides)
        torch.made.append((False, t))
        return t

    torch.empty_strided = empty_strided

    def from_numpy(a):
        t = FakeHostTensor(a.shape, getattr(torch, a.dtype.name), "cpu")
        t.array = a
        return t

    torch.from_numpy = from_numpy
    torch.cuda = types.SimpleNamespace()
    torch.current = FakeStream(0xC0FFEE)
    torch.cuda.current_stream = lambda device=None: torch.current
    return torch


# ---------------------------------------------------------------- fake driver


class FakeLaunchAttributeID(enum.IntEnum):
    """cuda-python's CUlaunchAttributeID: some members, numbered as cuda.h numbers them."""

    CU_LAUNCH_ATTRIBUTE_IGNORE = 0
    CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
    CU_LAUNCH_ATTRIBUTE_PRIORITY = 8


class FakeLaunchAttributeValue(object):
    """CUlaunchAttributeValue (a union): some of its int members, all 0 until set; a name it
    lacks raises (__slots__)."""

    __slots__ = ("programmaticStreamSerializationAllowed", "cooperative", "priority",
                 "memSyncDomain", "sharedMemCarveout")

    def __init__(self):
        for n in self.__slots__:
            setattr(self, n, 0)


class FakeLaunchAttribute(object):
    """CUlaunchAttribute: id (CU_LAUNCH_ATTRIBUTE_IGNORE until set) and value."""

    __slots__ = ("id", "value")

    def __init__(self):
        self.id = FakeLaunchAttributeID.CU_LAUNCH_ATTRIBUTE_IGNORE
        self.value = FakeLaunchAttributeValue()


class FakeLaunchConfig(object):
    """CUlaunchConfig: its fields alone (a misspelt one raises), 0 (attrs []) until set."""

    __slots__ = ("gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ",
                 "sharedMemBytes", "hStream", "attrs", "numAttrs")

    def __init__(self):
        for n in self.__slots__:
            setattr(self, n, 0)
        self.attrs = []


def launch_ex_problem(config, extra):
    """Why cuLaunchKernelEx refuses this configuration (CUDA_ERROR_INVALID_VALUE), or None.

    Accepted: a CUlaunchConfig whose grid and block are positive ints, whose stream is a
    CUstream, whose numAttrs is the length of its attrs, each attribute being
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION with a value of 0 or 1 and every
    other member of its value 0; extra 0 (as tests/gpu/testdata/fake_libcuda.c's).
    """
    if not isinstance(config, FakeLaunchConfig):
        return f"config is a {type(config).__name__}, not a CUlaunchConfig"
    if extra != 0:
        return f"extra is {extra!r}"
    dims = [getattr(config, n) for n in FakeLaunchConfig.__slots__[:6]]
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims):
        return f"grid and block {dims}"
    if not isinstance(config.sharedMemBytes, int) or config.sharedMemBytes < 0:
        return f"sharedMemBytes {config.sharedMemBytes!r}"
    if not (isinstance(config.hStream, tuple) and config.hStream[0] == "stream"):
        return f"hStream {config.hStream!r} is not a CUstream"
    if not isinstance(config.attrs, list) or config.numAttrs != len(config.attrs):
        return f"numAttrs {config.numAttrs!r} for attrs {config.attrs!r}"
    for a in config.attrs:
        if not isinstance(a, FakeLaunchAttribute):
            return f"an attribute is a {type(a).__name__}"
        if a.id is not FakeLaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
            return f"attribute id {a.id!r}"
        v = a.value
        if v.programmaticStreamSerializationAllowed not in (0, 1):
            return f"programmaticStreamSerializationAllowed {v.programmaticStreamSerializationAllowed!r}"
        others = [n for n in FakeLaunchAttributeValue.__slots__[1:] if getattr(v, n) != 0]
        if others:
            return f"value members {others} set beside programmaticStreamSerializationAllowed"
    return None


class FakeDriver(types.ModuleType):
    """cuda.bindings.driver: returns (0, value) tuples and records every call. A launch
    records "via" (cuLaunchKernel or cuLaunchKernelEx; for the latter "attrs", each attribute's
    id and value); a configuration cuLaunchKernelEx refuses goes into ex_refused. With
    launch_ex False it has no cuLaunchKernelEx nor launch types (bindings before CUDA 11.8)."""

    def __init__(self):
        types.ModuleType.__init__(self, "cuda.bindings.driver")
        self.calls = []
        self.launches = []
        self.ex_refused = []
        self.launch_ex = True
        self.kernels = {}
        self.CUfunction_attribute = types.SimpleNamespace(
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8)
        self.CUdevice_attribute = types.SimpleNamespace(
            CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT=16)
        self.occupancy = 3
        self.copies = []
        self.CUstream = lambda h: ("stream", h)

    def _launch_type(self, t):
        if not self.launch_ex:
            raise AttributeError(t.__name__)
        return t

    CUlaunchConfig = property(lambda self: self._launch_type(FakeLaunchConfig))
    CUlaunchAttribute = property(lambda self: self._launch_type(FakeLaunchAttribute))
    CUlaunchAttributeID = property(lambda self: self._launch_type(FakeLaunchAttributeID))

    def __getattr__(self, name):
        if not name.startswith("cu") or (name == "cuLaunchKernelEx" and not self.launch_ex):
            raise AttributeError(name)

        def call(*args):
            self.calls.append((name,) + args)
            if name == "cuModuleGetFunction":
                return (0, ("function", args[1].decode()))
            if name == "cuLaunchKernel":
                self.launches.append(dict(self.decode(args), via=name))
            if name == "cuLaunchKernelEx":
                config, f, params, extra = args
                why = launch_ex_problem(config, extra)
                if why is not None:
                    self.ex_refused.append(why)
                    return (1,)  # CUDA_ERROR_INVALID_VALUE
                c = config
                self.launches.append(dict(self.decode(
                    (f, c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY,
                     c.blockDimZ, c.sharedMemBytes, c.hStream, params, extra)), via=name,
                    attrs=[(int(a.id), a.value.programmaticStreamSerializationAllowed)
                           for a in c.attrs]))
                return (0,)
            if name == "cuDeviceGetAttribute":
                return (0, 132 if args[0] == 16 else 0)
            if name == "cuOccupancyMaxActiveBlocksPerMultiprocessor":
                return (0, self.occupancy)
            if name == "cuMemcpyHtoDAsync":
                dst, src, n, stream = args
                self.copies.append((dst, ctypes.string_at(src, n), stream))
                return (0,)
            if name in ("cuInit", "cuCtxPushCurrent", "cuFuncSetAttribute", "cuLaunchKernel"):
                return (0,)
            return (0, (name, args))
        return call

    def decode(self, args):
        f, gx, gy, gz, bx, by, bz, smem, stream, params, extra = args
        entry = f[1]
        types_ = {"u64": ctypes.c_uint64, "u32": ctypes.c_uint32, "f32": ctypes.c_float,
                  "f64": ctypes.c_double, "s32": ctypes.c_int32}
        values = {}
        for i, (_, name, ptx) in enumerate(self.kernels[entry]["params"]):  # kind, name, ptx
            p = ctypes.c_void_p.from_address(params + i * ctypes.sizeof(ctypes.c_void_p)).value
            if ptx == "tmap":  # a tensor map by value: its 128 bytes (check_tmap.py), and where
                values[name] = {"at": p, "hex": ctypes.string_at(p, 128).hex()}
                continue
            values[name] = types_[ptx].from_address(p).value
        return {"entry": entry, "grid": (gx, gy, gz), "block": (bx, by, bz), "smem": smem,
                "stream": stream, "params": values}


# ---------------------------------------------------------------- fake CuPy


class FakeNpDtype(object):
    def __init__(self, name):
        self.name = name
        self.itemsize = {"float64": 8, "float32": 4, "float16": 2, "uint16": 2, "int32": 4,
                         "uint32": 4, "int8": 1, "uint8": 1}[name]


class FakeArray(object):
    """A cupy.ndarray: strides in bytes, data.ptr, device.id."""

    def __init__(self, shape, dtype, device=0, strides=None, address=None):
        self.shape = tuple(shape)
        self.dtype = FakeNpDtype(dtype) if isinstance(dtype, str) else dtype
        self.itemsize = self.dtype.itemsize
        if strides is None:
            strides, step = [], self.itemsize
            for e in reversed(self.shape):
                strides.insert(0, step)
                step *= e
        self.strides = tuple(strides)
        n = span(self.shape, self.strides) // self.itemsize + 1
        ptr = fresh_address(n * self.itemsize) if address is None else address
        self.data = types.SimpleNamespace(ptr=ptr)
        self.device = types.SimpleNamespace(id=device)

    def swapaxes(self, a, b):
        shape, strides = list(self.shape), list(self.strides)
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
        return FakeArray(shape, self.dtype, self.device.id, strides, self.data.ptr)


class FakeCupyDriver(object):
    """cupy.cuda.driver: records launches, decoded like FakeDriver's."""

    def __init__(self, decode):
        self.decode = decode
        self.launches = []
        self.attributes = []

    def moduleLoadData(self, image):
        return ("module", len(image))

    def moduleGetFunction(self, module, name):
        return ("function", name)

    def funcSetAttribute(self, f, attribute, value):
        self.attributes.append((f, attribute, value))

    def launchKernel(self, *args):
        self.launches.append(self.decode(args))

    def occupancyMaxActiveBlocksPerMultiprocessor(self, f, threads, smem):
        self.occupancy_calls = getattr(self, "occupancy_calls", 0) + 1
        return 2


def make_fake_cupy(decode):
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    cupy.ndarray = FakeArray
    cupy.cuda = cuda
    cuda.driver = FakeCupyDriver(decode)
    cupy.current = FakeStream(0xC0C0)
    cupy.current.ptr = 0xC0C0
    cuda.get_current_stream = lambda: cupy.current

    class Device(object):
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    cuda.Device = Device
    copies = []

    def memcpy_async(dst, src, n, kind, stream):
        copies.append((dst, ctypes.string_at(src, n), stream, kind))

    cuda.runtime = types.SimpleNamespace(
        deviceGetAttribute=lambda attr, dev: 132 if attr == 16 else 0,
        memcpyAsync=memcpy_async, copies=copies)
    cupy.made = []

    def make(zeroed):
        def f(shape, dtype):
            a = FakeArray(shape, dtype)
            cupy.made.append((zeroed, a))
            return a
        return f

    cupy.empty = make(False)
    cupy.zeros = make(True)
    cupy.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        as_strided=lambda x, shape, strides: FakeArray(shape, x.dtype, x.device.id, strides,
                                                       x.data.ptr)))
    return cupy


def install_fakes():
    torch = make_fake_torch()
    driver = FakeDriver()
    cuda = types.ModuleType("cuda")
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = driver
    cuda.bindings = bindings
    sys.modules.update({"torch": torch, "cuda": cuda, "cuda.bindings": bindings,
                        "cuda.bindings.driver": driver})
    cupy = make_fake_cupy(driver.decode)
    sys.modules.update({"cupy": cupy, "cupy.cuda": cupy.cuda})
    return torch, driver


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
