"""A real JupyterLab in Chromium with tslab's lab extension: saved outputs replay without a kernel, design files
open, and "Check with tslab..." checks a kernel file from the file browser."""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
from labkit import ARTIFACTS, ROOT, TOKEN

pytestmark = pytest.mark.browser
BUILT = ROOT / "tslab" / "labextension" / "package.json"
CURRENT_TAB = ".lm-TabBar-tab.jp-mod-current[data-type='document-title']"


@pytest.fixture
def page(lab, lab_page):
    """The lab with the extension loaded, in a fresh workspace; a screenshot is kept when a test fails."""
    if not BUILT.exists():
        pytest.skip("the lab extension is not built (cd labextension && npm ci && npm run build:prod)")
    lab_page.foreign_errors = []
    lab_page.on("pageerror", lambda e: _foreign(e) and lab_page.foreign_errors.append(str(e)))
    lab_page.goto(f"{lab}/lab?reset&token={TOKEN}")
    lab_page.wait_for_function("window.jupyterapp && window.jupyterapp.commands.hasCommand('tslab:check-file')",
                               timeout=60_000)
    lab_page.locator(".jp-DirListing-content").wait_for(timeout=30_000)
    yield lab_page
    if _our_errors(lab_page):
        lab_page.screenshot(path=str(ARTIFACTS / "labextension-failure.png"))


def _foreign(error) -> bool:
    """ipywidgets' manager rejects on a notebook opened without a kernel (``session`` is null): not ours."""
    return "jupyterlab-manager" in (error.stack or "") and "reading 'kernel'" in error.message


def _our_errors(page) -> list[str]:
    errors = list(page.console_errors)
    for foreign in page.foreign_errors:
        errors.remove(foreign)
    return errors


def _put(lab: str, path: str, text: str) -> None:
    """Write a file into the lab's root through the contents API."""
    body = json.dumps({"type": "file", "format": "text", "content": text}).encode()
    request = urllib.request.Request(f"{lab}/api/contents/{path}", data=body, method="PUT",
                                     headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10):
        pass


def _accept_kernel_dialog(page) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):  # Lab asks for a kernel if the specs load after the notebook
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=3_000)


def test_saved_tutorial_replays_its_deadlock_without_a_kernel(page):
    from playwright.sync_api import expect

    open_saved = ("path => { window.jupyterapp.commands.execute('docmanager:open', "  # returns at once
                  "{path, factory: 'Notebook', kernelPreference: {shouldStart: false}}); }")
    # Stamped in the page when the player appears (no polling delay): milliseconds since the open command.
    open_timed = ("path => { const t0 = performance.now(); const seen = new MutationObserver(() => {"
                  " if (document.querySelector('.tslab-rendered-verdict .tslab-player')) {"
                  " window.tslabPlayerMs = performance.now() - t0; seen.disconnect(); } });"
                  " seen.observe(document.body, {childList: true, subtree: true});"
                  " window.jupyterapp.commands.execute('docmanager:open',"
                  " {path, factory: 'Notebook', kernelPreference: {shouldStart: false}}); }")
    caption_is = ("text => (document.querySelector('.tslab-rendered-verdict .tslab-player-caption') || {})"
                  ".textContent?.startsWith(text)")
    page.evaluate(open_saved, "02_schedules.ipynb")  # Lab's first notebook loads the notebook code
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=30_000)
    page.evaluate("async () => { const w = window.jupyterapp.shell.currentWidget; await w.context.ready;"
                  " await w.revealed; await new Promise(done => requestIdleCallback(done)); }")
    page.evaluate(open_timed, "04_checker_replay.ipynb")
    page.wait_for_function(caption_is, arg="step 0: initial state of demo_deadlock", timeout=30_000)
    drawn = page.evaluate("() => window.tslabPlayerMs") / 1000
    player = page.locator(".tslab-rendered-verdict .tslab-player").first
    caption = player.locator(".tslab-player-caption")
    player.focus()
    start = time.monotonic()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(caption_is, arg="step 1: ", timeout=10_000)
    interactive = drawn + time.monotonic() - start
    (ARTIFACTS / "labextension-time-to-player.txt").write_text(
        f"tutorial 04 opened: player drawn after {drawn:.2f} s, stepped by a key after {interactive:.2f} s\n")

    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(caption).to_contain_text(re.compile(r"^step 4: LoadTask ran ProducerAcquire\(smem_ring\)"))
    expect(player).not_to_have_class(re.compile("tslab-at-fault"))
    page.keyboard.press("End")
    expect(player).to_have_class(re.compile("tslab-at-fault"))
    expect(caption).to_contain_text("DEADLOCK: LoadTask blocked on smem_ring.ProducerAcquire")
    expect(player.locator(".tslab-fault-step")).to_have_count(1)
    expect(page.locator(".tslab-rendered-verdict .tslab-badge").first).to_have_text("DEADLOCK")
    player.screenshot(path=str(ARTIFACTS / "labextension-deadlock.png"))

    race = page.locator(".tslab-rendered-trace .tslab-player", has_text="demo_race").first  # the saved trace
    race.scroll_into_view_if_needed()
    race.get_by_role("button", name="last step").click()
    expect(race.locator(".tslab-player-caption")).to_contain_text("RACE: ")
    assert page.get_by_text("No Kernel").count() >= 1  # the kernel never started: the outputs alone
    # A bound against a player that waits for something that never comes (a kernel, a widget model), not a speed
    # target: about 1 s on an idle 2-core machine, 3.3 s seen on a loaded one.
    assert interactive < 10.0, f"{interactive:.2f} s from opening the notebook to a player that steps"
    assert _our_errors(page) == []


def test_design_file_opens_with_its_verdict_and_opens_a_notebook(page, lab, tmp_path):
    from playwright.sync_api import expect

    import tslab
    from tslab.kernels import design

    launcher = page.locator(".jp-Launcher-section", has=page.locator(".jp-Launcher-sectionTitle", has_text="tslab"))
    expect(launcher.locator(".jp-LauncherCard")).to_have_text(["New design notebook", "Tutorials"])
    expect(launcher.locator(".jp-LauncherCard-icon svg")).to_have_count(2)  # tslab's own icons, not blanks
    from tslab.kernels.gemm_sm90 import ALIASED

    d = design("gemm_sm90", **{**ALIASED, "stages": 3})  # the variant whose epilogue aliases the A/B ring
    _put(lab, "gemm.tslab.json", Path(d.save(tmp_path / "gemm.tslab.json", verdict=tslab.check(d))).read_text())
    page.evaluate("path => { window.jupyterapp.commands.execute('docmanager:open', {path}); }", "gemm.tslab.json")
    viewer = page.locator(".tslab-rendered-design")
    expect(viewer.locator(".tslab-kernel")).to_have_text("gemm_sm90", timeout=30_000)
    expect(viewer.locator(".tslab-kv")).to_contain_text("stages")
    expect(viewer.locator(".tslab-saved-verdict .tslab-badge")).to_have_text("SAFE")
    expect(viewer.locator(".tslab-aliased")).to_have_count(3)
    page.screenshot(path=str(ARTIFACTS / "labextension-design-file.png"))
    viewer.get_by_role("button", name="Open in a notebook").click()
    _accept_kernel_dialog(page)
    expect(page.locator(CURRENT_TAB)).to_contain_text("gemm.ipynb", timeout=30_000)
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1)
    expect(cell).to_contain_text('Studio(tslab.Design.from_json(open("gemm.tslab.json").read()))', timeout=30_000)
    assert _our_errors(page) == []


def test_check_with_tslab_captures_a_kernel_file_and_shows_its_verdict(page, lab):
    from playwright.sync_api import expect

    _put(lab, "ring_copy.py", (ROOT / "tests" / "fixtures" / "ring_copy.py").read_text())
    page.evaluate("() => { window.jupyterapp.commands.execute('filebrowser:refresh'); }")
    item = page.locator(".jp-DirListing-item", has=page.locator(".jp-DirListing-itemText", has_text="ring_copy.py"))
    item.click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Check with tslab\.\.\.$")).click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog.get_by_label("host function")).to_have_value("ring_copy")
    expect(dialog.get_by_label("arguments")).to_have_value('fake.tensor("f16", (8, 256)), fake.tensor("f16", (8, 256))')
    expect(dialog.locator(".tslab-check-signature")).to_contain_text("def ring_copy(")  # what the arguments are for
    box = dialog.locator(".jp-Dialog-content").bounding_box()
    assert box is not None and box["width"] >= 560, box  # room for a signature and its arguments
    dialog.get_by_role("button", name="Check").click()
    badge = page.locator(".jp-NotebookPanel:visible .tslab-rendered-verdict .tslab-badge")
    expect(page.locator(CURRENT_TAB)).to_contain_text("check_ring_copy.ipynb", timeout=30_000)
    expect(badge).to_have_text("SAFE", timeout=240_000)
    expect(page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1)).to_contain_text(
        'tslab.capture_file("ring_copy.py", "ring_copy"')
    page.screenshot(path=str(ARTIFACTS / "labextension-check-file.png"))
    assert _our_errors(page) == []


@pytest.mark.parametrize("width", [1000, 1600])
def test_saved_profile_timeline_fits_zooms_and_names_a_step(page, width):
    """Tutorial 09's saved timeline draws without a kernel inside the output area, zooms and pans from its
    buttons and keys, and names the step under the pointer."""
    from playwright.sync_api import expect

    page.set_viewport_size({"width": width, "height": 1000})
    page.evaluate("path => { window.jupyterapp.commands.execute('docmanager:open',"
                  " {path, factory: 'Notebook', kernelPreference: {shouldStart: false}}); }",
                  "09_where_the_time_goes.ipynb")
    _accept_kernel_dialog(page)
    timeline = page.locator(".jp-OutputArea-output .tslab-timeline").first
    timeline.wait_for(timeout=60_000)
    timeline.scroll_into_view_if_needed()
    lanes = timeline.locator("svg.tslab-timeline-lanes")
    area = page.locator(".jp-OutputArea-output", has=page.locator(".tslab-timeline")).first
    assert lanes.bounding_box()["width"] <= area.bounding_box()["width"] + 1, "the timeline is wider than its output"
    assert lanes.bounding_box()["width"] > 0.6 * area.bounding_box()["width"], "the timeline does not use the width"
    window = timeline.locator(".tslab-timeline-window")
    whole = window.inner_text()
    timeline.get_by_role("button", name="zoom in").click()
    expect(window).not_to_have_text(whole)
    zoomed = window.inner_text()
    timeline.get_by_role("button", name="pan right").click()
    expect(window).not_to_have_text(zoomed)
    timeline.focus()
    page.keyboard.press("0")
    expect(window).to_have_text(whole)
    slices = timeline.locator("rect.tslab-slice")
    widest = slices.evaluate_all("(rs) => rs.reduce((best, r, i) =>"
                                 " r.getBBox().width > rs[best].getBBox().width ? i : best, 0)")
    slices.nth(widest).hover()
    named = slices.nth(widest).locator("title").text_content()
    assert re.match(r"\w+Task warp \d+: \w+\(\w+\) ", named), named
    expect(timeline.locator(".tslab-timeline-detail")).to_have_text(named)
    timeline.screenshot(path=str(ARTIFACTS / f"timeline-09-{width}.png"))
    assert not _our_errors(page)
