"""Loop guards beyond first/last trip (``every(n)``, ``when_true``/``when_false`` on a runtime value): read from
TS's own guard objects into the plain form, and built back into them by schedule edits."""

from __future__ import annotations

import json

import jsonschema
import pytest
from cutlass.experimental.task_scheduling.enums import Every, LoopGuard, OpaqueCondition
from cutlass.experimental.task_scheduling.resources import MemoryResource
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, when_false, when_true
from cutlass.experimental.task_scheduling.task import Task
from referencing import Registry, Resource

import tslab
from tslab import Design
from tslab.core import guards, mime
from tslab.core.checker import planned_runs
from tslab.core.trace_model import Trace
from tslab.kernels._teaching import Buffer, Sink, Source, async_pipeline


def guarded(stages: int = 2, *, key: str | None = None, both: bool = False) -> Design:
    """A load task filling a ring each trip; a store task that waits each trip, stores the item only when it is
    true (``when_true``; on ``key`` when given, and with ``both`` the load task also skips a store when it is
    false) and releases two stages on every second trip (``every(2, start=1)``)."""
    src, ring = Source(name="gmem_in"), Buffer(name="ring", buffer="ring_buf", stage_bytes=1024,
                                                pipeline_config=async_pipeline(stages))
    out, log = Sink(name="gmem_out"), Sink(name="log")

    @schedule
    def load(src: MemoryResource, ring: MemoryResource, log: MemoryResource) -> None:
        with domain_loop(0, 4, 1):
            item = src.load()
            if both:
                with when_false(item, key=key):
                    log.store(item=item)
            ring.acquire()
            ring.write(item=item)
            ring.commit()

    @schedule
    def store(ring: MemoryResource, out: MemoryResource) -> None:
        with domain_loop(0, 4, 1) as loop:
            ring.wait()
            item = ring.read()
            with when_true(item, key=key):
                out.store(item=item)
            with loop.every(2, start=1):
                ring.release()
                ring.release()

    tasks = [Task(name="LoadTask", src_resources=[src], dst_resources=[ring, log] if both else [ring], warp_idx=0,
                  num_warps=1, schedule=load(src, ring, log)),
             Task(name="StoreTask", src_resources=[ring], dst_resources=[out], warp_idx=1, num_warps=1,
                  schedule=store(ring, out))]
    graph = {ring: [src], out: [ring], **({log: [src]} if both else {})}
    return Design.from_tasks(tasks, graph, smem_allocations=[ring], name="guarded")


def schema(kind: str) -> jsonschema.Draft202012Validator:
    resources = [(f"https://tslab/schemas/{k}.v1.json", Resource.from_contents(mime.schema(k))) for k in mime.KINDS]
    return jsonschema.Draft202012Validator(mime.schema(kind), registry=Registry().with_resources(resources))


STORE = [("ring", "ConsumerWait", "Loop", None), ("ring", "ConsumerWork", "Loop", "read"),
         ("gmem_out", "ProducerWork", "Loop", "store", "when_true(ring.read.item)"),
         ("ring", "ConsumerRelease", "Loop", None, "every(2, start=1)"),
         ("ring", "ConsumerRelease", "Loop", None, "every(2, start=1)")]


def loop_guards(design: Design, task: str) -> list:
    return [entry[3] for entry in design.lower().blueprint.task(task).loop_schedule_list]


def test_check_and_tasks_work_with_every_and_when_true():
    d = guarded()
    assert d.tasks() == ["LoadTask", "StoreTask"]
    verdict = tslab.check(d)
    assert verdict.status == "SAFE"
    store = verdict.schedule[verdict.schedule["task"] == "StoreTask"]
    assert list(store["guard"]) == ["Always", "Always", "when_true(ring.read.item)", "every(2, start=1)",
                                    "every(2, start=1)"]


def test_the_schedule_reads_guards_in_plain_form():
    assert guarded().schedule("StoreTask") == STORE


def test_a_schedule_edit_builds_the_same_ts_guards():
    d = guarded()
    edited = d.with_schedule("StoreTask", d.schedule("StoreTask"))
    assert edited.schedule("StoreTask") == STORE
    before, after = loop_guards(d, "StoreTask"), loop_guards(edited, "StoreTask")
    assert after[3:] == [Every(period=2, start=1)] * 2 and before[3:] == after[3:]
    assert isinstance(after[2], OpaqueCondition) and not after[2].negated
    assert (after[2].method_label, after[2].result_name, after[2].resource.name) == ("read", "item", "ring")
    assert tslab.check(edited).status == "SAFE"


def test_guards_are_edited_in_plain_form():
    d = guarded()
    steps = [*STORE[:2], (*STORE[2][:4], "when_false(ring.read.item)"), (*STORE[3][:4], "Every(period=3, start=0)"),
             STORE[4][:4]]
    edited = d.with_schedule("StoreTask", steps)
    assert [s[4] if len(s) > 4 else "Always" for s in edited.schedule("StoreTask")] == \
        ["Always", "Always", "when_false(ring.read.item)", "every(3)", "Always"]
    found = loop_guards(edited, "StoreTask")
    assert found[2].negated and found[3] == Every(period=3) and found[4] == LoopGuard.Always


def test_an_explicit_key_names_one_condition_across_tasks():
    d = guarded(key="flag", both=True)
    assert d.schedule("LoadTask")[1] == ("log", "ProducerWork", "Loop", "store", "when_false(flag)")
    assert d.schedule("StoreTask")[2][4] == "when_true(flag)"
    assert tslab.check(d).checker.runs == 2  # TS runs the checker once per value of the one key


@pytest.mark.parametrize(("guard", "message", "hint"), [
    ("every(0)", r"every\(0, start=0\): Every period must be positive, got 0", "a period of 1 or more"),
    ("evry(2)", r"guard='evry\(2\)' is not a loop guard", "did you mean 'every(2)'? write the guard as 'Always',"),
    ("when_true(nope)", r"condition 'nope' is not a runtime condition of this design \(it has: ring\.read\.item\)",
     "name one of its conditions, e.g. when_true(ring.read.item)"),
    (3, r"guard=3 is not a loop guard", "'every(n, start=s)'"),
])
def test_a_bad_guard_is_refused_with_the_forms(guard, message, hint):
    steps = [*STORE[:2], (*STORE[2][:4], guard), *STORE[3:]]
    with pytest.raises(tslab.DesignError, match=message) as info:
        guarded().with_schedule("StoreTask", steps)
    assert info.value.where == "task 'StoreTask' step 2"
    assert hint in info.value.hint


def test_a_guard_outside_the_loop_is_refused():
    steps = [("ring", "ConsumerWait", "Head", None, "every(2)"), *STORE[1:]]
    with pytest.raises(tslab.DesignError, match=r"guard='every\(2\)' on a Head step: TS guards run on loop trips"):
        guarded().with_schedule("StoreTask", steps)


def test_conditions_name_each_kind_of_key():
    ring = Buffer(name="ring")
    found = [OpaqueCondition(key=(id(ring), "read", "item"), resource=ring, method_label="read", result_name="item"),
             OpaqueCondition(key=("__opaque__", 41)), OpaqueCondition(key="flag", negated=True),
             OpaqueCondition(key=("__opaque__", 7)), OpaqueCondition(key=5)]
    names = guards.Conditions(found)
    assert names.names() == ["ring.read.item", "#1", "flag", "#2", "5"]
    assert guards.text(found[2], names) == "when_false(flag)"
    assert guards.text(Every(period=4, start=2), names) == "every(4, start=2)"
    assert names.assignment({"flag": True, ("__opaque__", 7): False}) == "flag=True, #2=False"


def test_each_run_of_the_checker_is_named_by_its_conditions():
    verdict = tslab.check(guarded(stages=1))  # two stages released every second trip need two stages
    assert verdict.status == "DEADLOCK"
    assert verdict.checker.context == "ring.read.item=False"
    assert verdict.errors[0].message.endswith("[ring.read.item=False]")
    assert verdict.trace.run == "ring.read.item=False"
    assert [r.context for r in planned_runs(guarded().lower().tasks)] == \
        ["ring.read.item=False", "ring.read.item=True"]


def test_a_trace_says_which_guard_let_a_step_run():
    trace = tslab.trace(guarded(), to="complete")
    releases = [s.entry for s in trace.steps if s.op is not None and s.op.stage == "ConsumerRelease"]
    assert releases and {e.guard for e in releases} == {"every(2, start=1)"}
    assert {e.iteration for e in releases} == {1, 3}
    assert str(releases[0]) == "loop[3] iter 1 [every(2, start=1)]"
    waits = [s.entry for s in trace.steps if s.op is not None and s.op.stage == "ConsumerWait"]
    assert {e.guard for e in waits} == {None}
    assert Trace.from_json(trace.to_json()) == trace
    schema("trace").validate(json.loads(trace.to_json()))
    frame = trace.to_dataframe()
    assert "every(2, start=1)" in set(frame["guard"].dropna())


def test_the_explorer_shows_guards_and_plays_each_run():
    ex = tslab.Explorer(guarded(), run=1)
    assert ex.runs == ["ring.read.item=False", "ring.read.item=True"]
    assert ex.run.context == "ring.read.item=True"
    ex.step("LoadTask"), ex.step("LoadTask"), ex.step("LoadTask"), ex.step("LoadTask"), ex.step("LoadTask")
    ex.step("StoreTask"), ex.step("StoreTask")
    entry = ex.next_entry("StoreTask")
    assert (entry.section, entry.index, entry.guard) == ("loop", 2, "when_true(ring.read.item)")
    skipping = tslab.Explorer(guarded(), run=0)  # the item is false: the store never runs
    ops = []
    while skipping.status.kind == "running":
        move = skipping.enabled()[-1]
        ops.append(str(move.op))
        skipping.step(move.task)
    assert skipping.status.kind == "complete" and not any("gmem_out" in op for op in ops)
    with pytest.raises(tslab.DesignError, match=r"run=2 is not one of the 2 planned runs") as info:
        tslab.Explorer(guarded(), run=2)
    assert "(0: ring.read.item=False; 1: ring.read.item=True)" in info.value.hint


@pytest.mark.parametrize("guard", ["Always", "FirstIter", "LastIter", "every(2)", "every(3, start=1)",
                                   "when_true(ring.read.item)", "when_false(#1)"])
def test_the_verdict_schema_takes_every_guard_form_saved_then_and_now(guard):
    payload = json.loads(json.dumps(tslab.check(guarded()).to_mime()))
    validator = schema("verdict")
    validator.validate(payload)
    payload["schedule"][0]["guard"] = guard
    validator.validate(payload)


@pytest.mark.parametrize("guard", ["Sometimes", "every(0)", "every(2, 1)", "when_true()", "first_iter"])
def test_the_verdict_schema_refuses_what_is_not_a_guard(guard):
    payload = json.loads(json.dumps(tslab.check(guarded()).to_mime()))
    payload["schedule"][0]["guard"] = guard
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        schema("verdict").validate(payload)
