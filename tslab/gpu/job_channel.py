"""Inside a worker process: how a job (``"module:function"`` and keyword arguments) is called and answered, and the
pipe to the parent, through which a job reports its phases and partial results."""

from __future__ import annotations

import importlib
import traceback
from typing import Any

_conn: Any = None  # set by the worker before it runs a job; None in any other process


def attach(conn: Any) -> None:
    """Inside a worker: send this job's phases and partial results over ``conn``."""
    global _conn
    _conn = conn


def enter_phase(phase: str, timeout: float) -> None:
    """Inside a job: tell the parent the job entered ``phase``, which may last ``timeout`` seconds from now."""
    if _conn is not None:
        _conn.send(("phase", phase, float(timeout)))


def report_partial(item: Any) -> None:
    """Inside a job: hand the parent one finished piece of work (e.g. a timed row), kept if the job dies later."""
    if _conn is not None:
        _conn.send(("partial", item))


def call(job: str, kwargs: dict[str, Any]) -> Any:
    """``module:function(**kwargs)``."""
    module, name = job.split(":")
    return getattr(importlib.import_module(module), name)(**kwargs)


def answer(job: str, kwargs: dict[str, Any]) -> tuple:
    """The job's reply to its parent: ``("ok", result)``, or ``("error", type, message, traceback)`` for everything
    it raises (the parent decides what it means)."""
    try:
        return ("ok", call(job, kwargs))
    except BaseException as exc:
        return ("error", type(exc).__name__, " ".join(str(exc).split())[:4000], traceback.format_exc())


def send(conn: Any, reply: tuple) -> None:
    """Send ``reply``; a result that cannot be pickled is sent as an error saying so."""
    try:
        conn.send(reply)
    except Exception as exc:
        conn.send(("error", type(exc).__name__, f"the job's result cannot be sent back: {exc}", ""))
