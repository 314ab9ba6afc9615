"""Typing into the Studio's num_stages field by hand at 1000 px: a number that is not whole is refused where it was
typed, the badge stays in sight and says it shows the last valid design, and a valid number clears both; undo
and redo (the buttons and Ctrl+Z / Ctrl+Shift+Z, in the field once its edit is applied) walk the one history, the
badge and the box following each step."""

from __future__ import annotations

import re

import pytest
from labkit import ARTIFACTS, open_and_run

pytestmark = pytest.mark.browser


def test_typing_2_5_is_refused_at_the_field_and_the_badge_stays(lab, lab_page):
    from playwright.sync_api import expect

    page = lab_page
    page.set_viewport_size({"width": 1000, "height": 900})
    try:
        open_and_run(page, lab, "01_pipelines.ipynb")
        studio = page.locator(".tslab-studio")
        studio.wait_for(timeout=120_000)
        expect(page.locator(".jp-RenderedText pre", has_text=re.compile(r"SAFE 4"))).to_have_count(1, timeout=60_000)
        studio.scroll_into_view_if_needed()
        badge = studio.locator(".tslab-studio-badge .tslab-badge")
        expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
        entries = studio.locator(".tslab-history-entry")
        count = entries.count()

        box = studio.locator(".tslab-field-num_stages input")
        box.click()
        _in_view(page, badge, "the badge, while num_stages is focused")
        page.keyboard.press("Control+A")
        page.keyboard.type("2.5")
        page.keyboard.press("Enter")

        error = studio.locator(".tslab-field-error")
        expect(error).to_contain_text("num_stages='2.5' is not a whole number", timeout=30_000)
        expect(error).to_contain_text(re.compile(r"showing the last valid design \(#\d+\)"))
        expect(box).to_have_value("2.5")
        page.wait_for_timeout(1_000)  # a wrongly applied edit would re-check within the debounce
        expect(badge).to_have_attribute("data-status", "SAFE")
        assert entries.count() == count
        expect(studio.locator(".tslab-field-num_stages.tslab-invalid")).to_have_count(1)
        expect(studio.locator(".tslab-studio-badge .tslab-stale")).to_contain_text("the last valid design")
        _in_view(page, badge, "the badge, after the refusal")
        error.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "lab-field-refused.png"))

        box.click()
        page.keyboard.press("Control+A")
        page.keyboard.type("3")
        page.keyboard.press("Enter")
        expect(studio.locator(".tslab-studio-badge .tslab-stale")).to_have_count(0, timeout=30_000)
        expect(studio.locator(".tslab-field-num_stages.tslab-invalid")).to_have_count(0)
        expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
        expect(entries).to_have_count(count + 1, timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "lab-field-valid-again.png"))

        # 3 stages -> 40 by hand: over the SMEM capacity; then undo and redo, by key and by button.
        box.click()
        page.keyboard.press("Control+A")
        page.keyboard.type("40")
        page.keyboard.press("Enter")
        expect(badge).to_have_attribute("data-status", "CAPACITY", timeout=30_000)
        # the message wraps at text line height, not at the widgets' row height (double-spaced, pushing the field
        # being edited down the screen)
        spacing = studio.locator(".tslab-studio-badge .tslab-first-error").evaluate(
            "e => { const s = getComputedStyle(e); return parseFloat(s.lineHeight) / parseFloat(s.fontSize); }")
        assert spacing <= 1.5, f"the verdict's message is spaced {spacing:.2f} x its font size"
        current = studio.locator(".tslab-history-current")
        expect(current).to_contain_text("smem_ring.num_stages 3 -> 40")
        # Ctrl+Z with the cursor still in the box: the edit was applied, so this is the Studio's undo (not the
        # browser's text undo, which would show 3 in the box while the design stays at 40)
        page.keyboard.press("Control+z")
        expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
        expect(box).to_have_value("3", timeout=30_000)
        expect(current).to_contain_text("-> 3")
        box.blur()  # leaving the box records nothing: it shows the design
        page.wait_for_timeout(1_000)
        expect(entries).to_have_count(count + 2)
        expect(current).to_contain_text("-> 3")
        page.screenshot(path=str(ARTIFACTS / "lab-field-undone.png"))
        studio.locator(".tslab-studio-switch").get_by_text("schedule", exact=True).click()  # 1000 px: one view
        studio.locator(".tslab-lane .tslab-step").first.focus()  # the keys act outside a text field too
        page.keyboard.press("Control+Shift+z")
        expect(badge).to_have_attribute("data-status", "CAPACITY", timeout=30_000)
        expect(box).to_have_value("40", timeout=30_000)
        studio.locator(".tslab-history-undo").click()
        expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
        expect(entries).to_have_count(count + 2)  # undo and redo walk the history; they add no entry
        _in_view(page, badge, "the badge, after undo")
        page.screenshot(path=str(ARTIFACTS / "lab-field-redone-and-undone.png"))
        assert page.console_errors == []
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab-field-refused-failure.png"))
        raise


def _in_view(page, locator, what: str) -> None:
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height, f"{what} is out of view: {box}"
