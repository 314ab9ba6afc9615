"""The teaching design for loop guards: a batched release under ``every`` and a store under ``when_true``."""

from __future__ import annotations

import pytest

import tslab
from tslab.kernels import demo_guards, design


def test_too_few_stages_for_a_batch_deadlock_in_the_first_run():
    verdict = tslab.check(demo_guards.design())
    assert verdict.status == "DEADLOCK"
    [issue] = verdict.errors
    assert "LoadTask blocked on ring.ProducerAcquire" in issue.message
    assert "StoreTask blocked on ring.ConsumerWait" in issue.message
    assert issue.message.endswith("[ring.read.item=False]") and verdict.trace.run == "ring.read.item=False"


@pytest.mark.parametrize("params", [{"stages": 2}, {"batch": 1}, {"stages": 3, "batch": 3, "tiles": 6}])
def test_as_many_stages_as_a_batch_is_safe_for_both_values_of_the_condition(params):
    verdict = tslab.check(design("demo_guards", **params))
    assert verdict.status == "SAFE" and verdict.checker.runs == 2


def test_a_batch_that_does_not_divide_the_trips_leaves_an_acquire_unreleased():
    verdict = tslab.check(design("demo_guards", stages=2, tiles=3))
    assert verdict.status == "INVALID"
    assert any("ProducerAcquire from ring not matched by ConsumerRelease" in e.message for e in verdict.errors)


def test_the_schedule_shows_both_guards():
    d = demo_guards.design(batch=3, stages=3, tiles=6)
    assert d.schedule("StoreTask")[2:] == [("gmem_out", "ProducerWork", "Loop", "store", "when_true(ring.read.item)"),
                                           *[("ring", "ConsumerRelease", "Loop", None, "every(3, start=2)")] * 3]
    rows = tslab.check(d).schedule_rows()
    assert [r["guard"] for r in rows if r["task"] == "StoreTask"] == \
        ["Always", "Always", "when_true(ring.read.item)", *["every(3, start=2)"] * 3]


def test_a_run_to_completion_releases_on_the_guarded_trips_only():
    trace = tslab.trace(design("demo_guards", stages=2), to="complete")
    releases = [(s.entry.iteration, s.entry.guard) for s in trace.steps if s.op and s.op.stage == "ConsumerRelease"]
    assert releases == [(1, "every(2, start=1)")] * 2 + [(3, "every(2, start=1)")] * 2


def test_a_schedule_edit_keeps_both_guards():
    d = design("demo_guards", stages=2)
    steps = d.schedule("StoreTask")
    moved = d.with_schedule("StoreTask", [*steps[:2], *steps[3:], steps[2]])  # store after the releases
    assert moved.schedule("StoreTask")[2:] == [*steps[3:], steps[2]]
    assert tslab.check(moved).status == "SAFE"
