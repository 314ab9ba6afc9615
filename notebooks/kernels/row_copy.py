"""Row copy: a load task streams rows of the source through a ring of SMEM row buffers, a store task writes them out.

The ring's depth and the row width are module constants (``ring_stages``, ``row_elems``); the SMEM the kernel
allocates is computed from them at module level (``ring_bytes``), not from the pipeline. Change the depth with
``design.with_knobs(ring_stages=3)``: tslab runs this file again with the new value.

Resource/task flow (warps in brackets)::

    RowIndex --LoadTask [warp 4]: next_row -> acquire -> TMA one row into a slot -> commit--> SmemRowResource
    SmemRowResource --StoreTask [warps 0-3]: wait -> store_row (slot to dst) -> release

Resources:
    RowIndex         the row the load task fetches next (no memory, no pipeline)
    SmemRowResource  ``ring_stages`` SMEM slots of one row each, guarded by a TmaAsync pipeline; its consumer
                     work copies a slot to the destination tensor
Tasks:
    LoadTask   warp 4; one elected thread issues each TMA load
    StoreTask  warps 0-3; 128 threads, ``row_elems // 128`` elements each
"""

from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute, pipeline
from cutlass.experimental import cuda
from cutlass.experimental import primitives as prims
from cutlass.experimental.task_scheduling.memory import SmemAllocation, SmemAllocator
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
from cutlass.experimental.task_scheduling.task_manager import TaskManager

ring_stages = 2  # row buffers in flight
row_elems = 256  # fp16 elements a CTA copies per row
ring_bytes = ring_stages * row_elems * 2
store_threads = 128


@dataclass(kw_only=True)
class RowIndex(MemoryResource):
    """The index of the next row to load; owns no memory and no pipeline."""

    row: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.row = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0), docs="row to load")

    @consumer_work(returns=row)
    @cute.jit
    def next_row(self, stage_info: StageInfo) -> cutlass.Int32:
        return stage_info.loop_offset


@dataclass(kw_only=True)
class SmemRowResource(MemoryResource):
    """``ring_stages`` row buffers in SMEM (``ring_bytes`` in all) and the destination; a TmaAsync pipeline guards
    the buffers."""

    desc: Any = None
    dst: Any = None
    rows: Any = field(init=False, default=None)
    _smem: cutlass.Constexpr = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._smem = SmemAllocation("row_ring", size_bytes=ring_bytes, alignment=128)
        if self.desc is not None:  # inside the kernel: a view of the final type, re-pointed by `bind`
            self.rows = cutlass.Array(cutlass.inttoptr(0, mem_space=3, dtype=cutlass.Float16),
                                      dtype=cutlass.Float16, shape=(ring_stages * row_elems,), addrspace=3)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self._smem]

    @cute.jit
    def _bind(self, stage_info: StageInfo) -> None:
        self.rows = cutlass.Array(stage_info.context.smem_base.data_ptr() + self._smem.offset,
                                  dtype=cutlass.Float16, shape=(ring_stages * row_elems,), addrspace=3)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def bind_load(self, stage_info: StageInfo) -> None:
        self._bind(stage_info)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def bind_store(self, stage_info: StageInfo) -> None:
        self._bind(stage_info)

    @producer_work
    @cute.jit
    def load_row(self, stage_info: StageInfo, *, row: cutlass.Int32) -> None:
        bx, _, _ = cute.arch.block_idx()
        if prims.elect_sync():
            prims.cp_async_bulk_tensor_shared_cta_global(self.rows.subview(stage_info.stage_idx * row_elems),
                                                         self.desc, (bx * row_elems, row), stage_info.barrier)

    @consumer_work
    @cute.jit
    def store_row(self, stage_info: StageInfo) -> None:
        tx, _, _ = cute.arch.thread_idx()
        bx, _, _ = cute.arch.block_idx()
        for i in cutlass.range_constexpr(row_elems // store_threads):
            col = i * store_threads + tx
            self.dst[stage_info.loop_offset, bx * row_elems + col] = self.rows[stage_info.stage_idx * row_elems + col]


def make_parts(rows: int, desc: Any = None, dst: Any = None) -> tuple[list[Task], dict, SmemAllocator]:
    """The tasks, the dependency graph and the laid-out SMEM allocator of the copy."""
    index = RowIndex(name="rowIndex")
    ring_sync = PipelineConfig.create_tma_async_pipeline_cfg(
        num_stages=ring_stages, num_bytes=row_elems * 2,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, store_threads))
    ring = SmemRowResource(name="smemRow", desc=desc, dst=dst, pipeline_config=ring_sync)
    allocator = SmemAllocator()
    allocator.add_resource(ring)
    allocator.compute_layout()

    @schedule
    def load_schedule(index: MemoryResource, ring: MemoryResource) -> None:
        ring.bind_load()
        with domain_loop(0, rows, 1):
            row = index.next_row()
            ring.acquire()
            ring.load_row(row=row)
            ring.commit()

    @schedule
    def store_schedule(ring: MemoryResource) -> None:
        ring.bind_store()
        with domain_loop(0, rows, 1):
            ring.wait()
            ring.store_row()
            ring.release()

    tasks = [
        Task(name="LoadTask", src_resources=[index], dst_resources=[ring], warp_idx=4, num_warps=1,
             schedule=load_schedule(index, ring)),
        Task(name="StoreTask", src_resources=[ring], dst_resources=[], warp_idx=0, num_warps=4,
             schedule=store_schedule(ring)),
    ]
    return tasks, {ring: [index]}, allocator


@cute.kernel
def row_copy_kernel(desc: cutlass.GridConstant[cuda.TensorMap], dst: cute.Tensor, rows: cutlass.Constexpr):
    if prims.elect_sync():
        prims.prefetch_tensormap(desc.get_ptr())
    tasks, graph, allocator = make_parts(rows, desc.get_ptr(), dst)
    manager = TaskManager(tasks=tasks, resource_dependency_graph=graph, smem_allocator=allocator)
    manager.setup_resources_and_tasks()
    prims.fence_mbarrier_init()
    prims.barrier_cta_sync(0)
    manager.run()


@cute.jit
def copy_rows(src: cute.Tensor, dst: cute.Tensor):
    """Copy ``src`` to ``dst`` (rows x cols fp16, cols a multiple of ``row_elems``), one column strip per CTA."""
    desc = cuda.create_tensor_map_tiled_from_view(src, box_dims=(1, row_elems), swizzle=cuda.TensorMapSwizzle.none)
    row_copy_kernel(desc, dst, src.shape[0]).launch(grid=(src.shape[1] // row_elems, 1, 1), block=(160, 1, 1))
