"""Pure edits of a task's step list: move, delete, insert, keeping sections in Head -> Loop -> Tail order.

Steps are tslab's plain form ``(resource, stage, section, label[, guard])`` (:mod:`tslab.core.steps`);
indices are positions in the task's whole list, ``to_index`` is a position inside the target section.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.guards import ALWAYS
from ..core.steps import SECTIONS, Step, make_step
from ..errors import DesignError


def section_start(steps: Sequence[Step], section: str) -> int:
    """Index of the first step of ``section`` (or where it would start)."""
    order = SECTIONS.index(section)
    for i, step in enumerate(steps):
        if SECTIONS.index(step[2]) >= order:
            return i
    return len(steps)


def section_steps(steps: Sequence[Step], section: str) -> list[tuple[int, Step]]:
    """``(index in the whole list, step)`` of each step in ``section``."""
    return [(i, s) for i, s in enumerate(steps) if s[2] == section]


def with_section(task: str, index: int, step: Step, section: str) -> Step:
    """``step`` (step ``index`` of ``task``) in ``section``, its guard kept: a guarded step stays in the loop."""
    guard = step[4] if len(step) > 4 else ALWAYS
    if guard != ALWAYS and section != "Loop":
        raise DesignError("input", f"task '{task}' step {index}",
                          f"{step[0]}.{step[1]} runs under {guard}, which holds on loop trips only: it cannot move to "
                          f"{section}",
                          f"move it within the Loop section; to run it once in {section} instead, delete it and "
                          "insert the step there without a guard")
    return make_step(step[0], step[1], section, step[3], guard)


def _require_index(task: str, steps: Sequence[Step], index: int, *, allow_end: bool = False) -> None:
    top = len(steps) if allow_end else len(steps) - 1
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= top:
        raise DesignError("input", f"task '{task}' step {index!r}", f"is not a step index (the task has {len(steps)})",
                          f"use an index from 0 to {top}")


def _require_section(task: str, section: str) -> None:
    if section not in SECTIONS:
        raise DesignError("input", f"task '{task}'", f"section={section!r} is not a schedule section",
                          "use 'Head', 'Loop' or 'Tail'")


def _place(steps: list[Step], step: Step, to_index: int) -> list[Step]:
    section = step[2]
    start = section_start(steps, section)
    count = len(section_steps(steps, section))
    position = start + max(0, min(int(to_index), count))
    return [*steps[:position], step, *steps[position:]]


def move(task: str, steps: Sequence[Step], index: int, to_section: str, to_index: int) -> list[Step]:
    """Step ``index`` moved to position ``to_index`` of ``to_section`` (clamped to the section's ends), with its
    guard; a guarded step does not leave the loop (a ``DesignError`` says so)."""
    _require_index(task, steps, index)
    _require_section(task, to_section)
    rest = list(steps)
    step = with_section(task, index, rest.pop(index), to_section)
    return _place(rest, step, to_index)


def delete(task: str, steps: Sequence[Step], index: int) -> list[Step]:
    """The steps without step ``index``."""
    _require_index(task, steps, index)
    return [s for i, s in enumerate(steps) if i != index]


def insert(task: str, steps: Sequence[Step], index: int, step: Sequence) -> list[Step]:
    """``step`` inserted before step ``index`` of the whole list (``len(steps)`` appends)."""
    _require_index(task, steps, index, allow_end=True)
    new = list(steps)
    new.insert(index, tuple(step))
    return new


def insert_in_section(steps: Sequence[Step], step: Step, to_index: int) -> list[Step]:
    """``step`` inserted at position ``to_index`` of its own section."""
    return _place(list(steps), tuple(step), to_index)
