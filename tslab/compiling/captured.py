"""Compile a captured design as edited: its knobs in the kernel's code, its edits at TaskManager construction.

The compile runs the kernel's own host function (re-executed with the design's knob values) through
``cute.compile`` in a worker process (:func:`tslab.capture.worker.run_in_child`), with the design's pipeline,
schedule and alias edits applied to the objects the kernel hands to ``TaskManager``
(:func:`tslab.core.construction.edits_at_construction`), so the PTX is the kernel the verdict describes.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from ..capture.outcome import failure
from ..capture.recorder import compile_call
from ..capture.worker import run_in_child
from ..child import error_record
from ..core.construction import edits_at_construction
from ..errors import TslabError


def _compile(host_fn: Any, args: tuple, kwargs: dict, arch: str, edits: Any, frontend: Any,
             options: str) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tslab-compile-") as scratch:
        keep = f"--keep-ptx --keep-cubin remarks{{ptx}} --dump-dir {scratch} {options}".strip()
        try:
            with edits_at_construction(edits):
                fn = compile_call(host_fn, args, kwargs, arch, frontend=frontend, options=keep)()
        except BaseException as exc:
            return {"error": error_record(exc)}
    return {"ptx": fn.artifacts.PTX, "cubin": bytes(fn.artifacts.CUBIN or b""),
            "seconds": time.perf_counter() - started}


def compile_captured(design: Any, arch: str | None = None, *, timeout: float = 600.0) -> dict[str, Any]:
    """PTX, cubin, seconds and the compiler's log of a captured design compiled for ``arch`` (default: the
    arch it was captured for)."""
    source = design.source
    if source is None:
        raise TslabError(f"design '{design.kernel}': is not a captured kernel; compile catalog designs with "
                         "tslab.gpu.compile")
    arch = arch or source.arch
    host_fn, kwargs = source._traced_callable()
    args = source._args_for(kwargs)
    edits = design._edits()
    outcome = run_in_child(_compile, host_fn, args, kwargs, arch, edits, source.frontend, source.options,
                           timeout=timeout)
    detail = failure(outcome)
    if detail is not None:
        raise TslabError(f"compile of captured kernel '{design.kernel}' for {arch}: {detail}")
    return {**outcome.value, "arch": arch, "log": outcome.stdout + outcome.stderr}
