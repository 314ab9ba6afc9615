"""Helpers shared by the browser tests: where things are, and how to open and run a tutorial in JupyterLab."""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TOKEN = "tslab-browser-test"


def menu(page, menu_name: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu_name}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).click()


def open_and_run(page, lab: str, notebook: str) -> None:
    """Open a tutorial in a fresh workspace, clear its saved outputs and run all its cells."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{lab}/lab/tree/{notebook}?token={TOKEN}&reset")
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    with contextlib.suppress(PlaywrightTimeout):  # Lab asks for a kernel if the specs load after the notebook
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    menu(page, "Edit", "Clear Outputs of All Cells")
    menu(page, "Run", "Run All Cells")


def set_field(panel, field: str, value) -> None:
    box = panel.locator(f".tslab-field-{field} input")
    box.fill(str(value))
    box.press("Enter")
