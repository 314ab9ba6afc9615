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
