"""A test run stopped by SIGTERM still tears its fixtures down (the JupyterLab server, kernels, workers)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

INNER = '''
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def server():
    yield
    (HERE / "torn-down").write_text("yes")


def test_runs_long(server):
    (HERE / "started").write_text("yes")
    time.sleep(120)
'''


def test_sigterm_tears_the_session_fixtures_down(tmp_path):
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER))
    shutil.copy(Path(__file__).resolve().parents[1] / "conftest.py", tmp_path / "conftest.py")  # the hook under test
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:nbval", "-q",
                            "--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists():
            assert run.poll() is None and time.monotonic() < deadline, run.stdout.read() if run.stdout else ""
            time.sleep(0.1)
        run.send_signal(signal.SIGTERM)
        out, _ = run.communicate(timeout=30)
    finally:
        run.kill()
    assert (tmp_path / "torn-down").read_text() == "yes", out
    assert run.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in out
