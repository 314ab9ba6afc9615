"""Teaching design that races: two SMEM buffers share bytes through an alias group, but both are live at once.

Resource/task flow (warps in brackets)::

    gmem_in --LoadTask [warp 0]--> stage_a (a_buf) --MidTask [warp 1]--> stage_b (b_buf)
    stage_b --StoreTask [warp 2]--> gmem_out

The alias group ``[[a_buf], [b_buf]]`` puts both buffers at the same offset. MidTask writes ``b_buf`` while
LoadTask may already be writing the next tile into ``a_buf``: TS's checker reports the writer, the victim
and the overlapping byte range. Fix: drop the alias group (``with_alias_groups([])``). Checked on the CPU;
never compiled.
"""

from __future__ import annotations

from typing import Any

from cutlass.experimental.task_scheduling.resources import MemoryResource
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from ._teaching import Buffer, Sink, Source, async_pipeline

NAME = "demo_race"
SUMMARY = "teaching: an alias group whose phases are live at the same time (races)"
PARAMS: dict[str, Any] = {"stage_bytes": 16384, "tiles": 2, "stages": 1}


def build(stage_bytes: int = 16384, tiles: int = 2, stages: int = 1) -> Blueprint:
    src = Source(name="gmem_in")
    a = Buffer(name="stage_a", buffer="a_buf", stage_bytes=stage_bytes, pipeline_config=async_pipeline(stages))
    b = Buffer(name="stage_b", buffer="b_buf", stage_bytes=stage_bytes, pipeline_config=async_pipeline(stages))
    out = Sink(name="gmem_out")

    @schedule
    def load(src: MemoryResource, a: MemoryResource) -> None:
        with domain_loop(0, tiles, 1):
            item = src.load()
            a.acquire()
            a.write(item=item)
            a.commit()

    @schedule
    def mid(a: MemoryResource, b: MemoryResource) -> None:
        with domain_loop(0, tiles, 1):
            a.wait()
            item = a.read()
            b.acquire()
            b.write(item=item)
            b.commit()
            a.release()

    @schedule
    def store(b: MemoryResource, out: MemoryResource) -> None:
        with domain_loop(0, tiles, 1):
            b.wait()
            item = b.read()
            out.store(item=item)
            b.release()

    tasks = [
        Task(name="LoadTask", src_resources=[src], dst_resources=[a], warp_idx=0, num_warps=1, schedule=load(src, a)),
        Task(name="MidTask", src_resources=[a], dst_resources=[b], warp_idx=1, num_warps=1, schedule=mid(a, b)),
        Task(name="StoreTask", src_resources=[b], dst_resources=[out], warp_idx=2, num_warps=1,
             schedule=store(b, out)),
    ]
    return Blueprint(tasks=tasks, graph={a: [src], b: [a], out: [b]}, smem_resources=[a, b],
                     alias_groups=[[["a_buf"], ["b_buf"]]])


def design(**params: Any):
    from ..core.design import Design

    return Design(NAME, params)
