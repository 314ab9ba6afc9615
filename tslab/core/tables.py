"""Tables of what TS computed: the memory layout from the real allocators, the schedule as TS expanded it."""

from __future__ import annotations

from typing import Any

import pandas as pd
from cutlass.experimental.task_scheduling.memory import _MBARRIER_ALIGNMENT, _align_up

from . import guards

LAYOUT_COLUMNS = ["name", "space", "offset", "size", "end", "alignment", "alias_group", "phase"]
SCHEDULE_COLUMNS = ["task", "section", "index", "resource", "stage", "label", "guard"]


def _allocator_rows(allocator: Any, space: str) -> list[dict[str, Any]]:
    if allocator is None:
        return []
    where: dict[int, tuple[int, int]] = {}
    ordered = list(allocator._allocations)
    for g, group in enumerate(allocator._alias_groups):
        for p, phase in enumerate(group):
            for alloc in phase:
                where[id(alloc)] = (g, p)
                if alloc not in ordered:
                    ordered.append(alloc)
    rows = []
    for alloc in ordered:
        size = allocator._alloc_size(alloc)
        group, phase = where.get(id(alloc), (None, None))
        rows.append({"name": alloc.name, "space": space, "offset": alloc.offset, "size": size,
                     "end": alloc.offset + size, "alignment": allocator._alloc_alignment(alloc),
                     "alias_group": group, "phase": phase})
    return rows


def layout_table(smem: Any, tmem: Any) -> pd.DataFrame:
    """One row per allocation (and one for the pipeline barriers), offsets as the allocators laid them out."""
    rows = _allocator_rows(smem, "smem") + _allocator_rows(tmem, "tmem")
    if smem is not None and smem.barrier_smem_bytes:
        start = _align_up(smem.total, _MBARRIER_ALIGNMENT)
        rows.append({"name": "barriers", "space": "barrier", "offset": start, "size": smem.barrier_smem_bytes,
                     "end": start + smem.barrier_smem_bytes, "alignment": _MBARRIER_ALIGNMENT,
                     "alias_group": None, "phase": None})
    frame = pd.DataFrame(rows, columns=LAYOUT_COLUMNS)
    return frame.astype({"alias_group": "Int64", "phase": "Int64"})


def alias_savings(layout: pd.DataFrame, allocator: Any, space: str = "smem") -> int:
    """What aliasing saves in ``space`` (SMEM bytes, TMEM columns): the sum of that space's allocation sizes in
    ``layout`` minus the total its allocator laid out."""
    if allocator is None:
        return 0
    return int(layout.loc[layout["space"] == space, "size"].sum()) - allocator.total


def schedule_table(tasks: list[Any], conditions: guards.Conditions | None = None) -> pd.DataFrame:
    """One row per step of every task's head, loop and tail lists, as TS expanded them; ``guard`` in the plain form
    of :mod:`tslab.core.guards` (``conditions`` names the runtime conditions; by default those of ``tasks``)."""
    conditions = guards.Conditions.of(tasks) if conditions is None else conditions
    rows = []
    for task in tasks:
        for section, entries in (("head", task.head_schedule_list), ("loop", task.loop_schedule_list),
                                 ("tail", task.tail_schedule_list)):
            for index, entry in enumerate(entries):
                guard = guards.text(entry[3], conditions) if len(entry) == 5 else guards.ALWAYS
                rows.append({"task": task.name, "section": section, "index": index, "resource": entry[0].name,
                             "stage": entry[1].name, "label": entry[-1], "guard": guard})
    frame = pd.DataFrame(rows, columns=SCHEDULE_COLUMNS)
    frame["label"] = frame["label"].astype(object).where(frame["label"].notna(), None)
    return frame


def task_rows(tasks: list[Any]) -> list[dict[str, Any]]:
    """Each task's warps (first, last), the trips of its loop where TS knows them at build time, and whether it
    is persistent: what the swimlane titles a lane with."""
    rows = []
    for task in tasks:
        start, end, step = task.domain_start, task.domain, task.step
        known = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, step)) and step > 0
        rows.append({"name": task.name, "warps": [int(task.warp_start), int(task.warp_end) - 1],
                     "trips": max(0, -(-(end - start) // step)) if known else None,
                     "persistent": bool(task.is_persistent)})
    return rows
