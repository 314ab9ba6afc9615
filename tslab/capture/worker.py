"""Run one function in a forked child process with its output captured, so that a crash stays there.

A compile trace can abort the whole process (an MLIR assertion raises SIGABRT). The child inherits
everything the caller defined (notebook cells included, which a spawned process would not see), sends back
a pickled value and its stdout/stderr, and always ends with ``os._exit``.
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

from ..child import error_record, how_it_ended, output_to
from ..errors import TslabError


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

    @property
    def crashed(self) -> bool:
        return self.signal is not None or self.timed_out or (self.error is None and self.exit_code != 0)


def _child(fn: Callable[[], Any], result_path: str, out_path: str, err_path: str) -> None:
    code = 0
    try:
        faulthandler.disable()  # a crash here is reported by the parent, not dumped on its terminal
        output_to(out_path, err_path)
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


def run_in_child(fn: Callable[[], Any], *, timeout: float = 600.0) -> ChildOutcome:
    """Run ``fn()`` in a forked child; its return value must pickle. Never raises for what the child does."""
    if not hasattr(os, "fork"):
        raise TslabError("capture: needs os.fork (Linux or macOS) to isolate the compile trace; "
                         "run tslab.capture on Linux")
    with tempfile.TemporaryDirectory(prefix="tslab-capture-") as tmp:
        paths = [os.path.join(tmp, name) for name in ("result.pkl", "stdout.txt", "stderr.txt")]
        for path in paths:
            open(path, "wb").close()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            _child(fn, *paths)
        outcome = ChildOutcome()
        deadline = time.monotonic() + timeout
        status = None
        while status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = raw
            elif time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                outcome.timed_out = True
                status = 0
            else:
                time.sleep(0.02)
        if not outcome.timed_out:
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
