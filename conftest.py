"""Two things every ``python -m pytest`` run here gets, whichever tests or notebooks it is given.

The tutorials run under nbval, as ``--nbval`` does, when nbval is installed. It was ``addopts = "--nbval"``, which
stops every run where nbval is missing (the GPU machine has no Jupyter stack) with "unrecognized arguments";
switched on here, the tests collect and run with the runtime dependencies alone. ``--nbval-lax`` given on the
command line is kept; ``-p no:nbval`` leaves the notebooks out.

A run stopped by SIGTERM tears its fixtures down as Ctrl+C does: the JupyterLab server and its kernels, the
notebooks' kernels, GPU workers. Without that, SIGTERM ends pytest at once and leaves them all running. A second
SIGTERM ends the run at once.
"""

from __future__ import annotations

import signal
import threading

import pytest


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    if hasattr(option, "nbval") and not (option.nbval or option.nbval_lax):
        option.nbval = True


def _stop(signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the run at once
    pytest.exit("stopped by SIGTERM; fixtures torn down", returncode=128 + signum)


def pytest_sessionstart(session: pytest.Session) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)
