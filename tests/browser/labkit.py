"""Helpers shared by the browser tests: where things are, and how to open and run a tutorial in JupyterLab."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TOKEN = "tslab-browser-test"


#: What the widget manager's restore from the kernel sends and what ends it (the kernel's reply either way).
_RESTORE_SENT = "jupyter.widget.control"
_RESTORE_ENDS = ("update_states", "comm_info_reply")


def worker_suffix() -> str:
    """``-gw0``, ``-gw1``, ... in an xdist worker (each worker runs a server of its own), else nothing."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"-{worker}" if worker else ""


def lab_log_tail(lines: int = 40) -> str:
    """The last lines of this worker's JupyterLab server log (its kernels' warnings too)."""
    path = ARTIFACTS / f"lab-server{worker_suffix()}.log"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def _frame_summary(payload) -> dict:
    """A kernel websocket frame's channel, message type and comm (JupyterLab's binary v1 protocol or JSON)."""
    try:
        if isinstance(payload, bytes):
            count = int.from_bytes(payload[:8], "little")
            offsets = [int.from_bytes(payload[8 * (i + 1):8 * (i + 2)], "little") for i in range(count)]
            parts = [payload[a:b] for a, b in zip(offsets, [*offsets[1:], len(payload)], strict=True)]
            channel, header, content = parts[0].decode(), json.loads(parts[1]), json.loads(parts[4])
        else:
            message = json.loads(payload)
            channel, header, content = message.get("channel"), message["header"], message.get("content", {})
    except (ValueError, IndexError, KeyError, UnicodeDecodeError):
        return {"unparsed": len(payload)}
    summary = {"channel": channel, "type": header.get("msg_type"), "comm": content.get("comm_id"),
               "bytes": len(payload)}
    data = content.get("data") or {}
    state = data.get("state") if isinstance(data, dict) else None
    if isinstance(state, dict):
        summary["model"] = state.get("_model_name")
        summary["keys"] = sorted(state)
        summary["refs"] = sorted(set(re.findall(r"IPY_MODEL_([0-9a-f]+)", json.dumps(state))))
    if isinstance(data, dict) and data.get("method"):
        summary["method"] = data["method"]
    return summary


def record_kernel_messages(page) -> None:
    """Keep, in ``page.restore_frames``, the kernel websocket frames that start and end a widget restore, and in
    ``page.kernel_frames`` a summary of every frame (written out by the fixture when a test fails)."""
    page.restore_frames, page.kernel_frames = [], []
    started = time.monotonic()

    def now() -> float:
        return round(time.monotonic() - started, 3)

    def seen(direction: str, payload) -> None:
        text = payload if isinstance(payload, str) else payload.decode("latin-1")
        if direction == "sent" and _RESTORE_SENT in text:
            page.restore_frames.append("sent")
        elif direction == "received" and any(end in text for end in _RESTORE_ENDS):
            page.restore_frames.append("ended")
        page.kernel_frames.append({"t": now(), "dir": direction, **_frame_summary(payload)})

    def opened(ws) -> None:
        page.kernel_frames.append({"t": now(), "dir": "open", "url": ws.url})
        ws.on("framesent", lambda p: seen("sent", p))
        ws.on("framereceived", lambda p: seen("received", p))
        ws.on("close", lambda _: page.kernel_frames.append({"t": now(), "dir": "close", "url": ws.url}))

    page.on("websocket", opened)


def unannounced_models(frames: list[dict]) -> list[str]:
    """The widget models a received frame names before the kernel announced them (comm_open) or after the kernel or
    the page closed them (comm_close), in the order the page saw the frames: what "widget model not found" in the
    console is about. Empty: the page was told of every model before it was named (the loss was the page's own).
    """
    opened: set[str] = set()
    closed: set[str] = set()
    found = []
    for frame in frames:
        if frame.get("dir") == "sent" and frame.get("type") == "comm_close" and frame.get("comm"):
            closed.add(frame["comm"])
        if frame.get("dir") != "received":
            continue
        for ref in frame.get("refs", []):
            if ref not in opened or ref in closed:
                state = "closed" if ref in closed else "never opened"
                found.append(f"t={frame['t']}: {frame.get('type')} of {frame.get('model')} {frame.get('comm')} names "
                             f"{ref} ({state} by then)")
        if frame.get("type") == "comm_open" and frame.get("comm"):
            opened.add(frame["comm"])
        elif frame.get("type") == "comm_close" and frame.get("comm"):
            closed.add(frame["comm"])
    return found


def wait_for_widget_restore(page, since: int, timeout: float = 60.0) -> None:
    """Wait until the notebook's widget manager has asked the new kernel for its widgets and had the answer.

    Run before that, a cell's widgets race the restore: the manager may list the kernel's comms mid-run and open
    from the page comms the kernel is still announcing, and a view then finds no model behind an id.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frames = page.restore_frames[since:]
        if "sent" in frames and "ended" in frames[frames.index("sent"):]:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the widget manager did not restore from the kernel within {timeout:.0f} s: "
                         f"frames {page.restore_frames[since:]}")


def menu(page, menu_name: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu_name}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).click()


def open_and_run(page, lab: str, notebook: str) -> None:
    """Open a tutorial in a fresh workspace, clear its saved outputs and run all its cells."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    since = len(page.restore_frames)  # a page of the lab_page fixture records the kernel's frames
    page.goto(f"{lab}/lab/tree/{notebook}?token={TOKEN}&reset")
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    with contextlib.suppress(PlaywrightTimeout):  # Lab asks for a kernel if the specs load after the notebook
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    wait_for_widget_restore(page, since)
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
