"""Every tutorial in JupyterLab in Chromium, at 1600 and 1000 px: as committed (before it runs), its saved widget
outputs draw (never their plain text or "Error displaying widget") and fit; after Run All, no cell raised and its
charts, timelines and widgets fit.

Screenshots: ``test-artifacts/tutorial-<nb>-saved-<width>.png`` (the first screen before running) and each
chart's ``tutorial-<nb>-<n>-<width>.png`` after.
"""

from __future__ import annotations

import contextlib
import re

import pytest
from labkit import ARTIFACTS, TOKEN, open_and_run

pytestmark = pytest.mark.browser
WIDTHS = (1600, 1000)

#: The charts screenshotted: plotly figures and profile timelines.
CHARTS = ".jp-OutputArea-output .svg-container, .jp-OutputArea-output .tslab-timeline"

#: Drawn parts wider than the output area they sit in (plotly draws into a fixed-size svg-container); a replay's
#: lanes or a flow too wide even at their narrowest scroll sideways in a box of their own instead.
TOO_WIDE_JS = """
(areas) => areas.flatMap((area) => {
  const limit = area.getBoundingClientRect().right + 1;
  const drawn = '.svg-container, .tslab-sweep-chart, .tslab-studio, .tslab-bench-panel, .tslab-timeline, svg, '
    + '.tslab-rendered, .tslab-swimlane-grid';
  return [...area.querySelectorAll(drawn)]
    .filter((e) => !e.parentElement.closest('.tslab-lanes-box, .tslab-flow-scroll'))  // boxes that scroll sideways
    .filter((e) => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > limit)
    .map((e) => (e.getAttribute('class') || e.tagName).split(' ')[0] + ' '
      + Math.round(e.getBoundingClientRect().right - limit) + ' px');
})
"""


#: Words of a replay player's state tables, legends and captions, and of printed output, that the page breaks across
#: two lines ("runnab|le", "EpilogueT|ask"): each word's rectangles, one per line it is drawn on. A hyphen is a place
#: to break; a word wider than its box on its own (a PTX instruction's name) can only be broken.
BROKEN_WORDS_JS = """
(parts) => parts.flatMap((part) => {
  const out = [];
  const walker = document.createTreeWalker(part, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.textContent.matchAll(/[^\\s-]+/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const rects = [...range.getClientRects()].filter((r) => r.width > 0);
      const tops = new Set(rects.map((r) => Math.round(r.top)));
      const wide = rects.reduce((w, r) => w + r.width, 0) > part.clientWidth;
      if (tops.size > 1 && !wide) out.push(m[0]);
    }
  }
  return out;
})
"""
BROKEN_WORDS_IN = ".tslab-player-panel td, .tslab-legend-item, .tslab-player-caption, .jp-RenderedText pre"


def _broken_words(page, width: int) -> list[str]:
    words = page.locator(f".jp-OutputArea-output :is({BROKEN_WORDS_IN}):visible").evaluate_all(BROKEN_WORDS_JS)
    return [f"{width}: the word {w!r} is broken across lines" for w in dict.fromkeys(words)]


def _wait_for_all_cells(page) -> None:
    """Until the last code cell has run (Lab renders only the cells in view: earlier prompts may be empty)."""
    try:
        page.wait_for_function(
            "() => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.innerText);"
            " return p.length > 0 && /\\[\\d+\\]/.test(p[p.length - 1]) && !p.some(t => t.includes('*')); }",
            timeout=300_000)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "tutorial-wait.png"))
        raise


def _scrolled_through(page):
    """Scroll the notebook from top to bottom, a screen at a time; yields at each position."""
    outer = page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer").first
    outer.evaluate("(e) => { e.scrollTop = 0; }")
    for _ in range(80):  # a tutorial is a few dozen screens at most
        page.wait_for_timeout(400)
        yield
        at_end = outer.evaluate("(e) => { e.scrollTop += e.clientHeight * 0.8;"
                                " return e.scrollTop + e.clientHeight >= e.scrollHeight - 2; }")
        if at_end:
            page.wait_for_timeout(400)
            yield
            return


#: Tutorials whose outputs include a chart (06's are tables and widgets: only their widths are checked).
CHARTED = ("07_hopper_gemm.ipynb", "08_sweep_a_design_space.ipynb", "09_where_the_time_goes.ipynb",
           "10_attention.ipynb")
TUTORIALS = ("00_tour.ipynb", "01_pipelines.ipynb", "02_schedules.ipynb", "03_memory_and_aliasing.ipynb",
             "04_checker_replay.ipynb", "05_gpu_compile_and_time.ipynb", "06_open_your_kernel.ipynb", *CHARTED)
#: A widget's plain-text repr: what a saved output showed before tslab kept a payload beside the model id.
WIDGET_TEXT = re.compile(r"^(Studio|PipelineEditor|ScheduleEditor|LayoutChart|ReplayPlayer|BenchPanel|SweepChart|"
                         r"KnobPanel)\(")


def _widget_problems(page) -> list[str]:
    """Display outputs that show a widget as plain text or as ipywidgets' error, as the page shows them now."""
    shown = page.locator('.jp-OutputArea-output[data-mime-type="text/plain"]:visible')  # not print()'s stream
    found = [f"widget as text: {t[:60]!r}" for t in shown.all_inner_texts() if WIDGET_TEXT.match(t)]
    return found + ["Error displaying widget"] * page.locator("text=Error displaying widget >> visible=true").count()


def _open_saved(page, lab: str, notebook: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{lab}/lab/tree/{notebook}?token={TOKEN}&reset")
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    with contextlib.suppress(PlaywrightTimeout):
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)


def _fit_problems(page, width: int) -> list[str]:
    return [f"{width}: {p}" for p in page.locator(".jp-OutputArea-output").evaluate_all(TOO_WIDE_JS)]


@pytest.mark.parametrize("notebook", TUTORIALS)
def test_tutorial_runs_and_its_charts_fit(lab, lab_page, notebook):
    page = lab_page
    problems = []
    _open_saved(page, lab, notebook)  # as committed: the saved outputs, no kernel state behind them
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(1_000)
        for i, _ in enumerate(_scrolled_through(page)):
            problems += [f"saved, {width}: {p}" for p in _widget_problems(page) + _fit_problems(page, width)
                         + _broken_words(page, width)]
            if i == 0:
                page.screenshot(path=str(ARTIFACTS / f"tutorial-{notebook[:2]}-saved-{width}.png"))
    open_and_run(page, lab, notebook)
    _wait_for_all_cells(page)
    raised, shots = False, set()
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(1_500)
        for _ in _scrolled_through(page):
            problems += _fit_problems(page, width) + [f"run, {width}: {p}" for p in _widget_problems(page)]
            problems += [f"run, {p}" for p in _broken_words(page, width)]
            raised = raised or page.locator(".jp-OutputArea-output", has_text="Traceback").count() > 0
            for chart in page.locator(CHARTS).all():
                title = chart.inner_text()[:60]
                if chart.is_visible() and (title, width) not in shots:
                    chart.screenshot(path=str(ARTIFACTS / f"tutorial-{notebook[:2]}-{len(shots)}-{width}.png"))
                    shots.add((title, width))
    assert not raised, f"{notebook}: a cell raised"
    assert shots or notebook not in CHARTED, f"{notebook}: no chart was drawn"
    if problems:
        pytest.fail(f"{notebook}: widgets shown as text, parts wider than their output area, or broken words:\n"
                    + "\n".join(dict.fromkeys(problems)), pytrace=False)
