"""Design.from_tasks wraps a user's own TS objects and never changes them."""

from cutlass.experimental.task_scheduling.memory import SmemAllocation, SmemAllocator
from cutlass.experimental.task_scheduling.task_manager import TaskManager

import tslab
from tslab import Design
from tslab.kernels import demo_race, tma_copy


def test_wraps_user_objects_and_checks_like_the_catalog_design():
    bp = tma_copy.build(stages=2)
    ring = bp.resources()["smem_ring"]
    d = Design.from_tasks(bp.tasks, bp.graph, smem_allocations=[ring], name="my_copy")
    v = tslab.check(d)
    ref = tslab.check(tma_copy.design(stages=2))
    assert v.status == ref.status == "SAFE"
    assert v.layout.equals(ref.layout)
    assert v.schedule.equals(ref.schedule)
    assert v.checker.states_explored == ref.checker.states_explored


def test_edits_touch_copies_not_the_originals():
    bp = tma_copy.build(stages=2)
    ring = bp.resources()["smem_ring"]
    d = Design.from_tasks(bp.tasks, bp.graph, smem_allocations=[ring])
    e = d.with_pipeline("smem_ring", num_stages=1)
    assert tslab.check(e).ok
    assert ring.pipeline_config.num_stages == 2
    assert ring._alloc.offset == 0
    assert e.pipelines()["smem_ring"]["num_stages"] == 1


def test_accepts_a_laid_out_allocator_and_keeps_its_alias_groups():
    bp = demo_race.build()
    alloc = SmemAllocator()
    for r in bp.smem_resources:
        alloc.add_resource(r)
    res = bp.resources()
    alloc.add_alias_group([[res["stage_a"]._alloc], [res["stage_b"]._alloc]])
    alloc.compute_layout()
    d = Design.from_tasks(bp.tasks, bp.graph, smem_allocations=alloc)
    v = tslab.check(d)
    assert v.status == "RACE"
    assert v.barrier_bytes == alloc.barrier_smem_bytes
    assert tslab.check(d.with_alias_groups([])).ok


def test_non_power_of_two_alignment_is_a_clear_error_not_an_assert():
    bp = tma_copy.build()
    odd = SmemAllocation("odd", size_bytes=64, alignment=48)
    d = Design.from_tasks(bp.tasks, bp.graph, smem_allocations=[*bp.smem_resources, odd]) if False else None
    try:
        Design.from_tasks(bp.tasks, bp.graph, smem_allocations=[*bp.smem_resources, odd])
    except tslab.DesignError as exc:
        assert "alignment=48 is not a power of two" in str(exc)
    else:
        raise AssertionError("expected a DesignError")
    assert d is None


def test_negative_size_is_a_clear_error():
    bp = tma_copy.build()
    bad = SmemAllocation("neg", size_bytes=-8)
    try:
        Design.from_tasks(bp.tasks, bp.graph, smem_allocations=[bad])
    except tslab.DesignError as exc:
        assert "neg" in exc.where and "negative" in exc.message
    else:
        raise AssertionError("expected a DesignError")


def test_taskmanager_agrees_on_the_user_objects():
    bp = tma_copy.build()
    alloc = SmemAllocator()
    alloc.add_resource(bp.smem_resources[0])
    alloc.compute_layout()
    TaskManager(tasks=bp.tasks, resource_dependency_graph=bp.graph, smem_allocator=alloc, verbose=False)
    d = Design.from_tasks(bp.tasks, bp.graph, smem_allocations=alloc)
    assert tslab.check(d).ok


def test_pipeline_groups_of_a_laid_out_allocator_keep_their_barrier_bytes():
    from cutlass.experimental.task_scheduling.enums import PipelineGroupMode
    from cutlass.experimental.task_scheduling.pipeline_group import PipelineGroup

    from tslab.kernels._teaching import Buffer, async_pipeline

    m1 = Buffer(name="m1", buffer="m1_buf", pipeline_config=async_pipeline(2))
    m2 = Buffer(name="m2", buffer="m2_buf", pipeline_config=async_pipeline(2))
    group = PipelineGroup(name="grp", members=[m1, m2], mode=PipelineGroupMode.Merge)
    alloc = SmemAllocator()
    alloc.add_resource(m1)
    alloc.add_resource(m2)
    alloc.add_pipeline_group(group)
    alloc.compute_layout()
    bp = demo_race.build()
    d = Design.from_tasks(bp.tasks, bp.graph, smem_allocations=alloc)
    assert tslab.check(d).barrier_bytes == alloc.barrier_smem_bytes > 0


def test_a_persistent_design_with_a_work_queue_wraps():
    """A WorkQueue's work-tile variable holds DSL values that cannot be deep-copied: the copies share them."""
    from tslab.kernels import gemm_sm90

    bp = gemm_sm90.build(persistent=True)
    d = Design.from_tasks(bp.tasks, bp.graph, smem_allocations=bp.smem_resources, name="my_gemm")
    ref = tslab.check(gemm_sm90.design(persistent=True))
    v = tslab.check(d)
    assert v.status == ref.status == "SAFE"
    assert v.checker.runs == ref.checker.runs and v.checker.states_explored == ref.checker.states_explored
