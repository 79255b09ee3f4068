"""PyTorch peer of gemmc's 8-bit float GEMM benchmark (issue 23): torch._scaled_mm.

Called by the Deno benchmark (bench/fp8.ts) as a subprocess on a CUDA machine,
once gemmc's CUDA context is closed:

    python3 bench/peers/fp8_peers.py OUT.jsonl
    python3 bench/peers/fp8_peers.py --shapes 8192,4096,5008 --dtypes e4m3 OUT.jsonl
    python3 bench/peers/fp8_peers.py --dry OUT.jsonl

The problem, for each shape (M=N=K=S, or MxNxK) and dtype:

    A  [M, K]  row-major, torch.float8_e4m3fn
    B  [K, N]  column-major (the transpose of a contiguous [N, K]),
               float8_e4m3fn ("e4m3") or float8_e5m2 ("e4m3_e5m2")
    D  [M, N]  bfloat16, D = scale_a * scale_b * (A @ B)

A and B are uniform in [-1, 1) rounded to their format (as bench/gpu_bench.ts
fills gemmc's inputs); the scales are 0-dim float32 tensors (--scale-a,
--scale-b; 0.5 and 0.25 by default, powers of two whose product is not 1, as
gemmc's kernel is given). M, N and K must be positive multiples of 16:
torch._scaled_mm (cuBLASLt's fp8 GEMM) refuses other sizes.

The call, per variant:

    default     torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    fast_accum  the same with use_fast_accum=True (cuBLASLt's fast accumulation: the
                sums stay in the tensor cores' accumulator, as gemmc's wgmma kernel
                keeps them; the default asks cuBLASLt for no fast accumulation)

(torch 2.1-2.3 returned (out, amax): the first is taken.) A dtype torch
refuses (no float8 dtypes, no _scaled_mm, a device without fp8) is a record
with status "unsupported" and the reason.

Before any timing, each variant runs once and CHECK_SAMPLES sampled elements
of its output are compared with a float64 reference of the inputs as stored.
The bound of an element is 2^-7 |ref| (the bf16 output's rounding, twice over)
plus, scaled by sa sb, 2 * 2^-13 * sum_j |S_j| (S_j: the exact partial sum
after each 32 of K; Hopper's fp8 MMA keeps about 14 significant bits of each
K = 32 instruction's sum, bench/NOTES.md 63) and K 2^-23 sum_k |a_k b_k| (f32
accumulation). "bound_ratio" is the largest error / bound (ok: at most 1),
"max_rel_err" the largest error over the largest |ref| of the sample. A
dropped K-tile of 128 (an error of about sqrt(128)/3 = 3.8 sa sb) exceeds
the bound (about 1.5 sa sb at K = 8192).

The timing is that of bench/peers/grouped_peers.py (imported from it; it
mirrors bench/gpu_measure.ts, bench/NOTES.md 26): "burst" is 3 rounds, each
after a 1 s rest, of as many calls as fit in 40 ms (3 to 20) after 1-2
warm-up calls; "sustained" is 1.5 s of back-to-back calls, then the median of
20. Each call is timed between two CUDA events.

OUT.jsonl gets one JSON object a line, one per (shape, dtype, variant, state),
with the keys of RECORD_KEYS: "dtype" ("e4m3" or "e4m3_e5m2"), "a_dtype",
"b_dtype" (torch's names), "variant" ("default" or "fast_accum"),
"fast_accum", "state" ("burst" or "sustained"), "M", "N", "K", "flops"
(2 M N K), "status" ("ok", "unsupported", "failed": the check failed, or
"planned" in --dry), "reason" (why not ok, else null), "op" (the call),
"out_dtype", "scale_a", "scale_b", "ok", "max_rel_err", "bound_ratio", "ms"
(the state's median time), "tflops" (flops / ms), "burst_rounds" (each
round's median, burst only), "seed", "torch", "cuda", "device". Times in ms;
a value not measured, or not finite, is null. The file is rewritten after
every (shape, dtype), so a crash leaves those done so far. A table is
printed to stdout.

--dry validates the options and prints the plan and the records it would
write (status "planned", figures null) as JSON lines, without importing
torch; it writes no OUT.jsonl. Exit status: 0 done, 2 bad arguments, 3 no
torch or no CUDA device.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _runner import InputError, cli, environment, name_list  # noqa: E402  (the command line, shared)
from grouped_peers import finite, measure  # noqa: E402  (the same timing protocol)
from sparse_peers import first_line, write_jsonl  # noqa: E402  (the same records' writer)

if TYPE_CHECKING:  # torch is imported lazily: --dry must run without it
    import torch

PROG = "fp8_peers.py"
DEVICE = "cuda"

# A's and B's torch dtypes per benchmark dtype (gemmc's bench/kernels/<dtype>.gemm).
DTYPES = {"e4m3": ("float8_e4m3fn", "float8_e4m3fn"), "e4m3_e5m2": ("float8_e4m3fn", "float8_e5m2")}
VARIANTS = ("default", "fast_accum")
STATES = ("burst", "sustained")
DEFAULT_SHAPES = "8192,4096,5008"

RECORD_KEYS = (
    "dtype",
    "a_dtype",
    "b_dtype",
    "variant",
    "fast_accum",
    "state",
    "M",
    "N",
    "K",
    "flops",
    "status",
    "reason",
    "op",
    "out_dtype",
    "scale_a",
    "scale_b",
    "ok",
    "max_rel_err",
    "bound_ratio",
    "ms",
    "tflops",
    "burst_rounds",
    "seed",
    "torch",
    "cuda",
    "device",
)

# Correctness: this many sampled (row, column) elements per variant.
CHECK_SAMPLES = 256
# The bound's parts (see the module's text).
OUT_ROUNDING = 2.0**-7
FP8_ACC_STEP = 32
FP8_ACC_LOSS = 2 * 2.0**-13
F32_ACC = 2.0**-23


@dataclass(frozen=True)
class Shape:
    """One problem's sizes."""

    M: int
    N: int
    K: int

    @property
    def flops(self) -> int:
        """2 M N K."""
        return 2 * self.M * self.N * self.K


@dataclass(frozen=True)
class Plan:
    """The validated options."""

    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...]
    variants: tuple[str, ...]
    states: tuple[str, ...]
    scale_a: float
    scale_b: float
    seed: int


def _shapes(text: str, errors: list[str]) -> tuple[Shape, ...]:
    """`S` (M=N=K=S) or `MxNxK` items, each size a positive multiple of 16."""
    out: list[Shape] = []
    items = [x.strip() for x in text.split(",") if x.strip()]
    for item in items:
        parts = item.split("x")
        if len(parts) not in (1, 3) or not all(p.isdigit() for p in parts):
            errors.append(f"--shapes: {item!r} is not S or MxNxK")
            continue
        m, n, k = (int(parts[0]),) * 3 if len(parts) == 1 else tuple(int(p) for p in parts)
        if min(m, n, k) <= 0 or m % 16 or n % 16 or k % 16:
            errors.append(
                f"--shapes: {item} needs positive multiples of 16 (torch._scaled_mm's rule)"
            )
            continue
        out.append(Shape(m, n, k))
    if not items:
        errors.append("--shapes is empty")
    elif len(set(out)) != len(out):
        errors.append(f"--shapes repeats a shape: {text!r}")
    return tuple(out)


def validate(args: argparse.Namespace) -> Plan:
    """Checks the parsed options; raises InputError naming every problem."""
    errors: list[str] = []
    shapes = _shapes(args.shapes, errors)
    dtypes = name_list(args.dtypes, tuple(DTYPES), "dtypes", errors)
    variants = name_list(args.variants, VARIANTS, "variants", errors)
    states = name_list(args.states, STATES, "states", errors)
    for name in ("scale_a", "scale_b"):
        v = getattr(args, name)
        if not (math.isfinite(v) and v > 0):
            errors.append(f"--{name.replace('_', '-')} must be a positive finite number, got {v}")
    if errors:
        raise InputError("\n".join(errors))
    return Plan(shapes, dtypes, variants, states, args.scale_a, args.scale_b, args.seed)


def record(
    plan: Plan, shape: Shape, dtype: str, variant: str, state: str, **fields: Any
) -> dict[str, Any]:
    """One output record: every key of RECORD_KEYS, those not given null."""
    r: dict[str, Any] = {k: None for k in RECORD_KEYS}
    a, b = DTYPES[dtype]
    r.update(
        dtype=dtype, a_dtype=a, b_dtype=b, variant=variant, fast_accum=variant == "fast_accum",
        state=state, M=shape.M, N=shape.N, K=shape.K, flops=shape.flops,
        scale_a=plan.scale_a, scale_b=plan.scale_b, seed=plan.seed,
    )
    for k, v in fields.items():
        if k not in r:
            raise KeyError(f"not a record key: {k}")
        r[k] = v
    return r


def jobs(plan: Plan) -> list[tuple[int, Shape, str]]:
    """The (seed, shape, dtype) of each problem, in run order: seed is --seed plus its index."""
    return [
        (plan.seed + i, s, t)
        for i, (s, t) in enumerate((s, t) for s in plan.shapes for t in plan.dtypes)
    ]


def describe(plan: Plan) -> str:
    """The plan, as --dry prints it before the planned records."""
    lines = [
        f"torch._scaled_mm, out bf16, scale_a {plan.scale_a:g}, scale_b {plan.scale_b:g}, "
        f"seed {plan.seed}, variants {', '.join(plan.variants)}, states {', '.join(plan.states)}",
    ]
    for seed, s, t in jobs(plan):
        a, b = DTYPES[t]
        lines.append(
            f"{t} M={s.M} N={s.N} K={s.K} flops {s.flops:.4g}: A [{s.M}, {s.K}] row {a}, "
            f"B [{s.K}, {s.N}] col {b}, D [{s.M}, {s.N}] bf16, seed {seed}"
        )
    return "\n".join(lines)


def planned(plan: Plan) -> list[dict[str, Any]]:
    """The records a run writes, in order, "planned"."""
    return [
        record(plan, s, t, v, st, status="planned", seed=seed)
        for seed, s, t in jobs(plan)
        for v in plan.variants
        for st in plan.states
    ]


def dry_text(plan: Plan) -> str:
    """What --dry prints: the plan, then the planned records as JSON lines."""
    return "\n".join([describe(plan), *(json.dumps(r) for r in planned(plan))])


# ---------------------------------------------------------------- GPU side


def make_operands(s: Shape, dtype: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A [M, K] row-major and B [K, N] column-major, uniform in [-1, 1) in their formats."""
    import torch

    a_name, b_name = DTYPES[dtype]
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    a = torch.rand(s.M, s.K, generator=gen, device=DEVICE) * 2 - 1
    A = a.to(getattr(torch, a_name)).contiguous()
    del a
    bt = torch.rand(s.N, s.K, generator=gen, device=DEVICE) * 2 - 1
    B = bt.to(getattr(torch, b_name)).contiguous().t()
    del bt
    return A, B


def rows_f64(X: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows `idx` of a contiguous 8-bit float matrix, as float64 (through its bytes:
    index_select need not take float8)."""
    import torch

    return X.view(torch.uint8).index_select(0, idx).view(X.dtype).float().double()


def sample_check(
    A: torch.Tensor, B: torch.Tensor, Y: torch.Tensor, sa: float, sb: float, seed: int
) -> tuple[float, float]:
    """(max_rel_err, bound_ratio) over CHECK_SAMPLES elements (see the module's text).

    NaN in Y gives inf for both.
    """
    import torch

    gen = torch.Generator()
    gen.manual_seed(seed)
    M, K = A.shape
    N = B.shape[1]
    r = torch.randint(0, M, (CHECK_SAMPLES,), generator=gen).to(DEVICE)
    c = torch.randint(0, N, (CHECK_SAMPLES,), generator=gen).to(DEVICE)
    prods = rows_f64(A, r) * rows_f64(B.t(), c)  # [samples, K], exact
    partial = prods.cumsum(dim=1)
    ends = list(range(FP8_ACC_STEP - 1, K, FP8_ACC_STEP))
    if not ends or ends[-1] != K - 1:
        ends.append(K - 1)
    ends_t = torch.tensor(ends, device=DEVICE)
    scale = sa * sb
    ref = scale * partial[:, -1]
    bound = (
        OUT_ROUNDING * ref.abs()
        + scale * FP8_ACC_LOSS * partial.index_select(1, ends_t).abs().sum(dim=1)
        + scale * K * F32_ACC * prods.abs().sum(dim=1)
        + 1e-30
    )
    y = Y[r, c].double()
    err = (y - ref).abs().nan_to_num(math.inf)
    ratio = float((err / bound).max())
    top = float(ref.abs().max())
    rel = float(err.max()) / top if top > 0 else (0.0 if float(err.max()) == 0 else math.inf)
    return rel, ratio


@dataclass
class Call:
    """A variant's callable and what it calls."""

    run: Callable[[], torch.Tensor]
    op: str


def scaled_mm(
    A: torch.Tensor, B: torch.Tensor, sa: torch.Tensor, sb: torch.Tensor, fast: bool
) -> Call:
    """torch._scaled_mm with bf16 out, keyword arguments (every signature since 2.1 takes them)."""
    import torch

    mm = getattr(torch, "_scaled_mm", None)
    if mm is None:
        raise NotImplementedError(f"torch {torch.__version__} has no torch._scaled_mm")

    def run() -> torch.Tensor:
        y = mm(A, B, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
        return y[0] if isinstance(y, tuple) else y  # torch < 2.4: (out, amax)

    op = "torch._scaled_mm(A, B, scale_a, scale_b, out_dtype=torch.bfloat16" + (
        ", use_fast_accum=True)" if fast else ")"
    )
    return Call(run, op)


def run_variant(
    plan: Plan, s: Shape, t: str, variant: str, ops: tuple[Any, ...], seed: int,
    env: dict[str, Any],
) -> list[dict[str, Any]]:
    """Checks then times one variant; its records, one per state."""
    import torch

    A, B, sa, sb = ops
    try:
        call = scaled_mm(A, B, sa, sb, variant == "fast_accum")
        Y = call.run()
        torch.cuda.synchronize()
    except (RuntimeError, TypeError, ValueError, NotImplementedError, AssertionError) as e:
        return [
            record(plan, s, t, variant, st, status="unsupported", reason=first_line(e),
                   seed=seed, **env)
            for st in plan.states
        ]
    rel, ratio = sample_check(A, B, Y, plan.scale_a, plan.scale_b, seed)
    ok = ratio <= 1.0
    fields: dict[str, Any] = {
        "op": call.op, "out_dtype": str(Y.dtype)[6:], "ok": ok, "max_rel_err": rel,
        "bound_ratio": ratio,
    }
    del Y
    timed = measure(call.run, plan.states)
    out = []
    for st in plan.states:
        ms = timed[f"{st}_ms"]
        out.append(
            record(
                plan, s, t, variant, st, status="ok" if ok else "failed",
                reason=None if ok else f"check failed (max error/bound {ratio:.3g})",
                ms=ms, tflops=s.flops / (ms * 1e-3) / 1e12 if ms else None,
                burst_rounds=timed["burst_rounds"] if st == "burst" else None,
                seed=seed, **fields, **env,
            )
        )
    return out


def run_problem(
    plan: Plan, s: Shape, t: str, seed: int, env: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every variant of one (shape, dtype)."""
    import torch

    try:
        A, B = make_operands(s, t, seed)
    except (AttributeError, RuntimeError, TypeError) as e:  # no float8 dtypes
        return [
            record(plan, s, t, v, st, status="unsupported", reason=first_line(e), seed=seed,
                   **env)
            for v in plan.variants
            for st in plan.states
        ]
    sa = torch.tensor(plan.scale_a, dtype=torch.float32, device=DEVICE)
    sb = torch.tensor(plan.scale_b, dtype=torch.float32, device=DEVICE)
    recs: list[dict[str, Any]] = []
    for v in plan.variants:
        recs += run_variant(plan, s, t, v, (A, B, sa, sb), seed, env)
    del A, B
    torch.cuda.empty_cache()
    return recs


def table(records: Sequence[dict[str, Any]]) -> str:
    """The human-readable summary printed to stdout."""
    head = (
        f"{'dtype':9s} {'M':>5s} {'N':>5s} {'K':>5s} {'variant':10s} {'state':9s} {'ms':>9s} "
        f"{'TFLOP/s':>8s} {'err/bound':>9s} status"
    )
    lines = [head, "-" * len(head)]
    for r in records:
        ms = "-" if r["ms"] is None else f"{r['ms']:.4f}"
        tf = "-" if r["tflops"] is None else f"{r['tflops']:.1f}"
        br = "-" if r["bound_ratio"] is None else f"{r['bound_ratio']:.3f}"
        extra = "" if r["reason"] is None else f" ({r['reason']})"
        lines.append(
            f"{r['dtype']:9s} {r['M']:5d} {r['N']:5d} {r['K']:5d} {r['variant']:10s} "
            f"{r['state']:9s} {ms:>9s} {tf:>8s} {br:>9s} {r['status']}{extra}"
        )
    return "\n".join(lines)


def run_all(plan: Plan, out_path: str) -> int:
    """Runs every (shape, dtype) on the GPU, writing OUT.jsonl after each; the exit status."""
    env = environment()  # cli (_runner.py) has checked that torch imports and sees a device
    records: list[dict[str, Any]] = []
    todo = jobs(plan)
    for i, (seed, s, t) in enumerate(todo):
        print(f"[{i + 1}/{len(todo)}] {t} {s.M}x{s.N}x{s.K}", file=sys.stderr, flush=True)
        records += run_problem(plan, s, t, seed, env)
        write_jsonl(out_path, records)
    print(f"torch {env['torch']} (CUDA {env['cuda']}) on {env['device']}")
    print(table([finite(r) for r in records]))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="PyTorch peer (torch._scaled_mm) of gemmc's 8-bit float GEMM benchmark.",
    )
    parser.add_argument("output", metavar="OUT.jsonl", help="where the records go")
    parser.add_argument(
        "--shapes", default=DEFAULT_SHAPES,
        help=f"S (M=N=K) or MxNxK, comma-separated, multiples of 16 (default {DEFAULT_SHAPES})",
    )
    parser.add_argument("--dtypes", default=",".join(DTYPES), help=f"default {','.join(DTYPES)}")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"default {','.join(VARIANTS)}"
    )
    parser.add_argument("--states", default=",".join(STATES), help=f"default {','.join(STATES)}")
    parser.add_argument("--scale-a", type=float, default=0.5, help="default 0.5")
    parser.add_argument("--scale-b", type=float, default=0.25, help="default 0.25")
    parser.add_argument("--seed", type=int, default=1, help="default 1")
    return cli(
        parser,
        argv,
        validate,
        dry_text,
        run_all,
    )


if __name__ == "__main__":
    sys.exit(main())
