"""The tslab widgets fit JupyterLab at 1600 and 1000 px wide: nothing sticks out, overlaps or is clipped, and their
drawings' text (flow, memory maps, the player's lanes) is never under 11 px.

One generated notebook shows a Studio (its editor tabs and its GPU tab), a ReplayPlayer of a deadlock, a BenchPanel,
the SweepChart of tutorial 08's recorded GEMM sweep, a Studio of the Blackwell GEMM, whose memory map has a TMEM
map beside the SMEM one, a Studio of the ping-pong Hopper GEMM (the lanes of a persistent schedule) and one of
the loop-guards teaching design (steps labelled every(2, start=1) and when_true(ring.read.item)).
Screenshots of each width go to ``test-artifacts/layout-<part>-<width>.png``.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from labkit import ARTIFACTS, TOKEN, open_and_run, overflowing, small_text

pytestmark = pytest.mark.browser
WIDTHS = (1600, 1000)
#: The notebook's own BenchPanel, not the one in the Studio's GPU tab.
BENCH = ".tslab-bench-panel:not(.tslab-studio .tslab-bench-panel)"
CELLS = [
    "import tslab\nfrom tslab.kernels import design\nfrom tslab.widgets import BenchPanel, ReplayPlayer, Studio",
    "Studio(design('tma_copy'))",
    "ReplayPlayer(tslab.check(design('demo_deadlock')).trace)",
    "BenchPanel('gemm_sm90', arch='sm_90a', shape=(4096, 4096, 4096))",  # numbers, a checkbox and menus
    "from tslab.sweep import SweepResult\nfrom tslab.widgets import SweepChart\n"
    "SweepChart(SweepResult.load('data/h200_gemm_sweep.jsonl'), x='smem_bytes', y='tflops')",
    "Studio(design('gemm_sm100'))",
    "from tslab.kernels import gemm_sm90\nStudio(gemm_sm90.design(**gemm_sm90.PINGPONG))",  # persistent: long lanes
    "Studio(design('demo_guards'))",  # guard labels on the blocks
]
STUDIO = ".tslab-studio >> nth=0"
#: The memory map of the Blackwell GEMM's Studio (the notebook's second Studio).
TMEM_MAP = ".tslab-studio >> nth=1 >> .tslab-widget-layout"
#: The ping-pong GEMM's Studio: a persistent schedule's swimlane, work-queue steps and a last-trip step included.
PINGPONG = ".tslab-studio >> nth=2"
#: The loop-guards teaching design's Studio.
GUARDS = ".tslab-studio >> nth=3"


def _put_notebook(lab: str, name: str) -> None:
    cells = [{"cell_type": "code", "source": src, "metadata": {}, "outputs": [], "execution_count": None}
             for src in CELLS]
    nb = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}}
    body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
    request = urllib.request.Request(f"{lab}/api/contents/{name}?token={TOKEN}", data=body, method="PUT",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()


#: How long a part may take to settle after the window is resized (Lab's panels, then the views, lay out again;
#: on a loaded machine that takes longer than on an idle one). A part that still does not fit after this does not fit.
SETTLE_MS = 6_000


def _check(page, selector: str, name: str, width: int) -> list[str]:
    page.locator(selector).first.scroll_into_view_if_needed()
    waited, found = 0, []
    while waited <= SETTLE_MS:
        page.wait_for_timeout(500)
        waited += 500
        found = [*overflowing(page, selector), *small_text(page.locator(selector))]  # and no chart text under 11 px
        if not found:
            break
    page.locator(selector).first.screenshot(path=str(ARTIFACTS / f"layout-{name}-{width}.png"))
    return [f"{width} {name}: {p}" for p in dict.fromkeys(found)]


def test_the_widgets_fit_at_1600_and_1000_px(lab, lab_page):
    try:
        _fit(lab, lab_page)
    except Exception:
        lab_page.screenshot(path=str(ARTIFACTS / "layout-failure.png"))
        raise


def _fit(lab, page) -> None:
    _put_notebook(lab, "layout_check.ipynb")
    open_and_run(page, lab, "layout_check.ipynb")
    studio, replay, bench, sweep = (page.locator(s).first for s in (".tslab-studio", ".tslab-replay", BENCH,
                                                                     ".tslab-sweep-chart"))
    for part in (studio, replay, bench, sweep):
        part.wait_for(timeout=120_000)
    studio.locator(".tslab-map").first.wait_for(timeout=60_000)
    replay.locator(".tslab-player").first.wait_for(timeout=60_000)
    blackwell = page.locator(TMEM_MAP).first
    blackwell.locator(".tslab-map").nth(1).wait_for(timeout=60_000)  # SMEM, then TMEM
    blackwell.scroll_into_view_if_needed()  # Lab leaves a cell far out of view unrendered: no text to read
    page.wait_for_timeout(500)
    spaces = [t.strip() for t in blackwell.locator(".tslab-map-space").all_inner_texts()]
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(1_500)  # Lab lays out its panels again, the views redraw
        studio.get_by_role("tab", name="pipelines").click()
        problems += _check(page, STUDIO, "studio", width)
        studio.get_by_role("tab", name="schedules").click()
        problems += _check(page, STUDIO, "studio-schedules", width)
        studio.get_by_role("tab", name="GPU").click()
        problems += _check(page, STUDIO, "studio-gpu", width)
        problems += _check(page, ".tslab-replay", "replay", width)
        problems += _check(page, BENCH, "bench", width)
        problems += _check(page, ".tslab-sweep-chart", "sweep", width)
        problems += _check(page, TMEM_MAP, "studio-tmem", width)
        problems += _check(page, PINGPONG, "studio-pingpong", width)
        problems += _check(page, GUARDS, "studio-guards", width)
        ticks = blackwell.locator(".tslab-map").nth(1).locator(".tslab-tick").all_text_contents()
        if ticks[-1:] != ["512 columns"]:
            problems.append(f"{width} studio-tmem: the TMEM map's last tick is {ticks[-1:]}, not 512 columns")
    guards = [t.strip() for t in page.locator(GUARDS).first.locator(".tslab-step-guard").all_inner_texts()]
    if guards != ["when_true(ring.read.item)", "every(2, start=1)", "every(2, start=1)"]:
        problems.append(f"studio-guards: the swimlane's guard labels are {guards}")
    if spaces != ["SMEM: 213,108 / 232,448 bytes", "TMEM: 512 / 512 columns of 128 lanes"]:
        problems.append(f"studio-tmem: the maps are headed {spaces}")
    if bench.locator(".tslab-bench-status", has_text="No GPU here").count():
        if bench.get_by_text("no GPU here: compile results only").count() != 1:
            problems.append("bench: no note that without a GPU there are compile results only")
        if bench.locator(".js-plotly-plot").count():
            problems.append("bench: draws empty axes without a GPU")
    if problems:
        pytest.fail("widget parts do not fit:\n" + "\n".join(problems), pytrace=False)
