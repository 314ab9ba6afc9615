"""Run one job in a fresh worker process so an MLIR abort, a signal or a hung GPU never takes the caller down.

A job is ``"module:function"`` plus keyword arguments (picklable); its return value comes back pickled.
The worker's stdout and stderr go to a log file whose tail is quoted in every error. A job may enter a named
phase with its own time limit (:func:`enter_phase`, e.g. once its kernel is launched), so a timeout says
whether the worker was still starting and compiling or the kernel itself did not finish.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from ..child import TAIL_CHARS, capture_fds, die_with_parent, how_it_ended, output_to, tail
from .errors import CompileError, GpuError, WorkerCrashedError, WorkerTimeoutError
from .job_channel import answer, attach, call, enter_phase, report_partial, send
from .oom import is_out_of_memory, out_of_memory_error


def _entry(conn: Any, job: str, kwargs: dict[str, Any], log_path: str, env: dict[str, str], parent: int) -> None:
    die_with_parent(parent)
    attach(conn)
    output_to(log_path)
    os.environ.update(env)
    try:
        send(conn, answer(job, kwargs))
    finally:
        conn.close()


@contextlib.contextmanager
def _main_not_reimported() -> Iterator[None]:
    """Keep a spawned worker from re-running the caller's script.

    ``multiprocessing`` spawn re-imports ``__main__`` from its file in the child, which re-runs a script that
    has no ``if __name__ == "__main__"`` guard (and fails for ``python - < script``). The worker's job lives in
    tslab, so the child never needs the caller's main module.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec = getattr(main, "__spec__", None)
    if main is None or (path is None and spec is None):
        yield
        return
    if path is not None:
        del main.__file__
    main.__spec__ = None
    try:
        yield
    finally:
        if path is not None:
            main.__file__ = path
        main.__spec__ = spec


#: Set to "1" in a process that is itself an isolated worker (a sweep's CPU pool or Ray task): jobs then run in
#: that process instead of a freshly spawned one. A compiler abort ends that worker, which its pool reports.
IN_PROCESS_ENV = "TSLAB_JOBS_IN_PROCESS"


#: Set to "1" to run every job in a fresh worker process (slower; the warm worker is the default).
FRESH_ENV = "TSLAB_FRESH_WORKERS"
#: The phase a run job enters when it launches its kernel (a timeout in it means the kernel hung).
KERNEL_PHASE = "running the kernel"


def run_job(
    job: str,
    kwargs: dict[str, Any],
    *,
    timeout: float = 600.0,
    what: str = "job",
    env: dict[str, str] | None = None,
    error: type[GpuError] = CompileError,
    fresh: bool = False,
) -> Any:
    """Run ``job(**kwargs)`` in a worker process and return its result.

    The job runs in this process's warm worker (:mod:`tslab.gpu.warm`), or in a freshly spawned process when it
    needs its own environment (``env``: e.g. a profiler's injection library), when ``fresh`` or when
    ``TSLAB_FRESH_WORKERS=1``. Raises ``error`` when the job raised, :class:`WorkerCrashedError` when the process
    died and :class:`WorkerTimeoutError` after ``timeout`` seconds (or after the limit of the phase the job entered
    last); a warm worker that died or was stopped is replaced at the next job.
    """
    if os.environ.get(IN_PROCESS_ENV) == "1" and not env:
        return _run_here(job, kwargs, what, error)
    if env or fresh or os.environ.get(FRESH_ENV) == "1":
        return _run_fresh(job, kwargs, timeout=timeout, what=what, env=env or {}, error=error)
    return _run_warm(job, kwargs, timeout=timeout, what=what, error=error)


def _log_file() -> str:
    with tempfile.NamedTemporaryFile(prefix="tslab-worker-", suffix=".log", delete=False) as fh:
        return fh.name


def _await(conn: Any, timeout: float, what: str, log_path: str, *, alive: Any, stop: Any, exit_code: Any) -> Any:
    """The job's last message (``ok`` or ``error``), following its phases and keeping its partial results.

    ``alive()`` says whether the worker still runs, ``stop()`` kills it, ``exit_code()`` reaps it.
    """
    phase, limit = None, timeout
    partial: list[Any] = []
    while True:
        if not conn.poll(limit):
            if alive():
                stop()
                during = f" {phase}" if phase else ""
                raise WorkerTimeoutError(
                    f"{what}: the worker ran past {limit:.0f} s{during} and was stopped; raise timeout= or use "
                    f"a smaller problem.{_kept(partial)}\n--- worker output (tail) ---\n{tail(log_path)}",
                    phase=phase, seconds=limit, partial=partial,
                )
            raise _crash(what, exit_code(), log_path, partial)
        try:
            message = conn.recv()
        except (EOFError, OSError):
            raise _crash(what, exit_code(), log_path, partial) from None
        if message[0] == "partial":
            partial.append(message[1])
        elif message[0] == "phase":
            _, phase, limit = message
        else:
            return message


def _run_fresh(job: str, kwargs: dict[str, Any], *, timeout: float, what: str, env: dict[str, str],
               error: type[GpuError]) -> Any:
    """``job`` in a process of its own, spawned for it and ended after it."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    log_path = _log_file()
    proc = ctx.Process(target=_entry, args=(child, job, kwargs, log_path, env, os.getpid()), daemon=True)
    with _main_not_reimported():
        proc.start()
    child.close()

    def stop() -> None:
        proc.kill()
        proc.join(5)

    def exit_code() -> int | None:
        proc.join(5)
        return proc.exitcode

    try:
        message = _await(parent, timeout, what, log_path, alive=proc.is_alive, stop=stop, exit_code=exit_code)
        proc.join(30)
    finally:
        parent.close()
        if proc.is_alive():
            proc.kill()
            proc.join(5)
    return _outcome(message, what, error, log_path)


def _run_warm(job: str, kwargs: dict[str, Any], *, timeout: float, what: str, error: type[GpuError]) -> Any:
    """``job`` in this process's warm worker, started if there is none; killed and replaced after a timeout, a
    crash, or an error that may have left its CUDA context broken."""
    from .warm import KEEPS_WORKER, worker

    warm = worker()
    with warm.lock:
        log_path = _log_file()
        request = ("job", job, kwargs, log_path, list(sys.path), os.getcwd())
        try:
            conn = warm.connection()
            conn.send(request)
        except (OSError, ValueError, EOFError):  # it died since the last job: start another
            warm.retire()
            conn = warm.connection()
            conn.send(request)
        try:
            message = _await(conn, timeout, what, log_path, alive=warm.alive, stop=warm.retire,
                             exit_code=warm.exit_code)
        except (WorkerTimeoutError, WorkerCrashedError):
            warm.retire()
            raise
        warm.jobs += 1
        if message[0] == "error" and message[1] not in KEEPS_WORKER and not is_out_of_memory(message[1], message[2]):
            warm.retire()
    return _outcome(message, what, error, log_path)


def _outcome(message: Any, what: str, error: type[GpuError], log_path: str) -> Any:
    """The job's result, or the error it stands for."""
    if message[0] == "ok":
        os.unlink(log_path)
        return message[1]
    _, kind, text, trace = message
    raise _job_error(what, kind, text, error,
                     f"failed in the worker: {kind}: {text}\n--- worker traceback ---\n{trace.strip()[-TAIL_CHARS:]}")


def _job_error(what: str, kind: str, text: str, error: type[GpuError], detail: str) -> Exception:
    """The error a job that raised ``kind: text`` stands for: out of memory, one passed through, or ``error``."""
    if is_out_of_memory(kind, text):
        return out_of_memory_error(what, text)
    if kind in _PASS_THROUGH:
        return _PASS_THROUGH[kind](text)
    return error(f"{what} {detail}")


def _run_here(job: str, kwargs: dict[str, Any], what: str, error: type[GpuError]) -> Any:
    """``job(**kwargs)`` in this process, quietly, its errors mapped as a worker's are (no crash or time guard)."""
    try:
        with capture_fds(echo=False):
            return call(job, kwargs)
    except Exception as exc:
        kind, text = type(exc).__name__, " ".join(str(exc).split())[:4000]
        raise _job_error(what, kind, text, error, f"failed: {kind}: {text}") from exc


def _kept(partial: list[Any]) -> str:
    return f" The {len(partial)} result(s) finished before are kept in the error's .partial." if partial else ""


def _crash(what: str, code: int | None, log_path: str, partial: list[Any] | None = None) -> WorkerCrashedError:
    how = how_it_ended(code)
    return WorkerCrashedError(
        f"{what}: the worker process {how}; this process is unharmed. "
        f"Check the design with tslab.check() and the output below.{_kept(partial or [])}\n"
        f"--- worker output (tail) ---\n{tail(log_path)}",
        partial=partial or [],
    )


def _pass_through() -> dict[str, type[GpuError]]:
    from . import errors

    return {
        name: getattr(errors, name)
        for name in ("CheckFailedError", "NoGpuError", "UnsupportedKernelError", "InputsError")
    }


_PASS_THROUGH = _pass_through()


def abort_for_test() -> None:
    """A job that aborts its process, as an MLIR assertion does (used by the isolation test)."""
    os.abort()


def kill_for_test() -> None:
    """A job whose process is killed with SIGKILL, as from outside (used by the crash-report test)."""
    os.kill(os.getpid(), signal.SIGKILL)


def partial_then_kill_for_test(rows: int) -> None:
    """A job that finishes ``rows`` pieces of work, then is killed from outside (used by the partial-results test)."""
    for i in range(rows):
        report_partial({"row": i})
    os.kill(os.getpid(), signal.SIGKILL)


def hang_for_test(seconds: float, phase: str | None = None, phase_timeout: float = 0.0) -> None:
    """A job that outlives any short timeout, optionally after entering ``phase`` (used by the timeout tests)."""
    import time

    if phase is not None:
        enter_phase(phase, phase_timeout)
    time.sleep(seconds)
