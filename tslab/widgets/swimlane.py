"""The TS schedule table as a swimlane: one lane per task, its steps left to right (a pure HTML function)."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

STAGE_COLOURS = {
    "ProducerAcquire": "#ddf4ff", "ProducerTryAcquire": "#ddf4ff", "ProducerCommit": "#b6e3ff",
    "ConsumerWait": "#dafbe1", "ConsumerTryWait": "#dafbe1", "ConsumerRelease": "#aceebb",
}
WORK_COLOUR = "#f6f8fa"
SECTION_BORDER = {"head": "#8c959f", "loop": "#0969da", "tail": "#8c959f"}


def swimlane_rows(schedule: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """``{task: [step, ...]}`` in head, loop, tail order, each step a dict of the table's columns."""
    lanes: dict[str, list[dict[str, Any]]] = {}
    order = {"head": 0, "loop": 1, "tail": 2}
    for task, steps in schedule.groupby("task", sort=False):
        ordered = steps.sort_values(["section", "index"], key=lambda c: c.map(order) if c.name == "section" else c)
        lanes[str(task)] = [dict(r) for r in ordered.to_dict("records")]
    return lanes


def _cell(step: dict[str, Any]) -> str:
    colour = STAGE_COLOURS.get(step["stage"], WORK_COLOUR)
    label = f"({html.escape(str(step['label']))})" if step["label"] else ""
    guard = f" [{html.escape(step['guard'])}]" if step["guard"] != "Always" else ""
    return (f'<div class="tslab-step" style="background:{colour};border-top:3px solid '
            f'{SECTION_BORDER[step["section"]]};padding:2px 6px;font-size:11px;overflow-wrap:anywhere" '
            f'title="{html.escape(step["section"])} step {step["index"]}"><b>{html.escape(step["resource"])}</b>'
            f"<br>{html.escape(step['stage'])}{label}{guard}</div>")


def swimlane_html(schedule: pd.DataFrame) -> str:
    """A lane per task, a box per step that wraps onto the next line when the lane is full (top border: grey
    head/tail, blue loop)."""
    lanes = swimlane_rows(schedule)
    if not lanes:
        return '<div class="tslab-swimlane"><i>no schedule (the design could not be lowered)</i></div>'
    rows = "".join('<div class="tslab-lane" style="display:flex;flex-wrap:wrap;gap:2px;margin-bottom:4px">'
                   f'<b style="flex:0 0 90px;overflow-wrap:anywhere">{html.escape(task)}</b>'
                   + "".join(_cell(s) for s in steps) + "</div>" for task, steps in lanes.items())
    return f'<div class="tslab-swimlane">{rows}</div>'
