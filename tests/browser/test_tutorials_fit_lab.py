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
#: The window's height while a tutorial is read through: tall, so a pass takes a third of the screens a 1000 px window
#: would (the checks are of widths; the first screen's screenshot shows the top 1000 px of it).
HEIGHT = 2600

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


#: Everything one screen of a notebook is checked for, in one pass in the page (a round trip each was most of the
#: time a tutorial's check took): widgets shown as plain text or as ipywidgets' error, parts wider than their output
#: area, words broken across lines, whether a cell raised, and the charts in view (their index and title).
SCREEN_JS = f"""
([widgetText, brokenIn, charts]) => {{
  const shown = (e) => {{
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
  }};
  const areas = [...document.querySelectorAll('.jp-OutputArea-output')];
  const asText = areas.filter((a) => a.dataset.mimeType === 'text/plain' && shown(a))
    .map((a) => a.innerText).filter((t) => new RegExp(widgetText).test(t));
  let errors = 0;
  for (const area of areas) {{
    const walker = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {{
      if (node.textContent.includes('Error displaying widget') && shown(node.parentElement)) errors += 1;
    }}
  }}
  const parts = areas.flatMap((a) => [...a.querySelectorAll(brokenIn)]).filter(shown);
  return {{
    asText, errors,
    tooWide: ({TOO_WIDE_JS.strip()})(areas),
    broken: ({BROKEN_WORDS_JS.strip()})(parts),
    raised: areas.some((a) => a.textContent.includes('Traceback')),
    charts: [...document.querySelectorAll(charts)]
      .map((c, index) => ({{index, title: c.innerText.slice(0, 60), shown: shown(c)}})).filter((c) => c.shown),
  }};
}}
"""


def _screen(page, width: int, when: str) -> tuple[list[str], dict]:
    """The problems on the screen in view (saved or run, at ``width``) and the page's findings as they came."""
    found = page.evaluate(SCREEN_JS, [WIDGET_TEXT.pattern, BROKEN_WORDS_IN, CHARTS])
    problems = [f"{when}, {width}: widget as text: {t[:60]!r}" for t in found["asText"]]
    problems += [f"{when}, {width}: Error displaying widget"] * found["errors"]
    problems += [f"{width}: {p}" for p in found["tooWide"]]
    problems += [f"{when}, {width}: the word {w!r} is broken across lines" for w in dict.fromkeys(found["broken"])]
    return problems, found


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


def _open_saved(page, lab: str, notebook: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{lab}/lab/tree/{notebook}?token={TOKEN}&reset")
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    with contextlib.suppress(PlaywrightTimeout):
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)


@pytest.mark.parametrize("notebook", TUTORIALS)
def test_tutorial_runs_and_its_charts_fit(lab, lab_page, notebook):
    page = lab_page
    problems = []
    _open_saved(page, lab, notebook)  # as committed: the saved outputs, no kernel state behind them
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.wait_for_timeout(1_000)
        for i, _ in enumerate(_scrolled_through(page)):
            problems += _screen(page, width, "saved")[0]
            if i == 0:
                page.screenshot(path=str(ARTIFACTS / f"tutorial-{notebook[:2]}-saved-{width}.png"),
                                clip={"x": 0, "y": 0, "width": width, "height": 1000})
    open_and_run(page, lab, notebook)
    _wait_for_all_cells(page)
    raised, shots = False, set()
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.wait_for_timeout(1_500)
        for _ in _scrolled_through(page):
            found_here, found = _screen(page, width, "run")
            problems += found_here
            raised = raised or found["raised"]
            for chart in found["charts"]:
                if (chart["title"], width) not in shots:
                    page.locator(CHARTS).nth(chart["index"]).screenshot(
                        path=str(ARTIFACTS / f"tutorial-{notebook[:2]}-{len(shots)}-{width}.png"))
                    shots.add((chart["title"], width))
    assert not raised, f"{notebook}: a cell raised"
    assert shots or notebook not in CHARTED, f"{notebook}: no chart was drawn"
    if problems:
        pytest.fail(f"{notebook}: widgets shown as text, parts wider than their output area, or broken words:\n"
                    + "\n".join(dict.fromkeys(problems)), pytrace=False)
