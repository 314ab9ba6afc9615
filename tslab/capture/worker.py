"""Run one function in a child process with its output captured, so that a crash stays there.

A compile trace can abort the whole process (an MLIR assertion raises SIGABRT). The child is forked from a fork
server (:mod:`tslab.capture.server`: a fresh single-threaded process, so the fork cannot deadlock on a lock
another thread of the caller held, as forking a Jupyter kernel could), with the function and its arguments sent
over (:mod:`tslab.capture.portable`: by reference, or by value with the text of the notebook cells it was typed
into). A function that cannot be copied at all (it holds a lock or an open file) runs in a fork of the caller,
which inherits everything the caller defined. Either child sends back a pickled value and its stdout/stderr, and
always ends with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from ..child import die_with_parent, error_record
from ..errors import TslabError
from . import portable
from .in_child import run_here
from .outcome import ChildOutcome


def run_in_child(fn: Callable[..., Any], *args: Any, timeout: float = 600.0) -> ChildOutcome:
    """Run ``fn(*args)`` in a child process; its return value must pickle. Never raises for what the child does.

    ``fn`` and ``args`` are sent to a child of the fork server (see :mod:`tslab.capture.portable`); what cannot be
    copied there runs in a fork of this process instead (see the module docstring).
    """
    if not hasattr(os, "fork"):
        raise TslabError("capture: needs os.fork (Linux or macOS) to isolate the compile trace; "
                         "run tslab.capture on Linux")
    try:
        job = portable.dumps((fn, args))
    except portable.NotPortable:
        return _run(None, lambda: fn(*args), timeout)
    outcome = _run(job, None, timeout)
    if outcome.error is not None and outcome.error["type"] == portable.ArrivalError.__name__:
        return _run(None, lambda: fn(*args), timeout)  # the fresh process could not re-create the job
    return outcome


def _run(job: bytes | None, fn: Callable[[], Any] | None, timeout: float) -> ChildOutcome:
    """``job`` in a child of the fork server, or ``fn`` in a fork of this process (also when the server fails)."""
    from .server import ServerError, server

    with tempfile.TemporaryDirectory(prefix="tslab-capture-") as tmp:
        paths = [os.path.join(tmp, name) for name in ("result.pkl", "stdout.txt", "stderr.txt")]
        for path in paths:
            open(path, "wb").close()
        status, timed_out = None, False
        if job is not None:
            found = server()
            try:
                status, timed_out = found.run(job, paths, timeout)
            except ServerError:
                found.stop()
                job = None
            finally:
                found.lock.release()
        if job is None:
            status, timed_out = _forked(fn or (lambda: None), paths, timeout)
        return _outcome(paths, status, timed_out, forked=job is None)


def _forked(fn: Callable[[], Any], paths: list[str], timeout: float) -> tuple[int | None, bool]:
    """``fn`` in a fork of this process: its wait status, or (None, True) when it was stopped after ``timeout``."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        die_with_parent(parent)
        run_here(fn, *paths)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, False
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, True
        time.sleep(0.02)


def _outcome(paths: list[str], status: int | None, timed_out: bool, *, forked: bool) -> ChildOutcome:
    outcome = ChildOutcome(timed_out=timed_out, forked=forked)
    if not timed_out and status is not None:
        if os.WIFSIGNALED(status):
            outcome.signal = os.WTERMSIG(status)
            outcome.exit_code = None
        else:
            outcome.exit_code = os.WEXITSTATUS(status)
    with open(paths[1], errors="replace") as f:
        outcome.stdout = f.read()
    with open(paths[2], errors="replace") as f:
        outcome.stderr = f.read()
    with open(paths[0], "rb") as f:
        data = f.read()
    if data:
        try:
            payload = pickle.loads(data)
        except Exception as exc:
            payload = {"error": error_record(exc)}
        outcome.value = payload.get("value")
        outcome.error = payload.get("error")
    return outcome
