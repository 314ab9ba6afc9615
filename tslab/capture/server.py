"""A fork server for compile traces: a fresh, single-threaded Python with CuTe DSL and tslab's capture imported,
which forks one child per job.

Forking the caller itself is unsafe once it has threads (a Jupyter kernel has several; a child can deadlock on a
lock another thread held at the fork), and a spawned Python per job would pay CuTe DSL's import every time. The
server is started once per process (:func:`server`; more when jobs overlap), with the libraries that start threads
on import told not to (OpenBLAS, Arrow's jemalloc), so forking it is safe. Each job is sent with the caller's
``sys.path``, working folder and environment; the server answers with the child's pid and, once it has ended,
its wait status. The server and its children end with their parent (:func:`tslab.child.die_with_parent`).

Run as ``python -m tslab.capture.server FD PARENT_PID`` by :class:`ForkServer`, never by hand.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from ..child import die_with_parent, popen_for_life, tail

#: What the server imports before it forks anything: what every trace needs.
PRELOAD = ("cutlass.cute", "cutlass.experimental.task_scheduling.task_manager", "tslab.capture.tracing",
           "tslab.compiling.captured", "tslab.compiling.captured_export")
#: Keep the server single-threaded: these libraries would otherwise start threads when imported.
SINGLE_THREADED = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                   "JE_ARROW_MALLOC_CONF": "background_thread:false"}
#: Seconds a server may take to start and import :data:`PRELOAD`.
START_TIMEOUT = 120.0


class ServerError(Exception):
    """The fork server could not run the job (it did not start, or it died); the caller falls back to a fork."""


class ForkServer:
    """One server process: :meth:`run` forks a child of it for a job and returns the child's wait status."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        fd = theirs.fileno()
        root = str(Path(__file__).resolve().parents[2])  # where tslab is imported from, for ``-m tslab...``
        path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
        self._log = tempfile.NamedTemporaryFile(prefix="tslab-fork-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = popen_for_life([sys.executable, "-m", "tslab.capture.server", str(fd), str(os.getpid())],
                                   pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                   env={**os.environ, **SINGLE_THREADED, "PYTHONPATH": path}, close_fds=True)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.ready = False

    def alive(self) -> bool:
        return self.proc.poll() is None and self.owner == os.getpid()

    def _receive(self, timeout: float) -> tuple:
        if not self.conn.poll(timeout):
            raise TimeoutError
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            raise ServerError(f"the fork server ended: {tail(self._log.name) or 'no output'}") from None

    def run(self, job: bytes, paths: list[str], timeout: float) -> tuple[int | None, bool]:
        """Fork a child that runs ``job`` (see :func:`tslab.capture.in_child.run_job`) writing into ``paths``; its
        wait status and whether it was stopped after ``timeout`` seconds (status None then)."""
        if not self.ready:
            try:
                self._receive(START_TIMEOUT)  # ("ready",) once PRELOAD is imported
            except TimeoutError:
                self.stop()
                raise ServerError(f"the fork server did not start within {START_TIMEOUT:.0f} s") from None
            self.ready = True
        try:
            self.conn.send(("job", job, paths, list(sys.path), os.getcwd(), dict(os.environ)))
        except OSError as exc:
            raise ServerError(f"the fork server is gone ({exc})") from None
        _, pid = self._answer()
        deadline = time.monotonic() + timeout
        try:
            _, status = self._receive(max(0.0, deadline - time.monotonic()))
            return status, False
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self._answer()
            return None, True

    def _answer(self) -> tuple:
        """The server's next message, which it sends at once (a pid, a killed child's status)."""
        try:
            return self._receive(START_TIMEOUT)
        except TimeoutError:
            raise ServerError(f"the fork server did not answer within {START_TIMEOUT:.0f} s") from None

    def stop(self) -> None:
        self.conn.close()
        self._log.close()
        if self.owner == os.getpid() and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        with contextlib.suppress(OSError):
            os.unlink(self._log.name)


_SERVERS: list[ForkServer] = []
_SERVERS_LOCK = threading.Lock()


def server() -> ForkServer:
    """An idle fork server of this process, locked for the caller (``with server().lock`` is taken already):
    a new one when every other is busy with a job."""
    with _SERVERS_LOCK:
        for found in list(_SERVERS):
            if not found.alive():
                _SERVERS.remove(found)
                found.stop()
            elif found.lock.acquire(blocking=False):
                return found
        started = ForkServer()
        started.lock.acquire()
        _SERVERS.append(started)
        return started


def _forget() -> None:
    """In a forked child: the servers are the parent's (the child starts its own when it needs one)."""
    global _SERVERS_LOCK
    _SERVERS_LOCK = threading.Lock()
    _SERVERS.clear()


os.register_at_fork(after_in_child=_forget)


@atexit.register
def shutdown() -> None:
    """Stop this process's fork servers (they also end with it)."""
    with _SERVERS_LOCK:
        for found in _SERVERS:
            if found.owner == os.getpid():
                found.stop()
        _SERVERS.clear()


# -- inside the server ----------------------------------------------------------------------------------------


def _serve(conn: Connection) -> None:
    from .in_child import run_job

    me = os.getpid()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        _, job, paths, path, cwd, env = message
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            conn.close()
            die_with_parent(me)
            sys.path[:] = path
            os.environ.clear()
            os.environ.update(env)
            with contextlib.suppress(OSError):
                os.chdir(cwd)
            run_job(job, paths)
        conn.send(("started", pid))
        _, status = os.waitpid(pid, 0)
        conn.send(("ended", status))


def main(argv: list[str]) -> None:
    fd, parent = int(argv[0]), int(argv[1])
    die_with_parent(parent)
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    conn = Connection(fd)
    conn.send(("ready",))
    try:
        _serve(conn)
    finally:
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
