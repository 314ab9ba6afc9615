import threading
import time

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
    studio.pipeline_editor.control("smem_ring", "num_stages").value = 20
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
    assert studio.history.labels() == ["start", "smem_ring.num_stages=20", "schedule StoreTask"]
    studio._history_box.children[0].click()
    studio.wait(10)
    assert studio.design == design("tma_copy") and studio.verdict.status == "SAFE"
    assert studio.pipeline_editor.control("smem_ring", "num_stages").value == 4
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
