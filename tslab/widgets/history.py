"""The designs a Studio went through, each with a short label of what changed (pure data).

Every edit, from any editor, appends one entry whose parent is the entry it was made on. Undo makes the
current entry's parent current and redo walks back down the entries undone, so stepping never grows the list;
an edit after an undo starts a new branch (the undone entries stay listed). Reverting appends, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.design import Design
from ..core.steps import SECTIONS, Step, kwargs_text


def describe_change(old: Design | None, new: Design) -> str:
    """What ``new`` changes relative to ``old``: ``"smem_ring.num_stages 4 -> 5"``, ``"MmaTask: moved ..."``."""
    if old is None:
        return "start"
    before, after = old.overrides, new.overrides
    parts = []
    for resource in dict.fromkeys([*before["pipelines"], *after["pipelines"]]):
        was, now = old.pipelines().get(resource, {}), new.pipelines().get(resource, {})
        fields = dict.fromkeys([*before["pipelines"].get(resource, {}), *after["pipelines"].get(resource, {})])
        parts += [f"{resource}.{k} {_value(was.get(k))} -> {_value(now.get(k))}"
                  for k in fields if was.get(k) != now.get(k)]
    for task in dict.fromkeys([*before["schedules"], *after["schedules"]]):
        steps_before = old.schedule(task) if task in old.tasks() else []
        steps_after = new.schedule(task) if task in new.tasks() else []
        if steps_before != steps_after:
            parts.append(describe_steps(task, steps_before, steps_after))
    if before["alias_groups"] != after["alias_groups"]:
        parts.append("alias groups")
    if old.knobs() != new.knobs():
        parts += [f"knob {k} {_value(old.knobs().get(k))} -> {_value(v)}"
                  for k, v in new.knobs().items() if old.knobs().get(k) != v]
    return ", ".join(parts) or "no change"


def changes_nothing(old: Design, new: Design) -> bool:
    """Whether ``new`` is ``old`` again: equal, or with an edit that sets what was already there (a stage count
    typed again over the same count)."""
    return new == old or describe_change(old, new) == "no change"


def describe_steps(task: str, before: Sequence[Step], after: Sequence[Step], moved: int | None = None) -> str:
    """One schedule edit in words: a step moved (up or down, maybe into another section), deleted or inserted.

    ``moved``: the index (in ``before``) of the step the user moved, where the editor knows it: swapping two
    neighbours reads both as one moving up and as the other moving down, and only the editor knows which."""
    before, after = list(before), list(after)
    if len(after) == len(before) - 1:
        for i, step in enumerate(before):
            if before[:i] + before[i + 1:] == after:
                return f"{task}: deleted {step_text(step)}"
    if len(after) == len(before) + 1:
        for i, step in enumerate(after):
            if after[:i] + after[i + 1:] == before:
                return f"{task}: inserted {step_text(step)} in {step[2]}"
    if len(after) == len(before):
        order = list(range(len(before)))
        if moved is not None and 0 <= moved < len(before):
            order.remove(moved)
            order.insert(0, moved)
        for i in order:
            step = before[i]
            rest = before[:i] + before[i + 1:]
            for j, placed in enumerate(after):
                same = (placed[0], placed[1], placed[3]) == (step[0], step[1], step[3])
                if not same or after[:j] + after[j + 1:] != rest or (i == j and placed[2] == step[2]):
                    continue
                up = j < i or (j == i and SECTIONS.index(placed[2]) < SECTIONS.index(step[2]))
                into = f" into {placed[2]}" if placed[2] != step[2] else ""
                return f"{task}: moved {step_text(step)} {'up' if up else 'down'}{into}"
    return f"{task}: schedule changed"


def step_text(step: Step, kwargs: dict[str, Any] | None = None) -> str:
    """``smem.ConsumerWork(load)``; a work step's compile-time arguments after its label
    (``smem_epi.ProducerWork(stage_group, group=1)``)."""
    inside = ", ".join(filter(None, [step[3], kwargs_text(kwargs)]))
    return f"{step[0]}.{step[1]}" + (f"({inside})" if inside else "")


def _value(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"agent", "size"}:
        return f"{value['agent']}x{value['size']}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(map(str, value)) + ")"
    return str(value)


@dataclass
class History:
    """Designs in the order they became current, each with its parent, and which one is current now."""

    entries: list[tuple[Design, str]] = field(default_factory=list)
    current: int = -1
    parents: list[int] = field(default_factory=list)
    _undone: list[int] = field(default_factory=list)  # the entries undo left, newest last: what redo returns to

    def add(self, design: Design, label: str | None = None) -> int:
        """Append ``design`` (labelled with what it changes from the current entry) and make it current."""
        shown = self.entries[self.current][0] if self.entries else None
        self.entries.append((design, label or describe_change(shown, design)))
        self.parents.append(self.current)
        self._undone.clear()
        self.current = len(self.entries) - 1
        return self.current

    @property
    def can_undo(self) -> bool:
        return self.current >= 0 and self.parents[self.current] >= 0

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    def undo(self) -> int | None:
        """Make the current entry's parent current (the design before the last edit); None at the start."""
        if not self.can_undo:
            return None
        self._undone.append(self.current)
        self.current = self.parents[self.current]
        return self.current

    def redo(self) -> int | None:
        """Make the entry the last undo left current again; None when nothing was undone since the last edit."""
        if not self._undone:
            return None
        self.current = self._undone.pop()
        return self.current

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> Design:
        return self.entries[index][0]

    def labels(self) -> list[str]:
        return [label for _, label in self.entries]
