import pytest

import tslab
from tslab.kernels import design
from tslab.kernels.gemm_sm90 import ALIASED
from tslab.widgets import PipelineEditor
from tslab.widgets.pipeline_form import editable_fields, factories, parse_interleave


def test_every_pipeline_type_has_a_factory_and_its_fields_come_from_it():
    from cutlass.experimental.task_scheduling.enums import PipelineType

    assert set(factories()) == {t.name for t in PipelineType}
    assert "num_bytes" in editable_fields("TmaAsync") and "num_bytes" not in editable_fields("AsyncAsync")
    assert "advance_on_acquire" in editable_fields("AsyncAsync")
    assert "advance_on_acquire" not in editable_fields("TmaAsync")
    assert "consumer_wait_signaling_threads" in editable_fields("AsyncUmma")
    assert "interleave_stride" not in editable_fields("UmmaUmma")


def test_panel_shows_the_config_as_ts_holds_it_and_disables_what_does_not_apply():
    editor = PipelineEditor(design("tma_copy"))
    assert editor.control("smem_ring", "num_stages").value == "4"
    assert editor.control("smem_ring", "num_bytes").value == str(64 * 128 * 2)
    agent, size = editor.control("smem_ring", "consumer_group").children
    assert (agent.value, size.value) == ("Thread", "128")
    assert editor.control("smem_ring", "advance_on_acquire").disabled
    assert not editor.control("smem_ring", "advance_on_wait").disabled


def test_typing_a_stage_count_rechecks_and_too_many_stages_is_a_capacity_error():
    editor = PipelineEditor(design("tma_copy"))
    seen = []
    editor.on_design(seen.append)
    editor.control("smem_ring", "num_stages").value = "20"
    assert editor.design.pipelines()["smem_ring"]["num_stages"] == 20
    assert editor.verdict.status == "CAPACITY" and seen == [editor.design]
    editor.control("smem_ring", "num_stages").value = "3"
    assert editor.verdict.status == "SAFE"


def test_invalid_value_is_shown_at_the_field_and_the_last_valid_design_is_kept():
    editor = PipelineEditor(design("tma_copy"))
    before = editor.design
    assert not editor.set("smem_ring", "num_stages", 0)
    assert editor.design is before
    issue = editor.errors[("smem_ring", "num_stages")]
    assert "num_stages=0" in issue.message and issue.hint
    assert editor.message("smem_ring", "num_stages").splitlines() == [
        issue.message, f"hint: {issue.hint}", "showing the last valid design"]  # plain text, no markup
    assert "<" not in editor.message("smem_ring", "num_stages")
    assert editor.set("smem_ring", "num_stages", 2)
    assert editor.message("smem_ring", "num_stages") == "" and not editor.errors


def test_a_stage_count_that_is_not_a_whole_number_is_refused_at_the_field():
    editor = PipelineEditor(design("tma_copy"))
    box = editor.control("smem_ring", "num_stages")
    for typed in ("2.5", "x", "4x"):
        box.value = typed
        assert box.value == typed  # what was typed stays visible beside the message
        assert editor.design == design("tma_copy")  # nothing applied
        issue = editor.errors[("smem_ring", "num_stages")]
        assert issue.message == f"num_stages={typed!r} is not a whole number; nothing was applied"
        assert "is not a whole number" in editor.message("smem_ring", "num_stages")
    assert not editor.set("smem_ring", "num_stages", 2.5)
    box.value = " 5 "
    assert editor.design.pipelines()["smem_ring"]["num_stages"] == 5 and not editor.errors
    size = editor.control("smem_ring", "consumer_group").children[1]
    size.value = "1.5"
    assert "consumer_group.size='1.5' is not a whole number" in editor.message("smem_ring", "consumer_group")


def test_a_boolean_field_refuses_other_values_and_undo_redo_step_over_nothing_broken():
    from tslab.widgets import Studio

    studio = Studio(design("tma_copy"), debounce=0.01)
    editor = studio.pipeline_editor
    for typed in (2.5, "x"):
        assert not editor.set("smem_ring", "advance_on_wait", typed)
        issue = editor.errors[("smem_ring", "advance_on_wait")]
        assert issue.message == f"advance_on_wait={typed!r} is not a boolean; nothing was applied"
        assert "give True or False" in editor.message("smem_ring", "advance_on_wait")
    assert len(studio.history) == 1  # nothing refused is recorded
    editor.control("smem_ring", "advance_on_wait").value = True
    editor.set("smem_ring", "num_stages", 6)
    assert studio.history.labels()[1:] == ["smem_ring.advance_on_wait False -> True", "smem_ring.num_stages 4 -> 6"]
    assert studio.undo() and studio.undo() and not studio.undo()
    assert editor.control("smem_ring", "advance_on_wait").value is False
    assert studio.redo() and studio.redo() and not studio.redo()
    assert editor.control("smem_ring", "advance_on_wait").value is True
    studio.close()


def test_interleave_stride_takes_one_or_four_role_values_and_ts_checks_them():
    editor = PipelineEditor(design("tma_copy"))
    editor.control("smem_ring", "interleave_stride").value = "2"
    assert editor.design.pipelines()["smem_ring"]["interleave_stride"] == 2
    assert not editor.set("smem_ring", "interleave_stride", "1, 1, 2, 1")  # TS: needs advance_on_wait
    assert "advance_on_wait" in editor.errors[("smem_ring", "interleave_stride")].message
    assert not editor.set("smem_ring", "num_stages", 3)  # 2 does not divide 3: TS's reason
    assert "evenly divide num_stages=3" in editor.errors[("smem_ring", "num_stages")].message
    assert parse_interleave("1,1,2,2", where="x") == [1, 1, 2, 2]
    with pytest.raises(tslab.DesignError, match="neither a number nor 4 numbers"):
        parse_interleave("1, 2", where="x")


def test_field_that_does_not_apply_is_refused_with_the_fields_that_do():
    editor = PipelineEditor(design("tma_copy"))
    assert not editor.set("smem_ring", "advance_on_acquire", True)
    issue = editor.errors[("smem_ring", "advance_on_acquire")]
    assert "does not apply to a TmaAsync pipeline" in issue.message and "advance_on_wait" in issue.hint


def test_group_and_signaling_controls_edit_the_design():
    editor = PipelineEditor(design("tma_copy"))
    _agent, size = editor.control("smem_ring", "consumer_group").children
    size.value = "64"
    assert editor.design.pipelines()["smem_ring"]["consumer_group"] == {"agent": "Thread", "size": 64}
    editor.control("smem_ring", "producer_signaling_threads").value = "CtaLeader"
    assert editor.design.pipelines()["smem_ring"]["producer_signaling_threads"] == "CtaLeader"


def test_gemm_has_one_panel_per_pipelined_resource():
    editor = PipelineEditor(design("gemm_sm90", **ALIASED))
    assert set(editor.design.pipelines()) == {"smem_ab", "smem_epi"}
    assert editor.control("smem_epi", "num_stages").value == str(editor.design.pipelines()["smem_epi"]["num_stages"])


def grouped_design():
    from fixtures import group_copy

    tasks, graph, allocator = group_copy.make_parts(8, 4)
    return tslab.Design.from_tasks(tasks, graph, smem_allocations=allocator, name="group_copy")


def test_a_pipeline_group_is_one_panel_titled_with_its_members():
    editor = PipelineEditor(grouped_design())
    panels = [c for c in editor.children if "tslab-pipeline-panel" in c._dom_classes]
    assert len(panels) == 1 and "tslab-pipeline-group" in panels[0]._dom_classes
    title = panels[0].children[0].value
    assert "ab_sync" in title and "smem_a" in title and "smem_b" in title and "Merge" in title
    assert editor.control("ab_sync", "num_stages").value == "4"
    assert editor.control("ab_sync", "producer_group").children[1].disabled  # TS sums it from the members
    with pytest.raises(tslab.DesignError, match=r"smem_a belongs to PipelineGroup 'ab_sync'"):
        editor.control("smem_a", "num_stages")


def test_a_group_panel_edit_changes_the_group_and_its_members():
    editor = PipelineEditor(grouped_design())
    editor.control("ab_sync", "num_stages").value = "5"
    assert {n: p["num_stages"] for n, p in editor.design.pipelines().items()} == {"ab_sync": 5, "smem_a": 5,
                                                                                  "smem_b": 5}
    assert editor.design.overrides["pipelines"] == {"ab_sync": {"num_stages": 5}}
    assert editor.verdict.status == "SAFE" and editor.verdict.barrier_bytes == 3 * 5 * 16
    assert not editor.set("smem_a", "num_stages", 6)
    assert "with_pipeline('ab_sync', num_stages=6)" in editor.errors[("smem_a", "num_stages")].hint


def test_a_field_the_group_merges_is_not_edited_in_its_panel():
    editor = PipelineEditor(grouped_design())
    assert not editor.set("ab_sync", "producer_group", 32)
    issue = editor.errors[("ab_sync", "producer_group")]
    assert "merged by TS from the members" in issue.message and "with_pipeline('ab_sync'" in issue.hint
