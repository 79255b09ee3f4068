"""PyTorch peers of gemmc's 2:4 structured-sparse benchmark (issue 21).

Called by the Deno benchmark (bench/sparse.ts) as a subprocess on a CUDA machine:

    python3 bench/peers/sparse_peers.py OUT.jsonl
    python3 bench/peers/sparse_peers.py --m 4096 --n 4096 --k 4096 --dtypes f16,s8 OUT.jsonl
    python3 bench/peers/sparse_peers.py --dry OUT.jsonl

The problem, for each dtype (f16, bf16, s8 = int8, f32):

    A  [M, K]  row-major, random values pruned to the sparse pattern: in each
               aligned group of 4 along K the 2 largest magnitudes are kept
               (f32: in each pair the larger, 1:2, which cuSPARSELt needs for
               f32 and which is also 2:4)
    B  [K, N]  column-major (the transpose of a contiguous [N, K]), random
    D  [M, N]  A @ B

Two peers per dtype, each checked against a float64 reference, then timed:

    dense   torch.mm(A, B) (cuBLAS; s8: torch._int_mm, int32 out; f32 with
            torch.backends.cuda.matmul.allow_tf32 = True, the peer of gemmc's tf32)
    sparse  torch.sparse.to_sparse_semi_structured(A) @ B; the backend is the
            class actually instantiated (SparseSemiStructuredTensorCUSPARSELT:
            "cuSPARSELt", ...CUTLASS: "CUTLASS"; _FORCE_CUTLASS is recorded
            too). s8 through cuSPARSELt is called as torch._cslt_sparse_mm(...,
            out_dtype=torch.int32) so that its output is int32 like gemmc's;
            where that is refused, the public `@` (int8 out, not checked).

A dtype or peer that PyTorch refuses is a record with status "unsupported"
and the reason (e.g. f32 where to_sparse_semi_structured does not take it).
Both peers multiply the same pruned A: the dense one does the same product.

The timing is that of bench/peers/grouped_peers.py (imported from it; it
mirrors bench/gpu_measure.ts, bench/NOTES.md 26): "burst" is 3 rounds, each
after a 1 s rest, of as many calls as fit in 40 ms (3 to 20) after 1-2
warm-up calls; "sustained" is 1.5 s of back-to-back calls, then the median of
20. Each call is timed between two CUDA events.

Before any timing, each peer runs once and CHECK_SAMPLES sampled elements of
its output are compared with float64 dot products of the (pruned) inputs
("ok", "max_rel_err"; see REL_TOL; integers must be exact).

OUT.jsonl gets one JSON object a line, one per (dtype, peer, state), with the
keys of RECORD_KEYS: "dtype", "peer" ("dense" or "sparse"), "state" ("burst"
or "sustained"), "M", "N", "K", "flops" (2 M N K, dense-equivalent for the
sparse peer), "status" ("ok", "unsupported", "failed": a check failed, or
"planned" in --dry), "reason" (why not ok, else null), "op" (what was
called), "backend" ("cuBLAS", "cuSPARSELt", "CUTLASS" or null), "out_dtype",
"ok", "max_rel_err", "ms" (the state's median time), "tflops" (flops / ms),
"burst_rounds" (each round's median, burst only), "seed", "torch", "cuda",
"device", "force_cutlass". Times in ms; a value not measured, or not finite,
is null. The file is rewritten after every dtype, so a crash leaves the
dtypes done so far. A table is printed to stdout.

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

if TYPE_CHECKING:  # torch is imported lazily: --dry must run without it
    import torch

PROG = "sparse_peers.py"
DEVICE = "cuda"

DTYPES = ("f16", "bf16", "s8", "f32")
PEERS = ("dense", "sparse")
STATES = ("burst", "sustained")

RECORD_KEYS = (
    "dtype",
    "peer",
    "state",
    "M",
    "N",
    "K",
    "flops",
    "status",
    "reason",
    "op",
    "backend",
    "out_dtype",
    "ok",
    "max_rel_err",
    "ms",
    "tflops",
    "burst_rounds",
    "seed",
    "torch",
    "cuda",
    "device",
    "force_cutlass",
)

# Float inputs: normal values times this, so nearly all lie in [-1, 1].
INPUT_SCALE = 0.3

# Correctness: this many sampled (row, column) elements per peer.
CHECK_SAMPLES = 256
# |y - ref| <= REL_TOL * (|ref| + ABS_FRACTION * m), m = |a| |b| / sqrt(K), as in
# grouped_peers.py: covers the output rounding (f16 2^-11, bf16 2^-8), f32
# accumulation, tf32's 10-bit inputs (about 2^-11 m) and split-K reductions,
# while a dropped K-tile still fails.
REL_TOL = 2.0**-6
ABS_FRACTION = 2.0**-2


@dataclass(frozen=True)
class Plan:
    """The validated options."""

    M: int
    N: int
    K: int
    dtypes: tuple[str, ...]
    states: tuple[str, ...]
    seed: int

    @property
    def flops(self) -> int:
        """2 M N K: the dense-equivalent work of one product."""
        return 2 * self.M * self.N * self.K


def validate(args: argparse.Namespace) -> Plan:
    """Checks the parsed options; raises InputError naming every problem.

    M, N and K must be positive multiples of 64 (what both peers accept for
    every dtype: cuSPARSELt and CUTLASS need multiples of 8 to 128 per dtype).
    """
    errors: list[str] = []
    for name in ("m", "n", "k"):
        v = getattr(args, name)
        if v <= 0 or v % 64:
            errors.append(f"--{name} must be a positive multiple of 64, got {v}")
    dtypes = name_list(args.dtypes, DTYPES, "dtypes", errors)
    states = name_list(args.states, STATES, "states", errors)
    if errors:
        raise InputError("\n".join(errors))
    return Plan(args.m, args.n, args.k, dtypes, states, args.seed)


def record(plan: Plan, dtype: str, peer: str, state: str, **fields: Any) -> dict[str, Any]:
    """One output record: every key of RECORD_KEYS, those not given null."""
    r: dict[str, Any] = {k: None for k in RECORD_KEYS}
    r.update(
        dtype=dtype, peer=peer, state=state, M=plan.M, N=plan.N, K=plan.K, flops=plan.flops,
        seed=plan.seed,
    )
    for k, v in fields.items():
        if k not in r:
            raise KeyError(f"not a record key: {k}")
        r[k] = v
    return r


def describe(plan: Plan) -> str:
    """The plan, as --dry prints it before the planned records."""
    shapes = f"M={plan.M} N={plan.N} K={plan.K}"
    lines = [
        f"{shapes} flops {plan.flops:.4g} (dense-equivalent), seed {plan.seed}, "
        f"states {', '.join(plan.states)}, peers {', '.join(PEERS)}",
    ]
    for t in plan.dtypes:
        kept = "1:2" if t == "f32" else "2:4"
        lines.append(
            f"{t}: A [{plan.M}, {plan.K}] row pruned {kept} (kept [{plan.M}, {plan.K // 2}]), "
            f"B [{plan.K}, {plan.N}] col, D [{plan.M}, {plan.N}] "
            f"{'s32' if t == 's8' else t}"
        )
    return "\n".join(lines)


def planned(plan: Plan) -> list[dict[str, Any]]:
    """The records a run writes, in order (seed: --seed plus the dtype's index), "planned"."""
    return [
        record(plan, t, p, s, status="planned", seed=plan.seed + i)
        for i, t in enumerate(plan.dtypes)
        for p in PEERS
        for s in plan.states
    ]


def dry_text(plan: Plan) -> str:
    """What --dry prints: the plan, then the planned records as JSON lines."""
    return "\n".join([describe(plan), *(json.dumps(r) for r in planned(plan))])


# ---------------------------------------------------------------- GPU side


def torch_dtype(t: str) -> torch.dtype:
    """The torch dtype of an operand type name."""
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16, "s8": torch.int8, "f32": torch.float32}[t]


def make_operands(plan: Plan, t: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A (random, pruned to the pattern) [M, K] row-major and B [K, N] column-major."""
    import torch

    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    M, N, K = plan.M, plan.N, plan.K
    if t == "s8":
        a = torch.randint(-128, 128, (M, K), generator=gen, device=DEVICE, dtype=torch.int16)
        bt = torch.randint(-128, 128, (N, K), generator=gen, device=DEVICE, dtype=torch.int16)
    else:
        a = torch.randn(M, K, generator=gen, device=DEVICE) * INPUT_SCALE
        bt = torch.randn(N, K, generator=gen, device=DEVICE) * INPUT_SCALE
    group, keep = (2, 1) if t == "f32" else (4, 2)
    # Keep the largest magnitudes of each group (ties: topk's choice), zero the rest.
    g = a.view(M, K // group, group)
    idx = g.abs().float().topk(keep, dim=-1).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True)
    a = (g * mask).view(M, K)
    dt = torch_dtype(t)
    return a.to(dt).contiguous(), bt.to(dt).contiguous().t()


def sample_check(
    A: torch.Tensor, B: torch.Tensor, Y: torch.Tensor, seed: int, exact: bool
) -> float:
    """The largest |y - ref| / (|ref| + ABS_FRACTION m) over CHECK_SAMPLES elements.

    ref is the float64 dot product of the inputs as stored; for integers
    (exact) any difference gives inf. NaN gives inf.
    """
    import torch

    gen = torch.Generator()
    gen.manual_seed(seed)
    M, K = A.shape
    N = B.shape[1]
    r = torch.randint(0, M, (CHECK_SAMPLES,), generator=gen).to(DEVICE)
    c = torch.randint(0, N, (CHECK_SAMPLES,), generator=gen).to(DEVICE)
    a = A[r].double()
    b = B.t()[c].double()
    ref = (a * b).sum(dim=1)
    y = Y[r, c].double()
    if exact:
        return 0.0 if bool((y == ref).all()) else math.inf
    m = a.norm(dim=1) * b.norm(dim=1) / math.sqrt(K)
    err = ((y - ref).abs() / (ref.abs() + ABS_FRACTION * m)).nan_to_num(math.inf)
    return float(err.max())


@dataclass
class Peer:
    """A callable peer and what it is."""

    run: Callable[[], torch.Tensor]
    op: str
    backend: str | None
    checkable: bool = True
    why_unchecked: str | None = None


def dense_peer(t: str, A: torch.Tensor, B: torch.Tensor) -> Peer:
    """cuBLAS through torch.mm (s8: torch._int_mm, int32 out)."""
    import torch

    if t == "s8":
        int_mm = getattr(torch, "_int_mm", None)
        if int_mm is None:
            raise NotImplementedError(f"torch {torch.__version__} has no torch._int_mm")
        return Peer(lambda: int_mm(A, B), "torch._int_mm(A, B)", "cuBLAS")
    return Peer(lambda: torch.mm(A, B), "torch.mm(A, B)", "cuBLAS")


def backend_of(As: Any) -> str:
    """The backend of a SparseSemiStructuredTensor, by the class instantiated."""
    name = type(As).__name__
    if "CUSPARSELT" in name.upper():
        return "cuSPARSELt"
    if "CUTLASS" in name.upper():
        return "CUTLASS"
    return name


def sparse_peer(t: str, A: torch.Tensor, B: torch.Tensor) -> Peer:
    """to_sparse_semi_structured(A) @ B (s8 through cuSPARSELt: int32 out where it can)."""
    import torch

    As = torch.sparse.to_sparse_semi_structured(A)
    backend = backend_of(As)
    if t == "s8":
        packed = getattr(As, "packed", None)
        cslt = getattr(torch, "_cslt_sparse_mm", None)
        if backend == "cuSPARSELt" and packed is not None and cslt is not None:
            try:
                y = cslt(packed, B, out_dtype=torch.int32)
                torch.cuda.synchronize()
                if y.dtype == torch.int32:
                    return Peer(
                        lambda: cslt(packed, B, out_dtype=torch.int32),
                        "torch._cslt_sparse_mm(packed, B, out_dtype=int32)",
                        backend,
                    )
            except (RuntimeError, TypeError) as e:
                print(f"{PROG}: s8 int32-out cuSPARSELt refused ({first_line(e)}); "
                      "using A_sparse @ B", file=sys.stderr)
    # B column-major first (gemmc's layout); where the backend refuses it, a row-major copy.
    Bx, op = B, "to_sparse_semi_structured(A) @ B"
    try:
        torch.mm(As, B)
        torch.cuda.synchronize()
    except RuntimeError as e:
        print(f"{PROG}: {t} sparse @ column-major B refused ({first_line(e)}); "
              "B row-major instead", file=sys.stderr)
        Bx, op = B.contiguous(), "to_sparse_semi_structured(A) @ B (B row-major)"
    if t == "s8":
        return Peer(
            lambda: torch.mm(As, Bx),
            op,
            backend,
            checkable=False,
            why_unchecked="int8 output (saturated or wrapped): not comparable with the int32 "
            "reference",
        )
    return Peer(lambda: torch.mm(As, Bx), op, backend)


def first_line(e: BaseException) -> str:
    """An exception as 'Type: first line of its message'."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def run_peer(
    plan: Plan, t: str, peer: str, make: Callable[[], Peer], A: torch.Tensor, B: torch.Tensor,
    seed: int, env: dict[str, Any],
) -> list[dict[str, Any]]:
    """Builds, checks and times one peer; its records, one per state."""
    import torch

    try:
        p = make()
        Y = p.run()
        torch.cuda.synchronize()
    except (RuntimeError, TypeError, ValueError, NotImplementedError, AssertionError) as e:
        return [
            record(plan, t, peer, s, status="unsupported", reason=first_line(e), **env)
            for s in plan.states
        ]
    fields: dict[str, Any] = {"op": p.op, "backend": p.backend, "out_dtype": str(Y.dtype)[6:]}
    if p.checkable:
        err = sample_check(A, B, Y, seed, exact=t == "s8")
        fields["max_rel_err"] = err
        fields["ok"] = err <= REL_TOL
    del Y
    timed = measure(p.run, plan.states)
    out = []
    for s in plan.states:
        ms = timed[f"{s}_ms"]
        status = "failed" if fields.get("ok") is False else "ok"
        reason = (
            None
            if status == "ok" and p.checkable
            else p.why_unchecked
            if not p.checkable
            else f"check failed (max error/bound {fields['max_rel_err']:.3g})"
        )
        out.append(
            record(
                plan, t, peer, s, status=status, reason=reason, ms=ms,
                tflops=plan.flops / (ms * 1e-3) / 1e12 if ms else None,
                burst_rounds=timed["burst_rounds"] if s == "burst" else None,
                **fields, **env,
            )
        )
    return out


def run_dtype(plan: Plan, index: int, t: str, env: dict[str, Any]) -> list[dict[str, Any]]:
    """Both peers of one dtype, checked then timed."""
    import torch

    seed = plan.seed + index  # a dtype's data does not depend on the dtypes before it
    A, B = make_operands(plan, t, seed)
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = t == "f32"  # the peer of gemmc's tf32
    try:
        recs = run_peer(plan, t, "dense", lambda: dense_peer(t, A, B), A, B, seed, env)
        recs += run_peer(plan, t, "sparse", lambda: sparse_peer(t, A, B), A, B, seed, env)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    del A, B
    torch.cuda.empty_cache()
    return [{**r, "seed": seed} for r in recs]


def write_jsonl(path: str, records: Sequence[dict[str, Any]]) -> None:
    """Writes the records as strict JSON (no NaN), one a line."""
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(finite(r), allow_nan=False) + "\n")


def table(records: Sequence[dict[str, Any]]) -> str:
    """The human-readable summary printed to stdout."""
    head = (
        f"{'dtype':5s} {'peer':6s} {'state':9s} {'ms':>9s} {'TFLOP/s':>8s} {'backend':10s} "
        "status"
    )
    lines = [head, "-" * len(head)]
    for r in records:
        ms = "-" if r["ms"] is None else f"{r['ms']:.4f}"
        tf = "-" if r["tflops"] is None else f"{r['tflops']:.1f}"
        extra = "" if r["reason"] is None else f" ({r['reason']})"
        lines.append(
            f"{r['dtype']:5s} {r['peer']:6s} {r['state']:9s} {ms:>9s} {tf:>8s} "
            f"{str(r['backend'] or '-'):10s} {r['status']}{extra}"
        )
    return "\n".join(lines)


def run_all(plan: Plan, out_path: str) -> int:
    """Runs every dtype on the GPU, writing OUT.jsonl after each; returns the exit status."""
    import torch  # cli (_runner.py) has checked that it imports and sees a device

    force = getattr(torch.sparse.SparseSemiStructuredTensor, "_FORCE_CUTLASS", None)
    env = {
        **environment(),
        "force_cutlass": force,
    }
    records: list[dict[str, Any]] = []
    for i, t in enumerate(plan.dtypes):
        print(f"[{i + 1}/{len(plan.dtypes)}] {t}", file=sys.stderr, flush=True)
        records += run_dtype(plan, i, t, env)
        write_jsonl(out_path, records)
    print(f"torch {env['torch']} (CUDA {env['cuda']}) on {env['device']}, "
          f"_FORCE_CUTLASS={force}")
    print(table(records))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="PyTorch peers (dense torch.mm, to_sparse_semi_structured @) of gemmc's "
        "2:4 sparse benchmark.",
    )
    parser.add_argument("output", metavar="OUT.jsonl", help="where the records go")
    parser.add_argument("--m", type=int, default=8192, help="M (default 8192)")
    parser.add_argument("--n", type=int, default=8192, help="N (default 8192)")
    parser.add_argument("--k", type=int, default=8192, help="K (default 8192)")
    parser.add_argument(
        "--dtypes", default=",".join(DTYPES), help=f"default {','.join(DTYPES)}"
    )
    parser.add_argument("--states", default=",".join(STATES), help=f"default {','.join(STATES)}")
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
