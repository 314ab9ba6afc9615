"""A real JupyterLab in Chromium: run tutorial 04 and step its ReplayPlayers with the mouse and the arrow keys.

Needs Debian's ``chromium`` and the ``playwright`` Python package; skipped with the reason when either is
missing. Screenshots go to ``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "tslab-replay-test"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``jupyter lab`` on a free local port serving a copy of tutorial 04; stopped by its pid afterwards."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install jupyterlab)")
    base = tmp_path_factory.mktemp("replay-lab")
    root = base / "root"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / "04_checker_replay.ipynb", root)
    env = {**os.environ, "HOME": str(base), "JUPYTER_CONFIG_DIR": str(base / "config"),
           "JUPYTER_RUNTIME_DIR": str(base / "runtime"), "IPYTHONDIR": str(base / "ipython"),
           "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(base / "ws"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / "replay-lab-server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
                             f"--port={port}", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
                             "--allow-root", "--LabApp.expose_app_in_browser=True"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("jupyter lab did not start; see test-artifacts/replay-lab-server.log")
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def test_replay_player_steps_with_buttons_and_arrow_keys(lab):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        try:
            page.goto(f"{lab}/lab/tree/04_checker_replay.ipynb?token={TOKEN}")
            page.wait_for_selector(".jp-Notebook", timeout=90_000)
            page.wait_for_function("window.jupyterapp && window.jupyterapp.serviceManager", timeout=60_000)
            time.sleep(3)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            players = page.locator(".jp-OutputArea-output").filter(has=page.locator(".js-plotly-plot"))
            expect(players).to_have_count(3, timeout=120_000)
            first = players.first
            first.scroll_into_view_if_needed()
            expect(first).to_contain_text("step 0: initial state of demo_deadlock", timeout=30_000)
            first.locator("[title^='click here, then step']").click()
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            expect(first).to_contain_text(re.compile(r"step 3: LoadTask ran ProducerAcquire\(smem_ring\)"))
            page.keyboard.press("End")
            expect(first).to_contain_text("DEADLOCK: LoadTask blocked on smem_ring.ProducerAcquire")
            first.screenshot(path=str(ARTIFACTS / "replay-deadlock.png"))

            explorer = players.last
            explorer.scroll_into_view_if_needed()
            explorer.get_by_role("button", name="reset", exact=True).click()
            expect(explorer).to_contain_text("RUNNING: move one of: LoadTask, StoreTask")
            explorer.get_by_role("button", name=re.compile(r"^LoadTask: ")).click()
            expect(explorer).to_contain_text("step 1: LoadTask ran ProducerAuxWork(smem_ring.bind_load)")
            explorer.screenshot(path=str(ARTIFACTS / "replay-explorer.png"))
        finally:
            browser.close()
