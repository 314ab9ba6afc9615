"""A PipelineGroup is edited as one: the group's config and every member's, through TS's own objects."""

import json

import pytest
from fixtures import group_copy

import tslab
from tslab import fake
from tslab.capture import capture_all

ROWS = 8


def f16(*shape):
    return fake.tensor("f16", shape)


@pytest.fixture(scope="module")
def captured():
    return capture_all(group_copy.group_copy, f16(ROWS, 64), f16(ROWS, 64), f16(ROWS, 64), f16(ROWS, 64), 4).design


@pytest.fixture(scope="module")
def wrapped():
    tasks, graph, allocator = group_copy.make_parts(ROWS, 4)
    return tslab.Design.from_tasks(tasks, graph, smem_allocations=allocator, name="group_copy")


def ts_barrier_bytes(stages):
    """What TS's own allocator reserves for the fixture's barriers with ``stages`` stages."""
    *_, allocator = group_copy.make_parts(ROWS, stages)
    return allocator.barrier_smem_bytes


def test_the_captured_kernel_equals_its_objects_built_on_the_cpu(captured, wrapped):
    a, b = tslab.check(captured), tslab.check(wrapped)
    assert a.status == b.status == "SAFE"
    assert a.layout.equals(b.layout) and a.schedule.equals(b.schedule)
    assert (a.smem_total, a.barrier_bytes) == (b.smem_total, b.barrier_bytes)
    assert a.checker.states_explored == b.checker.states_explored


@pytest.mark.parametrize("which", ["captured", "wrapped"])
def test_a_group_edit_changes_the_group_and_every_member_and_stays_safe(which, request):
    d = request.getfixturevalue(which)
    assert tslab.check(d).barrier_bytes == ts_barrier_bytes(4)
    edited = d.with_pipeline("ab_sync", num_stages=5)
    verdict = tslab.check(edited)
    if which == "captured":
        # The kernel sizes its slots from its `stages` argument: the group edit alone is not the kernel that
        # would run, and the verdict says so (the knob edit is the faithful one).
        assert [e.kind for e in verdict.errors] == ["unfaithful-edit"]
        assert "knob `stages` (4)" in verdict.errors[0].hint
        assert tslab.check(d.with_knobs(stages=5)).barrier_bytes == ts_barrier_bytes(5)
    else:
        assert verdict.status == "SAFE"
    assert verdict.barrier_bytes == ts_barrier_bytes(5) == 3 * 5 * 16  # (2 members + 1) barriers per stage
    assert {n: p["num_stages"] for n, p in edited.pipelines().items()} == {"ab_sync": 5, "smem_a": 5, "smem_b": 5}
    assert edited.overrides["pipelines"] == {"ab_sync": {"num_stages": 5}}


def test_fields_the_group_merges_are_derived_by_ts_from_the_edited_members(captured):
    edited = captured.with_pipeline("ab_sync", producer_group={"agent": "Thread", "size": 32})
    pipes = edited.pipelines()
    assert pipes["smem_a"]["producer_group"]["size"] == pipes["smem_b"]["producer_group"]["size"] == 32
    assert pipes["ab_sync"]["producer_group"]["size"] == 64  # a Merge group sums its producers
    assert tslab.check(edited).status == "SAFE"


def test_editing_one_member_says_to_edit_the_group(captured):
    with pytest.raises(tslab.DesignError, match=r"smem_a belongs to PipelineGroup 'ab_sync'") as info:
        captured.with_pipeline("smem_a", num_stages=5)
    assert info.value.where == "resource 'smem_a'"
    assert info.value.message.startswith("num_stages=5 ")
    assert info.value.hint == "edit the group: with_pipeline('ab_sync', num_stages=5)"


def test_an_unknown_name_lists_the_groups_too(captured):
    with pytest.raises(tslab.DesignError, match=r"did you mean 'ab_sync'\? valid names are: .*'ab_sync'"):
        captured.with_pipeline("ab_synk", num_stages=5)


def test_a_bad_group_value_names_the_group_field(captured):
    with pytest.raises(tslab.DesignError, match=r"num_stages=0 must be a positive int") as info:
        captured.with_pipeline("ab_sync", num_stages=0)
    assert info.value.where == "PipelineGroup 'ab_sync' field 'num_stages'"


def test_pipelines_lists_the_group_with_its_members_before_them(captured):
    pipes = captured.pipelines()
    assert list(pipes) == ["ab_sync", "smem_a", "smem_b"]
    group = pipes["ab_sync"]
    assert (group["pipeline_type"], group["mode"], group["members"]) == ("AsyncAsync", "Merge", ["smem_a", "smem_b"])
    assert group["num_stages"] == 4
    assert pipes["smem_a"]["group"] == pipes["smem_b"]["group"] == "ab_sync"
    assert "members" not in pipes["smem_a"] and "group" not in group


def test_a_group_edit_survives_a_json_round_trip(captured):
    edited = captured.with_pipeline("ab_sync", num_stages=5)
    data = json.loads(edited.to_json())
    assert data["pipelines"] == {"ab_sync": {"num_stages": 5}}
    tasks, graph, allocator = group_copy.make_parts(ROWS, 4)
    again = tslab.Design.from_tasks(tasks, graph, smem_allocations=allocator, name="group_copy")
    for name, fields in data["pipelines"].items():
        again = again.with_pipeline(name, **fields)
    assert again.pipelines() == edited.pipelines()
    assert json.loads(again.to_json())["pipelines"] == data["pipelines"]
    assert tslab.check(again).barrier_bytes == ts_barrier_bytes(5)


def test_a_grouped_task_schedule_round_trips_and_ts_keeps_the_group_rules(wrapped):
    steps = wrapped.schedule("DrainTask")
    assert steps[-1] == ("ab_sync", "ConsumerRelease", "Loop", None)
    assert tslab.check(wrapped.with_schedule("DrainTask", steps)).status == "SAFE"
    member_release = [*steps[:-1], ("smem_a", "ConsumerRelease", "Loop", None)]
    with pytest.raises(tslab.DesignError, match=r"ConsumerRelease must be emitted on the group itself"):
        wrapped.with_schedule("DrainTask", member_release)


def test_apply_pipeline_finds_a_group_through_its_members_as_in_a_compile_trace():
    from tslab.core.blueprint import Blueprint, apply_pipeline

    tasks, graph, _ = group_copy.make_parts(ROWS, 4)
    bp = Blueprint(tasks=tasks, graph=graph)  # a kernel's own objects: no groups registered with the blueprint
    assert list(bp.groups()) == ["ab_sync"]
    apply_pipeline(bp, "ab_sync", {"num_stages": 5})
    group = bp.groups()["ab_sync"]
    assert [c.num_stages for c in (group.pipeline_config, *(m.pipeline_config for m in group.members))] == [5, 5, 5]
