"""Random TS protocols for the checker's differential tests: what ``random_designs`` draws, and more.

2-4 tasks over 1-3 pipelined SMEM buffers, where a buffer may have two consumer tasks (multi-consumer credit
counts), two buffers may share a Merge or Fork ``PipelineGroup``, a non-pipelined scratch buffer may be written
and read without any pipeline (TS doubles or splits that work), PDL waits and launches may sit anywhere, a
persistent ``WorkQueue`` makes TS check two tiles, and an alias group over two allocations makes races
possible. Every task's ops are shuffled (each resource keeping its own order) and some move to head or tail,
so deadlocks, races and PDL-order faults all arise. With ``guards=True`` loop steps may also run under TS's
guards: first or last trip, ``every(period, start)`` and ``when_true``/``when_false`` on one of two runtime
condition keys that tasks share (TS checks each assignment of those keys in a run of its own).
"""

from __future__ import annotations

from typing import Any

from cutlass.experimental.task_scheduling.enums import (
    Every,
    LoopGuard,
    OpaqueCondition,
    PipelineGroupMode,
    ScheduleStage,
    ScheduleStageType,
)
from cutlass.experimental.task_scheduling.pipeline_group import PipelineGroup
from cutlass.experimental.task_scheduling.resources import PdlLaunchBarrier, PdlWaitBarrier, WorkQueue
from cutlass.experimental.task_scheduling.schedule_builder import ScheduleResult
from cutlass.experimental.task_scheduling.task import Task
from hypothesis import strategies as st

from tslab import Design
from tslab.kernels._teaching import Buffer, Sink, async_pipeline

LABELS = {"ProducerWork": "write", "ConsumerWork": "read"}


#: A loop step's guard as a spec holds it: a LoopGuard name, ("every", period, start) or ("when", key, negated).
GUARDS = st.one_of(st.sampled_from(["FirstIter", "LastIter"]),
                   st.tuples(st.just("every"), st.integers(1, 3), st.integers(0, 2)),
                   st.tuples(st.just("when"), st.sampled_from(["c0", "c1"]), st.booleans()))


@st.composite
def protocol_specs(draw: Any, max_tasks: int = 4, guards: bool = False) -> dict[str, Any]:
    """A plain description of a random protocol (drawn by hypothesis, built by :func:`build_protocol`); with
    ``guards`` some loop steps carry a random guard."""
    n_tasks = draw(st.integers(2, max_tasks))
    n_res = draw(st.integers(1, 3))
    resources = []
    for r in range(n_res):
        producer = draw(st.integers(0, n_tasks - 1))
        others = [t for t in range(n_tasks) if t != producer]
        consumers = draw(st.lists(st.sampled_from(others), min_size=1, max_size=min(2, len(others)), unique=True))
        resources.append({"r": r, "stages": draw(st.integers(1, 3)), "producer": producer, "consumers": consumers,
                          "bytes": 1024 * draw(st.integers(1, 2))})
    group = None
    if n_res >= 2 and draw(st.booleans()):
        a, b = resources[0], resources[1]
        if a["consumers"] == b["consumers"] and len(a["consumers"]) == 1 and a["stages"] == b["stages"]:
            group = "merge"
        elif a["producer"] == b["producer"] and a["stages"] == b["stages"] and len(a["consumers"]) == 1 \
                and len(b["consumers"]) == 1:
            group = "fork"
    scratch = None
    if draw(st.booleans()):
        writer = draw(st.integers(0, n_tasks - 1))
        scratch = {"writer": writer, "reader": draw(st.integers(0, n_tasks - 1).filter(lambda t: t != writer))}
    chains: list[list[list[tuple[str, str]]]] = [[] for _ in range(n_tasks)]
    for res in resources:
        name = f"buf{res['r']}"
        commit = "group" if group == "fork" and res["r"] < 2 else name
        release = "group" if group == "merge" and res["r"] < 2 else name
        chains[res["producer"]].append([(name, "ProducerAcquire"), (name, "ProducerWork"), (commit, "ProducerCommit")])
        for c in res["consumers"]:
            chains[c].append([(name, "ConsumerWait"), (name, "ConsumerWork"), (release, "ConsumerRelease")])
    if group in ("merge", "fork"):  # the shared side's op on the group appears once per task
        for t in range(n_tasks):
            seen = False
            for chain in chains[t]:
                for i, (name, _op) in enumerate(chain):
                    if name == "group":
                        if seen:
                            chain[i] = ("", "")
                        seen = True
            chains[t] = [[s for s in chain if s[0]] for chain in chains[t]]
            # the group op comes after every member op of this task: move it to a chain of its own at the end
            group_ops = [s for chain in chains[t] for s in chain if s[0] == "group"]
            chains[t] = [[s for s in chain if s[0] != "group"] for chain in chains[t]]
            if group_ops:
                chains[t].append(group_ops)
    if scratch:
        chains[scratch["writer"]].append([("scratch", "ProducerWork")])
        chains[scratch["reader"]].append([("scratch", "ConsumerWork")])
    pdl = draw(st.sampled_from([None, "wait", "launch", "both"]))
    if pdl in ("wait", "both"):
        chains[draw(st.integers(0, n_tasks - 1))].append([("pdl_wait", "ConsumerWork")])
    if pdl in ("launch", "both"):
        chains[draw(st.integers(0, n_tasks - 1))].append([("pdl_launch", "ProducerWork")])
    schedules = []
    for t in range(n_tasks):
        live_chains = [list(c) for c in chains[t] if c]
        if not live_chains or draw(st.booleans()):
            live_chains.append([(f"out{t}", "ProducerWork")])
        order: list[tuple[str, str]] = []
        while any(live_chains):
            live = [c for c in live_chains if c]
            order.append(live[draw(st.integers(0, len(live) - 1))].pop(0))
        steps = []
        for name, op in order:
            section = "Loop"
            rare = draw(st.integers(0, 7)) == 0
            if rare and (op in ("ConsumerWait", "ProducerAcquire") or name.startswith("pdl")):
                section = "Head"
            elif rare and op in ("ConsumerRelease", "ProducerCommit"):
                section = "Tail"
            guard = draw(GUARDS) if guards and section == "Loop" and draw(st.integers(0, 3)) == 0 else "Always"
            steps.append((name, op, section, guard))
        rank = {"Head": 0, "Loop": 1, "Tail": 2}
        schedules.append(sorted(steps, key=lambda s: rank[s[2]]))
    alias = None
    if n_res >= 2 and group is None and draw(st.booleans()):
        alias = [["b0"], ["b1"]]
    elif scratch and draw(st.booleans()):
        alias = [["b0"], ["scratch_buf"]]
    return {"resources": resources, "schedules": schedules, "alias": alias, "group": group, "scratch": scratch,
            "persistent": draw(st.booleans()), "iters": draw(st.integers(1, 3))}


def ts_guard(guard: Any) -> Any:
    """The TS guard object of a spec's guard."""
    if isinstance(guard, str):
        return LoopGuard[guard]
    if guard[0] == "every":
        return Every(period=guard[1], start=guard[2])
    return OpaqueCondition(key=guard[1], negated=guard[2])


def build_protocol(spec: dict[str, Any]) -> Design:
    """The design of ``spec``, wrapped with ``Design.from_tasks`` (TS objects built the legacy way)."""
    bufs = {f"buf{r['r']}": Buffer(name=f"buf{r['r']}", buffer=f"b{r['r']}", stage_bytes=r["bytes"],
                                   pipeline_config=async_pipeline(r["stages"])) for r in spec["resources"]}
    res: dict[str, Any] = dict(bufs)
    groups = []
    if spec["group"]:
        mode = PipelineGroupMode.Merge if spec["group"] == "merge" else PipelineGroupMode.Fork
        group = PipelineGroup(name="ab_sync", members=[bufs["buf0"], bufs["buf1"]], mode=mode)
        res["group"] = group
        groups.append(group)
    if spec["scratch"]:
        res["scratch"] = Buffer(name="scratch", buffer="scratch_buf", stage_bytes=1024)
    res["pdl_wait"], res["pdl_launch"] = PdlWaitBarrier(name="pdl_wait"), PdlLaunchBarrier(name="pdl_launch")
    for t in range(len(spec["schedules"])):
        res[f"out{t}"] = Sink(name=f"out{t}")
    wq = WorkQueue(tile_scheduler_config=None, name="work_queue") if spec["persistent"] else None
    def entry(name: str) -> Any:  # a group's members are named through the group in schedules
        return getattr(res["group"], name) if spec["group"] and name in ("buf0", "buf1") else res[name]

    tasks = []
    for t, steps in enumerate(spec["schedules"]):
        legacy = [(entry(name), ScheduleStage[op], ScheduleStageType[section], ts_guard(guard), LABELS.get(op))
                  for name, op, section, guard in steps]
        src = [bufs[f"buf{r['r']}"] for r in spec["resources"] if t in r["consumers"]]
        dst = [bufs[f"buf{r['r']}"] for r in spec["resources"] if r["producer"] == t]
        used = {name for name, *_rest in steps}
        for name in ("scratch", "pdl_wait", "pdl_launch", f"out{t}"):
            if name in used:
                (src if name == "pdl_wait" or (name == "scratch" and spec["scratch"]["reader"] == t
                                               and spec["scratch"]["writer"] != t) else dst).append(res[name])
        if wq is not None:
            src.append(wq)
        result = ScheduleResult(schedule_list=legacy, loop_start=0, loop_end=spec["iters"], loop_step=1)
        tasks.append(Task(name=f"T{t}", src_resources=src, dst_resources=dst, warp_idx=t, num_warps=1,
                          schedule=result))
    used = {name for steps in spec["schedules"] for name, *_rest in steps}
    graph = {r: [] for name, r in res.items() if name != "group" and (name in used or name.startswith("buf"))}
    smem = list(bufs.values()) + ([res["scratch"]] if spec["scratch"] else [])
    return Design.from_tasks(tasks, graph, smem_allocations=smem, alias_groups=[spec["alias"]] if spec["alias"]
                             else None, name="protocol")
