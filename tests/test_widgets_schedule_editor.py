import ast

import ipywidgets as widgets
import pytest

import tslab
from tslab.kernels import design
from tslab.widgets import ScheduleEditor
from tslab.widgets import schedule_ops as ops
from tslab.widgets.schedule_code import schedule_code
from tslab.widgets.schedule_editor import offered_stages

STORE = [("smem_ring", "ConsumerAuxWork", "Head", "bind_read"), ("smem_ring", "ConsumerWait", "Loop", None),
         ("smem_ring", "ConsumerWork", "Loop", "read_tile"), ("gmem_out", "ProducerWork", "Loop", "store"),
         ("smem_ring", "ConsumerRelease", "Loop", None)]


def _walk(widget):
    """A widget and everything shown inside it (rows an edit hid are left out, as the page leaves them out)."""
    if getattr(widget.layout, "display", None) == "none":
        return
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _press(editor, task, action, row):
    """Press ``action`` ("up", "down", "delete") on the ``row``-th step listed in ``task``'s column, as the front
    end's button sends it."""
    steps = editor._task_columns[task].steps
    index = [step["index"] for section in steps.sections for step in section["steps"]][row]
    steps._message(steps, {"kind": action, "index": index, "version": steps.version})


def test_columns_show_each_task_grouped_by_section():
    editor = ScheduleEditor(design("tma_copy"))
    assert editor.design.schedule("StoreTask") == STORE
    assert len(editor._columns.children) == 2
    assert editor._task_columns["StoreTask"].steps.texts() == [
        ("Head", "smem_ring.ConsumerAuxWork(bind_read)"), ("Loop", "smem_ring.ConsumerWait"),
        ("Loop", "smem_ring.ConsumerWork(read_tile)"), ("Loop", "gmem_out.ProducerWork(store)"),
        ("Loop", "smem_ring.ConsumerRelease")]


def test_move_across_a_section_border_rechecks():
    editor = ScheduleEditor(design("tma_copy"))
    assert editor.move("StoreTask", 3, "Tail", 0)
    assert editor.design.schedule("StoreTask")[-1] == ("gmem_out", "ProducerWork", "Tail", "store")
    assert editor.verdict.status == "SAFE"
    assert editor.design.schedule("LoadTask") == design("tma_copy").schedule("LoadTask")


def test_buttons_drive_the_same_edits():
    editor = ScheduleEditor(design("tma_copy"))
    _press(editor, "StoreTask", "down", 3)  # store -> after release
    assert editor.design.schedule("StoreTask")[3:] == [STORE[4], STORE[3]]
    _press(editor, "StoreTask", "up", 1)  # first Loop step -> end of Head
    assert editor.design.schedule("StoreTask")[1] == ("smem_ring", "ConsumerWait", "Head", None)
    assert editor.verdict.status != "SAFE"
    _press(editor, "StoreTask", "delete", 0)
    assert len(editor.design.schedule("StoreTask")) == 4
    _press(editor, "StoreTask", "down", 3)  # the last step of the Tail: the front end draws it disabled
    assert len(editor.design.schedule("StoreTask")) == 4 and editor.error is None


def test_a_button_on_rows_an_edit_has_redrawn_changes_nothing_and_says_so():
    """Two quick clicks: the second was drawn before the first's edit came back, so its step index may name
    another step now. It is refused, not applied to whatever step holds that index."""
    editor = ScheduleEditor(design("tma_copy"))
    steps = editor._task_columns["StoreTask"].steps
    drawn = steps.version
    steps._message(steps, {"kind": "down", "index": 3, "version": drawn})
    after = editor.design
    steps._message(steps, {"kind": "delete", "index": 4, "version": drawn})
    assert editor.design is after and "drawn before the last edit" in editor._message.value
    marked = steps.version
    steps.show(editor.design.schedule("StoreTask"), {("Loop", 0): "caution: a mark alone"})
    assert steps.version == marked and steps.marked() == [("Loop", 0, "caution: a mark alone")]  # same steps
    steps._message(steps, {"kind": "nonsense", "index": 4, "version": steps.version})
    steps._message(steps, {"kind": "delete", "index": 99, "version": steps.version})
    assert editor.design is after


def test_deleting_the_release_is_reported_and_undo_redo_restore():
    editor = ScheduleEditor(design("tma_copy"))
    editor.delete("StoreTask", 4)
    assert editor.verdict.status != "SAFE" and editor.verdict.errors
    assert editor.undo() and editor.design == design("tma_copy") and editor.verdict.status == "SAFE"
    assert editor.redo() and len(editor.design.schedule("StoreTask")) == 4
    assert not editor.redo()


def test_rejected_edit_keeps_the_design_and_says_where():
    editor = ScheduleEditor(design("tma_copy"))
    before = editor.design
    assert not editor.insert("StoreTask", 0, ("smem_ring", "ConsumerWait", "Loop", None))
    assert editor.design is before
    assert editor.error.where == "task 'StoreTask' step 1" and "Head -> Loop -> Tail" in editor.error.hint
    assert not editor.move("StoreTask", 9, "Loop", 0)
    assert "use an index from 0 to 4" in editor.error.hint


def test_insert_offers_only_what_a_resource_offers():
    d = design("tma_copy")
    assert offered_stages(d.stage_choices("gmem_in"), False) == ["ConsumerWork", "ConsumerAuxWork"]
    ring = offered_stages(d.stage_choices("smem_ring"), True)
    assert "ProducerAcquire" in ring and "ConsumerRelease" in ring
    assert offered_stages(d.stage_choices("smem_ring"), True, "producer") == [
        "ProducerTryAcquire", "ProducerAcquire", "ProducerWork", "ProducerAuxWork", "ProducerCommit"]
    editor = ScheduleEditor(d)
    assert editor.insert("StoreTask", 4, ("smem_ring", "ConsumerWork", "Loop", "read_tile"))
    assert editor.design.schedule("StoreTask")[4] == ("smem_ring", "ConsumerWork", "Loop", "read_tile")


def test_code_view_is_valid_python_with_the_loop_bounds():
    editor = ScheduleEditor(design("tma_copy"))
    editor.move("StoreTask", 3, "Tail", 0)
    code = editor.code("StoreTask")
    ast.parse(code)
    assert "with domain_loop(0, 256, 64):" in code
    assert code.rstrip().endswith("    gmem_out.store()")
    assert "smem_ring.wait()" in code and "smem_ring.release()" in code


def test_ops_are_pure_and_clamp_positions():
    moved = ops.move("T", STORE, 0, "Tail", 99)
    assert moved[-1] == ("smem_ring", "ConsumerAuxWork", "Tail", "bind_read") and STORE[0][2] == "Head"
    assert ops.section_start(STORE, "Loop") == 1 and ops.section_start(STORE, "Tail") == 5
    with pytest.raises(tslab.DesignError, match="not a schedule section"):
        ops.move("T", STORE, 0, "Middle", 0)


def test_insert_controls_offer_choices_and_insert_at_the_end_of_the_section():
    editor = ScheduleEditor(design("tma_copy"))
    column = next(c for c in editor._columns.children if "StoreTask" in c.children[0].value)
    dropdowns = [w for w in _walk(column) if isinstance(w, widgets.Dropdown)]
    resource, stage, label, section = dropdowns
    assert resource.value == "smem_ring" and stage.value == "ConsumerTryWait"
    assert label.options == (("no label", ""),) and label.disabled  # shown as such, not as an empty box
    assert not any(v.startswith("Producer") for _, v in stage.options)  # StoreTask consumes the ring
    stage.value = "ConsumerWork"
    assert [v for _, v in label.options] == ["bind_read", "read_tile"] and label.value == "bind_read"
    label.value = "read_tile"
    section.value = "Tail"
    [add] = [w for w in _walk(column) if isinstance(w, widgets.Button) and w.description == "insert"]
    add.click()
    assert editor.design.schedule("StoreTask")[-1] == ("smem_ring", "ConsumerWork", "Tail", "read_tile")
    assert not label.disabled
    stage.value = "ConsumerRelease"  # a pipeline op: no label, and the step inserted carries None
    assert label.disabled and label.value == ""
    add.click()
    assert editor.design.schedule("StoreTask")[-1] == ("smem_ring", "ConsumerRelease", "Tail", None)


GUARDED = [("ring", "ConsumerWait", "Loop", None), ("ring", "ConsumerWork", "Loop", "read"),
           ("gmem_out", "ProducerWork", "Loop", "store", "when_true(ring.read.item)"),
           ("ring", "ConsumerRelease", "Loop", None, "every(2, start=1)"), ("ring", "ConsumerRelease", "Tail", None)]


def test_a_guarded_step_keeps_its_guard_where_it_moves_in_the_loop():
    moved = ops.move("StoreTask", GUARDED, 3, "Loop", 0)
    assert moved[0] == ("ring", "ConsumerRelease", "Loop", None, "every(2, start=1)")
    assert ops.move("StoreTask", GUARDED, 2, "Loop", 9)[3] == GUARDED[2]
    assert ops.move("StoreTask", GUARDED, 4, "Loop", 0)[0] == ("ring", "ConsumerRelease", "Loop", None)


@pytest.mark.parametrize("section", ["Head", "Tail"])
def test_a_guarded_step_does_not_leave_the_loop_without_its_guard(section):
    with pytest.raises(tslab.DesignError, match=r"ring\.ConsumerRelease runs under every\(2, start=1\), which holds "
                                                r"on loop trips only: it cannot move to " + section) as info:
        ops.move("StoreTask", GUARDED, 3, section, 0)
    assert info.value.where == "task 'StoreTask' step 3"
    assert info.value.hint == ("move it within the Loop section; to run it once in " + section
                               + " instead, delete it and insert the step there without a guard")


def test_the_editor_refuses_to_drop_a_guard_and_keeps_the_design():
    editor = ScheduleEditor(design("gemm_sm90"))
    before = editor.design
    assert not editor.move("MmaTask", 4, "Tail", 0)  # wgmma_drain on the last trip
    assert editor.design is before and "runs under LastIter" in editor.error.message
    assert editor.move("MmaTask", 4, "Loop", 0)
    assert editor.design.schedule("MmaTask")[2] == ("smem_ab", "ConsumerWork", "Loop", "wgmma_drain", "LastIter")


def test_code_view_writes_each_guard_as_schedule_code():
    code = schedule_code("StoreTask", GUARDED, (0, 4, 1))
    ast.parse(code)
    assert "    with domain_loop(0, 4, 1) as loop:" in code
    assert "        with when_true(item):  # ring.read.item\n            gmem_out.store()" in code
    assert "        with loop.every(2, start=1):\n            ring.release()" in code
    last = schedule_code("MmaTask", [("smem_ab", "ConsumerWork", "Loop", "wgmma_drain", "LastIter")])
    assert "        with loop.last_iter():\n            smem_ab.wgmma_drain()" in last


def test_the_guards_teaching_design_moves_its_batch_release_within_the_loop_only():
    editor = ScheduleEditor(design("demo_guards", stages=2))
    assert editor.move("StoreTask", 4, "Loop", 2)
    assert editor.design.schedule("StoreTask")[2] == ("ring", "ConsumerRelease", "Loop", None, "every(2, start=1)")
    assert editor.verdict.status == "SAFE"
    assert not editor.move("StoreTask", 2, "Tail", 0)
    assert editor.error.where == "task 'StoreTask' step 2" and "every(2, start=1)" in editor.error.message


def test_each_work_call_shows_its_compile_time_arguments_as_they_will_run():
    """gemm_sm90's sub-tiled epilogue stages group g at the g-th ``stage_group`` step (a compile-time argument TS
    keeps by the step's call index): the rows and the code view name each group, and after a delete the groups
    follow the call index, as the kernel will run them (TS then finds the store waiting for a group never staged)."""
    from tslab.kernels import gemm_sm90

    editor = ScheduleEditor(gemm_sm90.design(epilogue="subtiles", stages=4))
    rows = [text for section, text in editor._task_columns["MmaTask"].steps.texts() if "stage_group" in text]
    assert rows == [f"smem_epi.ProducerWork(stage_group, group={g})" for g in range(4)]
    code = editor.code("MmaTask")
    ast.parse(code)
    assert [line.strip() for line in code.splitlines() if "stage_group" in line] == [
        f"smem_epi.stage_group(group={g})" for g in range(4)]
    steps = editor.design.schedule("MmaTask")
    first = steps.index(("smem_epi", "ProducerAcquire", "Tail", None))
    edited = editor.design.with_schedule("MmaTask", steps[:first] + steps[first + 3:])  # group 0's three steps
    assert list(edited.work_kwargs("MmaTask").values()) == [{"group": g} for g in range(3)]
    assert tslab.check(edited).status == "DEADLOCK"


def test_a_step_that_runs_once_around_the_work_tile_loop_says_so_and_keeps_saying_so_after_an_edit():
    """The PDL wait sits in the Head section but runs once, before the work-tile loop (TS's pre-loop slot), the
    launch once after it: their rows say so, and after an edit of another step (which keeps those slots) too."""
    from tslab.kernels import gemm_sm90

    editor = ScheduleEditor(gemm_sm90.design(pdl=True))
    texts = editor._task_columns["LoadTask"].steps.texts()
    assert texts[0] == ("Head", "pdl_wait.ConsumerWork(wait_griddep) (once, before the tile loop)")
    assert texts[-1] == ("Tail", "pdl_launch.ProducerWork(launch_griddep) (once, after the tile loop)")
    assert [text for _, text in texts[1:-1] if "tile loop" in text] == []
    assert editor.move("LoadTask", 5, "Tail", 1)  # the work queue's wait behind its work: a deadlock, still an edit
    texts = editor._task_columns["LoadTask"].steps.texts()
    assert texts[0][1].endswith("(once, before the tile loop)") and texts[-1][1].endswith("(once, after the tile loop)")


def test_a_step_a_skipped_tile_skips_says_so():
    from test_skip_agreement import _design, even_tiles

    d = _design(even_tiles, even_tiles, heads=True)
    skipped = d.tile_loop("LoadTask")["skippable"]
    editor = ScheduleEditor(d)
    rows = [row for section in editor._task_columns["LoadTask"].steps.sections for row in section["steps"]]
    said = {row["index"] for row in rows if row["text"].endswith("(not for a skipped tile)")}
    assert skipped and said == set(skipped)
