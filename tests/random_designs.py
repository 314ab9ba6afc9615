"""Random small TS designs for property tests: legacy schedules over 2-3 tasks and 1-3 pipelined SMEM buffers.

Each buffer has one producer task (acquire, write, commit) and one consumer task (wait, read, release); every
task's ops are shuffled (keeping each resource's own order) and placed in the loop, or some in head/tail, so
deadlocks arise; an alias group over two buffers makes races possible.
"""

from __future__ import annotations

from typing import Any

from cutlass.experimental.task_scheduling.enums import LoopGuard, ScheduleStage, ScheduleStageType
from cutlass.experimental.task_scheduling.schedule_builder import ScheduleResult
from cutlass.experimental.task_scheduling.task import Task
from hypothesis import strategies as st

from tslab import Design
from tslab.kernels._teaching import Buffer, Sink, async_pipeline

PRODUCE = ("ProducerAcquire", "ProducerWork", "ProducerCommit")
CONSUME = ("ConsumerWait", "ConsumerWork", "ConsumerRelease")
LABELS = {"ProducerWork": "write", "ConsumerWork": "read"}


@st.composite
def specs(draw: Any) -> dict[str, Any]:
    """A plain description of a random design (drawn by hypothesis, built by :func:`build`)."""
    n_tasks = draw(st.integers(2, 3))
    n_res = draw(st.integers(1, 3))
    resources = []
    for r in range(n_res):
        producer = draw(st.integers(0, n_tasks - 1))
        consumer = draw(st.integers(0, n_tasks - 1).filter(lambda t, p=producer: t != p))
        resources.append({"stages": draw(st.integers(1, 3)), "producer": producer, "consumer": consumer,
                          "bytes": 1024 * draw(st.integers(1, 2)), "r": r})
    schedules = []
    for t in range(n_tasks):
        chains = [[(f"buf{r['r']}", op) for op in PRODUCE] for r in resources if r["producer"] == t]
        chains += [[(f"buf{r['r']}", op) for op in CONSUME] for r in resources if r["consumer"] == t]
        if not chains or draw(st.booleans()):
            chains.append([(f"out{t}", "ProducerWork")])
        order: list[tuple[str, str]] = []
        while any(chains):
            live = [c for c in chains if c]
            pick = draw(st.integers(0, len(live) - 1))
            order.append(live[pick].pop(0))
        sections = []
        for name, op in order:
            section = "Loop"
            rare = name.startswith("buf") and draw(st.integers(0, 7)) == 0
            if rare and op in ("ConsumerWait", "ProducerAcquire"):
                section = "Head"
            if rare and op in ("ConsumerRelease", "ProducerCommit"):
                section = "Tail"
            sections.append(section)
        rank = {"Head": 0, "Loop": 1, "Tail": 2}
        steps = sorted(zip(order, sections, strict=True), key=lambda s: rank[s[1]])
        schedules.append([(name, op, section) for (name, op), section in steps])
    alias = n_res >= 2 and draw(st.booleans())
    return {"resources": resources, "schedules": schedules, "alias": alias, "iters": draw(st.integers(1, 2))}


def build(spec: dict[str, Any]) -> Design:
    """The design of ``spec``, wrapped with ``Design.from_tasks`` (TS objects built the legacy way)."""
    bufs = {f"buf{r['r']}": Buffer(name=f"buf{r['r']}", buffer=f"b{r['r']}", stage_bytes=r["bytes"],
                                   pipeline_config=async_pipeline(r["stages"])) for r in spec["resources"]}
    outs = {f"out{t}": Sink(name=f"out{t}") for t in range(len(spec["schedules"]))}
    res = {**bufs, **outs}
    tasks = []
    for t, steps in enumerate(spec["schedules"]):
        legacy = [(res[name], ScheduleStage[op], ScheduleStageType[section], LoopGuard.Always, LABELS.get(op))
                  for name, op, section in steps]
        src = [bufs[f"buf{r['r']}"] for r in spec["resources"] if r["consumer"] == t]
        dst = [bufs[f"buf{r['r']}"] for r in spec["resources"] if r["producer"] == t]
        dst += [res[name] for name, _op, _s in steps if name.startswith("out") and res[name] not in dst]
        result = ScheduleResult(schedule_list=legacy, loop_start=0, loop_end=spec["iters"], loop_step=1)
        tasks.append(Task(name=f"T{t}", src_resources=src, dst_resources=dst, warp_idx=t, num_warps=1,
                          schedule=result))
    graph = {r: [] for r in res.values()}
    groups = [[["b0"], ["b1"]]] if spec["alias"] else None
    return Design.from_tasks(tasks, graph, smem_allocations=list(bufs.values()), alias_groups=groups,
                             name="random")
