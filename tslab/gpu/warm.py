"""One long-lived worker process per Jupyter kernel (or script), reused for every compile, run, bench and export.

Starting a worker costs more than most GPU jobs: importing CuTe DSL and torch and creating a CUDA context take
10-15 s, a ``tma_copy`` compile half a second. The warm worker pays that once. Jobs are sent to it one at a
time over a socket; each job's output goes to its own log file, and the same guards as a fresh worker apply:
a job that outlives its limit gets the whole process killed (:class:`~tslab.gpu.errors.WorkerTimeoutError`), a
process that dies is reported (:class:`~tslab.gpu.errors.WorkerCrashedError`), and the next job starts a new
worker. After a job that may have broken its CUDA context (an error other than those a job raises on purpose)
the worker is retired too. The worker ends with its parent, however the parent ends and whatever the worker is
doing (:func:`tslab.child.die_with_parent`).

Run as ``python -m tslab.gpu.warm FD PARENT_PID`` by :class:`WarmWorker`, never by hand.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

from ..child import die_with_parent, popen_for_life

#: Errors a job raises on purpose: the worker and its CUDA context are fine afterwards.
KEEPS_WORKER = ("CheckFailedError", "NoGpuError", "UnsupportedKernelError", "CompileError", "DesignError",
                "TslabError", "ValueError", "TypeError", "KeyError", "InputsError", "ReferenceError",
                "OutOfMemoryError")


class WarmWorker:
    """A worker process started on first use and kept for the next job; see the module docstring."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._owner = os.getpid()
        self.lock = threading.Lock()
        self.started = 0  # workers started so far (a test and the benchmark read it)
        self.jobs = 0  # jobs the current worker has run

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.alive() and self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self._owner == os.getpid()

    def connection(self) -> Connection:
        """The socket to a live worker, starting one when there is none (or it died)."""
        if not self.alive():
            self.stop()
            self._start()
        assert self._conn is not None
        return self._conn

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        fd = theirs.fileno()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._proc = popen_for_life(
            [sys.executable, "-m", "tslab.gpu.warm", str(fd), str(os.getpid())],
            pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, close_fds=True)
        theirs.close()
        self._conn = Connection(ours.detach())
        self._owner = os.getpid()
        self.started += 1
        self.jobs = 0

    def exit_code(self) -> int | None:
        """Reap a worker that died and return how it ended (negative: the signal that killed it)."""
        if self._proc is None:
            return None
        try:
            return self._proc.wait(5)
        except subprocess.TimeoutExpired:
            return None

    def retire(self) -> None:
        """Kill the worker now (a hung kernel, a broken CUDA context); the next job starts a fresh one."""
        self.stop(kill=True)

    def stop(self, *, kill: bool = False) -> None:
        """Stop the worker: ask it to exit (or kill it) and reap it, so no process is left behind."""
        proc, conn = self._proc, self._conn
        self._proc, self._conn = None, None
        if conn is not None:
            try:
                if not kill and proc is not None and proc.poll() is None:
                    conn.send(("stop",))
            except OSError:
                pass
            conn.close()
        if proc is not None and self._owner == os.getpid():
            if kill:
                proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


_WORKER = WarmWorker()


def worker() -> WarmWorker:
    """This process's warm worker (a forked child gets its own)."""
    global _WORKER
    if _WORKER._owner != os.getpid():
        _WORKER = WarmWorker()
    return _WORKER


def shutdown() -> None:
    """Stop this process's warm worker now (it is also stopped when this process exits)."""
    if _WORKER._owner == os.getpid():
        _WORKER.stop()


atexit.register(shutdown)


def warm_up() -> None:
    """A job that imports CuTe DSL and torch and creates the CUDA context, so the next job starts at once."""
    import cutlass.cute  # noqa: F401

    from .device import device

    if device() is not None:
        import torch

        torch.zeros(1, device="cuda")


# -- inside the worker ----------------------------------------------------------------------------------------


def _watch_parent(parent: int) -> None:
    """Exit once the parent is gone: the only guard where the system cannot end a child with its parent (not
    Linux), and a second one on Linux."""
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(0.5)


def _free_gpu_memory() -> None:
    """What the last job held on the GPU goes back (its tensors are garbage now)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _serve(conn: Connection) -> None:
    from ..child import output_to
    from .job_channel import answer, attach, send

    attach(conn)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        _, job, kwargs, log_path, path, cwd = message
        output_to(log_path)
        sys.path[:] = path + [p for p in sys.path if p not in path]  # the caller's imports work here too
        with contextlib.suppress(OSError):
            os.chdir(cwd)
        reply = answer(job, kwargs)
        sys.stdout.flush()
        sys.stderr.flush()
        send(conn, reply)
        _free_gpu_memory()


def main(argv: list[str]) -> None:
    fd, parent = int(argv[0]), int(argv[1])
    die_with_parent(parent)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    conn = Connection(fd)
    try:
        _serve(conn)
    finally:
        conn.close()
        sys.stdout.flush()
        os._exit(0)  # no interpreter teardown: CUDA and MLIR atexit hooks can hang a dying process


if __name__ == "__main__":
    main(sys.argv[1:])
