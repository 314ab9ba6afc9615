import threading
import time

import pytest

import tslab
from tslab.kernels import design
from tslab.kernels.gemm_sm90 import ALIASED
from tslab.widgets import Studio
from tslab.widgets.badge import badge_html
from tslab.widgets.history import describe_change
from tslab.widgets.rechecker import Rechecker


def test_edit_in_an_editor_rechecks_in_the_background_and_updates_every_view():
    studio = Studio(design("tma_copy"), debounce=0.01)
    assert studio.verdict.status == "SAFE"
    studio.pipeline_editor.control("smem_ring", "num_stages").value = "20"
    assert studio.design.pipelines()["smem_ring"]["num_stages"] == 20  # current at once
    assert studio.wait(10)
    assert studio.verdict.status == "CAPACITY" and studio.verdict.design == studio.design
    assert 'data-status="CAPACITY"' in studio._badge.value
    assert "328,000 / 232,448 B" in studio.layout_chart._summary.value
    assert "states" in studio._states.value
    assert studio.schedule_editor.design == studio.design  # the other editor follows


def test_newer_edit_supersedes_and_the_last_one_wins():
    studio = Studio(design("tma_copy"), debounce=0.05)
    for stages in (5, 6, 7, 8, 2):
        studio.pipeline_editor.set("smem_ring", "num_stages", stages)
    studio.wait(10)
    assert studio.verdict.design.pipelines()["smem_ring"]["num_stages"] == 2
    assert studio.verdict.status == "SAFE"


def test_history_reverts_with_one_click_and_keeps_everything():
    studio = Studio(design("tma_copy"), debounce=0.01)
    studio.pipeline_editor.set("smem_ring", "num_stages", 20)
    studio.schedule_editor.move("StoreTask", 3, "Tail", 0)
    studio.wait(10)
    assert studio.history.labels() == ["start", "smem_ring.num_stages 4 -> 20",
                                       "StoreTask: moved gmem_out.ProducerWork(store) down into Tail"]
    view = studio.history_view
    view._message(view, {"kind": "revert", "index": 0})  # a click on entry #0
    studio.wait(10)
    assert studio.design == design("tma_copy") and studio.verdict.status == "SAFE"
    assert studio.pipeline_editor.control("smem_ring", "num_stages").value == "4"
    assert studio.history.labels()[-1] == "revert to #0" and len(studio.history) == 4


def test_unsafe_verdict_shows_the_counterexample_and_a_swimlane():
    studio = Studio(design("demo_deadlock"))
    assert studio.verdict.status == "DEADLOCK"
    [view] = studio._counterexample.children
    assert view.trace.fault.kind == "deadlock"
    assert "blocked on smem_ring.ProducerAcquire" in view.trace.text()
    assert {row["task"] for row in studio._swimlane.schedule} == {"LoadTask", "StoreTask"}


def test_gemm_studio_schedule_edit_then_undo():
    studio = Studio(design("gemm_sm90", **ALIASED), debounce=0.01)
    studio.schedule_editor.delete("MmaTask", 2)
    studio.wait(10)
    assert studio.verdict.status != "SAFE"
    studio.schedule_editor.undo()
    studio.wait(10)
    assert studio.verdict.status == "SAFE" and studio.design == design("gemm_sm90", **ALIASED)


def test_rechecker_drops_stale_results_and_reports_progress():
    delivered, ticks = [], []
    release = threading.Event()

    def slow_check(d):
        release.wait(5)
        return tslab.check(d)

    r = Rechecker(lambda d, v: delivered.append(d), on_progress=ticks.append, debounce=0.0, progress_every=0.02,
                  check_fn=slow_check)
    first, second = design("tma_copy"), design("tma_copy", stages=2)
    r.submit(first)
    time.sleep(0.1)  # first is running now
    r.submit(second)
    release.set()
    assert r.wait(10)
    assert delivered == [second] and r.superseded == 1 and ticks


def test_pure_views():
    v = tslab.check(design("demo_overflow"))
    assert 'data-status="CAPACITY"' in badge_html(v) and "hint:" in badge_html(v)
    assert "CHECKING" in badge_html(None, checking="re-checking")
    rows = [r for r in v.schedule_rows() if r["task"] == "StoreTask"]
    assert [r["stage"] for r in rows][:2] == ["ConsumerAuxWork", "ConsumerWait"]
    assert describe_change(None, design("tma_copy")) == "start"


def test_revert_to_a_missing_entry_says_which_exist():
    import pytest

    studio = Studio(design("tma_copy"))
    with pytest.raises(tslab.DesignError, match="pick an entry from 0 to 0"):
        studio.revert(3)
    assert studio.design == design("tma_copy")


def test_closing_a_studio_stops_its_worker():
    studio = Studio(design("tma_copy"))
    worker = studio._rechecker._thread
    studio.close()
    worker.join(5)
    assert not worker.is_alive()


def test_unsafe_verdict_is_replayed_by_the_replay_player():
    from dataclasses import replace

    from tslab.widgets import ReplayPlayer
    from tslab.widgets.studio import counterexample_view

    verdict = tslab.check(design("demo_race"))
    view = counterexample_view(verdict)
    assert isinstance(view, ReplayPlayer)
    assert "tslab-counterexample" in counterexample_view(replace(verdict, trace=None)).value
    assert counterexample_view(tslab.check(design("tma_copy"))) is None


def test_state_bound_makes_a_large_check_not_proven_and_says_so():
    studio = Studio(design("tma_copy"), max_states=10)
    assert studio.verdict.status == "NOT PROVEN"
    assert "state limit 10 hit" in studio._states.value


def test_a_misread_stage_count_is_refused_and_leaves_no_history_entry():
    studio = Studio(design("tma_copy"), debounce=0.01)
    studio.pipeline_editor.control("smem_ring", "num_stages").value = "2.5"
    studio.wait(10)
    assert studio.history.labels() == ["start"] and studio.design == design("tma_copy")
    assert studio.verdict.status == "SAFE"
    assert "not a whole number" in studio.pipeline_editor.message("smem_ring", "num_stages")


def test_one_history_undo_and_redo_walk_every_editors_edits_without_adding_entries():
    studio = Studio(design("tma_copy"), debounce=0.01)
    editor = studio.schedule_editor
    editor.move("StoreTask", 3, "Tail", 0)
    studio.pipeline_editor.set("smem_ring", "num_stages", 5)
    moved = studio.history[1]
    assert len(studio.history) == 3 and studio.history.current == 2
    assert editor.undo()  # the schedule editor's undo is the Studio's: it undoes the last edit, the stages
    assert len(studio.history) == 3 and studio.history.current == 1 and studio.design is moved
    assert studio.pipeline_editor.control("smem_ring", "num_stages").value == "4"
    assert studio.undo() and studio.design == design("tma_copy") and studio.history.current == 0
    assert not studio.undo()
    assert studio.redo() and studio.redo() and studio.history.current == 2 and not studio.redo()
    studio.undo()
    studio.pipeline_editor.set("smem_ring", "num_stages", 6)  # an edit after an undo: a new branch from #1
    assert len(studio.history) == 4 and studio.history.parents[3] == 1 and not studio.redo()
    assert studio.undo() and studio.design is moved  # back along the branch, not to the undone #2
    view = studio.history_view
    view._message(view, {"kind": "redo"})  # the front end's button (or Ctrl+Shift+Z)
    studio.wait(10)
    assert studio.history.current == 3 and studio.verdict.design is studio.design
    assert [e["current"] for e in view.entries] == [False, False, False, True]
    assert view.can_undo and not view.can_redo
    assert editor._undo_button.layout.display == "none"  # no history of its own


def test_history_labels_say_what_changed():
    from tslab.widgets.history import describe_steps

    base = design("tma_copy")
    assert describe_change(base, base.with_pipeline("smem_ring", num_stages=5)) == "smem_ring.num_stages 4 -> 5"
    steps = base.schedule("StoreTask")
    assert describe_steps("StoreTask", steps, steps[1:]) == f"StoreTask: deleted {steps[0][0]}.{steps[0][1]}" + (
        f"({steps[0][3]})" if steps[0][3] else "")
    swapped = [steps[0], steps[2], steps[1], *steps[3:]]
    assert describe_steps("StoreTask", steps, swapped).startswith("StoreTask: moved ")
    assert describe_steps("StoreTask", steps, list(reversed(steps))) == "StoreTask: schedule changed"


def test_a_refused_field_says_which_design_is_on_show():
    studio = Studio(design("tma_copy"), debounce=0.01)
    studio.pipeline_editor.set("smem_ring", "num_stages", 5)
    studio.pipeline_editor.control("smem_ring", "num_stages").value = "2.5"
    assert "showing the last valid design (#1)" in studio.pipeline_editor.message("smem_ring", "num_stages")


def test_studio_checks_every_edit_with_the_trip_counts_it_was_given():
    studio = Studio(design("tma_copy"), debounce=0.01, trips={"LoadTask": "n", "StoreTask": "n"}, n=range(1, 4))
    assert studio.verdict.ok and studio.verdict.trips["n"] == [1, 2, 3]
    assert studio.wait(10) and "reduced search" in studio._states.value
    studio.pipeline_editor.set("smem_ring", "num_stages", 1)
    assert studio.wait(10)
    assert studio.verdict.trips["n"] == [1, 2, 3] and studio.verdict.design == studio.design


def test_a_studio_with_bad_trip_counts_is_refused_with_the_place():
    with pytest.raises(tslab.DesignError, match=r"trips\['Load'\]: names no task of this design"):
        Studio(design("tma_copy"), trips={"Load": "n"}, n=range(1, 3))


def test_moving_a_step_up_past_its_neighbour_is_labelled_as_that_step_moving_up():
    """Swapping two neighbours reads both ways in a diff; the history says what the user moved (the release)."""
    studio = Studio(design("tma_copy"), debounce=0)
    try:
        steps = studio.design.schedule("StoreTask")
        loop = [i for i, s in enumerate(steps) if s[2] == "Loop"]
        second = loop[1]  # moved to the first place of the Loop section, past the step before it
        studio.schedule_editor.move("StoreTask", second, "Loop", 0)
        step = steps[second]
        label = studio.history.labels()[-1]
        assert label.startswith(f"StoreTask: moved {step[0]}.{step[1]}") and label.endswith(" up"), label
    finally:
        studio.close()


def test_the_line_under_an_error_badge_says_the_schedule_checker_did_not_find_it():
    from tslab.widgets.studio import states_line

    over = tslab.check(design("demo_overflow"))
    assert over.status == "CAPACITY" and over.checker.verdict == "safe"
    assert states_line(over).startswith("schedule checker: no deadlock or race (")
    assert "the CAPACITY above comes from the memory and field checks" in states_line(over)
    assert states_line(tslab.check(design("demo_deadlock"))).startswith("schedule checker: deadlock, ")


def test_a_refused_field_gets_a_red_border_and_the_badge_says_it_shows_the_last_valid_design():
    studio = Studio(design("tma_copy"), debounce=0.01)
    try:
        control = studio.pipeline_editor.control("smem_ring", "num_stages")
        control.value = "2.5"
        studio.wait(10)
        assert "tslab-invalid" in control._dom_classes
        assert 'class="tslab-stale"' in studio._badge.value and "the last valid design" in studio._badge.value
        assert "SAFE" in studio._badge.value  # the design on show is still the valid one
        control.value = "3"
        studio.wait(10)
        assert "tslab-invalid" not in control._dom_classes and "tslab-stale" not in studio._badge.value
        assert studio.design.pipelines()["smem_ring"]["num_stages"] == 3
    finally:
        studio.close()


def test_a_ring_clicked_in_the_flow_diagram_marks_its_pipeline_panel():
    studio = Studio(design("gemm_sm90"), debounce=0.01)
    flow = studio.flow
    assert flow.rings == studio.verdict.to_mime()["rings"]
    assert set(flow.rings) == {"smem_ab", "smem_epi", "work_queue"} and flow.rings["smem_ab"]["num_stages"] == 3
    assert flow.rings["work_queue"]["scheduler"] == "StaticPersistent"  # drawn, but no pipeline to edit
    flow._message(flow, {"kind": "select", "resource": "work_queue"})
    assert flow.selected == ""
    studio.editors.selected_index = 1
    flow._message(flow, {"kind": "select", "resource": "smem_epi"})
    assert studio.editors.selected_index == 0 and flow.selected == "smem_epi"
    marked = [p for p in studio.pipeline_editor._panels.values() if "tslab-selected" in p._dom_classes]
    assert [p for p in marked if "tslab-panel-smem_epi" in p._dom_classes] == marked and len(marked) == 1
    studio.pipeline_editor.set("smem_ab", "num_stages", 4)  # the panels are rebuilt: the mark stays
    studio.wait(10)
    assert flow.rings["smem_ab"]["num_stages"] == 4
    assert "tslab-selected" in studio.pipeline_editor._panels["smem_epi"]._dom_classes
    studio.close()


def test_a_member_of_a_merged_group_clicked_in_the_flow_marks_the_group():
    studio = Studio(design("gemm_sm100", ab_rings="merged"), debounce=0.01)
    flow = studio.flow
    assert flow.rings["smem_a"]["group"] == "ab_sync" and flow.rings["ab_sync"]["members"] == ["smem_a", "smem_b"]
    assert [t["name"] for t in flow.tasks] == [t["name"] for t in studio.verdict.tasks]  # warps under each task
    flow._message(flow, {"kind": "select", "resource": "smem_b"})
    assert flow.selected == "ab_sync"
    marked = [n for n, p in studio.pipeline_editor._panels.items() if "tslab-selected" in p._dom_classes]
    assert marked == ["ab_sync"]
    studio.close()


def test_typing_the_value_already_there_is_no_edit_and_leaves_undo_off():
    studio = Studio(design("tma_copy"), debounce=0.01)
    box = studio.pipeline_editor.control("smem_ring", "num_stages")
    box.value = " 4 "  # the stage count it already has, typed again
    assert studio.pipeline_editor.set("smem_ring", "num_stages", 4)  # and set again from Python
    studio.revert(0)  # a revert to the design on show
    assert studio.history.labels() == ["start"] and not studio.history.can_undo
    assert not studio.undo()
    studio.pipeline_editor.set("smem_ring", "num_stages", 5)
    assert studio.history.labels() == ["start", "smem_ring.num_stages 4 -> 5"] and studio.history.can_undo
    studio.close()



def test_a_narrow_studio_shows_the_view_an_edit_changes():
    """The switch over the memory map, the flow and the schedule (a narrow Studio shows one) follows the editors'
    tab and brings the schedule, where the counterexample is drawn, when an edit makes the design unsafe."""
    studio = Studio(design("tma_copy"), debounce=0.01)
    grid = studio._grid
    assert studio.view_switch.value == "memory" and "tslab-view-memory" in grid._dom_classes
    studio.editors.selected_index = 1
    assert studio.view_switch.value == "schedule"
    assert "tslab-view-schedule" in grid._dom_classes and "tslab-view-memory" not in grid._dom_classes
    studio.editors.selected_index = 0
    assert studio.view_switch.value == "memory"
    studio.view_switch.value = "flow"  # a ring clicked in the flow opens the pipelines tab: the flow stays
    studio._flow_selected("smem_ring")
    assert studio.view_switch.value == "flow"
    studio.pipeline_editor.set("smem_ring", "num_stages", 1)
    studio.wait(30)
    assert studio.verdict.status == "SAFE" and studio.view_switch.value == "flow"  # nothing to show elsewhere
    studio.close()
    deadlock = Studio(design("demo_deadlock", stages=2), debounce=0.01)
    assert deadlock.view_switch.value == "memory"
    deadlock.pipeline_editor.set("smem_ring", "num_stages", 1)
    deadlock.wait(30)
    assert deadlock.verdict.status == "DEADLOCK" and deadlock.view_switch.value == "schedule"
    assert deadlock._counterexample.children  # drawn under the lanes
    deadlock.close()


def _shown_steps(editor, task):
    """The steps a task's column lists, top to bottom (section, text)."""
    editor.show_rows()
    return editor._task_columns[task].steps.texts()


def _expected_steps(design, task):
    return [(step[2], f"{step[0]}.{step[1]}" + (f"({step[3]})" if step[3] else "")
             + (f" [{step[4]}]" if len(step) > 4 else "")) for step in design.schedule(task)]


def test_edits_show_the_new_design_in_the_widgets_already_on_the_page():
    """An edit, an undo and a refused value send the values that changed, not a new page of widgets (each widget
    is a comm: a few hundred a redraw overran the kernel's message queue and the page lost some), and every column
    then shows exactly the design on show."""
    import ipywidgets.widgets.widget as ipw

    studio = Studio(design("gemm_sm90", **ALIASED), debounce=0.01)
    assert studio.wait(30)
    editor, pipelines = studio.schedule_editor, studio.pipeline_editor
    editor.show_rows()  # as opening the schedules tab does
    made = len(ipw._instances)
    reordered = []  # a box's children other than appended to: the page takes views out while drawing them
    for column in editor._task_columns.values():
        for box in (column, *column.children):
            box.observe(lambda change: change["new"][:len(change["old"])] != change["old"]
                        and reordered.append(change["owner"]), "children")
    assert editor.move("MmaTask", 3, "Head", 0)
    pipelines.set("smem_ab", "num_stages", 8)
    pipelines.set("smem_ab", "num_stages", "x")  # refused, shown at the field
    assert studio.wait(30)
    for _ in range(2):
        studio.undo()
    assert studio.wait(30)
    assert len(ipw._instances) - made < 40, len(ipw._instances) - made  # ~1,300 before
    assert reordered == []
    assert studio.design.schedule("MmaTask") == design("gemm_sm90", **ALIASED).schedule("MmaTask")
    for task in studio.design.tasks():
        assert _shown_steps(editor, task) == _expected_steps(studio.design, task), task
    assert pipelines.control("smem_ab", "num_stages").value == str(studio.design.pipelines()["smem_ab"]["num_stages"])
    assert pipelines.message("smem_ab", "num_stages") == ""


def test_a_studios_first_draw_shares_its_layouts_and_styles():
    """Each widget is a comm the page must receive; the attention Studio drew 2,218 of them in one burst (a
    Layout and a style model beside nearly every button, label and field), which a loaded machine's kernel could
    not all deliver. The editors' rows and fields share their layouts and styles now."""
    import ipywidgets.widgets.widget as ipw

    made = len(ipw._instances)
    studio = Studio(design("attention_sm90"), debounce=0.01)
    assert studio.wait(60)
    assert len(ipw._instances) - made < 700, len(ipw._instances) - made  # 1,173 with the step rows
    made = len(ipw._instances)
    studio.editors.selected_index = 1  # the schedules tab: each task's steps one widget, not five a step
    assert len(ipw._instances) - made < 200, len(ipw._instances) - made  # 746 with a row of widgets a step


def test_the_step_rows_are_made_when_the_schedules_tab_first_opens_and_show_the_design_on_show():
    """The schedule editor's rows (about half the attention Studio's widgets) wait for the schedules tab; an edit
    made before that is what the rows show once it opens, and the caution marks follow the verdict on show."""
    import ipywidgets.widgets.widget as ipw

    studio = Studio(design("gemm_sm90"), debounce=0.01)
    assert studio.wait(30)
    editor = studio.schedule_editor
    assert editor._task_columns == {} and "drawn when this tab is opened" in editor._columns.children[0].value
    editor.move("StoreTask", 1, "Loop", 0)  # through the editor's API, before any row exists
    assert studio.wait(30) and editor._task_columns == {}
    made = len(ipw._instances)
    studio.editors.selected_index = 1  # the page opens the schedules tab
    assert len(ipw._instances) - made > 3 and studio.view_switch.value == "schedule"
    assert list(editor._columns.children) == [editor._task_columns[t] for t in studio.design.tasks()]
    for task in studio.design.tasks():
        assert _shown_steps(editor, task) == _expected_steps(studio.design, task), task
    again = len(ipw._instances)
    studio.editors.selected_index = 0
    studio.editors.selected_index = 1
    assert len(ipw._instances) == again  # made once
    studio.close()
