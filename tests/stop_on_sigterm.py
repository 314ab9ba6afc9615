"""A test run stopped by SIGTERM tears its fixtures down as Ctrl+C does: the JupyterLab server and its kernels, the
notebooks' kernels, GPU workers. Without it, SIGTERM ends pytest at once and leaves them all running.

Loaded by ``tests/conftest.py``; a second SIGTERM ends the run at once.
"""

from __future__ import annotations

import signal
import threading

import pytest


def _stop(signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the run at once
    pytest.exit("stopped by SIGTERM; fixtures torn down", returncode=128 + signum)


def pytest_sessionstart(session: pytest.Session) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)
