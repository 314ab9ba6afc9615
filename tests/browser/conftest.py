"""One real JupyterLab for the browser tests: a fresh server on 127.0.0.1 serving a copy of the tutorials (one per
xdist worker that runs browser tests, each on its own port, folders and log).

Each test's kernels are shut down after it, and the server with any kernel left when the session ends, also when
the run is stopped by SIGTERM (the root ``conftest.py``).

Needs Debian's ``chromium`` (``apt-get install chromium``), the ``playwright`` Python package and JupyterLab;
each test is skipped with the reason when one is missing. Screenshots go to ``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from labkit import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, TOKEN, record_kernel_messages, worker_suffix


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _labextension(data: Path) -> None:
    """Serve this checkout's build of the tslab lab extension (``tslab/labextension/``) if there is one."""
    built = ROOT / "tslab" / "labextension"
    if (built / "package.json").exists():
        (data / "labextensions").mkdir(parents=True)
        (data / "labextensions" / "tslab").symlink_to(built, target_is_directory=True)


def _quiet_settings(settings: Path) -> None:
    """No news toast, and no autosave: every test runs a copy of the notebooks shared by the tests of its worker,
    and a notebook autosaved after a run (JupyterLab's default, every 120 s: a slow run) holds views of that
    kernel's widgets; the next test to open it then draws them with no model behind them ("widget model not
    found" in the console, a javascript error box in the output)."""
    for name, values in (("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
                         ("docmanager-extension/plugin", {"autosave": False})):
        path = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def shut_down_kernels(url: str) -> list[str]:
    """End every notebook session and kernel the server runs (its REST API returns once each kernel has ended);
    the kernels' ids."""
    ended = []
    for kind in ("sessions", "kernels"):  # a session's kernel ends with it; then any kernel without one
        with urllib.request.urlopen(f"{url}/api/{kind}?token={TOKEN}", timeout=10) as r:
            found = json.load(r)
        for item in found:
            ended.append(item["kernel"]["id"] if kind == "sessions" else item["id"])
            request = urllib.request.Request(f"{url}/api/{kind}/{item['id']}?token={TOKEN}", method="DELETE")
            with contextlib.suppress(OSError):  # one that ended meanwhile
                urllib.request.urlopen(request, timeout=60).close()
    return list(dict.fromkeys(ended))


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """The server's URL; it serves a copy of ``notebooks/`` and is stopped by its process group at the end."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install jupyterlab)")
    base = tmp_path_factory.mktemp("lab")
    root, home = base / "root", base / "home"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    home.mkdir()
    _quiet_settings(base / "settings")
    _labextension(base / "data")
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(base / "config"),
           "JUPYTER_RUNTIME_DIR": str(base / "runtime"), "IPYTHONDIR": str(base / "ipython"),
           "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(base / "ws"),
           "JUPYTER_PATH": str(base / "data"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / f"lab-server{worker_suffix()}.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
                             f"--port={port}", "--ServerApp.port_retries=0",  # never another worker's server
                             f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
                             "--allow-root", "--LabApp.expose_app_in_browser=True"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not start; see {log.name}")
            time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            with contextlib.suppress(OSError):  # the kernels run in sessions of their own: not in the group below
                shut_down_kernels(url)
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


@pytest.fixture
def lab_page(lab, request):
    """A Chromium page that records console errors in ``page.console_errors``."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.console_errors, console, started = [], [], time.monotonic()
        page.on("console", lambda m: (console.append(f"{time.monotonic() - started:.3f} {m.type}: {m.text}"),
                                      m.type == "error" and page.console_errors.append(m.text)))
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        record_kernel_messages(page)
        try:
            yield page
        finally:
            browser.close()
            shut_down_kernels(lab)  # each test's notebooks start kernels (and GPU workers): none outlive it
            report = getattr(request.node, "rep_call", None)
            if report is not None and report.failed:  # what the page and its kernels said, for the diagnosis
                stem = ARTIFACTS / f"{request.node.name}{worker_suffix()}"
                stem.with_suffix(".frames.jsonl").write_text(
                    "".join(json.dumps(frame) + "\n" for frame in page.kernel_frames))
                stem.with_suffix(".console.txt").write_text("\n".join(console))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item (``item.rep_call``): the page fixture saves more on a failure."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
