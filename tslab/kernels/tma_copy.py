"""TMA copy: a load task fills a multi-stage ``TmaAsync`` SMEM ring, a store task drains it to GMEM.

Resource/task flow (warps in brackets)::

    GmemTileSource --LoadTask [warp 4]: coords -> acquire -> TMA load -> commit--> SmemTileRing (TmaAsync, S stages)
    SmemTileRing   --StoreTask [warps 0-3]: wait -> store tile -> release------->  GmemTileSink

Resources:
    GmemTileSource  the tile coordinates of the next tile (consumer work ``coords``)
    SmemTileRing    ``stages`` SMEM tiles guarded by a TmaAsync pipeline (producer ``tma_load``,
                    consumer ``read_tile``)
    GmemTileSink    the output tensor (producer work ``store``)
Tasks:
    LoadTask  warp 4, one elected thread issues the TMA loads
    StoreTask warps 0-3, 128 threads store the tile
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute, pipeline
from cutlass.experimental.task_scheduling.memory import SmemAllocation
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    StageInfo,
    TaskLocalVariable,
    WorkAttr,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint

NAME = "tma_copy"
SUMMARY = "pipelined TMA copy: load task -> TmaAsync SMEM ring -> store task"
PARAMS: dict[str, Any] = {"stages": 4, "tile_rows": 64, "tile_cols": 128, "tiles": 4, "store_warps": 4}
ELEMENT_BYTES = 2  # fp16


@dataclass(kw_only=True)
class GmemTileSource(MemoryResource):
    """GMEM input seen as a stream of tile coordinates; owns no memory and no pipeline."""

    tile_rows: int = 64
    row: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.row = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0),
                                     docs="first row of the tile the load task fetches next")

    @consumer_work(returns=row)
    @cute.jit
    def coords(self, stage_info: StageInfo) -> cutlass.Int32:
        return stage_info.loop_offset


@dataclass(kw_only=True)
class SmemTileRing(MemoryResource):
    """``stages`` SMEM tiles of ``tile_rows x tile_cols`` fp16, guarded by a TmaAsync pipeline."""

    tile_rows: int = 64
    tile_cols: int = 128
    stages: int = 4
    buffer: str = "ring_buf"
    tma_desc: Any = field(default=None)
    tile: Any = field(init=False, default=None)
    _alloc: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._alloc = SmemAllocation(self.buffer, size_bytes=self.tile_bytes * self.stages, alignment=1024)

    @property
    def tile_bytes(self) -> int:
        return self.tile_rows * self.tile_cols * ELEMENT_BYTES

    def get_smem_requirements(self) -> list[SmemAllocation]:
        # One tile per pipeline stage: an edited num_stages resizes the ring.
        self._alloc.size_bytes = self.tile_bytes * self.pipeline_config.num_stages
        return [self._alloc]

    @cute.jit
    def _bind_smem(self, stage_info: StageInfo) -> None:
        self.tile = cutlass.Array(stage_info.context.smem_base.data_ptr() + self._alloc.offset,
                                  dtype=cutlass.Float16, shape=(self.stages * self.tile_rows * self.tile_cols,),
                                  addrspace=3)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def bind_load(self, stage_info: StageInfo) -> None:
        self._bind_smem(stage_info)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def bind_read(self, stage_info: StageInfo) -> None:
        self._bind_smem(stage_info)

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo, *, row: cutlass.Int32) -> None:
        from cutlass.experimental import primitives as prims

        if prims.elect_sync():
            prims.cp_async_bulk_tensor_shared_cta_global(
                self.tile.subview(stage_info.stage_idx * self.tile_rows * self.tile_cols),
                self.tma_desc, (0, row), stage_info.barrier)

    @consumer_work
    @cute.jit
    def read_tile(self, stage_info: StageInfo) -> None:
        pass  # the store task reads SMEM directly in GmemTileSink.store


@dataclass(kw_only=True)
class GmemTileSink(MemoryResource):
    """GMEM output tensor; the store task copies each SMEM tile into it."""

    out: Any = field(default=None)

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo) -> None:
        pass


def tma_pipeline(stages: int, tile_bytes: int, consumer_threads: int) -> PipelineConfig:
    """The ring's TmaAsync pipeline: one elected producer thread, ``consumer_threads`` consumers."""
    return PipelineConfig.create_tma_async_pipeline_cfg(
        num_stages=stages, num_bytes=tile_bytes,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_threads))


def build(stages: int = 4, tile_rows: int = 64, tile_cols: int = 128, tiles: int = 4,
          store_warps: int = 4) -> Blueprint:
    """Fresh TS objects of the TMA copy over ``tiles`` row tiles."""
    src = GmemTileSource(name="gmem_in", tile_rows=tile_rows)
    ring = SmemTileRing(name="smem_ring", tile_rows=tile_rows, tile_cols=tile_cols, stages=stages,
                        pipeline_config=tma_pipeline(stages, tile_rows * tile_cols * ELEMENT_BYTES, store_warps * 32))
    sink = GmemTileSink(name="gmem_out")
    rows = tiles * tile_rows

    @schedule
    def load_schedule(src: MemoryResource, ring: MemoryResource) -> None:
        ring.bind_load()
        with domain_loop(0, rows, tile_rows):
            row = src.coords()
            ring.acquire()
            ring.tma_load(row=row)
            ring.commit()

    @schedule
    def store_schedule(ring: MemoryResource, sink: MemoryResource) -> None:
        ring.bind_read()
        with domain_loop(0, rows, tile_rows):
            ring.wait()
            ring.read_tile()
            sink.store()
            ring.release()

    load = Task(name="LoadTask", src_resources=[src], dst_resources=[ring], warp_idx=store_warps, num_warps=1,
                schedule=load_schedule(src, ring))
    store = Task(name="StoreTask", src_resources=[ring], dst_resources=[sink], warp_idx=0, num_warps=store_warps,
                 schedule=store_schedule(ring, sink))
    return Blueprint(tasks=[load, store], graph={ring: [src], sink: [ring]}, smem_resources=[ring])


def design(**params: Any):
    """The TMA copy design (see the module docstring for the flow)."""
    from ..core.design import Design

    return Design(NAME, params)
