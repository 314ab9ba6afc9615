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
import faulthandler
import os
import pickle
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..child import die_with_parent, error_record, how_it_ended, output_to
from ..errors import TslabError
from . import portable


@dataclass
class ChildOutcome:
    """What a child run left: its value or error, its output, and how it ended."""

    value: Any = None
    error: dict[str, Any] | None = None
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = 0
    signal: int | None = None
    timed_out: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    forked: bool = False  # it ran in a fork of the caller (the function could not be sent to the fork server)

    @property
    def crashed(self) -> bool:
        return self.signal is not None or self.timed_out or (self.error is None and self.exit_code != 0)


def _child(fn: Callable[[], Any], result_path: str, out_path: str, err_path: str) -> None:
    code = 0
    try:
        faulthandler.disable()  # a crash here is reported by the parent, not dumped on its terminal
        output_to(out_path, err_path, flush=False)  # the parent flushed; a Jupyter kernel's streams are its threads'
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            payload: dict[str, Any] = {"value": fn()}
        except BaseException as exc:
            payload = {"error": error_record(exc)}
        with open(result_path, "wb") as f:
            try:
                pickle.dump(payload, f)
            except Exception as exc:
                f.seek(0)
                f.truncate()
                pickle.dump({"error": error_record(exc)}, f)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _arrived(job: bytes) -> Any:
    fn, args = portable.loads(job, as_main=True)
    return fn(*args)


def run_job(job: bytes, paths: list[str]) -> None:
    """Inside a child of the fork server: run the job :func:`run_in_child` sent; never returns."""
    _child(lambda: _arrived(job), *paths)


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
        _child(fn, *paths)
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


def failure(outcome: ChildOutcome) -> str | None:
    """What went wrong in a child run whose function returns a dict (``{"error": ...}`` on failure), in one line:
    its error, or how the child ended; None when it succeeded."""
    value = outcome.value if isinstance(outcome.value, dict) else {}
    error = outcome.error or value.get("error")
    if not outcome.crashed and error is None:
        return None
    if error:
        return f"{error['type']}: {' '.join(error['message'].split())[:400]}"
    if outcome.timed_out:
        return "the worker ran past its time limit and was stopped"
    return f"the worker {how_it_ended(-outcome.signal if outcome.signal else outcome.exit_code)}"
