"""A real JupyterLab in Chromium: run the pipelines tutorial and drive its Studio until SMEM overflows and back.

Needs Debian's ``chromium`` (``apt-get install chromium``) and the ``playwright`` Python package; skipped
with the reason when either is missing. Screenshots go to ``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import contextlib
import json
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
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TOKEN = "tslab-browser-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _quiet_settings(settings: Path) -> None:
    path = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A fresh ``jupyter lab`` on 127.0.0.1 serving a copy of the tutorial, stopped by its pid afterwards."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install jupyterlab)")
    base = tmp_path_factory.mktemp("lab")
    root, home = base / "root", base / "home"
    root.mkdir()
    home.mkdir()
    shutil.copy(ROOT / "notebooks" / "01_pipelines.ipynb", root)
    _quiet_settings(base / "settings")
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(base / "config"),
           "JUPYTER_RUNTIME_DIR": str(base / "runtime"), "IPYTHONDIR": str(base / "ipython"),
           "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(base / "ws"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / "lab-server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
                             f"--port={port}", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
                             "--allow-root"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
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
                pytest.fail(f"jupyter lab did not start; see {ARTIFACTS / 'lab-server.log'}")
            time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


@pytest.fixture
def lab_page(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.console_errors = []
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        try:
            yield page
        finally:
            browser.close()


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).click()


def _set_stages(studio, value: int) -> None:
    box = studio.locator(".tslab-field-num_stages input")
    box.fill(str(value))
    box.press("Enter")


def test_studio_turns_capacity_error_and_back(lab, lab_page):
    try:
        _drive_studio(lab, lab_page)
    except Exception:
        lab_page.screenshot(path=str(ARTIFACTS / "lab-failure.png"))
        raise


def _drive_studio(lab, page) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page.goto(f"{lab}/lab/tree/01_pipelines.ipynb?token={TOKEN}&reset")
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    with contextlib.suppress(PlaywrightTimeout):  # Lab asks for a kernel if the specs load after the notebook
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    _menu(page, "Edit", "Clear Outputs of All Cells")
    _menu(page, "Run", "Run All Cells")
    studio = page.locator(".tslab-studio")
    studio.wait_for(timeout=120_000)
    last_output = re.compile(r"num_stages=15'\]\s+SAFE 4")  # the notebook's last cell: overflow, then revert
    expect(page.locator(".jp-RenderedText pre", has_text=last_output)).to_have_count(1, timeout=60_000)
    studio.scroll_into_view_if_needed()
    badge = studio.locator(".tslab-studio-badge .tslab-badge")
    summary = studio.locator(".tslab-layout-text")
    title = studio.locator(".js-plotly-plot .gtitle").first
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    safe_summary, safe_title = summary.inner_text(), title.text_content()
    page.screenshot(path=str(ARTIFACTS / "lab-1-safe.png"))

    seen = []
    for stages in (8, 12, 16):  # 16 KiB per stage: 16 stages overflow 227 KiB
        previous = summary.inner_text()
        _set_stages(studio, stages)
        expect(summary).not_to_have_text(previous, timeout=30_000)
        seen.append(badge.get_attribute("data-status"))
        if seen[-1] == "CAPACITY":
            break
    assert seen[-1] == "CAPACITY", seen
    expect(badge).to_contain_text("exceeds hardware capacity")
    assert summary.inner_text() != safe_summary and title.text_content() != safe_title
    assert "262,400 / 232,448 B" in summary.inner_text()
    page.screenshot(path=str(ARTIFACTS / "lab-2-capacity.png"))

    _set_stages(studio, 4)
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    expect(summary).to_have_text(safe_summary)
    assert title.text_content() == safe_title
    page.screenshot(path=str(ARTIFACTS / "lab-3-back.png"))

    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.console_errors == []
