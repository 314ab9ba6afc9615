"""The ``tslab`` command: list the catalog, check designs, open the tutorials.

Exit codes of ``tslab check``: 0 safe, 1 unsafe or not proven, 2 invalid input (one-line message, no traceback).
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
from .errors import TslabError

EXIT_SAFE, EXIT_UNSAFE, EXIT_INVALID = 0, 1, 2


def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise TslabError(f"--param {text!r}: expected KEY=VALUE, e.g. --param stages=2")
    key, raw = text.split("=", 1)
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def load_design(target: str, params: list[str], *, args: list[str] = (), arch: str = "sm_90a",
                knobs: list[str] = ()) -> Any:
    """A design from a catalog name, a ``.json`` file, inline JSON text or a ``kernel.py::host_fn`` capture.

    ``knobs`` (``NAME=VALUE``) re-trace a captured kernel with those knob values.
    """
    from .capture.cli import with_knobs

    return with_knobs(_load_design(target, params, args=args, arch=arch), knobs)


def _load_design(target: str, params: list[str], *, args: list[str], arch: str) -> Any:
    from .capture.cli import capture_target, is_target
    from .core.design import Design
    from .kernels import NAMES

    if is_target(target):
        return capture_target(target, list(args), arch=arch)
    values = dict(_parse_param(p) for p in params)
    if target in NAMES:
        return Design(target, values)
    path = Path(target)
    text = path.read_text() if path.suffix == ".json" and path.is_file() else target
    if not text.lstrip().startswith("{"):
        from .errors import DesignError, did_you_mean

        raise DesignError("input", f"design '{target}'", "is neither a catalog name nor design JSON",
                          did_you_mean(target, NAMES))
    design = Design.from_json(text)
    return design.with_params(**values) if values else design


def _cmd_list(_: argparse.Namespace) -> int:
    from .kernels import catalog

    for info in catalog():
        print(info)
    return EXIT_SAFE


def _cmd_check(args: argparse.Namespace) -> int:
    from .core.check import check
    from .gpu.device import smem_capacity

    design = load_design(args.design, args.param or [], args=args.arg, arch=args.arch, knobs=args.knob)
    verdict = check(design, max_states=args.max_states, smem_capacity=args.smem_capacity or smem_capacity())
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
    notebooks = Path(args.dir) if args.dir else Path(__file__).resolve().parent.parent / "notebooks"
    if not notebooks.is_dir():
        raise TslabError(f"tutorials folder {str(notebooks)!r} not found; pass --dir PATH to the notebooks")
    if importlib.util.find_spec("jupyterlab") is None:
        raise TslabError("JupyterLab is not installed beside tslab; run: pip install 'tslab[lab]'")
    cmd = [sys.executable, "-m", "jupyter", "lab", str(notebooks), *args.extra]
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
    lab = sub.add_parser("lab", help="open the tutorials in JupyterLab")
    lab.add_argument("--dir", help="folder of notebooks (default: the repository's notebooks/)")
    lab.add_argument("extra", nargs=argparse.REMAINDER, help="arguments passed on to jupyter lab")
    lab.set_defaults(func=_cmd_lab)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TslabError as exc:
        print(f"tslab: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_INVALID
    except (OSError, ValueError) as exc:
        print(f"tslab: {exc}", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
