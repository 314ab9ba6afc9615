"""Teaching design: an attention-like MMA chain whose tiles live in TMEM, with P written over S's columns.

Per KV tile, one MMA warp computes S = Q K^T into TMEM, the softmax warps read S and write P (fp16, two to a
32-bit column) back into TMEM, and a second MMA warp accumulates O += P V in TMEM for the epilogue. P is dead
once the PV MMAs have read it and S is dead once softmax has read it, so P can take S's columns: the TMEM alias
group ``[["s"], ["p"]]`` (``alias='s_p'``). That is only safe because the S warp waits, before it writes the next
S over P, until the PV warp's MMAs have finished reading P: a UmmaUmma ring (``pv_done``) from one MMA warp to
the other, whose commit is a tcgen05 commit. TS's race search proves it (``pv_ring=False`` races); aliasing O
with S (``alias='s_o'``) races whatever the ring does. Checked on the CPU; never compiled.

Resource/task flow (warps in brackets)::

    tmem_s  <--MmaSTask [warp 8]: (pv_done wait -> release) -> acquire -> S = Q K^T -> commit    (UmmaAsync)
    tmem_s  --SoftmaxTask [warps 0-3]: wait -> read S -> release; acquire -> write P -> commit--> tmem_p (AsyncUmma)
    tmem_p  --MmaOTask [warp 9]: wait -> O += P V -> pv_done: acquire, signal, commit -> release--> tmem_o (UmmaAsync)
    tmem_o  --EpilogueTask [warps 4-7]: wait -> load O -> store -> release--> gmem_o

Resources:
    TmemTile  a tile in TMEM (allocation ``s``, ``p`` or ``o``; fp32 one column per element of a row, fp16 two)
    MmaDone   ``pv_done``: no memory, a UmmaUmma ring whose commits say the PV MMAs are done with P's columns
    GmemOut   the output O
Tasks:
    SoftmaxTask warps 0-3, EpilogueTask warps 4-7 (TMEM lanes: warp w reads lanes 32 (w mod 4) and up),
    MmaSTask warp 8, MmaOTask warp 9
TMEM columns: ``s`` = kv_tile, ``p`` = kv_tile / 2, ``o`` = head_dim; with kv_tile = head_dim = 256 only the
aliased layout fits in 512 columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute, pipeline
from cutlass.experimental.task_scheduling.memory import TmemAllocation
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
from ..errors import DesignError, did_you_mean

NAME = "attention_tmem"
SUMMARY = "teaching: an attention-like MMA chain in TMEM, P over S's columns (TMEM alias group, UmmaUmma ring)"
PARAMS: dict[str, Any] = {"kv_tile": 128, "head_dim": 128, "kv_tiles": 3, "alias": "s_p", "pv_ring": True}
ALIASES: dict[str, list] = {"s_p": [[["s"], ["p"]]], "none": [], "s_o": [[["s"], ["o"]]]}
WIDTHS = (64, 128, 256)


@dataclass(kw_only=True)
class TmemTile(MemoryResource):
    """One tile in TMEM (``columns`` wide, all 128 lanes), written by MMAs or threads, read by the other side."""

    columns: int = 128
    buffer: str = "t"
    tile: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    _alloc: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0), docs="the tile read")
        self._alloc = TmemAllocation(self.buffer, num_columns=self.columns)

    def get_tmem_requirements(self) -> list[TmemAllocation]:
        return [self._alloc]

    def get_smem_requirements(self) -> list:
        return []  # its pipeline's barriers are SMEM all the same (the allocator counts them)

    @producer_work
    @cute.jit
    def write(self, stage_info: StageInfo) -> None:
        pass

    @consumer_work
    @cute.jit
    def read(self, stage_info: StageInfo) -> None:
        pass

    @consumer_work(returns=tile)
    @cute.jit
    def load(self, stage_info: StageInfo) -> cutlass.Int32:
        """Read the tile into registers (the epilogue's, whose value the store takes)."""
        return cutlass.Int32(0)


@dataclass(kw_only=True)
class MmaDone(MemoryResource):
    """No memory: a UmmaUmma ring whose producer's tcgen05 commit fires once its MMAs have finished."""

    @producer_work
    @cute.jit
    def signal(self, stage_info: StageInfo) -> None:
        pass

    def get_smem_requirements(self) -> list:
        return []


@dataclass(kw_only=True)
class GmemOut(MemoryResource):
    """The output O."""

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, *, tile: cutlass.Int32) -> None:
        pass


def _threads(n: int) -> pipeline.CooperativeGroup:
    return pipeline.CooperativeGroup(pipeline.Agent.Thread, n)


def _ring(make: Any, producers: int, consumers: int) -> PipelineConfig:
    return make(num_stages=1, producer_group=_threads(producers), consumer_group=_threads(consumers),
                cta_layout_vmnk=(1, 1, 1, 1))


def validate(p: dict[str, Any]) -> None:
    """Raise :class:`DesignError` naming the param and what is allowed."""
    if p["alias"] not in ALIASES:
        raise DesignError("input", "kernel 'attention_tmem' param 'alias'", f"alias={p['alias']!r} is not supported",
                          did_you_mean(str(p["alias"]), list(ALIASES)))
    for name in ("kv_tile", "head_dim"):
        if p[name] not in WIDTHS:
            raise DesignError("invalid-config", f"kernel 'attention_tmem' param '{name}'",
                              f"{name}={p[name]!r} is not 64, 128 or 256", "an MMA tile is 64 to 256 wide")
    if p["pv_ring"] not in (True, False):
        raise DesignError("input", "kernel 'attention_tmem' param 'pv_ring'", f"pv_ring={p['pv_ring']!r} is not a bool",
                          "use True (the S warp waits for the PV MMAs) or False")


def build(kv_tile: int = 128, head_dim: int = 128, kv_tiles: int = 3, alias: str = "s_p",
          pv_ring: bool = True) -> Blueprint:
    """Fresh TS objects of the chain over ``kv_tiles`` KV tiles."""
    validate({"kv_tile": kv_tile, "head_dim": head_dim, "alias": alias, "pv_ring": pv_ring})
    s = TmemTile(name="tmem_s", buffer="s", columns=kv_tile,
                 pipeline_config=_ring(PipelineConfig.create_umma_async_pipeline_cfg, 1, 128))
    p = TmemTile(name="tmem_p", buffer="p", columns=kv_tile // 2,
                 pipeline_config=_ring(PipelineConfig.create_async_umma_pipeline_cfg, 128, 1))
    o = TmemTile(name="tmem_o", buffer="o", columns=head_dim,
                 pipeline_config=_ring(PipelineConfig.create_umma_async_pipeline_cfg, 1, 128))
    done = MmaDone(name="pv_done", pipeline_config=_ring(PipelineConfig.create_umma_umma_pipeline_cfg, 1, 1))
    out = GmemOut(name="gmem_o")

    def wait_for_pv(done: Any) -> None:
        if pv_ring:
            done.wait()
            done.release()

    @schedule
    def mma_s(s: MemoryResource, done: MemoryResource) -> None:
        s.acquire()
        s.write()
        s.commit()
        with domain_loop(1, kv_tiles, 1):
            wait_for_pv(done)  # the PV MMAs have read P, whose columns the next S takes
            s.acquire()
            s.write()
            s.commit()
        wait_for_pv(done)

    @schedule
    def softmax(s: MemoryResource, p: MemoryResource) -> None:
        with domain_loop(0, kv_tiles, 1):
            s.wait()
            s.read()
            s.release()
            p.acquire()
            p.write()
            p.commit()

    @schedule
    def mma_o(p: MemoryResource, o: MemoryResource, done: MemoryResource) -> None:
        o.acquire()
        with domain_loop(0, kv_tiles, 1):
            p.wait()
            p.read()
            o.write()
            if pv_ring:
                done.acquire()
                done.signal()
                done.commit()
            p.release()
        o.commit()

    @schedule
    def epilogue(o: MemoryResource, out: MemoryResource) -> None:
        with domain_loop(0, 1, 1):
            o.wait()
            tile = o.load()
            out.store(tile=tile)
            o.release()

    ring = [done] if pv_ring else []
    tasks = [
        Task(name="SoftmaxTask", src_resources=[s], dst_resources=[p], warp_idx=0, num_warps=4,
             schedule=softmax(s, p)),
        Task(name="EpilogueTask", src_resources=[o], dst_resources=[out], warp_idx=4, num_warps=4,
             schedule=epilogue(o, out)),
        Task(name="MmaSTask", src_resources=ring, dst_resources=[s], warp_idx=8, num_warps=1, schedule=mma_s(s, done)),
        Task(name="MmaOTask", src_resources=[p], dst_resources=[o, *ring], warp_idx=9, num_warps=1,
             schedule=mma_o(p, o, done)),
    ]
    graph = {s: list(ring), p: [s], o: [p], out: [o], **({done: [p]} if pv_ring else {})}
    return Blueprint(tasks=tasks, graph=graph, smem_resources=[s, p, o, *ring], tmem_resources=[s, p, o],
                     tmem_alias_groups=ALIASES[alias])


def design(**params: Any):
    """The chain's design (see the module docstring)."""
    from ..core.design import Design

    return Design(NAME, params)
