# Standalone check and timing of gemmc sm90 TMA kernels (before the Deno launcher had maps):
# reads a manifest (compile --emit json) and PTX, builds the tensor maps with
# cuTensorMapEncodeTiled through libcuda (ctypes), launches, checks against torch, times.
import ctypes, json, sys, time
import torch

cuda = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cuda.cuGetErrorString(r, ctypes.byref(s))
        raise RuntimeError(f"{what}: {r} {s.value}")

DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "s8": torch.int8,
      "u8": torch.uint8, "s32": torch.int32, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}

def load(ptx_path, man_path):
    man = json.load(open(man_path))["kernels"][0]
    ptx = open(ptx_path, "rb").read() + b"\0"
    mod = ctypes.c_void_p()
    ck(cuda.cuModuleLoadData(ctypes.byref(mod), ptx), "load")
    fn = ctypes.c_void_p()
    ck(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, man["entry"].encode()), "func")
    ck(cuda.cuFuncSetAttribute(fn, 8, man["dynamicSmemBytes"]), "smem attr")
    return man, fn

def encode(spec, addr, vals):
    prod = lambda fs: int(__import__("math").prod(vals[f] if isinstance(f, str) else f for f in fs))
    dims = [prod(d) for d in spec["dims"]]
    strides = [prod(s) * spec["elementBytes"] for s in spec["strides"]]
    rank = len(dims)
    code = {"uint8": 0, "float16": 6, "float32": 7, "bfloat16": 9}[spec["dataType"]]
    tm = (ctypes.c_uint64 * 16)()
    gd = (ctypes.c_uint64 * rank)(*dims)
    gs = (ctypes.c_uint64 * max(1, rank - 1))(*strides)
    bd = (ctypes.c_uint32 * rank)(*spec["box"])
    es = (ctypes.c_uint32 * rank)(*([1] * rank))
    sw = {0: 0, 128: 3}[spec["swizzle"]]
    ck(cuda.cuTensorMapEncodeTiled(ctypes.byref(tm), code, rank, ctypes.c_void_p(addr), gd, gs, bd, es,
                                   0, sw, 3, 0), "encode " + spec["tensor"])
    return tm

def launch_args(man, tensors, vals):
    keep, ptrs = [], []
    for p in man["params"]:
        if p["kind"] == "tensor":
            v = ctypes.c_uint64(tensors[p["name"]].data_ptr())
        elif p["kind"] in ("dim",):
            v = ctypes.c_uint32(vals[p["name"]])
        elif p["kind"] == "scalar":
            v = ctypes.c_float(vals.get(p["name"], p.get("default") or 0.0)) if p["ptx"] == "f32" else ctypes.c_int32(int(vals.get(p["name"], 0)))
        elif p["kind"] == "tensormap":
            v = encode(p["tmap"], tensors[p["tmap"]["tensor"]].data_ptr(), vals)
        else:
            raise RuntimeError("param kind " + p["kind"])
        keep.append(v)
        ptrs.append(ctypes.cast(ctypes.byref(v), ctypes.c_void_p))
    arr = (ctypes.c_void_p * len(ptrs))(*[p.value for p in ptrs])
    return keep, arr

def run(fn, man, grid, arr):
    b = man["block"]
    ck(cuda.cuLaunchKernel(fn, grid[0], grid[1], grid[2], b[0], b[1], b[2], man["dynamicSmemBytes"],
                           None, arr, None), "launch")

def main():
    ptx, mj, M, N, K, dt, out = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6], sys.argv[7]
    reps = int(sys.argv[8]) if len(sys.argv) > 8 else 20
    torch.cuda.init(); torch.zeros(1, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    man, fn = load(ptx, mj)
    g = torch.Generator(device="cuda").manual_seed(1)
    if dt in ("s8", "u8"):
        lo, hi = (-8, 8) if dt == "s8" else (0, 16)
        A = torch.randint(lo, hi, (M, K), device="cuda", dtype=DT[dt], generator=g)
        Bt = torch.randint(lo, hi, (N, K), device="cuda", dtype=DT[dt], generator=g)
    else:
        A = (torch.rand(M, K, device="cuda", generator=g) * 2 - 1).to(DT[dt])
        Bt = (torch.rand(N, K, device="cuda", generator=g) * 2 - 1).to(DT[dt])
    D = torch.full((M, N), float("nan") if out != "s32" else -7, device="cuda").to(DT[out])
    vals = {"M": M, "N": N, "K": K, "sa": 0.5, "sb": 0.25}
    keep, arr = launch_args(man, {"A": A, "B": Bt, "D": D}, vals)
    grid = man["grid"]
    run(fn, man, grid, arr); torch.cuda.synchronize()
    if dt in ("s8", "u8"):
        ref = (A.double().cpu() @ Bt.double().cpu().T)
        err = (D.double().cpu() - ref).abs().max().item()
        ok = err == 0
    else:
        names = {p["name"] for p in man["params"]}
        scale = (vals["sa"] if "sa" in names else 1.0) * (vals["sb"] if "sb" in names else 1.0)
        ref = (A.float() @ Bt.float().T) * scale
        err = ((D.float() - ref).abs().max() / ref.abs().max()).item()
        ok = err < 1e-2 and not torch.isnan(D.float()).any().item()
    print(f"check {M}x{N}x{K} {dt}: max err {err:.3g} {'OK' if ok else 'FAIL'}")
    def timeit(f, n):
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        f(); torch.cuda.synchronize(); s.record()
        for _ in range(n): f()
        e.record(); torch.cuda.synchronize()
        return s.elapsed_time(e) / n
    flop = 2 * M * N * K
    if dt in ("e4m3", "e5m2"):
        one = torch.tensor(1.0, device="cuda")
        peer = lambda: torch._scaled_mm(A, Bt.T, scale_a=one, scale_b=one, out_dtype=DT[out])
    elif dt in ("s8", "u8"):
        Ai, Bi = A.to(torch.int8), Bt.to(torch.int8)
        peer = lambda: torch._int_mm(Ai, Bi.T)
    else:
        peer = lambda: A @ Bt.T
    ours = lambda: run(fn, man, grid, arr)
    for state, n in (("burst", reps), ("sustained", reps * 10)):
        t0 = timeit(ours, n); t1 = timeit(peer, n); t2 = timeit(ours, n)
        t = min(t0, t2)
        print(f"{state}: gemmc {flop / t / 1e9:.0f} T/s  peer {flop / t1 / 1e9:.0f} T/s  ratio {t1 / t:.3f}")

main()
