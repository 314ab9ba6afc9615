"""Ctrl+Z after a click on the Studio's memory map or flow diagram (which take no focus) undoes the Studio's last
edit and leaves the notebook alone: the cell that shows the Studio keeps its source."""

from __future__ import annotations

import re

import pytest
from labkit import ARTIFACTS, open_and_run

pytestmark = pytest.mark.browser


def test_ctrl_z_after_a_click_on_the_map_or_the_flow_is_the_studios(lab, lab_page):
    from playwright.sync_api import expect

    page = lab_page
    page.set_viewport_size({"width": 1600, "height": 1000})
    try:
        open_and_run(page, lab, "01_pipelines.ipynb")
        studio = page.locator(".tslab-studio")
        studio.wait_for(timeout=120_000)
        expect(page.locator(".jp-RenderedText pre", has_text=re.compile(r"SAFE 4"))).to_have_count(1, timeout=60_000)
        studio.scroll_into_view_if_needed()
        badge = studio.locator(".tslab-studio-badge .tslab-badge")
        expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
        cell = page.locator(".jp-Cell", has=studio)
        source = cell.locator(".jp-InputArea .cm-content").inner_text()
        box = studio.locator(".tslab-field-num_stages input")
        stages = box.input_value()
        for where in (".tslab-studio-flow", ".tslab-layout"):
            # Click into the cell's editor first, as a user who just typed there: the focus is in the editor.
            cell.locator(".jp-InputArea .cm-content").click()
            box.click()
            page.keyboard.press("Control+A")
            page.keyboard.type("40")
            page.keyboard.press("Enter")
            expect(badge).to_have_attribute("data-status", "CAPACITY", timeout=30_000)
            page.wait_for_timeout(500)  # the views redraw after the re-check
            target = studio.locator(where).first
            target.scroll_into_view_if_needed()
            target.click(position={"x": 5, "y": 5})  # a corner: no ring, no bar (they are links of their own)
            page.keyboard.press("Control+z")
            expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
            expect(box).to_have_value(stages, timeout=30_000)
            assert cell.locator(".jp-InputArea .cm-content").inner_text() == source, f"the cell changed ({where})"
        page.screenshot(path=str(ARTIFACTS / "lab-studio-keys.png"))
        assert page.console_errors == []
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab-studio-keys-failure.png"))
        raise
