"""Teaching design whose consumer releases its ring in batches on every second trip (``every``), with fewer stages
than a batch: it deadlocks. Its store runs only when a runtime value is set (``when_true``), so TS checks both.

Resource/task flow (warps in brackets)::

    gmem_in --LoadTask [warp 0]: load -> acquire -> write -> commit--> ring (AsyncAsync, 1 stage)
    ring --StoreTask [warp 1]: wait -> read -> store (when_true: the item read is set)
                               -> release x2 (every(2, start=1): trips 1, 3, ...)--> gmem_out

The store task waits for one item per trip but gives the stages back two at a time, on trips 1, 3, 5, ...
(TS's ``loop.every(batch, start=batch - 1)``). The load task can fill only ``stages`` items ahead of the last
release, so with one stage its second acquire waits for a release that comes after the store task's second
wait, which waits for that second item: TS's checker reports both tasks blocked. Fix: at least as many stages as
a batch (``design(stages=2)``), or release on every trip (``batch=1``). TS also holds every acquire to a release:
with ``tiles`` not a multiple of ``batch`` the last items are never given back, and TS refuses the schedule
("1x ProducerAcquire from ring not matched by ConsumerRelease!").

The store is guarded by ``when_true(item)`` on the item ``ring.read`` returns, a value TS cannot know while
checking. TS checks the schedule once per value of each such condition, so the verdict names the run that failed
(``ring.read.item=False``) and a safe verdict holds for both. Checked on the CPU; never compiled.
"""

from __future__ import annotations

from typing import Any

from cutlass.experimental.task_scheduling.resources import MemoryResource
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, when_true
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from ._teaching import Buffer, Sink, Source, async_pipeline

NAME = "demo_guards"
SUMMARY = "teaching: releases in batches every second trip (every) from a 1-stage ring; a store under when_true " \
    "(deadlocks)"
PARAMS: dict[str, Any] = {"stages": 1, "batch": 2, "tiles": 4}

__all__ = ["NAME", "PARAMS", "SUMMARY", "build", "design"]


def build(stages: int = 1, batch: int = 2, tiles: int = 4) -> Blueprint:
    """Fresh TS objects: a ring of ``stages`` stages released ``batch`` at a time, over ``tiles`` trips."""
    src = Source(name="gmem_in")
    ring = Buffer(name="ring", buffer="ring_buf", stage_bytes=4096, pipeline_config=async_pipeline(stages))
    out = Sink(name="gmem_out")

    @schedule
    def load(src: MemoryResource, ring: MemoryResource) -> None:
        with domain_loop(0, tiles, 1):
            item = src.load()
            ring.acquire()
            ring.write(item=item)
            ring.commit()

    @schedule
    def store(ring: MemoryResource, out: MemoryResource) -> None:
        with domain_loop(0, tiles, 1) as loop:
            ring.wait()
            item = ring.read()
            with when_true(item):
                out.store(item=item)
            with loop.every(batch, start=batch - 1):
                for _ in range(batch):
                    ring.release()

    tasks = [
        Task(name="LoadTask", src_resources=[src], dst_resources=[ring], warp_idx=0, num_warps=1,
             schedule=load(src, ring)),
        Task(name="StoreTask", src_resources=[ring], dst_resources=[out], warp_idx=1, num_warps=1,
             schedule=store(ring, out)),
    ]
    return Blueprint(tasks=tasks, graph={ring: [src], out: [ring]}, smem_resources=[ring])


def design(**params: Any):
    from ..core.design import Design

    return Design(NAME, params)
