"""The warm worker: one process reused for every job, replaced after a hang, a crash or a broken CUDA context,
gone with its parent."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from tslab.gpu.errors import CompileError, GpuOutOfMemoryError, WorkerCrashedError, WorkerTimeoutError
from tslab.gpu.warm import shutdown, worker
from tslab.gpu.worker import FRESH_ENV, run_job

TORCH_OOM = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1 GiB"


def raise_runtime_error() -> None:
    """A job failing as a CUDA fault does: the worker's context cannot be trusted afterwards."""
    raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered")


def raise_value_error() -> None:
    raise ValueError("a bad argument, raised on purpose")


def _pid() -> int:
    return run_job("os:getpid", {})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is not alive
        return fh.read().split(")")[1].split()[0] != "Z"


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_jobs_share_one_process_other_than_this_one():
    first = _pid()
    assert first != os.getpid()
    assert _pid() == first == worker().pid


def test_a_crash_is_reported_and_the_next_job_gets_a_new_worker():
    before = _pid()
    with pytest.raises(WorkerCrashedError, match="killed by SIGKILL"):
        run_job("tslab.gpu.worker:kill_for_test", {}, what="killed")
    after = _pid()
    assert after != before and not _alive(before)


def test_a_hang_is_stopped_and_the_next_job_gets_a_new_worker():
    before = _pid()
    with pytest.raises(WorkerTimeoutError, match="ran past 1 s"):
        run_job("tslab.gpu.worker:hang_for_test", {"seconds": 60}, timeout=1, what="sleeper")
    assert _gone(before)
    assert _pid() != before


def test_an_error_raised_on_purpose_keeps_the_worker_and_a_fault_retires_it():
    before = _pid()
    with pytest.raises(CompileError, match="ValueError: a bad argument"):
        run_job("test_warm_worker:raise_value_error", {}, what="job")
    assert _pid() == before
    with pytest.raises(GpuOutOfMemoryError):
        run_job("test_gpu_worker:raise_out_of_memory", {"text": TORCH_OOM}, what="run")
    assert _pid() == before  # what the job held was freed; the context is fine
    with pytest.raises(CompileError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        run_job("test_warm_worker:raise_runtime_error", {}, what="job")
    assert _gone(before)
    assert _pid() != before


def test_the_callers_path_and_folder_reach_the_worker(tmp_path, monkeypatch):
    (tmp_path / "helper_for_warm.py").write_text("import os\n\ndef where():\n    return os.getcwd()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert run_job("helper_for_warm:where", {}) == str(tmp_path)


def test_fresh_workers_when_asked(monkeypatch):
    warm = _pid()
    assert run_job("os:getpid", {}, fresh=True) not in (warm, os.getpid())
    monkeypatch.setenv(FRESH_ENV, "1")
    assert len({run_job("os:getpid", {}) for _ in range(2)} | {warm}) == 3


def test_shutdown_leaves_no_process():
    pid = _pid()
    shutdown()
    assert _gone(pid) and worker().pid is None
    assert _pid() != pid  # and the next job starts one again


@pytest.mark.parametrize("ending", ["sys.exit(0)", "os._exit(0)", "os.kill(os.getpid(), 9)"])
def test_the_worker_ends_with_its_parent(ending):
    script = textwrap.dedent(f"""
        import os, sys
        from tslab.gpu.worker import run_job
        print(run_job("os:getpid", {{}}), flush=True)
        {ending}
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    pid = int(proc.stdout.split()[0])
    assert _gone(pid), f"worker {pid} outlived its parent ({ending})"


def block_holding_the_gil(marker: str, seconds: int) -> None:
    """A job busy in C code that keeps the GIL (a compile, a hung launch): no Python thread of its process runs."""
    import ctypes
    from pathlib import Path

    Path(marker).write_text(str(os.getpid()))
    ctypes.PyDLL(None).sleep(seconds)  # libc sleep(), called without releasing the GIL


@pytest.mark.parametrize("fresh", [False, True], ids=["warm", "fresh"])
def test_a_busy_worker_ends_when_its_parent_is_stopped_by_sigterm(tmp_path, fresh):
    marker = tmp_path / "job-started"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from tslab.gpu.worker import run_job
        run_job("test_warm_worker:block_holding_the_gil", {{"marker": {str(marker)!r}, "seconds": 120}},
                fresh={fresh}, timeout=300)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            assert parent.poll() is None, "the parent ended before its job started"
            time.sleep(0.1)
        pid = int(marker.read_text())
        parent.terminate()
        parent.wait(30)
        assert _gone(pid, within=5), f"worker {pid} outlived its parent stopped by SIGTERM"
    finally:
        parent.kill()
        parent.wait()
