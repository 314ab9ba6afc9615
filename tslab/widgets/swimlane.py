"""``ScheduleView``: TS's schedule table as a swimlane, one lane per task, head | loop | tail aligned.

Drawn by the lab extension's ``views/swimlane`` module (``labextension/src/widgets/swimlane.ts``), the same
code that draws a saved verdict's swimlane; the model holds the table's rows (``Verdict.schedule_rows()``) and
the tasks' warps (``Verdict.tasks``). A step dragged in the front end (or moved with Alt+Left/Right) arrives as
a ``move`` message, handed to the ``on_move`` callbacks together with the verdict the lanes showed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from .bundles import bundle

MoveHandler = Callable[[dict[str, Any], Any], None]


class ScheduleView(anywidget.AnyWidget):
    """The rows of a verdict's schedule table; the front end draws them as lanes (head, loop, tail)."""

    _esm = bundle("swimlane.js")
    _css = bundle("tslab.css", "")
    schedule = traitlets.List().tag(sync=True)
    tasks = traitlets.List().tag(sync=True)
    editable = traitlets.Bool(False).tag(sync=True)
    version = traitlets.Int(0).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: Any = None
        self._move_handlers: list[MoveHandler] = []
        self.on_msg(self._message)

    @property
    def shown(self) -> Any:
        """The verdict whose schedule the lanes show."""
        return self._shown

    def show(self, verdict: Any) -> None:
        """Draw ``verdict``'s schedule."""
        self._shown = verdict
        with self.hold_sync():
            self.version += 1
            self.schedule = verdict.schedule_rows()
            self.tasks = list(verdict.tasks)

    def on_move(self, handler: MoveHandler) -> None:
        """Call ``handler(move, shown_verdict)`` for each step moved in the front end; ``move`` has ``task``,
        ``index`` (in the task's whole list), ``section`` ("head", "loop", "tail"), ``to_index`` and the step's
        ``resource``, ``stage`` and ``label``. Makes the lanes draggable."""
        self._move_handlers.append(handler)
        self.editable = True

    def _message(self, _: Any, content: dict[str, Any], buffers: Any = None) -> None:
        if not isinstance(content, dict) or content.get("kind") != "move":
            return
        shown = self._shown if content.get("version") == self.version else None  # None: drawn before a redraw
        for handler in self._move_handlers:
            handler(content, shown)
