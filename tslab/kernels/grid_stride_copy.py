"""Grid-stride copy: one task reads GMEM and writes GMEM, no SMEM and no pipeline.

Resource/task flow (warps in brackets)::

    GmemSource --CopyTask [warps 0..W-1]: load vector -> store vector--> GmemSink

Resources:
    GmemSource  the input tensor (consumer work ``load``)
    GmemSink    the output tensor (producer work ``store``)
Tasks:
    CopyTask    every thread copies ``vector_bytes`` per access, striding over the grid
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    StageInfo,
    TaskLocalVariable,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint

NAME = "grid_stride_copy"
SUMMARY = "grid-stride GMEM -> GMEM copy, one task, vectorised accesses"
PARAMS: dict[str, Any] = {"warps": 4, "iterations": 4, "vector_bytes": 16}


@dataclass(kw_only=True)
class GmemSource(MemoryResource):
    """The input tensor; each ``load`` reads one element (a vector) per thread."""

    src: Any = field(default=None)
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0),
                                       docs="the element this thread copies in this iteration")

    @consumer_work(returns=value)
    @cute.jit
    def load(self, stage_info: StageInfo) -> cutlass.Int32:
        tid, _, _ = cute.arch.thread_idx()
        return self.src[stage_info.loop_offset + tid]


@dataclass(kw_only=True)
class GmemSink(MemoryResource):
    """The output tensor; each ``store`` writes one element (a vector) per thread."""

    dst: Any = field(default=None)

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, *, value: cutlass.Int32) -> None:
        tid, _, _ = cute.arch.thread_idx()
        self.dst[stage_info.loop_offset + tid] = value


def build(warps: int = 4, iterations: int = 4, vector_bytes: int = 16) -> Blueprint:
    """Fresh TS objects of the grid-stride copy (``iterations`` loop trips checked)."""
    src = GmemSource(name="gmem_in")
    dst = GmemSink(name="gmem_out")
    threads = warps * 32

    @schedule
    def copy_schedule(src: MemoryResource, dst: MemoryResource) -> None:
        with domain_loop(0, iterations * threads, threads):
            value = src.load()
            dst.store(value=value)

    task = Task(name="CopyTask", src_resources=[src], dst_resources=[dst], warp_idx=0, num_warps=warps,
                schedule=copy_schedule(src, dst))
    return Blueprint(tasks=[task], graph={dst: [src]})


def design(**params: Any):
    """The grid-stride copy design."""
    from ..core.design import Design

    return Design(NAME, params)
