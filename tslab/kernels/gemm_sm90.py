"""Hopper GEMM design: TMA loads into a TmaAsync A/B ring, one warpgroup MMA task, an epilogue via SMEM.

This module is, for now, a faithful design for checking and teaching: its resources, pipelines,
allocations and schedules are what the GPU kernel will use, but the warpgroup-MMA work methods arrive with a
later GPU issue, so compiling it is refused with exactly that message (``tslab.kernels.gemm_sm90.COMPILE_NOTE``).

Resource/task flow (warps in brackets)::

    gmem_ab  --LoadTask [warp 0]: k coords -> acquire -> TMA A,B -> commit------> smem_ab (TmaAsync, S stages)
    smem_ab  --MmaTask [warps 4-7]: wait -> wgmma -> release; tail: acquire -> stage acc -> commit--> smem_epi
    smem_epi --EpilogueTask [warps 8-11]: wait -> TMA store C -> release-------> gmem_c

Resources:
    GmemAB       the K-loop coordinates of the A and B tiles (consumer work ``k_coords``)
    SmemAB       ``stages`` x (A tile + B tile) in SMEM, allocations ``a_buf`` and ``b_buf`` (TmaAsync)
    SmemEpilogue the C tile staged for the TMA store, allocation ``epi_buf`` (AsyncAsync, 1 stage); it shares
                 bytes with ``a_buf``/``b_buf`` through an alias group: the A/B stages are dead once the MMA
                 task has released its last stage, which the schedule guarantees before the epilogue writes
    GmemC        the output matrix (producer work ``tma_store``)
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
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint

NAME = "gemm_sm90"
SUMMARY = "Hopper GEMM: TMA -> TmaAsync A/B ring -> warpgroup MMA -> epilogue aliasing the A/B stages"
PARAMS: dict[str, Any] = {"tile_m": 128, "tile_n": 128, "tile_k": 64, "stages": 4, "k_tiles": 4, "dtype": "fp16"}
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp8": 1}
COMPILE_NOTE = ("gemm_sm90 is a design for checking and teaching: its warpgroup-MMA work methods arrive with "
                "a later GPU issue, so it cannot be compiled yet")


@dataclass(kw_only=True)
class GmemAB(MemoryResource):
    """GMEM A and B, seen by the load task as the K coordinate of the next A/B tile pair."""

    k: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.k = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0), docs="K coordinate of the tile pair")

    @consumer_work(returns=k)
    @cute.jit
    def k_coords(self, stage_info: StageInfo) -> cutlass.Int32:
        return stage_info.loop_offset


@dataclass(kw_only=True)
class SmemAB(MemoryResource):
    """``stages`` A tiles (tile_m x tile_k) and B tiles (tile_n x tile_k) in SMEM, filled by TMA."""

    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 64
    element_bytes: int = 2
    _a: Any = field(init=False, default=None)
    _b: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._a = SmemAllocation("a_buf", size_bytes=0, alignment=1024)
        self._b = SmemAllocation("b_buf", size_bytes=0, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        stages = self.pipeline_config.num_stages
        self._a.size_bytes = stages * self.tile_m * self.tile_k * self.element_bytes
        self._b.size_bytes = stages * self.tile_n * self.tile_k * self.element_bytes
        return [self._a, self._b]

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo, *, k: cutlass.Int32) -> None:
        raise NotImplementedError(COMPILE_NOTE)

    @consumer_work
    @cute.jit
    def wgmma(self, stage_info: StageInfo) -> None:
        raise NotImplementedError(COMPILE_NOTE)


@dataclass(kw_only=True)
class SmemEpilogue(MemoryResource):
    """The C tile (tile_m x tile_n) staged in SMEM between the MMA task and the TMA store."""

    tile_m: int = 128
    tile_n: int = 128
    element_bytes: int = 2
    _c: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._c = SmemAllocation("epi_buf", size_bytes=self.tile_m * self.tile_n * self.element_bytes, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self._c]

    @producer_work
    @cute.jit
    def stage_accumulators(self, stage_info: StageInfo) -> None:
        raise NotImplementedError(COMPILE_NOTE)

    @consumer_work
    @cute.jit
    def read_tile(self, stage_info: StageInfo) -> None:
        raise NotImplementedError(COMPILE_NOTE)


@dataclass(kw_only=True)
class GmemC(MemoryResource):
    """The output matrix C, written by TMA stores of the staged tile."""

    @producer_work
    @cute.jit
    def tma_store(self, stage_info: StageInfo) -> None:
        raise NotImplementedError(COMPILE_NOTE)


def _threads(n: int) -> pipeline.CooperativeGroup:
    return pipeline.CooperativeGroup(pipeline.Agent.Thread, n)


def build(tile_m: int = 128, tile_n: int = 128, tile_k: int = 64, stages: int = 4, k_tiles: int = 4,
          dtype: str = "fp16") -> Blueprint:
    """Fresh TS objects of one output tile's GEMM over ``k_tiles`` K tiles."""
    if dtype not in DTYPE_BYTES:
        from ..errors import DesignError, did_you_mean

        raise DesignError("input", "kernel 'gemm_sm90' param 'dtype'", f"dtype={dtype!r} is not supported",
                          did_you_mean(dtype, list(DTYPE_BYTES)))
    nbytes = DTYPE_BYTES[dtype]
    ab_bytes = (tile_m + tile_n) * tile_k * nbytes
    gmem_ab = GmemAB(name="gmem_ab")
    smem_ab = SmemAB(name="smem_ab", tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, element_bytes=nbytes,
                     pipeline_config=PipelineConfig.create_tma_async_pipeline_cfg(
                         num_stages=stages, num_bytes=ab_bytes, producer_group=_threads(1),
                         consumer_group=_threads(128)))
    smem_epi = SmemEpilogue(name="smem_epi", tile_m=tile_m, tile_n=tile_n, element_bytes=nbytes,
                            pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(
                                num_stages=1, producer_group=_threads(128), consumer_group=_threads(128),
                                cta_layout_vmnk=None))
    gmem_c = GmemC(name="gmem_c")

    @schedule
    def load(gmem_ab: MemoryResource, smem_ab: MemoryResource) -> None:
        with domain_loop(0, k_tiles, 1):
            k = gmem_ab.k_coords()
            smem_ab.acquire()
            smem_ab.tma_load(k=k)
            smem_ab.commit()

    @schedule
    def mma(smem_ab: MemoryResource, smem_epi: MemoryResource) -> None:
        with domain_loop(0, k_tiles, 1):
            smem_ab.wait()
            smem_ab.wgmma()
            smem_ab.release()
        smem_epi.acquire()
        smem_epi.stage_accumulators()
        smem_epi.commit()

    @schedule
    def epilogue(smem_epi: MemoryResource, gmem_c: MemoryResource) -> None:
        with domain_loop(0, 1, 1):
            smem_epi.wait()
            smem_epi.read_tile()
            gmem_c.tma_store()
            smem_epi.release()

    tasks = [
        Task(name="LoadTask", src_resources=[gmem_ab], dst_resources=[smem_ab], warp_idx=0, num_warps=1,
             schedule=load(gmem_ab, smem_ab)),
        Task(name="MmaTask", src_resources=[smem_ab], dst_resources=[smem_epi], warp_idx=4, num_warps=4,
             schedule=mma(smem_ab, smem_epi)),
        Task(name="EpilogueTask", src_resources=[smem_epi], dst_resources=[gmem_c], warp_idx=8, num_warps=4,
             schedule=epilogue(smem_epi, gmem_c)),
    ]
    return Blueprint(tasks=tasks, graph={smem_ab: [gmem_ab], smem_epi: [smem_ab], gmem_c: [smem_epi]},
                     smem_resources=[smem_ab, smem_epi], alias_groups=[[["a_buf", "b_buf"], ["epi_buf"]]])


def design(**params: Any):
    """The Hopper GEMM design (checking and teaching; see the module docstring)."""
    from ..core.design import Design

    return Design(NAME, params)
