"""A real JupyterLab in Chromium: run the pipelines tutorial and drive its Studio until SMEM overflows and back."""

from __future__ import annotations

import re

import pytest
from labkit import ARTIFACTS, open_and_run, set_field

pytestmark = pytest.mark.browser


def test_studio_turns_capacity_error_and_back(lab, lab_page):
    try:
        _drive_studio(lab, lab_page)
    except Exception:
        lab_page.screenshot(path=str(ARTIFACTS / "lab-failure.png"))
        raise


def _drive_studio(lab, page) -> None:
    from playwright.sync_api import expect

    open_and_run(page, lab, "01_pipelines.ipynb")
    studio = page.locator(".tslab-studio")
    studio.wait_for(timeout=120_000)
    last_output = re.compile(r"num_stages 4 -> 15'\]\s+SAFE 4")  # the notebook's last cell: overflow, then revert
    expect(page.locator(".jp-RenderedText pre", has_text=last_output)).to_have_count(1, timeout=60_000)
    studio.scroll_into_view_if_needed()
    badge = studio.locator(".tslab-studio-badge .tslab-badge")
    summary = studio.locator(".tslab-layout-text")
    ring = studio.locator(".tslab-map .tslab-alloc").first  # the ring's bar: its width follows num_stages
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    safe_summary, safe_width = summary.inner_text(), ring.get_attribute("width")
    page.screenshot(path=str(ARTIFACTS / "lab-1-safe.png"))

    seen = []
    for stages in (8, 12, 16):  # 16 KiB per stage: 16 stages overflow 227 KiB
        previous = summary.inner_text()
        set_field(studio, "num_stages", stages)
        expect(summary).not_to_have_text(previous, timeout=30_000)
        seen.append(badge.get_attribute("data-status"))
        if seen[-1] == "CAPACITY":
            break
    assert seen[-1] == "CAPACITY", seen
    expect(badge).to_contain_text("exceeds hardware capacity")
    assert summary.inner_text() != safe_summary and ring.get_attribute("width") != safe_width
    assert "262,400 / 232,448 B" in summary.inner_text()
    page.screenshot(path=str(ARTIFACTS / "lab-2-capacity.png"))

    set_field(studio, "num_stages", 4)
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    expect(summary).to_have_text(safe_summary)
    expect(ring).to_have_attribute("width", safe_width, timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "lab-3-back.png"))

    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.console_errors == []
