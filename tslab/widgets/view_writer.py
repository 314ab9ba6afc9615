"""One writer for a widget's views: background threads ask for a redraw, the kernel's own thread does it.

Trait changes made on a non-kernel thread reach the front end differently across ipykernel versions (7.0.x
sends them with no parent request, so nbclient drops them and a saved notebook keeps a stale view). So a
background thread never writes a trait: it changes the model, then calls ``request()``; the redraw runs on the
thread that built the widget (through its asyncio loop when that thread runs one, as a kernel does), always
draws the newest model state, and therefore cannot land out of order. ``flush()`` redraws at once on the
owning thread (used by blocking waits, which keep the loop from running).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable


class ViewWriter:
    """Runs ``redraw()`` on the thread that created this writer; requests coalesce, the newest state wins."""

    def __init__(self, redraw: Callable[[], None]) -> None:
        self._redraw = redraw
        self._owner = threading.current_thread()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # plain Python, no kernel: whoever asks draws (serialised)
            self._loop = None
        self._context = contextvars.copy_context()
        self._lock = threading.RLock()
        self._wanted = False

    def on_owner(self) -> bool:
        return threading.current_thread() is self._owner

    def request(self) -> None:
        """Ask for a redraw: now on the owning thread (or without a loop), else soon on the owner's loop."""
        with self._lock:
            self._wanted = True
        if self.on_owner() or self._loop is None or self._loop.is_closed():
            self.flush()
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the next flush on the owner draws
            self._loop.call_soon_threadsafe(self.flush, context=self._context)

    def flush(self) -> None:
        """Redraw if a redraw was requested since the last one (from any thread when there is no loop)."""
        if self._loop is not None and not self.on_owner() and not self._loop.is_closed():
            self.request()
            return
        with self._lock:
            if not self._wanted:
                return
            self._wanted = False
            self._redraw()
