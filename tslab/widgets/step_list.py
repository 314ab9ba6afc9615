"""``StepList``: one task's steps in the schedule editor, grouped Head / Loop / Tail, each with move up, move down
and delete, as one widget.

Drawn by the lab extension's ``widgets/steps`` module (``labextension/src/widgets/steps.ts``). A step's row as
ipywidgets was five comms (a box, a label, three buttons); one model per task keeps the schedules tab of a large
kernel to a few dozen. A button arrives as an ``up``, ``down`` or ``delete`` message naming the step's index in the
task's list and the version of the rows it was drawn from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from ..core.steps import SECTIONS, Step
from . import schedule_ops as ops
from .bundles import bundle
from .history import step_text

#: ``(action, index, target)``: ``target`` is where an ``up`` or ``down`` moves the step (section, position), None
#: for a delete; called with ``current=False`` for a click on rows drawn before the last redraw.
ActionHandler = Callable[[str, int, "tuple[str, int] | None", bool], None]
ACTIONS = ("up", "down", "delete")
#: How a row says where a head or tail step runs when not once a tile (``Design.tile_loop``'s keys).
TILE_LOOP_NOTES: dict[str, str] = {"before": "once, before the tile loop", "after": "once, after the tile loop",
                                   "skippable": "not for a skipped tile"}


class StepList(anywidget.AnyWidget):
    """A task's steps for the front end to list; each button's action goes to the ``on_action`` handlers."""

    _esm = bundle("steps.js")
    _css = bundle("tslab.css", "")
    sections = traitlets.List().tag(sync=True)
    version = traitlets.Int(0).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._targets: dict[int, dict[str, tuple[str, int] | None]] = {}  # step index -> where up / down move it
        self._handlers: list[ActionHandler] = []
        self.on_msg(self._message)

    def show(self, steps: list[Step], cautions: dict[tuple[str, int], str] | None = None,
             work_kwargs: dict[int, dict[str, Any]] | None = None,
             tile_loop: dict[str, Any] | None = None) -> None:
        """List ``steps``; ``cautions`` maps ``(section, position)`` to the caution that marks that step,
        ``work_kwargs`` a step's index to the compile-time arguments its work call gets (``Design.work_kwargs``),
        ``tile_loop`` where a persistent task's head and tail steps run around its work-tile loop
        (``Design.tile_loop``): a step that runs once before or after the loop, or not at all for a skipped tile,
        says so."""
        cautions, work_kwargs = cautions or {}, work_kwargs or {}
        placed = {index: note for where, note in TILE_LOOP_NOTES.items() for index in (tile_loop or {}).get(where, ())}
        sections, self._targets = [], {}
        for s, section in enumerate(SECTIONS):
            in_section = ops.section_steps(steps, section)
            rows = []
            for position, (index, step) in enumerate(in_section):
                up = (section, position - 1) if position > 0 else (SECTIONS[s - 1], 10**6) if s > 0 else None
                down = ((section, position + 1) if position < len(in_section) - 1
                        else (SECTIONS[s + 1], 0) if s < len(SECTIONS) - 1 else None)
                self._targets[index] = {"up": up, "down": down}
                text = step_text(step, work_kwargs.get(index)) + (f" [{step[4]}]" if len(step) > 4 else "")
                if index in placed:
                    text += f" ({placed[index]})"
                rows.append({"index": index, "text": text,
                             "caution": cautions.get((section, position)), "up": up is not None,
                             "down": down is not None})
            sections.append({"name": section, "steps": rows})
        if sections != self.sections:
            with self.hold_sync():
                if _steps_of(sections) != _steps_of(self.sections):  # a caution alone leaves each index its step
                    self.version += 1
                self.sections = sections

    def marked(self) -> list[tuple[str, int, str]]:
        """``(section, position, caution)`` of each step shown with a caution."""
        return [(section["name"], position, row["caution"]) for section in self.sections
                for position, row in enumerate(section["steps"]) if row["caution"]]

    def texts(self) -> list[tuple[str, str]]:
        """``(section, text)`` of each step, top to bottom, as the rows show them."""
        return [(section["name"], row["text"]) for section in self.sections for row in section["steps"]]

    def on_action(self, handler: ActionHandler) -> None:
        """Call ``handler(action, index, target, current)`` for each button pressed in the front end."""
        self._handlers.append(handler)

    def _message(self, _: Any, content: dict[str, Any], buffers: Any = None) -> None:
        if not isinstance(content, dict) or content.get("kind") not in ACTIONS:
            return
        action, index = content["kind"], content.get("index")
        if not isinstance(index, int) or index not in self._targets:
            return
        current = content.get("version") == self.version
        target = self._targets[index].get(action) if action != "delete" else None
        if action != "delete" and target is None and current:
            return  # the front end draws that button disabled
        for handler in self._handlers:
            handler(action, index, target, current)


def _steps_of(sections: list[dict[str, Any]]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """What a click's step index refers to: each section's steps, their text and moves, without the cautions."""
    return [(section["name"], [(row["index"], row["text"], row["up"], row["down"]) for row in section["steps"]])
            for section in sections]
