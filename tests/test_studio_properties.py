"""Random Studio sessions and mutated design files: only a DesignError or a verdict ever comes out.

Studio: 200 edits (20 sessions of 10 actions) of every shown pipeline field, with values of every type, schedule
moves and deletions, and undo and redo between them. After every action the Studio shows a fresh check of its own
current design, and undo and redo never raise. Design files: 600 mutations of the catalog's saved designs (keys
dropped or added, values of other types, nested values replaced); each loads as a design whose check is a verdict,
or is refused with a DesignError that says where, what and how to fix it.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("ipywidgets")

import tslab
from tslab import DesignError, Verdict
from tslab.core.design import Design
from tslab.core.steps import SECTIONS
from tslab.kernels import NAMES, design
from tslab.widgets import Studio
from tslab.widgets.pipeline_form import SHOWN_FIELDS

#: Values of every type a hand or a script may put in a field.
ANY_VALUE = st.one_of(
    st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.text(max_size=8), st.sampled_from(["2", "2.5", "x", "True", "1, 1, 2, 2", "All", "CtaLeader", ""]),
    st.lists(st.integers(-2, 8), max_size=5), st.dictionaries(st.sampled_from(["agent", "size", "x"]),
                                                              st.one_of(st.integers(-2, 512), st.text(max_size=6)),
                                                              max_size=3),
)
STUDIO_KERNELS = ("tma_copy", "gemm_sm90", "demo_deadlock", "demo_guards")

action = st.one_of(
    st.tuples(st.just("set"), st.integers(0, 5), st.sampled_from([*SHOWN_FIELDS, "bogus"]), ANY_VALUE),
    st.tuples(st.just("move"), st.integers(0, 3), st.integers(-1, 12), st.sampled_from([*SECTIONS, "Nowhere"]),
              st.integers(-1, 12)),
    st.tuples(st.just("delete"), st.integers(0, 3), st.integers(-1, 12)),
    st.just(("undo",)),
    st.just(("redo",)),
)


def _act(studio: Studio, a: tuple) -> None:
    """One action; an edit may be refused with a DesignError (or the editor's own refusal), nothing else."""
    resources = list(studio.design.pipelines()) or ["none"]
    tasks = studio.design.tasks() or ["none"]
    if a[0] == "undo":
        studio.undo()
    elif a[0] == "redo":
        studio.redo()
    elif a[0] == "set":
        try:
            studio.pipeline_editor.set(resources[a[1] % len(resources)], a[2], a[3])
        except DesignError as exc:
            assert exc.where and exc.message and exc.hint
    else:
        task = tasks[a[1] % len(tasks)]
        try:
            if a[0] == "move":
                studio.schedule_editor.move(task, a[2], a[3], a[4])
            else:
                studio.schedule_editor.delete(task, a[2])
        except DesignError as exc:
            assert exc.where and exc.message and exc.hint


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(STUDIO_KERNELS), st.lists(action, min_size=10, max_size=10))
def test_random_studio_sessions_always_show_a_fresh_check_of_their_design(kernel, actions):
    studio = Studio(design(kernel), debounce=0)
    try:
        for a in actions:
            _act(studio, a)
            assert studio.wait(60)
            shown = studio.verdict
            assert isinstance(shown, Verdict)
            assert shown.design is not None and shown.design.to_dict() == studio.design.to_dict(), a
            fresh = tslab.check(studio.design)
            assert (shown.status, shown.smem_used) == (fresh.status, fresh.smem_used), (a, [str(e) for e in
                                                                                        shown.errors])
            assert studio.history[studio.history.current].to_dict() == studio.design.to_dict()
    finally:
        studio.close()


def _mutations(data: dict) -> st.SearchStrategy:
    """A saved design with one to three of its keys, at any depth, dropped, replaced or joined by a stranger."""

    def paths(node: object, prefix: tuple = ()) -> list[tuple]:
        found = [prefix] if prefix else []
        if isinstance(node, dict):
            for key, value in node.items():
                found += paths(value, (*prefix, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                found += paths(value, (*prefix, i))
        return found

    every = paths(data)
    one = st.tuples(st.sampled_from(every), st.sampled_from(["drop", "replace", "add"]), ANY_VALUE)
    return st.lists(one, min_size=1, max_size=3)


def _mutate(data: dict, changes: list) -> dict:
    out = copy.deepcopy(data)
    for path, how, value in changes:
        parent: object = out
        for key in path[:-1]:
            if (isinstance(parent, dict) and key in parent) or (isinstance(parent, list) and 0 <= key < len(parent)):
                parent = parent[key]
            else:
                break
        else:
            last = path[-1]
            if isinstance(parent, dict):
                if how == "drop":
                    parent.pop(last, None)
                elif how == "replace":
                    parent[last] = value
                else:
                    parent[f"{last}_extra"] = value
            elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
                if how == "drop":
                    del parent[last]
                elif how == "replace":
                    parent[last] = value
                else:
                    parent.append(value)
    return out


SAVED = {name: json.loads(design(name).to_json()) for name in NAMES}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(sorted(SAVED)).flatmap(lambda name: st.tuples(st.just(name), _mutations(SAVED[name]))))
def test_mutated_design_files_load_as_designs_or_are_refused_by_name(case):
    name, changes = case
    text = json.dumps(_mutate(SAVED[name], changes))
    try:
        loaded = Design.from_json(text)
    except DesignError as exc:
        assert exc.where and exc.message and exc.hint
        return
    verdict = tslab.check(loaded, max_states=20_000)
    assert isinstance(verdict, Verdict)
    assert verdict.status in {"SAFE", "DEADLOCK", "RACE", "PDL-ORDER", "CAPACITY", "INVALID", "NOT PROVEN",
                              "BLOCKED (ASSUMED)"}


def test_a_list_typed_into_a_whole_number_field_is_refused_and_undo_still_shows_the_design():
    """Hypothesis' case: ``num_bytes=[0]`` passed through to TS (which took it), so the history held a design the
    editor could not show, and undoing back to it raised."""
    studio = Studio(design("tma_copy"), debounce=0)
    try:
        assert studio.pipeline_editor.set("smem_ring", "num_bytes", [0]) is False
        refused = studio.pipeline_editor.errors[("smem_ring", "num_bytes")]
        assert "num_bytes=[0] is not a whole number" in refused.message
        assert len(studio.history) == 1
        studio.pipeline_editor.set("smem_ring", "num_stages", 2)
        studio.undo()
        assert studio.wait(60) and studio.verdict.status == "SAFE"
    finally:
        studio.close()
