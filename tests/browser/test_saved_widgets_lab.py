"""A real JupyterLab in Chromium: a tutorial's widgets before it runs, live once it has, and after a reopen
without their kernel: never plain text or "Error displaying widget", always the design, verdict or trace."""

from __future__ import annotations

import contextlib

import pytest
from labkit import ARTIFACTS, TOKEN, menu, wait_for_widget_restore, wait_until_run

pytestmark = pytest.mark.browser

NOTEBOOK = "01_pipelines.ipynb"


def _open(page, lab: str, *, reset: bool = True) -> int:
    """Open the tutorial; the index of the first kernel frame recorded after (for ``wait_for_widget_restore``)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    since = len(page.restore_frames)
    page.goto(f"{lab}/lab/tree/{NOTEBOOK}?token={TOKEN}" + ("&reset" if reset else ""))
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    with contextlib.suppress(PlaywrightTimeout):  # Lab asks for a kernel if the specs load after the notebook
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    return since


def _to_the_studio(page) -> None:
    """Scroll to the Studio's cell: JupyterLab draws a cell's outputs once it is near the viewport."""
    cell = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea", has_text="studio = Studio("))
    cell.scroll_into_view_if_needed(timeout=60_000)


def _no_widget_text(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text("Error displaying widget")).to_have_count(0)
    expect(page.locator(".jp-OutputArea-output pre", has_text="Studio(tma_copy")).to_have_count(0)


def test_a_saved_studio_draws_its_design_and_verdict_then_the_live_studio_after_run_all(lab, lab_page):
    page = lab_page
    try:
        _drive(page, lab)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "saved-failure.png"))
        raise


def _drive(page, lab: str) -> None:
    from playwright.sync_api import expect

    since = _open(page, lab)
    _to_the_studio(page)
    saved = page.locator(".tslab-live-or-saved", has=page.locator(".tslab-saved-note", has_text="saved Studio output"))
    expect(saved).to_have_count(1, timeout=60_000)  # the committed Studio output, before anything runs
    expect(page.locator(".tslab-saved-note", has_text="saved PipelineEditor output")).to_have_count(1)
    expect(saved.locator(".tslab-badge").first).to_have_text("SAFE")
    expect(saved.locator(".tslab-lane")).to_have_count(2)  # tma_copy's LoadTask and StoreTask
    _no_widget_text(page)
    page.screenshot(path=str(ARTIFACTS / "saved-1-before-run.png"))

    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    wait_for_widget_restore(page, since)
    menu(page, "Run", "Run All Cells")
    wait_until_run(page)
    _to_the_studio(page)
    studio = page.locator(".tslab-live-or-saved .tslab-studio")
    expect(studio).to_have_count(1, timeout=60_000)
    expect(studio).to_be_visible()
    expect(page.locator(".tslab-saved-note:visible")).to_have_count(0)
    _no_widget_text(page)
    page.screenshot(path=str(ARTIFACTS / "saved-2-live.png"))

    menu(page, "File", "Save Notebook")
    page.wait_for_timeout(1_000)
    menu(page, "Kernel", "Shut Down Kernel")
    page.wait_for_timeout(1_000)
    _open(page, lab, reset=False)  # reopened without the kernel that held the widgets' models
    _to_the_studio(page)
    expect(saved.locator(".tslab-saved-note:visible")).to_have_count(1, timeout=60_000)
    expect(saved.locator(".tslab-badge:visible").first).to_have_text("SAFE")
    _no_widget_text(page)
    page.screenshot(path=str(ARTIFACTS / "saved-3-reopened.png"))
    assert page.console_errors == [] or all("model not found" in e or "Model not found" in e
                                            for e in page.console_errors), page.console_errors
