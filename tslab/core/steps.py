"""The plain schedule-step form tslab edits, and its mapping to and from TS's legacy schedule tuples.

A step is ``(resource, stage, section, label)`` with names as strings, for example
``("smem", "ConsumerWait", "Loop", None)``; a loop step with a guard other than ``Always`` carries it as a fifth
element in the plain form of :mod:`tslab.core.guards`: ``("out", "ProducerWork", "Loop", "write", "LastIter")``,
``("ring", "ConsumerRelease", "Loop", None, "every(2, start=1)")``, ``(..., "when_true(ring.read.item)")``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cutlass.experimental.task_scheduling.enums import ScheduleStage, ScheduleStageType
from cutlass.experimental.task_scheduling.resources import WorkQueue

from ..errors import DesignError, did_you_mean
from . import guards
from .guards import ALWAYS, Conditions
from .skip_agreement import describe

Step = tuple  # (resource, stage, section, label) or (resource, stage, section, label, guard)

STAGES: tuple[str, ...] = tuple(s.name for s in ScheduleStage)
SECTIONS: tuple[str, ...] = ("Head", "Loop", "Tail")
WORK_STAGES: frozenset[str] = frozenset(
    {"ConsumerWork", "ProducerWork", "ConsumerAuxWork", "ProducerAuxWork"}
)
PRODUCER_STAGES: tuple[str, ...] = ("ProducerTryAcquire", "ProducerAcquire", "ProducerWork",
                                    "ProducerAuxWork", "ProducerCommit")
CONSUMER_STAGES: tuple[str, ...] = ("ConsumerTryWait", "ConsumerWait", "ConsumerWork",
                                    "ConsumerAuxWork", "ConsumerRelease")


def make_step(resource: str, stage: str, section: str = "Loop", label: str | None = None,
              guard: str = ALWAYS) -> Step:
    """A step in canonical form: four elements, five only when the guard is not ``Always``."""
    base = (resource, stage, section, label)
    return base if guard == ALWAYS else (*base, guard)


def normalize_step(step: Any, *, where: str) -> Step:
    """Validate one user-supplied step and return its canonical tuple."""
    if not isinstance(step, (tuple, list)) or not 2 <= len(step) <= 5:
        raise DesignError("input", where, f"step {step!r} is not a (resource, stage, section, label) tuple",
                          "write each step as ('smem', 'ConsumerWait', 'Loop', None)")
    resource, stage, *rest = step
    section = rest[0] if len(rest) > 0 else "Loop"
    label = rest[1] if len(rest) > 1 else None
    guard = rest[2] if len(rest) > 2 else ALWAYS
    if not isinstance(resource, str):
        raise DesignError("input", where, f"resource={resource!r} is not a resource name",
                          "name the resource by its string name, e.g. 'smem'")
    if stage not in STAGES:
        raise DesignError("input", where, f"stage={stage!r} is not a TS ScheduleStage",
                          did_you_mean(str(stage), STAGES))
    if section not in SECTIONS:
        raise DesignError("input", where, f"section={section!r} is not a schedule section",
                          did_you_mean(str(section), SECTIONS))
    guard = guards.canonical(guard, where=where)
    if guard != ALWAYS and section != "Loop":
        raise DesignError("input", where, f"guard={guard!r} on a {section} step: TS guards run on loop trips only",
                          "keep the guarded step in the Loop section, or drop its guard to run it once")
    if label is not None and not isinstance(label, str):
        raise DesignError("input", where, f"label={label!r} is not a string",
                          "give the work method's name, e.g. 'load', or None")
    return make_step(resource, stage, section, label, guard)


def normalize_steps(task: str, steps: Iterable[Any]) -> tuple[Step, ...]:
    """Validate a whole schedule: sections in Head -> Loop -> Tail order."""
    out = tuple(normalize_step(s, where=f"task '{task}' step {i}") for i, s in enumerate(steps))
    order = [SECTIONS.index(s[2]) for s in out]
    for i in range(1, len(order)):
        if order[i] < order[i - 1]:
            raise DesignError("schedule", f"task '{task}' step {i}",
                              f"a {out[i][2]} step follows a {out[i - 1][2]} step",
                              "keep the sections in Head -> Loop -> Tail order")
    return out


def steps_from_task(task: Any, conditions: Conditions) -> list[Step]:
    """Read a TS Task's expanded head/loop/tail lists back into plain steps (``conditions`` names the runtime
    conditions its guards test)."""
    out: list[Step] = []
    for section, entries in (("Head", task.head_schedule_list), ("Loop", task.loop_schedule_list),
                             ("Tail", task.tail_schedule_list)):
        for entry in entries:  # head/tail: (res, stage, call, label); loop: (res, stage, call, guard, label)
            res, stage, label = entry[0], entry[1], entry[-1]
            guard = guards.text(entry[3], conditions) if len(entry) == 5 else ALWAYS
            out.append(make_step(res.name, stage.name, section, label, guard))
    return out


def work_kwargs_from_task(task: Any) -> dict[int, dict[str, Any]]:
    """The compile-time keyword arguments TS passes to a Task's work steps (``smem_epi.stage_group(group=1)``),
    keyed by the step's index in :func:`steps_from_task`'s list. TS keeps them by resource, stage, section and the
    step's call index among that resource's and stage's steps of its section, so after an edit each goes to the
    step now at that index: this reads what will run."""
    kwargs: dict[tuple, dict[str, Any]] = getattr(task, "constexpr_work_kwargs", None) or {}
    out: dict[int, dict[str, Any]] = {}
    entries = [(section, entry) for section, listed in ((ScheduleStageType.Head, task.head_schedule_list),
                                                        (ScheduleStageType.Loop, task.loop_schedule_list),
                                                        (ScheduleStageType.Tail, task.tail_schedule_list))
               for entry in listed]
    for index, (section, (resource, stage, call, *_)) in enumerate(entries):
        if (found := kwargs.get((id(resource), stage, section, call))) is not None:
            out[index] = dict(found)
    return out


#: TS's slot sets of a persistent task's head and tail steps that do not run once a tile, each with its section: run
#: once before the work-tile loop, once after it, or skipped with a skipped tile. Plain steps cannot spell them.
TILE_LOOP_SLOTS: tuple[tuple[str, str], ...] = (
    ("pre_work_loop_head_slots", "Head"), ("post_work_loop_tail_slots", "Tail"),
    ("skippable_head_slots", "Head"), ("skippable_tail_slots", "Tail"))


def slot_key(entry: tuple) -> tuple:
    """How TS keys a head or tail entry in its slot sets: (id of the resource, stage, call index)."""
    return id(entry[0]), entry[1], entry[2]


def tile_loop_from_task(task: Any) -> dict[str, Any] | None:
    """Where a persistent task's steps sit around its work-tile loop, by the step's index in :func:`steps_from_task`'s
    list, which plain steps cannot say: ``{"work_queue": name, "skip_if": name or None, "before": [...], "after":
    [...], "skippable": [...]}`` (run once before the loop, once after it, skipped with a skipped tile); None for a
    task without a work-tile loop."""
    if not getattr(task, "is_persistent", False):
        return None
    queue = next((r.name for r in (*task.src_resources, *task.dst_resources) if isinstance(r, WorkQueue)), None)
    skip_if = getattr(task, "skip_if", None)
    out: dict[str, Any] = {"work_queue": queue, "skip_if": describe(skip_if) if skip_if else None,
                           "before": [], "after": [], "skippable": []}
    where = list(zip(("before", "after", "skippable", "skippable"), TILE_LOOP_SLOTS, strict=True))
    entries = [(section, entry) for section, listed in (("Head", task.head_schedule_list),
                                                        ("Loop", task.loop_schedule_list),
                                                        ("Tail", task.tail_schedule_list)) for entry in listed]
    for index, (section, entry) in enumerate(entries):
        placed = next((name for name, (slots, in_section) in where
                       if in_section == section and slot_key(entry) in getattr(task, slots, ())), None)
        if placed is not None:
            out[placed].append(index)
    return out


def kwargs_text(kwargs: dict[str, Any] | None) -> str:
    """Keyword arguments as a call spells them: ``{"group": 1}`` -> ``group=1``."""
    return ", ".join(f"{name}={value!r}" for name, value in (kwargs or {}).items())


def steps_to_legacy(steps: Sequence[Step], resources: dict[str, Any], conditions: Conditions, *,
                    task: str) -> list[tuple]:
    """Map plain steps to TS legacy schedule tuples ``(res, stage, section, guard, label)``; a ``when_true`` or
    ``when_false`` guard names one of ``conditions``."""
    legacy = []
    for i, step in enumerate(steps):
        name, stage, section, label = step[:4]
        where = f"task '{task}' step {i}"
        guard = guards.to_ts(step[4] if len(step) > 4 else ALWAYS, conditions, where=where)
        if name not in resources:
            raise DesignError("input", where, f"resource={name!r} is not in this design",
                              did_you_mean(name, sorted(resources)))
        legacy.append((resources[name], ScheduleStage[stage], ScheduleStageType[section], guard, label))
    return legacy
