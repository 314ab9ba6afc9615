"""Contract with the checker's private internals that tslab.core.trace relies on (nvidia-cutlass-dsl 4.8.x).

When a TS release changes them, these tests say which piece moved; fix tslab/core/trace.py, not the tests.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from cutlass.experimental.task_scheduling import exhaustive_checker as ec

import tslab
from tslab.core import trace as hook
from tslab.kernels import design


def test_installed_ts_is_the_pinned_release():
    assert hook.ts_version().startswith(hook.SUPPORTED), (
        f"nvidia-cutlass-dsl {hook.ts_version()} is installed; tslab/core/trace.py is written for "
        f"{hook.SUPPORTED}x: re-check the checker internals and update SUPPORTED")
    hook.require_internals()


@pytest.mark.parametrize("name", ["_advance_one_task", "_compute_enabled_tasks", "_find_races_at_state",
                                  "_next_point_accesses", "_blocked_tasks_for_deadlock"])
def test_checker_helpers_keep_their_signatures(name):
    want = {"_advance_one_task": ["state", "task_idx", "context", "held_tracker", "verbose"],
            "_compute_enabled_tasks": ["state", "context"],
            "_next_point_accesses": ["state", "enabled", "context"],
            "_blocked_tasks_for_deadlock": ["state", "context"],
            "_find_races_at_state": ["held", "next_point_ops", "alias_map", "prod_alias_map",
                                     "cons_alias_map", "overlap_descs", "id_to_res", "task_names", "cursors",
                                     "domain_rids"]}[name]
    got = list(inspect.signature(getattr(ec, name)).parameters)
    assert got == want, f"exhaustive_checker.{name} now takes {got}; tslab/core/trace.py passes {want}"


def test_checker_looks_its_helpers_up_at_call_time():
    """The recording works only because check_all_interleavings reads these module globals on each call."""
    names = ec.check_all_interleavings.__code__.co_names
    for name in ("_advance_one_task", "_compute_enabled_tasks", "_HeldStateTracker"):
        assert name in names, f"check_all_interleavings no longer calls {name} through the module global"
    tasks = design("demo_race").lower().tasks
    with hook.recording() as rec:
        ec.check_all_interleavings(tasks)
    assert rec.parent and rec.context is not None and rec.tracker is not None and rec.initial is not None


def test_state_and_context_fields():
    state_fields = {f.name for f in dataclasses.fields(ec._BfsState)}
    context_fields = {f.name for f in dataclasses.fields(ec._CheckerContext)}
    assert set(hook._STATE_FIELDS) <= state_fields, set(hook._STATE_FIELDS) - state_fields
    assert set(hook._CONTEXT_FIELDS) <= context_fields, set(hook._CONTEXT_FIELDS) - context_fields


def test_missing_internals_fail_with_a_clear_error(monkeypatch):
    monkeypatch.delattr(ec, "_advance_one_task")
    with pytest.raises(hook.CheckerInternalsError, match=r"lacks the checker internals _advance_one_task; "):
        tslab.trace(design("demo_deadlock"))
    assert tslab.check(design("demo_deadlock")).trace is None  # check() still works, without a trace


def test_other_release_fails_with_a_clear_error(monkeypatch):
    monkeypatch.setattr(hook, "ts_version", lambda: "4.9.0")
    with pytest.raises(hook.CheckerInternalsError, match=r"nvidia-cutlass-dsl 4.9.0 is not a 4.8.x release"):
        hook.require_internals()


def test_replayed_states_equal_the_checkers_own_states():
    """Re-applying _advance_one_task along the path gives the state the checker itself reached there."""
    tasks = design("demo_race").lower().tasks
    seen: dict[tuple, tuple] = {}
    with hook.recording() as rec:
        recorded = ec._advance_one_task

        def spy(*args):
            succ = recorded(*args)
            seen.setdefault(succ.cursors, (succ.prod_credits, succ.cons_credits, succ.held))
            return succ

        ec._advance_one_task = spy  # the recording restores the original on exit
        res = ec.check_all_interleavings(tasks)
    machine = hook.Machine(tasks, rec, skipped_tile=False, num_tiles=1, opaque_assignment=None)
    state = machine.initial
    for t in hook.path_to(rec, res.race_states[0].cursors):
        state = machine.advance(state, t)
        assert (state.prod_credits, state.cons_credits, state.held) == seen[state.cursors]
    assert state.cursors == res.race_states[0].cursors


def test_an_expansion_tslab_cannot_map_fails_with_a_clear_error(monkeypatch):
    original = ec._expand_task_for_check

    def renamed_tags(task, skipped_tile, opaque_assignment=None):
        return [(res, stage, cid, "H") for res, stage, cid, _tag in original(task, skipped_tile, opaque_assignment)]

    trace = tslab.check(design("demo_deadlock")).trace
    monkeypatch.setattr(ec, "_expand_task_for_check", renamed_tags)
    with pytest.raises(hook.CheckerInternalsError, match=r"task 'LoadTask': the checker's step .* matches no entry"):
        trace.steps  # noqa: B018  (views are built on first use)
