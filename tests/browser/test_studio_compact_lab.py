"""The attention Studio in JupyterLab at 1000 px (file browser open) and 1600 px: an edit and what it changes on one
screen. Narrow, the editors come first and one of the memory map, the flow and the schedule below them, picked by a
switch that follows the editors' tab and an unsafe verdict; wide, all three are shown and the switch is not."""

from __future__ import annotations

import json
import urllib.request

import pytest
from labkit import ARTIFACTS, TOKEN, open_and_run

pytestmark = pytest.mark.browser

NOTEBOOK = "attention_studio.ipynb"
CELLS = ["import tslab\nfrom tslab.widgets import Studio",
         'studio = Studio(tslab.kernels.design("attention_sm90"))\nstudio']


def _put_notebook(lab: str) -> None:
    cells = [{"id": f"c{i}", "cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": src} for i, src in enumerate(CELLS)]
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                                      "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
    request = urllib.request.Request(f"{lab}/api/contents/{NOTEBOOK}", data=body, method="PUT",
                                     headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10):
        pass


def _in_view(page, locator, what: str, *, top: float | None = None) -> None:
    """The whole of ``locator`` on screen, or (``top``) at least its first ``top`` px."""
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    shown = box["height"] if top is None else min(top, box["height"]) if box else 0
    assert box is not None and box["y"] >= 0 and box["y"] + shown <= height + 1, f"{what} is out of view: {box}"


def test_an_edit_and_what_it_changes_fit_one_screen(lab, lab_page):
    page = lab_page
    try:
        _drive(lab, page)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "studio-compact-failure.png"))
        raise


def _drive(lab: str, page) -> None:
    from playwright.sync_api import expect

    _put_notebook(lab)
    page.set_viewport_size({"width": 1000, "height": 900})
    open_and_run(page, lab, NOTEBOOK)
    studio = page.locator(".tslab-studio")
    studio.wait_for(timeout=120_000)
    badge = studio.locator(".tslab-studio-badge .tslab-badge")
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=60_000)
    assert page.locator(".jp-FileBrowser").first.is_visible(), "the file browser should be open, as a newcomer has it"
    width = studio.bounding_box()["width"]
    assert width < 860, f"the Studio is {width:.0f} px wide at a 1000 px window: not the narrow arrangement"
    studio.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)

    switch = studio.locator(".tslab-studio-switch")
    memory, flow, lanes = (studio.locator(f".tslab-studio-{part}") for part in ("memory", "flow", "lanes"))
    expect(switch).to_be_visible()
    expect(memory).to_be_visible()
    expect(flow).to_be_hidden()
    expect(lanes).to_be_hidden()
    height = studio.bounding_box()["height"]
    assert height <= 900, f"the attention Studio is {height:.0f} px tall at 1000 px (it was 2,176)"
    _in_view(page, memory.locator(".tslab-map").first, "the memory map")
    page.screenshot(path=str(ARTIFACTS / "studio-compact-1000-memory.png"))

    # An edit that deadlocks: the verdict, the field and the schedule with its counterexample come into view.
    box = studio.locator(".tslab-panel-smem_kv .tslab-field-num_stages input")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("1")
    page.keyboard.press("Enter")
    expect(badge).to_have_attribute("data-status", "DEADLOCK", timeout=60_000)
    expect(lanes).to_be_visible(timeout=30_000)
    expect(memory).to_be_hidden()
    _in_view(page, badge, "the DEADLOCK badge")
    _in_view(page, box, "the num_stages field")
    _in_view(page, lanes.locator(".tslab-lanes-status"), "the schedule's heading")
    page.screenshot(path=str(ARTIFACTS / "studio-compact-1000-deadlock.png"))

    # Undo from the field (its edit was applied): SAFE again; the switch picks the flow, a ring opens its fields.
    page.keyboard.press("Control+z")
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=60_000)
    switch.get_by_text("flow", exact=True).click()
    expect(flow).to_be_visible()
    expect(lanes).to_be_hidden()
    # attention's flow is 460 px tall: its first tasks and rings in view, the rest a short scroll
    _in_view(page, flow.locator("svg.tslab-flow-svg"), "the flow diagram's top 250 px", top=250)
    _in_view(page, badge, "the badge beside the flow")
    flow.locator('.tslab-ring[data-resource="smem_q"]').click()
    expect(studio.locator(".tslab-panel-smem_q.tslab-selected")).to_have_count(1, timeout=30_000)
    expect(flow).to_be_visible()  # the pipelines tab opened; the flow the ring was clicked in stays
    page.screenshot(path=str(ARTIFACTS / "studio-compact-1000-flow.png"))
    # The schedules tab brings the schedule.
    studio.locator(".tslab-studio-editors .lm-TabBar-tab", has_text="schedules").click()
    expect(lanes).to_be_visible(timeout=30_000)

    # Wide: no switch, the three side by side and below the editors.
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.wait_for_timeout(1_000)
    if studio.bounding_box()["width"] >= 860:
        expect(switch).to_be_hidden()
        for part in (memory, flow, lanes):
            expect(part).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "studio-compact-1600.png"))
    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.console_errors == []
