"""Capturing what TS prints, per thread, without taking ``sys.stdout`` from anyone else.

TS reports by ``print()``. ``contextlib.redirect_stdout`` swaps the process-wide stream: a check running on a
widget's background thread would swallow the notebook's own output meanwhile, and two overlapping checks could
leave ``sys.stdout`` pointing at a dead buffer. Here a small router stands in for ``sys.stdout`` while any
capture is active and sends each write to the buffer of the thread that made it, or to the real stream.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Iterator
from typing import Any

_local = threading.local()
_lock = threading.Lock()
_active = 0


class _ThreadRouter:
    """A stand-in for ``sys.stdout`` that routes writes by thread."""

    def __init__(self, base: Any) -> None:
        self._base = base

    def _target(self) -> Any:
        return getattr(_local, "buffer", None) or self._base

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


@contextlib.contextmanager
def captured_stdout() -> Iterator[io.StringIO]:
    """Collect everything this thread prints inside the block; other threads print as before."""
    global _active
    buffer = io.StringIO()
    with _lock:
        if not isinstance(sys.stdout, _ThreadRouter):
            sys.stdout = _ThreadRouter(sys.stdout)
        _active += 1
    previous = getattr(_local, "buffer", None)
    _local.buffer = buffer
    try:
        yield buffer
    finally:
        _local.buffer = previous
        with _lock:
            _active -= 1
            if _active == 0 and isinstance(sys.stdout, _ThreadRouter):
                sys.stdout = sys.stdout._base
