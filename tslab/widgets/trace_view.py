"""``TraceView``: the replay player drawn by the JupyterLab extension's own module, live in a notebook.

The front end is ``labextension/src/widgets/player.ts``, bundled with the same ``views/player`` module the
trace mime renderer uses (one renderer, two hosts): a live widget and a saved output look and behave the same.
The model holds the trace as plain data and the step shown, synced both ways (buttons, slider, arrow keys and
autoplay move ``index``; setting ``index`` from Python moves the view).
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from .bundles import bundle, plain


class TraceView(anywidget.AnyWidget):
    """A trace (``Trace.to_dict()``) and the step shown; the front end draws and steps it."""

    _esm = bundle("player.js")
    _css = bundle("tslab.css", "")
    trace = traitlets.Dict().tag(sync=True)
    index = traitlets.Int(0).tag(sync=True)

    def __init__(self, trace: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(trace=plain(trace), **kwargs)
