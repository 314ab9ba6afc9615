"""Helpers shared by the browser tests: where things are, and how to open and run a tutorial in JupyterLab."""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TOKEN = "tslab-browser-test"


def menu(page, menu_name: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu_name}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).click()


def open_and_run(page, lab: str, notebook: str) -> None:
    """Open a tutorial in a fresh workspace, clear its saved outputs and run all its cells."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{lab}/lab/tree/{notebook}?token={TOKEN}&reset")
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    with contextlib.suppress(PlaywrightTimeout):  # Lab asks for a kernel if the specs load after the notebook
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    menu(page, "Edit", "Clear Outputs of All Cells")
    menu(page, "Run", "Run All Cells")


def wait_until_run(page, timeout: float = 180_000) -> None:
    """Wait until every cell has run: no cell waits with a ``[*]`` prompt and the kernel is idle."""
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'))",
        timeout=timeout)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=timeout)


def set_field(panel, field: str, value) -> None:
    box = panel.locator(f".tslab-field-{field} input")
    box.fill(str(value))
    box.press("Enter")


OVERFLOW_JS = """
(roots) => {
  const found = [];
  const name = (e) => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string'
      ? '.' + e.className.trim().split(/\\s+/).slice(0, 3).join('.') : '') + ' "' +
      (e.innerText || e.value || '').trim().slice(0, 40).replace(/\\s+/g, ' ') + '"';
  for (const root of roots) {
    const box = root.getBoundingClientRect();
    if (box.width === 0) continue;
    for (const e of [root, ...root.querySelectorAll('*')]) {
      if (e.closest('.js-plotly-plot') && !e.classList.contains('js-plotly-plot')) continue;
      if (e.closest('.noUi-target')) continue;  // a slider's handle overhangs its track by design
      if (['INPUT', 'SELECT', 'TEXTAREA', 'OPTION'].includes(e.tagName)) continue;
      const r = e.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      if (r.right > box.right + 1 || r.left < box.left - 1) {
        found.push('sticks out of the widget: ' + name(e));
      } else if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') {
        found.push('clips its content: ' + name(e));
      } else if (e.parentElement && e !== root) {
        let parent = e.parentElement;  // a display: contents box has no box of its own: its parent's counts
        while (parent !== root && parent.parentElement && getComputedStyle(parent).display === 'contents') {
          parent = parent.parentElement;
        }
        const p = parent.getBoundingClientRect();
        if (r.right > p.right + 1 && getComputedStyle(parent).overflowX === 'visible') {
          found.push('overflows its container: ' + name(e));
        }
      }
    }
  }
  return found;
}
"""


def overflowing(page, selector: str) -> list[str]:
    """Elements inside the widgets matching ``selector`` that stick out of them or of their container, or clip."""
    return page.locator(selector).evaluate_all(OVERFLOW_JS)


SMALL_TEXT_JS = """
(root) => [...root.querySelectorAll('svg text')]
  .filter(t => !t.closest('.js-plotly-plot') && t.getBoundingClientRect().width > 0)
  .map(t => {
    const m = t.getScreenCTM();
    return [t.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b)];
  })
  .filter(([, px]) => px < 10.95)
  .map(([text, px]) => `"${text}" drawn at ${Math.round(px * 10) / 10} px`)
"""


def small_text(locator) -> list[str]:
    """tslab's SVG text (the flow, the memory maps, the player's lanes) drawn under 11 px inside ``locator``: its
    font size times the scale it is drawn at."""
    return locator.first.evaluate(SMALL_TEXT_JS)
