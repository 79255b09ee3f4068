"""PyTorch peers of gemmc's grouped-GEMM (mixture-of-experts) benchmark.

Called by the Deno benchmark as a subprocess on a CUDA machine:

    python3 bench/peers/grouped_peers.py IN.json OUT.json
    python3 bench/peers/grouped_peers.py --dry IN.json OUT.json

IN.json holds the rows to time:

    {"rows": [{"name": "prefill E=128", "E": 128, "N": 1536, "K": 2048,
               "counts": [...E ints, the tokens routed to each expert...]}],
     "seed": 1, "states": ["burst", "sustained"]}

The layout of one row (bf16 everywhere, f32 accumulation):

    X  [T, K]     row-major, T = sum(counts), tokens sorted by expert: expert g
                  owns rows offs[g-1] .. offs[g] (offs = running sum of counts)
    W  [E, N, K]  contiguous: W[g] is N x K row-major (the K x N B operand read
                  column-major)
    Y  [T, N]     row-major; Y[rows of g] = X[rows of g] @ W[g]^T

Two peers per row, each checked against a float64 reference, then timed:

    loop        torch.mm(X[s:e], W[g].t(), out=Y[s:e]) for every expert with
                tokens (cuBLAS per expert; empty experts skipped, as a user would)
    grouped_mm  torch._grouped_mm(X, W.transpose(-2, -1), offs=offs, out_dtype=bf16)
                (PyTorch >= 2.8; "unavailable" with the reason where it is
                missing or refuses the row)

The timing mirrors bench/gpu_measure.ts (bench/NOTES.md 26): "burst" is 3
rounds, each after a 1 s rest with the GPU idle, of as many calls as fit in a
40 ms window (3 to 20) after 1-2 warm-up calls; "sustained" is 1.5 s of
back-to-back calls, then the median of 20. Each call (the whole loop of mm
calls for `loop`) is timed between two CUDA events.

Before any timing, each peer runs once on a NaN-poisoned Y and is compared
with a float64 reference on 64 sampled elements in each of up to 4 non-empty
experts ("ok", "max_rel_err": see REL_TOL; a NaN left anywhere in Y fails),
and the two peers' Ys are compared element by element ("peers_agree").

OUT.json gets {"torch", "cuda", "device", "bf16_reduced_precision_reduction",
"seed", "states", "rows": [{"name", "E", "N", "K", "T", "active_experts",
"seed" (IN.json's seed plus the row's index), "flops" (2 T N K),
"weight_bytes" (W of the experts with tokens), "loop": PEER, "grouped_mm":
PEER or {"unavailable": reason}, "peers_agree", "peers_max_rel_diff"}]}, where
PEER is {"ok", "max_rel_err", "burst_ms", "burst_rounds", "sustained_ms"}
(times in ms, null for a state not asked for). It is rewritten after every
row, so a crash leaves the rows done so far. Non-finite numbers are written
as null.

--dry validates IN.json and prints the planned shapes without importing torch;
it writes no OUT.json. Exit status: 0 done, 2 bad arguments or IN.json, 3 no
torch or no CUDA device.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _runner import InputError, cli, environment  # noqa: E402  (the command line, shared with sparse_peers.py)

if TYPE_CHECKING:  # torch is imported lazily: --dry must run without it
    import torch

PROG = "grouped_peers.py"
DEVICE = "cuda"

# Timing protocol, as bench/gpu_measure.ts BURST and SUSTAINED.
BURST_ROUNDS = 3
BURST_REST_S = 1.0
BURST_WINDOW_MS = 40.0
BURST_MIN_ITERS = 3
BURST_MAX_ITERS = 20
SUSTAINED_LOAD_S = 1.5
SUSTAINED_ITERS = 20

STATES = ("burst", "sustained")
PEERS = ("loop", "grouped_mm")

# Inputs: normal values times this, so nearly all lie in [-1, 1].
INPUT_SCALE = 0.3

# Correctness: up to this many non-empty experts, this many sampled elements each.
CHECK_EXPERTS = 4
CHECK_SAMPLES = 64
# |y - ref| <= REL_TOL * (|ref| + ABS_FRACTION * m), where m = |x| |w| / sqrt(K)
# is the typical size of a dot product of these two vectors (its rms for random
# signs). REL_TOL = 2^-6 covers the bf16 rounding of the output (at most 2^-8
# relative) with room; the m term (2^-8 m) covers f32 accumulation and cuBLAS's split-K
# reductions in bf16 (PyTorch's default allow_bf16_reduced_precision_reduction)
# where the exact value is near zero, while a dropped K-tile of 16 of 2048
# (an error near 0.09 m) still fails.
REL_TOL = 2.0**-6
ABS_FRACTION = 2.0**-2
# The two peers agree elementwise within twice each one's tolerance (two
# roundings to bf16 can land one ulp, up to 2^-7 relative, apart).
AGREE_REL_TOL = 2 * REL_TOL


@dataclass(frozen=True)
class Row:
    """One grouped GEMM of IN.json: E experts, W[g] N x K, counts[g] tokens each."""

    name: str
    E: int
    N: int
    K: int
    counts: tuple[int, ...]

    @property
    def T(self) -> int:
        """Tokens in all: the rows of X and Y."""
        return sum(self.counts)

    @property
    def active(self) -> list[int]:
        """The experts with at least one token, in order."""
        return [g for g, c in enumerate(self.counts) if c > 0]

    @property
    def offsets(self) -> list[int]:
        """The running sum of counts: expert g owns rows offsets[g-1] .. offsets[g]."""
        out: list[int] = []
        total = 0
        for c in self.counts:
            total += c
            out.append(total)
        return out

    @property
    def flops(self) -> int:
        """2 T N K: the useful work (empty experts do none)."""
        return 2 * self.T * self.N * self.K

    @property
    def weight_bytes(self) -> int:
        """The bf16 bytes of W that the experts with tokens read."""
        return len(self.active) * self.N * self.K * 2


@dataclass(frozen=True)
class Plan:
    """A validated IN.json."""

    rows: tuple[Row, ...]
    seed: int
    states: tuple[str, ...]


def _show(v: Any) -> str:
    """The value as JSON (true, not True), cut to 60 characters, for the messages."""
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(v: Any) -> bool:
    """An int that is not a bool (JSON true would otherwise pass as 1)."""
    return isinstance(v, int) and not isinstance(v, bool)


def validate(doc: Any) -> Plan:
    """Checks a parsed IN.json and returns its plan.

    Unknown keys are ignored. Raises InputError naming every problem, e.g.
    'rows[0] "prefill": counts has 127 entries but E is 128'.
    """
    errors: list[str] = []
    if not isinstance(doc, dict):
        raise InputError("the top level must be an object with a 'rows' list")
    seed = doc.get("seed", 1)
    if not _is_int(seed):
        errors.append(f"seed must be an integer, got {_show(seed)}")
    states = doc.get("states", list(STATES))
    if (
        not isinstance(states, list)
        or not states
        or any(s not in STATES for s in states)
        or len(set(states)) != len(states)
    ):
        errors.append(
            f"states must be a non-empty list of distinct {_show(list(STATES))}, "
            f"got {_show(states)}"
        )
    raw_rows = doc.get("rows")
    rows: list[Row] = []
    if not isinstance(raw_rows, list) or not raw_rows:
        errors.append("rows must be a non-empty list")
        raw_rows = []
    names = set()
    for i, r in enumerate(raw_rows):
        where = f"rows[{i}]"
        if not isinstance(r, dict):
            errors.append(f"{where} must be an object")
            continue
        name = r.get("name")
        if not isinstance(name, str) or not name:
            errors.append(f"{where}: name must be a non-empty string, got {_show(name)}")
            name = "?"
        elif name in names:
            errors.append(f'{where}: name "{name}" is used by an earlier row')
        else:
            names.add(name)
        where = f'{where} "{name}"'
        dims: dict[str, int] = {}
        for key in ("E", "N", "K"):
            v: Any = r.get(key)
            if not _is_int(v) or v <= 0:
                errors.append(f"{where}: {key} must be a positive integer, got {_show(v)}")
            else:
                dims[key] = v
        counts = r.get("counts")
        if not isinstance(counts, list):
            errors.append(f"{where}: counts must be a list of E integers, got {_show(counts)}")
            continue
        row_ok = len(dims) == 3
        if "E" in dims and len(counts) != dims["E"]:
            errors.append(f"{where}: counts has {len(counts)} entries but E is {dims['E']}")
            row_ok = False
        for j, c in enumerate(counts):
            if not _is_int(c) or c < 0:
                errors.append(
                    f"{where}: counts[{j}] is {_show(c)}, not a count of tokens (an integer >= 0)"
                )
                row_ok = False
        if row_ok and sum(counts) == 0:
            errors.append(f"{where}: every count is 0 (no tokens)")
            row_ok = False
        if row_ok:
            rows.append(Row(name, dims["E"], dims["N"], dims["K"], tuple(counts)))
    if errors:
        raise InputError("\n".join(errors))
    return Plan(tuple(rows), seed, tuple(states))


def load_plan(path: str) -> Plan:
    """Reads and validates IN.json; raises InputError with the file's name."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e}") from e
    try:
        return validate(doc)
    except InputError as e:
        raise InputError("\n".join(f"{path}: {line}" for line in str(e).split("\n"))) from e


def grouped_mm_notes(row: Row) -> list[str]:
    """Shapes torch._grouped_mm is likely to refuse (16-byte aligned strides)."""
    notes = []
    if row.K % 8:
        notes.append(f"K={row.K} is not a multiple of 8: grouped_mm needs 16-byte row strides")
    if row.N % 8:
        notes.append(f"N={row.N} is not a multiple of 8: grouped_mm pads Y's rows")
    return notes


def describe(plan: Plan) -> str:
    """The planned shapes, one block a row (what --dry prints)."""
    lines = [f"seed {plan.seed}, states {', '.join(plan.states)}, peers {', '.join(PEERS)}"]
    for row in plan.rows:
        active = [row.counts[g] for g in row.active]
        lines.append(
            f"{row.name}: E={row.E} N={row.N} K={row.K} T={row.T} "
            f"active={len(active)}/{row.E} tokens/expert min={min(active)} "
            f"max={max(active)} mean={row.T / len(active):.1f}"
        )
        lines.append(
            f"  X bf16 [{row.T}, {row.K}]  W bf16 [{row.E}, {row.N}, {row.K}]  "
            f"Y bf16 [{row.T}, {row.N}]  offs int32 [{row.E}]"
        )
        lines.append(
            f"  flops {row.flops:.4g}  weight bytes read {row.weight_bytes}  "
            f"loop: {len(active)} torch.mm calls"
        )
        lines.extend(f"  note: {n}" for n in grouped_mm_notes(row))
    return "\n".join(lines)


# ---------------------------------------------------------------- GPU side


@dataclass
class Operands:
    """One row's tensors on the GPU."""

    X: torch.Tensor
    W: torch.Tensor
    offs: torch.Tensor


def make_operands(row: Row, seed: int) -> Operands:
    """X and W: normal values times INPUT_SCALE, in bf16, from a CUDA generator seeded `seed`."""
    import torch

    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    X = (torch.randn(row.T, row.K, generator=gen, device=DEVICE) * INPUT_SCALE).bfloat16()
    W = torch.empty(row.E, row.N, row.K, dtype=torch.bfloat16, device=DEVICE)
    for g in range(row.E):  # one expert at a time: no f32 copy of all of W
        W[g] = (torch.randn(row.N, row.K, generator=gen, device=DEVICE) * INPUT_SCALE).bfloat16()
    offs = torch.tensor(row.offsets, dtype=torch.int32, device=DEVICE)
    return Operands(X, W, offs)


def loop_peer(row: Row, ops: Operands, Y: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The per-expert cuBLAS peer writing into Y; the views are made once, outside the timing."""
    import torch

    calls = []
    for g, (s, e) in enumerate(zip([0] + row.offsets[:-1], row.offsets)):
        if e > s:
            calls.append((ops.X[s:e], ops.W[g].t(), Y[s:e]))
    mm = torch.mm

    def run() -> torch.Tensor:
        for a, b, out in calls:
            mm(a, b, out=out)
        return Y

    return run


def grouped_peer(ops: Operands) -> tuple[Callable[[], torch.Tensor] | None, str]:
    """torch._grouped_mm on the row, or (None, why it is unavailable)."""
    import torch

    fn = getattr(torch, "_grouped_mm", None)
    if fn is None:
        return None, f"torch {torch.__version__} has no torch._grouped_mm (added in 2.8)"
    Wt = ops.W.transpose(-2, -1)

    def run() -> torch.Tensor:
        Y: torch.Tensor = fn(ops.X, Wt, offs=ops.offs, out_dtype=torch.bfloat16)
        return Y

    return run, ""


def sample_check(row: Row, ops: Operands, Y: torch.Tensor, seed: int) -> float:
    """The largest |y - ref| / (|ref| + ABS_FRACTION * m) over the sampled elements.

    Samples CHECK_SAMPLES elements in each of up to CHECK_EXPERTS non-empty
    experts (the first, the last, the fullest, the middle one); ref is the
    float64 dot product of the bf16 inputs. NaN (an element never written)
    gives inf.
    """
    import torch

    active = row.active
    picks: list[int] = []
    for g in (
        active[0],
        active[-1],
        max(active, key=lambda a: row.counts[a]),
        active[len(active) // 2],
    ):
        if g not in picks:
            picks.append(g)
    picks = picks[:CHECK_EXPERTS]
    gen = torch.Generator()
    gen.manual_seed(seed)
    starts = [0] + row.offsets[:-1]
    worst = 0.0
    for g in picks:
        r = starts[g] + torch.randint(0, row.counts[g], (CHECK_SAMPLES,), generator=gen)
        c = torch.randint(0, row.N, (CHECK_SAMPLES,), generator=gen)
        r, c = r.to(DEVICE), c.to(DEVICE)
        x = ops.X[r].double()
        w = ops.W[g][c].double()
        ref = (x * w).sum(dim=1)
        m = x.norm(dim=1) * w.norm(dim=1) / math.sqrt(row.K)
        y = Y[r, c].double()
        err = ((y - ref).abs() / (ref.abs() + ABS_FRACTION * m)).nan_to_num(math.inf)
        worst = max(worst, float(err.max()))
    return worst


def agreement(row: Row, ops: Operands, Y1: torch.Tensor, Y2: torch.Tensor) -> float:
    """The largest |y1 - y2| / (max(|y1|, |y2|) + 2 ABS_FRACTION m) over all of Y (inf on NaN)."""
    import torch

    worst = 0.0
    starts = [0] + row.offsets[:-1]
    for g in row.active:
        s, e = starts[g], row.offsets[g]
        a, b = Y1[s:e].float(), Y2[s:e].float()
        m = ops.X[s:e].float().norm(dim=1)[:, None] * ops.W[g].float().norm(dim=1)[None, :]
        m /= math.sqrt(row.K)
        d = (a - b).abs() / (torch.maximum(a.abs(), b.abs()) + 2 * ABS_FRACTION * m)
        worst = max(worst, float(d.nan_to_num(math.inf).max()))
    return worst


def time_calls(fn: Callable[[], Any], warmup: int, iters: int) -> list[float]:
    """`warmup` untimed calls, a synchronize, then `iters` calls each between two events (ms)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(iters)
    ]
    for start, end in events:
        start.record()
        fn()
        end.record()
    events[-1][1].synchronize()
    return [start.elapsed_time(end) for start, end in events]


def median(xs: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count), as harness/timing.ts."""
    s = sorted(xs)
    n = len(s)
    return s[(n - 1) // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def rest() -> None:
    """BURST_REST_S with the GPU idle."""
    import torch

    torch.cuda.synchronize()
    time.sleep(BURST_REST_S)


def time_burst(fn: Callable[[], Any], est_ms: float) -> tuple[float, list[float]]:
    """BURST_ROUNDS rounds, each after a rest; the median of all calls and each round's (ms)."""
    iters = max(BURST_MIN_ITERS, min(BURST_MAX_ITERS, int(BURST_WINDOW_MS // est_ms)))
    warm = 1 if est_ms > 5 else 2
    every: list[float] = []
    rounds: list[float] = []
    for _ in range(BURST_ROUNDS):
        rest()
        ms = time_calls(fn, warm, iters)
        every.extend(ms)
        rounds.append(median(ms))
    return median(every), rounds


def time_sustained(fn: Callable[[], Any], est_ms: float) -> float:
    """SUSTAINED_LOAD_S of back-to-back calls, then the median of SUSTAINED_ITERS (ms).

    The load is ceil(load / est) calls as in gpu_measure.ts, cut short once
    SUSTAINED_LOAD_S of wall time has passed (where Python's launches, not the
    GPU, set the pace, the count alone would overshoot).
    """
    n = math.ceil(SUSTAINED_LOAD_S * 1e3 / est_ms)
    t0 = time.perf_counter()
    for i in range(n):
        if i % 32 == 0 and time.perf_counter() - t0 > SUSTAINED_LOAD_S:
            break
        fn()
    return median(time_calls(fn, 0, SUSTAINED_ITERS))


def measure(fn: Callable[[], Any], states: Sequence[str]) -> dict[str, Any]:
    """Burst and/or sustained timings of `fn`, after an estimate from a couple of calls."""
    est = max(median(time_calls(fn, 1, 2)), 1e-3)
    out: dict[str, Any] = {"burst_ms": None, "burst_rounds": None, "sustained_ms": None}
    if "burst" in states:
        out["burst_ms"], out["burst_rounds"] = time_burst(fn, est)
    if "sustained" in states:
        out["sustained_ms"] = time_sustained(fn, est)
    return out


def first_run(
    row: Row, ops: Operands, fn: Callable[[], torch.Tensor], seed: int
) -> tuple[torch.Tensor, dict[str, Any]]:
    """Runs a peer once on poisoned output; returns Y and its {"ok", "max_rel_err"}.

    `ok` also needs every element of Y written (no NaN left).
    """
    import torch

    Y = fn()
    torch.cuda.synchronize()
    err = sample_check(row, ops, Y, seed)
    unwritten = bool(torch.isnan(Y).any())
    return Y, {"ok": err <= REL_TOL and not unwritten, "max_rel_err": err}


def run_row(row: Row, index: int, plan: Plan) -> dict[str, Any]:
    """Checks both peers on one row, then times them; returns its OUT.json entry."""
    import torch

    seed = plan.seed + index  # a row's data does not depend on the rows before it
    ops = make_operands(row, seed)
    result: dict[str, Any] = {
        "name": row.name,
        "E": row.E,
        "N": row.N,
        "K": row.K,
        "T": row.T,
        "active_experts": len(row.active),
        "seed": seed,
        "flops": row.flops,
        "weight_bytes": row.weight_bytes,
    }

    # Correctness, both peers before any timing.
    Y_loop = torch.full((row.T, row.N), math.nan, dtype=torch.bfloat16, device=DEVICE)
    loop = loop_peer(row, ops, Y_loop)
    Y_loop, result["loop"] = first_run(row, ops, loop, seed)
    grouped, why = grouped_peer(ops)
    result["grouped_mm"] = {"unavailable": why}
    result["peers_agree"] = None
    result["peers_max_rel_diff"] = None
    if grouped is not None:
        # Its output is allocated per call: poison the block the caching
        # allocator will most likely hand it (same bytes, same stream) so stale
        # values cannot pass for results; the full comparison with Y_loop
        # (alive, so never that block) catches what this misses.
        padded_n = -(-row.N // 8) * 8  # its rows are padded to 16 bytes
        poison = torch.full((row.T, padded_n), math.nan, dtype=torch.bfloat16, device=DEVICE)
        del poison
        try:
            Y_grouped, result["grouped_mm"] = first_run(row, ops, grouped, seed)
        except (RuntimeError, TypeError, ValueError, NotImplementedError) as e:
            grouped = None
            reason = f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
            result["grouped_mm"] = {"unavailable": reason}
        else:
            diff = agreement(row, ops, Y_loop, Y_grouped)
            result["peers_agree"] = diff <= AGREE_REL_TOL
            result["peers_max_rel_diff"] = diff
            del Y_grouped

    # Timing, back to back.
    result["loop"].update(measure(loop, plan.states))
    if grouped is not None:
        result["grouped_mm"].update(measure(grouped, plan.states))
    del ops, Y_loop, loop, grouped
    torch.cuda.empty_cache()
    return result


def finite(v: Any) -> Any:
    """The value with every non-finite float made None (Deno's JSON.parse refuses NaN)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v


def write_json(path: str, doc: dict[str, Any]) -> None:
    """Writes doc as strict JSON (no NaN) to path."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(finite(doc), f, indent=1, allow_nan=False)
        f.write("\n")


def fmt_ms(v: float | None) -> str:
    """A time in ms for the table, '-' where not measured."""
    return "-" if v is None else f"{v:.4f}"


def table(doc: dict[str, Any]) -> str:
    """The human-readable summary printed to stdout."""
    head = (
        f"{'row':24s} {'peer':10s} {'burst ms':>10s} {'sust. ms':>10s} "
        f"{'TFLOP/s':>8s} {'rel err':>9s} ok"
    )
    lines = [f"torch {doc['torch']} (CUDA {doc['cuda']}) on {doc['device']}", head, "-" * len(head)]
    for r in doc["rows"]:
        for peer in PEERS:
            p = r[peer]
            if "unavailable" in p:
                lines.append(f"{r['name'][:24]:24s} {peer:10s} unavailable: {p['unavailable']}")
                continue
            best = p["sustained_ms"] if p["sustained_ms"] is not None else p["burst_ms"]
            tflops = r["flops"] / (best * 1e-3) / 1e12 if best else math.nan
            lines.append(
                f"{r['name'][:24]:24s} {peer:10s} {fmt_ms(p['burst_ms']):>10s} "
                f"{fmt_ms(p['sustained_ms']):>10s} {tflops:8.1f} {p['max_rel_err']:9.2e} "
                f"{'yes' if p['ok'] else 'NO'}"
            )
        if r["peers_agree"] is not None:
            lines.append(
                f"{'':24s} peers agree: {'yes' if r['peers_agree'] else 'NO'} "
                f"(max rel diff {r['peers_max_rel_diff']:.2e})"
            )
    return "\n".join(lines)


def run_all(plan: Plan, out_path: str) -> int:
    """Runs every row on the GPU, writing OUT.json after each; returns the exit status."""
    import torch  # cli (_runner.py) has checked that it imports and sees a device

    doc: dict[str, Any] = {
        **environment(),
        "bf16_reduced_precision_reduction": bool(
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        ),
        "seed": plan.seed,
        "states": list(plan.states),
        "rows": [],
    }
    for i, row in enumerate(plan.rows):
        print(f"[{i + 1}/{len(plan.rows)}] {row.name}: T={row.T}", file=sys.stderr, flush=True)
        doc["rows"].append(run_row(row, i, plan))
        write_json(out_path, doc)
    print(table(doc))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="PyTorch peers (per-expert torch.mm, torch._grouped_mm) "
        "of gemmc's grouped-GEMM benchmark.",
    )
    parser.add_argument("input", metavar="IN.json", help="the rows to time")
    parser.add_argument("output", metavar="OUT.json", help="where the results go")
    return cli(
        parser,
        argv,
        lambda args: load_plan(args.input),
        describe,
        run_all,
        dry_help="validate IN.json and print the planned shapes, without torch; writes nothing",
    )


if __name__ == "__main__":
    sys.exit(main())
