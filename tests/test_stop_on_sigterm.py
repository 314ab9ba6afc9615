"""A test run stopped by SIGTERM still tears its fixtures down (the JupyterLab server, kernels, workers): a run in
one process, and a run shared by xdist workers (the default where pytest-xdist is installed) stopped by a SIGTERM to
itself or to its whole process group (a CI job's timeout)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

INNER = '''
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def server():
    yield
    (HERE / "torn-down").write_text("yes")


def test_runs_long(server, request):
    (HERE / "started").write_text("in a worker" if hasattr(request.config, "workerinput") else "in the run")
    time.sleep(120)
'''


@pytest.mark.parametrize(("options", "to_group"), [(["-p", "no:xdist"], False), (["-n", "2"], False),
                                                   (["-n", "2"], True)], ids=["one-process", "shared", "shared-group"])
def test_sigterm_tears_the_session_fixtures_down(tmp_path, options, to_group):
    shared = "-n" in options
    if shared and importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed: runs are not shared")
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER))
    shutil.copy(Path(__file__).resolve().parents[1] / "conftest.py", tmp_path / "conftest.py")  # the hook under test
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:nbval",
                            *options, "-q", "--rootdir", str(tmp_path),
                            str(tmp_path / "test_inner.py")],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=to_group)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists() or not (tmp_path / "started").read_text():
            assert run.poll() is None and time.monotonic() < deadline, run.stdout.read() if run.stdout else ""
            time.sleep(0.1)
        if to_group:
            os.killpg(run.pid, signal.SIGTERM)
        else:
            run.send_signal(signal.SIGTERM)
        out, _ = run.communicate(timeout=30)
    finally:
        run.kill()
    assert (tmp_path / "started").read_text() == ("in a worker" if shared else "in the run"), out
    assert (tmp_path / "torn-down").read_text() == "yes", out
    assert run.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in out
