"""ScheduleView: the Studio's swimlane holds TS's schedule table as the rows a saved verdict keeps."""

from __future__ import annotations

import tslab
from tslab.kernels import design
from tslab.widgets.swimlane import ScheduleView


def test_schedule_view_holds_the_rows_a_saved_verdict_keeps():
    verdict = tslab.check(design("gemm_sm90"))
    view = ScheduleView()
    view.show(verdict)
    assert view.schedule == verdict.to_mime()["schedule"]
    assert [r["stage"] for r in view.schedule if r["task"] == "MmaTask"][:2] == ["ConsumerWait", "ConsumerWork"]


def test_schedule_view_holds_each_tasks_warps_and_trips():
    verdict = tslab.check(design("gemm_sm90"))
    view = ScheduleView()
    view.show(verdict)
    assert view.tasks == verdict.to_mime()["tasks"]
    mma = next(t for t in view.tasks if t["name"] == "MmaTask")
    assert mma["warps"][1] - mma["warps"][0] + 1 == 8 and mma["persistent"] is True


def _move(studio, *, version=None, **step):
    lanes = studio._swimlane
    message = {"kind": "move", "version": lanes.version if version is None else version, **step}
    lanes._message(lanes, message)


RELEASE = {"task": "MmaTask", "index": 5, "resource": "smem_ab", "stage": "ConsumerRelease", "label": None}


def test_a_step_dragged_in_the_studio_swimlane_moves_it_in_the_design_and_history():
    from tslab.widgets import Studio

    studio = Studio(design("gemm_sm90"))
    assert studio._swimlane.editable
    _move(studio, **RELEASE, section="loop", to_index=1)  # release before the wgmma of the same trip
    studio.wait()
    loop = [s[1] for s in studio.design.schedule("MmaTask") if s[2] == "Loop"]
    assert loop == ["ConsumerWait", "ConsumerRelease", "ConsumerWork", "ConsumerWork"]
    assert "ConsumerRelease" in studio.history.labels()[-1] and len(studio.history) == 2
    assert studio.verdict.design is studio.design
    assert studio._lane_note.value == ""
    studio.close()


def test_a_move_from_lanes_that_showed_another_design_is_refused_and_changes_nothing():
    from tslab.widgets import Studio

    studio = Studio(design("gemm_sm90"))
    before = studio.design
    _move(studio, **RELEASE, section="loop", to_index=1, version=studio._swimlane.version - 1)
    assert studio.design is before and len(studio.history) == 1
    assert "earlier design" in studio._lane_note.value
    _move(studio, **{**RELEASE, "stage": "ConsumerWait"}, section="loop", to_index=1)  # not the step at index 5
    assert studio.design is before and "earlier design" in studio._lane_note.value
    studio.close()
