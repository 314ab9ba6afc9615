"""What every "run it in a child process, report its crash" path shares: the capture trace's child
(:mod:`tslab.capture.worker`) and the GPU's fresh and warm workers (:mod:`tslab.gpu.worker`, :mod:`tslab.gpu.warm`).

A child's output goes to a file (:func:`output_to`) whose tail is quoted when it fails (:func:`tail`); what it
raised travels as a picklable record (:func:`error_record`); how it ended is said in words (:func:`how_it_ended`),
and output written by C code while a step runs can be captured in place (:func:`capture_fds`). A child ends with
its parent however the parent ends (:func:`die_with_parent`), and a long-lived child is started from a thread that
lives as long as its process (:func:`popen_for_life`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from typing import Any

#: Characters of a child's output quoted in an error.
TAIL_CHARS = 2000


def error_record(exc: BaseException) -> dict[str, Any]:
    """A picklable description of an exception: type, message and traceback frames (file, line, function)."""
    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    return {"type": type(exc).__name__, "message": str(exc), "frames": frames,
            "text": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}


def output_to(out_path: str, err_path: str | None = None, *, flush: bool = True) -> None:
    """This process's stdout and stderr (fds 1 and 2, C libraries' too) go to ``out_path`` (stderr to
    ``err_path`` when given) from now on, and Python's ``sys.stdout``/``sys.stderr`` write through them.

    ``flush=False`` leaves the streams it replaces alone: in a fork of a Jupyter kernel they belong to threads
    that do not exist there."""
    for stream in (sys.stdout, sys.stderr) if flush else ():
        with contextlib.suppress(Exception):
            stream.flush()
    for fd, path in ((1, out_path), (2, err_path or out_path)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115


def tail(path: str, chars: int = TAIL_CHARS) -> str:
    """The last ``chars`` characters of the file at ``path`` ("" when it cannot be read)."""
    try:
        with open(path, errors="replace") as fh:
            text = fh.read()
    except OSError:
        return ""
    return text[-chars:].strip()


def how_it_ended(returncode: int | None) -> str:
    """A child's end in words, from its return code (negative: the signal that killed it)."""
    if returncode == -signal.SIGABRT:
        return "aborted (SIGABRT: an assertion or abort inside MLIR/CUDA)"
    if returncode is not None and returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode} without a result"


@contextlib.contextmanager
def capture_fds(*, echo: bool) -> Iterator[list[str]]:
    """Capture what C and Python write to fds 1 and 2 (ptxas remarks) while active; the text is appended to the
    yielded list on exit, and written to stderr too when ``echo`` (a worker's log keeps it)."""
    out: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            fh.seek(0)
            out.append(fh.read().decode(errors="replace"))
            if echo:
                sys.stderr.write(out[-1])


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """Inside a child: be killed (SIGKILL) the moment ``parent`` ends, by SIGTERM as by SIGKILL, even while this
    process is busy in C code that holds the GIL (a Python thread watching the parent would not run then).

    Linux delivers the signal when the *thread* that started this process ends: start long-lived children with
    :func:`popen_for_life`. Elsewhere this does nothing (a child then watches its parent itself).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(0)


class _Launcher:
    """One daemon thread of this process that starts the children which outlive the call that needed them."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.requests: queue.Queue[tuple[tuple, dict[str, Any], queue.Queue]] = queue.Queue()
        threading.Thread(target=self._serve, name="tslab-launcher", daemon=True).start()

    def _serve(self) -> None:
        while True:
            args, kwargs, reply = self.requests.get()
            try:
                reply.put((subprocess.Popen(*args, **kwargs), None))
            except BaseException as exc:
                reply.put((None, exc))


_LAUNCHER: _Launcher | None = None
_LAUNCHER_LOCK = threading.Lock()


def _forget_launcher() -> None:
    """In a forked child: the launcher thread was the parent's (the child starts its own when it needs one)."""
    global _LAUNCHER, _LAUNCHER_LOCK
    _LAUNCHER, _LAUNCHER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_launcher)


def popen_for_life(*args: Any, **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(*args, **kwargs)`` run by a thread that lives as long as this process, so that a child
    which calls :func:`die_with_parent` is not killed when the thread that asked for it (a widget's background
    thread) ends."""
    global _LAUNCHER
    with _LAUNCHER_LOCK:
        if _LAUNCHER is None or _LAUNCHER.owner != os.getpid():  # a forked process needs its own thread
            _LAUNCHER = _Launcher()
        launcher = _LAUNCHER
    reply: queue.Queue[tuple[subprocess.Popen | None, BaseException | None]] = queue.Queue()
    launcher.requests.put((args, kwargs, reply))
    proc, error = reply.get()
    if error is not None:
        raise error
    assert proc is not None
    return proc
