"""Teaching design that deadlocks: the TMA copy whose store task waits twice before it releases a 1-stage ring.

It is ``tma_copy`` (same resources, tasks and GPU kernel) with one schedule edit, applied the way
``Design.with_schedule`` applies any edit; on the GPU the edit is applied at ``TaskManager`` construction.

Resource/task flow (warps in brackets)::

    gmem_in --LoadTask [warp 4]: coords -> acquire -> TMA load -> commit--> smem_ring (TmaAsync, 1 stage)
    smem_ring --StoreTask [warps 0-3]: wait, wait (head) -> read/store (loop) -> release, release (tail)--> gmem_out

With one stage the second ``wait`` needs a second commit, which needs a free stage, which needs the
release that only comes after both waits: TS's checker reports both tasks blocked, and the compiled kernel
hangs (``tslab.gpu.compile(design(), force=True).run(timeout=10)`` stops it). Fix: release inside the loop
(the ``tma_copy`` schedule), or give the ring 2 stages.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core.blueprint import Blueprint, apply_schedule
from ..core.steps import normalize_steps
from . import tma_copy

NAME = "demo_deadlock"
SUMMARY = "teaching: a consumer waits twice before releasing a 1-stage ring (deadlocks)"
PARAMS: dict[str, Any] = {"stages": 1, "tile_rows": 64, "tile_cols": 128, "tiles": 2, "store_warps": 4}
#: The GPU kernel is tma_copy's, edited by :data:`SCHEDULES`, with its rules and launch options. The problem it
#: runs when none is given: one tile per block (2048 tiles <= the grid), where the H200 hangs exactly as the
#: checker predicts. With several tiles per block (16384 x 16384) the H200 run ended in "unspecified launch
#: failure" after about 9 s instead (measured 2026-12-01; see benchmarks/NOTES.md).
RULES = dataclasses.replace(tma_copy.RULES, default_shape=(4096, 4096), launch_module="tslab.kernels.tma_copy")
#: The edit on top of ``tma_copy``: both waits in the head, both releases in the tail.
SCHEDULES: dict[str, tuple] = {"StoreTask": normalize_steps("StoreTask", [
    ("smem_ring", "ConsumerAuxWork", "Head", "bind_read"),
    ("smem_ring", "ConsumerWait", "Head", None),
    ("smem_ring", "ConsumerWait", "Head", None),
    ("smem_ring", "ConsumerWork", "Loop", "read_tile"),
    ("gmem_out", "ProducerWork", "Loop", "store"),
    ("smem_ring", "ConsumerRelease", "Tail", None),
    ("smem_ring", "ConsumerRelease", "Tail", None),
])}

__all__ = ["NAME", "PARAMS", "RULES", "SCHEDULES", "SUMMARY", "build", "design"]


def build(stages: int = 1, tile_rows: int = 64, tile_cols: int = 128, tiles: int = 2,
          store_warps: int = 4) -> Blueprint:
    """Fresh TS objects: ``tma_copy``'s, with :data:`SCHEDULES` applied."""
    bp = tma_copy.build(stages=stages, tile_rows=tile_rows, tile_cols=tile_cols, tiles=tiles, store_warps=store_warps)
    for task, steps in SCHEDULES.items():
        apply_schedule(bp, task, steps)
    return bp


def design(**params: Any):
    from ..core.design import Design

    return Design(NAME, params)
