"""Small TS resources for the teaching designs (``demo_*``): checked on the CPU, never compiled.

Their work methods are empty on purpose: the teaching designs exist to show what TS's checker says about a
schedule, not to move data.
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
    consumer_work,
    producer_work,
)


@dataclass(kw_only=True)
class Source(MemoryResource):
    """A GMEM input read one item per loop trip."""

    item: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.item = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))

    @consumer_work(returns=item)
    @cute.jit
    def load(self, stage_info: StageInfo) -> cutlass.Int32:
        return cutlass.Int32(0)


@dataclass(kw_only=True)
class Buffer(MemoryResource):
    """An SMEM buffer of ``stage_bytes`` per pipeline stage (one allocation named ``buffer``)."""

    stage_bytes: int = 16384
    buffer: str = "buf"
    item: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    _alloc: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.item = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))
        self._alloc = SmemAllocation(self.buffer, size_bytes=self.stage_bytes, alignment=128)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        stages = self.pipeline_config.num_stages if self.pipeline_config is not None else 1
        self._alloc.size_bytes = self.stage_bytes * stages
        return [self._alloc]

    @producer_work
    @cute.jit
    def write(self, stage_info: StageInfo, *, item: cutlass.Int32) -> None:
        pass

    @consumer_work(returns=item)
    @cute.jit
    def read(self, stage_info: StageInfo) -> cutlass.Int32:
        return cutlass.Int32(0)


@dataclass(kw_only=True)
class Sink(MemoryResource):
    """A GMEM output written one item per loop trip."""

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, *, item: cutlass.Int32) -> None:
        pass


def async_pipeline(stages: int, threads: int = 32) -> PipelineConfig:
    """An AsyncAsync pipeline between two single-warp tasks."""
    return PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, threads),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, threads), cta_layout_vmnk=None)
