"""Playing the scheduler: the checker's own enabledness, transition, deadlock and race detection."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_designs import build, specs

import tslab
from tslab import DesignError, Explorer, MoveError
from tslab.kernels import design


def test_enabled_moves_and_a_refused_blocked_task():
    ex = Explorer(design("demo_deadlock"))
    assert [m.task for m in ex.enabled()] == ["LoadTask", "StoreTask"]
    assert str(ex.enabled()[1].op) == "ConsumerAuxWork(smem_ring.bind_read)"
    ex.step("StoreTask")  # binds its view of the ring; next it waits for a commit
    assert [m.task for m in ex.enabled()] == ["LoadTask"]
    before = ex.state
    with pytest.raises(MoveError, match=r"task 'StoreTask': StoreTask blocked on smem_ring.ConsumerWait "
                                        r"waiting for producer commit credit.*; move one of: LoadTask"):
        ex.step("StoreTask")
    assert ex.state == before and len(ex.history) == 2
    with pytest.raises(DesignError, match="did you mean 'LoadTask'"):
        ex.step("LoadTsk")


def test_replaying_the_verdicts_trace_reaches_the_checkers_deadlock():
    verdict = tslab.check(design("demo_deadlock"))
    ex = Explorer(design("demo_deadlock"))
    for s in verdict.trace.steps[1:]:
        assert ex.step(s.task).state == s.state
    assert ex.status.kind == "deadlock"
    assert ex.status.message == verdict.trace.fault.message
    assert ex.enabled() == []


def test_replaying_the_race_trace_reports_the_same_race():
    trace = tslab.check(design("demo_race")).trace
    ex = Explorer(design("demo_race"))
    for s in trace.steps[1:]:
        assert ex.status.kind == "running"
        ex.step(s.task)
    assert ex.status.kind == "race" and ex.status.fault == trace.fault


def test_undo_reset_and_completion():
    ex = Explorer(design("tma_copy", tiles=1))
    first = ex.step("LoadTask")
    ex.step("StoreTask")
    assert ex.undo() == first and len(ex.history) == 2
    ex.reset()
    assert len(ex.history) == 1
    with pytest.raises(MoveError, match="nothing to undo"):
        ex.undo()
    while ex.status.kind == "running":
        ex.step(ex.enabled()[-1].task)
    assert ex.status.kind == "complete"
    with pytest.raises(MoveError, match="task 'LoadTask': has finished its schedule"):
        ex.step("LoadTask")
    assert ex.trace().fault.kind == "complete"


def test_fixed_designs_never_fault_on_random_plays():
    rng = random.Random(7)
    for d in (design("demo_deadlock").with_pipeline("smem_ring", num_stages=2),
              design("demo_race").with_alias_groups([])):
        assert tslab.check(d).ok
        for _ in range(5):
            ex = Explorer(d)
            while ex.status.kind == "running":
                ex.step(rng.choice(ex.enabled()).task)
            assert ex.status.kind == "complete", ex.trace().text()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs(), st.randoms(use_true_random=False))
def test_random_plays_agree_with_the_checker(spec, rng):
    """A safe verdict means no play faults; every play ends where the checker allows it to end."""
    d = build(spec)
    verdict = tslab.check(d)
    ex = Explorer(d)
    while ex.status.kind == "running":
        ex.step(rng.choice(ex.enabled()).task)
    if verdict.checker.verdict == "safe":
        assert ex.status.kind == "complete"
    assert ex.status.kind in ("complete", "deadlock", "race")
