"""The command line shared by the PyTorch peer scripts (grouped_peers.py, sparse_peers.py).

Each script builds its argparse parser (prog = its name) and hands it to `cli`
with how to read its plan, what --dry prints and how to run it:

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _runner import InputError, cli

    def main(argv=None):
        return cli(parser, argv, load, dry, run, dry_help="...")

`cli` adds --dry (last), parses, reads the plan (an InputError is printed one
problem a line, "PROG: problem", exit 2), prints the plan's --dry text (exit 0,
torch not imported) or checks that torch and a CUDA device are there (exit 3,
saying why, when not) and returns what `run(plan, args.output)` returns.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Callable, TypeVar

P = TypeVar("P")


class InputError(Exception):
    """Bad options or input; the message lists every problem, one a line."""


def name_list(text: str, allowed: Sequence[str], what: str, errors: list[str]) -> tuple[str, ...]:
    """A comma-separated list of distinct names from `allowed` (option `--what`); a bad one
    appends its problem to `errors`."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if not items or bad or len(set(items)) != len(items):
        errors.append(
            f"--{what} must be a comma-separated list of distinct {', '.join(allowed)}; "
            f"got {text!r}"
        )
    return tuple(items)


def environment() -> dict[str, str | None]:
    """The versions and the device a record names: torch's, its CUDA's, the GPU's."""
    import torch

    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(),
    }


def have_cuda_torch(prog: str) -> bool:
    """Whether torch imports and sees a CUDA device; when not, says why on stderr."""
    try:
        import torch
    except ImportError as e:
        print(f"{prog}: torch is not installed ({e})", file=sys.stderr)
        return False
    if not torch.cuda.is_available():
        print(f"{prog}: no CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return False
    return True


def cli(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    load: Callable[[argparse.Namespace], P],
    dry: Callable[[P], str],
    run: Callable[[P, str], int],
    dry_help: str = "validate the options and print the plan and planned records, without torch; "
    "writes nothing",
) -> int:
    """Parses the command line, then dry-runs or runs the plan; returns the exit status.

    `load` reads the plan from the parsed options (raising InputError), `dry`
    gives the text --dry prints, `run` runs the plan on the GPU with the
    output path (`args.output`) and returns the exit status.
    """
    parser.add_argument("--dry", action="store_true", help=dry_help)
    args = parser.parse_args(argv)
    try:
        plan = load(args)
    except InputError as e:
        for line in str(e).split("\n"):
            print(f"{parser.prog}: {line}", file=sys.stderr)
        return 2
    if args.dry:
        print(dry(plan))
        return 0
    if not have_cuda_torch(parser.prog):
        return 3
    return run(plan, args.output)
