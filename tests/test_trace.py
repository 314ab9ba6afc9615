"""Traces rebuilt from the real checker: every step consistent, ending where the checker said."""

from __future__ import annotations

import json
import threading

import pytest
from cutlass.experimental.task_scheduling import exhaustive_checker as ec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_designs import build, specs

import tslab
from tslab import DesignError, Trace
from tslab.core.trace_model import MIME
from tslab.kernels import design


def assert_consistent(trace: Trace, cursors: tuple[int, ...]) -> None:
    """Each move advances exactly its task by one op the previous state called runnable; credits stay >= 0."""
    assert trace.steps[0].task is None and trace.steps[0].op is None
    for n, (before, after) in enumerate(zip(trace.steps, trace.steps[1:], strict=False), 1):
        assert after.index == n
        t = trace.tasks.index(after.task)
        want = list(before.state.cursors)
        want[t] += 1
        assert after.state.cursors == tuple(want), f"step {n}: {after.task} did not advance by one"
        assert before.state.next_ops[after.task].status == "runnable", f"step {n}: moved a blocked task"
        assert before.state.next_ops[after.task].op == after.op
        assert after.entry is not None and after.entry.task == after.task
    for s in trace.steps:
        assert all(v >= 0 for v in (*s.state.prod_credits.values(), *s.state.cons_credits.values())), s.index
    assert trace.final.cursors == tuple(cursors)


def reported_cursors(verdict: tslab.Verdict) -> tuple[int, ...]:
    c = verdict.checker
    record = (c.deadlocks or c.races or c.pdl_order)[0]
    return tuple(record["cursors"])


@pytest.mark.parametrize("name", ["demo_deadlock", "demo_race"])
def test_unsafe_verdict_carries_a_consistent_trace(name):
    verdict = tslab.check(design(name))
    trace = verdict.trace
    assert isinstance(trace, Trace)
    assert trace.fault.kind == verdict.checker.verdict
    assert_consistent(trace, reported_cursors(verdict))


def test_deadlock_fault_names_blocked_tasks_as_the_checker_did():
    verdict = tslab.check(design("demo_deadlock"))
    fault = verdict.trace.fault
    assert [b["task"] for b in fault.blocked] == [b["task"] for b in verdict.checker.deadlocks[0]["blocked"]]
    assert fault.message == "; ".join(verdict.checker.deadlocks[0]["lines"][1:]).replace("  ", "")
    assert all(n.status != "runnable" for n in verdict.trace.final.next_ops.values())


def test_race_fault_names_writer_victim_and_overlap():
    verdict = tslab.check(design("demo_race"))
    race, fault = verdict.checker.races[0], verdict.trace.fault
    assert fault.writer == {"task": race["writer_task"], "resource": race["writer_resource"]}
    assert fault.victim["task"] == race["victim_task"] and fault.overlap == race["overlap"]


def test_safe_verdict_has_no_trace_and_complete_trace_reaches_the_end():
    d = design("tma_copy", tiles=2)
    assert tslab.check(d).trace is None
    trace = tslab.trace(d)
    assert trace.fault.kind == "complete"
    assert all(n.status == "done" for n in trace.final.next_ops.values())
    assert_consistent(trace, trace.fault.cursors)


def test_entries_map_back_to_the_users_schedule():
    d = design("tma_copy", tiles=2)
    trace, schedule = tslab.trace(d), tslab.check(d).schedule
    for s in trace.steps[1:]:
        row = schedule[(schedule.task == s.task) & (schedule.section == s.entry.section)
                       & (schedule["index"] == s.entry.index)]
        assert len(row) == 1, s
        assert (row.resource.item(), row.stage.item()) == (s.op.resource, s.op.stage)
    parts = [s.entry.part for s in trace.steps if s.entry and s.op.resource == "gmem_out"]
    assert parts == ["1 of 2", "2 of 2"] * 2  # non-pipelined producer work is doubled by the checker


def test_asking_for_a_fault_the_design_does_not_have_is_a_design_error():
    with pytest.raises(DesignError, match=r"design 'tma_copy'.*finds no deadlock"):
        tslab.trace(design("tma_copy"), to="deadlock")
    with pytest.raises(DesignError, match="no interleaving runs to completion"):
        tslab.trace(design("demo_deadlock"), to="complete")
    with pytest.raises(DesignError, match="to='stall' is not a trace ending"):
        tslab.trace(design("tma_copy"), to="stall")


def test_trace_to_a_named_ending():
    assert tslab.trace(design("demo_race"), to="race").fault.kind == "race"
    fixed = design("demo_deadlock").with_pipeline("smem_ring", num_stages=2)
    assert tslab.trace(fixed).fault.kind == "complete"


def test_json_round_trip_and_views():
    trace = tslab.check(design("demo_race")).trace
    again = Trace.from_json(trace.to_json())
    assert again == trace
    frame = trace.to_dataframe()
    assert list(frame.step) == list(range(len(trace)))
    assert "full:stage_a[0]" in frame.columns and "empty:stage_b[0]" in frame.columns
    assert str(frame["index"].dtype) == str(frame.iteration.dtype) == "Int64"  # whole numbers, <NA> not NaN
    assert frame.iteration.dropna().tolist() == [int(i) for i in frame.iteration.dropna()]
    assert frame.task.isna().tolist()[0] and "nan" not in frame.head(1).to_string().lower()
    text = trace.text()
    assert text.splitlines()[0] == "demo_race: RACE after 14 steps"
    assert "   14. LoadTask  ProducerAcquire(stage_a)     loop[1] iter 1" in text
    assert "   13. MidTask   ConsumerRelease(stage_a)     loop[5] iter 0                empty stage_a[0] 0->1" in text
    assert text.endswith("=> RACE at cursors (8, 6, 0): MidTask writes stage_b vs LoadTask prod stage_a "
                         "(smem[0:16384])")
    deadlock = tslab.check(design("demo_deadlock")).trace.text().splitlines()
    assert deadlock[-3:] == [
        "  => DEADLOCK at cursors (8, 2):",
        "       LoadTask blocked on smem_ring.ProducerAcquire waiting for empty-slot credit; "
        "no matching credit is available for this resource",
        "       StoreTask blocked on smem_ring.ConsumerWait waiting for producer commit credit; "
        "no matching credit is available for this resource"]
    bundle = trace._repr_mimebundle_()
    assert set(bundle) == {MIME, "text/html", "text/plain"}
    json.dumps(bundle[MIME])
    with pytest.raises(DesignError, match="trace JSON"):
        Trace.from_json("{}")


def test_checker_global_is_restored_even_when_the_checker_raises(monkeypatch):
    original = ec._advance_one_task
    from tslab.core import trace as hook

    with pytest.raises(RuntimeError), hook.recording():
        raise RuntimeError("boom")
    assert ec._advance_one_task is original and ec._compute_enabled_tasks.__name__ == "_compute_enabled_tasks"


def test_checks_on_threads_do_not_mix_recordings():
    names = ["demo_deadlock", "demo_race", "tma_copy"] * 3
    out: dict[int, tslab.Verdict] = {}

    def work(i: int) -> None:
        out[i] = tslab.check(design(names[i]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(names))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, name in enumerate(names):
        v = out[i]
        if v.trace is not None:
            assert v.trace.design == name
            assert_consistent(v.trace, reported_cursors(v))
        else:
            assert name == "tma_copy"


def _direct_outcome(d: tslab.Design, *, early_exit: bool = True) -> str:
    """TS's own outcome: its first fault (early exit), or by kind over every interleaving (deadlock first)."""
    try:
        res = ec.check_all_interleavings(d.lower().tasks, early_exit=early_exit)
    except Exception:
        return "not-run"
    return "deadlock" if res.deadlock_states else "race" if res.race_states else \
        "pdl-order" if res.pdl_order_states else "safe"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs(), st.sampled_from(["auto", "ts"]))
def test_verdict_matches_the_checker_and_traces_end_in_the_reported_state(spec, strategy):
    d = build(spec)
    verdict = tslab.check(d, strategy=strategy)
    assert verdict.checker.verdict == _direct_outcome(d, early_exit=strategy == "ts")
    if verdict.checker.verdict in ("deadlock", "race"):
        assert verdict.trace is not None
        assert verdict.trace.fault.kind == verdict.checker.verdict
        assert_consistent(verdict.trace, reported_cursors(verdict))
    else:
        assert verdict.trace is None


def _guarded_design() -> tslab.Design:
    """Two tasks over a 3-trip loop with FirstIter/LastIter steps (legacy schedule tuples)."""
    from cutlass.experimental.task_scheduling.enums import LoopGuard, ScheduleStage, ScheduleStageType
    from cutlass.experimental.task_scheduling.schedule_builder import ScheduleResult
    from cutlass.experimental.task_scheduling.task import Task

    from tslab.kernels._teaching import Buffer, Sink, async_pipeline

    buf = Buffer(name="buf", buffer="b", stage_bytes=1024, pipeline_config=async_pipeline(2))
    out0, out1 = Sink(name="out0"), Sink(name="out1")
    loop, stage = ScheduleStageType.Loop, ScheduleStage

    def sched(entries):
        return ScheduleResult(schedule_list=entries, loop_start=0, loop_end=3, loop_step=1)

    producer = sched([(out0, stage.ProducerWork, loop, LoopGuard.FirstIter, "store"),
                      (buf, stage.ProducerAcquire, loop, LoopGuard.Always, None),
                      (buf, stage.ProducerWork, loop, LoopGuard.Always, "write"),
                      (buf, stage.ProducerCommit, loop, LoopGuard.Always, None)])
    consumer = sched([(buf, stage.ConsumerWait, loop, LoopGuard.Always, None),
                      (buf, stage.ConsumerWork, loop, LoopGuard.Always, "read"),
                      (buf, stage.ConsumerRelease, loop, LoopGuard.Always, None),
                      (out1, stage.ProducerWork, loop, LoopGuard.LastIter, "store")])
    tasks = [Task(name="P", src_resources=[], dst_resources=[buf, out0], warp_idx=0, num_warps=1,
                  schedule=producer),
             Task(name="C", src_resources=[buf], dst_resources=[out1], warp_idx=1, num_warps=1,
                  schedule=consumer)]
    return tslab.Design.from_tasks(tasks, {buf: [], out0: [], out1: [buf]}, smem_allocations=[buf],
                                   name="guarded")


def test_guarded_steps_and_two_tiles_map_back_to_their_entries():
    from tslab.core import replay
    from tslab.core import trace as hook
    from tslab.core.checker import CheckerRun

    d = _guarded_design()
    schedule = tslab.check(d).schedule
    tasks = d.lower().tasks
    run = CheckerRun(2, False, None, "2 tiles")
    res, rec = replay._searched(tasks, run, 1_000_000, "ts", early_exit=False)
    assert res.is_safe
    trace = replay.build(tasks, run, rec, replay.complete_fault(hook.complete_cursors(rec)), "guarded")
    assert_consistent(trace, hook.complete_cursors(rec))
    for s in trace.steps[1:]:
        row = schedule[(schedule.task == s.task) & (schedule["index"] == s.entry.index)]
        assert (row.resource.item(), row.stage.item()) == (s.op.resource, s.op.stage), s
    stores = [(s.task, s.entry.iteration, s.entry.tile) for s in trace.steps
              if s.op and s.op.label == "store" and s.entry.part == "1 of 2"]
    assert sorted(stores) == [("C", 2, 0), ("C", 2, 1), ("P", 0, 0), ("P", 0, 1)]


def test_pdl_order_fault_is_traced_and_reported_by_the_explorer():
    from cutlass.experimental.task_scheduling.enums import LoopGuard, ScheduleStage, ScheduleStageType
    from cutlass.experimental.task_scheduling.resources import PdlLaunchBarrier, PdlWaitBarrier
    from cutlass.experimental.task_scheduling.schedule_builder import ScheduleResult
    from cutlass.experimental.task_scheduling.task import Task

    from tslab.kernels._teaching import Sink

    launch, wait = PdlLaunchBarrier(name="pdl_launch"), PdlWaitBarrier(name="pdl_wait")
    out0, out1 = Sink(name="out0"), Sink(name="out1")
    head, loop, always = ScheduleStageType.Head, ScheduleStageType.Loop, LoopGuard.Always

    def sched(entries):
        return ScheduleResult(schedule_list=entries, loop_start=0, loop_end=1, loop_step=1)

    tasks = [Task(name="Early", src_resources=[], dst_resources=[launch, out0], warp_idx=0, num_warps=1,
                  schedule=sched([(launch, ScheduleStage.ProducerWork, head, always, "launch_griddep"),
                                  (out0, ScheduleStage.ProducerWork, loop, always, "store")])),
             Task(name="Waiter", src_resources=[wait], dst_resources=[out1], warp_idx=1, num_warps=1,
                  schedule=sched([(wait, ScheduleStage.ConsumerWork, head, always, "wait_griddep"),
                                  (out1, ScheduleStage.ProducerWork, loop, always, "store")]))]
    d = tslab.Design.from_tasks(tasks, {launch: [], wait: [], out0: [], out1: []}, name="pdl")
    verdict = tslab.check(d)
    assert verdict.trace.fault.kind == "pdl-order" and len(verdict.trace) == 1
    assert verdict.trace.fault.message.startswith("Early pdl_launch: launch_griddep can execute before any")
    ex = tslab.Explorer(d)
    assert ex.status.kind == "pdl-order"
    ex.step("Waiter")
    assert ex.state.pdl_wait and ex.status.kind == "running"


def test_a_state_limit_is_named_when_nothing_is_found():
    with pytest.raises(DesignError, match=r"neither a fault nor a run to completion within max_states=5\n"
                                          r"  hint: raise max_states"):
        tslab.trace(design("tma_copy"), max_states=5)
