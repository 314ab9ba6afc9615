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
