"""A real JupyterLab in Chromium: run tutorial 04 and step its ReplayPlayers with the mouse and the arrow keys."""

from __future__ import annotations

import re

import pytest
from labkit import ARTIFACTS, open_and_run, wait_until_run

pytestmark = pytest.mark.browser


def test_replay_player_steps_with_buttons_and_arrow_keys(lab, lab_page):
    from playwright.sync_api import expect

    page = lab_page
    open_and_run(page, lab, "04_checker_replay.ipynb")
    players = page.locator(".jp-OutputArea-output").filter(has=page.locator(".tslab-widget-trace .tslab-player"))
    expect(players).to_have_count(3, timeout=120_000)
    first = players.first
    first.scroll_into_view_if_needed()
    expect(first).to_contain_text("step 0: initial state of demo_deadlock", timeout=30_000)
    first.locator(".tslab-player").focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    expect(first).to_contain_text(re.compile(r"step 4: LoadTask ran ProducerAcquire\(smem_ring\)"))
    page.keyboard.press("End")
    expect(first).to_contain_text("DEADLOCK: LoadTask blocked on smem_ring.ProducerAcquire")
    first.screenshot(path=str(ARTIFACTS / "replay-deadlock.png"))

    explorer = players.last
    explorer.scroll_into_view_if_needed()
    wait_until_run(page)  # the Explorer answers through the kernel, which runs the cells after it first
    explorer.get_by_role("button", name="reset", exact=True).click()
    expect(explorer).to_contain_text("RUNNING: move one of: LoadTask, StoreTask")
    explorer.get_by_role("button", name=re.compile(r"^LoadTask: ")).click()
    expect(explorer).to_contain_text("step 1: LoadTask ran ProducerAuxWork(smem_ring.bind_load)")
    explorer.screenshot(path=str(ARTIFACTS / "replay-explorer.png"))
    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.console_errors == []
