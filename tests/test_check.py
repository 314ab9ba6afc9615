import time

import pandas as pd
import pytest
from cutlass.experimental.task_scheduling.memory import SmemAllocation, SmemAllocator

import tslab
from tslab.core.check import MAX_CHECK_TRIPS
from tslab.kernels import (
    NAMES,
    attention_tmem,
    catalog,
    demo_deadlock,
    demo_overflow,
    demo_race,
    design,
    gemm_sm90,
    tma_copy,
)


@pytest.mark.parametrize("name", NAMES)
def test_every_catalog_design_checks_in_under_a_second(name):
    started = time.perf_counter()
    verdict = tslab.check(design(name))
    assert time.perf_counter() - started < 1.0
    assert verdict.ok == (not name.startswith("demo_"))


def test_catalog_lists_every_design_with_summary_and_params():
    entries = catalog()
    assert [e.name for e in entries] == list(NAMES)
    assert all(e.summary and e.params for e in entries)


def test_deadlock_names_blocked_tasks_and_resources():
    v = tslab.check(demo_deadlock.design())
    assert v.status == "DEADLOCK" and not v.ok
    [issue] = [e for e in v.errors if e.kind == "deadlock"]
    assert "LoadTask blocked on smem_ring.ProducerAcquire" in issue.message
    assert "StoreTask blocked on smem_ring.ConsumerWait" in issue.message
    assert v.checker.deadlocks[0]["cursors"] == [8, 2]


def test_race_names_both_accesses_and_the_overlap():
    v = tslab.check(demo_race.design())
    assert v.status == "RACE"
    race = v.checker.races[0]
    assert (race["writer_task"], race["writer_resource"]) == ("MidTask", "stage_b")
    assert (race["victim_task"], race["victim_resource"]) == ("LoadTask", "stage_a")
    assert race["overlap"] == "smem[0:16384]"


def test_overflow_reports_the_capacity_figures():
    v = tslab.check(demo_overflow.design())
    assert v.status == "CAPACITY"
    assert v.smem_used == 262272 > v.smem_capacity == 232448
    assert "262272 B" in v.errors[0].message and "232448 B" in v.errors[0].message


def test_state_limit_is_not_proven_not_safe():
    v = tslab.check(tma_copy.design(), max_states=20)
    assert v.checker.hit_state_limit
    assert v.status == "NOT PROVEN" and not v.ok


def test_smem_capacity_can_be_raised_for_another_device():
    assert tslab.check(demo_overflow.design(), smem_capacity=300_000).ok


def test_layout_equals_what_the_cutlass_allocator_computes():
    v = tslab.check(gemm_sm90.design(stages=3, tile_n=64, persistent=False, epilogue="aliased"))
    smem = v.layout[v.layout.space == "smem"].set_index("name")
    ref = SmemAllocator()
    allocs = {r.Index: SmemAllocation(r.Index, size_bytes=int(r.size), alignment=int(r.alignment))
              for r in smem.itertuples()}
    for a in allocs.values():
        ref.add(a)
    ref.add_alias_group([[allocs["a_buf"], allocs["b_buf"]], [allocs["epi_buf"]]])
    ref.compute_layout()
    assert {n: a.offset for n, a in allocs.items()} == smem["offset"].to_dict()
    assert ref.total == v.smem_total
    assert v.alias_savings == int(smem["size"].sum()) - ref.total


def test_layout_and_schedule_tables_have_the_documented_columns():
    v = tslab.check(gemm_sm90.design())
    assert list(v.layout.columns) == ["name", "space", "offset", "size", "end", "alignment", "alias_group", "phase"]
    assert set(v.layout.space) == {"smem", "barrier"}
    assert (v.layout["end"] == v.layout["offset"] + v.layout["size"]).all()
    assert list(v.schedule.columns)[:6] == ["task", "section", "index", "resource", "stage", "label"]
    mma = v.schedule[v.schedule.task == "MmaTask"]
    assert list(mma.section.unique()) == ["head", "loop", "tail"]


def test_report_holds_what_ts_printed():
    v = tslab.check(tma_copy.design())
    assert "SMEM Usage Report" in v.report
    assert "Result: SAFE" in v.report


def test_verdict_mimebundle_has_text_and_html():
    bundle = tslab.check(demo_race.design())._repr_mimebundle_()
    assert "RACE" in bundle["text/plain"]
    assert "RACE" in bundle["text/html"] and "<" in bundle["text/html"]


def test_summary_is_plain_data():
    import json

    s = tslab.check(demo_deadlock.design()).summary()
    assert json.loads(json.dumps(s))["status"] == "DEADLOCK"


def test_check_rejects_a_bad_state_bound():
    with pytest.raises(tslab.DesignError, match="max_states"):
        tslab.check(tma_copy.design(), max_states=0)


def test_layout_is_a_dataframe_even_for_an_invalid_design(monkeypatch):
    d = tma_copy.design()
    monkeypatch.setattr(type(d), "lower", lambda self: (_ for _ in ()).throw(AssertionError("boom")))
    v = tslab.check(d)
    assert isinstance(v.layout, pd.DataFrame) and v.status == "INVALID"
    assert v.errors[0].kind == "input"


@pytest.mark.parametrize("make", [lambda: attention_tmem.design(kv_tiles=690_864),
                                  lambda: gemm_sm90.design(k_tiles=MAX_CHECK_TRIPS + 2)],
                         ids=["attention_tmem", "gemm_sm90"])
def test_a_loop_of_more_trips_than_a_check_steps_through_is_refused_at_once(make):
    """Hypothesis' case: a saved attention_tmem design with ``kv_tiles`` 690,864 held TS's checker for hours (it
    unrolls every trip). Over the bound the check names the task and the fix at once, and never says SAFE."""
    started = time.perf_counter()
    verdict = tslab.check(make())
    assert time.perf_counter() - started < 30
    assert verdict.status == "INVALID" and verdict.errors[0].kind == "input"
    assert "a check steps through" in verdict.errors[0].message and "fewer trips" in verdict.errors[0].hint
