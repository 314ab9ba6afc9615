"""A real JupyterLab in Chromium: the Hopper GEMM Studio of tutorial 03 shows all its parts and reacts to edits."""

from __future__ import annotations

import pytest
from labkit import ARTIFACTS, open_and_run, set_field

pytestmark = pytest.mark.browser


def test_gemm_studio_shows_every_part_and_follows_edits(lab, lab_page):
    try:
        _drive(lab, lab_page)
    except Exception:
        lab_page.screenshot(path=str(ARTIFACTS / "gemm-failure.png"))
        raise


def _drive(lab, page) -> None:
    from playwright.sync_api import expect

    open_and_run(page, lab, "03_memory_and_aliasing.ipynb")
    studio = page.locator(".tslab-studio")
    studio.wait_for(timeout=120_000)
    expect(page.locator(".jp-RenderedText pre", has_text="SAFE 32800 B instead of 16416 B")).to_have_count(
        1, timeout=90_000)  # the notebook's last cell has run
    studio.scroll_into_view_if_needed()
    badge = studio.locator(".tslab-studio-badge .tslab-badge")
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    panels = studio.locator(".tslab-pipeline-panel")
    expect(panels).to_have_count(2)  # smem_ab and smem_epi
    expect(studio.locator(".tslab-steps-later")).to_have_count(1)  # the step rows wait for their tab
    expect(studio.locator(".tslab-swimlane")).to_contain_text("MmaTask")
    expect(studio.locator(".tslab-map")).to_have_count(2)  # the SMEM map and the what-if without aliasing
    expect(studio.locator(".tslab-studio-states")).to_contain_text("101 states")
    page.screenshot(path=str(ARTIFACTS / "gemm-1-safe.png"))

    smem_ab = panels.filter(has_text="smem_ab").first
    summary = studio.locator(".tslab-layout-text")
    before = summary.inner_text()
    set_field(smem_ab, "num_stages", 8)  # 8 x 32 KiB of A/B tiles: over 227 KiB
    expect(badge).to_have_attribute("data-status", "CAPACITY", timeout=30_000)
    expect(badge).to_contain_text("exceeds hardware capacity")
    expect(summary).not_to_have_text(before)
    page.screenshot(path=str(ARTIFACTS / "gemm-2-capacity.png"))
    set_field(smem_ab, "num_stages", 4)
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    expect(summary).to_have_text(before)

    # The schedules tab, opened: a column of step rows for each task (LoadTask, MmaTask, EpilogueTask).
    studio.locator(".tslab-studio-editors .lm-TabBar-tab", has_text="schedules").click()
    expect(studio.locator(".tslab-task-column")).to_have_count(3, timeout=30_000)
    # Each task's steps are one widget: a row a step, its buttons acting on the design on show.
    mma_steps = studio.locator(".tslab-task-column", has_text="MmaTask").locator(".tslab-steplist-row")
    release_row = mma_steps.filter(has_text="smem_ab.ConsumerRelease").first
    expect(release_row).to_be_visible()
    release_row.locator(".tslab-steplist-up").click()
    current = studio.locator(".tslab-history-current")
    expect(current).to_contain_text("MmaTask: moved smem_ab.ConsumerRelease up", timeout=30_000)
    moved = studio.locator(".tslab-task-column", has_text="MmaTask").locator(".tslab-steplist-up:focus")
    expect(moved).to_have_count(1, timeout=30_000)  # the keyboard follows the step to its new row
    assert "smem_ab.ConsumerRelease" in moved.locator("xpath=..").inner_text()
    lane_release = studio.locator('.tslab-widget-swimlane .tslab-lane[data-task="MmaTask"] '
                                  '.tslab-step[data-section="loop"][data-counter="release"]')
    expect(lane_release).to_have_attribute("data-index", "2", timeout=30_000)  # the lanes follow the edit
    page.keyboard.press("Alt+ArrowDown")  # the keyboard, still on the step: back down
    expect(current).to_contain_text("MmaTask: moved smem_ab.ConsumerRelease down", timeout=30_000)
    expect(lane_release).to_have_attribute("data-index", "3", timeout=30_000)
    studio.locator(".tslab-history-undo").click()
    expect(current).to_contain_text("MmaTask: moved smem_ab.ConsumerRelease up", timeout=30_000)
    expect(lane_release).to_have_attribute("data-index", "2", timeout=30_000)
    studio.locator(".tslab-history-undo").click()
    expect(current).not_to_contain_text("MmaTask: moved", timeout=30_000)
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    # The lanes show the undone design again (a move sent from lanes drawn before that is refused as stale).
    expect(lane_release).to_have_attribute("data-index", "3", timeout=30_000)
    studio.locator(".tslab-studio-editors .lm-TabBar-tab", has_text="pipelines").click()

    # The swimlane: head | loop | tail aligned across the lanes, each step with the item it refers to.
    lanes = studio.locator(".tslab-widget-swimlane")
    expect(lanes.locator(".tslab-lane-heading")).to_have_count(4)
    release = lanes.locator('.tslab-lane[data-task="MmaTask"] .tslab-step[data-section="loop"][data-counter="release"]')
    expect(release).to_contain_text("release k")
    loop_x = [box["x"] for box in (lanes.locator(f'.tslab-lane[data-task="{t}"] .tslab-section-loop').bounding_box()
                                   for t in ("LoadTask", "MmaTask", "EpilogueTask"))]
    assert max(loop_x) - min(loop_x) < 1, loop_x  # the loop column starts at one x in every lane
    release.focus()
    release.press("Alt+ArrowLeft")  # the release one step up, before the last trip's wait: one history entry
    current = studio.locator(".tslab-history-current")
    expect(current).to_contain_text("MmaTask: moved smem_ab.ConsumerRelease up", timeout=30_000)
    expect(release).to_have_attribute("data-index", "2", timeout=30_000)  # the lanes show the moved design
    page.screenshot(path=str(ARTIFACTS / "gemm-3-moved.png"))
    lanes.locator('.tslab-lane[data-task="MmaTask"] .tslab-step').first.focus()
    page.keyboard.press("Control+z")  # the Studio's one history, from the keyboard
    expect(current).not_to_contain_text("MmaTask: moved", timeout=30_000)
    expect(badge).to_have_attribute("data-status", "SAFE", timeout=30_000)
    expect(release).to_have_attribute("data-index", "3")
    page.screenshot(path=str(ARTIFACTS / "gemm-4-undone.png"))

    # Back at the editors, the verdict and the memory map stay in sight while a field far down them is typed in:
    # the editors scroll inside their own box, the page does not move.
    studio.evaluate("e => e.scrollIntoView({block: 'start'})")
    last_field = studio.locator(".tslab-field-consumer_wait_signaling_threads").last
    last_field.scroll_into_view_if_needed()
    last_field.locator("select").focus()
    viewport = page.viewport_size
    for part in (".tslab-studio-header", ".tslab-studio-memory .tslab-map"):
        box = studio.locator(part).first.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], (part, box)
    box = last_field.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], box

    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.console_errors == []
