"""Background re-checking: debounced, newest design wins, progress ticks for long checks.

A check runs on one worker thread so the widget (kernel) thread stays responsive. Edits that arrive while a
check is waiting out the debounce replace it; an edit that arrives while a check runs supersedes it: the
stale result is dropped and the newest design is checked next. ``wait()`` blocks until nothing is pending.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..core.check import check
from ..core.design import Design
from ..core.verdict import Verdict


class Rechecker:
    """Runs ``check_fn(design)`` off the calling thread and hands the newest result to ``on_result``."""

    def __init__(self, on_result: Callable[[Design, Verdict], None], *,
                 on_progress: Callable[[float], None] | None = None, debounce: float = 0.15,
                 progress_every: float = 0.25, check_fn: Callable[[Design], Verdict] = check) -> None:
        self._on_result, self._on_progress, self._check = on_result, on_progress, check_fn
        self._debounce, self._every = debounce, progress_every
        self._cond = threading.Condition()
        self._deliver = threading.Lock()  # a progress tick never lands after the result it precedes
        self._pending: tuple[int, Design, float] | None = None
        self._running: int | None = None
        self._latest = 0
        self._closed = False
        self.superseded = 0
        self.last_error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="tslab-recheck", daemon=True)
        self._thread.start()

    def submit(self, design: Design) -> int:
        """Queue ``design`` for checking; returns its generation number."""
        with self._cond:
            self._latest += 1
            self._pending = (self._latest, design, time.monotonic())
            self._cond.notify_all()
            return self._latest

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._pending is not None or self._running is not None

    def in_worker(self) -> bool:
        return threading.current_thread() is self._thread

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the newest submitted design is checked and delivered; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending is not None or self._running is not None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        """Stop the worker after the check it is running (pending designs are dropped)."""
        with self._cond:
            self._closed, self._pending = True, None
            self._cond.notify_all()

    def _next(self) -> tuple[int, Design] | None:
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._pending is None:
                    self._cond.wait()
                    continue
                gen, design, at = self._pending
                delay = at + self._debounce - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                self._pending, self._running = None, gen
                return gen, design

    def _loop(self) -> None:
        while (job := self._next()) is not None:
            gen, design = job
            done = threading.Event()
            if self._on_progress is not None:
                threading.Thread(target=self._tick, args=(done,), daemon=True).start()
            try:
                verdict = self._check(design)
                with self._cond:
                    current = gen == self._latest
                with self._deliver:
                    done.set()
                    if current:
                        self._on_result(design, verdict)
                    else:
                        self.superseded += 1
            except Exception as exc:  # a view that fails to redraw must not stop later checks
                self.last_error = exc
            finally:
                done.set()
                with self._cond:
                    self._running = None
                    self._cond.notify_all()

    def _tick(self, done: threading.Event) -> None:
        started = time.monotonic()
        while not done.wait(self._every):
            with self._deliver:
                if done.is_set():
                    return
                try:
                    self._on_progress(time.monotonic() - started)  # type: ignore[misc]
                except Exception as exc:
                    self.last_error = exc
                    return
