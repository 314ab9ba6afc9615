"""The Studio of the kernels people come to design, in JupyterLab in Chromium at 1000 and 1600 px wide.

For each Studio, read from the page: no node of the flow diagram overlaps another or is crossed by an edge
(bounding boxes, and points along each edge's path), every edge has its arrowhead, no SVG text is under 11 px, and
with the first ``num_stages`` field focused the verdict badge and the memory map are in the viewport (at 1000 px
the switch then shows the flow). And the saved output of tutorial 01's first editor (opened as committed, no kernel
behind it) shows SAFE, the design its cell made, not a later cell's edit.
Screenshots: ``test-artifacts/studio-<design>-<width>.png`` (the Studio at its top) and ``...-flow-...png``.
"""

from __future__ import annotations

import contextlib
import json
import urllib.request

import pytest
from labkit import ARTIFACTS, TOKEN, lab_log_tail, open_and_run, small_text, unannounced_models

pytestmark = pytest.mark.browser
WIDTHS = (1000, 1600)
HEIGHT = 860
#: Studios by name: the source that makes each (attention_sm90 once the catalog has it).
DESIGNS = {
    "gemm_sm90": "design('gemm_sm90')",
    "gemm_sm90_pingpong": "gemm_sm90.design(**gemm_sm90.PINGPONG)",
    "gemm_sm100": "design('gemm_sm100')",
    "gemm_sm100_merged": "design('gemm_sm100', ab_rings='merged')",
    "attention_tmem": "design('attention_tmem')",
    "attention_sm90": "design('attention_sm90')",
}

#: Problems with the flow diagram inside one Studio, read from the page.
FLOW_JS = """
(studio) => {
  const found = [];
  const svg = studio.querySelector('svg.tslab-flow-svg');
  if (!svg) return ['no flow diagram'];
  const nodes = [];  // [id, screen box]
  const add = (sel, id) => svg.querySelectorAll(sel).forEach(g => nodes.push([id(g), g.querySelector('rect')]));
  add('.tslab-flow-task', g => 'task:' + g.dataset.task);
  add('.tslab-flow-group', g => 'ring:' + g.dataset.resource);
  add('.tslab-ring:not([data-group])', g => 'ring:' + g.dataset.resource);  // a group's members: inside its box
  const boxes = nodes.map(([id, rect]) => [id, rect.getBoundingClientRect()]);
  const inside = (x, y, b, inset) =>
    x > b.left + inset && x < b.right - inset && y > b.top + inset && y < b.bottom - inset;
  boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
    if (p.left + 0.5 < q.right && q.left + 0.5 < p.right && p.top + 0.5 < q.bottom && q.top + 0.5 < p.bottom) {
      found.push(a + ' overlaps ' + b);
    }
  }));
  for (const path of svg.querySelectorAll('.tslab-flow-arrow')) {
    // its arrowhead: the page's first element of that id must be this drawing's own (another may be hidden)
    const head = document.getElementById((path.getAttribute('marker-end') || '').slice(5, -1));
    if (!head || !svg.contains(head)) {
      found.push(path.dataset.resource + ' ' + path.dataset.from + ' -> ' + path.dataset.to + ' has no arrowhead');
    }
    const m = path.getScreenCTM();
    const length = path.getTotalLength();
    for (let s = 0; s <= length; s += 2) {
      const p = path.getPointAtLength(s);
      const x = m.a * p.x + m.c * p.y + m.e, y = m.b * p.x + m.d * p.y + m.f;
      for (const [id, b] of boxes) {
        if (id !== path.dataset.from && id !== path.dataset.to && inside(x, y, b, 1)) {
          found.push(path.dataset.resource + ' ' + path.dataset.from + ' -> ' + path.dataset.to + ' crosses ' + id);
          s = length + 1;
          break;
        }
      }
    }
  }
  return [...new Set(found)];
}
"""

def _designs() -> dict[str, str]:
    from tslab.kernels import catalog

    names = {k.name for k in catalog()}
    return {name: src for name, src in DESIGNS.items() if name.split("_pingpong")[0].split("_merged")[0] in names}


def _put_notebook(lab: str, name: str, designs: dict[str, str]) -> None:
    cells = ["import tslab\nfrom tslab.kernels import design, gemm_sm90\nfrom tslab.widgets import Studio"]
    cells += [f"Studio({src})" for src in designs.values()]
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
                    for c in cells],
          "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}}
    body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
    request = urllib.request.Request(f"{lab}/api/contents/{name}?token={TOKEN}", data=body, method="PUT",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()


def test_the_studios_read_well_at_1000_and_1600_px(lab, lab_page):
    """Six Studios in one notebook, run at once (about 2,800 widget messages; benchmarks/NOTES.md, "Widgets": a
    burst of several thousand loses its tail while the server reads slowly). A failure lists the models a frame
    named before the kernel announced them: a lost announcement shows there as "never opened"."""
    try:
        _studios(lab, lab_page)
    except Exception as exc:
        lab_page.screenshot(path=str(ARTIFACTS / "studio-failure.png"))
        if lab_page.console_errors:  # a view that failed to draw says why only here
            exc.add_note("console errors:\n" + "\n".join(lab_page.console_errors))
            unannounced = unannounced_models(lab_page.kernel_frames)
            exc.add_note("models named before they were announced or after they were closed:\n"
                         + ("\n".join(unannounced[:20]) or "none: the page lost a model it had been told of"))
            exc.add_note("the lab server's log ends:\n" + lab_log_tail())
        raise


def _arrive_at(page, studio, tries: int = 20) -> None:
    """Scroll the Studio's top to the window's top and wait until it stays there: the notebook measures the cells
    it draws as they come into view, and the page above may still grow or shrink after the first scroll."""
    at = None
    for _ in range(tries):
        top = studio.evaluate("e => { e.scrollIntoView({block: 'start'}); return e.getBoundingClientRect().top; }")
        page.wait_for_timeout(300)
        now = studio.evaluate("e => e.getBoundingClientRect().top")
        if abs(now - top) < 1 and at is not None and abs(now - at) < 1:
            return
        at = now


def _studios(lab, page) -> None:
    from playwright.sync_api import expect

    designs = _designs()
    _put_notebook(lab, "studios.ipynb", designs)
    page.set_viewport_size({"width": 1600, "height": HEIGHT})
    open_and_run(page, lab, "studios.ipynb")
    studios = page.locator(".tslab-studio")
    expect(studios).to_have_count(len(designs), timeout=180_000)
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.wait_for_timeout(1_500)  # Lab lays out its panels again, the views redraw
        for i, name in enumerate(designs):
            studio = studios.nth(i)
            studio.locator(".tslab-flow-svg").wait_for(state="attached", timeout=60_000)
            expect(studio.locator(".tslab-studio-badge .tslab-badge")).to_have_attribute("data-status", "SAFE",
                                                                                          timeout=60_000)
            _arrive_at(page, studio)
            field = studio.locator(".tslab-field-num_stages input").first
            field.focus()
            page.wait_for_timeout(300)
            view = page.viewport_size
            for part in (".tslab-studio-badge .tslab-badge", ".tslab-studio-memory .tslab-map",
                         ".tslab-field-num_stages input"):
                box = studio.locator(part).first.bounding_box()
                if box is None or box["y"] < 0 or box["y"] + box["height"] > view["height"] or box["x"] < 0 \
                        or box["x"] + box["width"] > view["width"]:
                    problems.append(f"{width} {name}: {part} is not in the viewport while num_stages is focused: {box}")
            page.screenshot(path=str(ARTIFACTS / f"studio-{name}-{width}.png"))
            switch = studio.locator(".tslab-studio-switch")
            if switch.is_visible():  # a narrow Studio shows one of map, flow and schedule: the flow now
                switch.get_by_text("flow", exact=True).click()
                studio.locator(".tslab-flow-svg").wait_for(timeout=30_000)
            problems += [f"{width} {name}: {p}" for p in studio.evaluate(FLOW_JS)]
            problems += [f"{width} {name}: {p}" for p in small_text(studio)]
            flow = studio.locator(".tslab-studio-flow")
            flow.scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            flow.screenshot(path=str(ARTIFACTS / f"studio-{name}-flow-{width}.png"))
            if switch.is_visible():
                switch.get_by_text("memory map", exact=True).click()
    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.console_errors == []
    if problems:
        pytest.fail("the Studios do not read well:\n" + "\n".join(problems), pytrace=False)


def test_the_saved_output_of_tutorial_01s_first_editor_is_what_its_cell_made(lab, lab_page):
    """Opened as committed (no kernel holds the widget): the first PipelineEditor's output shows the design its
    cell made, SAFE, not the INVALID stride edit made three cells later; its drawings' text is 11 px or more."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page = lab_page
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.goto(f"{lab}/lab/tree/01_pipelines.ipynb?token={TOKEN}&reset")
        page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
        with contextlib.suppress(PlaywrightTimeout):
            page.locator(".jp-Dialog .jp-mod-reject").click(timeout=5_000)  # no kernel: the saved outputs alone
        note = page.locator(".tslab-saved-note", has_text="saved PipelineEditor output").first
        note.wait_for(timeout=60_000)
        output = page.locator(".tslab-live-or-saved", has=note).first
        output.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        expect(output.locator(".tslab-saved-verdict .tslab-badge").first).to_have_text("SAFE")
        output.screenshot(path=str(ARTIFACTS / f"tutorial-01-first-editor-{width}.png"))
        small = small_text(output)
        assert not small, f"{width}: saved drawings with text under 11 px: {small}"
