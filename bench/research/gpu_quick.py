"""Cross-check harness (Python, CuPy + PyTorch) for gemmc's PTX on a GPU.

Independent of gemmc's own Deno runner: loads the PTX and launch manifests
that `gemm compile --emit ptx/json` wrote into a folder, checks each pure-GEMM
benchmark kernel against a float64 product on the GPU, times it (median of
CUDA-event-timed launches after warm-up, four input sets rotated), times
cuBLAS (through PyTorch) on the same problem, and the mma.sync ceiling
kernels of bench/mma_peak.ts.

usage: python3 bench/research/gpu_quick.py GEN_DIR [sizes...]
"""
import json, sys, os, statistics, time
import numpy as np
import cupy as cp
import torch

GEN = sys.argv[1]
SIZES = [tuple(int(x) for x in s.split("x")) for s in (sys.argv[2:] or ["4096x4096x4096"])]
torch.backends.cuda.matmul.allow_tf32 = True
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
      "s8": torch.int8, "s32": torch.int32}

def manifest(name):
    """The launch manifest `gemm compile --emit json` wrote for kernel `name`."""
    return json.load(open(f"{GEN}/{name}.json"))["kernels"][0]

def load(name):
    man = manifest(name)
    mod = cp.RawModule(path=f"{GEN}/{name}.ptx")
    fn = mod.get_function(man["entry"])
    if man["dynamicSmemBytes"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = man["dynamicSmemBytes"]
    return man, fn

def tiles_of(gp, sz):
    """Output tiles along M and N, and the batch, of a grid plan at sizes sz."""
    dim = lambda d: d if isinstance(d, int) else sz[d]
    batch = 1 if gp["batch"] is None else dim(gp["batch"])
    return -(-dim(gp["m"]) // gp["tileM"]), -(-dim(gp["n"]) // gp["tileN"]), batch

def grid_for(gp, sz):
    """ir/kernel.ts gridFor: [tilesM * swizzle, ceil(tilesN / swizzle), batch * splitK]."""
    tm, tn, batch = tiles_of(gp, sz)
    s = gp["swizzle"]
    return (tm * s, -(-tn // s), batch * gp["splitK"])

WORKSPACES = []  # split-K workspaces, kept alive for the process

def workspace(man, sz):
    """A zeroed split-K workspace (passes/lower.ts splitKReduce): one record per output tile."""
    gp = man["gridPlan"]
    tm, tn, batch = tiles_of(gp, sz)
    w = torch.zeros(tm * tn * batch * gp["workspacePerTile"], dtype=torch.uint8, device="cuda")
    WORKSPACES.append(w)
    return w

def kernel_args(man, tensors, sz):
    """A kernel's launch arguments from its manifest: tensors by name, dims from sz, scalars 1;
    a zeroed workspace for split-K kernels."""
    out = []
    for p in man["params"]:
        if p["kind"] == "tensor" and p["name"] not in tensors and man["gridPlan"].get("workspacePerTile"):
            out.append(np.uint64(workspace(man, sz).data_ptr()))
        elif p["kind"] == "tensor":
            out.append(np.uint64(tensors[p["name"]].data_ptr()))
        elif p["kind"] == "dim":
            out.append(np.uint32(sz[p["name"]]))
        else:
            out.append(np.float32(1.0) if p["ptx"] == "f32" else np.float64(1.0))
    return tuple(out)

def rand(shape, dt):
    if dt == torch.int8:
        return torch.randint(-128, 128, shape, dtype=dt, device="cuda")
    if dt == torch.int32:
        return torch.randint(-(1 << 20), 1 << 20, shape, dtype=dt, device="cuda")
    return (torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1).to(dt)

def input_dtype(man):
    """The torch dtype of a kernel's A and B (f32 operands for tf32 kernels)."""
    a = next(p for p in man["params"] if p["name"] == "A")["dtype"]
    return DT["f32" if a == "f32" else a]

def inputs_for(man, M, N, K, sets=2):
    """`sets` random input sets for a kernel: A as an M x K view and B as an N x K view (Bᵀ), each
    over storage in the kernel's layout of that operand (A row-major and B column-major, the TN
    case of the benchmark, are those views' own rows)."""
    dt = input_dtype(man)
    lay = {p["name"]: p.get("layout", "row") for p in man["params"] if p["kind"] == "tensor"}
    a = lambda: rand((M, K), dt) if lay.get("A") != "col" else rand((K, M), dt).T
    b = lambda: rand((N, K), dt) if lay.get("B", "col") == "col" else rand((K, N), dt).T
    return [a() for _ in range(sets)], [b() for _ in range(sets)]

def launcher(name, M, N, K, inputs=None, sets=2):
    """Our kernel `name` on an M x N x K problem, for the probe scripts: (launch, grid, (As, Bs, D)),
    where launch(i) runs it on input set i % sets. The inputs are drawn unless given (to share them
    between kernels); D is poisoned (NaN, or an odd integer)."""
    man, fn = load(name)
    As, Bs = inputs if inputs is not None else inputs_for(man, M, N, K, sets)
    dp = next(p for p in man["params"] if p["name"] == "D")
    ddt = DT[dp["dtype"]]
    # A column-major D is stored as its transpose's rows; D is the M x N view.
    shape = (N, M) if dp.get("layout") == "col" else (M, N)
    D = torch.full(shape, float("nan") if ddt.is_floating_point else -0x5A5A5A5A, dtype=ddt, device="cuda")
    if dp.get("layout") == "col":
        D = D.T
    sz = {"M": M, "N": N, "K": K}
    grid, block, smem = grid_for(man["gridPlan"], sz), tuple(man["block"]), man["dynamicSmemBytes"]
    # Other tensors the epilogue reads (a matrix C, bias vectors; bench/research/probes/):
    # random, one per input set, their dims named M, N, K; a col-major matrix
    # is stored as its transpose's rows.
    extra = [p for p in man["params"] if p["kind"] == "tensor" and p["name"] not in ("A", "B", "D")
             and p.get("role") not in (None, "workspace")]
    def extras():
        out = {}
        for p in extra:
            dims = [sz[d] if isinstance(d, str) else d for d in p["shape"]]
            col = p.get("layout") == "col" and len(dims) == 2
            t = rand(tuple(dims[::-1] if col else dims), DT[p["dtype"]])
            out[p["name"]] = t.T if col else t  # the logical view; the same storage
        return out
    ex = [extras() for _ in As]
    args = [kernel_args(man, {"A": a, "B": b, "D": D, **e}, sz) for a, b, e in zip(As, Bs, ex)]
    launch = lambda i: fn(grid, block, args[i % len(args)], shared_mem=smem)
    launch.check = lambda: check_sum(launch, D, As[0], Bs[0], ex[0])
    return launch, grid, (As, Bs, D)

def check_sum(launch, D, A, B, ex):
    """Runs `launch` on input set 0 and compares D with A·Bᵀ plus a matrix C of the same shape
    as D if the kernel has one (the probes' epilogues: D = A·B + C), in float64 on the GPU;
    returns "OK rel ..." or "FAIL ...". D is poisoned first. Kernels that read vectors (a bias)
    are not checked here."""
    if any(tuple(t.shape) != tuple(D.shape) for t in ex.values()):
        return "not checked (an epilogue with vectors: the GPU tests check those)"
    D.fill_(float("nan") if D.dtype.is_floating_point else -0x5A5A5A5A)
    launch(0)
    torch.cuda.synchronize()
    ref = A.double() @ B.double().T
    for t in ex.values():
        if tuple(t.shape) == tuple(D.shape):
            ref = ref + t.double()
    got = D.double()
    if not D.dtype.is_floating_point:
        bad = int((got != ref).sum().item())
        return f"{'OK' if bad == 0 else 'FAIL'} exact, {bad} differ"
    rel = ((got - ref).norm() / ref.norm()).item()
    tol = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 3e-3, torch.float64: 1e-12}[D.dtype]
    ok = rel < tol and not torch.isnan(got).any().item()
    return f"{'OK' if ok else 'FAIL'} rel {rel:.2e}"

def event_time(f, iters=20, warm=5):
    for _ in range(warm): f()
    ts = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)

def alternate(fx, fy, n=20, warm=4):
    """One round of an A/B comparison under one power state (bench/NOTES.md 16): a 1 s rest,
    `warm` launches of each, then n launches of each alternating (X Y, Y X, ...), each between its
    own events; fx(i) and fy(i) launch on input set i. Returns the median ms of X and of Y."""
    time.sleep(1.0)
    for i in range(warm):
        fx(i); fy(i)
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)] for _ in range(2)]
    for i in range(n):
        for j, f in ((0, fx), (1, fy)) if i % 2 == 0 else ((1, fy), (0, fx)):
            e = ev[j][i]
            e[0].record(); f(i); e[1].record()
    torch.cuda.synchronize()
    return tuple(statistics.median(a.elapsed_time(b) for a, b in ev[j]) for j in range(2))

def timed_ms(f, n=20):
    """n launches f(0..n-1), each between its own events, queued back to back: the median ms."""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for j, (a, b) in enumerate(ev):
        a.record(); f(j); b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)

def sustained_ms(f, load_s=1.5, n=20):
    """The sustained state (bench/NOTES.md 26): load_s seconds of launches, then timed_ms(f, n)."""
    t = time.time()
    i = 0
    while time.time() - t < load_s:
        for _ in range(10):
            f(i); i += 1
        torch.cuda.synchronize()
    return timed_ms(f, n)

CUBLAS_CACHE = {}

def run_kernel(name, M, N, K, sets=4, check=True, profile=False):
    man, fn = load(name)
    ps = {p["name"]: p for p in man["params"]}
    ta, tb, td = (ps[n]["dtype"] for n in ("A", "B", "D"))
    As = [rand((M, K), DT["f32" if ta == "f32" else ta]) for _ in range(sets)]
    Bs = [rand((N, K), DT["f32" if tb == "f32" else tb]) for _ in range(sets)]  # B col-major = (N, K) rows
    D = torch.full((M, N), float("nan") if td != "s32" else 0x5a5a5a5a, device="cuda",
                   dtype=DT[td]) if td != "s32" else torch.full((M, N), 0x5a5a5a5a, dtype=torch.int32, device="cuda")
    sz = {"M": M, "N": N, "K": K}
    grid = grid_for(man["gridPlan"], sz)
    block = tuple(man["block"])
    smem = man["dynamicSmemBytes"]
    argsets = [kernel_args(man, {"A": As[i], "B": Bs[i], "D": D}, sz) for i in range(sets)]
    fn(grid, block, argsets[0], shared_mem=smem)
    torch.cuda.synchronize()
    verdict = ""
    if check:
        ref = As[0].double() @ Bs[0].double().T
        got = D.double()
        if td == "s32":
            bad = int((got != ref).sum().item())
            verdict = f"exact, {bad} differ"
            ok = bad == 0
        else:
            rel = ((got - ref).norm() / ref.norm()).item()
            ok = rel < {"f16": 2e-3, "bf16": 1e-2, "f32": 3e-3, "f64": 1e-12}[td] and not torch.isnan(got).any().item()
            verdict = f"rel {rel:.2e}"
        verdict = ("OK " if ok else "FAIL ") + verdict
    if profile:
        torch.cuda.synchronize()
        return "profiled"
    # A pause before timing: on a power-capped card the clock depends on how
    # long the card has been busy, so every kernel starts from a rested card.
    time.sleep(float(os.environ.get("PAUSE", "1.0")))
    k = [0]
    def launch():
        k[0] = (k[0] + 1) % sets
        fn(grid, block, argsets[k[0]], shared_mem=smem)
    t = event_time(launch)
    # cuBLAS through PyTorch, same problem and layouts (TN).
    if ta == "s8":
        cub = lambda: torch._int_mm(As[k[0]], Bs[k[0]].T)
    else:
        cub = lambda: torch.matmul(As[k[0]], Bs[k[0]].T)
    key = (ta, M, N, K)
    if key not in CUBLAS_CACHE:
        CUBLAS_CACHE[key] = event_time(cub)
    tc = CUBLAS_CACHE[key]
    flops = 2 * M * N * K
    return verdict, flops / t / 1e9, flops / tc / 1e9, grid, fn.num_regs

def peak():
    mod = cp.RawModule(path=f"{GEN}/peak.ptx")
    res = {}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for line in open(f"{GEN}/peak.json"):
        name, entry, m, n, k, accs = line.split()
        fn = mod.get_function(entry)
        for per_sm in ([4] if "_a" in name or name not in ("f16", "tf32") else [2, 4, 8]):
            blocks = sms * per_sm
            out = torch.empty(blocks * 256 * 2, dtype=torch.float64, device="cuda")
            iters = 2048
            f = lambda: fn((blocks, 1, 1), (256, 1, 1), (np.uint64(out.data_ptr()), np.uint32(iters)))
            t = event_time(f, iters=5, warm=2)
            ops = 2 * int(m) * int(n) * int(k) * int(accs) * iters * blocks * 8
            key = name if per_sm == 4 else f"{name}_b{per_sm}"
            res[key] = ops / t / 1e9
    return res

if __name__ == "__main__":
    p = torch.cuda.get_device_properties(0)
    print(f"# {p.name}, {p.multi_processor_count} SMs, torch {torch.__version__}")
    if os.environ.get("PROFILE"):
        # One launch per kernel, for ncu: no timing, no cuBLAS, no ceiling.
        for name in os.environ["PROFILE"].split(","):
            for (M, N, K) in SIZES:
                man, fn = load(name)
                print(name, run_kernel(name, M, N, K, sets=1, check=False, profile=True), flush=True)
        sys.exit(0)
    pk = peak()
    for n, v in pk.items(): print(f"peak {n}: {v:.0f} TOPS")
    names = ["bench_f16", "bench_bf16", "bench_tf32", "bench_s8", "bench_f64"]
    if os.environ.get("VARIANTS"):
        names = sorted(f[:-5] for f in os.listdir(GEN) if f.startswith("var_") and f.endswith(".json"))
        if os.environ["VARIANTS"] != "1":  # comma-separated name prefixes
            names = [n for n in names if any(n.startswith(p) for p in os.environ["VARIANTS"].split(","))]
    # ROUNDS > 1: the whole list again, interleaved, so that a drift of the
    # machine (temperature, power) falls on every variant alike; the summary
    # gives each variant's median over the rounds.
    rounds = int(os.environ.get("ROUNDS", "1"))
    seen = {}
    for r in range(rounds):
        for name in names:
            for (M, N, K) in SIZES:
                try:
                    v, ours, cub, grid, regs = run_kernel(name, M, N, K, check=(r == 0))
                    typ = name.split("_")[1]
                    ceil = pk.get(typ, float("nan"))
                    seen.setdefault((name, M, N, K), []).append(ours / ceil)
                    print(f"{name} {M}x{N}x{K}: {v}; ours {ours:.1f} TFLOPS, cuBLAS {cub:.1f}, ratio {ours/cub:.2f}, of ceiling {ours/ceil:.2f}; grid {grid} regs {regs}", flush=True)
                except Exception as e:
                    print(f"{name} {M}x{N}x{K}: ERROR {type(e).__name__}: {e}", flush=True)
    if rounds > 1:
        print("# median ratio to the ceiling over the rounds (min..max)")
        for (name, M, N, K), xs in seen.items():
            print(f"{name} {M}x{N}x{K}: {statistics.median(xs):.3f} ({min(xs):.3f}..{max(xs):.3f})")
