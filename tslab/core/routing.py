"""Task-local variable flow as data: the edges of each task's slot routing, as TS holds them.

A consumer work method returns task-local variables (``k = gmem_ab.k_coords()``); a later step of the same task
takes them as keyword arguments (``smem_ab.tma_load(k=k)``). TS's ``@schedule`` records that as the task's
``slot_routing``: writer slot -> variables -> reader slots, each slot being a (resource, stage, section,
ordinal) of the schedule. ``TaskManager`` checks the table against the schedule (``_verify_slot_routing``);
this module only reads it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

ROUTING_COLUMNS = ["task", "writer", "variable", "reader"]


def _labels(task: Any) -> dict[tuple, str]:
    """Each work step's label by its routing key ``(id(resource), stage, section, ordinal)``."""
    from cutlass.experimental.task_scheduling.enums import ScheduleStageType

    out = {}
    for section, entries in ((ScheduleStageType.Head, task.head_schedule_list),
                             (ScheduleStageType.Loop, task.loop_schedule_list),
                             (ScheduleStageType.Tail, task.tail_schedule_list)):
        for entry in entries:
            out[(id(entry[0]), entry[1], section, entry[2])] = entry[-1]
    return out


def _slot(names: dict[int, str], labels: dict[tuple, str], key: tuple) -> str:
    """``resource.label (Stage, Section #i)`` of a routing key (TS's 3-tuple keys are Loop slots)."""
    from cutlass.experimental.task_scheduling.enums import ScheduleStageType

    if len(key) == 3:
        key = (key[0], key[1], ScheduleStageType.Loop, key[2])
    rid, stage, section, index = key
    label = labels.get(key)
    return f"{names.get(rid, f'id={rid}')}.{label or stage.name} ({stage.name}, {section.name} #{index})"


def routing_rows(tasks: list[Any]) -> list[dict[str, str]]:
    """One row per routed variable: the task, the writing step, the variable (``src->dst`` when renamed) and the
    reading step, in each task's routing order."""
    rows = []
    for task in tasks:
        routing = getattr(task, "slot_routing", None) or {}
        names = {id(r): r.name for r in (*task.src_resources, *task.dst_resources)}
        labels = _labels(task)
        for writer, entries in routing.items():
            for routes, destinations in entries:
                for route in routes or []:
                    variable = route if isinstance(route, str) else "->".join(route)
                    for resource, *rest in destinations:
                        rows.append({"task": task.name, "writer": _slot(names, labels, writer), "variable": variable,
                                     "reader": _slot({**names, id(resource): resource.name}, labels,
                                                     (id(resource), *rest))})
    return rows


def routing_table(tasks: list[Any]) -> pd.DataFrame:
    """:func:`routing_rows` as a DataFrame (columns :data:`ROUTING_COLUMNS`)."""
    return pd.DataFrame(routing_rows(tasks), columns=ROUTING_COLUMNS)
