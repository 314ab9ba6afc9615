"""What every ``python -m pytest`` run here gets, whichever tests or notebooks it is given.

The tutorials run under nbval, as ``--nbval`` does, when nbval is installed. It was ``addopts = "--nbval"``, which
stops every run where nbval is missing (the GPU machine has no Jupyter stack) with "unrecognized arguments";
switched on here, the tests collect and run with the runtime dependencies alone. ``--nbval-lax`` given on the
command line is kept; ``-p no:nbval`` leaves the notebooks out.

Where pytest-xdist is installed (the test extra) the run is shared by two worker processes, switched on here for
the same reason. Much of a run waits (on Chromium and JupyterLab, on the notebooks' kernels, on compiles in
child processes), so two workers finish it far sooner on two cores. Each test module (each notebook) runs whole
in one worker (``--dist loadscope``), so module fixtures are built once and a notebook's cells share one kernel;
modules go out in collection order, the browser tests first, as they are the longest. ``-n 0`` (or ``-n N``, or
``-p no:xdist``) decides otherwise; ``--pdb``, ``--trace`` and ``-s`` run in this process.

A run stopped by SIGTERM tears its fixtures down as Ctrl+C does: the JupyterLab server and its kernels, the
notebooks' kernels, GPU workers. Without that, SIGTERM ends pytest at once and leaves them all running. A second
SIGTERM ends the run at once. A shared run passes the SIGTERM on to its workers, each tears its own fixtures down
and reports back, and the run ends once they have (exit status 143, as in one process); a worker ignores any
later SIGTERM (one sent to the whole process group reaches it twice).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import pytest

#: Worker processes of a run where pytest-xdist is installed, unless ``-n`` says otherwise.
WORKERS = 2
#: The process ids of this run's xdist workers (none in a worker, none in a run that is not shared).
_worker_pids: list[int] = []
#: This process's session, whether it is an xdist worker, and the signal that stopped it (if one did).
_this: dict[str, object] = {"session": None, "worker": False, "stopped": None}


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    _this["worker"] = hasattr(config, "workerinput")
    if hasattr(option, "nbval") and not (option.nbval or option.nbval_lax):
        option.nbval = True
    if (getattr(option, "numprocesses", False) is None and option.dist == "no" and not _this["worker"]
            and not option.usepdb and not option.trace and option.capture != "no"):
        option.numprocesses, option.tx, option.dist = WORKERS, ["popen"] * WORKERS, "loadscope"
        option.loadscopereorder = False  # collection order: the long browser tests first


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_newgateway(gateway) -> None:
    _worker_pids.append(gateway.remote_exec("import os; channel.send(os.getpid())").receive())


def _stop(signum: int, _frame: object) -> None:
    _this["stopped"] = signum
    if _this["worker"]:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the run ends this worker once it has torn down
        if _this["session"] is not None:  # not a crash: the run hands this worker no more tests
            _this["session"].shouldstop = "stopped by SIGTERM"
    else:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the run at once
    if _worker_pids:  # the workers tear down and report back; the run then ends as stopped (below)
        for pid in _worker_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        return
    pytest.exit("stopped by SIGTERM; fixtures torn down", returncode=128 + signum)


def pytest_sessionstart(session: pytest.Session) -> None:
    _this["session"] = session
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session: pytest.Session):
    yield
    if _this["stopped"] is not None and _worker_pids:
        pytest.exit("stopped by SIGTERM; fixtures torn down", returncode=128 + _this["stopped"])
