"""Teaching design whose load task reads a task-local variable before the step that writes it: TS refuses the routing.

It is ``tma_copy`` (same resources and tasks) with one schedule edit, applied the way ``Design.with_schedule``
applies any edit: the task keeps its slot routing, and TS checks that routing against the new order.

Resource/task flow (warps in brackets)::

    gmem_in   --LoadTask [warp 4]: acquire -> TMA load (reads row) -> coords (writes row) -> commit--> smem_ring
    smem_ring --StoreTask [warps 0-3]: wait -> TMA store -> release--> gmem_out

``coords`` returns the task-local variable ``row`` and ``tma_load(row=row)`` takes it: TS's ``@schedule``
recorded that edge in the load task's slot routing (``design.variable_flow()`` lists it). With the writer moved
after its reader, TS's routing check finds no write of ``row`` before the read: "slot_routing lists no writer of
variable 'row' that precedes reader 'smem_ring' ProducerWork[0]". Loop carry is not modelled, so at run time
each load would use the row of the trip before: a wrong copy, not a hang, and no deadlock or race search could
see it. Fix: ``coords`` before the load, as in ``tma_copy``. Checked on the CPU; never compiled.
"""

from __future__ import annotations

from typing import Any

from ..core.blueprint import Blueprint, apply_schedule
from ..core.steps import normalize_steps
from . import tma_copy

NAME = "demo_routing"
SUMMARY = "teaching: a load reads a task-local variable before the step that writes it (TS's routing check refuses)"
PARAMS: dict[str, Any] = {"stages": 4, "tile_rows": 64, "tile_cols": 128, "tiles": 4, "store_warps": 4}
#: The edit on top of ``tma_copy``: the load task's ``coords`` step moved after the load that reads its ``row``.
SCHEDULES: dict[str, tuple] = {"LoadTask": normalize_steps("LoadTask", [
    ("smem_ring", "ProducerAuxWork", "Head", "bind_load"),
    ("smem_ring", "ProducerAcquire", "Loop", None),
    ("smem_ring", "ProducerWork", "Loop", "tma_load"),
    ("gmem_in", "ConsumerWork", "Loop", "coords"),
    ("smem_ring", "ProducerCommit", "Loop", None),
])}

__all__ = ["NAME", "PARAMS", "SCHEDULES", "SUMMARY", "build", "design"]


def build(stages: int = 4, tile_rows: int = 64, tile_cols: int = 128, tiles: int = 4,
          store_warps: int = 4) -> Blueprint:
    """Fresh TS objects: ``tma_copy``'s, with :data:`SCHEDULES` applied."""
    bp = tma_copy.build(stages=stages, tile_rows=tile_rows, tile_cols=tile_cols, tiles=tiles, store_warps=store_warps)
    for task, steps in SCHEDULES.items():
        apply_schedule(bp, task, steps)
    return bp


def design(**params: Any):
    from ..core.design import Design

    return Design(NAME, params)
