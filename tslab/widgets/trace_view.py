"""``TraceView``: the replay player drawn by the JupyterLab extension's own module, live in a notebook.

The front end is ``labextension/src/widgets/player.ts``, bundled with the same ``views/player`` module the
trace mime renderer uses (one renderer, two hosts): a live widget and a saved output look and behave the same.
The model holds the trace as plain data and the step shown, synced both ways (buttons, slider, arrow keys and
autoplay move ``index``; setting ``index`` from Python moves the view).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anywidget
import traitlets

STATIC = Path(__file__).parent / "static"
_UNBUILT = """export default { render({ el }) {
  el.textContent = "tslab's widget front end is not built: cd labextension && npm ci && npm run build:prod";
} };"""


def _bundle(name: str, missing: str) -> Path | str:
    """A built front-end file, or ``missing`` in a source checkout that has not built it (the model still works)."""
    path = STATIC / name
    return path if path.is_file() else missing


class TraceView(anywidget.AnyWidget):
    """A trace (``Trace.to_dict()``) and the step shown; the front end draws and steps it."""

    _esm = _bundle("player.js", _UNBUILT)
    _css = _bundle("tslab.css", "")
    trace = traitlets.Dict().tag(sync=True)
    index = traitlets.Int(0).tag(sync=True)

    def __init__(self, trace: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(trace=plain(trace), **kwargs)


def plain(data: dict[str, Any]) -> dict[str, Any]:
    """JSON-plain data (tuples -> lists), as the front end receives it."""
    return json.loads(json.dumps(data))
