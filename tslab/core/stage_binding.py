"""Cautions about what a SAFE verdict does not cover: which stage a work step reads.

TS binds a consumer's work step to the stage of that resource's *last* wait (with ``advance_on_wait``, the stage
the wait just passed). A schedule that waits on a resource twice with no work or release of it in between is
checked as any other (the order of waits, commits and releases can be SAFE), but the work that follows reads the
second stage only: the first stage it waited for is never worked on. Moving ``wait V`` ahead of ``multiply_qk`` in
the attention ping-pong is such an edit: SAFE, and Q K^T would multiply the V tile. These are cautions, not errors:
the verdict stays TS's.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import Issue

KIND = "stage-binding"
_HINT = ("give the first wait its work (or release) before the second wait, or have the work address the earlier "
         "stage itself: a work step reads the stage of its resource's last wait")


def unworked_waits(schedule: pd.DataFrame) -> list[Issue]:
    """One caution per consumer wait whose stage no work step of that task can read: a second wait on the same
    resource follows it with no ``ConsumerWork`` or ``ConsumerRelease`` of the resource between, and a work step on
    the resource follows (per task, its sections in order). A task that never works on the resource itself reads
    its stages through other resources' work (FlashInfer's MMA task reads K and V in its TMEM work): no caution."""
    return [Issue(KIND, f"task '{task}', {row.section} step {row.index}",
                  f"waits on '{row.resource}' again ({first.section} step {first.index} waited on it, and nothing "
                  f"worked on or released that stage since): '{work}' reads the second stage only", _HINT)
            for task, row, first, work in _second_waits(schedule)]


def caution_steps(schedule: pd.DataFrame) -> dict[tuple[str, str, int], str]:
    """``{(task, section, index in section): why}`` of the waits :func:`unworked_waits` cautions about (section
    as the schedule editor names it: ``Head``, ``Loop``, ``Tail``), for an editor to mark those steps."""
    return {(task, str(row.section).capitalize(), int(row.index)):
            f"caution: '{work}' reads this wait's stage only, not the one {first.section} step {first.index} waited for"
            for task, row, first, work in _second_waits(schedule)}


def _second_waits(schedule: pd.DataFrame) -> list[tuple[str, Any, Any, str]]:
    """``(task, second wait, first wait, the work that follows)`` for each wait a caution is about."""
    found: list[tuple[str, Any, Any, str]] = []
    if schedule is None or schedule.empty:
        return found
    for task, steps in schedule.groupby("task", sort=False):
        rows = list(steps.itertuples(index=False))  # the task's sections in order
        pending: dict[str, Any] = {}  # resource -> the wait not yet followed by a work or release
        for i, row in enumerate(rows):
            if row.stage == "ConsumerWait":
                first = pending.get(row.resource)
                work = _next_work(rows[i + 1:], row.resource) if first is not None else None
                if work is not None:  # no work of its own on the resource: the task reads its stages otherwise
                    found.append((str(task), row, first, work))
                pending[row.resource] = row
            elif row.stage in ("ConsumerWork", "ConsumerRelease"):
                pending.pop(row.resource, None)
    return found


def _next_work(rows: list[Any], resource: str) -> str | None:
    """The label of the first work step on ``resource`` among ``rows``."""
    return next((r.label for r in rows if r.resource == resource and r.stage == "ConsumerWork"), None)
