"""``ScheduleView``: TS's schedule table as a swimlane, one lane per task, its steps left to right.

Drawn by the lab extension's ``views/swimlane`` module (``labextension/src/widgets/swimlane.ts``), the same
code that draws a saved verdict's swimlane; the model holds the table's rows (``Verdict.schedule_rows()``).
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from .bundles import bundle


class ScheduleView(anywidget.AnyWidget):
    """The rows of a verdict's schedule table; the front end draws them as lanes (head, loop, tail)."""

    _esm = bundle("swimlane.js")
    _css = bundle("tslab.css", "")
    schedule = traitlets.List().tag(sync=True)

    def show(self, verdict: Any) -> None:
        """Draw ``verdict``'s schedule."""
        self.schedule = verdict.schedule_rows()
