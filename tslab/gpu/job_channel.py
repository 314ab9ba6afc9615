"""Inside a worker process: the pipe to the parent, through which a job reports its phases and partial results."""

from __future__ import annotations

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
