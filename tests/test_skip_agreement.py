"""Cautions about tiles that tasks could skip differently: TS's checker runs each tile with every skipping task
skipping it, or none, so two tasks whose ``skip_if`` could disagree are SAFE here without that case ever checked."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    StageInfo,
    WorkQueue,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, work_tile_loop
from cutlass.experimental.task_scheduling.task import Task

import tslab
from tslab.core.skip_agreement import KIND, differing_skip_predicates


@dataclass(kw_only=True)
class Slots(MemoryResource):
    """A ring of two slots with nothing in them: only its barriers matter here."""

    def get_smem_requirements(self) -> list:
        return []

    @producer_work
    @cute.jit
    def fill(self, stage_info: StageInfo) -> None:
        pass

    @consumer_work
    @cute.jit
    def read(self, stage_info: StageInfo) -> None:
        pass


def even_tiles(wq, tile):
    return tile.tile_idx % 2 == 0


def odd_tiles(wq, tile):
    return tile.tile_idx % 2 == 1


def _design(load_skips, drain_skips, *, drain_reads: bool = True, heads: bool = False) -> tslab.Design:
    """A ring filled and drained four times a tile, by tasks that skip tiles by these predicates (None: never);
    with ``heads`` each also fills or drains once before its K loop, in the head (skippable with the loop)."""
    warp = pipeline.CooperativeGroup(pipeline.Agent.Thread, 32)
    ring = Slots(name="ring", pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=2, producer_group=warp, consumer_group=warp, cta_layout_vmnk=None))
    wq = WorkQueue(tile_scheduler_config=None, name="work_queue")

    def per_tile(body, skips):
        @schedule
        def tiles(ring, wq):
            with work_tile_loop(wq, skip_if=skips) as tile:
                with tile.skippable() if skips is not None else nullcontext():
                    if heads:
                        body(ring)
                    with domain_loop(0, 4, 1):
                        body(ring)
                wq.wait()
                wq.get_and_advance_work_tile()
                wq.release()
        return tiles

    def load(ring):
        ring.acquire()
        ring.fill()
        ring.commit()

    def drain(ring):
        if drain_reads:
            ring.wait()
            ring.read()
            ring.release()

    tasks = [Task(name="LoadTask", src_resources=[wq], dst_resources=[ring], warp_idx=1, num_warps=1,
                  schedule=per_tile(load, load_skips)(ring, wq)),
             Task(name="DrainTask", src_resources=[ring, wq], dst_resources=[], warp_idx=0, num_warps=1,
                  schedule=per_tile(drain, drain_skips)(ring, wq))]
    return tslab.Design.from_tasks(tasks, {ring: [wq]}, name="skipping_ring")


def test_two_tasks_that_skip_by_different_predicates_carry_a_caution_beside_safe():
    verdict = tslab.check(_design(even_tiles, odd_tiles))
    assert verdict.status == "SAFE"  # each tile skipped by both or by neither: both cases are safe
    assert [(c.kind, c.where) for c in verdict.shown_cautions] == [(KIND, "task 'DrainTask'")]
    caution = verdict.shown_cautions[0]
    assert "odd_tiles" in caution.message and "even_tiles" in caution.message
    assert "was not checked" in caution.message and "same skip_if" in caution.hint
    assert "caution" in verdict.text()


def test_tasks_that_skip_by_the_same_predicate_carry_none():
    assert differing_skip_predicates(_design(even_tiles, even_tiles).lower().blueprint.tasks) == []
    assert [c for c in tslab.check(_design(even_tiles, even_tiles)).shown_cautions if c.kind == KIND] == []


def test_the_tile_the_checker_leaves_out_deadlocks():
    """What the GPU would run on an even tile: the load task fills it, the drain task skips its reads. Checked as a
    design of its own, it deadlocks; checked as the skipping design above, it is never run."""
    verdict = tslab.check(_design(None, None, drain_reads=False))
    assert verdict.status == "DEADLOCK"
    assert "LoadTask" in verdict.text()


def test_an_edit_keeps_the_steps_a_skipped_tile_skips():
    """Skippable steps outside the K loop are TS's skippable head slots, which plain steps cannot spell: an edit of
    the task that leaves them in place keeps them skippable (before, an edit made them run on every tile)."""
    design = _design(even_tiles, even_tiles, heads=True)

    def skipped(d: tslab.Design) -> int:
        return len(next(t for t in d.lower().blueprint.tasks if t.name == "LoadTask").skippable_head_slots)

    assert skipped(design) == 3
    edited = design.with_schedule("LoadTask", design.schedule("LoadTask"))
    assert skipped(edited) == 3 and tslab.check(edited).status == "SAFE"
