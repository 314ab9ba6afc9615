"""Teaching design that deadlocks: the store task waits twice before it releases a 1-stage ring.

Resource/task flow (warps in brackets)::

    gmem_in --LoadTask [warp 4]: coords -> acquire -> TMA load -> commit--> smem_ring (TmaAsync, 1 stage)
    smem_ring --StoreTask [warps 0-3]: wait, wait (head) -> read/store (loop) -> release, release (tail)--> gmem_out

With one stage the second ``wait`` needs a second commit, which needs a free stage, which needs the
release that only comes after both waits: TS's checker reports both tasks blocked. Fix: release inside the
loop (the ``tma_copy`` schedule), or give the ring 2 stages. Checked on the CPU; never compiled.
"""

from __future__ import annotations

from typing import Any

from cutlass.experimental.task_scheduling.resources import MemoryResource
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from .tma_copy import ELEMENT_BYTES, GmemTileSink, GmemTileSource, SmemTileRing, tma_pipeline

NAME = "demo_deadlock"
SUMMARY = "teaching: a consumer waits twice before releasing a 1-stage ring (deadlocks)"
PARAMS: dict[str, Any] = {"stages": 1, "tiles": 2, "tile_rows": 64, "tile_cols": 128}


def build(stages: int = 1, tiles: int = 2, tile_rows: int = 64, tile_cols: int = 128) -> Blueprint:
    src = GmemTileSource(name="gmem_in", tile_rows=tile_rows)
    ring = SmemTileRing(name="smem_ring", tile_rows=tile_rows, tile_cols=tile_cols, stages=stages,
                        pipeline_config=tma_pipeline(stages, tile_rows * tile_cols * ELEMENT_BYTES, 128))
    sink = GmemTileSink(name="gmem_out")
    rows = tiles * tile_rows

    @schedule
    def load_schedule(src: MemoryResource, ring: MemoryResource) -> None:
        with domain_loop(0, rows, tile_rows):
            row = src.coords()
            ring.acquire()
            ring.tma_load(row=row)
            ring.commit()

    @schedule
    def store_schedule(ring: MemoryResource, sink: MemoryResource) -> None:
        ring.wait()
        ring.wait()
        with domain_loop(0, rows, tile_rows):
            ring.read_tile()
            sink.store()
        ring.release()
        ring.release()

    load = Task(name="LoadTask", src_resources=[src], dst_resources=[ring], warp_idx=4, num_warps=1,
                schedule=load_schedule(src, ring))
    store = Task(name="StoreTask", src_resources=[ring], dst_resources=[sink], warp_idx=0, num_warps=4,
                 schedule=store_schedule(ring, sink))
    return Blueprint(tasks=[load, store], graph={ring: [src], sink: [ring]}, smem_resources=[ring])


def design(**params: Any):
    from ..core.design import Design

    return Design(NAME, params)
