"""A design named on the command line: a catalog name with ``--param``s, a ``.json`` file, inline design JSON, or
a ``kernel.py::host_fn`` capture with its ``--arg``s and ``--knob``s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import TslabError


def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise TslabError(f"--param {text!r}: expected KEY=VALUE, e.g. --param stages=2")
    key, raw = text.split("=", 1)
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def load_design(target: str, params: list[str], *, args: list[str] = (), arch: str = "sm_90a",
                knobs: list[str] = (), frontend: str | None = None, options: str = "") -> Any:
    """A design from a catalog name, a ``.json`` file, inline JSON text or a ``kernel.py::host_fn`` capture.

    ``knobs`` (``NAME=VALUE``) re-trace a captured kernel with those knob values; ``frontend`` and ``options``
    compile it as its authors do.
    """
    from .capture.cli import with_knobs

    return with_knobs(_load_design(target, params, args=args, arch=arch, frontend=frontend, options=options), knobs)


def _load_design(target: str, params: list[str], *, args: list[str], arch: str, frontend: str | None,
                 options: str) -> Any:
    from .capture.cli import capture_target, is_target
    from .core.design import Design
    from .kernels import NAMES

    if is_target(target):
        return capture_target(target, list(args), arch=arch, frontend=frontend, options=options)
    if frontend is not None or options:
        given = "--frontend" if frontend is not None else "--options"
        raise TslabError(f"design '{target}': {given} applies to a kernel.py::host_fn target, whose compile tslab "
                         f"traces; drop {given} for a catalog name or a design JSON (a saved captured design "
                         "re-opens with its own frontend and options)")
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
