"""``tslab sweep DESIGN --space NAME=V1,V2 ...``: the sweep subcommand, for the main CLI to register.

Exit codes: 0 the sweep finished (pruned and failed points are rows, not errors), 2 invalid input,
3 interrupted (finished points are kept in ``--store``; run the same command again to resume).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .errors import SweepInterrupted

EXIT_INTERRUPTED = 3
#: Columns the command prints (those the sweep filled in).
SHOWN = ("status", "reason", "smem_bytes", "states", "registers", "spills", "compile_s", "median_us", "gbps",
         "tflops", "ratio")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _dimension(text: str) -> tuple[str, list[Any]]:
    name, sep, values = text.partition("=")
    if not sep or not name or not values:
        raise argparse.ArgumentTypeError(f"--space {text!r}: write it as NAME=V1,V2,... e.g. stages=2,3,4")
    return name, [_value(v) for v in values.split(",")]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``tslab sweep`` to the main CLI's subparsers."""
    p = subparsers.add_parser("sweep", help="sweep a design space: TS's checks prune, then compile and time")
    p.add_argument("design", help="catalog name, a design .json, or design JSON text")
    p.add_argument("--space", type=_dimension, action="append", required=True, metavar="NAME=V1,V2",
                   help="a dimension: kernel param, 'resource.field' or knob with its values (repeatable)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a fixed kernel parameter of the base design (repeatable)")
    p.add_argument("--measure", choices=("check", "compile", "bench"), default="bench",
                   help="last stage to run (default bench: needs a GPU; compile works without one)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: the CPU count)")
    p.add_argument("--executor", default=None,
                   help="'pool' (default), 'serial', 'ray', or a ray.init address such as ray://host:10001")
    p.add_argument("--store", default=None, metavar="FILE.jsonl", help="record each finished point; resume from it")
    p.add_argument("--csv", default=None, metavar="FILE", help="write the table as CSV")
    p.add_argument("--parquet", default=None, metavar="FILE", help="write the table as parquet (needs pyarrow)")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS", help="stop starting points after this")
    p.add_argument("--arch", default=None, help="arch to compile for (default: this GPU's, else sm_90a)")
    p.add_argument("--max-states", type=int, default=1_000_000, help="checker state bound per point")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=sweep_command)
    return p


def _require_gpu_for_bench() -> None:
    """``--measure bench`` (the default) without a GPU: say which measures work here."""
    from ..errors import TslabError
    from ..gpu.device import device

    if device() is None:
        raise TslabError("sweep --measure bench (the default) runs and times each point: no NVIDIA GPU or driver on "
                         "this machine; pass --measure compile (PTX, registers and spills of each point, no GPU "
                         "needed) or --measure check (TS's checks only)")


def sweep_command(args: argparse.Namespace) -> int:
    """Run ``tslab sweep`` with parsed ``args``; prints the table and a summary, returns the exit code."""
    import sys

    from ..design_loading import load_design
    from .run import sweep

    design = load_design(args.design, args.param)
    if args.measure == "bench":
        _require_gpu_for_bench()
    executor = args.executor if args.executor not in (None, "pool") else args.jobs
    try:
        result = sweep(design, dict(args.space), measure=args.measure, executor=executor, store=args.store,
                       budget_s=args.budget, arch=args.arch, max_states=args.max_states, quiet=args.quiet)
    except SweepInterrupted as exc:
        print(f"tslab: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    table = result.table
    print(table[[c for c in [*result.names, *SHOWN] if c in table]].to_string(index=False))
    if args.quiet:
        print(result.summary())
    if args.csv:
        result.to_csv(args.csv)
    if args.parquet:
        result.to_parquet(args.parquet)
    return 0
