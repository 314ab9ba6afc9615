"""How a signal passes between the two tasks on its sides (a ping-pong's turn), read from a profile's timeline.

A signal is a resource that holds no buffer (``profiled_tasks.signal_resources``): its producing task takes it
(``ProducerAcquire``) and gives it (``ProducerCommit``), its consuming task takes it (``ConsumerWait``) and gives it
back (``ConsumerRelease``). TS's ring fixes who follows whom: the consumer's k-th take waits for the producer's
k-th give, and the producer's take k + S (a ring of S stages) for the consumer's k-th give. Measuring the time
from each give to the take it allows says which side sets the pace: a task that takes the signal right after the
other gives it was waiting for it; one that comes back long after was busy with its own steps.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .profiled_tasks import TimelineError, signal_resources, task_steps

#: The steps that take and give a signal, on its producing and consuming side.
SIDES = {"producer": ("ProducerAcquire", "ProducerCommit"), "consumer": ("ConsumerWait", "ConsumerRelease")}
COLUMNS = ["resource", "side", "count", "period_ns", "waited_ns", "held_ns", "after_other_gave_ns"]


def handoffs(timeline: Any, design: Any, resource: str | None = None, *, block: int = 0) -> pd.DataFrame:
    """A :class:`~tslab.gpu.timeline.Timeline` read at ``resource``'s hand-offs (every signal of the design when
    None): per task on each side, medians over ``block``'s hand-offs, in ns: ``period_ns`` from one take to the
    next, ``waited_ns`` how long a take blocked, ``held_ns`` from a take to the give that follows it, and
    ``after_other_gave_ns`` from the other side's give to the take it allowed. Each task's first profiled warp
    stands for the task, as in :meth:`Timeline.trip`; ``design`` is the one profiled (:meth:`Timeline.handoffs`
    checks that)."""
    tasks = design.lower().tasks
    signals = signal_resources(task_steps(tasks))
    if resource is not None and resource not in signals:
        raise TimelineError(f"'{resource}' is not a signal of {timeline.kernel} (a resource one task commits and "
                            f"another waits on that holds no buffer); its signals: {', '.join(signals) or 'none'}")
    names = [resource] if resource is not None else signals
    if not names:
        raise TimelineError(f"{timeline.kernel} has no signal between tasks (a ping-pong's turn is one): there is "
                            "no hand-off to read; Timeline.summary() says where each task waits")
    stages = {r.name: int(r.pipeline_config.num_stages) for t in tasks for r in t.src_resources}
    f = timeline.frame[timeline.frame.block == block]
    f = f[f.warp == f.task.map(f.groupby("task").warp.min())]
    rows = [row for name in names for row in _one_signal(f[f.resource == name], name, stages[name], block)]
    return pd.DataFrame(rows, columns=["task", *COLUMNS]).set_index("task")


def _one_signal(f: pd.DataFrame, name: str, stages: int, block: int) -> list[dict[str, Any]]:
    """The two rows of one signal: its producing task's and its consuming task's."""
    sides = {}
    for side, (take, give) in SIDES.items():
        marked = f[f.stage.isin([take, give])]
        if set(marked.stage) != {take, give}:
            raise TimelineError(f"block {block}: {name}'s {take} and {give} steps are not both in this profile: "
                                f"profile it with every step marked, or with resources={{'{name}'}}")
        tasks = sorted(set(marked.task))
        if len(tasks) != 1:
            raise TimelineError(f"block {block}: {name} has {len(tasks)} tasks on its {side} side "
                                f"({', '.join(tasks)}); a hand-off is read between one task on each side")
        steps = f[f.task == tasks[0]].sort_values("start_ns", kind="stable")
        sides[side] = (tasks[0], steps[steps.stage == take].reset_index(drop=True),
                       steps[steps.stage == give].end_ns.reset_index(drop=True))
    (p_task, p_takes, p_gives), (c_task, c_takes, c_gives) = sides["producer"], sides["consumer"]
    # the consumer's k-th take follows the producer's k-th give; the producer's take k + S the consumer's k-th give
    n = min(len(c_takes), len(p_gives))
    after = {c_task: c_takes.end_ns[:n].to_numpy() - p_gives[:n].to_numpy()}
    m = min(len(p_takes) - stages, len(c_gives))
    after[p_task] = p_takes.end_ns[stages:stages + m].to_numpy() - c_gives[:m].to_numpy() if m > 0 else []
    out = []
    for side, task, takes, gives in (("producer", p_task, p_takes, p_gives), ("consumer", c_task, c_takes, c_gives)):
        k = min(len(takes), len(gives))
        out.append({"task": task, "resource": name, "side": side, "count": len(takes),
                    "period_ns": _median(takes.end_ns.diff().dropna()), "waited_ns": _median(takes.duration_ns),
                    "held_ns": _median(gives[:k].to_numpy() - takes.end_ns[:k].to_numpy()),
                    "after_other_gave_ns": _median(after[task])})
    return out


def _median(values: Any) -> int | None:
    s = pd.Series(values, dtype="float64").dropna()
    return None if s.empty else int(s.median())
