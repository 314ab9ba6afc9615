"""Attention schedule: the tasks and pipelines of a FlashAttention-style forward kernel, with its work left empty.

It has the shape of FlashInfer's TS context attention kernel (a load warp, an MMA warp, softmax and correction
warpgroups, an epilogue warp, persistent over query tiles, a runtime count of K/V tiles) and no arithmetic: it
traces and compiles for sm_90a so that tslab can capture it, and it exists to be checked, not run.

Per query tile, with ``n`` = ``kv_tiles`` (a runtime argument):

    LoadTask        Q once, then K/V tile j for j < n                                  n trips
    MmaTask         S_0 = Q K_0 in its head; then S_{j+1} = Q K_{j+1} and O += P_j V_j  n - 1 trips
                    for each j; O += P_last V_last in its tail
    SoftmaxTask     P_j and the row statistics of S_j                                  n trips
    CorrectionTask  the first statistics in its head; O rescaled by each later one;    n - 1 trips
                    the final O tile written to SMEM in its tail
    EpilogueTask    the O tile stored to GMEM by a TMA store from that SMEM            no K/V loop

Resource/task flow (warps in brackets)::

    GmemQKV --LoadTask [warp 12]: acquire -> TMA --> SmemQ (1 stage), SmemKV (kv_stages)
    SmemQ, SmemKV --MmaTask [warp 13]: wait -> S = QK^T --> SmemS (2 stages)
    SmemS --SoftmaxTask [warps 0-3]: wait -> P, stats --> SmemP (1 stage), Stats (2 stages)
    SmemP --MmaTask: wait -> O += PV -> release P, K/V
    Stats --CorrectionTask [warps 4-7]: wait -> rescale O -> release; tail: O --> SmemO (1 stage)
    SmemO --EpilogueTask [warp 14]: wait -> TMA store --> GmemO; release SmemO

The knob ``store_via`` says how the epilogue's TMA store appears to TS. ``"gmem_o"`` (FlashInfer's shape): a
ProducerWork on ``GmemO``, a resource with no pipeline whose SMEM (the store's source) is aliased with SmemO's.
``"smem_o"``: a ConsumerWork of SmemO itself, between its wait and its release.
"""

from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute, pipeline
from cutlass.experimental import primitives as prims
from cutlass.experimental.task_scheduling.memory import SmemAllocation, SmemAllocator
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    StageInfo,
    TileSchedulerConfig,
    WorkQueue,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, work_tile_loop
from cutlass.experimental.task_scheduling.task import Task
from cutlass.experimental.task_scheduling.task_manager import TaskManager
from cutlass.utils import PersistentTileSchedulerParams, StaticPersistentTileScheduler

kv_stages = 2  # K/V tiles in flight
store_via = "gmem_o"  # how the epilogue's TMA store appears to TS: "gmem_o" (FlashInfer's shape) or "smem_o"
tile_m, tile_n, head_dim = 128, 128, 128
tile_bytes = tile_m * head_dim * 2
WARPS = {"SoftmaxTask": (0, 4), "CorrectionTask": (4, 4), "LoadTask": (12, 1), "MmaTask": (13, 1),
         "EpilogueTask": (14, 1)}
BLOCK_THREADS = 15 * 32


@dataclass(kw_only=True)
class SmemTile(MemoryResource):
    """``stages`` slots of ``stage_bytes`` in SMEM, one allocation named ``buffer``; its pipeline guards them.

    The work methods name what the kernel would do with a slot; their bodies are empty."""

    stages: cutlass.Constexpr = 1
    stage_bytes: cutlass.Constexpr = tile_bytes
    buffer: cutlass.Constexpr = "tile"
    _alloc: cutlass.Constexpr = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._alloc = SmemAllocation(self.buffer, size_bytes=self.stages * self.stage_bytes, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self._alloc]

    @producer_work
    @cute.jit
    def write(self, stage_info: StageInfo) -> None:
        pass

    @consumer_work
    @cute.jit
    def read(self, stage_info: StageInfo) -> None:
        pass

    @consumer_work
    @cute.jit
    def tma_store(self, stage_info: StageInfo) -> None:
        pass


@dataclass(kw_only=True)
class GmemO(MemoryResource):
    """The output: a TMA store from the O tile staged in SMEM (no pipeline; its SMEM aliases SmemO's)."""

    _alloc: cutlass.Constexpr = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._alloc = SmemAllocation("o_store_src", size_bytes=tile_bytes, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self._alloc]

    @producer_work
    @cute.jit
    def tma_store(self, stage_info: StageInfo) -> None:
        pass


@dataclass(kw_only=True)
class GmemQKV(MemoryResource):
    """The inputs Q, K and V in GMEM; its consumer work names the tile the load task fetches next."""

    @consumer_work
    @cute.jit
    def coords(self, stage_info: StageInfo) -> None:
        pass


def _pipe(stages: int, producer: str, consumer: str) -> PipelineConfig:
    threads = {name: 32 * n for name, (_warp, n) in WARPS.items()}
    return PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, threads[producer]),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, threads[consumer]), cta_layout_vmnk=None)


def make_parts(kv_tiles: Any, scheduler: Any = None) -> tuple[list[Task], dict, SmemAllocator]:
    """The tasks, the dependency graph and the laid-out SMEM allocator (``kv_tiles`` may be a runtime value)."""
    gmem = GmemQKV(name="gmem_qkv")
    q = SmemTile(name="smem_q", buffer="q_buf", pipeline_config=_pipe(1, "LoadTask", "MmaTask"))
    kv = SmemTile(name="smem_kv", buffer="kv_buf", stages=kv_stages,
                  pipeline_config=_pipe(kv_stages, "LoadTask", "MmaTask"))
    s = SmemTile(name="smem_s", buffer="s_buf", stages=2, stage_bytes=tile_bytes // 2,
                 pipeline_config=_pipe(2, "MmaTask", "SoftmaxTask"))
    p = SmemTile(name="smem_p", buffer="p_buf", stage_bytes=tile_bytes // 2,
                 pipeline_config=_pipe(1, "SoftmaxTask", "MmaTask"))
    stats = SmemTile(name="stats", buffer="stats_buf", stages=2, stage_bytes=tile_m * 8,
                     pipeline_config=_pipe(2, "SoftmaxTask", "CorrectionTask"))
    o = SmemTile(name="smem_o", buffer="o_buf", pipeline_config=_pipe(1, "CorrectionTask", "EpilogueTask"))
    out = GmemO(name="gmem_o")
    wq = WorkQueue(tile_scheduler_config=scheduler, name="work_queue")
    allocator = SmemAllocator()
    for res in (q, kv, s, p, stats, o):
        allocator.add_resource(res)
    if store_via == "gmem_o":
        allocator.add_resource(out)
        allocator.add_alias_group([[o._alloc], [out._alloc]])
    allocator.compute_layout()

    def next_tile(wq: Any) -> None:
        wq.wait()
        wq.get_and_advance_work_tile()
        wq.release()

    @schedule
    def load(gmem: MemoryResource, q: MemoryResource, kv: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            q.acquire()
            q.write()
            q.commit()
            with domain_loop(0, kv_tiles, 1):
                gmem.coords()
                kv.acquire()
                kv.write()
                kv.commit()
            next_tile(wq)

    @schedule
    def mma(q: MemoryResource, kv: MemoryResource, s: MemoryResource, p: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            q.wait()
            kv.wait()
            s.acquire()
            s.write()
            s.commit()
            with domain_loop(0, kv_tiles - 1, 1):
                kv.wait()
                s.acquire()
                s.write()
                s.commit()
                p.wait()
                p.read()
                p.release()
                kv.release()
            p.wait()
            p.read()
            p.release()
            kv.release()
            q.release()
            next_tile(wq)

    @schedule
    def softmax(s: MemoryResource, p: MemoryResource, stats: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(0, kv_tiles, 1):
                s.wait()
                s.read()
                s.release()
                p.acquire()
                p.write()
                p.commit()
                stats.acquire()
                stats.write()
                stats.commit()
            next_tile(wq)

    @schedule
    def correction(stats: MemoryResource, o: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            stats.wait()
            stats.read()
            stats.release()
            with domain_loop(0, kv_tiles - 1, 1):
                stats.wait()
                stats.read()
                stats.release()
            o.acquire()
            o.write()
            o.commit()
            next_tile(wq)

    @schedule
    def epilogue(o: MemoryResource, out: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(0, 1, 1):
                o.wait()
                if store_via == "gmem_o":
                    out.tma_store()
                else:
                    o.tma_store()
                o.release()
            next_tile(wq)

    def task(name: str, src: list, dst: list, sched: Any) -> Task:
        warp, n = WARPS[name]
        return Task(name=name, src_resources=[*src, wq], dst_resources=dst, warp_idx=warp, num_warps=n,
                    schedule=sched)

    tasks = [task("SoftmaxTask", [s], [p, stats], softmax(s, p, stats, wq)),
             task("CorrectionTask", [stats], [o], correction(stats, o, wq)),
             task("LoadTask", [gmem], [q, kv], load(gmem, q, kv, wq)),
             task("MmaTask", [q, kv, p], [s], mma(q, kv, s, p, wq)),
             task("EpilogueTask", [o], [out] if store_via == "gmem_o" else [], epilogue(o, out, wq))]
    graph = {q: [gmem, wq], kv: [gmem, wq], s: [q, kv, wq], p: [s, wq], stats: [s, wq], o: [stats, wq]}
    if store_via == "gmem_o":
        graph[out] = [o, wq]
    return tasks, graph, allocator


def _scheduler_params(q_tiles: int) -> PersistentTileSchedulerParams:
    return PersistentTileSchedulerParams((q_tiles, 1, 1), (1, 1, 1))


@cute.kernel
def attention_kernel(kv_tiles: cutlass.Int32, q_tiles: cutlass.Constexpr):
    scheduler = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
        tile_scheduler_params=_scheduler_params(q_tiles))
    tasks, graph, allocator = make_parts(kv_tiles, scheduler)
    manager = TaskManager(tasks=tasks, resource_dependency_graph=graph, smem_allocator=allocator,
                          skip_validation=True, verbose=False)
    manager.setup_resources_and_tasks()
    prims.fence_mbarrier_init()
    prims.barrier_cta_sync(0)
    manager.run()


@cute.jit
def attention(q: cute.Tensor, kv_tiles: cutlass.Int32, sms: cutlass.Constexpr = 132):
    """Launch over the query tiles of ``q`` (seq x head_dim fp16), ``kv_tiles`` K/V tiles per query tile."""
    q_tiles = q.shape[0] // tile_m
    grid = StaticPersistentTileScheduler.get_grid_shape(_scheduler_params(q_tiles), sms)
    attention_kernel(kv_tiles, q_tiles).launch(grid=grid, block=(BLOCK_THREADS, 1, 1))
