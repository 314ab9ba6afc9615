"""The ``tslab`` command: list the catalog, check designs, open the tutorials.

Exit codes of ``tslab check``: 0 safe, 1 unsafe or not proven, 2 invalid input (one-line message, no traceback).
Output cut short by a closed pipe (``tslab check NAME --json | head -1``) ends quietly with exit 141 (128 + SIGPIPE),
as Unix tools killed by SIGPIPE do.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .capture.cli import add_arguments as add_capture_arguments
from .design_loading import load_design
from .errors import TslabError, cli_message

EXIT_SAFE, EXIT_UNSAFE, EXIT_INVALID = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # 128 + SIGPIPE, what a shell reports for a tool killed by a closed pipe


def _parse_trips(items: list[str] | None, n_text: str | None) -> tuple[dict[str, str] | None, Any]:
    """``--trips LoadTask=n --trips MmaTask=n-1 --n 1..8`` as ``check``'s ``trips`` and ``n``."""
    trips = None
    if items:
        trips = {}
        for item in items:
            task, sep, formula = item.partition("=")
            if not sep or not task:
                raise TslabError(f"--trips {item!r}: expected TASK=FORMULA, e.g. --trips MmaTask=n-1")
            trips[task.strip()] = formula.strip()
    if n_text is None:
        return trips, None
    first, dots, last = n_text.partition("..")
    try:
        if dots:
            return trips, range(int(first), int(last) + 1)
        return trips, [int(v) for v in n_text.split(",")]
    except ValueError:
        raise TslabError(f"--n {n_text!r}: expected a range 1..8, a list 1,2,4 or one int") from None


def _cmd_list(_: argparse.Namespace) -> int:
    from .kernels import catalog

    for info in catalog():
        print(info)
    return EXIT_SAFE


def _cmd_check(args: argparse.Namespace) -> int:
    from .core.check import check
    from .gpu.device import smem_capacity

    trips, n = _parse_trips(args.trips, args.n)
    design = load_design(args.design, args.param or [], args=args.arg, arch=args.arch, knobs=args.knob,
                         frontend=args.frontend, options=args.options)
    verdict = check(design, max_states=args.max_states, smem_capacity=args.smem_capacity or smem_capacity(),
                    strategy=args.strategy, trips=trips, n=n)
    if args.json:
        summary = verdict.summary()
        if args.trace and verdict.trace is not None:
            summary["trace"] = verdict.trace.to_dict()
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(verdict.text())
        print(f"  checked in {verdict.seconds:.3f} s")
        if args.trace and verdict.trace is not None:
            print(verdict.trace.text())
    if any(e.kind == "input" for e in verdict.errors):
        return EXIT_INVALID
    return EXIT_SAFE if verdict.ok else EXIT_UNSAFE


def _cmd_lab(args: argparse.Namespace) -> int:
    from .lab import DEFAULT_DIR, copy_tutorials, lab_command

    if importlib.util.find_spec("jupyterlab") is None:
        raise TslabError("JupyterLab is not installed beside tslab; run: pip install 'tslab[lab]'")
    folder = Path(args.dir or DEFAULT_DIR)
    copied = copy_tutorials(folder)
    if copied:
        print(f"copied {len(copied)} tutorial files into {folder}", flush=True)
    cmd = lab_command(folder, args.extra)
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, env=os.environ.copy())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tslab", description="Design and check CUTLASS Task Scheduling kernels.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the catalog of kernel designs").set_defaults(func=_cmd_list)
    chk = sub.add_parser("check", help="check a design with TS (exit 0 safe, 1 unsafe, 2 invalid input)")
    chk.add_argument("design", help="catalog name, a design .json, design JSON text, or kernel.py::host_fn")
    chk.add_argument("--param", action="append", metavar="KEY=VALUE", help="kernel parameter (repeatable)")
    chk.add_argument("--json", action="store_true", help="print the verdict as JSON")
    chk.add_argument("--trace", action="store_true", help="print the counterexample interleaving step by step")
    chk.add_argument("--max-states", type=int, default=1_000_000, help="checker state bound (default 1000000)")
    chk.add_argument("--strategy", choices=("auto", "reduced", "ts"), default="auto",
                     help="the search over interleavings: auto (the reduced search decides, TS's own runs beside it "
                          "while small; default), reduced, or ts (TS's breadth-first search, exactly)")
    chk.add_argument("--trips", action="append", metavar="TASK=FORMULA",
                     help="check a runtime loop bound with this trip count (a formula in n; repeatable), e.g. "
                          "--trips LoadTask=n --trips MmaTask=n-1 --n 1..8")
    chk.add_argument("--n", metavar="N", help="the n the --trips formulas are checked at: 1..8, 1,2,4 or 4")
    chk.add_argument("--smem-capacity", type=int, default=None, metavar="BYTES",
                     help="SMEM per block to check against (default: this GPU's limit, else TS's 232448)")
    add_capture_arguments(chk)
    chk.set_defaults(func=_cmd_check)
    from .gpu.cli import add_export_arguments, export_command

    exp = sub.add_parser("export", help="compile a design and write it as an importable Python package")
    add_export_arguments(exp)
    exp.set_defaults(func=export_command)
    from .sweep.cli import add_parser as add_sweep_parser

    add_sweep_parser(sub)
    lab = sub.add_parser("lab", help="open the tutorials in JupyterLab",
                         epilog="Other options (--no-browser, --port 8890, --ServerApp.token=T, ...) are passed on "
                                "to JupyterLab; --allow-root is added when run as root.")
    lab.add_argument("--dir", help="folder the tutorials are copied into and opened from (default: ./tslab-tutorials;"
                     " files already there are kept)")
    lab.set_defaults(func=_cmd_lab)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse ``argv``; options ``tslab lab`` does not know are kept in ``extra`` for JupyterLab."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "lab":
        args.extra = unknown
    return args


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail on the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except TslabError as exc:
        print(f"tslab: {cli_message(exc)}", file=sys.stderr)
        return EXIT_INVALID
    except (OSError, ValueError) as exc:
        print(f"tslab: {cli_message(exc)}", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
