"""The worker process: aborts and hangs become tslab errors and the caller lives on."""

from __future__ import annotations

import os

import pytest

from tslab.errors import TslabError
from tslab.gpu.errors import CompileError, WorkerCrashedError, WorkerTimeoutError
from tslab.gpu.worker import run_job


def test_an_aborting_job_raises_and_the_parent_lives():
    with pytest.raises(WorkerCrashedError, match="SIGABRT") as info:
        run_job("tslab.gpu.worker:abort_for_test", {}, what="deliberate abort")
    assert isinstance(info.value, TslabError)
    assert "deliberate abort" in str(info.value)
    assert os.getpid() > 0  # still here


def test_a_hanging_job_is_stopped():
    with pytest.raises(WorkerTimeoutError, match="ran past 2 s"):
        run_job("tslab.gpu.worker:hang_for_test", {"seconds": 60}, timeout=2, what="sleeper")


def test_an_exception_in_the_job_is_reported_with_its_traceback():
    with pytest.raises(CompileError, match="JSONDecodeError"):
        run_job("json:loads", {"s": "{"}, what="parse")


def test_a_result_comes_back():
    assert run_job("os.path:basename", {"p": "a/b.txt"}) == "b.txt"


def test_a_script_without_a_main_guard_is_not_run_again_by_the_worker(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "plain_script.py"
    script.write_text("from tslab import gpu\nfrom tslab.kernels import grid_stride_copy\n"
                      "print('script body ran')\n"
                      "print(gpu.compile(grid_stride_copy.design(), arch='sm_90a', shape=(4096,)).arch)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("script body ran") == 1
    assert "sm_90a" in proc.stdout


def test_a_job_stopped_in_a_phase_says_which():
    with pytest.raises(WorkerTimeoutError, match="ran past 1 s running the kernel") as info:
        run_job("tslab.gpu.worker:hang_for_test", {"seconds": 60, "phase": "running the kernel", "phase_timeout": 1},
                timeout=120, what="sleeper")
    assert info.value.phase == "running the kernel" and info.value.seconds == 1


def test_a_job_killed_from_outside_says_killed_without_guessing_why():
    with pytest.raises(WorkerCrashedError, match=r"killed: the worker process was killed by SIGKILL; this process") \
            as info:
        run_job("tslab.gpu.worker:kill_for_test", {}, what="killed")
    assert "MLIR" not in str(info.value)


TORCH_OOM = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which "
             "1.25 GiB is free. Including non-PyTorch memory, this process has 77.84 GiB memory in use.")


def test_out_of_memory_is_its_own_error_with_the_bytes_asked_and_free():
    from tslab.gpu.errors import CheckFailedError, GpuError
    from tslab.gpu.oom import is_out_of_memory, out_of_memory_error

    assert is_out_of_memory("OutOfMemoryError", TORCH_OOM)
    assert is_out_of_memory("RuntimeError", "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY")
    assert not is_out_of_memory("ValueError", "bad shape")
    err = out_of_memory_error("run of 'tma_copy'", TORCH_OOM)
    assert isinstance(err, GpuError) and not isinstance(err, CheckFailedError)
    assert (err.requested_bytes, err.free_bytes) == (2 * 2**30, round(1.25 * 2**30))
    assert str(err).startswith("run of 'tma_copy': the GPU ran out of memory (asked for 2.00 GiB, 1.25 GiB free); "
                               "use a smaller shape")
    bare = out_of_memory_error("run", "CUDA_ERROR_OUT_OF_MEMORY")
    assert bare.requested_bytes is None and str(bare).startswith("run: the GPU ran out of memory; use")


def raise_out_of_memory(text: str) -> None:
    """A job failing as torch's caching allocator does when the GPU is full (its error type is named so)."""

    class OutOfMemoryError(RuntimeError):
        pass

    raise OutOfMemoryError(text)


def test_an_out_of_memory_in_the_job_is_raised_as_such():
    from tslab.gpu.errors import CheckFailedError, GpuOutOfMemoryError

    with pytest.raises(GpuOutOfMemoryError, match=r"run: the GPU ran out of memory \(asked for 2.00 GiB"):
        run_job("test_gpu_worker:raise_out_of_memory", {"text": TORCH_OOM}, what="run", error=CheckFailedError)


def test_a_worker_killed_after_finishing_some_work_keeps_it_in_the_error():
    with pytest.raises(WorkerCrashedError, match=r"killed by SIGKILL.*The 3 result\(s\) finished before are kept") \
            as info:
        run_job("tslab.gpu.worker:partial_then_kill_for_test", {"rows": 3}, what="bench")
    assert info.value.partial == [{"row": 0}, {"row": 1}, {"row": 2}]


def test_jobs_run_in_a_process_that_is_already_a_worker(monkeypatch):
    """A sweep's pool workers set IN_PROCESS_ENV: their compiles skip one more spawned process each."""
    from tslab.gpu.worker import IN_PROCESS_ENV

    assert run_job("os:getpid", {}) != os.getpid()
    monkeypatch.setenv(IN_PROCESS_ENV, "1")
    assert run_job("os:getpid", {}) == os.getpid()
    with pytest.raises(CompileError, match="compile of 'x' failed: JSONDecodeError: Expecting value"):
        run_job("json:loads", {"s": "seven"}, what="compile of 'x'")
