"""``FlowView``: a design's resource/task flow as a dataflow graph, each pipeline a ring of its stages between its
tasks.

Drawn by the lab extension's ``views/flow`` module (``labextension/src/widgets/flow.ts``), laid out by dagre. The
model holds TS's schedule table (who produces into and consumes from each resource), the tasks' warps and each
pipeline's stages; a click on a ring arrives as a ``select`` message, handed to the ``on_select`` callbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from .bundles import bundle, plain


class FlowView(anywidget.AnyWidget):
    """The flow of a verdict's design; ``show(verdict)`` redraws it."""

    _esm = bundle("flow.js")
    _css = bundle("tslab.css", "")
    schedule = traitlets.List().tag(sync=True)
    tasks = traitlets.List().tag(sync=True)
    rings = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._handlers: list[Callable[[str], None]] = []
        self.on_msg(self._message)

    def show(self, verdict: Any) -> None:
        """Draw the flow of ``verdict``'s design (its schedule table, its tasks and its pipelines' stages)."""
        with self.hold_sync():
            self.schedule = verdict.schedule_rows()
            self.tasks = plain(verdict.tasks)
            self.rings = plain(verdict.rings())

    def on_select(self, handler: Callable[[str], None]) -> None:
        """Call ``handler(resource)`` when a ring is clicked."""
        self._handlers.append(handler)

    def _message(self, _: Any, content: dict[str, Any], buffers: Any = None) -> None:
        if isinstance(content, dict) and content.get("kind") == "select" and isinstance(content.get("resource"), str):
            for handler in self._handlers:
                handler(content["resource"])
