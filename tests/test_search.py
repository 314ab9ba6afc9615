"""The reduced search is TS's checker with fewer interleavings: held to TS's own search on random protocols,
the catalog and mutations of both, and its independence claims held to TS's own transition function."""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import warnings
from pathlib import Path

import pytest
from cutlass.experimental.task_scheduling import exhaustive_checker as ec
from cutlass.experimental.task_scheduling.task_manager import TaskManager
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from random_protocols import build_protocol, protocol_specs

import tslab
from tslab.core import search
from tslab.core import trace as hook
from tslab.core.checker import planned_runs
from tslab.core.trips import plan
from tslab.kernels import design

LIMIT = 200_000


def race_keys(races):
    return {(r.writer_task, r.writer_resource, r.victim_task, r.victim_resource, r.victim_access, r.overlap_desc)
            for r in races}


def outcome(res):
    """What a search found, as sets: deadlock states, race descriptors, early PDL launches, completion."""
    return ({d.cursors for d in res.deadlock_states}, race_keys(res.race_states),
            {(p.launch_task, p.launch_resource) for p in res.pdl_order_states}, res.complete_count > 0)


def runs_of(d):
    lowered = d.lower()
    pdl_done = lowered.blueprint.assume_pdl_wait_completed
    return lowered.tasks, planned_runs(lowered.tasks, assume_pdl_wait_completed=pdl_done)


def assert_agrees_with_ts(tasks, run):
    """The reduced search finds what TS's search finds, and its counterexamples are as short as TS's first."""
    kwargs = run.kwargs()
    ts = ec.check_all_interleavings(tasks, max_states=LIMIT, early_exit=False, **kwargs)
    if ts.hit_state_limit:
        return None
    plain = search.explore(tasks, max_states=LIMIT, reduce=False, stop="end", **kwargs)
    # with the reduction switched off it is TS's search, state for state
    assert (plain.result.states_explored, plain.result.complete_count, len(plain.result.deadlock_states),
            len(plain.result.race_states), len(plain.result.pdl_order_states)) == \
        (ts.states_explored, ts.complete_count, len(ts.deadlock_states), len(ts.race_states),
         len(ts.pdl_order_states))
    if plain.merges:  # held entries depend on the path: TS keyed on its full states is the reference
        ts = ec.check_all_interleavings(tasks, max_states=LIMIT, early_exit=False, cursor_only_visited=False,
                                        **kwargs)
        if ts.hit_state_limit:
            return None
        first = ec.check_all_interleavings(tasks, max_states=LIMIT, early_exit=True, cursor_only_visited=False,
                                           **kwargs)
    else:
        first = ec.check_all_interleavings(tasks, max_states=LIMIT, early_exit=True, **kwargs)
    reduced = search.explore(tasks, max_states=LIMIT, stop="end", **kwargs)
    assert not reduced.result.hit_state_limit
    assert outcome(reduced.result) == outcome(ts)
    assert reduced.result.states_explored <= max(ts.states_explored, 1)
    for mine, theirs in ((reduced.result.race_states, first.race_states),
                         (reduced.result.pdl_order_states, first.pdl_order_states)):
        if mine and theirs and not first.deadlock_states:
            assert sum(mine[0].cursors) == sum(theirs[0].cursors), "a longer counterexample than TS's"
    if reduced.result.deadlock_states and ts.deadlock_states:
        assert min(sum(d.cursors) for d in reduced.result.deadlock_states) == \
            min(sum(d.cursors) for d in ts.deadlock_states)
    return reduced


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(protocol_specs())
def test_reduced_search_finds_what_ts_finds_on_random_protocols(spec):
    tasks, runs = runs_of(build_protocol(spec))
    for run in runs:
        assert_agrees_with_ts(tasks, run)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(protocol_specs(guards=True))
def test_reduced_search_finds_what_ts_finds_on_random_guarded_protocols(spec):
    """Steps under first/last-trip, every(n) and runtime-condition guards: each of TS's runs (one per assignment
    of the conditions) searched both ways finds the same."""
    tasks, runs = runs_of(build_protocol(spec))
    for run in runs:
        assert_agrees_with_ts(tasks, run)


def taskmanager_says(d):
    """What TS's TaskManager itself concludes of ``d`` with its exhaustive check on: (kind, run) of the fault its
    checker raised (run: the opaque assignment it names), ("safe", "") or None when its search hit its limit."""
    low = d.lower()
    bp = low.blueprint
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        try:
            TaskManager(tasks=bp.tasks, resource_dependency_graph=bp.graph, smem_allocator=low.smem_allocator,
                        tmem_allocator=low.tmem_allocator, skip_validation=True, verbose=False,
                        exhaustive_deadlock_race_check=True, assume_pdl_wait_completed=bp.assume_pdl_wait_completed)
        except AssertionError:  # a structure TS asserts against never reaches its checker
            return None
    texts = [str(w.message) for w in caught]
    if any("hit max_states" in t for t in texts):
        return None
    for text in texts:
        found = re.match(r"TS validation \(_exhaustive_aliasing_races\): Exhaustive checker found \d+ "
                         r"(deadlock|aliasing race|PDL launch ordering)[^\n]*?(?: during opaque assignment "
                         r"\d+/\d+ \(([^)]*)\))?(?:, skipped-tile execution)?(?: after| states|:)", text)
        if found:
            kind = {"deadlock": "deadlock", "aliasing race": "race", "PDL launch ordering": "pdl-order"}[found[1]]
            return kind, found[2] or ""
    return "safe", ""


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(protocol_specs(guards=True))
def test_check_gives_taskmanagers_answer_on_random_guarded_protocols(spec):
    """tslab.check (reduced search) against TaskManager's own exhaustive check of the same TS objects: safe when
    TS says safe, else unsafe in the run of the same assignment, where TS's first fault is one the reduced search
    also finds (a run may deadlock and race: each search reports the one it meets first); after a state limit,
    never SAFE."""
    d = build_protocol(spec)
    said = taskmanager_says(d)
    assume(said is not None)
    verdict = tslab.check(d, strategy="reduced")
    assert (verdict.checker.verdict == "safe") == (said[0] == "safe")
    if said[0] != "safe":  # the same run fails; TS's first fault there is one the reduced search finds there
        run = verdict.checker.failed_run
        assert run.context.split(", skipped tile")[0] == said[1]
        tasks = d.lower().tasks
        found = search.explore(tasks, max_states=LIMIT, stop="end", **run.kwargs()).result
        kinds = {"deadlock": found.deadlock_states, "race": found.race_states, "pdl-order": found.pdl_order_states}
        assert kinds[said[0]] and kinds[verdict.checker.verdict]
    cut = tslab.check(d, strategy="reduced", max_states=3)
    assert cut.checker.hit_state_limit or cut.checker.verdict == verdict.checker.verdict
    assert not (cut.checker.hit_state_limit and cut.status == "SAFE")


def test_runs_are_taskmanagers_runs():
    """One run per assignment of the runtime condition keys, as TaskManager calls TS's checker."""
    spec = {"resources": [{"r": 0, "stages": 1, "producer": 0, "consumers": [1], "bytes": 1024}],
            "schedules": [[("buf0", "ProducerAcquire", "Loop", "Always"),
                           ("buf0", "ProducerWork", "Loop", ("when", "c0", False)),
                           ("buf0", "ProducerCommit", "Loop", "Always")],
                          [("buf0", "ConsumerWait", "Loop", "Always"),
                           ("buf0", "ConsumerWork", "Loop", ("when", "c1", True)),
                           ("buf0", "ConsumerRelease", "Loop", ("every", 1, 0))]],
            "alias": None, "group": None, "scratch": None, "persistent": False, "iters": 2}
    d = build_protocol(spec)
    calls = []
    original = ec.check_all_interleavings

    def recorded(tasks, **kwargs):
        calls.append((kwargs["num_tiles"], kwargs.get("skipped_tile", False), kwargs["opaque_assignment"]))
        return original(tasks, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ec, "check_all_interleavings", recorded)
        assert taskmanager_says(d) == ("safe", "")
    _tasks, runs = runs_of(d)
    assert [(r.num_tiles, r.skipped_tile, r.opaque_assignment) for r in runs] == calls
    assert [r.context for r in runs] == ["c0=False, c1=False", "c0=False, c1=True", "c0=True, c1=False",
                                         "c0=True, c1=True"]
    assert tslab.check(d).checker.runs == 4


MUTATIONS = [("tma_copy", {"stages": s, "tiles": t}) for s in (1, 2, 4) for t in (2, 5)] + \
    [("gemm_sm90", {"stages": s, "k_tiles": k}) for s in (2, 3, 4) for k in (2, 6)] + \
    [("gemm_sm90", {"persistent": False, "epilogue": "aliased"}), ("gemm_sm90", {"mma_warpgroups": 1, "tile_n": 128}),
     ("gemm_sm90", {"cluster_m": 2}), ("demo_deadlock", {"stages": 2}), ("demo_deadlock", {}),
     ("demo_race", {"stages": 2}), ("demo_race", {"tiles": 3}), ("demo_overflow", {}),
     ("grid_stride_copy", {"iterations": 8})]


@pytest.mark.parametrize(("name", "params"), MUTATIONS, ids=[f"{n}-{p}" for n, p in MUTATIONS])
def test_reduced_search_agrees_on_the_catalog_and_its_mutations(name, params):
    d = design(name, **params)
    tasks, runs = runs_of(d)
    for run in runs:
        assert_agrees_with_ts(tasks, run)


def test_pipeline_edits_of_the_catalog_agree():
    base = design("gemm_sm90")
    for stages in (1, 2, 5):
        tasks, runs = runs_of(base.with_pipeline("smem_ab", num_stages=stages))
        for run in runs:
            assert_agrees_with_ts(tasks, run)


def test_the_reduction_pays_on_the_catalog():
    """gemm_sm90 has 2,857 interleaved states; its tasks share three credits, so few orders matter."""
    tasks, runs = runs_of(design("gemm_sm90"))
    reduced = search.explore(tasks, max_states=LIMIT, **runs[0].kwargs()).result
    full = ec.check_all_interleavings(tasks, max_states=LIMIT, **runs[0].kwargs())
    assert reduced.is_safe and full.is_safe
    assert reduced.states_explored * 10 <= full.states_explored


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(protocol_specs(), st.randoms(use_true_random=False))
def test_steps_the_reduction_calls_independent_commute_under_ts(spec, rng):
    """At states along random walks, every pair of enabled steps that neither competes for a credit nor
    changes the same held entries reaches the same state in either order, and neither disables the other."""
    assert_independent_steps_commute(spec, rng, run_index=0)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(protocol_specs(guards=True), st.randoms(use_true_random=False), st.integers(0, 3))
def test_independent_steps_commute_in_every_run_of_guarded_protocols(spec, rng, run_index):
    assert_independent_steps_commute(spec, rng, run_index)


def assert_independent_steps_commute(spec, rng, run_index):
    tasks, runs = runs_of(build_protocol(spec))
    run = runs[run_index % len(runs)]
    rec = hook.checker_context(tasks, **run.kwargs())
    model = search._Model(hook.Machine(tasks, rec, skipped_tile=run.skipped_tile, num_tiles=run.num_tiles,
                                       opaque_assignment=run.opaque_assignment))
    for _walk in range(4):
        state = rec.initial
        for _step in range(60):
            enabled = model.enabled(state)
            launches = model.early_launches(state, enabled)
            movable = [t for t in model.tasks_of(enabled[0]) if t not in launches]
            if not movable:
                break
            for a, b in itertools.combinations(movable, 2):
                ca, cb = state.cursors[a], state.cursors[b]
                if model.competes_of[a][ca] & model.competes_of[b][cb]:
                    continue
                ab = model.advance(model.advance(state, a), b)
                ba = model.advance(model.advance(state, b), a)
                assert model.enabled(model.advance(state, a))[0] >> b & 1
                assert model.enabled(model.advance(state, b))[0] >> a & 1
                assert (ab.cursors, ab.prod_credits, ab.cons_credits, ab.has_executed_pdl_wait) == \
                    (ba.cursors, ba.prod_credits, ba.cons_credits, ba.has_executed_pdl_wait)
                assert hook.held_key(ab.held) == hook.held_key(ba.held)
            state = model.advance(state, rng.choice(movable))


def test_never_safe_after_the_state_limit():
    d = design("gemm_sm90", stages=2)
    verdict = tslab.check(d, max_states=20)
    assert verdict.status == "NOT PROVEN" and verdict.checker.hit_state_limit
    assert verdict.checker.prover == "reduced"
    tasks, runs = runs_of(d)
    assert search.explore(tasks, max_states=20, **runs[0].kwargs()).result.hit_state_limit


def test_strategy_ts_is_ts_exactly():
    d = design("gemm_sm90")
    tasks, runs = runs_of(d)
    ts = ec.check_all_interleavings(tasks, **runs[0].kwargs(1_000_000))
    verdict = tslab.check(d, strategy="ts")
    assert verdict.checker.prover == "ts" and verdict.checker.states_explored == ts.states_explored
    assert "Result: SAFE" in verdict.report


def test_auto_reports_both_searches_while_ts_is_small():
    c = tslab.check(design("gemm_sm90")).checker
    assert c.prover == "reduced" and c.strategy == "auto"
    assert c.ts_states == tslab.check(design("gemm_sm90"), strategy="ts").checker.states_explored
    assert c.states_explored < c.ts_states
    assert "reduced search; TS's BFS: 2,857" in c.states_text()


def test_a_bad_strategy_is_refused():
    with pytest.raises(tslab.DesignError, match=r"strategy='bfs' is not a checker strategy"):
        tslab.check(design("tma_copy"), strategy="bfs")


def test_footprints_check_themselves_against_ts(monkeypatch):
    tasks, runs = runs_of(design("gemm_sm90"))
    rec = hook.checker_context(tasks, **runs[0].kwargs())
    fps = hook.footprints(rec)
    takes = [fp for row in fps.steps for fp in row if fp.takes_full or fp.takes_empty]
    gives = [fp for row in fps.steps for fp in row if fp.gives_full or fp.gives_empty]
    assert takes and gives and all(fp.blocking for fp in takes)

    original = ec._apply_credit_transition

    def swapped(step, prod, cons, totals):  # a TS whose commit fills the empty side
        new_prod, new_cons, totals = original(step, prod, cons, totals)
        return (new_cons, new_prod, totals) if step.is_producer_commit else (new_prod, new_cons, totals)

    monkeypatch.setattr(ec, "_apply_credit_transition", swapped)
    with pytest.raises(hook.CheckerInternalsError, match=r"the credit transition differs from the footprint"):
        hook.footprints(rec)


def test_a_counterexample_that_does_not_replay_is_an_error_not_a_verdict(monkeypatch):
    """Every fault is walked again with TS's functions before it is reported; a walk that does not reach it
    (here: a replay that loses the last step) stops the check instead of reporting the fault."""
    tasks, runs = runs_of(design("demo_race"))
    assert search.explore(tasks, max_states=LIMIT, **runs[0].kwargs()).result.race_states
    walk = search._walk
    monkeypatch.setattr(search, "_walk", lambda model, path: walk(model, path[:-1]))
    with pytest.raises(search.SearchError, match=r"does not replay under TS's own step functions"):
        search.explore(tasks, max_states=LIMIT, **runs[0].kwargs())


ATTENTION = Path(__file__).resolve().parents[1] / "notebooks" / "kernels" / "attention_schedule.py"
ATTENTION_TRIPS = {"LoadTask": "n", "SoftmaxTask": "n", "MmaTask": "n-1", "CorrectionTask": "n-1"}


@pytest.fixture(scope="module")
def attention():
    return tslab.capture_file(ATTENTION, "attention", tslab.fake.tensor("f16", (1024, 128)), 8)


@pytest.mark.parametrize(("kv_stages", "store_via", "n"), [(1, "smem_o", 2), (2, "smem_o", 1), (2, "smem_o", 2),
                                                           (2, "gmem_o", 1), (2, "gmem_o", 2), (3, "gmem_o", 1)])
def test_reduced_search_agrees_on_mutations_of_a_captured_kernel_of_our_own(attention, kv_stages, store_via, n):
    """The attention schedule's stages, its store and its real trip counts, each re-traced by the kernel."""
    d = attention.with_knobs(kv_stages=kv_stages, store_via=store_via)
    tasks, runs = runs_of(d)
    plan(ATTENTION_TRIPS, n, [t.name for t in tasks]).apply(tasks, n)
    for run in runs:
        assert assert_agrees_with_ts(tasks, run) is not None, "TS's search did not finish: pick a smaller n"
